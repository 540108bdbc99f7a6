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

With ``--floor`` it prints instead the floor that the 5 s goal meets with today's figures (issue 34): ``seqlab
compare --no-time``'s float64 work (every reach, both signal paths, the spectral radius) and the perturbation checks of
its traced paths (float64 where compare hands the check a module) — figures its ``--json`` prints, which issue 34 asks
to keep identical — run in this process on the built-in text, each job's CPU time read on the thread that ran it (``time.thread_time``), and the imports of the
command (its CLI module, study and renderer) timed in fresh processes. Even with
the two threads perfectly balanced and nothing else to do, the command cannot end before the imports plus those jobs'
CPU time over the machine's cores; the traced passes, their float64 checks, the counts and the report come on top.

    python benchmarks/compare_speed.py --floor [--repeats 3]
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


def floor(repeats: int) -> None:
    """Print the floor of ``seqlab compare --no-time`` on the built-in text (see the module's docstring)."""
    sys.path.insert(0, str(HERE))
    import torch

    from seqlab.measure import paths
    from seqlab.studies import compare, compare_gated
    from seqlab.text import builtin_text, tokenize

    command = "import seqlab.cli.compare, seqlab.studies.compare, seqlab.render.compare"
    imports = statistics.median(one_run([sys.executable, "-c", command], HERE)[0] for _ in range(repeats))
    spent: dict[str, list[float]] = {}
    kept = compare_gated.AsideWork.__dict__["_run"]  # the staticmethod itself, put back as it was
    run, check = kept.__func__, paths.check_paths

    def timed(job):  # the job's own CPU time, on whichever thread runs it
        name = getattr(job[1], "__name__", repr(job[1]))
        start = time.thread_time()
        try:
            run(job)
        finally:
            spent.setdefault(name, []).append(time.thread_time() - start)

    def timed_check(*args, **kwargs):  # the perturbation check inside a traced pass
        start = time.thread_time()
        try:
            return check(*args, **kwargs)
        finally:
            spent.setdefault("check_paths", []).append(time.thread_time() - start)

    text = builtin_text("en")
    tokens = tokenize(text.content, "o200k_base")
    compare_gated.AsideWork._run = staticmethod(timed)
    paths.check_paths = timed_check
    try:
        totals = []
        for _ in range(repeats):
            spent.clear()
            start = time.process_time()
            compare.run_compare(tokens, text.source, compare.CompareConfig(time=False))
            totals.append((time.process_time() - start, {name: sum(times) for name, times in spent.items()}))
    finally:
        compare_gated.AsideWork._run, paths.check_paths = kept, check
    cores = os.cpu_count() or 1
    process, jobs = min(totals, key=lambda total: sum(total[1].values()))
    float64 = sum(jobs.values())  # the float64 jobs and the checks
    print(f"load average {os.getloadavg()[0]:.2f} on {cores} CPUs; T = {len(tokens)}, torch {torch.__version__}")
    print(f"imports of the command (fresh process, median of {repeats}): {imports:.2f} s")
    for name, seconds in sorted(jobs.items(), key=lambda item: -item[1]):
        print(f"  {name:40} {seconds:6.2f} s of CPU")
    print(f"that work together: {float64:.2f} s of CPU, of {process:.2f} s for run_compare (least of {repeats} runs)")
    bound = imports + float64 / cores
    print(f"floor: {imports:.2f} s + {float64:.2f} s / {cores} cores = {bound:.2f} s against the goal of 5.0 s "
          f"({'below' if bound < 5.0 else 'at or above'} it before any tracing, counting or report)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3, help="runs per command and tree (default 3)")
    parser.add_argument("--against", type=Path, default=None,
                        help="another checkout's src/ to run interleaved with this one (before/after)")
    parser.add_argument("--only", default=None, help="run only the commands whose label contains this text")
    parser.add_argument("--floor", action="store_true",
                        help="print the floor that compare's float64 jobs and checks set against the 5 s goal, nothing else")
    arguments = parser.parse_args()
    repeats = arguments.repeats
    if repeats < 1:
        parser.error(f"--repeats must be >= 1, received {repeats}")
    if arguments.floor:
        floor(repeats)
        return
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
