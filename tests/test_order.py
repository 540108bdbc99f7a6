"""Tests for seqlab.measure.order (L10): attention is blind to order, a recurrence is not."""

import math

import pytest
import torch

from seqlab.errors import SeqlabError
from seqlab.measure.order import measure_key_value_order, measure_order, tolerance


def _attend(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """softmax(Q K^T / sqrt(d_k)) V: (T_q, d_k), (T_k, d_k), (T_k, d_v) -> (T_q, d_v)."""
    return torch.softmax(q @ k.T / math.sqrt(q.shape[-1]), dim=-1) @ v


def _self_attention(d: int, dtype: torch.dtype):
    w = torch.randn(d, d, generator=torch.Generator().manual_seed(0)).to(dtype)  # (d, d)

    def layer(x: torch.Tensor) -> torch.Tensor:
        h = x @ w  # q = k = v: (T, d)
        return _attend(h, h, h)

    return layer


def _x(T: int, d: int, dtype: torch.dtype = torch.float64, seed: int = 1) -> torch.Tensor:
    return torch.randn(T, d, generator=torch.Generator().manual_seed(seed)).to(dtype)


def test_rnn_is_not_equivariant() -> None:
    torch.manual_seed(2)
    rnn = torch.nn.RNN(4, 5).eval()
    r = measure_order(rnn, _x(10, 4, torch.float32))
    assert r.kind == "rows" and r.dtype == "float32"
    assert not r.equivariant
    assert r.max_abs_change > 1e3 * r.tolerance  # not a rounding effect
    assert 0.0 < r.max_abs_output <= 1.0  # tanh outputs


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("T", [2, 7, 64])
def test_self_attention_is_equivariant(dtype: torch.dtype, T: int) -> None:
    # its weight is closed over in ``dtype``: only a reference in float64 can settle a float32 change
    r = measure_order(_self_attention(8, dtype), _x(T, 8, dtype), seed=3, reference=_self_attention(8, torch.float64))
    assert r.equivariant is True and r.holds is True and r.verdict == "holds"
    assert r.max_abs_change <= r.tolerance
    assert r.tolerance == tolerance(r.max_abs_output, T, dtype)
    assert r.dtype == str(dtype).removeprefix("torch.")


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_attention_is_key_value_invariant(dtype: torch.dtype) -> None:
    q, k, v = _x(5, 8, dtype, seed=4), _x(9, 8, dtype, seed=5), _x(9, 3, dtype, seed=6)
    r = measure_key_value_order(_attend, q, k, v, seed=7)
    assert r.kind == "key-value pairs"
    assert r.invariant
    assert len(r.permutation) == 9


def test_keys_permuted_without_values_change_outputs() -> None:
    # pairs must move together: an attend that scrambles the pairing is not invariant
    q, k, v = _x(5, 8, seed=4), _x(9, 8, seed=5), _x(9, 3, seed=6)
    r = measure_key_value_order(lambda q, k, v: _attend(q, k.flip(0), v), q, k, v)
    assert not r.invariant


def test_position_dependent_layer_is_not_equivariant() -> None:
    x = _x(6, 3)
    r = measure_order(lambda z: z + torch.arange(z.shape[0], dtype=z.dtype)[:, None], x)
    assert not r.equivariant
    assert r.max_abs_change >= 1.0  # x[pi] + arange vs x[pi] + pi: integer gaps


def test_permutation_is_seeded_and_never_identity() -> None:
    layer = lambda z: 2.0 * z  # noqa: E731
    for seed in range(20):
        r = measure_order(layer, _x(2, 3), seed=seed)
        assert r.permutation == (1, 0)  # the only non-identity permutation of 2 rows
        assert r.equivariant and r.max_abs_change == 0.0
    a, b = measure_order(layer, _x(8, 3), seed=5), measure_order(layer, _x(8, 3), seed=5)
    assert a.permutation == b.permutation
    assert sorted(a.permutation) == list(range(8)) and a.permutation != tuple(range(8))
    assert a.seed == 5


def test_wrong_kind_verdict_raises() -> None:
    r = measure_order(lambda z: z, _x(3, 2))
    with pytest.raises(SeqlabError, match="invariant"):
        r.invariant
    q = k = v = _x(3, 2)
    kv = measure_key_value_order(_attend, q, k, v)
    with pytest.raises(SeqlabError, match="equivariant"):
        kv.equivariant


def test_tolerance_formula() -> None:
    # 64 * eps * max(1, scale) * sqrt(n)
    assert tolerance(0.5, 16, torch.float32) == 64 * 2.0**-23 * 1.0 * 4
    assert tolerance(10.0, 4, torch.float64) == 64 * 2.0**-52 * 10.0 * 2


def test_bad_inputs() -> None:
    with pytest.raises(SeqlabError, match="T >= 2"):
        measure_order(lambda z: z, _x(1, 3))
    with pytest.raises(SeqlabError, match="2-dim"):
        measure_order(lambda z: z, torch.randn(4))
    with pytest.raises(SeqlabError, match="seed"):
        measure_order(lambda z: z, _x(3, 3), seed=None)  # type: ignore[arg-type]
    with pytest.raises(SeqlabError, match="rows"):
        measure_order(lambda z: z[:1], _x(3, 3))
    with pytest.raises(SeqlabError, match="non-finite"):
        measure_order(lambda z: z / 0.0, _x(3, 3))
    with pytest.raises(SeqlabError, match="same number of rows"):
        measure_key_value_order(_attend, _x(2, 3), _x(4, 3), _x(5, 3))
    with pytest.raises(SeqlabError, match="T_k >= 2"):
        measure_key_value_order(_attend, _x(2, 3), _x(1, 3), _x(1, 3))


# --- A float32 callable that is not an nn.Module (issue 27): rerun in float64 when it takes float64 ----------

def _offset(x: torch.Tensor) -> torch.Tensor:
    """Weightless self-attention on x plus 1e-5·i/32 at row i: position-dependent, by less than float32's tolerance."""
    y = x + 1e-5 * torch.arange(x.shape[0], dtype=x.dtype)[:, None] / 32
    return _attend(y, y, y)


def test_a_float32_function_is_judged_by_its_own_float64_rerun() -> None:
    x = torch.randn(32, 16, generator=torch.Generator().manual_seed(0))  # float32
    plain = measure_order(lambda z: _attend(z, z, z), x)
    assert plain.float64_change is not None and plain.float64_change <= plain.float64_tolerance  # it took float64
    assert (plain.verdict, plain.holds, plain.equivariant) == ("holds", True, True)
    moved = measure_order(_offset, x)
    assert moved.max_abs_change <= moved.tolerance  # float32's tolerance alone would call it equivariant
    assert moved.float64_change > 1e6 * moved.float64_tolerance  # 1e-5·(i − π(i))/32 seen in float64
    assert (moved.verdict, moved.holds, moved.equivariant) == ("does not hold", False, False)


def test_a_callable_that_cannot_run_in_float64_cannot_tell_and_says_none() -> None:
    x = _x(32, 16, torch.float32, seed=0)
    torch.manual_seed(0)
    mha = torch.nn.MultiheadAttention(16, 2).eval()  # float32 weights: float64 rows are refused
    around = measure_order(lambda z: mha(z, z, z, need_weights=False)[0], x)
    down = measure_order(lambda z: _attend(z.float(), z.float(), z.float()), x)  # runs, but back in float32
    for r in (around, down):
        assert r.verdict == "cannot tell at float32" and r.float64_change is None and r.rounding is None
        assert r.holds is None and r.equivariant is None  # never the float32 test's True
        assert r.max_abs_change <= r.tolerance
    q, k, v = _x(5, 8, torch.float32, 4), _x(9, 8, torch.float32, 5), _x(9, 3, torch.float32, 6)
    pairs = measure_key_value_order(lambda q_, k_, v_: _attend(q_, k_.float(), v_.float()), q, k, v)
    assert pairs.verdict == "cannot tell at float32" and pairs.invariant is None
    settled = measure_key_value_order(_attend, q, k, v)  # a plain function: its own float64 rerun
    assert settled.float64_change is not None and settled.invariant is True


@pytest.mark.parametrize(("change", "rounding", "said", "holds", "en", "es"), [
    (1e-16, 1e-7, "holds", True, "outputs shuffled the same way", "salidas barajadas igual"),
    (1.0, 1e-9, "does not hold", False, "outputs change", "las salidas cambian"),
    (1.0, 1.0, "cannot tell at float32", None, "cannot tell at float32: the change is within rounding",
     "no se puede saber en float32: el cambio está dentro del redondeo"),
])
def test_the_rerun_moves_the_field_and_the_sentence_together(monkeypatch, change, rounding, said, holds, en, es):
    """The float64 rerun patched to three measurements: verdict, ``holds`` and compare's words follow it."""
    import dataclasses

    import seqlab.measure.order as order
    from seqlab.render.compare_format import Formatter

    real = order._rerun
    monkeypatch.setattr(order, "_rerun", lambda *a: dataclasses.replace(real(*a), change=change, rounding=rounding))
    r = measure_order(lambda z: _attend(z, z, z), _x(16, 8, torch.float32, seed=2))
    assert r.max_abs_change <= r.tolerance and r.float64_change == change
    assert (r.verdict, r.holds, r.equivariant) == (said, holds, holds)
    assert Formatter("en").order(r).startswith(en) and Formatter("es").order(r).startswith(es)


def test_holds_of_reads_the_three_verdicts_and_refuses_others() -> None:
    from seqlab.measure.order import holds_of

    assert [holds_of(s) for s in ("holds", "does not hold", "cannot tell at bfloat16")] == [True, False, None]
    with pytest.raises(SeqlabError, match="expected an order verdict"):
        holds_of("maybe")


# --- Side inputs aligned with the rows (issue 21): permuted with x ---------------------------------------------

class _KeyPaddingAttention(torch.nn.Module):
    """nn.MultiheadAttention over rows x (T, d), keys masked where key_padding_mask (1, T) is True."""

    def __init__(self, d: int, dtype: torch.dtype) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.attention = torch.nn.MultiheadAttention(d, 2, batch_first=True, dtype=dtype).eval()

    def forward(self, x: torch.Tensor, key_padding_mask: torch.Tensor) -> torch.Tensor:  # (T, d), (1, T) bool
        return self.attention(x[None], x[None], x[None], key_padding_mask=key_padding_mask,
                              need_weights=False)[0][0]


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_a_key_padding_mask_moves_with_the_rows(dtype: torch.dtype) -> None:
    T, d = 7, 8
    layer = _KeyPaddingAttention(d, dtype)
    x = _x(T, d, dtype, seed=3)
    padding = torch.tensor([[False, False, True, False, True, False, False]])  # (1, T): keys 3 and 5 are padding
    aligned = measure_order(layer, x, aligned={"key_padding_mask": (padding, 1)}, seed=1)
    assert (aligned.verdict, aligned.equivariant) == ("holds", True)
    if dtype == torch.float32:  # the module's float64 copy reran it, the bool mask passed as it is
        assert aligned.float64_change is not None and aligned.float64_change <= aligned.float64_tolerance
    fixed = measure_order(lambda z: layer(z, padding), x, seed=1)  # the mask held still: other rows are masked
    assert fixed.equivariant is False and fixed.max_abs_change > 1e3 * fixed.tolerance
    negative = measure_order(layer, x, aligned={"key_padding_mask": (padding, -1)}, seed=1)
    assert negative.max_abs_change == aligned.max_abs_change  # dim -1 is dim 1


def test_position_ids_and_a_padding_mask_move_with_the_rows_of_a_bert() -> None:
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    bert = transformers.BertModel(transformers.BertConfig(
        vocab_size=16, hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32,
        max_position_embeddings=16), add_pooling_layer=False).eval().double()
    T = 6
    x = _x(T, 16, seed=4)  # (T, d_model): rows fed as inputs_embeds
    positions = torch.arange(T)[None]  # (1, T)
    mask = torch.tensor([[1, 1, 1, 1, 0, 0]])  # (1, T): the last two rows are padding

    def layer(rows, attention_mask, position_ids=None):
        return bert(inputs_embeds=rows[None], attention_mask=attention_mask, position_ids=position_ids,
                    ).last_hidden_state[0]  # (T, d_model)

    both = measure_order(layer, x, aligned={"attention_mask": (mask, 1), "position_ids": (positions, 1)})
    assert both.verdict == "holds" and both.equivariant is True  # each row keeps its position and its mask
    mask_only = measure_order(layer, x, aligned={"attention_mask": (mask, 1)})  # positions 1…T stay put
    assert mask_only.verdict == "does not hold" and mask_only.max_abs_change > 1e3 * mask_only.tolerance
    held = measure_order(lambda rows, position_ids: layer(rows, mask, position_ids), x,
                         aligned={"position_ids": (positions, 1)})  # the mask held still
    assert held.equivariant is False


def test_a_per_position_float_input_is_cast_for_the_rerun() -> None:
    T = 8
    x = _x(T, 4, torch.float32, seed=5)
    bias = _x(T, 1, torch.float32, seed=6)  # (T, 1): added to each row's scores as a key bias

    def layer(rows, key_bias):
        return torch.softmax(rows @ rows.T + key_bias.T, dim=-1) @ rows  # (T, 4)

    r = measure_order(layer, x, aligned={"key_bias": (bias, 0)})
    assert r.float64_change is not None and r.equivariant is True  # the rerun cast x and the bias to float64
    assert measure_order(lambda rows: layer(rows, bias), x).equivariant is False


@pytest.mark.parametrize(("aligned", "match"), [
    ({"m": (torch.ones(5), 0)}, "must have T = 4 entries along dim 0"),
    ({"m": (torch.ones(1, 4), 2)}, "dim must be in"),
    ({"m": torch.ones(4)}, "must be a .tensor, dim. pair"),
    ({"m": (torch.ones(4), True)}, "must be a .tensor, dim. pair"),
    ({"not a name": (torch.ones(4), 0)}, "keyword names"),
    ([("m", (torch.ones(4), 0))], "must map keyword names"),
])
def test_bad_aligned_inputs(aligned, match) -> None:
    with pytest.raises(SeqlabError, match=match):
        measure_order(lambda z, m: z, _x(4, 3), aligned=aligned)


def test_a_callable_that_asserts_its_dtype_cannot_tell_instead_of_failing() -> None:
    def picky(z: torch.Tensor) -> torch.Tensor:
        assert z.dtype == torch.float32, "float32 only"  # noqa: S101  what user code does
        return _attend(z, z, z)

    r = measure_order(picky, _x(8, 4, torch.float32))
    assert r.verdict == "cannot tell at float32" and r.equivariant is None and r.float64_change is None


@pytest.mark.parametrize(("times_tolerance", "holds"), [(0.5, True), (1.0, True), (1.5, False), (1000.0, False)])
def test_a_float64_change_is_judged_against_its_own_tolerance(times_tolerance, holds):
    """In float64 no rerun is needed: a change above the tolerance does not hold, however the rounding reads."""
    from seqlab.measure.order import FAILS, HOLDS, verdict

    tol = tolerance(3.0, 8, torch.float64)
    assert verdict(times_tolerance * tol, tol, torch.float64, None) == (HOLDS if holds else FAILS)


def test_an_order_sensitive_float64_layer_does_not_hold():
    """Position i gets i · 1e-9 added: in float64 that is far above rounding, so order is seen."""
    x = torch.randn(8, 4, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    ramp = torch.arange(8, dtype=torch.float64)[:, None] * 1e-9
    result = measure_order(lambda r: r + ramp, x, seed=0)
    assert result.max_abs_change > 1000 * result.tolerance and not result.holds
