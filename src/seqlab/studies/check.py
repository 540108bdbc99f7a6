"""``seqlab check``: each of the lesson's claims L1–L12 put to the measurement that tests it.

The twelve measurements, one function per claim, live in :mod:`seqlab.studies.claims` (the chain, the
path, order, Figure 1 and the quiz: L1–L4, L10–L12) and :mod:`seqlab.studies.claims_cost`
(multiplications and time: L5–L9); what each one measures is tabled there. This module holds the
registry :data:`CHECKS` that maps a claim to its function, :func:`parse_claims`, the runner
:func:`run_check` (one thread, a seeded global RNG, the caller's state restored) and the frozen results
:class:`ClaimCheck` and :class:`CheckResult`.

A measurement that raises is reported with its error and counts as not holding: nothing is skipped in
silence. The verdicts compare counts, structure and seeded float64 values, which do not vary between runs;
the one clock-based verdict (L8) has a margin of more than an order of magnitude, so load on a shared
machine does not flip it. Default sizes run in seconds; :attr:`CheckConfig.full` takes larger ones.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from seqlab.errors import SeqlabError
from seqlab.studies.claims import (
    LESSON_ANSWERS,
    SENTENCES,
    CheckSizes,
    check_l1,
    check_l2,
    check_l3,
    check_l4,
    check_l10,
    check_l11,
    check_l12,
)
from seqlab.studies.claims_cost import check_l5, check_l6, check_l7, check_l8, check_l9

__all__ = ["CHECKS", "CLAIMS", "LESSON_ANSWERS", "SENTENCES", "CheckConfig", "CheckResult", "CheckSizes", "ClaimCheck",
           "parse_claims", "run_check"]

#: The lesson's twelve claims, in its order.
CLAIMS = tuple(f"L{n}" for n in range(1, 13))


@dataclass(frozen=True)
class CheckConfig:
    """What to check: ``claims`` (a subset of :data:`CLAIMS`, in order), ``full`` sizes, ``seed``."""

    claims: tuple[str, ...] = CLAIMS
    full: bool = False
    seed: int = 0


@dataclass(frozen=True)
class ClaimCheck:
    """One claim against its measurement.

    Attributes:
        claim: ``"L1"`` … ``"L12"``.
        holds: the measurement agrees with the claim.
        values: every figure measured, by name (integers exact, Fractions exact, floats as measured,
            seconds for times); what each means is in the check's docstring.
        seconds: how long the check took.
        error: why the measurement could not be made (then ``holds`` is False), else None.
    """

    claim: str
    holds: bool
    values: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0
    error: str | None = None


@dataclass(frozen=True)
class CheckResult:
    """Every claim checked, in order, with the conditions of the run."""

    checks: tuple[ClaimCheck, ...]
    full: bool
    seed: int
    threads: int
    torch_version: str
    elapsed_s: float

    @property
    def held(self) -> int:
        """How many claims hold."""
        return sum(check.holds for check in self.checks)

    @property
    def all_hold(self) -> bool:
        """Every claim checked holds."""
        return all(check.holds for check in self.checks)


CHECKS: dict[str, Callable[[CheckSizes, int], tuple[bool, dict]]] = {
    "L1": check_l1, "L2": check_l2, "L3": check_l3, "L4": check_l4, "L5": check_l5, "L6": check_l6,
    "L7": check_l7, "L8": check_l8, "L9": check_l9, "L10": check_l10, "L11": check_l11, "L12": check_l12,
}
"""Claim -> its check, in the lesson's order."""


def parse_claims(claims: Sequence[str] | str) -> tuple[str, ...]:
    """Claims in the lesson's order from ``"L1,L8"``, ``"1, 8"`` or a sequence; repeats dropped.

    >>> parse_claims("l8, 1,L1")
    ('L1', 'L8')

    Raises:
        SeqlabError: empty, an empty item (``"L1,,L2"``), or a claim outside L1–L12; the message shows the
            whole value received, the item at fault and the accepted form.
    """
    parts = claims.split(",") if isinstance(claims, str) else list(claims)
    accepted = "claims among L1–L12 separated by commas (such as L1,L8 or 1,8)"
    whole = claims if isinstance(claims, str) else ",".join(map(str, parts))
    if not whole.strip():
        raise SeqlabError(f"expected {accepted}, received {whole!r}", parameter="claims")
    wanted = set()
    for part in parts:
        text = str(part).strip().upper()
        if not text:
            raise SeqlabError(f"expected {accepted}, received {whole!r}, which has an empty item",
                              parameter="claims")
        name = text if text.startswith("L") else f"L{text}"
        if name not in CHECKS:
            which = f", in which {str(part).strip()!r} is not one" if len(parts) > 1 else ""
            raise SeqlabError(f"expected {accepted}, received {whole!r}{which}", parameter="claims")
        wanted.add(name)
    return tuple(claim for claim in CLAIMS if claim in wanted)


def run_check(config: CheckConfig = CheckConfig(),
              progress: Callable[[int, int, str], None] | None = None) -> CheckResult:
    """Check each claim of ``config`` against its measurement.

    >>> result = run_check(CheckConfig(claims=("L5", "L7")))
    >>> [(c.claim, c.holds) for c in result.checks], result.checks[0].values["closed_form"]  # 64 * (40² + 40·24)
    ([('L5', True), ('L7', True)], 163840)

    Args:
        config: the claims, sizes and seed.
        progress: called as ``progress(done, total, claim)`` before each claim, for a progress display.

    Returns:
        A :class:`CheckResult`; a measurement that raised is a :class:`ClaimCheck` with ``error`` set and
        ``holds`` False. Everything runs on one CPU thread (restored afterwards; L8 times on one thread too),
        with the global RNG seeded by ``config.seed`` inside a fork (the caller's RNG state is kept).

    Raises:
        SeqlabError: an unknown claim in ``config.claims``.
    """
    import torch

    from seqlab.measure.timing import fixed_threads

    claims = parse_claims(config.claims)
    sizes = CheckSizes.of(config.full)
    started = time.perf_counter()
    checks = []
    # One thread: traces pay per op, and idle threads would only spin on a busy machine. The global RNG
    # (used by torch.nn constructors) is seeded inside a fork, so the caller's stream is left as it was.
    with fixed_threads(1), torch.random.fork_rng(devices=[]):
        torch.manual_seed(config.seed)
        _run_claims(claims, sizes, config.seed, checks, progress)
    return CheckResult(tuple(checks), config.full, config.seed, 1, torch.__version__, time.perf_counter() - started)


def _run_claims(claims: tuple[str, ...], sizes: CheckSizes, seed: int, checks: list[ClaimCheck],
                progress: Callable[[int, int, str], None] | None) -> None:
    """Run each claim's check in turn, appending its :class:`ClaimCheck` (with the error, if it raised)."""
    for done, claim in enumerate(claims):
        if progress is not None:
            progress(done, len(claims), claim)
        clock = time.perf_counter()
        try:
            holds, values = CHECKS[claim](sizes, seed)
            checks.append(ClaimCheck(claim, bool(holds), values, time.perf_counter() - clock))
        except Exception as error:  # noqa: BLE001  reported, never skipped: no figure, no verdict
            checks.append(ClaimCheck(claim, False, {}, time.perf_counter() - clock,
                                     f"{type(error).__name__}: {error}"))
