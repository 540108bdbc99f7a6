"""Every ``seqlab`` command shown in the README and the manual runs as written and succeeds (docs cannot rot).

The commands are read from the ``bash`` blocks of README.md, README.es.md and every page of the manual
(docs/en, docs/es). The outputs those pages show are checked apart, by tests/test_docs_outputs.py.
"""

import json
import re
import shlex
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from typer.testing import CliRunner

from seqlab.cli import app
from seqlab.text import builtin_text

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
#: Where the commands a reader is shown live: the two READMEs, then the manual, English first.
SOURCES = [README, ROOT / "README.es.md", *sorted((ROOT / "docs" / "en").rglob("*.md")),
           *sorted((ROOT / "docs" / "es").rglob("*.md"))]
#: The scripts of examples/ that a command shown uses (a factory for profile, a checkpoint for model).
EXAMPLES = ROOT / "examples"


#: A README command whose comment says so must fail as shown: exit code 2 and an ``Error:`` line.
EXITS_2 = "exits 2"


def language_free(command: str) -> str:
    """``command`` without its ``--lang en|es``: a Spanish page's twin of an English command runs once."""
    return re.sub(r"\s--lang (en|es)\b", "", command).strip()


def readme_commands() -> list[str]:
    """seqlab commands of the README and the manual: lines of ``bash`` blocks and ``$ `` prompts of ``text`` blocks.

    A ``text`` block's lines without ``$ `` are output, not commands. A command that differs from one already
    read only by its ``--lang`` (the Spanish pages' twins) is not run again: each command's Spanish output is
    exercised by its own CLI tests, and the twin would double this test's run time. A command keeps
    ``  # exits 2`` from its comment; a shell redirection (``> c.json``) is dropped.
    """
    commands = []
    text = "\n".join(source.read_text(encoding="utf-8") for source in SOURCES)
    for kind, block in re.findall(r"```(bash|text)\n(.*?)```", text, flags=re.S):
        for line in block.splitlines():
            if kind == "text" and not line.startswith("$ "):
                continue  # program output, not a command
            line, _, comment = line.removeprefix("$ ").partition("  #")
            line = line.split(" > ")[0].strip()
            if EXITS_2 in comment:
                line += f"  # {EXITS_2}"
            if line.startswith("seqlab "):
                commands.append(line)
            elif "&& seqlab " in line:  # the set-up commands: the part after the install
                commands.append("seqlab " + line.split("&& seqlab ", 1)[1])
    first = {}
    for command in commands:  # a command shown twice, or in both languages, runs once
        first.setdefault(language_free(command), command)
    return list(first.values())


def example_writing(name: str) -> Path:
    """The one script of examples/ that writes ``name`` (a checkpoint a command then reads)."""
    scripts = [p for p in sorted(EXAMPLES.glob("*.py")) if f'"{name}"' in p.read_text(encoding="utf-8")]
    assert len(scripts) == 1, f"one script of examples/ should write {name}"
    return scripts[0]


def command_name(arguments: list[str]) -> str:
    """The command of ``seqlab ARGS`` (``--lang X`` may come first), or the root option shown (``--help``)."""
    rest = arguments[2:] if arguments[0] == "--lang" else arguments
    return rest[0]


def test_the_readme_and_the_manual_show_commands():
    commands = readme_commands()
    assert len(commands) >= 8
    assert "seqlab compare" in commands and "seqlab profile my_layer:make_layer --seq-len 16 --d-model 8 --lang en" \
        in commands  # the set-up command, and the engineer's thing to try
    assert [c for c in commands if c.endswith(EXITS_2)] == ["seqlab compare --tokens 200000  # exits 2"]


def test_a_spanish_twin_runs_once():
    assert language_free("seqlab compare --tokens 64 --lang es") == language_free("seqlab compare --tokens 64")
    assert language_free("seqlab --lang es compare") == "seqlab compare"


def test_command_name_skips_a_leading_language():
    assert command_name(["--lang", "es", "compare", "--tokens", "x"]) == "compare"
    assert command_name(["table1", "--modern"]) == "table1"
    assert command_name(["--help"]) == "--help"


#: What each command prints when it works (English or Spanish title, or JSON).
MARKERS = {
    "compare": ("Recurrence against attention", "Recurrencia frente a atención"),
    "table1": ("Table 1", "Tabla 1"),
    "profile": ("Profile of", "Perfil de"),
    "bench": ("Forward pass per call", "Pasada"),
    "learn": ("Recall the first token", "Recordar el primer token"),
    "figure": ("Figure 1 of", "Figura 1 de"),
    "model": ("under the microscope", "microscopio"),
    "quiz": ("Check your intuition", "Comprueba tu intuición"),
    "check": ("claims hold", "afirmaciones"),
    "report": ("Wrote", "Escrito"),
    "decode": ("Cost of one new token", "Coste de un token nuevo"),  # table1 --modern: "Table 1 extended"
    "zoo": ("families measured", "familias medidas"),
    "--help": ("Usage: seqlab", "Uso: seqlab"),
    "--version": ("seqlab 0.",),
}


def serve_and_fetch(arguments: list[str]) -> None:
    """Start ``seqlab serve`` as the README shows it, on a free port, and read a page and an endpoint."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    if "--port" in arguments:
        arguments[arguments.index("--port") + 1] = str(port)
    else:
        arguments += ["--port", str(port)]
    server = subprocess.Popen([sys.executable, "-m", "seqlab.cli", *arguments],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5) as response:
                    page = response.read().decode()
                break
            except OSError:
                assert server.poll() is None, server.stderr.read().decode()
                assert time.monotonic() < deadline, "seqlab serve did not answer within 60 s"
                time.sleep(0.3)
        assert "seqlab" in page
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/openapi.json", timeout=120) as response:
            schema = json.loads(response.read())
        assert schema["paths"]
    finally:
        server.terminate()
        server.communicate(timeout=120)


#: The file the commands' ``--text`` reads: this module writes into it the built-in text that ``seqlab compare`` reads
#: without ``--lang`` (English), so that the two commands ask one measurement (a real Spanish chapter read through
#: ``--text`` is tests/test_cli.py's acceptance test).
CHAPTER = "chapter.txt"


def measurement_key(command: str) -> str:
    """Commands with the same key ask ``compare`` the same measurement: they differ only by ``--json``, ``--lang``, or
    by reading the built-in text from :data:`CHAPTER` (this module writes it there)."""
    return language_free(command).replace(" --json", "").replace(f" --text {CHAPTER}", "")


def test_commands_asking_the_same_measurement_share_a_key():
    assert measurement_key("seqlab compare --json") == measurement_key("seqlab compare --lang es") == "seqlab compare"
    assert measurement_key("seqlab compare --tokens 10") != measurement_key("seqlab compare")
    assert measurement_key(f"seqlab compare --text {CHAPTER}") == measurement_key("seqlab compare")


#: (tokens, config) -> (result, progress steps) of each ``compare`` measurement the commands of this module asked for:
#: a command that differs from an earlier one only by its output (``seqlab compare --json`` after ``seqlab compare``)
#: or by where its text comes from (``--text chapter.txt``, a file holding the built-in text) runs end to end
#: (options, text, rendering) and is answered the same measurement, under its own text's label, rather than
#: measuring it again.
MEASURED: dict = {}


@pytest.fixture()
def compare_once(monkeypatch):
    """``run_compare`` answered from :data:`MEASURED` when asked the same tokens and configuration."""
    import seqlab.studies.compare

    from conftest import compare_answered_once

    once = compare_answered_once(MEASURED)
    monkeypatch.setattr(seqlab.studies.compare, "run_compare", once)


#: The commands in the order shown, those sharing a measurement next to each other (so that they tend to run in
#: the same test process).
COMMANDS = sorted(readme_commands(), key=lambda command: [measurement_key(c) for c in readme_commands()].index(
    measurement_key(command)))


@pytest.mark.parametrize("command", COMMANDS)
def test_readme_command_runs(command, tmp_path, monkeypatch, compare_once):
    monkeypatch.chdir(tmp_path)
    (tmp_path / CHAPTER).write_text(builtin_text("en").content, encoding="utf-8")
    for script in EXAMPLES.glob("*.py"):  # `cd examples && seqlab profile my_layer:...` runs from this folder
        shutil.copy(script, tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    command, _, comment = command.partition("  #")
    arguments = shlex.split(command)[1:]
    if arguments[0] == "serve":  # a server: start it, read it, stop it
        serve_and_fetch(arguments)
        return
    for option in ("--model", "--config"):  # a checkpoint of one's own: built first with the manual's own script
        if option in arguments:
            folder = arguments[arguments.index(option) + 1]
            subprocess.run([sys.executable, str(example_writing(folder))], cwd=tmp_path, check=True,
                           capture_output=True)
    result = CliRunner().invoke(app, arguments, input="")
    if EXITS_2 in comment:  # shown failing on purpose: one Error: line, exit code 2
        assert result.exit_code == 2, result.output
        assert "Error:" in result.output and "Traceback" not in result.output, result.output
    elif "--json" in command:
        assert result.exit_code == 0, result.output
        assert json.loads(result.output)
    else:
        assert result.exit_code == 0, result.output
        assert any(marker in result.output for marker in MARKERS[command_name(arguments)]), result.output[:500]
