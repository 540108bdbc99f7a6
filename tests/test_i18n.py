"""Languages (seqlab.i18n): the Spanish catalogue is complete, compiled and matches the code; numbers per language.

The catalogue checks read ``src/seqlab/locale/es/LC_MESSAGES/seqlab.po`` with Babel, compile it in memory
and compare it with the committed ``seqlab.mo``; every ``_("…")`` literal in the package must be a msgid.
"""

from __future__ import annotations

import gettext
import io
import string
from importlib import resources
from pathlib import Path

import pytest
from babel.messages.extract import extract_from_dir
from babel.messages.mofile import write_mo
from babel.messages.pofile import read_po

from seqlab.errors import SeqlabError
from seqlab.i18n import LANGUAGES, check_language, default_language, format_integer, format_number, translator

PACKAGE = Path(str(resources.files("seqlab")))
MESSAGES = PACKAGE / "locale" / "es" / "LC_MESSAGES"
COMPILE = "pybabel compile -d src/seqlab/locale -D seqlab"
LOCALE_VARIABLES = ("LANGUAGE", "LC_ALL", "LC_MESSAGES", "LANG")


@pytest.fixture(scope="module")
def catalogue():
    with open(MESSAGES / "seqlab.po", "rb") as po:
        return read_po(po, locale="es")


@pytest.fixture(scope="module")
def messages(catalogue):
    """msgid -> msgstr for every real message (the header excluded)."""
    return {message.id: message.string for message in catalogue if message.id}


def placeholders(text: str) -> set[str]:
    return {field for _, field, _, _ in string.Formatter().parse(text) if field is not None}


# --- The catalogue ----------------------------------------------------------------------------------

def test_every_message_is_translated_with_the_same_placeholders(messages):
    assert len(messages) >= 40
    for msgid, msgstr in messages.items():
        assert isinstance(msgid, str), f"plural entries are not expected: {msgid!r}"
        assert msgstr.strip(), f"empty translation for {msgid!r}"
        assert placeholders(msgstr) == placeholders(msgid), f"placeholders differ in {msgid!r} -> {msgstr!r}"


def test_no_message_is_fuzzy(catalogue):
    fuzzy = [message.id for message in catalogue if message.id and message.fuzzy]
    assert fuzzy == [], f"fuzzy translations are skipped when compiling: {fuzzy}"


def test_catalogue_header_is_not_fuzzy(catalogue):
    assert not catalogue.fuzzy, f"remove '#, fuzzy' from seqlab.po's header, or `{COMPILE}` will not compile it"


def test_compiled_catalogue_is_current(catalogue):
    compiled = io.BytesIO()
    write_mo(compiled, catalogue)
    expected = gettext.GNUTranslations(io.BytesIO(compiled.getvalue()))._catalog
    with open(MESSAGES / "seqlab.mo", "rb") as mo:
        committed = gettext.GNUTranslations(mo)._catalog
    assert committed == expected, f"seqlab.mo is out of date with seqlab.po: run `{COMPILE}`"


def test_every_translated_string_in_the_code_is_in_the_catalogue(messages):
    extracted = list(extract_from_dir(str(PACKAGE), method_map=[("**.py", "python")]))
    used = {}
    for filename, lineno, message, _comments, _context in extracted:
        assert isinstance(message, str) and message, f"{filename}:{lineno}: _() needs one string literal"
        used.setdefault(message, f"{filename}:{lineno}")
    assert len(used) >= 40  # the extractor really found the renderer's messages
    missing = {message: where for message, where in used.items() if message not in messages}
    assert missing == {}, f"strings outside the catalogue (add them to seqlab.po, then `{COMPILE}`): {missing}"
    unused = set(messages) - set(used)
    assert unused == set(), f"msgids no code uses any more: {unused}"


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
