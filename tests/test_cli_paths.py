"""The paths the command line writes and reads (issue 26): every output path checked the same way, a factory named
by its file, input files checked before torch is imported (seqlab.cli.options, seqlab.factory).

The output paths are found from the app itself: every option of every command whose type is ``Path``; each must
use one of :data:`seqlab.cli.options.OUTPUT_CALLBACKS` and refuse a path in a missing folder with exit 2 and one
``Error:`` line, creating nothing.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import typing
from pathlib import Path

import pytest
import typer
from conftest import CLI_ENV

from seqlab.cli import app
from seqlab.cli.options import OUTPUT_CALLBACKS, check_input, check_output, writable_folder
from seqlab.errors import SeqlabError
from seqlab.factory import parse_factory

MISSING = "/nonexistent/dir/x.png"
SRC = str(Path(__file__).resolve().parents[1] / "src")


def path_options() -> list[tuple[str, str, typer.models.OptionInfo]]:
    """(command, option, its OptionInfo) for every option typed ``Path`` (or ``Optional[Path]``) in the app."""
    found = []
    for command in app.registered_commands:
        hints = typing.get_type_hints(command.callback, include_extras=True)
        for hint in hints.values():
            if typing.get_origin(hint) is not typing.Annotated:
                continue
            kind, *extras = typing.get_args(hint)
            kinds = set(typing.get_args(kind)) - {type(None)} or {kind}
            info = next((extra for extra in extras if isinstance(extra, typer.models.OptionInfo)), None)
            if info is not None and kinds == {Path}:
                option = (info.param_decls or (info.default,))[0]  # Option("--out", ...): the name comes first
                found.append((command.callback.__name__, option, info))
    return found


def test_the_path_options_are_the_outputs():
    """Every output the commands write, and nothing else, is typed Path (inputs stay text: '-' is stdin)."""
    assert sorted((command, option) for command, option, _ in path_options()) == [
        ("bench", "--csv"), ("bench", "--out"), ("bench", "--plot"), ("decode", "--plot"), ("figure", "--out"),
        ("learn", "--plot"), ("learn", "--results"), ("model", "--out"), ("report", "--out"), ("table1", "--plot"), ("zoo", "--results")]
    for command, option, info in path_options():
        assert info.callback in OUTPUT_CALLBACKS, f"{command} {option} is not checked by check_output"


@pytest.mark.parametrize(("command", "option"), [(c, o) for c, o, _ in path_options()])
def test_every_output_path_in_a_missing_folder_is_refused(runner, command, option):
    """``seqlab figure --out /nonexistent/dir/x.png`` used to exit 0 and make /nonexistent/dir: now exit 2, one
    line, the same words for every command and option, nothing created."""
    path = MISSING.replace(".png", ".html") if command == "report" else MISSING
    result = runner.invoke(app, [command, option, path], env=CLI_ENV)
    assert result.exit_code == 2, result.output
    errors = [line for line in result.output.splitlines() if line.startswith("Error:")]
    assert errors == [f"Error: Invalid value for '{option}': the folder '/nonexistent/dir' does not exist, "
                      f"received '{path}'"]
    assert not Path("/nonexistent").exists()


def test_the_refusal_is_in_the_runs_language(runner):
    result = runner.invoke(app, ["--lang", "es", "figure", "--out", MISSING], env=CLI_ENV)
    assert result.exit_code == 2
    assert result.output.splitlines()[-1] == ("Error: Valor no válido para '--out': la carpeta '/nonexistent/dir' no "
                                              f"existe; se recibió '{MISSING}'")


def test_check_output_by_kind(tmp_path):
    file = tmp_path / "a.txt"
    file.write_text("x", encoding="utf-8")
    assert check_output(tmp_path / "new.png", "'--plot'") == tmp_path / "new.png"  # its folder exists
    assert check_output(tmp_path, "'--plot'", "file or folder") == tmp_path
    assert check_output(tmp_path / "sub", "'--out'", "folder") == tmp_path / "sub"
    assert not (tmp_path / "sub").exists()  # checked, not made
    with pytest.raises(typer.BadParameter, match="expected a file name, received the folder"):
        check_output(tmp_path, "'--csv'")
    with pytest.raises(typer.BadParameter, match="is a file, not a folder"):
        check_output(file, "'--out'", "folder")
    with pytest.raises(typer.BadParameter, match="does not exist"):
        check_output(tmp_path / "no" / "deeper", "'--out'", "folder")
    with pytest.raises(SeqlabError, match="expected kind among"):
        check_output(file, "'--out'", "pipe")


def test_an_out_folder_is_made_one_level_deep_only(tmp_path):
    assert writable_folder(tmp_path / "new") == tmp_path / "new"
    assert (tmp_path / "new").is_dir()
    with pytest.raises(typer.BadParameter, match="does not exist"):
        writable_folder(tmp_path / "a" / "b")
    assert not (tmp_path / "a").exists()


# --- Factories named by their file ------------------------------------------------------------------------------

LAYERS = '''
import torch
from mylayers_helper import WIDTH_FACTOR


class Doubling(torch.nn.Module):
    def __init__(self, d):
        super().__init__()
        self.linear = torch.nn.Linear(d, d * WIDTH_FACTOR)

    def forward(self, x):
        return self.linear(x)


def make_layer(d):
    return Doubling(d)
'''


@pytest.fixture()
def layers_file(tmp_path, monkeypatch):
    """``mylayers.py`` (importing ``mylayers_helper.py`` beside it) in a folder of its own, the current one."""
    (tmp_path / "mylayers.py").write_text(LAYERS, encoding="utf-8")
    (tmp_path / "mylayers_helper.py").write_text("WIDTH_FACTOR = 2\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    yield tmp_path / "mylayers.py"
    for name in [name for name in sys.modules if name in ("mylayers_helper",) or name.startswith("seqlab_factory_")]:
        del sys.modules[name]


@pytest.mark.parametrize("spec", ["./mylayers.py:make_layer", "mylayers.py:make_layer", "{absolute}:make_layer"])
def test_a_factory_file_is_loaded_from_its_path(layers_file, spec):
    from seqlab.studies.profile import build_from_factory

    module = build_from_factory(spec.format(absolute=layers_file), 3)
    assert type(module).__name__ == "Doubling"
    assert tuple(module.linear.weight.shape) == (6, 3)  # (d · WIDTH_FACTOR, d): the helper beside it was imported


def test_profile_measures_a_factory_file(runner, layers_file):
    result = runner.invoke(app, ["profile", "./mylayers.py:make_layer", "--seq-len", "4", "--d-model", "3", "--json"],
                           env=CLI_ENV)
    assert result.exit_code == 0, result.output
    measured = json.loads(result.output)
    assert measured["module"] == "Doubling"
    assert measured["multiplications"] == 4 * 3 * 6  # T · d · (2d): one per multiply-add of the linear layer


@pytest.mark.parametrize(("spec", "message"), [
    ("./absent.py:make", "the factory file './absent.py' does not exist (from './absent.py:make'); expected "
                         "module.path:factory or path/to/file.py:factory"),
    ("./mylayers.py", "expected module.path:factory or path/to/file.py:factory, received './mylayers.py'"),
    ("./mylayers.py:", "expected module.path:factory or path/to/file.py:factory, received './mylayers.py:'"),
    ("./mylayers.py:make-layer", "expected module.path:factory or path/to/file.py:factory, received "),
    ("./:make", "the factory file './' is not a Python file (from './:make')"),
])
def test_bad_factory_files_are_refused_in_one_line(runner, layers_file, spec, message):
    with pytest.raises(SeqlabError) as raised:
        parse_factory(spec)
    assert str(raised.value).startswith(message)
    result = runner.invoke(app, ["profile", spec], env=CLI_ENV)
    assert result.exit_code == 2
    assert result.output.splitlines()[-1].startswith(f"Error: Invalid value for 'FACTORY': {message}")


def test_a_factory_with_a_module_name_is_read_as_before():
    assert parse_factory("torch.nn:Identity").file is None
    assert parse_factory("pkg.mod:Layers.make").attribute == "Layers.make"


# --- Input files before torch ----------------------------------------------------------------------------------

CASES = [
    (["compare", "--text", "/nonexistent.txt"],
     "Error: Invalid value for '--text': text file '/nonexistent.txt' does not exist; expected a UTF-8 text file or "
     "'-' for stdin"),
    (["report", "--text", "/"], "Error: Invalid value for '--text': text file '/' is a directory; expected a UTF-8 "
                                "text file"),
    (["model", "/nonexistent.txt"], "Error: Invalid value for 'FILE': text file '/nonexistent.txt' does not exist; "
                                    "expected a UTF-8 text file or '-' for stdin"),
    (["model", "--model", "/nonexistent"], "Error: Invalid value for '--model': '/nonexistent' is not a folder; "
                                           "expected a local Hugging Face checkpoint folder (config.json, weights)"),
    (["decode", "--model", "/nonexistent"], "Error: Invalid value for '--model': '/nonexistent' is not a folder; "
                                            "expected a local Hugging Face checkpoint folder (config.json, weights)"),
    (["profile", "./absent.py:make"], "Error: Invalid value for 'FACTORY': the factory file './absent.py' does not "
                                      "exist (from './absent.py:make'); expected module.path:factory or "
                                      "path/to/file.py:factory"),
    (["--lang", "es", "compare", "--text", "/nonexistent.txt"],
     "Error: Valor no válido para '--text': el archivo de texto '/nonexistent.txt' no existe; se esperaba un "
     "archivo de texto UTF-8 o '-' para la entrada estándar"),
    (["--lang", "es", "profile", "./absent.py:make"],
     "Error: Valor no válido para 'FACTORY': el archivo de la fábrica './absent.py' no existe (en "
     "'./absent.py:make'); se esperaba módulo.ruta:fábrica o ruta/al/archivo.py:fábrica"),
]

#: Runs each command line of argv in one fresh interpreter and says, per line, its exit code, its last line on
#: stderr and whether torch had been imported by the time the refusal came.
PROBE = """
import contextlib, io, json, sys
from seqlab.cli import main
answers = []
for argv in json.loads(sys.argv[1]):
    sys.argv = ["seqlab", *argv]
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        try:
            main()
            code = 0
        except SystemExit as exit:
            code = exit.code
    answers.append([code, err.getvalue().strip().splitlines()[-1], "torch" in sys.modules])
print(json.dumps(answers))
"""


def _english_env() -> dict[str, str]:
    """This environment with the source tree first on the path, the CLI's console, and an English locale."""
    env = {key: value for key, value in os.environ.items() if not key.startswith(("LC_", "LANG", "SEQLAB_"))}
    env.update({key: value for key, value in CLI_ENV.items() if value is not None})
    env.update(PYTHONPATH=SRC, LANG="C.UTF-8")
    return env


def test_input_files_are_checked_before_torch_is_imported(tmp_path):
    """A missing text file, checkpoint folder or factory file is said before torch is imported (torch takes
    seconds to import, 20–30 s on a busy machine): torch is not in sys.modules when the refusal comes."""
    done = subprocess.run([sys.executable, "-c", PROBE, json.dumps([argv for argv, _ in CASES])], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300, check=True,
                          env=_english_env())
    answers = json.loads(done.stdout)
    for (argv, message), (code, last, torch_loaded) in zip(CASES, answers, strict=True):
        assert (code, last) == (2, message), argv
        assert torch_loaded is False, f"{argv}: torch was imported before the check"


def test_check_input_passes_what_exists(tmp_path):
    text = tmp_path / "t.txt"
    text.write_text("hola", encoding="utf-8")
    assert check_input(str(text), "'--text'") == str(text)
    assert check_input(str(tmp_path), "'--model'", "checkpoint") == str(tmp_path)
    with pytest.raises(typer.BadParameter, match="is not a folder"):
        check_input(str(text), "'--model'", "checkpoint")


def test_a_file_where_the_folder_should_be_is_named(tmp_path):
    blocker = tmp_path / "taken"
    blocker.write_text("x", encoding="utf-8")
    for kind in ("file", "folder"):
        with pytest.raises(typer.BadParameter, match=f"{str(blocker)!r} is a file, not a folder"):
            check_output(blocker / "x.png", "'--plot'", kind)
