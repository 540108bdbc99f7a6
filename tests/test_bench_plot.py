"""``seqlab bench`` reads well on a plot and in prose (issue 16, item 6): tick labels on every panel, no line
hidden under another, legends off the data, each caveat said once.

The result is test_bench's synthetic one (nn.RNN and SDPA at T = 250, 1000, 4000 on 1 and 2 threads), so no
timing runs; the figure is drawn off-screen (Agg) and its artists are read back after a draw.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from test_bench import one_block, synthetic_result, with_timings

from seqlab.measure.timing import MachineLoad
from seqlab.render.bench import caveat_texts, plot_bench, render_bench, said_once
from seqlab.render.tables import FittedTable


@pytest.fixture(scope="module")
def figure():
    drawn = plot_bench(synthetic_result(), "en")
    drawn.canvas.draw()
    return drawn


def test_every_panel_has_its_own_tick_labels(figure):
    panels = figure.axes
    assert len(panels) == 4  # 2 rows (times, ratio) x 2 thread settings
    for ax in panels:
        x_labels = [label.get_text() for label in ax.get_xticklabels() if label.get_visible()]
        y_labels = [label.get_text() for label in ax.get_yticklabels() if label.get_visible() and label.get_text()]
        assert x_labels == ["250", "1,000", "4,000"], ax.get_title()
        assert y_labels, f"no y tick labels on {ax.get_title()!r}"


def test_legends_stand_outside_every_panel(figure):
    assert all(ax.get_legend() is None for ax in figure.axes)
    assert len(figure.legends) == 1  # one under the panels, for both rows (issue 37): each series named once
    labels = [text.get_text() for text in figure.legends[0].get_texts()]
    assert len(labels) == len(set(labels)) and "time, measured" in labels and "nn.RNN" in labels
    renderer = figure.canvas.get_renderer()
    for legend in figure.legends:
        box = legend.get_window_extent(renderer)
        for ax in figure.axes:
            assert not box.overlaps(ax.get_window_extent(renderer)), f"a legend covers {ax.get_title()!r}"


def test_no_line_can_hide_another(figure):
    """Two lines of a panel differ in colour, style or marker; lines with the same points differ in marker."""
    for ax in figure.axes:
        lines = [line for line in ax.get_lines() if len(line.get_xdata()) > 2]  # not the T = d or y = 1 guides
        looks = [(line.get_color(), line.get_linestyle(), line.get_marker(), line.get_markerfacecolor())
                 for line in lines]
        assert len(set(looks)) == len(looks), ax.get_title()
        for i, first in enumerate(lines):
            for second in lines[i + 1:]:
                if list(first.get_ydata()) == list(second.get_ydata()):
                    assert first.get_marker() != second.get_marker(), ax.get_title()


def test_the_model_over_the_measurement_still_shows_both():
    """Force the model to equal the measurement: the two lines coincide, and their markers still tell them apart."""
    result = synthetic_result()
    exact = replace(result, points=tuple(replace(p, predicted_s=p.timing.median_s) for p in result.points))
    drawn = plot_bench(exact, "en")
    ax = drawn.axes[0]
    measured = next(line for line in ax.get_lines() if line.get_label() == "nn.RNN")
    model = next(line for line in ax.get_lines() if line.get_label() == "nn.RNN, model")
    assert list(measured.get_ydata()) == list(model.get_ydata())
    assert model.get_markerfacecolor() == "none" and model.get_zorder() > measured.get_zorder()


# --- Each caveat once ------------------------------------------------------------------------------------

def _text(renderable) -> str:
    from rich.console import Console

    console = Console(width=200, record=True, color_system=None)
    console.print(renderable)
    return " ".join(console.export_text().split())  # a sentence may wrap: one space between words


@pytest.mark.parametrize("lang", ["en", "es"])
def test_a_noisy_caveat_is_said_once_then_referred_to(lang):
    caveat, again = caveat_texts(lang)["noisy"]
    noisy = with_timings(synthetic_result(), lambda p: replace(p.timing, noisy=True))
    text = _text(render_bench(noisy, lang))
    assert text.count(caveat) == 1 and text.count(again) >= 2
    quiet = _text(render_bench(synthetic_result(), lang))  # the measurement changed: no caveat at all
    assert caveat not in quiet and again not in quiet


def test_a_rough_caveat_is_said_once():
    caveat, again = caveat_texts("en")["few"]
    text = _text(render_bench(with_timings(synthetic_result(), one_block), "en"))
    assert text.count(caveat) == 1 and text.count(again) >= 2


def test_the_busy_machine_caveat_is_said_under_the_first_table_only():
    busy = replace(synthetic_result(), load=MachineLoad(3.5, 2, True))
    group = render_bench(busy, "en")
    tables = [part for part in group.renderables if isinstance(part, FittedTable)]
    assert len(tables) == 2
    assert "The machine was busy" in tables[0].caption and "The machine was busy" not in tables[1].caption
    assert _text(group).count("The machine was busy") == 1
    quiet = render_bench(synthetic_result(), "en")
    assert "The machine was busy" not in _text(quiet)


def test_said_once_leaves_other_sentences_alone():
    assert said_once(["A.", "B."]) == ["A.", "B."]
