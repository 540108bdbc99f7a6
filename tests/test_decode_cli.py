"""``seqlab decode`` in-process (Typer's CliRunner): the table's exact counts in en and es, --json, --plot, bad input.

Bad input exits 2 with one ``Error: Invalid value for '--option': …`` line naming the value, never a traceback.
Sizes are tiny (d = 8, t = 4 and 8) so the file runs in a few seconds.
"""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

import seqlab.memory
from seqlab.cli import app

ENV = {"COLUMNS": "200", "NO_COLOR": "1", "FORCE_COLOR": None, "TTY_COMPATIBLE": None}
SMALL = ["--positions", "4,8", "--d-model", "8", "--machines", "elman,attention_kv_cache,attention_no_cache"]


def decode(*args: str):
    return CliRunner().invoke(app, ["decode", *args], env=ENV)


def row(output: str, machine: str, t: str) -> list[str]:
    """The cells after the machine's name of the row for (machine, t); a machine's later rows have a blank name."""
    current = None
    for line in output.splitlines():
        parts = [part.strip() for part in line.split("│")]
        if len(parts) == 8:
            current = parts[1] or current
            if current == machine and parts[2] == t:
                return parts[3:7]
    raise AssertionError(f"no row {machine!r} t={t} in:\n{output}")


def test_english_table_has_the_exact_counts_and_sentences():
    result = decode(*SMALL, "--no-time", "--lang", "en")
    assert result.exit_code == 0, result.output
    assert "Cost of one new token at position t, d_model = 8" in result.output
    assert row(result.output, "Elman RNN", "8")[:2] == ["128", "="]  # 2 * 8**2
    assert row(result.output, "attention, KV cache", "8")[:2] == ["320", "="]  # 3 * 8**2 + 2 * 8 * 8
    assert row(result.output, "attention, no cache", "8")[0] == "1,216"  # 8**2 + 2 * 8 * 8**2 + 2 * 8 * 8
    assert row(result.output, "attention, KV cache", "8")[3] == "512"  # 2 * 8 * 8 * 4 bytes
    assert "Fewest multiplications per new token: Elman RNN at t = 4, 8" in result.output
    assert "T steps like the Elman RNN's" in result.output


def test_spanish_table_and_sentences():
    result = decode(*SMALL, "--no-time", "--lang", "es")
    assert result.exit_code == 0, result.output
    assert "Coste de un token nuevo en la posición t, d_model = 8" in result.output
    assert row(result.output, "atención sin caché", "8")[0] == "1.216"
    assert "Menos multiplicaciones por token nuevo: RNN de Elman en t = 4, 8" in result.output
    assert "Estado fijo sea cual sea t: RNN de Elman." in result.output


def test_timed_quick_run_shows_median_and_iqr():
    result = decode("--quick", "--positions", "2,4", "--d-model", "8", "--machines", "elman,attention_kv_cache")
    assert result.exit_code == 0, result.output
    assert " ± " in row(result.output, "Elman RNN", "4")[2]
    assert "Time: median ± IQR of one step over 7 interleaved rounds" in result.output
    assert "rotating), 1 thread, float32" in " ".join(result.output.split())  # the caption wraps


def test_json_shape():
    result = decode(*SMALL, "--no-time", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert set(data) >= {"config", "steps", "wins", "growth", "asymmetry", "threads", "torch_version"}
    assert len(data["steps"]) == 3 * 2  # machines x positions
    step = data["steps"][0]
    assert (step["machine"], step["t"], step["multiplications"], step["closed_form"], step["state_bytes"],
            step["timing"]) == ("elman", 4, 128, 128, 32, None)  # 2 * 8**2; 8 * 4 bytes
    assert data["asymmetry"]["training"] == [3, 3] and data["asymmetry"]["generation_grows"] is True
    assert {w["criterion"] for w in data["wins"]} == {"work", "state"}


def test_plot_writes_a_png(tmp_path):
    path = tmp_path / "decode.png"
    result = decode(*SMALL, "--no-time", "--plot", str(path))
    assert result.exit_code == 0, result.output
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize(("args", "words"), [
    (["--positions", "0"], "'--positions': expected integers >= 1 separated by commas, received '0'"),
    (["--positions", "16,-3"], "received '16,-3'"),
    (["--positions", "65537"], "positions must be an integer in [1, 65536], received 65537"),
    (["--machines", "lstm"], "'--machines': machine must be one of elman"),
    (["--plot", "x.pdf"], "expected a file name ending in .png or .svg, received 'x.pdf'"),
    (["--d-model", "0"], "'--d-model': expected an integer >= 1, received 0"),
])
def test_bad_input_exits_2_with_one_line(args, words):
    result = decode(*args)
    assert result.exit_code == 2, result.output
    errors = [line for line in result.output.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1 and words in errors[0], result.output
    assert "Traceback" not in result.output


def test_too_large_for_memory_says_how_much_before_allocating(monkeypatch):
    monkeypatch.setattr(seqlab.memory, "available_memory_bytes", lambda: seqlab.memory.GIB)
    result = decode("--positions", "65536", "--d-model", "8192")
    assert result.exit_code == 2, result.output
    # 6 * 65,536 * 8,192 * 4 + 8 * 8,192**2 * 4 = 15,032,385,536 bytes, 14.0 GiB
    assert "would need about 14.0 GiB (mostly a cache of 65536 positions)" in result.output
