"""``seqlab quiz``: the lesson's four self-check questions in the terminal (L12).

Asks each question with Rich prompts on standard input (so answers can be piped in, one per line),
shows the hint on ``?``, asks again on an empty answer or one it cannot read, then prints the feedback on
every option and, at the end, the score. The questions, their right answers and the grading come from
:mod:`seqlab.studies.quiz`; this module only asks and prints.

Answers before waiting: the introduction and question 1 come from the texts alone
(:func:`seqlab.studies.quiz.prompts`: no measured figure, no PyTorch), and once question 1 is on screen the facts
the answers rest on are measured in a background thread (:func:`seqlab.studies.quiz.measure_in_background`) while
the reader reads. Hints and unreadable answers need no facts; grading the first answer waits for them only if they
are not ready yet, with a one-line note. A measurement that failed is one ``Error:`` line and exit code 1.

End of input stops the quiz early and still prints the score over the questions answered (exit code 0);
Ctrl-C (or SIGTERM) ends it with one line, the score over the questions answered, and exits 130 (143), as every
command does (:mod:`seqlab.cli.interrupts`), also while waiting for the facts (the background thread does not
hold the exit).
"""

from __future__ import annotations

import sys
from typing import Annotated, Optional

import typer

from seqlab.cli import interrupts
from seqlab.cli.options import LANG_HELP, language
from seqlab.errors import Message, SeqlabError
from seqlab.i18n import N_, translator

RIGHT, WRONG = "✓", "✗"
#: Joins words that must stay on one line when wrapped (turned back into spaces when printed).
GLUE = "\xa0"
#: How often, in seconds, waiting for the facts wakes up: Ctrl-C is seen at once on every platform.
POLL_S = 0.1


def _ask_label(kind: str, lang: str) -> str:
    _ = translator(lang)
    return {"single": _("Your answer (one letter, ? for a hint)"),
            "numeric": _("Your answer (a whole number, ? for a hint)"),
            "multiple": _("Your answer (every true letter, e.g. a, c; ? for a hint)")}[kind]


def _unreadable(kind: str, answer: str, lang: str) -> str:
    _ = translator(lang)
    text = {"single": _("Could not read {answer}: type one of the letters shown."),
            "numeric": _("Could not read {answer}: type a whole number such as 100."),
            "multiple": _("Could not read {answer}: type the letters of the true statements, e.g. a, c.")}[kind]
    return text.format(answer=repr(answer))


def _show_question(console, asked, number: int, total: int, lang: str) -> None:
    """Print question ``asked`` (a :class:`~seqlab.studies.quiz.Prompt`: its text and choices, no figure)."""
    from rich.text import Text

    _ = translator(lang)
    console.print()
    console.print(Text(_("Question {number} of {total} ({claims})").format(
        number=number, total=total, claims=", ".join(asked.claims)), style="bold"))
    _lines(console, asked.text, 0)
    for choice in asked.options:  # none for a numeric question: its slips are feedback, not choices
        _lines(console, f"  {choice.key}) {choice.text}", 5)


def _show_grade(console, asked, result, lang: str) -> None:
    from rich.text import Text

    _ = translator(lang)
    if result.correct:
        console.print(Text(f"{RIGHT} " + _("Right."), style="bold green"))
    else:
        console.print(Text(f"{WRONG} " + _("Not quite: the answer is {answer}.").format(answer=result.right_answer),
                           style="bold red"))
    for item in result.feedback:
        mark = RIGHT if item.correct else WRONG
        label = item.text if asked.kind == "numeric" else f"{item.key}) {item.text}"
        if item.chosen and asked.kind != "numeric":  # the marker stays on the line of the option's last word
            head, _space, last = label.rpartition(" ")
            marker = GLUE.join([last, "", "←", *_("your answer").split()])  # "last  ← your answer", unbreakable
            label = f"{head} {marker}" if head else marker
        _lines(console, f"  {mark} {label}", 4, style="bold" if item.chosen else "")
        _lines(console, item.explanation, 6, first=6)
    _lines(console, result.explanation, 0, style="italic")


def _lines(console, text: str, indent: int, first: int = 0, style: str = "") -> None:
    """Print ``text`` wrapped to the console with a hanging indent and no trailing spaces."""
    import textwrap

    from rich.text import Text

    for row in textwrap.wrap(text, max(console.width, 40), initial_indent=" " * first,
                             subsequent_indent=" " * indent, break_long_words=False) or [""]:
        console.print(Text(row.replace(GLUE, " "), style=style))


def _read(console, asked, lang: str) -> str | None:
    """Ask until the answer can be read (no facts needed); None at end of input. '?' shows the hint; an empty
    answer is asked again with a reminder. Ctrl-C (KeyboardInterrupt) is left to the caller."""
    from rich.markup import escape
    from rich.prompt import Prompt
    from rich.text import Text

    from seqlab.studies.quiz import parse_answer

    _ = translator(lang)
    while True:
        try:
            raw = Prompt.ask(escape(_ask_label(asked.kind, lang)), console=console)
        except EOFError:
            console.print()
            return None
        if not sys.stdin.isatty():  # piped answers are not echoed by the terminal: show them
            console.print(Text(raw), highlight=False)
        if raw.strip() == "?":
            _lines(console, _("Hint: {hint}").format(hint=asked.hint), 0, style="cyan")
            continue
        if not raw.strip():
            console.print(Text(_("Type an answer, or ? for a hint."), style="yellow"))
            continue
        try:
            parse_answer(asked, raw, lang)
        except SeqlabError:
            console.print(Text(_unreadable(asked.kind, raw, lang), style="yellow"))
            continue
        return raw


def _facts(console, pending, lang: str):
    """The measured facts from the future ``pending``: at once when ready, else after a one-line note (waking
    every :data:`POLL_S` so that Ctrl-C is seen). A measurement that failed: one ``Error:`` line, exit code 1."""
    from concurrent.futures import TimeoutError as NotYet

    from rich.text import Text

    _ = translator(lang)
    if not pending.done():
        console.print(Text(_("Measuring the figures the answers rest on…"), style="dim"))
    while True:
        try:
            return pending.result(timeout=POLL_S)
        except NotYet:
            continue
        except SeqlabError as error:
            typer.echo(f"Error: {error.localized(lang)}", err=True)
            raise typer.Exit(1) from None


def quiz(
    lang: Annotated[Optional[str], typer.Option("--lang", help=LANG_HELP)] = None,
) -> None:
    """Four self-check questions from the lesson, answered in the terminal (L12). Type ? for a hint."""
    from rich.console import Console
    from rich.text import Text

    from seqlab.studies.quiz import grade, measure_in_background, prompts

    lang = language(lang)
    _ = translator(lang)
    console = Console(highlight=False)
    asked = prompts(lang)  # the texts alone: no measured figure, no PyTorch
    console.print(Text(_("Check your intuition: {total} questions on recurrence and attention.").format(
        total=len(asked)), style="bold"))
    pending = None  # the facts' future, started once question 1 is on screen
    right = answered = 0
    try:
        for number, p in enumerate(asked, start=1):
            _show_question(console, p, number, len(asked), lang)
            if pending is None:  # measure what the answers need while the reader reads
                pending = measure_in_background()
            raw = _read(console, p, lang)
            if raw is None:
                console.print(Text(_("End of input: stopped after {answered} of {total} questions.").format(
                    answered=answered, total=len(asked)), style="yellow"))
                break
            result = grade(p.key, raw, lang, _facts(console, pending, lang))
            answered += 1
            right += result.correct
            _show_grade(console, p, result, lang)
    except KeyboardInterrupt:  # Ctrl-C or SIGTERM: one line with the score so far
        raise interrupts.Interrupted(kept=Message(N_("Interrupted: stopped after {answered} of {total} questions; "
                                                     "{right} right."), answered=answered, total=len(asked),
                                                  right=right)) from None
    _score(console, right, answered, len(asked), lang)


def _score(console, right: int, answered: int, total: int, lang: str) -> None:
    """The score line: over every question, or over those answered when the quiz stopped early."""
    from rich.text import Text

    _ = translator(lang)
    console.print()
    if answered == total:
        text = _("Score: {right} of {total}.").format(right=right, total=total)
    else:
        text = _("Score: {right} of {answered} answered ({total} questions).").format(
            right=right, answered=answered, total=total)
    console.print(Text(text, style="bold"))
