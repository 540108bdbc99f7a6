"""Random argument vectors for every ``seqlab`` command, read from the command objects themselves (issue 39).

Not a test module: ``tests/test_cli_fuzz.py`` runs a few hundred vectors in the suite, and
``benchmarks/fuzz_cli.py`` thousands. Every option and argument of every command is read from the click command
that Typer builds (:func:`commands`), so a new option, or a new command, is fuzzed without a line here; only how
to keep a valid run small is written per command (:data:`CHEAP`, :data:`COSTLY`, :data:`WORK`), and
:func:`check_the_table` fails when a command has no entry.

A vector is the command's :data:`CHEAP` arguments (small sizes, no timing) with some options added or replaced
by drawn values: by the option's kind — a flag, a path (an existing file, a folder, a missing folder, a name
longer than the system allows, an undecodable byte, a path under ``/proc``), or a value (small integers, lists of
them, words from the option's own help, and hostile text: empty, signs, 40-digit numbers, ``nan``, other scripts'
digits, lone surrogates, 300 letters, a 64-letter host label). Options in :data:`COSTLY` get only hostile values
(their valid values make a run slow, not wrong). A vector is judged by :func:`judge`: a traceback, an exception
escaping the command, an exit status other than 0, 1, 2, 130 or 143, or a run past :data:`HANG_S` fails.
"""

from __future__ import annotations

import contextlib
import functools
import re
import signal
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

#: Exit statuses a command may give: done, a claim that does not hold, a usage error, Ctrl+C, SIGTERM.
ALLOWED_EXITS = frozenset({0, 1, 2, 130, 143})
#: Seconds one vector may run before it counts as a hang (generous: a loaded machine is slow, not hung).
HANG_S = 120

#: Per command: arguments that keep a valid run small. A drawn value of the same option replaces the one here.
CHEAP: dict[str, list[str]] = {
    "compare": ["--tokens", "3", "--d-model", "2", "--no-time", "--probes", "1", "--path-width", "2", "--threads",
                "1"],
    "table1": ["--quick", "--lengths", "4,6,8", "--d-model", "2"],
    "profile": ["torch.nn:Identity", "--seq-len", "3", "--d-model", "2"],
    "bench": ["--quick", "--lengths", "4", "--d-model", "2", "--min-run-time", "0.001", "--threads", "1",
              "--machines", "rnn"],
    "learn": ["--quick", "--tasks", "position", "--models", "mlp", "--lengths", "4", "--seeds", "1", "--rates",
              "1e-2"],
    "quiz": [],
    "model": ["--text", "a small text"],
    "figure": ["--length", "2", "--d-model", "8", "--heads", "1", "--out", "{tmp}/figure"],
    "check": ["--only", "L1"],
    "serve": ["--port", "{port}"],
    "report": ["--quick", "--no-pdf", "--out", "{tmp}/report.html"],
    "decode": ["--quick", "--positions", "2", "--d-model", "2", "--no-time", "--machines", "elman"],
    "zoo": ["--families", "gpt2"],
}
#: Per command: options and flags whose valid values make a run long (workers, timing, training, a browser):
#: they are given only hostile values, or never (flags).
COSTLY: dict[str, frozenset[str]] = {
    "compare": frozenset(),
    "table1": frozenset({"--modern", "--long-lengths"}),
    "profile": frozenset({"--all-sources"}),
    "bench": frozenset({"--min-run-time", "--device"}),
    "learn": frozenset({"--jobs", "--ray", "--tasks", "--models", "--pairs"}),
    "quiz": frozenset(),
    "model": frozenset(),
    "figure": frozenset(),
    "check": frozenset({"--full"}),
    "serve": frozenset({"--open"}),
    "report": frozenset({"--learn", "--pdf"}),
    "decode": frozenset({"--time", "--model"}),
    "zoo": frozenset({"--jobs", "--ray", "--config", "--families"}),
}
#: Per command, for the suite's short run: where its work begins (``module:function``), replaced by a stub that
#: raises :class:`Reached` — every check before it runs for real, the minutes after it do not. ``serve``'s
#: server never starts, in any run.
WORK: dict[str, str] = {
    "serve": "seqlab.web.app:create_app",
    "report": "seqlab.studies.report:run_report",
    "model": "seqlab.studies.model:inspect_model",
    "figure": "seqlab.studies.figure:measure_figure",
}
#: Commands whose work is never run by any fuzz (a server that would listen).
NEVER_RUN = frozenset({"serve"})


class Reached(Exception):
    """Raised by a stubbed :data:`WORK` function: the command got past every check to its work."""


class Hung(Exception):
    """A vector ran past :data:`HANG_S`."""


@functools.cache
def commands() -> dict[str, Any]:
    """Every command of the ``seqlab`` group, by name (the click commands Typer builds, once)."""
    import typer

    from seqlab.cli import app

    group = typer.main.get_command(app)
    context = group.make_context("seqlab", ["--help"], resilient_parsing=True)
    return {name: group.get_command(context, name) for name in group.list_commands(context)}


def check_the_table() -> None:
    """Every command has its cheap arguments and costly options written here, and nothing else does."""
    names = set(commands())
    for table in (CHEAP, COSTLY):
        if set(table) != names:
            raise AssertionError(f"tests/cli_fuzz.py lacks {sorted(names - set(table))} or names gone commands "
                                 f"{sorted(set(table) - names)}: say how to keep a valid run of each small")


# --- Values ---------------------------------------------------------------------------------------------------

SMALL = st.sampled_from(["1", "2", "3", "4"])
HOSTILE = st.sampled_from([
    "0", "-1", "-0", "+2", " 2 ", "", " ", "9" * 40, "-" + "9" * 40, "1.5", "1e-2", "1e400", "nan", "inf", "-inf",
    "0x10", "\u0663", "\u00b2", "1,,2", ",", "2,", "a,b", "abc", "\u00f1", "\udcff", "a\udcff", "x" * 300,
    "a" * 64 + ".example", "-", "--", "None", "true", "auto", "all", "L1,L99", "B9", "1/2", "2**70", "\t", "é,é",
])
SURROGATE = st.characters(min_codepoint=0xDC80, max_codepoint=0xDCFF)  # what undecodable argv bytes become
TEXT = st.text(st.one_of(st.characters(codec="utf-8", exclude_categories=("Cc", "Cs")), SURROGATE), max_size=12)


def _words(help_text: str | None) -> list[str]:
    """Words of an option's help: its valid names are usually there (``rnn, loop, lstm``, ``en or es``)."""
    return sorted({word for word in re.findall(r"[A-Za-z0-9_.:\-]+", help_text or "") if 1 <= len(word) <= 24})


def values(param: Any, costly: bool) -> st.SearchStrategy[str]:
    """What one occurrence of ``param`` is given: hostile text always; small integers, lists of them and words of
    its help unless ``costly``."""
    if costly:
        return st.one_of(HOSTILE, TEXT)
    words = _words(getattr(param, "help", None))
    word = st.sampled_from(words) if words else HOSTILE
    choices = [SMALL, st.lists(SMALL, min_size=1, max_size=3).map(",".join), HOSTILE, TEXT, word,
               st.lists(word, min_size=1, max_size=3).map(",".join)]
    return st.one_of(*choices)


def paths(tmp: Path) -> st.SearchStrategy[str]:
    """Paths a user may give, in and around ``tmp`` (made by :func:`lay_out`)."""
    return st.sampled_from([
        f"{tmp}/out.png", f"{tmp}/out", f"{tmp}/out.html", f"{tmp}/folder", f"{tmp}/folder/x.png",
        f"{tmp}/missing/x.png", f"{tmp}/text.txt", f"{tmp}/text.txt/x.png", f"{tmp}/binary.bin", f"{tmp}/empty.txt",
        f"{tmp}/{'a' * 250}.png", f"{tmp}/{'a' * 252}", f"{tmp}/{'a' * 300}.png", f"{tmp}/{'a' * 300}",
        f"{tmp}/\u00f1and\u00fa.png", f"{tmp}/\udcff.png", f"{tmp}/" + "/".join(["d" * 200] * 25) + "/x.png",
        "/proc/seqlab-fuzz.png", "/proc", "/", "", "-", ".", "..", "/dev/null", f"{tmp}/link-loop/x.png",
    ])


def lay_out(tmp: Path) -> None:
    """The files and folders :func:`paths` names: a text, bytes that are not UTF-8, an empty file, a folder, a
    loop of links."""
    (tmp / "folder").mkdir(exist_ok=True)
    (tmp / "text.txt").write_text("the cat sat on the mat, and the dog sat too.\n", encoding="utf-8")
    (tmp / "binary.bin").write_bytes(b"\xff\xfe\x00\x81 not text")
    (tmp / "empty.txt").write_bytes(b"")
    loop = tmp / "link-loop"
    if not loop.is_symlink():
        loop.symlink_to(loop)


def _is_path(param: Any) -> bool:
    """A path the user gives: a ``Path`` annotation, or the shared input and output checks as its callback."""
    from seqlab.cli.options import OUTPUT_CALLBACKS, input_checkpoint, input_text

    descriptor = getattr(param, "type_descriptor", None)
    annotation = getattr(descriptor, "annotation", None)
    return annotation is Path or callback_of(param) in (*OUTPUT_CALLBACKS, input_text, input_checkpoint)


def callback_of(param: Any) -> Callable | None:
    """The function given as ``param``'s callback (Typer wraps it)."""
    callback = getattr(param, "callback", None)
    return getattr(callback, "__wrapped__", callback)


def _filled(args: list[str], tmp: Path, port: int) -> list[str]:
    return [arg.replace("{tmp}", str(tmp)).replace("{port}", str(port)) for arg in args]


def _base(name: str, tmp: Path, port: int) -> tuple[dict[str, list[str]], list[str], list[str]]:
    """:data:`CHEAP` split into option values by option, flags, and positional arguments."""
    args, options, flags, positional = _filled(CHEAP[name], tmp, port), {}, [], []
    command = commands()[name]
    takes_value = {opt: param for param in command.params if param.param_type_name == "option"
                   for opt in (*param.opts, *param.secondary_opts) if not param.is_flag}
    index = 0
    while index < len(args):
        arg = args[index]
        if arg in takes_value:
            options.setdefault(arg, []).append(args[index + 1])
            index += 2
        elif arg.startswith("--"):
            flags.append(arg)
            index += 1
        else:
            positional.append(arg)
            index += 1
    return options, flags, positional


@st.composite
def vectors(draw: Callable, name: str, tmp: Path, port: int) -> list[str]:
    """One argument vector for command ``name``: its cheap arguments with some options drawn (see the module)."""
    command = commands()[name]
    costly = COSTLY[name]
    options, flags, positional = _base(name, tmp, port)
    drawn_positional: list[str] = []
    for param in command.params:
        strategy = paths(tmp) if _is_path(param) else values(param, param.opts[0] in costly)
        if param.param_type_name == "argument":
            if draw(st.integers(0, 3)) == 3:
                drawn_positional.append(draw(strategy))
            continue
        if draw(st.integers(0, 4)) != 4:  # about one option in five is drawn (none in the simplest vector)
            continue
        if param.is_flag:
            names = [opt for opt in (*param.opts, *param.secondary_opts) if opt not in costly]
            if names:
                flags.append(draw(st.sampled_from(names)))
            continue
        count = draw(st.integers(1, 2)) if param.multiple else 1
        options[param.opts[0]] = [draw(strategy) for _ in range(count)]
    vector = [name]
    for option, given in options.items():
        for value in given:
            vector += [option, value]
    vector += flags
    vector += drawn_positional or positional
    return vector


# --- Running and judging --------------------------------------------------------------------------------------

@contextlib.contextmanager
def stubbed(work: dict[str, str]) -> Iterator[None]:
    """Replace each ``module:function`` of ``work`` by a stub raising :class:`Reached`, and ``webbrowser.open`` by
    one that opens nothing; put them back after."""
    import importlib
    import webbrowser

    saved = []

    def reached(*args: object, **kwargs: object) -> None:
        raise Reached()

    for where in work.values():
        module_name, _, function = where.partition(":")
        module = importlib.import_module(module_name)
        saved.append((module, function, getattr(module, function)))
        setattr(module, function, reached)
    saved.append((webbrowser, "open", webbrowser.open))
    webbrowser.open = lambda *args, **kwargs: False
    try:
        yield
    finally:
        for module, function, original in saved:
            setattr(module, function, original)


@contextlib.contextmanager
def bounded(seconds: float = HANG_S) -> Iterator[None]:
    """Raise :class:`Hung` in the main thread if the block runs past ``seconds``."""
    def expire(signum: int, frame: object) -> None:
        raise Hung(f"no answer within {seconds:g} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def run(vector: list[str], group: Any = None) -> Any:
    """Run ``seqlab VECTOR`` in this process (Typer's ``CliRunner``; standard input empty), bounded by
    :data:`HANG_S`. ``group``: a command group already built from the app, reused (Typer builds a fresh one for
    each run, about 36 ms; the parse and every check are the same), as the long benchmark does."""
    from unittest import mock

    import typer.testing

    from seqlab.cli import app

    built = contextlib.nullcontext() if group is None else mock.patch.object(typer.testing, "_get_command",
                                                                              lambda app: group)
    with bounded(), built:
        return typer.testing.CliRunner().invoke(app, vector, input="", env={"COLUMNS": "120", "NO_COLOR": "1"})


def judge(result: Any) -> str | None:
    """Why a run fails the fuzz, or None: an exception that escaped the command (other than :class:`Reached`), a
    traceback in its output, a hang, an exit status outside :data:`ALLOWED_EXITS`."""
    error = result.exception
    if error is not None and not isinstance(error, (SystemExit, Reached)):
        return f"{type(error).__name__}: {error}"
    if "Traceback" in result.output:
        return "a traceback in the output"
    if error is None or isinstance(error, SystemExit):
        if result.exit_code not in ALLOWED_EXITS:
            return f"exit status {result.exit_code}"
    return None
