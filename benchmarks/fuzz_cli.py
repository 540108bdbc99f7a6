"""Fuzz the command line with thousands of argument vectors; count tracebacks, odd exit statuses and hangs.

The vectors are the test suite's (``tests/cli_fuzz.py``: every option of every command, read from the click
commands; paths too long, undecodable or impossible; hostile numbers and names), drawn by Hypothesis from a fixed
seed, ``--examples`` per command, and run in this process with Typer's ``CliRunner``, each bounded by
``cli_fuzz.HANG_S`` seconds, through one command group built once (Typer builds one per run, the most of a
refusal's cost). ``serve`` never starts its server; with ``--stub-work`` (the default) ``report``,
``model`` and ``figure`` also stop where their work begins, as in the suite; ``--real-work`` runs them to the end.

Prints the settings, how many vectors ran per command with their exit statuses, and every failing vector (a
traceback, an exception escaping the command, a status other than 0, 1, 2, 130 or 143, a hang); exits 1 if
there was any.

    nice -n 10 python benchmarks/fuzz_cli.py                 # 12 commands x 450 = 5,400 vectors or so
    python benchmarks/fuzz_cli.py --examples 20 --commands compare,serve
"""

from __future__ import annotations

import argparse
import socket
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import cli_fuzz  # noqa: E402
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import seed as reproducible  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=450, help="vectors per command (default 450)")
    parser.add_argument("--seed", type=int, default=39, help="Hypothesis seed (default 39)")
    parser.add_argument("--commands", default="", help="comma-separated commands (default: all)")
    parser.add_argument("--real-work", action="store_true", help="run report, model and figure to the end")
    args = parser.parse_args()
    import torch

    torch.set_num_threads(1)
    cli_fuzz.check_the_table()
    names = [name for name in args.commands.split(",") if name] or sorted(cli_fuzz.CHEAP)
    work = {name: where for name, where in cli_fuzz.WORK.items() if not args.real_work or name in
            cli_fuzz.NEVER_RUN}
    tmp = Path(tempfile.mkdtemp(prefix="seqlab-fuzz-"))
    cli_fuzz.lay_out(tmp)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    print(f"seed {args.seed}, {args.examples} vectors per command, stubbed work: {sorted(work) or 'none'}, "
          f"each bounded by {cli_fuzz.HANG_S} s; files in {tmp}", flush=True)
    import typer

    from seqlab.cli import app

    group = typer.main.get_command(app)  # built once and reused: Typer's build is most of a refusal's cost
    total, failures, clock = 0, [], time.process_time()
    for name in names:
        statuses: Counter = Counter()
        started = time.process_time()

        @reproducible(args.seed)
        @settings(max_examples=args.examples, database=None, deadline=None, suppress_health_check=list(HealthCheck))
        @given(vector=cli_fuzz.vectors(name, tmp, port))
        def fuzz(vector: list[str]) -> None:
            with cli_fuzz.stubbed(work):
                result = cli_fuzz.run(vector, group)
            why = cli_fuzz.judge(result)
            statuses["fail" if why else result.exit_code] += 1
            if why:
                failures.append((vector, why, result.output[-2000:]))

        fuzz()
        total += sum(statuses.values())
        print(f"{name:8} {sum(statuses.values()):5} vectors  statuses {dict(sorted(statuses.items(), key=str))}  "
              f"{time.process_time() - started:.1f} s CPU", flush=True)
    print(f"\n{total} vectors, {len(failures)} failing, {time.process_time() - clock:.0f} s CPU")
    for vector, why, output in failures[:20]:
        print(f"\nFAIL seqlab {' '.join(map(repr, vector[:]))}\n  {why}\n{output}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
