"""Issue 21, item 6: the field's own mixers from ``transformers`` configs, measured by two routes.

Tiny random-weight models (:mod:`hf_mixers`, d_model = 16, eval, float64, seeded), four kinds, two families or
more each: chunked state-space duality (Mamba-2; the hybrids Bamba, Falcon-H1, Zamba2; beside them the Mamba-1 scan of
Mamba and Jamba), token-routed mixtures of experts (Mixtral, Qwen2-MoE, OLMoE, GPT-OSS, Jamba, MiniMax, DeepSeek-V3;
eager, batched_mm and grouped_mm dispatch), long-document attention with global tokens (BigBird block sparse,
Longformer with and without global tokens), sliding-window attention (Mistral, GPT-OSS's sliding layer, Gemma 2 with
soft-capped logits, RecurrentGemma's local attention) beside recurrent and linear mixers (RWKV, Qwen3-Next's chunked
gated DeltaNet, xLSTM's chunked mLSTM, MiniMax's lightning attention, LFM2's short convolution); and padding, as a
tokenizer's int64 attention_mask or inside the model (Longformer's window, BigBird's blocks). Per model:

* the path matrix of :func:`seqlab.measure.paths.measure_paths` at position level (entry is None or not)
  against the exact float64 Jacobian judged by :func:`seqlab.measure.dependence.judge`;
* the Jacobian's own matrix against the kind's known pattern (causal, a band, global rows and columns), so the
  reference route is itself checked;
* counted multiplications (:func:`seqlab.measure.work.count_multiplications`) against a closed form from the
  config, with the hand arithmetic next to the number.

Where the engine is wrong a comparison is ``xfail(strict=True)`` with the gap named (:data:`PATH_GAPS`), and the case
is written up in the worktree's findings file (``hfmodels-findings.md``). The masked chunked decays of Mamba-2 and its
hybrids, the MoE expert loop's ``index_add_`` (paths and count), Longformer's ``full_like`` fills, GPT-OSS's row max
before softmax, Qwen3-Next's ``solve_triangular``, the grouped expert products and the integer padding masks of the
Mamba family failed here before the engine's fixes of issue 21 and pass now.
"""

from __future__ import annotations

import functools

import pytest
import torch

pytest.importorskip("transformers")

from seqlab.measure.paths import measure_paths  # noqa: E402
from seqlab.measure.work import count_multiplications  # noqa: E402

from hf_mixers import (  # noqa: E402
    FLOAT32_INSIDE, band, build, causal, drawn, embeddings, jacobian_depends, last_hidden, path_depends,
)

def _xfail(reason: str):
    return pytest.mark.xfail(strict=True, reason=reason)


def longformer_pattern(T: int, half: int, global_positions: tuple[int, ...] = ()) -> tuple[tuple[bool, ...], ...]:
    """Longformer: |i - j| <= half (window 2·half), every row on a global position, a global row on all."""
    return tuple(tuple(abs(i - j) <= half or i in global_positions or j in global_positions for i in range(T))
                 for j in range(T))


def bigbird_pattern(T: int, block: int) -> tuple[tuple[bool, ...], ...]:
    """BigBird block sparse in eval (no random blocks: they are fixed to block 0, already global).

    Query blocks 0 and n-1 read every key; every other query block b reads key blocks b-1, b, b+1, 0 and n-1.
    """
    n = T // block

    def reads(qb: int, kb: int) -> bool:
        return qb in (0, n - 1) or kb in (0, n - 1) or abs(qb - kb) <= 1

    return tuple(tuple(reads(j // block, i // block) for i in range(T)) for j in range(T))


def padded(pattern, T: int, pad: tuple[int, ...], *, nan: bool = False, queries_read: bool = False):
    """``pattern`` with the positions ``pad`` padded: nothing reads a padded position but itself (its residual).

    A padded position reads nothing else either, except with ``queries_read`` (transformers' causal decoders let a
    padded query attend the open keys); with ``nan`` the padded rows are NaN (every key masked): they depend on nothing.
    """
    def depends(j: int, i: int) -> bool:
        if nan and j in pad:
            return False
        if i in pad or (j in pad and not queries_read):
            return i == j
        return pattern[j][i]

    return tuple(tuple(depends(j, i) for i in range(T)) for j in range(T))


#: GPT-OSS with its sliding layer only, experts by gather + bmm (no index_add_).
GPTOSS_SLIDING = {"num_hidden_layers": 1, "layer_types": ["sliding_attention"], "experts_implementation": "batched_mm"}

#: id -> (model name, T, build overrides, keywords of the forward, the Jacobian's known pattern).
CASES = {
    "mamba2-T8": ("mamba2", 8, {}, {}, causal(8)),
    "mamba2-T6-padded": ("mamba2", 6, {}, {}, causal(6)),  # 6 is not a multiple of the chunk (4): padded
    "mamba2-T16-4chunks": ("mamba2", 16, {}, {}, causal(16)),  # the chunk recurrence over 4 chunks
    "mamba2-2groups-chunk3-T8": ("mamba2", 8, {"n_groups": 2, "chunk_size": 3}, {}, causal(8)),  # B, C per group
    "bamba-T8": ("bamba", 8, {}, {}, causal(8)),
    "falconh1-T8": ("falconh1", 8, {}, {}, causal(8)),
    "zamba2-T8": ("zamba2", 8, {}, {}, causal(8)),
    "jamba-T8": ("jamba", 8, {}, {}, causal(8)),  # Mamba-1 scan + attention with experts
    "mixtral-T8": ("mixtral", 8, {}, {}, causal(8)),
    "mixtral-batched_mm-T8": ("mixtral", 8, {"experts_implementation": "batched_mm"}, {}, causal(8)),
    # top-1 of 8 experts: 3 experts get no token at this seed (the loop skips them)
    "mixtral-8experts-top1-T8": ("mixtral", 8, {"num_local_experts": 8, "num_experts_per_tok": 1}, {}, causal(8)),
    "qwen2moe-T8": ("qwen2moe", 8, {}, {}, causal(8)),
    "olmoe-T8": ("olmoe", 8, {}, {}, causal(8)),
    "gptoss-T8": ("gptoss", 8, {}, {}, causal(8)),  # a sliding layer, then a full one
    "bigbird-T16": ("bigbird", 16, {}, {}, bigbird_pattern(16, 2)),
    "bigbird-T20": ("bigbird", 20, {}, {}, bigbird_pattern(20, 2)),
    "longformer-T8": ("longformer", 8, {}, {}, longformer_pattern(8, 2)),
    "longformer-global-T8": ("longformer", 8, {}, {"global": (0,)}, longformer_pattern(8, 2, (0,))),
    "longformer-2global-T12": ("longformer", 12, {}, {"global": (0, 7)}, longformer_pattern(12, 2, (0, 7))),
    "mistral-window3-T8": ("mistral", 8, {}, {}, band(8, 3)),
    "gptoss-window3-T8": ("gptoss", 8, GPTOSS_SLIDING, {}, band(8, 3)),
    "qwen3next-deltanet-T8": ("qwen3next", 8, {}, {}, causal(8)),
    "rwkv-T8": ("rwkv", 8, {}, {}, causal(8)),
    "mamba-T8": ("mamba", 8, {}, {}, causal(8)),  # the selective scan, step by step
    "xlstm-mlstm-chunk4-T8": ("xlstm", 8, {}, {}, causal(8)),
    "minimax-lightning-T8": ("minimax", 8, {}, {}, causal(8)),
    "deepseekv3-T8": ("deepseekv3", 8, {}, {}, causal(8)),  # group-limited routing
    "gemma2-window3-softcap-T8": ("gemma2", 8, {}, {}, band(8, 3)),
    "recurrentgemma-T8": ("recurrentgemma", 8, {}, {}, causal(8)),
    "lfm2-shortconv-T8": ("lfm2", 8, {}, {}, causal(8)),
    # transformers' default attention: SDPA (traced on the reference math kernel, counted on the fused CPU one)
    "mistral-window3-sdpa-T8": ("mistral", 8, {"attn_implementation": "sdpa"}, {}, band(8, 3)),
    "mixtral-sdpa-T8": ("mixtral", 8, {"attn_implementation": "sdpa"}, {}, causal(8)),
    "mistral-window3-sdpa-rightpad2-T8": ("mistral", 8, {"attn_implementation": "sdpa"}, {"mask": "11111100"},
                                          padded(band(8, 3), 8, (6, 7), queries_read=True)),
    # padding: an attention_mask as a tokenizer returns it (int64), inner padding to a block or window multiple
    "mistral-leftpad2-T8": ("mistral", 8, {}, {"mask": "00111111", "nan": (0, 1)},
                            padded(band(8, 3), 8, (0, 1), nan=True)),
    "mixtral-leftpad2-T8": ("mixtral", 8, {}, {"mask": "00111111", "nan": (0, 1)},
                            padded(causal(8), 8, (0, 1), nan=True)),
    "mixtral-rightpad2-T8": ("mixtral", 8, {}, {"mask": "11111100"},
                             padded(causal(8), 8, (6, 7), queries_read=True)),
    "mamba2-rightpad2-T8": ("mamba2", 8, {}, {"mask": "11111100"}, padded(causal(8), 8, (6, 7))),
    "bamba-rightpad2-T8": ("bamba", 8, {}, {"mask": "11111100"}, padded(causal(8), 8, (6, 7), queries_read=True)),
    # the same hidden * attention_mask[:, :, None] in every other state-space, conv and DeltaNet mixer here
    "mamba-rightpad2-T8": ("mamba", 8, {}, {"mask": "11111100"}, padded(causal(8), 8, (6, 7))),
    "zamba2-rightpad2-T8": ("zamba2", 8, {}, {"mask": "11111100"}, padded(causal(8), 8, (6, 7))),
    "qwen3next-rightpad2-T8": ("qwen3next", 8, {}, {"mask": "11111100"}, padded(causal(8), 8, (6, 7))),
    "jamba-rightpad2-T8": ("jamba", 8, {}, {"mask": "11111100"}, padded(causal(8), 8, (6, 7), queries_read=True)),
    "falconh1-rightpad2-T8": ("falconh1", 8, {}, {"mask": "11111100"},
                              padded(causal(8), 8, (6, 7), queries_read=True)),
    "lfm2-rightpad2-T8": ("lfm2", 8, {}, {"mask": "11111100"}, padded(causal(8), 8, (6, 7), queries_read=True)),
    "longformer-rightpad2-T8": ("longformer", 8, {}, {"mask": "11111100"}, padded(longformer_pattern(8, 2), 8, (6, 7))),
    "longformer-T7-padded": ("longformer", 7, {}, {}, longformer_pattern(7, 2)),  # padded to the window (8) inside
    "bigbird-T18": ("bigbird", 18, {}, {}, bigbird_pattern(18, 2)),
    "bigbird-rightpad2-T16": ("bigbird", 16, {}, {"mask": "1" * 14 + "00"},
                              padded(bigbird_pattern(16, 2), 16, (14, 15))),
}

#: Cases whose path matrix differs from the Jacobian today, with the engine gap that makes it so (none: the last,
#: an int64 attention_mask's zeros not cutting ``hidden * mask[:, :, None]``, is fixed).
PATH_GAPS: dict[str, str] = {}

CAUSAL_CASES = [k for k, v in CASES.items() if v[4] in (causal(v[1]), band(v[1], 3))]


@functools.cache
def _layer(case: str):
    """The case's model, its layer (x -> last hidden state) and x, built once per test session."""
    name, T, overrides, keywords, _ = CASES[case]
    model = build(name, **overrides)
    kwargs = {}
    if "global" in keywords:
        mask = torch.zeros(1, T, dtype=torch.long)
        mask[0, list(keywords["global"])] = 1
        kwargs["global_attention_mask"] = mask
    if "mask" in keywords:
        kwargs["attention_mask"] = torch.tensor([[int(c) for c in keywords["mask"]]])
    return model, last_hidden(model, **kwargs), embeddings(T)


@functools.cache
def _jacobian(case: str):
    """The case's Jacobian matrix, computed once (two tests read it)."""
    _, layer, x = _layer(case)
    return jacobian_depends(layer, x, _computed(case))


@functools.cache
def _traced(case: str):
    """The case's PathMatrix, traced once (two tests read it)."""
    _, layer, x = _layer(case)
    return measure_paths(layer, x)


def _computed(case: str) -> torch.dtype:
    """The dtype the case's mixer computes in (its Jacobian's rounding band)."""
    return torch.float32 if CASES[case][0] in FLOAT32_INSIDE else torch.float64


def _params(cases, gaps):
    return [pytest.param(c, id=c, marks=_xfail(gaps[c])) if c in gaps else pytest.param(c, id=c) for c in cases]


# --- the reference route: the Jacobian shows each kind's pattern -----------------------------------------

@pytest.mark.parametrize("case", list(CASES))
def test_the_jacobian_shows_the_kinds_pattern(case):
    got = _jacobian(case)
    assert got == CASES[case][4], f"\n{drawn(got)}"


# --- paths against the Jacobian ------------------------------------------------------------------------

@pytest.mark.parametrize("case", _params(CASES, PATH_GAPS))
def test_path_matrix_matches_the_jacobian(case):
    traced = _traced(case)
    paths, jacobian = path_depends(traced, CASES[case][1]), _jacobian(case)
    assert paths == jacobian, f"paths\n{drawn(paths)}\njacobian\n{drawn(jacobian)}"
    assert traced.exact and traced.fallbacks == {} and traced.undefined == CASES[case][3].get("nan", ())


@pytest.mark.parametrize("case", _params(CAUSAL_CASES, PATH_GAPS))
def test_no_path_from_a_later_position_to_an_earlier_one(case):
    """Causal models (and the causal band of a sliding window): y_j never reads x_i for i > j."""
    traced = _traced(case)
    later = [(i, j) for i, row in zip(traced.sources, traced.products, strict=True)
             for j, value in enumerate(row) if i > j and value is not None]
    assert later == []


@pytest.mark.parametrize("case", list(CASES))
def test_element_level_distances_give_the_same_matrices(case):
    """Two routes inside the engine: distances per element (positions=False) and per position where an op proves
    them uniform along the features (the default for all T sources) give the same products and ops."""
    _, layer, x = _layer(case)
    elements, positions = measure_paths(layer, x, positions=False), _traced(case)
    assert (elements.products, elements.ops, elements.undefined) == (positions.products, positions.ops,
                                                                      positions.undefined)


def test_gated_deltanet_by_forward_substitution_matches_the_jacobian(monkeypatch):
    """Qwen3-Next's export branch inverts the UT system by forward substitution (row by row, in-place slice writes)
    instead of solve_triangular: every op has a rule, and the masked decays (masked_fill -inf, exp) must cut."""
    import transformers.models.qwen3_next.modeling_qwen3_next as module

    monkeypatch.setattr(module, "is_torchdynamo_exporting", lambda: True)
    model = build("qwen3next")
    layer, x = last_hidden(model), embeddings(8)
    traced = measure_paths(layer, x)
    assert traced.exact and path_depends(traced, 8) == jacobian_depends(layer, x, torch.float32) == causal(8)


def _grouped_mixtral():
    """Mixtral with the grouped_mm expert dispatch (float32 only: CPU _grouped_mm refuses float64), same weights."""
    return build("mixtral", dtype=torch.float32, experts_implementation="grouped_mm"), embeddings(8, torch.float32)


def test_grouped_expert_dispatch_matches_the_jacobian_and_the_closed_form():
    """transformers' default CPU expert dispatch (histc, floor_divide, _grouped_mm over sorted tokens): exact paths
    equal to the eager float64 Jacobian of the same weights, and the same 27,168 multiplications, complete."""
    model, x = _grouped_mixtral()
    traced = measure_paths(last_hidden(model), x)
    assert traced.exact and path_depends(traced, 8) == _jacobian("mixtral-T8")
    counted = count_multiplications(last_hidden(model), x)
    assert counted.multiplications == mixtral_multiplications(8) == 27_168 and counted.complete


def _routing(case: str) -> torch.Tensor:
    """The experts each token of the case's one MoE layer picks: (T, top_k) ids."""
    model, layer, x = _layer(case)
    picked = []
    handle = model.layers[0].mlp.gate.register_forward_hook(lambda m, i, out: picked.append(out[2]))
    with torch.no_grad():
        layer(x)
    handle.remove()
    return picked[0]


# --- path lengths against hand derivations ------------------------------------------------------------

#: Attention families: x_i reaches y_j (i != j) through v_proj, A·V and o_proj (3 products; rotary, norms, softmax
#: and the residual take none; the experts and the MLP are per position, so the residual path around them is the
#: shortest), and y_i through its residual (0). DeepSeek-V3's latent attention adds kv_a before kv_b: 4.
ATTENTION_LENGTHS = {"mixtral-T8": 3, "mixtral-batched_mm-T8": 3, "mixtral-8experts-top1-T8": 3, "qwen2moe-T8": 3,
                     "olmoe-T8": 3, "gptoss-T8": 3, "bigbird-T16": 3, "longformer-global-T8": 3,
                     "mistral-window3-T8": 3, "mistral-window3-sdpa-T8": 3, "gemma2-window3-softcap-T8": 3,
                     "deepseekv3-T8": 4}


@pytest.mark.parametrize("case", list(ATTENTION_LENGTHS))
def test_attention_paths_are_the_projections_in_a_row(case):
    traced = _traced(case)
    lengths = {(i, j): v for i, row in zip(traced.sources, traced.products, strict=True)
               for j, v in enumerate(row) if v is not None}
    assert all(v == (0 if i == j else ATTENTION_LENGTHS[case]) for (i, j), v in lengths.items())


def mamba2_products(T: int, chunk: int = 4, kernel: int = 4) -> tuple[tuple[int | None, ...], ...]:
    """Least products from x_i to y_j through one Mamba-2 layer on the chunked SSD path (c(i): the chunk of i).

    Every path starts with in_proj and ends with out_proj (2 products); the residual gives y_i from x_i in 0. Then the
    least of these totals (in brackets, the products between in_proj and out_proj):
    * 3 for j - i < K: the conv (1) and the D·x skip (element-wise);
    * 2 for i, j in one chunk after the first: dt_i enters A_cumsum, whose exp decays the state carried into the chunk
      (Y_off = (C·states) * exp(A_cumsum), element-wise); in the first chunk that state is the exact 0 of the
      initial state, which cuts;
    * 4 for i in the conv window of j's chunk start (i >= start - (K - 1)), j's chunk later: conv (1), then the
      intra-chunk Y_diag = M·x (1);
    * 4 for c(i) >= 1 < c(j): dt_i sets its chunk's total decay, which scales the states carried through it
      (the chunk recurrence's einsum, then C·states: 2);
    * 5 for c(j) > c(i) otherwise: the decayed B·x state of i's chunk (1), the chunk recurrence (1), C·states (1).
    """
    def least(i: int, j: int) -> int | None:
        if j < i:
            return None
        if j == i:
            return 0
        ci, cj = i // chunk, j // chunk
        options = [5] if cj > ci else []
        if j - i < kernel:
            options.append(3)
        if ci == cj > 0:
            options.append(2)
        if ci < cj and i >= cj * chunk - (kernel - 1):
            options.append(4)
        if 1 <= ci < cj:
            options.append(4)
        return min(options)

    return tuple(tuple(least(i, j) for j in range(T)) for i in range(T))


@pytest.mark.parametrize("case", ["mamba2-T8", "mamba2-T16-4chunks"])
def test_mamba2_path_lengths_are_the_hand_derivation(case):
    assert _traced(case).products == mamba2_products(CASES[case][1])


def test_the_mixture_of_experts_routes_differently_per_token():
    """The MoE cases measure real routing: Mixtral's 8 tokens pick more than one pair of its 4 experts, and in the
    top-1-of-8 case 3 experts get no token at all (the eager loop skips them)."""
    pairs = _routing("mixtral-T8")
    assert pairs.shape == (8, 2) and len({tuple(sorted(row.tolist())) for row in pairs}) >= 2
    assert len(set(_routing("mixtral-8experts-top1-T8").flatten().tolist())) == 5


# --- work against closed forms ---------------------------------------------------------------------------

def mamba2_multiplications(T: int, *, d: int = 16, heads: int = 4, head_dim: int = 8, state: int = 4,
                           groups: int = 1, kernel: int = 4, chunk: int = 4) -> int:
    """One Mamba-2 layer on the chunked SSD path, T a multiple of ``chunk`` (c = T / chunk chunks, Q = chunk).

    in_proj  T·d·(2·d_inner + 2·G·N + H)        out_proj T·d_inner·d         (d_inner = H·P)
    conv1d   (d_inner + 2·G·N)·K·(T + K - 1)     (depthwise, padded K - 1 both sides, then cut to T)
    SSD      G = C·B: c·H·Q²·N,  Y_diag = M·x: c·H·Q²·P,  states = B·x: c·H·Q·P·N,
             chunk recurrence (c+1)²·H·P·N,  C·states: c·Q·H·P·N
    The element-wise decays and the gated RMSNorm multiply nothing counted.
    """
    d_inner, c, Q = heads * head_dim, T // chunk, chunk
    projections = T * d * (2 * d_inner + 2 * groups * state + heads) + T * d_inner * d
    conv = (d_inner + 2 * groups * state) * kernel * (T + kernel - 1)
    ssd = (c * heads * Q * Q * state + c * heads * Q * Q * head_dim + c * heads * Q * head_dim * state
           + (c + 1) ** 2 * heads * head_dim * state + c * Q * heads * head_dim * state)
    return projections + conv + ssd


@pytest.mark.parametrize(("T", "expected"), [
    # 8·16·76 + 8·32·16 = 13,824; 40·4·11 = 1,760; 2·4·16·4 + 2·4·16·8 + 2·4·4·8·4 + 9·4·8·4 + 2·4·4·8·4
    # = 512 + 1,024 + 1,024 + 1,152 + 1,024 = 4,736; total 20,320
    (8, 20_320),
    # 12·16·76 + 12·32·16 = 20,736; 40·4·15 = 2,400; 768 + 1,536 + 1,536 + 2,048 + 1,536 = 7,424; total 30,560
    (12, 30_560),
    # 16·16·76 + 16·32·16 = 27,648; 40·4·19 = 3,040; 1,024 + 2,048 + 2,048 + 25·128 + 2,048 = 10,368; total 41,056
    (16, 41_056),
])
def test_mamba2_work_is_the_closed_form(T, expected):
    model = build("mamba2")
    counted = count_multiplications(last_hidden(model), embeddings(T))
    assert mamba2_multiplications(T) == expected
    assert counted.multiplications == expected and counted.complete


def mixtral_multiplications(T: int, *, d: int = 16, heads: int = 2, kv_heads: int = 1, experts: int = 4,
                            top_k: int = 2, intermediate: int = 24) -> int:
    """One Mixtral layer: attention projections, scores and values, the router, and top-k experts per token.

    q, o: T·d·d each; k, v: T·d·(kv·hd) each (hd = d / heads); scores and A·V: 2·heads·T²·hd (executed, the causal
    mask saves nothing); router T·d·E; each token runs k experts of gate_up (d -> 2I) and down (I -> d):
    T·k·3·d·I whatever the routing; rotary angles inv_freq ⊗ positions: (hd / 2)·T (an outer product).
    """
    hd = d // heads
    attention = T * d * (2 * d + 2 * kv_heads * hd) + 2 * heads * T * T * hd
    return attention + T * d * experts + T * top_k * 3 * d * intermediate + hd // 2 * T


@pytest.mark.parametrize(("name", "overrides"), [
    ("mixtral", {}),  # eager: the expert loop gathers and scatters with index_add_ (multiplies nothing)
    ("mixtral", {"experts_implementation": "batched_mm"}),
    ("gptoss", GPTOSS_SLIDING),  # biases on every projection and the router; sinks multiply nothing
], ids=["mixtral-eager", "mixtral-batched_mm", "gptoss-window3-batched_mm"])
def test_moe_work_is_the_closed_form_whatever_the_dispatch(name, overrides):
    # 8·16·48 = 6,144; 2·2·64·8 = 2,048; router 8·16·4 = 512; experts 8·2·3·16·24 = 18,432; rotary 4·8 = 32
    # total 27,168 — the same whatever the routing and the expert dispatch
    model = build(name, **overrides)
    counted = count_multiplications(last_hidden(model), embeddings(8))
    assert mixtral_multiplications(8) == 27_168
    assert counted.multiplications == 27_168 and counted.complete


def test_qwen2moe_work_is_the_closed_form():
    """Qwen2-MoE: biased q, k, v; top-2 of 4 experts of width 8, a shared expert of width 16 and its sigmoid gate."""
    # q, k, v 8·16·(16 + 8 + 8) = 4,096 (addmm); o 8·16·16 = 2,048; router 8·16·4 = 512;
    # experts 8·2·3·16·8 = 6,144; shared expert 3·8·16·16 = 6,144; shared gate 8·16·1 = 128;
    # scores and A·V 2·2·64·8 = 2,048; rotary 4·8 = 32; total 21,152
    counted = count_multiplications(last_hidden(build("qwen2moe", experts_implementation="batched_mm")), embeddings(8))
    assert counted.multiplications == 21_152 and counted.complete


@pytest.mark.parametrize("name", ["mixtral", "qwen2moe", "olmoe", "gptoss"])
def test_moe_count_is_the_same_whatever_the_expert_dispatch(name):
    """Two routes: the eager expert loop (gather, index_add_) and batched_mm (gather, bmm) count the same."""
    x = embeddings(8)
    eager = count_multiplications(last_hidden(build(name)), x)
    batched = count_multiplications(last_hidden(build(name, experts_implementation="batched_mm")), x)
    assert eager.multiplications == batched.multiplications and batched.complete


@pytest.mark.parametrize("case", list(CASES))
def test_every_count_is_complete(case):
    """Every op that ran is counted or known to multiply nothing (index_add_, histc, eye... included)."""
    _, layer, x = _layer(case)
    counted = count_multiplications(layer, x)
    assert counted.complete, counted.unaccounted


def bigbird_multiplications(T: int, *, d: int = 16, heads: int = 2, block: int = 2, random: int = 1,
                            intermediate: int = 32) -> int:
    """One BigBird layer, block-sparse attention, n = T / block blocks of b = block, r random blocks.

    q, k, v, o: 4·T·d²; feed-forward 2·T·d·I; per head, scores and A·V (2·hd each pair) over
    2 global query blocks × T keys, the 2nd and 2nd-last query blocks × (4 + r)·b keys, the n - 4 middle query
    blocks × (5 + r)·b keys (3 sliding + 2 global + r random); the attention-mask outer products:
    band mask (n - 4)·b·3b and random mask heads·(n - 2)·b·r·b.
    """
    hd, n = d // heads, T // block
    linear = 4 * T * d * d + 2 * T * d * intermediate
    keys = 2 * block * T + 2 * block * (4 + random) * block + (n - 4) * block * (5 + random) * block
    masks = (n - 4) * block * 3 * block + heads * (n - 2) * block * random * block
    return linear + heads * 2 * hd * keys + masks


@pytest.mark.parametrize(("T", "expected"), [
    # 4·16·256 + 2·16·16·32 = 32,768; 2·2·8·(2·2·16 + 2·2·5·2 + 4·2·6·2) = 32·200 = 6,400; 4·2·6 + 2·6·2·2 = 96
    # total 39,264
    (16, 39_264),
    # 20·2,048 = 40,960; 32·(80 + 40 + 6·24 = 264) = 8,448; 6·12 + 2·8·4 = 136; total 49,544
    (20, 49_544),
])
def test_bigbird_block_sparse_work_is_the_closed_form(T, expected):
    model = build("bigbird")
    counted = count_multiplications(last_hidden(model), embeddings(T))
    assert model.encoder.layer[0].attention.self.__class__.__name__ == "BigBirdBlockSparseAttention"
    assert bigbird_multiplications(T) == expected
    assert counted.multiplications == expected and counted.complete


@pytest.mark.parametrize("implementation", ["eager", "sdpa"])
def test_mistral_sliding_window_work_is_the_closed_form(implementation):
    """All T² scores are executed (eager's matmuls or SDPA's fused CPU kernel alike); the window (3) masks them and
    saves nothing in the count."""
    # attention 8·16·(16 + 8 + 8 + 16) = 6,144; MLP 3·8·16·24 = 9,216; scores and A·V 2·2·64·8 = 2,048;
    # rotary 4·8 = 32; total 17,440
    counted = count_multiplications(last_hidden(build("mistral", attn_implementation=implementation)), embeddings(8))
    assert counted.multiplications == 17_440 and counted.complete


def test_rwkv_work_is_the_closed_form():
    """Two RWKV layers: time mix key, value, receptance, output (4·T·d²) and channel mix key (d -> I), value
    (I -> d), receptance (d -> d); the WKV recurrence is element-wise (not counted)."""
    # per layer 4·8·256 + 8·(16·32 + 32·16 + 256) = 8,192 + 10,240 = 18,432; two layers 36,864
    counted = count_multiplications(last_hidden(build("rwkv")), embeddings(8))
    assert counted.multiplications == 36_864 and counted.complete
