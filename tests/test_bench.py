"""``seqlab bench`` (studies/bench, render/bench, cli/bench, benchmarks/gpu_bench.py): L7, L8.

No test here asserts a wall time or which machine is faster: the sweep is run at toy sizes for its
logic (points, order, threads restored, files), and the work–span model, the per-length decisions and the
crossovers are checked on SYNTHETIC per-round timings (hand-built, or a fake ``measure_rounds``) whose
answers are worked out by hand next to each assertion.
"""

from __future__ import annotations

import csv
import importlib.util
import io
import itertools
import json
import random
import statistics
import xml.etree.ElementTree as ElementTree
from dataclasses import replace
from fractions import Fraction
from pathlib import Path

import typing

import pytest
import torch

import seqlab.studies.bench as bench
from seqlab.errors import SeqlabError
from seqlab.measure.rounds import Decision, Rounds, decide
from seqlab.measure.timing import MachineLoad, Timing
from seqlab.measure.trace import measure_span
from seqlab.measure.work import count_multiplications
from seqlab.render.bench import CSV_FIELDS, bench_sentences, bench_table, render_bench, to_csv, write_all
from seqlab.render.json_output import to_json
from seqlab.studies.bench import (MARGIN, REASONS, WHERE, BenchConfig, BenchPoint, BenchResult, Crossover,
                                  LengthDecision, SpanFit, ThreadScaling, WorkCheck, calibrate, check_bench_config, crossovers,
                                  measured_crossover, model_terms, multiplications, pair_rounds, predict,
                                  predicted_crossover, run_bench)

REPO = Path(__file__).resolve().parents[1]
#: A wide, colourless console for in-process CLI runs (as conftest's CLI_ENV for compare).
CLI_ENV = {"COLUMNS": "200", "NO_COLOR": "1", "FORCE_COLOR": None, "TTY_COMPATIBLE": None}
TINY = dict(lengths=(4, 8), d_models=(8,), threads=(1, "all"), min_run_time=0.001, min_samples=1,
            matmul_size=32, chain_links=4)


def timing(median: float, label: str = "synthetic", threads: int = 1) -> Timing:
    """A synthetic Timing: three samples whose median is ``median``."""
    return Timing(label=label, samples=(median * 0.9, median, median * 1.1), median_s=median, iqr_s=0.1 * median,
                  first_call_s=median, runs=3, threads=threads, device="cpu", noisy=False, min_run_time=0.1)


QUIET = MachineLoad(0.0, 2, False)


def at(T: int, att_s: tuple[float, ...], rec_s: tuple[float, ...] | None = None) -> LengthDecision:
    """The decision at length T from hand-built per-round times of SDPA (``att_s``) and nn.RNN (1 s a round)."""
    rec_s = rec_s or (1.0,) * len(att_s)
    rounds = Rounds(per_round={"sdpa": att_s, "rnn": rec_s}, calls={"sdpa": 1, "rnn": 1},
                    first_call_s={"sdpa": 1.0, "rnn": 1.0}, threads=1, device="cpu", load=QUIET)
    return LengthDecision(T, decide(rounds, "sdpa", "rnn", MARGIN))


def steady(ratio: float, rounds: int = 7) -> tuple[float, ...]:
    """SDPA's per-round times at ``ratio`` × nn.RNN's in every round."""
    return (ratio,) * rounds


@pytest.fixture(scope="module")
def tiny() -> tuple[BenchResult, list[tuple[int, int, str]], int, int]:
    """Every machine at T = 4, 8, d = 8, threads 1 and all; with the progress calls and threads before/after."""
    calls: list[tuple[int, int, str]] = []
    before = torch.get_num_threads()
    result = run_bench(BenchConfig(**TINY), progress=lambda done, total, what: calls.append((done, total, what)))
    return result, calls, before, torch.get_num_threads()


# --- The sweep -----------------------------------------------------------------------------------------

def test_sweep_has_every_point_in_order(tiny):
    result, _, before, _ = tiny
    threads = tuple(sorted({1, before}))
    assert result.threads == threads and result.lengths == (4, 8) and result.d_models == (8,)
    assert result.machines == ("rnn", "loop", "lstm", "gru", "sdpa", "attention")
    expected = [(n, 8, T, key) for n in threads for T in (4, 8) for key in result.machines]
    assert [(p.threads, p.d_model, p.T, p.machine) for p in result.points] == expected
    for p in result.points:
        assert p.timing.threads == p.threads and p.timing.device == "cpu" and len(p.timing.samples) >= 1
        assert p.predicted_s > 0 and p.bound in ("work", "span")
    assert [c.threads for c in result.calibrations] == list(threads)


def test_the_machines_of_a_point_share_their_rounds_and_every_length_is_decided(tiny):
    result, *_ = tiny
    for threads in result.threads:
        for T in result.lengths:
            counts = {len(result.point(key, threads, 8, T).timing.samples) for key in result.machines}
            # one block per machine per round: 7 (BenchConfig.rounds), or as few as 3 when the cap bites
            assert len(counts) == 1 and 3 <= counts.pop() <= 7
    for c in result.crossovers:
        assert [x.T for x in c.decisions] == [4, 8] and c.time_where in WHERE
        for x in c.decisions:
            att, rec = (result.point(key, c.threads, 8, x.T).timing.samples for key in (c.attention, c.recurrence))
            ratios = [a / r for a, r in zip(att, rec)]
            assert x.decision.ratio == pytest.approx(statistics.median(ratios))  # the median per-round ratio
            assert (x.decision.a, x.decision.b, x.decision.rounds) == (c.attention, c.recurrence, len(ratios))


def test_threads_are_restored_and_progress_counts_every_step(tiny):
    result, calls, before, after = tiny
    assert after == before
    total = 6 + len(result.threads) * (1 + 2 * 6)  # span fits + per thread setting (calibration + points)
    assert [done for done, _, _ in calls] == list(range(1, total + 1))
    assert {t for _, t, _ in calls} == {total}


def test_work_is_the_closed_form_and_matches_the_counted_kernels(tiny):
    result, *_ = tiny
    assert result.point("rnn", 1, 8, 4).multiplications == 512  # 4 * (8*8 + 8*8)
    assert result.point("lstm", 1, 8, 4).multiplications == 2048  # 4 gate blocks * 512
    assert result.point("gru", 1, 8, 8).multiplications == 3072  # 3 * 8 * 128
    assert result.point("sdpa", 1, 8, 8).multiplications == 1024  # 8 * 8 * (8 + 8)
    assert all(c.counted == c.closed_form and c.kernels and not c.unaccounted for c in result.checks)
    assert {c.machine for c in result.checks} == set(result.machines)


@pytest.mark.parametrize("machine", list(bench.MACHINES))
def test_counted_multiplications_equal_the_closed_form_with_a_batch(machine):
    generator = torch.Generator().manual_seed(1)
    calls = bench._calls(bench._build(8, "cpu", generator), 6, 8, 2, "cpu", generator)
    with torch.no_grad():
        counted = count_multiplications(calls[machine])
    assert counted.complete
    assert counted.multiplications == multiplications(machine, 6, 8, batch=2)


def test_l9_numbers():
    assert multiplications("rnn", 1000, 512) == 524_288_000  # 2 * 1000 * 512**2
    assert multiplications("sdpa", 1000, 512) == 1_024_000_000  # 2 * 1000**2 * 512
    assert Fraction(multiplications("sdpa", 1000, 512), multiplications("rnn", 1000, 512)) == Fraction(1000, 512)


def test_span_grows_linearly_for_recurrences_and_not_for_attention():
    fits = {fit.machine: fit for fit in bench.fit_spans(tuple(bench.MACHINES))}
    assert {k: (f.intercept, f.per_step) for k, f in fits.items()} == {
        "rnn": (0, 3), "loop": (0, 4), "lstm": (0, 7), "gru": (0, 9), "sdpa": (4, 0), "attention": (4, 0)}
    generator = torch.Generator().manual_seed(0)
    calls = bench._calls(bench._build(8, "cpu", generator), 12, 8, 1, "cpu", generator)
    for key, fit in fits.items():  # the linear extension holds at a length that was not traced
        assert measure_span(calls[key]).ops == fit.ops(12)


# --- The model on synthetic timings ------------------------------------------------------------------

#: throughput 1000**3 / 0.5 s = 2e9 multiplications/s; latency 1e-3 s / 100 ops = 1e-5 s per op.
CALIBRATION = calibrate("cpu", 1, 1000, timing(0.5), 100, timing(1e-3))
SPANS = {"rnn": SpanFit("rnn", (4, 8), (12, 24), 0, 3), "sdpa": SpanFit("sdpa", (4, 8), (4, 4), 4, 0)}


def fake_rounds(monkeypatch, schedule: list[tuple[float, ...]]):
    """Replace the sweep's clock: every point's rounds give nn.RNN 1 ms a round and SDPA the next per-round
    times of ``schedule`` (seconds / 1000); the calibration gets steady times. Returns the calls it saw."""
    seen, pending = [], iter(schedule)

    def measure(functions, *, rounds, block_seconds, threads, device, load):
        names = tuple(functions)
        seen.append((names, rounds, threads))
        if "rnn@1" in names:  # a point: every machine on every thread count, named machine@threads
            per_round = {"rnn@1": (1e-3,) * rounds, "sdpa@1": tuple(t * 1e-3 for t in next(pending))}
        else:
            per_round = {name: (1e-3,) * rounds for name in names}
        return Rounds(per_round=per_round, calls=dict.fromkeys(names, 1), first_call_s=dict.fromkeys(names, 1e-3),
                      threads=threads, device=device, load=load)

    monkeypatch.setattr(bench, "measure_rounds", measure)
    return seen


FAKE = dict(lengths=(64, 128, 256), d_models=(8,), threads=(1,), machines=("rnn", "sdpa"), min_run_time=0.1,
            matmul_size=32, chain_links=4)


@pytest.mark.parametrize(("schedule", "where", "sentence"), [
    ([steady(0.5), steady(0.8), steady(2.0)], "within",
     "1 thread, d_model = 8: SDPA finished first up to T = 128 and nn.RNN from T = 256 on;"),
    ([steady(0.5), steady(0.5), steady(0.5)], "beyond",
     "1 thread, d_model = 8: SDPA is still faster than nn.RNN at T = 256, the longest length measured,"),
    ([steady(0.5), steady(0.8), (1.0, 1.0, 1.3, 1.3, 1.3, 1.3, 1.3)], "not_judged",
     "1 thread, d_model = 8: the time crossover of SDPA and nn.RNN is not judged: at the longest length, T = 256, "
     "neither finished first by the margin (not judged);"),
])
def test_a_sweep_on_a_fake_clock_states_only_what_its_decisions_say(monkeypatch, schedule, where, sentence):
    seen = fake_rounds(monkeypatch, schedule)
    result = run_bench(BenchConfig(**FAKE), load=QUIET)
    # the calibration's two timings together, then both machines of every point in one set of 7 rounds
    assert [names for names, *_ in seen] == [("matmul 32", "chain of 8 ops")] + [("rnn@1", "sdpa@1")] * 3
    assert {(rounds, threads) for _, rounds, threads in seen} == {(7, 1)}
    (crossing,) = result.crossovers
    assert crossing.time_where == where
    text = bench_sentences(result, "en")[0]
    assert text.startswith(sentence)
    assert ("is still faster" in text) is (where == "beyond")
    assert all(p.timing.threads == 1 and len(p.timing.samples) == 7 for p in result.points)
    assert result.point("sdpa", 1, 8, 64).timing.label == "SDPA, T = 64, d = 8"


def test_a_slow_point_gets_fewer_rounds_never_below_min_samples(monkeypatch):
    """Rounds are cut when the estimate says 7 blocks would pass 10 × min_run_time, never below min_samples.

    At T = 64 SDPA takes 8 ms a call (fake); at T = 128 the estimate is 8 ms × (128/64)² = 32 ms, and 7 × 32 ms
    passes the cap 10 × 0.02 s = 0.2 s: int(0.2 / 0.032) = 6 rounds; at T = 256, 128 ms: int(1.5) -> min 5."""
    seen, calls = [], iter([8e-3, 8e-3 * 4, 8e-3 * 16])

    def measure(functions, *, rounds, block_seconds, threads, device, load):
        names = tuple(functions)
        seen.append((names, rounds, block_seconds))
        sdpa = next(calls) if "sdpa@1" in names else 1e-3
        per_round = {name: ((sdpa if name == "sdpa@1" else 1e-3),) * rounds for name in names}
        return Rounds(per_round=per_round, calls=dict.fromkeys(names, 1), first_call_s=dict.fromkeys(names, 1e-3),
                      threads=threads, device=device, load=load)

    monkeypatch.setattr(bench, "measure_rounds", measure)
    run_bench(BenchConfig(**(FAKE | dict(min_run_time=0.02, min_samples=5))), load=QUIET)
    assert [rounds for names, rounds, _ in seen if "sdpa@1" in names] == [7, 6, 5]
    assert [block for names, _, block in seen if "sdpa@1" in names] == pytest.approx([0.02 / 7, 0.02 / 6, 0.02 / 5])


def test_auto_threads_leave_the_busy_cores_alone():
    busy, quiet = MachineLoad(1.9, 2, True), MachineLoad(0.0, 2, False)
    assert BenchConfig().threads == (1, "auto")
    assert check_bench_config(BenchConfig(), busy).threads == (1,)  # round(2 - 1.9) = 0 free -> 1 thread
    assert check_bench_config(BenchConfig(), quiet).threads == tuple(sorted({1, min(torch.get_num_threads(), 2)}))
    assert check_bench_config(BenchConfig(threads=("all",)), busy).threads == (torch.get_num_threads(),)


def test_calibration_and_prediction():
    assert CALIBRATION.throughput == 2e9 and CALIBRATION.flops_per_s == 4e9
    assert CALIBRATION.latency_s == pytest.approx(1e-5, rel=1e-12)
    # nn.RNN at T = 1000, d = 512: 524,288,000 / 2e9 = 0.262144 s > span 3000 ops * 1e-5 = 0.03 s
    assert predict(524_288_000, 3000, CALIBRATION) == (pytest.approx(0.262144, rel=1e-12), "work")
    # SDPA at T = 8, d = 512: 8**2 * 1024 / 2e9 = 3.2768e-5 s < span 4 ops * 1e-5 = 4e-5 s
    assert predict(65_536, 4, CALIBRATION) == (pytest.approx(4e-5, rel=1e-12), "span")


def test_throughput_bound_model_crosses_exactly_where_work_does():
    rec = model_terms("rnn", 512, 1, SPANS["rnn"], CALIBRATION)  # 524,288 T / 2e9 against 3e-5 T
    att = model_terms("sdpa", 512, 1, SPANS["sdpa"], CALIBRATION)  # 1024 T² / 2e9 against 4e-5
    # 1024 T² = 524,288 T  =>  T = 512 = d (L7); the spans never take over near there
    assert predicted_crossover(rec, att) == pytest.approx(512, rel=1e-12)


def test_latency_bound_recurrence_moves_the_time_crossover_past_the_work_crossover():
    slow = calibrate("cpu", 1, 1000, timing(0.5), 100, timing(0.1))  # 1e-3 s per op
    rec = model_terms("rnn", 512, 1, SPANS["rnn"], slow)  # max(2.62144e-4 T, 3e-3 T) = 3e-3 T
    att = model_terms("sdpa", 512, 1, SPANS["sdpa"], slow)  # max(5.12e-7 T², 4e-3)
    # attention is slower below T = 4/3 (its 4 ops against 3 per step), faster after, and slower again
    # from 5.12e-7 T² = 3e-3 T, T = 3e-3 / 5.12e-7 = 5859.375
    assert predicted_crossover(rec, att) == pytest.approx(5859.375, rel=1e-9)


def test_predicted_crossover_edge_cases():
    constant = ((0.0, 0.0, 0.0), (0.0, 0.0, 0.5))  # attention: 0.5 s whatever T
    assert predicted_crossover(((0.0, 1.0, 0.0), (0.0, 0.0, 0.0)), constant) is None  # recurrence T s: never again
    assert predicted_crossover(((0.0, 0.0, 0.1), (0.0, 0.0, 0.0)), constant) == 0.0  # 0.5 > 0.1 at every T


LENGTHS = (250, 1000, 4000)


@pytest.mark.parametrize(("ratios", "expected"), [
    # SDPA / nn.RNN time 0.5 at 1000 and 2 at 4000: ln 0.5 = -ln 2 to ln 2, the line crosses 0 log-halfway
    ((0.25, 0.5, 2.0), ("within", 2000.0, (1000, 4000), None)),
    # a tie at 1000 lies inside the bracket (250, 4000): ln 0.25 = -2 ln 2 to ln 4, halfway, √(250·4000) = 1000
    ((0.25, 1.0, 4.0), ("within", 1000.0, (250, 4000), None)),
    ((2.0, 3.0, 4.0), ("below", None, None, None)),
    ((0.25, 0.5, 0.8), ("beyond", None, None, None)),  # 0.8 < 1/1.2 = 0.833: SDPA first at the longest
    # nn.RNN first at 250, SDPA at 1000: the decisions contradict one another; once judged by medians, now not
    ((2.0, 0.5, 2.0), ("not_judged", None, None, "out_of_order")),
    ((0.25, 0.5, 0.9), ("not_judged", None, None, "longest_undecided")),  # a tie at the longest: no "beyond"
    ((0.25, 0.5, 1.2), ("not_judged", None, None, "longest_undecided")),  # exactly the margin: a tie, not first
    ((0.25, 0.5, 1 / 1.2), ("not_judged", None, None, "longest_undecided")),  # exactly 1/margin: a tie too
    ((0.25, 0.5, 1.21), ("within", None, (1000, 4000), None)),  # just past the margin: first
    ((1.0, 2.0, 3.0), ("not_judged", None, None, "shortest_undecided")),  # nn.RNN first from 1000: no bracket
    ((1.0, 1.1, 0.95), ("not_judged", None, None, "none_first")),
])
def test_measured_crossover_is_read_from_the_decisions(ratios, expected):
    where, T, bracket, reason = measured_crossover(tuple(at(n, steady(r)) for n, r in zip(LENGTHS, ratios)))
    assert (where, bracket, reason) == (expected[0], expected[2], expected[3])
    if expected[1] is not None:
        assert T == pytest.approx(expected[1], rel=1e-9)
    assert (T is None) is (where != "within")
    if where == "within":
        assert bracket[0] < T < bracket[1]


def test_a_length_whose_rounds_straddle_the_margin_is_not_judged_and_no_crossover_is_said():
    straddling = (1.0, 1.0, 1.3, 1.3, 1.3, 1.3, 1.3)  # two rounds against: the lower quartile falls in the band
    assert at(4000, straddling).first == "not_judged"
    assert measured_crossover((at(250, steady(0.25)), at(1000, steady(0.5)), at(4000, straddling)))[::3] == \
        ("not_judged", "longest_undecided")
    # the same straddle in the middle is named inside the bracket, and the crossover still stands
    c = measured_crossover((at(250, steady(0.25)), at(1000, straddling), at(4000, steady(2.0))))
    assert c[0] == "within" and c[2] == (250, 4000)


def test_every_length_attention_first_is_beyond_only_when_the_longest_is_decided():
    assert measured_crossover(tuple(at(n, steady(0.5)) for n in LENGTHS))[0] == "beyond"
    quickest_disagree = (3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 1.0)  # nn.RNN slowed in six rounds, its best round even
    undecided = at(4000, (1.0,) * 7, quickest_disagree)
    assert undecided.first == "not_judged"
    assert measured_crossover((at(250, steady(0.5)), at(1000, steady(0.5)), undecided))[::3] == \
        ("not_judged", "longest_undecided")


def test_the_literals_of_the_result_name_what_the_rule_gives():
    hints = typing.get_type_hints(Crossover)
    assert typing.get_args(hints["time_where"]) == WHERE
    assert typing.get_args(typing.get_args(hints["reason"])[0]) == REASONS


def test_measured_crossover_refuses_lengths_out_of_order_or_none():
    with pytest.raises(SeqlabError, match="at one length"):
        measured_crossover(())
    with pytest.raises(SeqlabError, match="increasing T"):
        measured_crossover((at(1000, steady(0.5)), at(250, steady(0.5))))


OPPOSITE = ({"within", "beyond"}, {"below", "beyond"})


@pytest.mark.parametrize("n_lengths", [1, 2, 3, 4])
def test_opposite_statements_need_opposite_decisions_at_the_longest_length(n_lengths):
    """Every combination of outcomes at every length, against every other: "within" or "below" and "beyond"
    come out together only when the longest length was decided one way in one run and the other way in the
    other — which the decision rule makes as rare as the machine changing (test_rounds)."""
    per_outcome = {"a_first": steady(0.5), "b_first": steady(2.0), "tie": steady(1.0),
                   "not_judged": (0.5, 0.5, 2.0, 2.0, 2.0, 2.0, 2.0)}
    statements = {}
    for outcomes in itertools.product(per_outcome, repeat=n_lengths):
        decisions = tuple(at(T, per_outcome[o]) for T, o in zip((64, 128, 256, 512), outcomes))
        assert tuple(x.decision.outcome for x in decisions) == outcomes
        statements[outcomes] = measured_crossover(decisions)[0]
    for one, two in itertools.combinations(statements, 2):
        if {statements[one], statements[two]} in OPPOSITE:
            assert {one[-1], two[-1]} == {"a_first", "b_first"}, (one, two)


def test_consecutive_noisy_runs_never_give_opposite_crossover_statements():
    """Equal machines at the longest length on a machine whose bursts slow random rounds 1.5 to 5×: the median
    ratio alone calls that length either way from run to run (so a median rule says "within" one run and
    "beyond" the next); by the decisions no two of 300 runs are opposite."""
    rng = random.Random(0)

    def noisy(seconds: float, rounds: int = 7) -> tuple[float, ...]:
        return tuple(seconds * (1 + (rng.random() < 0.3) * rng.uniform(0.5, 4.0)) for _ in range(rounds))

    true_ratio = {64: 0.4, 128: 0.7, 256: 1.0}  # SDPA / nn.RNN without bursts
    statements, by_medians = [], set()
    for _ in range(300):
        decisions = tuple(at(T, noisy(r), noisy(1.0)) for T, r in true_ratio.items())
        statements.append(measured_crossover(decisions)[0])
        by_medians.add(decisions[-1].decision.ratio > 1)  # what the median alone would have said at T = 256
    assert by_medians == {True, False}  # the medians flip: the old rule's "within" and "beyond" both occur
    for one, two in zip(statements, statements[1:]):
        assert {one, two} not in OPPOSITE
    assert not ({"within", "below"} & set(statements) and "beyond" in statements)
    assert "not_judged" in statements


def synthetic_result(lang_threads: tuple[int, ...] = (1, 2)) -> BenchResult:
    """nn.RNN and SDPA at T = 250, 1000, 4000, d = 512: SDPA/RNN time 0.25, 0.5, 2 at 1 thread, faster at 2."""
    points = []
    for threads in lang_threads:
        speedup = {"rnn": 1.0, "sdpa": 1.0 if threads == 1 else 4.0}
        for T, rec_s, ratio in ((250, 1.0, 0.25), (1000, 2.0, 0.5), (4000, 3.0, 2.0)):
            for key, seconds in (("rnn", rec_s), ("sdpa", rec_s * ratio)):
                work, span = multiplications(key, T, 512), SPANS[key].ops(T)
                predicted, bound = predict(work, span, replace(CALIBRATION, threads=threads))
                points.append(BenchPoint(key, threads, 512, T, work, span,
                                         timing(seconds / speedup[key], threads=threads), predicted, bound))
    calibrations = tuple(replace(CALIBRATION, threads=n) for n in lang_threads)
    spans = (SPANS["rnn"], SPANS["sdpa"])
    return BenchResult(
        lengths=(250, 1000, 4000), d_models=(512,), threads=lang_threads, machines=("rnn", "sdpa"), batch=1,
        device="cpu", device_name="Synthetic CPU", dtype="float32", torch_version=torch.__version__, cpu_count=2,
        started="2026-01-01T00:00:00+00:00", elapsed_s=1.0, min_run_time=0.1, calibrations=calibrations,
        spans=spans, checks=(), points=tuple(points), crossovers=crossovers(tuple(points), calibrations, spans, 1),
        thread_scalings=thread_scalings(tuple(points), lang_threads))


def thread_scalings(points: tuple[BenchPoint, ...], threads: tuple[int, ...]) -> tuple[ThreadScaling, ...]:
    """Each machine's fewest- against most-threads decision at every (d, T), as run_bench takes it from the rounds
    both thread counts shared (rebuilt here from the points' samples)."""
    few, many = threads[0], threads[-1]
    if few == many:
        return ()
    found = []
    for p in points:
        if p.threads != few:
            continue
        other = next(q for q in points if (q.machine, q.d_model, q.T, q.threads) == (p.machine, p.d_model, p.T, many))
        rounds = Rounds(per_round={"few": p.timing.samples, "many": other.timing.samples}, calls={"few": 1, "many": 1},
                        first_call_s={"few": 0.0, "many": 0.0}, threads=few, device="cpu", load=None)
        found.append(ThreadScaling(p.machine, p.d_model, p.T, few, many, decide(rounds, "few", "many", MARGIN)))
    return tuple(found)


def test_crossovers_of_a_synthetic_sweep():
    result = synthetic_result()
    one, two = result.crossovers
    assert (one.threads, one.recurrence, one.attention, one.work_T) == (1, "rnn", "sdpa", Fraction(512))
    # SDPA / nn.RNN in each of the 3 rounds: 0.25, 0.5, 2 -> SDPA first, SDPA first, nn.RNN first
    assert [x.first for x in one.decisions] == ["attention", "attention", "recurrence"]
    assert (one.time_where, one.time_T, one.time_bracket, one.reason) == ("within", 2000.0, (1000, 4000), None)
    assert one.predicted_T == pytest.approx(512, rel=1e-12) and not one.predicted_noisy and one.margin == 1.2
    # at 2 threads SDPA is 4x faster: ratios 1/16, 1/8, 1/2 -> still first at the last length
    assert (two.threads, two.time_where, two.time_T) == (2, "beyond", None)
    assert [x.decision.ratio for x in two.decisions] == pytest.approx([1 / 16, 1 / 8, 1 / 2])


def test_a_decision_is_the_rounds_ratio_rule_on_the_points_samples():
    """Two routes to one decision: pair_rounds rebuilds a point's rounds from its Timings; decide() on them
    equals classify-by-hand on the samples' ratios."""
    points = tuple(p for p in synthetic_result().points if (p.threads, p.T) == (1, 4000))
    rounds = pair_rounds(points, ("sdpa", "rnn"))
    assert rounds.per_round["sdpa"] == pytest.approx((5.4, 6.0, 6.6)) and rounds.rounds == 3  # 2 × 3 s ± 10 %
    assert decide(rounds, "sdpa", "rnn", MARGIN).outcome == "b_first"
    with pytest.raises(SeqlabError, match="share rounds"):
        pair_rounds((points[0], replace(points[1], timing=replace(points[1].timing, samples=(1.0,)))),
                    ("sdpa", "rnn"))


def test_sentences_in_both_languages():
    en = bench_sentences(synthetic_result(), "en")
    assert en[0] == ("1 thread, d_model = 512: SDPA finished first up to T = 1,000 and nn.RNN from T = 4,000 on; "
                     "SDPA becomes the slower one between them (near T = 2,000 on the medians); it does more "
                     "multiplications past T = 512. First to finish, by a factor of 1.20 over 3 interleaved rounds: "
                     "T = 250 SDPA; T = 1,000 SDPA; T = 4,000 nn.RNN. The work–span model, a model and not a "
                     "measurement, puts the crossing at T = 512.")
    assert en[1].startswith("2 threads, d_model = 512: SDPA is still faster than nn.RNN at T = 4,000, the longest "
                            "length measured, although it does more multiplications past T = 512 (7.81 times")
    # nn.RNN 3 s / (2 * 4000 * 512**2 / 2e9 = 1.048576 s) = 2.86; SDPA 6 s / (2 * 4000**2 * 512 / 2e9 = 8.192 s)
    assert en[2] == "1 thread, d_model = 512: measured over predicted time at T = 4,000: nn.RNN 2.86, SDPA 0.732."
    # 4000 / 512 = 7.8125; from 1 to 2 threads SDPA runs 4x as fast, nn.RNN 1x
    assert en[4] == ("From 1 thread to 2 threads at T = 4,000, d_model = 512, both timed in the same interleaved "
                     "rounds: nn.RNN runs as fast within a factor of 1.20; SDPA runs 4.00 times as fast.")
    es = bench_sentences(synthetic_result(), "es")
    assert es[0].startswith("1 hilo, d_model = 512: SDPA terminó antes hasta T = 1.000 y nn.RNN a partir de "
                            "T = 4.000; SDPA pasa a tardar más entre ambas (cerca de T ≈ 2.000 según las medianas)")
    assert "Quién termina antes, por un factor de 1,20 en 3 rondas intercaladas: T = 250 SDPA;" in es[0]
    assert "un modelo y no una medida, sitúa el cruce en T ≈ 512." in es[0]
    assert "7,81 veces" in es[1] and es[4].startswith("De 1 hilo a 2 hilos, con T = 4.000")


@pytest.mark.parametrize(("outcome", "ratio", "low", "high", "words"), [
    ("b_first", 3.0, 2.8, 3.2, "SDPA runs 3.00 times as fast"),
    ("a_first", 0.5, 0.45, 0.55, "SDPA takes 2.00 times as long"),
    ("tie", 1.05, 0.95, 1.1, "SDPA runs as fast within a factor of 1.20"),
    ("not_judged", 1.3, 0.9, 1.6, "SDPA: not judged (the per-round ratios run from 0.900 to 1.60 across the margin "
                                  "1.20)"),
])
def test_the_thread_sentence_follows_its_decision(outcome, ratio, low, high, words):
    """Patch SDPA's fewest- against most-threads decision: the sentence says what the decision says, never what a
    ratio of medians from separate rounds would."""
    result = synthetic_result()
    patched = tuple(replace(x, decision=Decision("few", "many", outcome, ratio, low, high, MARGIN, 7))
                    if (x.machine, x.T) == ("sdpa", 4000) else x for x in result.thread_scalings)
    line = next(text for text in bench_sentences(replace(result, thread_scalings=patched)) if text.startswith("From"))
    assert words in line and "nn.RNN runs as fast within a factor of 1.20" in line


def test_no_thread_sentence_without_its_decisions():
    result = replace(synthetic_result(), thread_scalings=())
    assert not any(text.startswith("From") for text in bench_sentences(result))


def test_run_bench_decides_thread_scaling_from_shared_rounds():
    """Both thread counts of a point are timed in one interleaved measurement: every machine gets a decision at
    every length, and its points carry their own thread counts and as many rounds as each other."""
    before = torch.get_num_threads()
    r = run_bench(BenchConfig(lengths=(4, 8), d_models=(8,), threads=(1, 2), machines=("rnn", "sdpa"),
                              min_run_time=0.002, min_samples=1, matmul_size=16, rounds=5))
    assert sorted((s.machine, s.T, s.few, s.many) for s in r.thread_scalings) == [
        ("rnn", 4, 1, 2), ("rnn", 8, 1, 2), ("sdpa", 4, 1, 2), ("sdpa", 8, 1, 2)]
    assert all(s.decision.rounds == 5 and s.decision.outcome in ("a_first", "b_first", "tie", "not_judged")
               for s in r.thread_scalings)
    assert {(p.threads, p.timing.threads) for p in r.points} == {(1, 1), (2, 2)}
    assert {len(p.timing.samples) for p in r.points} == {5}
    assert torch.get_num_threads() == before  # the switching inside the rounds is undone
    one = run_bench(BenchConfig(lengths=(4, 8), d_models=(8,), threads=(1,), machines=("rnn",),
                                min_run_time=0.001, min_samples=1, matmul_size=16))
    assert one.thread_scalings == ()


def test_an_uncounted_kernel_is_named_not_skipped():
    checks = (WorkCheck("rnn", 250, 512, 0, 131_072_000, (), ("aten._cudnn_rnn",)),  # 2 * 250 * 512**2
              WorkCheck("sdpa", 250, 512, 64_000_000, 64_000_000, ("aten._efficient_attention_forward",)))
    sentence = bench_sentences(replace(synthetic_result(), checks=checks), "en")[-1]
    assert sentence == ("Kernels that did the multiplications at T = 250, d_model = 512: nn.RNN aten._cudnn_rnn; "
                        "SDPA aten._efficient_attention_forward. The counted multiplications differ from the "
                        "closed forms for nn.RNN (aten._cudnn_rnn: no formula).")


def test_table_shows_the_time_ratio_beside_the_work_ratio():
    from rich.console import Console

    console = Console(width=200, record=True, color_system=None)
    console.print(bench_table(synthetic_result(), 1, 512, "en"))
    text = console.export_text()
    row = next(line for line in text.splitlines() if line.startswith("│ 1,000"))
    cells = [cell.strip() for cell in row.split("│")[1:-1]]
    # T, nn.RNN, SDPA, time RNN/SDPA = 2 / 1, model = 0.262144 / 0.512 = 0.512, first (SDPA / nn.RNN = 0.5 in
    # every round, past 1/1.2), work d/T = 512/1000
    assert cells == ["1,000", "2.00 s ± 200 ms", "1.00 s ± 100 ms", "2.00", "0.512", "SDPA", "0.512"]
    header = next(line for line in text.splitlines() if "first (by ×1.20)" in line)
    assert header.index("first (by ×1.20)") < header.index("work d/T")
    console.print(render_bench(synthetic_result(), "es"))
    assert "trabajo d/T" in console.export_text()


def with_timings(result: BenchResult, change) -> BenchResult:
    """``result`` with every point's Timing passed through ``change(point)``."""
    return replace(result, points=tuple(replace(p, timing=change(p)) for p in result.points))


def one_block(point: BenchPoint) -> Timing:
    return replace(point.timing, samples=point.timing.samples[:1], iqr_s=0.0, noisy=True)


def test_one_timed_block_shows_no_iqr_and_says_so():
    from rich.console import Console

    console = Console(width=200, record=True, color_system=None)
    table = bench_table(with_timings(synthetic_result(), one_block), 1, 512, "en")
    console.print(table)
    row = next(line for line in console.export_text().splitlines() if line.startswith("│ 1,000"))
    assert [cell.strip() for cell in row.split("│")[1:3]] == ["1,000", "2.00 s (one block)"]  # no "± —", no †
    assert table.caption.endswith("Each time comes from a single timed block. Fewer than 3 blocks give no IQR: "
                                  "those times are rough.")
    assert bench_table(synthetic_result(), 1, 512, "en").caption.endswith(
        "Each time is the median of 3 timed blocks.")


def test_sentences_carry_the_caveat_when_timings_are_noisy_or_rough():
    steady = bench_sentences(synthetic_result(), "en")
    assert not any("Noisy" in s or "rough" in s for s in steady)
    noisy = bench_sentences(with_timings(synthetic_result(), lambda p: replace(p.timing, noisy=True)), "en")
    assert noisy[0].endswith("(Noisy: the spread of some of these times is over a tenth of the median, the machine "
                             "was busy; read it loosely.)")
    rough = bench_sentences(with_timings(synthetic_result(), one_block), "es")
    assert all(s.endswith("sin dispersión con la que juzgarlos.)") for s in rough[:5])  # crossings, model, threads


def _patch_load(monkeypatch, load_1min: float, cpus: int = 2) -> None:
    """Make os.getloadavg / os.cpu_count report ``load_1min`` on ``cpus`` CPUs (what machine_load reads)."""
    import os

    monkeypatch.setattr(os, "getloadavg", lambda: (load_1min, 0.0, 0.0))
    monkeypatch.setattr(os, "cpu_count", lambda: cpus)


def test_the_busy_machine_caveat_follows_the_load_in_every_table():
    from seqlab.measure.timing import MachineLoad

    busy = replace(synthetic_result(), load=MachineLoad(3.5, 2, True))  # 3.5 >= 0.5 * 2 CPUs
    caption = bench_table(busy, 1, 512, "en").caption
    assert caption.endswith("The machine was busy: its load average was 3.50 on 2 CPUs when the timing began, so "
                            "these times may read long and spread wide; time again on a quiet machine before "
                            "comparing them.")
    assert "su carga media era 3,50 con 2 CPU" in bench_table(busy, 2, 512, "es").caption
    quiet = replace(synthetic_result(), load=MachineLoad(0.4, 2, False))
    assert "busy" not in bench_table(quiet, 1, 512, "en").caption
    assert "busy" not in bench_table(synthetic_result(), 1, 512, "en").caption  # load unknown: nothing claimed
    one_busy_point = with_timings(quiet, lambda p: replace(p.timing, load=MachineLoad(5.0, 2, True)) if p.T == 250
                                  else p.timing)
    assert "load average was 5.00 on 2 CPUs" in bench_table(one_busy_point, 1, 512, "en").caption


@pytest.mark.parametrize(("load_1min", "busy"), [(6.0, True), (0.1, False)])
def test_cli_says_the_machine_was_busy_only_when_it_was(run_cli, monkeypatch, load_1min, busy):
    _patch_load(monkeypatch, load_1min, cpus=2)
    result = run_cli("--lengths", "8", "--d-model", "8", "--machines", "rnn,sdpa", "--threads", "1",
                     "--min-run-time", "0.001", "--lang", "es")
    assert result.exit_code == 0, result.output
    said = "La máquina estaba ocupada: su carga media era" in " ".join(result.output.split())  # the caption wraps
    assert said is busy
    data = json.loads(run_cli("--lengths", "8", "--d-model", "8", "--machines", "rnn,sdpa", "--threads", "1",
                              "--min-run-time", "0.001", "--json").stdout)
    assert data["load"] == {"load_1min": load_1min, "cpus": 2, "busy": busy, "threshold_per_cpu": 0.5}
    assert all(point["timing"]["load"]["busy"] is busy for point in data["points"])
    assert all(len(point["timing"]["samples"]) >= 3 for point in data["points"])  # a spread behind every median


def test_the_plot_speaks_spanish():
    from seqlab.render.bench import plot_bench

    figure = plot_bench(synthetic_result(), "es")
    assert figure.get_suptitle() == (f"Synthetic CPU, PyTorch {torch.__version__}, float32, lote 1; cronometrado "
                                     "con 1 hilo y 2 hilos, una columna para cada uno")
    assert [ax.get_title() for ax in figure.axes[:2]] == ["1 hilo", "2 hilos"]  # every panel says its threads
    labels = [label.get_text() for label in figure.axes[-1].get_xticklabels()]
    assert labels == ["250", "1.000", "4.000"]  # the lengths written as the text writes them


# --- Files ---------------------------------------------------------------------------------------------

def test_csv_has_a_row_per_sample(tiny):
    result, *_ = tiny
    rows = list(csv.reader(io.StringIO(to_csv(result))))
    assert tuple(rows[0]) == CSV_FIELDS
    assert len(rows) - 1 == sum(len(p.timing.samples) for p in result.points)
    first = dict(zip(rows[0], rows[1]))
    assert (first["machine"], first["T"], first["multiplications"], first["sample"]) == ("rnn", "4", "512", "0")
    assert first["busy"] in ("True", "False") and first["busy"] == str(result.load.busy)


def test_json_keeps_every_sample(tiny):
    result, *_ = tiny
    data = json.loads(to_json(result))
    assert {"points", "crossovers", "calibrations", "spans", "checks", "device_name", "torch_version"} <= set(data)
    assert len(data["points"]) == len(result.points)
    assert data["points"][0]["timing"]["samples"] == list(result.points[0].timing.samples)
    assert data["crossovers"][0]["work_T"] == {"fraction": "8", "value": 8.0}


def test_write_all_writes_valid_files(tiny, tmp_path):
    pytest.importorskip("matplotlib")
    result, *_ = tiny
    paths = write_all(result, tmp_path / "out", "es")
    assert sorted(p.name for p in paths.values()) == ["bench.csv", "bench.json", "bench.png", "bench.svg"]
    assert paths["png"].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert ElementTree.parse(paths["svg"]).getroot().tag == "{http://www.w3.org/2000/svg}svg"
    assert json.loads(paths["json"].read_text(encoding="utf-8"))["lengths"] == [4, 8]


# --- The command line ----------------------------------------------------------------------------------

@pytest.fixture()
def run_cli(runner):
    from seqlab.cli import app

    return lambda *args: runner.invoke(app, ["bench", *args], env=CLI_ENV)


def test_cli_tiny_sweep_prints_the_table_and_writes_files(run_cli, tmp_path):
    pytest.importorskip("matplotlib")
    result = run_cli("--lengths", "8,16", "--d-model", "8", "--min-run-time", "0.001", "--threads", "1",
                     "--csv", str(tmp_path / "s.csv"), "--plot", str(tmp_path / "p"), "--lang", "en")
    assert result.exit_code == 0, result.output
    assert "Forward pass per call, median ± IQR: 1 thread, d_model = 8" in result.output
    assert "nn.RNN / SDPA time" in result.output and "work d/T" in result.output
    assert (tmp_path / "s.csv").is_file() and (tmp_path / "p.png").is_file() and (tmp_path / "p.svg").is_file()
    assert f"Wrote {tmp_path / 's.csv'}" in result.stderr


def test_cli_json_and_out(run_cli, tmp_path):
    result = run_cli("--lengths", "8", "--d-model", "4,8", "--d-model", "8", "--machines", "rnn,sdpa",
                     "--threads", "1,1", "--min-run-time", "0.001", "--json", "--out", str(tmp_path / "o"))
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["d_models"] == [4, 8] and data["threads"] == [1] and data["machines"] == ["rnn", "sdpa"]
    assert len(data["points"]) == 4  # 2 machines * 2 widths * 1 length * 1 thread setting
    assert sorted(p.name for p in (tmp_path / "o").iterdir()) == ["bench.csv", "bench.json", "bench.png",
                                                                  "bench.svg"]


@pytest.mark.parametrize(("args", "option", "value"), [
    (["--lengths", "0"], "--lengths", "0"),
    (["--lengths", "8,x"], "--lengths", "'x'"),
    (["--lengths", "8,,16"], "--lengths", "'8,,16'"),
    (["--lengths", "2000000"], "--lengths", "2000000"),  # over MAX_LENGTH
    (["--lengths", "100000"], "--lengths", "T = 100000"),  # would need about 150 GiB of attention maps
    (["--d-model", "0"], "--d-model", "0"),
    (["--d-model", "100000"], "--d-model", "100000"),
    (["--batch", "0"], "--batch", "0"),
    (["--batch", "-3"], "--batch", "-3"),
    (["--threads", "0"], "--threads", "0"),
    (["--threads", "many"], "--threads", "'many'"),
    (["--threads", "100000"], "--threads", "100000"),
    (["--device", "tpu"], "--device", "'tpu'"),
    (["--machines", "rnn,transformer"], "--machines", "'transformer'"),
    (["--min-run-time", "-1"], "--min-run-time", "-1"),
    (["--min-run-time", "1000"], "--min-run-time", "1000"),
    (["--csv", "/no/such/folder/x.csv"], "--csv", "/no/such/folder"),
    (["--lang", "fr"], "--lang", "'fr'"),
])
def test_bad_input_exits_2_with_one_line_and_allocates_nothing(run_cli, monkeypatch, args, option, value):
    monkeypatch.setattr(bench, "run_bench", lambda *a, **k: pytest.fail("the sweep must not start"))
    result = run_cli(*args)
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output and "--help" in result.output
    errors = [line for line in result.output.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1, result.output
    assert errors[0].startswith(f"Error: Invalid value for '{option}'") and value in errors[0], errors[0]


def test_cuda_requested_without_a_device(run_cli, monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(bench, "run_bench", lambda *a, **k: pytest.fail("the sweep must not start"))
    result = run_cli("--device", "cuda")
    assert result.exit_code == 2
    assert "Error: Invalid value for '--device': device 'cuda' requested but no CUDA device is present" in result.output
    with pytest.raises(SeqlabError) as error:
        check_bench_config(BenchConfig(device="cuda"))
    assert error.value.parameter == "device"


@pytest.mark.parametrize(("changes", "parameter"), [
    (dict(lengths=()), "T"), (dict(lengths=(4, 0)), "T"), (dict(d_models=(True,)), "d_model"),
    (dict(threads=("some",)), "threads"), (dict(machines=("rnn", "cnn")), "machines"), (dict(machines=()), "machines"),
    (dict(device="gpu"), "device"), (dict(min_run_time=0), "min_run_time"), (dict(batch=0), "batch"),
    (dict(lengths=(4096,), batch=60_000), "batch"),  # one sequence fits; 60,000 of them do not
])
def test_config_errors_name_their_parameter(changes, parameter):
    with pytest.raises(SeqlabError) as error:
        check_bench_config(BenchConfig(**changes))
    assert error.value.parameter == parameter


# --- benchmarks/gpu_bench.py ---------------------------------------------------------------------------

def test_gpu_bench_without_a_gpu_exits_with_a_clear_message(monkeypatch, capsys):
    spec = importlib.util.spec_from_file_location("gpu_bench", REPO / "benchmarks" / "gpu_bench.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert module.main([]) == 1
    assert "no CUDA device" in capsys.readouterr().err
