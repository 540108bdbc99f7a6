"""The CPU measurements the README quotes: T = 1000, d = 512 at 1 thread and at all, and the crossover sweep.

Run from the repository root on a quiet machine (nothing else running: the all-threads figures suffer
most from a busy core):

    python benchmarks/cpu_bench.py [--lengths 16,32,...] [--quick]

Writes ``benchmarks/results/cpu-<date>.json``: the CPU's name, PyTorch version, date, thread counts,
a README summary (at T = 1000, d = 512 and per thread setting: the medians of nn.RNN and SDPA and of
the explicit pair, the time ratio recurrence / attention, and the work ratio — attention does
1000/512 = 1.95 times the multiplications, so recurrence / attention work is 0.512), the crossovers of
the sweep, and both full results with every sample. Self-contained: finds ``src/`` when seqlab is not
installed.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
#: The README's point (L9's T = 1000 at the paper's d = 512).
README_T, README_D = 1000, 512
#: The sweep: T = 16 … 8192, one doubling past the default so the 1-thread crossover is inside it.
LENGTHS = tuple(16 * 2**i for i in range(10))


def _import_seqlab() -> None:
    try:
        import seqlab  # noqa: F401
    except ImportError:
        sys.path.insert(0, str(ROOT / "src"))


def readme_rows(result) -> list[dict]:
    """One row per thread setting at T = 1000, d = 512: medians, time ratio and work ratio."""
    rows = []
    for threads in result.threads:
        row = {"threads": threads, "T": README_T, "d_model": README_D,
               "work_ratio_attention_over_recurrence": README_T / README_D,
               "work_ratio_recurrence_over_attention": README_D / README_T}
        for rec, att in (("rnn", "sdpa"), ("loop", "attention")):
            r, a = (result.point(k, threads, README_D, README_T).timing for k in (rec, att))
            row |= {f"{rec}_median_s": r.median_s, f"{rec}_iqr_s": r.iqr_s, f"{att}_median_s": a.median_s,
                    f"{att}_iqr_s": a.iqr_s, f"time_ratio_{rec}_over_{att}": r.median_s / a.median_s}
        rows.append(row)
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lengths", default=",".join(map(str, LENGTHS)), help="comma-separated T of the sweep")
    parser.add_argument("--quick", action="store_true", help="short runs, to try the script (not for the README)")
    parser.add_argument("--out", type=Path, default=RESULTS, help="folder for the JSON")
    args = parser.parse_args(argv)
    _import_seqlab()
    import torch

    from seqlab.render.json_output import to_jsonable
    from seqlab.studies.bench import BenchConfig, run_bench

    start = time.perf_counter()

    def progress(done: int, total: int, what: str) -> None:
        print(f"[{done}/{total}] {time.perf_counter() - start:6.1f} s  {what}", file=sys.stderr, flush=True)

    point_time, sweep_time = (0.05, 0.05) if args.quick else (1.0, 0.2)
    point = run_bench(BenchConfig(lengths=(README_T,), d_models=(README_D,),
                                  machines=("rnn", "loop", "sdpa", "attention"), min_run_time=point_time,
                                  min_samples=10), progress)
    lengths = (64, 512, 2048) if args.quick else tuple(int(t) for t in args.lengths.split(","))
    sweep = run_bench(BenchConfig(lengths=lengths, d_models=(README_D,), min_run_time=sweep_time), progress)
    payload = {"cpu": point.device_name, "cpu_count": point.cpu_count, "threads": list(point.threads),
               "torch": torch.__version__, "date": date.today().isoformat(), "quick": args.quick,
               "elapsed_s": time.perf_counter() - start, "readme": readme_rows(point),
               "crossovers": to_jsonable(sweep.crossovers), "point": to_jsonable(point), "sweep": to_jsonable(sweep)}
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / f"cpu-{payload['date']}{'-quick' if args.quick else ''}.json"
    path.write_text(json.dumps(payload, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    for row in payload["readme"]:
        print(f"{row['threads']} threads, T = {README_T}, d = {README_D}: nn.RNN / SDPA time "
              f"{row['time_ratio_rnn_over_sdpa']:.3g} (loop / explicit {row['time_ratio_loop_over_attention']:.3g}); "
              f"work recurrence / attention {row['work_ratio_recurrence_over_attention']:.3g} "
              f"(attention does {row['work_ratio_attention_over_recurrence']:.3g}x)")
    for c in sweep.crossovers:
        firsts = ", ".join(f"T={x.T} {x.first}" for x in c.decisions)
        print(f"{c.threads} threads: time crossover {c.time_where} {c.time_bracket or c.reason or ''} (decided: "
              f"{firsts}); model (not measured) {c.predicted_T}; work crosses at T = {c.work_T}")
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
