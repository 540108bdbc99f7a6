"""Reading a reader's answer to a self-check question: a whole number or option letters (L12).

:func:`parse_number` reads a number the way the answer's language writes it (decimal mark, thousands
separator), exactly and refusing ambiguous text; :func:`parse_choice` reads option letters;
:func:`parse_answer` reads either, as the question's kind asks. They need only what is asked (a
:class:`~seqlab.studies.quiz_prompts.Prompt` will do: no measured fact), so a front end can tell an unreadable
answer at once; :func:`seqlab.studies.quiz.grade` uses them too; errors name the value received.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from typing import TYPE_CHECKING

from seqlab.errors import Message, SeqlabError
from seqlab.i18n import N_, check_language

if TYPE_CHECKING:
    from seqlab.studies.quiz import Question
    from seqlab.studies.quiz_prompts import Prompt


_SEPARATORS = re.compile(r"[\s,;/+&]+")


#: How each language writes numbers: (decimal mark, thousands separator), and its name in the messages.
_NUMBER_MARKS = {"en": (".", ","), "es": (",", ".")}
_LANGUAGE_NAMES = {"en": N_("English"), "es": N_("Spanish")}


def parse_number(answer: object, lang: str = "en") -> int:
    """Read a whole-number answer as the language writes numbers, exactly (no float in between).

    ``"512"``, ``" 512 "``, ``"+512"``, ``"512.0"`` in English (``"512,0"`` in Spanish), ``"5.12e2"``,
    thousands grouped the language's way (``"1,024"`` in English, ``"1.024"`` in Spanish), or a JSON
    number. A text that reads as a small decimal here but as a thousands group elsewhere (``"1.000"`` in
    English, ``"1,000"`` in Spanish) is ambiguous and refused, with both readings in the message.

    >>> parse_number(" 512 "), parse_number("512.0"), parse_number("1.024", "es"), parse_number(512)
    (512, 512, 1024, 512)
    >>> parse_number("1.000", "es"), parse_number("12345678901234567890123")
    (1000, 12345678901234567890123)
    >>> parse_number("1,000", "es")
    Traceback (most recent call last):
    ...
    seqlab.errors.SeqlabError: expected a whole number T >= 1, received '1,000': in Spanish it could be 1 or 1000; write it without separators

    Raises:
        SeqlabError: not a number, not whole, below 1, or ambiguous; the message shows the value received.
    """
    from decimal import Decimal, InvalidOperation

    def refuse() -> SeqlabError:
        return SeqlabError(N_("expected a whole number T >= 1, received {answer!r}"), answer=answer, parameter="answer")

    lang = check_language(lang)
    if isinstance(answer, bool) or not isinstance(answer, (int, float, str)):
        raise refuse()
    if isinstance(answer, int):
        value = Decimal(answer)
    elif isinstance(answer, float):
        if not math.isfinite(answer):
            raise refuse()
        value = Decimal(answer)
    else:
        decimal_mark, _group = _NUMBER_MARKS[lang]
        text = answer.strip().replace("\u00a0", " ").replace("\u202f", " ")
        if re.fullmatch(r"\+?\d{1,3}( \d{3})+", text):  # thousands grouped by spaces, in any language
            text = text.replace(" ", "")
        try:
            if re.fullmatch(r"\+?\d+", text):
                value = Decimal(text)
            elif re.fullmatch(r"[+-]?\d+([.,]\d+)?[eE][+-]?\d+", text):  # scientific: either mark
                value = Decimal(text.replace(",", "."))
            else:
                ambiguous = re.fullmatch(rf"[+-]?\d{{1,3}}{re.escape(decimal_mark)}\d{{3}}", text)
                if ambiguous:  # "1.000" in English: 1 here, a thousand where "." groups thousands
                    grouped = text.replace(decimal_mark, "")
                    raise SeqlabError(N_("expected a whole number T >= 1, received {answer!r}: in {language_names} "
                                         "it could be {number:f} or {grouped}; write it without separators"),
                                      answer=answer, language_names=Message(_LANGUAGE_NAMES[lang]),
                                      number=Decimal(text.replace(decimal_mark, '.')).normalize(),
                                      grouped=str(int(grouped)), parameter="answer")  # as typed, ungrouped
                from babel.numbers import NumberFormatError, parse_decimal

                try:
                    value = parse_decimal(text, locale=lang, strict=True)
                except NumberFormatError:
                    raise refuse() from None
        except InvalidOperation:
            raise refuse() from None
    if not value.is_finite() or value.adjusted() >= 64 or value != value.to_integral_value() or value < 1:
        raise refuse()  # (over 64 digits: no length of text is that long, and int() of 9e99999999 would take ages)
    return int(value)


def parse_answer(question_: Prompt | Question, answer: object, lang: str = "en") -> int | tuple[str, ...]:
    """Read ``answer`` as the question's kind asks: a whole number (:func:`parse_number`, in ``lang``'s way of
    writing numbers) for ``numeric``, option letters (:func:`parse_choice`) otherwise. Needs no measured fact.

    >>> from seqlab.studies.quiz_prompts import prompt
    >>> parse_answer(prompt("q2", "es"), "1.024", "es"), parse_answer(prompt("q4"), "c a")
    (1024, ('a', 'c'))

    Raises:
        SeqlabError: an answer that cannot be read; the message shows it.
    """
    if question_.kind == "numeric":
        return parse_number(answer, lang)
    return parse_choice(question_, answer)


def parse_choice(question_: Prompt | Question, answer: object) -> tuple[str, ...]:
    """The option letters in ``answer``: ``"b"``, ``" B "``, ``"b)"``; for ``multiple`` also ``"a, c"``,
    ``"ac"``, ``"a c"`` or an iterable of letters. Sorted and without repeats. ``question_`` is a question as asked
    (:class:`~seqlab.studies.quiz_prompts.Prompt`) or graded: only its kind and option keys are read.

    Raises:
        SeqlabError: empty, an unknown letter, or more than one letter for a single-choice question; the
            message shows the value and the letters accepted.
    """
    keys = tuple(option.key for option in question_.options)
    if isinstance(answer, str):
        text = answer.strip().lower().replace(")", " ").replace(".", " ")
        parts = [p for p in _SEPARATORS.split(text) if p]
        if len(parts) == 1 and question_.kind == "multiple" and all(ch in keys for ch in parts[0]):
            parts = list(parts[0])  # "ac"
    elif isinstance(answer, Iterable):
        parts = [str(p).strip().lower() for p in answer]
    else:
        parts = []
    accepted = ", ".join(keys)
    wanted = Message(N_("one letter")) if question_.kind == "single" else Message(N_("letters"))
    if not parts or any(p not in keys for p in parts):
        raise SeqlabError(N_("expected {wanted} among {accepted}, received {answer!r}"), wanted=wanted,
                          accepted=accepted, answer=answer, parameter="answer")
    chosen = tuple(sorted(set(parts)))
    if question_.kind == "single" and len(chosen) != 1:
        raise SeqlabError(N_("expected one letter among {accepted}, received {answer!r}"), accepted=accepted,
                          answer=answer, parameter="answer")
    return chosen
