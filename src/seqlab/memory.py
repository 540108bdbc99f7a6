"""Refuse work that would not fit in memory, before allocating anything.

A study estimates the bytes its largest tensors will take (attention's T×T maps dominate; reach in
float64 with a batch of backward vectors multiplies them) and compares the estimate with the memory
this machine has available now. The estimate is deliberately generous: it is a guard against a
swap storm or an out-of-memory kill, not a prediction of the peak.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from seqlab.errors import Message, SeqlabError
from seqlab.i18n import N_

GIB = 1024**3

FLOAT32_BYTES = 4
FLOAT64_BYTES = 8


@dataclass(frozen=True)
class MemoryEstimate:
    """Bytes a study expects to need, and what they are for.

    Attributes:
        total_bytes: the estimate, in bytes.
        largest: a short description of the largest term (for the refusal message).
    """

    total_bytes: int
    largest: str

    @property
    def gib(self) -> float:
        """The estimate in GiB (2**30 bytes)."""
        return self.total_bytes / GIB


def readable_bytes(count: int | float) -> str:
    """A byte count in the largest binary unit that keeps it at 1 or more (B, KiB, MiB, GiB, TiB, PiB, EiB).

    >>> readable_bytes(3 * GIB), readable_bytes(1536 * 1024), readable_bytes(8), readable_bytes(5 * 1024**4)
    ('3.0 GiB', '1.5 MiB', '8 B', '5.0 TiB')
    >>> readable_bytes(3_120_147_456_056_623_104)  # T = 10**8 at d_model = 512: compare's attention maps
    '2.7 EiB'
    """
    return str(readable_size(count))


def readable_size(count: float) -> Message:
    """:func:`readable_bytes` as a message, so that its number takes each language's format ("3,0 GiB" in Spanish).

    >>> str(readable_size(3 * GIB)), readable_size(3 * GIB).localized("es"), str(readable_size(8))
    ('3.0 GiB', '3,0 GiB', '8 B')
    """
    units = (("EiB", 1024**6), ("PiB", 1024**5), ("TiB", 1024**4), ("GiB", GIB), ("MiB", 1024**2), ("KiB", 1024))
    for unit, size in units:
        if count >= size:
            return Message(N_("{amount:.1f} {unit}"), amount=count / size, unit=unit)
    return Message(N_("{amount} {unit}"), amount=int(count), unit="B")


def available_memory_bytes() -> int:
    """Memory available to new allocations now, in bytes (Linux ``MemAvailable``; else physical memory).

    >>> available_memory_bytes() > 0
    True
    """
    try:
        with open("/proc/meminfo", encoding="ascii") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def estimate_compare_bytes(T: int, d_model: int, d_h: int, d_k: int, d_v: int, probes: int,
                           score_width: int = 0, gated_width: int = 0) -> MemoryEstimate:
    """Estimate the memory ``seqlab compare`` needs for one text of T tokens.

    Terms (bytes): attention maps — scores, weights and their traced copies in float32 plus the
    float64 reach pass whose batched backward holds ``probes`` copies: T²·(6·4 + 4·8·(1 + probes)),
    times (1 + score_width) when the score builds a hidden vector per pair (additive: a T×T×d_a tensor);
    activations — T·(d_model + d_h + 2·d_k + 2·d_v)·(12·4 + 4·8·(1 + probes)); weights — every
    matrix in float32 and float64, 3 copies; with ``gated_width`` (the d_h of the LSTM and GRU columns) the
    float64 reach pass through an LSTM, which saves its four gates, cell and hidden states per step and copy:
    T·12·gated_width·8·(1 + probes).

    >>> estimate_compare_bytes(800, 512, 512, 512, 512, 16).gib < 2
    True

    Nothing is raised: sizes are validated by the caller.
    """
    batched = 1 + probes
    maps = T * T * (6 * FLOAT32_BYTES + 4 * FLOAT64_BYTES * batched) * (1 + score_width)
    activations = T * (d_model + d_h + 2 * d_k + 2 * d_v) * (12 * FLOAT32_BYTES + 4 * FLOAT64_BYTES * batched)
    weights = 3 * (FLOAT32_BYTES + FLOAT64_BYTES) * (
        d_h * (d_h + d_model) + d_model * (2 * d_k + d_v) + d_k * d_k
    )
    gated = T * 12 * gated_width * FLOAT64_BYTES * batched
    terms = {
        Message(N_("attention maps of {T}×{T}"), T=T): maps,
        Message(N_("activations of {T} positions"), T=T): activations,
        Message(N_("weights of width {width}"), width=max(d_model, d_h, d_k, d_v)): weights,
    }
    if gated_width:
        terms[Message(N_("LSTM states of {T} positions"), T=T)] = gated
    largest = max(terms, key=terms.__getitem__)
    return MemoryEstimate(total_bytes=maps + activations + weights + gated, largest=largest)


def require_fits(estimate: MemoryEstimate, what: str, available: int | None = None, share: float = 0.8) -> None:
    """Raise :class:`SeqlabError` unless ``estimate`` fits in ``share`` of the available memory.

    >>> require_fits(MemoryEstimate(3 * GIB, "maps"), "T = 9", available=2 * GIB)
    Traceback (most recent call last):
    ...
    seqlab.errors.SeqlabError: T = 9 would need about 3.0 GiB (mostly maps); this machine has 2.0 GiB available, of which seqlab uses at most 80% (3,221,225,472 bytes against 2,147,483,648)

    Args:
        estimate: from an ``estimate_*`` function.
        what: the sizes asked for, named for the message (``"T = 20000 at d_model = 512"``).
        available: bytes available (default: :func:`available_memory_bytes`).
        share: the fraction of the available memory seqlab allows itself.

    Raises:
        SeqlabError: the estimate exceeds ``share × available``; the message gives both in a readable unit
            (:func:`readable_bytes`: KiB, MiB, GiB…) and in bytes.
    """
    available = available_memory_bytes() if available is None else available
    if estimate.total_bytes > share * available:
        raise SeqlabError(N_("{what} would need about {readable_bytes} (mostly {largest}); this machine has "
                             "{readable_bytes2} available, of which seqlab uses at most {share:.0%} ({total_bytes:,} "
                             "bytes against {available:,})"), what=what,
                          readable_bytes=readable_size(estimate.total_bytes), largest=estimate.largest,
                          readable_bytes2=readable_size(available), share=share, total_bytes=estimate.total_bytes,
                          available=int(available))
