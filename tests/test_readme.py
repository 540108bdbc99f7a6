"""Every ``seqlab`` command shown in the README runs as written and succeeds (docs cannot rot)."""

import json
import re
import shlex
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

README = Path(__file__).resolve().parents[1] / "README.md"


#: A README command whose comment says so must fail as shown: exit code 2 and an ``Error:`` line.
EXITS_2 = "exits 2"


def readme_commands() -> list[str]:
    """seqlab commands of the README: lines of ``bash`` blocks and ``$ `` prompts of ``text`` blocks.

    A ``text`` block's lines without ``$ `` are output, not commands: that is how the README shows the Spanish
    twin of a command the test already runs in English (the same command with ``--lang es``; each command's
    Spanish output is exercised by its own CLI tests), so that the twin does not double this test's run time.
    A command keeps ``  # exits 2`` from its comment; a shell redirection (``> c.json``) is dropped.
    """
    commands = []
    text = README.read_text(encoding="utf-8")
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
    return list(dict.fromkeys(commands))  # a command shown twice runs once


def readme_python_snippet(name: str) -> str:
    """The ``python - <<'PY'`` snippet of the README that writes ``name`` (a checkpoint a command then reads)."""
    text = README.read_text(encoding="utf-8")
    snippets = [s for s in re.findall(r"python - <<'PY'\n(.*?)\nPY\n", text, flags=re.S) if f'"{name}"' in s]
    assert len(snippets) == 1, f"one README snippet should write {name}"
    return snippets[0]


def command_name(arguments: list[str]) -> str:
    """The command of ``seqlab ARGS`` (``--lang X`` may come first), or the root option shown (``--help``)."""
    rest = arguments[2:] if arguments[0] == "--lang" else arguments
    return rest[0]


def test_the_readme_shows_commands():
    commands = readme_commands()
    assert len(commands) >= 8
    assert "seqlab decode --quick --lang en" in commands and "seqlab table1 --modern --quick --lang en" in commands
    assert sum(c.endswith(EXITS_2) for c in commands) == 3  # the option errors and the memory refusal


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
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/openapi.json", timeout=5) as response:
            schema = json.loads(response.read())
        assert schema["paths"]
    finally:
        server.terminate()
        server.communicate(timeout=30)


@pytest.mark.parametrize("command", readme_commands())
def test_readme_command_runs(command, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "chapter.txt").write_text(builtin_text("es").content, encoding="utf-8")
    command, _, comment = command.partition("  #")
    arguments = shlex.split(command)[1:]
    if arguments[0] == "serve":  # a server: start it, read it, stop it
        serve_and_fetch(arguments)
        return
    if "--model" in arguments:  # a checkpoint of one's own: build it first with the README's own snippet
        folder = arguments[arguments.index("--model") + 1]
        subprocess.run([sys.executable, "-c", readme_python_snippet(folder)], cwd=tmp_path, check=True,
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
