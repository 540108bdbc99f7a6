"""Progress on the commands that can take more than a few seconds, on a terminal only (issue 16, item 7).

The studies report their steps through an optional ``progress(done, total, what)`` callback (compare,
table1, figure); ``seqlab.cli.progress.progress_bar`` draws them on standard error when it is a terminal
and writes nothing at all otherwise, so pipes and the CLI tests see the same output as before.
"""

from __future__ import annotations

import time

import pytest

from seqlab.cli.progress import progress_bar


def _recorder():
    calls = []
    return calls, lambda done, total, what: calls.append((done, total, what))


def _counts_up_to_the_end(calls):
    dones = [done for done, _, _ in calls]
    assert dones == sorted(dones) and len({total for _, total, _ in calls}) == 1
    assert calls[-1][0] == calls[-1][1] and calls[0][0] == 0


def test_compare_reports_each_stage():
    from seqlab.studies.compare import CompareConfig, run_compare
    from seqlab.text import synthetic_tokens

    calls, record = _recorder()
    result = run_compare(synthetic_tokens(6), "synthetic (6 tokens)", CompareConfig(d_model=4, time=False), record)
    assert [done for done, _, _ in calls] == [0, 1, 2, 3, 4] and result.T == 6
    _counts_up_to_the_end(calls)


def test_table1_reports_each_layer_at_each_width():
    from seqlab.studies.table1 import Table1Config, run_table1

    calls, record = _recorder()
    run_table1(Table1Config(lengths=(4, 8, 16), d_models=(4, 6)), layers=("rnn", "self_attention"), progress=record)
    assert len(calls) == 2 * 2 + 1  # 2 widths x 2 layers, then the end
    assert [what for _, _, what in calls[:2]] == ["rnn", "self_attention"]
    _counts_up_to_the_end(calls)


def test_figure_reports_each_of_the_fifteen_boxes():
    from seqlab.studies.figure import measure_figure

    calls, record = _recorder()
    measure_figure(T_source=3, T_target=3, d_model=4, heads=2, progress=record)
    assert len(calls) == 16 and calls[-1][:2] == (15, 15)
    _counts_up_to_the_end(calls)


def test_no_progress_is_written_where_stderr_is_not_a_terminal(capsys, monkeypatch):
    for variable in ("TTY_COMPATIBLE", "FORCE_COLOR", "TTY_INTERACTIVE"):
        monkeypatch.delenv(variable, raising=False)
    with progress_bar() as step:
        step(1, 2, "attention")
    assert capsys.readouterr() == ("", "")


def test_a_terminal_sees_the_bar(capsys, monkeypatch):
    monkeypatch.setenv("TTY_COMPATIBLE", "1")  # Rich treats standard error as a terminal
    with progress_bar() as step:
        step(1, 2, "attention")
        time.sleep(0.2)
    assert "Measuring" in capsys.readouterr().err


@pytest.mark.parametrize("lang", ["en", "es"])
def test_the_commands_print_no_progress_into_a_pipe(runner, lang):
    from seqlab.cli import app

    env = {"COLUMNS": "200", "NO_COLOR": "1", "FORCE_COLOR": None, "TTY_COMPATIBLE": None}
    result = runner.invoke(app, ["table1", "--lengths", "4,8,16", "--d-model", "4", "--lang", lang], env=env)
    assert result.exit_code == 0
    assert "Measuring" not in result.output and "Midiendo" not in result.output and "━━" not in result.output.split(
        "┏")[0]


def test_model_reports_its_stages():
    pytest.importorskip("transformers")
    from seqlab.studies.model import inspect_model

    calls, record = _recorder()
    inspect_model("En un lugar de la Mancha", max_tokens=8, mixing_tokens=4, progress=record)
    assert [what for _, _, what in calls] == ["load", "mixing", "attention", "order", "done"]
    _counts_up_to_the_end(calls)
