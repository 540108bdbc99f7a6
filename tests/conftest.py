"""Shared fixtures: one small ``compare`` result, the CLI runner, and the Quijote acceptance text.

Sizes are kept small (d_model = 16, T = 40) so the whole compare/CLI set runs in well under a minute
on two cores; the few tests that need the lesson's d_model = 512 build their own result.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from seqlab.studies.compare import CompareConfig, CompareResult, run_compare
from seqlab.text import synthetic_tokens

#: The acceptance text (Don Quijote, part I, chapter 1, Spanish), looked up beside the repository first.
QUIJOTE_CANDIDATES = (
    Path(__file__).resolve().parents[2] / "shared" / "data" / "quijote-i-1-es.txt",
    Path("/work/shared/data/quijote-i-1-es.txt"),
)

#: Environment for in-process CLI runs: a wide, colourless console so table rows never wrap.
CLI_ENV = {"COLUMNS": "200", "NO_COLOR": "1", "FORCE_COLOR": None, "TTY_COMPATIBLE": None}


@pytest.fixture(scope="session")
def small_config() -> CompareConfig:
    """d_model = 16 everywhere, no timing: the cheap configuration most study tests use."""
    return CompareConfig(d_model=16, time=False)


@pytest.fixture(scope="session")
def small_result(small_config: CompareConfig) -> CompareResult:
    """``compare`` on 40 synthetic tokens at d_model = 16 (closed forms: 20,480 and 51,200)."""
    return run_compare(synthetic_tokens(40), "synthetic (40 tokens)", small_config)


@pytest.fixture(scope="session")
def quijote_path() -> Path:
    """The Quijote acceptance text, or a clean skip where the shared data is not present."""
    for candidate in QUIJOTE_CANDIDATES:
        if candidate.is_file():
            return candidate
    pytest.skip("shared/data/quijote-i-1-es.txt is not present")


@pytest.fixture()
def runner():
    """Typer's in-process runner (stdout and stderr both land in ``result.output``)."""
    from typer.testing import CliRunner

    return CliRunner()


@pytest.fixture()
def invoke(runner):
    """Run ``seqlab compare ARGS`` in-process with the wide, colourless console of :data:`CLI_ENV`."""
    from seqlab.cli import app

    def run(*args: str, input: str | bytes | None = None):
        return runner.invoke(app, ["compare", *args], input=input, env=CLI_ENV)

    return run
