"""What the engine's traces cost against a plain forward pass (not a test): T = 128, d = 256 by default.

For self-attention (projections, then the attention call) and an Elman RNN (the loop of L1), times
each of: the plain forward pass, the work counter, the span analysis and the path analysis (from the
two ends, as ``seqlab table1`` and ``seqlab profile`` measure, and from every position), and prints
the median, the spread, each as a multiple of the forward pass, and the goal: span analysis at most
5× a forward pass. Path analysis has no goal; what it costs in time and memory is reported. Run from
the repository root:

    python benchmarks/path_cost.py [--T 128] [--d 256] [--repeats 5] [--threads 1]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import torch

from seqlab.layers.attention import SelfAttention
from seqlab.layers.recurrent import ElmanRNN
from seqlab.measure.paths import measure_paths
from seqlab.measure.trace import measure_span
from seqlab.measure.work import count_multiplications

SPAN_GOAL = 5.0


def seconds(function: Callable[[], object], repeats: int) -> list[float]:
    """Wall time of ``repeats`` calls after one warm-up call."""
    function()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return times


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--T", type=int, default=128, help="positions (default 128)")
    parser.add_argument("--d", type=int, default=256, help="width d_model = d_h = d_k = d_v (default 256)")
    parser.add_argument("--repeats", type=int, default=5, help="timed runs per measurement (default 5)")
    parser.add_argument("--threads", type=int, default=1,
                        help="CPU threads (default 1: the traces run in Python, one op at a time)")
    options = parser.parse_args()
    torch.set_num_threads(options.threads)
    T, d = options.T, options.d
    generator = torch.Generator().manual_seed(0)
    layers = {
        "self-attention": SelfAttention(d, generator=generator).eval(),
        "Elman RNN": ElmanRNN(d, d, generator=generator).eval(),
    }
    x = torch.randn(1, T, d, generator=generator)  # (1, T, d)
    print(f"T = {T}, d = {d}, float32, {torch.get_num_threads()} threads, PyTorch {torch.__version__}; "
          f"median of {options.repeats} runs after a warm-up")
    print(f"{'layer':15} {'what':30} {'median':>10} {'min':>10} {'max':>10} {'× forward':>10}  goal")
    for name, layer in layers.items():
        def forward(layer=layer):
            with torch.no_grad():
                layer(x)

        analyses = {
            "forward pass (no grad)": forward,
            "work (count_multiplications)": lambda layer=layer: count_multiplications(layer, x),
            "span (measure_span)": lambda layer=layer: measure_span(layer, x),
            "path, sources 0 and T-1": lambda layer=layer: measure_paths(layer, x, sources=(0, T - 1)),
            f"path, all {T} sources": lambda layer=layer: measure_paths(layer, x),
        }
        base = None
        for what, function in analyses.items():
            grown = peak_growth_mib(function)
            times = seconds(function, options.repeats)
            median = statistics.median(times)
            base = median if base is None else base
            ratio = median / base
            goal = ""
            if what.startswith("span"):
                goal = f"≤ {SPAN_GOAL:g}×: " + ("meets the goal" if ratio <= SPAN_GOAL else "MISSES the goal")
            if grown is not None and grown >= 1:
                goal += f"{'; ' if goal else ''}peak memory +{grown:.0f} MiB"
            print(f"{name:15} {what:30} {median * 1e3:8.2f}ms {min(times) * 1e3:8.2f}ms {max(times) * 1e3:8.2f}ms "
                  f"{ratio:9.1f}×  {goal}")
    print("Path analysis carries a float64 closeness per source and element written, in two units: its cost grows "
          "with the number of sources (memory and time), which is why seqlab measures from the two ends by default.")


if __name__ == "__main__":
    main()
