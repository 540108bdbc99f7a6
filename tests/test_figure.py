"""Figure 1 as fifteen measured boxes (L11): layers.transformer, studies.figure, render.figure, ``seqlab figure``.

The claim under test: of the fifteen boxes exactly three mix positions — the three attention boxes,
all-to-all, causal and reading the encoder — and the other twelve act on one row at a time. It is
measured, so it can fail: a feed-forward box that mixes makes the count four. Sizes are small (d_model
16, 2 heads, S = 6 source and T = 5 target tokens) so the file runs in seconds.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import re
from pathlib import Path

import pytest
import torch
from typer.testing import CliRunner

import seqlab.memory
from seqlab.cli import app
from seqlab.errors import SeqlabError
from seqlab.i18n import translator
from seqlab.layers.transformer import BOX_KEYS, Transformer, shift_right
from seqlab.render.figure import (
    MIXES_FILL,
    PLAIN_FILL,
    draw_figure,
    figure_table,
    lit_sentence,
    pattern_text,
    wrap_lines,
    write_figure,
)
from seqlab.measure.mixing import Band
from seqlab.render.json_output import to_jsonable
from seqlab.studies.figure import BOX_SPECS, FigureResult, check_figure_arguments, measure_boxes, measure_figure

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


@pytest.mark.parametrize(("replacement", "pattern", "band"), [(CumulativeSum(), "causal", None),
                                                              (Convolution(16), "band", Band(1, 1))])
def test_a_feed_forward_that_mixes_lights_a_fourth_box(small_model, replacement, pattern, band):
    model, source, target_in = small_model
    boxes = model.boxes()
    assert sum(box.mixes for box in measure_boxes(boxes, source, target_in, 12)) == 3
    boxes["encoder.feed_forward"] = replacement.eval()
    measured = measure_boxes(boxes, source, target_in, 12)
    assert sum(box.mixes for box in measured) == 4
    assert {box.key: box.pattern for box in measured if box.mixes} == {**ATTENTION, "encoder.feed_forward": pattern}
    feed_forward = next(box for box in measured if box.key == "encoder.feed_forward")
    assert feed_forward.band == band and feed_forward.dependencies[0].band == band  # ±1: j − 1 ≤ i ≤ j + 1
    if band is not None:  # the pattern is shown with its width, in both languages
        assert pattern_text(feed_forward.pattern, "en", feed_forward.band) == "band ±1, of width 3 (|i − j| ≤ 1)"
        assert pattern_text(feed_forward.pattern, "es", feed_forward.band) == "banda ±1, de anchura 3 (|i − j| ≤ 1)"
        result = FigureResult(4, 3, 16, 4, 0, (), measured)
        assert "Position-wise feed-forward (band ±1, of width 3 (|i − j| ≤ 1))" in lit_sentence(result, "en")
        assert "banda ±1, de anchura 3 (|i − j| ≤ 1)" in lit_sentence(result, "es")


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
    ((5, 5, 16, 2, 2**32), "seed", "[0, 4294967295]"),
    ((5, 5, 16, 0, 0), "heads", "heads must be an integer in [1, 16] dividing d_model = 16, received 0"),
    ((5, 5, 16, 32, 0), "heads", "heads must be an integer in [1, 16] dividing d_model = 16, received 32"),
    ((5, 5, 16, 3, 0), "heads", "expected a divisor of 16 in [1, 16]"),
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
        assert list(box) == ["key", "stack", "title", "lesson", "column", "row", "mixes", "pattern", "dependencies",
                             "band"]
        assert box["band"] is None  # Figure 1 has no band
        assert box["key"] == key and box["stack"] == key.split(".")[0] and box["column"] == (box["stack"] == "decoder")
        assert isinstance(box["mixes"], bool) and box["lesson"].startswith("Block 5")
        for dependency in box["dependencies"]:
            assert list(dependency) == ["input_name", "strength", "method", "other_sequence", "pattern", "mixes",
                                        "band"]
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
    for words in ("3 de 15 cajas mezclan posiciones", "Auto-atención multicabeza enmascarada", "todas con todas",
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
    (("--d-model", "30", "--heads", "4"), "--heads' / '--d-model",
     "expected an integer in [1, 30] that divides --d-model (30), received 4"),
    (("--length", "1"), "--length", "expected an integer in [2, 256], received 1"),
    (("--length", "ten"), "--length", "ten"),
    (("--d-model", "0"), "--d-model", "expected an integer in [1, 4096], received 0"),
    # every bad --heads states the whole accepted range, [1, d_model] and dividing it
    (("--heads", "0"), "--heads", "expected an integer in [1, 512] that divides --d-model (512), received 0"),
    (("--heads", "1000000000"), "--heads",
     "expected an integer in [1, 512] that divides --d-model (512), received 1000000000"),
    (("--heads", "x"), "--heads", "expected an integer in [1, 512] that divides --d-model (512), received 'x'"),
    (("--heads", "3"), "--heads", "expected an integer in [1, 512] that divides --d-model (512), received 3"),
    # only --d-model given: it is the one blamed, against the default --heads
    (("--d-model", "1"), "--d-model", "expected a multiple of --heads (8, its default) in [8, 4096], received 1"),
    (("--d-model", "7"), "--d-model", "expected a multiple of --heads (8, its default) in [8, 4096], received 7"),
    (("--seed", "-3"), "--seed", "expected an integer in [0, 4294967295], received -3"),
    (("--seed", "18446744073709551616"), "--seed",
     "expected an integer in [0, 4294967295], received 18446744073709551616"),
    (("--seed", "4294967296"), "--seed", "expected an integer in [0, 4294967295], received 4294967296"),
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


def test_the_largest_seed_runs(tmp_path):
    run = invoke("--out", str(tmp_path), "--json", "--seed", "4294967295", *SMALL)
    assert run.exit_code == 0, run.output
    assert json.loads(run.output)["seed"] == 4294967295


@pytest.fixture()
def no_work(monkeypatch):
    """Make any measurement fail: a bad --out must be refused before it."""
    def refuse(**_options):
        raise AssertionError("measured before --out was checked")

    monkeypatch.setattr("seqlab.studies.figure.measure_figure", refuse)


def _error_line(run) -> str:
    assert run.exit_code == 2 and "Traceback" not in run.output, run.output
    errors = [line for line in run.output.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1, run.output
    return errors[0]


def test_an_out_that_is_a_file_exits_2(tmp_path, no_work):
    blocker = tmp_path / "taken"
    blocker.write_text("x", encoding="utf-8")
    assert _error_line(invoke("--out", str(blocker), *SMALL)) == \
        f"Error: Invalid value for '--out': {str(blocker)!r} is a file, not a folder"
    assert _error_line(invoke("--out", str(blocker / "inside"), *SMALL)) == \
        f"Error: Invalid value for '--out': {str(blocker)!r} is a file, not a folder"  # checked, not tried


def test_an_unwritable_out_exits_2_before_any_work(tmp_path, monkeypatch, no_work):
    def refuse(*_args, **_options):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr("seqlab.cli.options.tempfile.NamedTemporaryFile", refuse)
    assert _error_line(invoke("--out", str(tmp_path), *SMALL)) == \
        f"Error: Invalid value for '--out': cannot write in {str(tmp_path)!r}: Permission denied"


@pytest.mark.skipif(not Path("/sys/kernel").is_dir(), reason="no /sys/kernel here")
def test_out_in_sysfs_exits_2_before_any_work(no_work):
    assert _error_line(invoke("--out", "/sys/kernel", *SMALL)) == \
        "Error: Invalid value for '--out': cannot write in '/sys/kernel': Permission denied"


@pytest.mark.parametrize("lang", ["en", "es"])
def test_box_names_are_whole_at_80_columns(tmp_path, lang):
    run = CliRunner().invoke(app, ["figure", "--out", str(tmp_path), "--lang", lang, *SMALL],
                             env={**CLI_ENV, "COLUMNS": "80"})
    assert run.exit_code == 0, run.output
    rows = [line for line in run.stdout.splitlines() if line.startswith("│")]
    assert len(rows) >= 15 and all(len(line) <= 80 for line in run.stdout.splitlines())
    tr = translator(lang)
    for spec in BOX_SPECS:  # e.g. "Encoder–decoder attention", "Auto-atención multicabeza enmascarada"
        assert any(tr(spec.title) in row for row in rows), tr(spec.title)
    assert "…" not in run.stdout


def test_the_table_is_a_rich_table_for_the_report(result):
    from rich.table import Table

    assert isinstance(figure_table(result).renderables[0], Table)  # seqlab report reads its cells


def test_one_head_is_singular(tmp_path):
    run = invoke("--out", str(tmp_path), "--lang", "en", "--length", "4", "--d-model", "8", "--heads", "1")
    assert run.exit_code == 0, run.output
    assert "1 head, seed 0" in run.stdout and "1 heads" not in run.stdout


def test_wrapping_leaves_no_word_alone_on_the_last_line():
    assert wrap_lines("d_model = 512, 8 cabezas, semilla 0.", 34) == ["d_model = 512, 8 cabezas,", "semilla 0."]
    assert wrap_lines("one two three", 40) == ["one two three"]


@pytest.mark.parametrize("lang", ["en", "es"])
def test_the_legend_of_the_paper_sizes_keeps_the_seed_with_its_number(result, lang):
    paper = dataclasses.replace(result, T_source=10, T_target=10, d_model=512, heads=8, seed=0)
    texts = [text.get_text() for text in draw_figure(paper, lang).axes[0].texts]
    (sizes,) = [text for text in texts if text.startswith("S = 10")]
    assert all(len(line.split()) > 1 for line in sizes.splitlines()), sizes
    assert sizes.splitlines()[-1].endswith(("seed 0.", "semilla 0."))


@pytest.mark.parametrize("lang", ["en", "es"])
def test_the_n_labels_stand_clear_of_every_line(result, lang):
    figure = draw_figure(result, lang)
    ax, renderer = figure.axes[0], figure.canvas.get_renderer()
    labels = [text for text in ax.texts if text.get_text() == "N×"]
    assert len(labels) == 2
    for label in labels:
        clearance = label.get_window_extent(renderer).padded(6)  # 6 px all round
        for line in ax.lines:
            assert not line.get_path().transformed(line.get_transform()).intersects_bbox(clearance, filled=False)


def test_a_size_too_large_for_memory_exits_2(monkeypatch, tmp_path):
    monkeypatch.setattr(seqlab.memory, "available_memory_bytes", lambda: 1024**2)
    run = invoke("--out", str(tmp_path), "--length", "64", "--d-model", "256")
    assert run.exit_code == 2, run.output
    errors = [line for line in run.output.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1 and "would need about" in errors[0]


@pytest.mark.parametrize("lang", ["en", "es"])
def test_the_legend_writes_n_times_without_a_stray_space(result, lang):
    texts = "\n".join(text.get_text() for text in draw_figure(result, lang).axes[0].texts)
    assert "N×:" in texts and "N× :" not in texts
