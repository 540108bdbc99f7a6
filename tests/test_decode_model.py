"""``seqlab decode --model``: tiny random-weight checkpoints of six families, measured against the closed forms.

Two routes agree: bytes read from the model's own cache object == the config's closed form (at three positions),
multiplications counted on the step == the closed form, and the growth named from the measurements == the one
the closed forms give. The checkpoints are built once per module (``save_pretrained`` into a temporary folder).
"""

from __future__ import annotations

import json

import pytest
import torch

transformers = pytest.importorskip("transformers")

from seqlab.errors import SeqlabError  # noqa: E402
from seqlab.measure.cache_state import read_cache_state  # noqa: E402
from seqlab.studies.decode_model import (ModelDecodeConfig, classify_growth, load_causal_lm,  # noqa: E402
                                         run_model_decode)

V = 64
SPECIAL = {"bos_token_id": 0, "eos_token_id": 1, "pad_token_id": 1}
ATTENTION = {"vocab_size": V, "hidden_size": 32, "intermediate_size": 48, "num_hidden_layers": 2,
             "num_attention_heads": 4, "max_position_embeddings": 64, **SPECIAL}
CONFIGS = {
    "gpt2": lambda: transformers.GPT2Config(vocab_size=V, n_positions=64, n_embd=32, n_layer=2, n_head=4, **SPECIAL),
    "llama_gqa": lambda: transformers.LlamaConfig(**ATTENTION, num_key_value_heads=2, head_dim=16),
    "mistral": lambda: transformers.MistralConfig(**ATTENTION, num_key_value_heads=2, sliding_window=8),
    "mamba": lambda: transformers.MambaConfig(vocab_size=V, hidden_size=32, state_size=4, num_hidden_layers=2,
                                              conv_kernel=4, expand=2, **SPECIAL),
    "rwkv": lambda: transformers.RwkvConfig(vocab_size=V, hidden_size=32, num_hidden_layers=2,
                                            attention_hidden_size=32, intermediate_size=64, context_length=64,
                                            **SPECIAL),
    "jamba": lambda: transformers.JambaConfig(**{**ATTENTION, "num_hidden_layers": 4}, num_key_value_heads=2,
                                              attn_layer_period=2, attn_layer_offset=1, expert_layer_period=100,
                                              expert_layer_offset=99, num_experts=1, mamba_d_state=4, mamba_d_conv=4,
                                              mamba_expand=2),
    "qwen2_mixed": lambda: transformers.Qwen2Config(**{**ATTENTION, "num_hidden_layers": 4}, num_key_value_heads=2,
                                                    use_sliding_window=True, sliding_window=8, max_window_layers=2),
}
POSITIONS = (4, 8, 16)
#: What each family's state and step must grow like at t = 4, 8, 16 (window 8 for Mistral).
EXPECTED = {"gpt2": ("linear", "constant + linear"), "llama_gqa": ("linear", "constant + linear"),
            "mistral": ("capped", "capped"), "mamba": ("constant", "constant"), "rwkv": ("constant", "constant"),
            "jamba": ("constant + linear", "constant + linear"), "qwen2_mixed": ("linear + capped", "constant + linear + capped")}


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory):
    """Folder of each family's tiny checkpoint (random weights, seeded)."""
    from seqlab.layers.pretrained import offline_and_quiet

    folders = {}
    with offline_and_quiet():  # no progress bar, no notes on stderr
        for name, make in CONFIGS.items():
            torch.manual_seed(0)
            model = transformers.AutoModelForCausalLM.from_config(make())
            folder = tmp_path_factory.mktemp(name)
            model.save_pretrained(folder)
            folders[name] = str(folder)
    return folders


@pytest.fixture(scope="module")
def results(checkpoints):
    return {name: run_model_decode(ModelDecodeConfig(folder, positions=POSITIONS, time=False))
            for name, folder in checkpoints.items()}


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_bytes_equal_the_closed_form_at_three_positions(results, name):
    result = results[name]
    assert [s.t for s in result.steps if s.cache == "dynamic"] == list(POSITIONS)
    for step in result.steps:
        assert step.closed_bytes is not None
        assert dict(step.state.by_kind) == dict(step.closed_bytes), (name, step.t)
    assert result.bytes_match is True


def test_bytes_by_hand():
    # llama GQA at t = 8: 2 layers · keys and values · 2 kv heads · 16 (head_dim) · 8 rows · 4 bytes = 4096
    # mistral at t = 16, w = 8: 7 rows visible, a view of the 8 rows the step concatenated: 2 · 2 · 2 · 8 · 8 · 4
    from seqlab.cost import kv_cache_bytes, sliding_window_cache_rows

    assert kv_cache_bytes(8, 2, 2, 16, 4) == 4096
    assert kv_cache_bytes(sliding_window_cache_rows(16, 8), 2, 2, 8, 4) == 2048


def test_measured_bytes_by_hand(results):
    assert dict(results["llama_gqa"].steps[1].state.by_kind) == {"attention_kv": 4096}
    assert dict(results["mistral"].steps[2].state.by_kind) == {"sliding_window_kv": 2048}
    assert results["mistral"].steps[2].state.visible_bytes == 1792  # the w − 1 = 7 rows the next token reads
    assert results["mistral"].steps[2].state.bookkeeping_bytes == 2 * 8  # a 0-d int64 window length per layer
    # mamba: 2 layers · E = 64 · (d_conv 4 | N 4) · 4 bytes
    assert dict(results["mamba"].steps[0].state.by_kind) == {"convolution": 2048, "recurrent": 2048}
    # rwkv: 2 layers · (2·32 token shifts | 3·32 WKV) · 4 bytes
    assert dict(results["rwkv"].steps[0].state.by_kind) == {"convolution": 512, "recurrent": 768}


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_multiplications_equal_the_closed_form(results, name):
    for step in results[name].steps:
        assert step.unaccounted == {}
        assert step.multiplications == step.closed_form, (name, step.t)


def test_multiplications_by_hand(results):
    # gpt2 at t = 16: per layer 4·32² + 2·32·128 + 2·4·8·16 = 13312; ×2 + 32·64 = 28672
    assert results["gpt2"].steps[2].multiplications == 28672
    # kaplan: N + L·t·d_attn leaves out α·V (L·t·d) and the output layer d·V; the measured step exceeds it
    # by Kaplan's gap: L·t·d_attn (α·V) + d·V (output layer) − the 1-D weights N counts (biases, norms)
    step, facts = results["gpt2"].steps[2], results["gpt2"].model
    assert step.multiplications - step.kaplan == 2 * 16 * 32 + 32 * V - facts.vector_parameters
    # 1-D weights of gpt2: per layer 2 norms · 2 · 32 + biases 96 + 32 + 128 + 32; a final norm 2 · 32
    assert facts.vector_parameters == 2 * (128 + 288) + 64


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_growth_is_named_right(results, name):
    by_figure = {g.figure: g for g in results[name].growth}
    state, work = EXPECTED[name]
    assert by_figure["bytes"].kind == state and by_figure["bytes"].expected == state
    assert by_figure["multiplications"].kind == work and by_figure["multiplications"].expected == work


@pytest.mark.parametrize("name", ["gpt2", "llama_gqa"])
def test_static_cache_holds_the_largest_position_from_the_start(results, name):
    result = results[name]
    assert result.model.offers_static
    static = [s for s in result.steps if s.cache == "static"]
    assert [s.t for s in static] == list(POSITIONS)
    for step in static:  # closed forms at t = 16, the preallocated rows, whatever the position
        assert dict(step.state.by_kind) == dict(step.closed_bytes) and step.multiplications == step.closed_form
    by_figure = {g.figure: g for g in result.growth}
    assert by_figure["static bytes"].kind == "constant" == by_figure["static bytes"].expected
    assert by_figure["static multiplications"].kind == "constant"
    dynamic = [s for s in result.steps if s.cache == "dynamic"]
    assert dynamic[-1].state.total_bytes == static[-1].state.total_bytes  # equal at the last position


def test_recurrent_and_windowed_models_offer_no_static_cache(results):
    assert not any(results[name].model.offers_static for name in ("mamba", "rwkv", "mistral", "jamba"))


def test_hybrid_is_the_sum_of_a_constant_and_a_linear_part(results):
    by_figure = {g.figure: g for g in results["jamba"].growth}
    assert by_figure["bytes:attention_kv"].kind == "linear"
    assert by_figure["bytes:recurrent"].kind == "constant" and by_figure["bytes:convolution"].kind == "constant"
    assert by_figure["bytes:attention_kv"].slope == 2 * 2 * 8 * 4 * 2  # per position: 2 layers · K,V · 2 · 8 · 4
    assert by_figure["multiplications:mamba"].kind == "constant"
    assert by_figure["multiplications:attention"].slope == 2 * 2 * 4 * 8  # 2 layers · (q·K, α·V) · H · d_h


def test_full_and_window_layers_sum_to_linear_plus_capped(results):
    by_figure = {g.figure: g for g in results["qwen2_mixed"].growth}
    assert by_figure["bytes:attention_kv"].kind == "linear" and by_figure["bytes:sliding_window_kv"].kind == "capped"
    assert by_figure["bytes"].expected == "linear + capped"
    # per step: the full layers' t keys plus the window's min(t, 8): no one form; named by the layers' parts
    assert by_figure["multiplications:attention"].kind == "constant + linear"
    assert by_figure["multiplications:sliding"].kind == "capped" == by_figure["multiplications:sliding"].expected
    assert by_figure["multiplications"].expected == "constant + linear + capped"


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_work_split_by_kind_of_layer_equals_the_closed_form(results, name):
    for step in results[name].steps:
        assert dict(step.work_by_kind) == dict(step.closed_work_by_kind), (name, step.t)
        assert sum(step.work_by_kind.values()) == step.multiplications


def test_window_cap(results):
    growth = {g.figure: g for g in results["mistral"].growth}["bytes"]
    assert growth.cap == 2 * 2 * 2 * 8 * 8 * 4  # w = 8 rows held (7 visible)


@pytest.mark.parametrize(("name", "prefill_constant"), [("gpt2", True), ("llama_gqa", True), ("mamba", False),
                                                      ("rwkv", False)])
def test_prefill_span_against_generation(results, name, prefill_constant):
    span = results[name].span
    assert span.lengths == (16, 32)
    assert span.prefill_constant is prefill_constant  # attention reads every position at once; a scan does not
    assert span.generation_grows  # one step per token for every family
    assert span.generation_products[1] == 2 * span.generation_products[0]  # the same products per token
    assert span.prefill_products[0] == span.prefill_products[1]  # the scan's steps are element-wise


def test_classify_growth_forms():
    assert classify_growth((4, 8, 16), (3, 5, 4))[0] == "other"
    with pytest.raises(SeqlabError, match="3 distinct"):
        classify_growth((4, 8), (1, 2))


def test_timed_quick_run_gives_a_time_per_position(checkpoints):
    result = run_model_decode(ModelDecodeConfig.quick(checkpoints["gpt2"], rounds=3, block_seconds=0.001))
    assert [s.t for s in result.steps if s.cache == "dynamic"] == [8, 16, 32]
    assert all(s.timing is not None and s.timing.median_s > 0 for s in result.steps)
    assert result.threads == 1


def test_unreadable_cache_is_refused_naming_what_it_found():
    class OddLayer:
        def __init__(self):
            self.blob = torch.zeros(3)

    class OddCache:
        def __init__(self):
            self.layers = [OddLayer(), OddLayer()]

    with pytest.raises(SeqlabError, match=r"OddCache of OddLayer × 2") as error:
        read_cache_state(OddCache())
    assert "\n" not in str(error.value)

    class Empty:
        layers = []

    with pytest.raises(SeqlabError, match="no floating-point tensor"):
        read_cache_state(Empty())


def test_views_are_counted_once():
    class DynamicLayer:  # named as transformers' full-attention layer: keys and values
        def __init__(self, base):
            self.keys, self.values = base, base[:, :, 2:]  # values a view of the keys' storage

    class Cache:
        def __init__(self):
            self.layers = [DynamicLayer(torch.zeros(1, 2, 12, 16))]

    state = read_cache_state(Cache())
    assert dict(state.by_kind) == {"attention_kv": 2 * 12 * 16 * 4}  # one storage
    assert state.visible_bytes == 2 * 12 * 16 * 4 + 2 * 10 * 16 * 4


def test_bad_folders_and_positions(tmp_path, checkpoints):
    with pytest.raises(SeqlabError, match="is not a folder"):
        load_causal_lm(str(tmp_path / "missing"))
    bert = transformers.BertModel(transformers.BertConfig(vocab_size=V, hidden_size=32, num_hidden_layers=1,
                                                          num_attention_heads=4, intermediate_size=48))
    bert.save_pretrained(tmp_path / "bert")
    with pytest.raises(SeqlabError, match="not a causal language model"):
        load_causal_lm(str(tmp_path / "bert"))
    with pytest.raises(SeqlabError, match="beyond what .* at most 64 positions"):
        run_model_decode(ModelDecodeConfig(checkpoints["gpt2"], positions=(4, 8, 65), time=False))
    with pytest.raises(SeqlabError, match="at least 3 distinct"):
        run_model_decode(ModelDecodeConfig(checkpoints["gpt2"], positions=(4, 8), time=False))


def test_weights_of_another_model_or_a_truncated_file_are_refused(tmp_path, checkpoints):
    """A Llama config beside GPT-2's weights would load with random weights; a cut .safetensors header would raise
    inside safetensors: both are one-line refusals naming what is wrong."""
    import shutil
    from pathlib import Path

    gpt2, llama = Path(checkpoints["gpt2"]), Path(checkpoints["llama_gqa"])
    mixed, cut = tmp_path / "mixed", tmp_path / "cut"
    mixed.mkdir(), cut.mkdir()
    shutil.copy(llama / "config.json", mixed / "config.json")
    shutil.copy(gpt2 / "model.safetensors", mixed / "model.safetensors")
    with pytest.raises(SeqlabError, match=r"its weights do not match its config \(LlamaForCausalLM\): \d+ missing"):
        load_causal_lm(str(mixed))
    shutil.copy(gpt2 / "config.json", cut / "config.json")
    (cut / "model.safetensors").write_bytes((gpt2 / "model.safetensors").read_bytes()[:5])
    with pytest.raises(SeqlabError, match="has a weights file that cannot be read"):
        load_causal_lm(str(cut))


def test_cli_model_table_json_and_errors(checkpoints):
    from typer.testing import CliRunner

    from seqlab.cli import app

    env = {"COLUMNS": "200", "NO_COLOR": "1"}
    run = CliRunner().invoke(app, ["decode", "--model", checkpoints["mamba"], "--positions", "4,8,16", "--no-time"],
                             env=env)
    assert run.exit_code == 0, run.output
    assert "constant" in run.output and "recurrent" in run.output.lower()
    run = CliRunner().invoke(app, ["decode", "--model", checkpoints["mamba"], "--positions", "4,8,16", "--no-time",
                                   "--lang", "es"], env=env)
    assert run.exit_code == 0 and "constante" in run.output
    run = CliRunner().invoke(app, ["decode", "--model", checkpoints["llama_gqa"], "--positions", "4,8,16",
                                   "--no-time", "--json"], env=env)
    document = json.loads(run.output)
    jsonschema = pytest.importorskip("jsonschema")
    from seqlab.render.json_output import SCHEMA_VERSIONS, schema

    assert document["schema_version"] == SCHEMA_VERSIONS["decode_model"]
    assert list(jsonschema.Draft202012Validator(schema("decode_model")).iter_errors(document)) == []
    assert document["positions"] == [4, 8, 16] and document["steps"][1]["state"]["by_kind"] == {"attention_kv": 4096}
    run = CliRunner().invoke(app, ["decode", "--model", "/no/such/dir"], env=env)
    assert run.exit_code == 2 and "is not a folder" in run.output
    run = CliRunner().invoke(app, ["decode", "--model", checkpoints["gpt2"], "--positions", "4,8,100"], env=env)
    assert run.exit_code == 2 and "at most 64 positions" in run.output
    run = CliRunner().invoke(app, ["decode", "--model", checkpoints["gpt2"], "--positions", "4,8,100", "--lang", "es"],
                             env=env)
    assert run.exit_code == 2 and "como mucho 64 posiciones" in run.output
    run = CliRunner().invoke(app, ["decode", "--model", checkpoints["gpt2"], "--d-model", "8"], env=env)
    assert run.exit_code == 2 and "--d-model apply to seqlab's own machines, not to --model" in run.output


def test_work_that_would_not_fit_is_refused_before_the_prefill(checkpoints, monkeypatch):
    import seqlab.memory
    from seqlab.studies import decode_model

    monkeypatch.setattr(seqlab.memory, "available_memory_bytes", lambda: 100_000)
    calls = []
    monkeypatch.setattr(decode_model, "_prefill", lambda *args, **kwargs: calls.append(args))
    with pytest.raises(SeqlabError, match=r"would need about .* available"):
        run_model_decode(ModelDecodeConfig(checkpoints["gpt2"], positions=(16, 32, 64), time=False))
    assert calls == []  # refused before any prefill


def test_weights_that_would_not_fit_are_refused_before_loading(checkpoints, monkeypatch):
    import seqlab.memory
    from seqlab.layers import pretrained

    # read from the file's header: every weight once (GPT-2's output layer is tied to the token embedding)
    assert pretrained._stored_elements(checkpoints["gpt2"]) == load_causal_lm(checkpoints["gpt2"])[1].parameters
    load_causal_lm.cache_clear()
    monkeypatch.setattr(seqlab.memory, "available_memory_bytes", lambda: 1000)
    with pytest.raises(SeqlabError, match=r"loading gpt2.* would need about .*float32 weights"):
        load_causal_lm(checkpoints["gpt2"])


def test_a_forward_that_returns_no_cache_is_refused_naming_what_it_returned(checkpoints, monkeypatch):
    from seqlab.studies import decode_model

    model, facts = load_causal_lm(checkpoints["gpt2"])
    monkeypatch.setattr(model.config, "use_cache", False)
    original = model.forward

    def forward(*args, **kwargs):  # a model whose forward returns logits only
        kwargs["use_cache"] = False
        return original(*args, **kwargs)

    monkeypatch.setattr(model, "forward", forward)
    with pytest.raises(SeqlabError, match=r"returned CausalLMOutputWithCrossAttentions with nothing but logits"):
        decode_model._prefill(model, facts, 4, 0)


def test_plot_and_notebook_view(checkpoints, tmp_path, results):
    from typer.testing import CliRunner

    from seqlab.cli import app

    plot = tmp_path / "decode.svg"
    run = CliRunner().invoke(app, ["decode", "--model", checkpoints["rwkv"], "--positions", "4,8,16", "--no-time",
                                   "--plot", str(plot)], env={"COLUMNS": "200", "NO_COLOR": "1"})
    assert run.exit_code == 0, run.output
    assert plot.read_text(encoding="utf-8").lstrip().startswith("<?xml")
    html = results["jamba"].html("es")
    assert "claves/valores de atención" in html and "44.544" in html  # the count at t = 16
    figure = results["jamba"].plot()
    assert [len(ax.lines) for ax in figure.axes] == [1, 3]  # multiplications; three kinds of state


def test_a_family_known_only_by_its_layer_types_gets_the_bytes_closed_form(tmp_path):
    """Gemma 3 is not one of the families with a work closed form here, but its config lists its layers'
    attention (sliding, full): the cache's bytes have their closed form from the config, its work has none."""
    from seqlab.layers.pretrained import offline_and_quiet

    config = transformers.Gemma3TextConfig(**ATTENTION, num_key_value_heads=2, head_dim=8, sliding_window=8,
                                           layer_types=["sliding_attention", "full_attention"])
    torch.manual_seed(0)
    with offline_and_quiet():
        transformers.AutoModelForCausalLM.from_config(config).save_pretrained(tmp_path / "gemma3")
    result = run_model_decode(ModelDecodeConfig(str(tmp_path / "gemma3"), positions=POSITIONS, time=False))
    # one full layer: 2 · 2 kv heads · 8 · t · 4 bytes; one sliding layer (w = 8): the same over min(t, 8) rows
    assert [dict(s.state.by_kind) for s in result.steps] == [
        {"attention_kv": 128 * t, "sliding_window_kv": 128 * min(t, 8)} for t in POSITIONS]
    assert all(dict(s.closed_bytes) == dict(s.state.by_kind) for s in result.steps) and result.bytes_match is True
    assert all(s.closed_form is None for s in result.steps)  # no work closed form for this family: none printed
    assert result.bytes_kinds_from_cache is False  # the kinds came from the config's layer_types


#: Families beyond the six of the issue, built in memory: their configs (keys: what the test calls them).
MORE = {
    "phi3": lambda: transformers.Phi3Config(**ATTENTION, num_key_value_heads=2),
    "phi3_window": lambda: transformers.Phi3Config(**ATTENTION, num_key_value_heads=2, sliding_window=8),
    "gpt_neox": lambda: transformers.GPTNeoXConfig(**ATTENTION),
    "opt_projected": lambda: transformers.OPTConfig(vocab_size=V, hidden_size=32, ffn_dim=48, num_hidden_layers=2,
                                                    num_attention_heads=4, max_position_embeddings=64,
                                                    word_embed_proj_dim=16),
    "falcon_multi_query": lambda: transformers.FalconConfig(vocab_size=V, hidden_size=32, num_hidden_layers=2,
                                                            num_attention_heads=4),
    "gptj": lambda: transformers.GPTJConfig(vocab_size=V, n_embd=32, n_layer=2, n_head=4, n_positions=64,
                                            rotary_dim=4, **SPECIAL),
    "gemma2": lambda: transformers.Gemma2Config(**ATTENTION, num_key_value_heads=2, head_dim=8, sliding_window=8),
    "starcoder2_window": lambda: transformers.Starcoder2Config(**ATTENTION, num_key_value_heads=2, sliding_window=8),
    "qwen3": lambda: transformers.Qwen3Config(**ATTENTION, num_key_value_heads=2, head_dim=8),
    "gemma": lambda: transformers.GemmaConfig(**ATTENTION, num_key_value_heads=2, head_dim=8),
    "olmo": lambda: transformers.OlmoConfig(**ATTENTION),
    "granite": lambda: transformers.GraniteConfig(**ATTENTION),
    "mamba2": lambda: transformers.Mamba2Config(vocab_size=V, hidden_size=32, num_heads=4, head_dim=16, state_size=4,
                                                num_hidden_layers=2, n_groups=1, expand=2, conv_kernel=4),
    "falcon_mamba": lambda: transformers.FalconMambaConfig(vocab_size=V, hidden_size=32, state_size=4,
                                                           num_hidden_layers=2, conv_kernel=4, expand=2),
}
#: Bytes per kind after the step at t, by hand from each config (float32): attention 2·L·H_kv·d_h·rows·4.
MORE_BYTES = {
    "phi3": lambda t: {"attention_kv": 2 * 2 * 2 * 8 * t * 4},
    "phi3_window": lambda t: {"sliding_window_kv": 2 * 2 * 2 * 8 * min(t, 8) * 4},
    "gpt_neox": lambda t: {"attention_kv": 2 * 2 * 4 * 8 * t * 4},
    "opt_projected": lambda t: {"attention_kv": 2 * 2 * 4 * 8 * t * 4},
    "falcon_multi_query": lambda t: {"attention_kv": 2 * 2 * 1 * 8 * t * 4},  # one key/value head
    "gptj": lambda t: {"attention_kv": 2 * 2 * 4 * 8 * t * 4},
    "gemma2": lambda t: {"attention_kv": 2 * 1 * 2 * 8 * t * 4, "sliding_window_kv": 2 * 1 * 2 * 8 * min(t, 8) * 4},
    "starcoder2_window": lambda t: {"sliding_window_kv": 2 * 2 * 2 * 8 * min(t, 8) * 4},
    "qwen3": lambda t: {"attention_kv": 2 * 2 * 2 * 8 * t * 4},
    "gemma": lambda t: {"attention_kv": 2 * 2 * 2 * 8 * t * 4},
    "olmo": lambda t: {"attention_kv": 2 * 2 * 4 * 8 * t * 4},
    "granite": lambda t: {"attention_kv": 2 * 2 * 4 * 8 * t * 4},
    # window (E + 2·G·N)·d_conv = 72·4 per layer; state H·P·N = 64·4 per layer
    "mamba2": lambda t: {"convolution": 2 * 72 * 4 * 4, "recurrent": 2 * 64 * 4 * 4},
    "falcon_mamba": lambda t: {"convolution": 2 * 64 * 4 * 4, "recurrent": 2 * 64 * 4 * 4},
}


@pytest.fixture(scope="module")
def more_results():
    from seqlab.layers.pretrained import offline_and_quiet
    from seqlab.studies.decode_model import model_facts

    out = {}
    with offline_and_quiet():
        for name, make in MORE.items():
            config = make()
            config._attn_implementation = "eager"
            torch.manual_seed(0)
            model = transformers.AutoModelForCausalLM.from_config(config, dtype=torch.float32).eval()
            try:
                out[name] = run_model_decode(ModelDecodeConfig(name, positions=POSITIONS, time=False,
                                                               span_lengths=None),
                                             loaded=(model, model_facts(model, name)))
            except AssertionError as error:  # one family's failure is its own test's, not every test's
                out[name] = error
    return out


#: The work counter stops on Mamba-2's and Falcon-Mamba's parameter views made under no_grad ("Expected gradient function to be
#: set": issue 35, item 4, the counter's own fix); its bytes and closed forms are checked once it runs.
_COUNTER_STOPS = pytest.mark.xfail(raises=AssertionError, strict=False,
                                   reason="work counter on no_grad parameter views (issue 35 item 4)")


@pytest.mark.parametrize("name", [pytest.param(n, marks=_COUNTER_STOPS) if n in ("mamba2", "falcon_mamba") else n
                                  for n in sorted(MORE)])
def test_more_families_bytes_and_work_equal_their_closed_forms(more_results, name):
    """Measured bytes == the hand formula == the config's closed form at t = 4, 8, 16; counted multiplications ==
    the closed form at each step, dynamic and static caches alike."""
    result = more_results[name]
    if isinstance(result, BaseException):
        raise result
    for step in result.steps:
        if step.cache == "dynamic":
            assert dict(step.state.by_kind) == MORE_BYTES[name](step.t), (name, step.t)
        assert dict(step.closed_bytes) == dict(step.state.by_kind), (name, step.cache, step.t)
        assert step.closed_form == step.multiplications, (name, step.cache, step.t)
    assert result.counts_match is True and result.bytes_match is True


@pytest.mark.parametrize("name", ["phi3", "gpt_neox", "opt_projected", "falcon_multi_query", "gptj", "gemma2",
                                  "starcoder2_window", "qwen3", "gemma", "olmo", "granite"])
def test_kaplan_gap_is_explained_term_by_term(more_results, name):
    """count − Kaplan = q·Kᵀ and α·V over every layer's keys − Kaplan's L·t·d_attn + a tied output layer − the 1-D
    weights, exactly; the sentence states each term."""
    from seqlab.render.decode_model import difference_sentences

    result = more_results[name]
    last = [s for s in result.steps if s.cache == "dynamic"][-1]
    terms = last.kaplan_terms
    assert terms is not None, name
    gap = last.multiplications - last.kaplan
    assert gap == (terms["attention_products"] - terms["kaplan_attention"] + terms["output_outside_parameters"]
                   - terms["vector_parameters"])
    sentence = next(line for line in difference_sentences(result) if line.startswith("Kaplan"))
    assert f"{abs(gap):,}" in sentence and f"{terms['keys']:,} keys" in sentence
    assert ("more than counted" in sentence) == (gap < 0)


def test_kaplan_gap_left_unexplained_when_the_terms_do_not_add_up(more_results):
    from dataclasses import replace

    from seqlab.render.decode_model import difference_sentences

    result = more_results["phi3"]
    steps = tuple(replace(s, kaplan_terms=None) for s in result.steps)
    lines = difference_sentences(replace(result, steps=steps))
    assert any("left unexplained" in line for line in lines)


def test_a_cache_of_repeated_heads_is_named_with_its_ratio():
    """A cache that holds its H_kv key/value heads repeated to all H query heads measures the grouped-query closed
    form × H/H_kv, and the sentence says so. Falcon's newer layout (grouped keys) now caches its own 2 heads, equal
    to the closed form; the repeated cache is that result's bytes doubled."""
    from dataclasses import replace
    from seqlab.layers.pretrained import offline_and_quiet
    from seqlab.render.decode_model import difference_sentences
    from seqlab.studies.decode_model import model_facts

    config = transformers.FalconConfig(vocab_size=V, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                                       new_decoder_architecture=True, num_kv_heads=2)
    config._attn_implementation = "eager"
    with offline_and_quiet():
        model = transformers.AutoModelForCausalLM.from_config(config, dtype=torch.float32).eval()
        result = run_model_decode(ModelDecodeConfig("falcon", positions=POSITIONS, time=False, span_lengths=None),
                                  loaded=(model, model_facts(model, "falcon")))
    last = [s for s in result.steps if s.cache == "dynamic"][-1]
    assert last.state.by_kind["attention_kv"] == 2 * 2 * 2 * 8 * 16 * 4 == last.closed_bytes["attention_kv"]
    assert result.bytes_match is True and result.counts_match is True
    assert not any("repeated" in line for line in difference_sentences(result))
    doubled = replace(last.state, by_kind={"attention_kv": 2 * last.state.by_kind["attention_kv"]})
    repeated = replace(result, steps=tuple(replace(s, state=doubled) if s is last else s for s in result.steps))
    lines = difference_sentences(repeated)
    assert any("repeated to all 4 query heads, not its 2" in line and "2×" in line for line in lines)
    assert not any("not the one the closed forms describe" in line for line in lines)  # the ratio explains it


def test_an_expert_family_gets_bytes_from_its_cache_layers_and_no_work_closed_form():
    """Mixtral: a router picks experts per token (no work closed form); its config does not list its layers'
    kinds, so the bytes' closed form takes them from the cache's layer classes, and the output says so."""
    from seqlab.layers.pretrained import offline_and_quiet
    from seqlab.render.decode_model import difference_sentences
    from seqlab.studies.decode_model import model_facts

    config = transformers.MixtralConfig(**ATTENTION, num_key_value_heads=2, num_local_experts=4, num_experts_per_tok=2)
    config._attn_implementation = "eager"
    with offline_and_quiet():
        model = transformers.AutoModelForCausalLM.from_config(config, dtype=torch.float32).eval()
        result = run_model_decode(ModelDecodeConfig("mixtral", positions=POSITIONS, time=False, span_lengths=None),
                                  loaded=(model, model_facts(model, "mixtral")))
    assert [dict(s.closed_bytes) for s in result.steps if s.cache == "dynamic"] == [
        {"attention_kv": 2 * 2 * 2 * 8 * t * 4} for t in POSITIONS]
    assert result.bytes_match is True and result.bytes_kinds_from_cache is True
    assert all(s.closed_form is None for s in result.steps) and result.counts_match is None
    assert any("from the class of the cache's layer (DynamicLayer)" in line for line in difference_sentences(result))
