"""Wall times in ``seqlab compare``: every library module timed in the same interleaved rounds, and who finishes
first only where the rounds decide it (L8).

The lesson's argument for attention is about time (L8), so ``compare`` times each machine at the scope of
its work counts: ``nn.RNN`` against SDPA (the call alone, the lesson's scope) and against
``nn.MultiheadAttention`` with H heads (the layer), plus ``nn.LSTM`` and ``nn.GRU`` (and the explicit machines
when asked). All of them are timed in one :func:`seqlab.measure.rounds.measure_rounds` — every round one block
of each, the order rotating — so the ratio nn.RNN / attention is taken round by round between blocks that met
the same machine, and :func:`seqlab.measure.rounds.decide` with :data:`~seqlab.measure.rounds.MARGIN`
(the margin of ``check`` L8) says who finishes first, that they tie, or that it is not judged. Each time
carries its median and IQR over the rounds (:class:`seqlab.measure.timing.Timing`), its thread count and the
machine's load read before the first clock (:class:`seqlab.measure.timing.MachineLoad`).

Shapes: T tokens, d_model width.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

import torch

from seqlab.measure import rounds as rounds_module
from seqlab.measure.timing import machine_load
from seqlab.studies.compare_scopes import Modules

if TYPE_CHECKING:
    from seqlab.studies.compare import CompareResult

#: Interleaved rounds of compare's timings.
ROUNDS = rounds_module.DEFAULT_ROUNDS
#: The names the machines are timed under (the recurrence's, the call's; the layer's adds its heads).
RNN, SDPA = "nn.RNN", "SDPA"


def layer_name(heads: int) -> str:
    """The name ``nn.MultiheadAttention`` with ``heads`` heads is timed under.

    >>> layer_name(8)
    'nn.MultiheadAttention (8 heads)'
    """
    return f"nn.MultiheadAttention ({heads} heads)"


def time_modules(result: CompareResult, modules: Modules, x: torch.Tensor, min_run_time: float = 0.2,
                 explicit: bool = False, threads: int | None = None,
                 q_k_v: tuple[torch.Tensor, ...] | None = None) -> CompareResult:
    """``result`` with the wall time of every library module, and of the explicit machines when ``explicit``, and
    the decisions nn.RNN against SDPA and against the layer.

    Times ``nn.RNN``, SDPA (the call alone), ``nn.MultiheadAttention`` with H heads (the layer), ``nn.LSTM``
    and ``nn.GRU`` on (1, T, d_model) rows in :data:`ROUNDS` interleaved rounds (first call apart, one warm-up,
    blocks of about ``min_run_time / ROUNDS`` seconds: ``min_run_time`` of timed blocks per machine in all); the
    machine's load is read once before the first clock and carried by every timing (the busy-machine caveat).

    Args:
        result: the untimed result. modules: the modules it measured. x: (T, d_model) token vectors.
        min_run_time: seconds of timed blocks per machine. explicit: also time the explicit machines.
        threads: intra-op CPU threads of the timings (None: :func:`~seqlab.measure.rounds.timing_threads_default`,
            PyTorch's count capped by the cores the load leaves free).
        q_k_v: ``modules.attention.project(x)`` when the caller has it (None: projected here).

    Returns:
        A copy of ``result`` with its ``time_*`` fields, ``time_decisions``, ``threads`` (the timings') and
        ``load`` filled in.
    """
    load = machine_load()  # once, before the first clock: the study's own timing must not read as load
    batch = x[None]  # (1, T, d_model)
    rec, att = result.recurrence, result.attention
    if q_k_v is None:
        with torch.no_grad():
            q_k_v = modules.attention.project(x)  # (T, d_k), (T, d_k), (T, d_v)
    q, k, v = (t[None, None] for t in q_k_v)  # (1, 1, T, ·)
    functions = {RNN: lambda: modules.rnn(batch)}
    if explicit:
        functions["ElmanRNN (loop)"] = lambda: modules.elman(x)
    call = modules.call
    if call is not None:
        functions[SDPA] = lambda: call(q, k, v)
    layer = None if modules.heads is None else layer_name(modules.heads.heads)
    if layer is not None:
        functions[layer] = lambda: modules.heads(batch)
    if explicit:
        functions["Attention (explicit)"] = lambda: modules.attention.attention(q[0, 0], k[0, 0], v[0, 0])
    for g in result.gated:
        functions[f"nn.{g.cell.upper()}"] = lambda module=modules.gated[g.cell]: module(batch)
    measured = rounds_module.measure_rounds(functions, rounds=ROUNDS, block_seconds=min_run_time / ROUNDS,
                                            threads=threads, load=load)

    def timing(name: str):
        return measured.timing(name) if name in measured.per_round else None

    rec = replace(rec, time_library=timing(RNN), time_explicit=timing("ElmanRNN (loop)"))
    att = replace(att, time_library=timing(SDPA), time_layer=None if layer is None else timing(layer),
                  time_explicit=timing("Attention (explicit)"))
    gated = tuple(replace(g, time_library=timing(f"nn.{g.cell.upper()}")) for g in result.gated)
    decisions = tuple(rounds_module.decide(measured, RNN, name, rounds_module.MARGIN)
                      for name in (SDPA, layer) if name is not None and name in measured.per_round)
    return replace(result, recurrence=rec, attention=att, gated=gated, load=load, threads=measured.threads,
                   time_decisions=decisions)
