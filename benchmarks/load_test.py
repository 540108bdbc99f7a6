"""Load test of the web lab's API: 50 concurrent clients for 60 s on loopback (``seqlab serve``'s app), and memory.

Starts ``seqlab serve`` in a subprocess on a free port of 127.0.0.1 (Uvicorn with its limits), warms every endpoint
once, then runs N asynchronous httpx clients in a closed loop (each sends its next request when the last one
answers) over a fixed mix of requests: the panels' JSON endpoints with the parameters the pages use, a few pages,
the quiz's grading and a short bench. Prints throughput (requests per second), latency percentiles, the 503s
(documented: every worker busy and the queue full, with ``Retry-After``) and the errors (any other status than
200, or a failed connection). Memory: the resident set of the server process and of its worker processes
(``/proc``), at idle after the warm-up, at its highest during the load, and ``--settle`` seconds after the load
stopped; the check is that the last is within ``--rss-margin`` MB of idle. Exits 1 on any error or a failed check.

    python benchmarks/load_test.py                    # 50 clients, 60 s, memory 120 s after
    python benchmarks/load_test.py --clients 10 --duration 10 --settle 10
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import httpx

from web_server import free_port, start_server, stop_server

#: (method, path, JSON body) — what the pages ask for, with a handful of slider positions.
MIX = [
    *[("GET", f"/api/cost?T={T}&lang={lang}", None) for T in (50, 128, 512, 1000, 2000) for lang in ("en", "es")],
    *[("GET", f"/api/chain?T={T}&d_model=16&spectral_radius={rho}", None) for T in (8, 12, 16) for rho in (0.5, 0.9)],
    ("POST", "/api/order", {"sentence": "el perro muerde al cartero", "reordered": "al cartero muerde el perro"}),
    ("POST", "/api/order", {"sentence": "el perro muerde al cartero", "reordered": "muerde el cartero al perro"}),
    ("GET", "/api/figure?lang=en", None),
    ("GET", "/api/figure?lang=es", None),
    ("GET", "/api/quiz?lang=es", None),
    ("POST", "/api/quiz/q2", {"answer": "512"}),
    ("POST", "/api/quiz/q4", {"answer": ["a", "b", "c"]}),
    ("GET", "/api/time", None),
    ("GET", "/cost?lang=es", None),
    ("GET", "/figure", None),
    ("GET", "/openapi.json", None),
    ("POST", "/api/time/run", {"d_model": 64, "max_T": 128}),
]
MB = 1e6


def resident(pid: int) -> int:
    """Resident bytes of process ``pid`` (0 when it is gone)."""
    try:
        return int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def family(pid: int) -> list[int]:
    """``pid`` and its descendants (the lab's worker processes), from /proc."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parents[int(entry.name)] = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
    found, frontier = [pid], [pid]
    while frontier:
        frontier = [child for child, parent in parents.items() if parent in frontier]
        found += frontier
    return found


def memory(pid: int) -> tuple[int, int]:
    """(server process, server and its workers) resident bytes now."""
    return resident(pid), sum(resident(member) for member in family(pid))


async def send(client: httpx.AsyncClient, method: str, path: str, body: object) -> int:
    """One request; its status code."""
    response = await client.request(method, path, json=body)
    return response.status_code


async def run(base: str, clients: int, duration: float, seed: int, server_pid: int, idle: list,
              sampling: threading.Event) -> tuple[list[float], Counter, Counter, int, float]:
    """Warm up, then ``clients`` closed-loop workers for ``duration`` s:
    (latencies, errors, busy 503s, answered, elapsed)."""
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx.AsyncClient(base_url=base, timeout=120, limits=limits) as client:
        for method, path, body in MIX:  # warm-up: the first call of each computes and fills the caches
            status = await send(client, method, path, body)
            if status != 200:
                raise SystemExit(f"warm-up {method} {path} answered {status}")
        await asyncio.sleep(2)
        idle.extend(memory(server_pid))
        sampling.set()
        latencies: list[float] = []
        errors: Counter = Counter()
        busy: Counter = Counter()
        stop = time.perf_counter() + duration

        async def worker(index: int) -> None:
            """Send requests drawn from MIX one after another until the time is up."""
            rng = random.Random(seed + index)
            while time.perf_counter() < stop:
                method, path, body = rng.choice(MIX)
                started = time.perf_counter()
                try:
                    status = await send(client, method, path, body)
                except httpx.HTTPError as error:
                    errors[f"{type(error).__name__} on {method} {path}"] += 1
                    continue
                latencies.append(time.perf_counter() - started)
                if status == 503:
                    busy[f"{method} {path}"] += 1
                elif status != 200:
                    errors[f"{status} on {method} {path}"] += 1

        began = time.perf_counter()
        await asyncio.gather(*(worker(i) for i in range(clients)))
        elapsed = time.perf_counter() - began
    return latencies, errors, busy, len(latencies), elapsed


def percentile(values: list[float], share: float) -> float:
    """The nearest-rank percentile (share in [0, 1])."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(share * (len(ordered) - 1))))]


def main() -> int:
    """Parse the options, run the load, watch the memory, print the summary; 1 on any error or failed check."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--duration", type=float, default=60.0, help="seconds of load")
    parser.add_argument("--settle", type=float, default=120.0, help="seconds after the load before memory is read")
    parser.add_argument("--rss-margin", type=float, default=300.0, help="MB above idle allowed after settling")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    port = free_port()
    server = start_server(port)
    idle: list[int] = []
    peak = [0, 0]
    sampling, stopped = threading.Event(), threading.Event()

    def watch() -> None:
        sampling.wait()
        while not stopped.is_set():
            now = memory(server.pid)
            peak[:] = [max(peak[0], now[0]), max(peak[1], now[1])]
            time.sleep(1)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        latencies, errors, busy, answered, elapsed = asyncio.run(
            run(f"http://127.0.0.1:{port}", args.clients, args.duration, args.seed, server.pid, idle, sampling))
        stopped.set()
        time.sleep(args.settle)
        after = memory(server.pid)
    finally:
        stopped.set()
        stop_server(server)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    failed = sum(errors.values())
    print(f"{args.clients} clients for {elapsed:.1f} s on 127.0.0.1 ({os.cpu_count()} CPUs, load average {load:.2f})")
    print(f"requests answered   {answered:,}")
    print(f"throughput          {answered / elapsed:,.1f} requests/s")
    if latencies:
        print(f"latency p50         {1000 * statistics.median(latencies):,.1f} ms")
        print(f"latency p99         {1000 * percentile(latencies, 0.99):,.1f} ms")
        print(f"latency max         {1000 * max(latencies):,.1f} ms")
    print(f"busy (503, documented, with Retry-After) {sum(busy.values())}")
    for what, count in busy.most_common():
        print(f"  {count:6d}  {what}")
    print(f"errors              {failed}")
    for what, count in errors.most_common():
        print(f"  {count:6d}  {what}")
    grown = (after[1] - idle[1]) / MB
    print(f"memory (RSS, MB)    server / server + workers: idle {idle[0] / MB:,.0f} / {idle[1] / MB:,.0f}, highest "
          f"under load {peak[0] / MB:,.0f} / {peak[1] / MB:,.0f}, {args.settle:.0f} s after {after[0] / MB:,.0f} / "
          f"{after[1] / MB:,.0f}")
    within = grown <= args.rss_margin
    print(f"memory check        {grown:+,.0f} MB against idle (server + workers): "
          f"{'within' if within else 'NOT within'} {args.rss_margin:,.0f} MB")
    return 1 if failed or not within else 0


if __name__ == "__main__":
    sys.exit(main())
