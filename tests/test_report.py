"""``seqlab report``: one self-contained HTML page with every section and its plot, checked in a real browser.

The report is built once per module at tiny sizes (:meth:`ReportConfig.quick`, a few seconds); the command
line is tested with that result patched in; Chromium (through Playwright) opens the file offline, checks
that every section and plot is shown and saves a screenshot under ``test-artifacts/screenshots/``.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

import seqlab.studies.report as report_study
from seqlab.cli import app
from seqlab.render.report import render_report, write_report
from seqlab.studies.report import PARTS, ReportConfig, run_report
from seqlab.text import synthetic_tokens

CHROMIUM = Path("/usr/bin/chromium")
SCREENSHOTS = Path(__file__).resolve().parents[1] / "test-artifacts" / "screenshots"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
#: Sections that carry a plot (the check section is a list of claims).
PLOTTED = ("compare", "table1", "bench", "figure")
#: A wide, colourless console for in-process CLI runs (as conftest's CLI_ENV for compare).
CLI_ENV = {"COLUMNS": "200", "NO_COLOR": "1", "FORCE_COLOR": None, "TTY_COMPATIBLE": None}


@pytest.fixture(scope="module")
def result():
    """Every part at the quick sizes, on 48 synthetic tokens."""
    return run_report(synthetic_tokens(48, lang="en"), "synthetic (48 tokens)", ReportConfig.quick())


@pytest.fixture(scope="module")
def page(result, tmp_path_factory) -> Path:
    return write_report(result, tmp_path_factory.mktemp("report") / "report.html", "en")


def sections_of(html: str) -> dict[str, str]:
    """Section id -> its HTML."""
    pattern = r'<section id="(\w+)" class="report-section">(.*?)</section>'
    return dict(re.findall(pattern, html, flags=re.DOTALL))


# --- The page --------------------------------------------------------------------------------------------

def test_every_section_is_there_with_its_plot(page):
    html = page.read_text(encoding="utf-8")
    found = sections_of(html)
    assert list(found) == list(PARTS) == ["compare", "table1", "bench", "figure", "check"]
    for key in PLOTTED:
        assert "<h2>" in found[key] and "<table>" in found[key], key
        images = re.findall(r'<img src="data:image/png;base64,([A-Za-z0-9+/=]+)"', found[key])
        assert len(images) == 1 and len(images[0]) > 10_000, key  # a real PNG, embedded
    assert found["check"].count("<li class=") == 4  # the quick report checks four claims


def test_the_figures_are_the_results(result, page):
    html = page.read_text(encoding="utf-8")
    compare = result.compare
    assert f"{compare.recurrence.closed_form:,}" in html  # 48 * (32² + 32·32) = 98,304
    assert compare.recurrence.closed_form == 48 * (32**2 + 32 * 32) == 98_304
    assert "4 of 4 claims hold" in html and "3 of 15 boxes mix positions" in html
    assert set(result.seconds) == set(PARTS)


def test_the_page_needs_nothing_from_outside(page):
    html = page.read_text(encoding="utf-8")
    assert not re.search(r'(src|href)\s*=\s*"(https?:)?//', html)
    assert "<script" not in html and "<link" not in html and "@import" not in html and "url(" not in html
    assert html.startswith("<!DOCTYPE html>") and '<meta charset="utf-8">' in html


def test_spanish_page(result):
    html = render_report(result, "es")
    assert '<html lang="es">' in html and "Informe de seqlab" in html
    assert "Las afirmaciones de la lección, medidas" in html and "se cumple" in html


# --- The command -----------------------------------------------------------------------------------------

@pytest.fixture()
def invoke(monkeypatch, result):
    """``seqlab report ARGS`` with the module's result patched in (no second measurement)."""
    monkeypatch.setattr(report_study, "run_report", lambda tokens, source, config, progress=None: result)
    return lambda *args: CliRunner().invoke(app, ["report", *args], env=CLI_ENV)


def test_cli_writes_the_page(invoke, tmp_path):
    out = tmp_path / "page.html"
    output = invoke("--out", str(out), "--quick", "--lang", "en")
    assert output.exit_code == 0, output.output
    assert f"Wrote {out}" in output.output and "4 of 4 claims hold" in output.output
    assert list(sections_of(out.read_text(encoding="utf-8"))) == list(PARTS)
    pdf = out.with_suffix(".pdf")
    assert f"Wrote {pdf}" in output.output
    assert pdf.read_bytes()[:5] == b"%PDF-" and pdf.stat().st_size > 50_000  # the embedded plots came along


def test_without_weasyprint_the_page_is_the_report(invoke, tmp_path, monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_weasyprint(name, *args, **kwargs):
        if name == "weasyprint":
            raise ImportError("No module named 'weasyprint'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_weasyprint)
    out = tmp_path / "page.html"
    output = invoke("--out", str(out), "--quick", "--lang", "en")
    assert output.exit_code == 0, output.output
    assert "No PDF written: WeasyPrint is not available" in output.output and "pip install weasyprint" in output.output
    assert out.exists() and not out.with_suffix(".pdf").exists()


def test_no_pdf_option_skips_it(invoke, tmp_path):
    out = tmp_path / "page.html"
    output = invoke("--out", str(out), "--quick", "--no-pdf")
    assert output.exit_code == 0, output.output
    assert out.exists() and not out.with_suffix(".pdf").exists() and "PDF" not in output.output


def test_cli_in_spanish(invoke, tmp_path):
    out = tmp_path / "informe.html"
    output = invoke("--out", str(out), "--lang", "es")
    assert output.exit_code == 0, output.output
    assert "Escrito" in output.output and "Informe de seqlab" in out.read_text(encoding="utf-8")


@pytest.mark.parametrize(("args", "option", "value"), [
    (("--out", "/no/such/folder/r.html"), "--out", "'/no/such/folder'"),
    (("--out", "."), "--out", "'.'"),
    (("--text", "/no/such/file.txt"), "--text", "'/no/such/file.txt'"),
    (("--d-model", "0"), "--d-model", "0"),
    (("--lang", "fr"), "--lang", "'fr'"),
])
def test_bad_usage_exits_2(invoke, args, option, value):
    output = invoke(*args)
    assert output.exit_code == 2 and "Traceback" not in output.output
    errors = [line for line in output.output.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1 and errors[0].startswith(f"Error: Invalid value for '{option}'") and value in errors[0]


# --- In a browser ------------------------------------------------------------------------------------------

def test_the_page_in_chromium(page):
    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} is not installed: the browser check needs a system Chromium")
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            tab = browser.new_page(viewport={"width": 1280, "height": 900})
            outside = []
            tab.on("request", lambda request: outside.append(request.url)
                   if not request.url.startswith(("file:", "data:")) else None)
            tab.goto(page.as_uri())
            for key in PARTS:
                section = tab.locator(f"section#{key}")
                section.scroll_into_view_if_needed()
                assert section.is_visible(), key
                assert section.locator("h2").is_visible(), key
            for key in PLOTTED:
                image = tab.locator(f"section#{key} figure img")
                image.scroll_into_view_if_needed()
                assert image.is_visible(), key
                assert image.evaluate("img => img.complete && img.naturalWidth > 100"), key
            assert tab.locator("ol.claims li.holds").count() == 4
            assert outside == []  # nothing fetched from outside the file
            tab.screenshot(path=str(SCREENSHOTS / "report.png"), full_page=True)
        finally:
            browser.close()
    assert (SCREENSHOTS / "report.png").stat().st_size > 10_000
