"""The engine page of the manual (docs/engine.md): every example runs, and its shown output is what the code
prints now (doctest over the page's ``>>>`` blocks)."""

from __future__ import annotations

import doctest
from pathlib import Path

PAGE = Path(__file__).resolve().parents[1] / "docs" / "engine.md"


def test_engine_page_examples_print_what_is_shown():
    result = doctest.testfile(str(PAGE), module_relative=False, optionflags=doctest.ELLIPSIS, verbose=False)
    assert result.attempted >= 15 and result.failed == 0
