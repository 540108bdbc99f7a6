"""The command line fuzzed: random argument vectors over every command's options, none may crash (issue 39).

The vectors come from :mod:`cli_fuzz` (read from the click commands, so a new option is fuzzed without a line
here): seeded (``derandomize``), :data:`EXAMPLES` per command, run in this process with Typer's ``CliRunner``;
each fails on a traceback, an exception escaping the command, an exit status other than 0, 1, 2, 130 or 143,
or a run past ``cli_fuzz.HANG_S``. Where a command's work takes minutes (``serve``, ``report``, ``model``,
``figure``) it is stopped where the work begins (``cli_fuzz.WORK``): every check before it runs for real.
``benchmarks/fuzz_cli.py`` runs the same vectors by the thousand. Below them, the kinds the fuzz found, each for
every option of its kind: a path whose name is longer than the system allows, a path the file system cannot
encode, a host name no resolver can encode.
"""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

import cli_fuzz
from conftest import CLI_ENV

#: Vectors per command in the suite: 12 commands x 25 = 300, about 25 s of CPU on two busy cores.
EXAMPLES = 25


@pytest.fixture(scope="module")
def fuzz_place(tmp_path_factory) -> tuple[Path, int]:
    """A folder laid out with the files the paths name, and a port free when the module starts."""
    tmp = tmp_path_factory.mktemp("fuzz")
    cli_fuzz.lay_out(tmp)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return tmp, port


def test_every_command_says_how_to_keep_a_valid_run_small():
    cli_fuzz.check_the_table()
    assert set(cli_fuzz.WORK) <= set(cli_fuzz.commands()) and cli_fuzz.NEVER_RUN <= set(cli_fuzz.WORK)


@pytest.mark.parametrize("name", sorted(cli_fuzz.CHEAP))
def test_no_argument_vector_crashes_a_command(name, fuzz_place, request):
    if name == "zoo":
        request.getfixturevalue("families_measured_once")
    tmp, port = fuzz_place
    seen: dict[int, int] = {}

    @settings(max_examples=EXAMPLES, derandomize=True, database=None, deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(vector=cli_fuzz.vectors(name, tmp, port))
    def fuzz(vector):
        with cli_fuzz.stubbed(cli_fuzz.WORK):
            result = cli_fuzz.run(vector)
        why = cli_fuzz.judge(result)
        assert why is None, f"seqlab {' '.join(map(repr, vector))}: {why}\n{result.output[-3000:]}"
        seen[result.exit_code] = seen.get(result.exit_code, 0) + 1

    fuzz()
    assert sum(seen.values()) >= EXAMPLES // 2 and set(seen) <= cli_fuzz.ALLOWED_EXITS, seen


def test_the_judge_fails_a_traceback_an_escape_and_an_odd_status():
    class Result:
        def __init__(self, exception=None, output="", exit_code=0):
            self.exception, self.output, self.exit_code = exception, output, exit_code

    assert cli_fuzz.judge(Result()) is None and cli_fuzz.judge(Result(SystemExit(2), exit_code=2)) is None
    assert cli_fuzz.judge(Result(cli_fuzz.Reached(), exit_code=1)) is None
    assert cli_fuzz.judge(Result(OSError(36, "File name too long"), exit_code=1)) == "OSError: [Errno 36] File " \
        "name too long"
    assert cli_fuzz.judge(Result(output="Traceback (most recent call last):")) == "a traceback in the output"
    assert cli_fuzz.judge(Result(SystemExit(3), exit_code=3)) == "exit status 3"


def _path_options() -> list[tuple[str, str, str]]:
    """(command, option, kind) of every option that names a file or folder to write, read from the app."""
    from seqlab.cli.options import OUTPUT_CALLBACKS, input_checkpoint, input_text

    kinds = {**{callback: "output" for callback in OUTPUT_CALLBACKS}, input_text: "input",
             input_checkpoint: "input"}
    return [(name, param.opts[0], kinds[cli_fuzz.callback_of(param)]) for name, command in cli_fuzz.commands().items()
            for param in command.params if param.param_type_name == "option" and cli_fuzz.callback_of(param) in kinds]


@pytest.mark.parametrize(("name", "option", "kind"), _path_options())
@pytest.mark.parametrize("path", ["{tmp}/" + "a" * 300 + ".png", "{tmp}/" + "a" * 253, "{tmp}/\udcff\ud800.png",
                                  "{tmp}/" + "/".join(["d" * 200] * 25) + "/x.png"])
def test_every_path_option_refuses_an_impossible_name_in_one_line(runner, tmp_path, name, option, kind, path):
    """Too long a name (300 bytes; 253 bytes, to which a writer adds .png), too long a path (5,000 bytes), a name
    the file system cannot encode: exit 2 and one ``Error:`` line naming the option, for every path option."""
    from seqlab.cli import app

    value = path.format(tmp=tmp_path)
    if kind == "input" and "a" * 253 in value:
        pytest.skip("253 bytes is a name an input may have (nothing is added to it)")
    result = runner.invoke(app, [name, option, value], env=CLI_ENV)
    errors = [line for line in result.output.splitlines() if line.startswith("Error:")]
    assert result.exit_code == 2 and len(errors) == 1, result.output
    assert f"Invalid value for '{option}'" in errors[0] and "Traceback" not in result.output, result.output
    if "\ud800" not in value:  # click's own Path type may refuse the unencodable one first, in its own words
        assert "File name too long" in errors[0], errors[0]


@pytest.mark.parametrize("host", ["a" * 64 + ".example", "a" * 64, ".", "a\udcff", "x..y"])
def test_serve_refuses_a_host_no_resolver_can_encode_in_one_line(runner, host):
    """A 64-letter label (DNS allows 63), an empty label, an undecodable byte: exit 2, like every other bad host."""
    pytest.importorskip("uvicorn")
    from seqlab.cli import app

    result = runner.invoke(app, ["serve", "--host", host, "--port", "1"], env=CLI_ENV)
    errors = [line for line in result.output.splitlines() if line.startswith("Error:")]
    assert result.exit_code == 2 and len(errors) == 1 and "Traceback" not in result.output, result.output
    assert "Invalid value for '--host' / '--port': cannot listen on" in errors[0], errors[0]
