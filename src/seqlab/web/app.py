"""The FastAPI application of ``seqlab serve``: pages, JSON endpoints, static files, error mapping.

One page per panel (``/figure``, ``/cost``, ``/chain``, ``/order``, ``/time``, ``/decode``, ``/quiz``; ``/`` lists
them), each rendered by Jinja2 in English or Spanish (``?lang=es``; gettext domain ``web`` through
Jinja's i18n extension) and drawn in the browser from its ``/api/...`` endpoint. Every script and style
ships in the package, Plotly's basic bundle included (``static/plotly-basic.min.js``, served as
``/vendor/plotly.min.js``; its licence beside it), so the lab works offline (and FastAPI's /docs and /redoc, which load theirs from CDNs, are off; /openapi.json stays). Bad
input of any kind is a 422 whose message names the value and the range, in the request's language
(:mod:`seqlab.web.validation`); :class:`~seqlab.web.messages.LabError` maps to 422 too; a measurement that
cannot start because every worker is measuring is a 503 with ``Retry-After`` (:mod:`seqlab.web.workers`). A
browser asking for a page gets its errors as a small translated page whose links are relative, the API as JSON.

Around every request: the request head's size and header count (:class:`~seqlab.web.limits.HeadLimit`), the
Host allow-list, the same-origin rule for the API and the security headers (:mod:`seqlab.web.security`), the
body limit with its stall and total timeouts, and the JSON guard (:mod:`seqlab.web.limits`). Pages answer GET
and HEAD. Measurements run in worker processes (:mod:`seqlab.web.workers`): this process never switches a
PyTorch flag. Nothing slow runs on the event loop: with ``warm`` (``seqlab serve``) PyTorch and the engine modules
the panels use in this process (their estimates, the result types) are imported at start-up, before the server
listens (:func:`preload_engine`), the workers and a spare are started, and the quiz's facts are measured in a
process of their own in the background (:func:`seqlab.web.panels.quiz.prepare_facts`), outside the pool. A
refusal may carry fields besides ``detail`` and ``message``
(:attr:`~seqlab.web.messages.LabError.details`): a run refused on its time estimate carries ``estimate``
(``seconds``, ``limit_s``, ``from_run_s``) and ``keep_previous_result: true``, which tells the page to keep the
result it shows.
"""

from __future__ import annotations

from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Annotated, Literal
from urllib.parse import urlencode

from fastapi import FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, HTMLResponse, JSONResponse, Response
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException as StarletteHTTPException

from seqlab.errors import SeqlabError
from seqlab.i18n import LANGUAGES, check_language, translator
from seqlab.web import limits, security, validation
from seqlab.web.messages import printable

DOMAIN = "web"
PACKAGE = Path(str(resources.files("seqlab"))) / "web"
#: Panel keys, in the order of the navigation bar.
PANELS = ("figure", "cost", "chain", "order", "time", "decode", "quiz")
#: The ``?lang=`` of every page: en or es; absent means the app's default.
Lang = Annotated[Literal["en", "es"] | None, Query(description="page language")]


@lru_cache(maxsize=None)
def environment(lang: str):
    """The Jinja2 environment of one language: templates from the package, gettext from the ``web`` catalogue.

    >>> environment("es").globals["lang"]
    'es'
    """
    import jinja2

    tr = translator(check_language(lang), DOMAIN)
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(PACKAGE / "templates")),
                             autoescape=jinja2.select_autoescape(["html"]), undefined=jinja2.StrictUndefined,
                             extensions=["jinja2.ext.i18n"], trim_blocks=True, lstrip_blocks=True)
    env.install_gettext_callables(tr, lambda singular, plural, n: tr(singular if n == 1 else plural),
                                  newstyle=True)
    from seqlab.web.panels.timing import BENCH_LIMIT_S

    env.globals.update(lang=lang, panels=PANELS, bench_limit_s=BENCH_LIMIT_S)
    return env


#: Plotly's "basic" bundle (scatter, bar, pie: the lab draws only scatter traces), vendored from the npm
#: package plotly.js-basic-dist-min with its MIT licence beside it (``plotly-basic.LICENSE.txt``).
PLOTLY_BUNDLE = PACKAGE / "static" / "plotly-basic.min.js"


def plotly_bundle() -> Path | None:
    """The vendored ``plotly-basic.min.js``, or None if the file is missing from the installation."""
    return PLOTLY_BUNDLE if PLOTLY_BUNDLE.is_file() else None


def render_page(panel: str, lang: str, request: Request) -> HTMLResponse:
    """Render one panel's page in ``lang``; the language links keep the page and its other query parameters."""
    others = [(key, value) for key, value in request.query_params.multi_items() if key != "lang"]
    switch = {code: f"{request.url.path}?{urlencode(others + [('lang', code)])}" for code in LANGUAGES}
    html = environment(lang).get_template(f"{panel}.html").render(
        panel=panel, switch=switch, plotly=plotly_bundle() is not None)
    return HTMLResponse(html)


def wants_html(request: Request) -> bool:
    """Whether an error should be a page: a browser (Accept: text/html) asking for a path outside the API."""
    path = request.url.path
    return not path.startswith(("/api/", "/api", "/static/", "/vendor/", "/openapi")) and \
        "text/html" in request.headers.get("accept", "")


def error_page(request: Request, status: int, message: str) -> HTMLResponse:
    """A small page for a refused page request, in the request's language, with a way back.

    Its language links are query-only relative references (``?lang=es``): they stay on this server whatever
    path was asked for (a path such as ``//evil.example/x`` must not become a link to another host).
    """
    lang = validation.request_lang(request)
    _ = validation.tr(lang)
    title = {404: _("Page not found"), 422: _("This page cannot be shown")}.get(
        status, _("This request cannot be answered"))
    others = [(key, printable(value, 200)) for key, value in request.query_params.multi_items() if key != "lang"]
    switch = {code: f"?{urlencode(others + [('lang', code)])}" for code in LANGUAGES}
    html = environment(lang).get_template("error.html").render(
        panel="error", switch=switch, plotly=False, status=status, title=title, message=message)
    return HTMLResponse(html, status_code=status)


#: Modules the server process itself uses while answering (estimates, result types, captions), imported by
#: :func:`preload_engine` at start-up: importing PyTorch inside a request would hold the event loop for seconds.
ENGINE_MODULES = ("torch", "seqlab.text", "seqlab.measure.timing", "seqlab.measure.decode",
                  "seqlab.measure.distance_store", "seqlab.measure.mixing", "seqlab.studies.bench",
                  "seqlab.studies.figure", "seqlab.studies.quiz", "seqlab.studies.decode", "seqlab.render.machine_load",
                  "seqlab.render.decode", "seqlab.render.band", "seqlab.render.json_output")


def preload_engine(modules: tuple[str, ...] = ENGINE_MODULES) -> tuple[str, ...]:
    """Import ``modules`` now (at start-up, before the server listens); returns those that could not be imported
    (an optional part missing is refused later by its panel, as before)."""
    import importlib

    missing = []
    for name in modules:
        try:
            importlib.import_module(name)
        except ImportError:
            missing.append(name)
    return tuple(missing)


def respond(request: Request, status: int, detail: list[dict], headers: dict[str, str] | None = None,
            details: dict | None = None):
    """An error as JSON (``detail``, ``message`` and any ``details``), or as a page for a browser asking for one."""
    body = {**validation.error_body(detail), **(details or {})}
    if wants_html(request):
        page = error_page(request, status, body["message"])
        page.headers.update(headers or {})
        return page
    return JSONResponse(status_code=status, content=body, headers=headers)


def create_app(default_lang: str = "en", host: str | None = None, allowed_hosts: tuple[str, ...] = (),
               warm: bool = False) -> FastAPI:
    """Build the web lab. Pages default to ``default_lang`` when a request names no ``lang``.

    >>> app = create_app("es")
    >>> sorted(app.openapi()["paths"])[:4]
    ['/api/chain', '/api/cost', '/api/decode', '/api/decode/model']

    Args:
        default_lang: en or es.
        host: the address the server listens on; its name is accepted as ``Host`` besides the loopback names.
        allowed_hosts: more names accepted as ``Host`` (``seqlab serve --allow-host``).
        warm: start the worker processes when the server starts rather than at the first measurement.

    Raises:
        SeqlabError: ``default_lang`` is not ``en`` or ``es``.
    """
    from contextlib import asynccontextmanager

    from fastapi import Depends

    from seqlab.web.budget import RETRY_AFTER_S, LabBusy
    from seqlab.web.messages import LabError
    from seqlab.web.panels import chain, cost, decode, figure, order, quiz, timing
    from seqlab.web.server import AnswerCancelled
    from seqlab.web.workers import SPARES, ClientGone, LabShutdown, default_pool

    check_language(default_lang)

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        if warm:
            import threading

            pool = default_pool()
            pool.spares = max(pool.spares, SPARES)
            preload_engine()  # before the server listens: no request ever waits for these imports
            pool.warm()
            threading.Thread(target=quiz.prepare_facts, args=(pool.preload,), daemon=True,
                             name="seqlab-lab-quiz-facts").start()
        yield

    # No /docs or /redoc: their pages load scripts and fonts from CDNs, blank offline. /openapi.json stays.
    app = FastAPI(title="seqlab lab", version="0.1.0", docs_url=None, redoc_url=None, lifespan=lifespan,
                  description="What recurrence costs and what attention buys, measured live: one JSON "
                              "endpoint per panel of the web lab (lesson claims L1–L12).")
    app.state.default_lang = default_lang

    async def on_validation_error(request: Request, exc: RequestValidationError):
        return respond(request, 422, validation.validation_detail(request, exc))

    async def on_seqlab_error(request: Request, exc: SeqlabError):
        status = getattr(exc, "status", 422)
        if isinstance(exc, LabShutdown):
            headers = {"Connection": "close"}
        else:
            headers = {"Retry-After": str(RETRY_AFTER_S)} if status == 503 else None
        return respond(request, status, validation.seqlab_error_detail(request, exc), headers,
                       getattr(exc, "details", None))

    async def on_client_gone(request: Request, exc: ClientGone):
        return Response(status_code=499)  # nobody reads it: the measurement was stopped when the client left

    async def on_http_error(request: Request, exc: StarletteHTTPException):
        status, detail = validation.http_error_detail(request, exc)
        headers = dict(getattr(exc, "headers", None) or {})
        if isinstance(exc, validation.BodyTooLarge):
            headers["Connection"] = "close"  # the rest of the body is never read
        return respond(request, status, detail, headers or None)

    async def on_busy(request: Request, exc: LabBusy):
        return respond(request, 503, validation.busy_detail(request), {"Retry-After": str(exc.retry_after_s)})

    app.add_exception_handler(RequestValidationError, on_validation_error)
    app.add_exception_handler(SeqlabError, on_seqlab_error)
    app.add_exception_handler(StarletteHTTPException, on_http_error)
    app.add_exception_handler(LabBusy, on_busy)
    app.add_exception_handler(LabError, on_seqlab_error)
    app.add_exception_handler(LabShutdown, on_seqlab_error)
    app.add_exception_handler(ClientGone, on_client_gone)
    # Outermost last: the head's size, the shutdown answer, Host check, same origin, security headers, body limit
    # and its timeouts, JSON guard, then the app.
    app.add_middleware(limits.JsonGuard)
    app.add_middleware(limits.BodyLimit, limit=limits.MAX_BODY_BYTES)
    app.add_middleware(security.SecurityHeaders)
    app.add_middleware(security.SameOrigin)
    app.add_middleware(security.HostAllowList, names=security.allowed_names(host, allowed_hosts))
    app.add_middleware(AnswerCancelled)
    app.add_middleware(limits.HeadLimit)

    for module in (figure, cost, chain, order, timing, decode, quiz):
        app.include_router(module.router, dependencies=[Depends(limits.reject_unknown_query)])
    app.mount("/static", StaticFiles(directory=str(PACKAGE / "static")), name="static")

    @app.api_route("/vendor/plotly.min.js", methods=["GET", "HEAD"], include_in_schema=False)
    async def plotly_js():
        """Plotly's vendored bundle: the charts work offline."""
        path = plotly_bundle()
        if path is None:
            return JSONResponse(status_code=404, content={"message": "plotly is not installed"})
        return FileResponse(path, media_type="text/javascript")

    # Pages are async: rendering a cached template never waits for a thread, so a busy lab still serves them.
    @app.api_route("/", methods=["GET", "HEAD"], include_in_schema=False)
    async def index(request: Request, lang: Lang = None):
        """The list of panels."""
        return render_page("index", lang or default_lang, request)

    def page(panel: str):
        """The route handler of one panel's page."""
        async def handler(request: Request, lang: Lang = None):
            """Render the panel's page in the requested (or the default) language."""
            return render_page(panel, lang or default_lang, request)
        handler.__name__ = f"{panel}_page"
        return handler

    for panel in PANELS:
        app.add_api_route(f"/{panel}", page(panel), methods=["GET", "HEAD"], include_in_schema=False,
                          response_class=HTMLResponse)
    return app
