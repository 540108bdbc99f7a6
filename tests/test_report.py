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
PLOTTED = ("compare", "table1", "bench", "decode", "figure")
#: A wide, colourless console for in-process CLI runs (as conftest's CLI_ENV for compare).
CLI_ENV = {"COLUMNS": "200", "NO_COLOR": "1", "FORCE_COLOR": None, "TTY_COMPATIBLE": None}


@pytest.fixture(scope="module")
def result():
    """Every part at the quick sizes, on 48 synthetic tokens."""
    return run_report(synthetic_tokens(48, lang="en"), "synthetic (48 tokens)", ReportConfig.quick())


#: The real renderer, for the test that shows a page is a pure function of its result and language.
RENDER = render_report


@pytest.fixture(scope="module", autouse=True)
def rendered_once():
    """Each (result, language) page drawn once in this module (its plots cost seconds): ``render_report`` is
    answered from a memo keyed by the result object and the language, for the tests' own calls and the command's
    (``write_report`` reads it from its module). Results are frozen, and kept alive with their page so that no
    other object takes their id; a result made anew (another load, a learn section) is drawn anew."""
    import seqlab.render.report as report_render

    pages: dict[tuple[int, str], tuple[object, str]] = {}

    def once(result, lang: str = "en") -> str:
        key = (id(result), lang)
        if key not in pages:
            pages[key] = (result, RENDER(result, lang))
        return pages[key][1]

    patch = pytest.MonkeyPatch()
    patch.setattr(report_render, "render_report", once)
    patch.setitem(globals(), "render_report", once)
    yield
    patch.undo()


@pytest.fixture(scope="module")
def page(result, tmp_path_factory) -> Path:
    return write_report(result, tmp_path_factory.mktemp("report") / "report.html", "en")


def test_a_page_is_a_pure_function_of_its_result_and_language(result, page):
    """What lets :func:`rendered_once` answer a page drawn before: drawn again, it is the same page."""
    assert RENDER(result, "en") == page.read_text(encoding="utf-8") == render_report(result, "en")


def unspanned(html: str) -> str:
    """The page without the no-break spans that hold each number on one line (issue 37)."""
    return re.sub(r'<span class="nb">(.*?)</span>', r"\1", html)


def sections_of(html: str) -> dict[str, str]:
    """Section id -> its HTML (numbers without their no-break spans)."""
    pattern = r'<section id="(\w+)" class="report-section">(.*?)</section>'
    return dict(re.findall(pattern, unspanned(html), flags=re.DOTALL))


# --- The page --------------------------------------------------------------------------------------------

def test_every_section_is_there_with_its_plot(page):
    html = page.read_text(encoding="utf-8")
    found = sections_of(html)
    assert list(found) == list(PARTS) == ["compare", "table1", "bench", "decode", "figure", "check"]
    for key in PLOTTED:
        assert "<h2>" in found[key] and "<table>" in found[key], key
        images = re.findall(r'<img src="data:image/png;base64,([A-Za-z0-9+/=]+)"', found[key])
        assert len(images) == 1 and len(images[0]) > 10_000, key  # a real PNG, embedded
    assert found["check"].count("<li class=") == 4  # the quick report checks four claims


def test_the_figures_are_the_results(result, page):
    html = unspanned(page.read_text(encoding="utf-8"))
    compare = result.compare
    assert f"{compare.recurrence.closed_form:,}" in html  # 48 * (32² + 32·32) = 98,304
    assert compare.recurrence.closed_form == 48 * (32**2 + 32 * 32) == 98_304
    assert "4 of 4 claims hold" in html and "3 of 15 boxes mix positions" in html
    assert set(result.seconds) == set(PARTS)


def test_the_decode_section_shows_its_measurements(result, page):
    found = sections_of(page.read_text(encoding="utf-8"))["decode"]
    step = result.decode.step("attention_kv_cache", 16)
    assert step.multiplications == 3 * 16**2 + 2 * 16 * 16 == 1_280  # q, k, v + the query over 16 keys and values
    assert "<td>1,280</td>" in found and "T steps like the Elman RNN" in found


def test_the_page_needs_nothing_from_outside(page):
    html = page.read_text(encoding="utf-8")
    assert not re.search(r'(src|href)\s*=\s*"(https?:)?//', html)
    assert "<script" not in html and "<link" not in html and "@import" not in html and "url(" not in html
    assert html.startswith("<!DOCTYPE html>") and '<meta charset="utf-8">' in html


def test_spanish_page(result):
    html = render_report(result, "es")
    assert '<html lang="es">' in html and "Informe de seqlab" in html
    assert "Las afirmaciones de la lección, medidas" in html and "se cumple" in html


def test_the_footer_is_worded_for_the_report(page):
    html = page.read_text(encoding="utf-8")
    assert "4 of 4 claims hold (a preview: 4 of the 12 claims; seqlab check checks all of them;" in html
    assert "--full for larger ones" not in html  # report has no --full


def test_plot_titles_write_numbers_as_the_text_does(result):
    from dataclasses import replace

    from seqlab.render.report import reach_plot

    long = replace(result, compare=replace(result.compare, T=2917))
    assert reach_plot(long, "es").axes[0].get_title().endswith("(T = 2.917)")
    assert reach_plot(long, "en").axes[0].get_title().endswith("(T = 2,917)")


def printed_sizes(figure) -> list[tuple[str, float]]:
    """Every visible text of a drawn figure with its size in points once the PDF scales it to the page."""
    from matplotlib.text import Text

    from seqlab.render.report import print_scale

    figure.canvas.draw()
    scale = print_scale(figure.get_figwidth())
    return [(text.get_text(), text.get_fontsize() * scale) for text in figure.findobj(Text)
            if text.get_text().strip() and text.get_visible()]


def test_table1_plot_prints_at_7_points_or_more(result, monkeypatch):
    import seqlab.render.table1 as table1_render
    from seqlab.render.report import MIN_PRINT_PT, _table1_png

    drawn = []
    real = table1_render.table1_figure

    def keep(*args):
        figure = real(*args)  # drawn under the report's fonts
        drawn.append(figure)
        return figure

    monkeypatch.setattr(table1_render, "table1_figure", keep)
    _table1_png(result, "en")
    (figure,) = drawn
    sizes = printed_sizes(figure)
    assert len(sizes) > 20 and min(size for _, size in sizes) >= MIN_PRINT_PT - 1e-9, sorted(sizes, key=lambda s: s[1])[:3]


def test_bench_and_reach_plots_print_at_7_points_or_more(result):
    from seqlab.render.bench import plot_bench
    from seqlab.render.report import MIN_PRINT_PT, legible, reach_plot

    for figure in (plot_bench(result.bench, "en"), reach_plot(result, "en")):
        sizes = printed_sizes(legible(figure))
        assert min(size for _, size in sizes) >= MIN_PRINT_PT - 1e-9, sorted(sizes, key=lambda s: s[1])[:3]


def test_the_pdf_keeps_rows_claims_and_plots_whole(page):
    """Laid out by WeasyPrint: no table row, claim or plot split across pages, nothing wider than the page."""
    weasyprint = pytest.importorskip("weasyprint", reason="WeasyPrint is not installed")

    def boxes(box, head=False):  # (box, inside a table header)
        head = head or getattr(box, "element_tag", None) == "thead"
        yield box, head
        for child in getattr(box, "children", None) or []:
            yield from boxes(child, head)

    document = weasyprint.HTML(filename=str(page)).render()
    pages_of, too_wide = {}, []
    for number, sheet in enumerate(document.pages):
        root = sheet._page_box
        right = root.content_box_x() + root.width
        for box, head in boxes(root):
            element = getattr(box, "element", None)
            if element is None:
                continue
            classes = (element.get("class") or "").split()
            if (box.element_tag in ("tr", "figure", "img") or "claim" in classes) and not head:  # headers repeat
                pages_of.setdefault(element, set()).add(number)
            if box.element_tag in ("img", "table", "p", "div") and box.position_x + box.margin_width() > right + 0.5:
                too_wide.append((number, box.element_tag))
    split = [(element.tag, sorted(pages)) for element, pages in pages_of.items() if len(pages) > 1]
    assert len(document.pages) > 1 and split == [] and too_wide == []
    assert sum(1 for element in pages_of if "claim" in (element.get("class") or "")) == 4


def test_the_pdf_never_splits_a_number_across_lines(page):
    """Laid out by WeasyPrint (issue 37: "1.710.0 / 80" broke across lines): the text of every no-break span
    (a number, with its separators, exponent or "/ n") lies on one line of the PDF, and the page has such
    spans in its tables, sentences and claims."""
    weasyprint = pytest.importorskip("weasyprint", reason="WeasyPrint is not installed")

    def boxes(box):
        yield box
        for child in getattr(box, "children", None) or []:
            yield from boxes(child)

    document = weasyprint.HTML(filename=str(page)).render()
    lines_of: dict = {}
    for number, sheet in enumerate(document.pages):
        for box in boxes(sheet._page_box):
            element = getattr(box, "element", None)
            if type(box).__name__ == "TextBox" and element is not None and element.tag == "span" \
                    and "nb" in (element.get("class") or "").split():
                lines_of.setdefault(element, set()).add((number, round(box.position_y, 1)))
    assert len(lines_of) > 100
    split = [element.text for element, lines in lines_of.items() if len(lines) > 1]
    assert split == []


def test_the_page_has_print_rules_and_scrolling_tables(page):
    html = page.read_text(encoding="utf-8")
    assert "@page { size: A4;" in html and "@media print" in html
    assert "tr, .claim, figure, img, caption { break-inside: avoid; }" in html
    assert html.count('<div class="table-wrap"><table>') == html.count("<table>") > 0
    assert ".table-wrap { max-width: 100%; overflow: auto; }" in html and "img { max-width: 100%;" in html


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


@pytest.fixture()
def without_weasyprint(monkeypatch):
    """Imports of ``weasyprint`` fail, as on a machine where it is not installed."""
    import builtins

    real_import = builtins.__import__

    def no_weasyprint(name, *args, **kwargs):
        if name == "weasyprint":
            raise ImportError("No module named 'weasyprint'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_weasyprint)


def test_without_weasyprint_the_page_is_the_report(invoke, tmp_path, without_weasyprint):
    out = tmp_path / "page.html"
    output = invoke("--out", str(out), "--quick", "--lang", "en")
    assert output.exit_code == 0, output.output
    assert "No PDF written: WeasyPrint is not available" in output.output
    assert 'install the pdf extra with pip install "seqlab[pdf]" (in a clone: pip install -e ".[pdf]"' in output.output
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
    (("--out", "rep.pdf"), "--out", "ending in .html or .htm (the PDF is written beside it, with .pdf), received "
                                    "'rep.pdf'"),
    (("--out", "rep"), "--out", "received 'rep'"),
    (("--text", "/no/such/file.txt"), "--text", "'/no/such/file.txt'"),
    (("--d-model", "0"), "--d-model", "0"),
    (("--quick", "--d-model", "4096"), "--d-model", "expected an integer in [1, 256] under --quick (a preview in "
                                                    "seconds), received 4096"),
    (("--quick", "--max-tokens", "5000"), "--max-tokens", "[2, 1000] under --quick"),
    (("--max-tokens", "1"), "--max-tokens", "1"),
    (("--lang", "fr"), "--lang", "'fr'"),
])
def test_bad_usage_exits_2(invoke, monkeypatch, args, option, value):
    monkeypatch.setattr(report_study, "run_report", measuring)
    output = invoke(*args)
    assert output.exit_code == 2 and "Traceback" not in output.output
    errors = [line for line in output.output.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1 and errors[0].startswith(f"Error: Invalid value for '{option}'") and value in errors[0]


def measuring(*args, **kwargs):
    raise AssertionError("the report measured before refusing its options")


def test_an_unwritable_folder_is_refused_before_measuring(invoke, monkeypatch, tmp_path):
    import seqlab.cli.options

    def denied(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(report_study, "run_report", measuring)
    monkeypatch.setattr(seqlab.cli.options.tempfile, "NamedTemporaryFile", denied)
    output = invoke("--out", str(tmp_path / "r.html"))
    assert output.exit_code == 2, output.output
    errors = [line for line in output.output.splitlines() if line.startswith("Error:")]
    assert errors == [f"Error: Invalid value for '--out': cannot write in {str(tmp_path)!r}: Permission denied"]


def test_quick_takes_d_model_up_to_its_maximum(invoke, tmp_path):
    output = invoke("--out", str(tmp_path / "r.html"), "--quick", "--d-model", "256", "--no-pdf")
    assert output.exit_code == 0, output.output


def text_file(folder: Path, words: int) -> Path:
    path = folder / "long.txt"
    path.write_text(" ".join(f"w{i}" for i in range(words)), encoding="utf-8")
    return path


def test_quick_compares_the_first_thousand_tokens(invoke, monkeypatch, result, tmp_path):
    seen = []
    monkeypatch.setattr(report_study, "run_report",
                        lambda tokens, source, config, progress=None: seen.append(len(tokens)) or result)
    long = text_file(tmp_path, 3000)
    output = invoke("--out", str(tmp_path / "r.html"), "--quick", "--text", str(long), "--no-pdf", "--lang", "en")
    assert output.exit_code == 0, output.output
    assert seen == [1000] and "--quick compares the first 1,000 of the text's" in output.output
    output = invoke("--out", str(tmp_path / "r.html"), "--quick", "--text", str(long), "--max-tokens", "40",
                    "--no-pdf")
    assert output.exit_code == 0 and seen[-1] == 40 and "--quick compares" not in output.output


def test_a_text_too_long_for_memory_names_the_max_tokens_that_fits(invoke, monkeypatch, result, tmp_path):
    import seqlab.studies.compare as compare_study
    from seqlab.errors import SeqlabError

    def check_size(T, config):  # this "machine" holds T <= 300
        if T > 300:
            raise SeqlabError(f"T = {T} at d_model = {config.d_model} would need about 40.3 GiB")

    seen = []
    monkeypatch.setattr(compare_study, "check_compare_size", check_size)
    monkeypatch.setattr(report_study, "run_report",
                        lambda tokens, source, config, progress=None: seen.append(len(tokens)) or result)
    long = text_file(tmp_path, 2000)
    output = invoke("--out", str(tmp_path / "r.html"), "--text", str(long), "--no-pdf")
    assert output.exit_code == 2 and seen == [], output.output
    errors = [line for line in output.output.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1 and errors[0].startswith("Error: Invalid value for '--text': T = ")
    assert errors[0].endswith("would need about 40.3 GiB; --max-tokens 300 keeps the first 300 tokens, the most "
                              "that fit")
    output = invoke("--out", str(tmp_path / "r.html"), "--text", str(long), "--max-tokens", "300", "--no-pdf")
    assert output.exit_code == 0 and seen == [300], output.output


def test_without_weasyprint_in_spanish_the_line_is_spanish(invoke, tmp_path, without_weasyprint):
    output = invoke("--out", str(tmp_path / "informe.html"), "--quick", "--lang", "es")
    assert output.exit_code == 0, output.output
    (line,) = [line for line in output.output.splitlines() if line.startswith("No se escribe PDF")]
    assert line == ("No se escribe PDF: WeasyPrint no está disponible (ImportError: No module named 'weasyprint'); "
                    'instala el extra pdf con pip install "seqlab[pdf]" (en un clon: pip install -e ".[pdf]"; '
                    "WeasyPrint necesita la biblioteca Pango) para obtener un PDF.")


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
            assert tab.locator("ol.claims li.holds, ol.claims li.caveat").count() == 4
            assert outside == []  # nothing fetched from outside the file
            tab.screenshot(path=str(SCREENSHOTS / "report.png"), full_page=True)
            narrow = browser.new_page(viewport={"width": 420, "height": 900})  # a phone: nothing scrolls sideways
            narrow.goto(page.as_uri())
            assert narrow.evaluate("document.documentElement.scrollWidth") <= 420
        finally:
            browser.close()
    assert (SCREENSHOTS / "report.png").stat().st_size > 10_000


# --- Times and the machine's load -------------------------------------------------------------------------

def _with_load(value, load):
    """``value`` with every Timing inside it (and every recorded reading) set to ``load``: the measurement of
    the machine's load patched, whatever the result's shape."""
    import dataclasses

    from seqlab.measure.timing import Timing

    if isinstance(value, Timing):
        return dataclasses.replace(value, load=load)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.replace(value, **{
            f.name: load if f.name == "load" else _with_load(getattr(value, f.name), load)
            for f in dataclasses.fields(value) if f.init})
    if type(value) in (tuple, list):
        return type(value)(_with_load(item, load) for item in value)
    if isinstance(value, dict):
        return {key: _with_load(item, load) for key, item in value.items()}
    return value


def test_the_report_says_when_the_machine_was_busy_and_only_then(result):
    from seqlab.measure.timing import MachineLoad
    from seqlab.render.machine_load import busy_caveat

    assert result.load is not None and result.bench.load == result.load  # read once, before the first part
    busy = _with_load(result, MachineLoad(5.0, 2, True))  # os.getloadavg()[0] = 5 on 2 CPUs
    html = unspanned(render_report(busy, "en"))
    meta = re.search(r'<p class="meta">(.*?)</p>', html, flags=re.DOTALL).group(1)
    sentence = busy_caveat(MachineLoad(5.0, 2, True), "en")  # the one busy-machine sentence, everywhere
    assert sentence.startswith("The machine was busy: its load average was 5.00 on 2 CPUs")
    assert meta.endswith(sentence) and sentence in sections_of(html)["bench"]
    assert busy_caveat(MachineLoad(5.0, 2, True), "es") in unspanned(render_report(busy, "es"))
    quiet = render_report(_with_load(result, MachineLoad(0.2, 2, False)), "en")
    assert "The machine was busy" not in quiet and "load average was" not in quiet


@pytest.mark.parametrize(("load_1min", "busy"), [(4.0, True), (0.1, False)])
def test_the_load_is_read_before_the_first_part_and_reaches_the_page(result, monkeypatch, load_1min, busy):
    """os.getloadavg patched (busy, then quiet): the report reads it before any part, hands the reading to the
    bench sweep, and the page's caveat follows it. The parts are stand-ins that record what they were given."""
    import os

    import seqlab.studies.bench as bench_study
    import seqlab.studies.check as check_study
    import seqlab.studies.compare as compare_study
    import seqlab.studies.figure as figure_study
    import seqlab.studies.table1 as table1_study
    from seqlab.measure.timing import machine_load

    monkeypatch.setattr(os, "getloadavg", lambda: (load_1min, 0.0, 0.0))
    monkeypatch.setattr(os, "cpu_count", lambda: 2)  # busy from 0.5 * 2 = 1.0
    monkeypatch.setattr(compare_study, "run_compare", lambda *args: _with_load(result.compare, machine_load()))
    monkeypatch.setattr(table1_study, "run_table1", lambda *args: result.table1)
    monkeypatch.setattr(bench_study, "run_bench", lambda config, load=None: _with_load(result.bench, load))
    monkeypatch.setattr(figure_study, "measure_figure", lambda *args: result.figure)
    monkeypatch.setattr(check_study, "run_check", lambda *args: result.check)
    run = run_report(synthetic_tokens(48, lang="en"), "synthetic (48 tokens)", ReportConfig.quick())
    assert run.load.busy is busy and run.bench.load == run.load and run.load.load_1min == load_1min
    html = unspanned(render_report(run, "es"))
    meta = re.search(r'<p class="meta">(.*?)</p>', html, flags=re.DOTALL).group(1)
    assert ("La máquina estaba ocupada: su carga media era 4,00 con 2 CPU" in meta) is busy
    assert ("La máquina estaba ocupada: su carga media era 4,00 con 2 CPU" in sections_of(html)["bench"]) is busy


# --- The opt-in learn section (seqlab report --learn) ------------------------------------------------------

def tiny_learn():
    """A learn sweep that trains in seconds, with a lesson task (a table) and mqar (the frontier's panels)."""
    from seqlab.learn.training import TrainSettings
    from seqlab.studies.learn import LearnConfig

    return LearnConfig.quick(tasks=("position", "mqar"), models=("attention", "linear_attention"), lengths=(8, 12),
                             pairs=(1, 2), widths=(8,), seeds=1, rates=(1e-2,),
                             settings=TrainSettings(steps=3, test_size=8, validation_size=8))


@pytest.fixture(scope="module")
def learned(result):
    """The module's report with a tiny learn sweep added, as run_report adds it (its seconds last)."""
    import dataclasses

    from seqlab.studies.learn import run_learn

    learn = run_learn(tiny_learn())
    return dataclasses.replace(result, learn=learn, seconds={**result.seconds, "learn": learn.seconds})


@pytest.mark.parametrize("lang", ["en", "es"])
def test_the_learn_section_shows_the_tables_sentences_budget_and_plot(learned, lang):
    from seqlab.render.learn import learn_sentences, learn_table
    from seqlab.render.learn_text import range_text

    html = render_report(learned, lang)
    found = sections_of(html)
    assert list(found) == [*PARTS, "learn"] and '<a href="#learn">' in html
    section = found["learn"]
    for task in ("position", "mqar"):
        title = learn_table(learned.learn, task, lang).title
        assert f'<caption class="title">{title}</caption>' in section  # the terminal's table, title and all
    assert section.count("<table>") == 2
    from markupsafe import escape

    for sentence in learn_sentences(learned.learn, lang):  # the verdicts, the cuts and how it ran
        assert f"<p>{escape(sentence)}</p>" in section
    cell = learned.learn.cell("mqar", "linear_attention", 12, 2, 8)
    assert range_text(cell.mean, cell.low, cell.high, lang) in section  # a measured cell
    budget = {"en": "Budget: the --quick preset of seqlab learn, 12 runs of at most 3 steps of 64 examples; seeds: 1; "
                    "learning rates: 1e-2; the training took ",
              "es": "Presupuesto: el preajuste --quick de seqlab learn, 12 entrenamientos de como mucho 3 pasos de 64 "
                    "ejemplos; semillas: 1; tasas de aprendizaje: 1e-2; el entrenamiento tardó "}[lang]
    assert budget in section  # 2 models x 2 lengths (position) + 2 models x 2 lengths x 2 pairs (mqar) = 12
    images = re.findall(r'<img src="data:image/png;base64,([A-Za-z0-9+/=]+)"', section)
    assert len(images) == 1 and len(images[0]) > 10_000  # plot_learn's panels, embedded
    assert 'width="998"' in section  # two panels a row: 2 · 5.2 in · 96 px (learn --plot draws three)
    meta = re.search(r'<p class="meta">(.*?)</p>', html, flags=re.DOTALL).group(1)
    assert "learn " in meta  # the part's time, with the others'


def test_without_learn_the_page_has_no_learn_section(result, page):
    from seqlab.studies.learn import LearnConfig
    from seqlab.studies.report import REPORT_LEARN, parts

    assert ReportConfig().learn is None and ReportConfig.quick().learn is None and result.learn is None
    assert parts(ReportConfig()) == PARTS and parts(ReportConfig(learn=REPORT_LEARN))[-1] == "learn"
    html = page.read_text(encoding="utf-8")
    assert 'id="learn"' not in html and "seqlab learn" not in html and set(result.seconds) == set(PARTS)
    assert REPORT_LEARN == LearnConfig.quick() and REPORT_LEARN.seeds == 2 and REPORT_LEARN.settings.steps == 400


def test_run_report_checks_the_learn_config_first_and_runs_it_last(result, monkeypatch):
    import seqlab.studies.bench as bench_study
    import seqlab.studies.check as check_study
    import seqlab.studies.compare as compare_study
    import seqlab.studies.decode as decode_study
    import seqlab.studies.figure as figure_study
    import seqlab.studies.table1 as table1_study
    from seqlab.errors import SeqlabError
    from seqlab.studies.learn import LearnConfig

    monkeypatch.setattr(compare_study, "run_compare", lambda *args: result.compare)
    monkeypatch.setattr(table1_study, "run_table1", lambda *args: result.table1)
    monkeypatch.setattr(bench_study, "run_bench", lambda config, load=None: result.bench)
    monkeypatch.setattr(decode_study, "run_decode", lambda *args: result.decode)
    monkeypatch.setattr(figure_study, "measure_figure", lambda *args: result.figure)
    monkeypatch.setattr(check_study, "run_check", lambda *args: result.check)
    tokens = synthetic_tokens(48, lang="en")
    with pytest.raises(SeqlabError, match="tasks must be among"):
        run_report(tokens, "t", ReportConfig.quick(learn=LearnConfig(tasks=("nope",))),
                   progress=lambda *args: pytest.fail("a part ran before the learn config was checked"))
    seen = []
    run = run_report(tokens, "t", ReportConfig.quick(learn=tiny_learn()), lambda *args: seen.append(args))
    assert seen[-1] == (6, 7, "learn") and list(run.seconds) == [*PARTS, "learn"]
    assert len(run.learn.runs) == 12 and run.learn.config == tiny_learn() and not run.learn.partial
    import dataclasses

    import seqlab.studies.learn as learn_study

    stopped = dataclasses.replace(run.learn, partial=True)  # Ctrl-C during training: run_learn keeps what finished
    monkeypatch.setattr(learn_study, "run_learn", lambda config: stopped)
    with pytest.raises(KeyboardInterrupt):  # a report with half a section is not a report: Ctrl-C stops it all
        run_report(tokens, "t", ReportConfig.quick(learn=tiny_learn()))


def test_cli_learn_prices_trains_and_embeds_the_section(invoke, monkeypatch, learned, tmp_path):
    """--learn: the learn preset goes to the report (REPORT_LEARN, patched here to the tiny sweep so the price is
    measured in seconds), its time is printed before anything runs, and the page and PDF carry the section."""
    seen = []
    monkeypatch.setattr(report_study, "REPORT_LEARN", tiny_learn())
    monkeypatch.setattr(report_study, "run_report",
                        lambda tokens, source, config, progress=None: seen.append(config) or learned)
    out = tmp_path / "page.html"
    output = invoke("--out", str(out), "--quick", "--learn", "--lang", "en")
    assert output.exit_code == 0, output.output
    assert seen[0].learn == tiny_learn() and seen[0].compare == ReportConfig.quick().compare
    assert "The learn section trains 12 runs (seqlab learn --quick): at most " in output.output
    assert list(sections_of(out.read_text(encoding="utf-8"))) == [*PARTS, "learn"]
    assert out.with_suffix(".pdf").read_bytes()[:5] == b"%PDF-"
    output = invoke("--out", str(tmp_path / "informe.html"), "--quick", "--learn", "--no-pdf", "--lang", "es")
    assert output.exit_code == 0 and "La sección de learn hace 12 entrenamientos" in output.output, output.output


def test_cli_without_learn_runs_no_learn_part(invoke, monkeypatch, result, tmp_path):
    seen = []
    monkeypatch.setattr(report_study, "run_report",
                        lambda tokens, source, config, progress=None: seen.append(config) or result)
    output = invoke("--out", str(tmp_path / "r.html"), "--quick", "--no-pdf")
    assert output.exit_code == 0 and seen[0].learn is None and "learn section" not in output.output, output.output


def test_the_pages_name_the_claims_quick_checks():
    """The README and the report page say which claims ``--quick`` checks: those ReportConfig.quick() checks."""
    from pathlib import Path

    from seqlab.studies.report import ReportConfig

    claims = ReportConfig.quick().check.claims
    root = Path(__file__).resolve().parents[1]
    named = {"en": ", ".join(claims[:-1]) + " and " + claims[-1], "es": ", ".join(claims[:-1]) + " y " + claims[-1]}
    for page, lang in (("README.md", "en"), ("docs/en/commands/report.md", "en"), ("README.es.md", "es"),
                       ("docs/es/commands/report.md", "es")):
        text = " ".join((root / page).read_text(encoding="utf-8").split())
        assert f"`--quick` {'checks' if lang == 'en' else 'comprueba'} {named[lang]}" in text, page
