"""The self-check quiz (L12): answers recomputed from measurements, grading with feedback, and ``seqlab quiz``.

Every question is graded right and wrong and the feedback is checked option by option; numeric answers are
read leniently and bad answers refused with the value named; the command is driven with piped answers in
English and Spanish.
"""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction

import pytest
from typer.testing import CliRunner

from seqlab import cost
from seqlab.cli import app
from seqlab.errors import SeqlabError
from seqlab.studies import quiz
from seqlab.studies.quiz import KEYS, grade, measure_facts, parse_number, question, questions

#: A wide, colourless console for in-process CLI runs (as conftest's CLI_ENV for compare).
CLI_ENV = {"COLUMNS": "200", "NO_COLOR": "1", "FORCE_COLOR": None, "TTY_COMPATIBLE": None}
RIGHT = {"q1": "c", "q2": "512", "q3": "b", "q4": "a, b, c"}
WRONG = {"q1": "b", "q2": "1024", "q3": "a", "q4": "a, b, c, d"}


# --- The answers are computed, not typed ------------------------------------------------------------

def test_the_facts_behind_the_answers():
    facts = measure_facts()
    assert facts.lengths == (8, 16)
    assert facts.recurrence_span == (8, 16)  # L1: one product by W_hh per position
    assert facts.input_span == (1, 1)  # the W_xh x_t half is one product, whatever T
    assert facts.softmax_span == (1, 1)  # a row softmax does not wait on other rows
    assert facts.token_span == (0, 0)  # tokens -> rows is a gather: no arithmetic in a row
    assert not facts.shuffled_call_raised  # the call takes shuffled rows
    assert facts.crossover == cost.crossover_length(512, 512, 512, 512) == 512  # L7
    assert facts.crossover_count == 2 * 512 * 512**2  # 268,435,456 each at T = d
    assert facts.shuffled_change <= facts.shuffled_tolerance < facts.unshuffled_change  # L10
    assert facts.recurrence_path == (8, 16)  # L3: W_xh once, then T-1 products by W_hh
    assert facts.attention_path == (2, 2)  # L4: W_v, then A V, whatever T
    assert 0.1 < facts.attention_reach_ratio < 10  # the gradient reaches position 1 undiminished


def test_questions_have_the_lessons_answers():
    asked = questions("en")
    assert [q.key for q in asked] == list(KEYS)
    assert [q.kind for q in asked] == ["single", "numeric", "single", "multiple"]
    assert {q.key: q.answer for q in asked} == RIGHT
    for q in asked:
        assert q.prompt and q.hint and q.explanation and q.claims
        assert all(option.explanation for option in q.options)
        assert sum(option.correct for option in q.options) >= 1


def test_a_different_measurement_changes_the_answer(monkeypatch):
    """The correct flags follow the facts: a recurrence whose chain did not grow would make q1 have no answer."""
    facts = measure_facts()
    fake = quiz.QuizFacts(**{**facts.__dict__, "recurrence_span": (1, 1), "input_span": (8, 16)})
    monkeypatch.setattr(quiz, "measure_facts", lambda: fake)
    quiz.questions.cache_clear()
    try:
        assert quiz.questions("en")[0].answer == "b"
    finally:
        quiz.questions.cache_clear()


#: For every option of the four questions, a wrong fact that changes whether it is right (L12).
OPTION_FLIPS = {
    ("q1", "a"): {"token_span": (8, 16)},  # a token lookup whose chain grew with T
    ("q1", "b"): {"input_span": (8, 16)},
    ("q1", "c"): {"recurrence_span": (1, 1)},
    ("q1", "d"): {"softmax_span": (8, 16)},
    ("q2", "512"): {"crossover": Fraction(1000)},
    ("q2", "1024"): {"crossover": Fraction(1024)},
    ("q2", "256"): {"crossover": Fraction(256)},
    ("q2", "262144"): {"crossover": Fraction(262144)},
    ("q2", "513"): {"crossover": Fraction(513)},
    ("q3", "a"): {"unshuffled_change": 0.0},  # shuffled rows gave the original outputs
    ("q3", "b"): {"shuffled_change": 1.0},  # outputs not shuffled alike
    ("q3", "c"): {"shuffled_change": 1.0},
    ("q3", "d"): {"shuffled_call_raised": True},
    ("q4", "a"): {"recurrence_path": (2, 2)},  # a recurrence whose path did not grow
    ("q4", "b"): {"attention_path": (7, 15)},  # attention's path growing like T - 1
    ("q4", "c"): {"attention_path": (7, 7)},  # flat, but as long as the shorter T
    ("q4", "d"): {"attention_path": (7, 15)},
}


def test_every_option_has_a_flip():
    assert set(OPTION_FLIPS) == {(q.key, o.key) for q in questions("en") for o in q.options}


@pytest.mark.parametrize(("key", "option"), list(OPTION_FLIPS))
def test_each_option_follows_its_fact(key, option):
    """Patch the fact behind one option: that option's verdict flips and the computed answer changes."""
    facts = measure_facts()
    before = {q.key: q for q in quiz.build_questions(facts)}[key]
    after = {q.key: q for q in quiz.build_questions(replace(facts, **OPTION_FLIPS[(key, option)]))}[key]
    was = next(o.correct for o in before.options if o.key == option)
    now = next((o.correct for o in after.options if o.key == option), None)
    assert now is None or now != was  # the option went (q2's old crossing) or its verdict flipped
    assert after.answer != before.answer
    if key == "q2" and option != before.answer:
        assert after.answer == option  # the crossing measured is the answer


def test_spanish_questions_are_translated_with_the_same_answers():
    english, spanish = questions("en"), questions("es")
    for en, es in zip(english, spanish):
        assert en.answer == es.answer and en.kind == es.kind
        assert en.prompt != es.prompt and en.hint != es.hint
    assert "¿" in spanish[0].prompt
    assert "268.435.456" in spanish[1].options[0].explanation  # Spanish digit grouping


# --- Grading ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("key", KEYS)
def test_right_answer(key):
    result = grade(key, RIGHT[key])
    assert result.correct and result.right_answer == RIGHT[key]
    assert result.explanation == question(key).explanation


@pytest.mark.parametrize("key", KEYS)
def test_wrong_answer(key):
    result = grade(key, WRONG[key])
    assert not result.correct and result.right_answer == RIGHT[key]
    chosen = [item for item in result.feedback if item.chosen]
    assert chosen and all(item.explanation for item in chosen)


def test_single_choice_feedback_covers_every_option():
    result = grade("q1", "b")
    assert [(f.key, f.chosen, f.correct) for f in result.feedback] == [
        ("a", False, False), ("b", True, False), ("c", False, True), ("d", False, False)]
    assert "1 product at T = 8" in result.feedback[1].explanation  # the measured span of the W_xh half


def test_multiple_choice_feedback_marks_the_false_statement():
    result = grade("q4", "abcd")
    assert result.answer == "a, b, c, d" and not result.correct
    d = result.feedback[3]
    assert d.chosen and not d.correct and "autograd" in d.explanation
    assert not grade("q4", "a, b").correct  # a true statement left out is wrong too
    assert grade("q4", ["c", "b", "a", "a"]).correct  # order and repeats do not matter


@pytest.mark.parametrize("answer", ["512", " 512 ", "512.0", "5.12e2", 512, 512.0, "+512"])
def test_numeric_answers_are_read_leniently(answer):
    assert grade("q2", answer).correct


def test_numeric_answers_in_the_languages_own_digits():
    assert parse_number("512,0", "es") == 512
    assert parse_number("1.024", "es") == 1024 and parse_number("1,024", "en") == 1024
    assert not grade("q2", "1.024", "es").correct  # 1,024 = 2d
    assert parse_number("1.000", "es") == 1000 and parse_number("1.000.000", "es") == 1_000_000  # "." groups
    assert parse_number("1 000", "es") == parse_number("1,000", "en") == 1000


@pytest.mark.parametrize(("answer", "lang", "readings"), [
    ("1,000", "es", "could be 1 or 1000"),  # a decimal comma here, a thousands comma in English
    ("1.000", "en", "could be 1 or 1000"),
    ("512.000", "en", "could be 512 or 512000"),
])
def test_ambiguous_numbers_are_refused_with_both_readings(answer, lang, readings):
    with pytest.raises(SeqlabError) as error:
        parse_number(answer, lang)
    assert readings in str(error.value) and repr(answer) in str(error.value)


def test_long_numbers_stay_exact():
    digits = "12345678901234567890123"
    assert parse_number(digits) == int(digits) and grade("q2", digits).answer == digits
    assert parse_number(10**30) == 10**30
    with pytest.raises(SeqlabError):
        parse_number("9e99999999")  # refused at once, not expanded


@pytest.mark.parametrize(("answer", "expected"), [
    ("1024", "is 2d"),  # a known slip gets its own explanation
    ("513", "one position earlier"),
    ("100", "have not met yet"),  # any other value: its ratio, computed
    ("600", "met earlier"),
])
def test_numeric_feedback(answer, expected):
    result = grade("q2", answer)
    assert not result.correct
    (item,) = result.feedback
    assert item.chosen and not item.correct and expected in item.explanation


def test_numeric_feedback_computes_the_ratio():
    ratio = cost.work_ratio(100, 512, 512, 512, 512)  # 100 / 512 = 0.1953125
    assert "0.195 times" in grade("q2", "100").feedback[0].explanation and float(ratio) == 0.1953125


@pytest.mark.parametrize(("key", "answer"), [
    ("q2", "abc"), ("q2", ""), ("q2", "0"), ("q2", "-3"), ("q2", "512.5"), ("q2", "nan"), ("q2", True),
    ("q1", "ab"), ("q1", "e"), ("q1", ""), ("q3", "2"), ("q4", "xyz"), ("q4", ""),
])
def test_bad_answers_name_the_value(key, answer):
    with pytest.raises(SeqlabError) as error:
        grade(key, answer)
    assert repr(answer) in str(error.value)


def test_unknown_question_and_language():
    with pytest.raises(SeqlabError, match="'q5'"):
        grade("q5", "a")
    with pytest.raises(SeqlabError, match="'fr'"):
        questions("fr")


def test_grade_in_spanish():
    result = grade("q3", "a", "es")
    assert not result.correct and "barajad" in result.feedback[0].explanation


# --- The command ------------------------------------------------------------------------------------

def run_quiz(answers: str, *args: str):
    return CliRunner().invoke(app, ["quiz", *args], input=answers, env=CLI_ENV)


def test_cli_all_right_in_english():
    result = run_quiz("c\n512\nb\na, b, c\n", "--lang", "en")
    assert result.exit_code == 0, result.output
    assert "Question 1 of 4 (L1)" in result.output and result.output.count("✓ Right.") == 4
    assert "Score: 4 of 4." in result.output


def test_cli_hint_retry_and_feedback_in_english():
    result = run_quiz("?\nc\n1024\nz\nb\nabcd\n", "--lang", "en")
    assert result.exit_code == 0, result.output
    assert "Hint: Look at h_t" in result.output
    assert "Not quite: the answer is 512." in result.output and "1,024 is 2d" in result.output
    assert "Could not read 'z'" in result.output
    assert "Not quite: the answer is a, b, c." in result.output
    assert "Score: 2 of 4." in result.output


def test_cli_in_spanish():
    result = run_quiz("c\n512,0\na\na b c\n", "--lang", "es")
    assert result.exit_code == 0, result.output
    assert "Pregunta 1 de 4 (L1)" in result.output and result.output.count("✓ Correcto.") == 3
    assert "No exactamente: la respuesta es b." in result.output and "← tu respuesta" in result.output
    assert "Puntuación: 3 de 4." in result.output


def test_cli_end_of_input_stops_with_the_score():
    result = run_quiz("c\n", "--lang", "en")
    assert result.exit_code == 0, result.output
    assert "End of input: stopped after 1 of 4 questions." in result.output
    assert "Score: 1 of 1 answered (4 questions)." in result.output


def test_cli_end_of_input_after_three_scores_the_three():
    result = run_quiz("c\n512\nb\n", "--lang", "en")
    assert result.exit_code == 0, result.output
    assert "Score: 3 of 3 answered (4 questions)." in result.output and "Score: 3 of 4." not in result.output
    assert "Puntuación: 1 de 1 respondidas (4 preguntas)." in run_quiz("c\n", "--lang", "es").output


def test_cli_ctrl_c_prints_the_score_so_far_in_one_line_and_exits_130(monkeypatch):
    from rich.prompt import Prompt

    answers = iter(["c", "1024"])

    def ask(*args, **kwargs):
        try:
            return next(answers)
        except StopIteration:
            raise KeyboardInterrupt from None

    monkeypatch.setattr(Prompt, "ask", ask)
    result = run_quiz("", "--lang", "en")
    assert result.exit_code == 130, result.output
    lines = result.output.splitlines()
    assert lines[-1] == "Interrupted: stopped after 2 of 4 questions; 1 right." and "Traceback" not in result.output
    assert "Score:" not in result.output  # one line after the interrupt (seqlab.cli.interrupts)


def test_cli_empty_answer_asks_again_with_a_hint():
    result = run_quiz("\n  \nc\n512\nb\na, b, c\n", "--lang", "en")
    assert result.exit_code == 0, result.output
    assert result.output.count("Type an answer, or ? for a hint.") == 2
    assert "Could not read" not in result.output and "Score: 4 of 4." in result.output


@pytest.mark.parametrize("lang", ["en", "es"])
@pytest.mark.parametrize("columns", ["80", "100"])
def test_cli_your_answer_stays_with_its_option(lang, columns):
    result = CliRunner().invoke(app, ["quiz", "--lang", lang], input="b\n1024\na\na, b, c, d\n",
                                env={**CLI_ENV, "COLUMNS": columns})
    assert result.exit_code == 0, result.output
    marker = "← your answer" if lang == "en" else "← tu respuesta"
    marked = [line for line in result.output.splitlines() if "←" in line]
    assert len(marked) == 6  # q1, q3 and the four letters of q4
    for line in marked:
        assert line.endswith(marker) and line.split("←")[0].strip() and len(line) <= int(columns), line


def test_cli_bad_language():
    result = run_quiz("", "--lang", "fr")
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "Error: Invalid value for '--lang'" in result.output and "'fr'" in result.output
