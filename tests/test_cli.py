"""``seqlab compare`` in-process (Typer's CliRunner): exit codes, the table's numbers, JSON, bad usage.

Bad usage must exit 2 with one click-style ``Error: Invalid value for '--option': …`` line naming the
option and the value, a ``--help`` hint, and never a traceback. The lesson's L9 numbers (T = 50,
d_model = 512) are asserted literally in both languages.
"""

from __future__ import annotations

import json
import re

import pytest

import seqlab.studies.compare
import seqlab.text
from seqlab import cost
from seqlab.i18n import format_integer
from seqlab.layers.attention import SCORES
from seqlab.text import read_text, tokenize


def cells(output: str, label: str) -> list[str]:
    """The value cells of the table row whose first cell is ``label`` (Elman, attention, LSTM, GRU)."""
    for line in output.splitlines():
        parts = [part.strip() for part in line.split("│")]
        if len(parts) >= 5 and parts[1] == label:
            return parts[2:-1]
    raise AssertionError(f"no table row {label!r} in:\n{output}")


def scope_rows(output: str, machine: str) -> list[list[str]]:
    """(closed form, counted, counted by) of every row of the scopes table whose machine cell starts ``machine``,
    in the order shown (lesson, layer, kernels)."""
    rows = []
    for line in output.splitlines():
        parts = [part.strip() for part in line.split("│")]
        if len(parts) == 7 and parts[2] == machine:
            rows.append(parts[3:6])
    return rows


def ok(result) -> str:
    assert result.exit_code == 0, result.output
    assert result.exception is None, repr(result.exception)
    return result.output


def error_line(result, option: str) -> str:
    """Check click's bad-usage shape (exit 2, one Error line for ``option``, no traceback); return the line."""
    assert result.exit_code == 2, result.output
    assert isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Traceback" not in result.output
    errors = [line for line in result.output.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1, result.output
    assert "--help" in result.output  # click's "Try 'seqlab compare --help' for help."
    assert errors[0].startswith(f"Error: Invalid value for '{option}'"), errors[0]
    return errors[0]


# --- The table --------------------------------------------------------------------------------------

def test_table_shows_the_closed_forms_in_english(invoke):
    output = ok(invoke("--tokens", "50", "--d-model", "32", "--no-time", "--lang", "en"))
    recurrence = cost.recurrence_multiplications(50, 32, 32)  # 50 * (32**2 + 32*32) = 102_400
    attention = cost.attention_multiplications(50, 32, 32)  # 50**2 * (32 + 32) = 160_000
    projections = cost.projection_multiplications(50, 32, 32, 32)  # 50 * 32 * 96 = 153_600
    assert (recurrence, attention, projections) == (102_400, 160_000, 153_600)
    assert "Recurrence against attention" in output
    # the scopes table: lesson, layer, kernels; closed form, counted (= formula), and who counted
    assert [row[:2] for row in scope_rows(output, "Elman RNN: W_xh and W_hh")] == \
        [["102,400", "102,400 (= formula)"]] * 3
    assert scope_rows(output, "attention call, Q, K, V left out") == \
        [["160,000", "160,000 (= formula)", "PyTorch's formulas: aten.mm (cpu)"]]
    # layer: 4 * 50 * 32**2 + 160_000 = 204_800 + 160_000 = 364_800 (Q, K, V and W_O)
    assert scope_rows(output, "attention, one head: Q, K, V, the call, W_O")[0][:2] == \
        ["364,800", "364,800 (= formula)"]
    assert [row[:2] for row in scope_rows(output, "attention, 8 heads: Q, K, V, the call, W_O")] == \
        [["364,800", "364,800 (= formula)"]] * 2
    assert projections + attention + 50 * 32 * 32 == 364_800
    assert cells(output, "Span: matrix products in a row") == ["50", "2", "50", "50"]
    # 4 ops per step; the call: QKᵀ, ÷√d, softmax, AV; LSTM and GRU a fixed number of ops per step
    spans = cells(output, "Span: operations in a row")
    assert spans[0] == "200" and spans[1].startswith("4 (the call: Q Kᵀ, ÷√d_k,")  # the cell names its scope
    assert all(int(ops) % 50 == 0 for ops in spans[2:])
    assert cells(output, "Wall time, the library layer") == ["—"] * 4
    assert "T = 50 tokens (o200k_base); d_model = 32" in output
    # 160_000 / 102_400 = 1.5625 -> "1.56", past the crossover at T = 32
    assert "attention does 1.56 times the recurrence's multiplications: more work, past the crossover" in output
    # layer scope: 364_800 / 102_400 = 3.5625 = 2 + 50/32
    assert "attention does 3.56 times the recurrence's multiplications: more work at every length" in output
    assert "Wall time, explicit machine" not in output  # only with --detailed


@pytest.mark.parametrize(("lang", "title", "recurrence", "attention"), [
    ("en", "Recurrence against attention", "26,214,400", "2,560,000"),
    ("es", "Recurrencia frente a atención", "26.214.400", "2.560.000"),
])
def test_lessons_worked_numbers_in_both_languages(invoke, lang, title, recurrence, attention):
    # L9: recurrence 2 * 50 * 512**2 = 26_214_400; attention 2 * 50**2 * 512 = 2_560_000
    output = ok(invoke("--tokens", "50", "--no-time", "--lang", lang))
    assert title in output
    assert [row[0] for row in scope_rows(output, {"en": "Elman RNN: W_xh and W_hh",
                                                  "es": "RNN de Elman: W_xh y W_hh"}[lang])] == [recurrence] * 3
    assert [row[0] for row in scope_rows(output, {"en": "attention call, Q, K, V left out",
                                                  "es": "llamada de atención, sin Q, K, V"}[lang])] == [attention]
    assert f"{recurrence} (= {'formula' if lang == 'en' else 'fórmula'})" in output
    # ratio 50/512 = 0.0977 (L9: "about ten times less work")
    assert ("0.0977" if lang == "en" else "0,0977") in output


def test_detailed_adds_the_explicit_machine_rows(invoke):
    output = ok(invoke("--tokens", "50", "--d-model", "32", "--no-time", "--lang", "en", "--detailed"))
    assert cells(output, "Wall time, explicit machine") == ["—"] * 4  # --no-time wins over --detailed
    assert cells(output, "Reach estimator, dtype")[:2] == ["hutchinson-8, float64", "hutchinson-8, float64"]
    # work in ops: the recurrence's 50 steps of mm, add, add, tanh + 50 independent W_xh x_t products
    assert cells(output, "Operations in the pass (work in ops)")[:2] == ["250", "4"]
    # multiplications per link of the chain: 102_400 / 50 = 2048 = 2 d² for every T; 160_000 / 2 = 80_000 = T² d
    # (LSTM 4 * 2048, GRU 3 * 2048)
    assert cells(output, "Multiplications per link of the chain") == \
        ["2,048", "80,000", "8,192", "6,144"]
    assert cells(output, "Ops the counter could not account for")[:2] == ["none", "none"]
    decay = cells(output, "Reach decay per step (log-linear fit)")
    assert 0 < float(decay[0]) < 1 and 0.8 <= float(decay[1]) <= 1.25


# --- JSON -------------------------------------------------------------------------------------------

def test_json_has_exact_values(invoke):
    data = json.loads(ok(invoke("--tokens", "50", "--d-model", "32", "--no-time", "--json")))
    assert (data["T"], data["d_model"], data["d_h"], data["d_k"], data["d_v"]) == (50, 32, 32, 32, 32)
    assert (data["source"], data["tokenizer"], data["score"], data["seed"]) == \
        ("synthetic (50 tokens)", "o200k_base", "scaled_dot", 0)
    rec, att = data["recurrence"], data["attention"]
    assert rec["closed_form"] == rec["counted"]["multiplications"] == rec["counted_library"]["multiplications"] \
        == 102_400  # 50 * (32**2 + 32*32)
    assert att["closed_form"] == att["counted"]["multiplications"] == att["counted_library"]["multiplications"] \
        == 160_000  # 50**2 * (32 + 32)
    assert att["projections_closed_form"] == att["projections_counted"]["multiplications"] == 153_600
    assert data["work_ratio"] == {"fraction": "25/16", "value": 1.5625}  # 160_000 / 102_400
    assert data["crossover"] == {"fraction": "32", "value": 32.0}
    assert rec["span"]["products"] == 50 and att["span"]["products"] == 2
    assert len(rec["reach"]["norms"]) == len(att["reach"]["norms"]) == 50
    assert rec["order"]["holds"] is False and att["order"]["holds"] is True
    assert att["key_value_order"]["holds"] is True and rec["key_value_order"] is None
    assert rec["time_library"] is None and att["time_explicit"] is None


def test_text_file(invoke, tmp_path):
    content = "El perro muerde al cartero. Al cartero muerde el perro.\n"
    path = tmp_path / "frase.txt"
    path.write_text(content, encoding="utf-8")
    T = len(tokenize(content))
    data = json.loads(ok(invoke("--text", str(path), "--d-model", "16", "--no-time", "--json")))
    assert data["source"] == str(path) and data["T"] == T
    assert data["recurrence"]["closed_form"] == T * (16 * 16 + 16 * 16)  # T * 512
    assert data["attention"]["closed_form"] == T * T * (16 + 16)  # T**2 * 32
    output = ok(invoke("--text", str(path), "--d-model", "16", "--no-time", "--lang", "es"))
    assert "Recurrencia frente a atención" in output
    assert scope_rows(output, "RNN de Elman: W_xh y W_hh")[0][0] == format_integer(T * 512, "es")
    assert scope_rows(output, "llamada de atención, sin Q, K, V")[0][0] == format_integer(T * T * 32, "es")


def test_text_from_stdin(invoke):
    content = "¿Quién lee en orden? La recurrencia.\n"
    T = len(tokenize(content))
    data = json.loads(ok(invoke("--text", "-", "--d-model", "16", "--no-time", "--json",
                                input=content.encode("utf-8"))))
    assert data["source"] == "stdin" and data["T"] == T
    assert data["attention"]["counted"]["multiplications"] == T * T * 32  # T**2 * (16 + 16)


# --- Bad usage --------------------------------------------------------------------------------------

@pytest.fixture()
def files(tmp_path):
    """Files that are not acceptable text, by name."""
    empty = tmp_path / "empty.txt"
    empty.write_bytes(b"")
    bom_nul = tmp_path / "utf16.txt"
    bom_nul.write_bytes(b"\xff\xfe\x00abc")
    latin1 = tmp_path / "latin1.txt"
    latin1.write_bytes("café au lait".encode("latin-1"))
    binary = tmp_path / "random.bin"
    binary.write_bytes(bytes(range(256)) * 4)
    return {"empty": empty, "utf16": bom_nul, "latin1": latin1, "binary": binary, "dir": tmp_path}


@pytest.mark.parametrize(("args", "option", "value"), [
    (["--tokens", "0"], "--tokens", "0"),
    (["--tokens", "abc"], "--tokens", "abc"),
    (["--tokens", "1.5"], "--tokens", "1.5"),
    (["--d-model", "0"], "--d-model", "0"),
    (["--d-model", "-3"], "--d-model", "-3"),
    (["--d-h", "0"], "--d-h", "0"),
    (["--score", "foo"], "--score", "'foo'"),
    (["--lang", "fr"], "--lang", "'fr'"),
    (["--spectral-radius", "0"], "--spectral-radius", "received 0"),
    (["--spectral-radius", "-1"], "--spectral-radius", "received -1"),
    (["--spectral-radius", "nan"], "--spectral-radius", "received nan"),
    (["--spectral-radius", "inf"], "--spectral-radius", "received inf"),
    (["--text", "missing.txt"], "--text", "'missing.txt' does not exist"),
    (["--tokenizer", "nope"], "--tokenizer", "'nope'"),
    (["--d-model", "100000"], "--d-model", "100000"),
])
def test_bad_value_names_option_and_value(invoke, args, option, value):
    line = error_line(invoke("--no-time", "--lang", "en", *args), option)
    assert re.search(rf"(?<![\w.-]){re.escape(value)}(?![\w.])", line), line  # the value as a whole word


@pytest.mark.parametrize(("args", "option"), [
    (["--tokens", "0"], "--tokens"),
    (["--tokens", "abc"], "--tokens"),
    (["--tokens", "1.5"], "--tokens"),
    (["--d-model", "0"], "--d-model"),
    (["--d-model", "-3"], "--d-model"),
    (["--d-h", "0"], "--d-h"),
])
def test_bad_number_is_refused_by_its_option(invoke, args, option):
    line = error_line(invoke("--no-time", *args), option)
    assert "integer" in line


def test_score_error_lists_the_scores(invoke):
    line = error_line(invoke("--no-time", "--score", "foo"), "--score")
    assert all(score in line for score in SCORES)


@pytest.mark.parametrize(("name", "expected"), [
    ("dir", "is a directory"),
    ("empty", "is empty"),
    ("utf16", "NUL byte at offset 2"),  # b"\xff\xfe\x00abc": the NUL is found before the bad UTF-8
    ("latin1", "not valid UTF-8: byte 0xe9 at offset 3"),  # "caf" then é in Latin-1
    ("binary", "looks binary"),
])
def test_unacceptable_text_file(invoke, files, name, expected):
    path = files[name]
    line = error_line(invoke("--no-time", "--text", str(path)), "--text")
    assert repr(str(path)) in line and expected in line


def test_text_and_tokens_together(invoke, files):
    line = error_line(invoke("--no-time", "--text", str(files["latin1"]), "--tokens", "5"), "--text")
    assert "--tokens" in line and "not both" in line


def test_empty_stdin(invoke):
    line = error_line(invoke("--no-time", "--text", "-", input=b""), "--text")
    assert "standard input" in line and "empty" in line


def test_huge_tokens_fails_fast_without_building_anything(invoke, monkeypatch):
    def must_not_run(*args, **kwargs):
        raise AssertionError("the refusal must come before any tokens or tensors are built")

    monkeypatch.setattr(seqlab.text, "synthetic_tokens", must_not_run)
    monkeypatch.setattr(seqlab.studies.compare, "run_compare", must_not_run)
    result = invoke("--no-time", "--tokens", "10000000")  # fast: the patched builders above were never called
    line = error_line(result, "--tokens")
    assert "T = 10000000" in line and "GiB" in line


def test_too_wide_model(invoke):
    line = error_line(invoke("--no-time", "--d-model", "100000"), "--d-model")
    assert "100000" in line and "[1, 4096]" in line


def test_memory_refusal_at_an_accepted_width(invoke):
    # d_model = 4096 is within range, but 100,000 tokens need hundreds of GiB of attention maps
    line = error_line(invoke("--no-time", "--tokens", "100000", "--d-model", "4096"), "--tokens")
    assert "d_model = 4096" in line and "GiB" in line


@pytest.mark.parametrize(("args", "option", "value"), [
    (["--tokens", "1"], "--tokens", "received 1"),  # says '--d-model'
    (["--tokens", "5", "--d-model", "100000"], "--d-model", "100000"),
    (["--d-h", "100000"], "--d-h", "100000"),  # says '--d-model'
    (["--tokens", "5", "--tokenizer", "nope"], "--tokenizer", "'nope'"),
    (["--text", "__OK_TXT__", "--d-model", "100000"], "--d-model", "100000"),
])
def test_error_names_the_option_at_fault(invoke, files, args, option, value):
    args = [str(files["dir"] / "ok.txt") if arg == "__OK_TXT__" else arg for arg in args]
    (files["dir"] / "ok.txt").write_text("El perro muerde al cartero.\n", encoding="utf-8")
    line = error_line(invoke("--no-time", *args), option)
    assert value in line


def test_saturated_recurrence_renders(invoke):
    # radius 1000 saturates tanh: every reach norm of the recurrence is exactly 0.0 in float64
    output = ok(invoke("--tokens", "20", "--d-model", "16", "--no-time", "--lang", "en",
                       "--spectral-radius", "1000"))
    assert "0: below the smallest float64" in output


# --- Acceptance: a real Spanish text of about 3,000 tokens -----------------------------------------

@pytest.fixture(scope="module")
def quijote_outputs(quijote_path):
    """(table in Spanish, JSON) of ``compare --text`` on the chapter at d_model = 16 without times: two CLI runs end
    to end (options, reading, tokenizing, rendering), their measurement made once. ``run_compare`` is wrapped so
    that the second run, asked the same tokens and configuration, is answered the first run's result; the wrapper
    records each distinct measurement, and the test sees that there was one."""
    from conftest import CLI_ENV, compare_answered_once
    from typer.testing import CliRunner

    from seqlab.cli import app

    measured: dict = {}
    once = compare_answered_once(measured)

    def invoke(*args: str) -> str:
        return ok(CliRunner().invoke(app, ["compare", "--text", str(quijote_path), "--no-time", "--d-model", "16",
                                           *args], env=CLI_ENV))

    patch = pytest.MonkeyPatch()
    patch.setattr(seqlab.studies.compare, "run_compare", once)
    try:
        table, as_json = invoke("--lang", "es"), invoke("--json")
    finally:
        patch.undo()
    assert len(measured) == 1  # one measurement, read by both outputs
    return table, as_json


def test_acceptance_quijote_table(quijote_outputs, quijote_path):
    T = len(tokenize(read_text(str(quijote_path)).content))
    assert T > 2000
    # d_model = 16, not the paper's 512: the same counts by the same formulas (the paper's width on a real Spanish
    # text is test_compare's test_builtin_spanish_text_at_the_papers_width); the measurement is shared with the JSON
    output = quijote_outputs[0]
    assert "Recurrencia frente a atención" in output
    assert f"T = {format_integer(T, 'es')} tokens (o200k_base); d_model = 16" in output
    # 2 * T * d**2 and 2 * T**2 * d with every width d (L7)
    assert scope_rows(output, "RNN de Elman: W_xh y W_hh")[0][0] == format_integer(2 * T * 16**2, "es")
    assert scope_rows(output, "llamada de atención, sin Q, K, V")[0][0] == format_integer(2 * T**2 * 16, "es")


def test_acceptance_quijote_json(quijote_outputs, quijote_path):
    T = len(tokenize(read_text(str(quijote_path)).content))
    assert T > 2000
    data = json.loads(quijote_outputs[1])
    assert data["T"] == T and data["source"] == str(quijote_path)
    assert data["recurrence"]["closed_form"] == data["recurrence"]["counted"]["multiplications"] == T * 512
    assert data["attention"]["closed_form"] == data["attention"]["counted"]["multiplications"] == T * T * 32
    assert data["recurrence"]["span"]["products"] == T and data["attention"]["span"]["products"] == 2
    assert data["attention"]["order"]["holds"] is True and data["recurrence"]["order"]["holds"] is False
    # at T ≈ 2,900 the recurrence's reach from position 1 underflows float64 (L3); attention's does not (L4)
    assert data["recurrence"]["reach"]["norms"][0] == 0.0 and data["recurrence"]["reach"]["zeros"] > 0
    assert data["attention"]["reach"]["norms"][0] > 0 and data["attention"]["reach"]["zeros"] == 0


def test_the_command_line_starts_without_torch():
    """Every command imports its study when it runs, so `seqlab --help` answers in a fraction of a second."""
    import subprocess
    import sys

    probe = "import sys, seqlab.cli; print(sorted(m for m in ('torch', 'transformers', 'fastapi') if m in sys.modules))"
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout.strip()
    assert loaded == "[]"
