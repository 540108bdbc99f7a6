"""``seqlab check``: the twelve claims L1–L12 hold against their measurements; JSON; exit codes 0, 1 and 2.

One full run at the default sizes is shared by the module (a few seconds); the command line is then tested
with that result patched in, with a real run of a few claims, and with a measurement patched to fail.
"""

from __future__ import annotations

import json
from dataclasses import replace
from fractions import Fraction

import pytest
from typer.testing import CliRunner

import seqlab.measure.trace
import seqlab.measure.work
import seqlab.studies.check as check_study
from seqlab.cli import app
from seqlab.errors import SeqlabError
from seqlab.render.check import check_json, claim_text
from seqlab.studies.check import CLAIMS, CheckConfig, parse_claims, run_check

#: A wide, colourless console for in-process CLI runs (as conftest's CLI_ENV for compare).
CLI_ENV = {"COLUMNS": "200", "NO_COLOR": "1", "FORCE_COLOR": None, "TTY_COMPATIBLE": None}


@pytest.fixture(scope="module")
def result():
    """Every claim at the default sizes, measured once."""
    return run_check()


def invoke(*args: str):
    return CliRunner().invoke(app, ["check", *args], env=CLI_ENV)


@pytest.fixture()
def patched(monkeypatch, result):
    """The CLI with ``run_check`` answering the module's result (no second measurement)."""
    monkeypatch.setattr(check_study, "run_check", lambda config, progress=None: result)
    return invoke


# --- The library ----------------------------------------------------------------------------------------

def test_all_twelve_claims_hold(result):
    assert [c.claim for c in result.checks] == list(CLAIMS) == [f"L{n}" for n in range(1, 13)]
    failing = {c.claim: c.error or c.values for c in result.checks if not c.holds}
    assert failing == {}
    assert result.all_hold and result.held == 12


def test_the_figures_behind_the_verdicts(result):
    values = {c.claim: c.values for c in result.checks}
    assert values["L1"]["span_products"] == values["L1"]["lengths"] == (400, 800)  # T steps in a row
    assert values["L2"]["span_ops"] == (3, 3) and values["L2"]["span_products"] == (2, 2)
    assert values["L3"]["whh_products"] == (31, 63)  # T - 1 products by W_hh at T = 32, 64
    assert values["L4"]["path_products"] == (2, 2)
    assert values["L5"]["counted_loop"] == 64 * (40**2 + 40 * 24) == 163_840
    assert values["L6"]["counted_sdpa"] == 64**2 * (24 + 40) == 262_144
    assert values["L7"]["ratios"] == {16: Fraction(1, 2), 32: Fraction(1), 64: Fraction(2)}
    assert values["L8"]["time_ratio"] < values["L8"]["work_ratio"] == 32  # T = 1024 = 32 d
    worked = values["L9"]["lengths"]
    assert (worked[50]["recurrence"], worked[50]["attention"]) == (26_214_400, 2_560_000)  # 2·50·512², 2·50²·512
    assert (worked[1000]["recurrence"], worked[1000]["attention"]) == (524_288_000, 1_024_000_000)
    assert worked[2000]["ratio"] == Fraction(2000, 512)  # 3.90625, the lesson's 3.9
    assert values["L10"]["sentences_attention_change"] <= values["L10"]["tolerance"]
    assert len(values["L11"]["lit"]) == 3 and values["L11"]["boxes"] == 15
    assert values["L12"]["answers"] == {"q1": "c", "q2": "512", "q3": "b", "q4": "a, b, c"}


def test_notes_where_the_lesson_simplifies(result):
    notes = {c.claim: claim_text(c, "en").note for c in result.checks}
    assert "(k, v) pairs leaves every output unchanged" in notes["L10"]
    assert "3.906" in notes["L9"] and "3.9 for the last" in notes["L9"]
    assert "14 rectangles" in notes["L11"]


def test_parse_claims():
    assert parse_claims("L8,1, l1") == ("L1", "L8")
    assert parse_claims(["L12", "L2"]) == ("L2", "L12")
    for bad in ("L13", "L0", "", "x", "L1,,L2", "L1, x"):
        with pytest.raises(SeqlabError) as error:
            parse_claims(bad)
        assert error.value.parameter == "claims"
        assert f"received {bad!r}" in str(error.value) and "(such as L1,L8 or 1,8)" in str(error.value)
    with pytest.raises(SeqlabError, match="'L1,,L2', which has an empty item"):
        parse_claims("L1,,L2")
    with pytest.raises(SeqlabError, match="'L1, x', in which 'x' is not one"):
        parse_claims("L1, x")


def test_l8_states_what_its_verdict_tests(result):
    """The headline is the verdict, time_ratio < work_ratio, with both ratios: not 'attention is faster'."""
    l8 = next(c for c in result.checks if c.claim == "L8")
    text = claim_text(l8, "en")
    work, time = l8.values["work_ratio"], l8.values["time_ratio"]
    assert l8.holds == (time < work)
    from seqlab.i18n import format_number

    assert text.statement == (f"Time does not follow work: attention does 32 times the recurrence's multiplications "
                              f"and takes {format_number(time, 'en')} times its time")
    assert "buys time" not in text.statement and text.figure.startswith("attention / recurrence: work ×32, time ×")
    blocks = (l8.values["recurrence_blocks"], l8.values["attention_blocks"])
    assert min(blocks) >= 1 and f"medians of {blocks[0]} and {blocks[1]} timed blocks" in text.measured
    rough = replace(l8, values={**l8.values, "recurrence_blocks": 1})
    assert "The timings are rough (fewer than 3 timed blocks" in claim_text(rough, "en").note


def test_the_gru_has_no_cell_state(result):
    l3 = next(c for c in result.checks if c.claim == "L3")
    english, spanish = claim_text(l3, "en").note, claim_text(l3, "es").note
    assert "the cell state c_t in the LSTM, the (1 − z_t) ⊙ h_{t−1} term in the GRU, which has no cell state" in english
    assert "bypass through the cell state" not in english and "(1 − z_t) ⊙ h_{t−1} en la GRU" in spanish


def test_numbers_in_the_notes_follow_the_language(result):
    l9 = next(c for c in result.checks if c.claim == "L9")
    assert "3.9 for the last" in claim_text(l9, "en").note
    spanish = claim_text(l9, "es").note
    assert "3,9 para la última" in spanish and "3.9" not in spanish and "2.000/512 = 3,906" in spanish


def test_the_report_footer_names_no_option_it_lacks(result):
    from seqlab.render.check import summary

    assert "--full for larger ones" in summary(result, "en")
    footer = summary(result, "en", command="report")
    assert footer.startswith("12 of 12 claims hold (the default sizes of seqlab check; seqlab check --full runs "
                             "larger ones;")
    preview = replace(result, checks=result.checks[:4])
    assert "(a preview: 4 of the 12 claims; seqlab check checks all of them;" in summary(preview, "en", "report")


def test_a_raising_measurement_is_reported_not_skipped(monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("counter unavailable")

    monkeypatch.setattr(seqlab.measure.work, "count_multiplications", broken)
    outcome = run_check(CheckConfig(claims=("L5",)))
    (l5,) = outcome.checks
    assert not l5.holds and l5.error == "RuntimeError: counter unavailable" and not outcome.all_hold
    assert "could not be measured" in claim_text(l5, "en").figure


# --- The command ----------------------------------------------------------------------------------------

def test_cli_lists_every_claim(patched):
    output = patched("--lang", "en")
    assert output.exit_code == 0, output.output
    verdicts = [line for line in output.output.splitlines() if line.startswith("✓ L")]
    assert [line.split()[1] for line in verdicts] == list(CLAIMS)
    assert output.output.count("Measured: ") == 12 and output.output.count("Figure: ") == 12
    assert "12 of 12 claims hold" in output.output
    assert "26,214,400 against 2,560,000" in output.output


def test_cli_in_spanish(patched):
    output = patched("--lang", "es")
    assert output.exit_code == 0, output.output
    assert "Se cumplen 12 de 12 afirmaciones" in output.output and "26.214.400 frente a 2.560.000" in output.output


def test_cli_json_lists_twelve_claims_with_figures(patched):
    output = patched("--json", "--lang", "en")
    assert output.exit_code == 0, output.output
    document = json.loads(output.output)
    assert document["all_hold"] and document["held"] == document["total"] == 12
    assert [c["claim"] for c in document["claims"]] == list(CLAIMS)
    for claim in document["claims"]:
        assert claim["holds"] and claim["figure"] and claim["measured"] and claim["values"]
    l7 = document["claims"][6]["values"]
    assert l7["crossover"] == {"fraction": "32", "value": 32.0}


def test_cli_real_run_of_some_claims():
    output = invoke("--only", "L5,L7", "--json")
    assert output.exit_code == 0, output.output
    document = json.loads(output.output)
    assert [c["claim"] for c in document["claims"]] == ["L5", "L7"] and document["all_hold"]


def test_cli_exits_1_when_a_measurement_disagrees(monkeypatch):
    real = seqlab.measure.trace.measure_span

    def flat_chain(function, *args, **kwargs):  # a recurrence whose chain did not grow with T
        span = real(function, *args, **kwargs)
        return type(span)(**{**span.__dict__, "products": 1})

    monkeypatch.setattr(seqlab.measure.trace, "measure_span", flat_chain)
    output = invoke("--only", "L1", "--lang", "en")
    assert output.exit_code == 1, output.output
    assert "✗ L1  does not hold" in output.output and "0 of 1 claims hold" in output.output
    assert "Traceback" not in output.output


def test_json_of_a_failed_claim(monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("no counter")

    monkeypatch.setattr(seqlab.measure.work, "count_multiplications", broken)
    document = json.loads(check_json(run_check(CheckConfig(claims=("L6",))), "en"))
    assert not document["all_hold"] and document["claims"][0]["error"] == "RuntimeError: no counter"


@pytest.mark.parametrize(("args", "option", "value"), [
    (("--only", "L13"), "--only", "'L13'"),
    (("--only", ""), "--only", "''"),
    (("--only", "L1,,L2"), "--only", "'L1,,L2', which has an empty item"),
    (("--lang", "fr"), "--lang", "'fr'"),
])
def test_bad_usage_exits_2(args, option, value):
    output = invoke(*args)
    assert output.exit_code == 2 and "Traceback" not in output.output
    errors = [line for line in output.output.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1 and errors[0].startswith(f"Error: Invalid value for '{option}'") and value in errors[0]
