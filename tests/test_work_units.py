"""Issue 21, the work-counting kinds (seqlab.measure.work, seqlab.measure.ops): outer products by any code
style, per-module attribution of every counted multiplication, ops that multiply nothing, decompositions and
grouped products, ``addbmm``, the all-arithmetic unit, and masked attention (executed beside useful).

Each kind has at least two inputs, one from ``transformers`` (tiny random-weight models built from configs,
nothing downloaded). Expected numbers sit beside their hand arithmetic.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from seqlab.measure import ops
from seqlab.measure.switches import SDPA_BACKENDS
from seqlab.measure.work import CONTRACTED_PRODUCT, OUTER_PRODUCT, count_multiplications, count_on_meta

aten = torch.ops.aten
MATH = (False, False, True, False)  # SDPA backends: flash, efficient, math, cudnn
VOCAB = 50


def quiet(config):
    """A tiny config whose special tokens lie inside the tiny vocabulary (no warning from transformers)."""
    for name in ("bos_token_id", "eos_token_id", "pad_token_id"):
        if hasattr(config, name):
            setattr(config, name, 0)
    return config


def mistral(T_window: int | None = None, layers: int = 1):
    """Mistral, d = 16, 2 heads of 8, d_ff = 32, vocab 50; sdpa attention."""
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    config = quiet(transformers.MistralConfig(
        hidden_size=16, intermediate_size=32, num_hidden_layers=layers, num_attention_heads=2,
        num_key_value_heads=2, vocab_size=VOCAB, sliding_window=T_window, attn_implementation="sdpa"))
    return transformers.MistralForCausalLM(config).eval()


def mixtral(experts: str):
    """Mixtral, d = 16, 2 query heads and 1 key-value head of 8, 4 experts of d_ff = 32, top 2, vocab 50."""
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    config = quiet(transformers.MixtralConfig(
        hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=1,
        num_local_experts=4, num_experts_per_tok=2, vocab_size=VOCAB))
    config._experts_implementation = experts
    return transformers.MixtralForCausalLM(config).eval()


def gpt2():
    """GPT-2, d = 16, 2 heads, 1 layer, vocab 50; sdpa attention (causal through is_causal)."""
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    config = quiet(transformers.GPT2Config(n_layer=1, n_head=2, n_embd=16, vocab_size=VOCAB, n_positions=32,
                                           attn_implementation="sdpa"))
    return transformers.GPT2LMHeadModel(config).eval()


def tokens(T: int) -> torch.Tensor:
    return torch.randint(0, VOCAB, (1, T), generator=torch.Generator().manual_seed(T))


# --- Kind: outer products by any code style ----------------------------------------------------------------

A, B = torch.randn(7), torch.randn(10)
OUTER_STYLES = {
    "broadcast": lambda: A[:, None] * B[None],
    "expand": lambda: A[:, None].expand(7, 10) * B[None].expand(7, 10),
    "broadcast_to": lambda: torch.broadcast_to(A[:, None], (7, 10)) * torch.broadcast_to(B, (7, 10)),
    "outer": lambda: torch.outer(A, B),
    "expanded times a column": lambda: A[:, None].expand(7, 10) * B,
}


@pytest.mark.parametrize("style", OUTER_STYLES)
def test_outer_product_counts_alike_in_every_style(style):
    work = count_multiplications(OUTER_STYLES[style])
    assert work.multiplications == 7 * 10  # 70 products, whatever the code style
    assert work.by_op == {OUTER_PRODUCT: 70} and work.by_module == {"Global": 70}


@pytest.mark.parametrize("product", [
    lambda: torch.randn(7, 10) * torch.randn(7, 10),  # a gate product z * h
    lambda: A.expand(10, 7) * torch.tensor(2.0),  # an expanded factor times a scalar tensor: 7 distinct products
    lambda: A[:, None].repeat(1, 10) * B[None].repeat(7, 1),  # factors materialised: cannot be told from a gate
    lambda: (torch.arange(7)[:, None] > 3) * (torch.arange(10)[None] > 5),  # boolean masks: a logical and
], ids=["gate", "scalar", "repeat", "masks"])
def test_products_that_are_not_outer_products(product):
    assert count_multiplications(product).multiplications == 0


def test_rotary_embedding_outer_product_in_transformers():
    """Mistral's rotary embedding multiplies positions by inverse frequencies: T * head_dim / 2 products."""
    T = 8
    with torch.no_grad():
        work = count_multiplications(mistral(), tokens(T))
    assert work.by_op[OUTER_PRODUCT] == T * 8 // 2  # 32
    assert work.module("MistralForCausalLM.model.rotary_emb") == 32
    inverse = torch.rand(4)  # the same product written with expand: counted alike
    positions = torch.arange(T, dtype=torch.float32)
    alike = count_multiplications(lambda: inverse[:, None].expand(4, T) * positions[None].expand(4, T))
    assert alike.multiplications == 32


# --- Kind: per-module attribution of every counted multiplication ------------------------------------------

class Scores(nn.Module):
    """A contraction written as an outer product inside a submodule, beside a Linear."""

    def __init__(self):
        super().__init__()
        self.project = nn.Linear(4, 4, bias=False)

    def forward(self, q, k):  # (T, 4), (S, 4)
        return (self.project(q)[:, None, :] * k[None, :, :]).sum(-1)  # (T, S)


def test_outer_products_are_charged_to_the_module_that_ran_them():
    model = nn.Sequential(Scores(), nn.Linear(6, 2))
    work = count_multiplications(lambda q, k: model[1](model[0](q, k)), torch.randn(5, 4), torch.randn(6, 4))
    # project 5 * 4 * 4 = 80; outer product 5 * 6 * 4 = 120; the last Linear 5 * 6 * 2 = 60
    assert work.module("Scores") == 200 and work.module("Scores.project") == 80
    assert work.module("Linear") == 60
    assert work.module("Scores") + work.module("Linear") == work.multiplications == 260


@pytest.mark.parametrize("build", [lambda: mistral(), lambda: mixtral("grouped_mm")], ids=["mistral", "mixtral"])
def test_top_level_modules_sum_to_the_total_in_transformers(build):
    model = build()
    with torch.no_grad():
        work = count_multiplications(model, tokens(4))
    top = type(model).__name__
    children = [f"{top}.{name}" for name, _ in model.named_children()]
    assert work.by_op[OUTER_PRODUCT] > 0  # the rotary products are among them
    assert sum(work.module(name) for name in children) == work.module(top) == work.multiplications


# --- Kind: ops that multiply nothing, decompositions, grouped products --------------------------------------

@pytest.mark.parametrize("integer_op", [
    lambda i: torch.bincount(i), lambda i: i // 2, lambda i: i.argmax(), lambda i: torch.isin(i, i[:2]),
], ids=["bincount", "floor_divide", "argmax", "isin"])
def test_ops_on_integers_are_not_unaccounted(integer_op):
    work = count_multiplications(integer_op, torch.tensor([1, 2, 2, 5]))
    assert work.complete and work.multiplications == 0 and work.arithmetic_flops == 0


def test_generate_is_complete():
    """generate() runs an integer isin per step (stop tokens): it multiplies nothing."""
    model = gpt2()
    with torch.no_grad():
        work = count_multiplications(lambda: model.generate(tokens(4), max_new_tokens=2, do_sample=False,
                                                            pad_token_id=0))
    assert work.calls["aten.isin"] >= 2 and work.complete and work.unaccounted == {}
    # per token 16*48 + 16*16 + 16*64 + 64*16 = 3_072; the lm head (16*50 = 800) for the last token of each pass;
    # pass 1: 4 tokens * 3_072 + scores and mix 2 heads * 4 * 4 * 16 = 512, + 800 = 13_600;
    # pass 2 (1 new token, 5 cached keys): 3_072 + 2 * 1 * 5 * 16 = 160, + 800 = 4_032
    assert work.multiplications == 13_600 + 4_032


@pytest.mark.parametrize(("activation", "parts"), [
    (F.hardswish, "aten.hardswish"), (F.glu, "aten.glu"), (F.logsigmoid, "aten.log_sigmoid_forward"),
    (lambda x: F.prelu(x, torch.tensor([0.2])), "aten._prelu_kernel"),
], ids=["hardswish", "glu", "logsigmoid", "prelu"])
def test_unknown_op_is_counted_through_its_decomposition(activation, parts):
    x = torch.randn(4, 16)
    work = count_multiplications(activation, x)
    assert work.decomposed == {parts: 1} and work.complete
    assert parts not in work.calls  # its parts ran in its place
    torch.testing.assert_close(activation(x), activation(x))  # the op itself still computes (no patch left)


def test_op_without_rule_or_decomposition_is_still_named():
    work = count_multiplications(torch.cdist, torch.randn(10, 4), torch.randn(12, 4))
    assert work.unaccounted == {"aten._cdist_forward": 1} and work.decomposed == {}


@pytest.mark.parametrize(("left", "right", "offsets", "expected"), [
    ((6, 16), (3, 16, 8), [2, 4, 6], 6 * 16 * 8),  # tokens routed to 3 experts: 768
    ((3, 4, 16), (3, 16, 8), None, 3 * 4 * 16 * 8),  # one batch per expert: 1_536
])
def test_grouped_matrix_products_have_a_formula(left, right, offsets, expected):
    offs = None if offsets is None else torch.tensor(offsets, dtype=torch.int32)
    work = count_multiplications(lambda a, b: aten._grouped_mm(a, b, offs), torch.randn(left), torch.randn(right))
    assert work.multiplications == expected and work.complete
    assert ops.is_contraction(aten._grouped_mm.default)


# Mixtral at T = 4: q 4*16*16 = 1_024, k and v 4*16*8 = 512 each, o 1_024; scores and mix 2 heads * 4 * 4 * 16 =
# 512; router 4*16*4 = 256; experts 4 tokens * 2 experts * 3 * 16 * 32 = 12_288; lm head 4*16*50 = 3_200;
# rotary 4 * 4 = 16: 19_344
@pytest.mark.parametrize("experts", ["grouped_mm", "batched_mm", "eager"])
def test_mixture_of_experts_is_counted_whole(experts):
    with torch.no_grad():
        work = count_multiplications(mixtral(experts), tokens(4))
    assert work.multiplications == 19_344 and work.complete and work.unaccounted == {}
    if experts == "grouped_mm":
        assert work.by_op["aten._grouped_mm"] == 12_288


# --- Kind: addbmm with batch > 1 ------------------------------------------------------------------------------

@pytest.mark.parametrize(("b", "n", "m", "p"), [(1, 4, 6, 5), (3, 4, 6, 5), (7, 2, 3, 1)])
def test_addbmm_counts_every_batch(b, n, m, p):
    M, b1, b2 = torch.randn(n, p), torch.randn(b, n, m), torch.randn(b, m, p)
    expected = b * n * m * p  # (b, n, m) @ (b, m, p) summed over b
    assert count_multiplications(torch.addbmm, M, b1, b2).multiplications == expected
    assert count_multiplications(lambda: M.clone().addbmm_(b1, b2)).multiplications == expected
    assert count_multiplications(lambda: torch.addbmm(M, b1, b2, out=torch.empty(n, p))).multiplications == expected
    assert count_on_meta(torch.addbmm, M, b1, b2).multiplications == expected
    arithmetic = count_multiplications(torch.addbmm, M, b1, b2).arithmetic_by_op["aten.addbmm"]
    assert arithmetic == 2 * expected + n * p  # 2 per multiply-add, 1 per output element for the addend


# --- Kind: the all-arithmetic unit ---------------------------------------------------------------------------

def selective_scan(x, delta, A, Bm, Cm):
    """A diagonal selective scan as a loop: x, delta (B, L, D); A (D, N); Bm, Cm (B, L, N) -> y (B, L, D)."""
    batch, length, channels = x.shape
    h = x.new_zeros(batch, channels, A.shape[1])  # (B, D, N)
    ys = []
    for t in range(length):
        dA = torch.exp(delta[:, t, :, None] * A)  # mul + exp
        dBx = delta[:, t, :, None] * Bm[:, t, None, :] * x[:, t, :, None]  # mul + mul
        h = dA * h + dBx  # mul + add
        ys.append((h * Cm[:, t, None, :]).sum(-1))  # mul + sum
    return torch.stack(ys, 1)


@pytest.mark.parametrize(("batch", "length", "channels", "state"), [(2, 5, 3, 4), (1, 7, 2, 8)])
def test_selective_scan_arithmetic_against_the_mamba_figure(batch, length, channels, state):
    g = torch.Generator().manual_seed(0)
    x, delta = torch.randn(batch, length, channels, generator=g), torch.rand(batch, length, channels, generator=g)
    A = -torch.rand(channels, state, generator=g)
    Bm, Cm = torch.randn(batch, length, state, generator=g), torch.randn(batch, length, state, generator=g)
    work = count_multiplications(selective_scan, x, delta, A, Bm, Cm)
    bldn = batch * length * channels * state
    assert work.arithmetic_flops == 8 * bldn  # 960 at (2, 5, 3, 4): 8 element-wise ops per (b, t, d, n)
    assert work.arithmetic_flops == 9 * bldn - bldn  # 1 B·L·D·N below the Mamba authors' 9·B·L·D·N
    # outer products: delta × B_t (B·D·N pairs per step), and delta × A when B > 1 (with one batch row it is a
    # scaling of A's rows: D·N pairs, no more than A holds); and the readout h · C_t summed over N, a contraction
    # (issue 35, kind 5): B·D·N per step, as einsum("bdn,bn->bd") is counted
    assert work.multiplications == (3 if batch > 1 else 2) * bldn
    assert work.by_op[CONTRACTED_PRODUCT] == bldn
    assert work.arithmetic_by_op == {"aten.mul": 5 * bldn, "aten.exp": bldn, "aten.add": bldn, "aten.sum": bldn}
    assert work.arithmetic_complete
    assert count_on_meta(selective_scan, x, delta, A, Bm, Cm).arithmetic_flops == 8 * bldn  # a second route


def test_arithmetic_of_linear_softmax_and_norm():
    x = torch.randn(4, 16)
    linear = count_multiplications(nn.Linear(16, 8), x)
    assert linear.arithmetic_flops == 2 * 4 * 16 * 8 + 4 * 8  # 1_056: multiply-adds and the bias
    softmax = count_multiplications(lambda z: z.softmax(-1), x)
    assert softmax.arithmetic_by_op == {"aten._softmax": 5 * 64}  # amax, sub, exp, sum, div: 320
    norm = count_multiplications(nn.LayerNorm(16), x)
    # var (64) + sum (64) + mean's div (4) + add eps (4) + rsqrt (4) + sub (64) + mul (64) + weight (64) + bias (64)
    assert norm.arithmetic_by_op == {"aten.native_layer_norm": 396}
    silu = count_multiplications(F.silu, x)
    assert silu.arithmetic_flops == 2 * 64  # sigmoid and mul: silu is outside the core ATen set


def test_arithmetic_in_transformers():
    """GPT-2's Conv1D runs addmm: 2 per multiply-add plus its bias."""
    T = 6
    model = gpt2()
    with torch.no_grad():
        work = count_multiplications(model, tokens(T))
    # addmm: c_attn 16 -> 48, c_proj 16 -> 16, c_fc 16 -> 64, mlp c_proj 64 -> 16; bias on each output
    products = T * (16 * 48 + 16 * 16 + 16 * 64 + 64 * 16)
    assert work.by_op["aten.addmm"] == products
    assert work.arithmetic_by_op["aten.addmm"] == 2 * products + T * (48 + 16 + 64 + 16)
    assert work.arithmetic_flops == sum(work.arithmetic_by_op.values()) > work.flops
    assert work.arithmetic_complete
    with torch.inference_mode():  # a second route: SDPA arrives whole and decomposes under the counter
        again = count_multiplications(model, tokens(T))
    assert again.arithmetic_flops == work.arithmetic_flops


def test_sort_and_fused_kernels_are_named_in_the_arithmetic():
    work = count_multiplications(lambda z: z.topk(2).values.sum(), torch.randn(4, 8))
    assert work.arithmetic_unaccounted == {"aten.topk": 1} and not work.arithmetic_complete
    lstm = count_multiplications(nn.LSTM(4, 4, batch_first=True), torch.randn(1, 3, 4))
    assert lstm.arithmetic_unaccounted == {"aten.mkldnn_rnn_layer": 1} and lstm.complete


# --- Kind: masked attention, executed beside useful ---------------------------------------------------------

def test_causal_attention_useful_is_the_triangle():
    T, d_k, heads = 8, 4, 2
    q = torch.randn(1, heads, T, d_k)
    for context in (torch.no_grad, torch.inference_mode):  # the fused kernel; the whole op before it decomposes
        with context():
            work = count_multiplications(F.scaled_dot_product_attention, q, q, q, is_causal=True)
        assert work.multiplications == heads * T * T * (d_k + d_k)  # 1_024 executed
        assert work.useful_multiplications == heads * T * (T + 1) // 2 * (d_k + d_k)  # 576 useful
        assert work.masked_multiplications == 448


@pytest.mark.parametrize("as_float", [False, True], ids=["bool", "-inf"])
def test_sliding_window_mask_useful_pairs(as_float):
    T, d_k, d_v, window = 8, 4, 4, 3  # d_v == d_k: the fused CPU kernel (d_v != d_k takes the math path)
    i, j = torch.arange(T)[:, None], torch.arange(T)[None]
    allowed = (j <= i) & (j > i - window)  # (T, T): 1 + 2 + 3 * 6 = 21 open pairs
    mask = torch.zeros(T, T).masked_fill(~allowed, float("-inf")) if as_float else allowed
    q, v = torch.randn(2, 1, T, d_k), torch.randn(2, 1, T, d_v)  # batch 2, 1 head
    work = count_multiplications(F.scaled_dot_product_attention, q, q, v, attn_mask=mask)
    assert work.multiplications == 2 * T * T * (d_k + d_v)  # 1_024
    assert work.useful_multiplications == 2 * 21 * (d_k + d_v)  # 336


def test_masked_attention_in_transformers():
    T = 8
    with torch.no_grad():
        causal = count_multiplications(gpt2(), tokens(T))
        window = count_multiplications(mistral(3), tokens(T))
    # GPT-2: 2 heads * (64 - 36) pairs * (8 + 8) = 896 masked; Mistral, window 3: 2 * (64 - 21) * 16 = 1_376
    assert causal.masked_multiplications == 896
    assert window.masked_multiplications == 1_376
    assert window.by_op["aten._scaled_dot_product_flash_attention_for_cpu"] == 2 * 64 * 16  # executed: 2_048


def test_the_math_path_is_read_by_the_weights_its_softmax_gives():
    q = torch.randn(1, 1, 8, 4)
    with SDPA_BACKENDS.held(MATH):
        work = count_multiplications(F.scaled_dot_product_attention, q, q, q, is_causal=True)
    # dispatched as its parts (issue 35, kind 6: read at its softmax): (64 - 36) closed pairs * (4 + 4)
    assert work.multiplications == 8 * 8 * 8 and work.masked_multiplications == 28 * 8


@pytest.mark.parametrize(("T", "d", "h"), [(3, 4, 4), (5, 2, 3)])
def test_lstm_arithmetic_on_meta_where_the_fused_kernel_hides_its_gates(T, d, h):
    lstm = nn.LSTM(d, h, batch_first=True)
    fused = count_multiplications(lstm, torch.randn(1, T, d))
    assert fused.arithmetic_unaccounted == {"aten.mkldnn_rnn_layer": 1}  # its gates are not seen on CPU
    on_meta = count_on_meta(lstm, torch.randn(1, T, d))  # decomposed: addmm and the cell's element-wise ops
    # per step: x W_ih and h W_hh, 2 * (d + h) * 4h, + 2 biases of 4h; gate sum 4h; 3 sigmoids + 1 tanh, 4h;
    # c = f*c + i*g: 2h + h; h = o * tanh(c): 2h
    per_step = 2 * (d + h) * 4 * h + 2 * 4 * h + 4 * h + 4 * h + 3 * h + 2 * h
    assert on_meta.arithmetic_flops == T * per_step and on_meta.arithmetic_complete  # 1_020 at (3, 4, 4)
    assert on_meta.multiplications == fused.multiplications == T * (d + h) * 4 * h
