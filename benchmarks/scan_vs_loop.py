"""Time the modern mixers' forms: a linear recurrence by loop against by scan, and linear attention's three forms.

Issue 15's benchmark: at T = 4096, d = 256 on the CPU (batch 1, float32, forward under no_grad), the
selective (Mamba-style) and the diagonal (S4D/LRU-style) recurrences run as a loop of T steps and as a
Hillis–Steele and a Blelloch scan of ⌈log₂ T⌉ rounds; linear attention runs in its parallel (T² map),
recurrent (T steps) and chunked (T/C chunks) forms. Each form is called once untimed (the first call, timed
apart), then ``--repeats`` calls are timed one by one with ``torch.utils.benchmark.Timer`` at a fixed
thread count; the median and interquartile range of those calls are printed, with the ratios, the
closed-form multiplications of each form (seqlab's unit) and the machine's load (a busy machine reads long).

    python benchmarks/scan_vs_loop.py [--T 4096] [--d 256] [--threads 1] [--repeats 5] [--chunk 64]
    python benchmarks/scan_vs_loop.py --spans    # the measured span (ops in a row) of loop and scans, no timing

Prints only; measures nothing when an argument is out of range (exit 2). Self-contained: it finds ``src/``
itself when seqlab is not installed. Scope of every time: the whole mixer's forward (projections included).
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _import_seqlab() -> None:
    try:
        import seqlab  # noqa: F401
    except ImportError:
        sys.path.insert(0, str(ROOT / "src"))


@dataclass(frozen=True)
class FormTime:
    """One form's times in seconds: median and IQR of the timed calls, the first call apart."""

    group: str
    form: str
    median_s: float
    iqr_s: float
    first_call_s: float
    calls: int
    multiplications: int


def mixer_cases(T: int, d: int, chunk: int, device: str = "cpu") -> list[tuple[str, str, object, int]]:
    """(group, form, module, closed-form multiplications) for every form timed, on ``device``, float32, eval."""
    import torch

    from seqlab.layers.linear_attention import LinearAttention
    from seqlab.layers.linear_recurrence import DiagonalRecurrence, SelectiveRecurrence

    cases = []
    for group, cls in (("selective recurrence", SelectiveRecurrence), ("diagonal recurrence", DiagonalRecurrence)):
        for form, method, name in (("loop", "hillis_steele", "loop"), ("scan", "hillis_steele", "scan (Hillis-Steele)"),
                                   ("scan", "blelloch", "scan (Blelloch)")):
            module = cls(d, form=form, scan_method=method, generator=torch.Generator().manual_seed(0))
            cases.append((group, name, module, module.multiplications(T)))
    for form in ("recurrent", "parallel", "chunked"):  # the sequential form first, as the loop above
        module = LinearAttention(d, form=form, chunk_size=chunk, generator=torch.Generator().manual_seed(0))
        cases.append(("linear attention", form if form != "chunked" else f"chunked (C = {chunk})", module,
                      module.multiplications(T)))
    return [(group, form, module.to(device).eval(), work) for group, form, module, work in cases]


def time_call(fn, *, label: str, threads: int, repeats: int, device: str = "cpu") -> tuple[float, float, float, int]:
    """(median_s, iqr_s, first_call_s, calls): the first call timed alone, then ``repeats`` single timed calls."""
    import time

    import torch
    from torch.utils.benchmark import Measurement, Timer

    with torch.no_grad():
        sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
        sync()
        start = time.perf_counter()
        fn()
        sync()
        first = time.perf_counter() - start
        timer = Timer(stmt="fn()", globals={"fn": fn}, num_threads=threads, label=label)
        merged = Measurement.merge([timer.timeit(1) for _ in range(repeats)])[0]
    return float(merged.median), float(merged.iqr), first, len(merged.raw_times)


def run(T: int, d: int, threads: int, repeats: int, chunk: int) -> list[FormTime]:
    """Every form of :func:`mixer_cases` timed on the CPU at (1, T, d)."""
    import torch

    x = torch.randn(1, T, d, generator=torch.Generator().manual_seed(1))
    times = []
    for group, form, module, work in mixer_cases(T, d, chunk):
        median, iqr, first, calls = time_call(lambda m=module: m(x), label=f"{group} {form}", threads=threads,
                                              repeats=repeats)
        times.append(FormTime(group, form, median, iqr, first, calls, work))
        print(f"  timed {group}, {form}: {median * 1e3:.1f} ms", file=sys.stderr, flush=True)
    return times


SPAN_LENGTHS = (16, 32, 64, 128, 256)


def span_lines() -> list[str]:
    """The selective recurrence's measured span (ops in a row, seqlab's tracer) at T = 16 … 256, loop and scans,
    with the growth fit (power law or log, :func:`seqlab.fit.fit_growth`). Not a time: it needs no quiet machine."""
    import torch

    from seqlab.fit import fit_growth
    from seqlab.layers.linear_recurrence import SelectiveRecurrence
    from seqlab.measure.trace import measure_span

    lines = []
    for form, method in (("loop", "hillis_steele"), ("scan", "hillis_steele"), ("scan", "blelloch")):
        layer = SelectiveRecurrence(4, form=form, scan_method=method, generator=torch.Generator().manual_seed(0))
        spans = [measure_span(layer, torch.randn(1, T, 4)).ops for T in SPAN_LENGTHS]
        fit = fit_growth(SPAN_LENGTHS, spans)
        name = "loop" if form == "loop" else f"scan ({method})"
        lines.append(f"span of {name:<21} T = {', '.join(map(str, SPAN_LENGTHS))}: {spans}; "
                     f"fit {fit.model}, exponent of T {fit.exponent:.2f}")
    return lines


def _load(value: float | None) -> str:
    return "unknown" if value is None else f"{value:.1f}"


def _positive(name: str, value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        number = 0
    if number < 1:
        raise argparse.ArgumentTypeError(f"{name} must be an integer >= 1, received {value!r}")
    return number


def report(times: list[FormTime]) -> list[str]:
    """Lines: each form's median ± IQR and multiplications, then each group's ratios against its first form."""
    lines = [f"{'mixer':<22} {'form':<22} {'median ms':>10} {'IQR ms':>8} {'first ms':>9} {'mults':>14}"]
    for t in times:
        lines.append(f"{t.group:<22} {t.form:<22} {t.median_s * 1e3:>10.2f} {t.iqr_s * 1e3:>8.2f} "
                     f"{t.first_call_s * 1e3:>9.2f} {t.multiplications:>14,}")
    lines.append("ratios (median time of the sequential form / this form; > 1: this form is faster):")
    for group in dict.fromkeys(t.group for t in times):
        rows = [t for t in times if t.group == group]
        lines.extend(f"  {group}: {rows[0].form} / {t.form} = {rows[0].median_s / t.median_s:.2f}" for t in rows[1:])
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--T", type=lambda v: _positive("--T", v), default=4096, help="positions (default 4096)")
    parser.add_argument("--d", type=lambda v: _positive("--d", v), default=256, help="width d_model = d_state = "
                        "d_k = d_v (default 256)")
    parser.add_argument("--threads", type=lambda v: _positive("--threads", v), default=1,
                        help="intra-op CPU threads while timing (default 1)")
    parser.add_argument("--repeats", type=lambda v: _positive("--repeats", v), default=5,
                        help="timed calls per form (default 5; at least 3 for an IQR)")
    parser.add_argument("--chunk", type=lambda v: _positive("--chunk", v), default=64,
                        help="chunk size C of chunked linear attention (default 64)")
    parser.add_argument("--spans", action="store_true", help="print only the measured spans (loop vs scans) "
                        "at T = 16 … 256 and their fits; no timing")
    args = parser.parse_args(argv)
    if args.repeats < 3:
        parser.error(f"argument --repeats: must be at least 3 for an interquartile range, received {args.repeats}")
    _import_seqlab()
    import torch

    from seqlab.errors import SeqlabError
    from seqlab.measure.timing import machine_load

    if args.spans:
        print("\n".join(span_lines()))
        return 0
    load = machine_load()
    print(f"scan_vs_loop: T = {args.T}, d = {args.d}, batch 1, float32, CPU, {args.threads} thread(s), "
          f"{args.repeats} timed calls per form; torch {torch.__version__}; load {_load(load.load_1min)} on {load.cpus} "
          f"CPUs{' (busy: times read long)' if load.busy else ''}")
    try:
        times = run(args.T, args.d, args.threads, args.repeats, args.chunk)
    except SeqlabError as error:
        print(f"scan_vs_loop: {error}", file=sys.stderr)
        return 2
    print("\n".join(report(times)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
