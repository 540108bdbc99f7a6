"""``seqlab decode --model`` on families the other decode tests do not cover (issue 35, item 8).

Two routes agree for each family: the bytes the study reads from the model's own cache
(:func:`seqlab.measure.cache_state.read_cache_state`) equal a second walk written here (every floating-point tensor
held by the cache's layers, each storage once) after the same prefill and step; and where the config gives a closed
form (:func:`seqlab.studies.decode_model_forms.closed_state_bytes`, layer by layer), it equals both. Then the kinds
the closed forms once got wrong, each with at least two inputs: latent attention (its cache holds the compressed
latent and the rotary key, d_c + d_R per position, not 2·H·d_h), layers that read another layer's keys and values
(they hold none), layers whose heads and widths differ (per-layer configs), ALiBi (Falcon's own mask and bias run as
Falcon runs them), heads read from the config whatever the family calls them, and the cache's bytes at the
checkpoint's own dtype.

Tiny models: :func:`tiny_config` sets the sizes below on whatever fields the family's config class has (its
``attribute_map`` names them for it), 2 layers of width 32, vocabulary 64; random weights, nothing downloaded.
"""

from __future__ import annotations

import inspect

import pytest
import torch

transformers = pytest.importorskip("transformers")

from seqlab.studies.decode_model import ModelDecodeConfig, model_facts, run_model_decode  # noqa: E402

POSITIONS = (4, 8, 16)
#: Sizes every tiny config gets where its class has the field (the others keep their defaults).
SIZES = {"vocab_size": 64, "hidden_size": 32, "n_embd": 32, "d_model": 32, "intermediate_size": 48, "ffn_dim": 48,
         "num_hidden_layers": 2, "n_layer": 2, "n_layers": 2, "num_layers": 2, "num_attention_heads": 4, "n_head": 4,
         "n_heads": 4, "num_key_value_heads": 2, "max_position_embeddings": 64, "n_positions": 64, "max_seq_len": 64,
         "n_ctx": 64, "bos_token_id": 0, "eos_token_id": 1, "pad_token_id": 1, "head_dim": 8, "kv_lora_rank": 16,
         "q_lora_rank": None, "qk_rope_head_dim": 4, "qk_nope_head_dim": 8, "v_head_dim": 8, "num_experts": 4,
         "n_routed_experts": 4, "num_local_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 16,
         "n_shared_experts": 1, "first_k_dense_replace": 1, "n_group": 1, "topk_group": 1,
         "shared_expert_intermediate_size": 16, "rotary_dim": 4, "partial_rotary_factor": 0.5,
         "hidden_size_per_layer_input": 8, "vocab_size_per_layer_input": 64, "laurel_rank": 4, "altup_num_inputs": 2,
         "num_kv_shared_layers": 0}
#: Families measured here, beyond those of tests/test_decode_model.py and tests/test_model_checkpoints.py
#: (transformers' model types; Bloom, built there for ``seqlab model``, is decoded here for its ALiBi).
FAMILIES = ("afmoe", "apertus", "arcee", "beam", "biogpt", "bitnet", "bloom", "codegen", "cohere", "cohere2",
            "ctrl", "deepseek_v2", "deepseek_v3", "exaone4", "gemma3n_text", "gemma4_text", "glm4", "glm4_moe_lite",
            "gpt_bigcode", "helium", "llama4_text", "minicpm3", "ministral", "mpt", "nemotron", "olmo2", "olmo3",
            "persimmon", "phi", "qwen3_moe", "smollm3", "stablelm", "vaultgemma", "xglm")


def tiny_config(model_type: str, **changes):
    """A tiny config of ``model_type``: :data:`SIZES` on the fields its class has, then ``changes``; latent attention
    (a ``kv_lora_rank`` field) keeps every head for keys and values, as its code expects."""
    cls = transformers.CONFIG_MAPPING[model_type]
    fields = set(inspect.signature(cls.__init__).parameters) | set(getattr(cls, "attribute_map", {}) or {})
    for base in cls.__mro__:
        fields |= set(getattr(base, "__annotations__", {}))
    values = {**{k: v for k, v in SIZES.items() if k in fields}, **changes}
    if "kv_lora_rank" in values:
        values.pop("head_dim", None)
        values["num_key_value_heads"] = values.get("num_attention_heads", 4)
    for alias, name in (getattr(cls, "attribute_map", {}) or {}).items():
        if alias in values and name in values:
            values.pop(alias)
    return cls(**values)


def build(config, dtype=torch.float32):
    from seqlab.layers.pretrained import offline_and_quiet

    config._attn_implementation = "eager"
    with offline_and_quiet():
        torch.manual_seed(0)
        return transformers.AutoModelForCausalLM.from_config(config, dtype=dtype).eval()


def measure(name: str, config, dtype=torch.float32):
    from seqlab.layers.pretrained import offline_and_quiet

    model = build(config, dtype)
    with offline_and_quiet():
        result = run_model_decode(ModelDecodeConfig(name, positions=POSITIONS, time=False, span_lengths=None),
                                  loaded=(model, model_facts(model, name)))
    return model, result


def walked_bytes(model, t: int, seed: int = 0) -> int:
    """The second route: t − 1 tokens in one pass, token t through the cache it returned (as the study does), then
    every floating-point tensor the cache's layers hold, each storage once."""
    vocabulary = model.config.get_text_config(decoder=True).vocab_size
    ids = torch.randint(0, vocabulary, (1, t), generator=torch.Generator().manual_seed(seed))
    with torch.no_grad():
        past = model(ids[:, :-1], use_cache=True).cache
        model(ids[:, -1:], use_cache=True, cache=past)
    seen, total = set(), 0
    for layer in past.layers:
        for value in vars(layer).values():
            if isinstance(value, torch.Tensor) and value.is_floating_point():
                storage = value.untyped_storage()
                if storage.data_ptr() not in seen:
                    seen.add(storage.data_ptr())
                    total += storage.nbytes()
    return total


@pytest.fixture(scope="module")
def family_results():
    return {name: measure(name, tiny_config(name)) for name in FAMILIES}


@pytest.mark.parametrize("name", FAMILIES)
def test_bytes_equal_a_walk_of_the_cache_and_the_closed_form(family_results, name):
    model, result = family_results[name]
    dynamic = [s for s in result.steps if s.cache == "dynamic"]
    assert [s.t for s in dynamic] == list(POSITIONS)
    for step in dynamic:
        assert step.state.total_bytes == walked_bytes(model, step.t), (name, step.t)
        assert step.closed_bytes is not None, name  # every family here: attention the closed forms describe
        assert dict(step.closed_bytes) == dict(step.state.by_kind), (name, step.t)
    assert result.bytes_match is True
    assert result.model.heads > 0 and 0 < result.model.kv_heads <= result.model.heads  # from the config, always


def test_twenty_more_families_than_the_other_decode_tests():
    import ast
    from pathlib import Path

    covered = set()
    for other in ("test_decode_model.py", "test_model_checkpoints.py"):
        tree = ast.parse((Path(__file__).parent / other).read_text(encoding="utf-8"))
        covered |= {(node.attr if isinstance(node, ast.Attribute) else node.id).removesuffix("Config").lower()
                    for node in ast.walk(tree) if isinstance(node, (ast.Attribute, ast.Name))
                    and (node.attr if isinstance(node, ast.Attribute) else node.id).endswith("Config")}
    new = {name.replace("_", "") for name in FAMILIES} - {name.replace("_", "") for name in covered}
    assert len(new) >= 20, sorted(new)


# --- latent attention: d_c + d_R per position and layer ----------------------------------------------------------

@pytest.mark.parametrize("name", ["deepseek_v2", "deepseek_v3", "minicpm3", "glm4_moe_lite"])
def test_latent_attention_caches_the_latent_and_the_rotary_key(family_results, name):
    from seqlab.render.decode_model import difference_sentences

    _, result = family_results[name]
    for step in [s for s in result.steps if s.cache == "dynamic"]:
        # 2 layers · (d_c 16 + d_R 4) · t · 4 bytes, against 2 · 2 · 4 heads · 12 · t · 4 for keys, values per head
        assert step.state.by_kind == {"attention_kv": 2 * (16 + 4) * step.t * 4}
    assert result.model.latent_kv_layers == 2
    assert any("latent attention" in line for line in difference_sentences(result))


@pytest.mark.parametrize("rank", [8, 24])
def test_latent_bytes_follow_the_rank(rank):
    _, result = measure("deepseek_v3", tiny_config("deepseek_v3", kv_lora_rank=rank, qk_rope_head_dim=8))
    last = [s for s in result.steps if s.cache == "dynamic"][-1]
    assert dict(last.state.by_kind) == dict(last.closed_bytes) == {"attention_kv": 2 * (rank + 8) * 16 * 4}


@pytest.mark.parametrize("name", ["deepseek_v32", "glm_moe_dsa"])
def test_indexed_attention_caches_its_indexer_keys_too(name):
    """Sparse attention with a lightning indexer (DSA): each layer caches its latent, its rotary key and the
    indexer's key, d_I per position."""
    config = tiny_config(name, q_lora_rank=16, index_head_dim=8, index_n_heads=2, index_topk=4)
    assert list(config.layer_types) == ["indexed_attention"] * 2
    model, result = measure(name, config)
    for step in result.steps:
        # 2 layers · (d_c 16 + d_R 4 + d_I 8) · t · 4 bytes
        assert dict(step.state.by_kind) == dict(step.closed_bytes) == {"attention_kv": 2 * (16 + 4 + 8) * step.t * 4}
        assert step.state.total_bytes == walked_bytes(model, step.t)


# --- layers that read another layer's keys and values ------------------------------------------------------------

@pytest.mark.parametrize("name", ["gemma3n_text", "gemma4_text"])
def test_layers_sharing_keys_and_values_hold_none(name):
    from seqlab.render.decode_model import difference_sentences

    config = tiny_config(name, num_hidden_layers=4, num_kv_shared_layers=2, sliding_window=8,
                         layer_types=["sliding_attention", "full_attention"] * 2, global_head_dim=16)
    model, result = measure(name, config)
    assert result.model.shared_kv_layers == 2
    for step in [s for s in result.steps if s.cache == "dynamic"]:
        full, window = model.model.layers[1].self_attn, model.model.layers[0].self_attn  # the two layers that store
        full_row = 2 * full.k_proj.out_features * 4  # keys and values of one position, float32
        window_row = 2 * window.k_proj.out_features * 4
        assert step.state.by_kind == {"attention_kv": full_row * step.t,
                                      "sliding_window_kv": window_row * min(step.t, 8)}, (name, step.t)
        assert dict(step.closed_bytes) == dict(step.state.by_kind)
        assert step.state.total_bytes == walked_bytes(model, step.t)
    lines = difference_sentences(result)
    assert any("2 of the 4 layers read the keys and values another layer stored" in line for line in lines)
    last = result.steps[-1]  # the window's visible rows, its own bytes apart from the full layer's
    visible = last.state.visible_by_kind["sliding_window_kv"]
    assert visible == 2 * model.model.layers[0].self_attn.k_proj.out_features * 7 * 4  # w − 1 = 7 rows
    assert any(f"keeps w − 1 rows visible ({visible:,} bytes)" in line for line in lines)


# --- layers that differ in heads and widths ------------------------------------------------------------------------

@pytest.mark.parametrize(("global_head_dim", "global_kv_heads"), [(16, 1), (32, 4)])
def test_layers_of_different_heads_and_widths(global_head_dim, global_kv_heads):
    """Gemma 4's full-attention layers have their own head width and key/value heads (``per_layer_config``): each
    layer's cache is read from its own config."""
    config = tiny_config("gemma4_text", sliding_window=8, layer_types=["sliding_attention", "full_attention"],
                         global_head_dim=global_head_dim, num_global_key_value_heads=global_kv_heads)
    assert config.per_layer_config[1].head_dim == global_head_dim
    model, result = measure("gemma4", config)
    for step in [s for s in result.steps if s.cache == "dynamic"]:
        full = model.model.layers[1].self_attn.k_proj.out_features
        assert step.state.by_kind["attention_kv"] == 2 * full * step.t * 4
        assert step.state.by_kind["sliding_window_kv"] == 2 * 2 * 8 * min(step.t, 8) * 4  # 2 kv heads of width 8
        assert dict(step.closed_bytes) == dict(step.state.by_kind)
    assert result.bytes_match is True


@pytest.mark.parametrize("swa_rank", [24, 40])
def test_latent_layers_of_different_ranks_and_windows(swa_rank):
    """Dots 3 Note: two indexed latent-attention layers (d_c 16, d_R 4, an indexer key of 8) and two windowed ones of
    their own rank (``per_layer_config``): each layer's bytes from its own config."""
    config = tiny_config("dots3_note_text", num_hidden_layers=4, q_lora_rank=16, index_head_dim=8, index_n_heads=2,
                         index_topk=4, sliding_window=8, swa_num_attention_heads=4, swa_num_key_value_heads=4,
                         swa_q_lora_rank=16, swa_kv_lora_rank=swa_rank, swa_head_dim=12, swa_qk_nope_head_dim=8,
                         swa_v_head_dim=8)
    assert [config.per_layer_config[i].kv_lora_rank for i in range(4)] == [16, 16, swa_rank, swa_rank]
    model, result = measure("dots3_note", config)
    for step in result.steps:
        # indexed: 2 layers · (16 + 4 + 8) · t · 4; windowed: 2 layers · (rank + rope 12 − 8) · min(t, 8) · 4
        assert dict(step.state.by_kind) == dict(step.closed_bytes) == {
            "attention_kv": 2 * 28 * step.t * 4, "sliding_window_kv": 2 * (swa_rank + 4) * min(step.t, 8) * 4}
        assert step.state.total_bytes == walked_bytes(model, step.t)
    assert result.model.latent_kv_layers == 4


# --- ALiBi: the family's own mask and bias ---------------------------------------------------------------------------

@pytest.mark.parametrize("changes", [{}, {"new_decoder_architecture": True, "num_kv_heads": 2}])
def test_falcon_with_alibi_is_measured_as_falcon_runs_it(changes):
    """Falcon builds ALiBi's bias (H slopes × t positions) outside its layers each step and adds it to a mask of the
    positions written so far, which a static cache's rows do not fit: the dynamic cache is measured, its work
    equals the closed form with the bias, and the static cache is named as refused by Falcon's own code."""
    from seqlab.render.decode_model import difference_sentences

    config = transformers.FalconConfig(vocab_size=64, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                                       alibi=True, **changes)
    model, result = measure("falcon_alibi", config)
    assert [s.cache for s in result.steps] == ["dynamic"] * 3 and result.static_refused is not None
    for step in result.steps:
        assert step.multiplications == step.closed_form and step.unaccounted == {}
        assert step.closed_work_by_kind["output"] == 32 * 64 + 4 * step.t  # d·V + H·t
        assert dict(step.closed_bytes) == dict(step.state.by_kind)
        assert step.state.total_bytes == walked_bytes(model, step.t)
    lines = difference_sentences(result)
    assert any("does not run with a static cache" in line for line in lines)
    last = result.steps[-1]  # Kaplan's gap, term by term: the bias H·t is one of them
    assert last.kaplan_terms["position_bias"] == 4 * 16
    assert any("ALiBi's bias" in line and "adds 64 that N does not hold" in line for line in lines)


# --- heads from the config, whatever the family calls them -----------------------------------------------------------

@pytest.mark.parametrize(("name", "heads"), [("codegen", 4), ("mpt", 4), ("bloom", 4), ("gpt_bigcode", 4)])
def test_heads_in_json_come_from_the_config(family_results, name, heads):
    import json

    from seqlab.render.json_output import to_json

    document = json.loads(to_json(family_results[name][1]))
    assert document["model"]["heads"] == heads and document["model"]["kv_heads"] >= 1


# --- the checkpoint's dtype -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["llama", "deepseek_v3"])
def test_bfloat16_checkpoint_bytes_at_its_dtype(tmp_path, name):
    """A checkpoint saved in bfloat16 is measured in bfloat16 by default (its cache 2 bytes an element, half the
    float32 figure), and in float32 with ``--dtype float32``."""
    from typer.testing import CliRunner

    from seqlab.cli import app
    from seqlab.layers.pretrained import offline_and_quiet

    config = tiny_config(name)
    with offline_and_quiet():
        torch.manual_seed(0)
        transformers.AutoModelForCausalLM.from_config(config, dtype=torch.bfloat16).save_pretrained(tmp_path / name)
    own = run_model_decode(ModelDecodeConfig(str(tmp_path / name), positions=POSITIONS, time=False,
                                             span_lengths=None))
    wide = run_model_decode(ModelDecodeConfig(str(tmp_path / name), positions=POSITIONS, time=False,
                                              span_lengths=None, dtype="float32"))
    assert own.model.dtype == "bfloat16" and wide.model.dtype == "float32"
    for half, full in zip(own.steps, wide.steps):
        assert half.state.dtype == "bfloat16"
        assert 2 * half.state.total_bytes == full.state.total_bytes
        assert dict(half.closed_bytes) == dict(half.state.by_kind)
    env = {"COLUMNS": "200", "NO_COLOR": "1"}
    run = CliRunner().invoke(app, ["decode", "--model", str(tmp_path / name), "--positions", "4,8,16", "--no-time",
                                   "--dtype", "float16"], env=env)
    assert run.exit_code == 0, run.output
    assert "Eager attention, float16, batch 1" in " ".join(run.output.split())
    run = CliRunner().invoke(app, ["decode", "--model", str(tmp_path / name), "--dtype", "int8"], env=env)
    assert run.exit_code == 2 and "dtype must be one of float32, bfloat16, float16, float64" in run.output
    run = CliRunner().invoke(app, ["decode", "--model", str(tmp_path / name), "--dtype", "int8", "--lang", "es"],
                             env=env)
    assert run.exit_code == 2 and "el dtype debe ser uno de" in run.output
    run = CliRunner().invoke(app, ["decode", "--positions", "4,8", "--dtype", "float32"], env=env)
    assert run.exit_code == 2 and "--dtype applies to --model only" in run.output


# --- a family the closed forms do not describe says so ---------------------------------------------------------------

def test_a_cache_unlike_the_closed_forms_says_so_in_figures(family_results):
    """Where the measured bytes differ from the closed form, the sentence gives both figures and says the family's
    cache is not the one the closed forms describe, whatever the growths say."""
    from dataclasses import replace

    from seqlab.render.decode_model import difference_sentences

    for name in ("deepseek_v3", "cohere"):
        result = family_results[name][1]
        last = [s for s in result.steps if s.cache == "dynamic"][-1]
        grown = replace(last.state, by_kind={k: 3 * v for k, v in last.state.by_kind.items()})
        changed = replace(result, steps=tuple(replace(s, state=grown) if s is last else s for s in result.steps))
        line = next(line for line in difference_sentences(changed) if "not the one the closed forms" in line)
        assert f"{3 * last.state.total_bytes:,} bytes at t = 16" in line
        assert f"gives {sum(last.closed_bytes.values()):,}" in line
        assert not any("not the one the closed forms" in line for line in difference_sentences(result))


@pytest.mark.parametrize("name", ["qwen3_next", "kimi_linear", "olmo_hybrid", "falcon_h1", "minimax"])
def test_layers_the_closed_forms_do_not_describe_get_none(name):
    """A config listing layers of linear attention or hybrid layers gets no bytes' closed form —
    not the multi-head formula of its attention sizes — even when handed cache layers of plain keys and values."""
    from seqlab.studies.decode_model_forms import closed_state_bytes, layer_caches

    config = transformers.CONFIG_MAPPING[name](num_hidden_layers=4)
    assert layer_caches(config) is None
    assert closed_state_bytes(config, 8, 4) is None
    assert closed_state_bytes(config, 8, 4, ("DynamicLayer",) * 4) is None


def test_no_closed_form_is_said_not_borrowed(family_results):
    """Without a closed form, each bytes sentence says so, and none says the closed forms grow the same way."""
    from dataclasses import replace

    from seqlab.render.decode_model import growth_sentences
    from seqlab.studies.decode_model import _growths

    result = family_results["deepseek_v3"][1]
    steps = [replace(s, closed_bytes=None) for s in result.steps if s.cache == "dynamic"]
    bare = replace(result, steps=tuple(steps), growth=tuple(_growths(POSITIONS, steps, "")))
    lines = [line for line in growth_sentences(bare) if line.startswith("Cache bytes")]
    assert lines and all(line.endswith("No closed form for this family here.") for line in lines)


@pytest.mark.parametrize("width", [32, 48])
def test_a_state_kept_wider_than_the_weights_is_named_by_dtype(width):
    """RWKV's own code keeps its WKV numerator, denominator and maximum in float32 whatever the weights' dtype: in
    bfloat16 the cache holds both dtypes, the closed form (every element at 2 bytes) falls short, and the sentence
    gives the bytes per dtype instead of calling the cache unknown."""
    from seqlab.render.decode_model import difference_sentences

    config = transformers.RwkvConfig(vocab_size=64, hidden_size=width, num_hidden_layers=2,
                                     attention_hidden_size=width, intermediate_size=64, context_length=64)
    _, result = measure("rwkv", config, torch.bfloat16)
    last = result.steps[-1]
    assert result.model.dtype == "bfloat16" and last.state.dtype == "bfloat16,float32"
    assert sum(last.state.bytes_by_dtype.values()) == last.state.total_bytes
    assert sum(last.closed_bytes.values()) == 2 * (2 * width + 3 * width) * 2  # L · (2d + 3·d_att) · 2 bytes
    assert last.state.bytes_by_dtype["float32"] == 2 * 3 * width * 4  # the WKV state, 3·d_att per layer in float32
    line = next(line for line in difference_sentences(result) if "another dtype" in line)
    assert f"{last.state.bytes_by_dtype['float32']:,} float32" in line and "weights are bfloat16" in line


@pytest.mark.parametrize("name", ["gemma3", "gemma4"])
def test_a_multimodal_wrapper_is_read_through_its_text_decoder(name):
    """A causal LM whose config wraps a text decoder and a vision tower (Gemma 3's and Gemma 4's
    ``…ForConditionalGeneration``): the closed forms and the facts read the decoder's config
    (``get_text_config(decoder=True)``), not the wrapper's, which has no layers of its own."""
    text = tiny_config(f"{name}_text", sliding_window=8, layer_types=["sliding_attention", "full_attention"])
    vision = {"hidden_size": 16, "num_hidden_layers": 1, "num_attention_heads": 2, "intermediate_size": 16,
              "num_key_value_heads": 2, "head_dim": 8, "image_size": 28, "patch_size": 14}
    wrapper = transformers.CONFIG_MAPPING[name](text_config=text.to_dict(), vision_config=vision)
    model, result = measure(name, wrapper)
    assert result.model.layers == 2 and result.model.vocabulary == 64 and result.model.heads == 4
    for step in result.steps:
        assert set(step.state.by_kind) == {"attention_kv", "sliding_window_kv"}
        assert dict(step.closed_bytes) == dict(step.state.by_kind)
        assert step.state.total_bytes == walked_bytes(model, step.t)


@pytest.mark.parametrize("v_head_dim", [4, 8])
def test_a_rule_in_the_family_code_the_config_does_not_state_is_said_not_hidden(v_head_dim):
    """MiMo-V2-Flash's code gives its sliding-window layers twice the config's key/value heads (a rule in the
    modeling code, not in the config): the full layer's bytes equal the closed form (keys of d_h, values of
    ``v_head_dim``), the windowed layer's are twice it, and the output gives both figures rather than calling the
    growths alike and stopping there."""
    from seqlab.render.decode_model import difference_sentences

    config = tiny_config("mimo_v2_flash", v_head_dim=v_head_dim, layer_types=["full_attention", "sliding_attention"])
    model, result = measure("mimo_v2_flash", config)
    last = result.steps[-1]
    assert last.state.by_kind["attention_kv"] == last.closed_bytes["attention_kv"] == 2 * (8 + v_head_dim) * 16 * 4
    assert last.state.by_kind["sliding_window_kv"] == 2 * last.closed_bytes["sliding_window_kv"]
    assert model.model.layers[1].self_attn.k_proj.out_features == 2 * 2 * 8  # 2 × the config's 2 heads of 8
    assert result.bytes_match is False and last.state.total_bytes == walked_bytes(model, 16)
    line = next(line for line in difference_sentences(result) if "not the one the closed forms describe" in line)
    assert f"holds {last.state.total_bytes:,} bytes at t = 16" in line
    assert f"gives {sum(last.closed_bytes.values()):,}" in line
