"""Speed goals of the foundation, measured (not a test): ``import seqlab`` < 1 s, ``seqlab compare`` < 5 s (issue 34).

Runs each command in a fresh interpreter several times and prints, per command, the median wall time, its spread,
the ratio to its goal (a ratio below 1 meets the goal) and the median CPU time the process used (user + system, its
threads together: on a shared machine the wall time moves with the load, the CPU time much less). The machine's
load is printed first; above about 0.5 per CPU the wall times mean little.

With ``--against SRC`` (another checkout's ``src``, e.g. the commit before a change) each command also runs on that
tree, the two interleaved run by run (A, B, A, B, …) so that both meet the same machine, and the ratio of the
medians (this tree / the other) is printed for wall and CPU time. Run from the repository root after the README's
set-up:

    python benchmarks/compare_speed.py [--repeats 3] [--against ../main/src]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parents[1] / "src"
GOALS = {
    "import seqlab": ([sys.executable, "-c", "import seqlab"], 1.0),
    "seqlab compare (built-in text)": ([sys.executable, "-m", "seqlab", "compare", "--lang", "en"], 5.0),
    "seqlab compare --no-time": ([sys.executable, "-m", "seqlab", "compare", "--lang", "en", "--no-time"], 5.0),
}


def one_run(command: list[str], src: Path) -> tuple[float, float]:
    """(wall seconds, CPU seconds: user + system of the child and its threads) of one run of ``command`` with
    ``src`` first on the import path, start to exit, in a fresh process."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(src), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, env=env)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3, help="runs per command and tree (default 3)")
    parser.add_argument("--against", type=Path, default=None,
                        help="another checkout's src/ to run interleaved with this one (before/after)")
    parser.add_argument("--only", default=None, help="run only the commands whose label contains this text")
    arguments = parser.parse_args()
    repeats = arguments.repeats
    if repeats < 1:
        parser.error(f"--repeats must be >= 1, received {repeats}")
    trees = {"this": HERE} | ({"against": arguments.against.resolve()} if arguments.against else {})
    load = os.getloadavg()[0]
    print(f"load average {load:.2f} on {os.cpu_count()} CPUs (wall times mean little above about 0.5 per CPU)")
    print(f"{'what':34} {'tree':8} {'median':>9} {'min':>9} {'max':>9} {'goal':>7} {'ratio':>7} {'CPU':>8}")
    for label, (command, goal) in GOALS.items():
        if arguments.only is not None and arguments.only not in label:
            continue
        runs: dict[str, list[tuple[float, float]]] = {name: [] for name in trees}
        for _ in range(repeats):
            for name, src in trees.items():  # interleaved: each round meets the same machine
                runs[name].append(one_run(command, src))
        medians = {}
        for name, measured in runs.items():
            walls, cpus = [w for w, _ in measured], [c for _, c in measured]
            median, cpu = statistics.median(walls), statistics.median(cpus)
            medians[name] = (median, cpu)
            print(f"{label:34} {name:8} {median:8.2f}s {min(walls):8.2f}s {max(walls):8.2f}s {goal:6.1f}s "
                  f"{median / goal:7.2f} {cpu:7.2f}s  {'meets the goal' if median < goal else 'MISSES the goal'}")
        if len(medians) == 2:
            (wall_a, cpu_a), (wall_b, cpu_b) = medians["this"], medians["against"]
            print(f"{'':34} {'this/against':>12}: wall {wall_a / wall_b:.2f}x, CPU {cpu_a / cpu_b:.2f}x")
    print(f"load average {os.getloadavg()[0]:.2f} at the end")


if __name__ == "__main__":
    main()
