"""The command line in the output language (seqlab.cli.language, seqlab.cli.group): usage errors, --help,
option errors and Typer's own words follow ``--lang`` (before or after the command name) or the locale;
``seqlab`` alone, ``--version``, and whole command summaries.

Every run is in-process (Typer's CliRunner) with the locale variables set explicitly, so the machine's own
locale cannot decide a test. No test measures anything: each stops at a usage error or at the help.
"""

from __future__ import annotations

import gettext
import inspect
from importlib import resources
from pathlib import Path

import pytest
import typer.core
import typer.main
from babel.messages.pofile import read_po

import seqlab
from seqlab.cli import app
from seqlab.cli.language import (HELP_DOMAIN, USAGE_MESSAGES, argument_language, catalogue, cli_language,
                                 click_message, first_paragraph, help_texts)

MESSAGES = Path(str(resources.files("seqlab"))) / "locale" / "es" / "LC_MESSAGES"
ENGLISH = {"LANGUAGE": None, "LC_ALL": None, "LC_MESSAGES": None, "LANG": "en_US.UTF-8", "COLUMNS": "80",
           "NO_COLOR": "1"}
SPANISH = {**ENGLISH, "LANG": "es_ES.UTF-8"}


def run(runner, *args: str, env: dict | None = None):
    return runner.invoke(app, list(args), env=ENGLISH if env is None else env)


def flat(text: str) -> str:
    """The output with every run of whitespace made one space (the help wraps at 80 columns)."""
    return " ".join(text.split())


# --- Usage errors ---------------------------------------------------------------------------------

@pytest.mark.parametrize("args", [
    ("--lang", "es", "compare", "--tokens", "x"),  # the line: --lang before the command name
    ("compare", "--tokens", "x", "--lang", "es"),  # after it, even after the bad option
    ("compare", "--lang=ES", "--tokens", "x"),
])
def test_a_bad_value_is_refused_in_spanish(runner, args):
    result = run(runner, *args)
    assert result.exit_code == 2
    assert "Valor no válido para '--tokens': se esperaba un entero >= 2; se recibió 'x'" in result.output
    assert "Uso: seqlab compare [OPCIONES]" in result.output
    assert "Prueba 'seqlab compare --help' para ver la ayuda." in result.output
    assert "Invalid value" not in result.output and "Traceback" not in result.output


def test_the_same_error_in_english(runner):
    result = run(runner, "compare", "--tokens", "x")
    assert result.exit_code == 2
    assert "Error: Invalid value for '--tokens': expected an integer >= 2, received 'x'" in result.output
    assert "Usage: seqlab compare [OPTIONS]" in result.output and "Try 'seqlab compare --help' for help." in result.output


@pytest.mark.parametrize(("env", "expected"), [
    (SPANISH, "se esperaba un entero >= 2; se recibió 'x'"),
    ({**ENGLISH, "LC_ALL": "es_MX.UTF-8"}, "se esperaba un entero >= 2; se recibió 'x'"),
    ({**SPANISH, "LC_ALL": "C"}, "expected an integer >= 2, received 'x'"),  # LC_ALL overrides LANG
])
def test_the_locale_chooses_the_language(runner, env, expected):
    result = run(runner, "compare", "--tokens", "x", env=env)
    assert result.exit_code == 2 and expected in result.output


def test_lang_on_the_line_beats_the_locale(runner):
    result = run(runner, "compare", "--tokens", "x", "--lang", "en", env=SPANISH)
    assert result.exit_code == 2 and "expected an integer >= 2, received 'x'" in result.output


@pytest.mark.parametrize(("args", "spanish", "english"), [
    (("compare", "--bogus"), "Error: No existe la opción --bogus", "Error: No such option: --bogus"),
    (("compare", "--d-model"), "Error: La opción '--d-model' necesita un valor.",
     "Error: Option '--d-model' requires an argument."),
    (("compare", "extra"), "Error: Sobran argumentos que no se esperaban (extra)",
     "Error: Got unexpected extra argument(s) (extra)"),
    (("profile",), "Error: Falta el argumento 'FÁBRICA'.", "Error: Missing argument 'FACTORY'."),
    (("comapre",), "Error: No existe el comando 'comapre'. ¿Quería decir 'compare'?",
     "Error: No such command 'comapre'. Did you mean 'compare'?"),
    (("--lang", "fr", "compare"), "el idioma debe ser uno de en, es; se recibió 'fr'",
     "language must be one of en, es; received 'fr'"),
])
def test_click_layer_errors_in_both_languages(runner, args, spanish, english):
    spanish_run = run(runner, *args, env=SPANISH)
    english_run = run(runner, *args)
    assert spanish_run.exit_code == english_run.exit_code == 2
    assert spanish in spanish_run.output, spanish_run.output
    assert english in english_run.output, english_run.output


def test_every_usage_message_has_a_spanish_wording():
    for msgid in USAGE_MESSAGES:
        assert catalogue("es", "cli").gettext(msgid) != msgid, msgid


#: Usage errors of every kind click raises: a bad value, an unknown option (with and without close ones), a missing
#: value, a value given to a flag, extra arguments, a missing argument, an unknown command.
CLICK_ERRORS = (["compare", "--tokens", "x"], ["bench", "--machines", "zzz"], ["compare", "--bogus"],
                ["compare", "--to"], ["compare", "--tokens"], ["table1", "--lengths"], ["compare", "--no-time=3"],
                ["compare", "extra", "more"], ["quiz", "extra"], ["profile"], ["comapre"])


@pytest.mark.parametrize("args", CLICK_ERRORS)
def test_click_message_words_what_click_says_from_what_the_error_carries(args):
    """Two routes agree in English: click's own format_message and click_message, which reads no text; in Spanish
    click_message gives the catalogue's sentence."""
    import typer
    import typer.main

    group = typer.main.get_command(app)
    with pytest.raises(typer.TyperException) as raised:
        with cli_language("en"):
            group.main(args=args, standalone_mode=False)
    assert click_message(raised.value, "en", args, group) == raised.value.format_message()
    spanish = click_message(raised.value, "es", args, group)
    assert spanish != raised.value.format_message() or args == ["comapre"]  # Typer's own gettext words: by catalogue


def test_a_refused_value_is_worded_from_its_validation_error_not_its_text():
    """A value Typer's validation refuses is named from the validation error's type and input."""
    import typer
    from pydantic import TypeAdapter, ValidationError

    for annotation, value, spanish in ((int, "x", "El valor 'x' no es un int válido."),
                                       (float, "y", "El valor 'y' no es un float válido.")):
        try:
            TypeAdapter(annotation).validate_python(value)
        except ValidationError as cause:
            error = typer.BadParameter("ignored English text", param_hint="'--seed'")
            error.__cause__ = cause
        assert click_message(error, "es") == f"Valor no válido para '--seed': {spanish}"


@pytest.mark.parametrize(("args", "expected"), [
    (["--lang", "es", "compare"], "es"), (["compare", "--lang", "en"], "en"), (["compare"], None),
    (["--lang"], None), (["compare", "--lang", "xx"], None), (["--", "--lang", "es"], None),
])
def test_argument_language(args, expected):
    assert argument_language(args) == expected


def test_gettext_state_is_restored_after_a_spanish_run(runner):
    import builtins

    domain = gettext.textdomain()
    original = typer.core._
    # builtins._ may already hold the last value a doctest displayed in this worker: it must not change.
    underscore = builtins.__dict__.get("_", gettext)
    assert run(runner, "--lang", "es", "compare", "--tokens", "x").exit_code == 2
    assert typer.core._ is original is gettext.gettext
    assert gettext.textdomain() == domain and builtins.__dict__.get("_", gettext) is underscore
    with cli_language("es"):
        assert typer.core._("Commands") == "Comandos"
    assert typer.core._("Commands") == "Commands"


# --- Help -----------------------------------------------------------------------------------------

def test_help_in_spanish_with_lang_anywhere(runner):
    for args in (("--lang", "es", "compare", "--help"), ("compare", "--help", "--lang", "es")):
        result = run(runner, *args)
        text = flat(result.output)
        assert result.exit_code == 0
        assert text.startswith("Uso: seqlab compare [OPCIONES]")
        assert "Opciones: --text" in text and "Muestra este mensaje y termina." in text
        assert "Recurrencia, atención, LSTM y GRU sobre un texto" in text
        assert "Omite las medidas de tiempo real." in text and "[por defecto: 512]" in text
        assert "Skip the wall-time" not in text


def test_help_in_english(runner):
    text = flat(run(runner, "compare", "--help").output)
    assert text.startswith("Usage: seqlab compare [OPTIONS]")
    assert "Skip the wall-time measurements." in text and "Show this message and exit." in text


def test_help_follows_the_locale(runner):
    text = flat(run(runner, "table1", "--help", env=SPANISH).output)
    assert "La Tabla 1 de «Attention Is All You Need», medida" in text and "Opciones:" in text


def test_every_help_text_has_a_spanish_translation_and_none_is_stale():
    with open(MESSAGES / f"{HELP_DOMAIN}.po", "rb") as po:
        translated = {message.id: message.string for message in read_po(po, locale="es") if message.id}
    used = {text for _owner, _attribute, text in help_texts(typer.main.get_command(app))}
    missing = sorted(used - set(translated))
    entries = "\n\n".join(f"msgid {text!r}\nmsgstr \"\"" for text in missing)
    assert missing == [], f"add to {HELP_DOMAIN}.po, then `pybabel compile -d src/seqlab/locale -D {HELP_DOMAIN}`:\n" \
                          f"{entries}"
    # help texts no command has any more: test_i18n's check that every msgid of the ``cli`` catalogue is used
    assert all(translated[text] != text for text in used)


# --- A newcomer's first commands --------------------------------------------------------------------

@pytest.mark.parametrize("env", [ENGLISH, SPANISH])
def test_seqlab_alone_prints_the_help_and_succeeds(runner, env):
    result = run(runner, env=env)
    assert result.exit_code == 0
    heading = "Comandos:" if env is SPANISH else "Commands:"
    assert heading in result.output and "compare" in result.output and "--version" in result.output


def test_version(runner):
    result = run(runner, "--version")
    assert result.exit_code == 0 and result.output == f"seqlab {seqlab.__version__}\n"
    assert run(runner, "--version", "compare", "--tokens", "x").exit_code == 0  # eager: nothing else is read


@pytest.mark.parametrize("env", [ENGLISH, SPANISH])
def test_top_level_help_shows_every_summary_whole(runner, env):
    output = run(runner, "--help", env=env).output
    group = typer.main.get_command(app)
    lang = "es" if env is SPANISH else "en"
    translate = catalogue(lang, HELP_DOMAIN).gettext
    for name, command in group.commands.items():
        summary = first_paragraph(translate(inspect.cleandoc(command.help)))
        assert f"{name} {summary}" in flat(output), f"{name}'s summary is not whole in:\n{output}"
    listing = output.split("Comandos:" if lang == "es" else "Commands:")[1]
    assert "..." not in listing, listing  # click's cut summaries end in "..."


# --- Option errors worded by a command or the library -----------------------------------------------------

@pytest.mark.parametrize(("args", "spanish", "english"), [
    (("compare", "--text", "/nonexistent/t.txt"),
     "el archivo de texto '/nonexistent/t.txt' no existe; se esperaba un archivo de texto UTF-8",
     "text file '/nonexistent/t.txt' does not exist; expected a UTF-8 text file"),
    (("compare", "--score", "bogus"), "se esperaba uno de dot, scaled_dot, additive, general; se recibió 'bogus'",
     "expected one of dot, scaled_dot, additive, general; received 'bogus'"),
    (("compare", "--text", "-", "--tokens", "3"), "da --text o --tokens, no los dos",
     "give either --text or --tokens, not both"),
    (("table1", "--lengths", "1,2"), "se esperaban enteros >= 2 separados por comas; se recibió '1,2'",
     "expected integers >= 2 separated by commas, received '1,2'"),
])
def test_command_and_library_errors_in_both_languages(runner, args, spanish, english):
    spanish_run, english_run = run(runner, *args, env=SPANISH), run(runner, *args)
    assert spanish_run.exit_code == english_run.exit_code == 2
    assert spanish in spanish_run.output and english in english_run.output


def test_library_errors_are_worded_where_raised(tmp_path):
    """Each library refusal carries its message id and fields: Spanish from the catalogue, English as raised."""
    from seqlab.errors import SeqlabError
    from seqlab.memory import MemoryEstimate, require_fits
    from seqlab.text import read_text

    calls = {
        "missing": (lambda: read_text(tmp_path / "missing.txt"), "el archivo de texto '{path}' no existe; se esperaba "
                    "un archivo de texto UTF-8 o '-' para la entrada estándar".format(path=tmp_path / "missing.txt")),
        "folder": (lambda: read_text(tmp_path), f"el archivo de texto '{tmp_path}' es una carpeta"),
        "memory": (lambda: require_fits(MemoryEstimate(3 * 2**30, "maps"), "T = 9", available=2**30),
                   "T = 9 necesitaría unos 3,0 GiB (sobre todo maps); este equipo tiene 1,0 GiB disponibles, de los que "
                   "seqlab usa como mucho el 80% (3.221.225.472 bytes frente a 1.073.741.824)"),
    }
    for name, (call, spanish) in calls.items():
        with pytest.raises(SeqlabError) as error:
            call()
        assert spanish in error.value.localized("es"), name
        assert error.value.localized("en") == str(error.value), name


def test_lang_before_the_command_name_sets_the_output_too(runner):
    """Not only the errors: a run's own output follows ``seqlab --lang es COMMAND`` (the command reads the root's)."""
    args = ("table1", "--lengths", "4,8,16", "--d-model", "4")
    spanish = run(runner, "--lang", "es", *args)
    by_locale = run(runner, *args, env=SPANISH)
    english_by_option = run(runner, "--lang", "en", *args, env=SPANISH)
    assert spanish.exit_code == by_locale.exit_code == english_by_option.exit_code == 0
    assert "Tabla 1 de «Attention Is All You Need»" in spanish.output
    assert "Tabla 1 de" in by_locale.output  # the locale, with no --lang
    assert "Table 1 of \"Attention Is All You Need\"" in english_by_option.output


@pytest.mark.parametrize(("args", "spanish"), [
    (["learn", "--quick", "--rates", "abc"], "se esperaban tasas de aprendizaje en (0, 1]; se recibió 'abc' en 'abc'"),
    (["learn", "--quick", "--tasks", "foo"], "tasks debe estar entre recall, order, position, mqar; se recibió 'foo'"),
    (["check", "--only", "L99"], "se esperaban afirmaciones entre L1–L12 (o B1–B5, más allá de la lección)"),
    (["table1", "--lengths", "2,3"], "las longitudes deben tener al menos 3 valores distintos para ajustar un "
                                     "crecimiento; se recibió [2, 3]"),
    (["compare", "--d-model", "100000", "--tokens", "8", "--no-time"],
     "d_model debe ser un entero en [1, 4.096]; se recibió 100.000"),
    (["decode", "--machines", "foo"], "la máquina debe ser una de elman,"),
    (["bench", "--machines", "foo"], "se esperaban máquinas entre rnn, loop, lstm, gru, sdpa, attention o all; se "
                                     "recibió 'foo'"),
])
def test_library_refusals_read_in_spanish(args, spanish):
    """The library's and the commands' own refusals a newcomer met in English under --lang es, now read back."""
    from typer.testing import CliRunner

    from seqlab.cli import app

    result = CliRunner().invoke(app, [*args, "--lang", "es"], env={"COLUMNS": "400"})
    error = " ".join(line for line in result.output.splitlines() if line.startswith("Error:"))
    assert result.exit_code == 2 and spanish in " ".join(result.output.split()), result.output
    assert " received " not in error and " must be " not in error, error
