"""``seqlab compare`` measures the LSTM and GRU reaches on a second thread while it counts and traces: the
figures are those of the same calls made in turn, and nothing the study sets leaks (threads, warning filters,
module hooks)."""

from __future__ import annotations

import threading
import warnings

import torch

from seqlab.measure.reach import measure_reach
from seqlab.measure.work import count_multiplications
from seqlab.studies import compare
from seqlab.studies.compare import CompareConfig, run_compare
from seqlab.studies.compare_gated import (
    CELLS,
    AsideWork,
    IdleCores,
    build_gated,
    cpu_times,
    gated_reach,
)
from seqlab.text import seeded_generator, stream_seed, synthetic_tokens


def _x(T: int, d: int) -> torch.Tensor:
    return torch.randn(T, d, generator=torch.Generator().manual_seed(7))  # (T, d)


def test_a_reach_on_the_worker_equals_the_reach_in_turn():
    module, x = build_gated("lstm", 6, 5, torch.Generator().manual_seed(1)), _x(12, 6)
    in_turn = gated_reach(module, x, seed=3, probes=4)
    with AsideWork() as aside:
        aside.start()
        on_worker = aside.add(gated_reach, module, x, seed=3, probes=4)()
    assert on_worker == in_turn  # the same calls on one CPU thread: the same bits
    # the vmapped backward measures what R replicated copies measure, to rounding
    module64 = build_gated("lstm", 6, 5, torch.Generator().manual_seed(1)).double()
    replicated = measure_reach(lambda rows: module64(rows)[0], x.double(), probes=4, seed=3, batched=True)
    assert on_worker.backward == "batched" and replicated.backward == "replicated batch"
    for a, b in zip(on_worker.norms, replicated.norms, strict=True):
        assert abs(a - b) <= 1e-12 * b


def test_the_worker_fires_no_module_hook():
    seen = []
    handle = torch.nn.modules.module.register_module_forward_pre_hook(lambda module, args: seen.append(module))
    try:
        gated_reach(build_gated("gru", 4, 4, torch.Generator().manual_seed(0)), _x(6, 4), seed=0, probes=2)
    finally:
        handle.remove()
    assert seen == []  # a counter's module tracker on the other thread sees nothing of the reach


def test_compare_keeps_its_figures_and_leaks_nothing():
    config = CompareConfig(d_model=16, time=False)
    # a first run imports what compare imports lazily (sympy, requests...), whose import adds its own warning
    # filters once per process: that is the library's import, not compare's doing, so it comes before the snapshot
    run_compare(synthetic_tokens(8), "synthetic (8 tokens)", config)
    threads, filters = torch.get_num_threads(), list(warnings.filters)
    result = run_compare(synthetic_tokens(24), "synthetic (24 tokens)", config)
    assert torch.get_num_threads() == threads and warnings.filters == filters
    probes = compare._probes(config, 16, 24)
    for cell, measured in zip(CELLS, result.gated, strict=True):
        module = build_gated(cell, 16, 16, seeded_generator(config.seed, cell))
        assert measured.cell == cell
        assert measured.reach == gated_reach(module, compare.embed(synthetic_tokens(24), 16, seed=config.seed),
                                             seed=stream_seed(config.seed, cell), probes=probes)


def test_a_count_here_does_not_see_modules_called_on_another_thread():
    entered, release = threading.Event(), threading.Event()

    class Waiting(torch.nn.Module):  # inside its forward, on the other thread, while this thread counts
        def forward(self, t):
            entered.set()
            release.wait(timeout=60)
            return t * 2

    counted, x = torch.nn.Linear(3, 4), torch.randn(2, 3)

    def with_a_module_open_beside(rows):
        beside = threading.Thread(target=lambda: Waiting()(torch.randn(2, requires_grad=True)))
        beside.start()
        entered.wait(timeout=60)
        try:
            return counted(rows)
        finally:
            release.set()
            beside.join()

    measured = count_multiplications(with_a_module_open_beside, x)
    assert measured.multiplications == 2 * 3 * 4
    assert dict(measured.by_module) == {"Global": 24, "Linear": 24}  # not charged to the other thread's Waiting


def test_aside_work_gives_each_result_once_on_either_thread():
    ran = {}

    def job(value):
        ran.setdefault(value, []).append(threading.current_thread().name)
        return value * 2

    with AsideWork() as aside:
        first = aside.add(job, 1)
        aside.start()
        later = [aside.add(job, value) for value in (2, 3, 4)]  # given after the start
        aside.help()  # the jobs the worker has not begun run here, from the last
        assert first() == 2 and [get() for get in later] == [4, 6, 8]
        assert aside.add(job, 5)() == 10  # given after help: run at once, here
    assert sorted(ran) == [1, 2, 3, 4, 5] and all(len(names) == 1 for names in ran.values())
    assert {names[0] for names in ran.values()} <= {"seqlab-reach", threading.current_thread().name}
    assert ran[5] == [threading.current_thread().name]


def test_aside_work_without_its_worker_runs_every_job_in_help():
    order = []
    with AsideWork() as aside:
        gets = [aside.add(order.append, value) for value in (1, 2, 3)]
        aside.help()  # no start: everything here, from the last given
        for get in gets:
            get()
    assert order == [3, 2, 1]


def test_aside_work_hands_back_a_job_error_and_cancels_what_did_not_begin():
    def fail():
        raise ValueError("no")

    with AsideWork() as aside:
        failed = aside.add(fail)
        aside.start()
        try:
            failed()
        except ValueError as error:
            assert str(error) == "no"
        else:
            raise AssertionError("the job's error was not handed back")
    with AsideWork() as aside:
        never = aside.add(sum, (1, 2))
    try:
        never()
    except Exception as error:  # noqa: BLE001 - a cancelled future
        assert type(error).__name__ == "CancelledError"
    else:
        raise AssertionError("a job that never began gave a result")


def test_cpu_times_reads_idle_and_total_ticks_of_the_first_line():
    text = "cpu  4 1 2 30 3 1 1 8 5 0\ncpu0 2 0 1 15 1 0 0 4 0 0\n"
    assert cpu_times(text) == (33, 50)  # idle + iowait; user nice system idle iowait irq softirq steal (guests in user)
    assert cpu_times("intr 12 3\n") is None and cpu_times("cpu 1 2\n") is None
    assert cpu_times("cpu  a b c d e f g h\n") is None


def test_idle_cores_are_the_idle_share_of_the_window_times_the_cpus():
    readings = iter([(100, 400), (250, 700), (250, 700), None, (300, 800)])
    idle = IdleCores(cpus=4, times=lambda: next(readings))
    assert idle.read() == 2.0  # 150 of 300 ticks idle on 4 CPUs
    assert idle.read() is None  # no tick passed
    assert idle.read() is None  # no reading
    assert idle.read() is None  # nothing to compare with after a missing reading


def test_the_worker_starts_only_beside_an_idle_core():
    def fixed(value):
        return type("Idle", (), {"read": lambda self: value})()

    for spare, starts in ((0.2, False), (0.5, True), (1.0, True), (None, True)):
        ran: list[tuple[int, str]] = []

        def note(value, ran=ran):
            ran.append((value, threading.current_thread().name))

        with AsideWork() as aside:
            got = [aside.add(note, v) for v in (1, 2)]
            assert aside.start_if_idle(fixed(spare)) is starts
            aside.help()
            for get in got:
                get()
        names = {name for _, name in ran}
        assert sorted(value for value, _ in ran) == [1, 2]
        if not starts:  # every job ran here, in help
            assert names == {threading.current_thread().name}
    with AsideWork() as aside:  # asked again once started: it runs, and nothing else is started
        aside.start()
        worker = aside._worker
        assert aside.start_if_idle(fixed(0.0)) is True and aside._worker is worker
        aside.help()
    with AsideWork() as aside:  # after help, every job runs here: no worker starts
        aside.help()
        assert aside.start_if_idle(fixed(2.0)) is False and aside._worker is None
