"""``seqlab check``: each of the lesson's claims L1–L12 put to the measurement that tests it.

The twelve measurements, one function per claim, live in :mod:`seqlab.studies.claims` (the chain, order,
Figure 1 and the quiz: L1, L2, L10–L12), :mod:`seqlab.studies.claims_path` (the path: L3, L4),
:mod:`seqlab.studies.claims_cost` (multiplications at the lesson's and the layer's scope: L5–L7, L9) and
:mod:`seqlab.studies.claims_time` (time at matched scopes and thread counts: L8); what each one measures and
the margins of its verdict are tabled there. This module holds the registry :data:`CHECKS` that maps a
claim to its function, :func:`parse_claims`, the runner :func:`run_check` (one thread for tracing and
counting, the machine's threads besides one for L8's timings, a seeded global RNG, the caller's state
restored) and the frozen results :class:`ClaimCheck` and :class:`CheckResult`.

Each claim gets one of the verdicts :data:`~seqlab.studies.verdicts.VERDICTS`: ``holds``,
``holds_with_caveat`` (the measurement agrees with the claim as the lesson means it, but shows a condition
the lesson leaves out, named in the check's ``condition``), ``not_judged`` (the measurement decided nothing)
or ``does_not_hold``. A measurement that raises decided nothing: it is ``not_judged``, reported with its error
(nothing is skipped in silence, and nothing is called false that was never measured). Only L8 reads a clock; its machines are timed in interleaved rounds and every comparison
is judged by :func:`seqlab.measure.rounds.decide`, so a busy machine leaves comparisons not decided (a caveat
naming each, or ``not_judged`` when its lesson-scope comparison itself was not decided) rather than failing it. Default
sizes run in seconds; :attr:`CheckConfig.full` takes larger ones.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from seqlab.errors import Message, SeqlabError
from seqlab.i18n import N_
from seqlab.studies.claims import (LESSON_ANSWERS, SENTENCES, CheckSizes, check_l1, check_l2, check_l10, check_l11,
                                   check_l12)
from seqlab.studies.claims_cost import check_l5, check_l6, check_l7, check_l9
from seqlab.studies.claims_path import check_l3, check_l4
from seqlab.studies.claims_beyond import BEYOND, BEYOND_CHECKS
from seqlab.studies.claims_time import check_l8
from seqlab.studies.notebook_view import NotebookView
from seqlab.studies.verdicts import CAVEAT, FAILS, HOLDS, NOT_JUDGED, VERDICTS, Judgement

__all__ = ["BEYOND", "CAVEAT", "CHECKS", "CLAIMS", "FAILS", "HOLDS", "LESSON_ANSWERS", "NOT_JUDGED", "SENTENCES",
           "VERDICTS", "CheckConfig",
           "CheckResult", "CheckSizes", "ClaimCheck", "Judgement", "parse_claims", "run_check"]

#: The lesson's twelve claims, in its order.
CLAIMS = tuple(f"L{n}" for n in range(1, 13))


@dataclass(frozen=True)
class CheckConfig:
    """What to check: ``claims`` (a subset of :data:`CLAIMS`, in order), ``full`` sizes, ``seed``,
    ``threads``, the thread count L8 times on besides one (None: :func:`seqlab.measure.rounds.timing_threads_default`,
    PyTorch's count capped by the cores the machine's load leaves free), and
    ``sizes``, explicit :class:`CheckSizes` that replace those ``full`` picks (None: ``CheckSizes.of(full)``)."""

    claims: tuple[str, ...] = CLAIMS
    full: bool = False
    seed: int = 0
    threads: int | None = None
    sizes: CheckSizes | None = None


@dataclass(frozen=True)
class ClaimCheck:
    """One claim against its measurement.

    Attributes:
        claim: ``"L1"`` … ``"L12"``.
        verdict: ``"holds"``, ``"holds_with_caveat"``, ``"not_judged"`` or ``"does_not_hold"``.
        values: every figure measured, by name (integers exact, Fractions exact, floats as measured,
            seconds for times; counts with their ``sources``); what each means is in the check's docstring.
        condition: the rule the verdict applied, its margins and the caveats that apply (structured data;
            the renderer words it).
        seconds: how long the check took.
        error: why the measurement could not be made (then the verdict is ``"not_judged"``), else None.
    """

    claim: str
    verdict: str
    values: dict[str, Any] = field(default_factory=dict)
    condition: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0
    error: str | None = None

    @property
    def beyond_lesson(self) -> bool:
        """A statement beyond the lesson (B1–B5, :mod:`seqlab.studies.claims_beyond`), not one of L1–L12."""
        return self.claim in BEYOND

    @property
    def holds(self) -> bool | None:
        """The claim holds: ``"holds"`` or ``"holds_with_caveat"``; None when ``"not_judged"`` (nothing decided)."""
        return None if self.verdict == NOT_JUDGED else self.verdict in (HOLDS, CAVEAT)

    @property
    def judged(self) -> bool:
        """The measurement decided the claim (any verdict but ``"not_judged"``)."""
        return self.verdict != NOT_JUDGED

    @property
    def caveat(self) -> bool | None:
        """The claim holds only with a caveat; None when ``"not_judged"``."""
        return None if self.verdict == NOT_JUDGED else self.verdict == CAVEAT


@dataclass(frozen=True)
class CheckResult(NotebookView):
    """Every claim checked, in order, with the conditions of the run (``threads``: the thread count L8 timed on
    besides one; everything else ran on one thread)."""

    checks: tuple[ClaimCheck, ...]
    full: bool
    seed: int
    threads: int
    torch_version: str
    elapsed_s: float

    @property
    def held(self) -> int:
        """How many claims hold, with a caveat or without."""
        return sum(check.holds is True for check in self.checks)

    @property
    def caveats(self) -> int:
        """How many claims hold only with a caveat."""
        return sum(check.caveat is True for check in self.checks)

    @property
    def not_judged(self) -> int:
        """How many claims the measurement could not decide (a noisy or busy machine)."""
        return sum(not check.judged for check in self.checks)

    @property
    def all_hold(self) -> bool:
        """No claim checked is ``does_not_hold`` and no measurement raised (caveats and claims not judged do not fail;
        a measurement that could not be made is not judged, but the run failed): the exit code is 0."""
        return all(check.verdict != FAILS and check.error is None for check in self.checks)


CHECKS: dict[str, Callable[[CheckSizes, int], Judgement]] = {
    "L1": check_l1, "L2": check_l2, "L3": check_l3, "L4": check_l4, "L5": check_l5, "L6": check_l6,
    "L7": check_l7, "L8": check_l8, "L9": check_l9, "L10": check_l10, "L11": check_l11, "L12": check_l12,
    **BEYOND_CHECKS,
}
"""Claim -> its check, in the lesson's order, then the statements beyond the lesson (B1–B5)."""


def parse_claims(claims: Sequence[str] | str) -> tuple[str, ...]:
    """Claims in the lesson's order from ``"L1,L8"``, ``"1, 8"`` or a sequence; repeats dropped.

    >>> parse_claims("l8, 1,L1")
    ('L1', 'L8')

    Raises:
        SeqlabError: empty, an empty item (``"L1,,L2"``), or a claim outside L1–L12 and B1–B5; the message shows the
            whole value received, the item at fault and the accepted form.
    """
    parts = claims.split(",") if isinstance(claims, str) else list(claims)
    accepted = Message(N_("claims among L1–L12 (or B1–B5, beyond the lesson) separated by commas (such as L1,L8 or "
                          "1,8)"))
    whole = claims if isinstance(claims, str) else ",".join(map(str, parts))
    if not whole.strip():
        raise SeqlabError(N_("expected {accepted}, received {whole!r}"), accepted=accepted, whole=whole,
                          parameter="claims")
    wanted = set()
    for part in parts:
        text = str(part).strip().upper()
        if not text:
            raise SeqlabError(N_("expected {accepted}, received {whole!r}, which has an empty item"), accepted=accepted,
                              whole=whole, parameter="claims")
        name = text if text[:1] in ("L", "B") else f"L{text}"
        if name not in CHECKS:
            which = Message(N_(", in which {part!r} is not one"), part=str(part).strip()) if len(parts) > 1 else ""
            raise SeqlabError(N_("expected {accepted}, received {whole!r}{which}"), accepted=accepted, whole=whole,
                              which=which, parameter="claims")
        wanted.add(name)
    return tuple(claim for claim in CLAIMS + BEYOND if claim in wanted)


def run_check(config: CheckConfig = CheckConfig(),
              progress: Callable[[int, int, str], None] | None = None) -> CheckResult:
    """Check each claim of ``config`` against its measurement.

    >>> result = run_check(CheckConfig(claims=("L5", "L7")))
    >>> [(c.claim, c.verdict) for c in result.checks], result.checks[0].values["closed_form"]  # 64 * (40² + 40·24)
    ([('L5', 'holds'), ('L7', 'holds_with_caveat')], 163840)

    Args:
        config: the claims, sizes and seed.
        progress: called as ``progress(done, total, claim)`` before each claim, for a progress display.

    Returns:
        A :class:`CheckResult`; a measurement that raised is a :class:`ClaimCheck` with ``error`` set and
        verdict ``"not_judged"``. Tracing and counting run on one CPU thread; L8 times on one thread and on
        ``config.threads`` (default: :func:`~seqlab.measure.rounds.timing_threads_default`, read before anything
        changes the threads: PyTorch's count capped by the free cores); the caller's thread count is restored
        afterwards. The global RNG is seeded by ``config.seed``
        inside a fork (the caller's RNG state is kept).

    Raises:
        SeqlabError: an unknown claim in ``config.claims``, or ``config.threads`` not an integer >= 1.
    """
    import torch

    from seqlab.errors import require_positive_int
    from seqlab.measure.timing import fixed_threads

    claims = parse_claims(config.claims)
    if config.threads is None:
        from seqlab.measure.rounds import timing_threads_default

        threads = timing_threads_default()  # PyTorch's count, capped by the cores the load leaves free
    else:
        threads = require_positive_int("threads", config.threads)
    sizes = replace(config.sizes or CheckSizes.of(config.full), threads=threads)
    started = time.perf_counter()
    checks = []
    # One thread: traces pay per op, and idle threads would only spin on a busy machine. The global RNG
    # (used by torch.nn constructors) is seeded inside a fork, so the caller's stream is left as it was.
    with fixed_threads(1), torch.random.fork_rng(devices=[]):
        torch.manual_seed(config.seed)
        _run_claims(claims, sizes, config.seed, checks, progress)
    return CheckResult(tuple(checks), config.full, config.seed, threads, torch.__version__,
                       time.perf_counter() - started)


def _run_claims(claims: tuple[str, ...], sizes: CheckSizes, seed: int, checks: list[ClaimCheck],
                progress: Callable[[int, int, str], None] | None) -> None:
    """Run each claim's check in turn, appending its :class:`ClaimCheck` (with the error, if it raised)."""
    for done, claim in enumerate(claims):
        if progress is not None:
            progress(done, len(claims), claim)
        clock = time.perf_counter()
        try:
            judged = CHECKS[claim](sizes, seed)
            checks.append(ClaimCheck(claim, judged.verdict, judged.values, judged.condition,
                                     time.perf_counter() - clock))
        except Exception as error:  # noqa: BLE001  reported, never skipped: no figure, no verdict
            checks.append(ClaimCheck(claim, NOT_JUDGED, {}, {"rule": "measurement_failed", "caveats": []},
                                     time.perf_counter() - clock, f"{type(error).__name__}: {error}"))
