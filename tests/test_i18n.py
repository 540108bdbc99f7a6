"""Languages (seqlab.i18n): the Spanish catalogues are complete, compiled and match the code; numbers per language.

The catalogue checks read every ``src/seqlab/locale/es/LC_MESSAGES/<domain>.po`` with Babel (one domain per
front end, :data:`seqlab.i18n.DOMAINS`: ``seqlab`` for the renderers, ``cli`` for the command line, ``web``),
compile it in memory and compare it with the committed ``.mo``; every ``_("…")`` literal in a module must be a
msgid of the domain its ``translator`` names, and every msgid must be used: by a literal, or, in ``cli``, as a
help text or a Typer message.
"""

from __future__ import annotations

import gettext
import io
import re
import string
from importlib import resources
from pathlib import Path

import pytest
from babel.messages.extract import extract_from_file
from babel.messages.mofile import write_mo
from babel.messages.pofile import read_po

from seqlab.errors import SeqlabError
from seqlab.i18n import (DOMAINS, LANGUAGES, check_language, default_language, format_integer, format_number,
                         translator)

PACKAGE = Path(str(resources.files("seqlab")))
MESSAGES = PACKAGE / "locale" / "es" / "LC_MESSAGES"
DOMAINS_ON_DISK = sorted(path.stem for path in MESSAGES.glob("*.po"))
LOCALE_VARIABLES = ("LANGUAGE", "LC_ALL", "LC_MESSAGES", "LANG")
#: Names the renderers give their gettext function: _ (compare), tr (table1, bench), tl (learn).
KEYWORDS = {"_": None, "tr": None, "tl": None, "N_": None,  # N_: marked, translated later (figure)
            "translate": None, "gettext": None,  # the command line's own lookups (cli.language, cli.group)
            "ngettext": (1, 2)}  # plural_translator's function: (singular, plural) ids
#: Templates of the web lab; their _("…") calls belong to the ``web`` catalogue.
TEMPLATES = PACKAGE / "web" / "templates"
DOMAIN_CALL = re.compile(r"translator\([^()]*?,\s*[\"'](\w+)[\"']\)|^DOMAIN = [\"'](\w+)[\"']", re.M)


def compile_command(domain: str) -> str:
    return f"pybabel compile -d src/seqlab/locale -D {domain} -l es"


def read_catalogue(domain: str):
    with open(MESSAGES / f"{domain}.po", "rb") as po:
        return read_po(po, locale="es")


def real_messages(catalogue) -> dict[str, str]:
    """msgid -> msgstr for every real message (the header excluded)."""
    return {message.id: message.string for message in catalogue if message.id}


def placeholders(text: str) -> set[str]:
    return {field for _, field, _, _ in string.Formatter().parse(text) if field is not None}


def used_by_domain() -> dict[str | None, dict[str, str]]:
    """domain -> {msgid: where} for every translated literal, by the domain its module names.

    A module that names no domain (a CLI module using its renderer's function) maps to None: its
    strings may live in any catalogue.
    """
    used: dict[str | None, dict[str, str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        source = path.read_text(encoding="utf-8")
        domains = {call or constant for call, constant in DOMAIN_CALL.findall(source)}
        assert len(domains) <= 1, f"{path}: one catalogue domain per module, found {domains}"
        domain = domains.pop() if domains else ("seqlab" if re.search(r"\btranslator\(", source) else None)
        for lineno, message, _comments, _context in extract_from_file("python", str(path), keywords=KEYWORDS):
            assert message and all(isinstance(m, str) for m in (message if isinstance(message, tuple) else
                                                                (message,))), f"{path}:{lineno}: literals only"
            used.setdefault(domain, {}).setdefault(message, f"{path.name}:{lineno}")
    for path in sorted(TEMPLATES.glob("*.html")):  # the web lab's pages: Jinja2's i18n calls, domain "web"
        for lineno, message, _comments, _context in extract_from_file(
                "jinja2.ext:babel_extract", str(path), keywords=KEYWORDS, options={"extensions": "jinja2.ext.i18n"}):
            assert isinstance(message, str) and message, f"{path}:{lineno}: a translated call needs one literal"
            used.setdefault("web", {}).setdefault(message, f"{path.name}:{lineno}")
    return used


# --- The catalogues ---------------------------------------------------------------------------------

def test_one_catalogue_per_front_end():
    assert tuple(sorted(DOMAINS)) == tuple(DOMAINS_ON_DISK) == ("cli", "seqlab", "web")


def command_line_messages() -> set[str]:
    """The ``cli`` msgids no ``_("…")`` literal names: help texts, Typer's own words, the error templates."""
    import typer.core
    import typer.main

    from seqlab.cli import app
    from seqlab.cli.language import METAVARS, USAGE_MESSAGES, help_texts

    typer_words = {message for _, message, _, _ in
                   extract_from_file("python", typer.core.__file__, keywords={"_": None})}
    helps = {text for _owner, _attribute, text in help_texts(typer.main.get_command(app))}
    help_option = {"Show this message and exit."}  # the --help option's own text, from Typer's click copy
    return helps | typer_words | help_option | set(METAVARS) | set(USAGE_MESSAGES)


@pytest.mark.parametrize("domain", DOMAINS_ON_DISK)
def test_every_message_is_translated_with_the_same_placeholders(domain):
    messages = real_messages(read_catalogue(domain))
    assert messages, f"{domain}.po has no messages"
    for msgid, msgstr in messages.items():
        if isinstance(msgid, tuple):  # ngettext: every Spanish form has the plural id's placeholders
            assert msgstr and all(form.strip() and placeholders(form) == placeholders(msgid[1]) for form in msgstr), \
                f"plural {msgid!r} -> {msgstr!r}"
            continue
        assert msgstr.strip(), f"empty translation for {msgid!r}"
        assert placeholders(msgstr) == placeholders(msgid), f"placeholders differ in {msgid!r} -> {msgstr!r}"


@pytest.mark.parametrize("domain", DOMAINS_ON_DISK)
def test_nothing_is_fuzzy(domain):
    catalogue = read_catalogue(domain)
    assert not catalogue.fuzzy, f"remove '#, fuzzy' from {domain}.po's header, or `{compile_command(domain)}` skips it"
    fuzzy = [message.id for message in catalogue if message.id and message.fuzzy]
    assert fuzzy == [], f"fuzzy translations are skipped when compiling: {fuzzy}"


@pytest.mark.parametrize("domain", DOMAINS_ON_DISK)
def test_compiled_catalogue_is_current(domain):
    compiled = io.BytesIO()
    write_mo(compiled, read_catalogue(domain))
    expected = gettext.GNUTranslations(io.BytesIO(compiled.getvalue()))._catalog
    with open(MESSAGES / f"{domain}.mo", "rb") as mo:
        committed = gettext.GNUTranslations(mo)._catalog
    assert committed == expected, f"{domain}.mo is out of date with {domain}.po: run `{compile_command(domain)}`"


def test_every_translated_string_in_the_code_is_in_its_catalogue():
    used = used_by_domain()
    assert len(used.get("seqlab", {})) >= 40  # the extractor really found the compare renderer's messages
    catalogues = {domain: real_messages(read_catalogue(domain)) for domain in DOMAINS_ON_DISK}
    anywhere = set().union(*catalogues.values())
    loose = used.pop(None, {})
    used.setdefault("cli", {}).update({message: "the command line" for message in command_line_messages()})
    missing = {m: where for m, where in loose.items() if m not in anywhere}
    assert missing == {}, f"strings in no catalogue: {missing}"
    for domain, messages_used in used.items():
        assert domain in catalogues, f"no catalogue {domain}.po for {sorted(messages_used.values())[:3]}"
        messages = catalogues[domain]
        missing = {m: where for m, where in messages_used.items() if m not in messages}
        assert missing == {}, f"strings outside {domain}.po (add them, then `{compile_command(domain)}`): {missing}"
        unused = set(messages) - set(messages_used) - set(loose)
        assert unused == set(), f"msgids of {domain}.po no code uses any more: {unused}"


def test_translator():
    assert translator("es")("Recurrence against attention") == "Recurrencia frente a atención"
    assert translator("es")("Attention ({score}, L2)").format(score="dot") == "Atención (dot, L2)"
    assert translator("en")("Recurrence against attention") == "Recurrence against attention"
    with pytest.raises(SeqlabError, match="'fr'"):
        translator("fr")


# --- Choosing the language ------------------------------------------------------------------------

@pytest.mark.parametrize(("environment", "expected"), [
    ({}, "en"),
    ({"LANG": "es_ES.UTF-8"}, "es"),
    ({"LANG": "en_US"}, "en"),
    ({"LANG": "C"}, "en"),
    ({"LANG": "C.UTF-8"}, "en"),
    ({"LANG": ""}, "en"),
    ({"LC_MESSAGES": "es_AR.UTF-8"}, "es"),
    ({"LANGUAGE": "es", "LANG": "en_US.UTF-8"}, "es"),  # LANGUAGE first, as gettext reads it
    ({"LC_ALL": "es_MX.UTF-8", "LANG": "en_US.UTF-8"}, "es"),  # LC_ALL overrides LANG
    ({"LC_ALL": "C", "LANG": "es_ES.UTF-8"}, "en"),
    ({"LC_ALL": "", "LANG": "es_ES.UTF-8"}, "es"),  # an empty variable is not set
])
def test_default_language_follows_the_environment(monkeypatch, environment, expected):
    for variable in LOCALE_VARIABLES:
        monkeypatch.delenv(variable, raising=False)
    for variable, value in environment.items():
        monkeypatch.setenv(variable, value)
    assert default_language() == expected


def test_check_language():
    assert check_language("en") == "en" and check_language("es") == "es"
    assert LANGUAGES == ("en", "es")
    for bad in ("fr", "ES", "", "es_ES"):
        with pytest.raises(SeqlabError) as error:
            check_language(bad)
        assert repr(bad) in str(error.value) and "en, es" in str(error.value)


# --- Numbers per language -----------------------------------------------------------------------------

@pytest.mark.parametrize(("value", "en", "es"), [
    (26_214_400, "26,214,400", "26.214.400"),  # L9: 2 * 50 * 512**2
    (2_560_000, "2,560,000", "2.560.000"),  # L9: 2 * 50**2 * 512
    (1_024_000_000, "1,024,000,000", "1.024.000.000"),  # L9: 2 * 1000**2 * 512
    (2_500, "2,500", "2.500"),
    (512, "512", "512"),
    (0, "0", "0"),
    (-1_234_567, "-1,234,567", "-1.234.567"),
])
def test_format_integer(value, en, es):
    assert format_integer(value, "en") == en
    assert format_integer(value, "es") == es


@pytest.mark.parametrize(("value", "en", "es"), [
    (50 / 512, "0.0977", "0,0977"),  # L9's ratio, 3 significant digits
    (2000 / 512, "3.91", "3,91"),  # L9: 3.90625
    (1.5625, "1.56", "1,56"),
    (0.0, "0", "0"),
    (123_456.789, "123,457", "123.457"),
    (3.2e-190, "3.20e-190", "3,20e-190"),
    (1.5e7, "1.50e7", "1,50e7"),
    (-0.5, "-0.500", "-0,500"),
    (1e-310, "1.00e-310", "1,00e-310"),  # subnormal float64, still formatted
    (5e-324, "4.94e-324", "4,94e-324"),  # the smallest float64 (a reach at the floor)
])
def test_format_number(value, en, es):
    assert format_number(value, "en") == en
    assert format_number(value, "es") == es


def test_format_refuses_unknown_language():
    with pytest.raises(SeqlabError, match="'fr'"):
        format_integer(1, "fr")
    with pytest.raises(SeqlabError, match="'fr'"):
        format_number(1.0, "fr")
