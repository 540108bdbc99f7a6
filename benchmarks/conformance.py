"""seqlab's engine over PyTorch's own op and module databases: coverage and mismatches (issue 21, item 5; not a test).

Every CPU float32 sample of every ``op_db`` entry and every ``module_db`` entry (eval mode) whose input is a
float tensor, through ``measure_paths`` at element level (each input element a source) against the float64
Jacobian, and ``count_multiplications`` against ``FlopCounterMode``; the definitions (MISSED, EXTRA, the
coverage classes, what is skipped and why) are in ``tests/conformance.py``'s docstring. Prints the counts per
coverage class, then every MISSED/EXTRA mismatch, every crash, every work difference and the refused ops by
name. Run from the repository root:

    python benchmarks/conformance.py [--ops a,b] [--no-modules] [--no-ops] [--samples N] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
import warnings
from collections import Counter

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests"))

import conformance  # noqa: E402 - tests/conformance.py, the harness


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", help="comma-separated entry names (op_db 'name' or 'name.variant', module_db "
                                      "'nn.Linear'); default: every entry")
    parser.add_argument("--no-ops", action="store_true", help="leave out op_db")
    parser.add_argument("--no-modules", action="store_true", help="leave out module_db")
    parser.add_argument("--samples", type=int, default=None, help="the most samples per entry (default: all)")
    parser.add_argument("--max-input", type=int, default=conformance.MAX_INPUT,
                        help=f"skip samples whose input has more elements (default {conformance.MAX_INPUT})")
    parser.add_argument("--max-output", type=int, default=conformance.MAX_OUTPUT,
                        help=f"skip samples whose outputs have more elements (default {conformance.MAX_OUTPUT})")
    parser.add_argument("--seconds", type=float, default=60.0, help="skip a sample that runs longer (default 60)")
    parser.add_argument("--level", choices=("auto", "element", "position"), default="auto",
                        help="measure_paths' positions=: its own choice (auto, the default), False or True")
    parser.add_argument("--no-work", action="store_true", help="leave out the work comparison")
    parser.add_argument("--json", help="write every sample's result to this file")
    parser.add_argument("--progress", action="store_true", help="print one line per entry as it starts")
    parser.add_argument("--in-process", action="store_true",
                        help="measure in this process (default: in a worker process, restarted when an op kills it)")
    args = parser.parse_args(argv)
    if args.samples is not None and args.samples < 1:
        parser.error(f"Invalid value for '--samples': expected at least 1, received {args.samples}")
    conformance.MAX_INPUT, conformance.MAX_OUTPUT = args.max_input, args.max_output
    names = None if not args.ops else [n.strip() for n in args.ops.split(",") if n.strip()]
    level = {"element": False, "position": True, "auto": None}[args.level]

    start, results, stopped = time.perf_counter(), [], None

    def take(result) -> None:
        results.append(result)
        if args.progress and (len(results) == 1 or results[-2].entry != result.entry):
            print(f"  {time.perf_counter() - start:7.1f} s  {result.kind} {result.entry}", flush=True)

    def stop(signum, frame):
        raise _Stopped(signal.Signals(signum).name)

    options = (level, args.seconds, not args.no_work, args.max_input, args.max_output, args.samples)
    previous = signal.signal(signal.SIGTERM, stop)  # `timeout` ends a long run: report what was measured
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the databases' and the ops' own notes (each sample records its own)
            entries = _entries(names, not args.no_ops, not args.no_modules)
            if args.in_process:
                for kind, name in entries:
                    for case in _cases(kind, name, args.samples):
                        take(conformance.run_case(case, level, args.seconds, not args.no_work))
            else:
                _isolated(entries, options, take)
    except (_Stopped, KeyboardInterrupt) as why:
        stopped = str(why) or "interrupted"
    finally:
        signal.signal(signal.SIGTERM, previous)
    elapsed = time.perf_counter() - start
    report(results, elapsed)
    if stopped:
        last = results[-1] if results else None
        print(f"STOPPED ({stopped}) after {len(results)} samples, during {last.kind} {last.entry}: "
              "the counts above are of the samples measured so far" if last else f"STOPPED ({stopped})")
    if args.json:
        with open(args.json, "w") as handle:
            json.dump({"seconds": elapsed, "stopped": stopped, "level": args.level, "samples_per_entry": args.samples,
                       "max_input": args.max_input, "max_output": args.max_output,
                       "results": [r.as_dict() for r in results]}, handle, indent=1)
    return 0 if not stopped else 1


def _entries(names, ops: bool, modules: bool) -> list[tuple[str, str]]:
    """(kind, entry name) of every database entry to run, in the databases' order, each once."""
    op_db, module_db = conformance.databases()
    chosen = ([("op", conformance.entry_name(info)) for info in op_db] if ops else []) + \
             ([("module", conformance.entry_name(info)) for info in module_db] if modules else [])
    return list(dict.fromkeys(e for e in chosen if names is None or e[1] in names))


def _cases(kind: str, name: str, samples: int | None):
    return (conformance.op_cases if kind == "op" else conformance.module_cases)([name], samples)


def _serve(connection, options) -> None:
    """The worker process: runs each entry it is sent and sends back each sample's result, then None."""
    level, seconds, work, max_input, max_output, samples = options
    warnings.simplefilter("ignore")
    conformance.MAX_INPUT, conformance.MAX_OUTPUT = max_input, max_output
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    while (job := connection.recv()) is not None:
        for case in _cases(*job, samples):
            connection.send(conformance.run_case(case, level, seconds, work))
        connection.send(None)


def _isolated(entries, options, take) -> None:
    """Run the entries in a worker process; when an op kills it (a segmentation fault in a kernel), the sample
    it was on is recorded as crashed, named with the signal, and a fresh worker takes the next entry."""
    import multiprocessing

    context = multiprocessing.get_context("spawn")  # fork after torch's threads started is unsafe
    worker = connection = None
    try:
        for kind, name in entries:
            if worker is None:
                connection, child = context.Pipe()
                worker = context.Process(target=_serve, args=(child, options), daemon=True)
                worker.start()
                child.close()
            connection.send((kind, name))
            index = 0
            while True:
                try:
                    item = connection.recv()
                except EOFError:
                    worker.join()
                    code = worker.exitcode
                    why = signal.Signals(-code).name if code is not None and code < 0 else f"exit code {code}"
                    take(conformance.Result(name, kind, index, [], "crashed",
                                            f"the measuring process died ({why}) on this sample; the entry's later "
                                            "samples were not run"))
                    worker = None
                    break
                if item is None:
                    break
                take(item)
                index = item.index + 1
    finally:
        if worker is not None:
            try:
                connection.send(None)
            except OSError:
                pass
            worker.join(timeout=5)
            if worker.is_alive():
                worker.terminate()


class _Stopped(BaseException):  # not an Exception: no except clause of a sample swallows it
    """The run was ended from outside (SIGTERM)."""


def _entry_class(results) -> str:
    """An entry's class: the worst of its run samples (skipped only when every sample was)."""
    run = [r.coverage for r in results if r.coverage != "skipped"]
    return max(run, key=conformance.CLASSES.index) if run else "skipped"


def report(results, elapsed: float) -> None:
    """Print the tables (counts per class, then the named lists)."""
    for kind in ("op", "module"):
        mine = [r for r in results if r.kind == kind]
        if not mine:
            continue
        by_entry: dict[str, list] = {}
        for r in mine:
            by_entry.setdefault(r.entry, []).append(r)
        samples = Counter(r.coverage for r in mine)
        entries = Counter(_entry_class(rs) for rs in by_entry.values())
        print(f"\n{kind}_db: {len(by_entry)} entries, {len(mine)} samples")
        print(f"  {'class':<11} {'samples':>8} {'entries':>8}")
        for name in conformance.CLASSES:
            print(f"  {name:<11} {samples[name]:>8} {entries[name]:>8}")
        judged = Counter(r.judged for r in mine if r.coverage not in ("skipped", "crashed"))
        missed = [r for r in mine if r.missed]
        extra = [r for r in mine if r.extra and not r.extra_bound]
        bound = [r for r in mine if r.extra and r.extra_bound]
        print(f"  judged by the Jacobian {judged['jacobian']}, by perturbation only {judged['perturbation']}, "
              f"not judged {judged[None]}")
        print(f"  MISSED: {len(missed)} samples ({len({r.entry for r in missed})} entries); "
              f"EXTRA: {len(extra)} samples ({len({r.entry for r in extra})} entries); "
              f"EXTRA of refused ops (their stated bound): {len(bound)} samples")
        _list("MISSED", missed, lambda r: f"{r.missed} pairs, first (i, j): {r.missed_pairs}")
        _list("EXTRA", extra, lambda r: f"{r.extra} pairs, first (i, j): {r.extra_pairs}")
        _list("crashed", [r for r in mine if r.coverage == "crashed"], lambda r: r.reason)
        _list("refused by the engine (no figures)", [r for r in mine if r.coverage == "refused" and r.reason],
              lambda r: r.reason)
        _list("autograd-only Jacobian entries (no move of the input changes the output: not MISSED)",
              [r for r in mine if r.autograd_only], lambda r: f"{r.autograd_only} pairs, first (i, j): "
                                                          f"{r.autograd_only_pairs}")
        disagree = [r for r in mine if r.units_disagree]
        _list("products and ops patterns differ", disagree, lambda r: "")
        work = [r for r in mine if r.work and r.work["status"] in ("differs", "crashed")]
        _list("work differs from FlopCounterMode", work, lambda r: (
            r.work.get("error") or f"seqlab {r.work['seqlab']} (own formulas {r.work['seqlab_own']}), "
                                   f"FlopCounterMode/2 {r.work['pytorch']}"))
        agree = Counter(r.work["status"] for r in mine if r.work)
        print(f"  work against FlopCounterMode: agree {agree['agree']}, seqlab only {agree['seqlab only']}, "
              f"none {agree['none']}, differs {agree['differs']}, crashed {agree['crashed']}")
        unaccounted: Counter[str] = Counter()
        for r in mine:
            for op in (r.work or {}).get("unaccounted", {}):
                unaccounted[op] += 1
        if unaccounted:
            print("  work unaccounted by seqlab (samples): "
                  + ", ".join(f"{op} ({n})" for op, n in sorted(unaccounted.items())))
        refused: Counter[str] = Counter()
        for r in mine:
            for op in r.fallbacks:
                refused[op] += 1
        if refused:
            print("  refused ops (samples): " + ", ".join(f"{op} ({n})" for op, n in sorted(refused.items())))
        for label in ("decomposed", "derived"):
            seen: Counter[str] = Counter()
            for r in mine:
                for op in getattr(r, label):
                    seen[op] += 1
            if seen:
                print(f"  {label} ops (samples): " + ", ".join(f"{op} ({n})" for op, n in sorted(seen.items())))
        reasons = Counter(_reason_kind(r.reason) for r in mine if r.coverage == "skipped")
        if reasons:
            print("  skipped: " + ", ".join(f"{why} ({n})" for why, n in reasons.most_common()))
    print(f"\n{len(results)} samples in {elapsed:.0f} s")


def _list(title: str, rows, detail) -> None:
    if not rows:
        return
    print(f"  {title}:")
    for r in rows:
        print(f"    {r.entry} #{r.index} {r.shapes}: {detail(r)}")


def _reason_kind(reason: str | None) -> str:
    """A skip reason without its numbers and messages (for the summary)."""
    text = reason or "?"
    for stem in ("input of", "output of", "the op itself raised", "samples failed", "inputs failed",
                 "construction failed", "over "):
        if text.startswith(stem):
            return stem.strip()
    return text


if __name__ == "__main__":
    sys.exit(main())
