"""The engine page of the manual, in both languages (docs/en/engine.md, docs/es/engine.md): every example runs,
and its shown output is what the code prints now (doctest over the page's ``>>>`` blocks)."""

from __future__ import annotations

import doctest
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[1] / "docs"


@pytest.mark.parametrize("language", ["en", "es"])
def test_engine_page_examples_print_what_is_shown(language):
    page = DOCS / language / "engine.md"
    result = doctest.testfile(str(page), module_relative=False, optionflags=doctest.ELLIPSIS, verbose=False)
    assert result.attempted >= 15 and result.failed == 0


def test_both_languages_show_the_same_examples():
    examples = {language: [(e.source, e.want) for e in doctest.DocTestParser().get_examples(
        (DOCS / language / "engine.md").read_text(encoding="utf-8"))] for language in ("en", "es")}
    assert examples["en"] == examples["es"]
