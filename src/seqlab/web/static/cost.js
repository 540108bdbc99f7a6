// Cost panel: sliders for T and the widths, both closed-form curves with their crossing, exact counts
// at T and at the lesson's three cases, and each machine's chain (measured by trace, or the closed form).
"use strict";

(() => {
  const { t } = Lab;
  const $ = (id) => document.getElementById(id);
  const sliders = { T: $("T"), d: $("d") };
  const widths = ["d_model", "d_h", "d_k", "d_v"].map((name) => $(name));
  const statusNode = $("cost-status");
  let sequence = 0;

  function parameters() {
    const query = new URLSearchParams({ T: sliders.T.value, lang: Lab.lang });
    widths.forEach((input) => query.set(input.id, input.value));
    return query;
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
    $("span-method").textContent = at.spans.method === "measured"
      ? t("measured", { width: at.spans.traced_width })
      : t("closedForm", { limit: Lab.fmtInt(at.spans.trace_limit) });
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

  function renderChart(data) {
    if (!Lab.plotlyReady()) { Lab.status(statusNode, t("noPlotly")); return; }
    const c = data.curves, crossing = data.crossover.value, T = data.at_T.T;
    const traces = [
      { x: c.T, y: c.recurrence, name: t("recurrence"), mode: "lines", line: { color: "#c0392b", width: 2.5 } },
      { x: c.T, y: c.attention, name: t("attention"), mode: "lines", line: { color: "#1f6fb2", width: 2.5 } },
      { x: [crossing], y: [crossing * (data.d_h * data.d_h + data.d_h * data.d_model)], name: t("meet"),
        mode: "markers", marker: { size: 11, color: "#1d2330", symbol: "diamond" } },
    ];
    const layout = {
      margin: { l: 70, r: 10, t: 10, b: 50 }, height: 340, legend: { orientation: "h", y: 1.12 },
      xaxis: { type: "log", title: { text: t("axisT") } },
      yaxis: { type: "log", title: { text: t("axisCount") }, exponentformat: "power" },
      shapes: [{ type: "line", xref: "x", yref: "paper", x0: T, x1: T, y0: 0, y1: 1,
                 line: { dash: "dot", color: "#5b6475" } }],
      annotations: [{ x: Math.log10(T), y: 1, xref: "x", yref: "paper", text: t("hereT", { T: Lab.fmtInt(T) }),
                      showarrow: false, yanchor: "bottom", font: { size: 11 } }],
      separators: Lab.lang === "es" ? ",." : ".,",
    };
    window.Plotly.react("cost-chart", traces, layout, Lab.plotConfig);
  }

  async function update() {
    const mine = ++sequence;
    Lab.status(statusNode, t("loading"));
    try {
      const data = await Lab.getJSON(`/api/cost?${parameters()}`);
      if (mine !== sequence) return;
      Lab.status(statusNode, "");
      $("crossover-label").textContent = `${t("crossover", { T: data.crossover.text })} ${
        t("crossoverNote", { first: Lab.fmtInt(data.first_T_attention_costs_more) })}`;
      renderAtT(data);
      renderWorked(data);
      renderChart(data);
    } catch (error) {
      if (mine === sequence) Lab.showError(statusNode, error);
    }
  }
  const later = Lab.debounce(update, 120);

  sliders.T.addEventListener("input", () => { $("T-out").textContent = Lab.fmtInt(sliders.T.value); later(); });
  sliders.d.addEventListener("input", () => {
    $("d-out").textContent = Lab.fmtInt(sliders.d.value);
    widths.forEach((input) => { input.value = sliders.d.value; });
    later();
  });
  widths.forEach((input) => input.addEventListener("input", () => {
    const values = new Set(widths.map((w) => w.value));
    $("d-out").textContent = values.size === 1 ? Lab.fmtInt(input.value) : "—";
    if (input.checkValidity() && input.value !== "") later();
  }));
  $("T-out").textContent = Lab.fmtInt(sliders.T.value);
  $("d-out").textContent = Lab.fmtInt(sliders.d.value);
  update();
})();
