"""Every command's output reads at 80 columns, in English and in Spanish (issue 37, item 4).

Each registered command (``seqlab.cli.app``) has a case here, or the test that lists them fails: a new
command cannot escape. A case runs the command in-process at small options on an 80-column, colourless
console (what Rich uses when the output is not a terminal), or, where the command trains or serves, renders
its tables from a tiny result. While it prints, every Rich table that is laid out is recorded with the widths
Rich gave its columns (``Table._render`` receives them), and each cell, heading included, is read back
structurally: each of its lines (the text between its own newlines) is wrapped at its column's content width
exactly as Rich wraps it, and the physical lines counted. The check: no line of any cell takes more than
:data:`MOST` physical lines, and no cell or heading is cut with an ellipsis. Commands that print lines,
not tables (check, quiz, report, serve), are held to lines of at most 80 columns.
"""

from __future__ import annotations

import contextlib
import io
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pytest
import torch
from rich.console import Console
from rich.table import Table
from rich.text import Text

WIDTH = 80
MOST = 2
ENV = {"COLUMNS": str(WIDTH), "NO_COLOR": "1", "FORCE_COLOR": None, "TTY_COMPATIBLE": None}
LANGS = ("en", "es")


@dataclass(frozen=True)
class Cell:
    """One cell as printed: its table's title, column heading, row (-1: the heading), and per line of its
    text the physical lines that line took, with the printed text."""

    table: str
    column: str
    row: int
    lines: tuple[int, ...]
    printed: tuple[str, ...]

    @property
    def worst(self) -> int:
        return max(self.lines, default=1)


def _plain(value) -> str:
    return value.plain if isinstance(value, Text) else str(value)


def _paragraphs(console: Console, cell) -> list:
    if isinstance(cell, str):
        cell = console.render_str(cell, highlight=False)
    return list(cell.split("\n")) if isinstance(cell, Text) else [cell]


@contextlib.contextmanager
def recorded() -> Iterator[list[Cell]]:
    """Every cell of every Rich table laid out inside the block, read back at the widths Rich chose."""
    cells: list[Cell] = []
    original = Table._render

    def _render(self, console, options, widths):
        for index, column in enumerate(self.columns):
            content = widths[index] - self._get_padding_width(index)
            render = options.update(width=max(content, 1), justify=column.justify, no_wrap=column.no_wrap,
                                    overflow=column.overflow, height=None, highlight=column.highlight)
            for row, cell in enumerate((column.header, *column._cells), start=-1):
                if row == -1 and not self.show_header:
                    continue
                counts, printed = [], []
                for paragraph in _paragraphs(console, cell):
                    lines = console.render_lines(paragraph, render, pad=False)
                    counts.append(len(lines))
                    printed += ["".join(segment.text for segment in line) for line in lines]
                cells.append(Cell(_plain(self.title or ""), _plain(column.header), row, tuple(counts),
                                  tuple(printed)))
        yield from original(self, console, options, widths)

    Table._render = _render
    try:
        yield cells
    finally:
        Table._render = original


def assert_reads_at_80(cells: list[Cell], text: str) -> int:
    """No line of a cell wraps to more than MOST lines, nothing is cut, no printed line is over 80; the worst."""
    assert all(len(line) <= WIDTH for line in text.splitlines()), text
    for cell in cells:
        assert cell.worst <= MOST, (f"a line of the cell in row {cell.row} under {cell.column!r} of "
                                    f"{cell.table!r} wraps to {cell.worst} lines:\n" + "\n".join(cell.printed)
                                    + "\n\n" + text)
        assert not any("…" in line for line in cell.printed), f"cut in {cell.table!r}:\n" + "\n".join(cell.printed)
    return max((cell.worst for cell in cells), default=0)


def printed(renderable, width: int = WIDTH) -> tuple[str, list[Cell]]:
    with recorded() as cells:
        console = Console(width=width, file=io.StringIO(), color_system=None, legacy_windows=False)
        console.print(renderable)
    return console.file.getvalue(), cells


# --- The check itself can fail ---------------------------------------------------------------------------

def _long_table(cls):
    table = cls("Measurement", "Recurrence", "Attention", "LSTM", "GRU", title="wide")
    for name in ("Span: operations in a row", "Gate bypass (PyTorch's notation)"):
        table.add_row(name, "160", "4 (the call: Q Kᵀ, ÷√d_k, softmax, A V)", "f_t ⊙ c_{t−1} (c_t = f_t ⊙ "
                      "c_{t−1} + i_t ⊙ g_t)", "z_t ⊙ h_{t−1} (h_t = (1 − z_t) ⊙ n_t + z_t ⊙ h_{t−1})")
    return table


def test_the_check_catches_a_plain_rich_table_wrapping_cells():
    text, cells = printed(_long_table(Table))
    assert max(cell.worst for cell in cells) > MOST
    with pytest.raises(AssertionError, match="wraps to"):
        assert_reads_at_80(cells, text)


def test_the_check_catches_a_cut_heading():
    table = Table("multiplications counted", "dinámica", title="cut")
    table.columns[0].overflow = table.columns[1].overflow = "ellipsis"
    table.columns[0].no_wrap = table.columns[1].no_wrap = True
    table.add_row("x" * 50, "y" * 50)
    text, cells = printed(table)
    with pytest.raises(AssertionError, match="cut"):
        assert_reads_at_80(cells, text)


def test_the_check_counts_each_line_of_a_cell_on_its_own():
    table = Table("name", "two lines")
    table.add_row("a", "one line that fits\nand another")
    _, cells = printed(table)
    assert [cell.lines for cell in cells if cell.column == "two lines" and cell.row == 0] == [(1, 1)]


def test_a_fitted_table_keeps_every_cell_within_two_lines():
    from seqlab.render.tables import FittedTable

    text, cells = printed(_long_table(FittedTable))
    assert assert_reads_at_80(cells, text) <= MOST
    for word in ("z_t", "g_t)", "Gate bypass"):
        assert word in text
    text, cells = printed(_long_table(FittedTable), 300)  # where it fits: one box, every cell on one line
    assert max(cell.worst for cell in cells) == 1 and text.count("Gate bypass") == 1


def test_a_two_column_table_too_wide_even_so_becomes_records_with_every_value():
    from seqlab.render.tables import FittedTable

    table = FittedTable("Medida", "Valor", title="records")
    rows = [("Operaciones que el motor de caminos rechazó (todo con todo: los caminos son cotas)", "ninguna"),
            ("Comprobación de los caminos por perturbación (float64)",
             "coincide con la traza (diferencias finitas, en un lote) y con la segunda ruta"),
            ("Camino de la señal de la posición 1 a T", "ausente: LSTM no declara ningún factor de transición")]
    for row in rows:
        table.add_row(*row)
    text, cells = printed(table)
    assert_reads_at_80(cells, text)
    flat = " ".join(text.replace("│", " ").split())
    for name, value in rows:
        assert f"{name} {value}" in flat  # each value right under its name


# --- Every command ---------------------------------------------------------------------------------------

def _cli(*args: str) -> Callable[[str], tuple[str, list[Cell]]]:
    def run(lang: str) -> tuple[str, list[Cell]]:
        from typer.testing import CliRunner

        from seqlab.cli import app

        with recorded() as cells:
            result = CliRunner().invoke(app, [*args, "--lang", lang], env=ENV)
        assert result.exit_code == 0, result.output
        return result.output, cells
    return run


def _rendered(make: Callable[[str], object]) -> Callable[[str], tuple[str, list[Cell]]]:
    return lambda lang: printed(make(lang))


@pytest.fixture(scope="module")
def factory_file(tmp_path_factory) -> str:
    path = tmp_path_factory.mktemp("layers") / "mine.py"
    path.write_text("import torch\n\n\ndef make(d):\n    return torch.nn.LSTM(d, d, batch_first=True)\n\n\n"
                    "def attention(d):\n    return torch.nn.TransformerEncoderLayer(d, 2, 2 * d, batch_first=True)\n")
    return str(path)


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory) -> str:
    transformers = pytest.importorskip("transformers")
    from seqlab.layers.pretrained import offline_and_quiet

    folder = tmp_path_factory.mktemp("gpt2")
    with offline_and_quiet():
        torch.manual_seed(0)
        config = transformers.GPT2Config(vocab_size=64, n_positions=64, n_embd=32, n_layer=2, n_head=4,
                                         bos_token_id=0, eos_token_id=1, pad_token_id=1)
        transformers.AutoModelForCausalLM.from_config(config).save_pretrained(folder)
    return str(folder)


def _learn(lang: str):
    from seqlab.learn.training import TrainSettings
    from seqlab.render.learn import render_learn
    from seqlab.studies.learn import LearnConfig, run_learn

    result = run_learn(LearnConfig(tasks=("recall", "mqar"), models=("elman", "attention", "selective_recurrence"),
                                   lengths=(6,), pairs=(1, 2), widths=(4,), seeds=1, rates=(1e-2,),
                                   settings=TrainSettings(steps=3, test_size=16, validation_size=16)))
    return render_learn(result, lang)


def _shipped_zoo(lang: str):
    """The whole shipped catalogue (every family of every kind), as ``seqlab zoo`` shows it."""
    from seqlab.render.zoo import zoo_table
    from seqlab.studies.zoo import shipped_catalogue

    return zoo_table(shipped_catalogue(), lang)


def _lines_only(*args: str) -> Callable[[str], tuple[str, list[Cell]]]:
    """A command that prints lines, not tables: it must lay out no table at all."""
    run = _cli(*args)

    def checked(lang: str) -> tuple[str, list[Cell]]:
        text, cells = run(lang)
        assert cells == [], f"{args[0]} now prints a table: give it a case of its own"
        return text, cells
    return checked


def _quiz_first_question(lang: str) -> tuple[str, list[Cell]]:
    from typer.testing import CliRunner

    from seqlab.cli import app

    with recorded() as cells:
        result = CliRunner().invoke(app, ["quiz", "--lang", lang], input="", env=ENV)
    assert result.exit_code in (0, 1), result.output
    assert cells == [], "quiz now prints a table: give it a case of its own"
    return result.output, cells


def _cases(factory_file: str, checkpoint: Callable[[], str]) -> dict[str, list[Callable]]:
    """Every command's cases: each a function of the language giving the printed text and its cells."""
    return {
        "compare": [_cli("compare", "--tokens", "40", "--d-model", "16", "--no-time"),
                    _cli("compare", "--tokens", "40", "--d-model", "16", "--no-time", "--detailed")],
        "table1": [_cli("table1", "--lengths", "8,16,32", "--d-model", "8,12"),
                   _cli("table1", "--modern", "--lengths", "8,12,16", "--long-lengths", "8,12,16", "--d-model", "4",
                        "--window", "2", "--chunk", "2")],
        "profile": [_cli("profile", f"{factory_file}:make", "--seq-len", "5", "--d-model", "6"),
                    _cli("profile", f"{factory_file}:attention", "--seq-len", "6", "--d-model", "4")],
        "bench": [_cli("bench", "--lengths", "4,8", "--d-model", "8", "--threads", "1", "--min-run-time", "0.001",
                       "--machines", "rnn,sdpa")],
        "learn": [_rendered(_learn)],
        "quiz": [_quiz_first_question],
        "model": [lambda lang: _cli("model", "--max-tokens", "16", "--mixing-tokens", "4")(lang)],
        "figure": [_cli("figure", "--length", "3", "--d-model", "4", "--heads", "2")],
        "zoo": [_cli("zoo", "--families", "gpt2,mamba"), _rendered(_shipped_zoo)],
        "check": [_lines_only("check", "--only", "L5,L6,L9"), _lines_only("check", "--list")],
        "serve": [],  # a server: it prints one line (its address) and no table; tested in test_web_*
        "report": [],  # writes HTML (and a PDF): its terminal part is one line per file written
        "decode": [_cli("decode", "--positions", "1,4", "--d-model", "4", "--no-time"),
                   lambda lang: _cli("decode", "--model", checkpoint(), "--positions", "4,8,16", "--no-time")(lang)],
    }


def _registered() -> set[str]:
    from seqlab.cli import app

    return {command.name or command.callback.__name__ for command in app.registered_commands}


#: Commands whose only output is a line or two about files or an address (their cases list is empty).
NO_TERMINAL_OUTPUT = {"serve", "report"}


def test_every_registered_command_has_a_case():
    cases = _cases("f.py", lambda: "")
    assert set(cases) == _registered(), "a command without an 80-column case (or a case for no command)"
    assert {name for name, runs in cases.items() if not runs} == NO_TERMINAL_OUTPUT


def _case_ids() -> list[tuple[str, int]]:
    return [(name, index) for name, runs in _cases("f.py", lambda: "").items() for index in range(len(runs))]


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize(("command", "index"), _case_ids(), ids=lambda v: str(v))
def test_every_command_reads_at_80_columns(command, index, lang, factory_file, request, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # figure and model write their files into the working folder
    if command == "model":
        pytest.importorskip("transformers")
    if command == "zoo":
        request.getfixturevalue("families_measured_once")
    if command in ("model", "decode"):
        request.getfixturevalue("model_measured_once")  # decode --model's checkpoint in two languages: measured once
    case = _cases(factory_file, lambda: request.getfixturevalue("checkpoint"))[command][index]
    text, cells = case(lang)
    assert_reads_at_80(cells, text)
    if command not in ("check", "quiz"):
        assert cells, f"{command} laid out no table"


# --- Figures and the report's page ------------------------------------------------------------------------

def test_the_figure_check_catches_a_legend_over_lines_and_a_label_over_the_title():
    from seqlab.render.figures import crowded_texts, new_figure, tidy_texts

    def crowded():
        figure = new_figure(figsize=(4.0, 2.6), layout="constrained")
        ax = figure.subplots()
        for slope in (1, 2):
            ax.plot([0, 1, 2, 3], [slope * x for x in range(4)], label=f"a machine of slope {slope}")
        ax.legend(loc="center")
        ax.set_ylabel("seconds per new token (median, IQR bars), measured at each position")
        figure.suptitle("A title long enough to run past both edges of a figure this narrow, in any language")
        return figure

    found = crowded_texts(crowded())
    assert any(item.startswith("legend over the line") for item in found), found
    assert any(item.startswith(("past the edge", "overlap")) for item in found), found
    figure = crowded()
    figure.axes[0].get_legend().remove()
    figure.legend(loc="outside lower center")
    assert crowded_texts(tidy_texts(figure)) == []  # wrapped to their room, the legend under the panel


@pytest.fixture(scope="module")
def bench_plot_result():
    from seqlab.studies.bench import BenchConfig, run_bench

    return run_bench(BenchConfig(lengths=(4, 8, 16), d_models=(8,), threads=(1,), min_run_time=0.001, min_samples=1,
                                 matmul_size=32, chain_links=4))


@pytest.fixture(scope="module")
def decode_plot_result():
    from seqlab.studies.decode import DecodeConfig, run_decode

    return run_decode(DecodeConfig(positions=(1, 4, 16), d_model=4, time=True, span_lengths=(4, 8)))


@pytest.mark.parametrize("lang", LANGS)
def test_bench_and_decode_figures_have_every_word_clear(bench_plot_result, decode_plot_result, lang):
    """The issue's two figures: bench's title was cut under its legend, decode's legend covered its lines and
    its y label ran into its title (Spanish labels are the longer)."""
    from seqlab.render.bench import plot_bench
    from seqlab.render.decode import decode_figure
    from seqlab.render.figures import crowded_texts
    from seqlab.render.print_size import legible

    for figure in (plot_bench(bench_plot_result, lang), decode_figure(decode_plot_result, lang)):
        assert crowded_texts(figure) == []
        assert figure.legends and not any(ax.get_legend() for ax in figure.axes)  # legends outside the panels
    # as the report prints them: every text raised to the print size, then wrapped again to its room
    from seqlab.render.figures import tidy_texts

    for figure in (plot_bench(bench_plot_result, lang), decode_figure(decode_plot_result, lang)):
        assert crowded_texts(tidy_texts(legible(figure), legends=False)) == []


@pytest.mark.parametrize(("text", "spans"), [
    ("1.710,0 / 80 bytes", ["1.710,0 / 80"]),
    ("1,710.0 / 80 bytes", ["1,710.0 / 80"]),
    ("reach 1,05e-12 at T = 20, 0,0461 at T = 40", ["1,05e-12", "20", "0,0461", "40"]),
    ("12,774,968,623,104 bytes; 2.50 times", ["12,774,968,623,104", "2.50"]),
])
def test_the_page_keeps_each_number_on_one_line(text, spans):
    from seqlab.render.report import nobreak

    html = str(nobreak(text))
    assert re.findall(r'<span class="nb">(.*?)</span>', html) == spans
    assert re.sub(r"<[^>]+>", "", html) == text  # only spans added, nothing else changed


def test_the_page_styles_the_no_break_spans():
    from seqlab.render.report import TEMPLATE

    assert ".nb { white-space: nowrap; }" in TEMPLATE
    assert TEMPLATE.count("| nobreak") >= 8  # cells, headings, captions, sentences, claims
