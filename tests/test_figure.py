"""Figure 1 as fifteen measured boxes (L11): layers.transformer, studies.figure, render.figure, ``seqlab figure``.

The claim under test: of the fifteen boxes exactly three mix positions — the three attention boxes,
all-to-all, causal and reading the encoder — and the other twelve act on one row at a time. It is
measured, so it can fail: a feed-forward box that mixes makes the count four. Sizes are small (d_model
16, 2 heads, S = 6 source and T = 5 target tokens) so the file runs in seconds.
"""

from __future__ import annotations

import itertools
import json
import re

import pytest
import torch
from typer.testing import CliRunner

import seqlab.memory
from seqlab.cli import app
from seqlab.errors import SeqlabError
from seqlab.layers.transformer import BOX_KEYS, Transformer, compose, shift_right, sinusoidal_encoding
from seqlab.render.figure import MIXES_FILL, PLAIN_FILL, draw_figure, write_figure
from seqlab.render.json_output import to_jsonable
from seqlab.studies.figure import check_figure_arguments, measure_boxes, measure_figure

CLI_ENV = {"COLUMNS": "200", "NO_COLOR": "1", "FORCE_COLOR": None, "TTY_COMPATIBLE": None}
ATTENTION = {"encoder.self_attention": "all-to-all", "decoder.masked_self_attention": "causal",
             "decoder.cross_attention": "cross"}
SMALL = ("--length", "4", "--d-model", "16", "--heads", "2")


@pytest.fixture(scope="module")
def result():
    return measure_figure(T_source=6, T_target=5, d_model=16, heads=2, seed=0)


@pytest.fixture(scope="module")
def small_model():
    """A float64 model with ids (1, 6) source and (1, 5) shifted target, V = 12 (11 is the start id)."""
    torch.manual_seed(1)
    model = Transformer(vocabulary=12, d_model=16, heads=2, max_length=8, dtype=torch.float64).eval()
    source = torch.tensor([[3, 1, 4, 1, 5, 9]])
    target_in = shift_right(torch.tensor([[2, 6, 5, 3, 5]]), 11)
    return model, source, target_in


# --- The measurement ------------------------------------------------------------------------------

def test_exactly_the_three_attention_boxes_mix(result):
    assert [box.key for box in result.boxes] == list(BOX_KEYS)
    assert result.lit == tuple(ATTENTION)
    assert {box.key: box.pattern for box in result.boxes if box.mixes} == ATTENTION
    others = [box for box in result.boxes if box.key not in ATTENTION]
    assert len(others) == 12 and all(box.pattern == "per-row" and not box.mixes for box in others)


def test_each_input_is_measured_where_it_comes_from(result):
    boxes = {box.key: box for box in result.boxes}
    cross = {d.input_name: d for d in boxes["decoder.cross_attention"].dependencies}
    assert cross["memory"].other_sequence and cross["memory"].pattern == "cross"
    assert len(cross["memory"].strength) == 5 and len(cross["memory"].strength[0]) == 6  # T x S
    assert not cross["x"].other_sequence and cross["x"].pattern == "per-row"  # a query reads only its own row
    assert [d.input_name for d in boxes["encoder.add_norm_1"].dependencies] == ["residual", "sublayer"]
    assert all(d.method == "token-replacement" for d in boxes["decoder.output_embedding"].dependencies)
    masked = boxes["decoder.masked_self_attention"].dependencies[0].strength
    assert all((value != 0.0) == (i <= j) for j, row in enumerate(masked) for i, value in enumerate(row))
    assert [(box.column, box.row) for box in result.boxes] == [(0, r) for r in range(6)] + [(1, r) for r in range(9)]


class CumulativeSum(torch.nn.Module):
    def forward(self, x):
        return x.cumsum(dim=1)


class Convolution(torch.nn.Module):
    """A 1-D convolution over positions, kernel 3: row j reads rows j - 1, j, j + 1."""

    def __init__(self, d_model: int) -> None:
        super().__init__()
        self.conv = torch.nn.Conv1d(d_model, d_model, kernel_size=3, padding=1, dtype=torch.float64)

    def forward(self, x):
        return self.conv(x.transpose(1, 2)).transpose(1, 2)


@pytest.mark.parametrize(("replacement", "pattern"), [(CumulativeSum(), "causal"), (Convolution(16), "partial")])
def test_a_feed_forward_that_mixes_lights_a_fourth_box(small_model, replacement, pattern):
    model, source, target_in = small_model
    boxes = model.boxes()
    assert sum(box.mixes for box in measure_boxes(boxes, source, target_in, 12)) == 3
    boxes["encoder.feed_forward"] = replacement.eval()
    measured = measure_boxes(boxes, source, target_in, 12)
    assert sum(box.mixes for box in measured) == 4
    assert {box.key: box.pattern for box in measured if box.mixes} == {**ATTENTION, "encoder.feed_forward": pattern}


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_the_composed_boxes_give_the_full_forward(dtype):
    # float32 without grad: PyTorch's encoder layer takes its fused fast path, another implementation
    torch.manual_seed(2)
    model = Transformer(vocabulary=20, d_model=16, heads=4, max_length=8, dtype=dtype).eval()
    source, target_in = torch.randint(0, 20, (1, 7)), shift_right(torch.randint(0, 19, (1, 6)), 19)
    with torch.no_grad():
        full = model(source, target_in)  # (1, 6, 20)
        composed, inputs = compose(model.boxes(), source, target_in)
    assert full.shape == (1, 6, 20) and list(inputs) == list(BOX_KEYS)
    tolerance = 1e-12 if dtype == torch.float64 else 1e-6
    torch.testing.assert_close(composed, full, atol=tolerance, rtol=0)
    torch.testing.assert_close(full.sum(-1), torch.ones(1, 6, dtype=dtype))  # each row a distribution


def test_sinusoids_and_the_shift():
    pe = sinusoidal_encoding(5, 8, torch.float64)
    # PE(3, 2i + 1) = cos(3 / 10000^(2i/8)); i = 1: cos(3 / 10)
    assert pe[3, 3].item() == pytest.approx(torch.cos(torch.tensor(0.3, dtype=torch.float64)).item())
    assert sinusoidal_encoding(2, 5).shape == (2, 5)  # an odd width keeps its last sine
    assert shift_right(torch.tensor([[7, 8, 9]]), 1).tolist() == [[1, 7, 8]]


def test_a_given_text_gives_the_same_verdict():
    text = "Una frase corta para probar que el texto no cambia el veredicto de las quince cajas."
    assert measure_figure(T_source=5, T_target=4, d_model=8, heads=2, text=text).lit == tuple(ATTENTION)
    with pytest.raises(SeqlabError, match="expected at least T_source"):
        measure_figure(T_source=50, T_target=50, d_model=8, heads=2, text="muy corta")


@pytest.mark.parametrize(("arguments", "parameter", "shown"), [
    ((1, 5, 16, 2, 0), "T_source", "1"),
    ((5, 257, 16, 2, 0), "T_target", "257"),
    ((5, 5, 30, 4, 0), "heads", "30"),
    ((5, 5, 0, 1, 0), "d_model", "0"),
    ((5, 5, 16, 2, -1), "seed", "-1"),
])
def test_bad_arguments_are_refused_by_name(arguments, parameter, shown):
    with pytest.raises(SeqlabError) as error:
        check_figure_arguments(*arguments)
    assert error.value.parameter == parameter and shown in str(error.value)


def test_sizes_that_do_not_fit_are_refused_before_allocating(monkeypatch):
    monkeypatch.setattr(seqlab.memory, "available_memory_bytes", lambda: 1024**2)
    with pytest.raises(SeqlabError, match="would need about"):
        measure_figure(T_source=64, T_target=64, d_model=256, heads=8)


# --- JSON, SVG and the drawing --------------------------------------------------------------------

def test_the_json_has_the_web_lab_shape(result):
    data = json.loads(json.dumps(to_jsonable(result)))
    assert list(data) == ["T_source", "T_target", "d_model", "heads", "seed", "lit", "boxes"]
    assert data["lit"] == list(ATTENTION) and len(data["boxes"]) == 15
    for box, key in zip(data["boxes"], BOX_KEYS):
        assert list(box) == ["key", "stack", "title", "lesson", "column", "row", "mixes", "pattern", "dependencies"]
        assert box["key"] == key and box["stack"] == key.split(".")[0] and box["column"] == (box["stack"] == "decoder")
        assert isinstance(box["mixes"], bool) and box["lesson"].startswith("Block 5")
        for dependency in box["dependencies"]:
            assert list(dependency) == ["input_name", "strength", "method", "other_sequence", "pattern", "mixes"]
            assert all(isinstance(value, float) for row in dependency["strength"] for value in row)


def _box_fills(svg: str) -> dict[str, str]:
    pattern = r'<g id="box-([\w.]+)">\s*<path d="[^"]*"\s*(?:clip-path="[^"]*"\s*)?style="fill: (#[0-9a-f]{6})'
    return dict(re.findall(pattern, svg))


def test_the_svg_names_fifteen_boxes_and_highlights_three(result, tmp_path):
    png, svg = write_figure(result, tmp_path / "figure1", "en")
    assert png.stat().st_size > 10_000
    fills = _box_fills(svg.read_text(encoding="utf-8"))
    assert list(fills) == list(BOX_KEYS)
    assert {key for key, fill in fills.items() if fill == MIXES_FILL} == set(ATTENTION)
    assert sum(fill == PLAIN_FILL for fill in fills.values()) == 12


@pytest.mark.parametrize("lang", ["en", "es"])
def test_nothing_in_the_drawing_overlaps(result, lang):
    figure = draw_figure(result, lang)
    ax, renderer = figure.axes[0], figure.canvas.get_renderer()
    texts = [text for text in ax.texts if text.get_text().strip()]
    extents = [text.get_window_extent(renderer) for text in texts]
    for (a, extent_a), (b, extent_b) in itertools.combinations(zip(texts, extents), 2):
        assert not extent_a.overlaps(extent_b), (a.get_text(), b.get_text())
    for text, extent in zip(texts, extents):
        assert not any(extent.overlaps(image.get_window_extent(renderer)) for image in ax.images), text.get_text()
        for patch in ax.patches:  # a text sits inside a patch or clear of it
            box = patch.get_window_extent(renderer)
            inside = box.x0 <= extent.x0 and extent.x1 <= box.x1 and box.y0 <= extent.y0 and extent.y1 <= box.y1
            assert inside or not extent.overlaps(box), (text.get_text(), patch.get_gid())
        for line in ax.lines:
            assert not line.get_path().transformed(line.get_transform()).intersects_bbox(extent, filled=False), \
                text.get_text()


# --- The command ------------------------------------------------------------------------------------

def invoke(*args: str):
    return CliRunner().invoke(app, ["figure", *args], env=CLI_ENV)


def test_the_command_prints_the_table_and_writes_three_files(tmp_path):
    run = invoke("--out", str(tmp_path), "--lang", "en", *SMALL)
    assert run.exit_code == 0, run.output
    assert "3 of 15 boxes mix positions: Multi-head self-attention (all-to-all), Masked multi-head self-attention " \
           "(causal), Encoder–decoder attention (from the encoder)." in run.stdout
    assert run.stdout.count("Add & norm") == 5 and "Block 5 · Lesson 5" in run.stdout
    assert {path.name for path in tmp_path.iterdir()} == {"figure1.svg", "figure1.png", "figure1.json"}
    assert json.loads((tmp_path / "figure1.json").read_text(encoding="utf-8"))["lit"] == list(ATTENTION)
    assert f"Wrote {tmp_path / 'figure1.svg'}" in run.stderr


def test_the_command_speaks_spanish(tmp_path):
    run = invoke("--out", str(tmp_path), "--lang", "es", *SMALL)
    assert run.exit_code == 0, run.output
    for words in ("3 de 15 cajas mezclan posiciones", "Autoatención multicabeza enmascarada", "todas con todas",
                  "Suma y normalización", "Bloque 5 · Lección 2", "Patrón medido", "Archivo escrito"):
        assert words in run.output, words
    assert "boxes mix" not in run.output


def test_json_goes_to_stdout(tmp_path):
    run = invoke("--out", str(tmp_path), "--json", *SMALL)
    assert run.exit_code == 0, run.output
    data = json.loads(run.output)  # stdout and stderr together: nothing but the JSON
    assert (tmp_path / "figure1.svg").is_file()
    assert (data["T_source"], data["T_target"], data["d_model"], data["heads"]) == (4, 4, 16, 2)
    assert [box["key"] for box in data["boxes"] if box["mixes"]] == data["lit"] == list(ATTENTION)


@pytest.mark.parametrize(("args", "option", "shown"), [
    (("--d-model", "30", "--heads", "4"), "--heads", "30"),
    (("--length", "1"), "--length", "1"),
    (("--length", "ten"), "--length", "ten"),
    (("--d-model", "0"), "--d-model", "0"),
    (("--heads", "0"), "--heads", "0"),
    (("--seed", "-3"), "--seed", "-3"),
    (("--lang", "fr"), "--lang", "fr"),
])
def test_bad_input_exits_2_with_one_line(args, option, shown, tmp_path):
    run = invoke("--out", str(tmp_path), *args)
    assert run.exit_code == 2, run.output
    assert "Traceback" not in run.output
    errors = [line for line in run.output.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1 and errors[0].startswith(f"Error: Invalid value for '{option}'"), run.output
    assert shown in errors[0]
    assert list(tmp_path.iterdir()) == []  # refused before anything was written


def test_an_out_that_is_a_file_exits_2(tmp_path):
    blocker = tmp_path / "taken"
    blocker.write_text("x", encoding="utf-8")
    run = invoke("--out", str(blocker), *SMALL)
    assert run.exit_code == 2 and "Traceback" not in run.output
    assert [line for line in run.output.splitlines() if line.startswith("Error:")][0].startswith(
        "Error: Invalid value for '--out'")


def test_a_size_too_large_for_memory_exits_2(monkeypatch, tmp_path):
    monkeypatch.setattr(seqlab.memory, "available_memory_bytes", lambda: 1024**2)
    run = invoke("--out", str(tmp_path), "--length", "64", "--d-model", "256")
    assert run.exit_code == 2, run.output
    errors = [line for line in run.output.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1 and "would need about" in errors[0]
