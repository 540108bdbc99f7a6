"""Self-check panel: the lesson's four questions, a hint on request, and why each answer is right or wrong (L12).

Questions, hints, options and explanations come from :mod:`seqlab.studies.quiz` in the requested
language; so does the grading (:func:`seqlab.studies.quiz.grade`), whose right answers are recomputed
from measurements. The question list leaves out which options are right: a reader learns it by
answering. When the study is not installed the endpoints say so (``available`` false).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Path, Query
from pydantic import BaseModel, ConfigDict, Field, field_validator

from seqlab.web.validation import lab_error, shown

router = APIRouter()

Lang = Literal["en", "es"]
Key = Literal["q1", "q2", "q3", "q4"]
MAX_ANSWER = 64
MAX_LETTERS = 8


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

    answer: str | int | float | list[Annotated[str, Field(max_length=8)]] = Field(
        description="text of at most 64 characters, a JSON number, or a list of at most 8 letters")

    @field_validator("answer", mode="before")
    @classmethod
    def _shape(cls, value: Any) -> Any:
        """One readable sentence for any other shape (never pydantic's names of the union's members)."""
        if isinstance(value, str):
            if len(value) > MAX_ANSWER:
                raise lab_error("answer must be at most {most} characters, received {count}", most=MAX_ANSWER,
                                count=len(value))
            return value
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return value
        if isinstance(value, list) and all(isinstance(item, str) and len(item) <= 8 for item in value):
            if len(value) > MAX_LETTERS:
                raise lab_error("answer must list at most {most} letters, received {count}", most=MAX_LETTERS,
                                count=len(value))
            return value
        raise lab_error("answer must be a letter (\"c\"), letters (\"a, b\" or [\"a\", \"b\"]) or a whole number "
                        "(512); received {received}", received=shown(value))

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


def _study():
    """The quiz study module, or the reason it cannot be imported."""
    import importlib

    try:
        return importlib.import_module("seqlab.studies.quiz"), None
    except ImportError as error:
        return None, f"seqlab.studies.quiz is not available ({error})"


@router.get("/api/quiz", response_model=QuizResponse, tags=["quiz"], summary="The four self-check questions (L12)")
def quiz_panel(lang: Annotated[Lang, Query(description="language of the questions")] = "en") -> QuizResponse:
    """Prompts, hints and choices; which choices are right is only told after answering."""
    quiz, reason = _study()
    if quiz is None:
        return QuizResponse(available=False, reason=reason)
    shown = [QuestionOut(key=q.key, kind=q.kind, prompt=q.prompt, hint=q.hint, claims=list(q.claims),
                         choices=[] if q.kind == "numeric" else [Choice(key=o.key, text=o.text) for o in q.options])
             for q in quiz.questions(lang)]
    return QuizResponse(available=True, questions=shown)


@router.post("/api/quiz/{key}", response_model=GradeResponse, tags=["quiz"],
             summary="Grade one answer and explain every option (L12)")
def grade_answer(key: Annotated[Key, Path(description="q1 … q4")], answer: Answer,
                 lang: Annotated[Lang, Query(description="language of the feedback")] = "en") -> GradeResponse:
    """Right or wrong, the right answer, and why each option is right or wrong."""
    quiz, reason = _study()
    if quiz is None:
        return GradeResponse(available=False, reason=reason)
    graded = quiz.grade(key, answer.value(), lang)
    return GradeResponse(available=True, key=graded.key, correct=graded.correct, answer=graded.answer,
                         right_answer=graded.right_answer, explanation=graded.explanation,
                         feedback=[Feedback(key=f.key, text=f.text, chosen=f.chosen, correct=f.correct,
                                            explanation=f.explanation) for f in graded.feedback])
