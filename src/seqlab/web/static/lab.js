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

  // The page's calls go one at a time: its sections queue behind each other instead of competing for the lab's
  // measuring worker (two sections asking at once made one of them busy, 503, on a quiet lab).
  let line = Promise.resolve();
  function inTurn(task) {
    const turn = line.then(task);
    line = turn.then(() => undefined, () => undefined);
    return turn;
  }

  /** Seconds before asking a busy lab again: its Retry-After, growing by half each time, at most 30 s. */
  function backoff(retryAfter, attempt) {
    return Math.min(30, Math.max(1, retryAfter) * 1.5 ** attempt);
  }

  /** Send one call in the page's turn. A busy lab (503) is asked again after its Retry-After with a growing wait
   * (backoff), as long as `wanted()` says the answer is still wanted, up to `retries` times (no limit by default);
   * meanwhile `onBusy(text)` is told each second that the lab is busy and when it will be asked again. Past the
   * retries (or once not wanted) the busy error is thrown. */
  // The default time limit is past every panel's own limit in the server (at most 90 s, the figure's) plus the wait
  // for a worker and its start: the server ends a measurement that runs too long and says so; the page must not
  // abort first (at 60 s it dropped the decode panel's answer, whose limit is 60 s, on a loaded machine).
  async function send(url, init, { timeoutMs = 180000, retries = Infinity, onBusy = null, wanted = () => true } = {}) {
    return inTurn(async () => {
      if (!wanted()) throw new Error("replaced by a newer request");  // its turn came too late: nobody reads it
      for (let attempt = 0; ; attempt += 1) {
        try {
          return await call(url, init, timeoutMs);
        } catch (error) {
          if (!error.busy || attempt >= retries || !wanted()) throw error;
          const until = Date.now() + backoff(error.retryAfter, attempt) * 1000;
          while (Date.now() < until) {
            if (!wanted()) throw error;
            if (onBusy) onBusy(t("waiting", { seconds: Math.ceil((until - Date.now()) / 1000) }));
            await sleep(Math.min(1000, until - Date.now()));
          }
        }
      }
    });
  }

  /** GET an /api endpoint in the page's turn, waiting out a busy lab (see send). */
  async function getJSON(url, options = {}) {
    return send(url, { headers: { Accept: "application/json" } }, options);
  }

  /** POST a JSON body to an /api endpoint in the page's turn, waiting out a busy lab (see send). */
  async function postJSON(url, body, options = {}) {
    return send(url, {
      method: "POST", headers: { "Content-Type": "application/json", Accept: "application/json" },
      body: JSON.stringify(body),
    }, options);
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

  /** A panel's requests, each answer shown only while it is the latest: ``ask(options)`` fetches (a promise of
   * the data; it passes ``options`` on to getJSON/postJSON), ``show(data)`` draws it. The status says
   * "Computing…", "the lab is busy; asking again in N s" while a busy lab is waited out (no click needed), then
   * nothing or the error; the ``results`` nodes are greyed out while they are stale. A request that a newer one
   * replaced stops waiting. Returns ``{ run, drop }``: ``run()`` asks now, ``drop()`` forgets an answer still on
   * its way (its inputs changed to values the server would refuse). */
  function requests({ statusNode, results, ask, show }) {
    let sequence = 0;
    async function run() {
      const mine = ++sequence;
      const wanted = () => mine === sequence;
      status(statusNode, t("loading"));
      try {
        const data = await ask({ wanted, onBusy: (text) => { if (wanted()) status(statusNode, text, "waiting"); } });
        if (!wanted()) return;
        status(statusNode, "");
        show(data);
        stale(results, false);
      } catch (error) {
        if (!wanted()) return;
        showError(statusNode, error);
        stale(results, true);
      }
    }
    return { run, drop: () => { sequence += 1; } };
  }

  /** Options for a call made once when the page opens: a busy lab is waited out, said in `statusNode`. */
  function patient(statusNode) {
    return { onBusy: (text) => status(statusNode, text, "waiting") };
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

  // One style per series of a chart: a hue of Okabe and Ito's colour-blind-safe palette, a line dash and a marker
  // shape, all three different from series to series, so that curves stay apart in grey and to colour-blind eyes
  // (no two series share a hue while there are fewer than eight). Recurrence and attention keep the page's red
  // and blue (lab.css) with their own dash and marker.
  const PALETTE = ["#0072b2", "#d55e00", "#009e73", "#cc79a7", "#e69f00", "#56b4e9", "#000000"];
  const DASHES = ["solid", "dash", "dot", "dashdot", "longdash", "longdashdot", "5px,2px,1px,2px"];
  const SYMBOLS = ["circle", "square", "diamond", "triangle-up", "x", "cross", "star"];
  const KINDS = { recurrence: { color: "#c0392b", dash: "solid", symbol: "circle" },
                  attention: { color: "#1f6fb2", dash: "dash", symbol: "square" } };
  /** The line and marker of series `index` (or of "recurrence" / "attention") for a Plotly trace. */
  function seriesStyle(index) {
    const kind = KINDS[index];
    const color = kind ? kind.color : PALETTE[index % PALETTE.length];
    const dash = kind ? kind.dash : DASHES[index % DASHES.length];
    const symbol = kind ? kind.symbol : SYMBOLS[index % SYMBOLS.length];
    return { line: { color, dash, width: 2 }, marker: { color, symbol, size: 8 } };
  }

  const plotlyReady = () => typeof window.Plotly !== "undefined";
  // No mode bar: its tooltips are Plotly's English, and the charts need no zoom tools.
  const plotConfig = { displaylogo: false, displayModeBar: false, responsive: true };
  const separators = lang === "es" ? ",." : ".,";

  return { lang, t, has, getJSON, postJSON, patient, debounce, fmtInt, fmtNum, showValue, status, showError, stale, requests,
           initial, keepState, element, svg, table, innerWidth, seriesStyle, plotlyReady, plotConfig, separators };
})();
