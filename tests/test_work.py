"""Counted multiplications (seqlab.measure.work) on the kernels where widely used counters go wrong.

Each expected number sits beside its hand arithmetic. One multiplication per multiply-add; bias adds,
activations, gate products and softmax are not counted (L5, L6).
"""

import math

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils.rnn import pack_padded_sequence

from seqlab.measure.work import count_multiplications


def frozen(module: nn.Module) -> nn.Module:
    for parameter in module.parameters():
        parameter.requires_grad_(False)
    return module.eval()


def test_fused_cpu_lstm():
    # 250 positions * 4 gates * 128 * (12 + 128) = 17_920_000
    work = count_multiplications(nn.LSTM(12, 128, batch_first=True), torch.randn(1, 250, 12))
    assert work.multiplications == 17_920_000
    assert work.by_op == {"aten.mkldnn_rnn_layer": 17_920_000}
    assert work.complete


def test_fused_cpu_sdpa():
    # 12 heads * 64 * 64 * (64 + 64) = 6_291_456
    q = torch.randn(1, 12, 64, 64)
    assert count_multiplications(F.scaled_dot_product_attention, q, q, q).multiplications == 6_291_456


def test_multihead_attention_fast_path():
    # projections 4 * 50 * 512**2 = 52_428_800; scores and mix 50 * 50 * (512 + 512) = 2_560_000
    attention = nn.MultiheadAttention(512, 8, batch_first=True).eval()
    x = torch.randn(1, 50, 512)
    with torch.no_grad():
        work = count_multiplications(attention, x, x, x)
    assert "aten._native_multi_head_attention" in work.calls
    assert work.multiplications == 54_988_800


def test_multihead_attention_other_key_value_widths():
    # Q: 50*512*512 + K, V: 2*50*256*512 + out 50*512*512 = 39_321_600; scores and mix 2*50*50*512 = 2_560_000
    attention = nn.MultiheadAttention(512, 8, kdim=256, vdim=256)
    query, key = torch.randn(50, 1, 512), torch.randn(50, 1, 256)
    assert count_multiplications(attention, query, key, key).multiplications == 41_881_600


def test_gru_batched():
    # 10 sequences * 32 steps * 3 gates * 128 * (128 + 128) = 31_457_280
    assert count_multiplications(nn.GRU(128, 128, batch_first=True), torch.randn(10, 32, 128)).multiplications \
        == 31_457_280


def test_packed_two_layer_lstm():
    # 11 real positions; layer 1: 11*64*(8+16) = 16_896; layer 2: 11*64*(16+16) = 22_528
    packed = pack_padded_sequence(torch.randn(5, 4, 8), [5, 3, 2, 1])
    work = count_multiplications(nn.LSTM(8, 16, num_layers=2), packed)
    assert work.multiplications == 39_424
    assert work.complete


def test_linear_with_leading_dims():
    assert count_multiplications(nn.Linear(3, 8), torch.randn(5, 10, 3)).multiplications == 1_200  # 50*3*8


def test_unbatched_rnn():
    # 50 steps * 512 * (512 + 512) = 26_214_400
    assert count_multiplications(nn.RNN(512, 512), torch.randn(50, 512)).multiplications == 26_214_400


@pytest.mark.parametrize(
    ("left", "right", "expected"),
    [
        ((2, 1, 4, 8), (3, 8, 5), 960),  # broadcast to (2, 3): 6 * 4 * 8 * 5
        ((4, 8), (8,), 32),  # matrix-vector: 4 * 8
        ((8,), (8,), 8),  # vector-vector
        ((8,), (8, 3), 24),  # vector-matrix
        ((1, 50, 64), (8, 64, 50), 1_280_000),  # 8 * 50 * 64 * 50
    ],
)
def test_matmul_broadcasting_and_vectors(left, right, expected):
    assert count_multiplications(torch.matmul, torch.randn(left), torch.randn(right)).multiplications == expected


def test_transformer_encoder_layer_fast_path():
    # attention 4*64*512**2 + 64*64*1024 = 71_303_168; feed-forward 2*64*512*512 = 33_554_432
    layer = frozen(nn.TransformerEncoderLayer(512, 4, 512, batch_first=True))
    with torch.no_grad():
        work = count_multiplications(layer, torch.randn(1, 64, 512))
    assert "aten._transformer_encoder_layer_fwd" in work.calls
    assert work.multiplications == 104_857_600


def test_transformer_encoder_layer_slow_path_agrees_with_fast_path():
    layer = nn.TransformerEncoderLayer(64, 4, 96, batch_first=True, dropout=0.0).eval()
    work = count_multiplications(layer, torch.randn(2, 10, 64))  # grad on: decomposed path
    assert "aten._transformer_encoder_layer_fwd" not in work.calls
    # 2*10*(4*64*64) + 2*10*10*128 + 2*10*(64*96*2) = 327_680 + 25_600 + 245_760
    assert work.multiplications == 599_040


def test_flops_are_twice_the_multiplications():
    work = count_multiplications(torch.mm, torch.randn(3, 4), torch.randn(4, 5))
    assert (work.multiplications, work.flops) == (60, 120)


def test_op_without_formula_is_named_not_zeroed():
    work = count_multiplications(torch.cdist, torch.randn(10, 4), torch.randn(12, 4))
    assert work.unaccounted == {"aten._cdist_forward": 1}
    assert not work.complete


def test_elementwise_and_movement_ops_are_not_unaccounted():
    def layer(x):
        y = torch.tanh(x.transpose(0, 1).contiguous() * 2 + 1)
        return torch.cat([y.softmax(-1), F.layer_norm(y, (y.shape[-1],))]).sum()

    work = count_multiplications(layer, torch.randn(6, 5))
    assert work.multiplications == 0
    assert work.complete


def test_modules_are_broken_down():
    model = nn.Sequential(nn.Linear(4, 6), nn.ReLU(), nn.Linear(6, 2))
    work = count_multiplications(model, torch.randn(3, 4))
    assert work.module("Sequential.0") == 72  # 3 * 4 * 6
    assert work.module("Sequential.2") == 36  # 3 * 6 * 2
    assert work.module("Sequential") == 108
    assert work.module("nothing") == 0


def test_contraction_written_as_broadcast_product_is_counted():
    q, k = torch.randn(40, 16), torch.randn(50, 16)
    # 40 * 50 * 16 = 32_000 multiplications, done as an outer product before the sum
    work = count_multiplications(lambda a, b: (a[:, None, :] * b[None, :, :]).sum(-1), q, k)
    assert work.multiplications == 32_000
    assert work.by_op == {"aten.mul (outer product)": 32_000}


def test_gate_products_and_scalings_are_not_counted():
    x = torch.randn(10, 8)
    assert count_multiplications(lambda a: torch.sigmoid(a) * a * 0.5, x).multiplications == 0


# --- the formula registry (seqlab.measure.ops.register_formula) -------------------------------------------------

def test_a_formula_is_registered_once_where_it_is_defined():
    from seqlab.errors import SeqlabError
    from seqlab.measure import ops

    assert ops.EXTRA_FORMULAS[torch.ops.aten.mv] is ops.matrix_vector_flop
    assert ops.EXTRA_FORMULAS[torch.ops.aten.addmv_] is ops.add_matrix_vector_flop  # its in-place twin, with it
    with pytest.raises(SeqlabError, match="already registered"):
        ops.register_formula(torch.ops.aten.mv)(ops.dot_flop)
    assert ops.EXTRA_FORMULAS[torch.ops.aten.mv] is ops.matrix_vector_flop  # the refused one changed nothing
    with pytest.raises(SeqlabError, match="flop_counter already has a formula"):
        ops.register_formula(torch.ops.aten.mm)(ops.dot_flop)  # PyTorch's own: not overridden here
    assert torch.ops.aten.mm not in ops.EXTRA_FORMULAS


def test_a_new_formula_is_registered_and_refused_a_second_time():
    from seqlab.errors import SeqlabError
    from seqlab.measure import ops

    @ops.register_formula(torch.ops.aten.cholesky_inverse)
    def triple_numel_flop(self_shape, *args, out_shape=None, **kwargs):
        return 2 * 3 * math.prod(self_shape)

    try:
        with pytest.raises(SeqlabError, match="already registered"):
            ops.register_formula(torch.ops.aten.cholesky_inverse)(triple_numel_flop)
        assert ops.EXTRA_FORMULAS[torch.ops.aten.cholesky_inverse] is triple_numel_flop
    finally:
        del ops.EXTRA_FORMULAS[torch.ops.aten.cholesky_inverse]


def test_a_count_kept_per_signature_tells_shapes_and_scalars_apart() -> None:
    """The census is decided once per (op, shapes, dtypes, other arguments) and kept (issue 34): calls of one op on
    two shapes, and addmm with beta = 1 and beta = 0, each get their own count."""
    a, b, w = torch.randn(2, 3), torch.randn(5, 3), torch.randn(3, 4)
    bias = torch.randn(4)

    def run() -> None:
        for _ in range(2):
            a @ w  # 2 * 3 * 4 = 24 multiplications
            b @ w  # 5 * 3 * 4 = 60
        torch.addmm(bias, a, w)  # 24, + 2 * 4 = 8 FLOPs for the addend
        torch.addmm(bias, a, w, beta=0)  # 24, the addend not read

    work = count_multiplications(run)
    assert work.multiplications == 2 * (24 + 60) + 24 + 24  # 216
    # FLOPs: 2 per multiply-add, and the one addend of beta = 1 (2 * 4 = 8)
    assert work.arithmetic_flops == 2 * 216 + 8
