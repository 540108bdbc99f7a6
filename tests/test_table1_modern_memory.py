"""``table1 --modern``'s memory column is the allocator's peak, or a named lower bound (issue 38).

:func:`~seqlab.measure.memory_peak.measure_peak_memory` gives two peaks of one pass: the tensors ops return, between
ops (``peak_bytes``), and the allocator's, temporaries inside an op included (``allocator_peak_bytes``, None when
another profiler was running). The column is fitted on the allocator's; where it is missing the whole row falls
back to the tensors' peak and says ``≥`` with its name, in the table, the raw figures, the sentences (English and
Spanish) and the JSON. Tests patch the measurement and see the verdict and the words change; two rows of each kind.
"""

from __future__ import annotations

import dataclasses
import json

import pytest
from rich.console import Console
from typer.testing import CliRunner

from seqlab.cli import app
from seqlab.measure import memory_peak
from seqlab.render.json_output import to_json
from seqlab.render.table1_modern import memory_heading, modern_sentences, modern_table, raw_table
from seqlab.studies import table1_modern
from seqlab.studies.table1_modern import ALLOCATOR, TENSOR_LOWER_BOUND, ModernConfig, measure_row, run_modern
from seqlab.studies.table1_modern_rows import ROWS

TINY = dict(lengths=(8, 16, 32), long_lengths=(64, 128, 256), d_model=4, window=2, chunk=2)
TWO = ("elman", "self_attention")


def _text(renderable) -> str:
    console = Console(width=240, file=__import__("io").StringIO(), color_system=None)
    console.print(renderable)
    return console.file.getvalue()


@pytest.mark.parametrize("row", ["elman", "convolution"])
def test_the_column_is_fitted_on_the_allocators_peak(row):
    """Measured: every sample has the allocator's peak, at least the tensors' one; the convolution's kernel allocates
    inside itself what no op returns, so there the two differ."""
    config = ModernConfig(rows=(row,), **TINY).validated()
    measured = measure_row(row, config)
    assert measured.memory_figure == ALLOCATOR
    assert all(s.allocator_peak_bytes is not None and s.allocator_peak_bytes >= s.peak_bytes for s in measured.long)
    assert table1_modern.memory_bytes(measured.long) == [s.allocator_peak_bytes for s in measured.long]
    if row == "convolution":
        assert all(s.allocator_peak_bytes > s.peak_bytes for s in measured.long)


def _patched(monkeypatch, allocator):
    """measure_peak_memory with its allocator figure replaced by ``allocator(T, measured)`` (None: not taken)."""
    real = memory_peak.measure_peak_memory

    def patched(function, x, *args, **kwargs):
        measured = real(function, x, *args, **kwargs)
        return dataclasses.replace(measured, allocator_peak_bytes=allocator(x.shape[1], measured))
    monkeypatch.setattr(table1_modern.memory_peak, "measure_peak_memory", patched)


@pytest.mark.parametrize("row", TWO)
def test_a_patched_allocator_peak_changes_the_verdict_the_tensor_peak_does_not(monkeypatch, row):
    """The allocator's figure made to grow as T³ (the tensors' peak unchanged): the memory cell no longer matches its
    big-O, so the verdict rests on the allocator's figure."""
    config = ModernConfig(rows=(row,), **TINY).validated()
    assert measure_row(row, config).memory.matches
    _patched(monkeypatch, lambda T, measured: measured.peak_bytes + T ** 3)
    cubic = measure_row(row, config)
    assert not cubic.memory.matches and cubic.memory.fit.exponent > 2.5
    assert cubic.memory_figure == ALLOCATOR


@pytest.fixture
def bound(monkeypatch):
    """Every allocator figure missing (another profiler running): the rows fall back to the tensors' peak."""
    _patched(monkeypatch, lambda T, measured: None)
    return run_modern(ModernConfig(rows=TWO, **TINY))


def test_without_the_allocator_the_column_is_a_named_lower_bound(bound):
    assert [row.memory_figure for row in bound.rows] == [TENSOR_LOWER_BOUND] * 2
    assert all(row.memory.matches for row in bound.rows)  # fitted on the tensors' peaks, judged as before
    assert memory_heading(bound) == "Peak memory (allocator; ≥: tensors only, a lower bound)"
    assert memory_heading(bound, "es", raw=True) == "Bytes en el pico (asignador; ≥: solo los tensores, una cota inferior)"
    table = _text(modern_table(bound))
    assert "≥ ✓ T · O(T·d)" in table and "≥ ✓ T² · O(T²)" in table
    raw = _text(raw_table(bound))
    assert f"≥ {bound.rows[0].long[-1].peak_bytes:,}" in raw
    said = " ".join(modern_sentences(bound))
    assert "The allocator's events could not be taken for Elman RNN, Self-attention (math path) (another profiler " \
           "was running)" in said
    assert "No se pudieron tomar los eventos del asignador para RNN de Elman" in " ".join(modern_sentences(bound, "es"))
    document = json.loads(to_json(bound))
    jsonschema = pytest.importorskip("jsonschema")
    from seqlab.render.json_output import schema

    jsonschema.Draft202012Validator(schema("table1_modern")).validate(document)  # nulls where the allocator was not read
    assert [row["memory_figure"] for row in document["rows"]] == ["tensor_lower_bound"] * 2
    assert all(sample["allocator_peak_bytes"] is None for row in document["rows"] for sample in row["long"])


def test_with_the_allocator_the_heading_and_figures_are_its(monkeypatch):
    _patched(monkeypatch, lambda T, measured: 1000 * T)
    result = run_modern(ModernConfig(rows=TWO, **TINY))
    assert memory_heading(result) == "Peak memory (allocator)" and memory_heading(result, "es") == \
        "Memoria pico (asignador)"
    assert "256,000" in _text(raw_table(result))  # the allocator's figure at T = 256: 1000 · 256
    assert "≥" not in _text(modern_table(result))
    assert not any("could not be taken" in s for s in modern_sentences(result))
    document = json.loads(to_json(result))
    assert [s["allocator_peak_bytes"] for s in document["rows"][0]["long"]] == [64_000, 128_000, 256_000]
    assert document["rows"][0]["memory_figure"] == "allocator"


@pytest.mark.parametrize("lang, heading", [("en", "Peak memory (allocator)"), ("es", "Memoria pico (asignador)")])
def test_cli_names_the_allocator_in_both_languages(monkeypatch, lang, heading):
    monkeypatch.setattr(table1_modern, "ROWS", {name: ROWS[name] for name in TWO})
    result = CliRunner().invoke(app, ["table1", "--modern", "--lengths", "8,16,32", "--long-lengths", "64,128,256",
                                      "--d-model", "4", "--lang", lang], env={"COLUMNS": "240"})
    assert result.exit_code == 0, result.output
    assert heading in result.output
