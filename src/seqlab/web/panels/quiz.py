"""Self-check panel: the lesson's four questions, a hint on request, and why each answer is right or wrong (L12).

Questions, hints, options and explanations come from :mod:`seqlab.studies.quiz` in the requested
language; so does the grading (:func:`seqlab.studies.quiz.grade`), whose right answers are recomputed
from measurements. Those measurements (:func:`seqlab.studies.quiz.measure_facts`: traces, paths, reach)
run once, in a worker process (:mod:`seqlab.web.workers`); the server keeps the facts and builds the
questions and grades from them without measuring. The schema says an answer's shapes (text of at most
:data:`MAX_ANSWER` characters, a JSON number, a list of at most :data:`MAX_LETTERS` short texts) and every answer
of those shapes is graded, never refused: one that is not of the question's kind (a whole number in
[1, :data:`MAX_NUMBER`] for the numeric question, letters among the options otherwise) is graded not right with
``understood: false`` and a sentence of the ``web`` catalogue saying why, and reveals nothing. The question list
leaves out which options are right: a reader learns it by answering. When the study is not installed the
endpoints say so (``available`` false).
"""

from __future__ import annotations

import re
import threading
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Path, Query, Request
from pydantic import BaseModel, ConfigDict, Field, field_validator

from seqlab.errors import SeqlabError
from seqlab.web.messages import N_, LabError, Phrase
from seqlab.web.validation import lab_error, shown
from seqlab.web.budget import Work
from seqlab.web.workers import pool_of

DOMAIN = "web"

router = APIRouter()

Lang = Literal["en", "es"]
Key = Literal["q1", "q2", "q3", "q4"]
MAX_ANSWER = 64
MAX_LETTERS = 8
#: Largest whole number the numeric question accepts (a length T; the crossing it asks for is 512).
MAX_NUMBER = 10**12
#: Seconds the facts may take to measure in their worker.
LIMIT_S = 90.0
#: How each language writes a decimal mark (as :func:`seqlab.studies.quiz.parse_number` reads it).
DECIMAL_MARK = {"en": ".", "es": ","}
_facts: dict[str, object] = {}
_facts_lock = threading.Lock()


class Choice(BaseModel):
    """An option as shown before answering: its letter and text only."""

    key: str
    text: str


class QuestionOut(BaseModel):
    """One question as the page shows it."""

    key: str
    kind: Literal["single", "numeric", "multiple"]
    prompt: str
    hint: str
    choices: list[Choice] = Field(description="letters to pick from; empty for a numeric question")
    claims: list[str]


class QuizResponse(BaseModel):
    """The four questions, or why there are none."""

    available: bool
    reason: str | None = None
    questions: list[QuestionOut] = Field(default_factory=list)


class Answer(BaseModel):
    """A reader's answer: a letter (``"c"``), letters (``"a, b"`` or a list) or a whole number (``"512"`` or 512)."""

    model_config = ConfigDict(extra="forbid")

    answer: (Annotated[str, Field(max_length=MAX_ANSWER)] | int | float
             | Annotated[list[Annotated[str, Field(max_length=8)]], Field(max_length=MAX_LETTERS)]) = Field(
        description="text of at most 64 characters, a JSON number, or a list of at most 8 texts of at most 8 "
                    "characters; any of these is graded (an answer that is not a whole number, or not the question's "
                    "letters, is graded not right, with ``understood: false`` and the reason)")

    @field_validator("answer", mode="before")
    @classmethod
    def _shape(cls, value: Any) -> Any:
        """One readable sentence for any other shape (never pydantic's names of the union's members)."""
        if isinstance(value, str):
            if len(value) > MAX_ANSWER:
                raise lab_error(N_("answer must be at most {most} characters, received {count}"), most=MAX_ANSWER,
                                count=len(value))
            return value
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return value  # out of range or not whole: graded not right (read_answer), never refused
        if isinstance(value, list) and all(isinstance(item, str) and len(item) <= 8 for item in value):
            if len(value) > MAX_LETTERS:
                raise lab_error(N_("answer must list at most {most} letters, received {count}"), most=MAX_LETTERS,
                                count=len(value))
            return value
        raise lab_error(N_("answer must be a letter (\"c\"), letters (\"a, b\" or [\"a\", \"b\"]) or a whole number "
                        "(512); received {received}"), received=shown(value))

    def value(self) -> str | int | float | list[str]:
        """The answer (its shape checked; the grader reads its content)."""
        return self.answer


class Feedback(BaseModel):
    """How one option fared."""

    key: str
    text: str
    chosen: bool
    correct: bool
    explanation: str


class GradeResponse(BaseModel):
    """The verdict on one answer, with an explanation for every option."""

    available: bool
    reason: str | None = None
    key: str | None = None
    correct: bool | None = None
    answer: str | None = None
    right_answer: str | None = None
    feedback: list[Feedback] = Field(default_factory=list)
    explanation: str | None = None
    understood: bool = Field(True, description="false: the answer is not of the question's kind (not a whole number "
                                               "in range, or not its letters); ``explanation`` says why, and "
                                               "nothing else is told")


def _study():
    """The quiz study module, or the reason it cannot be imported."""
    import importlib

    try:
        return importlib.import_module("seqlab.studies.quiz"), None
    except ImportError as error:
        return None, f"seqlab.studies.quiz is not available ({error})"


def measure_quiz_facts():
    """The facts every right answer rests on (:func:`seqlab.studies.quiz.measure_facts`); runs in a worker."""
    from seqlab.studies.quiz import measure_facts

    return measure_facts()


def prepare_facts(preload: tuple[str, ...] = ("torch",)) -> None:
    """Measure the facts now in a worker process of their own, outside the lab's pool (``seqlab serve`` calls it in
    a thread at start-up), so the self-check shows its questions at once later however busy the pool is, and no
    visitor's measurement waits for them; a failure leaves them to the first visit."""
    from seqlab.web.workers import WorkerPool

    with _facts_lock:
        if "facts" in _facts:
            return
    pool = WorkerPool(size=1, wait_s=0, preload=preload)
    try:
        found = pool.call(measure_quiz_facts, (), limit_s=LIMIT_S)
    except Exception:  # noqa: BLE001  (past its limit, a study missing): the first visit measures them
        return
    finally:
        pool.shutdown()
    with _facts_lock:
        _facts.setdefault("facts", found)


async def facts_of(request: Request):
    """The measured facts, from a worker the first time, kept by the server afterwards."""
    with _facts_lock:
        found = _facts.get("facts")
    if found is None:
        found = await pool_of(request).run(measure_quiz_facts, (), limit_s=LIMIT_S, request=request,
                                           work=Work("quiz", 1, Phrase(N_("the self-check's facts"))))
        with _facts_lock:
            _facts["facts"] = found
    return found


def read_answer(question, answer: Any, lang: str) -> Any:
    """``answer`` checked for ``question`` in the server, before grading: a number in range, or known letters.

    >>> from seqlab.studies.quiz import Option, Question
    >>> q = Question("q2", "numeric", "", "", (Option("512", "512", True, ""),), "", "512", ())
    >>> read_answer(q, " 512 ", "en"), read_answer(q, "1.024", "es")
    (512, 1024)

    Raises:
        LabError: not a whole number in [1, :data:`MAX_NUMBER`] (an ambiguous one named with both readings), or
            letters that are not the question's.
    """
    from seqlab.studies.quiz import parse_choice, parse_number

    if question.kind == "numeric":
        if isinstance(answer, str):
            text, mark = answer.strip(), DECIMAL_MARK[lang]
            if re.fullmatch(rf"[+-]?\d{{1,3}}{re.escape(mark)}\d{{3}}", text):  # "1.000" in English: 1 or 1000
                from decimal import Decimal

                raise LabError(Phrase(N_("expected a whole number T >= 1, received {answer}: in {language} it could be "
                                      "{one} or {other}; write it without separators"),
                                      {"answer": shown(answer, lang), "language": Phrase(LANGUAGE[lang]),
                                       "one": f"{Decimal(text.replace(mark, '.')).normalize():f}",
                                       "other": text.replace(mark, "")}), parameter="answer")
        try:
            value = parse_number(answer, lang)
        except SeqlabError:
            raise LabError(Phrase(N_("expected a whole number T >= 1, received {answer}"),
                                  {"answer": shown(answer, lang)}), parameter="answer") from None
        if value > MAX_NUMBER:
            raise LabError(Phrase(N_("answer must be a whole number in [1, {most}], received {received}"),
                                  {"most": MAX_NUMBER, "received": shown(answer, lang)}), parameter="answer")
        return value
    try:
        parse_choice(question, answer)
    except SeqlabError:
        letters = [option.key for option in question.options]
        msgid = (N_("expected one letter among {letters}, received {answer}") if question.kind == "single" else
                 N_("expected letters among {letters}, received {answer}"))
        raise LabError(Phrase(msgid, {"letters": letters, "answer": shown(answer, lang)}), parameter="answer") \
            from None
    return answer


#: The name of each language in the messages.
LANGUAGE = {"en": N_("English"), "es": N_("Spanish")}


@router.get("/api/quiz", response_model=QuizResponse, tags=["quiz"], summary="The four self-check questions (L12)")
async def quiz_panel(request: Request,
                     lang: Annotated[Lang, Query(description="language of the questions")] = "en") -> QuizResponse:
    """Prompts, hints and choices; which choices are right is only told after answering."""
    quiz, reason = _study()
    if quiz is None:
        return QuizResponse(available=False, reason=reason)
    shown_ = [QuestionOut(key=q.key, kind=q.kind, prompt=q.prompt, hint=q.hint, claims=list(q.claims),
                          choices=[] if q.kind == "numeric" else [Choice(key=o.key, text=o.text) for o in q.options])
              for q in quiz.build_questions(await facts_of(request), lang)]
    return QuizResponse(available=True, questions=shown_)


@router.post("/api/quiz/{key}", response_model=GradeResponse, tags=["quiz"],
             summary="Grade one answer and explain every option (L12)")
async def grade_answer(key: Annotated[Key, Path(description="q1 … q4")], answer: Answer, request: Request,
                       lang: Annotated[Lang, Query(description="language of the feedback")] = "en") -> GradeResponse:
    """Right or wrong, the right answer, and why each option is right or wrong."""
    quiz, reason = _study()
    if quiz is None:
        return GradeResponse(available=False, reason=reason)
    facts = await facts_of(request)
    try:
        value = read_answer(quiz.question(key, lang, facts), answer.value(), lang)
    except LabError as error:  # an answer of an accepted shape is graded, never refused: not right, and why
        return GradeResponse(available=True, key=key, correct=False, answer=shown(answer.value(), lang),
                             explanation=error.phrase.render(lang), understood=False)
    graded = quiz.grade(key, value, lang, facts)
    return GradeResponse(available=True, key=graded.key, correct=graded.correct, answer=graded.answer,
                         right_answer=graded.right_answer, explanation=graded.explanation,
                         feedback=[Feedback(key=f.key, text=f.text, chosen=f.chosen, correct=f.correct,
                                            explanation=f.explanation) for f in graded.feedback])
