"""Render a :class:`~seqlab.studies.report.ReportResult` as one self-contained HTML page.

Each section reuses its command's renderer — the Rich tables and sentences of ``compare``, ``table1``, ``bench``,
``figure`` and (opt-in) ``learn``, the claim texts of ``check`` — and turns the tables into HTML tables; every plot
is drawn by matplotlib and embedded as a base64 PNG. The page links to nothing outside itself (no fonts, scripts or
styles from elsewhere), so it opens offline and can be mailed as one file. The page is a Jinja2 template kept in
this module, autoescaped.

Nothing here measures; the words are English message ids of the gettext domain ``seqlab``.
"""

from __future__ import annotations

import base64
import io
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from seqlab.errors import SeqlabError
from seqlab.i18n import N_, format_integer, format_seconds, format_source, plural_translator, translator
from seqlab.render.print_size import (  # noqa: F401  (re-exported: the printed page's sizes)
    MIN_PRINT_PT, PAGE_MARGIN_MM, PRINT_WIDTH_IN, css_width, legible, legible_defaults, min_font_pt, print_scale,
)
from seqlab.render.machine_load import busy_caveat
from seqlab.studies.report import ReportResult

DOMAIN = "seqlab"
#: Resolution of the embedded plots.
DPI = 96
#: Panels per row of the learn section's plot: two (10.4 inches) print its labels at 7 points or more on A4
#: without overrunning the panels, where ``learn --plot``'s three do not.
LEARN_COLUMNS = 2
#: Width of Table 1's plot as :func:`seqlab.render.table1.plot_table1` draws it (inches).
TABLE1_WIDTH_IN = 15.0


class PdfUnavailable(SeqlabError):
    """WeasyPrint cannot be imported; ``detail`` says why (the words around it are the caller's to translate)."""

    def __init__(self, detail: str) -> None:
        super().__init__(N_("WeasyPrint is not available ({detail}); pip install weasyprint (it needs the Pango "
                            "library) to get a PDF"), detail=detail)
        self.detail = detail

TEMPLATE = """<!DOCTYPE html>
<html lang="{{ lang }}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{ title }}</title>
<style>
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 0 auto; max-width: 72rem;
       padding: 1.5rem; color: #1d1d1f; line-height: 1.45; }
h1 { margin-bottom: 0.2rem; } h2 { border-bottom: 2px solid #d0d7de; padding-bottom: 0.2rem; margin-top: 2.5rem; }
.subtitle { font-size: 1.1rem; color: #444; margin-top: 0; } .meta, footer { color: #666; font-size: 0.9rem; }
nav ol { columns: 2; } table { border-collapse: collapse; margin: 1rem 0; font-size: 0.88rem; }
th, td { border: 1px solid #d0d7de; padding: 0.3rem 0.55rem; text-align: left; vertical-align: top; }
th { background: #f3f5f7; } caption { text-align: left; padding: 0.3rem 0; }
caption.title { font-weight: bold; caption-side: top; } .table-caption { color: #555; font-size: 0.85rem; }
figure { margin: 1rem 0; } img { max-width: 100%; height: auto; box-sizing: border-box; } figure img { border: 1px solid #eee; }
figcaption { color: #555; font-size: 0.85rem; }
.nb { white-space: nowrap; } .table-wrap { max-width: 100%; overflow: auto; } #learn td { white-space: pre-line; } main, section, p, li { overflow-wrap: anywhere; }
ol.claims { list-style: none; padding-left: 0; } ol.claims li { margin: 0.9rem 0; padding-left: 0.8rem;
       border-left: 4px solid #2da44e; } ol.claims li.fails { border-left-color: #cf222e; }
ol.claims li.caveat { border-left-color: #9a6700; } .caveat .verdict { color: #9a6700; }
ol.claims li.unjudged { border-left-color: #6e7781; } .unjudged .verdict { color: #6e7781; }
.verdict { font-weight: bold; } .holds .verdict { color: #1a7f37; } .fails .verdict { color: #cf222e; }
.claim-line { margin: 0.15rem 0; } .note { color: #555; } .summary { font-weight: bold; }
@media screen and (max-width: 40rem) { body { padding: 0.75rem; } nav ol { columns: 1; } }
@page { size: A4; margin: {{ margin }}mm; }
@media print {
  body { max-width: none; padding: 0; font-size: 10pt; }
  h2 { break-after: avoid; } nav { break-after: page; }
  .table-wrap { overflow: visible; }
  table { width: 100%; font-size: 7.5pt; } th, td { padding: 0.15rem 0.3rem; }
  thead { display: table-header-group; }
  tr, .claim, figure, img, caption { break-inside: avoid; }
  img { max-width: 100%; }
}
</style>
</head>
<body>
<header>
<h1>{{ title }}</h1>
<p class="subtitle">{{ subtitle }}</p>
<p class="meta">{{ meta }}</p>
<nav><ol>{% for s in sections %}<li><a href="#{{ s.key }}">{{ s.heading }}</a></li>{% endfor %}</ol></nav>
</header>
<main>
{% for s in sections %}
<section id="{{ s.key }}" class="report-section">
<h2>{{ s.heading }}</h2>
{% for line in s.intro %}<p>{{ line | nobreak }}</p>{% endfor %}
{% for t in s.tables %}
<div class="table-wrap"><table>
{% if t.title %}<caption class="title">{{ t.title }}</caption>{% endif %}
<thead><tr>{% for h in t.headers %}<th>{{ h | map("nobreak") | join("<br>"|safe) }}</th>{% endfor %}</tr></thead>
<tbody>{% for row in t.rows %}<tr>{% for cell in row %}<td>{{ cell | nobreak }}</td>{% endfor %}</tr>{% endfor %}</tbody>
</table></div>
{% if t.caption %}<p class="table-caption">{{ t.caption | nobreak }}</p>{% endif %}
{% endfor %}
{% for line in s.sentences %}<p>{{ line | nobreak }}</p>{% endfor %}
{% for p in s.plots %}
<figure class="plot"><img src="data:image/png;base64,{{ p.png }}" alt="{{ p.caption }}"{% if p.width %} width="{{ p.width }}"{% endif %}>
<figcaption>{{ p.caption }}</figcaption></figure>
{% endfor %}
{% if s.claims %}
<ol class="claims">
{% for c in s.claims %}
<li class="claim {{ {'holds': 'holds', 'holds_with_caveat': 'caveat', 'not_judged': 'unjudged'}.get(c.verdict_key, 'fails') }}">
<div class="claim-line"><span class="verdict">{{ {'holds': '✓', 'holds_with_caveat': '~', 'not_judged': '?'}.get(c.verdict_key, '✗') }} {{ c.claim }} {{ c.verdict }}</span>:
{{ c.statement | nobreak }}</div>
<div class="claim-line">{{ labels.measured }} {{ c.measured | nobreak }}</div>
<div class="claim-line">{{ labels.figure }} {{ c.figure | nobreak }}</div>
<div class="claim-line">{{ labels.condition }} {{ c.condition | nobreak }}</div>
{% if c.note %}<div class="claim-line note">{{ labels.note }} {{ c.note | nobreak }}</div>{% endif %}</li>
{% endfor %}
</ol>
<p class="summary">{{ s.summary }}</p>
{% endif %}
</section>
{% endfor %}
</main>
<footer><p>{{ footer }}</p></footer>
</body>
</html>
"""


@dataclass(frozen=True)
class Plot:
    """One embedded plot: the PNG as base64 text, its caption and its width in CSS pixels (0: the PNG's own)."""

    png: str
    caption: str
    width: int = 0


@dataclass
class Section:
    """What one section shows; ``key`` is its HTML id."""

    key: str
    heading: str
    intro: list[str] = field(default_factory=list)
    tables: list[dict] = field(default_factory=list)
    sentences: list[str] = field(default_factory=list)
    plots: list[Plot] = field(default_factory=list)
    claims: list[Any] = field(default_factory=list)
    summary: str = ""


#: A number as the texts write it: digits with thousands separators and a decimal part in either language
#: (1,710.0; 1.710,0; 12 345), an exponent (1.05e-12, T^-1.05), a sign, a unit sign or a ratio's "/ 80"
#: after it: the parts a line must never split (issue 37: "1.710.0 / 80" broke across lines in the PDF).
NUMBER = re.compile(r"[-−+]?\d+(?:[.,\u202f\u00a0 ]\d{3}(?!\d))*(?:[.,]\d+)?(?:[eE][-−+]?\d+)?(?:\s?[%×])?"
                    r"(?:\s?/\s?\d+(?:[.,]\d+)?)?")


def nobreak(value: Any) -> Any:
    """``value`` escaped for HTML, each number in it inside ``<span class="nb">`` (CSS ``white-space:
    nowrap``), so that a line breaks around a number, never inside it, on screen and in the PDF.

    >>> str(nobreak("1.710,0 / 80 bytes & 2e-3"))
    '<span class="nb">1.710,0 / 80</span> bytes &amp; <span class="nb">2e-3</span>'
    """
    import markupsafe

    text = str(markupsafe.escape(_plain(value)))
    # the entity &amp; and others hold no digits; &#34; and &#39; do: leave entities whole
    parts = re.split(r"(&#?\w+;)", text)
    out = [part if part.startswith("&") and part.endswith(";") else
           NUMBER.sub(lambda m: f'<span class="nb">{m.group(0)}</span>', part) for part in parts]
    return markupsafe.Markup("".join(out))


def _plain(value: Any) -> str:
    """Text of a Rich cell, title or caption (str, ``Text`` or None)."""
    if value is None:
        return ""
    return value.plain if hasattr(value, "plain") else str(value)


def table_data(table: Any) -> dict:
    """A Rich ``Table`` as plain data for the template: title, caption, header lines, rows of cell texts.

    >>> from rich.table import Table
    >>> t = Table(title="T"); t.add_column("a\\nb"); t.add_row("1")
    >>> table_data(t)
    {'title': 'T', 'caption': '', 'headers': [['a', 'b']], 'rows': [('1',)]}
    """
    headers = [_plain(column.header).split("\n") for column in table.columns]
    columns = [[_plain(cell) for cell in column.cells] for column in table.columns]
    return {"title": _plain(table.title), "caption": _plain(table.caption), "headers": headers,
            "rows": list(zip(*columns))}


def _collect(renderable: Any, section: Section) -> None:
    """Put the tables and lines of a Rich renderable (a Group, a Table or Text) into ``section``."""
    from rich.console import Group
    from rich.table import Table

    if isinstance(renderable, Group):
        for inner in renderable.renderables:
            _collect(inner, section)
    elif isinstance(renderable, Table):
        section.tables.append(table_data(renderable))
    else:
        text = _plain(renderable).strip()
        if text:
            section.sentences.append(text)


def png_base64(figure: Any) -> str:
    """A matplotlib ``Figure`` as base64 PNG text (no metadata naming a web site)."""
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=DPI, metadata={"Software": None})
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def reach_plot(result: ReportResult, lang: str) -> Any:
    """‖∂y_T/∂x_i‖ against the distance T - i, for both machines of the compare study (log scale)."""
    from seqlab.render.figures import new_figure

    _ = translator(lang, DOMAIN)
    compare = result.compare
    figure = new_figure(figsize=(8.5, 4.2), layout="constrained")
    ax = figure.subplots()
    for machine, label, colour in ((compare.recurrence, _("recurrence (Elman RNN)"), "C0"),
                                   (compare.attention, _("attention ({score})").format(score=compare.score), "C1")):
        norms = machine.reach.norms  # (T,), by input position
        points = [(compare.T - 1 - i, value) for i, value in enumerate(norms) if value > 0]
        ax.plot([p[0] for p in points], [p[1] for p in points], color=colour, label=label, linewidth=1.2)
    ax.set(yscale="log", xlabel=_("distance T - i (positions)"), ylabel="‖∂y_T/∂x_i‖",
           title=_("How strongly the last output depends on each input position (T = {T})").format(
               T=format_integer(compare.T, lang)))
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    return figure


def _table1_png(result: ReportResult, lang: str) -> str:
    """Table 1's plot as its own renderer draws it (:func:`~seqlab.render.table1.table1_figure`, texts tidied and
    saved at :data:`~seqlab.render.figures.PNG_DPI` as ``seqlab table1 --plot`` saves it), as base64 PNG text, with
    fonts large enough to stay at :data:`MIN_PRINT_PT` or more when the PDF scales its 15 inches to the page's width.
    Only the PNG is drawn: the page embeds no SVG."""
    from seqlab.render.figures import PNG_DPI, tidy_texts
    from seqlab.render.table1 import table1_figure

    with legible_defaults(TABLE1_WIDTH_IN):
        figure = tidy_texts(table1_figure(result.table1, lang), legends=False)
        buffer = io.BytesIO()
        figure.savefig(buffer, format="png", dpi=PNG_DPI, metadata={"Software": None})
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def _plot(figure: Any, caption: str) -> Plot:
    """An embedded plot whose fonts print at :data:`MIN_PRINT_PT` or more, shown at its drawn size."""
    from seqlab.render.figures import tidy_texts

    return Plot(png_base64(tidy_texts(legible(figure), legends=False)), caption, css_width(figure.get_figwidth()))


def sections(result: ReportResult, lang: str = "en") -> list[Section]:
    """The sections of the page, in order: compare, Table 1, bench, decode, Figure 1, check, and learn when it ran."""
    from seqlab.render.bench import plot_bench, render_bench
    from seqlab.render.decode import decode_figure, render_decode, report_texts
    from seqlab.render.check import claim_text, summary
    from seqlab.render.compare import render_compare
    from seqlab.render.figure import draw_figure, figure_table
    from seqlab.render.table1 import render_table1

    _ = translator(lang, DOMAIN)
    compare = Section("compare", _("Recurrence against attention on {source}").format(source=format_source(result.source, lang)))
    compare.intro.append(_("Both machines read the same token vectors; every figure below is counted, traced or "
                           "timed in this run (L1–L10)."))
    _collect(render_compare(result.compare, lang), compare)
    compare.plots.append(_plot(reach_plot(result, lang),
                              _("Reach by autograd, float64: through the recurrence it falls step by step with the "
                                "distance; through attention it does not depend on it. Exact zeros are left out.")))

    table1 = Section("table1", _("Table 1 of the paper, measured at small sizes"))
    table1.intro.append(_("Work per layer, sequential operations and maximum path length of seven layer types, "
                          "measured at several T, fitted and set against the paper's orders (L7)."))
    _collect(render_table1(result.table1, lang), table1)
    table1.plots.append(Plot(_table1_png(result, lang), _("Work, sequential operations and path length against T, "
                                                          "log axes."), css_width(TABLE1_WIDTH_IN)))

    bench = Section("bench", _("Time: one large product against T small waits"))
    bench.intro.append(_("A short timing sweep on this machine, nn.RNN against SDPA timed together in interleaved "
                         "rounds, on one thread and on as many as the machine's load leaves free (L8). Few points "
                         "and short runs: seqlab bench measures more."))
    _collect(render_bench(result.bench, lang), bench)
    bench.plots.append(_plot(plot_bench(result.bench, lang),
                            _("Time per forward call against T, measured and modelled; below, recurrence over "
                              "attention in time and in work.")))

    heading, intro, caption = report_texts(lang)  # the decode catalogue's words
    decode = Section("decode", heading, intro=[intro])
    _collect(render_decode(result.decode, lang), decode)
    decode.plots.append(_plot(decode_figure(result.decode, lang), caption))

    figure = Section("figure", _("Figure 1, measured box by box"))
    figure.intro.append(_("Which of the fifteen boxes lets an output row read other positions, measured on a "
                          "one-layer Transformer (L11)."))
    _collect(figure_table(result.figure, lang), figure)
    figure.plots.append(Plot(png_base64(draw_figure(result.figure, lang)),
                             _("Figure 1 with the boxes that mix positions highlighted, as measured.")))

    check = Section("check", _("The lesson's claims, measured"))
    check.intro.append(_("Each claim of the lesson against the measurement that tests it (seqlab check)."))
    check.claims = [claim_text(claim, lang) for claim in result.check.checks]
    check.summary = summary(result.check, lang, command="report")
    learn = [] if result.learn is None else [learn_section(result, lang)]
    return [compare, table1, bench, decode, figure, check, *learn]


def learn_section(result: ReportResult, lang: str = "en") -> Section:
    """The opt-in learn section (``seqlab report --learn``): its budget, ``seqlab learn``'s tables and sentences
    (:func:`seqlab.render.learn.render_learn`: what every seed supports, what was cut, how it ran) and its plot
    (:func:`seqlab.render.learn.plot_learn`: accuracy against T, and for mqar against state bytes, T and pairs).

    Raises:
        SeqlabError: ``result.learn`` is None (the report was run without it).
    """
    from seqlab.render.learn import plot_learn, render_learn
    from seqlab.render.learn_text import duration_text, rate_text

    learn = result.learn
    if learn is None:
        raise SeqlabError(N_("this report has no learn section: it was run without --learn (ReportConfig.learn None)"))
    _ = translator(lang, DOMAIN)
    settings = learn.config.settings
    section = Section("learn", _("What tiny models learn, trained on this machine"))
    section.intro.append(_("Tiny models trained on the CPU on the lesson's recall, order and position tasks (L3, L4, "
                           "L10) and on multi-query associative recall against the bytes of state each keeps "
                           "(Zoology), as seqlab learn does."))
    preset = _("the --quick preset of seqlab learn") if learn.config.preset == "quick" else \
        _("the full preset of seqlab learn")
    section.intro.append(_("Budget: {preset}, {runs} runs of at most {steps} steps of {batch} examples; seeds: "
                           "{seeds}; learning rates: {rates}; the training took {time}. A sketch, not the full run: "
                           "a sentence below states a result only where every seed supports it.").format(
        preset=preset, runs=format_integer(len(learn.runs), lang), steps=format_integer(settings.steps, lang),
        batch=settings.batch, seeds=learn.config.seeds, rates=", ".join(rate_text(r) for r in learn.config.rates),
        time=duration_text(learn.seconds, lang)))
    _collect(render_learn(learn, lang), section)
    section.plots.append(_plot(plot_learn(learn, lang, columns=LEARN_COLUMNS),
                               _("Mean test accuracy over the seeds, their range as bars, against T per task; for "
                                 "multi-query associative recall also against the bytes of decode state (the "
                                 "frontier: a point per model and width), against T and against the number of "
                                 "pairs.")))
    return section


def busy_note(result: ReportResult, lang: str = "en") -> str:
    """The busy-machine caveat over the report's times, or ``""`` on a quiet machine (the condition is
    :attr:`seqlab.measure.timing.MachineLoad.busy`, read before the first part and on every compare timing)."""
    from seqlab.measure.timing import busiest, timings_in

    return busy_caveat(busiest([result.load, result.bench.load, *timings_in(result.compare),
                                *timings_in(result.decode)]), lang)


def render_report(result: ReportResult, lang: str = "en") -> str:
    """The whole page as HTML text (UTF-8, self-contained).

    Raises:
        SeqlabError: unknown language, or matplotlib missing.
    """
    import jinja2

    from seqlab import __version__

    _, ngettext = translator(lang, DOMAIN), plural_translator(lang, DOMAIN)
    threads = result.compare.threads
    parts = ", ".join(f"{name} {format_seconds(seconds, lang)}" for name, seconds in result.seconds.items())
    environment = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined)
    environment.filters["nobreak"] = nobreak
    return environment.from_string(TEMPLATE).render(
        lang=lang,
        margin=PAGE_MARGIN_MM,
        title=_("seqlab report"),
        subtitle=_("What recurrence costs and what attention buys, measured on this machine"),
        meta=_("Run {started} (UTC) on {threads}, PyTorch {torch}; it took {elapsed} ({parts}).").format(
            started=result.started, torch=result.compare.torch_version,
            threads=ngettext("{count} thread", "{count} threads", threads).format(count=threads),
            elapsed=format_seconds(result.elapsed_s, lang), parts=parts) + f" {busy_note(result, lang)}".rstrip(),
        sections=sections(result, lang),
        labels={"measured": _("Measured:"), "figure": _("Figure:"), "condition": _("Condition:"), "note": _("Note:")},
        footer=_("Made by seqlab {version}. Every number on this page was computed or measured in this run; none "
                 "is quoted.").format(version=__version__),
    )


def write_report(result: ReportResult, path: str | Path, lang: str = "en") -> Path:
    """Write the page to ``path`` (UTF-8) and return the path.

    Raises:
        OSError: the file cannot be written.
    """
    path = Path(path)
    path.write_text(render_report(result, lang), encoding="utf-8")
    return path


def write_pdf(html_path: str | Path, pdf_path: str | Path) -> Path:
    """Print the written page ``html_path`` to ``pdf_path`` with WeasyPrint (no browser) and return the path.

    WeasyPrint lays the page out itself from the HTML and its CSS, with Pango for text; the plots are the
    same embedded PNGs, so the PDF holds what the page holds. It is an optional dependency: the ``test``
    extra installs it; without it (or without the Pango library it loads) the HTML is still the report.

    Raises:
        PdfUnavailable: WeasyPrint is not installed or cannot load its system libraries (the message says
            how to install it; ``detail`` is the import error alone).
        OSError: the PDF cannot be written.
    """
    try:
        import weasyprint
    except (ImportError, OSError) as error:  # OSError: cffi could not open libpango
        raise PdfUnavailable(f"{type(error).__name__}: {error}") from None
    pdf_path = Path(pdf_path)
    weasyprint.HTML(filename=str(html_path)).write_pdf(str(pdf_path))
    return pdf_path
