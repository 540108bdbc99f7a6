"""Wall times in ``seqlab compare``: every library module timed on the same rows, with its spread and load (L8).

The lesson's argument for attention is about time (L8), so ``compare`` times each machine at the scope of
its work counts: ``nn.RNN`` against SDPA (the call alone, the lesson's scope) and against
``nn.MultiheadAttention`` with H heads (the layer), plus ``nn.LSTM`` and ``nn.GRU``. Each time carries its
median, interquartile range and timed blocks (:class:`seqlab.measure.timing.Timing`) and the machine's load
read before the first clock (:class:`seqlab.measure.timing.MachineLoad`), so a front end can say when the
machine was busy.

Shapes: T tokens, d_model width.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

import torch

from seqlab.measure.timing import Timing, machine_load, measure_time
from seqlab.studies.compare_scopes import Modules

if TYPE_CHECKING:
    from seqlab.studies.compare import CompareResult


def time_modules(result: CompareResult, modules: Modules, x: torch.Tensor, min_run_time: float = 0.2,
                 explicit: bool = False) -> CompareResult:
    """``result`` with the wall time of every library module, and of the explicit machines when ``explicit``.

    Times ``nn.RNN``, SDPA (the call alone), ``nn.MultiheadAttention`` with H heads (the layer), ``nn.LSTM``
    and ``nn.GRU`` on (1, T, d_model) rows, each with :func:`~seqlab.measure.timing.measure_time` (first call
    apart, median and IQR of at least 3 timed blocks) on torch's thread count; the machine's load is read
    once before the first clock and carried by every timing (the busy-machine caveat).

    Args:
        result: the untimed result. modules: the modules it measured. x: (T, d_model) token vectors.
        min_run_time: seconds of timed blocks per module. explicit: also time the explicit machines.

    Returns:
        A copy of ``result`` with its ``time_*`` fields and ``load`` filled in.
    """
    load = machine_load()  # once, before the first clock: the study's own timing must not read as load

    def clock(function, label: str) -> Timing:
        return measure_time(function, label=label, min_run_time=min_run_time, load=load)

    batch = x[None]  # (1, T, d_model)
    rec, att = result.recurrence, result.attention
    with torch.no_grad():
        q, k, v = (t[None, None] for t in modules.attention.project(x))  # (1, 1, T, ·)
    rec = replace(rec, time_library=clock(lambda: modules.rnn(batch), "nn.RNN"),
                  time_explicit=clock(lambda: modules.elman(x), "ElmanRNN (loop)") if explicit else None)
    call = modules.call
    att = replace(att, time_library=clock(lambda: call(q, k, v), "SDPA") if call is not None else None,
                  time_layer=None if modules.heads is None else clock(
                      lambda: modules.heads(batch), f"nn.MultiheadAttention ({modules.heads.heads} heads)"),
                  time_explicit=clock(lambda: modules.attention.attention(q[0, 0], k[0, 0], v[0, 0]),
                                      "Attention (explicit)") if explicit else None)
    gated = tuple(replace(g, time_library=clock(lambda module=modules.gated[g.cell]: module(batch),
                                                 f"nn.{g.cell.upper()}")) for g in result.gated)
    return replace(result, recurrence=rec, attention=att, gated=gated, load=load)
