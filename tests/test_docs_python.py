"""The manual's Python API page, in both languages (docs/en/python.md, docs/es/python.md): every ``>>>`` cell
runs and returns what the page shows (a doctest over the page, from the repository root, where the page's
``sys.path.insert(0, "examples")`` finds the tutorial's layer)."""

from __future__ import annotations

import doctest
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("language", ["en", "es"])
def test_python_page_cells_return_what_is_shown(language, monkeypatch):
    monkeypatch.chdir(ROOT)
    monkeypatch.setattr(sys, "path", list(sys.path))  # the page puts examples/ on the path: undone after
    monkeypatch.delitem(sys.modules, "my_layer", raising=False)
    page = ROOT / "docs" / language / "python.md"
    result = doctest.testfile(str(page), module_relative=False, optionflags=doctest.ELLIPSIS, verbose=False)
    assert result.attempted >= 20 and result.failed == 0


def test_both_languages_show_the_same_cells():
    cells = {language: [(e.source, e.want) for e in doctest.DocTestParser().get_examples(
        (ROOT / "docs" / language / "python.md").read_text(encoding="utf-8"))] for language in ("en", "es")}
    assert cells["en"] == cells["es"]
