"""Measurements of the web lab in worker processes (seqlab.web.workers): isolated, limited, cancellable, bounded.

The server process must never switch a PyTorch flag: a concurrent quiz + chain + bench + trace mix is run
against a live server in this process while every hold of a global switch here is recorded and the flags
are sampled. A bench whose client hangs up must free the worker within 2 s. Time limit, memory ceiling,
recycling and the queue bound are checked on small pools that do not load PyTorch (they start in a blink).
"""

from __future__ import annotations

import json
import os
import socket
import threading
import time

import pytest

pytest.importorskip("fastapi", reason="the web lab needs fastapi")
httpx = pytest.importorskip("httpx", reason="the live-server tests need httpx")

from seqlab.web.budget import LabBusy  # noqa: E402
from seqlab.web.messages import LabError  # noqa: E402
from seqlab.web.workers import WorkerPool, default_pool  # noqa: E402

MIB = 1024**2


def hog(megabytes: int, seconds: float) -> int:
    """A job that holds ``megabytes`` of touched memory for ``seconds`` (runs in a worker)."""
    block = bytearray(megabytes * MIB)
    for index in range(0, len(block), 4096):
        block[index] = 1
    time.sleep(seconds)
    return len(block)


_kept: list[bytearray] = []


def leak(megabytes: int) -> int:
    """A job that leaves ``megabytes`` of touched memory behind in its worker."""
    block = bytearray(megabytes * MIB)
    for index in range(0, len(block), 4096):
        block[index] = 1
    _kept.append(block)
    return len(block)


def pid() -> int:
    """A job that says which process ran it."""
    return os.getpid()


@pytest.fixture(scope="module")
def light():
    """A pool of one worker that does not import PyTorch, for the limits."""
    pool = WorkerPool(size=1, max_waiting=1, wait_s=0.2, preload=())
    yield pool
    pool.shutdown()


def test_a_job_runs_in_another_process_and_its_error_comes_back(light):
    assert light.call(pid, limit_s=30) != os.getpid()
    with pytest.raises(ZeroDivisionError):
        light.call(divmod, (1, 0), limit_s=30)


class SteppedClock:
    """A monotonic clock the test moves: ``now`` until :meth:`jump`, so a time limit is reached by the test's
    say-so, never by a race between the job and the machine's speed."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def jump(self, seconds: float) -> None:
        self.now += seconds


def test_the_time_limit_stops_the_worker(light, monkeypatch):
    before = light.call(pid, limit_s=30)
    clock = SteppedClock()
    real_limit = light._limit

    def limit_then_jump(limit_s):
        deadline = real_limit(limit_s)
        clock.jump(limit_s + 1e-6)  # the deadline is set; the first check finds it passed
        return deadline

    monkeypatch.setattr(light, "clock", clock)
    monkeypatch.setattr(light, "_limit", limit_then_jump)
    with pytest.raises(LabError) as error:
        light.call(time.sleep, (600,), limit_s=0.5)  # a job that would outlast any test: stopped by the clock
    assert error.value.phrase.render("es") == ("la medición superó su límite de 0.5 s en este ordenador y se "
                                               "detuvo; pide tamaños menores")
    monkeypatch.undo()
    assert light.call(pid, limit_s=30) != before  # killed, and a fresh one took its place


@pytest.mark.parametrize(("scale", "seconds"), [(2.0, "1"), (None, None)])
def test_the_time_limit_scales_or_is_off(monkeypatch, scale, seconds):
    """``time_limit_scale`` multiplies every limit (the message names the limit applied); None turns it off."""
    pool = WorkerPool(size=1, wait_s=0.2, preload=(), time_limit_scale=scale)
    clock = SteppedClock()
    pool.clock = clock
    real_check = pool._check

    def check_after_a_jump(worker, deadline, limit_s):
        clock.jump(10.0)  # far past 0.5 s, scaled or not
        return real_check(worker, deadline, limit_s)

    monkeypatch.setattr(pool, "_check", check_after_a_jump)
    try:
        if seconds is None:
            assert pool.call(divmod, (7, 2), limit_s=0.5) == (3, 1)  # no limit: the job finishes
        else:
            with pytest.raises(LabError, match=f"time limit of {seconds} s"):
                pool.call(time.sleep, (600,), limit_s=0.5)
    finally:
        pool.shutdown()


def own_resident_bytes() -> int:
    """A job that says how much memory its worker holds now (its baseline, before any large job)."""
    from seqlab.web.workers import resident_bytes

    return resident_bytes(os.getpid())


def test_the_memory_ceiling_stops_the_worker_and_recycling_retires_a_grown_one():
    pool = WorkerPool(size=1, wait_s=0.2, preload=())
    try:
        # The ceiling and the recycling mark are absolute resident sizes; a worker's baseline (the interpreter
        # and what unpickling a job imports) differs between machines and environments, so both are set
        # above the baseline measured in this very worker: 150 MiB over it stops a job, 100 MiB retires it.
        baseline = pool.call(own_resident_bytes, limit_s=30)
        pool.memory_limit_bytes, pool.recycle_bytes = baseline + 150 * MIB, baseline + 100 * MIB
        with pytest.raises(LabError) as error:
            pool.call(hog, (300, 20), limit_s=30)
        assert f"used more than {pool.memory_limit_bytes // MIB} MiB and was stopped" in str(error.value)
        first = pool.call(pid, limit_s=30)
        assert pool.call(pid, limit_s=30) == first  # small jobs: the same worker again
        assert pool.call(leak, (120,), limit_s=30) == 120 * MIB  # under the ceiling, left over the recycling mark
        assert pool.call(pid, limit_s=30) != first  # so it was retired after its job
    finally:
        pool.shutdown()


def test_a_worker_that_worked_and_then_idled_is_replaced_by_a_fresh_one():
    pool = WorkerPool(size=1, wait_s=0.2, preload=(), idle_recycle_s=0.4)
    try:
        first = pool.call(pid, limit_s=30)
        deadline = time.monotonic() + 120
        while first in pool.worker_pids() or not pool.worker_pids():  # retired, and a fresh one started
            assert time.monotonic() < deadline, "the idle worker was not replaced"
            time.sleep(0.05)
        (fresh,) = pool.worker_pids()
        time.sleep(1.0)
        assert pool.worker_pids() == [fresh]  # a fresh worker that has not worked is kept, however long it idles
        assert pool.call(pid, limit_s=30) == fresh
    finally:
        pool.shutdown()


def test_the_queue_bound_answers_busy_at_once(light):
    held = light._acquire(1, 1)
    assert held and light.busy
    served = []
    waiter = threading.Thread(target=lambda: served.append(light.call(pid, (), 30, 300.0)))
    waiter.start()  # one request may wait (max_waiting = 1) ...
    deadline = time.monotonic() + 300
    while light._waiting < 1:  # ... once it waits (however slowly its thread starts)
        assert time.monotonic() < deadline and waiter.is_alive(), "the first request never waited"
        time.sleep(0.01)
    started = time.monotonic()
    with pytest.raises(LabBusy):
        light.call(pid, limit_s=30, wait_s=300)  # ... a second is refused at once, not after its 300 s
    assert time.monotonic() - started < 150  # far from 300 s on any machine
    light._release(held, keep=True)
    waiter.join(300)
    assert len(served) == 1 and not light.busy  # the one that waited got the worker when it was freed


# --- A live server in this process ----------------------------------------------------------------------------

def kernel_flags() -> tuple:
    """The process-wide settings the tracers switch (seqlab.measure.switches), read in this process."""
    import torch

    cuda = torch.backends.cuda
    return (torch.backends.mha.get_fastpath_enabled(), bool(torch.backends.mkldnn.enabled),
            cuda.flash_sdp_enabled(), cuda.mem_efficient_sdp_enabled(), cuda.math_sdp_enabled())


def test_a_concurrent_mix_never_switches_a_flag_in_the_server(live_url, monkeypatch):
    from seqlab.measure import switches
    from seqlab.web.panels import quiz

    held = []
    real_held = switches.SharedSwitch.held

    def spy(self, value):
        held.append(self.name)
        return real_held(self, value)

    monkeypatch.setattr(switches.SharedSwitch, "held", spy)
    monkeypatch.setattr(quiz, "_facts", {})  # the quiz measures its facts again
    monkeypatch.setattr(default_pool(), "wait_s", 1800.0)  # queue rather than refuse, however slow the machine
    monkeypatch.setattr(default_pool(), "max_waiting", 8)
    baseline, samples, stop = kernel_flags(), [], threading.Event()

    def sample() -> None:
        while not stop.is_set():
            samples.append(kernel_flags())
            time.sleep(0.001)

    jobs_before = default_pool().jobs_done
    requests = [("GET", "/api/quiz", None), ("POST", "/api/quiz/q2", {"answer": "512"}),
                ("GET", "/api/chain?T=7&d_model=5&seed=11", None), ("GET", "/api/chain?T=9&d_model=6&seed=12", None),
                ("POST", "/api/time/run", {"d_model": 64, "max_T": 64}), ("GET", "/api/cost?T=93", None),
                ("POST", "/api/order", {"sentence": "uno dos tres", "reordered": "tres uno dos", "seed": 13})]
    statuses: list[int] = []
    sampler = threading.Thread(target=sample)
    sampler.start()
    try:
        with httpx.Client(base_url=live_url, timeout=1800) as http:  # the answers are judged, not their speed
            threads = [threading.Thread(target=lambda r=r: statuses.append(http.request(r[0], r[1], json=r[2])
                                                                             .status_code)) for r in requests]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(1800)
    finally:
        stop.set()
        sampler.join()
    assert statuses == [200] * len(requests), statuses
    # quiz facts, 2 chains, bench and order queue for the worker; the cost's trace and count do not (closed forms)
    assert default_pool().jobs_done - jobs_before >= 5
    assert held == [], held  # no switch was held in the server process
    assert len(samples) > 50 and set(samples) == {baseline}, set(samples)


def test_a_bench_whose_client_hangs_up_frees_the_worker_before_the_bench_ends(live_url):
    """Judged by events, not by the clock: the worker is freed without finishing its job (``jobs_done`` unchanged)
    and its process is killed; the bench (d_model = 512 up to T = 2,048) would take far longer than the wait."""
    pool = default_pool()
    port = int(live_url.rsplit(":", 1)[1])
    body = b'{"d_model": 512, "max_T": 2048}'
    client = socket.create_connection(("127.0.0.1", port), timeout=120)
    client.sendall(b"POST /api/time/run HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                   b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
    deadline = time.monotonic() + 120
    while not pool.busy:
        assert time.monotonic() < deadline, "the bench never took a worker"
        time.sleep(0.01)
    working = set(pool.working_pids())  # the bench's worker alone: the spare stays idle and alive
    assert len(working) == 1, working
    done_before = pool.jobs_done
    time.sleep(0.5)  # the sweep is under way
    client.close()  # the visitor leaves
    deadline = time.monotonic() + 120
    while pool.busy:
        assert time.monotonic() < deadline, "the worker was not freed after the client left"
        time.sleep(0.01)
    assert pool.jobs_done == done_before  # freed by the hang-up: the bench never finished
    assert not working & set(pool.worker_pids())  # the sweep's process was killed, not left running


# --- A spare worker, estimates before a run (seqlab.web.workers, seqlab.web.budget) -----------------------------

def stop_by_the_clock(pool, monkeypatch):
    """Make the pool's next job pass its time limit at its first check (the SteppedClock way)."""
    clock = SteppedClock()
    real_limit = pool._limit

    def limit_then_jump(limit_s):
        deadline = real_limit(limit_s)
        clock.jump(limit_s + 1e-6)
        return deadline

    monkeypatch.setattr(pool, "clock", clock)
    monkeypatch.setattr(pool, "_limit", limit_then_jump)


def test_a_spare_worker_takes_over_at_once_from_a_killed_one(monkeypatch):
    pool = WorkerPool(size=1, wait_s=0.2, preload=(), spares=1)
    try:
        pool.warm()
        assert len(pool.worker_pids()) == 2  # the slot's worker and its spare
        first = pool.call(pid, limit_s=30)
        # Counted before the kill: the new spare starts in the background from the kill on, and on a busy machine it
        # may be counted before any line after the kill runs (read after it, the count missed that start).
        started = pool.workers_started
        with monkeypatch.context() as patch:
            stop_by_the_clock(pool, patch)
            with pytest.raises(LabError):
                pool.call(time.sleep, (600,), limit_s=0.5)
        alive = set(pool.worker_pids())
        assert first not in alive and alive  # the killed one is gone; the spare is there already
        assert pool.call(pid, limit_s=30) in alive  # the next job ran on a process started before it was asked
        deadline = time.monotonic() + 60
        while len(pool.worker_pids()) < 2:  # and a new spare is started in the background
            assert time.monotonic() < deadline, "no new spare was started"
            time.sleep(0.05)
        assert pool.workers_started == started + 1
    finally:
        pool.shutdown()


def test_a_run_is_refused_before_it_starts_when_the_last_runs_say_it_would_pass_its_limit():
    from seqlab.web.budget import Work
    from seqlab.web.messages import Phrase

    pool = WorkerPool(size=1, wait_s=0.2, preload=())
    try:
        what = Phrase("T = {T} at d_model = {d}", {"T": 2048, "d": 512})
        pool.run_times.record(Work("bench", 100, what), 30.0)
        jobs = pool.jobs_done
        with pytest.raises(LabError) as error:
            pool.call(divmod, (7, 2), limit_s=60, work=Work("bench", 300, what, "max_T"))
        assert pool.jobs_done == jobs and pool.workers_started == 0  # nothing ran, no worker was even started
        assert error.value.details == {"estimate": {"seconds": 90.0, "limit_s": 60, "from_run_s": 30.0},
                                       "keep_previous_result": True}
        assert error.value.parameter == "max_T"
        assert error.value.phrase.render("es") == (
            "T = 2.048 con d_model = 512 tardaría unos 90 s en este ordenador ahora, a juzgar por la última ejecución "
            "de este panel aquí (30 s para 1/3 del trabajo); una medición puede tardar como mucho 60 s, así que no se "
            "empezó; pide tamaños menores")
        assert pool.call(divmod, (7, 2), limit_s=60, work=Work("bench", 150, what)) == (3, 1)  # 45 s: it runs
        assert pool.call(divmod, (7, 2), limit_s=60, work=Work("chain", 10**9, what)) == (3, 1)  # another kind
    finally:
        pool.shutdown()


def test_a_run_stopped_at_its_limit_is_remembered_and_the_next_as_large_is_refused(monkeypatch):
    from seqlab.web.budget import Work
    from seqlab.web.messages import Phrase

    pool = WorkerPool(size=1, wait_s=0.2, preload=())
    work = Work("decode:timed", 5, Phrase("t = {T} at d_model = {d}", {"T": 4096, "d": 128}), "positions")
    try:
        with monkeypatch.context() as patch:
            stop_by_the_clock(pool, patch)
            with pytest.raises(LabError) as stopped:
                pool.call(time.sleep, (600,), limit_s=60, work=work)
        assert stopped.value.details == {"limit_s": 60, "keep_previous_result": True}
        with pytest.raises(LabError) as error:
            pool.call(divmod, (7, 2), limit_s=60, work=work)
        assert error.value.details["estimate"] == {"seconds": 60.0, "limit_s": 60, "from_run_s": 60.0}
        assert "would take more than" in str(error.value) and "stopped at its limit of 60 s" in str(error.value)
    finally:
        pool.shutdown()


def test_a_finished_run_records_its_seconds_on_the_pools_clock():
    from seqlab.web.budget import Work
    from seqlab.web.messages import Phrase

    clock = SteppedClock()
    pool = WorkerPool(size=1, wait_s=0.2, preload=(), clock=clock)
    real_check = pool._check

    def check_after_a_second(worker, deadline, limit_s):
        clock.jump(1.0)
        return real_check(worker, deadline, limit_s)

    pool._check = check_after_a_second
    try:
        assert pool.call(time.sleep, (0.3,), limit_s=60, work=Work("order", 10, Phrase("x"))) is None
        found = pool.run_times.estimate("order", 20)
        assert found.complete and found.units == 10 and found.run_seconds >= 1.0
        assert found.seconds == pytest.approx(2 * found.run_seconds)
    finally:
        pool.shutdown()


def test_a_refused_estimate_reaches_the_client_with_its_fields():
    from fastapi.testclient import TestClient

    from seqlab.web.app import create_app
    from seqlab.web.panels.timing import bench_work

    app = create_app("en")
    app.state.pool = WorkerPool(size=1, wait_s=0.2, preload=())
    try:
        small = bench_work(512, 1024)  # within MAX_SCALE_UP of the sweep asked for: its seconds scale
        assert small.units * 4 >= bench_work(512, 2048).units
        app.state.pool.run_times.record(small, 40.0)  # the sweep to 1024 took 40 s here
        client = TestClient(app, base_url="http://127.0.0.1")
        response = client.post("/api/time/run?lang=es", json={"d_model": 512, "max_T": 2048})
        assert response.status_code == 422, response.text
        body = response.json()
        expected = 40.0 * bench_work(512, 2048).units / small.units
        assert body["estimate"] == {"seconds": round(expected, 1), "limit_s": 60, "from_run_s": 40.0}
        assert body["keep_previous_result"] is True and body["detail"][0]["loc"] == ["body", "max_T"]
        shown = f"{round(expected):,}".replace(",", ".")
        assert body["message"].startswith(f"T = 2.048 con d_model = 512 tardaría unos {shown} s en este ordenador")
        assert app.state.pool.workers_started == 0
    finally:
        app.state.pool.shutdown()


#: Every endpoint asked once with the pool refusing (LabBusy), after :func:`seqlab.web.app.preload_engine`: prints
#: the torch, numpy, transformers and seqlab modules the requests imported (none, when the start-up covers them).
PRELOAD_PROBE = """
import sys
from fastapi.testclient import TestClient
from seqlab.web import workers
from seqlab.web.app import create_app, preload_engine
from seqlab.web.budget import LabBusy

async def busy(self, *args, **kwargs):
    raise LabBusy()

def busy_call(self, *args, **kwargs):
    raise LabBusy()

workers.WorkerPool.run, workers.WorkerPool.call = busy, busy_call
app = create_app("en")
preload_engine()
client = TestClient(app, base_url="http://127.0.0.1")
before = set(sys.modules)
for method, url, body in [("GET", "/api/figure", None), ("GET", "/api/cost", None), ("GET", "/api/chain", None),
                          ("POST", "/api/order", {}), ("GET", "/api/time", None), ("POST", "/api/time/run", {}),
                          ("GET", "/api/decode", None), ("GET", "/api/decode/model", None), ("GET", "/api/quiz", None),
                          ("POST", "/api/quiz/q2", {"answer": "512"}), ("GET", "/decode", None), ("GET", "/", None)]:
    print(method, url, client.request(method, url, json=body).status_code, file=sys.stderr)
engine = ("torch", "seqlab", "transformers", "numpy")
print(sorted(name for name in set(sys.modules) - before if name.split(".")[0] in engine))
"""


def test_after_the_start_up_imports_no_request_imports_the_engine():
    """Without :func:`~seqlab.web.app.preload_engine` the first requests import PyTorch (hundreds of modules, on
    the event loop); after it, none. In a fresh interpreter: this test process has imported everything already."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", PRELOAD_PROBE], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]", done.stdout[:2000]
    assert "GET /api/decode 503" in done.stderr and "GET /api/cost 200" in done.stderr  # each was really asked


# --- seqlab serve itself, in a subprocess: nothing slow on the event loop; SIGTERM answers 503 ------------------

@pytest.fixture(scope="module")
def served():
    """``seqlab serve`` in a subprocess on a free port, as a user starts it: (process, base URL). Started once for
    the module; its last test stops it with SIGTERM."""
    import subprocess
    import sys

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen([sys.executable, "-m", "seqlab", "serve", "--port", str(port), "--lang", "en"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               env={**os.environ, "PYTHONUNBUFFERED": "1"})
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 300  # PyTorch and the engine are imported before it listens
    while True:
        assert process.poll() is None, process.communicate()[1].decode()
        try:
            if httpx.get(url + "/static/lab.css", timeout=2).status_code == 200:
                break
        except httpx.HTTPError:
            pass
        assert time.monotonic() < deadline, "seqlab serve did not start listening"
        time.sleep(0.2)
    yield process, url
    if process.poll() is None:
        process.kill()
        process.communicate(timeout=30)


def static_latencies_while(url: str, heavy) -> tuple[list[float], object]:
    """Run ``heavy()`` (a request) in a thread and time GET /static/lab.css back to back until it is answered:
    (every latency in seconds, what ``heavy`` returned)."""
    answer: list = []
    worker = threading.Thread(target=lambda: answer.append(heavy()))
    latencies = []
    with httpx.Client(base_url=url, timeout=60) as http:
        worker.start()
        while worker.is_alive():
            started = time.perf_counter()
            assert http.get("/static/lab.css").status_code == 200
            latencies.append(time.perf_counter() - started)
            time.sleep(0.02)
    worker.join()
    return latencies, answer[0]


def children_cpu_s(parent: int) -> dict[int, float]:
    """CPU seconds (user + system) used so far by each child process of ``parent`` (Linux ``/proc``)."""
    ticks = os.sysconf("SC_CLK_TCK")
    found = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as stat:
                fields = stat.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == parent:  # fields after the name: state, ppid, …, utime (12th), stime (13th)
            found[int(entry)] = (int(fields[11]) + int(fields[12])) / ticks
    return found


def test_static_files_stay_fast_while_the_first_heavy_request_runs(served):
    """The first decode of the server's life: before issue 26 it imported PyTorch on the event loop (every request
    waited seconds); now the imports happened at start-up and the work is in a worker. The bound is on the slowest
    static answer while the decode is in flight: 0.5 s, far above a static file's time, far below an import's."""
    _, url = served

    def first_decode():
        with httpx.Client(base_url=url, timeout=600) as http:
            return http.get("/api/decode", params={"d_model": 16, "positions": 64, "time": "true"})

    from seqlab.measure.timing import machine_load

    busy = machine_load().busy
    latencies, response = static_latencies_while(url, first_decode)
    busy = busy or machine_load().busy
    assert response.status_code == 200, response.text
    assert response.json()["positions"] == [1, 4, 16, 64]
    assert len(latencies) >= 3, latencies  # the decode was really in flight while the static file was asked for
    assert max(latencies) < static_bound(busy), (busy, sorted(latencies)[-5:])


def static_bound(busy: bool) -> float:
    """The slowest static answer allowed while a heavy request runs: 0.5 s on a quiet machine (issue 26). On a busy
    one (load average at or above the CPUs, before or after), where a static answer also waits for a CPU, half of
    what the old design stalled the loop for, measured now under the same load: one fresh import of the engine
    (PyTorch and seqlab's measuring modules) in a new interpreter. A loop blocked by that import waits all of it."""
    import subprocess
    import sys

    if not busy:
        return 0.5
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import torch, seqlab.measure.work, seqlab.measure.trace"], check=True)
    return max(0.5, (time.perf_counter() - started) / 2)


def test_sigterm_during_a_measurement_answers_503_and_logs_no_traceback(served):
    import signal

    process, url = served
    answer: list = []

    def long_bench():
        with httpx.Client(base_url=url, timeout=120) as http:
            answer.append(http.post("/api/time/run?lang=es", json={"d_model": 512, "max_T": 2048}))

    quiet = children_cpu_s(process.pid)
    deadline = time.monotonic() + 120
    while True:  # the start-up work (imports in the workers, the quiz's facts) is over when no child computes
        time.sleep(0.5)
        now = children_cpu_s(process.pid)
        if sum(now.values()) - sum(quiet.values()) < 0.05:
            break
        assert time.monotonic() < deadline, "the lab's children never went quiet"
        quiet = now
    bench = threading.Thread(target=long_bench)
    bench.start()
    deadline = time.monotonic() + 120
    while sum(children_cpu_s(process.pid).values()) - sum(quiet.values()) < 0.1:  # a worker computes: mid-sweep
        assert bench.is_alive(), answer and answer[0].text
        assert time.monotonic() < deadline, "the sweep never started"
        time.sleep(0.02)
    assert bench.is_alive(), answer and answer[0].text
    process.send_signal(signal.SIGTERM)
    bench.join(120)
    (response,) = answer
    assert response.status_code == 503, response.text
    assert response.json()["message"] == ("el laboratorio se está cerrando, así que esta medición se detuvo antes de "
                                          "terminar; arranca el laboratorio de nuevo (seqlab serve) y vuelve a pedirla")
    _, stderr = process.communicate(timeout=60)
    # answered by the lab's own stop, not after Uvicorn's shutdown grace ran out (judged by the event Uvicorn logs
    # when it cancels what is still running, never by the clock)
    assert b"timeout graceful shutdown exceeded" not in stderr, stderr.decode()
    assert b"Traceback" not in stderr and b"Exception in ASGI application" not in stderr, stderr.decode()


def test_a_request_cancelled_before_it_answered_gets_503_not_500(monkeypatch):
    """The last resort of a shutdown (seqlab.web.server.AnswerCancelled): Uvicorn cancels a request's task after
    its grace; the lab answers 503 "shutting down" rather than letting Uvicorn answer 500 with a traceback."""
    import asyncio

    from seqlab.web.app import create_app
    from seqlab.web.panels import chain

    async def cancelled(*args, **kwargs):
        raise asyncio.CancelledError()

    monkeypatch.setattr(WorkerPool, "run", cancelled)
    monkeypatch.setattr(chain, "_results", chain.ResultCache(4))
    app, sent = create_app("en"), []

    async def receive():
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message):
        sent.append(message)

    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "GET", "scheme": "http",
             "path": "/api/chain", "raw_path": b"/api/chain", "query_string": b"T=5&lang=es", "root_path": "",
             "headers": [(b"host", b"127.0.0.1")], "client": ("127.0.0.1", 1), "server": ("127.0.0.1", 80)}
    asyncio.run(app(scope, receive, send))
    assert sent[0]["status"] == 503
    body = json.loads(b"".join(message.get("body", b"") for message in sent[1:]))
    assert body["message"].startswith("el laboratorio se está cerrando, así que esta medición se detuvo")
