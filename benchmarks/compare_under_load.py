"""``seqlab compare`` alone and beside a busy background process: the ratio of the two (issue 17, not a test).

Before issue 17, idle OpenMP threads of the tracers spun on cores another process held: with a load of
about 3.5 on 2 cores, ``seqlab compare --no-time`` took 98 s against 9.7 s on one thread. Counting and
tracing now run on one thread, so a busy neighbour should cost at most its share of the CPU. This script
times the same command (``seqlab compare --lang en --no-time`` by default) once without and once beside
one background process that keeps one core (``--neighbour-threads``: more) busy with matrix products, and prints the ratio beside the
goal (≤ 2×) and the load (``os.getloadavg``) around each run. With ``--quijote`` it also times
``seqlab compare --text`` on the Quijote chapter of /work/shared/data (goal: under 20 s). Run from the
repository root:

    python benchmarks/compare_under_load.py [--repeats 1] [--quijote FILE]
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import time

GOAL_RATIO = 2.0
QUIJOTE_GOAL_S = 20.0
COMMAND = ["seqlab", "compare", "--lang", "en", "--no-time"]
#: The busy neighbour: products of 512 x 512 matrices on {threads} thread(s), until it is stopped.
BUSY = "import torch\ntorch.set_num_threads({threads})\na = torch.randn(512, 512)\nwhile True:\n    a = torch.tanh(a @ a)\n"


def run(command: list[str]) -> tuple[float, float, float]:
    """(wall seconds, CPU seconds of the child, load before) of one run; exits if the command fails."""
    before, load = resource.getrusage(resource.RUSAGE_CHILDREN), os.getloadavg()[0]
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        sys.exit(f"{' '.join(command)} failed (exit {done.returncode}): {done.stderr.strip()[-300:]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), load


def best_of(command: list[str], repeats: int) -> tuple[float, float, float]:
    """The fastest of ``repeats`` runs (the least disturbed by the machine's other work)."""
    return min((run(command) for _ in range(repeats)), key=lambda timing: timing[0])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=1, help="runs of each case; the fastest counts (default 1)")
    parser.add_argument("--neighbour-threads", type=int, default=1,
                        help="threads of the busy neighbour (default 1: one busy core)")
    parser.add_argument("--quijote", metavar="FILE", help="also time seqlab compare --text FILE (goal < 20 s)")
    options = parser.parse_args()
    print(f"{' '.join(COMMAND)}; {os.cpu_count()} cores")
    quiet = best_of(COMMAND, options.repeats)
    print(f"alone:                     {quiet[0]:6.1f} s wall, {quiet[1]:6.1f} s CPU; load {quiet[2]:.1f} before")
    busy = subprocess.Popen([sys.executable, "-c", BUSY.format(threads=options.neighbour_threads)])
    try:
        time.sleep(2)  # let the neighbour start its threads
        loaded = best_of(COMMAND, options.repeats)
    finally:
        busy.terminate()
        busy.wait()
    ratio = loaded[0] / quiet[0]
    print(f"beside a busy process ({options.neighbour_threads} thread(s)): {loaded[0]:6.1f} s wall, {loaded[1]:6.1f} s CPU; load {loaded[2]:.1f} before")
    print(f"ratio {ratio:.2f}× (≤ {GOAL_RATIO:g}×: {'meets' if ratio <= GOAL_RATIO else 'MISSES'} the goal)")
    if options.quijote:
        command = ["seqlab", "compare", "--lang", "en", "--text", options.quijote]
        wall, cpu, load = run(command)
        print(f"{' '.join(command)}: {wall:.1f} s wall, {cpu:.1f} s CPU; load {load:.1f} before "
              f"(< {QUIJOTE_GOAL_S:g} s: {'meets' if wall < QUIJOTE_GOAL_S else 'MISSES'} in wall time, "
              f"{'meets' if cpu < QUIJOTE_GOAL_S else 'MISSES'} in CPU time)")


if __name__ == "__main__":
    main()
