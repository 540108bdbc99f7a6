// Cost panel: sliders for T and the widths, both closed-form curves with their crossing, exact counts
// at T and at the lesson's three cases, and each machine's chain (measured by trace, or the closed form).
"use strict";

(() => {
  const { t } = Lab;
  const $ = (id) => document.getElementById(id);
  const sliders = { T: $("T"), d: $("d") };
  const widths = ["d_model", "d_h", "d_k", "d_v"].map((name) => $(name));
  const statusNode = $("cost-status");
  const results = [$("crossover-label"), $("cost-chart"), $("at-T"), $("at-T-title"), $("span-method"), $("worked"),
                   $("scopes"), $("scopes-verdict"), $("scopes-method")];

  function parameters() {
    const query = new URLSearchParams({ T: sliders.T.value, lang: Lab.lang });
    widths.forEach((input) => query.set(input.id, input.value));
    return query;
  }

  /** The state a language switch keeps: T, and d or each width when they differ. */
  function keep() {
    const state = { T: sliders.T.value, d: sliders.d.value };
    widths.forEach((input) => { state[input.id] = input.value; });
    Lab.keepState(state);
  }

  function chainCell(chain) { return Lab.fmtInt(chain.products); }

  function renderAtT(data) {
    const at = data.at_T;
    $("at-T-title").textContent = t("atT", { T: Lab.fmtInt(at.T) });
    const rows = [
      [t("multiplications"), at.recurrence_text, at.attention_text],
      [t("projections"), "—", at.projections_text],
      [t("ratio"), "", at.ratio.text],
      [t("productsInRow"), chainCell(at.spans.recurrence), chainCell(at.spans.attention)],
    ];
    if (at.spans.method === "measured") {
      rows.push([t("opsInRow"), Lab.fmtInt(at.spans.recurrence.ops), Lab.fmtInt(at.spans.attention.ops)]);
    }
    $("at-T").replaceChildren(Lab.table([t("quantity"), t("recurrence"), t("attention")], rows));
    let method;
    if (at.spans.method === "measured") method = t("measured", { width: at.spans.traced_width });
    else if (at.spans.busy) method = t("closedFormBusy");
    else method = t("closedForm", { limit: Lab.fmtInt(at.spans.trace_limit) });
    $("span-method").textContent = method;
  }

  function renderWorked(data) {
    const rows = data.worked.map((c) => [
      Lab.fmtInt(c.T), c.recurrence_text, c.attention_text, c.ratio.text,
      Lab.fmtInt(c.spans.recurrence.products), Lab.fmtInt(c.spans.attention.products),
      t(c.spans.method === "measured" ? "howMeasured" : "howClosed"),
    ]);
    $("worked").replaceChildren(Lab.table(
      [t("T"), t("recurrenceCount"), t("attentionCount"), t("ratio"), t("recurrenceChain"), t("attentionChain"),
       t("how")], rows, "worked"));
  }

  const SCOPE_KEYS = { lesson: "scopeLesson", layer: "scopeLayer", layer_without_output: "scopeLayerWithoutOutput",
                       kernels: "scopeKernels" };

  function countedCell(side) {
    if (side.counted === null) return t("notCounted");
    return t(`source_${side.source}`, { value: side.counted_text });
  }

  /** The scopes side by side: one card each (a row of four on a wide screen, stacked on a phone), holding the
   * closed form and the count of both machines, their ratio, the side with fewer multiplications and the crossover. */
  function scopeCard(r) {
    const card = Lab.element("section", { class: "scope", "data-scope": r.scope });
    card.appendChild(Lab.element("h3", {}, t(SCOPE_KEYS[r.scope])));
    for (const side of ["recurrence", "attention"]) {
      const machine = r[side];
      const block = Lab.element("div", { class: `scope-machine ${side}-machine` });
      block.appendChild(Lab.element("h4", { class: side }, t(side)));
      block.appendChild(Lab.element("p", { class: "scope-what" }, machine.what));
      block.appendChild(Lab.element("p", { class: "scope-closed" },
                                    `${t("closedForm")}: ${machine.formula} = ${machine.closed_form_text}`));
      block.appendChild(Lab.element("p", { class: "scope-counted" }, `${t("counted")}: ${countedCell(machine)}`));
      card.appendChild(block);
    }
    const fewer = r.fewer === "tie" ? t("tie") : t(r.fewer);
    const verdict = Lab.element("p", { class: "scope-fewer" });
    verdict.append(`${t("ratio")}: ${r.ratio.text}. ${t("fewer")}: `);
    verdict.appendChild(Lab.element("strong", { class: r.fewer }, fewer));
    card.appendChild(verdict);
    card.appendChild(Lab.element("p", { class: "note" },
                                 `${t("equalAt")} ${r.crossover === null ? t("never") : r.crossover.text}`));
    return card;
  }

  function renderScopes(data) {
    const s = data.scopes;
    $("scopes").replaceChildren(...s.rows.map(scopeCard));
    $("scopes-verdict").textContent = s.verdict;
    let method;
    if (s.method === "counted") method = t("scopesCounted", { T: Lab.fmtInt(s.T) });
    else if (s.busy) method = t("scopesBusy");
    else method = t("scopesClosed", { limit: Lab.fmtInt(s.count_limit) });
    $("scopes-method").textContent = method;
  }

  /** Where the curves meet, said for every case: below T = 1, within the slider, or past its end. */
  function crossoverText(data) {
    const crossing = data.crossover.value, limit = Number(sliders.T.max);
    if (crossing < 1) return t("attentionAlways", { T: data.crossover.text });
    if (crossing > limit) return t("recurrenceUpTo", { T: data.crossover.text, limit: Lab.fmtInt(limit) });
    return `${t("crossover", { T: data.crossover.text })} ${
      t("crossoverNote", { first: Lab.fmtInt(data.first_T_attention_costs_more) })}`;
  }

  function renderChart(data) {
    if (!Lab.plotlyReady()) { Lab.status(statusNode, t("noPlotly")); return; }
    const c = data.curves, crossing = data.crossover.value, T = data.at_T.T;
    const last = c.T[c.T.length - 1];
    const traces = [
      { x: c.T, y: c.recurrence, name: t("recurrence"), mode: "lines", line: { ...Lab.seriesStyle("recurrence").line, width: 2.5 } },
      { x: c.T, y: c.attention, name: t("attention"), mode: "lines", line: { ...Lab.seriesStyle("attention").line, width: 2.5 } },
    ];
    if (crossing >= 1 && crossing <= last) {  // the meeting point only where the axis shows it (T ≥ 1)
      traces.push({ x: [crossing], y: [crossing * (data.d_h * data.d_h + data.d_h * data.d_model)], name: t("meet"),
                    mode: "markers", marker: { size: 11, color: "#1d2330", symbol: "diamond" } });
    }
    const right = Math.log10(T) > Math.log10(last) / 2;  // the T label on the side with room
    const layout = {
      margin: { l: 64, r: 12, t: 36, b: 48 }, height: 340,
      legend: { orientation: "h", x: 0, xanchor: "left", y: 1, yanchor: "bottom" },
      xaxis: { type: "log", range: [0, Math.log10(last)], title: { text: t("axisT") } },
      yaxis: { type: "log", title: { text: t("axisCount") }, exponentformat: "power" },
      shapes: [{ type: "line", xref: "x", yref: "paper", x0: T, x1: T, y0: 0, y1: 1,
                 line: { dash: "dot", color: "#5b6475" } }],
      annotations: [{ x: Math.log10(T), y: 0.02, xref: "x", yref: "paper", text: t("hereT", { T: Lab.fmtInt(T) }),
                      showarrow: false, yanchor: "bottom", xanchor: right ? "right" : "left", xshift: right ? -4 : 4,
                      font: { size: 11 }, bgcolor: "rgba(255,255,255,0.85)" }],
      separators: Lab.separators,
    };
    window.Plotly.react("cost-chart", traces, layout, Lab.plotConfig);
  }

  const { run: update, drop } = Lab.requests({
    statusNode, results,
    ask: (options) => Lab.getJSON(`/api/cost?${parameters()}`, options),
    show: (data) => {
      $("crossover-label").textContent = crossoverText(data);
      renderAtT(data);
      renderWorked(data);
      renderScopes(data);
      renderChart(data);
    },
  });
  const later = Lab.debounce(update, 120);

  /** An input the server would refuse: say so, grey out the old results, ask nothing. */
  function invalid(input) {
    drop();  // an answer still on its way is for older values
    Lab.status(statusNode, t("badWidth", { name: input.id, min: input.min, max: Lab.fmtInt(Number(input.max)) }),
               "error");
    Lab.stale(results, true);
  }

  sliders.T.addEventListener("input", () => {
    Lab.showValue(sliders.T, Lab.fmtInt(sliders.T.value));
    keep();
    later();
  });
  sliders.d.addEventListener("input", () => {
    Lab.showValue(sliders.d, Lab.fmtInt(sliders.d.value));
    widths.forEach((input) => { input.value = sliders.d.value; });
    keep();
    later();
  });
  widths.forEach((input) => input.addEventListener("input", () => {
    const values = new Set(widths.map((w) => w.value));
    Lab.showValue(sliders.d, values.size === 1 ? Lab.fmtInt(input.value) : "—");
    if (input.value === "" || !input.checkValidity()) { invalid(input); return; }
    keep();
    later();
  }));

  // The state a language switch carried in the URL, if any.
  sliders.T.value = Lab.initial("T", sliders.T.value);
  sliders.d.value = Lab.initial("d", sliders.d.value);
  widths.forEach((input) => { input.value = Lab.initial(input.id, sliders.d.value); });
  if (new Set(widths.map((w) => w.value)).size > 1) $("advanced").open = true;
  Lab.showValue(sliders.T, Lab.fmtInt(sliders.T.value));
  Lab.showValue(sliders.d, new Set(widths.map((w) => w.value)).size === 1 ? Lab.fmtInt(widths[0].value) : "—");
  update();
})();
