"""The ``seqlab bench`` sweep on a CUDA device, in under five minutes; its JSON goes to benchmarks/results/.

L8 on a GPU: the recurrence's T steps stay T kernel launches in a row however many streaming
multiprocessors wait, while attention's two products fill them. Run from the repository root:

    python benchmarks/gpu_bench.py [--lengths 16,32,...] [--d-model 512 --d-model 1024]

Writes ``benchmarks/results/gpu-<gpu name>-<date>.json``: the GPU's name (``torch.cuda.get_device_name``),
the PyTorch and CUDA versions, the date, a summary (time ratio recurrence / attention beside the work
ratio at each length, and the crossovers) and the full result with every sample. Exits 1 with a
message, measuring nothing, when no CUDA device is present. Self-contained: it finds ``src/`` itself
when seqlab is not installed.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
#: T = 16 … 16384 (doubling): the GPU crossover sits well past the CPU's.
LENGTHS = tuple(16 * 2**i for i in range(11))
D_MODELS = (512, 1024)
BUDGET_S = 300


def _import_seqlab() -> None:
    try:
        import seqlab  # noqa: F401
    except ImportError:
        sys.path.insert(0, str(ROOT / "src"))


def summary(result) -> dict:
    """Per d and T: medians of nn.RNN and SDPA (and the explicit pair), time ratio beside work ratio d/T."""
    from seqlab.render.json_output import to_jsonable

    rows = []
    for d in result.d_models:
        for T in result.lengths:
            row = {"d_model": d, "T": T, "work_ratio_attention_over_recurrence": T / d,
                   "work_ratio_recurrence_over_attention": d / T}
            for rec, att in (("rnn", "sdpa"), ("loop", "attention")):
                if rec in result.machines and att in result.machines:
                    r, a = (result.point(k, result.threads[-1], d, T).timing.median_s for k in (rec, att))
                    row |= {f"{rec}_s": r, f"{att}_s": a, f"time_ratio_{rec}_over_{att}": r / a}
            rows.append(row)
    return {"points": rows, "crossovers": to_jsonable(result.crossovers)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lengths", default=",".join(map(str, LENGTHS)), help="comma-separated T values")
    parser.add_argument("--d-model", action="append", type=int, help="width d (repeatable; default 512 and 1024)")
    parser.add_argument("--min-run-time", type=float, default=0.1, help="least timed seconds per point")
    parser.add_argument("--out", type=Path, default=RESULTS, help="folder for the JSON")
    args = parser.parse_args(argv)

    import torch

    if not torch.cuda.is_available():
        print("gpu_bench: no CUDA device is present (torch.cuda.is_available() is False); nothing was measured.",
              file=sys.stderr)
        return 1
    _import_seqlab()
    from seqlab.render.json_output import to_jsonable
    from seqlab.studies.bench import BenchConfig, run_bench

    config = BenchConfig(lengths=tuple(int(t) for t in args.lengths.split(",")),
                         d_models=tuple(args.d_model or D_MODELS), threads=("all",), device="cuda",
                         min_run_time=args.min_run_time, min_samples=5)
    name = torch.cuda.get_device_name()
    start = time.perf_counter()

    def progress(done: int, total: int, what: str) -> None:
        print(f"[{done}/{total}] {time.perf_counter() - start:6.1f} s  {what}", file=sys.stderr, flush=True)

    result = run_bench(config, progress)
    elapsed = time.perf_counter() - start
    payload = {"gpu": name, "torch": torch.__version__, "cuda": torch.version.cuda, "date": date.today().isoformat(),
               "elapsed_s": elapsed, "within_budget": elapsed <= BUDGET_S, "summary": summary(result),
               "result": to_jsonable(result)}
    args.out.mkdir(parents=True, exist_ok=True)
    slug = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")
    path = args.out / f"gpu-{slug}-{payload['date']}.json"
    path.write_text(json.dumps(payload, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    for c in result.crossovers:
        print(f"d = {c.d_model}: {c.attention} slower than {c.recurrence} from T ≈ {c.time_T} ({c.time_where}); "
              f"model {c.predicted_T}; work crosses at T = {c.work_T}")
    print(f"{name}: {elapsed:.0f} s; wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
