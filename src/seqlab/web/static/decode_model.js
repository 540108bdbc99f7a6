// Generation panel, a model's own cache: a tiny random-weight model of the chosen family writes token t through its
// own cache object; per t, the bytes read from that object by kind and the multiplications per token, each beside
// the configuration's closed form, then the growth class of every figure beside the closed forms' one.
"use strict";

(() => {
  const { t } = Lab;
  const $ = (id) => document.getElementById(id);
  const inputs = { family: $("model-family"), positions: $("model-positions") };
  const statusNode = $("model-status");
  const results = [$("model-table"), $("model-growth"), $("model-sentences"), $("model-caption")];

  /** The counted figure, or '=' where it equals its closed form (the closed form shown where it differs). */
  function against(value, closed) {
    if (closed === null || closed === undefined) return Lab.fmtInt(value);
    return value === closed ? `${Lab.fmtInt(value)} (=)` : `${Lab.fmtInt(value)} (${t("modelClosed")} ${Lab.fmtInt(closed)})`;
  }

  function render(data) {
    const head = ["t", t("modelMultiplications"), ...data.kinds.map((k) => t("modelBytes", { kind: k.label }))];
    const rows = data.steps.map((s) => [
      Lab.fmtInt(s.t), against(s.multiplications, s.closed_multiplications),
      ...data.kinds.map((k) => against(s.bytes_by_kind[k.key] || 0,
                                       s.closed_bytes_by_kind ? s.closed_bytes_by_kind[k.key] || 0 : null)),
    ]);
    $("model-table").replaceChildren(Lab.table(head, rows, "decode-model"));
    const growthHead = [t("modelFigure"), t("modelMeasured"), t("modelExpected")];
    const growthRows = data.growth.map((g) => [
      g.label, g.measured_label,
      g.expected_label === null ? t("modelNone")
        : `${g.expected_label} (${g.matches ? t("modelSame") : t("modelDiffers")})`,
    ]);
    $("model-growth").replaceChildren(Lab.table(growthHead, growthRows, "decode-growth"));
    $("model-sentences").replaceChildren(...data.sentences.map((line) => Lab.element("li", {}, line)));
    const match = data.counts_match !== false && data.bytes_match !== false;
    $("model-caption").textContent = t("modelCaption", {
      model: data.label, architecture: data.architecture, parameters: Lab.fmtInt(data.parameters),
      match: match ? t("allMatch") : t("someDiffer") });
  }

  const { run: update } = Lab.requests({
    statusNode, results,
    ask: (options) => {
      const query = new URLSearchParams({ family: inputs.family.value, positions: inputs.positions.value,
                                          lang: Lab.lang });
      return Lab.getJSON(`/api/decode/model?${query}`, options);
    },
    show: render,
  });
  const later = Lab.debounce(update, 250);
  const show = () => Lab.showValue(inputs.positions, Lab.fmtInt(inputs.positions.value));
  inputs.family.value = Lab.initial("model", inputs.family.value);
  inputs.positions.value = Lab.initial("model_t", inputs.positions.value);
  inputs.family.addEventListener("change", () => {
    Lab.keepState({ model: inputs.family.value, model_t: inputs.positions.value });
    update();
  });
  inputs.positions.addEventListener("input", () => {
    show();
    Lab.keepState({ model: inputs.family.value, model_t: inputs.positions.value });
    later();
  });
  show();
  update();
})();
