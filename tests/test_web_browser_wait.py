"""The web lab waits well and stays short (issue 39): a busy measuring worker is waited out, and every page is at
most about three phone screens per section.

The same server and Debian Chromium as :mod:`test_web_browser` (its fixtures, imported). The Generation page is
opened while the lab's one measuring worker is held by another job: its two sections must say, in the
page's language, that the lab is busy and when they ask again, must never have two calls in flight at once (the
page's calls queue behind each other rather than compete for the worker), and must both fill once the worker is
free, with no click. The holding job ends on an event, not after a time: once the page has met the busy lab (a 503
answered and the waiting message shown), the test lets it go. Then every page, in both languages, at 390 × 844 (a
phone), once its numbers have arrived: its height is at most three screens per section (a section: each ``h2`` or
``fieldset`` of the page, at least one),
and no table box or card is taller than three screens (tables scroll within, long lists fold in ``<details>``).
Every wait is on an event, with a deadline of minutes; nothing waits a fixed time or depends on speed.
"""

from __future__ import annotations

import os
import threading
import time

import pytest

from test_web_browser import PANELS, PHONE_WIDTH, SCREENSHOTS, TIMEOUT_MS, _ready, base_url, browser, wait_until

__all__ = ["base_url", "browser"]  # the module's fixtures, shared with test_web_browser

#: A phone's screen, CSS pixels (an iPhone 12–15 at 390 × 844).
SCREEN_HEIGHT = 844
#: Screens a section may take on a phone.
SCREENS_PER_SECTION = 3
#: Seconds at most that the measuring worker is held by another job (a bound for a test that fails before it
#: lets the worker go; the test releases it as soon as the page has met the busy lab).
HOLD_S = 600.0


def hold_until(release: str, seconds: float) -> None:
    """A job that keeps its worker busy until the file ``release`` exists, or ``seconds`` have passed (runs in a
    worker: top level, so that the spawned worker can import it)."""
    deadline = time.monotonic() + seconds
    while not os.path.exists(release) and time.monotonic() < deadline:
        time.sleep(0.05)


def _hold_every_worker(release: str, seconds: float) -> list[threading.Thread]:
    """Keep every worker of the lab's pool busy with :func:`hold_until` (until ``release`` exists, at most
    ``seconds``), started in threads; returns once each holding job runs (the pool says it is busy)."""
    from seqlab.web.workers import default_pool

    pool = default_pool()
    threads = [threading.Thread(target=pool.call, args=(hold_until, (release, seconds)),
                                kwargs={"limit_s": seconds + 60, "wait_s": 600.0}, daemon=True)
               for _ in range(pool.size)]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + TIMEOUT_MS / 1000
    while len(pool.working_pids()) < pool.size:
        if time.monotonic() > deadline:
            raise AssertionError("the holding jobs did not start")
        time.sleep(0.05)
    return threads


@pytest.mark.parametrize(("lang", "waiting"), [("en", "this page waits and asks again in"),
                                               ("es", "esta página espera y vuelve a preguntar dentro de")])
def test_the_generation_page_waits_out_a_busy_worker_and_fills_both_sections(browser, base_url, lang, waiting,
                                                                             tmp_path):
    from seqlab.web.panels import decode

    decode._results.clear()  # nothing answered from a cache: both sections need the worker
    decode._model_results.clear()
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(f"script error: {error}"))
    in_flight, most, statuses = [0], [0], []
    lock = threading.Lock()

    def started(request) -> None:
        if "/api/" in request.url:
            with lock:
                in_flight[0] += 1
                most[0] = max(most[0], in_flight[0])

    def ended(request) -> None:
        if "/api/" in request.url:
            with lock:
                in_flight[0] -= 1

    def answered(response) -> None:
        if "/api/" in response.url:
            statuses.append(response.status)

    page.on("request", started)
    page.on("requestfinished", ended)
    page.on("requestfailed", ended)
    page.on("response", answered)
    release = tmp_path / "release"
    holders = _hold_every_worker(str(release), HOLD_S)
    try:
        # small sizes from the URL (the page's own state): the wait is judged here, not the measurement
        page.goto(f"{base_url}/decode?lang={lang}&positions=4&d=16&model_t=16")
        # the lab is busy: the first section says it waits, in the page's language, and when it asks again
        wait_until(page, f"(document.querySelector('#decode-status').textContent || '').includes({waiting!r})")
        assert page.get_attribute("#decode-status", "class") == "waiting"
        release.touch()  # the worker is free now: the page must find it on its own, with no click
        # no click: both sections fill once the worker is free
        page.wait_for_selector("#decode-table table", state="attached")
        page.wait_for_selector("#model-growth table", state="attached")
        wait_until(page, "!document.querySelector('#decode-status').textContent && "
                         "!document.querySelector('#model-status').textContent")
    finally:
        release.touch()
        for thread in holders:
            thread.join(timeout=HOLD_S + 120)
        seen = list(errors)
        context.close()
    assert seen == []
    assert 503 in statuses, statuses  # the page did meet the busy lab
    assert statuses.count(200) >= 2, statuses
    assert most[0] == 1, f"{most[0]} calls of one page in flight at once"


def _sections(page) -> int:
    return max(1, page.evaluate("document.querySelectorAll('main h2, main fieldset').length"))


@pytest.mark.parametrize("lang", ["en", "es"])
@pytest.mark.parametrize("panel", PANELS)
def test_every_page_is_at_most_three_phone_screens_per_section(browser, base_url, panel, lang):
    context = browser.new_context(viewport={"width": PHONE_WIDTH, "height": SCREEN_HEIGHT})
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    try:
        path = "/" if panel == "index" else f"/{panel}"
        page.goto(f"{base_url}{path}?lang={lang}")
        _ready(page, panel)
        wait_until(page, "[...document.querySelectorAll('.status, .waiting')].every((n) => !n.textContent) || "
                         "document.querySelector('.error') !== null")
        height = page.evaluate("document.documentElement.scrollHeight")
        sections = _sections(page)
        tallest = page.evaluate("Math.max(0, ...[...document.querySelectorAll('main .table-scroll, main .card')]"
                                ".map((node) => node.getBoundingClientRect().height))")
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SCREENSHOTS / f"{panel}-{lang}-{PHONE_WIDTH}-height.png"), full_page=True)
    finally:
        context.close()
    limit = SCREENS_PER_SECTION * SCREEN_HEIGHT
    assert height <= limit * sections, f"{panel} ({lang}): {height} px for {sections} sections"
    assert tallest <= limit, f"{panel} ({lang}): a card or table {tallest:.0f} px tall"
