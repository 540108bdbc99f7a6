"""No boolean that contradicts its own verdict (issue 27).

Every frozen result class of :mod:`seqlab.measure` and :mod:`seqlab.studies` that carries a verdict string is
found by walking the two packages; each is instantiated here with patched measurements, once per verdict it
can take, and every boolean field or property beside the verdict is read: none may be True while the verdict
says "does not hold" (or ``does_not_hold``), and where the verdict says "cannot tell" each must be None — a
bool there would read as a verdict the measurement did not reach. A new result class with a verdict fails
:func:`test_every_verdict_class_is_covered` until a factory below builds it.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import pkgutil
import types
import typing

import pytest
import torch

import seqlab.measure
import seqlab.studies
from seqlab.errors import SeqlabError

#: Verdict strings that say the claim or property was not shown.
FAILING = ("does not hold", "does_not_hold", "mismatch")
UNSETTLED = "cannot tell"
#: Verdict strings that say the measurement decided nothing (as "cannot tell" does).
UNDECIDED = ("not_judged", "not_separated")
#: Booleans of a verdict class that are not a verdict, with the reason.
NOT_VERDICTS = {"ClaimCheck.beyond_lesson": "which list the claim belongs to (B1–B3 or L1–L12)",
                "ClaimCheck.judged": "whether the measurement decided the claim (True for does_not_hold too)",
                "ModernCell.judged": "whether the cell's lengths could decide (True for mismatch too)"}


def _modules():
    for package in (seqlab.measure, seqlab.studies):
        for info in pkgutil.iter_modules(package.__path__):
            yield importlib.import_module(f"{package.__name__}.{info.name}")


def verdict_classes() -> dict[str, type]:
    """``module:Class`` -> class, for every dataclass defined in the two packages with a verdict field."""
    found = {}
    for module in _modules():
        for name, value in vars(module).items():
            if (inspect.isclass(value) and dataclasses.is_dataclass(value) and value.__module__ == module.__name__
                    and any(f.name == "verdict" or f.name.endswith("_verdict") for f in dataclasses.fields(value))):
                found[f"{module.__name__}:{name}"] = value
    return found


def _is_bool(hint) -> bool:
    return hint is bool or (isinstance(hint, types.UnionType | typing._UnionGenericAlias)  # type: ignore[attr-defined]
                            and bool in typing.get_args(hint))


def _nullable(hint) -> bool:
    return type(None) in typing.get_args(hint)


def bool_attributes(cls: type) -> dict[str, object]:
    """name -> type hint of every boolean field and property of ``cls`` (bool or bool | None)."""
    module = vars(importlib.import_module(cls.__module__))
    hints = {f.name: typing.get_type_hints(cls, module)[f.name] for f in dataclasses.fields(cls)}
    for name, value in inspect.getmembers(cls, lambda member: isinstance(member, property)):
        hints[name] = typing.get_type_hints(value.fget, module).get("return")
    return {name: hint for name, hint in hints.items() if _is_bool(hint)}


# --- Factories: each verdict class built from patched measurements, once per verdict it can take -------------

def _order_results():
    from seqlab.measure.order import _result, _Rerun

    y = torch.ones(4, 2)  # (T, d) float32 output, max |y| = 1: tolerance 64·eps·1·2 = 1.5e-5
    perm = torch.tensor([1, 0, 3, 2])
    measured = {  # change, rerun: the three verdicts
        "holds": (1e-6, _Rerun(change=0.0, tolerance=1e-13, rounding=1e-7)),
        "does not hold": (1.0, None),
        "cannot tell at float32": (1e-6, None),
        "does not hold (float64 confirms)": (1e-5, _Rerun(change=1e-5, tolerance=1e-13, rounding=1e-8)),
        "cannot tell at float32 (rerun within rounding)": (1e-6, _Rerun(change=1.0, tolerance=1e-13, rounding=1.0)),
    }
    for kind in ("rows", "key-value pairs"):
        for change, rerun in measured.values():
            yield _result(kind, perm, torch.full((4, 2), change), y, 4, 0, rerun)


def _layer_orders():
    """Depth 1 of a (T, L + 1, d_model) output moved by shift·i under π; the twin's change and rounding patched."""
    from seqlab.studies.model_order import _depth

    T = 4
    perm = torch.tensor([1, 0, 3, 2])
    i = torch.arange(T)[:, None]
    y = torch.ones(T, 2, 3, dtype=torch.float32)  # float32 tolerance at depth 1: 64·eps·1·2 = 1.5e-5
    # shift, float64 twin's shift, its offset from y (the rounding), the model's working precision
    for shift, twin_shift, rounding, working in ((1e-6, 0.0, 0.0, None),  # holds: the twin sees nothing
                                                 (1.0, 0.0, 0.0, None),  # does not hold: beyond the tolerance
                                                 (1e-6, 1.0, 1.0, None),  # cannot tell: twin moves, within rounding
                                                 (1e-6, None, None, torch.float32),  # softmax in float32: cannot tell
                                                 (1.0, None, None, torch.float32)):
        base = y.double() if working is not None else y  # a float64 model whose softmax runs in float32
        moved = base.clone()
        moved[:, 1] += shift * i
        twin = None
        if twin_shift is not None:
            twin64, moved64 = y.double() + rounding, y.double() + rounding
            moved64[:, 1] += twin_shift * i
            twin = (twin64, moved64)
        yield _depth(1, base, moved, perm, twin, 1, working)


def _claim_checks():
    from seqlab.studies.check import ClaimCheck
    from seqlab.studies.verdicts import VERDICTS

    for verdict in VERDICTS:
        yield ClaimCheck("L10", verdict)
        yield ClaimCheck("B1", verdict)


def _judgements():
    from seqlab.studies.verdicts import VERDICTS, Judgement

    for verdict in VERDICTS:
        yield Judgement(verdict)


def _modern_cells():
    from seqlab.studies.table1_modern import VERDICTS, ModernCell
    from seqlab.studies.table1_results import LINEAR

    for verdict in VERDICTS:
        yield ModernCell(paper="O(T)", expected=LINEAR, fit=None, verdict=verdict, lengths=(8, 16, 32),
                         regime_start=None, regime_size="", regime_symbol="", regime_multiple=1, steps=None,
                         reason="not_separated" if verdict == "not_judged" else None,
                         other="1" if verdict == "not_judged" else None)


def _table1_cells():
    from seqlab.fit import MATCH, MISMATCH, NOT_SEPARATED, fit_growth
    from seqlab.studies.table1_results import LINEAR, Cell

    fit = fit_growth([8, 16, 32], [8, 16, 32])
    for verdict in (MATCH, MISMATCH, NOT_SEPARATED):
        yield Cell(paper="O(n)", expected=LINEAR, fit=fit, verdict=verdict,
                   other="1" if verdict == NOT_SEPARATED else None)


FACTORIES = {
    "seqlab.studies.table1_modern:ModernCell": _modern_cells,
    "seqlab.studies.table1_results:Cell": _table1_cells,
    "seqlab.measure.order:OrderResult": _order_results,
    "seqlab.studies.model_order:LayerOrder": _layer_orders,
    "seqlab.studies.check:ClaimCheck": _claim_checks,
    "seqlab.studies.verdicts:Judgement": _judgements,
}


def test_every_verdict_class_is_covered():
    assert set(verdict_classes()) == set(FACTORIES)


def _read(instance, name):
    try:
        return getattr(instance, name)
    except SeqlabError:  # e.g. ``equivariant`` of a key-value result: not this kind's question
        return "not asked"


@pytest.mark.parametrize("key", sorted(FACTORIES))
def test_no_boolean_reads_as_a_verdict_the_measurement_did_not_reach(key):
    cls = verdict_classes()[key]
    instances = list(FACTORIES[key]())
    verdicts = {instance.verdict for instance in instances}
    assert len(verdicts) >= 3, f"{key}: the factory must reach every verdict, reached {sorted(verdicts)}"
    attributes = {name: hint for name, hint in bool_attributes(cls).items()
                  if f"{cls.__name__}.{name}" not in NOT_VERDICTS}
    # (a class with no boolean yet, Judgement, is still built: a boolean added to it later is checked here)
    unsettled = any(v.startswith(UNSETTLED) or v in UNDECIDED for v in verdicts)
    for name, hint in attributes.items():
        # a class whose verdict can be "cannot tell" types its booleans bool | None
        assert not unsettled or _nullable(hint), f"{cls.__name__}.{name} is {hint}; expected bool | None"
    for instance in instances:
        for name in attributes:
            value = _read(instance, name)
            if value == "not asked":
                continue
            if instance.verdict in FAILING:
                assert value is not True, f"{cls.__name__}.{name} is True while the verdict is {instance.verdict!r}"
            if instance.verdict.startswith(UNSETTLED) or instance.verdict in UNDECIDED:
                assert value is None, f"{cls.__name__}.{name} is {value!r} while the verdict is {instance.verdict!r}"


def test_the_walk_finds_a_class_that_breaks_the_rule(monkeypatch):
    """The search itself: a result class with ``holds: bool`` beside a three-valued verdict is caught."""
    import seqlab.measure.order as order

    @dataclasses.dataclass(frozen=True)
    class Broken:
        verdict: str
        holds: bool

    Broken.__module__ = order.__name__
    monkeypatch.setattr(order, "Broken", Broken, raising=False)
    assert "seqlab.measure.order:Broken" in verdict_classes()
    assert bool_attributes(Broken) == {"holds": bool} and not _nullable(bool_attributes(Broken)["holds"])
