"""Every command's table at 80 columns keeps its row names and headings whole (issue 16, item 6).

Each renderer's Rich renderable is printed on an 80-column console; the test reads the printed boxes back:
the words of the first column, body rows only, must be exactly the words of the row names the table was
given, in order (nothing cut with "…", no word broken across lines, no name lost to a zero-width column),
once per printed part when a wide table is stacked in parts; every heading word must be printed whole.
A table too wide even stacked is printed as records (one per row, its name first): each name is then found
whole, in order. How many lines a cell wraps to is tests/test_80_columns.py's check.
The results come from tiny configurations (a few seconds in all). ``assert_names_whole`` is the one check;
a new command's table is tested by calling it on its renderable.
"""

from __future__ import annotations

import io
import re

import pytest
import torch
from rich.console import Console, Group
from rich.padding import Padding
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from seqlab.render.tables import FittedTable

WIDTH = 80
NARROW_ENV = {"COLUMNS": str(WIDTH), "NO_COLOR": "1", "FORCE_COLOR": None, "TTY_COMPATIBLE": None}


def printed(renderable, width: int = WIDTH) -> str:
    console = Console(width=width, file=io.StringIO(), color_system=None, legacy_windows=False)
    console.print(renderable)
    return console.file.getvalue()


def tables_in(renderable) -> list[Table]:
    """Every Rich table inside ``renderable`` (groups, paddings, panels), in printing order."""
    if isinstance(renderable, Table):
        return [renderable]
    if isinstance(renderable, Group):
        return [table for part in renderable.renderables for table in tables_in(part)]
    if isinstance(renderable, (Padding, Panel)):
        return tables_in(renderable.renderable)
    if isinstance(renderable, (list, tuple)):
        return [table for part in renderable for table in tables_in(part)]
    return []


def _plain(cell) -> str:
    return cell.plain if isinstance(cell, Text) else str(cell)


def name_words(table: Table) -> list[str]:
    return [word for cell in table.columns[0]._cells for word in _plain(cell).split()]


def boxes(text: str) -> list[tuple[list[str], list[str]]]:
    """(heading lines, body lines) of every printed table box, in order."""
    found, heading, body, inside = [], [], [], False
    for line in text.splitlines():
        start = line.lstrip()[:1]
        if start in "┏┌":
            heading, body, inside = [], [], True
        elif start in "└┗" and inside:
            found.append((heading, body))
            inside = False
        elif inside and start == "┃":
            heading.append(line)
        elif inside and start == "│":
            body.append(line)
    return found


def first_column_words(lines: list[str]) -> list[str]:
    return [word for line in lines for word in re.split(r"[│┃]", line.strip())[1].split()]


def assert_names_whole(renderable, width: int = WIDTH) -> str:
    """Print ``renderable`` at ``width`` and check every table's row names and headings are whole; the text."""
    text = printed(renderable, width)
    assert all(len(line) <= width for line in text.splitlines()), text
    expected = []
    for table in tables_in(renderable):
        parts = len(boxes(printed(table, width)))  # a wide table may be stacked in several boxes
        assert parts >= 1, f"table {table.title!r} printed no box:\n{printed(table, width)}"
        expected.append((table, parts))
    found = boxes(text)
    assert len(found) == sum(parts for _, parts in expected), text
    for table, parts in expected:
        mine, found = found[:parts], found[parts:]
        if table.show_header and all(not heading for heading, _ in mine):  # shown as records: one per row
            _assert_records_whole(table, mine, text)
            continue
        for heading, body in mine:
            assert first_column_words(body) == name_words(table), f"row names not whole in {table.title!r}:\n{text}"
            assert all("…" not in line for line in heading + body), f"a cell or heading cut in {table.title!r}:\n{text}"
        heading_words = {word for heading, _ in mine for line in heading for word in re.split(r"[┃\s]+", line) if word}
        for column in table.columns:
            for word in _plain(column.header).split():
                assert word in heading_words, f"heading word {word!r} of {table.title!r} not whole:\n{text}"
    return text


def _assert_records_whole(table: Table, mine, text: str) -> None:
    """A table too wide for its columns is printed as records (issue 37): each row's name whole, in order,
    at the start of its record, with nothing cut."""
    words = [word for _, body in mine for line in body for word in line.strip().strip("│").split()]
    at = 0
    for cell in table.columns[0]._cells:
        name = _plain(cell).split()
        found = next((i for i in range(at, len(words) - len(name) + 1) if words[i:i + len(name)] == name), None)
        assert found is not None, f"row name {' '.join(name)!r} not whole in the records of {table.title!r}:\n{text}"
        at = found + len(name)
    assert all("…" not in line for _, body in mine for line in body), f"a cell cut in {table.title!r}:\n{text}"


# --- The check itself can fail --------------------------------------------------------------------------

def _wide_table(cls):
    table = cls("Layer type", *(f"Column heading number {i}" for i in range(7)), title="wide")
    for name in ("Self-attention restricted (r = 4)", "Convolutional dilated (k = 3)"):
        table.add_row(name, *("262,144 (= formula)" for _ in range(7)))
    return table


def test_the_check_catches_a_plain_rich_table_cutting_names():
    with pytest.raises(AssertionError):
        assert_names_whole(_wide_table(Table))


def test_a_fitted_table_too_wide_for_80_columns_is_stacked_in_parts():
    table = _wide_table(FittedTable)
    text = assert_names_whole(table)
    assert len(boxes(text)) >= 2 and text.count("Self-attention") >= 2  # the names repeat in each part
    assert len(boxes(printed(table, 300))) == 1  # one box where it fits


# --- Every command ---------------------------------------------------------------------------------------

LANGS = pytest.mark.parametrize("lang", ["en", "es"])


@LANGS
def test_compare(small_result, lang):
    from seqlab.render.compare import render_compare

    for detailed in (False, True):
        assert_names_whole(render_compare(small_result, lang, detailed))


@pytest.fixture(scope="module")
def table1_result():
    from seqlab.studies.table1 import Table1Config, run_table1

    return run_table1(Table1Config(lengths=(8, 16, 32), d_models=(8, 12)))


@LANGS
def test_table1(table1_result, lang):
    from seqlab.render.table1 import render_table1

    text = assert_names_whole(render_table1(table1_result, lang))
    assert ("Auto-atención" if lang == "es" else "Self-attention") in text  # the issue: no layer names in es


@LANGS
def test_profile(lang):
    import seqlab
    from seqlab.render.table1 import profile_table

    torch.manual_seed(0)
    result = seqlab.profile(torch.nn.LSTM(6, 6, batch_first=True), torch.randn(1, 5, 6))
    assert_names_whole(profile_table(result, lang))


@pytest.fixture(scope="module")
def bench_result():
    from seqlab.studies.bench import BenchConfig, run_bench

    return run_bench(BenchConfig(lengths=(4, 8), d_models=(8,), threads=(1,), min_run_time=0.001, min_samples=1,
                                 matmul_size=32, chain_links=4))


@LANGS
def test_bench(bench_result, lang):
    from seqlab.render.bench import render_bench

    text = assert_names_whole(render_bench(bench_result, lang))
    assert "nn.RNN" in text and "SDPA" in text


@pytest.fixture(scope="module")
def learn_result():
    from seqlab.learn.training import TrainSettings
    from seqlab.studies.learn import LearnConfig, run_learn

    return run_learn(LearnConfig(tasks=("recall", "mqar"), models=("elman", "attention", "selective_recurrence"),
                                 lengths=(6,), pairs=(1, 2), widths=(4,), seeds=1, rates=(1e-2,),
                                 settings=TrainSettings(steps=3, test_size=16, validation_size=16)))


@LANGS
def test_learn(learn_result, lang):
    from seqlab.render.learn import render_learn

    assert_names_whole(render_learn(learn_result, lang))


@pytest.fixture(scope="module")
def figure_result():
    from seqlab.studies.figure import measure_figure

    return measure_figure(T_source=3, T_target=3, d_model=4, heads=2, seed=0)


@LANGS
def test_figure(figure_result, lang):
    from seqlab.render.figure import figure_table

    assert_names_whole(figure_table(figure_result, lang))


@pytest.fixture(scope="module")
def check_result():
    from seqlab.studies.check import CheckConfig, CheckSizes, run_check

    sizes = CheckSizes(span_lengths=(16, 32), reach_draws=2, reach_lengths=(8, 16, 32, 64), count_length=16,
                       count_widths=(6, 10), crossover_width=8, layer_heads=(1, 2), time_length=64, time_width=8,
                       time_batch=4, min_run_time=0.01, worked_lengths=(50, 1000), span_widths=(2, 4),
                       order_length=8, figure=(4, 4, 16, 2))
    return run_check(CheckConfig(claims=("L5", "L6", "L9"), sizes=sizes, threads=1))


@LANGS
def test_check_lines_fit_and_name_each_claim(check_result, lang):
    """check prints lines, not a table: each fits 80 columns and every claim's line starts with its name."""
    from seqlab.render.check import render_check

    text = printed(render_check(check_result, lang, WIDTH))
    assert all(len(line) <= WIDTH for line in text.splitlines()), text
    for claim in ("L5", "L6", "L9"):
        assert re.search(rf"^[✓~✗] {claim}\b", text, re.M), text


@pytest.fixture(scope="module")
def modern_result():
    from seqlab.studies.table1_modern import ModernConfig, run_modern

    return run_modern(ModernConfig(lengths=(8, 12, 16), long_lengths=(8, 12, 16), d_model=4, window=2, chunk=2))


@LANGS
def test_table1_modern(modern_result, lang):
    from seqlab.render.table1_modern import render_modern

    assert_names_whole(render_modern(modern_result, lang))


@pytest.fixture(scope="module")
def decode_result():
    from seqlab.studies.decode import DecodeConfig, run_decode

    return run_decode(DecodeConfig(positions=(1, 4), d_model=4, time=False, span_lengths=(4, 8)))


@LANGS
def test_decode(decode_result, lang):
    from seqlab.render.decode import render_decode

    assert_names_whole(render_decode(decode_result, lang))
