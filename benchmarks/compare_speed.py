"""Speed goals of the foundation, measured (not a test): ``import seqlab`` < 1 s, ``seqlab compare`` < 5 s (issue 34).

Runs each in a fresh interpreter several times and prints the median, the spread and the ratio to
its goal (a ratio below 1 meets the goal). Run from the repository root after the README's set-up:

    python benchmarks/compare_speed.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

GOALS = {
    "import seqlab": ([sys.executable, "-c", "import seqlab"], 1.0),
    "seqlab compare (built-in text)": ([sys.executable, "-m", "seqlab", "compare", "--lang", "en"], 5.0),
}


def wall_times(command: list[str], repeats: int) -> list[float]:
    """Seconds each of ``repeats`` runs of ``command`` took, start to exit, in a fresh process."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
        times.append(time.perf_counter() - start)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3, help="runs per command (default 3)")
    repeats = parser.parse_args().repeats
    if repeats < 1:
        parser.error(f"--repeats must be >= 1, received {repeats}")
    import os

    load = os.getloadavg()[0]
    print(f"load average {load:.2f} on {os.cpu_count()} CPUs (timings mean little above about 0.5)")
    print(f"{'what':34} {'median':>9} {'min':>9} {'max':>9} {'goal':>7} {'ratio':>7}")
    for label, (command, goal) in GOALS.items():
        times = wall_times(command, repeats)
        median = statistics.median(times)
        print(f"{label:34} {median:8.2f}s {min(times):8.2f}s {max(times):8.2f}s {goal:6.1f}s {median / goal:7.2f}"
              f"  {'meets the goal' if median < goal else 'MISSES the goal'}")


if __name__ == "__main__":
    main()
