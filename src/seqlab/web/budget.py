"""The compute one web request may ask for: refused before anything is allocated (HTTP 422).

Each panel estimates the bytes its largest tensors would take (with :class:`seqlab.memory.MemoryEstimate`)
and calls :func:`require_within_budget` first. Two limits apply: a fixed share per request
(:data:`REQUEST_BUDGET_BYTES`, so one visitor cannot starve the others) and the machine's available
memory (:func:`seqlab.memory.require_fits`). The message says how much the request would need.
"""

from __future__ import annotations

import threading

from seqlab.errors import SeqlabError
from seqlab.memory import MemoryEstimate, require_fits

MIB = 1024**2
#: Bytes one request may use for its tensors: 256 MiB.
REQUEST_BUDGET_BYTES = 256 * MIB

#: One measurement at a time: the tracers switch global kernel flags (fused attention, oneDNN) while
#: they run, and one request's tensors at a time keep the memory bound honest.
COMPUTE_LOCK = threading.Lock()


def require_within_budget(estimate: MemoryEstimate, what: str, parameter: str | None = None,
                          budget_bytes: int = REQUEST_BUDGET_BYTES) -> None:
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

    Raises:
        SeqlabError: over the budget, or over what this machine has available.
    """
    if estimate.total_bytes > budget_bytes:
        raise SeqlabError(
            f"{what} would need about {estimate.total_bytes / MIB:,.0f} MiB (mostly {estimate.largest}); "
            f"one request may use at most {budget_bytes / MIB:,.0f} MiB", parameter=parameter)
    try:
        require_fits(estimate, what)
    except SeqlabError as error:
        raise SeqlabError(str(error), parameter=parameter) from None
