"""``seqlab check``: three-valued verdicts for L1–L12, their conditions, JSON, --list and exit codes 0, 1 and 2.

One real run at small sizes is shared by the module; the command line is tested with that result patched in,
with a real run of a few claims, and with a measurement patched to fail. The per-claim tests that patch a
measurement and see the verdict change are in ``tests/test_check_verdicts.py``.
"""

from __future__ import annotations

import json
from dataclasses import replace
from fractions import Fraction
from pathlib import Path

import pytest
from typer.testing import CliRunner

import seqlab.measure.trace
import seqlab.measure.work
import seqlab.studies.check as check_study
from seqlab.cli import app
from seqlab.errors import SeqlabError
from seqlab.render.check import check_json, claim_text, summary
from seqlab.render.check_legend import legend
from seqlab.studies.check import (CAVEAT, CLAIMS, FAILS, HOLDS, NOT_JUDGED, VERDICTS, CheckConfig, CheckSizes,
                                  parse_claims, run_check)

#: A wide, colourless console for in-process CLI runs (as conftest's CLI_ENV for compare).
CLI_ENV = {"COLUMNS": "200", "NO_COLOR": "1", "FORCE_COLOR": None, "TTY_COMPATIBLE": None}
#: Small sizes for the module's one real run (the default sizes are the CLI's; they take seconds more).
SMALL = CheckSizes(span_lengths=(16, 32), reach_draws=2, reach_lengths=(8, 16, 32, 64), count_length=16,
                   count_widths=(6, 10), crossover_width=8, layer_heads=(1, 2), time_length=64, time_width=8,
                   time_batch=4, min_run_time=0.01, worked_lengths=(50, 1000), span_widths=(2, 4), order_length=8,
                   figure=(4, 4, 16, 2))


@pytest.fixture(scope="module")
def result():
    """Every claim at small sizes, measured once. L8 times on one thread only: at these tiny sizes a second
    thread adds only overhead, which would say nothing about the lesson (its rules are tested on fake timings)."""
    return run_check(CheckConfig(sizes=SMALL, threads=1))


def invoke(*args: str):
    return CliRunner().invoke(app, ["check", *args], env=CLI_ENV)


@pytest.fixture()
def patched(monkeypatch, result):
    """The CLI with ``run_check`` answering the module's result (no second measurement)."""
    monkeypatch.setattr(check_study, "run_check", lambda config, progress=None: result)
    return invoke


def by_claim(result):
    return {c.claim: c for c in result.checks}


# --- The library ----------------------------------------------------------------------------------------

def test_verdicts_of_the_twelve_claims(result):
    """Counts and structure hold plainly; L3, L4, L7 and L9 hold with the caveat the measurement shows. L8 is
    timed, so only its shape is asserted here (its decisions are tested with patched timings)."""
    assert [c.claim for c in result.checks] == list(CLAIMS) == [f"L{n}" for n in range(1, 13)]
    verdicts = {c.claim: c.verdict for c in result.checks}
    assert all(c.error is None for c in result.checks), {c.claim: c.error for c in result.checks if c.error}
    expected = {**{claim: HOLDS for claim in ("L1", "L2", "L5", "L6", "L10", "L11", "L12")},
                **{claim: CAVEAT for claim in ("L3", "L4", "L7", "L9")}}
    assert {claim: verdicts[claim] for claim in expected} == expected
    assert verdicts["L8"] in VERDICTS
    checks = by_claim(result)
    assert checks["L3"].condition["caveats"] == ["growth_needs_large_radius"]
    assert checks["L4"].condition["caveats"] == ["weight_shrinks_with_T"]
    layer_caveat = ["layer_scope_attention_costs_more"]
    assert checks["L7"].condition["caveats"] == checks["L9"].condition["caveats"] == layer_caveat
    assert result.caveats >= 4 and result.held == sum(v in (HOLDS, CAVEAT) for v in verdicts.values())
    assert result.not_judged == sum(v == NOT_JUDGED for v in verdicts.values())


def test_the_figures_behind_the_verdicts(result):
    values = {c.claim: c.values for c in result.checks}
    assert values["L1"]["span_products"] == values["L1"]["lengths"] == (16, 32)  # T steps in a row
    assert values["L2"]["span_ops"] == (3, 3) and values["L2"]["span_products"] == (2, 2)
    assert values["L3"]["whh_products"] == (31, 63)  # T - 1 products by W_hh at T = 32, 64
    assert values["L4"]["path_products"] == (2, 2)
    assert values["L5"]["counted_nn_rnn_meta"] == values["L5"]["closed_form"] == 16 * (10**2 + 10 * 6)  # 2,560
    assert values["L6"]["counted_sdpa_meta"] == 16**2 * (6 + 10) == 4_096
    assert values["L7"]["ratios"] == {4: Fraction(1, 2), 8: Fraction(1), 16: Fraction(2)}
    layer = values["L7"]["layer"]
    assert {T: row["ratio"][2] for T, row in layer.items()} == {4: Fraction(5, 2), 8: Fraction(3), 16: Fraction(4)}
    assert layer[4]["attention"][1] == 4 * 4 * 8**2 + 2 * 4**2 * 8  # 4·T·d² + 2·T²·d = 1,280
    worked = values["L9"]["lengths"]
    assert (worked[50]["recurrence"], worked[50]["attention"]) == (26_214_400, 2_560_000)  # 2·50·512², 2·50²·512
    assert (worked[1000]["recurrence"], worked[1000]["attention"]) == (524_288_000, 1_024_000_000)
    assert worked[50]["spans_by_width"] == ((50, 2), (50, 2))  # traced at widths 2 and 4: the same chain
    assert values["L9"]["layer"][50]["attention"][2] == 4 * 50 * 512**2 + 2 * 50**2 * 512  # 54,988,800
    assert values["L10"]["sentences_attention_change"] <= values["L10"]["tolerance"]
    assert len(values["L11"]["lit"]) == 3 and values["L11"]["boxes"] == 15
    assert values["L12"]["answers"] == {"q1": "c", "q2": "512", "q3": "b", "q4": "a, b, c"}


def test_counts_name_their_source(result):
    values = {c.claim: c.values for c in result.checks}
    assert set(values["L5"]["sources"].values()) == {"pytorch"}
    assert values["L6"]["sources"]["counted_sdpa_meta"] == "pytorch"
    assert values["L7"]["sources"] == values["L9"]["sources"] == ["pytorch"]
    assert values["L9"]["layer"][50]["attention_source"] == ["pytorch"]


def test_l3_measures_where_growth_starts_with_inputs(result):
    l3 = by_claim(result)["L3"]
    factors = l3.values["factors"]
    assert list(factors) == list(SMALL.radii)
    for radius, (at_zero, with_inputs) in factors.items():
        assert at_zero == pytest.approx(radius, rel=0.05)  # h = 0: the bare product, factor ≈ ρ (T = 64)
        assert with_inputs < at_zero * 1.05  # tanh only shrinks
    onset = l3.condition["onset_with_inputs"]
    assert onset is None or onset > 1.25


def test_l4_reach_falls_about_as_one_over_T(result):
    l4 = by_claim(result)["L4"]
    assert -1.5 < l4.values["reach_exponent"] < -0.5  # dilution by the softmax over T keys


def test_texts_in_both_languages(result):
    for check in result.checks:
        for lang in ("en", "es"):
            text = claim_text(check, lang)
            assert text.statement and text.measured and text.figure and text.condition, (check.claim, lang)
    l7 = claim_text(by_claim(result)["L7"], "en")
    assert l7.verdict == "holds with a caveat" and "attention costs more at every T measured (2 + T/d)" in l7.condition
    assert claim_text(by_claim(result)["L7"], "es").verdict == "se cumple con una salvedad"
    l3 = claim_text(by_claim(result)["L3"], "en")
    assert "the GRU's z_t ⊙ h_{t−1} in h_t = (1 − z_t) ⊙ n_t + z_t ⊙ h_{t−1}" in l3.note
    assert "c_t = f_t ⊙ c_{t−1} + i_t ⊙ g_t" in l3.note and "(1 − z_t) ⊙ h_{t−1}" not in l3.note
    assert "traced at widths 2 and 4" in claim_text(by_claim(result)["L9"], "en").measured
    l9 = claim_text(by_claim(result)["L9"], "es").note
    assert "1.000/512 = 1,953" in l9 and "3.9" not in l9


def test_summary_counts_caveats(result):
    line = summary(result, "en")
    assert line.startswith(f"{result.held} of 12 claims hold (default sizes; --full for larger ones;")
    assert "CPU threads: 1, PyTorch" in line  # L8 timed on one thread only
    assert "CPU threads: 1 for tracing and counting, 2 for L8's timings besides 1" in summary(replace(result, threads=2))
    assert f"With a caveat: L3, L4, L7" in line
    assert summary(result, "es").startswith(f"Se cumplen {result.held} de 12 afirmaciones")
    preview = replace(result, checks=result.checks[:2])
    assert "(a preview: 2 of the 12 claims; seqlab check checks all of them; " in summary(preview, "en", "report")
    assert "With a caveat" not in summary(preview, "en")


def test_parse_claims():
    assert parse_claims("L8,1, l1") == ("L1", "L8")
    assert parse_claims(["L12", "L2"]) == ("L2", "L12")
    for bad in ("L13", "L0", "", "x", "L1,,L2", "L1, x"):
        with pytest.raises(SeqlabError) as error:
            parse_claims(bad)
        assert error.value.parameter == "claims"
        assert f"received {bad!r}" in str(error.value) and "(such as L1,L8 or 1,8)" in str(error.value)


def test_threads_must_be_positive():
    with pytest.raises(SeqlabError, match="threads"):
        run_check(CheckConfig(claims=("L5",), threads=0))


def test_thread_state_is_restored(monkeypatch):
    import torch

    before = torch.get_num_threads()
    run_check(CheckConfig(claims=("L5",), sizes=SMALL))
    assert torch.get_num_threads() == before


def test_a_raising_measurement_is_reported_not_skipped(monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("counter unavailable")

    monkeypatch.setattr(seqlab.measure.work, "count_multiplications", broken)
    outcome = run_check(CheckConfig(claims=("L5",), sizes=SMALL))
    (l5,) = outcome.checks
    assert l5.verdict == NOT_JUDGED and l5.error == "RuntimeError: counter unavailable" and not outcome.all_hold
    assert "could not be measured" in claim_text(l5, "en").figure
    assert "decides nothing: not judged" in claim_text(l5, "en").condition
    assert "no decide nada: sin decidir" in claim_text(l5, "es").condition


def test_legend_in_both_languages():
    english, spanish = legend("en"), legend("es")
    assert [e.claim for e in english] == [e.claim for e in spanish] == list(CLAIMS)
    for en, es in zip(english, spanish):
        assert en.title and en.statement.endswith(".") and es.title != en.title and es.statement != en.statement


# --- The command ----------------------------------------------------------------------------------------

def test_cli_lists_every_claim_with_verdict_and_condition(patched, result):
    output = patched("--lang", "en")
    assert output.exit_code == 0, output.output
    marks = {HOLDS: "✓", CAVEAT: "~", NOT_JUDGED: "?", FAILS: "✗"}
    heads = [line for line in output.output.splitlines() if line[:3] in ("✓ L", "~ L", "? L", "✗ L")]
    assert [line.split()[1] for line in heads] == list(CLAIMS)
    assert [line[0] for line in heads] == [marks[c.verdict] for c in result.checks]
    assert output.output.count("Condition: ") == 12 and output.output.count("Figure: ") == 12
    assert "~ L7  holds with a caveat:" in output.output and "26,214,400 against 2,560,000" in output.output


def test_cli_in_spanish(patched):
    output = patched("--lang", "es")
    assert output.exit_code == 0, output.output
    assert "se cumple con una salvedad" in output.output and "Condición: " in output.output
    assert "26.214.400 frente a 2.560.000" in output.output


def test_cli_json_has_verdict_condition_and_sources(patched):
    output = patched("--json", "--lang", "en")
    assert output.exit_code == 0, output.output
    document = json.loads(output.output)
    assert document["all_hold"] == all(c["verdict"] != FAILS for c in document["claims"])
    assert [c["claim"] for c in document["claims"]] == list(CLAIMS)
    for claim in document["claims"]:
        assert claim["verdict"] in VERDICTS and claim["condition"]["rule"] and claim["condition_text"]
        assert claim["figure"] and claim["values"]
    l7 = document["claims"][6]
    assert l7["verdict"] == CAVEAT and l7["condition"]["caveats"] == ["layer_scope_attention_costs_more"]
    assert l7["values"]["crossover"] == {"fraction": "8", "value": 8.0}
    assert document["claims"][4]["sources"] == {"counted_loop": "pytorch", "counted_nn_rnn": "pytorch",
                                                "counted_nn_rnn_meta": "pytorch"}


def test_cli_exit_code_follows_the_verdicts(monkeypatch, result):
    caveats_only = replace(result, checks=tuple(replace(c, verdict=CAVEAT) for c in result.checks))
    monkeypatch.setattr(check_study, "run_check", lambda config, progress=None: caveats_only)
    assert invoke("--lang", "en").exit_code == 0  # caveats do not fail
    one_fails = replace(result, checks=(replace(result.checks[0], verdict=FAILS), *result.checks[1:]))
    monkeypatch.setattr(check_study, "run_check", lambda config, progress=None: one_fails)
    output = invoke("--lang", "en")
    assert output.exit_code == 1 and "✗ L1  does not hold" in output.output


@pytest.mark.parametrize(("lang", "title"), [("en", "L3   Path in the recurrence"),
                                             ("es", "L3   Camino en la recurrencia")])
def test_cli_list_prints_the_legend_without_measuring(monkeypatch, lang, title):
    def never(*args, **kwargs):
        raise AssertionError("--list must not measure")

    monkeypatch.setattr(check_study, "run_check", never)
    output = invoke("--list", "--lang", lang)
    assert output.exit_code == 0, output.output
    assert title in output.output
    claims = [line.split()[0] for line in output.output.splitlines() if line[:1] == "L" and line[1].isdigit()]
    assert claims == list(CLAIMS)


def test_cli_real_run_of_some_claims():
    output = invoke("--only", "L5,L7", "--json")
    assert output.exit_code == 0, output.output
    document = json.loads(output.output)
    assert [c["claim"] for c in document["claims"]] == ["L5", "L7"] and document["all_hold"]
    assert [c["verdict"] for c in document["claims"]] == [HOLDS, CAVEAT] and document["caveats"] == 1


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
    document = json.loads(check_json(run_check(CheckConfig(claims=("L6",), sizes=SMALL)), "en"))
    assert not document["all_hold"] and document["claims"][0]["error"] == "RuntimeError: no counter"
    assert document["claims"][0]["verdict"] == NOT_JUDGED  # nothing was measured: nothing is called false


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


def test_the_whole_check_document_validates_against_its_schema(result):
    """Every claim, L1–L12 (the module's run) and B1–B5, in both languages: the claim names, the sources (an object
    for the scoped claims, a list where one counter is named), and ``holds`` null exactly where nothing was decided."""
    import jsonschema

    from seqlab.render.check import check_json

    schema = json.loads((Path(check_study.__file__).parent.parent / "schemas" / "check.schema.json").read_text())
    beyond = run_check(CheckConfig(claims=("B1", "B2", "B3", "B4", "B5"), sizes=SMALL, threads=1))
    for run, names in ((result, {f"L{n}" for n in range(1, 13)}), (beyond, {f"B{n}" for n in range(1, 6)})):
        for lang in ("en", "es"):
            document = json.loads(check_json(run, lang))
            jsonschema.validate(document, schema)
            assert {claim["claim"] for claim in document["claims"]} == names
            assert all((claim["holds"] is None) == (claim["verdict"] == "not_judged") for claim in document["claims"])


def test_a_raised_measurement_is_not_judged_in_both_languages_and_fails_the_run(monkeypatch):
    """Issue 38: a measurement that raises decided nothing (not judged, with its error), yet the run did not complete:
    exit code 1, so CI still sees it."""
    def broken(*args, **kwargs):
        raise RuntimeError("no counter")

    monkeypatch.setattr(seqlab.measure.work, "count_multiplications", broken)
    outcome = run_check(CheckConfig(claims=("L5",), sizes=SMALL))
    (l5,) = outcome.checks
    assert (l5.verdict, outcome.not_judged, outcome.all_hold) == (NOT_JUDGED, 1, False)
    assert claim_text(l5, "en").holds is None and claim_text(l5, "es").verdict == "sin decidir"
