"""``seqlab table1 --modern`` (studies/table1_modern.py, render/table1_modern.py): cells at a tiny config, the CLI.

Counts are exact and set beside their hand arithmetic; growth labels come from fits of measured series; patching
a measurement must flip the verdict that rests on it (issue 15, item 2).
"""

import dataclasses
import json

import pytest
from typer.testing import CliRunner

from seqlab.cli import app
from seqlab.errors import SeqlabError
from seqlab.measure.memory_peak import PeakMemory
from seqlab.studies import table1_modern
from seqlab.studies.table1_modern import ModernConfig, measure_row, run_modern
from seqlab.studies.table1_modern_rows import ROWS

TINY = dict(lengths=(8, 16, 32), long_lengths=(64, 128, 256), d_model=4, window=2, chunk=2)
ROWS_MEASURED = ("elman", "self_attention", "linear_attention_parallel", "linear_attention_recurrent",
                 "selective_loop", "selective_scan")


@pytest.fixture(scope="module")
def tiny():
    return run_modern(ModernConfig(rows=ROWS_MEASURED, **TINY))


def test_rows_keep_the_tables_order_and_nothing_is_missing(tiny):
    assert [row.row for row in tiny.rows] == list(ROWS_MEASURED) and tiny.missing == ()


def test_exact_counts_equal_their_closed_forms(tiny):
    rows = {row.row: row for row in tiny.rows}
    elman, attention = rows["elman"].long, rows["self_attention"].long
    assert [s.multiplications for s in elman] == [2048, 4096, 8192]  # T * (d² + d²) = 64 * 32, …
    # 2·T²·d + 4·T·d² (scores and mix; Q, K, V and W_O projections): 2 * 64² * 4 + 4 * 64 * 16 = 36_864,
    # as much as parallel linear attention's T²·(d_k + d_v) + its four projections: like with like
    assert attention[0].multiplications == attention[0].closed_form == 36_864
    # recurrent linear attention: T·(2·d_k·d_v + d_k) + T·d·(2·d_k + d_v) + T·d_v·d
    # = 64 * 36 + 64 * 48 + 64 * 16
    assert rows["linear_attention_recurrent"].long[0].multiplications == 6_400
    # parallel: T²·(d_k + d_v) + the same projections = 64² * 8 + 4096
    assert rows["linear_attention_parallel"].long[0].multiplications == 36_864
    assert all(s.multiplications == s.closed_form for row in tiny.rows for s in row.long)
    assert tiny.counts_differ == 0
    # decoding: the RNN's step is 2·d² = 32 multiplications, the KV cache's 3·d² + 2·t·d + d² (W_O, the work
    # column's scope) = 48 + 512 + 16 at t = 64
    assert (elman[0].decode_multiplications, attention[0].decode_multiplications) == (32, 576)
    assert attention[0].decode_closed_form == 576
    # states: h is d floats (16 bytes); keys and values of 64 positions: 2 * 64 * 4 * 4 bytes
    assert (elman[0].state_bytes, attention[0].state_bytes) == (16, 2048)


def test_fitted_growth_labels(tiny):
    rows = {row.row: row for row in tiny.rows}
    assert rows["self_attention"].memory.matches and abs(rows["self_attention"].memory.fit.exponent - 2) <= 0.1
    assert rows["elman"].memory.matches and abs(rows["elman"].memory.fit.exponent - 1) <= 0.1
    scan, loop = rows["selective_scan"], rows["selective_loop"]
    assert (scan.span.fit.model, scan.span.matches) == ("log", True)  # log T rounds
    assert [s.span_ops for s in scan.long] == [20, 22, 24]  # two ops more per doubling of T
    assert loop.span.fit.model == "power" and abs(loop.span.fit.exponent - 1) <= 0.1
    assert abs(rows["linear_attention_parallel"].work.fit.exponent - 2) <= 0.1
    assert abs(rows["linear_attention_recurrent"].work.fit.exponent - 1) <= 0.1
    assert rows["self_attention"].state.matches and rows["elman"].state.fit.exponent == 0.0


def test_a_patched_peak_memory_changes_the_memory_verdict(monkeypatch):
    config = ModernConfig(rows=("self_attention",), **TINY).validated()
    assert measure_row("self_attention", config).memory.matches

    def constant(function, *args, **kwargs):
        function(*args, **kwargs)
        return PeakMemory(1024, 0, 1024, 1, 0, (), "patched", {})
    monkeypatch.setattr(table1_modern.memory_peak, "measure_peak_memory", constant)
    patched = measure_row("self_attention", config).memory
    assert not patched.matches and patched.fit.exponent == 0.0


def test_a_patched_span_changes_the_scan_verdict(monkeypatch):
    config = ModernConfig(rows=("selective_scan",), **TINY).validated()
    real = table1_modern.measure_pass

    def as_a_loop(function, x, **kwargs):
        measured = real(function, x, **kwargs)
        span = type(measured.span)(**{**measured.span.__dict__, "ops": 2 * x.shape[1]})  # 2 ops per position
        return dataclasses.replace(measured, span=span)
    monkeypatch.setattr(table1_modern, "measure_pass", as_a_loop)
    span = measure_row("selective_scan", config).span
    assert span.fit.model == "power" and not span.matches


def test_bad_configs_are_refused():
    with pytest.raises(SeqlabError, match="at least 3 distinct values"):
        ModernConfig(long_lengths=(64, 64, 128)).validated()
    with pytest.raises(SeqlabError, match="rows must be among"):
        ModernConfig(rows=("lstm",)).validated()


@pytest.fixture
def two_rows(monkeypatch):
    """The CLI runs every row; two keep the test short."""
    monkeypatch.setattr(table1_modern, "ROWS", {name: ROWS[name] for name in ("elman", "self_attention")})


ARGS = ["table1", "--modern", "--lengths", "8,16,32", "--long-lengths", "64,128,256", "--d-model", "4"]


@pytest.mark.parametrize("lang, words", [("en", ("Elman RNN", "Peak memory", "To generate token t = 256")),
                                         ("es", ("RNN de Elman", "Memoria pico", "Para generar el token t = 256"))])
def test_cli_in_both_languages(two_rows, lang, words):
    result = CliRunner().invoke(app, [*ARGS, "--lang", lang], env={"COLUMNS": "220"})
    assert result.exit_code == 0, result.output
    for word in words:
        assert word in result.output
    assert "12 of 12 cells" in result.output or "12 celdas" in result.output or "All 12 cells" in result.output


def test_cli_json(two_rows):
    result = CliRunner().invoke(app, [*ARGS, "--json"])
    assert result.exit_code == 0, result.output
    document = json.loads(result.output)
    assert [row["row"] for row in document["rows"]] == ["elman", "self_attention"]
    assert document["rows"][0]["long"][0]["multiplications"] == 2048


@pytest.mark.parametrize("args, words", [
    (["--long-lengths", "64,64,128"], "'--lengths' / '--long-lengths'"),
    (["--long-lengths", "64,x"], "'--long-lengths'"),
    (["--d-model", "4,8"], "one width"),
    (["--chunk", "0"], "'--chunk'"),
    (["--plot", "x"], "'--plot'"),
])
def test_cli_bad_input_exits_2(args, words):
    result = CliRunner().invoke(app, ["table1", "--modern", *args])
    assert result.exit_code == 2
    assert words in result.output and "Traceback" not in result.output


@pytest.mark.parametrize("lang", ["en", "es"])
def test_at_80_columns_nothing_is_cut(tiny, lang):
    import io

    from rich.console import Console

    from seqlab.render.table1_modern import render_modern, row_name

    console = Console(width=80, file=io.StringIO(), color_system=None)
    console.print(render_modern(tiny, lang))
    text = console.file.getvalue()
    assert "…" not in text and max(len(line) for line in text.splitlines()) <= 80
    assert all(word in text for row in tiny.rows for word in row_name(row.row, tiny, lang).split())


def test_run_modern_reports_progress_after_every_length():
    """One tick per length of every row, counting up to the total the callback is told."""
    seen = []
    run_modern(ModernConfig(rows=("elman",), **TINY), progress=lambda done, total, what: seen.append((done, total, what)))
    assert [(done, total) for done, total, _ in seen] == [(n, 6) for n in range(1, 7)]  # 3 short + 3 long lengths
    assert seen[0][2] == "elman · T = 8" and seen[-1][2] == "elman · T = 256"


@pytest.mark.parametrize("args, lang, line", [
    (["--chunk", "8"], "en", "--chunk only applies with --modern; add --modern or leave it out"),
    (["--long-lengths", "64,128,256"], "en", "--long-lengths only applies with --modern; add --modern or leave it out"),
    (["--long-lengths", "64,128,256", "--chunk", "8"], "en",
     "--long-lengths and --chunk only apply with --modern; add --modern or leave them out"),
    (["--chunk", "8"], "es", "--chunk solo vale con --modern; añade --modern o quítala"),
])
def test_modern_only_options_without_modern_are_refused(args, lang, line):
    result = CliRunner().invoke(app, ["table1", "--quick", *args, "--lang", lang], env={"COLUMNS": "200"})
    assert result.exit_code == 2 and line in result.output and "Traceback" not in result.output


def test_the_width_help_states_both_tables_defaults():
    """The --d-model help's numbers are the studies' own defaults (paper table, then --modern)."""
    from seqlab.studies import table1

    result = CliRunner().invoke(app, ["table1", "--help"], env={"COLUMNS": "400"})
    text = " ".join(result.output.split())
    assert (f"(default {table1.DEFAULT_D_MODEL}; --quick: {table1.QUICK_D_MODEL}; with --modern one width, default "
            f"{table1_modern.DEFAULT_D_MODEL}; --quick: {table1_modern.QUICK_D_MODEL})") in text
