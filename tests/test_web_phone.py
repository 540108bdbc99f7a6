"""The web lab on a phone and to a screen reader (issue 26): every panel at 390 px, in English and Spanish.

The same server and Debian Chromium as :mod:`test_web_browser` (its fixtures, imported). On each panel, at a
390 × 844 viewport: no key cell or label is cut (a cell's text fits its box, every table, heading, control and
chart label lies inside the screen, an SVG label inside its SVG); the chain path matrices and Figure 1's labels
render at 11 px or more; the charts' legends do not cover their axis titles; the skip link is the first thing Tab
reaches and moves the focus to the main content; every slider's aria-valuetext is the value the page shows, before
and after it moves. Apart: the "no dependence" dashes of the path matrices reach WCAG AA contrast (4.5:1, computed
here from the computed colours), and the Generation panel's times read in units with the busy-machine caveat.
Screenshots: ``test-artifacts/screenshots/<panel>-<lang>-390-a11y.png``.
"""

from __future__ import annotations

import re

import pytest

from test_web_browser import PANELS, PHONE_WIDTH, SCREENSHOTS, TIMEOUT_MS, _ready, base_url, browser, wait_until

__all__ = ["base_url", "browser"]  # the module's fixtures, shared with test_web_browser

#: Where anything the panel shows is cut: a table cell whose text overflows its box, a table, heading, control or
#: label past the screen's edges, an SVG label outside its SVG, a Plotly label outside its chart. Empty when whole.
CUT = """() => {
  const width = window.innerWidth, out = [];
  const visible = (node) => node.getClientRects().length && getComputedStyle(node).visibility !== 'hidden';
  const name = (node) => `${node.tagName.toLowerCase()}#${node.id || ''}.${node.getAttribute('class') || ''}: `
                         + (node.textContent || '').trim().slice(0, 40);
  for (const cell of document.querySelectorAll('main td, main th')) {
    if (visible(cell) && cell.scrollWidth > cell.clientWidth + 1) out.push(`overflows its cell: ${name(cell)}`);
  }
  const boxes = 'main table, main h1, main h2, main h3, main p, main li, main label, main output, main button, '
              + 'main select, main input, main summary, main legend, main svg, main .chart';
  for (const node of document.querySelectorAll(boxes)) {
    if (!visible(node) || node.closest('thead')) continue;
    const box = node.getBoundingClientRect();
    if (box.left < -1 || box.right > width + 1) out.push(`past the screen (${box.left}, ${box.right}): ${name(node)}`);
  }
  for (const text of document.querySelectorAll('main svg text')) {
    if (!visible(text) || !text.textContent.trim()) continue;
    const svg = text.ownerSVGElement.closest('.chart') || text.ownerSVGElement;
    const frame = svg.getBoundingClientRect(), box = text.getBoundingClientRect();
    if (box.left < frame.left - 1 || box.right > frame.right + 1 || box.top < frame.top - 1
        || box.bottom > frame.bottom + 1) out.push(`outside its chart: ${name(text)}`);
  }
  return out;
}"""

#: The smallest rendered font size, in CSS pixels, of the chain path matrices and of the SVG labels of Figure 1
#: and the chain's depth chart (the font size times the SVG's scale on screen); null where there is none.
SMALLEST_LABEL = """() => {
  const sizes = [];
  for (const node of document.querySelectorAll('#figure-svg text, #chain-svg text, .path-grid td, .path-grid th')) {
    if (!node.getClientRects().length || !node.textContent.trim()) continue;
    const svg = node.ownerSVGElement;
    sizes.push(parseFloat(getComputedStyle(node).fontSize) * (svg ? svg.getScreenCTM().a : 1));
  }
  return sizes.length ? Math.min(...sizes) : null;
}"""

#: Every chart whose legend box meets its x axis title box (Plotly's .legend and .xtitle).
LEGEND_ON_TITLE = """() => [...document.querySelectorAll('.js-plotly-plot')].filter((chart) => {
  const legend = chart.querySelector('.legend'), title = chart.querySelector('.xtitle');
  if (!legend || !title) return false;
  const a = legend.getBoundingClientRect(), b = title.getBoundingClientRect();
  return a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom;
}).map((chart) => chart.id)"""

#: Every slider with the text of its <output> and its aria-valuetext.
SLIDERS = """() => [...document.querySelectorAll('main input[type=range]')].map((input) => ({
  id: input.id, value: input.value, valuetext: input.getAttribute('aria-valuetext'),
  shown: document.querySelector(`output[for="${input.id}"]`).textContent }))"""

SKIP_LINK = {"en": "Skip to the main content", "es": "Saltar al contenido principal"}


def _relative_luminance(rgb: tuple[float, float, float]) -> float:
    """WCAG 2.x relative luminance of an sRGB colour given as 0–255 channels."""
    def linear(channel: float) -> float:
        c = channel / 255
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4
    r, g, b = (linear(c) for c in rgb)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast_ratio(foreground: tuple[float, float, float], background: tuple[float, float, float]) -> float:
    """(L1 + 0.05) / (L2 + 0.05), the lighter over the darker (WCAG 2.x, 1.4.3).

    >>> round(contrast_ratio((0, 0, 0), (255, 255, 255)), 1), round(contrast_ratio((207, 213, 223), (255,) * 3), 2)
    (21.0, 1.48)
    """
    lighter, darker = sorted((_relative_luminance(foreground), _relative_luminance(background)), reverse=True)
    return (lighter + 0.05) / (darker + 0.05)


def _rgb(css: str) -> tuple[tuple[float, float, float], float]:
    """An ``rgb()``/``rgba()`` computed colour as its channels and alpha."""
    parts = [float(p) for p in re.findall(r"[\d.]+", css)]
    return (parts[0], parts[1], parts[2]), (parts[3] if len(parts) > 3 else 1.0)


@pytest.fixture()
def phone_page(browser):
    """A 390 × 844 page whose script errors fail the test (requests still in flight when it closes are not errors:
    a moved slider asks the lab again)."""
    context = browser.new_context(viewport={"width": PHONE_WIDTH, "height": 844})
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(f"script error: {error}"))
    yield page
    seen = list(errors)
    context.close()
    assert seen == []


def _move_sliders(page, panel: str) -> None:
    """One step left on every slider (smaller sizes, cheap to compute), checking aria-valuetext follows."""
    if panel == "decode":  # untimed first: the moved sliders ask for counts only, not a new timing
        page.uncheck("#timed")
    for slider in page.evaluate(SLIDERS):
        page.focus(f"#{slider['id']}")
        page.keyboard.press("ArrowLeft")
        moved = next(s for s in page.evaluate(SLIDERS) if s["id"] == slider["id"])
        assert moved["value"] != slider["value"], slider
        assert moved["valuetext"] == moved["shown"] != slider["shown"], moved
        if panel == "decode" and slider["id"] == "positions":  # the slider moves an exponent: 2**7 is said
            assert (moved["value"], moved["valuetext"]) == ("7", "128")


@pytest.mark.parametrize("lang", ["en", "es"])
@pytest.mark.parametrize("panel", PANELS)
def test_every_panel_reads_whole_on_a_phone(phone_page, base_url, panel, lang):
    page = phone_page
    path = "/" if panel == "index" else f"/{panel}"
    page.goto(f"{base_url}{path}?lang={lang}")
    _ready(page, panel)
    page.wait_for_timeout(400)  # charts lay themselves out on the next frames
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{panel}-{lang}-{PHONE_WIDTH}-a11y.png"), full_page=True)
    assert page.evaluate(CUT) == [], f"{panel} ({lang}) at {PHONE_WIDTH} px"
    assert page.evaluate(LEGEND_ON_TITLE) == [], "a legend covers its axis title"
    smallest = page.evaluate(SMALLEST_LABEL)
    if panel in ("figure", "chain"):
        assert smallest >= 11 - 1e-6, f"{panel}: a label {smallest:.2f} px high"
    if panel == "chain":  # at the default T = 12 the path matrices fit the card: nothing to scroll to
        assert page.evaluate("[...document.querySelectorAll('.path-grid')].every((table) => "
                             "table.getBoundingClientRect().width <= table.parentElement.clientWidth + 1)")

    # the skip link: the first stop of Tab, on screen while focused, and it moves the focus to the main content
    assert page.inner_text(".skip-link") == SKIP_LINK[lang]
    page.evaluate("document.activeElement.blur()")
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.className") == "skip-link"
    box = page.evaluate("(() => { const b = document.activeElement.getBoundingClientRect(); "
                        "return [b.left, b.top, b.right, b.bottom]; })()")
    assert box[0] >= 0 and box[1] >= 0 and box[2] <= PHONE_WIDTH and box[3] <= 844, box
    page.keyboard.press("Enter")
    wait_until(page, "document.activeElement === document.querySelector('main#main')", 5000)
    assert page.url.endswith("#main")

    # every slider says what the page shows, before and after it moves
    for slider in page.evaluate(SLIDERS):
        assert slider["valuetext"] == slider["shown"], slider
    _move_sliders(page, panel)


def test_no_dependence_dashes_reach_wcag_aa_contrast(phone_page, base_url):
    """The dash of a path-matrix cell with no path, against the background it is drawn on (the first opaque one up
    its ancestors): at least 4.5:1 (it was #cfd5df on white, 1.48:1)."""
    phone_page.goto(f"{base_url}/chain?lang=en")
    _ready(phone_page, "chain")
    colours = phone_page.evaluate("""() => [...document.querySelectorAll('.path-grid td.none')].map((cell) => {
      let node = cell;
      while (node && getComputedStyle(node).backgroundColor.replace(/\\s/g, '') === 'rgba(0,0,0,0)') {
        node = node.parentElement;
      }
      return [cell.textContent, getComputedStyle(cell).color, getComputedStyle(node || document.body).backgroundColor];
    })""")
    assert len(colours) == 12 * 11 // 2  # the recurrence's j < i at T = 12: 66 cells; attention reads every position
    for text, colour, background in colours:
        assert text == "—"
        (fg, alpha), (bg, bg_alpha) = _rgb(colour), _rgb(background)
        assert alpha == 1.0 and bg_alpha == 1.0
        assert contrast_ratio(fg, bg) >= 4.5, (colour, background, contrast_ratio(fg, bg))


@pytest.mark.parametrize("lang", ["en", "es"])
def test_generation_times_read_in_units_under_the_busy_caveat(phone_page, base_url, lang):
    """The timed table reads like the Time panel's (median ± IQR in s/ms/µs/ns, never e-notation), and the busy-
    machine caveat the server sends stands above the timing conclusions (the answer is passed through with a caveat
    set, as a busy machine's would carry; the server's side is tested in test_web_decode)."""
    caveat = {"en": "The machine was busy: test.", "es": "La máquina estaba ocupada: prueba."}[lang]

    def busy(route):
        response = route.fetch()
        body = response.json()
        if body.get("timed"):
            body["caveat"] = caveat
        route.fulfill(response=response, json=body)

    page = phone_page
    page.route("**/api/decode?*", busy)
    page.goto(f"{base_url}/decode?lang={lang}")
    _ready(page, "decode")
    cells = [cell for cell in page.locator("#decode-table td").all_inner_texts() if " ± " in cell]
    assert len(cells) >= 5 * 7, cells  # five positions, every machine timed
    number = r"\d+(?:[.,]\d+)?"
    unit = r"(?:s|ms|µs|ns)"
    for cell in cells:
        value = cell.strip()  # a stacked row's label is CSS content, not text
        assert re.fullmatch(rf"{number} {unit} ± {number} {unit}( †)?", value), value
        assert "e-" not in value and "e+" not in value
    assert page.inner_text("#decode-caveat") == caveat
    first = page.evaluate("document.querySelector('#decode-caveat').compareDocumentPosition("
                          "document.querySelector('#decode-sentences'))")
    assert first & 4, "the caveat is not above the conclusions"  # Node.DOCUMENT_POSITION_FOLLOWING
