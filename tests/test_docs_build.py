"""The documentation site builds from the docstrings with warnings as errors (``mkdocs build --strict``).

MkDocs with mkdocstrings (Python handler, Google-style docstrings) reads ``src/seqlab`` statically, so a
docstring whose sections it cannot parse (a ``Raises:`` entry without an exception type, a Markdown
reference it cannot resolve) fails this test, and so CI. The site is built into a temporary folder.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("mkdocs")
pytest.importorskip("mkdocstrings_handlers.python")

ROOT = Path(__file__).resolve().parents[1]
#: One object per API page that must be documented there (page -> heading id).
DOCUMENTED = {
    "layers": "seqlab.layers.recurrent",
    "measure": "seqlab.measure.work.count_multiplications",
    "studies": "seqlab.studies.profile.ProfileResult",
    "render": "seqlab.render.notebook.result_html",
    "seqlab": "seqlab.errors.SeqlabError",
}


def test_the_site_builds_strict_with_every_area_documented(tmp_path):
    """One build (it takes seconds): every API page documents its area, doctests show as console code."""
    site = tmp_path / "site"
    run = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "-f",
                          str(ROOT / "mkdocs.yml"), "-d", str(site)], cwd=ROOT, capture_output=True, text=True)
    assert run.returncode == 0, f"mkdocs build --strict failed:\n{run.stdout}\n{run.stderr}"
    for page, identifier in DOCUMENTED.items():
        assert f'id="{identifier}"' in (site / "api" / page / "index.html").read_text(encoding="utf-8"), page
    measure = (site / "api" / "measure" / "index.html").read_text(encoding="utf-8")
    assert '<span class="gp">&gt;&gt;&gt; </span>' in measure  # a Python prompt, highlighted as code
    assert "<blockquote>" not in measure  # never read as Markdown quotations
    assert not (site / "griffe_doctests.py").exists() and (site / "index.html").is_file()  # the helper stays out


def test_fence_wraps_each_doctest_block():
    sys.path.insert(0, str(ROOT / "docs"))
    try:
        from griffe_doctests import fence_doctests
    finally:
        sys.path.remove(str(ROOT / "docs"))
    text = "Summary.\n\n>>> f(2)\n[(0, 1), (2, 3)]\n\nArgs:\n    x: a value."
    assert fence_doctests(text).splitlines() == ["Summary.", "", "```pycon", ">>> f(2)", "[(0, 1), (2, 3)]", "```",
                                                 "", "Args:", "    x: a value."]
