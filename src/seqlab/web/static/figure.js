// Figure 1 panel: draw the fifteen measured boxes as SVG from /api/figure, light those that mix positions,
// and show a box's dependency matrices. Keyboard: arrows move between boxes (roving tabindex), Enter selects.
"use strict";

(() => {
  const { t } = Lab;
  const svgNode = document.getElementById("figure-svg");
  const statusNode = document.getElementById("figure-status");
  const button = document.getElementById("highlighter");
  const countNode = document.getElementById("lit-count");
  const detailTitle = document.getElementById("detail-title");
  const detailBody = document.getElementById("detail-body");
  const setupNode = document.getElementById("figure-setup");

  const TOP = 24, FOOT = 34, WIDE = 560;
  let boxes = [];
  let last = null;
  let drawnWidth = null;

  /** The figure laid out for the width it is shown at: the paper's two stacks side by side, 560 units wide on a
   * wide screen; narrower (a phone), the viewBox is the shown width itself and the boxes narrow, so the text stays
   * 11–12 px high instead of shrinking with a fixed viewBox (a long title wraps, see titleText). */
  function layout() {
    const shown = Lab.innerWidth(svgNode) || WIDE;
    if (shown >= WIDE) return { width: WIDE, boxW: 240, boxH: 36, gap: 52, left: [20, 300], font: 12 };
    const width = Math.max(300, shown), margin = 6, between = 18;
    const boxW = (width - 2 * margin - between) / 2;
    return { width, boxW, boxH: 40, gap: 54, left: [margin, margin + boxW + between], font: 11 };
  }

  /** A box's title, centred in its box, on as many lines as its measured length needs (words kept whole). */
  function titleText(group, title, x, top, size, boxW, boxH) {
    const text = Lab.svg("text", { x, "text-anchor": "middle", style: `font-size:${size}px` });
    group.appendChild(text);
    const probe = Lab.svg("tspan");
    text.appendChild(probe);
    const lines = [];
    let line = "";
    for (const word of title.split(" ")) {
      const candidate = line ? `${line} ${word}` : word;
      probe.textContent = candidate;
      if (line && probe.getComputedTextLength() > boxW - 8) { lines.push(line); line = word; } else line = candidate;
    }
    lines.push(line);
    const lead = size * 1.15;
    text.setAttribute("y", top + boxH / 2 + size * 0.35 - ((lines.length - 1) * lead) / 2);
    text.replaceChildren(...lines.map((words, index) => Lab.svg("tspan", { x, dy: index === 0 ? 0 : lead }, words)));
  }
  let nodes = new Map();
  let lit = false;

  // a band comes with its width and formula, measured (seqlab.render.band.band_formula)
  function patternText(pattern, band) {
    if (pattern === "band" && band) return t("pattern.band", { width: band.width, formula: band.formula });
    return t(`pattern.${pattern}`);
  }

  function methodText(method) {
    if (method.startsWith("jacobian")) return t("method.jacobian", { probes: method.split("-")[1] });
    return t("method.token-replacement");
  }

  function draw(data) {
    last = data;
    boxes = data.boxes;
    const stop = svgNode.querySelector(".box[tabindex='0']");
    const focused = stop !== null && document.activeElement === stop;
    const pressed = svgNode.querySelector(".box[aria-pressed='true']");
    const { width, boxW: BOX_W, boxH: BOX_H, gap: GAP, left: LEFT, font } = layout();
    drawnWidth = width;
    const rows = Math.max(...boxes.map((box) => box.row)) + 1;
    const height = TOP + rows * GAP + FOOT;
    svgNode.setAttribute("viewBox", `0 0 ${width} ${height}`);
    svgNode.replaceChildren();
    const defs = Lab.svg("defs");
    const marker = Lab.svg("marker", { id: "arrowhead", viewBox: "0 0 10 10", refX: "9", refY: "5",
                                        markerWidth: "7", markerHeight: "7", orient: "auto-start-reverse" });
    marker.appendChild(Lab.svg("path", { d: "M 0 0 L 10 5 L 0 10 z", fill: "#5b6475" }));
    defs.appendChild(marker);
    svgNode.appendChild(defs);
    const y = (row) => TOP + (rows - 1 - row) * GAP;
    const place = new Map(boxes.map((box) => [box.key, { x: LEFT[box.column], y: y(box.row) }]));

    // arrows: up each stack, and from the encoder's top box into the encoder–decoder attention
    for (const column of [0, 1]) {
      const stack = boxes.filter((box) => box.column === column).sort((a, b) => a.row - b.row);
      for (let i = 1; i < stack.length; i += 1) {
        const from = place.get(stack[i - 1].key), to = place.get(stack[i].key);
        svgNode.appendChild(Lab.svg("line", { class: "arrow", x1: from.x + BOX_W / 2, y1: from.y,
                                              x2: to.x + BOX_W / 2, y2: to.y + BOX_H + 1 }));
      }
    }
    const encoderTop = boxes.filter((box) => box.column === 0).sort((a, b) => b.row - a.row)[0];
    const cross = boxes.find((box) => box.dependencies.some((dep) => dep.other_sequence));
    if (encoderTop && cross) {
      const from = place.get(encoderTop.key), to = place.get(cross.key);
      const x1 = from.x + BOX_W, y1 = from.y + BOX_H / 2, x2 = to.x - 2, y2 = to.y + BOX_H / 2;
      const bend = Math.min(30, (x2 - x1) / 2);
      svgNode.appendChild(Lab.svg("path", { class: "arrow", d: `M ${x1} ${y1} C ${x1 + bend} ${y1}, ${x2 - bend} ${y2}, ${x2} ${y2}` }));
    }
    for (const column of [0, 1]) {
      svgNode.appendChild(Lab.svg("text", { class: "stack-label", x: LEFT[column] + BOX_W / 2, y: height - 10,
                                            "text-anchor": "middle" }, t(column === 0 ? "encoder" : "decoder")));
    }

    nodes = new Map();
    boxes.forEach((box, index) => {
      const { x, y: top } = place.get(box.key);
      const group = Lab.svg("g", { class: "box", role: "button", tabindex: index === 0 ? "0" : "-1",
                                   "data-key": box.key, "data-mixes": String(box.mixes), "aria-pressed": "false",
                                   "aria-label": `${box.title}. ${box.lesson}` });
      group.appendChild(Lab.svg("rect", { x, y: top, width: BOX_W, height: BOX_H, rx: 5 }));
      svgNode.appendChild(group);
      titleText(group, box.title, x + BOX_W / 2, top, font, BOX_W, BOX_H);
      group.addEventListener("click", () => { focusBox(box.key); select(box.key); });
      group.addEventListener("keydown", (event) => onKey(event, box));
      nodes.set(box.key, group);
    });
    if (pressed && nodes.has(pressed.dataset.key)) nodes.get(pressed.dataset.key).setAttribute("aria-pressed", "true");
    if (stop && nodes.has(stop.dataset.key)) {
      for (const [other, node] of nodes) node.setAttribute("tabindex", other === stop.dataset.key ? "0" : "-1");
      if (focused) nodes.get(stop.dataset.key).focus();
    }
    applyHighlighter();
    setupNode.textContent = t("setup", {
      source: data.T_source, target: data.T_target, d: data.d_model, seed: data.seed,
      heads: data.heads === 1 ? t("headOne") : t("headsMany", { count: Lab.fmtInt(data.heads) }),
      words_source: words(data.source_words), words_target: words(data.target_words),
    });
  }

  /** Tokens as the words they spell: a paragraph break as " / ", and "…" where the cut falls inside the text (a
   * word of the next paragraph, "On", is not left to read as part of the title). */
  function words(pieces) {
    return `${pieces.join("").trim().replace(/\s*\n+\s*/g, " / ")}…`;
  }

  function focusBox(key) {
    for (const [other, node] of nodes) node.setAttribute("tabindex", other === key ? "0" : "-1");
    nodes.get(key).focus();
  }

  function neighbour(box, key) {
    const same = (column) => boxes.filter((other) => other.column === column);
    if (key === "ArrowUp" || key === "ArrowDown") {
      const step = key === "ArrowUp" ? 1 : -1;
      return same(box.column).find((other) => other.row === box.row + step) || null;
    }
    if (key === "ArrowLeft" || key === "ArrowRight") {
      const column = key === "ArrowLeft" ? 0 : 1;
      if (column === box.column) return null;
      const candidates = same(column);
      return candidates.reduce((best, other) =>
        (Math.abs(other.row - box.row) < Math.abs(best.row - box.row) ? other : best), candidates[0]);
    }
    if (key === "Home") return boxes[0];
    if (key === "End") return boxes[boxes.length - 1];
    return null;
  }

  function onKey(event, box) {
    if (event.key === "Enter" || event.key === " ") {
      event.preventDefault();
      select(box.key);
      return;
    }
    const next = neighbour(box, event.key);
    if (next !== null || event.key.startsWith("Arrow")) event.preventDefault();
    if (next) focusBox(next.key);
  }

  function heatMap(dependency) {
    const strength = dependency.strength;
    const rows = strength.length, columns = rows ? strength[0].length : 0;
    const largest = Math.max(0, ...strength.flat());
    const grid = Lab.element("div", { class: "heat", role: "img",
                                      "aria-label": t("axes", { rows, columns }) });
    grid.style.gridTemplateColumns = `repeat(${columns}, 14px)`;
    strength.forEach((row, j) => row.forEach((value, i) => {
      const cell = Lab.element("span", { title: t("cell", { row: j + 1, column: i + 1, value: Lab.fmtNum(value) }) });
      if (value === 0) cell.className = "zero";
      else cell.style.background = `rgba(31, 111, 178, ${(0.15 + 0.85 * value / largest).toFixed(3)})`;
      grid.appendChild(cell);
    }));
    return grid;
  }

  function select(key) {
    const box = boxes.find((candidate) => candidate.key === key);
    for (const [other, node] of nodes) node.setAttribute("aria-pressed", String(other === key));
    detailTitle.textContent = box.title;
    const body = Lab.element("div", { id: "detail-body", "data-key": box.key });
    body.appendChild(Lab.element("p", { class: "big" }, t("lesson", { lesson: box.lesson })));
    body.appendChild(Lab.element("p", { class: "verdict" },
                                 t(box.mixes ? "mixes" : "keeps", { pattern: patternText(box.pattern, box.band) })));
    for (const dependency of box.dependencies) {
      const known = `input.${dependency.input_name}`;
      const name = Lab.has(known) ? t(known) : dependency.input_name;
      body.appendChild(Lab.element("h3", {}, t("input", { name,
                                                          method: methodText(dependency.method),
                                                          pattern: patternText(dependency.pattern, dependency.band) })));
      const wrap = Lab.element("div", { class: "heat-wrap" });
      wrap.appendChild(heatMap(dependency));
      body.appendChild(wrap);
    }
    const first = box.dependencies[0];
    if (first) {
      body.appendChild(Lab.element("p", { class: "note" },
                                   t("axes", { rows: first.strength.length, columns: first.strength[0].length })));
    }
    document.getElementById("detail-body").replaceWith(body);
  }

  function applyHighlighter() {
    for (const [key, node] of nodes) {
      const box = boxes.find((candidate) => candidate.key === key);
      node.classList.toggle("lit", lit && box.mixes);
    }
    button.setAttribute("aria-pressed", String(lit));
    button.textContent = t(lit ? "highlighterOn" : "highlighterOff");
    const count = boxes.filter((box) => box.mixes).length;
    countNode.textContent = lit ? t("litCount", { lit: count, total: boxes.length }) : t("litHidden");
  }

  button.addEventListener("click", () => { lit = !lit; applyHighlighter(); });
  button.textContent = t("highlighterOff");

  Lab.getJSON(`/api/figure?lang=${Lab.lang}`, Lab.patient(statusNode)).then((data) => {
    if (!data.available) {
      Lab.status(statusNode, t("unavailable", { reason: data.reason }), "unavailable");
      button.disabled = true;
      return;
    }
    Lab.status(statusNode, "");
    draw(data);
  }).catch((error) => Lab.showError(statusNode, error));
  // laid out again when the width changes the layout (a phone turned sideways), keeping the selected box and the tab stop
  window.addEventListener("resize", Lab.debounce(() => { if (last && layout().width !== drawnWidth) draw(last); }, 150));
})();
