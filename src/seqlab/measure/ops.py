"""What each ATen op is, for the engine: a contraction with a multiplication count, a free op, or unknown.

The engine sees a forward pass as the stream of ATen ops that PyTorch dispatches (through
``TorchDispatchMode``). This module sorts those ops into three kinds, once, for both measurements:

* **contractions** — matrix products, convolutions and fused attention / recurrent kernels, the ops
  whose multiplications grow as a product of sizes. ``torch.utils.flop_counter`` has formulas for
  most of them; :data:`EXTRA_FORMULAS` adds the CPU kernels it misses (the fused LSTM of oneDNN,
  the fused CPU attention of SDPA, the ``nn.MultiheadAttention`` and ``nn.TransformerEncoderLayer``
  fast paths, matrix–vector and vector–vector products).
* **movement** — views, aliases, metadata, copies, concatenation, indexing and tensor creation: they
  move or make data and compute nothing. They cost 0 multiplications and 0 steps of span.
* **compute without multiplications counted** — element-wise ops (bias adds, activations, gates),
  reductions, softmax and normalisations. By the convention of the lesson (L5, L6) they are not
  counted as multiplications (they grow as T·d, not as a product of widths), but each is one step
  of span.

Anything else is *unknown*: the work counter names it instead of counting it as 0 — unless the call has no
floating-point tensor among its inputs and outputs (:func:`has_floating`: integer ``isin``, ``bincount``,
integer ``floor_divide`` multiply nothing), or PyTorch decomposes the op (:func:`decomposition_of`,
``torch._decomp``) and its parts are counted instead. Grouped matrix products (``_grouped_mm``, the expert
products of mixture-of-experts layers) are contractions with their own formula.

The second unit, all floating-point arithmetic (FLOPs, :mod:`seqlab.measure.work`), sorts ops finer:
:func:`arithmetic_kind` says how one call is charged (movement and selections 0, contractions 2 per
multiply-add plus their addend, point-wise ops 1 per output element, reductions 1 per input element, others
through their decomposition, and a named remainder with no stated cost). Each answer depends on
the op alone, so it is computed once per op and cached (the tracers ask for every op they see).

In-place and ``out=`` forms are sorted by their out-of-place twin (:func:`functional_twin`):
``aten.threshold_`` is point-wise because ``aten.threshold`` is, ``aten.addmm_`` is counted with the
formula of ``aten.addmm``. PyTorch tags many in-place twins (``relu_``, ``add_``) but not all
(``threshold_``, ``masked_fill_``, ``gelu_``, ``eq_``…), so the rule goes by the twin, not by the tag.

The long tail by kind (issue 35): quantised linear kernels are contractions with a float twin for the path rules
(:data:`QUANTIZED_LINEAR`, :func:`float_twin`); discrete Fourier transforms are contractions counted by their
closed form (:func:`fft_multiplications`); an element-wise product a sum contracts is one
(:class:`ProductLedger`); attention weights that are exactly 0 are read where a softmax of scores gives them
(:class:`ZeroWeightLedger`); higher-order ops run through their eager kernels with the mode on
(:func:`run_higher_order`, :func:`~seqlab.measure.switches.eager_higher_order`); a tensor subclass with its own dispatch computes through its
dense parts (:func:`defers_to_subclass`).

Units: formulas here return **FLOPs in PyTorch's convention** (one multiply-add = 2 FLOPs), because
they plug into ``FlopCounterMode``; :mod:`seqlab.measure.work` divides by 2 to report
multiplications. Shapes: B batch (any leading dims), H heads, L query positions, S key positions,
E / Ev widths of query-key and value vectors.
"""

from __future__ import annotations

import functools
import math
import sys
import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence

import torch
from torch.utils.flop_counter import flop_registry

from seqlab.errors import SeqlabError
from seqlab.i18n import N_
from seqlab.measure.modes import shield_from_dynamo

aten = torch.ops.aten

Shape = Sequence[int]


def _numel(shape: Shape) -> int:
    return math.prod(shape)


EXTRA_FORMULAS: dict[object, Callable[..., int]] = {}
"""Formulas (FLOPs) for contraction ops that ``torch.utils.flop_counter`` has no entry for, each put here by
:func:`register_formula` where it is defined, in-place twins (``addmm_``, ``baddbmm_``, ``addmv_``, ``addbmm_``)
included: an in-place product multiplies as much as its out-of-place form."""
_TWINS: set[object] = set()


def _register(packet: object, formula: Callable[..., int], *, twin: bool = False) -> None:
    """Put ``formula`` in :data:`EXTRA_FORMULAS` for ``packet``; a twin never replaces a formula, nor is one kept
    when ``packet`` later gets its own.

    Raises:
        SeqlabError: ``packet`` already has a formula of its own here, or PyTorch's flop registry has one.
    """
    if packet in flop_registry:
        raise SeqlabError(N_("torch.utils.flop_counter already has a formula for {op}"), op=str(packet),
                          parameter="formula")
    if packet in EXTRA_FORMULAS and packet not in _TWINS:
        if twin:
            return
        raise SeqlabError(N_("a formula for {op} is already registered ({formula})"), op=str(packet),
                          formula=EXTRA_FORMULAS[packet].__name__, parameter="formula")
    if twin and packet in EXTRA_FORMULAS:
        return
    EXTRA_FORMULAS[packet] = formula
    (_TWINS.add if twin else _TWINS.discard)(packet)


def _in_place_twin(packet: object) -> object | None:
    """``aten.foo_`` for ``aten.foo`` when it exists and PyTorch's flop registry has no formula for it."""
    twin = getattr(aten, f"{getattr(packet, '__name__', '')}_", None)
    return twin if isinstance(twin, torch._ops.OpOverloadPacket) and twin not in flop_registry else None


def register_formula(*packets: object) -> Callable[[Callable[..., int]], Callable[..., int]]:
    """Register the decorated FLOP formula for ``packets`` (and each one's in-place twin ``foo_``) in
    :data:`EXTRA_FORMULAS`, where the formula is defined — as ``torch.utils.flop_counter.register_flop_formula``
    does for PyTorch's own.

    >>> @register_formula(torch.ops.aten.cholesky_inverse)
    ... def _example_flop(self_shape, *args, out_shape=None, **kwargs):
    ...     return 2 * _numel(self_shape)
    >>> EXTRA_FORMULAS.pop(torch.ops.aten.cholesky_inverse) is _example_flop
    True

    Raises:
        SeqlabError: one of ``packets`` already has a formula here (a duplicate registration), or in PyTorch's
            flop registry (this registry is for the ops it misses).
    """
    def register(formula: Callable[..., int]) -> Callable[..., int]:
        for packet in packets:
            _register(packet, formula)
            twin = _in_place_twin(packet)
            if twin is not None:
                _register(twin, formula, twin=True)
        return formula

    return register


@register_formula(aten.mv)
def matrix_vector_flop(matrix_shape: Shape, vector_shape: Shape, *args, out_shape=None, **kwargs) -> int:
    """FLOPs of ``mv``: a (n, m) matrix times an (m,) vector is n·m multiply-adds.

    >>> matrix_vector_flop((4, 8), (8,))  # 2 * 4 * 8
    64
    """
    return 2 * _numel(matrix_shape)


@register_formula(aten.addmv)
def add_matrix_vector_flop(self_shape: Shape, matrix_shape: Shape, vector_shape: Shape, *args, out_shape=None,
                           **kwargs) -> int:
    """FLOPs of ``addmv`` (bias + matrix @ vector): n·m multiply-adds, the bias add excluded."""
    return 2 * _numel(matrix_shape)


@register_formula(aten.dot, aten.vdot)
def dot_flop(a_shape: Shape, b_shape: Shape, *args, out_shape=None, **kwargs) -> int:
    """FLOPs of ``dot`` / ``vdot``: n multiply-adds for two (n,) vectors.

    >>> dot_flop((8,), (8,))
    16
    """
    return 2 * _numel(a_shape)


@register_formula(aten.addbmm)
def add_batched_matrix_flop(self_shape: Shape, batch1_shape: Shape, batch2_shape: Shape, *args, out_shape=None,
                            **kwargs) -> int:
    """FLOPs of ``addbmm``: (b, n, m) @ (b, m, p) summed over b is b·n·m·p multiply-adds."""
    b, n, m = batch1_shape
    return 2 * b * n * m * batch2_shape[-1]


@register_formula(aten.addr)
def add_outer_product_flop(self_shape: Shape, vec1_shape: Shape, vec2_shape: Shape, *args, out_shape=None,
                           **kwargs) -> int:
    """FLOPs of ``addr`` (a rank-1 update, BLAS ``ger``): n·m multiplications, counted as multiply-adds."""
    return 2 * _numel(vec1_shape) * _numel(vec2_shape)


@register_formula(aten._scaled_dot_product_flash_attention_for_cpu,
                  aten._scaled_dot_product_fused_attention_overrideable)
def attention_kernel_flop(query_shape: Shape, key_shape: Shape, value_shape: Shape, *args, out_shape=None,
                          **kwargs) -> int:
    """FLOPs of a fused attention kernel: scores Q Kᵀ plus the mix A V (L6).

    ``query`` (…, L, E), ``key`` (…, S, E), ``value`` (…, S, Ev): every query row takes S·E
    multiply-adds for its scores and S·Ev for its mix, so B·H·L·S·(E + Ev) multiply-adds, with the
    leading dims of the query (batch, heads; keys may be shared across heads). Softmax, scaling and
    the causal-mask saving are not counted (a causal kernel is charged the full square).

    >>> attention_kernel_flop((1, 12, 64, 64), (1, 12, 64, 64), (1, 12, 64, 64)) // 2
    6291456
    """
    *leading, length_q, width_qk = query_shape
    length_k = key_shape[-2]
    width_v = value_shape[-1]
    return 2 * _numel(leading) * length_q * length_k * (width_qk + width_v)


def _multi_head_attention_multiply_adds(batch: int, length_q: int, length_k: int, embed_dim: int) -> int:
    projections = batch * (length_q + 2 * length_k) * embed_dim * embed_dim  # Q, K, V: E -> E each
    output_projection = batch * length_q * embed_dim * embed_dim
    scores_and_mix = batch * length_q * length_k * 2 * embed_dim  # all heads: H · L · S · (d_k + d_v)
    return projections + output_projection + scores_and_mix


def _batch_and_length(shape: Shape) -> tuple[int, int]:
    """(B, T) of a (B, T, E) or unbatched (T, E) activation."""
    return (_numel(shape[:-2]) if len(shape) > 2 else 1), shape[-2]


@register_formula(aten._native_multi_head_attention)
def native_multi_head_attention_flop(query_shape: Shape, key_shape: Shape, value_shape: Shape, embed_dim: int,
                                     *args, out_shape=None, **kwargs) -> int:
    """FLOPs of ``_native_multi_head_attention``, the ``nn.MultiheadAttention`` fast path.

    Q, K, V projections (E → E each), scores and mix over all heads, and the output projection:
    B·(L + 2S)·E² + B·L·E² + 2·B·L·S·E multiply-adds (biases excluded).

    >>> native_multi_head_attention_flop((1, 50, 512), (1, 50, 512), (1, 50, 512), 512) // 2
    54988800
    """
    batch, length_q = _batch_and_length(query_shape)
    _, length_k = _batch_and_length(key_shape)
    return 2 * _multi_head_attention_multiply_adds(batch, length_q, length_k, embed_dim)


@register_formula(aten._transformer_encoder_layer_fwd)
def transformer_encoder_layer_flop(src_shape: Shape, embed_dim: int, *rest, out_shape=None, **kwargs) -> int:
    """FLOPs of ``_transformer_encoder_layer_fwd``, the ``nn.TransformerEncoderLayer`` fast path.

    Self-attention as in :func:`native_multi_head_attention_flop` with L = S = T, plus the
    position-wise feed-forward: B·T·(|W_1| + |W_2|) multiply-adds. Norms and biases excluded.

    >>> transformer_encoder_layer_flop((1, 64, 512), 512, 4, (1536, 512), (1536,), (512, 512), (512,),
    ...     False, False, 1e-5, (512,), (512,), (512,), (512,), (512, 512), (512,), (512, 512)) // 2
    104857600
    """
    # Schema: (src, embed_dim, num_heads, qkv_weight, qkv_bias, proj_weight, proj_bias, use_gelu,
    #          norm_first, eps, norm_weight_1, norm_bias_1, norm_weight_2, norm_bias_2,
    #          ffn_weight_1, ffn_bias_1, ffn_weight_2, ...): ffn weights sit at 14 and 16.
    ffn_weight_1_shape, ffn_weight_2_shape = rest[12], rest[14]
    batch, length = _batch_and_length(src_shape)
    attention = _multi_head_attention_multiply_adds(batch, length, length, embed_dim)
    feed_forward = batch * length * (_numel(ffn_weight_1_shape) + _numel(ffn_weight_2_shape))
    return 2 * (attention + feed_forward)


@register_formula(aten.mkldnn_rnn_layer)
def fused_recurrent_layer_flop(input_shape: Shape, weight_input_shape: Shape, weight_hidden_shape: Shape,
                               *args, out_shape=None, **kwargs) -> int:
    """FLOPs of ``mkldnn_rnn_layer``, oneDNN's fused CPU recurrence (one layer, one direction).

    Every position t (of every sequence; packed inputs carry only real positions) multiplies
    W_ih (G·d_h, d_in) by x_t and W_hh (G·d_h, d_h) by h_{t-1}, G = 4 gates for LSTM, 3 for GRU,
    1 for a tanh RNN: positions·(|W_ih| + |W_hh|) multiply-adds (L5, with gates). Gate products,
    activations and biases excluded.

    >>> fused_recurrent_layer_flop((1, 250, 12), (512, 12), (512, 128)) // 2  # 250 * 512 * (12 + 128)
    17920000
    """
    positions = _numel(input_shape[:-1])
    return 2 * positions * (_numel(weight_input_shape) + _numel(weight_hidden_shape))


@register_formula(aten._grouped_mm)
def grouped_matrix_flop(self_shape: Shape, mat2_shape: Shape, *args, out_shape=None, **kwargs) -> int:
    """FLOPs of ``_grouped_mm`` (the expert products of token-routed mixture-of-experts layers, G groups).

    (M, K) @ (G, K, N) with offsets over M: each of the M rows meets its group's (K, N), M·K·N multiply-adds;
    (G, M, K) @ (G, K, N): G·M·K·N; (G, M, K) @ (K, N) with offsets over N: M·K·N; (M, K) @ (K, N) with
    offsets over K (out (G, M, N)): M·K·N. That is numel(out)·K, except the last form. Rows (or columns)
    past the last offset are counted too: the count is exact when the offsets cover every row, as
    ``transformers``' expert dispatch makes them, and an upper bound otherwise (shapes are all a formula sees).

    >>> grouped_matrix_flop((6, 4), (3, 4, 8), out_shape=(6, 8)) // 2  # 6 rows * 4 * 8
    192
    """
    if len(self_shape) == 2 and len(mat2_shape) == 2:
        return 2 * self_shape[0] * self_shape[1] * mat2_shape[1]
    return 2 * _numel(out_shape) * self_shape[-1]


@register_formula(aten.linear)
def linear_flop(input_shape: Shape, weight_shape: Shape, *args, out_shape=None, **kwargs) -> int:
    """FLOPs of ``linear`` when it reaches the counter whole (on nested tensors; a dense ``linear`` arrives as
    ``addmm``): every input row (…, d_in) times W (d_out, d_in) is d_in·d_out multiply-adds, bias excluded.

    >>> linear_flop((1, 5, 8), (16, 8)) // 2  # 5 * 8 * 16
    640
    """
    return 2 * _numel(input_shape[:-1]) * _numel(weight_shape)


@register_formula(aten.matmul)
def matmul_flop(a_shape: Shape, b_shape: Shape, *args, out_shape=None, **kwargs) -> int:
    """FLOPs of ``matmul`` when it reaches the counter whole (on nested tensors): (…, n, k) @ (…, k, m) is
    n·k·m multiply-adds per broadcast batch; a 1-D factor counts as one row (a) or one column (b).

    >>> matmul_flop((2, 3, 4), (4, 5)) // 2  # 2 * 3 * 4 * 5
    120
    """
    a = [1, *a_shape] if len(a_shape) == 1 else list(a_shape)
    b = [*b_shape, 1] if len(b_shape) == 1 else list(b_shape)
    batch = torch.broadcast_shapes(tuple(a[:-2]), tuple(b[:-2]))
    return 2 * _numel(batch) * a[-2] * a[-1] * b[-1]


@register_formula(aten.linalg_solve_triangular)
def triangular_solve_flop(self_shape: Shape, b_shape: Shape, *args, out_shape=None, **kwargs) -> int:
    """FLOPs of ``linalg_solve_triangular`` (A X = B, A (…, n, n) triangular, B (…, n, p); or X A = B with
    ``left=False``): substitution takes n(n − 1)/2 multiply-adds per right-hand side, the n divisions by the
    diagonal excluded (as bias adds are). Gated delta-rule layers (Qwen3-Next) solve one per chunk.

    >>> triangular_solve_flop((64, 64), (64, 16)) // 2  # 64 * 63 / 2 * 16
    32256
    """
    *batch_a, n, _ = self_shape
    *batch_b, rows, columns = b_shape
    left = kwargs.get("left", True)
    right_hand_sides = columns if left else rows
    batch = math.prod(torch.broadcast_shapes(tuple(batch_a), tuple(batch_b)))
    return 2 * batch * n * (n - 1) // 2 * right_hand_sides


def _quantized_linear_packets() -> tuple[torch._ops.OpOverloadPacket, ...]:
    """Every ``quantized::linear*`` kernel registered with PyTorch's dispatcher (those that pack and unpack weights
    compute nothing)."""
    names = {name.split("::")[1].split(".")[0] for name in torch._C._dispatch_get_all_op_names()
             if name.startswith("quantized::linear")}
    return tuple(getattr(torch.ops.quantized, name) for name in sorted(names)
                 if not name.startswith(("linear_prepack", "linear_unpack")))


QUANTIZED_LINEAR = frozenset(_quantized_linear_packets())
"""The quantised linear kernels: contractions (:func:`quantized_linear_flop`), with a float twin for the path rules
(:func:`float_twin`)."""


@register_formula(*QUANTIZED_LINEAR)
def quantized_linear_flop(input_shape: Shape, *args, out_shape=None, **kwargs) -> int:
    """FLOPs of a quantised linear (``quantized.linear_dynamic`` of ``torch.ao.quantization.quantize_dynamic``, and
    every ``quantized.linear*`` kernel): the contraction it is, int8 or not — each output element (…, d_out) takes
    d_in multiply-adds, so numel(out)·d_in; its fused bias and activation excluded, as for ``addmm``. The weight is
    packed (no shape of its own); the input's last dim and the output's shape say it all.

    >>> quantized_linear_flop((1, 5, 8), None, out_shape=(1, 5, 16)) // 2  # 5 * 8 * 16
    640
    """
    return 2 * _numel(out_shape) * input_shape[-1]


def fft_multiplications(length: int, *, real: bool) -> int:
    """Multiplications of one discrete Fourier transform of ``length`` points by a radix-2 FFT (Cooley–Tukey).

    Convention: a complex transform of n points takes (n/2)·log2 n butterflies, one complex multiplication each,
    a complex multiplication being 4 real multiplications: 2·n·log2 n; a transform whose input or output is real
    (``rfft``, ``irfft``) does half of it, n·log2 n. For any n, log2 n is taken as it is and the product rounded up
    (a mixed-radix or Bluestein FFT differs by a constant factor, as every FFT count does). Additions are not in
    this unit (they are in the all-arithmetic one through the formula's 2 FLOPs per multiply-add); a transform of
    1 point is a copy, 0.

    >>> fft_multiplications(8, real=False), fft_multiplications(8, real=True)  # 2·8·3, 8·3
    (48, 24)
    """
    if length <= 1:
        return 0
    return (1 if real else 2) * math.ceil(length * math.log2(length))


def _transforms(signal: Shape, dim: Sequence[int], real_last: bool) -> int:
    """Multiplications of FFTs along ``dim`` of a signal of shape ``signal``: along each transformed dim of n points,
    every vector along it (numel / n of them) is one transform; ``real_last``: the last transformed dim is real."""
    dims = [d % len(signal) for d in dim]
    return sum((_numel(signal) // max(signal[d], 1)) * fft_multiplications(signal[d], real=real_last and i == len(dims) - 1)
               for i, d in enumerate(dims))


@register_formula(aten._fft_r2c)
def fft_r2c_flop(self_shape: Shape, dim: Sequence[int], *args, out_shape=None, **kwargs) -> int:
    """FLOPs (2 per multiplication of :func:`fft_multiplications`) of ``_fft_r2c`` (``rfft``, ``rfftn``): the real
    input's n points along the last transformed dim, complex along the others.

    >>> fft_r2c_flop((4, 16), [1], out_shape=(4, 9)) // 2  # rfft of 4 rows of 16 points: 4 · 16 · log2 16
    256
    """
    return 2 * _transforms(self_shape, dim, real_last=True)


@register_formula(aten._fft_c2r)
def fft_c2r_flop(self_shape: Shape, dim: Sequence[int], *args, out_shape=None, **kwargs) -> int:
    """FLOPs of ``_fft_c2r`` (``irfft``): as :func:`fft_r2c_flop`, on the real output's n points.

    >>> fft_c2r_flop((4, 9), [1], 0, 16, out_shape=(4, 16)) // 2  # 4 · 16 · log2 16
    256
    """
    return 2 * _transforms(out_shape, dim, real_last=True)


@register_formula(aten._fft_c2c)
def fft_c2c_flop(self_shape: Shape, dim: Sequence[int], *args, out_shape=None, **kwargs) -> int:
    """FLOPs of ``_fft_c2c`` (``fft``, ``ifft``, ``fftn``): complex transforms along every dim of ``dim``.

    >>> fft_c2c_flop((4, 16), [1], out_shape=(4, 16)) // 2  # 4 · 2 · 16 · log2 16
    512
    """
    return 2 * _transforms(self_shape, dim, real_last=False)


def _register_pytorch_twins() -> frozenset[object]:
    """Give every in-place twin ``foo_`` of an op of PyTorch's flop registry the formula of ``foo`` (unwrapped: a
    custom mapping is shape-wrapped by ``FlopCounterMode`` itself); returns those twins."""
    twins = set()
    for packet, formula in flop_registry.items():
        twin = _in_place_twin(packet) if isinstance(packet, torch._ops.OpOverloadPacket) else None
        if twin is not None and twin not in EXTRA_FORMULAS:
            _register(twin, getattr(formula, "__wrapped__", formula), twin=True)
            twins.add(twin)
    return frozenset(twins)


PYTORCH_TWINS = _register_pytorch_twins()
"""In-place twins in :data:`EXTRA_FORMULAS` whose formula is PyTorch's own (``addmm_``, ``baddbmm_``)."""

FUSED_OPS = frozenset({
    aten._scaled_dot_product_flash_attention_for_cpu,
    aten._scaled_dot_product_fused_attention_overrideable,
    aten._scaled_dot_product_flash_attention,
    aten._scaled_dot_product_efficient_attention,
    aten._scaled_dot_product_cudnn_attention,
    aten._flash_attention_forward,
    aten._efficient_attention_forward,
    aten._native_multi_head_attention,
    aten._transformer_encoder_layer_fwd,
    aten.mkldnn_rnn_layer,
    aten._cudnn_rnn,
    aten.miopen_rnn,
})
"""Kernels that run a whole chain of steps as one op: their inner span is invisible to a trace."""

CREATION_NAMES = frozenset("""
    zeros zeros_like ones ones_like empty empty_like empty_strided empty_permuted full full_like fill fill_ zero_
    new_zeros new_ones new_empty new_empty_strided new_full scalar_tensor arange linspace logspace eye
    rand rand_like randn randn_like randint randint_like randperm normal_ uniform_ bernoulli_ exponential_
    geometric_ log_normal_ cauchy_ random_
""".split())
"""Ops that create or fill a tensor (constants, random draws): no multiplication, and no source reaches what they
write (the path tracer reads a tensor argument they compute from, ``linspace``'s ends or ``fill_``'s value)."""

_MOVEMENT_NAMES = CREATION_NAMES | frozenset("""
    clone copy_ _to_copy _copy_from _copy_from_and_resize contiguous cat stack hstack vstack
    unsafe_split unsafe_split_with_sizes unsafe_chunk split_copy split_with_sizes_copy unbind_copy
    index index_select gather embedding take masked_select nonzero
    scatter scatter_ index_put index_put_ index_copy index_copy_ slice_scatter select_scatter
    _unsafe_view _reshape_alias view_as_real view_as_complex lift_fresh lift_fresh_copy
    constant_pad_nd repeat flip roll tril triu tril_ triu_ _pack_padded_sequence
    _local_scalar_dense resize_ set_ detach_ _assert_tensor_metadata
    _nested_tensor_from_mask _nested_tensor_from_mask_left_aligned to_padded_tensor _nested_from_padded
    _nested_from_padded_and_nested_example _nested_tensor_from_tensor_list _nested_view_from_buffer
    _nested_view_from_buffer_copy _nested_tensor_size _nested_tensor_strides _nested_tensor_storage_offsets
    _jagged_to_padded_dense_forward _padded_dense_to_jagged_forward
""".split())

_COMPUTE_NAMES = frozenset("""
    _softmax _safe_softmax _log_softmax softmax log_softmax native_layer_norm native_group_norm native_batch_norm
    _native_batch_norm_legit _native_batch_norm_legit_no_training native_dropout sort topk
    max min amax amin argmax argmin cumsum cumprod logsumexp histc bincount
    index_add scatter_add scatter_reduce index_reduce
""".split())
"""Compute ops with no counted multiplications that carry no ``pointwise`` or ``reduction`` tag."""


def tensors_in(values: Iterable[object]) -> Iterator[torch.Tensor]:
    """The tensors among ATen arguments or results: tensors, and tensors inside lists and tuples (an op's
    schema allows no other containers). Cheaper than a general pytree walk, which a tracer would pay per op.

    >>> len(list(tensors_in((torch.ones(2), [torch.ones(1), 3], "x"))))
    2
    """
    for value in values:
        if isinstance(value, torch.Tensor):
            yield value
        elif isinstance(value, (list, tuple)):
            yield from tensors_in(value)


@functools.cache
def schema_arguments(func: torch._ops.OpOverload) -> tuple[tuple[str, bool, object], ...]:
    """(name, has a default, default) of each argument of the op's schema, read once per op."""
    return tuple((a.name, a.has_default_value(), a.default_value if a.has_default_value() else None)
                 for a in func._schema.arguments)


def bound_arguments(func: torch._ops.OpOverload, args: tuple, kwargs: dict) -> dict[str, object]:
    """The op's arguments by schema name, defaults filled in.

    >>> sorted(bound_arguments(torch.ops.aten.add.Tensor, (1, 2), {}))
    ['alpha', 'other', 'self']
    """
    names, defaults = _binding(func)
    bound = dict(zip(names, args))
    for name in names[len(args):]:
        if name in kwargs:
            bound[name] = kwargs[name]
        elif name in defaults:
            bound[name] = defaults[name]
    return bound


@functools.cache
def _binding(func: torch._ops.OpOverload) -> tuple[tuple[str, ...], dict[str, object]]:
    """The schema's argument names in order and the defaults of those that have one, read once per op."""
    arguments = schema_arguments(func)
    return tuple(name for name, _, _ in arguments), {name: default for name, has, default in arguments if has}


@functools.cache
def op_name(func: torch._ops.OpOverload) -> str:
    """Short, readable name of an ATen op: ``aten.bmm`` (the overload packet, without ``.default``); a higher-order
    op by its own name (``higher_order.flex_attention``)."""
    if isinstance(func, torch._ops.HigherOrderOperator):
        return f"higher_order.{func.name()}"
    return str(func.overloadpacket)


def float_twin(func: torch._ops.OpOverload, args: tuple,
               kwargs: dict) -> tuple[torch._ops.OpOverload, tuple, torch.Size] | None:
    """The floating-point op a quantised kernel stands for, on these arguments: for a quantised linear
    y (…, d_out) = x (…, d_in) Wᵀ, ``(aten.mm, (x as (N, d_in), Wᵀ dequantised), (N, d_out))`` — the product the
    path rules know, with the weight's values (an int8 weight that rounds to exactly 0 is a constant 0 by value).
    None for any other op, or when the weight cannot be unpacked. The third item is the shape of the twin's output;
    the caller reshapes its result to the kernel's.

    >>> float_twin(torch.ops.aten.mm.default, (), {}) is None
    True
    """
    if not _in_packets(func, QUANTIZED_LINEAR) or not args or not isinstance(args[0], torch.Tensor):
        return None
    x, packed = args[0], args[1] if len(args) > 1 else None
    weight = packed if isinstance(packed, torch.Tensor) else None
    for unpack in ("linear_unpack", "linear_unpack_fp16"):
        if weight is not None:
            break
        try:
            weight = getattr(torch.ops.quantized, unpack)(packed)[0]
        except (RuntimeError, TypeError, AttributeError):
            continue
    if weight is None or x.is_quantized:
        return None
    weight = weight.dequantize() if weight.is_quantized else weight
    rows = x.reshape(-1, x.shape[-1])  # a view where x is contiguous: the same elements, read through its strides
    return torch.ops.aten.mm.default, (rows, weight.to(x.dtype).t()), torch.Size((rows.shape[0], weight.shape[0]))


def defers_to_subclass(types: Iterable[type]) -> bool:
    """Whether a dispatch mode should hand the op to a tensor subclass among its arguments (return
    NotImplemented): a subclass with a ``__torch_dispatch__`` of its own — a jagged nested tensor
    (``torch.nested`` with ``layout=torch.jagged``), a tensor wrapper — computes the op through ops on the dense
    tensors it holds, and those come back to the mode one by one. So a jagged batch is counted on its real
    tokens, each sequence at its own length (the values buffer holds exactly those rows), and its sizes, which
    are not plain integers, are never read by the mode. Decided from the argument types alone.

    >>> defers_to_subclass([torch.Tensor, torch.nn.Parameter])
    False
    """
    disabled = torch._C._disabled_torch_dispatch_impl
    return any(getattr(t, "__torch_dispatch__", disabled) is not disabled for t in types)


def is_higher_order(func: object) -> bool:
    """Whether a dispatched callable is a higher-order op (FlexAttention, ``torch.cond``, ``while_loop``...):
    an op that takes functions (a score_mod, branches, a loop body) and reaches a dispatch mode whole."""
    return isinstance(func, torch._ops.HigherOrderOperator)


def run_higher_order(mode: torch.utils._python_dispatch.TorchDispatchMode, func: torch._ops.HigherOrderOperator,
                     args: tuple, kwargs: dict) -> object:
    """Run a higher-order op through its own eager implementation with ``mode`` on, so that its parts come back to
    ``mode`` op by op and are measured as what they are.

    The rule, one for every higher-order op: PyTorch's ``CompositeExplicitAutograd`` kernel of the op (what runs
    eagerly on a plain tensor). For FlexAttention that is its dense math implementation: the scores Q Kᵀ of every
    (query, key) pair, ``score_mod`` applied to them, ``block_mask``'s mask_mod setting closed pairs to -inf, softmax,
    the mix with V — so its work is the full L×S square, and its paths respect score_mod and block_mask by value.
    ``torch.cond`` runs the branch its predicate takes (the work of what ran; PyTorch's own counter charges the
    larger branch instead), ``while_loop`` its body as many times as it runs. A kernel that refuses to run under a
    mode (``cond``, ``invoke_subgraph``, ``scan``) runs outside it with each function it was given run under it; its
    outputs must then be what those functions returned (the kernel computed nothing itself), else it is refused.
    A mode that meets higher-order ops sets ``supports_higher_order_operators = True`` and calls this; the
    measurement holds :func:`~seqlab.measure.switches.eager_higher_order` so that FlexAttention reaches the mode without ``torch.compile``.

    Args:
        mode: the dispatch mode the op reached (re-entered for the op's parts).
        func, args, kwargs: the higher-order op and its arguments.

    Returns:
        What the op returns.

    Raises:
        SeqlabError: the op has no eager implementation (``wrap``, ``tag_activation_checkpoint``...), or its kernel
            computes outside the functions it was given: one line naming it.
    """
    shield_from_dynamo()  # the op may compile its functions with Dynamo: it must not trace the engine's modes
    try:
        return _run_eagerly(mode, func, args, kwargs)
    finally:
        _unskip_compiled_caller()


def _run_eagerly(mode, func: torch._ops.HigherOrderOperator, args: tuple, kwargs: dict) -> object:
    kernel = func.py_kernels.get(torch._C.DispatchKey.CompositeExplicitAutograd)
    if kernel is None:
        raise SeqlabError(N_("the higher-order op {name} has no eager implementation to trace; run the module "
                             "without it (outside torch.compile)"), name=func.name(), parameter="layer")
    if not _refuses_modes(kernel):
        with mode:
            return kernel(*args, **kwargs)
    made: dict[int, torch.Tensor] = {}

    def under(function: Callable) -> Callable:
        def run(*inner_args, **inner_kwargs):
            with mode:
                out = function(*inner_args, **inner_kwargs)
            made.update((id(t), t) for t in tensors_in(out if isinstance(out, (list, tuple)) else (out,)))
            return out
        return run

    out = kernel(*(under(a) if callable(a) and not isinstance(a, torch.Tensor) else a for a in args), **kwargs)
    if any(id(t) not in made for t in tensors_in(out if isinstance(out, (list, tuple)) else (out,))):
        raise SeqlabError(N_("the higher-order op {name} computes outside the functions it was given, where no trace "
                             "sees it; run the module without it"), name=func.name(), parameter="layer")
    return out


def _unskip_compiled_caller() -> None:
    """Undo what ``torch.compile`` marked while a dispatch mode was on. PyTorch runs ``cond``, ``scan``, ``map``...
    eagerly through ``torch.compile`` (``_hop_compile_and_call``); under a non-infra dispatch mode Dynamo skips the
    wrapper's frame and marks its code "skip" for every later call, so the next plain call, no mode on, compiles the
    op's dense kernel as a frame of its own and fails (PyTorch's own ``FlopCounterMode`` leaves it so too). The
    code of the frame ``compile_wrapper`` called is reset (its marks and cache cleared: the next plain call compiles
    it as the first did)."""
    frame = sys._getframe(1)
    while frame is not None and frame.f_back is not None:
        caller = frame.f_back.f_code
        if caller.co_name == "compile_wrapper" and caller.co_filename.endswith(("_dynamo/eval_frame.py",
                                                                              "_dynamo\\eval_frame.py")):
            torch._C._dynamo.eval_frame.reset_code(frame.f_code)
            return
        frame = frame.f_back


@functools.cache
def _refuses_modes(kernel: Callable) -> bool:
    """Whether an eager kernel of a higher-order op refuses to run while a dispatch mode is on (PyTorch's control-flow
    kernels check the mode stack and raise "Mode should never be enabled"), read once from its code."""
    code = getattr(kernel, "__code__", None)
    return code is not None and "_get_current_dispatch_mode" in code.co_names



#: Per-op decisions the engine keeps by an op's identity (the plans of :mod:`seqlab.measure.work`, the span and the
#: path tracer), registered by the modules that keep them, so that :func:`forget_decisions` reaches them all.
_DECISIONS: list[dict] = []


def kept_decisions(table: dict) -> dict:
    """Register a per-op decision table (keyed by the op's identity) and return it."""
    _DECISIONS.append(table)
    return table


def forget_decisions() -> None:
    """Forget every per-op decision (after a rule was patched, in a test): the registered tables and this module's
    cached rules."""
    for table in _DECISIONS:
        table.clear()
    for value in list(globals().values()):
        if callable(getattr(value, "cache_clear", None)):
            value.cache_clear()

@functools.cache
def functional_twin(func: torch._ops.OpOverload) -> torch._ops.OpOverload:
    """The out-of-place form of an in-place or ``out=`` op (the op itself when it has none).

    Rule: an op tagged ``inplace`` named ``foo_`` has twin ``foo`` with the same overload; an ``out``
    overload has twin ``default`` and ``Tensor_out`` has ``Tensor``. A twin that does not exist leaves
    the op as it is.

    >>> functional_twin(torch.ops.aten.threshold_.default)
    <OpOverload(op='aten.threshold', overload='default')>
    >>> functional_twin(torch.ops.aten.masked_fill_.Scalar)
    <OpOverload(op='aten.masked_fill', overload='Scalar')>
    >>> functional_twin(torch.ops.aten.mm.out)
    <OpOverload(op='aten.mm', overload='default')>
    """
    name, overload = func.overloadpacket.__name__, func._overloadname
    if torch.Tag.inplace in func.tags and name.endswith("_") and not name.endswith("__"):
        name = name[:-1]
    elif overload == "out":
        overload = "default"
    elif overload.endswith("_out"):
        overload = overload.removesuffix("_out")
    else:
        return func
    twin = getattr(getattr(aten, name, None), overload, None)
    return twin if isinstance(twin, torch._ops.OpOverload) else func


@functools.cache
def is_contraction(func: torch._ops.OpOverload) -> bool:
    """Whether the op's multiplications are counted: PyTorch's flop registry or :data:`EXTRA_FORMULAS`."""
    packet = func.overloadpacket
    return packet in flop_registry or packet in EXTRA_FORMULAS


def _is_movement(func: torch._ops.OpOverload) -> bool:
    if func.is_view or torch.Tag.inplace_view in func.tags:
        return True
    return func.overloadpacket.__name__ in _MOVEMENT_NAMES


@functools.cache
def is_movement(func: torch._ops.OpOverload) -> bool:
    """Whether the op only views, aliases, copies, creates or rearranges data (0 multiplications, 0 span);
    an in-place or ``out=`` op is movement when its :func:`functional_twin` is."""
    return _is_movement(func) or _is_movement(functional_twin(func))


def _is_uncounted_compute(func: torch._ops.OpOverload) -> bool:
    tags = func.tags
    if torch.Tag.pointwise in tags or torch.Tag.reduction in tags:
        return True
    return func.overloadpacket.__name__ in _COMPUTE_NAMES


@functools.cache
def is_uncounted_compute(func: torch._ops.OpOverload) -> bool:
    """Whether the op computes without multiplications the convention counts (element-wise, reductions,
    softmax, norms); an in-place or ``out=`` op is when its :func:`functional_twin` is (``threshold_``).

    >>> is_uncounted_compute(torch.ops.aten.threshold_.default), is_unknown(torch.ops.aten.threshold_.default)
    (True, False)
    """
    return _is_uncounted_compute(func) or _is_uncounted_compute(functional_twin(func))


@functools.cache
def is_unknown(func: torch._ops.OpOverload) -> bool:
    """Whether the engine cannot account for the op's multiplications: it is named, never counted as 0."""
    return not (is_contraction(func) or is_movement(func) or is_uncounted_compute(func))


def has_floating(values: Iterable[object]) -> bool:
    """Whether any tensor among ATen arguments or results holds floating-point or complex numbers: an op
    with none (integer ``isin``, ``bincount``, integer ``floor_divide``, ``argmax`` of integers, boolean
    masks) does no arithmetic either unit counts, with or without a formula.

    >>> has_floating((torch.arange(4), [torch.ones(2, dtype=torch.bool)])), has_floating((torch.ones(1),))
    (False, True)
    """
    return any(t.is_floating_point() or t.is_complex() for t in tensors_in(values))


@functools.cache
def _core_decompositions() -> Mapping[torch._ops.OpOverload, Callable]:
    from torch._decomp import core_aten_decompositions
    return dict(core_aten_decompositions().items())  # a plain dict: the table's own .get() misses entries


@functools.cache
def decomposition_of(func: torch._ops.OpOverload) -> Callable | None:
    """PyTorch's own decomposition of an op into smaller ATen ops (``torch._decomp``): the core ATen table
    first (what ``torch.export`` decomposes to), then the global table; the op's out-of-place twin's
    decomposition for an in-place op with none of its own. None when PyTorch has none.

    >>> decomposition_of(torch.ops.aten.hardswish.default) is not None, decomposition_of(torch.ops.aten.mm.default)
    (True, None)
    """
    from torch._decomp import decomposition_table
    for op in (func, functional_twin(func)):
        found = _core_decompositions().get(op) or decomposition_table.get(op)
        if found is not None:
            return found
    return None


#: Point-wise ops that choose or copy elements rather than compute them: 0 FLOPs in the arithmetic unit.
_SELECTION_NAMES = frozenset("where masked_fill masked_scatter _masked_scale clone copy alias lift_fresh".split())
#: Ops that combine along a dim with one result per element (a prefix sum): 1 FLOP per output element.
_SCAN_NAMES = frozenset("cumsum cumprod logcumsumexp cummax cummin".split())
#: Ops that add (or reduce) a source tensor into chosen rows of another: 1 FLOP per source element.
_SCATTER_NAMES = frozenset("index_add scatter_add scatter_reduce index_reduce".split())
#: Reductions by name (no ``reduction`` tag on these overloads): 1 FLOP per input element.
_REDUCTION_NAMES = frozenset("max min amax amin argmax argmin logsumexp histc bincount aminmax".split())
#: The ops the arithmetic decomposes even though they are in the core ATen set: softmax and the
#: normalisations are counted through their parts (max, subtract, exp, sum, divide...), per primitive op.
_DECOMPOSED_CORE_NAMES = frozenset("""
    _softmax _log_softmax _safe_softmax native_layer_norm native_group_norm native_batch_norm
    _native_batch_norm_legit _native_batch_norm_legit_no_training var_mean
""".split())


@functools.cache
def arithmetic_kind(func: torch._ops.OpOverload) -> str:
    """How the all-arithmetic unit (FLOPs, :mod:`seqlab.measure.work`) charges one call of the op.

    One of ``"movement"`` (0: views, copies, casts, indexing, fills), ``"contraction"`` (its formula: 2 per
    multiply-add, plus 1 per output element for an additive input), ``"fused"`` (a fused kernel with a formula
    but no decomposition: its contractions only, its element-wise part named as unseen), ``"decomposed"``
    (counted through PyTorch's decomposition, run on ``meta``: every op outside the core ATen set that has one,
    and softmax / log-softmax / the normalisations), ``"selection"`` (0: ``where``, ``masked_fill``),
    ``"pointwise"`` (1 per output element), ``"reduction"`` (1 per input element), ``"scan"`` (1 per output
    element), ``"scatter"`` (``index_add``, ``scatter_add``...: 1 per source element), or ``"uncosted"`` (no
    stated cost: ``sort``, ``topk``... named, never counted as 0).

    >>> [arithmetic_kind(op) for op in (aten.mm.default, aten.sigmoid.default, aten.silu.default,
    ...                                 aten._softmax.default, aten.sum.dim_IntList, aten.topk.default)]
    ['contraction', 'pointwise', 'decomposed', 'decomposed', 'reduction', 'uncosted']
    """
    twin = functional_twin(func)
    name = twin.overloadpacket.__name__
    if is_movement(func) and name not in _SCAN_NAMES:
        return "movement"
    if func.namespace == "prims":  # a decomposition's primitive: charged like the ATen op of its name
        return _primitive_kind(func)
    if is_contraction(func):
        if func.overloadpacket in FUSED_OPS or twin.overloadpacket in FUSED_OPS:
            return "decomposed" if decomposition_of(func) is not None else "fused"
        return "contraction"
    if name in _SELECTION_NAMES:
        return "selection"
    if name in _SCATTER_NAMES:  # before its decomposition, whose accumulating index_put is movement
        return "scatter"
    core = torch.Tag.core in twin.tags
    if decomposition_of(func) is not None and (not core or name in _DECOMPOSED_CORE_NAMES):
        return "decomposed"
    tags = twin.tags
    if name in _SCAN_NAMES:
        return "scan"
    if torch.Tag.reduction in tags or name in _REDUCTION_NAMES:
        return "reduction"
    if torch.Tag.pointwise in tags or torch.Tag.pointwise in func.tags:
        return "pointwise"
    return "uncosted"


_PRIMS_MOVEMENT = frozenset("convert_element_type broadcast_in_dim squeeze collapse_view split_dim".split())


def _primitive_kind(func: torch._ops.OpOverload) -> str:
    """A ``prims`` op (what some decompositions reach): movement, or the kind the tags of the ATen op of the
    same name give it (``prims.var`` is a reduction, ``prims.div`` point-wise), else uncosted."""
    name = func.overloadpacket.__name__
    if name in _PRIMS_MOVEMENT:
        return "movement"
    packet = getattr(aten, name, None)
    if not isinstance(packet, torch._ops.OpOverloadPacket):
        return "uncosted"
    tags = set().union(*(getattr(packet, overload).tags for overload in packet.overloads()))
    if torch.Tag.reduction in tags:
        return "reduction"
    return "pointwise" if torch.Tag.pointwise in tags else "uncosted"


#: Contractions with an additive input (``beta * self + ...``): 1 FLOP per output element more when it is used.
ADDEND_OPS = frozenset({aten.addmm, aten.addmv, aten.baddbmm, aten.addbmm, aten.addr})


# --- element-wise products that are contractions ------------------------------------------------------------

_ELEMENTWISE_PRODUCTS = frozenset({aten.mul, aten.mul_})
#: (id of the op, id of a set of packets) -> whether the op's packet is in it: asked on every op, decided once (a
#: packet's hash is a Python call, and so is ``overloadpacket``)
_PACKET_MEMBERSHIP: dict[tuple[int, int], bool] = kept_decisions({})


def _in_packets(func: torch._ops.OpOverload, packets: frozenset) -> bool:
    """Whether ``func``'s overload packet is in ``packets`` (a module-level set, alive as long as the process)."""
    key = (id(func), id(packets))
    known = _PACKET_MEMBERSHIP.get(key)
    if known is None:
        known = _PACKET_MEMBERSHIP[key] = func.overloadpacket in packets
    return known
_CONTRACTING_SUMS = frozenset({aten.sum})


def product_pairs(args: tuple, out: object) -> tuple[int, frozenset[int]]:
    """(outer-product multiplications, shared dims) of one element-wise product ``a * b`` (its two factors in
    ``args``, its result ``out``).

    An **outer product** forms more distinct (element of a, element of b) pairs than either factor has distinct
    elements: ``a[:, None] * b[None]`` counts n·m, one multiplication per output element (what the kernel executes).
    Distinct elements are judged by strides, not sizes: a dim of size 1, or an expanded dim (stride 0), holds one
    value, so ``expand`` and ``broadcast_to`` forms count the same; a gate product ``z * h`` (same shape) or a
    scaling by a scalar counts 0 here. The **shared dims** (negative indices into ``out``) are those both factors
    step through: a sum over one of them makes the product a contraction (:class:`ProductLedger`). Only
    floating-point or complex outputs count (a product of boolean masks is a logical and, not arithmetic).

    >>> product_pairs((torch.ones(3, 1), torch.ones(1, 4)), torch.ones(3, 4))  # an outer product: 3 * 4
    (12, frozenset())
    >>> product_pairs((torch.ones(5, 3, 1), torch.ones(5, 3, 4)), torch.ones(5, 3, 4))  # q[..., None] * S
    (0, frozenset({-3, -2}))
    """
    if not isinstance(out, torch.Tensor) or out.is_nested or not (out.is_floating_point() or out.is_complex()):
        return 0, frozenset()
    factors = [a for a in args[:2] if isinstance(a, torch.Tensor)]
    if len(factors) != 2 or any(f.is_nested or f.layout != torch.strided for f in factors):
        return 0, frozenset()
    a, b = factors
    return _pairs(a.shape, a.stride(), b.shape, b.stride(), out.shape)


@functools.lru_cache(maxsize=4096)
def _pairs(shape_a: torch.Size, stride_a: tuple, shape_b: torch.Size, stride_b: tuple,
           sizes: torch.Size) -> tuple[int, frozenset[int]]:
    """:func:`product_pairs` from shapes and strides alone, decided once per signature (a loop repeats them)."""
    dims = len(sizes)

    def distinct(shape, stride) -> list[bool]:
        pad = dims - len(shape)
        return [False if i < pad else (shape[i - pad] > 1 and stride[i - pad] != 0) for i in range(dims)]

    a, b = distinct(shape_a, stride_a), distinct(shape_b, stride_b)
    pairs = math.prod(n for n, x, y in zip(sizes, a, b, strict=True) if x or y)
    own = max(math.prod(n for n, x in zip(sizes, a, strict=True) if x),
              math.prod(n for n, y in zip(sizes, b, strict=True) if y))
    shared = frozenset(i - dims for i in range(dims) if a[i] and b[i])
    return (math.prod(sizes) if pairs > own else 0), shared


class ProductLedger:
    """Element-wise products waiting for the sum that makes them a contraction (issue 35, kind 5).

    Rule: a product ``a * b`` followed by a sum over a dim that both factors step through is a contraction,
    ``Σ_k a[…, k, …] b[…, k, …]``: ``(q[..., None] * S).sum(-2)`` is ``einsum("...k,...kv->...v", q, S)``,
    ``(x * w).sum(-1)`` a matrix–vector product, ``torch.linalg.vecdot`` (which PyTorch runs as exactly these two
    ops) a batch of dot products. It is charged as the einsum is — one multiplication per element of the product
    (each is one multiply-add) — and on a path or span the sum that completes it is one matrix product. An outer
    product is counted at the product itself (:func:`product_pairs`); the sum that reduces it is then a product
    step only. A product a sum never reduces over a shared dim (a gate, a scaling) stays element-wise.

    The sum must read the product's own result (the tensor object it returned; a view, a copy or an op in between
    breaks the pair, and the product stays element-wise). Decided per call in O(dims).

    >>> ledger = ProductLedger()
    >>> q, S = torch.ones(5, 3), torch.ones(5, 3, 4)
    >>> p = q[..., None] * S
    >>> ledger.product(torch.ops.aten.mul.Tensor, (q[..., None], S), p)  # not an outer product: nothing yet
    0
    >>> ledger.reduction(torch.ops.aten.sum.dim_IntList, (p, [-2]), {})  # (multiplications, a product step)
    (60, True)
    """

    __slots__ = ("_pending",)

    def __init__(self) -> None:
        self._pending: dict[int, tuple[weakref.ref, frozenset[int], int]] = {}

    def product(self, func: torch._ops.OpOverload, args: tuple, out: object) -> int:
        """An element-wise op ran: the multiplications to count now (an outer product), 0 otherwise; a product
        whose factors share a dim is remembered for the sum that may follow."""
        if not _in_packets(func, _ELEMENTWISE_PRODUCTS):
            return 0
        outer, shared = product_pairs(args, out)
        if outer or shared:
            try:
                self._pending[id(out)] = (weakref.ref(out), shared, 0 if outer else out.numel())
            except TypeError:  # a tensor that takes no weak reference: no pair
                pass
        return outer

    def reduction(self, func: torch._ops.OpOverload, args: tuple, kwargs: dict) -> tuple[int, bool]:
        """A reduction ran: (multiplications it completes, whether it completes a contraction). (0, False) unless
        it is a sum of a remembered product over one of the product's shared dims (or an outer product)."""
        if not _in_packets(func, _CONTRACTING_SUMS) or not args or not isinstance(args[0], torch.Tensor):
            return 0, False
        data = args[0]
        entry = self._pending.get(id(data))
        if entry is None or entry[0]() is not data:
            return 0, False
        _, shared, multiplications = entry
        dims = bound_arguments(func, args, kwargs).get("dim")
        rank = data.dim()
        reduced = range(-rank, 0) if dims is None or dims == [] else \
            ((dims,) if isinstance(dims, int) else dims)
        reduced = {(d % max(rank, 1)) - rank for d in reduced}
        if multiplications and not reduced & shared:
            return 0, False
        del self._pending[id(data)]
        return multiplications, True


# --- attention weights that are exactly 0 --------------------------------------------------------------------

_BATCHED_PRODUCTS = {aten.bmm: (0, 1), aten.mm: (0, 1), aten.baddbmm: (1, 2)}
_SOFTMAXES = frozenset({aten._softmax, aten._safe_softmax, aten.softmax})


#: Entries a :class:`ZeroWeightLedger` holds before it first sweeps those whose tensor died.
_SWEEP_FLOOR = 1024
#: id of an op -> (its packet, the positions of its factors in :data:`_BATCHED_PRODUCTS` or None), for
#: :meth:`ZeroWeightLedger.observe`, asked on every op
_OBSERVED: dict[int, tuple] = kept_decisions({})


class ZeroWeightLedger:
    """Multiplications an attention spends on (query, key) pairs whose weight is exactly 0 (issue 35, kind 6),
    read from the values wherever attention runs as its parts: Hugging Face's eager attention (scores + a
    ``finfo.min`` mask, softmax, mix), SDPA's math path (``_safe_softmax`` of scores with a boolean or additive
    mask), FlexAttention's dense implementation (score_mod, then mask_mod's ``-inf``), a hand-written masked
    softmax.

    Rule: a matrix product's result (``bmm``, ``mm``, ``baddbmm``: scores, contracted over E) is followed through
    the ops that keep its elements one for one (views, copies, casts, scaling, adding a mask, ``masked_fill``,
    ``where``, a score_mod); a softmax of it gives weights, and each weight that is exactly 0 — or whose score is
    ``-inf`` — is a closed pair: its E score multiplications were not useful. A matrix product whose left factor
    is such weights (followed the same way) spends Ev multiplications on each zero weight: not useful either. So a
    closed pair costs E + Ev, as :func:`~seqlab.measure.work.masked_attention_multiplications` charges a fused
    kernel. Values are read only at a softmax of scores and at a product by weights.

    >>> ledger, aten = ZeroWeightLedger(), torch.ops.aten
    >>> q, v = torch.randn(1, 4, 3), torch.randn(1, 4, 5)  # (B, T, E), (B, T, Ev)
    >>> s = torch.bmm(q, q.mT); ledger.observe(aten.bmm.default, (q, q.mT), {}, s)
    0
    >>> m = s.masked_fill(torch.ones(4, 4, dtype=torch.bool).triu(1), float("-inf"))
    >>> ledger.observe(aten.masked_fill.Scalar, (s, None, None), {}, m)
    0
    >>> p = torch.softmax(m, -1); ledger.observe(aten._softmax.default, (m, -1, False), {}, p)  # 6 closed · E 3
    18
    >>> ledger.observe(aten.bmm.default, (p, v), {}, p @ v)  # 6 zero weights · Ev 5
    30
    """

    __slots__ = ("_followed", "_sweep_at")

    def __init__(self) -> None:
        self._followed: dict[int, tuple[weakref.ref, str, int]] = {}  # id -> (tensor, "scores" | "weights", E)
        self._sweep_at = _SWEEP_FLOOR  # entries at which the dead are swept

    def _follow(self, tensor: object, role: str, width: int) -> None:
        """Follow ``tensor`` in ``role``. Entries are keyed by id and hold a weak reference without a callback (one
        shared by every holder of the tensor, no closure per op: a recurrence follows every op it runs); an entry
        whose tensor died reads as not followed (:meth:`_role`), and the dead are swept once the table doubles."""
        if not isinstance(tensor, torch.Tensor) or not tensor.is_floating_point() or tensor.is_nested:
            return
        followed = self._followed
        try:
            followed[id(tensor)] = (weakref.ref(tensor), role, width)
        except TypeError:  # a tensor that takes no weak reference: not followed
            return
        if len(followed) > self._sweep_at:
            for key in [key for key, entry in followed.items() if entry[0]() is None]:
                del followed[key]
            self._sweep_at = max(_SWEEP_FLOOR, 2 * len(followed))

    def _role(self, tensor: object) -> tuple[str, int] | None:
        entry = self._followed.get(id(tensor))
        return None if entry is None or entry[0]() is not tensor else entry[1:]

    def observe(self, func: torch._ops.OpOverload, args: tuple, kwargs: dict, out: object) -> int:
        """One op ran: the multiplications on closed pairs it reveals (0 for most ops), its result followed."""
        known = _OBSERVED.get(id(func))
        if known is None:  # the op's packet and its factors' positions, once per op (a packet's hash is a Python call)
            packet = func.overloadpacket
            known = _OBSERVED[id(func)] = (packet, _BATCHED_PRODUCTS.get(packet))
        packet, factors = known
        if factors is not None:
            first, second = factors
            left = args[first] if first < len(args) else None
            right = args[second] if second < len(args) else None
            if not isinstance(left, torch.Tensor) or left.is_nested or getattr(right, "is_nested", False):
                return 0  # a nested batch: its mask is the nesting itself
            if left.is_meta:
                return 0  # no values to read (``count_on_meta``)
            wasted = 0
            if isinstance(right, torch.Tensor) and (self._role(left) or ("",))[0] == "weights":
                wasted = int((left == 0).sum()) * right.shape[-1]
            if isinstance(left, torch.Tensor):
                self._follow(out, "scores", left.shape[-1])
            return wasted
        if not self._followed or not isinstance(out, torch.Tensor) or out.is_meta:
            return 0
        if packet in _SOFTMAXES and args:
            role = self._role(args[0])
            if role is None or role[0] != "scores" or out.shape != args[0].shape:
                return 0
            closed = int((torch.isneginf(args[0]) | (out == 0)).sum())
            self._follow(out, "weights", role[1])
            return closed * role[1]
        followed = self._followed
        for tensor in tensors_in(args):
            entry = followed.get(id(tensor))
            if entry is not None and entry[0]() is tensor and tensor.numel() == out.numel():
                self._follow(out, *entry[1:])  # the same elements, scaled, masked, cast or viewed
                break
        return 0
