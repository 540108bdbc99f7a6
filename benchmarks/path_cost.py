"""What the engine's measurements cost against a plain forward pass, beside issue 17's goals (not a test).

For self-attention (projections, then the attention call) and an Elman RNN (the loop of L1), at
T = 128, d = 256 and at T = 1000, d = 512: the plain forward pass, the work counter, the span analysis
and the path analysis from the two ends (as ``seqlab table1`` and ``seqlab profile`` measure), each as a
multiple of the forward pass (the paths also at position level, ``positions=True``), in wall time and in
CPU time (on a loaded machine the CPU ratio is the
steadier one), beside its goal and the machine's load (``os.getloadavg``, 1 minute) while it ran. Then the
full path matrix (every source) at T = 512, d = 256 with the peak memory it added, and
``seqlab profile`` on the bundled all-MiniLM-L6-v2 (6 layers, T = 512: work, span, two-end paths) with its
wall and CPU seconds, after each of those analyses timed on its own on the same layers. Goals (one thread, issue 17): work ≤ 3×, span ≤ 3×, two-end paths ≤ 8× at
T = 1000, d = 512; full path matrix within 2 GiB; profile on MiniLM under 60 s. Run from the repository root:

    python benchmarks/path_cost.py [--repeats 3] [--threads 1] [--quick] [--no-profile]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable

import torch

from seqlab.layers.attention import SelfAttention
from seqlab.layers.recurrent import ElmanRNN
from seqlab.measure.paths import measure_paths
from seqlab.measure.trace import measure_span
from seqlab.measure.work import count_multiplications

#: Largest multiple of a forward pass each analysis may cost (issue 17, one thread, T = 1000, d = 512).
GOALS = {"work (count_multiplications)": 3.0, "span (measure_span)": 3.0, "path, sources 0 and T-1": 8.0}
GOAL_SIZE = (1000, 512)
FULL_MATRIX_SIZE, FULL_MATRIX_GOAL_MIB = (512, 256), 2048
PROFILE_GOAL_S = 60.0
PROFILE = ["seqlab", "profile", "benchmarks.minilm_factory:make_minilm", "--d-model", "384", "--seq-len", "512"]


def seconds(function: Callable[[], object], repeats: int) -> tuple[list[float], list[float]]:
    """Wall and CPU (process) times of ``repeats`` calls after one warm-up call."""
    function()
    wall, cpu = [], []
    for _ in range(repeats):
        start, start_cpu = time.perf_counter(), time.process_time()
        function()
        wall.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    return wall, cpu


def _status_mib(field: str) -> float | None:
    """A memory field of /proc/self/status (VmRSS, VmHWM) in MiB, or None off Linux."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def peak_growth_mib(function: Callable[[], object]) -> float | None:
    """How far one call raises the resident memory above where it started, MiB (None if unknown).

    Linux resets the peak (VmHWM) when "5" is written to /proc/self/clear_refs.
    """
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as clear:
            clear.write("5")
    except OSError:
        return None
    start = _status_mib("VmRSS")
    function()
    peak = _status_mib("VmHWM")
    return None if start is None or peak is None else peak - start


def load() -> float:
    """The machine's load average over the last minute."""
    return os.getloadavg()[0]


def _layers(d: int) -> dict[str, torch.nn.Module]:
    generator = torch.Generator().manual_seed(0)
    return {"self-attention": SelfAttention(d, generator=generator).eval(),
            "Elman RNN": ElmanRNN(d, d, generator=generator).eval()}


def _verdict(ratio: float, goal: float) -> str:
    return f"≤ {goal:g}×: " + ("meets" if ratio <= goal else "MISSES")


def ratios(T: int, d: int, repeats: int) -> None:
    """Each analysis as a multiple of the forward pass, wall and CPU, beside its goal and the load."""
    x = torch.randn(1, T, d, generator=torch.Generator().manual_seed(1))  # (1, T, d)
    judged = (T, d) == GOAL_SIZE
    print(f"\nT = {T}, d = {d}: median of {repeats} runs after a warm-up"
          + ("" if judged else f" (goals are set at T = {GOAL_SIZE[0]}, d = {GOAL_SIZE[1]}; shown for reference)"))
    print(f"{'layer':15} {'what':30} {'wall':>10} {'× fwd':>7} {'CPU × fwd':>9}  {'load':>5}  goal")
    for name, layer in _layers(d).items():
        def forward(layer=layer):
            with torch.no_grad():
                layer(x)

        def work(layer=layer):
            with torch.no_grad():  # as seqlab profile runs the counter, and as the forward pass is timed
                count_multiplications(layer, x)

        analyses = {
            "forward pass (no grad)": forward,
            "work (count_multiplications)": work,
            "span (measure_span)": lambda layer=layer: measure_span(layer, x),
            "path, sources 0 and T-1": lambda layer=layer: measure_paths(layer, x, sources=(0, T - 1)),
            "  the same, position level": lambda layer=layer: measure_paths(layer, x, sources=(0, T - 1),
                                                                            positions=True),
        }
        base = base_cpu = None
        for what, function in analyses.items():
            wall, cpu = seconds(function, repeats)
            median, median_cpu = statistics.median(wall), statistics.median(cpu)
            base, base_cpu = base or median, base_cpu or median_cpu
            ratio, ratio_cpu = median / base, median_cpu / base_cpu
            judge = "path, sources 0 and T-1" if what.startswith("  the same") else what
            goal = _verdict(ratio, GOALS[judge]) + f" (CPU: {'meets' if ratio_cpu <= GOALS[judge] else 'MISSES'})" \
                if judge in GOALS else ""
            print(f"{name:15} {what:30} {median * 1e3:8.1f}ms {ratio:6.1f}× {ratio_cpu:8.1f}×  {load():5.1f}  {goal}")


def full_matrix(T: int, d: int) -> None:
    """The path matrix from every source, each layer in a fresh process (so the memory it adds is its own)."""
    print(f"\nFull path matrix (all {T} sources), T = {T}, d = {d}: one run each, each in a fresh process; "
          "element level, then position level (positions=True)")
    for name in _layers(1):
        for level in ([], ["--positions"]):
            done = subprocess.run([sys.executable, os.path.abspath(__file__), "--full-matrix-of", name, "--T", str(T),
                                   "--d", str(d), *level], capture_output=True, text=True, check=False)
            print(done.stdout.strip() or f"{name:15} failed: {done.stderr.strip()[-300:]}")


def full_matrix_of(name: str, T: int, d: int, positions: bool = False) -> None:
    """One layer's full path matrix: time, the distances the tracer held at most, and the resident memory added."""
    from seqlab.measure.paths import path_batches
    from seqlab.measure.switches import one_thread

    layer = _layers(d)[name]
    x = torch.randn(1, T, d, generator=torch.Generator().manual_seed(1))
    held = []

    def run() -> None:
        with one_thread():
            held.extend(b.stored_bytes for b in path_batches(layer, x, range(T),
                                                             lambda r: [r[0] if isinstance(r, tuple) else r],
                                                             positions=positions))

    start, start_cpu = time.perf_counter(), time.process_time()
    grown = peak_growth_mib(run)
    wall, cpu = time.perf_counter() - start, time.process_time() - start_cpu
    memory = "unknown" if grown is None else f"+{grown:.0f} MiB (≤ {FULL_MATRIX_GOAL_MIB} MiB: " + (
        "meets)" if grown <= FULL_MATRIX_GOAL_MIB else "MISSES)")
    label = name + (" (positions)" if positions else "")
    print(f"{label:27} {wall:7.1f} s wall, {cpu:7.1f} s CPU, {len(held)} passes holding at most "
          f"{max(held) / 2**20:.0f} MiB of distances; peak memory {memory}; load {load():.1f}")


def minilm_parts(repeats: int) -> None:
    """Forward, work, span and two-end paths of MiniLM's six layers at T = 512, each timed on its own."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from minilm_factory import make_minilm

    layer = make_minilm(384)
    T = 512
    x = torch.randn(1, T, 384, generator=torch.Generator().manual_seed(1))

    def forward():
        with torch.no_grad():
            layer(x)

    print(f"\nall-MiniLM-L6-v2, 6 layers, T = {T}, d = 384: median of {repeats} runs after a warm-up")
    base = None
    for what, function in {"forward pass (no grad)": forward,
                           "work (count_multiplications)": lambda: count_multiplications(layer, x),
                           "span (measure_span)": lambda: measure_span(layer, x),
                           "path, sources 0 and T-1": lambda: measure_paths(layer, x, sources=(0, T - 1))}.items():
        wall, cpu = seconds(function, repeats)
        median, median_cpu = statistics.median(wall), statistics.median(cpu)
        base = base or (median, median_cpu)
        print(f"{what:30} {median:7.2f} s wall {median / base[0]:6.1f}× {median_cpu:7.2f} s CPU "
              f"{median_cpu / base[1]:6.1f}×  load {load():.1f}")


def profile_minilm() -> None:
    """``seqlab profile`` on all-MiniLM-L6-v2 at T = 512, wall and CPU seconds of the whole command."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start, load_before = time.perf_counter(), load()
    done = subprocess.run(PROFILE, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    print(f"\n{' '.join(PROFILE)}")
    if done.returncode != 0:
        print(f"failed (exit {done.returncode}): {done.stderr.strip().splitlines()[-1:]}")
        return
    rows = [line for line in done.stdout.splitlines() if "Multiplications counted" in line or "in a row" in line
            or "Path from" in line]
    for row in rows:
        print("   " + row.strip("│ ").replace("│", ":"))
    print(f"{wall:.1f} s wall, {cpu:.1f} s CPU (< {PROFILE_GOAL_S:g} s: {'meets' if wall < PROFILE_GOAL_S else 'MISSES'}"
          f" in wall time, {'meets' if cpu < PROFILE_GOAL_S else 'MISSES'} in CPU time); load {load_before:.1f} "
          f"before, {load():.1f} after")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3, help="timed runs per measurement (default 3)")
    parser.add_argument("--threads", type=int, default=1,
                        help="CPU threads of the forward pass (default 1: the goals are set on one thread)")
    parser.add_argument("--quick", action="store_true", help="only T = 128, d = 256 (seconds)")
    parser.add_argument("--no-profile", action="store_true", help="skip seqlab profile on MiniLM")
    parser.add_argument("--full-matrix-of", help=argparse.SUPPRESS)  # one layer's full matrix, in a child process
    parser.add_argument("--T", type=int, default=FULL_MATRIX_SIZE[0], help=argparse.SUPPRESS)
    parser.add_argument("--d", type=int, default=FULL_MATRIX_SIZE[1], help=argparse.SUPPRESS)
    parser.add_argument("--positions", action="store_true", help=argparse.SUPPRESS)  # position-level distances
    options = parser.parse_args()
    torch.set_num_threads(options.threads)
    if options.full_matrix_of:
        full_matrix_of(options.full_matrix_of, options.T, options.d, options.positions)
        return
    print(f"float32, {torch.get_num_threads()} thread(s), PyTorch {torch.__version__}, {os.cpu_count()} cores; "
          f"load {load():.1f} at the start")
    ratios(128, 256, options.repeats)
    if not options.quick:
        ratios(*GOAL_SIZE, options.repeats)
        full_matrix(*FULL_MATRIX_SIZE)
        if not options.no_profile:
            minilm_parts(options.repeats)
            profile_minilm()
    sys.stdout.flush()


if __name__ == "__main__":
    main()
