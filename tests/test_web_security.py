"""The web lab against hostile or careless input (seqlab.web.limits, .security, .messages): never a 5xx.

Huge numbers, lone surrogates, deep JSON, forged Host headers, a 404 for a path that looks like another host,
stalled bodies: each must get a 4xx whose sentence says what was wrong, in the request's language, built from
the catalogue (no English phrase of pydantic's or of the JSON decoder inside a Spanish message).
"""

from __future__ import annotations

import json
import re

import pytest

pytest.importorskip("fastapi", reason="the web lab needs fastapi")
pytest.importorskip("httpx", reason="FastAPI's TestClient needs httpx")

from fastapi.testclient import TestClient  # noqa: E402

from seqlab.web.app import create_app  # noqa: E402

BASE = "http://127.0.0.1"
JSON = {"content-type": "application/json"}
#: English words pydantic or json.decoder would put in a message: never in a Spanish one.
ENGLISH = re.compile(r"\b(Input should|Expecting|received|must be|not accepted|valid integer|Extra inputs)\b")


@pytest.fixture(scope="module")
def client():
    with TestClient(create_app("en"), base_url=BASE, raise_server_exceptions=False) as test_client:
        yield test_client


def refused(response, status: int = 422) -> str:
    assert response.status_code == status, response.text
    body = response.json()
    assert body["detail"] and body["message"]
    response.content.decode("utf-8")  # the answer itself is valid UTF-8
    return body["message"]


@pytest.mark.parametrize("answer", ["1" * 26, "9" * 40, 10**25, "5e40", 1e300])
def test_huge_quiz_numbers_are_graded_not_understood_with_the_range(client, answer):
    graded = client.post("/api/quiz/q2", json={"answer": answer}).json()  # of an accepted shape: never refused
    assert graded["understood"] is False and graded["correct"] is False
    text = graded["explanation"]
    assert "answer must be a whole number in [1, 1,000,000,000,000]" in text or \
        "expected a whole number T >= 1" in text


def test_a_json_number_of_many_digits_is_refused_before_parsing(client):
    body = b'{"answer": ' + b"7" * 5000 + b"}"  # past Python's int-from-text limit of 4,300 digits
    text = refused(client.post("/api/quiz/q2", content=body, headers=JSON, params={"lang": "es"}))
    assert text == "el cuerpo de la petición contiene un número de 5.000 caracteres; se aceptan como mucho 40"


@pytest.mark.parametrize(("path", "body", "where"), [
    ("/api/order", '{"sentence": "\\ud800 uno", "reordered": "uno dos"}', "field sentence"),
    ("/api/order", '{"sentence": "uno dos", "reordered": "dos \\udfff"}', "field reordered"),
    ("/api/quiz/q4", '{"answer": "\\ud800"}', "field answer"),
    ("/api/quiz/q4", '{"answer": ["a", "\\ud800"]}', "field answer"),
    ("/api/order", '{"\\ud800": 1}', "request body"),
])
def test_lone_surrogates_are_refused_wherever_they_are(client, path, body, where):
    text = refused(client.post(path, content=body.encode(), headers=JSON))
    assert text.startswith(where) and "lone surrogate (\\u" in text


def test_raw_surrogate_bytes_are_not_utf8(client):
    text = refused(client.post("/api/order", content=b'{"sentence": "\xed\xa0\x80"}', headers=JSON))
    assert text == "request body must be UTF-8 text; byte 14 is not"


@pytest.mark.parametrize("depth", [17, 1000, 20_000])
def test_deep_json_is_refused_with_its_depth(client, depth):
    body = b"[" * depth + b"]" * depth
    text = refused(client.post("/api/order", content=body, headers=JSON, params={"lang": "es"}))
    depth_text = f"{depth:,}".replace(",", ".")
    assert text == f"el cuerpo de la petición anida {depth_text} niveles; se aceptan como mucho 16"


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_non_numbers_are_refused(client, constant):
    text = refused(client.post("/api/time/run", content=f'{{"max_T": {constant}}}'.encode(), headers=JSON))
    assert text.endswith("which is not a JSON number")


@pytest.mark.parametrize(("request_", "expected"), [
    (("GET", "/api/cost", {"params": {"T": "x" * 500, "lang": "es"}}),
     "el parámetro de consulta T debe ser un entero en [1, 10000000]; se recibió xxxx"),
    (("GET", "/api/cost", {"params": {"lang": "fr"}, "headers": {"Accept-Language": "es"}}),
     "el parámetro de consulta idioma (lang) debe ser uno de 'en', 'es'; se recibió fr"),
    (("POST", "/api/order", {"params": {"lang": "es"}, "json": {"sentence": 42}}),
     "el campo frase (sentence) debe ser un texto de 1 a 300 caracteres; se recibió 42"),
    (("POST", "/api/order", {"params": {"lang": "es"}, "content": b"{oops", "headers": JSON}),
     "el cuerpo de la petición no es JSON válido (en el carácter 1)"),
    (("POST", "/api/order", {"params": {"lang": "es"}, "json": {"sentence": "  ", "reordered": "uno"}}),
     "el campo frase (sentence) debe contener al menos una palabra"),
    (("POST", "/api/quiz/q1", {"params": {"lang": "es"}, "json": {"answer": "a" * 65}}),
     "la respuesta (answer) debe tener como mucho 64 caracteres; se recibieron 65"),
])
def test_spanish_messages_hold_no_english(client, request_, expected):
    method, url, options = request_
    text = refused(client.request(method, url, **options))
    assert text.startswith(expected)
    assert ENGLISH.search(text) is None, text


def test_a_forged_host_gets_400_and_nothing_runs():
    app = create_app("en", host="127.0.0.1")
    with TestClient(app, base_url="http://evil.example") as evil:
        response = evil.get("/api/cost", params={"T": 5})
        assert response.status_code == 400
        assert response.json()["message"] == ("Host evil.example is not a name of this lab; it answers to 127.0.0.1, "
                                               "::1, localhost. To let other computers open it under this name, "
                                               "start it with seqlab serve --allow-host evil.example")
        assert evil.get("/cost", headers={"Host": "localhost.evil.example:8000"}).status_code == 400
    with TestClient(app, base_url="http://localhost:8000") as named:
        assert named.get("/api/cost", params={"T": 5}).status_code == 200
    with TestClient(app, base_url="http://[::1]:8000") as ipv6:
        assert ipv6.get("/").status_code == 200
    with TestClient(create_app("en", host="0.0.0.0", allowed_hosts=("lab.local",)), base_url="http://lab.local") \
            as allowed:
        assert allowed.get("/").status_code == 200


@pytest.mark.parametrize("header", ["127.0.0.1:abc", "localhost:evil", "[::1]evil.example", "localhost:8000:1",
                                    "localhost evil", "[::1", "127.0.0.1:123456", "[localhost]:8000"])
def test_a_host_with_a_bad_port_or_trailing_text_is_refused_like_a_foreign_host(header):
    app = create_app("en", host="127.0.0.1")
    with TestClient(app) as client:
        response = client.get("/api/cost", params={"T": 5}, headers={"Host": header})
        assert response.status_code == 400
        assert response.json()["detail"][0]["type"] == "host_not_allowed"
        assert client.get("/api/cost", params={"T": 5}, headers={"Host": "[0:0:0:0:0:0:0:1]:8000"}).status_code == 200
        assert client.get("/api/cost", params={"T": 5}, headers={"Host": "LOCALHOST:8000"}).status_code == 200


def asgi_get(app, path: str, query: bytes = b"", accept: bytes = b"text/html") -> tuple[int, str]:
    """One GET through the ASGI interface with ``path`` exactly as a raw request line carries it (an HTTP client
    would read ``//evil.example/x`` as another host)."""
    import asyncio

    sent = []

    async def receive():
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message):
        sent.append(message)

    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "GET", "scheme": "http",
             "path": path, "raw_path": path.encode(), "query_string": query, "root_path": "",
             "headers": [(b"host", b"127.0.0.1:8000"), (b"accept", accept)],
             "client": ("127.0.0.1", 1), "server": ("127.0.0.1", 8000)}
    asyncio.run(app(scope, receive, send))
    return sent[0]["status"], b"".join(message.get("body", b"") for message in sent[1:]).decode()


def test_the_404_for_a_path_like_another_host_links_only_here():
    status, page = asgi_get(create_app("en"), "//evil.example/x", b"lang=es")
    assert status == 404 and "//evil.example/x no es una página del laboratorio" in page
    links = re.findall(r'href="([^"]*)"', page)
    assert links and not any(link.startswith("//") or "evil.example" in link for link in links), links
    assert 'href="?lang=en"' in page and 'href="?lang=es"' in page


def test_pages_answer_head_and_carry_security_headers(client):
    for path in ("/", "/cost", "/quiz?lang=es"):
        head = client.head(path)
        assert head.status_code == 200 and head.content == b""
    page = client.get("/order")
    policy = page.headers["content-security-policy"]
    assert "script-src 'self';" in policy and "unsafe-inline" not in policy.split("script-src")[1].split(";")[0]
    assert "frame-ancestors 'none'" in policy
    assert page.headers["x-content-type-options"] == "nosniff" and page.headers["x-frame-options"] == "DENY"
    assert "<script>" not in page.text  # no inline script: every script is a file
    assert not re.search(r"<script(?![^>]*\b(src=|type=\"application/json\"))", page.text)
    assert client.get("/api/cost", params={"T": 5}).headers["cache-control"] == "no-store"


def _body_timing_out(pieces: list[bytes]) -> tuple[int, str]:
    """At the ASGI level: POST a JSON body of which only ``pieces`` ever arrive (the rest never comes), with the
    body timeout set to 0.2 s; the status and message answered."""
    import asyncio

    from seqlab.web import limits

    app = create_app("en")
    sent = []
    waiting = list(pieces)

    async def receive():
        if waiting:
            return {"type": "http.request", "body": waiting.pop(0), "more_body": True}
        await asyncio.sleep(3600)  # the client never sends the rest

    async def send(message):
        sent.append(message)

    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST", "scheme": "http",
             "path": "/api/order", "raw_path": b"/api/order", "query_string": b"", "root_path": "",
             "headers": [(b"host", b"127.0.0.1"), (b"content-type", b"application/json")],
             "client": ("127.0.0.1", 1), "server": ("127.0.0.1", 80)}
    for middleware in app.user_middleware:  # a short timeout for the test (the app's is BODY_TIMEOUT_S)
        if middleware.cls is limits.BodyLimit:
            middleware.kwargs["timeout_s"] = 0.2
    asyncio.run(asyncio.wait_for(app(scope, receive, send), 120))
    return sent[0]["status"], json.loads(b"".join(message.get("body", b"") for message in sent[1:]))["message"]


@pytest.mark.parametrize(("pieces", "message"), [
    ([], "request body stalled: nothing arrived for 0.2 s"),
    ([b'{"sentence": "a'], "request body too slow: it did not arrive whole within 0.2 s"),
    ([b'{"sen', b'tence": "a'], "request body too slow: it did not arrive whole within 0.2 s")])
def test_a_body_that_never_arrives_whole_gets_408_saying_whether_any_of_it_came(pieces, message):
    """Nothing of the body, or part of it, then nothing: 408, told apart by what came, not by the clock (on a busy
    machine the server's own delay before it read the first piece once made a stalled body read as too slow)."""
    assert _body_timing_out(pieces) == (408, message)


def test_a_stalled_request_head_is_dropped(monkeypatch):
    """A client that connects and sends nothing, or half a head, is disconnected after the head timeout; a whole
    request on the same kind of connection is answered."""
    import socket
    import threading
    import time

    import uvicorn

    from seqlab.web.server import UVICORN_LIMITS, HeadTimeoutH11

    monkeypatch.setattr(HeadTimeoutH11, "head_timeout_s", 0.5)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(create_app("en"), host="127.0.0.1", port=port, log_level="warning",
                                           http=HeadTimeoutH11, **UVICORN_LIMITS))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 120
        while not server.started:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        for sent in (b"", b"GET /cost HTTP/1.1\r\nHost: 127.0.0.1\r\n"):
            with socket.create_connection(("127.0.0.1", port), timeout=120) as client:
                client.sendall(sent)
                assert client.recv(100) == b""  # closed by the server (our own timeout would raise), nothing answered
        with socket.create_connection(("127.0.0.1", port), timeout=120) as client:
            client.sendall(b"HEAD /cost HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            assert client.recv(100).startswith(b"HTTP/1.1 200")
    finally:
        server.should_exit = True
        thread.join(timeout=10)


# --- Same origin only for every request that computes (seqlab.web.security.SameOrigin) ------------------------

def api_requests() -> list[tuple[str, str]]:
    """(method, path) of every /api operation the app's routes declare (read through the OpenAPI schema FastAPI
    builds from them: this FastAPI wraps included routers), path parameters filled with an accepted value."""
    found = []
    for path, operations in sorted(create_app("en").openapi()["paths"].items()):
        if path.startswith("/api"):
            found += [(method.upper(), re.sub(r"\{[^}]+\}", "q1", path)) for method in sorted(operations)]
    return found


def test_the_api_routes_are_enumerated_from_the_app():
    routes = api_requests()
    assert {("GET", "/api/chain"), ("GET", "/api/decode"), ("POST", "/api/time/run"), ("POST", "/api/order"),
            ("POST", "/api/quiz/q1")} <= set(routes)
    assert len(routes) >= 10


@pytest.mark.parametrize(("method", "path"), api_requests())
@pytest.mark.parametrize("headers", [
    {"sec-fetch-site": "cross-site"},
    {"sec-fetch-site": "same-site", "origin": "http://127.0.0.1:3000"},  # another port: same site, other origin
    {"origin": "https://evil.example"},  # an older browser: Origin only
    {"origin": "null"},  # a sandboxed frame or a file:// page
    {"sec-fetch-site": "same-origin", "origin": "http://localhost"},  # its own say-so contradicted by Origin
])
def test_a_cross_site_request_to_each_api_endpoint_is_refused(client, monkeypatch, method, path, headers):
    from seqlab.web.workers import WorkerPool

    def no_worker(*args, **kwargs):
        raise AssertionError("a refused request asked for a worker")

    monkeypatch.setattr(WorkerPool, "run", no_worker)
    monkeypatch.setattr(WorkerPool, "call", no_worker)
    response = client.request(method, path, headers=headers, content=b"{}" if method == "POST" else None)
    assert response.status_code == 403, response.text
    body = response.json()
    assert body["detail"][0]["type"] == "cross_origin"
    assert body["message"].startswith("this request comes from another site (")
    assert body["message"].endswith("); the lab measures only for its own pages: open it at http://127.0.0.1")


def test_the_refusal_names_the_header_in_spanish_too(client):
    response = client.get("/api/cost?T=5&lang=es", headers={"sec-fetch-site": "cross-site"})
    assert response.status_code == 403
    assert response.json()["message"] == ("esta petición viene de otro sitio (Sec-Fetch-Site: cross-site); el "
                                          "laboratorio solo mide para sus propias páginas: ábrelo en http://127.0.0.1")


@pytest.mark.parametrize("headers", [
    {},  # curl, scripts, tests: neither header
    {"sec-fetch-site": "same-origin", "origin": BASE},  # the lab's own page, fetch()
    {"sec-fetch-site": "same-origin"},  # a same-origin GET (browsers send no Origin on it)
    {"sec-fetch-site": "none"},  # the address typed or a bookmark
    {"origin": "http://127.0.0.1:80"},  # its own origin with the default port spelled out
])
def test_the_labs_own_requests_are_served(client, headers):
    response = client.get("/api/cost?T=5", headers=headers)
    assert response.status_code == 200 and response.json()["at_T"]["T"] == 5


def test_pages_open_from_another_site(client):
    """A link elsewhere to the lab's page is a navigation: served (only /api computes)."""
    response = client.get("/cost", headers={"sec-fetch-site": "cross-site", "accept": "text/html"})
    assert response.status_code == 200 and "<html" in response.text
