"""A bad option is refused before PyTorch is imported (issue 37: refusals came after a second or more of imports).

Every option of every registered command that takes a number or a list of numbers (its metavar says so) is given a
value no number parser accepts; the command must exit 2 with one ``Error:`` line, and ``torch`` must not be in
``sys.modules`` afterwards. The cases come from the commands themselves, so a new option is checked with no new test.
"""

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: Commands whose number options are ranged by a checkpoint's config (``model``: --layer in [1, its layers]): the
#: refusal states that range, and reading the config goes through layers.pretrained, which imports PyTorch.
RANGED_BY_A_CHECKPOINT = {"model"}
#: Metavars of options that read numbers (one, or several separated by commas).
NUMERIC = ("INTEGER", "FLOAT", "SECONDS", "N", "D", "H", "S", "T1,T2,...", "T,T,…", "D[,D...]", "D[,D…]",
           "N,…|auto|all")

PROBE = """
import json, sys
from typer.main import get_command
from typer.testing import CliRunner
import seqlab.cli
group = get_command(seqlab.cli.app)
cases = [(name, p.opts[0]) for name, command in group.commands.items() for p in command.params
         if p.opts and p.opts[0].startswith("--") and not p.is_flag and p.metavar in {numeric!r}]
if len(sys.argv) == 1:
    print(json.dumps(cases))
else:
    command, option = sys.argv[1], sys.argv[2]
    result = CliRunner().invoke(seqlab.cli.app, [command, option, "x", "--lang", "en"])
    print(json.dumps([result.exit_code, result.output, "torch" in sys.modules]))
"""


def probe(*args: str):
    done = subprocess.run([sys.executable, "-c", PROBE.format(numeric=NUMERIC), *args], capture_output=True,
                          text=True, timeout=600, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


CASES = [tuple(case) for case in probe() if case[0] not in RANGED_BY_A_CHECKPOINT]


def test_the_cases_cover_the_commands_that_take_numbers():
    assert {command for command, _ in CASES} >= {"compare", "table1", "profile", "bench", "learn", "figure",
                                                  "decode", "report"}
    assert len(CASES) >= 25


@pytest.mark.parametrize(("command", "option"), CASES, ids=[f"{c} {o}" for c, o in CASES])
def test_a_number_option_given_a_word_is_refused_before_torch(command, option):
    code, output, torch_imported = probe(command, option)
    assert code == 2, output
    assert [line for line in output.splitlines() if line.startswith("Error:")], output
    assert not torch_imported, f"seqlab {command} {option} x imported torch before refusing"
