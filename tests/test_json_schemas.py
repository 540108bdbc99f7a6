"""JSON Schemas of the ``--json`` outputs (src/seqlab/schemas, seqlab.render.json_schema): current and true.

Each schema file is what ``python -m seqlab.render.json_schema`` writes from the result dataclasses; real
output of every command, at tiny sizes, validates against its schema and starts with its
``schema_version``; documents with a key missing, a wrong type, an unknown key or another version fail.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from seqlab.cli import app
from seqlab.render.json_output import DOCUMENTS, SCHEMA_VERSIONS, schema, to_json
from seqlab.render.json_schema import schema_text

jsonschema = pytest.importorskip("jsonschema")

TESTS = Path(__file__).resolve().parent
SCHEMAS = TESTS.parent / "src" / "seqlab" / "schemas"
ENV = {"COLUMNS": "200", "NO_COLOR": "1", "FORCE_COLOR": None, "TTY_COMPATIBLE": None}


def errors(name: str, document: dict) -> list[str]:
    """Every way ``document`` breaks the schema ``name`` (empty when it validates)."""
    validator = jsonschema.Draft202012Validator(schema(name))
    return sorted(f"{list(error.absolute_path)}: {error.message}" for error in validator.iter_errors(document))


def valid(name: str, text: str) -> dict:
    """The document in ``text``, after checking it validates and carries its schema_version first."""
    document = json.loads(text)
    assert list(document)[0] == "schema_version" and document["schema_version"] == SCHEMA_VERSIONS[name]
    assert errors(name, document) == []
    return document


def cli(*args: str) -> str:
    run = CliRunner().invoke(app, list(args), env=ENV)
    assert run.exit_code == 0, run.output
    return run.output


# --- The files -------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", sorted(SCHEMA_VERSIONS))
def test_schema_file_is_current_and_a_valid_schema(name):
    text = (SCHEMAS / f"{name}.schema.json").read_text(encoding="utf-8")
    assert text == schema_text(name), f"{name}.schema.json is stale: run `python -m seqlab.render.json_schema`"
    jsonschema.Draft202012Validator.check_schema(json.loads(text))
    assert json.loads(text)["properties"]["schema_version"] == {"const": SCHEMA_VERSIONS[name]}


def test_one_schema_per_document():
    assert sorted(path.name for path in SCHEMAS.glob("*.schema.json")) == \
        sorted(f"{name}.schema.json" for name in SCHEMA_VERSIONS)
    assert set(DOCUMENTS.values()) <= set(SCHEMA_VERSIONS)
    with pytest.raises(KeyError, match="no JSON schema named 'quiz'"):
        schema("quiz")


# --- Real output, through the command line where it is cheap ----------------------------------------------

@pytest.fixture(scope="module")
def profile_document(tmp_path_factory) -> dict:
    patch = pytest.MonkeyPatch()
    patch.syspath_prepend(str(TESTS))
    try:
        text = cli("profile", "example_layers:make_rnn", "--seq-len", "6", "--d-model", "4", "--json")
    finally:
        patch.undo()
    return valid("profile", text)


def test_profile_cli_json(profile_document):
    assert profile_document["multiplications"] == 6 * 32  # T (d² + d²) = 6 · 32


def test_compare_cli_json():
    document = valid("compare", cli("compare", "--tokens", "10", "--d-model", "8", "--no-time", "--json"))
    assert document["recurrence"]["closed_form"] == 10 * (8 * 8 + 8 * 8)  # T (d·d_h + d_h²)


def test_check_json():
    from seqlab.render.check import check_json
    from seqlab.studies.check import CheckConfig, run_check

    document = valid("check", check_json(run_check(CheckConfig(claims=("L5", "L6"), threads=1)), "es"))
    assert [claim["claim"] for claim in document["claims"]] == ["L5", "L6"]


def test_table1_json():
    from seqlab.studies.table1 import Table1Config, run_table1

    result = run_table1(Table1Config(lengths=(8, 16, 32), d_models=(4,)), layers=("rnn",))
    assert valid("table1", to_json(result))["lengths"] == [8, 16, 32]


def test_table1_modern_json():
    from seqlab.studies.table1_modern import ModernConfig, run_modern

    result = run_modern(ModernConfig(rows=("elman", "self_attention"), lengths=(8, 16, 32),
                                     long_lengths=(64, 128, 256), d_model=4, window=2, chunk=2))
    assert len(valid("table1_modern", to_json(result))["rows"]) == 2


def test_table1_modern_json_carries_cells_not_judged():
    """At T = 2, 3, 4 restricted attention's path lies below its window (r = 4): the cell is not judged, and says
    why, in the document; a ✗ written in its place fails the schema's verdicts."""
    from seqlab.studies.table1_modern import ModernConfig, run_modern

    result = run_modern(ModernConfig(rows=("restricted",), lengths=(2, 3, 4), long_lengths=(10, 12, 14), d_model=2))
    document = valid("table1_modern", to_json(result))
    path = document["rows"][0]["path"]
    assert (path["verdict"], path["reason"], path["regime_start"], path["regime_symbol"]) == \
        ("not_judged", "below_regime", 6, "r = 4")
    path["verdict"] = "x"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(document, schema("table1_modern"))


def test_bench_json():
    from seqlab.studies.bench import BenchConfig, run_bench

    result = run_bench(BenchConfig(lengths=(4, 8), d_models=(8,), threads=(1,), min_run_time=0.001, min_samples=1,
                                   matmul_size=32, chain_links=4))
    assert valid("bench", to_json(result))["lengths"] == [4, 8]


def test_decode_json():
    from seqlab.studies.decode import DecodeConfig, run_decode

    result = run_decode(DecodeConfig(positions=(4, 8), d_model=8, min_run_time=0.001, span_lengths=(8, 16)))
    assert valid("decode", to_json(result))["config"]["positions"] == [4, 8]


def test_learn_json():
    from seqlab.learn.training import TrainSettings
    from seqlab.render.learn import learn_json
    from seqlab.studies.learn import LearnConfig, run_learn

    result = run_learn(LearnConfig(tasks=("order",), models=("elman",), lengths=(4,), seeds=1, rates=(1e-2,),
                                   settings=TrainSettings(steps=2, test_size=8, validation_size=8)))
    assert len(valid("learn", learn_json(result))["runs"]) == 1
    mqar = run_learn(LearnConfig(tasks=("mqar",), models=("attention", "selective_recurrence"), lengths=(6,),
                                 pairs=(2,), widths=(4,), seeds=1, rates=(1e-2,),
                                 settings=TrainSettings(steps=2, test_size=8, validation_size=8)))
    data = valid("learn", learn_json(mqar))
    assert [(r["pairs"], r["width"], r["state_bytes"]) for r in data["runs"]] == [(2, 4, 256), (2, 4, 80)]
    # attention: e_T (16 floats) + K, V (6 rows of 4); the selective recurrence: e_T + h (4 floats); 4 bytes each


def test_figure_json():
    from seqlab.studies.figure import measure_figure

    document = valid("figure", to_json(measure_figure(T_source=2, T_target=2, d_model=4, heads=1)))
    assert len(document["boxes"]) == 15


# --- Wrong documents fail --------------------------------------------------------------------------------

def test_wrong_documents_fail(profile_document):
    missing = {key: value for key, value in profile_document.items() if key != "multiplications"}
    assert errors("profile", missing) == ["[]: 'multiplications' is a required property"]
    retyped = {**profile_document, "multiplications": "192"}
    assert errors("profile", retyped) == ["['multiplications']: '192' is not of type 'integer'"]
    assert errors("profile", {**profile_document, "flops": 384}) == \
        ["[]: Additional properties are not allowed ('flops' was unexpected)"]
    assert errors("profile", {**profile_document, "schema_version": 2}) == ["['schema_version']: 1 was expected"]
    nested = copy.deepcopy(profile_document)
    nested["path"]["longest_products"] = 1.5
    assert errors("profile", nested)[0].startswith("['path', 'longest_products']: 1.5 is not valid")


def test_a_wrong_verdict_fails_the_check_schema():
    claim = {"claim": "L5", "beyond_lesson": False, "verdict": "maybe", "holds": True, "statement": "", "measured": "", "figure": "",
             "condition": {}, "condition_text": "", "note": None, "sources": None, "values": {}, "seconds": 0.1,
             "error": None}
    document = {"schema_version": 1, "all_hold": True, "held": 1, "caveats": 0, "not_judged": 0, "total": 1, "full": False, "seed": 0,
                "threads": 1, "torch_version": "2.13.0", "elapsed_s": 0.1, "claims": [claim]}
    assert errors("check", document) == ["['claims', 0, 'verdict']: 'maybe' is not one of "
                                         "['holds', 'holds_with_caveat', 'not_judged', 'does_not_hold']"]
    assert errors("check", {**document, "claims": [{**claim, "verdict": "holds"}]}) == []
