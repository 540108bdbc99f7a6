"""The README's test command on a machine whose cores are all kept busy by another load (issue 22, not a test).

Issue 22 asks that ``python -m pytest`` pass from a clean clone while another process keeps both cores busy:
a test must never fail for the machine's speed. This script starts that load — one spinning process per core
(``--spinners``, default ``os.cpu_count()``), each holding one core with pure-Python arithmetic or, with
``--kind numpy``, with one-thread 256 × 256 matrix products — waits until they run, then runs
``python -m pytest`` from the repository root with whatever follows ``--`` passed through, streams its output,
and stops the load however the run ends (Ctrl-C included). It reports the wall time, pytest's exit status and
summary line, the load average before and after, and each spinner's CPU seconds over its wall time (how busy
it kept its core); ``--json FILE`` also writes these as JSON. The exit status is pytest's. Run from anywhere:

    python benchmarks/busy_suite.py                      # the whole suite, as the README runs it
    python benchmarks/busy_suite.py -- -n 0 -k seed      # a few tests, arguments passed to pytest
    python benchmarks/busy_suite.py --spinners 2 --kind numpy --json busy.json
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import subprocess
import sys
import time
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[1]
#: One core's worth of work, forever: pure-Python arithmetic (holds the GIL and one core, allocates nothing).
SPIN_PYTHON = "x = 1\nwhile True:\n    x = (x * 1_103_515_245 + 12_345) % 2_147_483_648\n"
#: The same with numpy: one-thread matrix products (the BLAS thread count is fixed by the environment below).
SPIN_NUMPY = ("import numpy as np\na = np.random.default_rng(0).standard_normal((256, 256))\n"
              "while True:\n    a = np.tanh(a @ a)\n")
#: One thread per spinner, whatever BLAS numpy links: a spinner holds one core, not all of them.
ONE_THREAD = {name: "1" for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                                     "BLIS_NUM_THREADS", "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS")}


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU seconds of a running process (Linux ``/proc``); None where that cannot be read."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime (fields 14, 15)
    except (OSError, ValueError, IndexError):
        return None


def load_average() -> float | None:
    try:
        return round(os.getloadavg()[0], 2)
    except (AttributeError, OSError):
        return None


def start_load(spinners: int, kind: str) -> list[subprocess.Popen]:
    """``spinners`` processes, each spinning on one core until stopped."""
    code = SPIN_NUMPY if kind == "numpy" else SPIN_PYTHON
    env = {**os.environ, **ONE_THREAD}
    return [subprocess.Popen([sys.executable, "-c", code], env=env, stdin=subprocess.DEVNULL)
            for _ in range(spinners)]


def wait_until_spinning(load: list[subprocess.Popen], timeout_s: float = 60.0) -> None:
    """Return once every spinner has used CPU (its interpreter started and its loop runs); exit if one died."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for process in load:
            if process.poll() is not None:
                sys.exit(f"a load process exited with status {process.returncode} before the suite began")
        used = [cpu_seconds(process.pid) for process in load]
        if all(u is None or u > 0.2 for u in used):  # None: no /proc, nothing to wait on
            return
        time.sleep(0.1)
    sys.exit(f"the load processes did not start spinning within {timeout_s:g} s")


def stop_load(load: list[subprocess.Popen]) -> None:
    """Terminate every spinner, then kill any that has not exited within 5 s."""
    for process in load:
        if process.poll() is None:
            process.terminate()
    for process in load:
        try:
            process.wait(5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def run_suite(pytest_args: list[str]) -> tuple[int, float, list[str]]:
    """(exit status, wall seconds, last lines of output) of ``python -m pytest ARGS`` in the repository root;
    its output is streamed to this terminal as it comes."""
    command = [sys.executable, "-m", "pytest", *pytest_args]
    tail: collections.deque[str] = collections.deque(maxlen=40)
    start = time.perf_counter()
    with subprocess.Popen(command, cwd=REPOSITORY, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          bufsize=1) as suite:
        assert suite.stdout is not None
        for line in suite.stdout:
            sys.stdout.write(line)
            tail.append(line.rstrip("\n"))
        status = suite.wait()
    return status, time.perf_counter() - start, list(tail)


def summary_line(tail: list[str]) -> str | None:
    """pytest's closing summary (``=== 12 passed, 1 failed in 3.2s ===``), without its rule of ``=``."""
    for line in reversed(tail):
        text = line.strip().strip("=").strip()
        if " in " in text and any(word in text for word in ("passed", "failed", "error", "skipped", "deselected",
                                                            "no tests ran")):
            return text
    return None


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    own, pytest_args = (argv[:argv.index("--")], argv[argv.index("--") + 1:]) if "--" in argv else (argv, [])
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     epilog="Arguments after -- go to pytest unchanged.")
    parser.add_argument("--spinners", type=int, default=os.cpu_count() or 2,
                        help="load processes, one core each (default: os.cpu_count(), every core busy)")
    parser.add_argument("--kind", choices=("python", "numpy"), default="python",
                        help="what each load process spins on (default python)")
    parser.add_argument("--json", metavar="FILE", help="also write the result as JSON to FILE")
    options = parser.parse_args(own)
    if options.spinners < 1:
        parser.error(f"--spinners must be at least 1, received {options.spinners}")

    load_before = load_average()
    load = start_load(options.spinners, options.kind)
    try:
        wait_until_spinning(load)
        began = time.monotonic()
        spun_before = [cpu_seconds(process.pid) for process in load]
        status, wall_s, tail = run_suite(pytest_args)
        spun = [None if a is None or b is None else round(b - a, 1)
                for a, b in zip(spun_before, (cpu_seconds(process.pid) for process in load), strict=True)]
        held_s = time.monotonic() - began
        load_after = load_average()
    finally:
        stop_load(load)

    result = {"command": " ".join(["python", "-m", "pytest", *pytest_args]), "cwd": str(REPOSITORY),
              "exit_status": status, "passed": status == 0, "summary": summary_line(tail), "wall_s": round(wall_s, 1),
              "cpus": os.cpu_count(), "spinners": options.spinners, "kind": options.kind,
              "spinner_cpu_s": spun, "spinner_busy_share": [None if s is None else round(s / held_s, 2) for s in spun],
              "load_1min_before": load_before, "load_1min_after": load_after}
    print(f"\nbusy_suite: {result['command']} beside {options.spinners} spinning {options.kind} process(es) on "
          f"{result['cpus']} CPU(s): exit status {status} ({'passed' if status == 0 else 'did NOT pass'}), "
          f"{wall_s:.1f} s wall; {result['summary'] or 'no pytest summary line'}")
    print(f"busy_suite: each spinner's CPU time over the run: {spun} s (share of its core: "
          f"{result['spinner_busy_share']}); load average {load_before} before, {load_after} at the end")
    if options.json:
        Path(options.json).write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return status


if __name__ == "__main__":
    sys.exit(main())
