"""The web lab's stated limits, fuzzed over raw sockets: generated cases around each limit and their expected answers.

Imported by ``benchmarks/fuzz_web.py`` (its ``--limit-cases``) and by ``tests/test_web_limits.py`` (a slice of
every kind, so the cases cannot rot). Each case is drawn by Hypothesis (:func:`limit_case`) and sent by
:func:`run_case` over one raw socket (several for a flood), under a deadline: a case that neither gets an answer
nor sees its connection closed by then is a *hang*. The kinds, and what the lab must answer (README, serve.md):

- ``big_head``: a head over 16 KiB (or more than 100 header lines), random header names and values, sent in one
  write or split at random points with random pauses: 431 with a JSON sentence. ``small_head``: a head of at
  most 16 KiB and 100 lines, likewise: 200.
- ``body_size``: a JSON body of a size around 64 KiB, ``Content-Length`` or chunked: 200 up to the limit, 422
  past it (a declared length over it is refused from the head alone, before any of the body is sent).
- ``trickle``: a body sent in pieces at a random rate: 408 when it is not whole within the body timeout, or
  stalls for the whole timeout; 200 when it arrives well within it. ``slow_head``: a head not whole within the
  head timeout (sent in pieces, or not at all): the connection is closed, nothing answered.
- ``content_type``: a byte order mark, no, a second or an odd ``Content-Type`` (random case, parameters, media
  types): 422; the plain JSON type in any letter case, with or without ``charset=utf-8``: 200.
- ``cross_site``: every ``/api`` operation with a cross-site ``Sec-Fetch-Site`` or a foreign ``Origin`` (random
  values, random letter case, sometimes next to an allowed one of the other header): 403. A same-origin request
  with both headers, to the cheap quiz: 200.
- ``flood``: connections past the cap (64) held open, requests on some of them: each 503 with ``Retry-After: 5``
  and JSON; once they are closed the lab serves again (200). Below the cap: 200.

Every answer must be one of the expected statuses, and none may be 500 or more except those documented 503s.
Timeouts are arguments (the lab's own 10 s, or the tests' shorter ones).
"""

from __future__ import annotations

import json
import select
import socket
import time
from dataclasses import dataclass, field

from hypothesis import strategies as st

#: The limits as stated in the README and docs/en/commands/serve.md (seqlab.web.limits, seqlab.web.server).
MAX_HEAD_BYTES = 16 * 1024
MAX_HEADERS = 100
MAX_BODY_BYTES = 64 * 1024
CONNECTION_CAP = 64
RETRY_AFTER = "5"
#: Header names a random name must not be: they change what the request means.
RESERVED = {"host", "content-length", "transfer-encoding", "connection", "expect", "upgrade", "origin",
            "sec-fetch-site", "content-type", "accept-language", "te", "trailer", "keep-alive"}
TOKEN = "!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
VCHAR = "".join(chr(code) for code in range(0x21, 0x7F))
QUIZ_BODY = b'{"answer": "512"}'  # POST /api/quiz/q2: a right answer, cheap to check
CHEAP_GETS = [b"/api/quiz", b"/api/quiz?lang=es", b"/", b"/api/cost?T=5"]
KINDS = ("big_head", "small_head", "body_size", "trickle", "slow_head", "content_type", "cross_site", "flood")
#: Kinds that take seconds (they wait for a timeout): run them side by side.
SLOW_KINDS = {"trickle", "slow_head"}


@dataclass(frozen=True)
class Timeouts:
    """The server's timeouts, in seconds: ``body`` (seqlab.web.limits.BODY_TIMEOUT_S), ``head``
    (seqlab.web.server.HEAD_TIMEOUT_S)."""

    body: float = 10.0
    head: float = 10.0


@dataclass
class Outcome:
    """What one case got: ``status`` (None: no answer), response headers (lower-case names), body, seconds,
    whether the server closed the connection, whether the deadline passed first (a hang)."""

    status: int | None
    headers: dict = field(default_factory=dict)
    body: bytes = b""
    seconds: float = 0.0
    closed: bool = False
    hang: bool = False
    problem: str = ""


# --- drawing cases ---------------------------------------------------------------------------------------------

NAMES = st.text(st.sampled_from(TOKEN), min_size=1, max_size=24).filter(lambda name: name.lower() not in RESERVED)
UNIT = st.text(st.sampled_from(VCHAR), min_size=1, max_size=16)


def head(method: bytes, path: bytes, lines: list[bytes]) -> bytes:
    """A request head: request line, ``Host: 127.0.0.1``, ``lines`` (each ``name: value``), a blank line."""
    return method + b" " + path + b" HTTP/1.1\r\nHost: 127.0.0.1\r\n" + b"".join(line + b"\r\n" for line in lines) \
        + b"\r\n"


@st.composite
def header_lines(draw, count: int, size: int) -> list[bytes]:
    """``count`` lines ``name: value``, names drawn from a random pool of up to 12 (repeated names are allowed),
    values repeating a random unit, ``size`` bytes in all (each with its CRLF) when that is reachable, else as
    short as the names allow."""
    pool = draw(st.lists(NAMES, min_size=1, max_size=12))
    names = [pool[index % len(pool)].encode() for index in range(count)]
    unit = draw(UNIT).encode()
    fixed = sum(len(name) + 4 + 1 for name in names)  # "name: " + at least one value byte + CRLF
    spare = max(0, size - fixed)
    lines = []
    for index, name in enumerate(names):
        share = spare // count + (1 if index < spare % count else 0)
        value = (unit * (share // len(unit) + 2))[:share + 1]
        lines.append(name + b": " + value)
    return lines


@st.composite
def split(draw, data: bytes, most: int = 8) -> list[bytes]:
    """``data`` cut at up to ``most`` random points."""
    if len(data) < 2:
        return [data]
    cuts = sorted(set(draw(st.lists(st.integers(1, len(data) - 1), max_size=most))))
    bounds = [0, *cuts, len(data)]
    return [data[start:end] for start, end in zip(bounds, bounds[1:])]


def close_line() -> bytes:
    return b"Connection: close"


@st.composite
def limit_case(draw, timeouts: Timeouts, operations: list[tuple[str, str]], kind: str | None = None) -> dict:
    """One case: ``kind``, ``pieces`` to send with ``gaps`` (seconds) between them, ``expect`` (statuses, or
    ``{None}``: closed with no answer), ``deadline`` (seconds) and ``note``. ``operations``: the lab's ``/api``
    (method, path) pairs, from its OpenAPI schema."""
    kind = kind or draw(st.sampled_from(KINDS))
    case = {"kind": kind, "gaps": [], "deadline": 30.0, "json": True, "note": ""}
    lang = draw(st.sampled_from([[], [b"Accept-Language: es"], [b"Accept-Language: en-GB"]]))
    if kind in ("big_head", "small_head"):
        over = kind == "big_head"
        by_count = draw(st.booleans())
        if by_count:
            count = draw(st.integers(MAX_HEADERS, 12_000) if over else st.integers(0, MAX_HEADERS - 2))
            lines = draw(header_lines(count, 0)) if count else []
        else:
            base = len(head(b"GET", b"/api/quiz", lang + [close_line()]))
            size = draw(st.integers(MAX_HEAD_BYTES + 1, 4 * MAX_HEAD_BYTES) if over else
                        st.integers(base + 200, MAX_HEAD_BYTES))
            count = draw(st.integers(1, 40))
            lines = draw(header_lines(count, size - base))
        data = head(b"GET", draw(st.sampled_from(CHEAP_GETS)), lang + lines + [close_line()])
        case["note"] = f"{len(data)} bytes, {len(lines) + len(lang) + 2} header lines"
        if not over:  # a drawn size may land a few bytes past the limit (short values): judge what is sent
            over = len(data) > MAX_HEAD_BYTES or len(lines) + len(lang) + 2 > MAX_HEADERS
        case["expect"] = {431} if over else {200}
        case["pieces"] = draw(split(data)) if draw(st.booleans()) else [data]
        case["gaps"] = [draw(st.floats(0, 0.05)) for _ in case["pieces"][1:]]
    elif kind == "body_size":
        size = draw(st.one_of(st.integers(MAX_BODY_BYTES - 300, MAX_BODY_BYTES + 300),
                              st.integers(MAX_BODY_BYTES + 1, 8 * MAX_BODY_BYTES)))
        padding = draw(st.sampled_from([b" ", b"\n", b"\t", b"\r\n"]))
        body = QUIZ_BODY[:-1] + (padding * size)[:max(0, size - len(QUIZ_BODY))] + b"}"
        chunked = draw(st.booleans())
        lines = lang + [b"Content-Type: application/json", close_line()]
        over = len(body) > MAX_BODY_BYTES
        if chunked:
            lines.append(b"Transfer-Encoding: chunked")
            sent = body if not over else body[:MAX_BODY_BYTES + draw(st.integers(1, 256))]
            chunks = draw(split(sent, 12))
            pieces = [head(b"POST", b"/api/quiz/q2", lines)]
            pieces += [b"%x\r\n%s\r\n" % (len(chunk), chunk) for chunk in chunks]
            if not over:
                pieces.append(b"0\r\n\r\n")
        else:  # past the limit: the head alone (the lab refuses it unread; more bytes would only race its close)
            pieces = [head(b"POST", b"/api/quiz/q2", lines + [b"Content-Length: %d" % len(body)])]
            if not over:
                pieces += draw(split(body, 4))
        case.update(pieces=pieces, gaps=[0.01] * (len(pieces) - 1), expect={422} if over else {200},
                    note=f"{len(body)} bytes, {'chunked' if chunked else 'Content-Length'}")
    elif kind == "trickle":
        mode = draw(st.sampled_from(["slow", "stall", "fast"]))
        body = QUIZ_BODY
        data = head(b"POST", b"/api/quiz/q2", lang + [b"Content-Type: application/json", close_line(),
                                                      b"Content-Length: %d" % len(body)])
        pieces = draw(split(body, 16))
        if mode == "slow":  # every gap well under the stall limit, the whole well past the body limit
            if len(pieces) < 5:  # too few pieces for such a rate: one byte each
                pieces = [body[index:index + 1] for index in range(len(body))]
            gap = max(draw(st.floats(0.15, 0.6)) * timeouts.body, 1.6 * timeouts.body / (len(pieces) - 1))
            gaps = [gap] * (len(pieces) - 1)
        elif mode == "stall":  # a first part, then nothing for longer than the limit
            pieces = pieces if len(pieces) > 1 else [body[:1], body[1:]]
            gaps = [0.0] * (len(pieces) - 1)
            gaps[draw(st.integers(0, len(gaps) - 1))] = draw(st.floats(1.5, 2.0)) * timeouts.body
        else:  # the whole well within the limit
            gaps = [draw(st.floats(0, 0.3 * timeouts.body / max(len(pieces) - 1, 1))) for _ in pieces[1:]]
        case.update(pieces=[data] + pieces, gaps=[0.0] + gaps, expect={200} if mode == "fast" else {408},
                    deadline=sum(gaps) + 2 * timeouts.body + 30, note=f"{mode}, {len(pieces)} pieces, "
                                                                      f"{sum(gaps):.1f} s of gaps")
    elif kind == "slow_head":
        data = head(b"GET", draw(st.sampled_from(CHEAP_GETS)), lang + [close_line()])
        sent = data[:draw(st.integers(0, len(data) - 3))]
        pieces = draw(split(sent, 8)) if sent else [b""]
        total = draw(st.floats(1.3, 2.0)) * timeouts.head
        gaps = [total / max(len(pieces), 1)] * (len(pieces) - 1)
        case.update(pieces=pieces, gaps=gaps, expect={None}, deadline=2 * timeouts.head + 30, json=False,
                    note=f"{len(sent)} of {len(data)} bytes in {len(pieces)} pieces")
    elif kind == "content_type":
        variant = draw(st.sampled_from(["bom", "none", "twice", "odd", "plain"]))
        plain = [b"application/json", b"application/json; charset=utf-8", b"application/json;charset=UTF-8"]
        odd = [b"text/plain", b"application/json-seq", b"application/x-www-form-urlencoded", b"multipart/form-data",
               b"application/json; charset=latin-1", b"application/json; charset=\"utf-8\"", b"text/json",
               b"application/problem+json", b"application/json; q=1", b"*/*", b"application/jsonx"]

        def recase(value: bytes) -> bytes:
            return bytes(char ^ 0x20 if 97 <= (char | 0x20) <= 122 and draw(st.booleans()) else char for char in value)

        body = QUIZ_BODY
        if variant == "bom":
            types, body = [recase(draw(st.sampled_from(plain)))], b"\xef\xbb\xbf" + QUIZ_BODY
        elif variant == "none":
            types = []
        elif variant == "twice":
            types = [recase(draw(st.sampled_from(plain + odd))) for _ in range(draw(st.integers(2, 4)))]
        elif variant == "odd":
            types = [draw(st.sampled_from(odd) | st.builds(lambda a, b: f"{a}/{b}".encode(), NAMES, NAMES).filter(
                lambda value: value.split(b";")[0].strip().lower() != b"application/json"))]
        else:
            types = [recase(draw(st.sampled_from(plain)))]
        lines = lang + [b"Content-Type: " + value for value in types]
        lines += [close_line(), b"Content-Length: %d" % len(body)]
        case.update(pieces=[head(b"POST", b"/api/quiz/q2", lines) + body],
                    expect={200} if variant == "plain" else {422},
                    note=f"{variant}: {[value.decode() for value in types]}")
    elif kind == "cross_site":
        method, path = draw(st.sampled_from(operations))
        case["operation"] = (method, path)
        path = path.replace("{key}", draw(st.sampled_from(["q1", "q2", "q4"])))
        port = draw(st.integers(1, 65535))
        foreign = st.sampled_from(["null", "http://evil.example", f"http://127.0.0.1:{port}", "https://127.0.0.1",
                                   "http://localhost", "http://127.0.0.1.evil.example", "file://"]) | \
            st.builds(lambda name: f"http://{name}.example",
                      st.text(st.sampled_from("abcdefghijklmnopqrstuvwxyz0123456789-"), min_size=1, max_size=20))
        sites = st.sampled_from(["cross-site", "same-site", "Cross-Site", "SAME-SITE", "other"]) | \
            NAMES.filter(lambda value: value.lower() not in ("same-origin", "none"))
        mode = draw(st.sampled_from(["site", "origin", "both", "own"]))
        lines = list(lang)
        if mode in ("site", "both"):
            lines.append(b"Sec-Fetch-Site: " + draw(sites).encode())
        elif draw(st.booleans()):
            lines.append(b"Sec-Fetch-Site: " + draw(st.sampled_from([b"same-origin", b"none", b"Same-Origin"])))
        if mode in ("origin", "both"):
            lines.append(b"Origin: " + draw(foreign).encode())
        elif draw(st.booleans()):
            lines.append(b"Origin: " + draw(st.sampled_from([b"http://127.0.0.1", b"HTTP://127.0.0.1:80"])))
        if mode == "own":  # the lab's own page asking the cheap quiz: served
            method, path = "POST", "/api/quiz/q2"
            case["operation"] = None
        body = QUIZ_BODY if method == "POST" else b""
        if method == "POST":
            lines += [b"Content-Type: application/json", b"Content-Length: %d" % len(body)]
        data = head(method.encode(), path.encode(), lines + [close_line()]) + body
        case.update(pieces=[data], expect={200} if mode == "own" else {403}, note=f"{method} {path} {mode}")
    else:  # flood
        extra = draw(st.integers(-4, 30))
        # Only connections past the cap ask: each is over it when accepted, however the server interleaves accepts.
        case.update(pieces=[], connections=CONNECTION_CAP + extra,
                    asking=draw(st.integers(1, min(8, extra))) if extra > 0 else 1,
                    expect={503} if extra > 0 else {200}, deadline=60.0,
                    note=f"{CONNECTION_CAP + extra} connections")
        case["request"] = head(b"GET", draw(st.sampled_from(CHEAP_GETS)), lang + [close_line()])
    return case


# --- sending them ----------------------------------------------------------------------------------------------

def parse(data: bytes) -> tuple[int | None, dict, bytes]:
    """(status, headers, body) of a raw HTTP/1.1 answer; (None, {}, b"") when nothing came."""
    if not data:
        return None, {}, b""
    top, _, body = data.partition(b"\r\n\r\n")
    lines = top.split(b"\r\n")
    headers = {}
    for line in lines[1:]:
        key, _, value = line.partition(b":")
        headers[key.strip().lower().decode("latin-1")] = value.strip().decode("latin-1")
    try:
        status = int(lines[0].split()[1])
    except (IndexError, ValueError):
        status = -1  # bytes that are not an HTTP answer
    return status, headers, body


def read_answer(client: socket.socket, until: float) -> tuple[bytes, bool, bool]:
    """Read until the server closes or a whole answer (by Content-Length) arrived: (data, closed, hang)."""
    data = b""
    while True:
        left = until - time.monotonic()
        if left <= 0:
            return data, False, True
        client.settimeout(left)
        try:
            chunk = client.recv(65536)
        except ConnectionResetError:
            return data, True, False
        except (TimeoutError, socket.timeout):
            return data, False, True
        if not chunk:
            return data, True, False
        data += chunk
        if b"\r\n\r\n" in data:
            top, _, body = data.partition(b"\r\n\r\n")
            length = next((int(line.split(b":")[1]) for line in top.split(b"\r\n")[1:]
                           if line.lower().startswith(b"content-length:")), None)
            if length is not None and len(body) >= length:
                return data, False, False


def exchange(address: tuple[str, int], pieces: list[bytes], gaps: list[float], deadline_s: float) -> Outcome:
    """Send ``pieces`` with ``gaps`` between them (stopping early once the server answers or closes), then read
    the answer, all within ``deadline_s``."""
    began = time.monotonic()
    until = began + deadline_s
    with socket.create_connection(address, timeout=deadline_s) as client:
        for index, piece in enumerate(pieces):
            if index and gaps[index - 1] > 0:
                ready, _, _ = select.select([client], [], [], gaps[index - 1])
                if ready:  # an answer, or a close: nothing more to send
                    break
            try:
                if piece:
                    client.sendall(piece)
            except OSError:
                break
        data, closed, hang = read_answer(client, until)
    status, headers, body = parse(data)
    return Outcome(status, headers, body, time.monotonic() - began, closed, hang)


def flood(address: tuple[str, int], case: dict) -> Outcome:
    """Hold ``connections`` connections, send the request on ``asking`` of the last ones; the worst outcome of
    those (every one must be as expected), then, all closed, one more request that must be served."""
    began = time.monotonic()
    until = began + case["deadline"]
    held: list[socket.socket] = []
    outcomes: list[Outcome] = []
    time.sleep(0.5)  # connections closed just before (earlier cases, other tests) are gone from the server's count
    try:
        for _ in range(case["connections"]):
            held.append(socket.create_connection(address, timeout=case["deadline"]))
        time.sleep(0.3)  # every connection accepted by the server
        asking = held[-case["asking"]:]
        for client in asking:
            client.sendall(case["request"])
        for client in asking:
            data, closed, hang = read_answer(client, until)
            status, headers, body = parse(data)
            outcomes.append(Outcome(status, headers, body, time.monotonic() - began, closed, hang))
    finally:
        for client in held:
            client.close()
    bad = next((outcome for outcome in outcomes if outcome.status not in case["expect"] or outcome.hang), None)
    if bad is not None:
        return bad
    time.sleep(0.5)  # the server has seen the closes
    after = exchange(address, [case["request"]], [], max(1.0, until - time.monotonic()))
    if after.status != 200:
        after.problem = f"after the flood, with every connection closed, got {after.status}, expected 200"
    return after if after.problem else outcomes[-1]


def run_case(address: tuple[str, int], case: dict) -> Outcome:
    """Send one case (:func:`limit_case`); never raises for what the server does (a refused connection is an
    outcome with status None)."""
    try:
        if case["kind"] == "flood":
            return flood(address, case)
        return exchange(address, case["pieces"], case["gaps"], case["deadline"])
    except OSError as error:
        return Outcome(None, {"error": type(error).__name__}, seconds=0.0)


def problems(case: dict, outcome: Outcome) -> list[str]:
    """What is wrong with ``outcome`` for ``case``: unexpected status, a hang, a 503 without ``Retry-After: 5``, an
    error answer that is not the lab's JSON sentence. Empty when all is as stated."""
    found = [outcome.problem] if outcome.problem else []
    if outcome.hang:
        found.append(f"no answer and no close within {case['deadline']:.0f} s")
    if outcome.status not in case["expect"]:
        found.append(f"got {outcome.status}, expected {sorted(case['expect'], key=str)}")
    if outcome.status == 503 and outcome.headers.get("retry-after") != RETRY_AFTER:
        found.append(f"503 without Retry-After: {RETRY_AFTER}")
    if case["json"] and outcome.status is not None and outcome.status >= 400:
        try:
            message = json.loads(outcome.body)["message"]
        except (ValueError, KeyError, TypeError):
            found.append(f"{outcome.status} without the lab's JSON message: {outcome.body[:80]!r}")
        else:
            if not message or "Traceback" in message:
                found.append(f"{outcome.status} with message {message!r}")
    return found


def api_operations(address: tuple[str, int]) -> list[tuple[str, str]]:
    """Every (METHOD, path) of the lab's ``/api``, read from its ``/openapi.json``."""
    outcome = exchange(address, [head(b"GET", b"/openapi.json", [close_line()])], [], 60.0)
    schema = json.loads(outcome.body)
    return sorted((method.upper(), path) for path, item in schema["paths"].items() if path.startswith("/api")
                  for method in item)


def draw_cases(count: int, timeouts: Timeouts, operations: list[tuple[str, str]], seed: int = 0,
               kinds: tuple[str, ...] = KINDS) -> list[dict]:
    """``count`` cases of each of ``kinds``, drawn by Hypothesis with ``seed`` (the same cases on every run)."""
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as reproducible

    cases: list[dict] = []
    for kind in kinds if count > 0 else ():
        @reproducible(seed)
        @settings(max_examples=count, deadline=None, database=None, phases=[Phase.generate],
                  suppress_health_check=list(HealthCheck))
        @given(case=limit_case(timeouts, operations, kind))
        def collect(case) -> None:
            cases.append(case)

        collect()
    return cases


def run_cases(address: tuple[str, int], cases: list[dict], workers: int = 16) -> list[tuple[dict, Outcome, list[str]]]:
    """Every case with its outcome and :func:`problems`: floods first, one at a time (nothing else may hold a
    connection then), then the rest ``workers`` at a time (the slow ones wait out timeouts side by side)."""
    from concurrent.futures import ThreadPoolExecutor

    results = []
    for case in (case for case in cases if case["kind"] == "flood"):
        outcome = run_case(address, case)
        results.append((case, outcome, problems(case, outcome)))
    rest = sorted((case for case in cases if case["kind"] != "flood"), key=lambda case: case["kind"] not in SLOW_KINDS)
    with ThreadPoolExecutor(max_workers=workers) as pool:
        for case, outcome in zip(rest, pool.map(lambda case: run_case(address, case), rest)):
            results.append((case, outcome, problems(case, outcome)))
    return results
