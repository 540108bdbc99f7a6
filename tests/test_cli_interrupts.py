"""Ctrl+C typed into a terminal, and SIGTERM, at a random moment of a working command (issue 39, "Done when").

Each command runs in a pseudo-terminal of its own (pexpect), as a person runs it: its progress bar drawn, its
worker processes in its process group. Once it has started working (its progress bar up, the lab's address
printed, or PyTorch loaded for ``decode``, which draws no bar) the test waits a moment drawn
from a seeded generator, then either types Ctrl+C (``\\x03`` written to the terminal: the line discipline sends
SIGINT to the whole foreground process group) or sends SIGTERM to the command alone. It then reads the terminal
to the end (every process holding it gone) and asserts: exit 130 (SIGINT) or 143 (SIGTERM), no ``Traceback``
from any process, exactly one line on the screen below what was there before the interrupt, in the run's
language, and the cursor shown. The screen is read by a small terminal model (:func:`screen`): carriage
returns, cursor-up and line erasures, as Rich's transient progress bar uses them.

No wall-clock bound is asserted: the waits for a start and for the end are generous (180 s). The cases are
small; each runs only until its interrupt.
"""

from __future__ import annotations

import os
import random
import re
import signal
import socket
import sys
import time
import zlib
from io import StringIO
from pathlib import Path

import pytest

pexpect = pytest.importorskip("pexpect")

ROOT = Path(__file__).resolve().parents[1]
#: Seconds to wait for a start, and for the end after the interrupt: generous, never judged.
WAIT_S = 180
#: The moment of the interrupt, after the command started working: uniform in [0, MOST_DELAY_S) s, seeded.
MOST_DELAY_S = 1.5
#: Rich hides the cursor while a progress bar draws, and shows it again when the bar stops.
HIDE, SHOW = "\x1b[?25l", "\x1b[?25h"
LAB = "http://127.0.0.1:"  # the lab's address, in either language's start line


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _commands(tmp_path: Path) -> dict[str, tuple[list[str], str | None]]:
    """Each command's arguments (small sizes, yet long enough to be caught working) and what says it works."""
    return {
        "serve": (["serve", "--port", str(_free_port())], LAB),
        "compare": (["compare", "--tokens", "64", "--d-model", "64"], HIDE),
        "bench": (["bench", "--quick", "--d-model", "32", "--threads", "1"], HIDE),
        "learn": (["learn", "--quick", "--tasks", "recall", "--models", "elman,lstm", "--lengths", "8,16", "--seeds",
                   "1", "--rates", "1e-2", "--jobs", "2", "--results", str(tmp_path / "runs.jsonl")], HIDE),
        # decode draws no bar and its --quick run leaves about 4 s of work after PyTorch loads: on a busy machine the
        # interrupt's window (up to 2 s) met its end; the full timings at the quick positions leave 8 s or more
        "decode": (["decode", "--positions", "16,64,256", "--d-model", "64"], None),
        "check": (["check"], HIDE),
    }


#: The one line each language prints; learn names what it kept instead.
FIRST_WORD = {"en": "Interrupted", "es": "Interrumpido"}
CSI = re.compile(r"\x1b\[([0-9;?]*)([@-~])")


def screen(text: str) -> tuple[list[str], int]:
    """The lines a terminal shows after ``text``, and the cursor's row: a model of what a progress bar uses
    (``\\r``, ``\\n``, ``\\b``, cursor up ``CSI n A``, erase in line ``CSI n K``; other sequences change nothing
    that is read here).

    >>> screen("bar 1/4\\r\\x1b[2Kbar 2/4\\r\\n\\x1b[1A\\x1b[2Kdone\\r\\n")
    (['done', ''], 1)
    """
    lines, row, col, i = [""], 0, 0, 0
    while i < len(text):
        char = text[i]
        if char == "\x1b":
            match = CSI.match(text, i)
            if match is None:
                i += 2
                continue
            arguments, command = match.groups()
            if command == "A":
                row = max(0, row - int(arguments or 1))
            elif command == "K":
                lines[row] = "" if arguments == "2" else lines[row][:col] if arguments in ("", "0") else \
                    " " * col + lines[row][col:]
            i = match.end()
            continue
        if char == "\r":
            col = 0
        elif char == "\n":
            row += 1
            if row == len(lines):
                lines.append("")
        elif char == "\b":
            col = max(0, col - 1)
        elif char >= " ":
            line = lines[row].ljust(col)
            lines[row] = line[:col] + char + line[col + 1:]
            col += 1
        i += 1
    return lines, row


def _wait_for_torch(child) -> None:
    """Wait until the command has mapped PyTorch's library (its body imports torch to measure), or its end."""
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline and child.isalive():
        try:
            if "libtorch" in Path(f"/proc/{child.pid}/maps").read_text(errors="replace"):
                return
        except OSError:
            return
        _drain(child)


def _drain(child) -> None:
    """Read what the command has written so far (for at most half a second: a progress bar never stops writing),
    so that the interrupt's mark falls after it."""
    until = time.monotonic() + 0.5
    while time.monotonic() < until:
        try:
            child.read_nonblocking(65536, timeout=0.05)
        except (pexpect.TIMEOUT, pexpect.EOF):
            return


@pytest.mark.parametrize(("how", "lang"), [("ctrl-c", "en"), ("sigterm", "es")])
@pytest.mark.parametrize("command", ["serve", "compare", "bench", "learn", "decode", "check"])
def test_an_interrupt_at_a_random_moment_ends_in_one_line(tmp_path, command, how, lang):
    """Exit 130 or 143, no traceback from any process, one line in the run's language, the cursor shown."""
    args, started = _commands(tmp_path)[command]
    moment = random.Random(zlib.crc32(f"{command} {how}".encode())).uniform(0, MOST_DELAY_S)
    env = {key: value for key, value in os.environ.items()
           if key not in ("COLUMNS", "LINES", "NO_COLOR", "FORCE_COLOR", "TTY_COMPATIBLE")}
    env.update(PYTHONPATH=str(ROOT / "src"), TERM="xterm-256color")
    log = StringIO()
    child = pexpect.spawn(sys.executable, ["-m", "seqlab", *args, "--lang", lang], cwd=str(ROOT), env=env,
                          encoding="utf-8", codec_errors="replace", dimensions=(50, 200), timeout=WAIT_S)
    child.logfile_read = log
    try:
        if started is not None:
            child.expect_exact(started, timeout=WAIT_S)
        else:  # decode draws no bar: it works once its body has loaded PyTorch
            _wait_for_torch(child)
        time.sleep(moment)
        _drain(child)
        assert child.isalive(), f"{command} ended before it was interrupted:\n{log.getvalue()}"
        mark = len(log.getvalue())
        if how == "ctrl-c":
            child.write("\x03")  # the terminal's Ctrl+C: SIGINT to the whole foreground process group
        else:
            child.kill(signal.SIGTERM)  # the command alone, as kill and timeout send it
        child.expect(pexpect.EOF, timeout=WAIT_S)  # every process that holds the terminal has ended
    finally:
        child.close(force=True)
    out = log.getvalue()
    assert child.exitstatus == (130 if how == "ctrl-c" else 143), (child.exitstatus, child.signalstatus, out[-3000:])
    assert "Traceback" not in out and "Exception ignored" not in out, out[-6000:]
    before, row = screen(out[:mark])
    after, _ = screen(out)
    new = [line.strip() for line in after[row:] if line.strip() and line.strip() != "^C"]
    assert len(new) == 1 and new[0].startswith(FIRST_WORD[lang]), (new, out[mark:][-3000:])
    assert out.rfind(HIDE) < out.rfind(SHOW) or HIDE not in out, "the cursor is left hidden"


def test_the_screen_model_reads_a_transient_bar_and_an_echoed_ctrl_c():
    """What the test reads: a bar overwritten in place, then erased (Rich's transient stop), the terminal's ``^C``
    echo, then the command's line from the line's start."""
    text = "Estimated\r\n" + HIDE + "\r\x1b[2KMeasuring 0/4^C\r\x1b[2KMeasuring 1/4\r\n" + SHOW + "\r\x1b[1A\x1b[2K"
    text += SHOW + "\rInterrupted; nothing was left half-written.\x1b[K\r\n"
    lines, row = screen(text)
    assert lines == ["Estimated", "Interrupted; nothing was left half-written.", ""] and row == 2
    assert screen("a\r\n^C")[0] == ["a", "^C"]


# --- The one handler, in this process -------------------------------------------------------------------------

@pytest.mark.parametrize(("number", "status", "lang", "line"), [
    (signal.SIGINT, 130, "en", "Interrupted; nothing was left half-written."),
    (signal.SIGTERM, 143, "es", "Interrumpido; nada quedó a medio escribir."),
])
def test_a_signal_in_a_commands_work_ends_it_in_one_line(runner, monkeypatch, number, status, lang, line):
    """A real signal sent to this process while ``compare`` measures: the handler of every command turns it into
    one line in the run's language and 128 + the signal's number."""
    from conftest import CLI_ENV

    import seqlab.studies.compare as study
    from seqlab.cli import app

    def measure(*args, **kwargs):
        os.kill(os.getpid(), number)
        time.sleep(5)  # the handler raises before this ends
        raise AssertionError("the signal was not handled")

    monkeypatch.setattr(study, "run_compare", measure)
    before = {each: signal.getsignal(each) for each in (signal.SIGINT, signal.SIGTERM)}
    result = runner.invoke(app, ["compare", "--tokens", "4", "--d-model", "2", "--no-time", "--lang", lang],
                           env=CLI_ENV)
    assert result.exit_code == status and result.output.splitlines() == [line], result.output
    assert {each: signal.getsignal(each) for each in before} == before  # the handlers given back


def test_a_signal_while_a_file_is_written_waits_for_the_file():
    """:func:`held`: the signal is noted, the step ends, then the interrupt is raised with the signal's number."""
    from seqlab.cli import interrupts

    steps = []
    with interrupts.handled():
        with pytest.raises(interrupts.Interrupted) as stopped:
            with interrupts.held():
                os.kill(os.getpid(), signal.SIGTERM)
                time.sleep(0.2)
                steps.append("written")
        assert steps == ["written"] and stopped.value.signum == signal.SIGTERM and interrupts.exit_code() == 143


def test_raised_by_hands_the_signal_to_the_loops_own_rule():
    from seqlab.cli import interrupts

    seen = []
    with interrupts.handled(), interrupts.raised_by(lambda number, frame: seen.append(number)):
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.2)
        assert seen == [signal.SIGINT] and interrupts.received() == signal.SIGINT and interrupts.exit_code() == 130
    assert interrupts.received() is None


def test_finish_prints_what_was_kept_and_ignores_a_second_signal(capsys):
    from seqlab.cli import interrupts
    from seqlab.errors import Message
    from seqlab.i18n import N_

    with interrupts.handled():
        kept = interrupts.Interrupted(kept=Message(N_("Interrupted: stopped after {answered} of {total} questions; "
                                                      "{right} right."), answered=1, total=4, right=1))
        assert interrupts.finish(kept, "es") == 130
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN  # a second Ctrl+C cuts nothing now
    assert capsys.readouterr().err == "Interrumpido: se paró tras 1 de 4 preguntas; 1 acertadas.\n"


def test_an_error_that_follows_an_interrupt_ends_the_run_as_interrupted(runner, monkeypatch):
    """A signal cuts an import in half and the next import of that module fails (seen once: numpy's "cannot load
    module more than once per process" after SIGTERM landed inside ``import torch``): the run still ends as
    interrupted, one line and 143, not with the error's traceback."""
    from conftest import CLI_ENV

    import seqlab.studies.compare as study
    from seqlab.cli import app, interrupts

    def measure(*args, **kwargs):
        with interrupts.raised_by(lambda number, frame: None):  # the signal noted, swallowed where it landed
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(0.2)
        raise ImportError("cannot load module more than once per process")

    monkeypatch.setattr(study, "run_compare", measure)
    result = runner.invoke(app, ["compare", "--tokens", "4", "--d-model", "2", "--no-time", "--lang", "en"],
                           env=CLI_ENV)
    assert result.exit_code == 143 and result.output.splitlines() == ["Interrupted; nothing was left half-written."]


def test_a_signal_that_meets_an_import_which_swallows_errors_still_ends_the_run(tmp_path, monkeypatch):
    """A library whose import swallows any error (PyTorch's C start-up treats a failed NumPy import as "no NumPy")
    would swallow the interrupt raised inside it: the signal is held until the import has ended, then raised."""
    from seqlab.cli import interrupts

    (tmp_path / "swallowing_import.py").write_text(
        "import os, signal, time\n"
        "try:\n"
        "    os.kill(os.getpid(), signal.SIGTERM)\n"
        "    time.sleep(0.2)\n"
        "except BaseException:\n"
        "    pass\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "swallowing_import", raising=False)
    with interrupts.handled():
        with pytest.raises(interrupts.Interrupted) as raised:
            import swallowing_import  # noqa: F401
            deadline = time.monotonic() + 10  # a bounded wait for an event (it comes 0.05 s after the import)
            while time.monotonic() < deadline:  # the held signal comes back once the import has ended
                time.sleep(0.01)
        assert raised.value.signum == signal.SIGTERM and interrupts.exit_code() == 143
    monkeypatch.delitem(sys.modules, "swallowing_import", raising=False)
