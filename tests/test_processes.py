"""Worker processes leave the terminal's Ctrl+C to their parent (seqlab.processes), from their first instruction.

Two routes to the same fact: the signal mask a spawned child reads at its start (SIGINT blocked), and a worker
that is sent SIGINT and still answers afterwards (the web lab's measuring worker, the learn pool's worker).
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import time

from seqlab.processes import ignore_interrupts, started_quietly


def _mask_and_handler(queue) -> None:
    """In a spawned child: the signals blocked at its start, then SIGINT's handler after ignore_interrupts."""
    blocked = sorted(int(number) for number in signal.pthread_sigmask(signal.SIG_BLOCK, []))
    ignore_interrupts()
    unblocked = sorted(int(number) for number in signal.pthread_sigmask(signal.SIG_BLOCK, []))
    queue.put((blocked, unblocked, signal.getsignal(signal.SIGINT) is signal.SIG_IGN))


def test_a_child_started_quietly_is_born_with_sigint_blocked_and_then_ignores_it():
    context = multiprocessing.get_context("spawn")
    queue = context.Queue()
    before = signal.pthread_sigmask(signal.SIG_BLOCK, [])
    with started_quietly():
        process = context.Process(target=_mask_and_handler, args=(queue,))
        process.start()
        assert signal.SIGINT in signal.pthread_sigmask(signal.SIG_BLOCK, [])
    assert signal.pthread_sigmask(signal.SIG_BLOCK, []) == before  # the parent's thread is given back its mask
    blocked, unblocked, ignored = queue.get(timeout=120)
    process.join(120)
    assert int(signal.SIGINT) in blocked and int(signal.SIGINT) not in unblocked and ignored
    assert process.exitcode == 0


def test_started_quietly_is_reentrant():
    before = signal.pthread_sigmask(signal.SIG_BLOCK, [])
    with started_quietly():
        with started_quietly():
            pass
        assert signal.SIGINT in signal.pthread_sigmask(signal.SIG_BLOCK, [])
    assert signal.pthread_sigmask(signal.SIG_BLOCK, []) == before


def test_the_web_labs_worker_survives_a_terminals_sigint_and_still_answers():
    from seqlab.web.workers import WorkerPool

    pool = WorkerPool(wait_s=60, preload=(), time_limit_scale=None)
    try:
        assert pool.call(divmod, (7, 2)) == (3, 1)
        (pid,) = pool.worker_pids()
        os.kill(pid, signal.SIGINT)  # what the terminal's Ctrl+C sends to every process of the group
        time.sleep(0.5)
        assert pool.worker_pids() == [pid] and pool.call(divmod, (9, 4)) == (2, 1)
    finally:
        pool.shutdown()


def test_a_learn_pool_worker_survives_sigint():
    from seqlab.learn import sweep

    with started_quietly():
        context = multiprocessing.get_context("spawn")
        process = context.Process(target=_sleep_after_start, args=(1,))
        process.start()
    time.sleep(0.2)
    os.kill(process.pid, signal.SIGINT)  # may land while the child starts up, or after: ignored either way
    process.join(120)
    assert process.exitcode == 0 and sweep.ignore_interrupts is ignore_interrupts


def _sleep_after_start(threads: int) -> None:
    """The learn pool's worker start (seqlab.learn.sweep._worker_start), then a moment for the signal to land."""
    from seqlab.learn.sweep import _worker_start

    _worker_start(threads)
    time.sleep(1.0)
