"""Spanish output: every command run with ``--lang es`` prints no English word outside the glossary's allow-list.

What counts as English is read from the program itself: a word of an English message id (any of the three
catalogues) that is neither a word of the lesson's Spanish text (``src/seqlab/data`` is not needed: the
lesson's vocabulary is the catalogues' reference, :data:`LESSON_WORDS` below lists the Spanish words that
are spelled like English ones) nor in :data:`seqlab.glossary.ALLOWED_ENGLISH`. Names are skipped: a token with
a digit, an underscore, a slash, a dot or a capital inside (``d_model``, ``nn.RNN``, ``ElmanRNN``,
``all-MiniLM-L6-v2``), an option (``--quick``) and a single letter. Every command runs at its smallest sizes
(the report at ``ReportConfig.quick`` with a tiny learn section; ``decode --model`` on a tiny Jamba that the
fixture saves); the web lab's Spanish strings are its catalogue's, scanned alike.

The same runs gather the formulas the commands print: the gated bypass is written one way everywhere
(:data:`seqlab.glossary.NOTATION`, PyTorch's), and attention's operations in a row carry what they count.
"""

from __future__ import annotations

import re
import sys
from collections import Counter
from importlib import resources
from pathlib import Path

import pytest
from babel.messages.pofile import read_po
from conftest import measure_models_once

from seqlab.glossary import ALLOWED_ENGLISH, NOTATION
from seqlab.i18n import DOMAINS

TESTS = Path(__file__).resolve().parent
MESSAGES = Path(str(resources.files("seqlab"))) / "locale" / "es" / "LC_MESSAGES"
CLI_ENV = {"COLUMNS": "200", "NO_COLOR": "1", "FORCE_COLOR": None, "TTY_COMPATIBLE": None}
#: The same, with standard error taken for a terminal (Rich reads ``TTY_COMPATIBLE``): the progress bars draw.
TERMINAL_ENV = {**CLI_ENV, "TTY_COMPATIBLE": "1"}
#: Rich's control sequences (styles, cursor moves): a terminal's, not words.
CONTROL = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
#: Spanish words spelled like an English word of the messages (not English in a Spanish sentence).
LESSON_WORDS = frozenset("""
a al de del el en es la las lo los no o se si su un una y e u con por para
real terminal error diagonal base control general final total normal local original global
factor decide causal bit perro muerde cartero has panel vector ideas divisor residual byte matrices extra
""".split())
#: The paper's title, a name in any language.
TITLE = "Attention Is All You Need"
#: Each command at its smallest sizes, as its own tests run it (``table1 --modern`` below ``--quick``'s lengths, where
#: it still decides every cell and so prints the same sentences; ``decode --quick``: short timings, the same table).
COMMANDS = {
    "help": ["--help"],
    "compare": ["compare", "--tokens", "12", "--d-model", "8"],
    "table1": ["table1", "--quick"],
    "table1_modern": ["table1", "--modern", "--lengths", "8,16,32", "--long-lengths", "32,64,128", "--d-model", "8"],
    "profile": ["profile", "example_layers:make_rnn", "--seq-len", "12", "--d-model", "4"],
    "bench": ["bench", "--lengths", "8,16,32", "--d-model", "8", "--min-run-time", "0.01", "--threads", "1"],
    "learn": ["learn", "--quick", "--tasks", "position", "--models", "mlp,attention", "--lengths", "4", "--seeds", "1"],
    "quiz": ["quiz"],
    "model": ["model", "--max-tokens", "16", "--mixing-tokens", "4"],
    "figure": ["figure", "--length", "4", "--d-model", "8", "--heads", "2"],
    "check_list": ["check", "--list"],
    "check": ["check"],
    "decode": ["decode", "--quick", "--positions", "4,8", "--d-model", "8"],
    "decode_model": ["decode", "--model", "{checkpoint}", "--quick"],  # a tiny Jamba saved by the fixture
}
NAME = re.compile(r"[\d_/.²³⁴ᵀ·×⊙√∂‖]|[a-z][A-Z]|-[A-Z]|^-|^[A-Z]{2,}[a-z]")
#: The web lab's messages name its API's parameters and the keys of the keyboard as they are.
WEB_NAMES = frozenset({"answer", "heads", "sublayer", "memory", "Tab", "Enter", "Ctrl", "BOM"})  # BOM: the byte order mark, named by its acronym
WORD = re.compile(r"[A-Za-zÀ-ÿ]+")


def english_words() -> frozenset[str]:
    """Every word of the program's English messages, lower case, less the Spanish look-alikes and the allow-list."""
    words = set()
    for domain in DOMAINS:
        with open(MESSAGES / f"{domain}.po", "rb") as po:
            for message in read_po(po, locale="es"):
                for msgid in (message.id if isinstance(message.id, tuple) else (message.id,)):
                    words |= {w.lower() for w in WORD.findall(re.sub(r"\{[^{}]*\}", " ", msgid or ""))}
    return frozenset(words - LESSON_WORDS - ALLOWED_ENGLISH)


ENGLISH = english_words()


def english_in(text: str, names: frozenset[str] = frozenset()) -> Counter:
    """The English words of ``text`` (names, options, single letters and ``names`` skipped), with their counts."""
    found: Counter = Counter()
    for token in text.replace(TITLE, " ").split():
        if NAME.search(token.strip("()[]{}«»,;:¿?¡!'\"")):
            continue
        for word in WORD.findall(token):
            if len(word) > 1 and word.lower() in ENGLISH and word not in names and word.lower() not in names:
                found[word.lower()] += 1
    return found


#: A number written the English way: a decimal point (``0.5``) or groups of three after commas (``12,774,968``);
#: part of a name (``figure1.json``, ``2.13.0+cpu``, ``127.0.0.1``) is not a number.
ENGLISH_NUMBER = re.compile(r"(?<![\w.,+\-^])(\d{1,3}(?:,\d{3}){2,}|\d+\.\d+)(?![\w.,+])")
#: Spanish groups of three after points (``26.214.400``, what Babel writes for ``es``).
SPANISH_GROUPS = re.compile(r"\d{1,3}(?:\.\d{3})+")


def english_numbers(text: str) -> list[str]:
    """The numbers of ``text`` written in the English format.

    >>> english_numbers("0,5 s, 26.214.400 bytes, 2.13.0+cpu, 12,774,968 B, 1.5× y figure1.json (§3.2–3.4)")
    ['12,774,968', '1.5']
    """
    text = " ".join(token for token in text.split() if "§" not in token)  # a paper's section (§3.2–3.4): a name
    return [number for number in ENGLISH_NUMBER.findall(text) if not SPANISH_GROUPS.fullmatch(number)]


def tiny_checkpoint(folder: Path) -> str:
    """A tiny Jamba (attention and Mamba layers, random weights) saved in ``folder`` as any checkpoint is."""
    pytest.importorskip("transformers")
    from seqlab.layers.pretrained import offline_and_quiet
    from seqlab.layers.tiny_lms import build_tiny_lm

    with offline_and_quiet():  # no progress bar on stderr
        build_tiny_lm("jamba_hybrid").save_pretrained(folder)
    return str(folder)


@pytest.fixture(scope="module")
def outputs(tmp_path_factory) -> dict[str, str]:
    """name -> what the command printed with ``--lang es`` (exit status 0 asserted); the report's page as text."""
    from typer.testing import CliRunner

    from seqlab.cli import app
    from seqlab.render.report import render_report
    from seqlab.studies.report import ReportConfig, run_report
    from seqlab.text import synthetic_source, synthetic_tokens

    sys.path.insert(0, str(TESTS))  # profile imports its factory from example_layers, beside this file
    try:
        printed = {}
        checkpoint = tiny_checkpoint(tmp_path_factory.mktemp("tiny-jamba"))
        with pytest.MonkeyPatch.context() as patch:
            measure_models_once(patch)  # model's measurement shared with tests/test_80_columns.py's Spanish run
            for name, args in COMMANDS.items():
                args = [arg.format(checkpoint=checkpoint) for arg in args]
                result = CliRunner().invoke(app, ["--lang", "es", *args],
                                            env=CLI_ENV if name == "quiz" else TERMINAL_ENV,
                                            input="?\n" * 20 if name == "quiz" else None)
                assert result.exit_code in ((0, 130) if name == "quiz" else (0,)), (name, result.output)
                printed[name] = CONTROL.sub("", result.output).replace("\r", "\n")  # each frame of a bar, a line
    finally:
        sys.path.remove(str(TESTS))
    from seqlab.learn.training import TrainSettings
    from seqlab.studies.learn import LearnConfig

    learn = LearnConfig.quick(tasks=("position", "mqar"), models=("attention", "linear_attention"), lengths=(12,),
                              pairs=(1, 2), widths=(8,), seeds=1, rates=(1e-2,),
                              settings=TrainSettings(steps=3, test_size=8, validation_size=8))  # its section too
    page = render_report(run_report(synthetic_tokens(48, lang="es"), synthetic_source(48),
                                    ReportConfig.quick(learn=learn)), "es")
    body = re.sub(r"<(script|style)\b.*?</\1>", " ", page, flags=re.S)
    inline = re.sub(r"</?(span|sup|sub|b|i|em|strong|code|a|abbr|var|small)\b[^>]*>", "", body)  # inside a word
    printed["report"] = re.sub(r"<[^>]+>", " ", inline)
    return printed


def test_the_detector_finds_english():
    assert {"the", "loop", "heads", "span"} <= ENGLISH and "multiplicaciones" not in ENGLISH
    assert english_in("nn.MultiheadAttention, 8 heads; ElmanRNN loop; d_model = 8") == Counter(heads=1, loop=1)
    assert english_in("Profundidad de la cadena: operaciones en fila (scan, kernels, PyTorch)") == Counter()


def module_names() -> frozenset[str]:
    """The names of the checkpoint's modules (``embeddings``, ``attention``, ``output``…): ``model`` lists them."""
    from seqlab.layers.pretrained import load_encoder

    modules = list(load_encoder().model.named_modules())
    return frozenset({part for name, _ in modules for part in name.split(".")} | {type(m).__name__ for _, m in modules})


@pytest.mark.parametrize("name", [*COMMANDS, "report"])
def test_no_english_in_the_spanish_output(outputs, name):
    assert outputs[name].strip(), f"{name} printed nothing"
    names = module_names() if name == "model" else frozenset()
    found = english_in(outputs[name], names)
    lines = [line.strip() for line in outputs[name].splitlines() if english_in(line, names)]
    assert found == Counter(), f"{name} --lang es prints English {dict(found)}:\n" + "\n".join(lines[:15])
    numbers = [line.strip() for line in outputs[name].splitlines() if english_numbers(line)]
    assert numbers == [], f"{name} --lang es writes numbers the English way:\n" + "\n".join(numbers[:15])


def typed_values(command) -> frozenset[str]:
    """The words a user types as values of ``command``'s options (``all``, ``auto``, ``btd``, a task, a machine):
    read from its placeholders, defaults and choices, and from the registries its help lists (names, not English)."""
    from seqlab.cli.language import help_fields
    from seqlab.learn.tasks import TASKS
    from seqlab.measure.layout import LAYOUTS

    from seqlab.studies.bench_model import MACHINES
    from seqlab.zoo.measure import KINDS

    texts = [*help_fields().values(), *TASKS, *LAYOUTS, *MACHINES, *KINDS]
    for param in command.params:
        texts += [str(param.metavar or ""), str(param.default), *map(str, param.type_descriptor.choices or ()),
                  *param.opts, *getattr(param, "secondary_opts", ())]
    return frozenset(word.lower() for text in texts for word in WORD.findall(text))


def test_no_english_in_any_commands_spanish_help():
    """``seqlab CMD --help --lang es`` for every command: placeholders (``ENTERO``, ``ARCHIVO``) and sentences in
    Spanish; the values a user types stay as they are typed."""
    import typer
    from typer.testing import CliRunner

    from seqlab.cli import app

    group = typer.main.get_command(app)
    leaks = {}
    for name, command in group.commands.items():
        result = CliRunner().invoke(app, ["--lang", "es", name, "--help"], env=CLI_ENV)
        assert result.exit_code == 0, (name, result.output)
        names = typed_values(command)
        text = re.sub(r"-\n\s*", "-", result.output)  # a name cut at its hyphen by the help's wrap: one name
        found = english_in(text, names)
        if found:
            leaks[name] = [line.strip() for line in text.splitlines() if english_in(line, names)]
    assert leaks == {}


def numeric_options(command) -> list[str]:
    """``command``'s options that take a number (an ``int`` or ``float``, optional or not)."""
    import typing

    kinds = []
    for param in command.params:
        annotation = param.type_descriptor.annotation
        types = set(typing.get_args(annotation)) - {type(None)} or {annotation}
        if param.param_type_name == "option" and not param.is_flag and types <= {int, float}:
            kinds.append(param.opts[0])
    return kinds


def test_every_refusal_of_a_bad_number_is_spanish():
    """Every numeric option of every command, given a word and a negative number with ``--lang es``: exit 2 and a
    refusal with no English word (the usage line's placeholders included), whether click or seqlab refuses it."""
    import typer
    from typer.testing import CliRunner

    from seqlab.cli import app

    group = typer.main.get_command(app)
    small = {args[0]: args[1:] for args in COMMANDS.values()}
    leaks, tried = {}, 0
    for name, command in group.commands.items():
        for option in numeric_options(command):
            base = list(small.get(name, []))
            if option in base:  # the bad value replaces the small one
                at = base.index(option)
                del base[at:at + 2]
            for bad in ("abc", "-7"):
                result = CliRunner().invoke(app, ["--lang", "es", name, *base, option, bad], env=CLI_ENV)
                tried += 1
                found = english_in(result.output, typed_values(command))
                if result.exit_code != 2 or found:
                    leaks[(name, option, bad)] = (result.exit_code, dict(found), result.output.strip()[-300:])
    assert tried > 50 and leaks == {}  # 37 numeric options today


def test_no_english_in_the_web_labs_spanish():
    with open(MESSAGES / "web.po", "rb") as po:
        spanish = [message.string for message in read_po(po, locale="es") if message.id]
    texts = [" ".join(s) if isinstance(s, tuple) else s for s in spanish]
    leaks = {text: dict(english_in(re.sub(r"\{[^{}]*\}", " ", text), WEB_NAMES)) for text in texts}
    assert {text: found for text, found in leaks.items() if found} == {}


def test_one_notation_for_the_gated_bypass_in_every_command(outputs):
    """The GRU's bypass is PyTorch's z_t ⊙ h_{t−1} wherever a command writes it (never (1 − z) ⊙ h_{t−1})."""
    text = " ".join(" ".join(output.split()) for output in outputs.values())
    factors = set(re.findall(r"([^\s│]+) ⊙ h_\{t−1\}", text))  # a factor cut from it by a cell's wrap: not one
    assert factors and factors <= {"z_t", "a_t"}, factors  # a_t: the linear recurrences' own decay
    assert NOTATION["gru_bypass"] in text and NOTATION["lstm_bypass"] in text


def test_attention_operations_in_a_row_say_what_they_count(outputs, small_result):
    """The lesson's 3 (Q Kᵀ, softmax, A V) is the bare call with the dot score; any other figure names its scope."""
    from seqlab.render.compare import _call_span
    from seqlab.render.compare_format import Formatter
    from seqlab.studies.compare import CompareConfig, run_compare
    from seqlab.text import synthetic_source, synthetic_tokens

    dot = run_compare(synthetic_tokens(8), synthetic_source(8), CompareConfig(d_model=4, time=False, score="dot"))
    assert _call_span(dot, Formatter("en")) == "3 (the call: Q Kᵀ, softmax, A V)"  # L2: three in a row
    assert _call_span(small_result, Formatter("es")) == "4 (la llamada: Q Kᵀ, ÷√d_k, softmax, A V)"  # scaled_dot
    assert "4 (la llamada:" in " ".join(outputs["compare"].split())  # what compare prints (the cell wraps)
    check = " ".join(outputs["check"].split())
    assert "llamada de atención con la puntuación de producto escalar" in check  # L2 names its scope: the dot call
    assert "3 y 3 operaciones en fila" in check  # L2, the dot score, T = 400 and 800


def test_a_checkpoint_without_weights_is_refused_in_spanish(tmp_path):
    """``--model`` on a folder with a config and no weights: the refusal names what is missing in Spanish (pesos),
    the file names kept as they are."""
    from typer.testing import CliRunner

    from seqlab.cli import app

    folder = Path(tiny_checkpoint(tmp_path / "tiny"))
    (folder / "model.safetensors").unlink()
    result = CliRunner().invoke(app, ["--lang", "es", "decode", "--model", str(folder)], env=CLI_ENV)
    assert result.exit_code == 2
    line = " ".join(result.output.split())
    assert "no tiene pesos (model.safetensors, model.safetensors.index.json, pytorch_model.bin," in line
    assert "(config.json, pesos)" in line and english_in(line.split("Error:")[-1]) == Counter()
