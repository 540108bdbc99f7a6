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


def readme_commands() -> list[str]:
    """seqlab commands of the README: lines of ``bash`` blocks and ``$ `` prompts of ``text`` blocks."""
    commands = []
    text = README.read_text(encoding="utf-8")
    for kind, block in re.findall(r"```(bash|text)\n(.*?)```", text, flags=re.S):
        for line in block.splitlines():
            if kind == "text" and not line.startswith("$ "):
                continue  # program output, not a command
            line = line.removeprefix("$ ").split("  #")[0].strip()
            if line.startswith("seqlab "):
                commands.append(line)
            elif "&& seqlab " in line:  # the set-up commands: the part after the install
                commands.append("seqlab " + line.split("&& seqlab ", 1)[1])
    return list(dict.fromkeys(commands))  # a command shown twice runs once


def test_the_readme_shows_commands():
    assert len(readme_commands()) >= 8


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
    arguments = shlex.split(command)[1:]
    if arguments[0] == "serve":  # a server: start it, read it, stop it
        serve_and_fetch(arguments)
        return
    result = CliRunner().invoke(app, arguments, input="")
    assert result.exit_code == 0, result.output
    if "--json" in command:
        assert json.loads(result.output)
    else:
        assert any(marker in result.output for marker in MARKERS[arguments[0]]), result.output[:500]
