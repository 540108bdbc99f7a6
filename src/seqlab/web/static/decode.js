// Decoding panel (beyond the lesson): per new token at t = 1, 4, 16, …, the multiplications counted on one
// step, the bytes of the state the machine keeps and, if asked, the step's time — every machine on one chart.
"use strict";

(() => {
  const { t } = Lab;
  const $ = (id) => document.getElementById(id);
  const inputs = { positions: $("positions"), d: $("d"), timed: $("timed"), metric: $("metric") };
  const statusNode = $("decode-status");
  const results = [$("decode-chart"), $("decode-caveat-box"), $("decode-sentences"), $("decode-table"), $("decode-caption")];
  let last = null;

  const largest = () => 2 ** Number(inputs.positions.value);

  /** One row per machine and position: machine, t, multiplications, state bytes and, if timed, the time. */
  function renderTable(data) {
    const head = [t("machine"), t("positionHead"), t("multiplicationsHead"), t("stateHead")];
    if (data.timed) head.push(t("timeHead"));
    const rows = [];
    for (const m of data.machines) {
      m.steps.forEach((s, index) => {
        const name = index === 0 ? `${m.label} (${m.fixed_state ? t("fixed") : t("grows")})` : m.label;
        const row = [name, Lab.fmtInt(s.t), Lab.fmtInt(s.multiplications), Lab.fmtInt(s.state_bytes)];
        if (data.timed) row.push(s.time_text);  // the CLI's cell: engineering units, † when noisy
        rows.push(row);
      });
    }
    $("decode-table").replaceChildren(Lab.table(head, rows, "decode"));
    const match = data.machines.every((m) => m.steps.every((s) => s.closed_form === null
                                                                 || s.closed_form === s.multiplications));
    const parts = [t("caption", { match: match ? t("allMatch") : t("someDiffer"), d: Lab.fmtInt(data.d_model) })];
    if (data.timed) {
      const threads = data.threads === 1 ? t("threadOne") : t("threadsMany", { count: Lab.fmtInt(data.threads) });
      parts.push(t("captionTimed", { threads, rounds: Lab.fmtInt(data.rounds),
                                     load: data.load_per_cpu === null ? "—" : Lab.fmtNum(data.load_per_cpu) }));
    }
    if (data.timed && data.machines.some((m) => m.steps.some((s) => s.time_text.endsWith("†")))) parts.push(t("noisy"));
    if (data.static_note) parts.push(data.static_note);
    $("decode-caption").textContent = parts.join(" ");
  }

  /** The study's decisions; above them, when the timing began on a busy machine, the caveat every timing panel
   * shows (the server's one sentence, seqlab.render.machine_load.busy_caveat). */
  function renderSentences(data) {
    const caveat = data.timed && data.caveat ? [Lab.element("p", { class: "caveat", id: "decode-caveat" }, data.caveat)]
      : [];
    $("decode-caveat-box").replaceChildren(...caveat);
    $("decode-sentences").replaceChildren(...data.sentences.map((line) => Lab.element("li", {}, line)));
  }

  function renderChart(data) {
    if (!Lab.plotlyReady()) { Lab.status(statusNode, t("noPlotly")); return; }
    const metric = inputs.metric.value;
    if (metric === "median_s" && !data.timed) { Lab.status(statusNode, t("untimed")); }
    const traces = data.machines.map((m, index) => ({
      x: m.steps.map((s) => s.t), y: m.steps.map((s) => (s[metric] > 0 ? s[metric] : null)), name: m.label,
      mode: "lines+markers", ...Lab.seriesStyle(index),  // hue, dash and marker differ: apart in grey too
      error_y: metric === "median_s" ? { type: "data", array: m.steps.map((s) => (s.iqr_s || 0) / 2),
                                         visible: true, thickness: 1 } : undefined,
    }));
    window.Plotly.react("decode-chart", traces, {
      // the legend above the plot, as on the other panels: below it, it met the x axis's title
      margin: { l: 70, r: 12, t: 36, b: 48 }, height: 400,
      legend: { orientation: "h", x: 0, xanchor: "left", y: 1, yanchor: "bottom" },
      xaxis: { type: "log", title: { text: t("axisT") } },
      yaxis: { type: "log", title: { text: t(metric) }, exponentformat: "power" },
      separators: Lab.separators,
    }, Lab.plotConfig);
  }

  const { run: update } = Lab.requests({
    statusNode, results,
    ask: (options) => {
      const query = new URLSearchParams({ d_model: inputs.d.value, positions: largest(),
                                          time: inputs.timed.checked ? "true" : "false", lang: Lab.lang });
      return Lab.getJSON(`/api/decode?${query}`, options);
    },
    show: (data) => {
      last = data;
      renderTable(data);
      renderSentences(data);
      renderChart(data);
    },
  });
  const later = Lab.debounce(update, 250);
  const show = () => {
    Lab.showValue(inputs.positions, Lab.fmtInt(largest()));  // the slider moves an exponent: say the position
    Lab.showValue(inputs.d, Lab.fmtInt(inputs.d.value));
  };
  inputs.positions.value = Lab.initial("positions", inputs.positions.value);
  inputs.d.value = Lab.initial("d", inputs.d.value);
  for (const input of [inputs.positions, inputs.d, inputs.timed]) {
    input.addEventListener(input === inputs.timed ? "change" : "input", () => {
      show();
      Lab.keepState({ positions: inputs.positions.value, d: inputs.d.value });
      later();
    });
  }
  inputs.metric.addEventListener("change", () => { if (last) renderChart(last); });
  show();
  update();
})();
