"""Tiny random-weight ``transformers`` models of the field's mixer kinds, and the two routes that judge them.

Issue 21, item 6: each model is built from its config alone (no download, no tokenizer), seeded, in eval mode,
with ``attn_implementation="eager"`` and ``experts_implementation="eager"`` where the model has them, so the same
module runs in float64 for the Jacobian. Widths are tiny (d_model = 16) so a trace takes well under a second.

The two routes of a position-level dependence matrix ``depends[j][i]`` (output position j on input position i):

* **paths** — :func:`seqlab.measure.paths.measure_paths`: the entry ``products[i][j]`` is not None;
* **Jacobian** — the exact float64 Jacobian (``torch.autograd.functional.jacobian``), the block
  ``||dy_j/dx_i||_F`` judged by seqlab's one rule (:func:`seqlab.measure.dependence.judge`: above
  64 eps times the largest block norm, eps of float64, or of float32 for the mixers in :data:`FLOAT32_INSIDE`).

Shapes: B = 1, T positions, d = d_model.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable

import torch
from torch import Tensor

from seqlab.measure.dependence import judge
from seqlab.measure.paths import PathMatrix, measure_paths

#: d_model of every model here.
D_MODEL = 16

Matrix = tuple[tuple[bool, ...], ...]

#: Weight scale of the state-space and gated-DeltaNet families. At transformers' 0.02 their far dependences fall to
#: 1e-7..1e-8 of the largest block (Zamba2, Qwen3-Next at T = 8), under float32's rounding band (they compute in
#: float32 inside); at 0.3 the weakest is 1.4e-4 of it (Mamba-2), 20x above the band.
WIDE_INIT = 0.3


def _transformers():
    import transformers

    return transformers


# --- the models -----------------------------------------------------------------------------------------

def mamba2_config(**overrides):
    """Mamba-2: d_model 16, expand 2 -> d_inner 32 = 4 heads x head_dim 8, state N = 4, one group, chunk 4."""
    tf = _transformers()
    values = dict(vocab_size=32, hidden_size=D_MODEL, state_size=4, num_heads=4, head_dim=8, expand=2, n_groups=1,
                  num_hidden_layers=1, chunk_size=4, conv_kernel=4, use_conv_bias=True, use_bias=False)
    return tf.Mamba2Config(**(values | {"initializer_range": WIDE_INIT} | overrides))


def bamba_config(**overrides):
    """Bamba (hybrid): layer 0 a Mamba-2 mixer (4 heads x 8, N = 4, chunk 4), layer 1 eager attention (2 heads)."""
    tf = _transformers()
    values = dict(vocab_size=32, hidden_size=D_MODEL, intermediate_size=32, num_hidden_layers=2, num_attention_heads=2,
                  num_key_value_heads=1, mamba_n_heads=4, mamba_d_head=8, mamba_n_groups=1, mamba_d_state=4,
                  mamba_d_conv=4, mamba_expand=2, mamba_chunk_size=4, attn_layer_indices=[1],
                  attn_implementation="eager")
    return tf.BambaConfig(**(values | {"initializer_range": WIDE_INIT} | overrides))


def mixtral_config(**overrides):
    """Mixtral: one layer, 2 heads (1 key-value head), 4 experts, top-2, intermediate 24, no sliding window."""
    tf = _transformers()
    values = dict(vocab_size=32, hidden_size=D_MODEL, intermediate_size=24, num_hidden_layers=1, num_attention_heads=2,
                  num_key_value_heads=1, num_local_experts=4, num_experts_per_tok=2, sliding_window=None,
                  attn_implementation="eager", experts_implementation="eager")
    return tf.MixtralConfig(**(values | overrides))


def qwen2moe_config(**overrides):
    """Qwen2-MoE: one layer, 4 experts of width 8, top-2, plus a gated shared expert of width 16."""
    tf = _transformers()
    values = dict(vocab_size=32, hidden_size=D_MODEL, intermediate_size=24, moe_intermediate_size=8,
                  shared_expert_intermediate_size=16, num_hidden_layers=1, num_attention_heads=2,
                  num_key_value_heads=1, num_experts=4, num_experts_per_tok=2, attn_implementation="eager",
                  experts_implementation="eager")
    return tf.Qwen2MoeConfig(**(values | overrides))


def olmoe_config(**overrides):
    """OLMoE: one layer, 4 experts of width 24, top-2."""
    tf = _transformers()
    values = dict(vocab_size=32, hidden_size=D_MODEL, intermediate_size=24, num_hidden_layers=1, num_attention_heads=2,
                  num_key_value_heads=1, num_experts=4, num_experts_per_tok=2, attn_implementation="eager",
                  experts_implementation="eager", eos_token_id=None, pad_token_id=None)
    return tf.OlmoeConfig(**(values | overrides))


def mistral_config(**overrides):
    """Mistral with a sliding window of 3 keys: one layer, 2 heads (1 key-value head), intermediate 24."""
    tf = _transformers()
    values = dict(vocab_size=32, hidden_size=D_MODEL, intermediate_size=24, num_hidden_layers=1, num_attention_heads=2,
                  num_key_value_heads=1, sliding_window=3, attn_implementation="eager")
    return tf.MistralConfig(**(values | overrides))


def longformer_config(**overrides):
    """Longformer: one layer, 2 heads, a local window of 4 (2 keys each side), no dropout."""
    tf = _transformers()
    values = dict(vocab_size=32, hidden_size=D_MODEL, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2,
                  attention_window=[4], max_position_embeddings=64, pad_token_id=1, hidden_dropout_prob=0.0,
                  attention_probs_dropout_prob=0.0)
    return tf.LongformerConfig(**(values | overrides))


def bigbird_config(**overrides):
    """BigBird, block sparse: one layer, 2 heads, blocks of 2, one random block (fixed in eval), no dropout."""
    tf = _transformers()
    values = dict(vocab_size=32, hidden_size=D_MODEL, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2,
                  attention_type="block_sparse", block_size=2, num_random_blocks=1, max_position_embeddings=64,
                  hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0, sep_token_id=None, pad_token_id=0,
                  bos_token_id=None, eos_token_id=None)
    return tf.BigBirdConfig(**(values | overrides))


def rwkv_config(**overrides):
    """RWKV (v4): two layers (its initialiser divides by layers - 1), attention width 16, intermediate 32."""
    tf = _transformers()
    values = dict(vocab_size=32, hidden_size=D_MODEL, attention_hidden_size=D_MODEL, intermediate_size=32,
                  num_hidden_layers=2, context_length=64)
    return tf.RwkvConfig(**(values | overrides))


def falconh1_config(**overrides):
    """Falcon-H1 (hybrid): one layer, a Mamba-2 mixer (4 heads x 8, N = 4, chunk 4) beside eager attention."""
    tf = _transformers()
    values = dict(vocab_size=32, hidden_size=D_MODEL, intermediate_size=24, num_hidden_layers=1, num_attention_heads=2,
                  num_key_value_heads=1, head_dim=8, mamba_d_ssm=32, mamba_n_heads=4, mamba_d_head=8,
                  mamba_n_groups=1, mamba_d_state=4, mamba_d_conv=4, mamba_expand=2, mamba_chunk_size=4,
                  attn_implementation="eager")
    return tf.FalconH1Config(**(values | {"initializer_range": WIDE_INIT} | overrides))


def zamba2_config(**overrides):
    """Zamba2 (hybrid): a Mamba-2 layer (4 heads x 8, N = 4, chunk 4), then a hybrid layer with the shared attention."""
    tf = _transformers()
    values = dict(vocab_size=32, hidden_size=D_MODEL, intermediate_size=24, num_hidden_layers=2, num_attention_heads=2,
                  num_key_value_heads=2, attention_head_dim=8, mamba_d_state=4, mamba_d_conv=4, mamba_expand=2,
                  mamba_ngroups=1, mamba_headdim=8, n_mamba_heads=4, chunk_size=4,
                  layers_block_type=["mamba", "hybrid"], hybrid_layer_ids=[1], num_mem_blocks=1, use_shared_attention_adapter=False,
                  attn_implementation="eager")
    return tf.Zamba2Config(**(values | {"initializer_range": WIDE_INIT} | overrides))


def jamba_config(**overrides):
    """Jamba (hybrid): a Mamba-1 layer (selective scan, the torch path: no kernels), then eager attention with a
    mixture of 4 experts (top-2); d_inner 32, N = 4, dt rank 4."""
    tf = _transformers()
    values = dict(vocab_size=32, hidden_size=D_MODEL, intermediate_size=24, num_hidden_layers=2, num_attention_heads=2,
                  num_key_value_heads=1, num_experts=4, num_experts_per_tok=2, expert_layer_period=2,
                  expert_layer_offset=1, attn_layer_period=2, attn_layer_offset=1, mamba_d_state=4, mamba_d_conv=4,
                  mamba_expand=2, mamba_dt_rank=4, use_mamba_kernels=False, attn_implementation="eager",
                  experts_implementation="eager")
    return tf.JambaConfig(**(values | {"initializer_range": WIDE_INIT} | overrides))


def gptoss_config(**overrides):
    """GPT-OSS: a sliding-window layer (3 keys) then a full layer, 2 heads with sinks, 4 experts, top-2."""
    tf = _transformers()
    values = dict(vocab_size=32, hidden_size=D_MODEL, intermediate_size=24, head_dim=8, num_hidden_layers=2,
                  num_attention_heads=2, num_key_value_heads=1, num_local_experts=4, num_experts_per_tok=2,
                  sliding_window=3, layer_types=["sliding_attention", "full_attention"], attn_implementation="eager",
                  experts_implementation="eager")
    return tf.GptOssConfig(**(values | overrides))


def qwen3next_config(**overrides):
    """Qwen3-Next: one gated-DeltaNet (linear attention) layer, 2 key heads and 4 value heads of width 4, conv 4, and
    a mixture of 4 experts (width 8, top-2) with a shared expert; the chunked rule's chunk is fixed at 64."""
    tf = _transformers()
    values = dict(vocab_size=32, hidden_size=D_MODEL, intermediate_size=24, num_hidden_layers=1, num_attention_heads=2,
                  num_key_value_heads=1, head_dim=8, linear_conv_kernel_dim=4, linear_key_head_dim=4,
                  linear_value_head_dim=4, linear_num_key_heads=2, linear_num_value_heads=4, moe_intermediate_size=8,
                  shared_expert_intermediate_size=8, num_experts_per_tok=2, num_experts=4,
                  layer_types=["linear_attention"], attn_implementation="eager", experts_implementation="batched_mm")
    return tf.Qwen3NextConfig(**(values | {"initializer_range": WIDE_INIT} | overrides))


def _config(name: str, values: dict, overrides: dict, *, wide: bool = False):
    """transformers' ``name`` config from ``values`` | ``overrides`` (``wide``: weights at :data:`WIDE_INIT`)."""
    return getattr(_transformers(), name)(**(values | ({"initializer_range": WIDE_INIT} if wide else {}) | overrides))


#: Keywords every small decoder below shares: d_model 16, one layer, eager attention.
_SMALL = dict(vocab_size=32, hidden_size=D_MODEL, num_hidden_layers=1, attn_implementation="eager")


def mamba_config(**overrides):
    """Mamba (v1): selective scan on the torch path (no kernels, no mambapy), d_inner 32, N = 4, dt rank 4."""
    return _config("MambaConfig", dict(vocab_size=32, hidden_size=D_MODEL, state_size=4, num_hidden_layers=1, expand=2,
                                       conv_kernel=4, time_step_rank=4, use_mambapy=False), overrides, wide=True)


def xlstm_config(**overrides):
    """xLSTM: one mLSTM block, 2 heads, chunkwise native kernel with chunks of 4 (log-sigmoid gates, max stabiliser)."""
    return _config("xLSTMConfig", dict(vocab_size=32, hidden_size=D_MODEL, embedding_dim=D_MODEL, num_heads=2,
                                       num_blocks=1, num_hidden_layers=1, chunk_size=4, qk_dim_factor=0.5,
                                       v_dim_factor=1.0, mode="train", chunkwise_kernel="chunkwise--native_autograd",
                                       sequence_kernel="native_sequence__native", step_kernel="native"),
                   overrides, wide=True)


def minimax_config(**overrides):
    """MiniMax: one lightning (linear) attention layer in blocks of 4 with per-head decays, 4 experts top-2."""
    return _config("MiniMaxConfig", _SMALL | dict(intermediate_size=24, num_attention_heads=2, num_key_value_heads=1,
                                                  head_dim=8, num_local_experts=4, num_experts_per_tok=2,
                                                  layer_types=["linear_attention"], block_size=4,
                                                  experts_implementation="eager"), overrides, wide=True)


def recurrentgemma_config(**overrides):
    """RecurrentGemma (Griffin): an RG-LRU recurrent block (conv 4), then local attention over a window of 3."""
    return _config("RecurrentGemmaConfig", _SMALL | dict(num_hidden_layers=2, intermediate_size=24,
                                                         num_attention_heads=2, num_key_value_heads=1, lru_width=16,
                                                         attention_window_size=3, conv1d_width=4,
                                                         block_types=["recurrent", "attention"]), overrides, wide=True)


def gemma2_config(**overrides):
    """Gemma 2: one sliding-window layer (3 keys) with attention logits soft-capped (tanh) at 50."""
    return _config("Gemma2Config", _SMALL | dict(intermediate_size=24, num_attention_heads=2, num_key_value_heads=1,
                                                 head_dim=8, sliding_window=3, layer_types=["sliding_attention"],
                                                 attn_logit_softcapping=50.0, final_logit_softcapping=None), overrides)


def deepseekv3_config(**overrides):
    """DeepSeek-V3: latent attention (q and kv ranks 8), 4 routed experts in 2 groups (top group 1, top-2) and a
    shared expert."""
    return _config("DeepseekV3Config", _SMALL | dict(intermediate_size=24, moe_intermediate_size=8,
                                                     num_attention_heads=2, num_key_value_heads=2, n_routed_experts=4,
                                                     n_shared_experts=1, num_experts_per_tok=2, n_group=2, topk_group=1,
                                                     first_k_dense_replace=0, q_lora_rank=8, kv_lora_rank=8,
                                                     qk_rope_head_dim=4, qk_nope_head_dim=4, v_head_dim=8,
                                                     experts_implementation="eager"), overrides)


def lfm2_config(**overrides):
    """LFM2: a gated short-convolution layer (cache 3), then full attention."""
    return _config("Lfm2Config", _SMALL | dict(num_hidden_layers=2, intermediate_size=24, num_attention_heads=2,
                                               num_key_value_heads=1, layer_types=["conv", "full_attention"],
                                               conv_L_cache=3), overrides, wide=True)


#: name -> (config builder, model class name, extra keywords of the model's constructor).
MODELS: dict[str, tuple[Callable, str, dict]] = {
    "mamba2": (mamba2_config, "Mamba2Model", {}),
    "bamba": (bamba_config, "BambaModel", {}),
    "mixtral": (mixtral_config, "MixtralModel", {}),
    "qwen2moe": (qwen2moe_config, "Qwen2MoeModel", {}),
    "olmoe": (olmoe_config, "OlmoeModel", {}),
    "mistral": (mistral_config, "MistralModel", {}),
    "longformer": (longformer_config, "LongformerModel", {"add_pooling_layer": False}),
    "bigbird": (bigbird_config, "BigBirdModel", {"add_pooling_layer": False}),
    "rwkv": (rwkv_config, "RwkvModel", {}),
    "falconh1": (falconh1_config, "FalconH1Model", {}),
    "zamba2": (zamba2_config, "Zamba2Model", {}),
    "jamba": (jamba_config, "JambaModel", {}),
    "gptoss": (gptoss_config, "GptOssModel", {}),
    "qwen3next": (qwen3next_config, "Qwen3NextModel", {}),
    "mamba": (mamba_config, "MambaModel", {}),
    "xlstm": (xlstm_config, "xLSTMModel", {}),
    "minimax": (minimax_config, "MiniMaxModel", {}),
    "recurrentgemma": (recurrentgemma_config, "RecurrentGemmaModel", {}),
    "gemma2": (gemma2_config, "Gemma2Model", {}),
    "deepseekv3": (deepseekv3_config, "DeepseekV3Model", {}),
    "lfm2": (lfm2_config, "Lfm2Model", {}),
}

#: Models whose mixer computes (or may compute) in float32 inside a float64 model (Mamba-2's chunk scan, Mamba-1's
#: scan and the gated delta rule cast to float32); with the recurrent and linear-attention families, judged the same
#: way for safety: their Jacobian is judged with float32's rounding band (wider, so stricter on weak dependences).
FLOAT32_INSIDE = frozenset({"mamba2", "bamba", "falconh1", "zamba2", "jamba", "qwen3next", "mamba", "xlstm",
                            "minimax", "recurrentgemma", "lfm2"})


def build(name: str, dtype: torch.dtype = torch.float64, seed: int = 0, **overrides) -> torch.nn.Module:
    """The model ``name`` of :data:`MODELS`, random weights drawn under ``seed``, in eval mode, in ``dtype``."""
    config_of, cls, kwargs = MODELS[name]
    config = config_of(**overrides)
    with torch.random.fork_rng(devices=[]):  # the caller's global generator is left as it was
        torch.manual_seed(seed)
        model = getattr(_transformers(), cls)(config, **kwargs)
    return model.eval().to(dtype)


def last_hidden(model: torch.nn.Module, **kwargs) -> Callable[[Tensor], Tensor]:
    """x (1, T, d) -> the model's last hidden state (1, T, d), from ``inputs_embeds`` (no cache)."""
    extra = {"use_cache": False} | kwargs
    if type(model).__name__ in ("LongformerModel", "BigBirdModel"):
        extra.pop("use_cache")

    def layer(x: Tensor) -> Tensor:
        return model(inputs_embeds=x, **extra).last_hidden_state

    return layer


def embeddings(T: int, dtype: torch.dtype = torch.float64, seed: int = 1) -> Tensor:
    """Seeded inputs x (1, T, D_MODEL)."""
    return torch.randn(1, T, D_MODEL, dtype=dtype, generator=torch.Generator().manual_seed(seed))


# --- the two routes -------------------------------------------------------------------------------------

def jacobian_depends(layer: Callable[[Tensor], Tensor], x: Tensor, computed: torch.dtype | None = None) -> Matrix:
    """depends[j][i]: ||dy_j/dx_i||_F of the exact Jacobian above seqlab's rounding band (x in float64).

    ``computed``: the dtype the layer really computes in, which sets the band (default: x's dtype).
    An output row that is NaN (an attention row with every key masked) has NaN strengths: never "depends".
    """
    T, d = x.shape[1], x.shape[2]
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*performance drop.*")
        # PyTorch's forward mode imports jvp decompositions scripted with the deprecated torch.jit.script
        warnings.filterwarnings("ignore", message=".*torch.jit.script.*deprecated", category=DeprecationWarning)
        try:  # one vmapped backward over the T·d rows; a layer that vmap cannot batch takes one backward per row
            J = torch.autograd.functional.jacobian(layer, x, vectorize=True)  # (1, T_out, d_out, 1, T, d)
        except RuntimeError:
            J = torch.autograd.functional.jacobian(layer, x)
        if bool(J.isnan().any()):  # a NaN output row poisons every row's backward (0 · NaN): forward mode instead,
            J = torch.autograd.functional.jacobian(layer, x, vectorize=True, strategy="forward-mode")  # NaN stays put
    T_out = J.shape[1]
    blocks = J.reshape(T_out, -1, T, d).square().sum(dim=(1, 3)).sqrt()  # (T_out, T)
    return judge(blocks.tolist(), computed or x.dtype).depends


def path_depends(matrix: PathMatrix, T_out: int) -> Matrix:
    """depends[j][i]: the path matrix has a path (an entry, not None) from input i to output j."""
    rows = dict(zip(matrix.sources, matrix.products, strict=True))
    return tuple(tuple(rows[i][j] is not None for i in sorted(rows)) for j in range(T_out))


def causal(T: int) -> Matrix:
    """depends[j][i] = i <= j."""
    return tuple(tuple(i <= j for i in range(T)) for j in range(T))


def band(T: int, width: int) -> Matrix:
    """Causal band of ``width`` keys: depends[j][i] = j - width < i <= j."""
    return tuple(tuple(j - width < i <= j for i in range(T)) for j in range(T))


def drawn(matrix: Matrix) -> str:
    """The matrix as rows of 'x' (depends) and '.' (does not), output rows top to bottom."""
    return "\n".join("".join("x" if v else "." for v in row) for row in matrix)
