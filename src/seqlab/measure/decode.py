"""Decoding cost per new token: counted multiplications, time and state bytes of one step at position t (L5, L6).

Generating token t means one ``step`` of a decoder (the step API of :mod:`seqlab.layers.decoding` and of the
mixers in :mod:`seqlab.layers.linear_attention` / :mod:`seqlab.layers.linear_recurrence`). This module prepares
the state a decoder holds after t-1 tokens, then measures that one step:

* multiplications — counted by :func:`seqlab.measure.work.count_multiplications` on the step as it runs, set
  beside the closed form of :func:`step_multiplications` (the lesson's unit: one per multiply-add);
* state bytes — the bytes of the tensors the step hands on (:func:`seqlab.layers.decoding.state_bytes`), so
  the state after token t;
* time — median and IQR of the step by :func:`seqlab.measure.timing.measure_time` (forward only, no_grad).

The state before step t is built from a random prefix of t-1 input vectors: for attention at once (the cache
holds exactly the prefix's keys and values, so projecting the prefix in one product gives the state t-1 steps
would), for the recurrences by running the t-1 steps. Inputs are teacher-forced (given, not sampled).

:func:`generation_span` measures the span (matrix products in a row, :func:`seqlab.measure.trace.measure_span`)
of *generating* T tokens, each step's output fed back as the next input, as a model that writes does:
then attention with a cache waits T steps in a row like the recurrence, although its parallel forward pass
over a given text (training) has a span that does not grow with T.

Machine names (shared with ``seqlab table1 --modern`` and ``seqlab decode``): :data:`MACHINES`, the lesson's
three and each mixer of the registry :mod:`seqlab.layers.mixers` that has a decode machine.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import torch

from seqlab import cost
from seqlab.errors import SeqlabError, require_positive_int
from seqlab.i18n import N_
from seqlab.layers import mixers
from seqlab.layers.decoding import state_bytes
from seqlab.measure.timing import MachineLoad, Timing, measure_time
from seqlab.memory import MemoryEstimate
from seqlab.seeds import input_seed

#: The lesson's machines (:mod:`seqlab.layers.decoding`), always present, before the mixers' machines.
LESSON_MACHINES = mixers.LESSON_MACHINES
#: The machines built on one causal :class:`~seqlab.layers.attention.SelfAttention`.
ATTENTION_MACHINES = ("attention_kv_cache", "attention_static_cache", "attention_no_cache")
#: The attention machines that keep a key/value cache (the growing one, the preallocated one).
CACHE_MACHINES = ("attention_kv_cache", "attention_static_cache")


class _Machines(Sequence[str]):
    """A live, read-only view of the machine names (:func:`seqlab.layers.mixers.machine_names`)."""

    def __init__(self, fixed_state_only: bool) -> None:
        self._fixed_state_only = fixed_state_only

    def __getitem__(self, index):  # type: ignore[override]
        return mixers.machine_names(self._fixed_state_only)[index]

    def __len__(self) -> int:
        return len(mixers.machine_names(self._fixed_state_only))

    def __repr__(self) -> str:
        return repr(mixers.machine_names(self._fixed_state_only))


#: Every decoding machine, in the order tables show them: the lesson's, then the registered mixers' (live).
MACHINES: Sequence[str] = _Machines(fixed_state_only=False)
#: Machines whose state does not grow with t (live).
FIXED_STATE: Sequence[str] = _Machines(fixed_state_only=True)


@dataclass(frozen=True)
class DecodeStep:
    """One decoding step at position t, measured.

    Attributes:
        machine: one of :data:`MACHINES`.
        t: the position generated (1-based): the state before the step held t-1 tokens.
        d_model: input width (every width equals it).
        batch: sequences generated side by side.
        multiplications: counted on the step (the lesson's unit).
        closed_form: :func:`step_multiplications` for the same sizes (None when the machine has none).
        state_bytes: bytes of the state after the step.
        unaccounted: ops that ran without a formula (name -> calls); empty when the count is complete.
        timing: median and IQR of the step in seconds, or None when not timed.
        dtype: the floating dtype, e.g. ``"float32"``.
    """

    machine: str
    t: int
    d_model: int
    batch: int
    multiplications: int
    closed_form: int | None
    state_bytes: int
    unaccounted: dict[str, int] = field(default_factory=dict)
    timing: Timing | None = None
    dtype: str = "float32"


def check_machine(machine: str) -> str:
    """Return ``machine`` if it is one of :data:`MACHINES` and can be built here.

    >>> check_machine("elman")
    'elman'

    Raises:
        SeqlabError: an unknown name (the message lists them), or a mixer whose optional package is not
            installed. A mixer whose own module fails to import raises that ImportError.
    """
    if machine not in MACHINES:
        raise SeqlabError(N_("machine must be one of {machines}; received {machine!r}"), machines=', '.join(MACHINES),
                          machine=machine, parameter="machine")
    if machine not in LESSON_MACHINES and not mixers.mixer(machine).available():
        spec = mixers.mixer(machine)
        raise SeqlabError(N_("the machine {machine!r} needs {requires}, which is not installed"), machine=machine,
                          requires=', '.join(spec.requires), parameter="machine")
    return machine


def available_machines() -> tuple[str, ...]:
    """The machines of :data:`MACHINES` that can be built here, in order.

    >>> available_machines()[:4]
    ('elman', 'attention_kv_cache', 'attention_static_cache', 'attention_no_cache')
    """
    return tuple(m for m in MACHINES if m in LESSON_MACHINES or mixers.mixer(m).available())


def build_decoder(machine: str, d_model: int, *, seed: int = 0, dtype: torch.dtype = torch.float32,
                  capacity: int | None = None) -> Any:
    """A decoder with ``initial_state`` / ``step`` for ``machine``, every width d_model, weights from ``seed``.

    ``attention_static_cache`` is the KV cache preallocated to ``capacity`` rows (the largest position it will
    generate) and written in place; the three attention machines built from one seed share the same weights.

    >>> build_decoder("attention_kv_cache", 8).attention.d_k
    8
    >>> build_decoder("attention_static_cache", 8, capacity=32).capacity
    32

    Args:
        machine: one of :data:`MACHINES`. d_model: every width. seed: the weights. dtype: their dtype.
        capacity: rows of the static cache (required for ``attention_static_cache``, ignored otherwise).

    Raises:
        SeqlabError: unknown or unavailable machine, d_model not an integer >= 1, or the static cache without
            a capacity that is an integer >= 1.
    """
    from seqlab.layers.attention import SelfAttention
    from seqlab.layers.decoding import ElmanDecoder, KVCacheDecoder, NoCacheDecoder
    from seqlab.layers.recurrent import ElmanRNN

    check_machine(machine)
    d_model = require_positive_int("d_model", d_model)
    generator = torch.Generator().manual_seed(seed)
    if machine == "elman":
        return ElmanDecoder(ElmanRNN(d_model, d_model, generator=generator, dtype=dtype)).eval()
    if machine in ATTENTION_MACHINES:
        attention = SelfAttention(d_model, causal=True, generator=generator, dtype=dtype)
        if machine == "attention_static_cache":
            if capacity is None:
                raise SeqlabError(N_("the static KV cache needs a capacity (the largest position it generates), "
                                     "received None"), parameter="capacity")
            return KVCacheDecoder(attention, capacity=capacity).eval()
        return (KVCacheDecoder if machine == "attention_kv_cache" else NoCacheDecoder)(attention).eval()
    mixer = mixers.mixer(machine)
    return mixer.build(d_model, generator=generator, dtype=dtype, **mixer.decode.options)


def step_multiplications(machine: str, t: int, d_model: int, batch: int = 1) -> int | None:
    """Closed form of one decoding step's multiplications at position t, every width d = d_model.

    * ``elman``: d² + d² (W_hh h_{t-1} and W_xh x_t, L5);
    * ``attention_kv_cache``: 3d² (q_t, k_t, v_t) + t·d (scores q_t·k_j) + t·d (mix of t values) = 3d² + 2td;
    * ``attention_static_cache``: the same 3d² + 2td (its step reads the t rows written, not its capacity;
      writing row t in place is a copy, no multiplication);
    * ``attention_no_cache``: d² (q_t) + 2·t·d² (all t keys and values again) + 2td = d² + 2td² + 2td;
    * ``linear_attention``: 3d² (q, k, v) + d² (its output projection W_o) + 2d² + d (update and read of the
      d×d state S and of z) = 6d² + d, from :func:`seqlab.cost.linear_attention_step_multiplications`;
    * ``selective_recurrence`` (d_state = d): W_Δ x_t, W_u x_t, W_C x_t and W_o (c_t ⊙ h_t) = 4d², from
      :func:`seqlab.cost.selective_recurrence_step_multiplications` (the element-wise
      update h_t = a_t ⊙ h_{t-1} + b_t is not a product);
    * any other mixer machine: its :attr:`seqlab.layers.mixers.DecodeMachine.step_multiplications`.

    Scope: each machine's own layer. Linear attention's includes its output projection W_o; seqlab's
    :class:`~seqlab.layers.attention.SelfAttention` (both attention decoders) has none.

    All times ``batch``. Biases, tanh, softmax and the 1/sqrt(d) scaling are not multiplications here. The one
    convention of every count (:mod:`seqlab.cost`; docs: engine.md, "One convention per count"): element-wise
    products inside a step are left out, outer products and products summed over a window (a depthwise
    convolution) are counted.

    >>> step_multiplications("attention_kv_cache", 16, 256)  # 3 * 256**2 + 2 * 16 * 256
    204800

    Raises:
        SeqlabError: unknown machine or a size that is not an integer >= 1.

    Source: lesson claims L5 (a step costs d_h² + d_h·d_model) and L6 (a query over t keys: t(d_k + d_v)).
    """
    check_machine(machine)
    t, d, batch = (require_positive_int(name, value) for name, value in (("t", t), ("d_model", d_model),
                                                                        ("batch", batch)))
    if machine == "elman":
        return batch * cost.recurrence_multiplications(1, d, d)
    if machine in CACHE_MACHINES:
        return batch * cost.kv_cache_step_multiplications(t, d, d, d)
    if machine == "attention_no_cache":
        return batch * cost.no_cache_step_multiplications(t, d, d, d)
    formula = mixers.mixer(machine).decode.step_multiplications
    return None if formula is None else int(formula(d, batch))


def estimate_decode_bytes(machine: str, t: int, d_model: int, batch: int = 1,
                          dtype: torch.dtype = torch.float32) -> MemoryEstimate:
    """Generous estimate of the memory one measured step at position t needs (for a refusal before allocating).

    Attention: the prefix, its keys and values, and their copies while the cache grows: 6·B·t·d values.
    Recurrences: their weights and states, a few d² values (the prefix is drawn one vector at a time).

    >>> estimate_decode_bytes("attention_kv_cache", 1024, 256).total_bytes  # 6*1024*256*4 + 8*256**2*4
    8388608

    Raises:
        SeqlabError: unknown machine or a size that is not an integer >= 1.
    """
    check_machine(machine)
    itemsize = torch.empty((), dtype=dtype).element_size()
    weights = 8 * d_model * d_model * itemsize
    if machine in FIXED_STATE:
        return MemoryEstimate(weights + 8 * batch * d_model * d_model * itemsize, f"weights of width {d_model}")
    return MemoryEstimate(6 * batch * t * d_model * itemsize + weights, f"a cache of {t} positions")


def prepared_state(decoder: Any, t: int, batch: int, generator: torch.Generator,
                   dtype: torch.dtype) -> tuple[torch.Tensor, ...]:
    """The state ``decoder`` holds after reading t-1 random input vectors (seeded by ``generator``).

    Raises:
        SeqlabError: t is not an integer >= 1.
    """
    t = require_positive_int("t", t)
    d_model = decoder.d_model
    with torch.no_grad():
        if hasattr(decoder, "state_from_prefix"):  # attention: the prefix's keys and values at once
            prefix = torch.randn(batch, t - 1, d_model, generator=generator, dtype=dtype)  # (B, t-1, d_model)
            return decoder.state_from_prefix(prefix)
        state = decoder.initial_state(batch, dtype=dtype)
        for _ in range(t - 1):  # a fixed state: the t-1 steps themselves, one vector at a time
            _, state = decoder.step(torch.randn(batch, d_model, generator=generator, dtype=dtype), state)
        return state


@dataclass(frozen=True)
class PreparedStep:
    """The step that generates position t, ready to run: a decoder, the state after t-1 tokens and x_t.

    Calling it runs ``decoder.step(x_t, state)`` (a static cache writes row t into the same buffers each call,
    so every call is the same step).

    Attributes:
        machine: one of :data:`MACHINES`. t: the position generated (1-based).
        decoder: the decoder. x_t: the new input (B, d_model). state: the state after t-1 tokens.
    """

    machine: str
    t: int
    decoder: Any
    x_t: torch.Tensor
    state: tuple[torch.Tensor, ...]

    def __call__(self) -> tuple[torch.Tensor, tuple[torch.Tensor, ...]]:
        return self.decoder.step(self.x_t, self.state)


def prepare_decode_step(machine: str, t: int, *, d_model: int, batch: int = 1, dtype: torch.dtype = torch.float32,
                        seed: int = 0, decoder: Any = None) -> PreparedStep:
    """The step at position t of ``machine``: its decoder (built unless given), state after t-1 random tokens, x_t.

    >>> prepare_decode_step("attention_static_cache", 4, d_model=8).state[0].shape  # capacity t when built here
    torch.Size([1, 4, 8])

    Args:
        machine: one of :data:`MACHINES`. t: the position (1-based). d_model: every width. batch: sequences side
            by side. dtype: weights and inputs. seed: weights and the random prefix.
        decoder: a decoder already built for ``machine`` (None: built here; a static cache then has capacity t).

    Raises:
        SeqlabError: unknown machine, or a size that is not an integer >= 1.
    """
    from seqlab.measure.switches import one_thread

    check_machine(machine)
    t, batch = require_positive_int("t", t), require_positive_int("batch", batch)
    if decoder is None:
        decoder = build_decoder(machine, d_model, seed=seed, dtype=dtype, capacity=t)
    generator = torch.Generator().manual_seed(input_seed(seed, t))
    # Preparing the state runs t - 1 small steps: on one thread, as the engine counts and traces (a second OpenMP
    # thread waiting for a busy core made each tanh of a few hundred numbers ~100× slower on a loaded machine).
    with one_thread():
        state = prepared_state(decoder, t, batch, generator, dtype)
        x_t = torch.randn(batch, decoder.d_model, generator=generator, dtype=dtype)  # (B, d_model)
    return PreparedStep(machine, t, decoder, x_t, state)


def count_decode_step(prepared: PreparedStep) -> DecodeStep:
    """Count the multiplications of a prepared step and weigh the state it hands on (no timing).

    >>> step = count_decode_step(prepare_decode_step("attention_static_cache", 16, d_model=8))
    >>> step.multiplications, step.closed_form, step.state_bytes  # 3*8*8 + 2*16*8; 2*16*8*4 + 8 (the row count)
    (448, 448, 1032)

    Raises:
        SeqlabError: see :func:`step_multiplications`.
    """
    from seqlab.measure.switches import one_thread
    from seqlab.measure.work import count_multiplications

    decoder, batch = prepared.decoder, prepared.x_t.shape[0]
    with one_thread(), torch.no_grad():
        counted = count_multiplications(decoder.step, prepared.x_t, prepared.state)
        _y, after = prepared()
    return DecodeStep(machine=prepared.machine, t=prepared.t, d_model=decoder.d_model, batch=batch,
                      multiplications=counted.multiplications,
                      closed_form=step_multiplications(prepared.machine, prepared.t, decoder.d_model, batch),
                      state_bytes=state_bytes(after), unaccounted=dict(counted.unaccounted),
                      dtype=str(prepared.x_t.dtype).removeprefix("torch."))


def measure_decode_step(machine: str, t: int, *, d_model: int, batch: int = 1, time: bool = True,
                        dtype: torch.dtype = torch.float32, seed: int = 0, min_run_time: float = 0.05,
                        threads: int | None = None, load: MachineLoad | None = None,
                        decoder: Any = None) -> DecodeStep:
    """Measure the step that generates position t: multiplications, state bytes and (optionally) time.

    This times one machine alone; ``seqlab decode`` times all its machines at a position in interleaved rounds
    (:func:`seqlab.measure.rounds.measure_rounds`), the only timing that compares them.

    >>> step = measure_decode_step("attention_kv_cache", 16, d_model=8, time=False)
    >>> step.multiplications, step.closed_form, step.state_bytes  # 3*8*8 + 2*16*8; 2 * 16 * 8 * 4 bytes
    (448, 448, 1024)

    Args:
        machine: one of :data:`MACHINES`.
        t: position of the new token (1-based; the state holds t-1 tokens before the step).
        d_model: every width (d_h = d_k = d_v = d_model).
        batch: sequences generated side by side.
        time: also time the step (median and IQR, seconds).
        dtype: floating dtype of weights and inputs.
        seed: seeds the weights and the random prefix.
        min_run_time: seconds of timed blocks (see :func:`~seqlab.measure.timing.measure_time`).
        threads: CPU threads while timing (None keeps torch's setting).
        load: the machine's load to record with the time (None reads it now).
        decoder: a decoder already built for ``machine`` and ``d_model`` (reused across positions); a static
            cache built here has capacity t.

    Returns:
        A :class:`DecodeStep`.

    Raises:
        SeqlabError: unknown machine, or a size that is not an integer >= 1.
    """
    prepared = prepare_decode_step(machine, t, d_model=d_model, batch=batch, dtype=dtype, seed=seed, decoder=decoder)
    step = count_decode_step(prepared)
    if not time:
        return step
    timing = measure_time(prepared, label=f"{machine} t={t}", threads=threads, min_run_time=min_run_time,
                          load=load)
    return replace(step, timing=timing)


def generate(decoder: Any, first: torch.Tensor, steps: int) -> torch.Tensor:
    """Generate ``steps`` tokens, each step's output fed back as the next input (B, d_model) -> (B, steps, d).

    A model that writes samples token t+1 from its output at t; here the output vector itself is fed back
    (same width), which keeps the one dependence that matters: step t+1 cannot start before step t ends.

    >>> generate(build_decoder("elman", 4), torch.zeros(1, 4), 3).shape
    torch.Size([1, 3, 4])

    Raises:
        SeqlabError: steps is not an integer >= 1, or the decoder's output width differs from its input's.
    """
    steps = require_positive_int("steps", steps)
    d_out = getattr(decoder, "d_out", decoder.d_model)  # the mixers map d_model back to d_model
    if d_out != decoder.d_model:
        raise SeqlabError(N_("feeding outputs back needs d_out == d_model, received {d_out} and {d_model}"),
                          d_out=d_out, d_model=decoder.d_model)
    state = decoder.initial_state(first.shape[0], dtype=first.dtype)
    x_t, outputs = first, []
    for _ in range(steps):
        x_t, state = decoder.step(x_t, state)  # (B, d_model): the output is the next input
        outputs.append(x_t)
    return torch.stack(outputs, dim=1)  # (B, steps, d_model)


def generation_span(machine: str, T: int, d_model: int, seed: int = 0) -> int:
    """Matrix products in a row while generating T tokens with ``machine`` (outputs fed back).

    >>> [generation_span("attention_kv_cache", T, 4) for T in (4, 8)]  # 3 products per token: q_t, q_t·K, α·V
    [12, 24]

    Raises:
        SeqlabError: unknown machine or a size that is not an integer >= 1.

    Source: lesson claims L1 (T steps in a row) and L2 (three operations in a row whatever T is).
    """
    from seqlab.measure.trace import measure_span

    decoder = build_decoder(machine, d_model, seed=seed, capacity=T)  # a static cache holds the T tokens
    first = torch.randn(1, d_model, generator=torch.Generator().manual_seed(seed))
    return measure_span(generate, decoder, first, T).products


def training_span(T: int, d_model: int, seed: int = 0) -> int:
    """Matrix products in a row of causal self-attention's parallel forward over T given tokens (training).

    >>> [training_span(T, 4) for T in (4, 8)]  # projections, Q K^T, A V: 3 whatever T is
    [3, 3]

    Raises:
        SeqlabError: a size that is not an integer >= 1.
    """
    from seqlab.measure.trace import measure_span

    T = require_positive_int("T", T)
    attention = build_decoder("attention_kv_cache", d_model, seed=seed).attention
    x = torch.randn(1, T, d_model, generator=torch.Generator().manual_seed(seed))
    return measure_span(attention, x).products
