"""The web lab in a real browser (seqlab.web): every page in both languages, and the interactions of L7, L10–L12.

One Uvicorn server (a thread, on a free loopback port) and one headless Chromium (Debian's, through
Playwright's sync API) serve the whole module. Each page is loaded in English and Spanish, waited on
until its numbers have arrived from the API, checked for script errors and saved as a screenshot under
``test-artifacts/screenshots/``. Then: the highlighter lights exactly the three attention boxes (L11),
the keyboard walks the figure, a width slider moves the crossover label (L7), the shuffle demo keeps
attention's numbers and changes the recurrence's (L10), the self-check grades right and wrong answers
(L12), and a short bench runs.
"""

from __future__ import annotations

import re
import socket
import threading
import time
from pathlib import Path

import pytest

CHROMIUM = Path("/usr/bin/chromium")
if not CHROMIUM.is_file():
    pytest.skip(f"{CHROMIUM} is absent: the browser tests drive Debian's Chromium", allow_module_level=True)
sync_api = pytest.importorskip("playwright.sync_api",
                               reason="the browser tests need playwright (pip install playwright)")

ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]
SCREENSHOTS = Path(__file__).resolve().parents[1] / "test-artifacts" / "screenshots"
PANELS = ("index", "figure", "cost", "chain", "order", "time", "quiz")
ATTENTION_BOXES = {"encoder.self_attention", "decoder.masked_self_attention", "decoder.cross_attention"}
TIMEOUT_MS = 60_000  # a busy two-core machine: the first figure and chain requests compute for seconds


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
    server = uvicorn.Server(uvicorn.Config(create_app("en"), host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            pytest.fail("the Uvicorn server did not start within 30 s")
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


@pytest.fixture()
def page(browser):
    """A fresh page that fails the test on any script error or failed request."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(f"script error: {error}"))
    page.on("console", lambda message: errors.append(f"console: {message.text}") if message.type == "error" else None)
    page.on("requestfailed", lambda request: errors.append(f"request failed: {request.url}"))
    yield page
    context.close()
    assert errors == []


def _ready(page, panel: str) -> None:
    """Wait until the panel's numbers have arrived from its endpoint."""
    ready = {
        "index": ".panels .card",
        "figure": "#figure-svg .box >> nth=14",
        "cost": "#worked table",
        "chain": "#paths-attention table",
        "order": "#order-attention .verdict",
        "time": "#gpu-result",
        "quiz": "#question-q4",
    }[panel]
    page.wait_for_selector(ready, state="attached")
    if panel in ("cost", "chain"):
        page.wait_for_function("document.querySelector('.status') === null || "
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
    page.wait_for_function("document.querySelector('#crossover-label').textContent.includes('T = 256.')")
    assert page.input_value("#d_h") == "256"
    page.fill("#T", "50")
    page.wait_for_function("document.querySelector('#at-T-title').textContent === 'At T = 50'")
    worked = page.inner_text("#worked")
    assert "26,214,400" in worked and "2,560,000" in worked and "1,024,000,000" in worked  # L9


def test_shuffle_keeps_attention_numbers_and_changes_the_recurrence(page, base_url):
    page.goto(f"{base_url}/order?lang=en")
    _ready(page, "order")
    assert page.get_attribute("#order-attention .verdict", "data-same") == "true"  # L10
    assert page.get_attribute("#order-recurrence .verdict", "data-same") == "false"
    before = page.input_value("#reordered")
    page.click("#shuffle")
    page.wait_for_function(f"document.querySelector('#reordered').value !== {before!r}")
    page.wait_for_selector("#order-attention .verdict")
    page.wait_for_function("document.querySelector('#order-status').textContent === ''")
    assert page.get_attribute("#order-attention .verdict", "data-same") == "true"
    page.fill("#reordered", "el gato muerde al cartero")
    page.click("#compare")
    assert "same words" in page.inner_text("#order-status")


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
    page.wait_for_function("document.querySelector('#bench-run').disabled === false")
    assert page.locator("#local-result tbody tr").count() == 3  # T = 64, 128, 256
    page.screenshot(path=str(SCREENSHOTS / "time-run-es.png"), full_page=True)

