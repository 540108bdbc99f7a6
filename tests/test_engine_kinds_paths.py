"""Issue 13, dependence and paths: each kind of wrong answer with the issue's input and a second one of its kind.

Kinds 1 (NaN), 2 (rounding counted as dependence), 4 (in-place twins in the path rules), 6 (a weight that
underflows to exactly 0 cuts; a small nonzero weight does not), 7 (float32 order verdicts), 9 (query length
!= key length). Every verdict has a test that feeds a wrong measurement and sees the verdict change.
"""

from __future__ import annotations

import copy

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from seqlab.errors import SeqlabError
from seqlab.measure import mixing, order, paths
from seqlab.measure.mixing import CAUSAL, dependency_matrix
from seqlab.measure.order import measure_order
from seqlab.measure.paths import measure_paths
from seqlab.studies.profile import profile

from issue13_inputs import NEG, issue_attention, seeded_generator


# --- kind 1: NaN is undefined, never "depends" ----------------------------------------------------------

def _strictly_causal(x: torch.Tensor) -> torch.Tensor:
    """Hand-written attention where row j reads keys i < j only: row 0 has no key (NaN), row 1 one key."""
    T = x.shape[-2]
    scores = x @ x.transpose(-2, -1)  # (B, T, T)
    scores = scores.masked_fill(~torch.ones(T, T, dtype=torch.bool).tril(-1), NEG)
    return scores.softmax(dim=-1) @ x


def test_nan_row_of_the_issue_is_undefined_in_the_dependency_matrix():
    attention, mask = issue_attention()
    x = torch.randn(1, 3, 4, dtype=torch.float64, generator=seeded_generator())
    matrix = dependency_matrix(lambda x: attention(x, x, x, attn_mask=mask, need_weights=True), {"x": x}, "x")
    assert matrix.depends == ((True, False, False), (True, True, False), (False, False, False))
    assert matrix.undefined_rows == (2,)
    assert all(value != value for value in matrix.strength[2])  # NaN, never a number
    assert matrix.method == "forward-jacobian-2"  # the NaN row poisoned the backward of rows 0 and 1
    assert matrix.pattern == CAUSAL  # over the defined rows


def test_nan_row_of_a_strictly_causal_attention_is_undefined():
    x = torch.randn(1, 4, 3, dtype=torch.float64, generator=seeded_generator(1))
    matrix = dependency_matrix(_strictly_causal, {"x": x}, "x")
    assert matrix.undefined_rows == (0,)
    # row 1 has one open key: its weight is 1 whatever q_1 is, so y_1 = x_0 plus nothing of x_1
    assert matrix.depends[1] == (True, False, False, False)
    assert matrix.depends[2] == (True, True, True, False) and matrix.depends[3] == (True,) * 4


def test_a_finite_row_poisoned_by_nan_would_read_as_all_to_all(monkeypatch):
    """The NaN flag is a verdict: if the forward-mode remeasure is replaced by the poisoned backward, it flips."""
    attention, mask = issue_attention()
    x = torch.randn(1, 3, 4, dtype=torch.float64, generator=seeded_generator())
    monkeypatch.setattr(mixing, "_forward_strength", lambda *args: torch.full((3, 3), float("nan")))
    matrix = dependency_matrix(lambda x: attention(x, x, x, attn_mask=mask, need_weights=True), {"x": x}, "x")
    assert matrix.depends == ((False,) * 3,) * 3 and matrix.undefined_rows == (0, 1, 2)


@pytest.mark.parametrize("case", ["issue", "strictly-causal"])
def test_nan_outputs_are_undefined_in_the_path_matrix(case, monkeypatch):
    if case == "issue":
        attention, mask = issue_attention()
        layer = lambda x: attention(x, x, x, attn_mask=mask, need_weights=True)[0]  # noqa: E731
        x, undefined = torch.randn(1, 3, 4, dtype=torch.float64, generator=seeded_generator()), (2,)
        expected = ((3, 3, None), (None, 3, None), (None, None, None))  # in-proj, A V, out-proj
    else:
        layer, x, undefined = _strictly_causal, torch.randn(1, 4, 3, dtype=torch.float64, generator=seeded_generator()), (0,)
        # x_i reaches y_j (j > i) through the values in one product, x_j reaches y_j through its query
        # (score, then A V) only where two keys or more are open (j >= 2); y_0 is NaN
        expected = tuple(tuple(1 if j > i else (2 if j == i >= 2 else None) for j in range(4)) for i in range(4))
    matrix = measure_paths(layer, x)
    assert matrix.undefined == undefined and matrix.products == expected
    monkeypatch.setattr(paths, "_nan_positions", lambda y: ())  # a tracer blind to NaN
    blind = measure_paths(layer, x)
    assert blind.undefined == () and all(row[undefined[0]] is not None for row in blind.products)


# --- kind 2: rounding is not dependence -----------------------------------------------------------------

def test_one_open_key_leaves_only_rounding_on_the_query_of_the_issue():
    """SDPA, bool mask, row 3 opens key 0 only: the exact dy_3/dx_3 is 0; what the kernel leaves is rounding."""
    x = torch.randn(1, 5, 8, dtype=torch.float64, generator=seeded_generator())
    allowed = torch.ones(5, 5, dtype=torch.bool).tril()
    allowed[3, 1:] = False
    matrix = dependency_matrix(lambda x: F.scaled_dot_product_attention(x[:, None], x[:, None], x[:, None],
                                                                          attn_mask=allowed)[:, 0], {"x": x}, "x")
    assert matrix.depends[3] == (True, False, False, False, False)
    judgement = matrix.judgement
    assert judgement.band == pytest.approx(64 * 2.0**-52 * judgement.scale)
    # both rules are reported where they disagree: a nonzero strength within the band
    assert set(matrix.rounding) == {(j, i) for j, row in enumerate(matrix.strength)
                                    for i, value in enumerate(row) if 0.0 < value <= judgement.band}


@pytest.mark.parametrize(("opened", "reaches"), [(1, False), (2, True)], ids=["one-key", "two-keys"])
def test_one_open_key_cuts_the_query_path(opened, reaches):
    """The path rules agree: with one key open the weight is 1 whatever q_3 is; with two, x_3 reaches y_3."""
    x = torch.randn(1, 5, 8, dtype=torch.float64, generator=seeded_generator())
    allowed = torch.ones(5, 5, dtype=torch.bool).tril()
    allowed[3, opened:] = False  # row 3 opens keys 0 .. opened - 1
    matrix = measure_paths(lambda x: F.scaled_dot_product_attention(x[:, None], x[:, None], x[:, None],
                                                                      attn_mask=allowed)[:, 0], x)
    assert [row[3] for row in matrix.products] == [1, 1 if reaches else None, None, 2 if reaches else None, None]


def test_one_open_key_in_multihead_attention_is_the_same_kind():
    torch.manual_seed(3)
    attention = nn.MultiheadAttention(8, 2, batch_first=True).double().eval()
    mask = torch.zeros(4, 4, dtype=torch.float64).masked_fill(~torch.ones(4, 4, dtype=torch.bool).tril(), NEG)
    mask[2, 1:] = NEG  # row 2 opens key 0 only in both heads
    x = torch.randn(1, 4, 8, dtype=torch.float64, generator=seeded_generator(2))
    matrix = dependency_matrix(lambda x: attention(x, x, x, attn_mask=mask), {"x": x}, "x")
    assert matrix.depends[2] == (True, False, False, False)
    assert matrix.depends[3] == (True,) * 4


def test_the_band_decides_dependence(monkeypatch):
    """Fed strengths: the same 3.8e-16 is rounding next to 4.0, and dependence when the block's scale is 1e-15."""
    x = torch.zeros(1, 2, 1, dtype=torch.float64)

    def fake(strength):
        return lambda *args: (strength, "jacobian-2", "float64")

    monkeypatch.setattr(mixing, "_jacobian_strength", fake(((4.0, 3.8e-16), (0.0, 4.0))))
    small = dependency_matrix(lambda x: x, {"x": x}, "x")
    assert small.depends == ((True, False), (False, True)) and small.rounding == ((0, 1),)
    assert small.pattern == mixing.PER_ROW
    monkeypatch.setattr(mixing, "_jacobian_strength", fake(((1e-15, 3.8e-16), (0.0, 1e-15))))
    scaled = dependency_matrix(lambda x: x, {"x": x}, "x")
    assert scaled.depends == ((True, True), (False, True)) and scaled.rounding == ()


# --- kind 4 (path rules): in-place twins behave like their out-of-place forms ---------------------------

def _causal_in_place(fill: float):
    def attend(x: torch.Tensor) -> torch.Tensor:
        T = x.shape[-2]
        scores = x @ x.transpose(-2, -1)  # (B, T, T)
        scores.masked_fill_(~torch.ones(T, T, dtype=torch.bool).tril(), fill)
        return scores.softmax(dim=-1) @ x
    return attend


@pytest.mark.parametrize("module", [nn.Threshold(0.1, 0.0, inplace=True), nn.Mish(inplace=True)],
                         ids=["threshold_", "mish_"])
def test_in_place_activations_are_per_row(module):
    torch.manual_seed(0)
    layer = nn.Sequential(nn.Linear(4, 4), module)
    matrix = measure_paths(layer, torch.randn(1, 3, 4))
    assert matrix.fallbacks == {}
    assert matrix.products == ((1, None, None), (None, 1, None), (None, None, 1))


@pytest.mark.parametrize("fill", [NEG, -1e9], ids=["-inf", "-1e9"])
def test_scores_masked_in_place_cut_the_future(fill):
    matrix = measure_paths(_causal_in_place(fill), torch.randn(1, 4, 3))
    assert matrix.fallbacks == {}
    assert matrix.products == tuple(tuple(1 if j >= i else None for j in range(4)) for i in range(4))


def test_an_in_place_prefix_sum_is_causal():
    matrix = measure_paths(lambda x: (x * 2).cumsum_(dim=-2), torch.randn(1, 4, 3))
    assert matrix.fallbacks == {}
    assert matrix.ops == tuple(tuple(2 if j >= i else None for j in range(4)) for i in range(4))  # mul, cumsum_


def test_out_of_place_twin_is_found_for_in_place_ops_only():
    from seqlab.measure.path_rules import is_pointwise, out_of_place
    aten = torch.ops.aten
    assert out_of_place(aten.masked_fill_.Scalar) is aten.masked_fill.Scalar
    assert is_pointwise(aten.threshold_.default) and is_pointwise(aten.gelu_.default)
    assert out_of_place(aten.mm.default) is None and not is_pointwise(aten.mm.default)


# --- kind 6: a weight exactly 0 in the dtype cuts; a nonzero one does not -------------------------------

def _filled(fill: float):
    def attend(x: torch.Tensor) -> torch.Tensor:
        T = x.shape[-2]
        scores = x @ x.transpose(-2, -1) + torch.full((T, T), fill, dtype=x.dtype).triu(1)  # (B, T, T)
        return scores.softmax(dim=-1) @ x
    return attend


CAUSAL_1 = tuple(tuple(1 if j >= i else None for j in range(5)) for i in range(5))
ALL_1 = ((1,) * 5,) * 5


@pytest.mark.parametrize(("fill", "dtype", "expected"), [
    (-1e30, torch.float32, CAUSAL_1),  # the issue: exp(-1e30) = 0 in float32
    (-200.0, torch.float32, CAUSAL_1),  # exp(-200) = 1e-87: below float32's 1e-45, exactly 0
    (-200.0, torch.float64, ALL_1),  # the same fill in float64 leaves 1e-87 > 0: the path stays
    (-10.0, torch.float32, ALL_1),  # a small fill: weight ~5e-5, connected
], ids=["issue", "-200-f32", "-200-f64", "-10-f32"])
def test_underflowed_weights_cut_paths(fill, dtype, expected):
    x = torch.randn(1, 5, 4, generator=seeded_generator()).to(dtype)
    weights = (x @ x.transpose(-2, -1) + torch.full((5, 5), fill, dtype=dtype).triu(1)).softmax(-1)
    assert bool((weights.triu(1) == 0).all()) == (expected == CAUSAL_1)  # the condition, measured
    assert measure_paths(_filled(fill), x).products == expected


# --- kind 7: float32 order verdicts ---------------------------------------------------------------------

class _Offset(nn.Module):
    """The issue's MHA(16, 2), its input plus a position-dependent offset scale · i / 32."""

    def __init__(self, scale: float) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.attention = nn.MultiheadAttention(16, 2)
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        z = x + self.scale * torch.arange(x.shape[0], dtype=x.dtype)[:, None] / 32  # (T, 16)
        return self.attention(z, z, z)[0]


@pytest.mark.parametrize(("scale", "expected"), [
    (1e-4, "does not hold"),  # the issue: 8e-6 of change, under float32's tolerance, 100x its own rounding
    (1e-7, "cannot tell at float32"),  # a change float64 sees and float32 rounding hides
    (0.0, "holds"),
], ids=["issue-1e-4", "1e-7", "none"])
def test_float32_order_verdict(scale, expected):
    x = torch.randn(32, 16, generator=seeded_generator())
    result = measure_order(_Offset(scale).eval(), x)
    assert result.dtype == "float32" and result.verdict == expected
    assert result.max_abs_change <= result.tolerance  # the old rule would have said "equivariant" to all three
    assert result.equivariant is {"holds": True, "does not hold": False}.get(expected)  # None: cannot tell
    assert result.rounding is not None and 0.0 < result.rounding < 1e-6


def test_float32_without_a_float64_rerun_cannot_tell(monkeypatch):
    x = torch.randn(32, 16, generator=seeded_generator())
    layer = _Offset(1e-4).eval()
    around = measure_order(lambda x: layer(x), x)  # no module to copy, and float64 rows are refused
    assert around.verdict == "cannot tell at float32" and around.equivariant is None
    assert measure_order(lambda x: layer(x), x, reference=copy.deepcopy(layer).double()).verdict == "does not hold"
    monkeypatch.setattr(order, "_rerun", lambda *args: order._Rerun(change=0.0, tolerance=1e-13, rounding=1e-7))
    assert measure_order(_Offset(1e-4).eval(), x).verdict == "holds"  # a float64 rerun that saw nothing


# --- kind 9: query length != key length -----------------------------------------------------------------

def test_cross_attention_three_queries_over_seven_memory_rows():
    torch.manual_seed(0)
    attention = nn.MultiheadAttention(8, 2, batch_first=True).eval()
    queries = torch.randn(1, 3, 8, generator=seeded_generator(1))
    matrix = measure_paths(lambda memory: attention(queries, memory, memory)[0], torch.randn(1, 7, 8))
    assert matrix.sources == tuple(range(7))
    assert matrix.products == ((3, 3, 3),) * 7  # memory -> v (W_v), A V, out-projection


def test_decoding_one_query_over_t_keys():
    q = torch.randn(1, 1, 1, 8, generator=seeded_generator(1))
    matrix = measure_paths(lambda kv: F.scaled_dot_product_attention(q, kv, kv)[0], torch.randn(1, 1, 6, 8))
    assert matrix.products == ((1,),) * 6


# --- profile: no false paths, complete -----------------------------------------------------------------

@pytest.mark.parametrize("layer", [_filled(-1e30), _causal_in_place(NEG)], ids=["fill", "masked_fill_"])
def test_profile_sees_no_path_from_the_future(layer):
    result = profile(layer, torch.randn(1, 5, 4, generator=seeded_generator()))
    assert result.path.fallbacks == {} and result.complete
    assert result.path.last_to_first_products is None and result.path.first_to_last_products == 1


# --- kind 11 in the paths: the module's own layout ----------------------------------------------------

def test_paths_refuse_a_batch_for_a_sequence_first_module():
    rnn = nn.RNN(3, 4)  # batch_first=False: (1, 8, 3) would be read as 1 position of a batch of 8
    with pytest.raises(SeqlabError, match="batch_first=False"):
        measure_paths(rnn, torch.randn(1, 8, 3))
    assert measure_paths(rnn, torch.randn(8, 3), sources=(0,)).products == ((1, 2, 3, 4, 5, 6, 7, 8),)
    assert measure_paths(nn.RNN(3, 4, batch_first=True), torch.randn(1, 8, 3), sources=(0,)).products[0][-1] == 8
