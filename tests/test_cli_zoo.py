"""``seqlab zoo`` in-process (Typer's CliRunner): filters, resume, --json against its schema, --config, refusals in
one line (exit 2), Spanish, and the one line a base install gets."""

from __future__ import annotations

import json
import shutil
import sys

import pytest
from typer.testing import CliRunner

pytest.importorskip("transformers")

from seqlab.cli import app  # noqa: E402

ENV = {"COLUMNS": "250", "NO_COLOR": "1", "FORCE_COLOR": None, "TTY_COMPATIBLE": None}


def invoke(*args: str):
    return CliRunner().invoke(app, ["zoo", *args], env=ENV)


@pytest.fixture(scope="module")
def measured(tmp_path_factory):
    """A results file holding llama and bert (measured once; each test works on a copy)."""
    path = tmp_path_factory.mktemp("cli-zoo") / "rows.jsonl"
    result = invoke("--families", "llama,bert", "--results", str(path), "--json")
    assert result.exit_code == 0, result.output
    return path, json.loads(result.stdout)


def test_json_is_the_dataset_and_validates(measured):
    jsonschema = pytest.importorskip("jsonschema")
    from seqlab.render.json_output import schema

    _, document = measured
    assert document["schema_version"] == 1 and list(jsonschema.Draft202012Validator(schema("zoo"))
                                                    .iter_errors(document)) == []
    assert [(r["family"], r["kind"]) for r in document["rows"]] == [("llama", "full"), ("bert", "encoder")]
    assert (document["planned"], document["measured"], document["refused"]) == (2, 2, 0)


def test_a_resumed_run_measures_nothing_again_and_loses_nothing(measured, tmp_path):
    path, first = measured
    copy = tmp_path / "rows.jsonl"
    shutil.copy(path, copy)
    result = invoke("--families", "llama,bert", "--results", str(copy), "--json")
    document = json.loads(result.stdout)
    assert result.exit_code == 0 and document["resumed"] == 2 and document["rows"] == first["rows"]
    assert len(copy.read_text(encoding="utf-8").splitlines()) == 3  # the header and two rows, none appended


def test_kinds_filter_the_rows_and_the_table_groups_them(measured, tmp_path):
    path, _ = measured
    copy = tmp_path / "rows.jsonl"
    shutil.copy(path, copy)
    result = invoke("--families", "llama,bert", "--kinds", "encoder", "--results", str(copy), "--json")
    assert [r["family"] for r in json.loads(result.stdout)["rows"]] == ["bert"]
    table = invoke("--families", "llama,bert", "--results", str(copy))
    assert table.exit_code == 0 and "Full attention" in table.stdout and "Encoder" in table.stdout
    assert "2 families measured, 0 refused, of 2 planned" in table.stdout
    spanish = invoke("--families", "llama,bert", "--results", str(copy), "--lang", "es")
    assert "Atención completa" in spanish.stdout and "2 familias medidas" in spanish.stdout


def test_a_user_config_is_measured_at_its_real_size(tmp_path):
    """A small Llama config.json: its real cache is 2 · 3 layers · 2 kv heads · 16 · 4 bytes per position."""
    from transformers import LlamaConfig

    folder = tmp_path / "mine"
    folder.mkdir()
    LlamaConfig(hidden_size=64, intermediate_size=128, num_hidden_layers=3, num_attention_heads=4,
                num_key_value_heads=2, vocab_size=100, max_position_embeddings=256).save_pretrained(folder)
    result = invoke("--config", str(folder), "--families", "llama", "--json")
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)["rows"]
    assert [r["family"] for r in rows] == ["llama (mine)", "llama"] and rows[0]["source"].endswith("mine")
    real = rows[0]["real"]
    assert (real["d"], real["layers"], real["T"]) == (64, 3, 255)
    assert real["cache_bytes"] == 2 * 3 * 2 * 16 * 4 * real["t"]


@pytest.mark.parametrize(("args", "option", "words"), [
    (("--families", "nope"), "'--families'", "unknown family 'nope'"),
    (("--kinds", "cubic"), "'--kinds'", "unknown kind 'cubic'"),
    (("--config", "no/such/folder"), "'--config'", "no config.json at 'no/such/folder'"),
    (("--jobs", "2", "--ray", "auto"), "'--ray'", "give either --jobs or --ray, not both"),
    (("--families", " , "), "'--families'", "expected comma-separated names"),
])
def test_refusals_are_one_line_and_exit_2(args, option, words):
    result = invoke(*args)
    assert result.exit_code == 2
    error = [line for line in result.output.splitlines() if line.startswith("Error:")]
    assert len(error) == 1 and option in error[0] and words in error[0]


def test_a_base_install_is_told_the_extra_in_one_line(monkeypatch):
    monkeypatch.setitem(sys.modules, "transformers", None)  # import transformers raises ModuleNotFoundError
    result = invoke("--families", "llama")
    assert result.exit_code == 2
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and "seqlab zoo needs the model extra" in lines[0] and "transformers" in lines[0]
