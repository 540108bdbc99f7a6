"""The web lab in a real browser (seqlab.web): every page in both languages, and the interactions of L7, L10–L12.

One Uvicorn server (a thread, on a free loopback port) and one headless Chromium (Debian's, through
Playwright's sync API) serve the whole module. Each page is loaded in English and Spanish, waited on
until its numbers have arrived from the API, checked for script errors and saved as a screenshot under
``test-artifacts/screenshots/``. Then: the highlighter lights exactly the three attention boxes (L11),
the keyboard walks the figure, a width slider moves the crossover label (L7), the shuffle demo keeps
attention's numbers and changes the recurrence's (L10), the self-check grades right and wrong answers
(L12), and a short bench runs. Every page is loaded again at a phone's width (390 px) and must not be wider
than the screen (screenshots ``<panel>-<lang>-390.png``); no page may request anything from another host;
stale results are greyed out, the language toggle keeps what was set, and a busy lab is said in the page's
language.
"""

from __future__ import annotations

import re
import socket
import threading
import time
from pathlib import Path
from urllib.parse import urlsplit

import pytest

CHROMIUM = Path("/usr/bin/chromium")
if not CHROMIUM.is_file():
    pytest.skip(f"{CHROMIUM} is absent: the browser tests drive Debian's Chromium", allow_module_level=True)
sync_api = pytest.importorskip("playwright.sync_api",
                               reason="the browser tests need playwright (pip install playwright)")

ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]
SCREENSHOTS = Path(__file__).resolve().parents[1] / "test-artifacts" / "screenshots"
PANELS = ("index", "figure", "cost", "chain", "order", "time", "decode", "quiz")
ATTENTION_BOXES = {"encoder.self_attention", "decoder.masked_self_attention", "decoder.cross_attention"}
#: How long the page is waited for: generous, so that a loaded machine only makes a test slower, never fail (the
#: first figure and chain requests compute for seconds on two quiet cores, far longer on busy ones).
TIMEOUT_MS = 600_000
PHONE_WIDTH = 390


def untranslated(text: str) -> list[str]:
    """English sentences of the ``web`` catalogue (whose Spanish differs) that show in ``text``."""
    from test_web_api import untranslated as find

    return find(text)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="module")
def base_url():
    """A Uvicorn server on a free loopback port, in a thread, for the whole module."""
    import uvicorn

    from seqlab.web.app import create_app

    port = _free_port()
    server = uvicorn.Server(uvicorn.Config(create_app("en", warm=True), host="127.0.0.1", port=port,
                                           log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 120
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            pytest.fail("the Uvicorn server did not start within 120 s")
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(timeout=10)


@pytest.fixture(scope="module")
def browser():
    """One headless Chromium for the module."""
    with sync_api.sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        yield chromium
        chromium.close()


def _open_page(browser, width: int):
    """A fresh page of ``width`` CSS pixels that records script errors, failed requests and any request that
    leaves this computer (the lab works offline: everything it loads comes from the server on 127.0.0.1)."""
    context = browser.new_context(viewport={"width": width, "height": 900})
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    errors: list[str] = []

    def on_console(message) -> None:
        # A 503 is the lab saying it is busy; the page shows it (test_a_busy_lab_is_said_in_the_pages_language).
        if message.type == "error" and "status of 503" not in message.text:
            errors.append(f"console: {message.text}")

    def on_request(request) -> None:
        host = urlsplit(request.url).hostname
        if request.url.startswith(("http:", "https:")) and host not in ("127.0.0.1", "localhost"):
            errors.append(f"request to another host: {request.url}")

    page.on("pageerror", lambda error: errors.append(f"script error: {error}"))
    page.on("console", on_console)
    page.on("requestfailed", lambda request: errors.append(f"request failed: {request.url}"))
    page.on("request", on_request)
    return context, page, errors


@pytest.fixture()
def page(browser):
    """A fresh desktop-sized page that fails the test on any script error, failed or external request."""
    context, page, errors = _open_page(browser, 1280)
    yield page
    seen = list(errors)  # before closing: closing the context aborts what is still in flight (a slow machine)
    context.close()
    assert seen == []


@pytest.fixture()
def phone(browser):
    """The same at a phone's width, 390 CSS pixels."""
    context, page, errors = _open_page(browser, PHONE_WIDTH)
    yield page
    seen = list(errors)  # before closing, as above
    context.close()
    assert seen == []


def wait_until(page, expression: str, timeout_ms: int = TIMEOUT_MS) -> None:
    """Poll ``expression`` in the page until it is truthy. (Playwright's wait_for_function evaluates its predicate
    with eval inside the page, which the lab's Content-Security-Policy forbids, as it should.)"""
    deadline = time.monotonic() + timeout_ms / 1000
    while not page.evaluate(expression):
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {expression}")
        page.wait_for_timeout(50)


def _ready(page, panel: str) -> None:
    """Wait until the panel's numbers have arrived from its endpoint."""
    ready = {
        "index": ".panels .card",
        "figure": "#figure-svg .box >> nth=14",
        "cost": "#worked table",
        "chain": "#paths-attention table",
        "order": "#order-attention .verdict",
        "time": "#gpu-result",
        "decode": "#decode-table table",
        "quiz": "#question-q4",
    }[panel]
    page.wait_for_selector(ready, state="attached")
    if panel == "decode":  # and the model's own cache, below the machines
        page.wait_for_selector("#model-growth table", state="attached")
    if panel in ("cost", "chain"):
        wait_until(page, "document.querySelector('.status') === null || "
                               "!document.querySelector('.status').textContent")


@pytest.mark.parametrize("lang", ["en", "es"])
@pytest.mark.parametrize("panel", PANELS)
def test_every_page_renders_in_both_languages(page, base_url, panel, lang):
    path = "/" if panel == "index" else f"/{panel}"
    page.goto(f"{base_url}{path}?lang={lang}")
    _ready(page, panel)
    assert page.get_attribute("html", "lang") == lang
    other = "es" if lang == "en" else "en"
    assert page.get_attribute(f"#lang-{other}", "href") == f"{path}?lang={other}"  # the toggle keeps the panel
    text = page.inner_text("body")
    assert re.search(r"\{\w+\}", text) is None, "a placeholder was left unfilled"
    if lang == "es":
        assert untranslated(text) == [], "English left on the Spanish page"
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{panel}-{lang}.png"), full_page=True)


@pytest.mark.parametrize("lang", ["en", "es"])
@pytest.mark.parametrize("panel", PANELS)
def test_every_page_fits_a_phone(phone, base_url, panel, lang):
    """At 390 px nothing widens the page: tables scroll inside their cards, charts and text fit."""
    path = "/" if panel == "index" else f"/{panel}"
    phone.goto(f"{base_url}{path}?lang={lang}")
    _ready(phone, panel)
    phone.wait_for_timeout(300)  # charts lay themselves out on the next frames
    width = phone.evaluate("document.documentElement.scrollWidth")
    assert width <= PHONE_WIDTH + 1, f"the page is {width} px wide on a {PHONE_WIDTH} px screen"
    assert phone.evaluate("document.querySelector('header').getBoundingClientRect().width") <= PHONE_WIDTH + 1
    if panel == "chain":  # the depth chart is laid out for the phone: its labels stay readable
        height = phone.evaluate("Math.min(...[...document.querySelectorAll('#chain-svg text')]"
                                ".map((node) => node.getBoundingClientRect().height))")
        assert height >= 9, f"chart text {height:.1f} px high"
    if panel in ("cost", "time", "order"):
        assert phone.locator(".table-scroll").count() >= 1  # the wide tables scroll inside their cards
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    phone.screenshot(path=str(SCREENSHOTS / f"{panel}-{lang}-{PHONE_WIDTH}.png"), full_page=True)


#: Every cell of a results table (the path matrix, a grid that scrolls with its labels, aside): where it overflows
#: its own box or the screen. Empty when every key cell is whole and on screen.
CLIPPED = """() => [...document.querySelectorAll('main table:not(.path-grid) td, main table:not(.path-grid) tbody th')]
  .filter((cell) => cell.getClientRects().length)
  .map((cell) => { const box = cell.getBoundingClientRect();
                   return {text: cell.innerText.slice(0, 40), label: cell.dataset.label || '', left: box.left,
                           right: box.right, over: cell.scrollWidth - cell.clientWidth}; })
  .filter((cell) => cell.left < -1 || cell.right > window.innerWidth + 1 || cell.over > 1)"""


@pytest.mark.parametrize("lang", ["en", "es"])
@pytest.mark.parametrize("width", [PHONE_WIDTH, 1280])
def test_no_key_cell_is_clipped(browser, base_url, width, lang):
    """Order's f(x reordered) and largest |difference|, the Cost tables' ten-digit counts, the Time tables: every
    cell whole and on screen, at a phone's 390 × 844 and at 1280 px (on a phone each row stacks as label–value
    lines)."""
    context = browser.new_context(viewport={"width": width, "height": 844})
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    try:
        for panel, query in (("order", ""), ("cost", "&T=1000"), ("time", ""), ("decode", "")):
            page.goto(f"{base_url}/{panel}?lang={lang}{query}")
            _ready(page, panel)
            page.wait_for_selector("main table", state="attached")
            page.wait_for_timeout(200)
            assert page.evaluate(CLIPPED) == [], f"{panel} at {width} px ({lang}): cells cut or off-screen"
            cells = page.locator("main table:not(.path-grid) td").count()
            assert cells >= 4, f"{panel}: no table to check"
            if panel == "order":  # the two key columns are visible, with their labels on a phone
                reordered = page.locator("#order-attention td").nth(1)
                largest = page.locator("#order-attention td").nth(2)
                assert reordered.is_visible() and largest.is_visible()
                if width == PHONE_WIDTH:
                    label = page.evaluate("getComputedStyle(document.querySelector("
                                          "'#order-attention td:nth-of-type(2)'), '::before').content")
                    assert ("reordered" in label) if lang == "en" else ("reordenad" in label), label
            if panel == "cost":
                assert ("1,024,000,000" if lang == "en" else "1.024.000.000") in page.inner_text("#at-T")
            page.screenshot(path=str(SCREENSHOTS / f"{panel}-{lang}-{width}-cells.png"), full_page=True)
    finally:
        context.close()


def test_highlighter_lights_exactly_the_three_attention_boxes(page, base_url):
    page.goto(f"{base_url}/figure?lang=en")
    _ready(page, "figure")
    assert page.locator("#figure-svg .box.lit").count() == 0
    page.click("#highlighter")
    lit = page.locator("#figure-svg .box.lit")
    assert lit.count() == 3  # L11: only the attention boxes mix positions
    assert {lit.nth(i).get_attribute("data-key") for i in range(3)} == ATTENTION_BOXES
    assert page.get_attribute("#highlighter", "aria-pressed") == "true"
    assert "3 of 15" in page.inner_text("#lit-count")
    page.click("#highlighter")
    assert page.locator("#figure-svg .box.lit").count() == 0


def test_figure_keyboard_navigation(page, base_url):
    page.goto(f"{base_url}/figure?lang=es")
    _ready(page, "figure")
    page.focus("#figure-svg .box[tabindex='0']")
    focused = "document.activeElement.getAttribute('data-key')"
    assert page.evaluate(focused) == "encoder.input_embedding"
    page.keyboard.press("ArrowUp")
    page.keyboard.press("ArrowUp")
    assert page.evaluate(focused) == "encoder.self_attention"
    page.keyboard.press("Enter")
    assert page.get_attribute("#detail-body", "data-key") == "encoder.self_attention"
    assert page.locator("#detail-body .heat span").count() == 8 * 8  # one cell per (output, input) pair
    page.keyboard.press("ArrowRight")
    assert page.evaluate(focused) == "decoder.masked_self_attention"
    page.keyboard.press("ArrowDown")
    page.keyboard.press(" ")
    assert page.get_attribute("#detail-body", "data-key") == "decoder.positional_encoding"
    assert page.locator("#figure-svg .box[tabindex='0']").count() == 1  # roving tab stop
    page.click("#figure-svg .box[data-key='decoder.cross_attention']")
    assert page.locator("#detail-body h3").count() == 2  # x and the encoder memory
    page.screenshot(path=str(SCREENSHOTS / "figure-selected-es.png"), full_page=True)


def test_width_slider_moves_the_crossover_label(page, base_url):
    page.goto(f"{base_url}/cost?lang=en")
    _ready(page, "cost")
    label = page.locator("#crossover-label")
    assert "The curves cross at T = 512." in label.inner_text()  # L7: T = d
    page.fill("#d", "256")
    wait_until(page, "document.querySelector('#crossover-label').textContent.includes('T = 256.')")
    assert page.input_value("#d_h") == "256"
    page.fill("#T", "50")
    wait_until(page, "document.querySelector('#at-T-title').textContent === 'At T = 50'")
    worked = page.inner_text("#worked")
    assert "26,214,400" in worked and "2,560,000" in worked and "1,024,000,000" in worked  # L9
    assert page.locator(".modebar").count() == 0  # no Plotly toolbar (its tooltips would be English)


def test_cost_shows_the_three_scopes_side_by_side(page, base_url):
    page.goto(f"{base_url}/cost?lang=en&T=50&d=512")
    _ready(page, "cost")
    page.wait_for_selector("#scopes .scope .scope-counted")
    headings = page.locator("#scopes .scope h3").all_inner_texts()
    assert headings == ["Lesson (L5 against L6)", "Layer, with W_O", "Layer, without W_O", "Kernels"]
    tops = {round(page.locator("#scopes .scope").nth(i).bounding_box()["y"]) for i in range(4)}
    assert len(tops) == 1  # side by side on a wide screen
    scopes = page.inner_text("#scopes")
    # 50 * 2 * 512**2 (every scope); 50**2 * 1024; 4 * 50 * 512**2 + 50**2 * 1024; without W_O 3 * 50 * 512**2 + ...
    for number in ("26,214,400 (PyTorch's formulas)", "2,560,000 (PyTorch's formulas)",
                   "54,988,800 (PyTorch's formulas)", "41,881,600 (PyTorch's formulas)"):
        assert number in scopes
    assert "never: attention costs more at every T" in scopes
    assert "The scope decides" in page.inner_text("#scopes-verdict")
    page.fill("#T", "2000")
    wait_until(page, "document.querySelector('#scopes-method').textContent.startsWith('Closed forms only')")
    assert "not counted" in page.inner_text("#scopes")
    page.screenshot(path=str(SCREENSHOTS / "cost-scopes-en.png"), full_page=True)


def test_the_scopes_table_reads_on_a_phone(phone, base_url):
    phone.goto(f"{base_url}/cost?lang=es&T=50")
    _ready(phone, "cost")
    phone.wait_for_selector("#scopes .scope .scope-counted")
    boxes = [phone.locator("#scopes .scope").nth(i).bounding_box() for i in range(4)]
    assert all(box["x"] >= 0 and box["x"] + box["width"] <= PHONE_WIDTH for box in boxes)  # none wider than the screen
    assert all(upper["y"] + upper["height"] <= lower["y"] for upper, lower in zip(boxes, boxes[1:]))  # stacked
    assert phone.evaluate("[...document.querySelectorAll('#scopes .scope')].every((card) => "
                          "card.scrollWidth <= card.clientWidth + 1)")  # nothing pokes out of a card
    assert phone.evaluate("document.documentElement.scrollWidth") <= PHONE_WIDTH + 1
    assert "Decide el ámbito" in phone.inner_text("#scopes-verdict")
    phone.locator("#scopes").scroll_into_view_if_needed()
    phone.screenshot(path=str(SCREENSHOTS / "cost-scopes-es-390.png"), full_page=True)


def test_cost_greys_out_stale_results_and_says_why(page, base_url):
    page.goto(f"{base_url}/cost?lang=es")
    _ready(page, "cost")
    page.click("#advanced summary")
    page.fill("#d_h", "0")  # refused in the page: nothing is asked, the old numbers are marked
    assert "d_h debe ser un número entero de 1 a 65.536" in page.inner_text("#cost-status")
    assert "stale" in page.get_attribute("#at-T", "class") and "stale" in page.get_attribute("#worked", "class")
    page.fill("#d_h", "256")
    wait_until(page, "!document.querySelector('#at-T').classList.contains('stale')")
    assert page.inner_text("#cost-status") == ""


@pytest.mark.parametrize(("query", "expected"), [
    ("d_model=1&d_h=1&d_k=65536&d_v=65536",
     ("Attention does more multiplications than the recurrence at every length T ≥ 1: the curves would only meet "
      "at T = 1.526e-5")),
    ("d_model=512&d_h=65536&d_k=512&d_v=512",
     "The recurrence does more multiplications at every length this slider reaches (up to T = 4,096)"),
])
def test_cost_says_where_the_curves_meet_when_it_is_off_the_slider(page, base_url, query, expected):
    page.goto(f"{base_url}/cost?lang=en&{query}")
    _ready(page, "cost")
    assert expected in page.inner_text("#crossover-label")
    assert page.evaluate("document.getElementById('cost-chart').layout.xaxis.range[0]") == 0  # T ≥ 1 only


def test_switching_language_keeps_what_was_set(page, base_url):
    page.goto(f"{base_url}/cost?lang=en")
    _ready(page, "cost")
    page.fill("#d", "256")
    page.fill("#T", "50")
    # the answers asked for have arrived (a call still in flight when the link is followed is aborted: not an error
    # of the page, but one the fixture would count)
    wait_until(page, "document.querySelector('#cost-status').textContent === '' && "
                     "document.querySelector('#crossover-label').textContent.includes('T = 256')")
    page.click("#lang-es")
    page.wait_for_selector("html[lang=es]")
    _ready(page, "cost")
    assert page.input_value("#d") == "256" and page.input_value("#T") == "50" and page.input_value("#d_v") == "256"
    assert "T = 256." in page.inner_text("#crossover-label")
    page.goto(f"{base_url}/order?lang=en")
    _ready(page, "order")
    page.fill("#sentence", "La luz y la sombra")
    page.fill("#reordered", "la sombra y La luz")
    page.click("#compare")
    wait_until(page, "document.querySelector('#order-status').textContent === ''")
    page.click("#lang-es")
    page.wait_for_selector("html[lang=es]")
    _ready(page, "order")
    assert page.input_value("#sentence") == "La luz y la sombra"  # capitals compared aside, kept as typed
    assert page.input_value("#reordered") == "la sombra y La luz"
    assert page.get_attribute("#order-attention .verdict", "data-same") == "true"


def test_shuffle_keeps_attention_numbers_and_changes_the_recurrence(page, base_url):
    page.goto(f"{base_url}/order?lang=en")
    _ready(page, "order")
    assert page.get_attribute("#order-attention .verdict", "data-same") == "true"  # L10
    assert page.get_attribute("#order-recurrence .verdict", "data-same") == "false"
    before = page.input_value("#reordered")
    page.click("#shuffle")
    wait_until(page, f"document.querySelector('#reordered').value !== {before!r}")
    page.wait_for_selector("#order-attention .verdict")
    wait_until(page, "document.querySelector('#order-status').textContent === ''")
    assert page.get_attribute("#order-attention .verdict", "data-same") == "true"
    page.fill("#reordered", "el gato muerde al cartero")
    page.click("#compare")
    assert "same words" in page.inner_text("#order-status")
    assert "stale" in page.get_attribute("#order-result", "class")  # the rows below are for other sentences


def test_quiz_grades_right_and_wrong_answers(page, base_url):
    page.goto(f"{base_url}/quiz?lang=en")
    _ready(page, "quiz")
    q1 = page.locator("#question-q1")
    q1.locator(".hint-button").click()
    assert q1.locator(".hint").is_visible()
    q1.locator("input[value='c']").check()
    q1.locator(".check").click()
    page.wait_for_selector("#question-q1 .feedback")
    assert q1.locator(".feedback").get_attribute("data-correct") == "true"
    assert q1.locator(".feedback li").count() == 4  # why each option is right or wrong
    q1.locator("input[value='a']").check()
    q1.locator(".check").click()
    page.wait_for_selector("#question-q1 .feedback[data-correct='false']")
    q2 = page.locator("#question-q2")
    q2.locator("input[type=text]").fill("1024")
    q2.locator(".check").click()
    page.wait_for_selector("#question-q2 .feedback[data-correct='false']")
    assert "512" in q2.locator(".feedback").inner_text()
    q2.locator("input[type=text]").fill("512")
    q2.locator(".check").click()
    page.wait_for_selector("#question-q2 .feedback[data-correct='true']")
    q4 = page.locator("#question-q4")
    for letter in "abc":
        q4.locator(f"input[value='{letter}']").check()
    q4.locator(".check").click()
    page.wait_for_selector("#question-q4 .feedback[data-correct='true']")
    page.screenshot(path=str(SCREENSHOTS / "quiz-answered-en.png"), full_page=True)


def test_a_short_bench_runs_and_the_gpu_record_shows(page, base_url):
    page.goto(f"{base_url}/time?lang=es")
    _ready(page, "time")
    recorded = Path(__file__).resolve().parents[1] / "benchmarks" / "results"
    if any(recorded.glob("gpu-*.json")):
        assert page.locator("#gpu-result table").count() >= 1
    else:
        assert page.locator("#gpu-not-recorded").count() == 1
    page.select_option("#bench-d", "64")
    page.select_option("#bench-T", "256")
    with page.expect_response(lambda response: "/api/time/run" in response.url) as answer:
        page.click("#bench-run")
    assert answer.value.status == 200
    wait_until(page, "document.querySelector('#bench-run').disabled === false")
    assert page.locator("#local-result tbody tr").count() == 3  # T = 64, 128, 256
    page.screenshot(path=str(SCREENSHOTS / "time-run-es.png"), full_page=True)
    # who finished first at each length, decided or not, and the verdict read from those decisions only
    assert page.locator("#local-result thead th").nth(5).inner_text() == "primero (por ×1,2)"
    firsts = [row.locator("td").nth(4).inner_text() for row in page.locator("#local-result tbody tr").all()]  # T is a th
    assert set(firsts) <= {"SDPA", "nn.RNN", "empate", "sin decidir"} and len(firsts) == 3
    where = page.get_attribute("#time-verdict", "data-where")
    assert where in ("within", "below", "beyond", "not_judged")
    verdict = page.inner_text("#time-verdict")
    assert ("sin decidir" in verdict) is (where == "not_judged")
    assert " hilo" in page.inner_text("#local-result") and "rondas intercaladas" in page.inner_text("#local-result")
    work = page.locator("#local-result thead th").nth(4).inner_text()
    if any(recorded.glob("gpu-*.json")):  # one direction, one format in both tables
        assert page.locator("#gpu-result thead th").nth(4).inner_text() == work == "trabajo atención / recurrencia"
        assert page.locator("#local-result tbody tr").nth(2).locator("td").nth(3).inner_text() == "4"  # 256 / 64


@pytest.mark.parametrize(("load_1min", "busy"), [(7.0, True), (0.0, False)])
def test_the_bench_says_whose_it_is_and_when_the_machine_was_busy(page, base_url, monkeypatch, load_1min, busy):
    import os

    monkeypatch.setattr(os, "getloadavg", lambda: (load_1min, 0.0, 0.0))  # the server runs in this process
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    page.goto(f"{base_url}/time?lang=en")
    _ready(page, "time")
    page.select_option("#bench-d", "64")
    page.select_option("#bench-T", "256")
    page.click("#bench-run")
    page.wait_for_selector("#local-result .origin[data-origin='this_request']")
    assert page.inner_text("#local-result .origin").startswith("Your bench, started ")
    assert all(" ± " in cell for cell in page.locator("#local-result tbody td").all_inner_texts()[0:2])
    assert page.locator("#load-caveat").count() == (1 if busy else 0)
    if busy:
        assert page.inner_text("#load-caveat").startswith("The machine was busy: its load average was 7.00 on 2 "
                                                          "CPUs when the timing began")
    other = page.context.new_page()  # another visitor: the same run, said to be the server's latest, not theirs
    other.goto(f"{base_url}/time?lang=es")
    other.wait_for_selector("#local-result .origin[data-origin='last_on_server']")
    assert other.inner_text("#local-result .origin").startswith("La última medición hecha en este servidor")
    assert other.locator("#load-caveat").count() == (1 if busy else 0)
    other.close()


def test_a_busy_lab_is_said_in_the_pages_language(page, base_url):
    def busy(route):
        route.fulfill(status=503, headers={"Retry-After": "5", "Content-Type": "application/json"},
                      body='{"detail": [], "message": "busy"}')

    page.route("**/api/time/run*", busy)
    page.goto(f"{base_url}/time?lang=es")
    _ready(page, "time")
    page.click("#bench-run")
    wait_until(page, "document.querySelector('#bench-run').disabled === false")
    assert page.inner_text("#bench-status") == ("El laboratorio está ocupado midiendo otra petición; inténtalo de "
                                                "nuevo en unos segundos.")


@pytest.mark.parametrize(("lang", "constant"), [("en", "constant"), ("es", "constante")])
def test_the_generation_panel_reads_a_models_own_cache(page, base_url, lang, constant):
    """Choosing Mamba in the model menu: its bytes by kind at every t, each equal to the closed form, and a
    constant growth beside the closed forms' constant."""
    page.goto(f"{base_url}/decode?lang={lang}")
    page.wait_for_selector("#model-growth table", state="attached")
    page.select_option("#model-family", "mamba")
    wait_until(page, "document.querySelector('#model-caption').textContent.includes('MambaForCausalLM')")
    rows = page.locator("#model-table tbody tr")
    assert rows.count() == 5  # t = 4, 8, 16, 32, 64
    assert rows.nth(4).inner_text().split("\t")[-1].strip() in ("2,048 (=)", "2.048 (=)")  # SSM state, any t
    growth = page.locator("#model-growth tbody tr").nth(1).inner_text()  # the whole cache
    assert growth.count(constant) == 2
    assert "model=mamba" in page.url
