"""Results in a notebook (seqlab.render.notebook, notebook_figures, studies.notebook_view): HTML and figures.

Every HTML table is the terminal's: each row name the terminal prints is found in the HTML, and a
measurement changed in the result changes the HTML (so the table is read from the result, not fixed).
Every figure's data is the result's: bar lengths and line points are compared with the fields they show.
"""

from __future__ import annotations

import dataclasses
import html
import sys

import pytest
import torch

import seqlab
from seqlab.errors import SeqlabError
from seqlab.render.notebook import renderable_html, result_html
from seqlab.studies.check import CheckConfig, CheckSizes, run_check
from seqlab.studies.table1 import Table1Config, run_table1

SMALL_CHECK = CheckSizes(span_lengths=(16, 32), reach_draws=2, reach_lengths=(8, 16, 32, 64), count_length=16,
                         count_widths=(6, 10), crossover_width=8, layer_heads=(1, 2), time_length=64, time_width=8,
                         time_batch=4, min_run_time=0.01, worked_lengths=(50, 1000), span_widths=(2, 4),
                         order_length=8, figure=(4, 4, 16, 2))


@pytest.fixture(scope="module")
def profiled():
    """A GRU (d = 4) on 6 positions: 576 multiplications (3 gates · 2 products · 6 · 4 · 4 = 576)."""
    gru = torch.nn.GRU(4, 4, batch_first=True)
    return seqlab.profile(gru, torch.randn(1, 6, 4, generator=torch.Generator().manual_seed(0)))


@pytest.fixture(scope="module")
def table1_result():
    return run_table1(Table1Config(lengths=(8, 16, 32), d_models=(4,)), layers=("self_attention", "rnn"))


@pytest.fixture(scope="module")
def check_result():
    return run_check(CheckConfig(claims=("L5", "L6"), sizes=SMALL_CHECK, threads=1))


def first_column(renderable) -> list[str]:
    """The row names the terminal prints: the first column of every Rich table in ``renderable``."""
    from rich.console import Group
    from rich.table import Table

    parts = renderable.renderables if isinstance(renderable, Group) else [renderable]
    return [str(cell) for part in parts if isinstance(part, Table) for cell in part.columns[0].cells]


def test_lazy_api_without_torch():
    code = ("import sys, seqlab; assert 'torch' not in sys.modules; "
            "assert {'profile', 'compare', 'table1', 'table1_modern', 'check', 'decode'} <= set(dir(seqlab))")
    import subprocess

    subprocess.run([sys.executable, "-c", code], check=True)
    assert seqlab.compare.__name__ == "run_compare" and seqlab.check.__name__ == "run_check"
    assert seqlab.table1.__name__ == "run_table1"


@pytest.mark.parametrize("lang", ["en", "es"])
def test_profile_html_has_every_row_of_the_terminal_table(profiled, lang):
    from seqlab.render.table1 import profile_table

    page = profiled.html(lang)
    names = first_column(profile_table(profiled, lang))
    assert len(names) >= 9
    for name in names:
        assert f">{html.escape(name)}</td>" in page
    assert page.count("<table") == 1
    assert "576" in page  # the count the table shows, 3 · 2 · 6 · 4 · 4


def test_profile_html_follows_the_measurement(profiled):
    cell = '<td style="text-align: left; vertical-align: top">'
    row = "Multiplications counted</td>" + cell + "{}</td>"
    assert row.format("576") in profiled.html("en")
    changed = dataclasses.replace(profiled, multiplications=123_457)
    assert row.format("123,457") in changed.html("en") and row.format("576") not in changed.html("en")


def test_compare_html_has_both_terminal_tables(small_result):
    from seqlab.render.compare import render_compare

    page = small_result.html("en")
    names = first_column(render_compare(small_result, "en"))
    assert page.count("<table") == 2 and len(names) > 10
    for name in names:
        assert f">{html.escape(name)}</td>" in page
    for sentence in render_compare(small_result, "en").renderables[2:]:
        assert f"<p>{html.escape(sentence.plain)}</p>" in page


def test_table1_html_and_figure(table1_result):
    from seqlab.render.table1 import render_table1

    page = table1_result.html("es")
    for name in first_column(render_table1(table1_result, "es")):
        assert f">{html.escape(name)}</td>" in page
    figure = table1_result.plot("en")
    work = figure.axes[0]
    for line, row in zip(work.get_lines(), table1_result.rows):
        assert list(line.get_ydata()) == [s.multiplications for s in row.samples]


def test_check_html_rows_are_the_terminal_words(check_result):
    from seqlab.render.check import claim_text

    page = check_result.html("en")
    for check in check_result.checks:
        text = claim_text(check, "en")
        assert f">{html.escape(text.statement)}</td>" in page and f">{html.escape(text.measured)}</td>" in page
    assert "2 of 2 claims hold" in page
    failed = dataclasses.replace(check_result, checks=(dataclasses.replace(check_result.checks[0],
                                                                           verdict="does_not_hold"),
                                                       *check_result.checks[1:]))
    assert "✗ does not hold" in failed.html("en") and "✗" not in page


def test_check_figure_bars_are_seconds_and_verdicts(check_result):
    figure = check_result.plot("en")
    bars = figure.axes[0].patches
    assert [bar.get_width() for bar in bars][::-1] == [check.seconds for check in check_result.checks]
    assert figure.axes[0].get_title() == "2 of 2 claims hold"
    failed = dataclasses.replace(check_result, checks=(dataclasses.replace(check_result.checks[0],
                                                                           verdict="does_not_hold"),
                                                       *check_result.checks[1:]))
    figure = failed.plot("en")
    assert figure.axes[0].get_title() == "1 of 2 claims hold"
    assert figure.axes[0].patches[-1].get_facecolor() != figure.axes[0].patches[0].get_facecolor()  # red, green


def test_profile_figure_shows_the_counts(profiled):
    figure = profiled.plot("en")
    work, chains = figure.axes
    assert [bar.get_width() for bar in work.patches] == [576]
    heights = [bar.get_height() for bar in chains.patches]
    path = profiled.path
    assert heights == [profiled.span_ops, path.longest_ops, path.first_to_last_ops,
                       profiled.span_products, path.longest_products, path.first_to_last_products]


def test_compare_figure_lines_are_reach_and_path(small_result):
    figure = small_result.plot("es")
    reach_axis, path_axis = figure.axes
    assert list(reach_axis.get_lines()[0].get_ydata()) == [n for n in small_result.recurrence.reach.norms if n > 0]
    assert list(path_axis.get_lines()[0].get_ydata()) == list(range(1, small_result.T + 1))  # the recurrence: t
    assert set(path_axis.get_lines()[1].get_ydata()) == {2}  # attention: two products from anywhere
    assert len(reach_axis.get_lines()) == 2 + len(small_result.gated)


def test_figures_leave_matplotlib_state_alone(profiled):
    import matplotlib
    import matplotlib.pyplot as plt

    backend = matplotlib.get_backend()
    profiled.plot("en")
    assert matplotlib.get_backend() == backend and plt.get_fignums() == []


def test_unknown_result_and_language_are_refused(profiled):
    with pytest.raises(SeqlabError, match="no notebook view for int"):
        result_html(3)
    with pytest.raises(SeqlabError, match="'fr'"):
        profiled.html("fr")


def test_renderable_html_escapes_and_reads_markup():
    from rich.text import Text

    assert renderable_html(Text("a < b")) == "<p>a &lt; b</p>"
    assert renderable_html("[bold]x[/bold]") == "<p>x</p>"


def test_decode_and_modern_results_show_and_draw():
    from seqlab.render.decode import render_decode
    from seqlab.render.table1_modern import render_modern
    from seqlab.studies.decode import DecodeConfig
    from seqlab.studies.table1_modern import ModernConfig

    decoded = seqlab.decode(DecodeConfig(positions=(4, 8), d_model=8, min_run_time=0.001, span_lengths=(8, 16)))
    page = decoded.html("en")
    for name in first_column(render_decode(decoded, "en")):
        assert f">{html.escape(name)}</td>" in page
    assert decoded.plot("en").axes  # decode_figure, the figure `seqlab decode --plot` saves
    modern = seqlab.table1_modern(ModernConfig(rows=("elman", "self_attention"), lengths=(8, 16, 32),
                                               long_lengths=(64, 128, 256), d_model=4, window=2, chunk=2))
    page = modern.html("es")
    for name in first_column(render_modern(modern, "es")):
        assert f">{html.escape(name)}</td>" in page
    work, span, peak, path = modern.plot("en").axes
    for line, row in zip(work.get_lines(), modern.rows):
        assert list(line.get_ydata()) == [s.multiplications for s in row.long]
    for line, row in zip(peak.get_lines(), modern.rows):
        assert list(line.get_ydata()) == [s.peak_bytes for s in row.long]
    assert len(path.get_lines()) == 2


#: A learn sweep small enough to train in seconds: the position task (its table) and mqar (the three pictures).
TINY_LEARN = dict(tasks=("position", "mqar"), models=("attention", "linear_attention"), lengths=(8, 12),
                  pairs=(1, 2), widths=(8,), seeds=1, rates=(1e-2,))


@pytest.fixture(scope="module")
def learn_result():
    from seqlab.learn.training import TrainSettings
    from seqlab.studies.learn import LearnConfig

    return seqlab.run_learn(LearnConfig(**TINY_LEARN, settings=TrainSettings(steps=3, test_size=8,
                                                                              validation_size=8)))


@pytest.mark.parametrize("lang", ["en", "es"])
def test_learn_html_has_the_terminal_tables_and_sentences(learn_result, lang):
    from seqlab.render.learn import learn_sentences, render_learn

    assert seqlab.run_learn.__name__ == "run_learn"
    page = learn_result.html(lang)
    assert page == result_html(learn_result, lang)
    names = first_column(render_learn(learn_result, lang))
    assert len(names) == 2 + 2  # position: a row per model; mqar: a row per model and its one width
    for name in names:
        assert f">{html.escape(name)}</td>" in page
    for sentence in learn_sentences(learn_result, lang):
        assert f"<p>{html.escape(sentence)}</p>" in page
    word = {"en": "Multi-query associative recall", "es": "Recuerdo asociativo"}[lang]
    assert word in page and page.count("<table") == 2
    cell = learn_result.cell("mqar", "attention", 12, 2, 8)
    from seqlab.render.learn_text import range_text

    assert html.escape(range_text(cell.mean, cell.low, cell.high, lang)) in page  # the measured figure


def test_learn_figure_draws_the_frontier_and_accuracy_against_T_and_pairs(learn_result):
    position, frontier, by_length, by_pairs, *hidden = learn_result.plot("es").axes
    assert [ax.get_visible() for ax in hidden] == [False] * len(hidden)
    assert frontier.get_xscale() == "log" and "bytes" in frontier.get_xlabel()
    assert by_length.get_xlabel() == "T (posiciones)" and by_pairs.get_xlabel() == "pares clave-valor"
    lines = [container.lines[0] for container in frontier.containers]  # each model's error-bar line
    assert len(lines) == 2
    for model, line in zip(("attention", "linear_attention"), lines):
        cells = [c for c in learn_result.cells("mqar", model) if (c.T, c.pairs) == (12, 2)]
        assert list(line.get_xdata()) == [c.state_bytes for c in cells]  # one point per model and width
        assert list(line.get_ydata()) == [c.mean for c in cells]
    attention = [c for c in learn_result.cells("mqar", "attention") if c.pairs == 2]
    along_T = by_length.containers[0].lines[0]
    assert list(along_T.get_xdata()) == [8, 12]
    assert list(along_T.get_ydata()) == [c.mean for c in sorted(attention, key=lambda c: c.T)]
    assert list(by_pairs.containers[0].lines[0].get_xdata()) == [1, 2]
    assert len(position.containers) == 2  # a line per model of the position task
