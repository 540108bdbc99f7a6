"""One family's row of the zoo: Table 1's three columns and the decode columns, measured on the family's own code
(issue 40; L1, L2, L5–L8, L10).

A family is a ``transformers`` config (a model type's defaults, or a user's ``config.json``). Its tiny twin
(:func:`seqlab.zoo.shrink.shrink_config`: float64, eval, eager attention, seeded random weights) is measured by
the engine; the config at its real size is read on the meta device, shapes only.

Tiny, prefill (x = ``inputs_embeds`` (1, T, d), T in :func:`prefill_lengths`):

* work: multiplications of the forward pass (:func:`seqlab.measure.traced_pass.measure_pass`, one multiplication
  per multiply-add), and per token (÷ T);
* span: the longest chain of ops (and of matrix products) in the pass;
* paths: the least number of matrix products from each source position to each output position; the maximum
  over connected pairs, and the two-end path (source 0 to output T − 1 for a causal model, to output 0 from the last
  source for an encoder: the path across the whole sequence);
* each grown in T by the form :func:`seqlab.fit.fit_growth` chooses (``1``, ``log T``, ``T``, ``T²``…), as
  ``table1`` fits its columns; exact, or a bound whose reason is named (ops without a rule, ops without a formula);
* order: :func:`seqlab.measure.order.measure_order` on x — equivariant, not, or cannot tell.

Tiny, decode (a causal family only): at each position t of :data:`DECODE_POSITIONS` the model reads t − 1
positions into its own cache, then one more position through it; the step's multiplications
(:func:`seqlab.measure.work.count_multiplications`) and the cache's bytes after it
(:func:`seqlab.measure.cache_state.read_cache_state`: a walk of the cache object, each storage once, split by kind)
are grown in t by :func:`seqlab.fit.classify_growth` (constant, linear, constant + linear, capped, other), each
kind of state apart and the whole named by its parts (:func:`seqlab.fit.sum_of_growths`).

Real size (the config's own sizes, its own dtype, or float32 when it names none): the model is built on the meta
device (nothing allocated), and the work of a prefill of :data:`REAL_T` positions, the work of one decode step at
t = :data:`REAL_T` and the cache's bytes there are read from shapes alone (:func:`seqlab.measure.work.count_multiplications`
on meta tensors; :func:`~seqlab.measure.cache_state.read_cache_state` of the meta cache). A family whose code needs
values (a router that picks experts by value, a data-dependent mask) cannot run on meta: that is named.

The kind of a family (:func:`kind_of`) is read from what was measured: an output that depends on a later
position is an encoder; the decode cache's kinds say the mixer (keys and values of every position: full
attention; of a window: windowed or local; a convolution window or a recurrent state alone: linear or
state-space; both: hybrid); more than one expert in the config makes a full-attention or windowed family a
mixture of experts. Where the decode could not be measured, the config's own words (``layer_types``,
``sliding_window``, state sizes) say it, and the row says so (``kind_from``).

Nothing is printed; every figure is measured or absent, and an absent figure names why (:attr:`ZooRow.missing`).
Shape letters: T positions of a prefill, t decode position, d the input embedding's width.
"""

from __future__ import annotations

import inspect
import re
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import Tensor

from seqlab.measure.modes import EngineMode
from seqlab.zoo import shrink

__all__ = ["DECODE_POSITIONS", "KINDS", "REAL_T", "Decode", "Prefill", "RealSize", "ZooRow", "kind_of",
           "measure_config", "measure_family", "prefill_lengths", "row_from_dict"]

#: The kinds of family, in the order the catalogue groups them: full attention, windowed or local attention, linear
#: or state-space (a fixed state), hybrid (a state beside attention keys), mixture of experts, encoder.
KINDS = ("full", "windowed", "linear", "hybrid", "moe", "encoder")
#: Prefill lengths asked for (each rounded up to a multiple of the family's chunks: :func:`prefill_lengths`).
PREFILL_LENGTHS = (4, 8, 16)
#: Decode positions t (the tiny windows are 3 wide: t = 2 sees a window fill, t >= 4 a full one).
DECODE_POSITIONS = (2, 4, 8, 12)
#: Positions of the real size's prefill and decode step (shapes only).
REAL_T = 4096
#: Config attributes that count experts (the shrinker's names).
EXPERT_NAMES = ("num_experts", "num_local_experts", "n_routed_experts", "moe_num_experts", "num_experts_total")


@dataclass(frozen=True)
class Prefill:
    """Table 1's columns of the tiny twin at each prefill length.

    Attributes:
        T: the lengths (increasing).
        multiplications: work of the forward pass at each T (one per multiply-add).
        span_ops, span_products: the longest chain in ops and in matrix products at each T.
        total_ops: the compute ops of the whole pass at each T (the span's work in ops).
        path_max: the maximum least path (matrix products) over connected (source, output) pairs; None: none.
        path_ends: the least path across the whole sequence (see the module); None: the two ends are not connected.
        work_form, span_form, path_max_form, path_ends_form: the growth form in T of each column
            (:func:`seqlab.fit.fit_growth`), None where a value is missing or not positive.
        work_exact: every op that ran was counted (else ``unaccounted`` names them, and the work is a lower bound).
        unaccounted: ops with no formula and no decomposition, with their calls.
        paths_exact: every op went through a rule, a decomposition or its Jacobian (else the paths are a bound).
        paths_bound: why the paths are a bound (None when exact).
        fused: fused kernels whose inner chain the span did not see, with their calls (the span is then a bound).
    """

    T: tuple[int, ...]
    multiplications: tuple[int, ...]
    span_ops: tuple[int, ...]
    span_products: tuple[int, ...]
    total_ops: tuple[int, ...]
    path_max: tuple[int | None, ...]
    path_ends: tuple[int | None, ...]
    work_form: str | None
    span_form: str | None
    path_max_form: str | None
    path_ends_form: str | None
    work_exact: bool
    unaccounted: dict[str, int]
    paths_exact: bool
    paths_bound: str | None
    fused: dict[str, int]


@dataclass(frozen=True)
class Decode:
    """The tiny twin's decode step at each position t.

    Attributes:
        t: the positions (increasing).
        multiplications: the step's work at each t.
        cache_bytes: the cache's bytes after the step (every kind), each storage once.
        bytes_by_kind: the same per kind of state (``attention_kv``, ``sliding_window_kv``, ``convolution``,
            ``recurrent``), one value per t.
        work_growth, bytes_growth: how each grows in t (:func:`seqlab.fit.classify_growth`'s kind; a whole the
            rule calls ``other`` is named by its parts, :func:`seqlab.fit.sum_of_growths`), None when unnamed.
        growth_by_kind: each kind of state's growth.
        work_exact: every op of the steps was counted (else ``unaccounted`` names them).
        unaccounted: ops with no formula, with their calls.
        dtype: the cache's dtype.
    """

    t: tuple[int, ...]
    multiplications: tuple[int, ...]
    cache_bytes: tuple[int, ...]
    bytes_by_kind: dict[str, tuple[int, ...]]
    work_growth: str | None
    bytes_growth: str | None
    growth_by_kind: dict[str, str]
    work_exact: bool
    unaccounted: dict[str, int]
    dtype: str


@dataclass(frozen=True)
class RealSize:
    """The family at its real size, from shapes alone on the meta device.

    Attributes:
        dtype: the weights' and cache's dtype (the config's own, else float32).
        parameters: parameters of the base model (tied weights once).
        d, layers: the input embedding's width and the config's layer count.
        T: positions of the prefill (:data:`REAL_T`, or the config's maximum if smaller).
        t: the position of the decode step: T + 1, or fewer where a prefill of T positions would run more ops than
            :data:`REAL_OPS_BUDGET` (a loop over positions: the longest power of two within the budget).
        prefill_multiplications: the prefill's work; None when it could not run on meta (``missing`` says why).
        decode_multiplications: one decode step's work at t = T; None when it could not run.
        cache_bytes: the cache's bytes after that step; None when it could not be read.
        cache_by_kind: the same per kind of state.
        work_exact: every op was counted (else ``unaccounted`` names them).
        unaccounted: ops with no formula, with their calls.
    """

    dtype: str
    parameters: int
    d: int
    layers: int | None
    T: int
    t: int
    prefill_multiplications: int | None
    decode_multiplications: int | None
    cache_bytes: int | None
    cache_by_kind: dict[str, int]
    work_exact: bool
    unaccounted: dict[str, int]


@dataclass(frozen=True)
class ZooRow:
    """One family of the zoo, measured or refused.

    Attributes:
        family: the model type (or, for a user's config, the name it was given).
        source: ``"transformers"`` (the config class's defaults) or the path of the user's config.
        refused: why the family could not be built or run at all (``"<stage>: <reason>"``), else None.
        kind: one of :data:`KINDS`; None when refused.
        kind_from: ``"measured"`` (paths and the decode cache) or ``"config"`` (see :func:`kind_of`).
        causal: True when no output depends on a later position (measured by the paths).
        experts: experts per layer in the real config (None: not a mixture of experts).
        d, layers: the tiny twin's input width and layers.
        prefill, decode, real: the three groups of columns, None where not measured.
        order: ``"equivariant"``, ``"not equivariant"`` or ``"cannot tell"``; None where not measured.
        missing: column -> why it was not measured (one line each).
        cpu_seconds: CPU time this row took (``time.process_time``).
    """

    family: str
    source: str
    refused: str | None
    kind: str | None = None
    kind_from: str | None = None
    causal: bool | None = None
    experts: int | None = None
    d: int | None = None
    layers: int | None = None
    prefill: Prefill | None = None
    decode: Decode | None = None
    real: RealSize | None = None
    order: str | None = None
    missing: dict[str, str] = field(default_factory=dict)
    cpu_seconds: float = 0.0


def row_from_dict(fields: dict[str, Any]) -> ZooRow:
    """A :class:`ZooRow` from its JSON fields (a results file's line): lists back to tuples, groups to dataclasses."""
    def group(cls, value):
        if value is None:
            return None
        return cls(**{k: (tuple(v) if isinstance(v, list) else
                          {a: tuple(b) if isinstance(b, list) else b for a, b in v.items()} if isinstance(v, dict)
                          else v) for k, v in value.items()})

    return ZooRow(**{**fields, "prefill": group(Prefill, fields.get("prefill")),
                     "decode": group(Decode, fields.get("decode")), "real": group(RealSize, fields.get("real"))})


# --- helpers ---------------------------------------------------------------------------------------------------

def _line(error: BaseException) -> str:
    return f"{type(error).__name__}: {shrink._line(error)}"


def _form(lengths: tuple[int, ...], values: tuple[int | None, ...]) -> str | None:
    """The growth form of ``values`` in T (:func:`seqlab.fit.fit_growth`), None when a value is missing or <= 0."""
    from seqlab.fit import fit_growth

    if len(set(lengths)) < 3 or any(v is None or v <= 0 for v in values):
        return None
    return fit_growth(list(lengths), [float(v) for v in values]).form


def prefill_lengths(config) -> tuple[int, ...]:
    """:data:`PREFILL_LENGTHS` rounded up to multiples of the config's chunks and blocks
    (:func:`seqlab.zoo.shrink.chunk_multiple`); three distinct lengths, at most :data:`seqlab.zoo.shrink.MAX_POSITIONS`.

    >>> from types import SimpleNamespace
    >>> prefill_lengths(SimpleNamespace(to_dict=lambda: {"chunk_size": 4})), prefill_lengths(SimpleNamespace(to_dict=lambda: {"chunk_size": 16}))
    ((4, 8, 16), (16, 32, 48))
    """
    step = shrink.chunk_multiple(config)
    lengths = sorted({-(-T // step) * step for T in PREFILL_LENGTHS})
    while len(lengths) < 3:
        lengths.append(lengths[-1] + step)
    return tuple(T for T in lengths if T <= shrink.MAX_POSITIONS) or tuple(lengths[:3])


def _experts(config) -> int | None:
    values = config.to_dict()
    found = [v for k in EXPERT_NAMES if isinstance(v := values.get(k), int) and not isinstance(v, bool)]
    return max(found) if found and max(found) > 1 else None


def _cache_argument(model) -> tuple[str | None, set[str]]:
    """The keyword the base model takes its cache back by (``cache``, ``past_key_values``, ``cache_params``,
    ``state``: the forward's parameter that is also an output's name), and the forward's parameters."""
    parameters = set(inspect.signature(model.forward).parameters)
    return next((p for p in ("cache", "past_key_values", "cache_params", "state") if p in parameters), None), parameters


def _cache_of(out: Any, argument: str) -> Any:
    value = out.get(argument) if hasattr(out, "get") else None
    if value is None and argument == "cache":
        value = out.get("past_key_values") if hasattr(out, "get") else None
    return value


def _read_state(model, cache: Any):
    from seqlab.measure.cache_state import RWKV_STATE_KINDS, read_cache_state

    return read_cache_state(cache, RWKV_STATE_KINDS if model.config.model_type == "rwkv" else None)


def _decode_step(model, x: Tensor, t: int, count: Callable, count_prefill: bool = False) -> tuple[Any, Any, Any]:
    """Read x[:, :t − 1] into the model's cache (counted under ``count`` when ``count_prefill``: a prefill as
    generation runs it, filling the cache), then position t − 1 through it under ``count``; return the prefill's
    count (or None), the step's count and the cache after the step."""
    argument, parameters = _cache_argument(model)
    if argument is None:
        raise shrink.Refused("decode", "the model's forward takes no cache back")
    extra = {"use_cache": True} if "use_cache" in parameters else {}
    prefill = None
    with torch.no_grad():
        if count_prefill:
            holder: dict[str, Any] = {}
            prefill = count(lambda: holder.setdefault("out", model(inputs_embeds=x[:, :t - 1], **extra)))
            out = holder["out"]
        else:
            out = model(inputs_embeds=x[:, :t - 1], **extra)
    cache = _cache_of(out, argument)
    if cache is None:
        raise shrink.Refused("decode", f"the forward pass returned no {argument!r}")
    step = {argument: cache, **extra}
    if "cache_position" in parameters:
        step["cache_position"] = torch.tensor([t - 1], device=x.device)
    with torch.no_grad():
        counted = count(lambda: model(inputs_embeds=x[:, t - 1:t], **step))
    return prefill, counted, cache


# --- the three groups of columns --------------------------------------------------------------------------------

def measure_prefill(family: shrink.Family, lengths: tuple[int, ...]) -> tuple[Prefill, bool | None]:
    """Work, span and paths at each T, and whether any output depends on a later position (None: paths not read).

    Raises:
        Exception: whatever the engine or the model raises (the caller names it).
    """
    from seqlab.measure.traced_pass import measure_pass

    work, ops, products, totals, longest, ends, unaccounted, fused = [], [], [], [], [], [], {}, {}
    exact, bound, later = True, None, False
    for T in lengths:
        x = shrink.embeddings(T, family.x.shape[-1])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            m = measure_pass(family.layer, x, sources=None)
        paths = m.paths
        work.append(m.work.multiplications)
        ops.append(m.span.ops)
        products.append(m.span.products)
        totals.append(m.span.total_ops)
        unaccounted |= dict(m.work.unaccounted)
        fused |= dict(m.span.fused)
        longest.append(paths.longest("products"))
        T_out = len(paths.products[0])
        later = later or any(paths.products[a][j] is not None for a, i in enumerate(paths.sources)
                             for j in range(min(i, T_out)))
        if not paths.exact:
            exact, bound = False, paths.bound_reason
        ends.append(None)  # filled below once the direction is known
        ends[-1] = (T, paths)
    lengths_out = []
    for k, (T, paths) in enumerate(ends):
        T_out = len(paths.products[0])
        ends[k] = paths.row(T - 1)[0] if later else paths.row(0)[T_out - 1]
        lengths_out.append(T)
    lengths = tuple(lengths_out)
    prefill = Prefill(T=lengths, multiplications=tuple(work), span_ops=tuple(ops), span_products=tuple(products), total_ops=tuple(totals),
                      path_max=tuple(longest), path_ends=tuple(ends), work_form=_form(lengths, tuple(work)),
                      span_form=_form(lengths, tuple(ops)), path_max_form=_form(lengths, tuple(longest)),
                      path_ends_form=_form(lengths, tuple(ends)), work_exact=not unaccounted,
                      unaccounted=unaccounted, paths_exact=exact, paths_bound=bound, fused=fused)
    return prefill, not later


def measure_order_of(family: shrink.Family) -> str:
    """Order equivariance of the tiny twin on its x (:func:`seqlab.measure.order.measure_order`, float64)."""
    from seqlab.measure.order import measure_order

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = measure_order(lambda rows: family.layer(rows[None])[0], family.x[0])
    return {True: "equivariant", False: "not equivariant", None: "cannot tell"}[result.equivariant]


def _growth(ts: tuple[int, ...], ys: tuple[int, ...]) -> str | None:
    from seqlab.fit import classify_growth

    if min(ys) <= 0:
        return None
    return classify_growth(ts, ys)[0]


def measure_decode(model, d: int, positions: tuple[int, ...] = DECODE_POSITIONS) -> Decode:
    """The decode step's work and the cache's bytes at each t (see the module).

    Raises:
        Refused: the model takes no cache back; SeqlabError: a cache seqlab cannot read (named);
        Exception: whatever the model raises.
    """
    from seqlab.fit import sum_of_growths
    from seqlab.measure.work import count_multiplications

    x = shrink.embeddings(max(positions), d)
    work, total, kinds, unaccounted, dtype = [], [], [], {}, ""
    for t in positions:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            _, counted, cache = _decode_step(model, x, t, count_multiplications)
        state = _read_state(model, cache)
        work.append(counted.multiplications)
        unaccounted |= dict(counted.unaccounted)
        total.append(state.total_bytes)
        kinds.append(dict(state.by_kind))
        dtype = state.dtype
    names = list(dict.fromkeys(k for by in kinds for k in by))
    by_kind = {k: tuple(by.get(k, 0) for by in kinds) for k in names}
    growth_by_kind = {k: g for k, v in by_kind.items() if (g := _growth(positions, v)) is not None}
    bytes_growth = _growth(positions, tuple(total))
    if bytes_growth == "other" and len(by_kind) > 1 and len(growth_by_kind) == len(by_kind):
        bytes_growth = sum_of_growths(list(growth_by_kind.values()))
    return Decode(t=positions, multiplications=tuple(work), cache_bytes=tuple(total), bytes_by_kind=by_kind,
                  work_growth=_growth(positions, tuple(work)), bytes_growth=bytes_growth,
                  growth_by_kind=growth_by_kind, work_exact=not unaccounted, unaccounted=unaccounted, dtype=dtype)


def _real_dtype(config) -> torch.dtype:
    dtype = getattr(config, "dtype", None) or getattr(config, "torch_dtype", None)
    if isinstance(dtype, str):
        dtype = getattr(torch, dtype, None)
    return dtype if isinstance(dtype, torch.dtype) and dtype.is_floating_point else torch.float32


#: Most ops a real size's counted prefill may run (≈ 50 µs each under the counter): a family whose prefill loops
#: over positions (a recurrent slow path) would run REAL_T · layers · (ops per step); past this its prefill work is
#: named as not traced, and its decode step (one position) is still counted.
REAL_OPS_BUDGET = 30_000


class _OpCalls(EngineMode):  # never compiled (seqlab.measure.modes)
    """Counts the ATen calls of a function (nothing else: the cheapest mode)."""

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.calls += 1
        return func(*args, **(kwargs or {}))


def _op_calls(function: Callable[[], Any]) -> int:
    mode = _OpCalls()
    with mode:
        function()
    return mode.calls


#: Lengths at which a real size's op count is read on meta, to extrapolate it to T (a line in T).
PROBE_LENGTHS = (16, 32)


def _real_ops(model, d: int, dtype: torch.dtype) -> Callable[[int], int]:
    """T -> the ATen calls a real prefill of T positions runs, on a line through its counts at
    :data:`PROBE_LENGTHS` (run on meta, uncounted)."""
    counts = []
    for probe in PROBE_LENGTHS:
        x = torch.empty(1, probe + 1, d, dtype=dtype, device="meta")  # (1, probe + 1, d)
        try:
            prefill, _, _ = _decode_step(model, x, probe + 1, _op_calls, True)
        except Exception:  # noqa: BLE001 - an encoder: the prefill alone
            layer = shrink.last_hidden(model)
            prefill = _op_calls(lambda x=x: layer(x[:, :probe]))
        counts.append(prefill)
    (T1, T2), (n1, n2) = PROBE_LENGTHS, counts
    return lambda T: int(n2 + max(0, n2 - n1) * (T - T2) / (T2 - T1))


def measure_real(config, missing: dict[str, str], causal: bool = True) -> RealSize | None:
    """Work and cache bytes at the config's real size, shapes only (meta device); what cannot run on meta goes
    into ``missing`` by column. A prefill that would run more ATen calls than :data:`REAL_OPS_BUDGET` (read by
    :func:`_real_ops`) is not traced, and the decode step is read at the longest power of two within it."""
    from seqlab.measure.work import count_multiplications

    dtype = _real_dtype(config)
    try:
        model = shrink.build_config(config, dtype=dtype, device="meta")
        d = shrink.input_width(model)
    except shrink.Refused as refusal:
        missing["real"] = str(refusal)
        return None
    values = config.to_dict()
    positions = shrink._first(values, ("max_position_embeddings", "n_positions", "max_seq_len", "n_ctx",
                                       "context_length"))
    T = min(REAL_T, positions - 1) if isinstance(positions, int) and positions > 2 else REAL_T
    layers = shrink._first(values, shrink._LAYER_NAMES)
    layers = layers if isinstance(layers, int) else None
    parameters = sum(p.numel() for p in {id(p): p for p in model.parameters()}.values())
    prefill = decode = cache_bytes = None
    by_kind: dict[str, int] = {}
    unaccounted: dict[str, int] = {}
    try:
        calls = _real_ops(model, d, dtype)
        ops = calls(T)
    except Exception as error:  # noqa: BLE001 - named in the row
        missing["real prefill"] = missing["real decode"] = f"cannot run on the meta device: {_line(error)}"
        return RealSize(dtype=str(dtype).removeprefix("torch."), parameters=parameters, d=d, layers=layers, T=T,
                        t=T + 1, prefill_multiplications=None, decode_multiplications=None, cache_bytes=None,
                        cache_by_kind={}, work_exact=True, unaccounted={})
    within = ops <= REAL_OPS_BUDGET
    t = T + 1
    if not within:
        missing["real prefill"] = (f"not traced: about {ops} ATen calls at T = {T} (they grow with T), over the "
                                   f"budget of {REAL_OPS_BUDGET}")
        t = PROBE_LENGTHS[-1]
        while 2 * t <= T and calls(2 * t) <= REAL_OPS_BUDGET:
            t *= 2
        t += 1
    x = torch.empty(1, max(t, T + 1), d, dtype=dtype, device="meta")  # (1, T + 1, d): shapes only
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            if not causal:
                raise shrink.Refused("decode", missing.get("decode", "not a causal model"))
            counted_prefill, counted, cache = _decode_step(model, x, t, count_multiplications, within)
            if counted_prefill is not None:
                prefill = counted_prefill.multiplications
                unaccounted |= dict(counted_prefill.unaccounted)
            decode = counted.multiplications
            unaccounted |= dict(counted.unaccounted)
            state = _read_state(model, cache)
            cache_bytes, by_kind = state.total_bytes, dict(state.by_kind)
        except Exception as error:  # noqa: BLE001 - named in the row; an encoder's prefill without a cache
            missing["real decode"] = (error.reason if isinstance(error, shrink.Refused) else
                                      f"cannot run on the meta device: {_line(error)}")
            if within and prefill is None:
                try:
                    counted = count_multiplications(shrink.last_hidden(model), x[:, :T])
                    prefill = counted.multiplications
                    unaccounted |= dict(counted.unaccounted)
                except Exception as inner:  # noqa: BLE001
                    missing["real prefill"] = f"cannot run on the meta device: {_line(inner)}"
    return RealSize(dtype=str(dtype).removeprefix("torch."), parameters=parameters, d=d, layers=layers, T=T, t=t,
                    prefill_multiplications=prefill, decode_multiplications=decode, cache_bytes=cache_bytes,
                    cache_by_kind=by_kind, work_exact=not unaccounted, unaccounted=unaccounted)


# --- the kind ----------------------------------------------------------------------------------------------------

def _config_words(config) -> set[str]:
    """The mixers a config names: ``layer_types`` entries, the presence of a window or a state size, and attention
    layers placed by index or period."""
    values = config.to_dict()
    words = {str(v).lower() for k, v in values.items() if isinstance(v, (list, tuple)) and re.search(r"_types?$", k)
             for v in v if isinstance(v, str)}  # layer_types, layers_block_type, mlp_layer_types...
    if values.get("sliding_window") or values.get("attention_window") or values.get("local_attention"):
        words.add("sliding")
    if any(values.get(k) for k in ("state_size", "ssm_state_size", "mamba_d_state", "d_state")):
        words.add("mamba")
    if any(v not in (None, [], 0, False) and re.search(r"attn_layer|attention_layer|full_attn|hybrid_layer", k)
           for k, v in values.items()):  # attention placed among other layers by index or period (Jamba, Bamba)
        words.add("attention")
    return words


def kind_of(causal: bool | None, decode: Decode | None, experts: int | None, config=None) -> tuple[str, str]:
    """The family's kind (one of :data:`KINDS`) and where it was read from (``"measured"`` or ``"config"``).

    >>> kind_of(False, None, None)
    ('encoder', 'measured')
    >>> d = Decode((2, 4, 8), (1, 1, 1), (1, 1, 1), {"recurrent": (1, 1, 1)}, "constant", "constant", {}, True, {}, "")
    >>> kind_of(True, d, None)
    ('linear', 'measured')
    """
    if causal is False:
        return "encoder", "measured"
    if decode is not None:
        kinds, source = set(decode.bytes_by_kind), "measured"
        state = bool(kinds & {"convolution", "recurrent"})
        keys = bool(kinds & {"attention_kv", "sliding_window_kv"})
        if state and keys:
            return "hybrid", source
        if state:
            return "linear", source
        mixer = "windowed" if "sliding_window_kv" in kinds else "full"
    else:
        source = "config"
        words = _config_words(config) if config is not None else set()
        state = any(w in words for w in ("mamba", "conv", "linear_attention", "recurrent", "rwkv", "ssm"))
        keys = any(("attention" in w and "linear" not in w) or "sliding" in w or "hybrid" in w for w in words) \
            or not state
        if state and keys:
            return "hybrid", source
        if state:
            return "linear", source
        mixer = "windowed" if any("sliding" in w or "local" in w for w in words) else "full"
    return ("moe" if experts else mixer), source


# --- one row -----------------------------------------------------------------------------------------------------

def measure_config(name: str, source: str, real: Any, tiny: Any | None = None) -> ZooRow:
    """Measure one family from its real-size config ``real`` (its tiny twin ``tiny``: :func:`shrink_config` of it
    when None). Never raises for the family's own failures: a family that cannot be built or run is a row with
    ``refused``; a column that cannot be measured is named in ``missing``."""
    start = time.process_time()
    missing: dict[str, str] = {}
    experts = _experts(real)
    try:
        config = tiny if tiny is not None else shrink.shrink_config(real)
        model = shrink.build_config(config)
        fam = _forward(name, model)
    except shrink.Refused as refusal:
        return ZooRow(family=name, source=source, refused=str(refusal), experts=experts,
                      cpu_seconds=round(time.process_time() - start, 3))
    d = int(fam.x.shape[-1])
    layers = shrink._first(config.to_dict(), shrink._LAYER_NAMES)
    prefill = causal = decode = order = None
    try:
        prefill, causal = measure_prefill(fam, prefill_lengths(config))
    except Exception as error:  # noqa: BLE001 - named in the row
        missing["prefill"] = _line(error)
    try:
        order = measure_order_of(fam)
    except Exception as error:  # noqa: BLE001
        missing["order"] = _line(error)
    if causal is False:
        missing["decode"] = "an encoder: every output reads later positions, there is no next token to decode"
    else:
        try:
            decode = measure_decode(model, d)
        except Exception as error:  # noqa: BLE001
            missing["decode"] = str(error) if isinstance(error, shrink.Refused) else _line(error)
    kind, kind_from = kind_of(causal, decode, experts, config)
    real_size = measure_real(real, missing, causal is not False)
    return ZooRow(family=name, source=source, refused=None, kind=kind, kind_from=kind_from, causal=causal,
                  experts=experts, d=d, layers=layers if isinstance(layers, int) else None, prefill=prefill,
                  decode=decode, real=real_size, order=order, missing=missing,
                  cpu_seconds=round(time.process_time() - start, 3))


def _forward(name: str, model) -> shrink.Family:
    """The tiny twin run once at its shortest prefill length (a forward that fails is a refusal)."""
    T = prefill_lengths(model.config)[0]
    x = shrink.embeddings(T, shrink.input_width(model))
    layer = shrink.last_hidden(model)
    try:
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            y = layer(x)
    except Exception as error:
        raise shrink.Refused("forward", _line(error)) from error
    if not isinstance(y, Tensor) or y.dim() != 3:
        raise shrink.Refused("forward", f"the last hidden state is not (1, T, d): {getattr(y, 'shape', type(y))}")
    return shrink.Family(name, model, layer, x, T)


def measure_family(model_type: str) -> ZooRow:
    """The row of ``model_type`` (a model type of the installed transformers, at its config class's defaults)."""
    try:
        real = shrink.real_config(model_type)
    except shrink.Refused as refusal:
        return ZooRow(family=model_type, source="transformers", refused=str(refusal))
    return measure_config(model_type, "transformers", real)
