// Time panel: a short live bench on this computer (POST /api/time/run) and the recorded GPU runs.
"use strict";

(() => {
  const { t } = Lab;
  const $ = (id) => document.getElementById(id);
  const statusNode = $("bench-status");

  function localSection(local) {
    const box = Lab.element("div", { id: "local-result" });
    if (local === null) {
      box.appendChild(Lab.element("p", { class: "note" }, t("notRun")));
      return box;
    }
    box.appendChild(Lab.element("p", { class: "origin", "data-origin": local.origin },
                                t(local.origin === "this_request" ? "thisRequest" : "lastOnServer",
                                  { started: local.started.replace("T", " ").replace("+00:00", "") })));
    if (local.caveat) box.appendChild(Lab.element("p", { class: "caveat", id: "load-caveat" }, local.caveat));
    box.appendChild(Lab.element("p", {}, t("machine", {
      device: local.device_name, torch: local.torch_version, threads: local.threads === 1 ? t("threadOne") : t("threadsMany", { count: Lab.fmtInt(local.threads) }),
      d: local.d_model, rounds: Lab.fmtInt(local.rounds),
      seconds: Lab.fmtNum(local.elapsed_s),
    })));
    // † on the value that is noisy (either, both or none), never on a fixed column
    const rows = local.rows.map((row) => [Lab.fmtInt(row.T), `${row.rnn_text}${row.rnn_noisy ? " †" : ""}`,
                                          `${row.sdpa_text}${row.sdpa_noisy ? " †" : ""}`, row.time_ratio_text,
                                          row.work_ratio_text, row.first_text]);
    box.appendChild(Lab.table([t("T"), t("rnn"), t("sdpa"), t("timeRatio"), t("workRatio"),
                               t("first", { margin: Lab.fmtNum(local.margin) })], rows));
    if (local.rows.some((row) => row.rnn_noisy || row.sdpa_noisy)) box.appendChild(Lab.element("p", { class: "note" }, t("noisy")));
    const sentences = [t("work", { T: Lab.fmtInt(local.work_crossover) })];
    box.appendChild(Lab.element("p", { class: "verdict", id: "time-verdict", "data-where": local.time_where },
                                `${sentences.join(" ")} ${local.verdict}`));
    const model = [];
    if (local.predicted_T_text) model.push(t("predicted", { T: local.predicted_T_text }));
    if (local.predicted_T_text && local.predicted_noisy) model.push(t("predictedNoisy"));
    if (model.length) box.appendChild(Lab.element("p", { class: "note", id: "time-model" }, model.join(" ")));
    const chart = Lab.element("div", { id: "local-chart", class: "chart" });
    box.appendChild(chart);
    return box;
  }

  /** A log–log chart of seconds per call; its title is a heading above it (never over the legend). */
  function plot(id, T, series) {
    if (!Lab.plotlyReady()) return;
    window.Plotly.react(id, series.map(([name, values, kind]) => ({
      x: T, y: values, name, mode: "lines+markers", ...Lab.seriesStyle(kind) })), {
      margin: { l: 64, r: 12, t: 36, b: 48 }, height: 300,
      legend: { orientation: "h", x: 0, xanchor: "left", y: 1, yanchor: "bottom" },
      xaxis: { type: "log", title: { text: t("axisT") } },
      yaxis: { type: "log", title: { text: t("axisTime") }, exponentformat: "power" },
      separators: Lab.separators,
    }, Lab.plotConfig);
  }

  function gpuSection(records) {
    const box = Lab.element("div", { id: "gpu-result" });
    if (records.length === 0) {
      box.appendChild(Lab.element("p", { class: "unavailable", id: "gpu-not-recorded" }, t("notRecorded")));
      return box;
    }
    for (const record of records) {
      // where, when and on which machine it was recorded: not on this server, not now
      box.appendChild(Lab.element("p", { class: "origin", "data-origin": "recorded" }, t("gpuHeading", {
        ...record, cpus: record.cpus === null ? "—" : Lab.fmtInt(record.cpus), cuda: record.cuda || "—" })));
      const widths = [...new Set(record.points.map((p) => p.d_model))];
      if (record.caveat) box.appendChild(Lab.element("p", { class: "caveat" }, record.caveat));
      for (const d of widths) {
        const points = record.points.filter((p) => p.d_model === d);
        box.appendChild(Lab.element("h3", {}, t("dModel", { d })));
        box.appendChild(Lab.table([t("T"), t("gpuRnnSpread"), t("sdpa"), t("timeRatio"), t("workRatio")],
          points.map((p) => [Lab.fmtInt(p.T), p.rnn_text, p.sdpa_text, p.time_ratio_text, p.work_ratio_text])));
        // the model's crossing only where the run measured; past its longest length nothing is stated
        if (record.predicted_T_text[String(d)]) {
          box.appendChild(Lab.element("p", { class: "note" },
                                      t("gpuPredicted", { T: record.predicted_T_text[String(d)], d })));
        } else if (record.predicted_past.includes(String(d))) {
          box.appendChild(Lab.element("p", { class: "note gpu-range" },
                                      t("gpuRange", { T: Lab.fmtInt(record.longest_T[String(d)]), d })));
        }
      }
      const main = record.points.filter((p) => p.d_model === widths[0]);
      box.appendChild(Lab.element("h3", { class: "chart-title" }, `${record.gpu} · ${t("dModel", { d: widths[0] })}`));
      const chart = Lab.element("div", { id: `gpu-chart-${record.file.replace(/\W/g, "-")}`, class: "chart" });
      box.appendChild(chart);
      requestAnimationFrame(() => plot(chart.id, main.map((p) => p.T), [
        [t("gpuRnn"), main.map((p) => p.rnn_s), "recurrence"], ["SDPA", main.map((p) => p.sdpa_s), "attention"]]));
    }
    return box;
  }

  function render(data) {
    $("local").replaceChildren(localSection(data.local));
    if (data.local !== null) {
      const rows = data.local.rows;
      plot("local-chart", rows.map((r) => r.T), [["nn.RNN", rows.map((r) => r.rnn_s), "recurrence"],
                                                  ["SDPA", rows.map((r) => r.sdpa_s), "attention"]]);
    }
    $("gpu").replaceChildren(gpuSection(data.gpu));
  }

  $("bench-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const button = $("bench-run");
    button.disabled = true;
    Lab.status(statusNode, t("loading"));
    try {
      const body = { d_model: Number($("bench-d").value), max_T: Number($("bench-T").value) };
      render(await Lab.postJSON(`/api/time/run?lang=${Lab.lang}`, body, { timeoutMs: 300000, retries: 0 }));
      Lab.status(statusNode, "");
      Lab.stale([$("local")], false);
    } catch (error) {
      Lab.showError(statusNode, error);
      Lab.stale([$("local")], true);
    } finally {
      button.disabled = false;
    }
  });

  // The bench's settings a language switch carried in the URL, if any; kept as they change.
  for (const [id, name] of [["bench-d", "d"], ["bench-T", "T"]]) {
    const select = $(id);
    const value = Lab.initial(name, select.value);
    if ([...select.options].some((option) => option.value === value)) select.value = value;
    select.addEventListener("change", () => Lab.keepState({ d: $("bench-d").value, T: $("bench-T").value }));
  }

  Lab.getJSON(`/api/time?lang=${Lab.lang}`, Lab.patient(statusNode)).then(render).catch((error) => Lab.showError(statusNode, error));
})();
