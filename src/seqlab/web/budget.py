"""The compute one web request may ask for: refused before anything is allocated (HTTP 422), or when busy (503).

Each panel estimates the bytes its largest tensors would take (with :class:`seqlab.memory.MemoryEstimate`)
and calls :func:`require_within_budget` first, in the server, before any worker is asked. Two limits apply:
a fixed share per request (:data:`REQUEST_BUDGET_BYTES`, so one visitor cannot starve the others) and the
machine's available memory (the share :func:`seqlab.memory.require_fits` allows). The refusal is a
:class:`~seqlab.web.messages.LabError` whose sentence says how much the request would need, in the
request's language.

The measurements themselves run in worker processes (:mod:`seqlab.web.workers`); a request that finds
every worker taken and the short queue full is refused at once with :class:`LabBusy` (HTTP 503,
``Retry-After``). Pages, static files, closed forms and cached results never wait for a worker.
"""

from __future__ import annotations

from seqlab.memory import MemoryEstimate, available_memory_bytes
from seqlab.web.messages import N_, LabError, Phrase

DOMAIN = "web"

MIB = 1024**2
GIB = 1024**3
#: Bytes one request may use for its tensors: 256 MiB.
REQUEST_BUDGET_BYTES = 256 * MIB
#: Seconds a refused request is told to wait before trying again (the ``Retry-After`` header).
RETRY_AFTER_S = 5
#: Share of the machine's available memory the lab allows itself (as :func:`seqlab.memory.require_fits`).
MEMORY_SHARE = 0.8


class LabBusy(Exception):
    """Every worker is measuring and the queue is full, or the wait ran out: answer 503 at once."""

    def __init__(self, retry_after_s: int = RETRY_AFTER_S) -> None:
        super().__init__("the lab is busy measuring another request; try again in a few seconds")
        self.retry_after_s = retry_after_s

    def __reduce__(self):
        return (LabBusy, (self.retry_after_s,))


def require_within_budget(estimate: MemoryEstimate, what: Phrase, parameter: str | None = None,
                          budget_bytes: int = REQUEST_BUDGET_BYTES, hint: Phrase | None = None,
                          available: int | None = None) -> None:
    """Raise :class:`~seqlab.web.messages.LabError` when ``estimate`` exceeds one request's budget or the
    memory this machine has available.

    >>> try:
    ...     require_within_budget(MemoryEstimate(300 * MIB, Phrase("path distances of {count} sources",
    ...                                                               {"count": 99})),
    ...                           Phrase("T = {T} at d_model = {d}", {"T": 99, "d": 64}), "T")
    ... except LabError as error:
    ...     print(error.phrase.render("es").replace("; ", ";\\n"))
    T = 99 con d_model = 64 necesitaría unos 300 MiB (sobre todo las distancias de caminos de 99 orígenes);
    una petición puede usar como mucho 256 MiB

    Args:
        estimate: bytes the request's tensors would take; ``largest`` a :class:`Phrase` to name it in the
            message (a library's English name is left out of it).
        what: the sizes asked for, for the message.
        parameter: the request field to blame (``error.parameter``).
        budget_bytes: the per-request limit.
        hint: added after "; ": what would fit.
        available: bytes available (default: :func:`seqlab.memory.available_memory_bytes`).

    Raises:
        LabError: over the budget, or over what this machine has available.
    """
    named = isinstance(estimate.largest, Phrase)
    if estimate.total_bytes > budget_bytes:
        values = {"what": what, "size": round(estimate.total_bytes / MIB),
                  "budget": budget_bytes // MIB}
        if named:
            values["largest"] = estimate.largest
        if hint is not None:
            values["hint"] = hint
        msgid = {(True, False): N_("{what} would need about {size} MiB (mostly {largest}); one request may use at most "
                                "{budget} MiB"),
                 (True, True): N_("{what} would need about {size} MiB (mostly {largest}); one request may use at most "
                               "{budget} MiB; {hint}"),
                 (False, False): "{what} would need about {size} MiB; one request may use at most {budget} MiB",
                 (False, True): N_("{what} would need about {size} MiB; one request may use at most {budget} MiB; "
                                "{hint}")}[(named, hint is not None)]
        raise LabError(Phrase(msgid, values), parameter=parameter)
    available = available_memory_bytes() if available is None else available
    if estimate.total_bytes > MEMORY_SHARE * available:
        raise LabError(Phrase(N_("{what} would need about {size} GiB; this machine has {available} GiB available, of "
                              "which the lab uses at most {share}"),
                              {"what": what, "size": estimate.total_bytes / GIB, "available": available / GIB,
                               "share": f"{MEMORY_SHARE:.0%}"}),
                       parameter=parameter)
