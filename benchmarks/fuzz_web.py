"""Fuzz the web lab with 10,000 generated requests or more; count answers of 500 or more and server tracebacks.

Starts ``seqlab serve`` on a free port of 127.0.0.1 (nothing else is contacted), its log in a file, then sends
two kinds of generated requests, one at a time:

1. **Schemathesis** from the app's OpenAPI schema: for every operation, valid (positive) and invalid
   (negative) cases drawn by Hypothesis, ``--examples`` of each per operation (``--bench-examples`` for
   ``/api/time/run``, which times the machine for seconds per call);
2. **Hostile requests** from Hypothesis strategies of this script (``--hostile`` of them): strings with lone
   surrogates (``"\\ud800"``, escaped in JSON) in every field and as keys, integers of 20 to 6,000 digits as
   JSON numbers and as text, JSON nested up to 20,000 deep, bytes that are not UTF-8, NaN and Infinity,
   percent-encoded surrogates and long values in query strings, forged ``Host`` headers and paths such as
   ``//evil.example/x``;
3. **Limit cases** over raw sockets (``--limit-cases`` of each kind, from ``fuzz_limits.py``): heads around
   16 KiB and 100 header lines with random names and values, in one write or split at random points; bodies
   around 64 KiB, ``Content-Length`` or chunked; bodies trickled at random rates and heads too slow; byte order
   marks and missing, doubled or odd ``Content-Type`` headers; cross-site ``Sec-Fetch-Site`` and ``Origin``
   values on every ``/api`` operation; floods of connections past the cap. Each is checked against its stated
   answer (431, 422, 408, 403, 503 with ``Retry-After``, 200, or a closed connection for a slow head) under a
   deadline.

Prints the settings, how many requests were sent, the count of each status, the responses of 500 or more
(with the first few requests that got one), the limit cases by kind and answer with any that were not answered
as stated, and the lines with "Traceback" in the server's log; exits 1 if any of these counts is above 0 (the
503s past the connection cap are the stated answer, not errors); ``--json FILE`` writes the counts as data.

    python benchmarks/fuzz_web.py                                  # about 10,000 requests or more
    python benchmarks/fuzz_web.py --examples 50 --hostile 1000     # a quick pass
    python benchmarks/fuzz_web.py --examples 0 --heavy-examples 0 --bench-examples 0 --hostile 0  # limit cases only
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections import Counter

import httpx
from hypothesis import HealthCheck, given, settings
from hypothesis import seed as reproducible
from hypothesis import strategies as st

import fuzz_limits
from web_server import free_port, start_server, stop_server

sys.set_int_max_str_digits(0)  # this client writes integers of up to 6,000 digits (the server refuses them)
SURROGATE = st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF)
ANY_CHAR = st.characters(codec=None, exclude_categories=())
TEXT = st.text(st.one_of(ANY_CHAR, SURROGATE), max_size=80)
HUGE = st.integers(min_value=10**19, max_value=10**6000) | st.integers(max_value=-(10**19), min_value=-(10**6000))
SCALAR = st.one_of(st.none(), st.booleans(), st.integers(-(10**6), 10**6), HUGE, st.floats(allow_nan=False), TEXT)
ENDPOINTS = [("POST", "/api/order"), ("POST", "/api/quiz/q1"), ("POST", "/api/quiz/q2"), ("POST", "/api/quiz/q4"),
             ("POST", "/api/time/run"), ("GET", "/api/cost"), ("GET", "/api/chain"), ("GET", "/api/figure"),
             ("GET", "/api/quiz"), ("GET", "/cost"), ("GET", "/order")]
#: Operations whose valid requests measure (seconds each): their positive cases get ``--heavy-examples``.
MEASURING = {"/api/figure", "/api/cost", "/api/chain", "/api/order", "/api/decode", "/api/decode/model"}
FIELDS = ["sentence", "reordered", "answer", "d_model", "seed", "max_T", "T", "lang", "extra"]


def nested(depth: int) -> bytes:
    """A JSON array nested ``depth`` deep."""
    return b"[" * depth + b"]" * depth


@st.composite
def hostile(draw) -> dict:
    """One hostile request: method, path, query, headers and raw body."""
    method, path = draw(st.sampled_from(ENDPOINTS))
    kind = draw(st.sampled_from(["object", "deep", "bytes", "constant", "huge_text", "host", "path", "query"]))
    headers = {"content-type": "application/json"}
    query: list[tuple[str, str]] = []
    body: bytes | None = None
    if kind == "object":
        keys = st.one_of(st.sampled_from(FIELDS), TEXT)
        value = draw(st.dictionaries(keys, st.one_of(SCALAR, st.lists(SCALAR, max_size=5)), max_size=5))
        if path == "/api/time/run":  # a valid bench times the machine for seconds: Schemathesis sends a few
            value["extra"] = 1
        body = json.dumps(value, ensure_ascii=True).encode()  # lone surrogates travel as \\udXXX escapes
    elif kind == "deep":
        body = nested(draw(st.integers(1, 20_000)))
    elif kind == "bytes":
        body = draw(st.binary(max_size=200))
    elif kind == "constant":
        constant = draw(st.sampled_from(["NaN", "Infinity", "-Infinity"]))
        body = f'{{"{draw(st.sampled_from(FIELDS))}": {constant}}}'.encode()
    elif kind == "huge_text":
        digits = str(draw(HUGE))
        body = json.dumps({"answer": draw(st.sampled_from([digits, int(digits)]))}).encode()
    elif kind == "host":
        headers["host"] = draw(st.sampled_from(["evil.example", "127.0.0.1.evil.example", "localhost:1@evil",
                                                "[::1", "", "127.0.0.2"]))
    elif kind == "path":
        path = draw(st.sampled_from(["//evil.example/x", "/%ED%A0%80", "/..%2f..%2fetc/passwd", "/cost/../quiz",
                                     "/" + "a" * 2000]))
    else:
        query = [(draw(st.sampled_from(FIELDS)), draw(st.sampled_from(["%ED%A0%80", "9" * 5000, "", "1e999", "nan"])))
                 for _ in range(draw(st.integers(1, 3)))]
    if body is None and method == "POST":
        body = b"{}"
    return {"method": method, "path": path, "query": query, "headers": headers, "body": body,
            "lang": draw(st.sampled_from(["en", "es"]))}


def send_hostile(http: httpx.Client, request: dict) -> int:
    """Send one hostile request as generated (query strings already percent-encoded)."""
    query = "&".join(f"{key}={value}" for key, value in request["query"] + [("lang", request["lang"])])
    url = f"{request['path']}?{query}"
    headers = dict(request["headers"])
    return http.request(request["method"], url, content=request["body"], headers=headers).status_code


def run_schemathesis(base: str, examples: int, heavy: int, bench_examples: int, seed: int, tally: Counter,
                     failures: list, by_operation: dict | None = None) -> int:
    """Positive and negative cases of every operation, ``examples`` each (``heavy`` for the valid cases of the
    measuring operations, ``bench_examples`` for the bench); ``by_operation``, if given, gets the statuses of each
    operation and mode (``"GET /api/figure positive"``)."""
    import schemathesis
    from schemathesis import GenerationMode

    schema = schemathesis.openapi.from_url(f"{base}/openapi.json")
    sent = 0
    for result in schema.get_all_operations():
        operation = result.ok()
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
            count = (bench_examples if operation.path == "/api/time/run" else
                     heavy if operation.path in MEASURING and mode == GenerationMode.POSITIVE else examples)
            if count < 1:
                continue
            strategy = operation.as_strategy(generation_mode=mode)

            @reproducible(seed)
            @settings(max_examples=count, deadline=None, database=None, suppress_health_check=list(HealthCheck))
            @given(case=strategy)
            def check(case) -> None:
                nonlocal sent
                response = case.call(base_url=base, timeout=180)
                sent += 1
                tally[response.status_code] += 1
                if by_operation is not None:
                    by_operation.setdefault(f"{operation.label} {mode.value}", Counter())[response.status_code] += 1
                if response.status_code >= 500:
                    failures.append(f"{case.method} {case.formatted_path} {case.query} {case.body!r}"[:300])

            check()
            print(f"  {operation.label:<28} {mode.value:<8} {count:>5} examples, {sent:>6} sent so far", flush=True)
    return sent


def run_hostile(base: str, count: int, seed: int, tally: Counter, failures: list) -> int:
    """``count`` hostile requests drawn from :func:`hostile`."""
    sent = 0
    if count < 1:
        return sent
    with httpx.Client(base_url=base, timeout=180) as http:
        @reproducible(seed)
        @settings(max_examples=count, deadline=None, database=None, suppress_health_check=list(HealthCheck))
        @given(request=hostile())
        def check(request) -> None:
            nonlocal sent
            try:
                status = send_hostile(http, request)
            except httpx.HTTPError as error:  # a dropped connection is a failure too
                status = f"no answer ({type(error).__name__})"
            sent += 1
            tally[status] += 1
            if not isinstance(status, int) or status >= 500:
                failures.append(f"{status}: {request['method']} {request['path'][:60]} {request['body']!r}"[:300])

        check()
    return sent


def run_limits(port: int, count: int, seed: int, tally: Counter, by_kind: dict, failures: list) -> int:
    """``count`` limit cases of each kind (fuzz_limits.py) against the lab's own timeouts; an answer not as stated
    is a failure, whatever its status."""
    address = ("127.0.0.1", port)
    cases = fuzz_limits.draw_cases(count, fuzz_limits.Timeouts(), fuzz_limits.api_operations(address), seed)
    for case, outcome, found in fuzz_limits.run_cases(address, cases):
        status = outcome.status if outcome.status is not None else "closed, no answer"
        tally[status] += 1
        by_kind.setdefault(case["kind"], Counter())[status] += 1
        if found:
            failures.append(f"limit case {case['kind']} ({case['note']}): {'; '.join(found)}"[:300])
    return len(cases)


def main() -> int:
    """Parse the options, start the server, fuzz, print the counts; 1 on any 5xx or traceback."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=300, help="Schemathesis examples per operation and mode")
    parser.add_argument("--heavy-examples", type=int, default=60,
                        help="valid examples of the measuring operations (figure, cost, chain, order, decode)")
    parser.add_argument("--bench-examples", type=int, default=5, help="the same for /api/time/run")
    parser.add_argument("--hostile", type=int, default=8000, help="hostile requests from this script's strategies")
    parser.add_argument("--limit-cases", type=int, default=40,
                        help="raw-socket cases of each limit kind (8 kinds; the slow ones wait out 10 s timeouts)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", help="write the settings and counts to this file as JSON")
    args = parser.parse_args()
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    tally: Counter = Counter()
    failures: list[str] = []
    limit_failures: list[str] = []
    by_kind: dict[str, Counter] = {}
    by_operation: dict[str, Counter] = {}
    with tempfile.NamedTemporaryFile("w+", suffix=".log", prefix="seqlab-fuzz-") as log:
        server = start_server(port, log)
        began = time.perf_counter()
        try:
            print(f"server {base} (127.0.0.1 only), log {log.name}")
            print(f"settings: Schemathesis {args.examples} positive + {args.examples} negative examples per "
                  f"operation ({args.heavy_examples} positive for the measuring ones, {args.bench_examples} + "
                  f"{args.bench_examples} for /api/time/run), hostile {args.hostile}, limit cases "
                  f"{args.limit_cases} of each of {len(fuzz_limits.KINDS)} kinds, seed {args.seed}")
            schema_sent = run_schemathesis(base, args.examples, args.heavy_examples, args.bench_examples, args.seed,
                                           tally, failures, by_operation)
            hostile_sent = run_hostile(base, args.hostile, args.seed, tally, failures)
            limit_sent = run_limits(port, args.limit_cases, args.seed, tally, by_kind, limit_failures)
        finally:
            stop_server(server)
        elapsed = time.perf_counter() - began
        log.seek(0)
        lines = log.read().splitlines()
    tracebacks = [line for line in lines if "Traceback" in line]
    stated_503 = by_kind.get("flood", Counter())[503]
    errors = sum(count for status, count in tally.items() if not isinstance(status, int) or status >= 500) \
        - stated_503 - tally["closed, no answer"]  # a slow head's closed connection is its stated answer
    print(f"requests sent        {schema_sent + hostile_sent + limit_sent:,} ({schema_sent:,} Schemathesis, "
          f"{hostile_sent:,} hostile, {limit_sent:,} limit cases) in {elapsed:,.0f} s on {os.cpu_count()} CPUs, "
          f"load average {os.getloadavg()[0]:.1f}")
    print("statuses             " + ", ".join(f"{status}: {count:,}" for status, count in
                                           sorted(tally.items(), key=lambda item: str(item[0]))))
    print(f"responses >= 500     {errors} (besides {stated_503} stated 503s past the connection cap)")
    for failure in failures[:10]:
        print(f"  {failure}")
    for kind, counts in by_kind.items():
        print(f"  limit {kind:<13} " + ", ".join(f"{status}: {count}" for status, count in
                                                 sorted(counts.items(), key=lambda item: str(item[0]))))
    print(f"limit cases not as stated {len(limit_failures)}")
    for failure in limit_failures[:10]:
        print(f"  {failure}")
    print(f"tracebacks in log    {len(tracebacks)}")
    for line in lines[:0] if not tracebacks else lines[:40]:
        print(f"  | {line}")
    if args.json:
        record = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "settings": vars(args),
                  "cpus": os.cpu_count(), "load_average_1_5_15": [round(value, 2) for value in os.getloadavg()],
                  "seconds": round(elapsed, 1),
                  "sent": {"schemathesis": schema_sent, "hostile": hostile_sent, "limit_cases": limit_sent},
                  "statuses": {str(status): count for status, count in sorted(tally.items(), key=lambda i: str(i[0]))},
                  "schemathesis_by_operation": {label: {str(status): count for status, count in sorted(counts.items())}
                                                for label, counts in by_operation.items()},
                  "limit_cases_by_kind": {kind: {str(status): count for status, count in counts.items()}
                                          for kind, counts in by_kind.items()},
                  "responses_500_or_more_besides_stated_503": errors, "stated_503_past_cap": stated_503,
                  "limit_cases_not_as_stated": limit_failures, "tracebacks_in_log": len(tracebacks)}
        with open(args.json, "w", encoding="utf-8") as out:
            json.dump(record, out, indent=1)
            out.write("\n")
    return 1 if errors or tracebacks or limit_failures else 0


if __name__ == "__main__":
    sys.exit(main())
