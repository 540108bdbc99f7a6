"""``seqlab report``: every study of the lesson run once, for one self-contained HTML page (L1–L12).

Runs, in order, and keeps the frozen results for :mod:`seqlab.render.report` to draw:

* ``compare`` on the chosen text (:mod:`seqlab.studies.compare`: work, span, path, reach, order, time);
* Table 1 of the paper measured at small sizes (:mod:`seqlab.studies.table1`);
* a tiny timing sweep of ``nn.RNN`` against SDPA on 1 and ``auto`` threads (:mod:`seqlab.studies.bench`);
* the cost of each new token when generating, at a few positions (:mod:`seqlab.studies.decode`, quick sizes);
* Figure 1's fifteen boxes measured (:mod:`seqlab.studies.figure`);
* the twelve claims checked (:mod:`seqlab.studies.check`);
* opt-in (``seqlab report --learn``; :attr:`ReportConfig.learn`): tiny models trained on the lesson's tasks and
  on MQAR (:mod:`seqlab.studies.learn`), at ``seqlab learn --quick``'s preset (:data:`REPORT_LEARN`): minutes,
  so it is off by default.

Nothing is measured here that those studies do not measure; this module only chooses sizes and runs them.
:meth:`ReportConfig.quick` shrinks every part (a few seconds; used by the tests); a preview stays that short
only for small widths and texts, limits that ``seqlab report --quick`` enforces (:mod:`seqlab.cli.report`).
:func:`largest_fitting_length` says how much of a long text the compare study can take, and
:func:`first_tokens` keeps that much.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone

from seqlab.measure.timing import MachineLoad, machine_load
from seqlab.studies.bench import BenchConfig, BenchResult
from seqlab.studies.check import CheckConfig, CheckResult
from seqlab.studies.compare import CompareConfig, CompareResult
from seqlab.studies.decode import DecodeConfig, DecodeResult
from seqlab.studies.figure import FigureResult
from seqlab.studies.learn import LearnConfig, LearnResult
from seqlab.studies.table1 import QUICK_D_MODEL, QUICK_LENGTHS, Table1Config, Table1Result
from seqlab.text import Tokens

#: The parts of a report, in the order they are run and shown.
PARTS = ("compare", "table1", "bench", "decode", "figure", "check")
#: The opt-in part, run and shown after them when :attr:`ReportConfig.learn` is set.
LEARN_PART = "learn"
#: The learn section's sweep: ``seqlab learn --quick`` (2 seeds, 400 steps, 2 rates; under 3 minutes on 2 cores).
REPORT_LEARN = LearnConfig.quick()


@dataclass(frozen=True)
class ReportConfig:
    """Sizes of every part. The defaults take well under two minutes on two busy cores.

    Attributes:
        compare: the compare study (d_model 512, timed).
        table1: Table 1 at small sizes (T = 16, 32, 64; d = 32).
        bench: lengths 64, 256, 1024 at d = 128, ``nn.RNN`` and SDPA, 1 and ``auto`` threads, short runs.
        decode: the decoding study at its quick sizes (t = 16, 64, 256; d = 64; short timings).
        figure: (S, T, d_model, heads) of Figure 1.
        check: which claims, and at which sizes.
        learn: the learn section's sweep (:data:`REPORT_LEARN` for ``--learn``); None (the default): no section.
    """

    compare: CompareConfig = field(default_factory=CompareConfig)
    table1: Table1Config = field(default_factory=lambda: Table1Config(lengths=QUICK_LENGTHS,
                                                                       d_models=(QUICK_D_MODEL,)))
    bench: BenchConfig = field(default_factory=lambda: BenchConfig(
        lengths=(64, 256, 1024), d_models=(128,), machines=("rnn", "sdpa"), min_run_time=0.05, min_samples=3,
        matmul_size=256))
    decode: DecodeConfig = field(default_factory=DecodeConfig.quick)
    figure: tuple[int, int, int, int] = (10, 10, 512, 8)
    check: CheckConfig = field(default_factory=CheckConfig)
    learn: LearnConfig | None = None

    @classmethod
    def quick(cls, **changes: object) -> ReportConfig:
        """Every part tiny (d = 16 or 32, T up to 64, millisecond timings): seconds, for tests and previews.

        ``learn`` stays None unless given: the learn section's training is not shrunk below ``learn --quick``.
        """
        values = {
            "compare": CompareConfig(d_model=32, min_run_time=0.02),
            "table1": Table1Config(lengths=QUICK_LENGTHS, d_models=(16,)),
            "bench": BenchConfig(lengths=(16, 32, 64), d_models=(16,), machines=("rnn", "sdpa"),
                                 min_run_time=0.005, min_samples=3, matmul_size=64, chain_links=16),
            "decode": DecodeConfig.quick(positions=(4, 16), d_model=16, min_run_time=0.002, span_lengths=(4, 8),
                                         span_d_model=4),
            "figure": (5, 5, 32, 4),
            "check": CheckConfig(claims=("L2", "L5", "L7", "L12")),
        }
        return cls(**{**values, **changes})


@dataclass(frozen=True)
class ReportResult:
    """What one report shows: the six results (and learn's when it was asked), the text's label, when and how
    long it took (``seconds``: per part, in :func:`parts` order)."""

    source: str
    compare: CompareResult
    table1: Table1Result
    bench: BenchResult
    decode: DecodeResult
    figure: FigureResult
    check: CheckResult
    started: str
    elapsed_s: float
    seconds: dict[str, float]
    load: MachineLoad | None = None  # the machine's load before the first part (the parts' own work not in it)
    learn: LearnResult | None = None


def parts(config: ReportConfig) -> tuple[str, ...]:
    """The parts ``config`` runs, in order: :data:`PARTS`, then :data:`LEARN_PART` when ``config.learn`` is set.

    >>> parts(ReportConfig.quick())[-1], parts(ReportConfig.quick(learn=REPORT_LEARN))[-1]
    ('check', 'learn')
    """
    return PARTS if config.learn is None else (*PARTS, LEARN_PART)


def run_report(tokens: Tokens, source: str, config: ReportConfig = ReportConfig(),
               progress: Callable[[int, int, str], None] | None = None) -> ReportResult:
    """Run every part of the report on ``tokens`` (the compare study's text) and keep the results.

    Args:
        tokens: the text for the compare study (T >= 2).
        source: a label for where the text came from.
        config: sizes of every part.
        progress: called as ``progress(done, total, part)`` before each part.

    Returns:
        A :class:`ReportResult` with the seconds each part took.

    Raises:
        SeqlabError: bad sizes or a text the compare study refuses, or a learn config
            :func:`~seqlab.studies.learn.check_learn_config` refuses (all checked before the long parts run:
            the compare study's size check comes first).
    """
    from seqlab.studies.bench import run_bench
    from seqlab.studies.check import run_check
    from seqlab.studies.compare import check_compare_size, run_compare
    from seqlab.studies.decode import check_decode_config, run_decode
    from seqlab.studies.figure import check_figure_arguments, measure_figure
    from seqlab.studies.table1 import check_table1_size, run_table1

    check_compare_size(len(tokens), config.compare)
    table1_config = check_table1_size(config.table1)
    check_figure_arguments(*config.figure, seed=0)
    check_decode_config(config.decode)
    if config.learn is not None:
        from seqlab.studies.learn import check_learn_config

        check_learn_config(config.learn)
    load = machine_load()  # before any part: the report's own work must not read as a busy machine
    started, clock = datetime.now(timezone.utc).isoformat(timespec="seconds"), time.perf_counter()
    runs = {
        "compare": lambda: run_compare(tokens, source, config.compare),
        "table1": lambda: run_table1(table1_config),
        "bench": lambda: run_bench(config.bench, load=load),
        "decode": lambda: run_decode(config.decode),
        "figure": lambda: measure_figure(*config.figure),
        "check": lambda: run_check(config.check),
        LEARN_PART: lambda: _run_learn(config.learn),
    }
    results, seconds = {}, {}
    todo = parts(config)
    for done, part in enumerate(todo):
        if progress is not None:
            progress(done, len(todo), part)
        part_clock = time.perf_counter()
        results[part] = runs[part]()
        seconds[part] = time.perf_counter() - part_clock
    return ReportResult(source=source, started=started, elapsed_s=time.perf_counter() - clock, seconds=seconds,
                        load=load, **results)


def _run_learn(config: LearnConfig) -> LearnResult:
    """The learn section's sweep, in this process (:func:`seqlab.studies.learn.run_learn`). An interrupted sweep
    is not a report: Ctrl-C stops the whole report."""
    from seqlab.studies.learn import run_learn

    result = run_learn(config)
    if result.partial:
        raise KeyboardInterrupt
    return result


def first_tokens(tokens: Tokens, count: int) -> Tokens:
    """The first ``count`` tokens of ``tokens`` (all of them when there are fewer).

    >>> from seqlab.text import synthetic_tokens
    >>> len(first_tokens(synthetic_tokens(10), 4)), len(first_tokens(synthetic_tokens(3), 4))
    (4, 3)
    """
    return Tokens(tokens.ids[:count], tokens.pieces[:count], tokens.tokenizer)


def largest_fitting_length(config: ReportConfig, longest: int) -> int | None:
    """The largest T <= ``longest`` whose compare study fits in memory (bisection on its size check); None when
    not even T = 2 fits, so the widths, not the length, are at fault.

    >>> largest_fitting_length(ReportConfig.quick(), 500)
    500
    """
    from seqlab.errors import SeqlabError
    from seqlab.studies.compare import check_compare_size

    def fits(T: int) -> bool:
        try:
            check_compare_size(T, config.compare)
        except SeqlabError:
            return False
        return True

    if not fits(2):
        return None
    low, high = 2, longest  # fits(low); the answer lies in [low, high]
    while low < high:
        middle = (low + high + 1) // 2
        low, high = (middle, high) if fits(middle) else (low, middle - 1)
    return low


def with_compare(config: ReportConfig, **changes: object) -> ReportConfig:
    """``config`` with the compare study's settings changed (e.g. ``d_model``).

    >>> with_compare(ReportConfig.quick(), d_model=64).compare.d_model
    64
    """
    return replace(config, compare=replace(config.compare, **changes))
