"""The manual builds in both languages with warnings as errors (``mkdocs build --strict``).

MkDocs with mkdocs-static-i18n builds the English tree (docs/en, at the site's root) and the Spanish one
(docs/es, under es/); mkdocstrings (Python handler, Google-style docstrings) reads ``src/seqlab`` statically for
the API pages of both, so a docstring whose sections it cannot parse (a ``Raises:`` entry without an exception
type, a Markdown reference it cannot resolve), a page of one language missing in the other, or a snippet whose
file is gone fails this test, and so CI. The site is built into a temporary folder.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("mkdocs")
pytest.importorskip("mkdocstrings_handlers.python")
pytest.importorskip("mkdocs_static_i18n")

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
#: A Sphinx role left as text in a rendered page (docs/griffe_roles.py turns them into links).
RAW_ROLE = re.compile(r":(func|class|data|mod|attr|meth|exc|obj):`")
#: One object per API page that must be documented there (page -> heading id).
DOCUMENTED = {
    "layers": "seqlab.layers.recurrent",
    "measure": "seqlab.measure.work.count_multiplications",
    "studies": "seqlab.studies.profile.ProfileResult",
    "render": "seqlab.render.notebook.result_html",
    "seqlab": "seqlab.errors.SeqlabError",
}


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """One build of both languages (it takes seconds), shared by the tests of this module."""
    site = tmp_path_factory.mktemp("docs") / "site"
    # Not --quiet: MkDocs counts strict mode's warnings only at the log level it shows, so under --quiet (errors
    # only) a warning passed here that fails the manual's own command, mkdocs build --strict.
    run = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-f",
                          str(ROOT / "mkdocs.yml"), "-d", str(site)], cwd=ROOT, capture_output=True, text=True)
    assert run.returncode == 0, f"mkdocs build --strict failed:\n{run.stdout}\n{run.stderr}"
    return site


@pytest.mark.parametrize("language", ["", "es"])
def test_the_site_builds_strict_with_every_area_documented(site, language):
    """Every API page documents its area in both languages; doctests show as console code."""
    root = site / language
    for page, identifier in DOCUMENTED.items():
        assert f'id="{identifier}"' in (root / "api" / page / "index.html").read_text(encoding="utf-8"), page
    measure = (root / "api" / "measure" / "index.html").read_text(encoding="utf-8")
    assert '<span class="gp">&gt;&gt;&gt; </span>' in measure  # a Python prompt, highlighted as code
    assert "<blockquote>" not in measure  # never read as Markdown quotations
    assert not (root / "griffe_doctests.py").exists() and (root / "index.html").is_file()  # the helpers stay out


def test_both_trees_hold_the_same_pages(site):
    english = {p.relative_to(DOCS / "en") for p in (DOCS / "en").rglob("*.md")}
    assert english == {p.relative_to(DOCS / "es") for p in (DOCS / "es").rglob("*.md")} and len(english) >= 25
    for page in english:  # each built in its own language
        built = Path(*page.with_suffix("").parts) if page.stem != "index" else page.parent
        assert (site / built / "index.html").is_file() and (site / "es" / built / "index.html").is_file(), page
    assert 'lang="es"' in (site / "es" / "index.html").read_text(encoding="utf-8")


def test_no_sphinx_role_shows_as_text_and_roles_become_links(site):
    for page in site.rglob("*.html"):
        html = page.read_text(encoding="utf-8")
        assert not RAW_ROLE.search(html), page
        assert "&lt;autoref" not in html, page  # a rewritten role that Markdown did not read as HTML (in code)
    measure = (site / "api" / "measure" / "index.html").read_text(encoding="utf-8")
    # :func:`~seqlab.measure.trace.measure_span` in a docstring: a link to the function's heading
    assert re.search(r'<a class="autorefs autorefs-internal"[^>]*href="#seqlab\.measure\.trace\.measure_span"', measure)


def test_shown_outputs_are_included_in_the_pages(site):
    compare = (site / "commands" / "compare" / "index.html").read_text(encoding="utf-8")
    assert "$ seqlab compare --tokens 64 --d-model 32 --no-time --lang en" in compare
    assert "Recurrencia frente a atención" in (site / "es" / "commands" / "compare" / "index.html").read_text(
        encoding="utf-8")


def test_roles_resolve_where_the_docstring_sits():
    sys.path.insert(0, str(DOCS))
    try:
        import griffe

        from griffe_roles import rewrite
    finally:
        sys.path.remove(str(DOCS))
    package = griffe.load("seqlab", search_paths=[str(ROOT / "src")])
    work = package["measure.work"]
    text = rewrite("See :func:`~seqlab.measure.trace.measure_span`, :class:`WorkCount` and :class:`torch.nn.RNN`.", work)
    assert text == ('See <autoref identifier="seqlab.measure.trace.measure_span" optional><code>measure_span</code>'
                    '</autoref>, <autoref identifier="seqlab.measure.work.WorkCount" optional><code>WorkCount</code>'
                    '</autoref> and `torch.nn.RNN`.')


def test_fence_wraps_each_doctest_block():
    sys.path.insert(0, str(ROOT / "docs"))
    try:
        from griffe_doctests import fence_doctests
    finally:
        sys.path.remove(str(ROOT / "docs"))
    text = "Summary.\n\n>>> f(2)\n[(0, 1), (2, 3)]\n\nArgs:\n    x: a value."
    assert fence_doctests(text).splitlines() == ["Summary.", "", "```pycon", ">>> f(2)", "[(0, 1), (2, 3)]", "```",
                                                 "", "Args:", "    x: a value."]
