"""The glossary (seqlab.glossary): every catalogue words each concept with the glossary's Spanish term, in tú.

The catalogues are the three of :data:`seqlab.i18n.DOMAINS` (every command, the report, the notebook, the web
lab). A message whose English id uses a term (``span``, ``bypass``, ``gate``…) must use the term's Spanish
wording; no Spanish message may use a wording that drifted (``Derivación de las puertas``, ``conteo``,
``Cadena (ops)``) or an usted form.
"""

from __future__ import annotations

import re
from importlib import resources
from pathlib import Path

import pytest
from babel.messages.pofile import read_po

from seqlab.errors import SeqlabError
from seqlab.glossary import ALLOWED_ENGLISH, NOTATION, TERMS, USTED_FORMS, term
from seqlab.i18n import DOMAINS

MESSAGES = Path(str(resources.files("seqlab"))) / "locale" / "es" / "LC_MESSAGES"
FIELD = re.compile(r"\{[^{}]*\}")


def messages() -> list[tuple[str, str, str]]:
    """(domain, English id without its fields, Spanish text) for every message of every catalogue."""
    found = []
    for domain in DOMAINS:
        with open(MESSAGES / f"{domain}.po", "rb") as po:
            for message in read_po(po, locale="es"):
                if not message.id:
                    continue
                english = message.id[-1] if isinstance(message.id, tuple) else message.id
                spanish = " ".join(message.string) if isinstance(message.string, tuple) else message.string
                found.append((domain, FIELD.sub(" ", english), spanish))
    return found


MESSAGES_ALL = messages()


def test_the_catalogues_were_read():
    assert len(MESSAGES_ALL) > 1000 and {domain for domain, _, _ in MESSAGES_ALL} == set(DOMAINS)


@pytest.mark.parametrize("entry", [t for t in TERMS if t.en_pattern], ids=lambda t: t.id)
def test_every_message_with_the_term_uses_the_glossary_wording(entry):
    forms = [form.lower() for form in (entry.es_forms or (entry.es,))]
    using = [(d, en, es) for d, en, es in MESSAGES_ALL if re.search(entry.en_pattern, en, re.I)]
    assert using, f"no message uses {entry.en!r}: its pattern {entry.en_pattern!r} finds nothing"
    wrong = [(d, en, es) for d, en, es in using if not any(form in es.lower() for form in forms)]
    assert wrong == [], f"{entry.en!r} must read {entry.es!r} in Spanish:\n" + "\n".join(map(repr, wrong))


@pytest.mark.parametrize("entry", [t for t in TERMS if t.avoid], ids=lambda t: t.id)
def test_no_message_uses_a_wording_that_drifted(entry):
    wrong = [(d, es) for d, _, es in MESSAGES_ALL for pattern in entry.avoid if re.search(pattern, es, re.I)]
    assert wrong == [], f"write {entry.es!r} instead:\n" + "\n".join(map(repr, wrong))


def test_tu_throughout():
    wrong = [(d, es) for d, _, es in MESSAGES_ALL for pattern in USTED_FORMS if re.search(pattern, es, re.I)]
    assert wrong == [], "address the reader as tú:\n" + "\n".join(map(repr, wrong))


def test_the_lesson_terms():
    assert term("span", "es") == "profundidad de la cadena"  # the lesson's "la profundidad de la cadena"
    assert term("bypass", "es") == "vía aditiva"  # the lesson's "le abrieron una vía aditiva al lado"
    assert term("in_a_row", "es") == "en fila"  # the lesson's "Tres operaciones en fila"
    assert term("gate", "es") == "compuerta"  # the lesson's "la compuerta hizo el viaje sobrevivible"
    assert len({t.id for t in TERMS}) == len(TERMS)
    with pytest.raises(SeqlabError, match="'spam'"):
        term("spam", "es")
    with pytest.raises(SeqlabError, match="'fr'"):
        term("span", "fr")


def test_the_allow_list_is_lower_case_words():
    assert all(word == word.lower() and " " not in word for word in ALLOWED_ENGLISH)


def test_one_notation_for_the_gated_bypass():
    """PyTorch's GRU: h_t = (1 − z_t) ⊙ n_t + z_t ⊙ h_{t−1}, so its bypass is z_t ⊙ h_{t−1} (the LSTM's f_t ⊙ c_{t−1})."""
    assert NOTATION["gru_bypass"] in NOTATION["gru_update"] and NOTATION["lstm_bypass"] in NOTATION["lstm_update"]
    assert NOTATION["gru_update"].endswith("+ " + NOTATION["gru_bypass"])
    for _domain, english, spanish in MESSAGES_ALL:  # no message writes the other convention's bypass
        for text in (english, spanish):
            assert "(1 − z) ⊙ h" not in text and "(1 − z_t) ⊙ h" not in text, text
