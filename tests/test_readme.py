"""Every ``seqlab`` command shown in the README runs as written and succeeds (docs cannot rot)."""

import json
import re
import shlex
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
    return commands


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


@pytest.mark.parametrize("command", readme_commands())
def test_readme_command_runs(command, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "chapter.txt").write_text(builtin_text("es").content, encoding="utf-8")
    arguments = shlex.split(command)[1:]
    result = CliRunner().invoke(app, arguments, input="")
    assert result.exit_code == 0, result.output
    if "--json" in command:
        assert json.loads(result.output)
    else:
        assert any(marker in result.output for marker in MARKERS[arguments[0]]), result.output[:500]
