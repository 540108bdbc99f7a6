"""Every causal- and masked-LM model type of the installed transformers, tiny, through the engine (issue 35; not a
test, the start of issue 40's ``seqlab zoo``).

Per family (tests/hf_families.py builds it: the config class's defaults shrunk by one generic table, eval, float64,
eager attention; x = inputs_embeds (1, T, d), T = 8 or a multiple of the family's chunks):

* built, or refused with the reason (config, shrunk config, model, forward);
* paths: ``measure_paths`` (all sources) against the float64 Jacobian judged by seqlab's ``judge`` at the dtype the
  model computes in — ``equal``, ``bound`` (fallbacks named, over-stating only) or ``mismatch`` (which pairs);
* work: ``count_multiplications`` against ``FlopCounterMode`` total / 2 and per op — ``equal``, ``equal+beyond``
  (seqlab counts ops PyTorch has no formula for, named) or ``differs``;
* CPU seconds of each stage (time.process_time, one thread).

Writes benchmarks/results/families-sweep-<date>.json after every family (resumable: families already in the file
are skipped unless --again) and prints a table. Run from the repository root (shared machine: ``nice -n 10``):

    nice -n 10 python benchmarks/families_sweep.py [--families a,b] [--tests-only] [--alone] [--seconds 120] [--out F]

With ``--alone`` each source is also traced alone and compared with its row of the all-sources trace (issue 35
item 2), T more traces per family.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import os
import signal
import sys
import time
import traceback
import warnings
from collections import Counter

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests"))

import hf_families
import torch


class _Timeout(Exception):
    pass


def _alarm(signum, frame):
    raise _Timeout()


def _where(error: BaseException) -> str:
    """The last frame of seqlab (or else of anything) in the error's traceback: file:line function."""
    frames = traceback.extract_tb(error.__traceback__)
    ours = [f for f in frames if "/seqlab/" in f.filename] or frames
    f = ours[-1]
    return f"{f.filename.split('/src/')[-1]}:{f.lineno} {f.name}"


def measure(model_type: str, seconds: float, alone: bool = False) -> dict:
    """One family's record (see the module docstring); with ``alone``, each source traced alone too."""
    record: dict = {"family": model_type}
    signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(int(seconds))
    try:
        start = time.process_time()
        try:
            fam = hf_families.family(model_type)
        except hf_families.Refused as refusal:
            record |= {"built": False, "refused": str(refusal)}
            return record
        config = fam.model.config
        record |= {"built": True, "T": fam.T, "d": int(fam.x.shape[-1]), "class": type(fam.model).__name__,
                   "params": sum(p.numel() for p in fam.model.parameters()),
                   "layers": getattr(config, "num_hidden_layers", None),
                   "layer_types": getattr(config, "layer_types", None),
                   "build_s": round(time.process_time() - start, 3)}
        stages = [("paths", lambda: hf_families.compare_paths(fam.layer, fam.x)),
                  ("work", lambda: hf_families.compare_work(fam.layer, fam.x))]
        if alone:
            stages.append(("alone", lambda: {"differ": hf_families.sources_alone(fam.layer, fam.x)}))
        for stage, run in stages:
            start = time.process_time()
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    result = run()
                fields = result if isinstance(result, dict) else dataclasses.asdict(result)
                record[stage] = {k: (list(map(list, v)) if k in ("extra", "missing", "rounding", "weak") else v)
                                 for k, v in fields.items()}
            except _Timeout:
                raise
            except Exception as error:  # noqa: BLE001 - the sweep records every crash by its kind
                record[stage] = {"verdict": "crash", "error": f"{type(error).__name__}: {hf_families._line(error)}",
                                 "where": _where(error)}
            record[stage + "_s"] = round(time.process_time() - start, 3)
    except _Timeout:
        record["timeout"] = seconds
    finally:
        signal.alarm(0)
    return record


def tests_families() -> list[str]:
    """The model types the existing tests build (their config classes named in tests/*.py)."""
    import re

    from transformers import CONFIG_MAPPING

    names = set()
    folder = os.path.dirname(os.path.abspath(hf_families.__file__))
    for file in os.listdir(folder):
        if file.endswith(".py") and file not in ("hf_families.py", "test_families_sweep.py"):
            with open(os.path.join(folder, file)) as source:
                names |= set(re.findall(r"\b([A-Za-z0-9]+Config)\b", source.read()))
    by_class = {cls.__name__: t for t, cls in CONFIG_MAPPING.items()}
    return sorted({by_class[n] for n in names if n in by_class})


def table(records: list[dict]) -> str:
    lines = [f"{'family':28s} {'T':>2s} {'paths':9s} {'work':13s} {'seconds':>7s}  notes"]
    for r in records:
        if not r.get("built"):
            lines.append(f"{r['family']:28s} {'':>2s} {'refused':9s} {'':13s} {'':>7s}  {r.get('refused', '')[:110]}")
            continue
        p, w = r.get("paths", {}), r.get("work", {})
        notes = []
        if p.get("verdict") == "mismatch":
            notes.append(f"extra {len(p['extra'])} (rounding {len(p['rounding'])}) missing {len(p['missing'])}")
        if p.get("fallbacks"):
            notes.append(f"fallbacks {p['fallbacks']}")
        if p.get("verdict") == "crash":
            notes.append(f"paths: {p['error'][:80]} @ {p['where']}")
        if w.get("verdict") == "crash":
            notes.append(f"work: {w['error'][:80]} @ {w['where']}")
        if w.get("differing"):
            notes.append(f"differing {w['differing']}")
        if w.get("beyond"):
            notes.append(f"beyond {w['beyond']}")
        if w.get("unaccounted"):
            notes.append(f"unaccounted {w['unaccounted']}")
        if w.get("no_grad_error"):
            notes.append(f"no_grad: {w['no_grad_error'][:60]}")
        if r.get("alone", {}).get("differ"):
            notes.append(f"alone differs for sources {sorted(r['alone']['differ'])}")
        if r.get("alone", {}).get("verdict") == "crash":
            notes.append(f"alone: {r['alone']['error'][:60]}")
        if r.get("timeout"):
            notes.append(f"timeout {r['timeout']} s")
        seconds = sum(r.get(k, 0) for k in ("build_s", "paths_s", "work_s"))
        lines.append(f"{r['family']:28s} {r['T']:>2d} {p.get('verdict', '-'):9s} {w.get('verdict', '-'):13s} "
                     f"{seconds:7.2f}  {'; '.join(notes)[:200]}")
    return "\n".join(lines)


def summary(records: list[dict]) -> dict:
    built = [r for r in records if r.get("built")]
    refused = Counter(r["refused"].split(":")[0] for r in records if not r.get("built"))
    return {"families": len(records), "built": len(built), "refused": dict(refused),
            "paths": dict(Counter(r.get("paths", {}).get("verdict", "timeout") for r in built)),
            "work": dict(Counter(r.get("work", {}).get("verdict", "timeout") for r in built)),
            "alone": dict(Counter("crash" if r["alone"].get("verdict") == "crash" else
                                  "differs" if r["alone"].get("differ") else "equal"
                                  for r in built if "alone" in r))}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--families", help="comma-separated model types (default: every causal- or masked-LM type)")
    parser.add_argument("--tests-only", action="store_true", help="only the model types the existing tests build")
    parser.add_argument("--seconds", type=float, default=120.0, help="give up on a family after this many seconds")
    parser.add_argument("--out", default=os.path.join("benchmarks", "results",
                                                      f"families-sweep-{datetime.date.today().isoformat()}.json"))
    parser.add_argument("--alone", action="store_true",
                        help="also trace each source alone and compare with the all-sources rows (T more traces)")
    parser.add_argument("--again", action="store_true", help="measure families already in --out again")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    import transformers

    transformers.logging.set_verbosity_error()
    families = (args.families.split(",") if args.families else
                tests_families() if args.tests_only else hf_families.model_types())
    done: dict[str, dict] = {}
    if os.path.exists(args.out) and not args.again:
        with open(args.out) as file:
            done = {r["family"]: r for r in json.load(file)["records"]}
    for name in families:
        if name in done:
            continue
        print(f"... {name}", file=sys.stderr, flush=True)
        done[name] = measure(name, args.seconds, args.alone)
        records = sorted(done.values(), key=lambda r: r["family"])
        with open(args.out, "w") as file:
            json.dump({"transformers": transformers.__version__, "torch": torch.__version__,
                       "tests_families": tests_families(), "summary": summary(records), "records": records},
                      file, indent=1, default=str)
    records = [done[n] for n in families]
    print(table(records))
    print(json.dumps(summary(records), indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
