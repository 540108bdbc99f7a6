// seqlab lab: what every panel shares — translated messages, JSON calls, formatting, small SVG helpers.
// Every sentence shown comes from the page's message blocks (rendered from the gettext catalogue);
// every number comes from the panel's /api endpoint.
"use strict";

const Lab = (() => {
  const lang = document.documentElement.lang || "en";
  const read = (id) => {
    const node = document.getElementById(id);
    return node ? JSON.parse(node.textContent) : {};
  };
  const messages = Object.assign({}, read("common-messages"), read("messages"));

  /** The message `key` with its {placeholders} filled from `values`. */
  function t(key, values = {}) {
    const text = messages[key];
    if (text === undefined) throw new Error(`no message ${key}`);
    return text.replace(/\{(\w+)\}/g, (whole, name) => (name in values ? String(values[name]) : whole));
  }

  function has(key) { return key in messages; }

  const sleep = (ms) => new Promise((resolve) => { setTimeout(resolve, ms); });

  /** An /api URL with the page's language, so the server's messages come in it. */
  function withLang(url) {
    const parsed = new URL(url, window.location.origin);
    if (parsed.pathname.startsWith("/api/") && !parsed.searchParams.has("lang")) parsed.searchParams.set("lang", lang);
    return parsed.pathname + parsed.search;
  }

  /** The error of a failed call: the server's sentence (in the page's language), or the HTTP status. */
  async function failure(response) {
    let detail = `HTTP ${response.status}`;
    try {
      const body = await response.json();
      if (body && body.message) detail = body.message;
    } catch (error) { /* not JSON */ }
    const error = new Error(detail);
    if (response.status === 503) {
      error.busy = true;
      error.message = t("busy");
      error.retryAfter = Number(response.headers.get("Retry-After")) || 5;
    }
    return error;
  }

  /** fetch with a time limit (AbortController): past it, a translated "did not answer" error. */
  async function call(url, init, timeoutMs) {
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), timeoutMs);
    let response;
    try {
      response = await fetch(withLang(url), { ...init, signal: controller.signal });
    } catch (error) {
      if (error.name === "AbortError") {
        const late = new Error(t("timeout", { seconds: Math.round(timeoutMs / 1000) }));
        late.timeout = true;
        throw late;
      }
      throw error;
    } finally {
      clearTimeout(timer);
    }
    if (!response.ok) throw await failure(response);
    return response.json();
  }

  /** GET an /api endpoint. A busy lab (503) is asked again after its Retry-After, `retries` times, telling
   * `onBusy` meanwhile; then the busy error is thrown. */
  async function getJSON(url, { timeoutMs = 60000, retries = 2, onBusy = null } = {}) {
    for (let attempt = 0; ; attempt += 1) {
      try {
        return await call(url, { headers: { Accept: "application/json" } }, timeoutMs);
      } catch (error) {
        if (!error.busy || attempt >= retries) throw error;
        if (onBusy) onBusy(error);
        await sleep(Math.min(error.retryAfter, 10) * 1000);
      }
    }
  }

  async function postJSON(url, body, { timeoutMs = 60000 } = {}) {
    return call(url, {
      method: "POST", headers: { "Content-Type": "application/json", Accept: "application/json" },
      body: JSON.stringify(body),
    }, timeoutMs);
  }

  function debounce(fn, ms) {
    let timer = null;
    return (...args) => { clearTimeout(timer); timer = setTimeout(() => fn(...args), ms); };
  }

  const integer = new Intl.NumberFormat(lang === "es" ? "es-ES" : "en-US", { useGrouping: true });
  function fmtInt(value) { return integer.format(value); }
  function fmtNum(value, digits = 3) {
    if (value === null || value === undefined) return "—";
    if (value === 0) return "0";
    const magnitude = Math.abs(value);
    const locale = lang === "es" ? "es-ES" : "en-US";
    if (magnitude >= 1e-3 && magnitude < 1e6) {
      return new Intl.NumberFormat(locale, { maximumSignificantDigits: digits }).format(value);
    }
    const [mantissa, exponent] = value.toExponential(digits - 1).split("e");
    const m = new Intl.NumberFormat(locale, { minimumFractionDigits: digits - 1 }).format(Number(mantissa));
    return `${m}e${Number(exponent)}`;
  }

  /** Show a slider's value in its <output> and give the slider the same words (aria-valuetext), so that a screen
   * reader says what the page shows ("256", "0.90") and not the raw value (the Generation panel's slider moves an
   * exponent). Where the output shows no value ("—"), the slider's own value is read. */
  function showValue(input, text) {
    const output = document.querySelector(`output[for="${input.id}"]`);
    if (output) output.textContent = text;
    if (text === "—") input.removeAttribute("aria-valuetext"); else input.setAttribute("aria-valuetext", text);
  }

  /** Show a status line (busy, error, or nothing). */
  function status(node, text, kind = "status") {
    node.textContent = text || "";
    node.className = text ? kind : "";
  }
  function showError(node, error) {
    status(node, error.busy || error.timeout ? error.message : t("error", { message: error.message }), "error");
  }

  /** Grey out results that no longer match the inputs (a failed request, an invalid value), or restore them. */
  function stale(nodes, on) {
    for (const node of nodes) {
      if (!node) continue;
      node.classList.toggle("stale", on);
      if (on) node.setAttribute("title", t("stale")); else node.removeAttribute("title");
    }
  }

  /** A panel's requests, each answer shown only while it is the latest: ``ask()`` fetches (a promise of the
   * data), ``show(data)`` draws it. The status says "Computing…", then nothing or the error; the ``results``
   * nodes are greyed out while they are stale. Returns ``{ run, drop }``: ``run()`` asks now, ``drop()`` forgets
   * an answer still on its way (its inputs changed to values the server would refuse). */
  function requests({ statusNode, results, ask, show }) {
    let sequence = 0;
    async function run() {
      const mine = ++sequence;
      status(statusNode, t("loading"));
      try {
        const data = await ask();
        if (mine !== sequence) return;
        status(statusNode, "");
        show(data);
        stale(results, false);
      } catch (error) {
        if (mine !== sequence) return;
        showError(statusNode, error);
        stale(results, true);
      }
    }
    return { run, drop: () => { sequence += 1; } };
  }

  /** The page's query string: the state a language switch carries (see keepState). */
  const query = new URLSearchParams(window.location.search);
  function initial(name, fallback) { return query.has(name) ? query.get(name) : fallback; }

  /** Write the panel's state into the URL and into both language links, so switching keeps it. */
  function keepState(values) {
    for (const [name, value] of Object.entries(values)) query.set(name, String(value));
    query.set("lang", lang);
    window.history.replaceState(null, "", `${window.location.pathname}?${query}`);
    for (const code of ["en", "es"]) {
      const link = document.getElementById(`lang-${code}`);
      if (!link) continue;
      const other = new URLSearchParams(query);
      other.delete("lang");
      other.set("lang", code);
      link.setAttribute("href", `${window.location.pathname}?${other}`);
    }
  }

  function element(tag, attributes = {}, text = null) {
    const node = document.createElement(tag);
    for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, value);
    if (text !== null) node.textContent = text;
    return node;
  }
  function svg(tag, attributes = {}, text = null) {
    const node = document.createElementNS("http://www.w3.org/2000/svg", tag);
    for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, value);
    if (text !== null) node.textContent = text;
    return node;
  }

  /** A table from a header row and body rows of text (cells may be {text, className}), in a box that
   * scrolls sideways when the table is wider than the page. Every cell carries its column's label
   * (data-label): on a phone a "stack" table shows each row as label–value lines, so no column is ever
   * off-screen (lab.css). A grid such as the path matrix passes stack = false and scrolls instead. */
  function table(head, rows, className = "", stack = true) {
    const classes = [className, stack ? "stack" : ""].filter(Boolean).join(" ");
    const node = element("table", classes ? { class: classes } : {});
    const thead = element("thead");
    const tr = element("tr");
    head.forEach((cell) => tr.appendChild(element("th", { scope: "col" }, cell)));
    thead.appendChild(tr);
    node.appendChild(thead);
    const tbody = element("tbody");
    rows.forEach((row) => {
      const line = element("tr");
      row.forEach((cell, index) => {
        const spec = typeof cell === "object" && cell !== null ? cell : { text: cell };
        const td = element(index === 0 ? "th" : "td", index === 0 ? { scope: "row" } : {}, spec.text);
        td.dataset.label = head[index];
        if (spec.className) td.className = spec.className;
        if (spec.title) td.title = spec.title;
        line.appendChild(td);
      });
      tbody.appendChild(line);
    });
    node.appendChild(tbody);
    const box = element("div", { class: "table-scroll" });
    box.appendChild(node);
    return box;
  }

  /** The whole CSS pixels inside `node`'s border (0 when it is not shown): an SVG drawn with a viewBox this wide
   * is shown at a scale of 1 or a little more, so its text is as large as its font-size says. */
  function innerWidth(node) {
    const style = getComputedStyle(node);
    const border = parseFloat(style.borderLeftWidth) + parseFloat(style.borderRightWidth);
    return Math.max(0, Math.floor(node.getBoundingClientRect().width - border));
  }

  const plotlyReady = () => typeof window.Plotly !== "undefined";
  // No mode bar: its tooltips are Plotly's English, and the charts need no zoom tools.
  const plotConfig = { displaylogo: false, displayModeBar: false, responsive: true };
  const separators = lang === "es" ? ",." : ".,";

  return { lang, t, has, getJSON, postJSON, debounce, fmtInt, fmtNum, showValue, status, showError, stale, requests,
           initial, keepState, element, svg, table, innerWidth, plotlyReady, plotConfig, separators };
})();
