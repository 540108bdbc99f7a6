"""seqlab.measure.ops: what each ATen op is for the engine, and the FLOP formulas it adds to PyTorch's.

Formulas are checked against hand arithmetic and against a second route — PyTorch's own formula for the same
product written another way (``mv`` as ``mm`` by a column, ``linear`` as ``mm``, a fused attention kernel as
PyTorch's SDPA formula) or seqlab's closed forms (:mod:`seqlab.cost`) for the fused layers. The sorting of ops is
pinned op by op on every branch of :func:`arithmetic_kind`, so that a mutant moving one op to another kind dies.
Unit: FLOPs (one multiply-add = 2), as ``FlopCounterMode`` counts; ``// 2`` gives multiplications.
"""

from __future__ import annotations

import math

import pytest
import torch
from torch.utils.flop_counter import flop_registry

from seqlab import cost
from seqlab.measure import ops
from seqlab.measure.ops import (
    EXTRA_FORMULAS,
    FUSED_OPS,
    PYTORCH_TWINS,
    ProductLedger,
    ZeroWeightLedger,
    arithmetic_kind,
    bound_arguments,
    fft_multiplications,
    functional_twin,
    has_floating,
    is_contraction,
    is_movement,
    is_uncounted_compute,
    is_unknown,
    op_name,
    product_pairs,
    tensors_in,
)

aten = torch.ops.aten
prims = torch.ops.prims


def pytorch(packet):
    """PyTorch's own formula for ``packet``, on shapes (unwrapped from its shape-reading wrapper)."""
    formula = flop_registry[packet]
    return getattr(formula, "__wrapped__", formula)


# --- formulas: hand arithmetic and a second route -----------------------------------------------------------------

@pytest.mark.parametrize("n, m", [(1, 1), (4, 8), (7, 3)])
def test_matrix_vector_is_mm_by_a_column(n, m):
    assert ops.matrix_vector_flop((n, m), (m,)) == 2 * n * m
    assert ops.matrix_vector_flop((n, m), (m,)) == pytorch(aten.mm)((n, m), (m, 1))
    assert ops.add_matrix_vector_flop((n,), (n, m), (m,)) == 2 * n * m  # the bias add excluded


@pytest.mark.parametrize("n", [1, 8, 13])
def test_dot_is_a_one_by_one_product(n):
    assert ops.dot_flop((n,), (n,)) == 2 * n == pytorch(aten.mm)((1, n), (n, 1))


def test_addbmm_and_addr():
    assert ops.add_batched_matrix_flop((3, 5), (2, 3, 4), (2, 4, 5)) == 2 * 2 * 3 * 4 * 5 == 240
    assert ops.add_batched_matrix_flop((3, 5), (2, 3, 4), (2, 4, 5)) == pytorch(aten.bmm)((2, 3, 4), (2, 4, 5))
    assert ops.add_outer_product_flop((3, 5), (3,), (5,)) == 2 * 15 == pytorch(aten.mm)((3, 1), (1, 5))


@pytest.mark.parametrize("q, k, v", [((1, 12, 64, 64), (1, 12, 64, 64), (1, 12, 64, 64)),
                                     ((2, 3, 5, 4), (2, 3, 7, 4), (2, 3, 7, 6))])
def test_a_fused_attention_kernel_is_pytorchs_sdpa_formula(q, k, v):
    ours = ops.attention_kernel_flop(q, k, v)
    B, H, L, E = q
    S, Ev = k[-2], v[-1]
    assert ours == 2 * B * H * L * S * (E + Ev)
    assert ours == pytorch(aten._scaled_dot_product_efficient_attention)(q, k, v)
    assert ours // 2 == B * H * cost.attention_multiplications(L, E, Ev, T_k=S)


def test_the_docstring_attention_count():
    assert ops.attention_kernel_flop((1, 12, 64, 64), (1, 12, 64, 64), (1, 12, 64, 64)) // 2 == 6_291_456


@pytest.mark.parametrize("T, E", [(50, 512), (7, 4), (1, 3)])
def test_multi_head_attention_fast_path_is_the_layers_closed_form(T, E):
    """B = 1, L = S = T: Q, K, V and W_O projections plus the call, as cost.attention_layer_multiplications."""
    flop = ops.native_multi_head_attention_flop((1, T, E), (1, T, E), (1, T, E), E)
    assert flop // 2 == cost.attention_layer_multiplications(T, E, E, E)
    assert ops.native_multi_head_attention_flop((T, E), (T, E), (T, E), E) == flop  # unbatched: the same
    assert ops.native_multi_head_attention_flop((3, T, E), (3, T, E), (3, T, E), E) == 3 * flop


def test_multi_head_attention_with_other_key_lengths():
    # B = 2, L = 3, S = 5, E = 4: (3 + 10)·16 + 3·16 + 2·3·5·4 = 208 + 48 + 120 = 376 per batch row
    assert ops.native_multi_head_attention_flop((2, 3, 4), (2, 5, 4), (2, 5, 4), 4) // 2 == 2 * 376


def test_transformer_encoder_layer_adds_its_feed_forward():
    T, E, F = 64, 512, 2048
    shapes = (8, (3 * E, E), (3 * E,), (E, E), (E,), False, False, 1e-5, (E,), (E,), (E,), (E,),
              (F, E), (F,), (E, F))
    flop = ops.transformer_encoder_layer_flop((1, T, E), E, *shapes)
    assert flop // 2 == cost.attention_layer_multiplications(T, E, E, E) + T * 2 * E * F
    assert ops.transformer_encoder_layer_flop((1, 64, 512), 512, 4, (1536, 512), (1536,), (512, 512), (512,),
                                              False, False, 1e-5, (512,), (512,), (512,), (512,), (512, 512),
                                              (512,), (512, 512)) // 2 == 104_857_600


@pytest.mark.parametrize("cell", ["rnn", "gru", "lstm"])
@pytest.mark.parametrize("T, d_in, d_h", [(250, 12, 128), (5, 3, 2)])
def test_the_fused_recurrence_is_the_gated_closed_form(cell, T, d_in, d_h):
    G = cost.GATES[cell]
    flop = ops.fused_recurrent_layer_flop((1, T, d_in), (G * d_h, d_in), (G * d_h, d_h))
    assert flop // 2 == cost.gated_recurrence_multiplications(T, d_in, d_h, cell)
    assert ops.fused_recurrent_layer_flop((T, d_in), (G * d_h, d_in), (G * d_h, d_h)) == flop  # unbatched
    assert ops.fused_recurrent_layer_flop((T * 4, d_in), (G * d_h, d_in), (G * d_h, d_h)) == 4 * flop  # packed rows


def test_grouped_products_in_every_layout():
    assert ops.grouped_matrix_flop((6, 4), (3, 4, 8), out_shape=(6, 8)) // 2 == 6 * 4 * 8
    assert ops.grouped_matrix_flop((3, 6, 4), (3, 4, 8), out_shape=(3, 6, 8)) == pytorch(aten.bmm)((3, 6, 4), (3, 4, 8))
    assert ops.grouped_matrix_flop((3, 6, 4), (4, 8), out_shape=(6, 8)) // 2 == 6 * 8 * 4
    assert ops.grouped_matrix_flop((6, 4), (4, 8), out_shape=(3, 6, 8)) // 2 == 6 * 4 * 8  # offsets over K


def test_linear_and_matmul_reaching_the_counter_whole():
    assert ops.linear_flop((1, 5, 8), (16, 8)) == pytorch(aten.mm)((5, 8), (8, 16)) == 2 * 640
    assert ops.matmul_flop((2, 3, 4), (4, 5)) == pytorch(aten.bmm)((2, 3, 4), (2, 4, 5)) == 2 * 120
    assert ops.matmul_flop((4,), (4, 5)) == 2 * 20  # a 1-D left factor is one row
    assert ops.matmul_flop((3, 4), (4,)) == 2 * 12  # a 1-D right factor is one column
    assert ops.matmul_flop((2, 1, 3, 4), (5, 4, 6)) == 2 * 10 * 3 * 4 * 6  # batch dims broadcast to (2, 5)


@pytest.mark.parametrize("n, p", [(1, 3), (2, 1), (64, 16), (5, 7)])
def test_a_triangular_solve_is_n_n_minus_one_over_two_per_column(n, p):
    assert ops.triangular_solve_flop((n, n), (n, p)) // 2 == n * (n - 1) // 2 * p
    assert ops.triangular_solve_flop((n, n), (p, n), left=False) // 2 == n * (n - 1) // 2 * p  # X A = B: rows
    assert ops.triangular_solve_flop((3, n, n), (n, p)) == 3 * ops.triangular_solve_flop((n, n), (n, p))


def test_a_triangular_solve_is_counted_as_the_substitution_does():
    """Second route: forward substitution written out does Σ_i i = n(n − 1)/2 multiply-adds per column."""
    n, p = 6, 2
    multiply_adds = sum(i for i in range(n)) * p  # row i subtracts i known terms
    assert ops.triangular_solve_flop((n, n), (n, p)) // 2 == multiply_adds == 30


def test_a_quantised_linear_is_out_times_d_in():
    assert ops.quantized_linear_flop((1, 5, 8), None, out_shape=(1, 5, 16)) == ops.linear_flop((1, 5, 8), (16, 8))


@pytest.mark.parametrize("n, complex_, real", [(0, 0, 0), (1, 0, 0), (2, 4, 2), (3, 10, 5), (8, 48, 24),
                                               (16, 128, 64), (5, 24, 12)])
def test_fft_multiplications(n, complex_, real):
    # 2·n·log2 n and n·log2 n, rounded up: log2 3 · 3 = 4.75 → 5; log2 5 · 5 = 11.6 → 12
    assert fft_multiplications(n, real=False) == complex_
    assert fft_multiplications(n, real=True) == real
    if n > 1:
        assert real == math.ceil(n * math.log2(n))


def test_fft_formulas_along_one_and_several_dims():
    assert ops.fft_r2c_flop((4, 16), [1], out_shape=(4, 9)) // 2 == 4 * 64
    assert ops.fft_r2c_flop((4, 16), [-1], out_shape=(4, 9)) == ops.fft_r2c_flop((4, 16), [1], out_shape=(4, 9))
    assert ops.fft_c2r_flop((4, 9), [1], 0, 16, out_shape=(4, 16)) // 2 == 4 * 64  # read on the real output
    assert ops.fft_c2c_flop((4, 16), [1], out_shape=(4, 16)) // 2 == 4 * 128
    # rfft2 of (8, 4): complex along dim 0 (4 vectors of 8 points), real along the last (8 vectors of 4 points)
    assert ops.fft_r2c_flop((8, 4), [0, 1], out_shape=(8, 3)) // 2 == 4 * 48 + 8 * 8
    assert ops.fft_c2c_flop((8, 4), [0, 1], out_shape=(8, 4)) // 2 == 4 * 48 + 8 * 16


# --- the formula table --------------------------------------------------------------------------------------------

def test_extra_formulas_cover_what_pytorch_misses_and_no_more():
    for packet in (aten.mv, aten.addmv, aten.dot, aten.vdot, aten.addbmm, aten.addr, aten.mkldnn_rnn_layer,
                   aten._native_multi_head_attention, aten._transformer_encoder_layer_fwd, aten._fft_r2c,
                   aten._fft_c2c, aten._fft_c2r, aten.linalg_solve_triangular, aten._grouped_mm):
        assert packet in EXTRA_FORMULAS, packet
    for packet in (aten.mm, aten.bmm, aten.addmm, aten.baddbmm, aten.convolution):
        assert packet in flop_registry and packet not in EXTRA_FORMULAS, packet  # PyTorch's own, never replaced


def test_in_place_twins_multiply_as_their_out_of_place_forms():
    assert {op_name(packet.default) for packet in PYTORCH_TWINS} >= {"aten.addmm_", "aten.baddbmm_"}
    assert EXTRA_FORMULAS[aten.addmm_] is pytorch(aten.addmm)
    assert EXTRA_FORMULAS[aten.addmv_] is ops.add_matrix_vector_flop
    assert EXTRA_FORMULAS[aten.addbmm_] is ops.add_batched_matrix_flop
    assert aten.addmv_ not in PYTORCH_TWINS  # seqlab's formula, not PyTorch's


# --- what each op is ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("op, kind", [
    (aten.view.default, "movement"), (aten.zeros.default, "movement"), (aten.clone.default, "movement"),
    (aten.cat.default, "movement"), (aten.index_select.default, "movement"), (aten.tril.default, "movement"),
    (aten.mm.default, "contraction"), (aten.addmm_.default, "contraction"), (aten.mv.default, "contraction"),
    (aten.convolution.default, "contraction"),
    (aten.mkldnn_rnn_layer.default, "fused"), (aten._native_multi_head_attention.default, "fused"),
    (aten._scaled_dot_product_flash_attention_for_cpu.default, "decomposed"),
    (aten.silu.default, "decomposed"), (aten._softmax.default, "decomposed"),
    (aten.native_layer_norm.default, "decomposed"),
    (aten.where.self, "selection"), (aten.masked_fill.Scalar, "selection"),
    (aten.sigmoid.default, "pointwise"), (aten.add_.Tensor, "pointwise"), (aten.relu_.default, "pointwise"),
    (aten.exp.default, "pointwise"), (aten.mul.Tensor, "pointwise"),
    (aten.sum.dim_IntList, "reduction"), (aten.mean.dim, "reduction"), (aten.amax.default, "reduction"),
    (aten.cumsum.default, "scan"), (aten.index_add.default, "scatter"),
    (aten.topk.default, "uncosted"), (aten.sort.default, "uncosted"), (aten._cdist_forward.default, "uncosted"),
    (prims.convert_element_type.default, "movement"), (prims.div.default, "pointwise"),
    (prims.var.default, "reduction"),
])
def test_arithmetic_kind(op, kind):
    assert arithmetic_kind(op) == kind


@pytest.mark.parametrize("op, contraction, movement, compute", [
    (aten.mm.default, True, False, False), (aten.view.default, False, True, False),
    (aten.zeros.default, False, True, False), (aten.relu_.default, False, False, True),
    (aten.threshold_.default, False, False, True), (aten.sort.default, False, False, True),
    (aten._softmax.default, False, False, True), (aten.mkldnn_rnn_layer.default, True, False, False),
])
def test_the_three_kinds_of_the_multiplication_unit(op, contraction, movement, compute):
    assert (is_contraction(op), is_movement(op), is_uncounted_compute(op)) == (contraction, movement, compute)
    assert not is_unknown(op)


@pytest.mark.parametrize("op", [aten._cdist_forward.default, aten.linalg_qr.default, aten._linalg_eigh.default])
def test_an_op_of_no_kind_is_unknown(op):
    assert is_unknown(op) and not is_contraction(op) and not is_movement(op) and not is_uncounted_compute(op)


def test_fused_kernels_are_counted_by_formula_or_named():
    """A fused kernel with a formula is charged its contractions ("fused", or "decomposed" where PyTorch can
    decompose it); the GPU recurrent kernels have none and stay unknown: named, never counted as 0."""
    kinds = {op_name(getattr(packet, overload)): arithmetic_kind(getattr(packet, overload))
             for packet in FUSED_OPS for overload in packet.overloads()}
    assert {name for name, kind in kinds.items() if kind == "uncosted"} == {"aten._cudnn_rnn", "aten.miopen_rnn"}
    assert kinds["aten._scaled_dot_product_flash_attention_for_cpu"] == "decomposed"
    assert kinds["aten.mkldnn_rnn_layer"] == kinds["aten._native_multi_head_attention"] == "fused"
    assert is_unknown(aten._cudnn_rnn.default) and is_unknown(aten.miopen_rnn.default)


@pytest.mark.parametrize("op, twin", [
    (aten.threshold_.default, aten.threshold.default), (aten.masked_fill_.Scalar, aten.masked_fill.Scalar),
    (aten.mm.out, aten.mm.default), (aten.add.Tensor, aten.add.Tensor), (aten.where.self_out, aten.where.self),
    (aten.relu.default, aten.relu.default),
])
def test_functional_twin(op, twin):
    assert functional_twin(op) is twin


def test_op_names():
    assert op_name(aten.bmm.default) == "aten.bmm"
    assert op_name(aten.add.Tensor) == "aten.add"


def test_bound_arguments_fill_defaults_and_read_keywords():
    bound = bound_arguments(aten.addmm.default, ("s", "a", "b"), {"beta": 0})
    assert bound == {"self": "s", "mat1": "a", "mat2": "b", "beta": 0, "alpha": 1}
    assert bound_arguments(aten.add.Tensor, (1, 2), {}) == {"self": 1, "other": 2, "alpha": 1}


def test_tensors_in_and_has_floating():
    a, b = torch.ones(2), torch.ones(1, dtype=torch.long)
    assert list(tensors_in((a, [b, (a,)], 3, "x"))) == [a, b, a]
    assert not has_floating((torch.arange(4), [torch.ones(2, dtype=torch.bool)], 2.5))
    assert has_floating((torch.arange(4), [torch.ones(1)]))
    assert has_floating((torch.ones(1, dtype=torch.complex64),))


# --- element-wise products that a sum makes a contraction ---------------------------------------------------------

@pytest.mark.parametrize("a, b, out, expected", [
    ((3, 1), (1, 4), (3, 4), (12, frozenset())),  # an outer product: 3·4
    ((5, 3, 1), (5, 3, 4), (5, 3, 4), (0, frozenset({-3, -2}))),  # q[..., None] * S
    ((3, 4), (3, 4), (3, 4), (0, frozenset({-2, -1}))),  # a gate product
    ((1,), (3, 4), (3, 4), (0, frozenset())),  # a scaling
])
def test_product_pairs(a, b, out, expected):
    assert product_pairs((torch.ones(a), torch.ones(b)), torch.ones(out)) == expected


def test_product_pairs_read_strides_not_sizes():
    a = torch.ones(3, 1).expand(3, 4)  # stride 0 along the 4: one value per row
    assert product_pairs((a, torch.ones(1, 4).expand(3, 4)), torch.ones(3, 4)) == (12, frozenset())
    masks = torch.ones(3, 1, dtype=torch.bool), torch.ones(1, 4, dtype=torch.bool)
    assert product_pairs(masks, torch.ones(3, 4, dtype=torch.bool)) == (0, frozenset())  # a logical and


def test_the_product_ledger_pairs_a_product_with_the_sum_over_a_shared_dim():
    ledger, mul, total = ProductLedger(), aten.mul.Tensor, aten.sum.dim_IntList
    q, S = torch.ones(5, 3), torch.ones(5, 3, 4)
    p = q[..., None] * S
    assert ledger.product(mul, (q[..., None], S), p) == 0
    assert ledger.reduction(total, (p, [-1]), {}) == (0, False)  # -1 is S's own dim: not shared
    assert ledger.reduction(total, (p, [-2]), {}) == (60, True)  # Σ_k: 5·3·4 multiply-adds
    assert ledger.reduction(total, (p, [-2]), {}) == (0, False)  # paired once


def test_the_product_ledger_needs_the_products_own_result():
    ledger, mul, total = ProductLedger(), aten.mul.Tensor, aten.sum.dim_IntList
    x, w = torch.ones(4, 3), torch.ones(4, 3)
    p = x * w
    ledger.product(mul, (x, w), p)
    assert ledger.reduction(total, (p.clone(), [-1]), {}) == (0, False)
    assert ledger.reduction(total, (p, None), {}) == (12, True)  # a sum of everything reduces the shared dims


def test_the_product_ledger_counts_an_outer_product_at_the_product():
    ledger = ProductLedger()
    a, b = torch.ones(3, 1), torch.ones(1, 4)
    p = a * b
    assert ledger.product(aten.mul.Tensor, (a, b), p) == 12
    assert ledger.reduction(aten.sum.dim_IntList, (p, [-1]), {}) == (0, True)  # a product step, nothing more
    assert ledger.product(aten.add.Tensor, (a, b), a + b) == 0  # only products


def test_zero_weights_cost_their_score_and_mix_multiplications():
    ledger = ZeroWeightLedger()
    g = torch.Generator().manual_seed(0)
    q, v = torch.randn(1, 4, 3, generator=g), torch.randn(1, 4, 5, generator=g)
    s = torch.bmm(q, q.mT)
    assert ledger.observe(aten.bmm.default, (q, q.mT), {}, s) == 0
    m = s.masked_fill(torch.ones(4, 4, dtype=torch.bool).triu(1), float("-inf"))
    assert ledger.observe(aten.masked_fill.Scalar, (s, None, None), {}, m) == 0
    p = torch.softmax(m, -1)
    assert ledger.observe(aten._softmax.default, (m, -1, False), {}, p) == 6 * 3  # 6 closed pairs · E
    assert ledger.observe(aten.bmm.default, (p, v), {}, p @ v) == 6 * 5  # 6 zero weights · Ev


def test_no_zero_weight_no_charge():
    ledger = ZeroWeightLedger()
    q = torch.randn(1, 4, 3, generator=torch.Generator().manual_seed(1))
    s = torch.bmm(q, q.mT)
    ledger.observe(aten.bmm.default, (q, q.mT), {}, s)
    p = torch.softmax(s, -1)
    assert ledger.observe(aten._softmax.default, (s, -1, False), {}, p) == 0
    assert ledger.observe(aten.bmm.default, (p, q), {}, p @ q) == 0


def test_the_zero_weight_ledger_sweeps_the_dead_and_keeps_the_living():
    """Followed tensors are held weakly, without a callback: once the table passes its sweep size the entries of
    tensors that died go, a living one keeps its role, and a dead tensor's id reused by another reads as unfollowed."""
    ledger = ZeroWeightLedger()
    q = torch.randn(1, 4, 3, generator=torch.Generator().manual_seed(2))
    kept = torch.bmm(q, q.mT)
    ledger.observe(aten.bmm.default, (q, q.mT), {}, kept)  # kept: scores, followed
    for _ in range(3 * ops._SWEEP_FLOOR):  # each result dies at once
        scores = torch.bmm(q, q.mT)
        ledger.observe(aten.bmm.default, (q, q.mT), {}, scores)
        del scores
    assert len(ledger._followed) <= 2 * ops._SWEEP_FLOOR + 1  # swept, not one entry per op ever followed
    m = kept.masked_fill(torch.ones(4, 4, dtype=torch.bool).triu(1), float("-inf"))
    ledger.observe(aten.masked_fill.Scalar, (kept, None, None), {}, m)  # still followed: m is scores too
    p = torch.softmax(m, -1)
    assert ledger.observe(aten._softmax.default, (m, -1, False), {}, p) == 6 * 3
    stranger = torch.randn(4, 4)  # never followed: its softmax closes nothing, whatever id it was given
    assert ledger.observe(aten._softmax.default, (stranger, -1, False), {}, torch.softmax(stranger, -1)) == 0
