"""The ``seqlab bench`` sweep on a CUDA device, in under five minutes; its JSON goes to benchmarks/results/.

L8 on a GPU: the recurrence's T steps stay T kernel launches in a row however many streaming
multiprocessors wait, while attention's two products fill them. Run from the repository root:

    python benchmarks/gpu_bench.py [--lengths 16,32,...] [--d-model 512 --d-model 1024]
                                   [--mixer-lengths 256,1024,4096] [--mixer-d 256] [--mixers-only]
    python benchmarks/gpu_bench.py --dry-run     # on a CPU: the mixer comparison at tiny sizes, nothing written

Writes ``benchmarks/results/gpu-<gpu name>-<date>.json``: the GPU's name (``torch.cuda.get_device_name``),
the PyTorch and CUDA versions, the date, a summary (time ratio recurrence / attention beside the work
ratio at each length, and the crossovers), the full result with every sample, and (issue 15) ``mixers``:
at a few T, the selective recurrence by loop (T steps) and by scan (⌈log₂ T⌉ rounds, Hillis–Steele and
Blelloch), chunked linear attention and causal attention through SDPA, each the whole mixer's forward
(projections included, batch 1, float32), with the median and IQR of single timed calls and the ratios
loop / scan and scan / SDPA. Exits 1 with a message, measuring nothing, when no CUDA device is present
(``--dry-run`` excepted). Self-contained: it finds ``src/`` itself when seqlab is not installed.
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
#: The mixer comparison (issue 15): T where scan, loop and SDPA are timed, at d = 256.
MIXER_LENGTHS = (256, 1024, 4096)
MIXER_D = 256
#: The dry run's sizes: enough to run every code path on a CPU in seconds.
DRY_LENGTHS, DRY_D = (16, 32), 8


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


def _causal_sdpa(d: int):
    """Causal softmax attention as one mixer: bias-free W_q, W_k, W_v, the fused SDPA kernel, W_o."""
    import torch
    import torch.nn.functional as F

    from seqlab.layers.mixer_common import linear

    class CausalSDPA(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            generator = torch.Generator().manual_seed(0)
            self.q, self.k, self.v, self.o = (linear(d, d, generator, torch.float32) for _ in range(4))

        def forward(self, x):  # (1, T, d) -> (1, T, d)
            return self.o(F.scaled_dot_product_attention(self.q(x), self.k(x), self.v(x), is_causal=True))

    return CausalSDPA()


def mixer_comparison(lengths: tuple[int, ...], d: int, device: str, repeats: int = 5) -> list[dict]:
    """Per T: loop, Hillis–Steele scan, Blelloch scan (selective recurrence), chunked linear attention and causal
    SDPA, each timed (median, IQR, first call) on ``device`` with one CPU thread; then the ratios loop / scan and
    scan / SDPA."""
    import torch

    here = str(Path(__file__).resolve().parent)
    if here not in sys.path:
        sys.path.insert(0, here)
    from scan_vs_loop import time_call

    from seqlab.layers.linear_attention import LinearAttention
    from seqlab.layers.linear_recurrence import SelectiveRecurrence

    rows = []
    for T in lengths:
        seed = {"generator": torch.Generator().manual_seed(0)}  # one weight draw per module, the same for each form
        forms = {"loop": SelectiveRecurrence(d, form="loop", **seed),
                 "scan_hillis_steele": SelectiveRecurrence(d, form="scan", generator=torch.Generator().manual_seed(0)),
                 "scan_blelloch": SelectiveRecurrence(d, form="scan", scan_method="blelloch",
                                                      generator=torch.Generator().manual_seed(0)),
                 "linear_attention_chunked": LinearAttention(d, form="chunked", chunk_size=64, **seed),
                 "sdpa_causal": _causal_sdpa(d)}
        x = torch.randn(1, T, d, generator=torch.Generator().manual_seed(1)).to(device)
        row = {"T": T, "d_model": d, "device": device}
        for name, module in forms.items():
            module = module.to(device).eval()
            median, iqr, first, calls = time_call(lambda m=module: m(x), label=name, threads=1, repeats=repeats,
                                                  device=device)  # one CPU thread: it only launches kernels
            row |= {f"{name}_median_s": median, f"{name}_iqr_s": iqr, f"{name}_first_call_s": first}
        row |= {"time_ratio_loop_over_scan": row["loop_median_s"] / row["scan_hillis_steele_median_s"],
                "time_ratio_scan_over_sdpa": row["scan_hillis_steele_median_s"] / row["sdpa_causal_median_s"]}
        rows.append(row)
    return rows


def mixer_lines(rows: list[dict]) -> list[str]:
    """One printed line per T: medians in ms and the two ratios."""
    return [f"T = {r['T']}, d = {r['d_model']} ({r['device']}): loop {r['loop_median_s'] * 1e3:.2f} ms, scan "
            f"{r['scan_hillis_steele_median_s'] * 1e3:.2f} ms (Blelloch {r['scan_blelloch_median_s'] * 1e3:.2f}), "
            f"chunked linear attention {r['linear_attention_chunked_median_s'] * 1e3:.2f} ms, SDPA "
            f"{r['sdpa_causal_median_s'] * 1e3:.2f} ms; loop / scan {r['time_ratio_loop_over_scan']:.2f}, "
            f"scan / SDPA {r['time_ratio_scan_over_sdpa']:.2f}" for r in rows]


def _lengths(text: str) -> tuple[int, ...]:
    try:
        values = tuple(int(t) for t in text.split(","))
    except ValueError:
        values = ()
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers >= 1, received {text!r}")
    return values


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lengths", default=",".join(map(str, LENGTHS)), help="comma-separated T values")
    parser.add_argument("--d-model", action="append", type=int, help="width d (repeatable; default 512 and 1024)")
    parser.add_argument("--min-run-time", type=float, default=0.1, help="least timed seconds per point")
    parser.add_argument("--out", type=Path, default=RESULTS, help="folder for the JSON")
    parser.add_argument("--mixer-lengths", type=_lengths, default=MIXER_LENGTHS,
                        help="comma-separated T of the scan / loop / SDPA comparison (default 256,1024,4096)")
    parser.add_argument("--mixer-d", type=int, default=MIXER_D, help="width d of that comparison (default 256)")
    parser.add_argument("--mixers-only", action="store_true", help="skip the seqlab bench sweep")
    parser.add_argument("--dry-run", action="store_true",
                        help="on the CPU at T = 16, 32 and d = 8: run the mixer comparison's code, write nothing")
    args = parser.parse_args(argv)
    if args.mixer_d < 1:
        parser.error(f"argument --mixer-d: must be an integer >= 1, received {args.mixer_d}")

    import torch

    if args.dry_run:
        _import_seqlab()
        print("gpu_bench --dry-run: the mixer comparison on the CPU at tiny sizes (no GPU used, nothing written)")
        print("\n".join(mixer_lines(mixer_comparison(DRY_LENGTHS, DRY_D, "cpu", repeats=3))))
        return 0
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

    mixers = mixer_comparison(args.mixer_lengths, args.mixer_d, "cuda")
    print("\n".join(mixer_lines(mixers)))
    result = None if args.mixers_only else run_bench(config, progress)
    elapsed = time.perf_counter() - start
    payload = {"gpu": name, "torch": torch.__version__, "cuda": torch.version.cuda, "date": date.today().isoformat(),
               "elapsed_s": elapsed, "within_budget": elapsed <= BUDGET_S, "mixers": mixers,
               "summary": None if result is None else summary(result),
               "result": None if result is None else to_jsonable(result)}
    args.out.mkdir(parents=True, exist_ok=True)
    slug = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")
    path = args.out / f"gpu-{slug}-{payload['date']}.json"
    path.write_text(json.dumps(payload, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    for c in (() if result is None else result.crossovers):
        firsts = ", ".join(f"T={x.T} {x.first}" for x in c.decisions)
        print(f"d = {c.d_model}: {c.attention} vs {c.recurrence}: time crossover {c.time_where} "
              f"{c.time_bracket or c.reason or ''} (decided: {firsts}); model (not measured) {c.predicted_T}; "
              f"work crosses at T = {c.work_T}")
    print(f"{name}: {elapsed:.0f} s; wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
