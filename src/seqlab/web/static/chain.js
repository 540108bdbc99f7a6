// Chain and path panel: measured depth of every output (a staircase of T against one column), the path
// matrices of both machines, and the reach curve ‖∂y_T/∂x_i‖ with a spectral-radius slider.
"use strict";

(() => {
  const { t } = Lab;
  const $ = (id) => document.getElementById(id);
  const inputs = { T: $("T"), d: $("d"), radius: $("radius") };
  const statusNode = $("chain-status");
  const results = [$("chain-svg"), $("spans"), $("paths-recurrence"), $("paths-attention"), $("reach-chart"),
                   $("reach-summary")];
  const COLORS = { recurrence: "#c0392b", attention: "#1f6fb2" };

  /** The depth chart, laid out for the width it is shown at (at least 340 units), so its text stays
   * readable on a phone instead of shrinking with a fixed viewBox. */
  function drawDepths(data) {
    const node = $("chain-svg");
    node.replaceChildren();
    const T = data.T;
    const deepest = Math.max(...data.recurrence.levels.filter((v) => v !== null),
                             ...data.attention.levels.filter((v) => v !== null));
    const width = Math.max(340, Math.min(900, Lab.innerWidth(node) || 900));
    const narrow = width < 600;
    const left = narrow ? 84 : 110, right = width - 20, rowHeight = narrow ? 95 : 115, top = 20;
    const height = top + 2 * rowHeight + 40;
    node.setAttribute("viewBox", `0 0 ${width} ${height}`);
    const x = (depth) => left + (depth / Math.max(deepest, 1)) * (right - left);
    node.appendChild(Lab.svg("line", { class: "axis", x1: left, y1: top + 2 * rowHeight, x2: right,
                                       y2: top + 2 * rowHeight }));
    const ticks = Math.max(2, Math.floor((right - left) / 36));  // at most one label per 36 units
    for (let depth = 0; depth <= deepest; depth += Math.max(1, Math.ceil(deepest / ticks))) {
      node.appendChild(Lab.svg("text", { x: x(depth), y: top + 2 * rowHeight + 16, "text-anchor": "middle" },
                               Lab.fmtInt(depth)));
    }
    node.appendChild(Lab.svg("text", { x: (left + right) / 2, y: top + 2 * rowHeight + 32, "text-anchor": "middle" },
                             t("depth")));
    ["recurrence", "attention"].forEach((machine, index) => {
      const base = top + index * rowHeight;
      node.appendChild(Lab.svg("text", { x: 4, y: base + (rowHeight - 25) / 2 + 4, fill: COLORS[machine],
                                         style: "font-weight:700" }, t(machine)));
      const levels = data[machine].levels;
      const stacked = new Map();
      levels.forEach((depth, j) => {
        if (depth === null) return;
        const slot = stacked.get(depth) || 0;
        stacked.set(depth, slot + 1);
        const cx = x(depth);
        const cy = base + 10 + (machine === "attention" ? (slot * (rowHeight - 35)) / Math.max(T - 1, 1)
                                                        : ((T - 1 - j) * (rowHeight - 35)) / Math.max(T - 1, 1));
        const dot = Lab.svg("circle", { cx, cy, r: 4.5, fill: COLORS[machine] });
        dot.appendChild(Lab.svg("title", {}, `y${j + 1} (${data.words[j]}): ${depth}`));
        node.appendChild(dot);
      });
      if (machine === "recurrence") {
        const points = levels.map((depth, j) => (depth === null ? null
          : `${x(depth)},${base + 10 + ((T - 1 - j) * (rowHeight - 35)) / Math.max(T - 1, 1)}`)).filter(Boolean);
        node.appendChild(Lab.svg("polyline", { points: points.join(" "), fill: "none", stroke: COLORS.recurrence,
                                               "stroke-width": 1, opacity: 0.6 }));
      }
    });
  }

  function spans(data) {
    const box = Lab.element("div");
    for (const machine of ["recurrence", "attention"]) {
      const m = data[machine];
      box.appendChild(Lab.element("p", { class: machine, "data-machine": machine }, t("span", {
        machine: t(machine), products: Lab.fmtInt(m.span.products), ops: Lab.fmtInt(m.span.ops),
        total: Lab.fmtInt(m.span.total_ops), scope: t(`scope.${machine}`),
      })));
    }
    box.appendChild(Lab.element("p", { class: "note" }, t("closedForm", { T: Lab.fmtInt(data.closed_form.recurrence) })));
    $("spans").replaceChildren(box);
  }

  function pathGrid(machine, data) {
    const paths = data[machine].paths;
    const head = [t("from"), ...data.words.map((word, j) => `${j + 1}`)];
    const rows = paths.map((row, i) => [`${i + 1} ${data.words[i]}`,
      ...row.map((v) => (v === null ? { text: "—", className: "none" } : { text: String(v) }))]);
    $(`paths-${machine}`).replaceChildren(Lab.table(head, rows, "path-grid", false));
  }

  function reach(data) {
    const positions = data.words.map((_, i) => i + 1);
    const rnn = data.recurrence, att = data.attention;
    const summary = [t("ratioFirst", { rnn: Lab.fmtNum(rnn.reach[0]), att: Lab.fmtNum(att.reach[0]) })];
    summary.push(rnn.reach_per_step === null ? t("perStepNone") : t("perStep", {
      rnn: Lab.fmtNum(rnn.reach_per_step), radius: Lab.fmtNum(data.spectral_radius),
      att: Lab.fmtNum(att.reach_per_step),
    }));
    $("reach-summary").textContent = summary.join(" ");
    if (!Lab.plotlyReady()) { Lab.status(statusNode, t("noPlotly")); return; }
    const positive = (values) => values.map((v) => (v > 0 ? v : null));
    window.Plotly.react("reach-chart", [
      { x: positions, y: positive(rnn.reach), name: t("recurrence"), mode: "lines+markers",
        ...Lab.seriesStyle("recurrence") },
      { x: positions, y: positive(att.reach), name: t("attention"), mode: "lines+markers",
        ...Lab.seriesStyle("attention") },
    ], {
      margin: { l: 64, r: 12, t: 36, b: 48 }, height: 320,
      legend: { orientation: "h", x: 0, xanchor: "left", y: 1, yanchor: "bottom" },
      xaxis: { title: { text: t("reachAxis") }, dtick: positions.length > 16 ? 2 : 1 },
      yaxis: { type: "log", title: { text: t("reachNorm") }, exponentformat: "power" },
      separators: Lab.separators,
    }, Lab.plotConfig);
  }

  let last = null;

  const { run: update } = Lab.requests({
    statusNode, results,
    ask: (options) => {
      const query = new URLSearchParams({ T: inputs.T.value, d_model: inputs.d.value,
                                          spectral_radius: inputs.radius.value, lang: Lab.lang });
      return Lab.getJSON(`/api/chain?${query}`, options);
    },
    show: (data) => {
      last = data;
      drawDepths(data);
      spans(data);
      pathGrid("recurrence", data);
      pathGrid("attention", data);
      reach(data);
    },
  });
  const later = Lab.debounce(update, 150);
  const outputs = { T: (v) => Lab.fmtInt(v), d: (v) => Lab.fmtInt(v), radius: (v) => Lab.fmtNum(Number(v)) };
  const names = { T: "T", d: "d", radius: "radius" };
  for (const [name, input] of Object.entries(inputs)) {
    input.value = Lab.initial(names[name], input.value);  // the state a language switch carried, if any
    const show = () => Lab.showValue(input, outputs[name](input.value));
    input.addEventListener("input", () => {
      show();
      Lab.keepState({ T: inputs.T.value, d: inputs.d.value, radius: inputs.radius.value });
      later();
    });
    show();
  }
  window.addEventListener("resize", Lab.debounce(() => { if (last) drawDepths(last); }, 150));
  update();
})();
