"""Single-point mutants of the verdicts' thresholds and comparisons, and which ones the tests kill (issue 38; not a test).

Each mutant changes one thing in one module of the verdict rules (rounds, timing, fits, claims, learn verdicts and
their selection, decode's terms, verdicts):

* a comparison ``<`` ↔ ``<=`` or ``>`` ↔ ``>=`` (``ast.Compare``, every one in the module);
* a boolean ``and`` ↔ ``or`` (``ast.BoolOp``, every one in the module);
* a threshold constant: a module-level UPPER_CASE float ×(1 + ε) and ×(1 − ε) (ε = 1e-6), an UPPER_CASE integer
  that some comparison of the module reads ± 1, and a number written in a comparison (float ×(1 ± ε), int ± 1).

The module is rewritten from its mutated syntax tree (``ast.unparse``) into a copy of ``src/`` and the tests that
cover it run on that copy with ``-x``, one process for the whole sweep: torch, transformers and the tests'
imports load once, and ``seqlab`` is imported afresh for each mutant. A mutant is *killed* when a test fails (or
runs past ``--timeout`` seconds), *survives* when every test passes. The unmutated module, unparsed the same way,
must pass first (the baseline). A survivor is either a missing boundary test or an equivalent mutant (a change no
input can see, such as ``x < 0`` ↔ ``x <= 0`` where x is a positive count); the report lists each with its line.

    PYTHONPATH=src python benchmarks/mutants.py [--modules fit rounds ...] [--timeout 120] [--out FILE]
                                                [--rerun EARLIER.json]

``--rerun`` runs only the mutants an earlier sweep's JSON did not find killed (and any the earlier source did not
have), matched by module and change, not by line, so that edited docstrings do not lose them: tests only added
cannot bring a killed mutant back.

Costs: one pytest session per mutant, 10–60 s each on a shared 2-core machine (a survivor runs its whole test
selection). Measured on 2026-12-06 (benchmarks/results/mutants-2026-12-06.txt): over learn_verdicts, selection,
verdicts, decode and rounds, main's tests let 66 of 90 mutants live; this branch's 2 of 91, both equivalent. Over
fit, claims, claims_path, claims_time, claims_cost, claims_beyond, check, timing, rounds and verdicts, with and/or
swaps (benchmarks/results/mutants-fit-claims-timing-2026-12-06.txt): main's tests let 85 of 271 live, the mutants
branch's 8, each argued equivalent there (one, fit's probe bound, not proved: no separating input found).
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import copy
import json
import os
import shutil
import signal
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EPSILON = 1e-6
#: The modules of the verdict rules and the tests that cover each (a pytest selection, run with -x).
MODULES: dict[str, list[str]] = {
    "rounds": ["seqlab/measure/rounds.py", "tests/test_verdict_boundaries.py", "tests/test_rounds.py"],
    "timing": ["seqlab/measure/timing.py", "tests/test_timing_boundaries.py", "tests/test_timing.py"],
    "fit": ["seqlab/fit.py", "tests/test_fit_boundaries.py", "tests/test_fit.py", "-k",
           "not table1_modern and not issues_example and not window_of_one and not regime_follows"],
    "claims": ["seqlab/studies/claims.py", "tests/test_claims_boundaries.py", "tests/test_check_verdicts.py"],
    "claims_path": ["seqlab/studies/claims_path.py", "tests/test_claims_boundaries.py", "tests/test_check_verdicts.py"],
    "claims_time": ["seqlab/studies/claims_time.py", "tests/test_claims_boundaries.py", "tests/test_claims_time.py",
                   "tests/test_check_verdicts.py"],
    "claims_cost": ["seqlab/studies/claims_cost.py", "tests/test_claims_boundaries.py", "tests/test_check_verdicts.py"],
    "claims_beyond": ["seqlab/studies/claims_beyond.py", "tests/test_claims_boundaries.py",
                     "tests/test_check_beyond.py", "tests/test_check_signal_path.py",
                     "tests/test_check_model_state.py"],
    "check": ["seqlab/studies/check.py", "tests/test_claims_boundaries.py", "tests/test_check_verdicts.py",
             "tests/test_verdict_fields.py"],
    "learn_verdicts": ["seqlab/studies/learn_verdicts.py", "tests/test_learn_verdicts.py", "-k",
                      "not training_keeps and not plot"],
    "selection": ["seqlab/learn/selection.py", "tests/test_learn_verdicts.py", "-k", "not training_keeps and not plot"],
    "decode": ["seqlab/studies/decode.py", "tests/test_verdict_boundaries.py", "tests/test_decode.py"],
    "verdicts": ["seqlab/studies/verdicts.py", "tests/test_verdict_boundaries.py", "tests/test_verdict_fields.py"],
    "signal_path": ["seqlab/measure/signal_path.py", "tests/test_signal_path.py"],
}
SWAP = {ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt}
BOOL_SWAP = {ast.And: ast.Or, ast.Or: ast.And}


@dataclass(frozen=True)
class Mutant:
    """One single-point change: the module (key of :data:`MODULES`), the line and what was changed."""

    module: str
    line: int
    change: str
    index: int  # which mutation point of the module, in ast.walk order


@dataclass(frozen=True)
class Outcome:
    """A mutant's fate: ``killed``, ``survived`` or ``timeout``; the first failing test when killed; seconds."""

    mutant: Mutant
    status: str
    failed: str
    seconds: float


def _number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _changes(value: float) -> list[float]:
    return [value + 1, value - 1] if isinstance(value, int) else [value * (1 + EPSILON), value * (1 - EPSILON)]


def _points(tree: ast.Module) -> list[tuple[ast.AST, object, str]]:
    """Every mutation point: (node, how to change it, description), in a fixed order."""
    compared = {n.id for c in ast.walk(tree) if isinstance(c, ast.Compare)
                for n in ast.walk(c) if isinstance(n, ast.Name)}
    points: list[tuple[ast.AST, object, str]] = []
    for statement in tree.body:  # module-level threshold constants
        target = statement.targets[0] if isinstance(statement, ast.Assign) and len(statement.targets) == 1 else \
            statement.target if isinstance(statement, ast.AnnAssign) else None
        value = getattr(statement, "value", None)
        if isinstance(target, ast.Name) and target.id.isupper() and isinstance(value, ast.Constant) \
                and _number(value.value) and (isinstance(value.value, float) or target.id in compared):
            for new in _changes(value.value):
                points.append((value, new, f"{target.id} = {value.value!r} -> {new!r}"))
    for node in ast.walk(tree):
        if isinstance(node, ast.BoolOp):
            text = ast.unparse(node)
            swapped = BOOL_SWAP[type(node.op)].__name__
            points.append((node, ("bool",), f"{text[:90]}: {type(node.op).__name__} -> {swapped}"))
            continue
        if not isinstance(node, ast.Compare):
            continue
        for position, op in enumerate(node.ops):
            if type(op) in SWAP:
                text = ast.unparse(node)
                points.append((node, ("op", position), f"{text}: {type(op).__name__} -> {SWAP[type(op)].__name__}"))
        for operand in (node.left, *node.comparators):
            if isinstance(operand, ast.Constant) and _number(operand.value):
                for new in _changes(operand.value):
                    points.append((operand, new, f"{ast.unparse(node)}: {operand.value!r} -> {new!r}"))
    return points


def mutants_of(name: str, source: str) -> list[tuple[Mutant, str]]:
    """Every mutant of one module with its mutated source."""
    tree = ast.parse(source)
    found = []
    for index, (node, how, text) in enumerate(_points(tree)):
        mutated = copy.deepcopy(tree)
        target = [n for n in ast.walk(mutated)][[n for n in ast.walk(tree)].index(node)]
        if how == ("bool",):
            target.op = BOOL_SWAP[type(target.op)]()
        elif isinstance(how, tuple):
            target.ops[how[1]] = SWAP[type(target.ops[how[1]])]()
        else:
            target.value = how
        found.append((Mutant(name, node.lineno, text, index), ast.unparse(mutated)))
    return found


class _Timeout(Exception):
    pass


def _alarm(signum, frame):
    raise _Timeout()


class _FirstFailure:
    """A pytest plugin that keeps the first failing test's id."""

    def __init__(self) -> None:
        self.failed = ""

    def pytest_runtest_logreport(self, report):
        if report.failed and not self.failed:
            self.failed = report.nodeid


def _fresh_seqlab() -> None:
    for name in [m for m in sys.modules if m in ("seqlab", "conftest") or m.startswith(("seqlab.", "tests.", "test_"))]:
        del sys.modules[name]


def run_tests(selection: list[str], timeout: float) -> tuple[str, str]:
    """Run one pytest session in this process: ("passed" | "failed" | "timeout", first failing test)."""
    import pytest

    _fresh_seqlab()
    plugin = _FirstFailure()
    signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, timeout)
    try:
        with open(os.devnull, "w") as quiet, contextlib.redirect_stdout(quiet), contextlib.redirect_stderr(quiet):
            code = pytest.main(["-x", "-q", "-n", "0", "-p", "no:cacheprovider", "-W", "ignore", *selection],
                               plugins=[plugin])
    except _Timeout:
        return "timeout", plugin.failed
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    if plugin.failed == "" and code != 0 and "Timeout" in repr(code):
        return "timeout", ""
    return ("passed" if code == 0 else "failed"), plugin.failed


def _keys(mutants: list[Mutant]) -> list[tuple[str, str, int]]:
    """A mutant's identity across edits that move lines: (module, change, how many identical changes came before)."""
    seen: dict[tuple[str, str], int] = {}
    keys = []
    for mutant in mutants:
        seen[(mutant.module, mutant.change)] = seen.get((mutant.module, mutant.change), -1) + 1
        keys.append((mutant.module, mutant.change, seen[(mutant.module, mutant.change)]))
    return keys


def _killed_before(path: Path | None) -> set[tuple[str, str, int]]:
    """The keys (:func:`_keys`) of the mutants an earlier sweep's JSON (``--out``) found killed (or timed out)."""
    if path is None:
        return set()
    earlier = json.loads(path.read_text(encoding="utf-8"))
    mutants = [Mutant(**o["mutant"]) for o in earlier]
    return {key for key, o in zip(_keys(mutants), earlier) if o["status"] != "survived"}


def sweep(names: list[str], timeout: float, skip: set[tuple[str, str, int]] = frozenset()) -> list[Outcome]:
    """Copy src/, then for each module: the baseline, and every mutant (but those whose key is in ``skip``, which
    are reported ``killed before``: added tests cannot bring a killed mutant back)."""
    work = Path(tempfile.mkdtemp(prefix="seqlab-mutants-"))
    shutil.copytree(ROOT / "src", work / "src")
    sys.path.insert(0, str(work / "src"))
    os.chdir(ROOT)
    os.environ["PYTHONDONTWRITEBYTECODE"] = "1"
    sys.dont_write_bytecode = True
    outcomes: list[Outcome] = []
    try:
        for name in names:
            relative, *selection = MODULES[name]
            selection = [a for a in selection if not a.startswith("tests/") or (ROOT / a).exists()]  # an older tree
            path = work / "src" / relative
            original = path.read_text(encoding="utf-8")
            path.write_text(ast.unparse(ast.parse(original)), encoding="utf-8")
            status, failed = run_tests(selection, timeout * 3)
            if status != "passed":
                print(f"{name}: the baseline does not pass ({status}, {failed}); skipped", flush=True)
                path.write_text(original, encoding="utf-8")
                continue
            found = mutants_of(name, original)
            for (mutant, source), key in zip(found, _keys([m for m, _ in found])):
                if key in skip:
                    outcomes.append(Outcome(mutant, "killed", "(killed before)", 0.0))
                    continue
                path.write_text(source, encoding="utf-8")
                start = time.perf_counter()
                status, failed = run_tests(selection, timeout)
                outcome = Outcome(mutant, {"passed": "survived", "failed": "killed"}.get(status, status), failed,
                                  time.perf_counter() - start)
                outcomes.append(outcome)
                print(f"{outcome.status:8} {name}:{mutant.line} {mutant.change}"
                      + (f"  [{failed}]" if failed else ""), flush=True)
            path.write_text(original, encoding="utf-8")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return outcomes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--modules", nargs="*", default=[m for m in MODULES if m != "signal_path"],
                        choices=list(MODULES))
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds per mutant's test run")
    parser.add_argument("--out", type=Path, default=None, help="write the outcomes as JSON here")
    parser.add_argument("--list", action="store_true", help="list the mutants without running them")
    parser.add_argument("--rerun", type=Path, default=None,
                        help="an earlier --out: run only the mutants it did not find killed (and new ones)")
    args = parser.parse_args()
    if args.list:
        for name in args.modules:
            relative = MODULES[name][0]
            for mutant, _ in mutants_of(name, (ROOT / "src" / relative).read_text(encoding="utf-8")):
                print(f"{name}:{mutant.line} {mutant.change}")
        return
    outcomes = sweep(args.modules, args.timeout, _killed_before(args.rerun))
    survived = [o for o in outcomes if o.status == "survived"]
    print(f"{len(outcomes)} mutants: {len(outcomes) - len(survived)} killed, {len(survived)} survived", flush=True)
    if args.out is not None:
        args.out.write_text(json.dumps([asdict(o) for o in outcomes], indent=1, ensure_ascii=False) + "\n",
                            encoding="utf-8")


if __name__ == "__main__":
    main()
