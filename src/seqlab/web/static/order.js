// Order panel: a sentence and a reordering of its words through both machines (POST /api/order); for
// each word, its output row in either order side by side, and the verdict measured by the server.
"use strict";

(() => {
  const { t } = Lab;
  const $ = (id) => document.getElementById(id);
  const form = $("order-form");
  const statusNode = $("order-status");
  const resultNode = $("order-result");
  const WORD = /[\p{L}\p{N}_]+|[^\p{L}\p{N}_\s]/gu;  // the "words" tokenizer of seqlab.text

  const words = (text) => text.match(WORD) || [];
  const decimals = new Intl.NumberFormat(Lab.lang === "es" ? "es-ES" : "en-US",
                                         { minimumFractionDigits: 4, maximumFractionDigits: 4, signDisplay: "always" });
  const fixed = (value) => decimals.format(value);

  /** The same words in any order, capitals aside ("El" is "el"), as the server compares them. */
  function sameWords(a, b) {
    const fold = (list) => list.map((word) => word.toLowerCase()).sort();
    const x = fold(a), y = fold(b);
    return x.length === y.length && x.every((word, i) => word === y[i]);
  }

  function machineTable(machine, data) {
    const m = data[machine];
    const rows = data.reordered_words.map((word, r) => {
      const source = data.permutation[r];
      const before = m.rows[source].map(fixed).join("  ");
      const after = m.rows_reordered[r].map(fixed).join("  ");
      const same = m.row_change[r] <= m.tolerance;
      return [word, { text: before }, { text: after, className: same ? "same" : "changed" },
              { text: Lab.fmtNum(m.row_change[r]) }];
    });
    const section = Lab.element("section", { class: "card", id: `order-${machine}` });
    section.appendChild(Lab.element("h2", { class: machine }, t(machine)));
    section.appendChild(Lab.table([t("word"), t("before"), t("after"), t("change")], rows, "rows"));
    let verdict;
    if (machine === "attention") {
      verdict = m.same_numbers ? t("same", { change: Lab.fmtNum(m.max_abs_change), tolerance: Lab.fmtNum(m.tolerance) })
        : t("changedAttention", { change: Lab.fmtNum(m.max_abs_change) });
    } else {
      verdict = m.same_numbers ? t("sameRecurrence", { change: Lab.fmtNum(m.max_abs_change) })
        : t("changed", { change: Lab.fmtNum(m.max_abs_change) });
    }
    section.appendChild(Lab.element("p", { class: "verdict", "data-same": String(m.same_numbers) }, verdict));
    if (machine === "attention" && data.key_value_change !== null) {
      section.appendChild(Lab.element("p", { class: "note" }, t("pairs", {
        change: Lab.fmtNum(data.key_value_change), tolerance: Lab.fmtNum(data.key_value_tolerance) })));
    }
    return section;
  }

  const { run, drop } = Lab.requests({
    statusNode, results: [resultNode],
    ask: (options) => Lab.postJSON("/api/order", { sentence: $("sentence").value, reordered: $("reordered").value },
                                   options),
    show: (data) => {
      if (data.identity) Lab.status(statusNode, t("identity"));
      const note = Lab.element("p", { class: "note" }, t("shown", { shown: data.shown, d: data.d_model }));
      resultNode.replaceChildren(machineTable("attention", data), machineTable("recurrence", data), note);
    },
  });

  function compare() {
    const sentence = $("sentence").value, reordered = $("reordered").value;
    if (!sameWords(words(sentence), words(reordered))) {
      drop();  // an answer still on its way is for other sentences
      Lab.status(statusNode, t("mismatch", { words: words(sentence).join(" ") }), "error");
      Lab.stale([resultNode], true);  // the rows below are for other sentences
      return;
    }
    run();
  }

  function shuffle() {
    const list = words($("sentence").value);
    if (list.length < 2) return;
    const original = list.join(" ");
    for (let attempt = 0; attempt < 20; attempt += 1) {
      for (let i = list.length - 1; i > 0; i -= 1) {
        const j = Math.floor(Math.random() * (i + 1));
        [list[i], list[j]] = [list[j], list[i]];
      }
      if (list.join(" ") !== original) break;
    }
    $("reordered").value = list.join(" ");
    keep();
    compare();
  }

  form.addEventListener("submit", (event) => { event.preventDefault(); compare(); });
  const keep = () => Lab.keepState({ sentence: $("sentence").value, reordered: $("reordered").value });
  $("sentence").addEventListener("input", keep);
  $("reordered").addEventListener("input", keep);
  $("shuffle").addEventListener("click", shuffle);
  // The sentences a language switch carried in the URL, if any.
  $("sentence").value = Lab.initial("sentence", $("sentence").value);
  $("reordered").value = Lab.initial("reordered", $("reordered").value);
  compare();
})();
