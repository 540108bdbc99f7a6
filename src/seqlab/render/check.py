"""Render a :class:`~seqlab.studies.check.CheckResult`: per claim, what it says, what was measured, the figure,
the verdict (holds, holds with a caveat, does not hold), the condition it was judged under and a note where the
lesson simplifies. Terminal (Rich), JSON, plain texts for the report, and the legend of ``--list``.

Nothing here measures: every number comes from the result's ``values`` and ``condition``; every sentence is an
English message id of the gettext domain ``seqlab``. The words of each claim live in one module per theme
(:mod:`seqlab.render.check_structure`, :mod:`~seqlab.render.check_path`, :mod:`~seqlab.render.check_cost`,
:mod:`~seqlab.render.check_time`); the legend in :mod:`seqlab.render.check_legend`.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from seqlab.i18n import format_fraction, format_integer, format_number, format_seconds, translator
from seqlab.render.json_output import to_jsonable, versioned
from seqlab.studies.check import CAVEAT, CLAIMS, FAILS, HOLDS, NOT_JUDGED, CheckResult, ClaimCheck

DOMAIN = "seqlab"
#: The mark and style of each verdict in the terminal.
MARKS = {HOLDS: ("✓", "green"), CAVEAT: ("~", "yellow"), NOT_JUDGED: ("?", "dim"), FAILS: ("✗", "bold red")}
#: Columns of the hanging indent under each claim.
INDENT = 7


@dataclass(frozen=True)
class ClaimText:
    """The words shown for one claim, in one language (``note`` may be empty).

    ``verdict_key`` is the verdict as data (``"holds"``, ``"holds_with_caveat"``, ``"does_not_hold"``),
    ``verdict`` its words; ``holds`` is True when the claim holds, None when not judged; ``condition`` says what the
    verdict tested, with its margins and any caveat.
    """

    claim: str
    holds: bool | None
    verdict: str
    statement: str
    measured: str
    figure: str
    note: str
    verdict_key: str = HOLDS
    condition: str = ""


class Numbers:
    """Language-bound number formatting for the figure lines (three significant digits for measured floats).

    >>> n = Numbers("es")
    >>> n(0.5), n(26214400), n.short(0.05), n.short(1.25)
    ('0,500', '26.214.400', '0,05', '1,25')
    """

    def __init__(self, lang: str) -> None:
        self.lang = lang

    def short(self, value: float) -> str:
        """A set value (a margin, a radius) without padding zeros: at most three significant digits."""
        from babel.numbers import format_decimal

        return format_decimal(float(f"{float(value):.3g}"), locale=self.lang)

    def __call__(self, value: Any) -> str:
        if isinstance(value, bool):
            return str(value)
        if isinstance(value, int):
            return format_integer(value, self.lang)
        if isinstance(value, Fraction):
            return format_fraction(value, self.lang)
        return format_number(float(value), self.lang)


def _texts(claim: str):
    """The words function of one claim (imported here, one module per theme)."""
    from seqlab.render import check_beyond, check_cost, check_path, check_structure, check_time

    return {"B1": check_beyond.b1, "B2": check_beyond.b2, "B3": check_beyond.b3, "B4": check_beyond.b4, "B5": check_beyond.b5,
            "L1": check_structure.l1, "L2": check_structure.l2, "L3": check_path.l3, "L4": check_path.l4,
            "L5": check_cost.l5, "L6": check_cost.l6, "L7": check_cost.l7, "L8": check_time.l8, "L9": check_cost.l9,
            "L10": check_structure.l10, "L12": check_structure.l12}[claim]


def verdict_words(verdict: str, lang: str = "en") -> str:
    """A verdict key in words: ``holds``, ``holds with a caveat``, ``does not hold``.

    >>> verdict_words("holds_with_caveat", "es")
    'se cumple con una salvedad'
    """
    _ = translator(lang, DOMAIN)
    return {HOLDS: _("holds"), CAVEAT: _("holds with a caveat"), NOT_JUDGED: _("not judged"),
            FAILS: _("does not hold")}[verdict]


def claim_text(check: ClaimCheck, lang: str = "en") -> ClaimText:
    """The translated words for one checked claim.

    Raises:
        SeqlabError: unknown language.
    """
    _ = translator(lang, DOMAIN)
    verdict = verdict_words(check.verdict, lang)
    if check.error is not None:
        return ClaimText(check.claim, None, verdict, _("Claim {claim}").format(claim=check.claim),
                         _("the measurement failed"), _("could not be measured: {error}").format(error=check.error), "",
                         check.verdict, _("a measurement that could not be made decides nothing: not judged."))
    n = Numbers(lang)
    if check.claim == "L11":
        from seqlab.render.check_structure import l11

        statement, measured, figure, condition, note = l11(_, check.values, check.condition, n, lang)
    else:
        statement, measured, figure, condition, note = _texts(check.claim)(_, check.values, check.condition, n)
    return ClaimText(check.claim, check.holds, verdict, statement, measured, figure, note, check.verdict, condition)


def summary(result: CheckResult, lang: str = "en", command: str = "check") -> str:
    """How many claims hold (and how many of them only with a caveat), at which sizes, in how long.

    ``command`` is where the line is shown: ``"check"`` points at its own ``--full``; ``"report"`` (which has
    no ``--full``) says which claims and sizes the report ran and names ``seqlab check`` for the rest.
    """
    _ = translator(lang, DOMAIN)
    lesson = [check for check in result.checks if not check.beyond_lesson]
    beyond = [check for check in result.checks if check.beyond_lesson]
    if command == "report":
        sizes = (_("the default sizes of seqlab check; seqlab check --full runs larger ones")
                 if len(lesson) == len(CLAIMS) else
                 _("a preview: {checked} of the {total} claims; seqlab check checks all of them").format(
                     checked=len(lesson), total=len(CLAIMS)))
    else:
        sizes = _("full sizes") if result.full else _("default sizes; --full for larger ones")
    timed = result.threads > 1 and any(check.claim == "L8" for check in result.checks)
    threads = (_("1 for tracing and counting, {threads} for L8's timings besides 1").format(threads=result.threads)
               if timed else "1")
    if not lesson and beyond:  # only statements beyond the lesson were asked for (--only B1,…)
        from seqlab.render.check_beyond import beyond_only_line

        return beyond_only_line(sum(check.holds is True for check in beyond), len(beyond), sizes,
                                format_seconds(result.elapsed_s, lang), threads, result.torch_version, lang)
    line = _("{held} of {total} claims hold ({sizes}; {seconds}, CPU threads: {threads}, PyTorch {torch}).").format(
        held=sum(check.holds is True for check in lesson), total=len(lesson), sizes=sizes,
        seconds=format_seconds(result.elapsed_s, lang), threads=threads, torch=result.torch_version)
    if any(check.caveat is True for check in lesson):
        line += " " + _("With a caveat: {claims} ({caveats} of {held}).").format(
            caveats=sum(check.caveat is True for check in lesson), held=sum(check.holds is True for check in lesson),
            claims=", ".join(c.claim for c in lesson if c.caveat is True))
    if any(not check.judged for check in lesson):
        line += " " + _("Not judged: {claims} (the timings were inside their noise or the machine was busy; rerun on "
                        "a quiet machine).").format(claims=", ".join(c.claim for c in lesson if not c.judged))
    if beyond:
        from seqlab.render.check_beyond import summary_line

        line += " " + summary_line(sum(check.holds is True for check in beyond), len(beyond), lang)
    return line


def _wrapped(line: str, width: int, style: str = ""):
    """Text rows of ``line`` under the hanging indent."""
    import textwrap

    from rich.text import Text

    return [Text(row, style=style) for row in textwrap.wrap(line, width, initial_indent=" " * INDENT,
                                                            subsequent_indent=" " * INDENT)]


def render_check(result: CheckResult, lang: str = "en", width: int = 100):
    """A Rich renderable: per claim a verdict line (✓ holds, ~ holds with a caveat, ✗ does not hold), then
    what was measured, the figure, the condition and any note, wrapped to ``width`` columns with a hanging
    indent (no trailing spaces); then the summary."""
    import textwrap

    from rich.console import Group
    from rich.text import Text

    _ = translator(lang, DOMAIN)
    width = max(width, 40)
    parts: list[Any] = [Text(_("The lesson's claims, measured"), style="bold")] if any(
        not check.beyond_lesson for check in result.checks) else []
    for index, check in enumerate(result.checks):
        if check.beyond_lesson and (index == 0 or not result.checks[index - 1].beyond_lesson):
            from seqlab.render.check_beyond import section_title

            parts.append(Text(section_title(lang), style="bold"))
        text = claim_text(check, lang)
        mark, style = MARKS[text.verdict_key]
        prefix = f"{mark} {text.claim:<4}{text.verdict}: "
        head = textwrap.wrap(prefix + text.statement, width, subsequent_indent=" " * INDENT)
        parts.append(Text.assemble((prefix, style), head[0][len(prefix):]))
        parts.extend(Text(line) for line in head[1:])
        parts.extend(_wrapped(_("Measured: {text}").format(text=text.measured), width))
        parts.extend(_wrapped(_("Figure: {text}").format(text=text.figure), width))
        parts.extend(_wrapped(_("Condition: {text}").format(text=text.condition), width,
                              "yellow" if text.verdict_key == CAVEAT else ""))
        if text.note:
            parts.extend(_wrapped(_("Note: {text}").format(text=text.note), width, "dim"))
    parts.append(Text("\n".join(textwrap.wrap(summary(result, lang), width)), style="bold"))
    return Group(*parts)


def check_json(result: CheckResult, lang: str = "en") -> str:
    """Every claim with its verdict, condition (as data and in words), words, raw figures and, for counts,
    their sources (``"pytorch"``: PyTorch's own formulas; ``"seqlab"``: seqlab's formula only), as JSON text."""
    claims = []
    for check in result.checks:
        text = claim_text(check, lang)
        claims.append({"claim": check.claim, "beyond_lesson": check.beyond_lesson, "verdict": check.verdict,
                       "holds": check.holds,
                       "statement": text.statement, "measured": text.measured, "figure": text.figure,
                       "condition": to_jsonable(check.condition), "condition_text": text.condition,
                       "note": text.note, "sources": to_jsonable(check.values.get("sources")),
                       "values": to_jsonable(check.values), "seconds": check.seconds, "error": check.error})
    document = {"all_hold": result.all_hold, "held": result.held, "caveats": result.caveats,
                "not_judged": result.not_judged, "total": len(result.checks), "full": result.full, "seed": result.seed,
                "threads": result.threads, "torch_version": result.torch_version, "elapsed_s": result.elapsed_s, "claims": claims}
    return json.dumps(versioned(document, "check"), indent=2, ensure_ascii=False)


def render_legend(lang: str = "en", width: int = 100):
    """A Rich renderable of the legend L1–L12 (``seqlab check --list``): title and one sentence per claim."""
    from rich.console import Group
    from rich.text import Text

    from seqlab.render.check_legend import legend

    _ = translator(lang, DOMAIN)
    width = max(width, 40)
    title = _("The lesson's claims, L1–L12 (seqlab check measures whether these claims hold here)")
    parts: list[Any] = [Text(title, style="bold")]
    for entry in legend(lang):
        parts.append(Text.assemble((f"{entry.claim:<4} ", "bold"), (entry.title, "bold")))
        parts.extend(_wrapped(entry.statement, width))
    return Group(*parts)
