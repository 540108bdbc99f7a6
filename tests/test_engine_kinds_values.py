"""Issue 35, kinds 5, 6 and 9: what the values say, counted as the einsum, the mask and the FFT say it.

5. a product followed by a sum over a dim both factors step through is a contraction: counted as its einsum, one
   product on the span and the path; 6. useful work from the mask's values, whatever its form, on every SDPA path
   and in eager attention; 9. the FFT counted by its closed form, and an FFT convolution read as the convolution it
   is (causal when zero-padded), against the float64 Jacobian.
Each kind: two inputs at least, one from ``transformers`` where one exists.
"""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from seqlab.measure.ops import fft_multiplications
from seqlab.measure.paths import measure_paths
from seqlab.measure.trace import measure_span
from seqlab.measure.work import CONTRACTED_PRODUCT, count_multiplications

import hf_mixers


# --- kind 5: a product summed over a shared dim is a contraction --------------------------------------------------

class LinearAttention(nn.Module):
    """Causal linear attention as a loop: S_t = S_{t-1} + k_t ⊗ v_t, y_t = q_t S_t; by einsum or by mul + sum."""

    def __init__(self, d: int, form: str) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.qkv = nn.Linear(d, 3 * d, bias=False)
        self.form = form

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # (B, T, d)
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        B, T, d = q.shape
        S = x.new_zeros(B, d, d)
        ys = []
        for t in range(T):
            if self.form == "einsum":
                S = S + torch.einsum("bk,bv->bkv", k[:, t], v[:, t])
                ys.append(torch.einsum("bk,bkv->bv", q[:, t], S))
            else:
                S = S + k[:, t, :, None] * v[:, t, None, :]
                ys.append((q[:, t, :, None] * S).sum(-2))
        return torch.stack(ys, dim=1)


@pytest.mark.parametrize(("T", "d"), [(5, 4), (7, 6)])
def test_a_multiply_then_sum_counts_and_traces_as_its_einsum(T, d):
    x = torch.randn(1, T, d)
    by_einsum, by_mul = LinearAttention(d, "einsum"), LinearAttention(d, "mul")
    einsum, mul = count_multiplications(by_einsum, x), count_multiplications(by_mul, x)
    # W_qkv T d 3d, k ⊗ v T d², q S T d²: the readout was not counted before (T d² short)
    assert mul.multiplications == einsum.multiplications == T * d * 3 * d + 2 * T * d * d
    assert mul.by_op[CONTRACTED_PRODUCT] == T * d * d
    assert measure_span(by_mul, x).products == measure_span(by_einsum, x).products
    sources = tuple(range(T))
    assert measure_paths(by_mul, x, sources=sources).products == measure_paths(by_einsum, x, sources=sources).products
    assert measure_paths(by_mul, x, sources=(0,)).products[0][0] == 2  # W_q, then q S: two products (one before)


@pytest.mark.parametrize("shape", [(3, 8), (2, 5, 4)])
def test_vecdot_and_its_multiply_sum_and_its_einsum_count_alike(shape):
    a, b = torch.randn(shape), torch.randn(shape)
    counts = {count_multiplications(f, a, b).multiplications for f in (
        torch.linalg.vecdot, lambda u, w: (u * w).sum(-1), lambda u, w: torch.einsum("...i,...i->...", u, w))}
    assert counts == {math.prod(shape)}  # one multiply-add per element pair


def test_a_gate_product_no_sum_contracts_stays_element_wise():
    z, h = torch.randn(4, 8), torch.randn(4, 8)
    assert count_multiplications(lambda u, w: (u * w).tanh(), z, h).multiplications == 0
    assert count_multiplications(lambda u, w: (u * w).sum(0, keepdim=True) * 0 + u * w, z, h).multiplications == 32
    w = torch.randn(8)  # (x * w).sum(-1) over w's own dim: a matrix-vector product, 4 * 8
    assert count_multiplications(lambda u: (u * w).sum(-1), z).multiplications == 32
    assert count_multiplications(lambda u: (u * w).sum(0), z).multiplications == 0  # summed where w is broadcast


# --- kind 6: useful work from the mask's values ---------------------------------------------------------------------

B, H, T, E = 1, 2, 6, 4
CLOSED_CAUSAL = H * (T * T - T * (T + 1) // 2)  # 15 closed pairs per head


def _masks() -> dict[str, dict]:
    return {
        "is_causal": {"is_causal": True},
        "boolean": {"attn_mask": torch.ones(T, T, dtype=torch.bool).tril()},
        "additive -inf": {"attn_mask": torch.full((T, T), float("-inf")).triu(1)},
        "additive finfo.min": {"attn_mask": torch.full((T, T), torch.finfo(torch.float32).min).triu(1)},
    }


@pytest.mark.parametrize("inference", [False, True], ids=["kernel", "whole call"])
@pytest.mark.parametrize("width_v", [E, 2 * E], ids=["fused", "math path (d_k != d_v)"])
@pytest.mark.parametrize("form", list(_masks()))
def test_masked_work_is_read_from_the_mask_on_every_sdpa_path(form, width_v, inference):
    g = torch.Generator().manual_seed(0)
    q, k = torch.randn(B, H, T, E, generator=g), torch.randn(B, H, T, E, generator=g)
    v = torch.randn(B, H, T, width_v, generator=g)
    with torch.inference_mode() if inference else torch.no_grad():
        work = count_multiplications(lambda: F.scaled_dot_product_attention(q, k, v, **_masks()[form]))
    assert work.multiplications == H * T * T * (E + width_v)
    assert work.masked_multiplications == CLOSED_CAUSAL * (E + width_v)  # 0 for the additive forms before
    assert work.useful_multiplications == H * T * (T + 1) // 2 * (E + width_v)


@pytest.mark.parametrize("form", ["finfo.min", "masked_fill"])
def test_masked_work_is_read_in_eager_attention(form):
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(B, H, T, E, generator=g) for _ in range(3))
    closed = torch.ones(T, T, dtype=torch.bool).triu(1)

    def attention() -> torch.Tensor:
        scores = q @ k.mT / math.sqrt(E)
        if form == "finfo.min":  # Hugging Face's eager attention adds finfo.min
            scores = scores + torch.zeros(T, T).masked_fill(closed, torch.finfo(torch.float32).min)
        else:
            scores = scores.masked_fill(closed, float("-inf"))
        return torch.softmax(scores, dim=-1, dtype=torch.float32) @ v

    work = count_multiplications(attention)
    assert work.masked_multiplications == CLOSED_CAUSAL * 2 * E


@pytest.mark.parametrize("implementation", ["eager", "sdpa"])
def test_masked_work_of_a_transformers_sliding_window(implementation):
    model = hf_mixers.build("mistral", dtype=torch.float32, attn_implementation=implementation)
    T_model = 7
    x = hf_mixers.embeddings(T_model, dtype=torch.float32)
    with torch.no_grad():
        work = count_multiplications(hf_mixers.last_hidden(model), x)
    heads, head_dim, window = 2, 8, 3  # hf_mixers.mistral_config
    open_pairs = sum(min(i + 1, window) for i in range(T_model))
    assert work.masked_multiplications == heads * (T_model * T_model - open_pairs) * 2 * head_dim


# --- kind 9: the FFT, counted and read by value -------------------------------------------------------------------

@pytest.mark.parametrize("n", [8, 12])
def test_fft_work_is_its_closed_form(n):
    x = torch.randn(3, n)
    # rfft: 3 real transforms; irfft of it: 3 more; fft of a complex input: 3 complex ones
    assert count_multiplications(torch.fft.rfft, x).multiplications == 3 * fft_multiplications(n, real=True)
    assert count_multiplications(lambda z: torch.fft.irfft(torch.fft.rfft(z), n=n), x).multiplications == \
        6 * fft_multiplications(n, real=True)
    complex_x = torch.randn(3, n, dtype=torch.complex64)
    counted = count_multiplications(torch.fft.fft, complex_x)
    assert counted.multiplications == 3 * fft_multiplications(n, real=False) and counted.complete
    assert fft_multiplications(8, real=False) == 2 * 8 * 3  # 2 n log2 n


class FFTConvolution(nn.Module):
    """A long convolution by FFT (Hyena): a filter of T taps per channel; zero-padded to 2T (causal) or not
    (circular)."""

    def __init__(self, d: int, T: int, padded: bool) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.filter = nn.Parameter(torch.randn(d, T))
        self.skip = nn.Parameter(torch.randn(d))
        self.padded = padded

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # (B, T, d)
        u = x.transpose(1, 2)  # (B, d, T)
        T = u.shape[-1]
        n = 2 * T if self.padded else T
        spectrum = torch.fft.rfft(u, n=n) * torch.fft.rfft(self.filter[:, :T], n=n)
        y = torch.fft.irfft(spectrum, n=n)[..., :T]
        return (y + u * self.skip[:, None]).transpose(1, 2)


@pytest.mark.parametrize(("padded", "T"), [(True, 6), (True, 9), (False, 6)])
def test_an_fft_convolution_reads_as_its_jacobian(padded, T):
    layer = FFTConvolution(4, T, padded).double()
    x = torch.randn(1, T, 4, dtype=torch.float64)
    paths = measure_paths(layer, x, sources=tuple(range(T)))
    assert paths.exact and paths.fallbacks == {}  # an inverse DFT was a named bound before
    traced = hf_mixers.path_depends(paths, T)
    assert traced == hf_mixers.jacobian_depends(layer, x)  # two routes
    assert traced == (hf_mixers.causal(T) if padded else tuple((True,) * T for _ in range(T)))
    assert paths.products[0][T - 1] == 2  # the forward and the inverse DFT: two products


def test_fnet_counts_its_fourier_mixing_and_traces_it_as_its_jacobian():
    import transformers

    config = transformers.FNetConfig(vocab_size=32, hidden_size=16, num_hidden_layers=1, intermediate_size=24,
                                     max_position_embeddings=64, use_tpu_fourier_optimizations=False,
                                     hidden_dropout_prob=0.0)
    torch.manual_seed(0)
    model = transformers.FNetModel(config, add_pooling_layer=False).eval().double()

    def layer(z: torch.Tensor) -> torch.Tensor:
        return model(inputs_embeds=z).last_hidden_state

    T = 6
    x = torch.randn(1, T, 16, dtype=torch.float64)
    work = count_multiplications(layer, x)
    # fftn over (T, d) = (6, 16): along T 16 transforms of 6 points, along d 6 of 16 points
    assert work.by_op["aten._fft_c2c"] == 16 * fft_multiplications(6, real=False) + 6 * fft_multiplications(16,
                                                                                                           real=False)
    assert work.complete and work.unaccounted == {}
    paths = measure_paths(layer, x, sources=tuple(range(T)))
    assert paths.exact and hf_mixers.path_depends(paths, T) == hf_mixers.jacobian_depends(layer, x)
