"""Work at three scopes in ``seqlab compare``: closed form beside an independent count, and who wins where (L5–L7).

* **lesson** — L5 against L6: the recurrence with W_xh and W_hh, the attention call without Q, K, V;
* **layer** — both layers with all their weights: W_xh, W_hh against W_Q, W_K, W_V and W_O (one head, and
  H heads in ``nn.MultiheadAttention``; the total does not depend on H);
* **kernels** — what the library modules really run on this CPU: ``nn.RNN``, oneDNN's fused ``nn.LSTM``,
  ``nn.GRU``, ``nn.MultiheadAttention``'s fast path and SDPA's fused CPU kernel.

Every *counted* figure comes from another source than the closed form it sits beside, and says which
(:attr:`ScopeCount.source`): the explicit machines run ``mm``/``bmm``/``addmm``, counted by PyTorch's own
flop registry (``"pytorch"``); a fused CPU kernel has no formula in that registry, so what ran is counted by
seqlab's formula (``"seqlab"``, or ``"mixed"``) and a second, independent count is taken on the meta device,
where the same module decomposes into ``addmm``/``bmm`` (:func:`seqlab.measure.work.count_on_meta`).

The verdict of each scope (:attr:`Scope.winner`) is read from the *counted* figures, so a wrong count
changes it. With equal widths d: lesson ratio T/d (crossover T = d, L7); layer ratio 2 + T/d, attention
more at every T (its four projections alone cost 4Td², the recurrence 2Td²).

Shapes: T tokens, d_model, d_h, d_k, d_v widths; H heads. Unit: multiplications (multiply-adds).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from fractions import Fraction

import torch
import torch.nn.functional as F

from seqlab import cost, scopes
from seqlab.errors import Message, Worded
from seqlab.i18n import N_
from seqlab.measure.work import WorkCount, count_multiplications, count_on_meta

#: Heads of the multi-head layer when d_model allows (the paper's H = 8).
HEADS = 8
#: The scopes, in the order shown.
SCOPES = scopes.SCOPES

#: seqlab's own attention call, written out (a word, not a library module's name), as the work tables name it.
_EXPLICIT_ATTENTION = Worded("Attention, explicit", Message(N_("{name}, explicit"), name=Message(N_("Attention"))))


@dataclass(frozen=True)
class ScopeCount:
    """One machine's multiplications at one scope: closed form, counted value and where the count comes from.

    Attributes:
        machine: ``"rnn"``, ``"attention"``, ``"attention_heads"``, ``"attention_call"``, ``"lstm"`` or ``"gru"``.
        module: what was counted, e.g. ``"ElmanRNN, loop"``, ``"nn.MultiheadAttention, 8 heads"``.
        closed_form: multiplications by the closed form of this scope (:mod:`seqlab.cost`, :mod:`seqlab.scopes`).
        counted: multiplications counted while the module ran on ``device``.
        source: ``"pytorch"`` (PyTorch's flop registry only), ``"seqlab"`` (seqlab's formula for a fused kernel
            only) or ``"mixed"`` (:attr:`seqlab.measure.work.WorkCount.source`).
        ops: the ops that did the counted work (``"aten.addmm"``, ``"aten._native_multi_head_attention"``...).
        device: ``"cpu"`` (what ran) or ``"meta"`` (PyTorch's decomposition, nothing computed).
        independent: when ``source`` is not ``"pytorch"``, the same module counted on the meta device by
            PyTorch's own formulas; None when ``counted`` is already independent.
        independent_source: that count's source (``"pytorch"`` when it is independent of seqlab).
        unaccounted: ops that ran with no formula (empty: the count is complete).
        agrees: ``counted`` (and ``independent``, when present) equal the closed form (computed).
    """

    machine: str
    module: str
    closed_form: int
    counted: int
    source: str
    ops: tuple[str, ...]
    device: str
    independent: int | None = None
    independent_source: str | None = None
    unaccounted: tuple[str, ...] = ()
    agrees: bool = field(init=False)

    def __post_init__(self) -> None:
        agrees = self.counted == self.closed_form and self.independent in (None, self.closed_form)
        object.__setattr__(self, "agrees", agrees)


@dataclass(frozen=True)
class Scope:
    """Both machines at one scope, and which does fewer multiplications there.

    Attributes:
        name: ``"lesson"``, ``"layer"`` or ``"kernels"``.
        recurrence: the Elman recurrence's count.
        attention: attention's count at this scope (lesson: the call; layer: one head with Q, K, V and W_O;
            kernels: ``nn.MultiheadAttention``'s fast path); None where no such module can be built.
        others: the other machines at this scope (H heads, the SDPA call, LSTM, GRU).
        crossover: the T at which the closed forms are equal at this scope; None when attention costs more
            at every T (or there is no attention entry).
        ratio: attention / recurrence by the *counted* figures (computed); None without attention.
        winner: ``"attention"`` or ``"recurrence"`` (fewer counted multiplications), ``"tie"``, or None
            without attention (computed).
    """

    name: str
    recurrence: ScopeCount
    attention: ScopeCount | None
    others: tuple[ScopeCount, ...]
    crossover: Fraction | None
    ratio: Fraction | None = field(init=False)
    winner: str | None = field(init=False)

    def __post_init__(self) -> None:
        ratio = winner = None
        if self.attention is not None:
            ratio = Fraction(self.attention.counted, self.recurrence.counted)
            winner = "attention" if ratio < 1 else "recurrence" if ratio > 1 else "tie"
        object.__setattr__(self, "ratio", ratio)
        object.__setattr__(self, "winner", winner)

    def get(self, machine: str) -> ScopeCount | None:
        """The count of ``machine`` at this scope, or None when it has none."""
        entries = (self.recurrence, self.attention, *self.others)
        return next((entry for entry in entries if entry is not None and entry.machine == machine), None)


def scope_count(machine: str, module: str, closed_form: int, counted: WorkCount,
                independent: Callable[[], WorkCount] | WorkCount | None = None) -> ScopeCount:
    """A :class:`ScopeCount` from a :class:`WorkCount`; ``independent`` (a count or a thunk) is taken only
    when ``counted`` owes something to seqlab's formulas."""
    second = None
    if counted.source != "pytorch" and independent is not None:
        second = independent() if callable(independent) else independent
    return ScopeCount(machine=machine, module=module, closed_form=closed_form, counted=counted.multiplications,
                      source=counted.source, ops=tuple(sorted(op for op, n in counted.by_op.items() if n)),
                      device=counted.device, independent=None if second is None else second.multiplications,
                      independent_source=None if second is None else second.source,
                      unaccounted=tuple(sorted(counted.unaccounted)))


class SelfAttentionLayer(torch.nn.Module):
    """``nn.MultiheadAttention`` as a self-attention layer x ↦ MHA(x, x, x) without weights (its fast path).

    >>> layer = SelfAttentionLayer(16, 8, torch.Generator().manual_seed(0))
    >>> layer(torch.randn(1, 5, 16)).shape
    torch.Size([1, 5, 16])
    """

    def __init__(self, d_model: int, heads: int, generator: torch.Generator) -> None:
        super().__init__()
        self.heads = heads
        self.mha = torch.nn.MultiheadAttention(d_model, heads, batch_first=True, device="meta").to_empty(
            device="cpu")
        bound = d_model ** -0.5
        with torch.no_grad():
            for name, parameter in self.mha.named_parameters():
                if "weight" in name:
                    parameter.uniform_(-bound, bound, generator=generator)
                else:
                    parameter.zero_()
        self.eval()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """(B, T, d_model) -> (B, T, d_model)."""
        return self.mha(x, x, x, need_weights=False)[0]


def heads_for(d_model: int, d_k: int, d_v: int, score: str) -> int | None:
    """Heads of the ``nn.MultiheadAttention`` layer: :data:`HEADS` when it divides d_model, else 2 or 1 when
    they do; None when the module cannot be this attention (it needs d_k = d_v = d_model and the scaled
    dot score).

    >>> heads_for(512, 512, 512, "scaled_dot"), heads_for(6, 6, 6, "scaled_dot"), heads_for(16, 8, 16, "scaled_dot")
    (8, 2, None)
    """
    if d_k != d_model or d_v != d_model or score != "scaled_dot":
        return None
    return next(h for h in (HEADS, 2, 1) if d_model % h == 0)


@dataclass(frozen=True)
class Modules:
    """The modules ``compare`` counts at the three scopes (built by the study on the same seed)."""

    elman: torch.nn.Module
    rnn: torch.nn.RNN
    attention: torch.nn.Module  # seqlab's SelfAttention (explicit)
    output: torch.nn.Linear  # W_O: d_v -> d_model, for the layer scope
    heads: SelfAttentionLayer | None
    gated: dict[str, torch.nn.Module]
    call: Callable | None  # SDPA for the dot scores, None otherwise


def library_attention(score: str) -> Callable | None:
    """SDPA for the dot scores (scale 1 for ``dot``), None for scores SDPA cannot compute."""
    if score == "scaled_dot":
        return F.scaled_dot_product_attention
    if score == "dot":
        return lambda q, k, v: F.scaled_dot_product_attention(q, k, v, scale=1.0)
    return None


def build_modules(elman: torch.nn.Module, attention: torch.nn.Module, gated: dict[str, torch.nn.Module], score: str,
                  output_generator: torch.Generator, heads_generator: torch.Generator) -> Modules:
    """The library modules counted and timed beside the explicit machines: ``nn.RNN`` with the Elman loop's
    weights, W_O (d_v → d_model, U(±1/√d_v)), the ``nn.MultiheadAttention`` layer when the widths allow it,
    the gated layers as given, and SDPA for the dot scores."""
    d_model, d_k, d_v = attention.d_model, attention.d_k, attention.d_v
    heads = heads_for(d_model, d_k, d_v, score)
    output = torch.nn.Linear(d_v, d_model, bias=False, device="meta").to_empty(device="cpu")
    with torch.no_grad():
        output.weight.uniform_(-d_v ** -0.5, d_v ** -0.5, generator=output_generator)
    return Modules(elman=elman, rnn=elman.to_torch(batch_first=True).eval(), attention=attention, output=output,
                   gated=gated, call=library_attention(score),
                   heads=None if heads is None else SelfAttentionLayer(d_model, heads, heads_generator))


#: Lengths a recurrent layer is counted at on meta before its count is extended to T (see meta_count_by_steps).
STEP_LENGTHS = (2, 3, 4)


def meta_count_by_steps(module: torch.nn.Module, batch: torch.Tensor) -> WorkCount:
    """``count_on_meta(module, batch)`` for a recurrent layer, from its counts at 2, 3 and 4 steps.

    On meta tensors no value exists, so the ops ``nn.LSTM`` / ``nn.GRU`` run can depend on T only through
    shapes: one input product over all T rows (T d_model 4 d_h multiplications) and, per step, the same cell
    ops on (1, d_h) rows. Every field counted is then a + b T. It is counted at T = 2, 3, 4 and extended to
    T when the three counts lie on one line in every field (total, per op, per module and calls), otherwise
    (or for T <= 4) the layer is counted whole at T. The same numbers as the whole count
    (tests/test_compare_speed_routes.py compares them), without running 4 T meta ops in Python.

    >>> layer = torch.nn.LSTM(12, 128, batch_first=True)
    >>> meta_count_by_steps(layer, torch.randn(1, 250, 12)).multiplications  # 4 * 250 * 128 * (12 + 128)
    17920000

    Args:
        module: a batch-first recurrent layer (its weights do not matter on meta).
        batch: (1, T, d_model) input.

    Returns:
        A :class:`~seqlab.measure.work.WorkCount` on ``meta``.
    """
    T = batch.shape[1]
    if T <= STEP_LENGTHS[-1]:
        return count_on_meta(module, batch)
    counts = [count_on_meta(module, batch[:, :t]) for t in STEP_LENGTHS]
    fixed = [(c.padded_multiplications, c.device, dict(c.unaccounted)) for c in counts]  # must not change
    mappings = [(c.by_op, c.by_module, c.calls, c.arithmetic_by_op, c.arithmetic_unaccounted, c.decomposed)
                for c in counts]
    keys = [tuple(tuple(sorted(m)) for m in ms) for ms in mappings]

    def on_line(a: int, b: int, c: int) -> bool:
        return b - a == c - b

    linear = (fixed[0] == fixed[1] == fixed[2] and fixed[0][0] is None and keys[0] == keys[1] == keys[2]
              and on_line(*(c.multiplications for c in counts)) and on_line(*(c.arithmetic_flops for c in counts))
              and on_line(*(c.masked_multiplications for c in counts))
              and all(on_line(*(ms[i][k] for ms in mappings)) for i in range(3) for k in mappings[0][i]))
    if not linear:
        return count_on_meta(module, batch)
    first, second = counts[0], counts[1]

    def extend(a: int, b: int) -> int:
        return a + (T - STEP_LENGTHS[0]) * (b - a)

    def extend_all(i: int) -> dict[str, int]:
        return {k: extend(mappings[0][i][k], mappings[1][i][k]) for k in mappings[0][i]}

    return replace(first, multiplications=extend(first.multiplications, second.multiplications),
                   by_op=extend_all(0), by_module=extend_all(1), calls=extend_all(2),
                   arithmetic_flops=extend(first.arithmetic_flops, second.arithmetic_flops),
                   arithmetic_by_op=extend_all(3), arithmetic_unaccounted=extend_all(4), decomposed=extend_all(5),
                   masked_multiplications=extend(first.masked_multiplications, second.masked_multiplications))


def count_gated(gated: dict[str, torch.nn.Module], x: torch.Tensor) -> dict[str, WorkCount]:
    """Each gated layer counted on the CPU as it runs by default (kernels scope; layer scope where it decomposes there)
    on x (T, d_model) as one batch row.

    >>> lstm = torch.nn.LSTM(3, 4, batch_first=True)
    >>> count_gated({"lstm": lstm}, torch.randn(5, 3))["lstm"].multiplications  # 4 gates · 5 · 4 · (3 + 4)
    560
    """
    batch = x[None]  # (1, T, d_model)
    return {cell: count_multiplications(module, batch) for cell, module in gated.items()}


def measure_scopes(modules: Modules, x: torch.Tensor, score: str, counted_elman: WorkCount,
                   counted_call: WorkCount, counted_rnn: WorkCount, counted_sdpa: WorkCount | None,
                   widths: tuple[int, int, int, int], q_k_v: tuple[torch.Tensor, ...],
                   gated_cpu: dict[str, WorkCount] | None = None) -> tuple[Scope, ...]:
    """Count every machine at the three scopes and pair each count with its closed form.

    Args:
        modules: the modules to count.
        x: (T, d_model) token vectors.
        score: attention score (its closed form at lesson scope).
        counted_elman: the explicit Elman loop counted on the CPU (``"pytorch"``: one ``mm`` per weight per step).
        counted_call: the explicit attention call counted on Q, K, V (lesson scope, ``"pytorch"``).
        counted_rnn: ``nn.RNN`` counted on the CPU (kernels scope).
        counted_sdpa: SDPA counted on (1, 1, T, ·) Q, K, V (kernels scope), None for scores SDPA lacks.
        widths: (d_model, d_h, d_k, d_v).
        q_k_v: the projected (T, d_k), (T, d_k), (T, d_v) rows, for the SDPA count on meta.
        gated_cpu: :func:`count_gated` of the same modules and x when the caller has it (None: counted here).

    Returns:
        The three :class:`Scope` rows, lesson first.
    """
    d_model, d_h, d_k, d_v = widths
    T, batch = x.shape[0], x[None]  # (1, T, d_model)
    rnn_closed = cost.recurrence_multiplications(T, d_model, d_h)
    recurrence = scope_count("rnn", Worded("ElmanRNN, loop", Message(N_("{name}, loop"), name="ElmanRNN")), rnn_closed,
                             counted_elman)
    gated_closed = {cell: cost.gated_recurrence_multiplications(T, d_model, d_h, cell) for cell in modules.gated}
    gated_cpu = count_gated(modules.gated, x) if gated_cpu is None else gated_cpu
    # outside the kernels' scope a gated layer is counted by PyTorch's formulas: on the CPU when its kernel
    # decomposes there (GRU), on the meta device when it is fused (oneDNN's LSTM)
    gated_layer = tuple(scope_count(cell, f"nn.{cell.upper()}", gated_closed[cell], counted)
                        if counted.source == "pytorch" else
                        scope_count(cell, f"nn.{cell.upper()}", gated_closed[cell],
                                    meta_count_by_steps(module, batch))
                        for (cell, module), counted in zip(modules.gated.items(), gated_cpu.values()))
    independent = {entry.machine: entry for entry in gated_layer}
    call_closed = cost.scored_attention_multiplications(score, T, d_k, d_v)
    lesson = Scope("lesson", recurrence, scope_count("attention", _EXPLICIT_ATTENTION, call_closed,
                                                     counted_call), gated_layer,
                   _crossover(lambda t: cost.scored_attention_multiplications(score, t, d_k, d_v),
                              lambda t: cost.recurrence_multiplications(t, d_model, d_h)))

    def layer_closed(t: int) -> int:
        return (cost.projection_multiplications(t, d_model, d_k, d_v)
                + cost.scored_attention_multiplications(score, t, d_k, d_v)
                + cost.output_projection_multiplications(t, d_v, d_model))

    explicit_layer = count_multiplications(lambda rows: modules.output(modules.attention(rows)[0]), x)
    heads_layer, heads_kernel = (), None
    if modules.heads is not None:
        heads_meta = count_on_meta(modules.heads, batch)
        heads = modules.heads.heads
        label = Worded(f"nn.MultiheadAttention, {heads} heads", Message(
            N_("{name}, 1 head") if heads == 1 else N_("{name}, {count} heads"), name="nn.MultiheadAttention",
            count=heads))
        heads_layer = (scope_count("attention_heads", label, layer_closed(T), heads_meta),)
        heads_kernel = scope_count("attention_heads", label, layer_closed(T),
                                   count_multiplications(modules.heads, batch), heads_meta)
    layer = Scope("layer", recurrence, scope_count("attention", Worded("SelfAttention + W_O, explicit", Message(
        N_("{name}, explicit"), name="SelfAttention + W_O")),
                                                   layer_closed(T), explicit_layer),
                  heads_layer + gated_layer,
                  _crossover(layer_closed, lambda t: cost.recurrence_multiplications(t, d_model, d_h)))
    kernels_others = []
    if counted_sdpa is not None and modules.call is not None:
        heads_qkv = tuple(t[None, None] for t in q_k_v)  # (1, 1, T, ·)
        kernels_others.append(scope_count("attention_call", "SDPA", call_closed,
                                          counted_sdpa, lambda: count_on_meta(modules.call, *heads_qkv)))
    for cell, counted in gated_cpu.items():
        kernels_others.append(_with_independent(scope_count(cell, f"nn.{cell.upper()}", gated_closed[cell], counted),
                                                independent[cell]))
    kernels = Scope("kernels", scope_count("rnn", "nn.RNN", rnn_closed, counted_rnn,
                                           lambda: count_on_meta(modules.rnn, batch)),
                    heads_kernel, tuple(kernels_others), layer.crossover if heads_kernel is not None else None)
    return lesson, layer, kernels


def _with_independent(entry: ScopeCount, meta: ScopeCount) -> ScopeCount:
    """``entry`` with ``meta``'s count as its independent one, when ``entry`` owes something to seqlab."""
    if entry.source == "pytorch":
        return entry
    return replace(entry, independent=meta.counted, independent_source=meta.source)


def _crossover(attention: Callable[[int], int], recurrence: Callable[[int], int]) -> Fraction | None:
    """The T where a·T² + b·T (attention) meets c·T (recurrence), from the closed forms at T = 1 and 2; None
    when attention costs more at every T ≥ 1.

    >>> _crossover(lambda t: 2 * 512 * t * t, lambda t: 2 * 512 * 512 * t)  # L7: T = d
    Fraction(512, 1)
    """
    one, two = attention(1), attention(2)
    a = Fraction(two - 2 * one, 2)
    b, c = one - a, recurrence(1)
    return (c - b) / a if a > 0 and c > b else None
