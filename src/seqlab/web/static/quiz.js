// Self-check panel: the four questions of /api/quiz, a hint on request, and the server's grading with an
// explanation for every option (POST /api/quiz/{key}).
"use strict";

(() => {
  const { t } = Lab;
  const form = document.getElementById("quiz");
  const statusNode = document.getElementById("quiz-status");

  function answerOf(question, fieldset) {
    if (question.kind === "numeric") return fieldset.querySelector("input[type=text]").value.trim();
    const picked = [...fieldset.querySelectorAll("input:checked")].map((input) => input.value);
    return question.kind === "single" ? (picked[0] || "") : picked;
  }

  function feedback(result, numeric) {
    const box = Lab.element("div", { class: "feedback", "data-correct": String(result.correct) });
    if (result.understood === false) {  // not an answer of this question's kind: why, and nothing revealed
      box.dataset.understood = "false";
      box.appendChild(Lab.element("p", { class: "error" }, result.explanation));
      return box;
    }
    box.appendChild(Lab.element("p", { class: `verdict ${result.correct ? "right" : "wrong"}` },
                                t(result.correct ? "right" : "wrong")));
    box.appendChild(Lab.element("p", {}, t("yourAnswer", { answer: result.answer, right: result.right_answer })));
    const list = Lab.element("ul");
    for (const option of result.feedback) {
      const item = Lab.element("li", { class: option.correct ? "right" : "wrong", "data-option": option.key });
      const label = numeric ? option.text : `${option.key}) ${option.text}`;
      item.appendChild(Lab.element("strong", {}, `${label} — ${
        t(option.correct ? "optionRight" : "optionWrong")}${option.chosen ? ` ${t("chosen")}` : ""}`));
      item.appendChild(document.createTextNode(` ${option.explanation}`));
      list.appendChild(item);
    }
    box.appendChild(list);
    box.appendChild(Lab.element("p", {}, result.explanation));
    return box;
  }

  function build(question, index) {
    const fieldset = Lab.element("fieldset", { id: `question-${question.key}`, "data-kind": question.kind });
    fieldset.appendChild(Lab.element("legend", {}, t("question", { n: index + 1 })));
    fieldset.appendChild(Lab.element("p", { class: "prompt" }, question.prompt));
    if (question.kind === "numeric") {
      const label = Lab.element("label", { class: "choice" }, t("number"));
      label.appendChild(Lab.element("input", { type: "text", inputmode: "numeric", name: question.key,
                                               maxlength: "32", autocomplete: "off" }));
      fieldset.appendChild(label);
    } else {
      for (const choice of question.choices) {
        const id = `${question.key}-${choice.key}`;
        const row = Lab.element("div", { class: "choice" });
        row.appendChild(Lab.element("input", { type: question.kind === "single" ? "radio" : "checkbox",
                                               name: question.key, value: choice.key, id }));
        row.appendChild(Lab.element("label", { for: id }, `${choice.key}) ${choice.text}`));
        fieldset.appendChild(row);
      }
    }
    const hint = Lab.element("p", { class: "hint", hidden: "" }, question.hint);
    const hintButton = Lab.element("button", { type: "button", class: "hint-button", "aria-expanded": "false" },
                                   t("hint"));
    hintButton.addEventListener("click", () => {
      const open = hint.hidden;
      hint.hidden = !open;
      hintButton.setAttribute("aria-expanded", String(open));
      hintButton.textContent = t(open ? "hideHint" : "hint");
    });
    const check = Lab.element("button", { type: "button", class: "primary check" }, t("check"));
    const result = Lab.element("div", { class: "result", "aria-live": "polite" });
    check.addEventListener("click", async () => {
      const answer = answerOf(question, fieldset);
      if (answer === "" || (Array.isArray(answer) && answer.length === 0)) {
        Lab.status(result, t(question.kind === "multiple" ? "pickMany" : "pick"), "error");
        return;
      }
      try {
        const graded = await Lab.postJSON(`/api/quiz/${question.key}?lang=${Lab.lang}`, { answer },
                                          Lab.patient(result));
        result.className = "result";
        result.replaceChildren(feedback(graded, question.kind === "numeric"));
      } catch (error) {
        Lab.showError(result, error);
      }
    });
    const buttons = Lab.element("p", { class: "controls" });
    buttons.append(hintButton, check);
    fieldset.append(buttons, hint, result);
    fieldset.appendChild(Lab.element("p", { class: "note" }, t("claims", { claims: question.claims.join(", ") })));
    return fieldset;
  }

  Lab.getJSON(`/api/quiz?lang=${Lab.lang}`, Lab.patient(statusNode)).then((data) => {
    if (!data.available) {
      Lab.status(statusNode, t("unavailable", { reason: data.reason }), "unavailable");
      return;
    }
    Lab.status(statusNode, "");
    data.questions.forEach((question, index) => form.appendChild(build(question, index)));
  }).catch((error) => Lab.showError(statusNode, error));
})();
