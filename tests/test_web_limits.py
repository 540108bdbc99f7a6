"""The limits seqlab serve states, enforced as stated (seqlab.web.limits, seqlab.web.server), over raw sockets.

One Uvicorn subprocess for the module, run as ``seqlab serve`` runs it (:func:`seqlab.web.server.run_lab`: the
h11 protocol with the head deadline and the lab's own 503 at the cap, the stated Uvicorn limits), with the body
timeout lowered to 2 s and the head timeout to 3 s so that a trickled body or head is cut off quickly. Heads
over 16 KiB, whether sent in one write or in pieces, and more than 100 header lines get 431 with the lab's JSON
sentence; a body trickled slowly gets 408; the connection past the cap gets 503 with Retry-After and JSON; the
fuzzer's generated limit cases (benchmarks/fuzz_limits.py) get their stated answers. The strict JSON content type (a BOM, a second
Content-Type, another media type) and the error bodies' shape are checked in this process (ASGI, no server).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

pytest.importorskip("fastapi", reason="the web lab needs fastapi")
pytest.importorskip("uvicorn", reason="the live-server tests need uvicorn")

from seqlab.web.limits import MAX_HEAD_BYTES, MAX_HEADERS  # noqa: E402
from seqlab.web.server import UVICORN_LIMITS  # noqa: E402

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
BODY_TIMEOUT_S = 2.0
HEAD_TIMEOUT_S = 3.0
SERVER = textwrap.dedent(f"""
    import sys
    from seqlab.web import limits
    from seqlab.web.app import create_app
    from seqlab.web.server import HeadTimeoutH11, run_lab

    HeadTimeoutH11.head_timeout_s = {HEAD_TIMEOUT_S}
    app = create_app("en")
    for middleware in app.user_middleware:
        if middleware.cls is limits.BodyLimit:
            middleware.kwargs["timeout_s"] = {BODY_TIMEOUT_S}
    run_lab(app, "127.0.0.1", int(sys.argv[1]))
""")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="module")
def lab():
    """(host, port) of the lab in a subprocess; stopped after the module."""
    port = free_port()
    process = subprocess.Popen([sys.executable, "-c", SERVER, str(port)], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    deadline = time.monotonic() + 120
    while True:
        assert process.poll() is None, process.stderr.read().decode()
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                break
        except OSError:
            assert time.monotonic() < deadline, "the lab did not start listening"
            time.sleep(0.1)
    yield "127.0.0.1", port
    process.terminate()
    _, stderr = process.communicate(timeout=120)
    assert b"Traceback" not in stderr, stderr.decode()


def exchange(lab, pieces: list[bytes], pause_s: float = 0.0, timeout_s: float = 30.0) -> tuple[int, dict, bytes]:
    """Send ``pieces`` (pausing between them), read the answer until the server closes: (status, headers, body)."""
    with socket.create_connection(lab, timeout=timeout_s) as client:
        for index, piece in enumerate(pieces):
            if index and pause_s:
                time.sleep(pause_s)
            try:
                client.sendall(piece)
            except OSError:  # the server already answered and closed: read what it said
                break
        data = b""
        while True:
            try:
                chunk = client.recv(65536)
            except (ConnectionResetError, TimeoutError):
                break
            if not chunk:
                break
            data += chunk
            if b"\r\n\r\n" in data:
                head, _, body = data.partition(b"\r\n\r\n")
                length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n")
                               if line.lower().startswith(b"content-length:")), None)
                if length is not None and len(body) >= length:
                    break
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    headers = {}
    for line in lines[1:]:
        key, _, value = line.partition(b":")
        headers[key.strip().lower().decode()] = value.strip().decode()
    return int(lines[0].split()[1]), headers, body


def request_head(extra: bytes = b"", path: bytes = b"/api/cost?T=5") -> bytes:
    return b"GET " + path + b" HTTP/1.1\r\nHost: 127.0.0.1\r\n" + extra + b"\r\n"


def test_a_small_request_is_answered(lab):
    status, _, body = exchange(lab, [request_head(b"Connection: close\r\n")])
    assert status == 200 and json.loads(body)["at_T"]["T"] == 5


def head_refusals(size: int) -> tuple[str, str]:
    """The two sentences of a head over 16 KiB: counted by the lab once h11 parsed it whole (one write, as sent
    here), or by h11's buffer limit if the kernel delivered it in pieces after all."""
    return (f"request head is {size:,} bytes; at most {MAX_HEAD_BYTES:,} are accepted",
            f"request head is longer than {MAX_HEAD_BYTES:,} bytes, the most accepted")


def test_a_head_over_16_kib_in_one_write_gets_431(lab):
    head = request_head(b"X-Padding: " + b"a" * (20 * 1024) + b"\r\n")
    status, headers, body = exchange(lab, [head])
    assert status == 431 and headers["connection"] == "close" and headers["content-type"] == "application/json"
    assert json.loads(body)["message"] in head_refusals(len(head))


def test_a_head_just_under_16_kib_is_served(lab):
    padding = MAX_HEAD_BYTES - len(request_head(b"X-Padding: \r\nConnection: close\r\n")) - 8
    status, _, _ = exchange(lab, [request_head(b"X-Padding: " + b"a" * padding + b"\r\nConnection: close\r\n")])
    assert status == 200


def test_ten_thousand_headers_in_one_write_get_431(lab):
    head = request_head(b"A: b\r\n" * 10_000)
    status, _, body = exchange(lab, [head])
    assert status == 431
    message = json.loads(body)["message"]
    assert message in head_refusals(len(head)) or message == (f"request head has 10,001 header lines; at most "
                                                              f"{MAX_HEADERS} are accepted")


def test_more_than_100_short_headers_get_431(lab):
    status, _, body = exchange(lab, [request_head(b"A: b\r\n" * (MAX_HEADERS + 1))])
    assert status == 431
    assert json.loads(body)["message"] == f"request head has {MAX_HEADERS + 2} header lines; at most {MAX_HEADERS} " \
                                          "are accepted"  # with Host


def test_a_long_head_sent_in_pieces_gets_431_as_json(lab):
    head = request_head(b"X-Padding: " + b"a" * (20 * 1024) + b"\r\n")
    pieces = [head[index:index + 4096] for index in range(0, len(head), 4096)]
    status, headers, body = exchange(lab, pieces, pause_s=0.05)
    assert status == 431 and headers["content-type"] == "application/json"
    assert json.loads(body)["message"] == "request head is longer than 16,384 bytes, the most accepted"


def test_a_body_trickled_slowly_is_cut_off_with_408(lab):
    body = b'{"answer": "512"}'
    head = (b"POST /api/quiz/q2 HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n")
    pieces = [head] + [body[index:index + 1] for index in range(len(body))]
    sent: list[bytes] = []

    def trickle():
        for piece in pieces:
            sent.append(piece)
            yield piece

    status, _, answer = exchange(lab, trickle(), pause_s=BODY_TIMEOUT_S / 4)  # each gap well under the stall limit
    assert status == 408
    assert json.loads(answer)["message"] == (f"request body too slow: it did not arrive whole within "
                                             f"{BODY_TIMEOUT_S:g} s")
    assert len(sent) < len(pieces)  # cut before the trickle ended: the client's next piece found the socket closed


def test_the_connection_past_the_cap_gets_503_with_retry_after_and_json(lab):
    cap = UVICORN_LIMITS["limit_concurrency"]
    held = []
    try:
        for _ in range(cap):
            held.append(socket.create_connection(lab, timeout=120))
        time.sleep(0.5)  # every connection accepted
        status, headers, body = exchange(lab, [request_head(b"Accept-Language: es\r\n")])
    finally:
        for connection in held:
            connection.close()
    assert status == 503 and headers["retry-after"] == "5" and headers["content-type"] == "application/json"
    assert json.loads(body)["message"] == (f"el laboratorio está atendiendo {cap} conexiones a la vez, su máximo; "
                                           "inténtalo de nuevo en unos segundos")
    time.sleep(0.5)
    assert exchange(lab, [request_head(b"Connection: close\r\n")])[0] == 200  # freed: served again


def test_the_fuzzers_limit_cases_get_their_stated_answers(lab):
    """Three cases of every kind of benchmarks/fuzz_limits.py (its generated heads, bodies, trickles, content
    types, cross-site requests and floods), and a cross-site request to every /api operation: each answered as
    the docs state, none hangs, no answer of 500 or more but the 503s past the connection cap."""
    sys.path.insert(0, str(BENCHMARKS))
    try:
        import fuzz_limits
    finally:
        sys.path.remove(str(BENCHMARKS))
    timeouts = fuzz_limits.Timeouts(body=BODY_TIMEOUT_S, head=HEAD_TIMEOUT_S)
    operations = fuzz_limits.api_operations(lab)
    assert ("POST", "/api/order") in operations and ("GET", "/api/figure") in operations
    cases = fuzz_limits.draw_cases(3, timeouts, operations, seed=0)
    every = fuzz_limits.draw_cases(40, timeouts, operations, seed=1, kinds=("cross_site",))
    assert {case["kind"] for case in cases} == set(fuzz_limits.KINDS)
    results = fuzz_limits.run_cases(lab, cases + every)
    wrong = [(case["kind"], case["note"], outcome.status, found) for case, outcome, found in results if found]
    assert wrong == []
    statuses = {outcome.status for _, outcome, _ in results}
    assert {431, 422, 408, 403, 503, 200, None} <= statuses  # every stated answer met (None: a slow head, closed)
    assert all(outcome.status < 500 or outcome.status == 503 for _, outcome, _ in results if outcome.status)
    crossed = {case["operation"] for case, outcome, _ in results if case["kind"] == "cross_site"}
    assert crossed >= set(operations)  # every /api operation asked cross-site (and refused: wrong == [])


# --- Strict JSON, in this process ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def client():
    from fastapi.testclient import TestClient

    from seqlab.web.app import create_app

    return TestClient(create_app("en"), base_url="http://127.0.0.1")


def refused(response) -> dict:
    assert response.status_code == 422, response.text
    body = response.json()
    assert all(set(item) == {"loc", "msg", "type"} for item in body["detail"]), body  # no pydantic input/ctx/url
    assert "Input should" not in body["message"] and "pydantic" not in body["message"]
    return body


@pytest.mark.parametrize(("headers", "content", "expected"), [
    ([("content-type", "application/json")], b'\xef\xbb\xbf{"answer": "512"}',
     "request body starts with a byte order mark (BOM); send the JSON as UTF-8 without one"),
    ([("content-type", "text/plain"), ("content-type", "application/json")], b'{"answer": "512"}',
     "request has 2 Content-Type headers; send one: Content-Type: application/json"),
    ([("content-type", "application/json"), ("content-type", "application/json")], b'{"answer": "512"}',
     "request has 2 Content-Type headers; send one: Content-Type: application/json"),
    ([("content-type", "application/json-seq")], b'{"answer": "512"}',
     "request body must be a JSON object sent with Content-Type: application/json; received Content-Type "
     "application/json-seq"),
    ([("content-type", "application/json; charset=latin-1")], b'{"answer": "512"}',
     "received Content-Type application/json; charset=latin-1"),
    ([], b'{"answer": "512"}', "received Content-Type (none)"),
])
def test_a_json_body_needs_one_plain_json_content_type_and_no_bom(client, headers, content, expected):
    body = refused(client.post("/api/quiz/q2", content=content, headers=headers))
    assert expected in body["message"]


def test_the_plain_json_content_type_passes_with_its_charset(client):
    response = client.post("/api/quiz/q2", content=b'{"answer": "512"}',
                           headers={"content-type": "application/json; charset=utf-8"})
    assert response.status_code == 200 and response.json()["correct"] is True


def test_the_bom_refusal_is_in_spanish_too(client):
    body = refused(client.post("/api/quiz/q2?lang=es", content=b'\xef\xbb\xbf{"answer": "512"}',
                               headers={"content-type": "application/json"}))
    assert body["message"] == ("el cuerpo de la petición empieza con una marca de orden de bytes (BOM); envía el JSON "
                               "en UTF-8 sin ella")
