"""``seqlab quiz`` asks before it measures (issue 37, item 7): question 1 from the texts alone, the facts measured
in a background thread while the reader reads.

The measurement is replaced by one that blocks on an event, so each test decides when the facts arrive: question 1
is on screen while it blocks; grading waits for it with a one-line note; Ctrl-C while waiting exits 130 with the
score line; a measurement that raises ends the quiz with one ``Error:`` line and exit code 1. A real run in a
subprocess shows that PyTorch is not imported before question 1 is printed. Every wait in these tests is on an
event or a line of output, with a generous deadline; none asserts a time.
"""

from __future__ import annotations

import _thread
import gc
import os
import subprocess
import sys
import threading

import pytest
import torch
from typer.testing import CliRunner

from seqlab.cli import app
from seqlab.i18n import N_
from seqlab.studies import quiz_facts
from seqlab.studies.quiz import measure_facts, measure_in_background, prompts
from test_spanish_output import english_in

CLI_ENV = {"COLUMNS": "200", "NO_COLOR": "1", "FORCE_COLOR": None, "TTY_COMPATIBLE": None}
#: Generous bound on any wait for another thread (seconds): reached only when something is broken.
DEADLINE_S = 120
ANSWERS = {"q1": "c", "q2": "512", "q3": "b", "q4": "a, b, c"}
NOTE = {"en": "Measuring the figures the answers rest on…", "es": "Midiendo las cifras en las que se basan las respuestas…"}


class Held:
    """A measurement that blocks until released, then gives the real (cached) facts, or raises ``error``."""

    def __init__(self, error: BaseException | None = None) -> None:
        self.facts = measure_facts()  # measured (or cached) now, before the quiz starts
        self.started, self.release, self.error = threading.Event(), threading.Event(), error

    def __call__(self, seed: int = 0):
        self.started.set()
        if not self.release.wait(DEADLINE_S):
            raise AssertionError("never released")
        if self.error is not None:
            raise self.error
        return self.facts


@pytest.fixture
def held(monkeypatch):
    measurement = Held()
    monkeypatch.setattr(quiz_facts, "measure_facts", measurement)
    yield measurement
    measurement.release.set()  # the background thread ends whatever the test did


def printed() -> str:
    """What the command under CliRunner has written to standard output so far."""
    sys.stdout.flush()
    return sys.stdout.buffer.getvalue().decode()


def wait_for(condition, what: str) -> None:
    event = threading.Event()
    for _ in range(DEADLINE_S * 100):
        if condition():
            return
        event.wait(0.01)
    raise AssertionError(f"never saw {what}")


def asking(monkeypatch, on_ask):
    """Replace the answer prompt: ``on_ask(number)`` gives the answer to the number-th question asked."""
    from rich.prompt import Prompt

    count = iter(range(1, 100))
    monkeypatch.setattr(Prompt, "ask", lambda *args, **kwargs: on_ask(next(count)))


@pytest.mark.parametrize("lang", ["en", "es"])
def test_question_1_is_on_screen_while_the_facts_are_measured(held, monkeypatch, lang):
    seen = {}
    keys = iter(ANSWERS.values())

    def on_ask(number):
        if number == 1:  # question 1 is being asked: the measurement has started and is still blocked
            if not held.started.wait(DEADLINE_S):
                raise AssertionError("the measurement never started")
            seen["screen"], seen["measured"] = printed(), held.release.is_set()
            buffer = sys.stdout.buffer
            threading.Thread(target=lambda: (wait_for(lambda: NOTE[lang] in buffer.getvalue().decode(), "the note"),
                                             held.release.set()), daemon=True).start()
        return next(keys)

    asking(monkeypatch, on_ask)
    result = CliRunner().invoke(app, ["quiz", "--lang", lang], env=CLI_ENV)
    assert result.exit_code == 0, result.output
    first = prompts(lang)[0]
    assert not seen["measured"]
    assert seen["screen"].splitlines()[0].startswith(("Check your intuition", "Comprueba tu intuición"))
    words = " ".join(seen["screen"].split())  # the text as wrapped to the console, in one line
    assert " ".join(first.text.split()) in words and all(f"{c.key}) {c.text}" in words for c in first.options)
    assert NOTE[lang] not in seen["screen"]
    assert result.output.count(NOTE[lang]) == 1  # once, before the first grade; the others find the facts ready
    assert result.output.index(NOTE[lang]) < result.output.index("✓")
    assert ("Score: 4 of 4." if lang == "en" else "Puntuación: 4 de 4.") in result.output
    if lang == "es":  # the note, the feedback on every option and the score: all Spanish
        assert english_in(result.output) == {}


def test_facts_ready_before_the_answer_mean_no_note(held, monkeypatch):
    def on_ask(number):
        if number == 1:
            held.release.set()
            wait_for(lambda: pending_done(), "the facts")
        return list(ANSWERS.values())[number - 1]

    futures = []
    real = measure_in_background
    monkeypatch.setattr("seqlab.studies.quiz.measure_in_background", lambda: futures.append(real()) or futures[-1])

    def pending_done():
        return bool(futures) and futures[0].done()

    asking(monkeypatch, on_ask)
    result = CliRunner().invoke(app, ["quiz", "--lang", "en"], env=CLI_ENV)
    assert result.exit_code == 0, result.output
    assert NOTE["en"] not in result.output and "Score: 4 of 4." in result.output and len(futures) == 1


def test_hints_and_unreadable_answers_need_no_facts(held, monkeypatch):
    """'?' and an answer that cannot be read are handled while the measurement is still blocked."""
    answers = iter(["?", "zz", "c"])

    def on_ask(number):
        answer = next(answers, None)
        if answer is None:
            raise EOFError  # end of input after question 1
        if answer == "c":
            assert not held.release.is_set()
            assert "Hint: Look at h_t" in printed() and "Could not read 'zz'" in printed()
            held.release.set()
        return answer

    asking(monkeypatch, on_ask)
    result = CliRunner().invoke(app, ["quiz", "--lang", "en"], env=CLI_ENV)
    assert result.exit_code == 0, result.output
    assert result.output.count("✓ Right.") == 1 and "End of input: stopped after 1 of 4 questions." in result.output


def test_ctrl_c_while_waiting_for_the_facts_exits_130(held, monkeypatch):
    if threading.current_thread() is not threading.main_thread():
        pytest.skip("Ctrl-C (interrupt_main) reaches the main thread only, and this test runs in another")
    def on_ask(number):
        buffer = sys.stdout.buffer
        threading.Thread(target=lambda: (wait_for(lambda: NOTE["en"] in buffer.getvalue().decode(), "the note"),
                                         _thread.interrupt_main()), daemon=True).start()
        return "c"

    asking(monkeypatch, on_ask)
    result = CliRunner().invoke(app, ["quiz", "--lang", "en"], env=CLI_ENV)
    assert result.exit_code == 130, result.output
    lines = result.output.splitlines()
    assert lines[-1] == "Interrupted: stopped after 0 of 4 questions; 0 right." and "Traceback" not in result.output
    assert not held.release.is_set()  # it was still measuring: the command did not wait for it


@pytest.mark.parametrize(("lang", "error", "line"), [
    ("en", RuntimeError("boom: the kernel failed\n  at frame 3"),
     "Error: could not measure the figures the answers rest on: RuntimeError: boom: the kernel failed"),
    ("es", RuntimeError("boom"), "Error: no se pudieron medir las cifras en las que se basan las respuestas: "
                                 "RuntimeError: boom"),
    ("es", None, "Error: el idioma debe ser uno de en, es; se recibió 'fr'"),  # the library's own refusal, in Spanish
])
def test_a_measurement_that_raises_is_one_error_line(monkeypatch, lang, error, line):
    from seqlab.errors import SeqlabError

    measurement = Held(error if error is not None else
                       SeqlabError(N_("language must be one of {languages}; received {lang!r}"), languages="en, es",
                                   lang="fr"))
    measurement.release.set()
    monkeypatch.setattr(quiz_facts, "measure_facts", measurement)
    result = CliRunner().invoke(app, ["quiz", "--lang", lang], input="c\n512\n", env=CLI_ENV)
    assert result.exit_code == 1, result.output
    errors = [text for text in result.output.splitlines() if text.startswith("Error:")]
    assert errors == [line] and "Traceback" not in result.output and "frame 3" not in result.output
    if lang == "es":
        assert english_in(result.output) == {}
    assert result.output.rstrip().endswith(line)  # nothing graded, no score: the quiz stops there


def test_the_background_future_carries_a_seqlab_error(monkeypatch):
    from seqlab.errors import SeqlabError

    cause = ValueError("bad shape")
    measurement = Held(cause)
    measurement.release.set()
    monkeypatch.setattr(quiz_facts, "measure_facts", measurement)
    failure = measure_in_background().exception(timeout=DEADLINE_S)
    assert isinstance(failure, SeqlabError) and failure.__cause__ is cause
    assert str(failure) == "could not measure the figures the answers rest on: ValueError: bad shape"


def switches() -> tuple:
    cuda = torch.backends.cuda
    return (torch.backends.mha.get_fastpath_enabled(), torch.backends.mkldnn.enabled, cuda.flash_sdp_enabled(),
            cuda.mem_efficient_sdp_enabled(), cuda.math_sdp_enabled(), cuda.cudnn_sdp_enabled(),
            torch.get_num_threads(), torch.is_grad_enabled(), torch.get_default_dtype(), gc.isenabled())


def test_measuring_in_the_background_gives_pytorch_back_as_it_was(monkeypatch):
    """The thread measures for real (uncached) and leaves the process-wide switches, and this thread's, as found."""
    monkeypatch.setattr(quiz_facts, "measure_facts", measure_facts.__wrapped__)
    before = switches()
    facts = measure_in_background().result(timeout=DEADLINE_S)
    assert switches() == before
    assert facts == measure_facts()  # the same figures as the cached measurement in this thread


def test_pytorch_is_not_imported_before_question_1():
    """A real run, unbuffered, its import log and its output on one stream: question 1 comes before any torch."""
    env = {**os.environ, "COLUMNS": "100", "NO_COLOR": "1", "PYTHONUNBUFFERED": "1"}
    run = subprocess.run([sys.executable, "-X", "importtime", "-m", "seqlab", "quiz", "--lang", "en"],
                         stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         env=env, timeout=600, check=False)
    assert run.returncode == 0, run.stdout[-2000:]
    lines = run.stdout.splitlines()
    question = next(i for i, text in enumerate(lines) if text.startswith("Question 1 of 4"))
    imported = [i for i, text in enumerate(lines) if text.startswith("import time:") and "torch" in text.split("|")[-1]]
    assert all(i > question for i in imported), lines[min(imported)]
    assert "End of input: stopped after 0 of 4 questions." in lines
