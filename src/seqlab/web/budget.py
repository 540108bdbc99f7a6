"""The compute one web request may ask for: refused before anything is allocated (HTTP 422), or when busy (503).

Each panel estimates the bytes its largest tensors would take (with :class:`seqlab.memory.MemoryEstimate`)
and calls :func:`require_within_budget` first. Two limits apply: a fixed share per request
(:data:`REQUEST_BUDGET_BYTES`, so one visitor cannot starve the others) and the machine's available
memory (:func:`seqlab.memory.require_fits`). The message says how much the request would need.

Measurements run one at a time through :data:`COMPUTE` (the tracers switch global kernel flags while they
run, and one request's tensors at a time keep the memory bound honest). Nobody queues behind it for long:
a request that cannot start within :attr:`ComputeGate.wait_s`, or that would join a queue already
:attr:`ComputeGate.max_waiting` long, is refused at once with :class:`LabBusy` (HTTP 503, ``Retry-After``).
Pages, static files, closed forms and cached results never touch the gate.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from seqlab.errors import SeqlabError
from seqlab.memory import MemoryEstimate, require_fits

MIB = 1024**2
#: Bytes one request may use for its tensors: 256 MiB.
REQUEST_BUDGET_BYTES = 256 * MIB
#: Seconds a refused request is told to wait before trying again (the ``Retry-After`` header).
RETRY_AFTER_S = 5


class LabBusy(Exception):
    """Another request is measuring and the queue is full, or the wait ran out: answer 503 at once."""

    def __init__(self, retry_after_s: int = RETRY_AFTER_S) -> None:
        super().__init__("the lab is busy measuring another request; try again in a few seconds")
        self.retry_after_s = retry_after_s


class ComputeGate:
    """One measurement at a time, a short wait at most, a queue of at most ``max_waiting`` requests.

    >>> gate = ComputeGate(wait_s=0.01, max_waiting=1)
    >>> with gate.slot():
    ...     gate.busy
    True
    >>> gate.busy
    False
    """

    def __init__(self, wait_s: float = 2.0, max_waiting: int = 1) -> None:
        self.wait_s = wait_s
        self.max_waiting = max_waiting
        self._lock = threading.Lock()
        self._queue = threading.Lock()
        self._waiting = 0

    @property
    def busy(self) -> bool:
        """Whether a measurement holds the gate now."""
        return self._lock.locked()

    def _acquire(self, wait_s: float, max_waiting: int) -> bool:
        if self._lock.acquire(blocking=False):
            return True
        with self._queue:
            if self._waiting >= max_waiting:
                return False
            self._waiting += 1
        try:
            return wait_s > 0 and self._lock.acquire(timeout=wait_s)
        finally:
            with self._queue:
                self._waiting -= 1

    @contextmanager
    def slot(self) -> Iterator[None]:
        """Hold the gate for one measurement.

        Raises:
            LabBusy: the gate did not free up within ``wait_s``, or ``max_waiting`` requests already wait.
        """
        if not self._acquire(self.wait_s, self.max_waiting):
            raise LabBusy()
        try:
            yield
        finally:
            self._lock.release()

    def try_run(self, work: Callable[[], object], wait_s: float = 0.2) -> tuple[bool, object]:
        """Run ``work`` under the gate if it frees up within ``wait_s`` (never queueing behind others).

        Returns ``(True, result)``, or ``(False, None)`` when the gate stayed busy: the caller answers from
        closed forms instead of waiting.
        """
        if not self._acquire(wait_s, self.max_waiting + 1):
            return False, None
        try:
            return True, work()
        finally:
            self._lock.release()


#: The gate every measuring endpoint passes through.
COMPUTE = ComputeGate()


def require_within_budget(estimate: MemoryEstimate, what: str, parameter: str | None = None,
                          budget_bytes: int = REQUEST_BUDGET_BYTES, hint: str = "") -> None:
    """Raise :class:`SeqlabError` when ``estimate`` exceeds one request's budget or the free memory.

    >>> require_within_budget(MemoryEstimate(300 * MIB, "paths"), "T = 99", "T")
    Traceback (most recent call last):
    ...
    seqlab.errors.SeqlabError: T = 99 would need about 300 MiB (mostly paths); one request may use at most 256 MiB

    Args:
        estimate: bytes the request's tensors would take.
        what: the sizes asked for, for the message (``"T = 64 at d_model = 64"``).
        parameter: the request field to blame (``error.parameter``).
        budget_bytes: the per-request limit.
        hint: appended to the message after "; ": what would fit (``"at S = 32, T = 32 …"``).

    Raises:
        SeqlabError: over the budget, or over what this machine has available.
    """
    if estimate.total_bytes > budget_bytes:
        raise SeqlabError(
            f"{what} would need about {estimate.total_bytes / MIB:,.0f} MiB (mostly {estimate.largest}); "
            f"one request may use at most {budget_bytes / MIB:,.0f} MiB" + (f"; {hint}" if hint else ""),
            parameter=parameter)
    try:
        require_fits(estimate, what)
    except SeqlabError as error:
        raise SeqlabError(str(error), parameter=parameter) from None
