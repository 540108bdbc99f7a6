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

  /** The message of a failed call: the server's 422 sentence, or the HTTP status. */
  async function failure(response) {
    let detail = `HTTP ${response.status}`;
    try {
      const body = await response.json();
      if (body && body.message) detail = body.message;
    } catch (error) { /* not JSON */ }
    return new Error(detail);
  }

  async function getJSON(url) {
    const response = await fetch(url, { headers: { Accept: "application/json" } });
    if (!response.ok) throw await failure(response);
    return response.json();
  }

  async function postJSON(url, body) {
    const response = await fetch(url, {
      method: "POST", headers: { "Content-Type": "application/json", Accept: "application/json" },
      body: JSON.stringify(body),
    });
    if (!response.ok) throw await failure(response);
    return response.json();
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

  /** Show a status line (busy, error, or nothing). */
  function status(node, text, kind = "status") {
    node.textContent = text || "";
    node.className = text ? kind : "";
  }
  function showError(node, error) { status(node, t("error", { message: error.message }), "error"); }

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

  /** A table from a header row and body rows of text (cells may be {text, className}). */
  function table(head, rows, className = "") {
    const node = element("table", className ? { class: className } : {});
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
        if (spec.className) td.className = spec.className;
        if (spec.title) td.title = spec.title;
        line.appendChild(td);
      });
      tbody.appendChild(line);
    });
    node.appendChild(tbody);
    return node;
  }

  const plotlyReady = () => typeof window.Plotly !== "undefined";
  const plotConfig = { displaylogo: false, responsive: true, modeBarButtonsToRemove: ["select2d", "lasso2d"] };

  return { lang, t, has, getJSON, postJSON, debounce, fmtInt, fmtNum, status, showError, element, svg, table,
           plotlyReady, plotConfig };
})();
