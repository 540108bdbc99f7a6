"""Do two runs in a row ever say opposite things about who finishes first? (issue 23, not a test).

Runs the timing study of ``seqlab compare`` (nn.RNN against SDPA and against ``nn.MultiheadAttention``) and of
``seqlab check`` L8 (four scopes on 1 and n threads, the thread speed-ups, the control) ``--runs`` times in a
row (default 2), optionally beside a busy machine (``--spinners N``: N processes spinning on one core each, as
``benchmarks/busy_suite.py`` starts them), and prints every run's outcome per comparison — decided one way, a
tie, or not judged, with the per-round ratio's median and quartiles — then whether any two consecutive runs
gave opposite outcomes (one side first, then the other; holds, then does not hold). Both studies decide by
``seqlab.measure.rounds.decide``: by its rule only a change of the machine itself between runs, never noise,
should make two runs opposite. Quick sizes by default (``--full``: compare's built-in sizes, check's --full).

    python benchmarks/consecutive_verdicts.py                  # quick, the machine as it is
    python benchmarks/consecutive_verdicts.py --spinners 1     # beside one busy core
    python benchmarks/consecutive_verdicts.py --threads 2      # L8's thread comparisons too, on a busy machine
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # busy_suite, beside this file

from busy_suite import load_average, start_load, stop_load, wait_until_spinning  # noqa: E402

#: A decided outcome and its opposite.
OPPOSITE = {"a_first": "b_first", "b_first": "a_first", "attention_first": "recurrence_first",
            "recurrence_first": "attention_first", "attention_scales": "recurrence_scales",
            "recurrence_scales": "attention_scales", "holds": "does_not_hold", "does_not_hold": "holds"}


def compare_outcomes(full: bool, threads: int | None) -> dict[str, str]:
    """compare's decisions: 'nn.RNN vs SDPA' -> 'outcome (×median, ×low–high)'."""
    from seqlab.studies.compare import CompareConfig, run_compare
    from seqlab.text import synthetic_tokens

    T, d = (744, 512) if full else (128, 64)
    result = run_compare(synthetic_tokens(T), f"synthetic ({T} tokens)",
                         CompareConfig(d_model=d, sensitivity_draws=0, min_run_time=0.2, threads=threads))
    return {f"compare {d_.a} vs {d_.b} on {result.threads} thr": _decision(d_.outcome, d_) for d_ in
            result.time_decisions}


def check_outcomes(full: bool, threads: int | None) -> dict[str, str]:
    """check L8's verdict and classes: 'L8 sdpa @1' -> 'class (×median, ×low–high)'."""
    from seqlab.studies.check import CheckConfig, run_check

    (l8,) = run_check(CheckConfig(claims=("L8",), full=full, threads=threads)).checks
    v = l8.values
    out = {"L8 verdict": l8.verdict}
    for threads, scopes in v["comparisons"].items():
        for scope, entry in scopes.items():
            out[f"L8 {scope} @{threads}"] = _entry(entry["class"], entry)
    for name in ("control", "recurrence", "sdpa"):
        if name in v["speedups"]:
            entry = v["speedups"][name]
            out[f"L8 speed-up {name} 1->{v['threads'][-1]}"] = _entry(entry["outcome"], entry)
    out["L8 scaling"] = v["scaling"] + ("" if v["advantage"] is None else
                                        " " + _entry("", v["advantage"]).strip())
    return out


def _decision(outcome: str, d) -> str:
    return f"{outcome} (x{d.ratio:.3g}, x{d.low:.3g}-{d.high:.3g})"


def _entry(outcome: str, entry: dict) -> str:
    return f"{outcome} (x{entry['ratio']:.3g}, x{entry['low']:.3g}-{entry['high']:.3g})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=2, help="runs in a row (default 2)")
    parser.add_argument("--spinners", type=int, default=0, help="busy processes beside the runs (default 0)")
    parser.add_argument("--kind", choices=("python", "numpy"), default="python", help="what a spinner runs")
    parser.add_argument("--threads", type=int, default=None,
                        help="timing threads of both studies (default: timing_threads_default, as the commands)")
    parser.add_argument("--full", action="store_true", help="compare at T = 744, d = 512; check L8 --full sizes")
    args = parser.parse_args()

    import torch

    from seqlab.measure.rounds import timing_threads_default

    started = time.perf_counter()
    load = start_load(args.spinners, args.kind) if args.spinners else []
    try:
        if load:
            wait_until_spinning(load)
        print(f"date {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC; {platform.processor() or platform.machine()}, "
              f"{os.cpu_count()} CPUs; PyTorch {torch.__version__}; spinners {args.spinners} ({args.kind}); "
              f"{'full' if args.full else 'quick'} sizes; --threads {args.threads}")
        print(f"load average before: {load_average()}; timing threads by default: {timing_threads_default()}")
        runs = []
        for k in range(args.runs):
            outcomes = {**compare_outcomes(args.full, args.threads), **check_outcomes(args.full, args.threads)}
            runs.append(outcomes)
            print(f"run {k + 1} done (load average {load_average()})")
    finally:
        stop_load(load)
    keys = list(dict.fromkeys(key for run in runs for key in run))
    width = max(map(len, keys))
    print()
    opposite = []
    for key in keys:
        cells = [run.get(key, "-") for run in runs]
        print(f"{key:<{width}}  " + "  |  ".join(cells))
        heads = [cell.split(" ")[0] for cell in cells]
        for first, second in zip(heads, heads[1:]):
            if OPPOSITE.get(first) == second:
                opposite.append(key)
    print()
    print(f"opposite outcomes between consecutive runs: {', '.join(opposite) if opposite else 'none'}")
    print(f"load average after: {load_average()}; {time.perf_counter() - started:.1f} s in all")


if __name__ == "__main__":
    main()
