"""Shared fixtures: one small ``compare`` result, the CLI runner, the Quijote acceptance text and a live web lab.

Sizes are kept small (d_model = 16, T = 40) so the whole compare/CLI set runs in well under a minute
on two cores; the few tests that need the lesson's d_model = 512 build their own result.

Where tests live (one rule, checked by tests/test_docs_layout.py): every module of ``src/seqlab/measure/``,
``src/seqlab/layers/`` and the top level of ``src/seqlab/`` is tested in ``tests/test_<module>.py`` (the module's
own name: the names are distinct across the three folders); the tests of a command, the CLI, the web lab and the
docs sit in files named after the command or page (``test_compare.py``, ``test_web_workers.py``,
``test_docs_layout.py``). A fix for an issue adds its tests to the file of the module it fixes. Helpers that are not
tests (reference implementations, shared inputs) are plain modules here without the ``test_`` prefix.

No test depends on the machine's speed: Hypothesis runs without a deadline (the ``seqlab`` profile below), and a
wait for an event is bounded generously (60 s or more), never by how fast the event should come.
"""

from __future__ import annotations

from collections.abc import Iterator
from importlib import resources
from pathlib import Path

import pytest
from hypothesis import settings

from seqlab.studies.compare import CompareConfig, CompareResult, run_compare
from seqlab.text import synthetic_tokens

# No Hypothesis deadline anywhere: a test is judged by its values, never by how fast a loaded machine computes them.
settings.register_profile("seqlab", deadline=None)
settings.load_profile("seqlab")

#: Environment for in-process CLI runs: a wide, colourless console so table rows never wrap.
CLI_ENV = {"COLUMNS": "200", "NO_COLOR": "1", "FORCE_COLOR": None, "TTY_COMPATIBLE": None}


@pytest.fixture(scope="session", autouse=True)
def no_measurement_time_limits():
    """The web lab's measurements run without their time limits in the suite: on a loaded machine a panel's
    measurement may take several times its limit, and a test must not fail for the machine's speed. The limits
    themselves are tested on their own pools with a clock the test moves (tests/test_web_workers.py)."""
    try:
        from seqlab.web.workers import default_pool
    except ImportError:  # the web lab's extras are not installed: no pool to configure
        yield
        return
    pool = default_pool()
    before, pool.time_limit_scale = pool.time_limit_scale, None
    yield
    pool.time_limit_scale = before


@pytest.fixture(scope="session", autouse=True)
def a_workers_share_of_the_cores():
    """Under pytest-xdist each worker runs PyTorch on its share of the cores (``os.cpu_count() // workers``, at least
    one intra-op thread), restored when the session ends. PyTorch's default is every core in every worker: two workers
    on two cores then run four compute threads, whose OpenMP waits spin on cores the other worker needs (measured:
    ``seqlab model`` at the docs' sizes, warm, 5.2-5.5 s of CPU at 2 threads against 1.7-1.9 s at 1, beside a second
    worker). Tests that ask for a thread count set it themselves (``fixed_threads``), and restore it."""
    import os

    import torch

    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "0") or 0)
    if workers < 2:
        yield
        return
    before = torch.get_num_threads()
    torch.set_num_threads(max(1, (os.cpu_count() or 1) // workers))
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="session")
def small_config() -> CompareConfig:
    """d_model = 16 everywhere, no timing: the cheap configuration most study tests use."""
    return CompareConfig(d_model=16, time=False)


@pytest.fixture(scope="session")
def small_result(small_config: CompareConfig) -> CompareResult:
    """``compare`` on 40 synthetic tokens at d_model = 16 (closed forms: 20,480 and 51,200)."""
    return run_compare(synthetic_tokens(40), "synthetic (40 tokens)", small_config)


@pytest.fixture(scope="session")
def quijote_path() -> Iterator[Path]:
    """The acceptance text (Don Quijote, part I, chapter 1, Spanish) as the package ships it
    (``seqlab/data/quijote-i-1-es.txt``), a file path whatever the machine."""
    with resources.as_file(resources.files("seqlab") / "data" / "quijote-i-1-es.txt") as path:
        yield path


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


@pytest.fixture(scope="module")
def live_url():
    """The web lab (``create_app("en")``) served by Uvicorn on a free loopback port, in a thread, one per test
    module: what a browser or curl talks to. Yields its base URL; the server stops after the module."""
    import socket
    import threading
    import time

    import uvicorn

    from seqlab.web.app import create_app

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(create_app("en"), host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 120  # a generous bound: the suite never judges the machine's speed
    while not server.started:
        assert time.monotonic() < deadline and thread.is_alive(), "the Uvicorn server did not start"
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(timeout=10)


#: model type -> the zoo's row, as :func:`families_measured_once` measured it in this process (rows are frozen).
ZOO_ROWS: dict = {}


@pytest.fixture()
def families_measured_once(monkeypatch):
    """The zoo's row of each family measured once in this process for the tests that ask
    (``seqlab.zoo.measure.measure_family`` memoised by model type, patched during the test): for tests that run the
    zoo command many times on the same family (the CLI fuzz's vectors, one case in two languages) and judge the
    command's checks and rendering around the row, which still run each time."""
    pytest.importorskip("transformers")
    from seqlab.zoo import measure

    real = measure.measure_family

    def once(model_type: str):
        if model_type not in ZOO_ROWS:
            ZOO_ROWS[model_type] = real(model_type)
        return ZOO_ROWS[model_type]

    monkeypatch.setattr(measure, "measure_family", once)


def compare_answered_once(memo: dict):
    """A stand-in for ``run_compare`` that answers from ``memo`` (:func:`answered_once`) when asked the same tokens and
    configuration in this process, and else measures and records: two CLI runs that differ only by their output run
    end to end on one measurement.

    The text's label (``source``) is not part of the key: ``run_compare`` only names it in the result (and in the
    refusal of a text shorter than 2 tokens, which is raised before anything is recorded), so a file holding the
    built-in text and the built-in text itself are one measurement, each answered under its own label."""
    import dataclasses

    shared = answered_once(run_compare, lambda tokens, source, config: (tokens, config), memo)

    def once(tokens, source, *args, **kwargs):
        return dataclasses.replace(shared(tokens, source, *args, **kwargs), source=source)

    return once


def _folder_key(path) -> object:
    """What a checkpoint argument names, for a memo: the folder's name and the bytes of every file in it (two scratch
    folders that hold the same checkpoint are one checkpoint), or the argument itself when it is not a folder."""
    import hashlib

    folder = Path(path) if path is not None else None
    if folder is None or not folder.is_dir():
        return path
    digest = hashlib.sha256()
    for file in sorted(p for p in folder.rglob("*") if p.is_file()):
        digest.update(str(file.relative_to(folder)).encode() + b"\0" + file.read_bytes() + b"\0")
    return (str(path), digest.hexdigest())


def answered_once(real, key, memo: dict):
    """A stand-in for the study function ``real`` that answers from ``memo`` when ``key(**arguments)`` (every
    argument but ``progress``, by name) was measured before in this process, and else measures and records. The
    ``progress`` callback the caller passes is told what the measurement told it, in the same order, on a recorded
    answer too (the CLI's bars still draw). ``key`` returning None: a call the memo does not cover, measured."""
    import inspect

    signature = inspect.signature(real)

    def once(*args, **kwargs):
        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()
        progress = bound.arguments.pop("progress", None)
        found = key(**bound.arguments)
        if found is None:
            return real(*args, **kwargs)
        if found not in memo:
            steps: list[tuple] = []

            def record(*step):
                steps.append(step)
                if progress is not None:
                    progress(*step)

            memo[found] = (real(**bound.arguments, progress=record), steps)
        elif progress is not None:
            for step in memo[found][1]:
                progress(*step)
        return memo[found][0]

    return once


#: key -> (result, progress steps) of ``seqlab model`` and ``decode --model``, measured in this process.
MODEL_RESULTS: dict = {}


def measure_models_once(monkeypatch) -> None:
    """Patch, through ``monkeypatch``, ``seqlab.studies.model.inspect_model`` and
    ``seqlab.studies.decode_model.run_model_decode`` with memos by every argument (the checkpoint by its files'
    bytes), kept for the whole process in :data:`MODEL_RESULTS`: see :func:`model_measured_once`."""
    pytest.importorskip("transformers")
    from seqlab.studies import decode_model, model

    def model_key(text, model=None, **options):
        return ("model", text if isinstance(text, str) else tuple(text), _folder_key(model),
                tuple(sorted(options.items())))

    def decode_key(config, loaded=None):
        return None if loaded is not None else ("decode", config, _folder_key(config.model))

    monkeypatch.setattr(model, "inspect_model", answered_once(model.inspect_model, model_key, MODEL_RESULTS))
    monkeypatch.setattr(decode_model, "run_model_decode",
                        answered_once(decode_model.run_model_decode, decode_key, MODEL_RESULTS))


@pytest.fixture()
def model_measured_once(monkeypatch):
    """``seqlab model``'s and ``decode --model``'s measurements made once per process and arguments for the tests
    that ask (``seqlab.studies.model.inspect_model`` and ``seqlab.studies.decode_model.run_model_decode`` memoised
    by every argument, the checkpoint by its files' bytes; patched during the test): for tests that run the same
    command in two languages, or the same checkpoint twice, and judge what the command prints — the CLI still
    parses, checks, and renders each time, end to end."""
    measure_models_once(monkeypatch)
