"""seqlab.errors: messages translated where they are written.

Every refusal is a message id marked with ``seqlab.i18n.N_`` and its named fields: ``str(error)`` is the English
sentence exactly as the f-string it replaced gave it, :meth:`SeqlabError.localized` the catalogue's sentence with
the same fields, numbers in the language's format and embedded messages in the same language. Checked here: the
rendering by kind (two inputs each), that every marked id of ``src/seqlab`` has its Spanish entry with the same
fields (Babel's extractor, the catalogues on disk), that nothing reads an English message back, and that library
refusals reach ``--lang es`` output in Spanish.
"""

from __future__ import annotations

import ast
import pickle
import string
from importlib import resources
from pathlib import Path

import pytest
from babel.messages.extract import DEFAULT_KEYWORDS, extract_from_file
from babel.messages.pofile import read_po

from seqlab.errors import Message, SeqlabError, check_form, format_message, require_positive_int
from seqlab.i18n import DOMAINS, N_

PACKAGE = Path(str(resources.files("seqlab")))
MESSAGES = PACKAGE / "locale" / "es" / "LC_MESSAGES"
#: gettext's usual keywords and N_, as ``pybabel extract -k N_`` reads them.
KEYWORDS = {**DEFAULT_KEYWORDS, "N_": None}
SPANISH = {"LANGUAGE": None, "LC_ALL": None, "LC_MESSAGES": None, "LANG": "es_ES.UTF-8", "COLUMNS": "200",
           "NO_COLOR": "1"}


def spanish_catalogue() -> dict[object, object]:
    """msgid -> msgstr over every catalogue of ``es``; a plural entry under its singular and its plural id."""
    entries: dict[object, object] = {}
    for domain in DOMAINS:
        with open(MESSAGES / f"{domain}.po", "rb") as po:
            for message in read_po(po, locale="es"):
                for msgid in (message.id if isinstance(message.id, tuple) else (message.id,)):
                    if msgid:
                        entries[msgid] = message.string
    return entries


def fields(text: str) -> list[tuple[str, str | None, str]]:
    """Each placeholder of a template as (name, conversion, spec), sorted."""
    return sorted((name, conversion, spec or "") for _, name, spec, conversion in string.Formatter().parse(text)
                  if name is not None)


def marked_messages() -> dict[str, str]:
    """msgid -> where, for every N_-marked (and gettext-keyword) literal in src/seqlab."""
    found: dict[str, str] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        for lineno, message, _comments, _context in extract_from_file("python", str(path), keywords=KEYWORDS):
            for each in (message if isinstance(message, tuple) else (message,)):
                if each:
                    found.setdefault(each, f"{path.relative_to(PACKAGE)}:{lineno}")
    return found


# --- Rendering by kind ---------------------------------------------------------------------------------------

@pytest.mark.parametrize(("error", "english", "spanish"), [
    (SeqlabError(N_("{name} must be an integer >= 1, received {value}"), name="T", value=0),
     "T must be an integer >= 1, received 0", "T debe ser un entero >= 1; se recibió 0"),
    (SeqlabError(N_("{name} must be an integer in [1, {maximum}], received {value}"), name="d_model", maximum=4096,
                 value=100000),
     "d_model must be an integer in [1, 4096], received 100000",
     "d_model debe ser un entero en [1, 4.096]; se recibió 100.000"),
])
def test_english_is_the_fstring_and_spanish_the_catalogue_with_numbers_per_language(error, english, spanish):
    assert str(error) == error.localized("en") == english
    assert error.localized("es") == spanish


def test_field_specs_and_conversions_hold_in_both_languages():
    template = N_("{what} would need about {readable_bytes} (mostly {largest}); this machine has {readable_bytes2} "
                  "available, of which seqlab uses at most {share:.0%} ({total_bytes:,} bytes against {available:,})")
    values = {"what": "T = 9", "readable_bytes": "3.0 GiB", "largest": "maps", "readable_bytes2": "1.0 GiB",
              "share": 0.8, "total_bytes": 3 * 2**30, "available": 2**30}
    assert format_message(template, values, "en") == template.format(**values)
    assert "el 80% (3.221.225.472 bytes frente a 1.073.741.824)" in format_message(template, values, "es")
    quoted = SeqlabError(N_("{name} must be an integer >= 1, received {value!r}"), name="T", value="8")
    assert quoted.localized("es") == "T debe ser un entero >= 1; se recibió '8'"  # repr: the text as typed


@pytest.mark.parametrize(("inner", "spanish_inner"), [
    (Message(N_("attention maps of {T}×{T}"), T=20000), "los mapas de atención de 20.000×20.000"),
    (SeqlabError(N_("{name} must be an integer >= 1, received {value}"), name="T", value=0),
     "T debe ser un entero >= 1; se recibió 0"),
])
def test_nested_messages_and_errors_render_in_the_outer_language(inner, spanish_inner):
    outer = SeqlabError(N_("{error}; --max-tokens {fitting} keeps the first {fitting} tokens, the most that fit"),
                        error=inner, fitting=12000)
    assert str(outer) == f"{inner}; --max-tokens 12000 keeps the first 12000 tokens, the most that fit"
    assert outer.localized("es") == (f"{spanish_inner}; --max-tokens 12.000 conserva los 12.000 primeros tokens, "
                                     "los más que caben")


def test_values_are_kept_as_text_and_errors_pickle_with_their_fields():
    import torch

    module = torch.nn.Linear(2, 2)
    error = SeqlabError(N_("{module_class} fails on x of shape {shape}: {error_class}: {error}"),
                        module_class=module, shape=torch.Size([1, 4]), error_class="RuntimeError",
                        error=RuntimeError("bad"), parameter="module")
    assert not any(isinstance(value, torch.nn.Module) for value in error.fields.values())  # nothing held alive
    copy = pickle.loads(pickle.dumps(error))
    assert (str(copy), copy.parameter, copy.localized("es")) == (str(error), "module", error.localized("es"))
    assert copy.localized("es").startswith("Linear(in_features=2, out_features=2, bias=True) falla con x de forma")
    wrapped = SeqlabError.wrapping(error, parameter="d_model")
    assert (str(wrapped), wrapped.parameter) == (str(error), "d_model")


def test_a_message_with_no_fields_is_literal_text():
    assert str(SeqlabError("a {brace} stays")) == "a {brace} stays"


def test_the_library_raises_its_refusals_as_message_ids():
    with pytest.raises(SeqlabError) as error:
        require_positive_int("T", 0)
    assert error.value.template == "{name} must be an integer >= 1, received {value}"
    assert error.value.fields == {"name": "T", "value": 0}


# --- The catalogues hold every marked message --------------------------------------------------------------------

def test_every_marked_message_has_a_spanish_entry_with_the_same_fields():
    """Babel's extractor over src/seqlab (N_ and gettext's keywords): each id has a Spanish msgstr whose
    placeholders, conversions (!r) and format specs are the id's, in one of the catalogues."""
    spanish = spanish_catalogue()
    marked = marked_messages()
    assert len(marked) > 600  # the extractor really read the package (renderers and refusals)
    missing = {msgid: where for msgid, where in marked.items() if not spanish.get(msgid)}
    assert missing == {}, f"messages with no Spanish entry (add them to a .po, then pybabel compile): {missing}"
    differ = {msgid: spanish[msgid] for msgid in marked
              if isinstance(spanish[msgid], str) and fields(spanish[msgid]) != fields(msgid)}
    assert differ == {}, f"Spanish entries whose placeholders differ from the id's: {differ}"


def raise_calls() -> list[tuple[str, int, ast.expr]]:
    """(module, line, first argument) of every ``SeqlabError(...)`` call in src/seqlab, and of every
    ``super().__init__(...)`` in a subclass of it that words its own message."""
    calls = []
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        subclasses = [node for node in ast.walk(tree) if isinstance(node, ast.ClassDef)
                      and any(isinstance(base, ast.Name) and base.id == "SeqlabError" for base in node.bases)]
        supers = {id(node) for cls in subclasses for node in ast.walk(cls)
                  if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "__init__"
                  and isinstance(node.func.value, ast.Call) and getattr(node.func.value.func, "id", "") == "super"}
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and node.args and (id(node) in supers or (
                    isinstance(node.func, ast.Name) and node.func.id == "SeqlabError")):
                calls.append((str(path.relative_to(PACKAGE)), node.lineno, node.args[0]))
    return calls


#: Refusals raised with a :class:`~seqlab.errors.Message` built by a function that words it (module -> the name).
MESSAGE_VALUES = {"layers/pretrained.py": "fault",  # tokenizer_fault() returns a Message
                  "web/messages.py": 'phrase.render("en")'}  # LabError words its Phrase per request (localized)


def test_every_refusal_is_written_as_a_marked_message_id():
    """A refusal written as an f-string or a joined English text would reach Spanish output in English."""
    calls = raise_calls()
    assert len(calls) > 300
    unmarked = [f"{where}:{line}" for where, line, first in calls
                if not (isinstance(first, ast.Call) and isinstance(first.func, ast.Name) and first.func.id == "N_")
                and MESSAGE_VALUES.get(where) != ast.unparse(first).replace("'", '"')]
    assert unmarked == [], f"SeqlabError raised without an N_ message id: {unmarked}"


# --- Nothing reads an English message back ---------------------------------------------------------------------

def test_no_template_reads_a_message_back():
    """Neither the library's refusals nor click's usage errors are read back: no template module, no regular
    expression in the command line's language module, no private Typer import (its click copy)."""
    assert not (PACKAGE / "cli" / "error_texts.py").exists()
    language = (PACKAGE / "cli" / "language.py").read_text(encoding="utf-8")
    assert "import re" not in language and "re.compile" not in language and "translate_message" not in language
    for path in sorted(PACKAGE.rglob("*.py")):
        source = path.read_text(encoding="utf-8")
        assert "ERROR_MESSAGES" not in source and "translate_error" not in source, path
        assert "typer._click" not in source and "from typer import _click" not in source, path
        tree = ast.parse(source)
        for node in ast.walk(tree):  # no regular expression applied to an exception's text
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                    and node.func.attr in ("match", "fullmatch", "search", "sub", "findall"):
                for argument in node.args:
                    text = ast.unparse(argument)
                    assert not any(word in text for word in ("str(error)", "str(exc)", "format_message()",
                                                                ".localized(")), f"{path}:{node.lineno}: {text}"


# --- Library refusals reach --lang es output in Spanish ----------------------------------------------------------

@pytest.mark.parametrize(("args", "spanish", "english"), [
    (["profile", "math:nope", "--seq-len", "4", "--d-model", "4"],
     "'math' no tiene el atributo 'nope' (en 'math:nope')", "'math' has no attribute 'nope' (from 'math:nope')"),
    (["profile", "torch.nn:Identity", "--seq-len", "6", "--d-model", "4"],  # T ≠ d: no layout to name
     None, None),
    (["compare", "--d-model", "4096", "--tokens", "200000", "--no-time"],
     "T = 200.000 con d_model = 4.096 necesitaría unos", "T = 200000 at d_model = 4096 would need about"),
    (["compare", "--d-model", "4096", "--tokens", "300000", "--no-time"],
     "(sobre todo los mapas de atención de 300.000×300.000)", "(mostly attention maps of 300000×300000)"),
])
def test_library_refusals_reach_spanish_output(runner, args, spanish, english):
    from seqlab.cli import app

    english_env = {**SPANISH, "LANG": "en_US.UTF-8"}
    spanish_run = runner.invoke(app, [*args, "--lang", "es"], env=SPANISH)
    english_run = runner.invoke(app, args, env=english_env)
    if spanish is None:  # a factory that runs: no refusal in either language
        assert spanish_run.exit_code == english_run.exit_code == 0, spanish_run.output
        return
    assert spanish_run.exit_code == english_run.exit_code == 2, spanish_run.output
    assert spanish in " ".join(spanish_run.output.split()), spanish_run.output
    assert english in " ".join(english_run.output.split()), english_run.output
    assert "would need" not in spanish_run.output and "has no attribute" not in spanish_run.output


def test_the_heads_that_do_not_divide_d_model_are_refused_in_spanish():
    """The library's own check (the Transformer layer), worded from the catalogue where it is raised."""
    from seqlab.layers.transformer import Transformer

    for d_model, heads in ((30, 4), (64, 7)):
        with pytest.raises(SeqlabError) as error:
            Transformer(vocabulary=11, d_model=d_model, heads=heads)
        assert error.value.localized("es") == \
            f"heads debe dividir a d_model; se recibió d_model = {d_model} y heads = {heads}"
        assert str(error.value) == f"heads must divide d_model, received d_model = {d_model} and heads = {heads}"


# --- The language chosen once per call -----------------------------------------------------------------------------

def test_the_language_chosen_for_a_call_words_refusals_without_passing_it():
    from seqlab.i18n import use_language

    error = SeqlabError(N_("{name} must be an integer >= 1, received {value}"), name="T", value=0)
    with use_language("es"):
        assert error.localized() == "T debe ser un entero >= 1; se recibió 0"
        with use_language("en"):  # re-entrant: the inner call's language, then the outer one's again
            assert error.localized() == "T must be an integer >= 1, received 0"
        assert error.localized() == "T debe ser un entero >= 1; se recibió 0"
    assert error.localized() == str(error)  # outside any call: English


def test_a_command_line_run_chooses_its_language_once():
    from seqlab.cli.language import cli_language
    from seqlab.i18n import chosen_language

    for lang in ("es", "en"):
        with cli_language(lang):
            assert chosen_language() == lang
    assert chosen_language() is None


# --- the validators every module uses (boundaries of each) ---------------------------------------------
def test_seqlab_error_is_a_value_error_that_names_its_parameter():
    error = SeqlabError("T must be an integer >= 1, received 0", parameter="T")
    assert isinstance(error, ValueError)
    assert str(error) == "T must be an integer >= 1, received 0"
    assert error.parameter == "T"
    assert SeqlabError("no parameter").parameter is None


@pytest.mark.parametrize("value", [1, 2, 10**12])
def test_require_positive_int_returns_the_value(value):
    assert require_positive_int("T", value) == value


@pytest.mark.parametrize("value, message", [
    (0, "T must be an integer >= 1, received 0"),
    (-3, "T must be an integer >= 1, received -3"),
    (True, "T must be an integer >= 1, received True"),
    (False, "T must be an integer >= 1, received False"),
    (2.0, "T must be an integer >= 1, received 2.0"),
    ("3", "T must be an integer >= 1, received '3'"),
    (None, "T must be an integer >= 1, received None"),
])
def test_require_positive_int_refuses_with_the_value(value, message):
    with pytest.raises(SeqlabError) as error:
        require_positive_int("T", value)
    assert str(error.value) == message and error.value.parameter == "T"


def test_require_positive_int_boundary_of_the_maximum():
    assert require_positive_int("d_model", 8, maximum=8) == 8
    assert require_positive_int("d_model", 1, maximum=1) == 1
    with pytest.raises(SeqlabError) as error:
        require_positive_int("d_model", 9, maximum=8)
    assert str(error.value) == "d_model must be an integer in [1, 8], received 9"
    assert error.value.parameter == "d_model"


def test_check_form():
    assert check_form("scan", ("loop", "scan")) == "scan"
    with pytest.raises(SeqlabError) as error:
        check_form("fast", ("loop", "scan"))
    assert str(error.value) == "form must be one of loop, scan; received 'fast'"
    assert error.value.parameter == "form"
    with pytest.raises(SeqlabError):
        check_form(None, ("loop",))


def test_no_label_is_read_back_from_its_english():
    """Labels kept as English data (a text's source, a machine's label) carry the message they are shown as
    (Worded): no module reads them back with a regular expression (issue 36)."""
    for module in ("i18n.py", "render/labels.py"):
        text = (PACKAGE / module).read_text(encoding="utf-8")
        assert "re.fullmatch" not in text and "re.compile" not in text and "re.match" not in text, module
    from seqlab.errors import Worded
    from seqlab.studies.bench_model import MACHINES
    from seqlab.text import builtin_text, synthetic_source

    worded = [builtin_text("es").source, synthetic_source(3), MACHINES["loop"].label, MACHINES["attention"].label]
    assert all(isinstance(label, Worded) for label in worded)
    assert [label.localized("es") for label in worded] == ["el texto incluido (es)", "texto sintético (3 tokens)",
                                                           "ElmanRNN, bucle", "Atención, explícita"]
