"""The one registry of sequence mixers: what every table, command and closed form reads about them.

A *mixer* is a layer of :mod:`seqlab.layers` that maps (B, T, d_model) to (B, T, d_model), decodes one
position at a time with ``initial_state`` / ``step`` (:mod:`seqlab.layers.mixer_common`) and gives its closed
form with ``multiplications(T, batch)`` (from :mod:`seqlab.cost`). Adding one takes a
module in ``seqlab/layers/`` and one :func:`register` call; then

* ``seqlab table1 --modern`` measures its rows (:mod:`seqlab.studies.table1_modern_rows`) and names them
  (:func:`seqlab.render.table1_modern.row_name`, from :attr:`MixerRow.label`);
* ``seqlab decode`` offers it as a machine when it has a :class:`DecodeMachine`
  (:mod:`seqlab.measure.decode`, :func:`seqlab.render.decode.machine_label`), its closed form from
  :mod:`seqlab.cost`;
* ``table1 --modern``, ``profile`` and ``compare`` read its signal path (:mod:`seqlab.measure.signal_path`) when
  its class declares its transition factor (:mod:`seqlab.layers.transition`); otherwise they name it as absent.

A mixer's module is imported when it is first built, so ``import seqlab`` stays light. Its import must work:
a shipped mixer whose module raises ImportError (a typo, a moved name) fails with that error, loudly. Only a
third-party package the mixer names in :attr:`Mixer.requires` that is not installed makes it *unavailable*
(reported as "not installed" by the tables, never invented).

The English labels are message ids (``N_`` marks them for extraction): row names of the ``table1_modern``
catalogue, machine names of the ``decode`` catalogue; each renderer translates them.

* ``seqlab learn`` offers it as a model when it has a :class:`LearnModel` (:mod:`seqlab.learn.models`);
* the docs' mixer table (``docs/outputs/mixers.md``, written by ``docs/generate_outputs.py``) lists it, and the
  generic tests of ``tests/test_mixers.py`` check it: its forms agree in float64, ``step`` equals ``forward``,
  counted work equals its closed forms, its learn parameters equal their closed form, and the decode state's
  bytes equal a walk of the state's tensors. ``docs/en/contributing.md`` gives the steps.

Nothing lists the mixers by hand: every list reads :func:`mixers` (registration order).

>>> mixers()[0].name, mixer("linear_attention").label
('linear_attention', 'Linear attention')
>>> machine_names()[:len(LESSON_MACHINES)] == LESSON_MACHINES
True
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from seqlab import cost
from seqlab.errors import SeqlabError
from seqlab.fit import Steps
from seqlab.i18n import N_

__all__ = ["COLUMNS", "EVERY_LENGTH", "GROWTHS", "LESSON_MACHINES", "DecodeMachine", "LearnModel", "Mixer", "MixerRow",
           "Regime", "decode_machines", "learn_models", "machine_names", "mixer", "mixer_rows", "mixers", "register",
           "unregister"]

#: The growths a big-O may name (:data:`seqlab.studies.table1_results.CONSTANT` …).
GROWTHS = ("constant", "linear", "quadratic", "logarithmic")




def _frozen(mapping: Mapping[str, Any]) -> Mapping[str, Any]:
    return MappingProxyType(dict(mapping))


#: The columns of a row (the big-O of each is judged against the lengths of its regime).
COLUMNS = ("work", "span", "path", "memory", "decode", "state")


@dataclass(frozen=True)
class Regime:
    """Where one column's big-O applies: from length ``start`` on, set by a size of the layer (T ≤ C: one chunk,
    the layer is the parallel form; T ≤ w: one window connects every position, as full attention does).

    Attributes:
        start: the first length in the regime (None: no length, e.g. a window of 1 connects no two positions).
        size: the size that sets it, an English message id (``"the window"``); empty for :data:`EVERY_LENGTH`.
        symbol: the size with its value (``"w = 4"``).
        steps: the count's own whole-number term (:class:`seqlab.fit.Steps`: ⌈T/C⌉ chunks, the layers of a stack),
            or None.
        multiple: only lengths that are multiples of it are in the regime (a chunked layer's peak steps with the
            last, partial chunk: whole chunks only); 1 for every length from ``start``.
    """

    start: int | None
    size: str = ""
    symbol: str = ""
    steps: Steps | None = None
    multiple: int = 1

    def holds(self, T: int) -> bool:
        """Whether length T lies in the regime.

        >>> Regime(9, multiple=4).holds(12), Regime(9, multiple=4).holds(13), Regime(None).holds(100)
        (True, False, False)
        """
        return self.start is not None and T >= self.start and T % self.multiple == 0


#: The regime of a column whose big-O applies at every length.
EVERY_LENGTH = Regime(2)


@dataclass(frozen=True)
class MixerRow:
    """One row of ``seqlab table1 --modern`` built from a mixer: its name, label, options and big-O per column.

    Attributes:
        name: the row's key (``"selective_scan"``), unique across the table.
        label: the row's English name, a message id of the ``table1_modern`` catalogue; ``{C}`` reads the
            chunk size, ``{w}`` the window.
        options: keyword arguments of the mixer's class for this row (e.g. ``{"form": "scan"}``).
        work, span, path, memory: (the big-O as printed, its growth in T: one of :data:`GROWTHS`).
        decode, state: the same in the decoded position t (one decode step's work, the state it hands on).
        source: the paper (and section) the row follows.
        regimes: column -> (the built module -> its :class:`Regime`), for the columns whose big-O applies only
            past a size of the layer or whose count steps; the others apply at every length.
    """

    name: str
    label: str
    options: Mapping[str, Any]
    work: tuple[str, str]
    span: tuple[str, str]
    path: tuple[str, str]
    memory: tuple[str, str]
    decode: tuple[str, str]
    state: tuple[str, str]
    source: str
    regimes: Mapping[str, Callable[[Any], Regime]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "options", _frozen(self.options))
        object.__setattr__(self, "regimes", _frozen(self.regimes))
        unknown = sorted(set(self.regimes) - set(COLUMNS))
        if unknown:
            raise SeqlabError(N_("{name}: regimes are for the columns {columns}, received {unknown}"), name=self.name,
                              columns=', '.join(COLUMNS), unknown=unknown, parameter="regimes")
        for column in COLUMNS:
            growth = getattr(self, column)[1]
            if growth not in GROWTHS:
                raise SeqlabError(N_("{name}: the {column} growth must be one of {growths}, received {growth!r}"),
                                  name=self.name, column=column, growths=', '.join(GROWTHS), growth=growth,
                                  parameter=column)


@dataclass(frozen=True)
class DecodeMachine:
    """The mixer as a machine of ``seqlab decode``.

    Attributes:
        label: the machine's English name, a message id of the ``decode`` catalogue.
        options: keyword arguments of the class for decoding (e.g. ``{"form": "recurrent"}``).
        fixed_state: whether its state does not grow with t.
        step_multiplications: (d, batch) -> multiplications of one step with every width d, from
            :mod:`seqlab.cost` (None: no closed form).
    """

    label: str
    options: Mapping[str, Any] = field(default_factory=dict)
    fixed_state: bool = True
    step_multiplications: Callable[[int, int], int] | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "options", _frozen(self.options))


@dataclass(frozen=True)
class LearnModel:
    """The mixer as a model of ``seqlab learn``: one layer of it between a token embedding and a readout.

    Attributes:
        options: keyword arguments of the class for training (e.g. ``{"form": "scan"}``: its fastest equal form on a
            CPU).
        width: the keywords that learn's ``width`` sets (``("d_k", "d_v")``, ``("d_state",)``).
        parameters: (d_model, width) -> the layer's parameters, in closed form (learn fits widths to a parameter
            budget with it; a generic test counts them on the built module).
    """

    options: Mapping[str, Any]
    width: tuple[str, ...]
    parameters: Callable[[int, int], int]

    def __post_init__(self) -> None:
        object.__setattr__(self, "options", _frozen(self.options))


def _width_first(cls: type, d_model: int, *, window: int | None, chunk: int | None, **kwargs: Any) -> Any:
    return cls(d_model, **kwargs)


@dataclass(frozen=True)
class Mixer:
    """One registered mixer: where its class lives, how to build it, its rows, its decode machine.

    Attributes:
        name: the key (also the decode machine's name), unique.
        module, class_name: the module in :mod:`seqlab.layers` and the ``torch.nn.Module`` class in it.
        rows: the rows of ``seqlab table1 --modern``, in the table's order.
        decode: the machine of ``seqlab decode``, or None when the command does not offer it (its rows then
            count the module's own ``step``).
        factory: (class, d_model, window=, chunk=, generator=, dtype=, **options) -> the module; the default
            passes d_model and the keywords, never window or chunk.
        step_multiplications: module -> multiplications of one of its decode steps, from :mod:`seqlab.cost`
            (for rows measured without a decode machine; None: no closed form).
        connecting_depth: (T, window) -> layers of the stack that connects all T positions, when one layer
            does not (None: one layer does).
        requires: third-party packages the module imports; when one is missing the mixer is unavailable.
        label: the mixer's English name (a message id: ``seqlab learn``'s model name, the docs' mixer table).
        learn: the model of ``seqlab learn``, or None when the command does not offer it.
        equation: what it computes, in plain text (the docs' mixer table).
        closed_form: the name of its forward's closed form in :data:`seqlab.cost.CLOSED_FORMS`, defined in
            ``seqlab.cost`` or beside the layer in its own module (imported to register it) (the docs' table
            prints its formula; a test checks the class's ``multiplications`` against the count).
    """

    name: str
    module: str
    class_name: str
    rows: tuple[MixerRow, ...]
    decode: DecodeMachine | None = None
    factory: Callable[..., Any] = _width_first
    step_multiplications: Callable[[Any], int] | None = None
    connecting_depth: Callable[[int, int], int] | None = None
    requires: tuple[str, ...] = ()
    label: str = ""
    learn: LearnModel | None = None
    equation: str = ""
    closed_form: str = ""

    def __post_init__(self) -> None:
        if self.closed_form and self.closed_form not in cost.CLOSED_FORMS and self.load() is not None \
                and self.closed_form not in cost.CLOSED_FORMS:  # one defined beside the layer registers on import
            raise SeqlabError(N_("{name}: closed_form must name a registered closed form (seqlab.cost's, or one its "
                                 "module {module} defines), received {closed_form!r}"), name=self.name,
                              module=self.module, closed_form=self.closed_form, parameter="closed_form")

    def load(self) -> type | None:
        """The mixer's class, or None when a package of :attr:`requires` is not installed.

        Raises:
            ImportError: the module itself is broken (any import failure but a missing required package).
            AttributeError: the module has no :attr:`class_name`.
        """
        try:
            module = importlib.import_module(self.module)
        except ModuleNotFoundError as error:
            missing = (error.name or "").split(".")[0]
            if missing in self.requires:
                return None
            raise
        return getattr(module, self.class_name)

    def available(self) -> bool:
        """Whether the mixer can be built here (False only when a package of :attr:`requires` is missing)."""
        return self.load() is not None

    def build(self, d_model: int, *, window: int | None = None, chunk: int | None = None, generator: Any = None,
              **options: Any) -> Any:
        """The mixer's module at width d_model with ``options`` (eval mode).

        Raises:
            SeqlabError: a package of :attr:`requires` is not installed, or the class refuses the sizes.
        """
        cls = self.load()
        if cls is None:
            raise SeqlabError(N_("the mixer {name!r} needs {requires}, which is not installed here"), name=self.name,
                              requires=', '.join(self.requires), parameter="mixer")
        return self.factory(cls, d_model, window=window, chunk=chunk, generator=generator, **options).eval()


_REGISTRY: dict[str, Mixer] = {}


def register(new: Mixer) -> Mixer:
    """Add ``new`` to the registry (after the mixers already there) and return it.

    Raises:
        SeqlabError: its name, one of its row names or its decode machine's name is taken.
    """
    taken_rows = {row.name for m in _REGISTRY.values() for row in m.rows}
    clash = [row.name for row in new.rows if row.name in taken_rows]
    if new.name in _REGISTRY or clash:
        raise SeqlabError(N_("a mixer named {name!r} or a row {clash} is already registered"), name=new.name,
                          clash=clash, parameter="mixer")
    _REGISTRY[new.name] = new
    return new


def unregister(name: str) -> Mixer:
    """Remove the mixer ``name`` and return it.

    Raises:
        SeqlabError: no mixer of that name is registered.
    """
    if name not in _REGISTRY:
        raise SeqlabError(N_("no mixer named {name!r}; registered: {registry}"), name=name,
                          registry=', '.join(_REGISTRY), parameter="mixer")
    return _REGISTRY.pop(name)


def mixers() -> tuple[Mixer, ...]:
    """Every registered mixer, in registration order."""
    return tuple(_REGISTRY.values())


def mixer(name: str) -> Mixer:
    """The mixer registered as ``name``.

    >>> mixer("sliding_window").class_name
    'SlidingWindowAttention'

    Raises:
        SeqlabError: no mixer of that name is registered.
    """
    if name not in _REGISTRY:
        raise SeqlabError(N_("no mixer named {name!r}; registered: {registry}"), name=name,
                          registry=', '.join(_REGISTRY), parameter="mixer")
    return _REGISTRY[name]


def mixer_rows() -> dict[str, tuple[Mixer, MixerRow]]:
    """Row name -> (its mixer, the row), every mixer's rows in registration order.

    >>> list(mixer_rows())[:2]
    ['linear_attention_parallel', 'linear_attention_recurrent']
    """
    return {row.name: (m, row) for m in _REGISTRY.values() for row in m.rows}


def learn_models() -> tuple[Mixer, ...]:
    """Every mixer with a :class:`LearnModel` (the models ``seqlab learn`` offers), in registration order.

    >>> learn_models()[0].name, dict(learn_models()[0].learn.options)
    ('linear_attention', {'form': 'parallel'})
    """
    return tuple(m for m in _REGISTRY.values() if m.learn is not None)


def decode_machines() -> tuple[tuple[str, Mixer], ...]:
    """(machine name, mixer) for every mixer with a :class:`DecodeMachine`, in registration order."""
    return tuple((m.name, m) for m in _REGISTRY.values() if m.decode is not None)


#: The decoders of :mod:`seqlab.layers.decoding` (the lesson's machines), listed before the mixers'.
LESSON_MACHINES = ("elman", "attention_kv_cache", "attention_static_cache", "attention_no_cache")


def machine_names(fixed_state_only: bool = False) -> tuple[str, ...]:
    """Every machine of ``seqlab decode``: the lesson's, then each mixer's decode machine (torch-free).

    >>> machine_names()[len(LESSON_MACHINES):] == tuple(name for name, _ in decode_machines())
    True
    >>> machine_names(fixed_state_only=True)[0]
    'elman'
    """
    lesson = ("elman",) if fixed_state_only else LESSON_MACHINES
    return lesson + tuple(name for name, m in decode_machines() if m.decode.fixed_state or not fixed_state_only)


# --- the shipped mixers ------------------------------------------------------------------------------------

def _linear_attention(cls: type, d_model: int, *, window: int | None, chunk: int | None, **kwargs: Any) -> Any:
    return cls(d_model, **({} if chunk is None else {"chunk_size": chunk}), **kwargs)


def _sliding_window(cls: type, d_model: int, *, window: int | None, chunk: int | None, **kwargs: Any) -> Any:
    return cls(d_model, window, **kwargs)


def _sliding_window_depth(T: int, window: int) -> int:
    """⌈(T - 1)/(w - 1)⌉ layers: each reaches w - 1 positions back, so that many connect 1 to T."""
    return max(1, -(-(T - 1) // max(window - 1, 1)))


def _past_chunk(module: Any, steps: Steps | None = None) -> Regime:
    """T > C: at T ≤ C one chunk holds every position and the chunked form is the parallel one."""
    C = module.chunk_size
    return Regime(C + 1, N_("the chunk"), f"C = {C}", steps)


def _chunks(module: Any) -> Steps:
    """⌈T/C⌉ chunks: the span and the path grow by a few ops per chunk."""
    C = module.chunk_size
    return Steps("T", f"⌈T/{C}⌉", lambda T: -(-T // C))


def _chunk_blocks(module: Any) -> Steps:
    """⌊T/C⌋·C² + (T mod C)²: the within-chunk products of the chunked form, Θ(T·C) past one chunk, beside T."""
    C = module.chunk_size
    return Steps("T", f"⌊T/{C}⌋·{C}² + (T mod {C})²", lambda T: (T // C) * C * C + (T % C) ** 2, ("T",))


def _past_width(module: Any, times: int, plus: int = 0) -> Regime:
    """T ≥ times·d + plus: the peak holds the T-sized tensors from there on, not the d-sized ones (measured)."""
    return Regime(times * module.d_model + plus, N_("the width"), f"d = {module.d_model}")


def _chunk_memory(module: Any) -> Regime:
    """Whole chunks past T = max(C + 1, 2d + 2, 4C²/d): the peak steps with the last, partial chunk, and holds the
    C×C maps of a chunk, not the T×d tensors, until T·d passes a few C² (measured: from 2C²/d)."""
    C, d = module.chunk_size, module.d_model
    return Regime(max(C + 1, 2 * d + 2, -(-4 * C * C // d)), N_("whole chunks"), f"C = {C}", multiple=C)


def _scan_path(module: Any, reach: int = 1) -> Steps:
    from seqlab.layers.scan import scan_path_steps

    return Steps("log T", "⌈log₂T⌉ + hops" if reach == 1 else f"⌈log₂T⌉ + hops past {reach}",
                 lambda T: scan_path_steps(T, reach))


def _two_rounds(module: Any) -> Regime:
    """T ≥ 3: at T = 2 a scan has one round, and its peak holds none of a round's temporaries (measured)."""
    return Regime(3, N_("two scan rounds"), "⌈log₂T⌉ ≥ 2")


def _sliding_path(module: Any) -> Regime:
    """T > w: one window connects every position (as full attention does); a window of 1 connects none."""
    w = module.window
    steps = Steps("T", f"⌈(T − 1)/{w - 1}⌉", lambda T: _sliding_window_depth(T, w)) if w > 1 else None
    return Regime(w + 1 if w > 1 else None, N_("the window"), f"w = {w}", steps)


def _past_window(module: Any) -> Regime:
    """T > w: below, the padded window holds more slots than there are positions (measured on the peak)."""
    return Regime(module.window + 1, N_("the window"), f"w = {module.window}")


def _past_convolution(module: Any, steps: Steps | None = None) -> Regime:
    """T > d_conv: the causal convolution alone reaches every position back to the first below that."""
    return Regime(module.d_conv + 1, N_("the convolution"), f"d_conv = {module.d_conv}", steps)


_C, _L, _Q, _G = "constant", "linear", "quadratic", "logarithmic"

register(Mixer(
    "linear_attention", "seqlab.layers.linear_attention", "LinearAttention",
    rows=(
        MixerRow("linear_attention_parallel", N_("Linear attention, parallel form"), {"form": "parallel"},
                 ("O(T²·d)", _Q), ("O(1)", _C), ("O(1)", _C), ("O(T²)", _Q), ("O(d²)", _C), ("O(d²)", _C),
                 "Katharopoulos et al. 2020, §3.2–3.4", {"memory": lambda m: _past_width(m, 2, 2)}),
        MixerRow("linear_attention_recurrent", N_("Linear attention, recurrent form"), {"form": "recurrent"},
                 ("O(T·d_k·d_v)", _L), ("O(T)", _L), ("O(T)", _L), ("O(T·d)", _L), ("O(d²)", _C), ("O(d²)", _C),
                 "Katharopoulos et al. 2020, §3.4", {"memory": lambda m: _past_width(m, 2, 2)}),
        MixerRow("linear_attention_chunked", N_("Linear attention, chunked (C = {C})"), {"form": "chunked"},
                 ("O(T·(C + d)·d)", _L), ("O(T/C)", _L), ("O(T/C)", _L), ("O(T·d)", _L), ("O(d²)", _C),
                 ("O(d²)", _C), "Katharopoulos et al. 2020, §3.3; Hua et al. 2022",
                 {"work": lambda m: _past_chunk(m, _chunk_blocks(m)), "span": lambda m: _past_chunk(m, _chunks(m)),
                  "path": lambda m: _past_chunk(m, _chunks(m)),
                  "memory": _chunk_memory}),
    ),
    decode=DecodeMachine(N_("linear attention"), {"form": "recurrent"}, fixed_state=True,
                         step_multiplications=lambda d, batch: cost.linear_attention_step_multiplications(
                             d, d, d, batch=batch)),  # q, k, v and W_o, then 2·d_k·d_v + d_k on the state
    factory=_linear_attention,
    label=N_("Linear attention"),
    equation="y_i = φ(q_i)ᵀS_i / φ(q_i)ᵀz_i, S_i = Σ_{j≤i} φ(k_j)v_jᵀ, z_i = Σ_{j≤i} φ(k_j), φ = elu + 1",
    closed_form="linear_attention_multiplications",
    learn=LearnModel({"form": "parallel"}, ("d_k", "d_v"), lambda d, w: 4 * d * w),  # W_q, W_k, W_v, W_o
))

register(Mixer(
    "diagonal_recurrence", "seqlab.layers.linear_recurrence", "DiagonalRecurrence",
    rows=(
        MixerRow("diagonal_loop", N_("Diagonal recurrence, loop"), {"form": "loop"},
                 ("O(T·d²)", _L), ("O(T)", _L), ("O(T)", _L), ("O(T·d)", _L), ("O(d²)", _C), ("O(d)", _C),
                 "S4D (Gu et al. 2022); LRU (Orvieto et al. 2023), §3"),
        MixerRow("diagonal_scan", N_("Diagonal recurrence, parallel scan"), {"form": "scan"},
                 ("O(T·d²)", _L), ("O(log T)", _G), ("O(log T)", _G), ("O(T·d)", _L), ("O(d²)", _C), ("O(d)", _C),
                 "Hillis & Steele 1986; Blelloch 1990, §1.4; LRU (Orvieto et al. 2023)",
                 {"path": lambda m: Regime(2, steps=_scan_path(m)), "memory": _two_rounds}),
    ),
    step_multiplications=lambda module: cost.diagonal_recurrence_step_multiplications(module.d_model,
                                                                                      module.d_state),
    label=N_("Diagonal recurrence"),
    equation="h_t = a ⊙ h_{t−1} + √(1−a²) ⊙ W_B x_t, a = exp(−exp ν), y_t = W_C h_t",
    closed_form="diagonal_recurrence_multiplications",
    learn=LearnModel({"form": "scan"}, ("d_state",), lambda d, w: 2 * d * w + w),  # W_B, W_C, the decays
))

register(Mixer(
    "selective_recurrence", "seqlab.layers.linear_recurrence", "SelectiveRecurrence",
    rows=(
        MixerRow("selective_loop", N_("Selective recurrence, loop"), {"form": "loop"},
                 ("O(T·d²)", _L), ("O(T)", _L), ("O(T)", _L), ("O(T·d)", _L), ("O(d²)", _C), ("O(d)", _C),
                 "Mamba (Gu & Dao 2023), §3.2"),
        MixerRow("selective_scan", N_("Selective recurrence, parallel scan"), {"form": "scan"},
                 ("O(T·d²)", _L), ("O(log T)", _G), ("O(log T)", _G), ("O(T·d)", _L), ("O(d²)", _C), ("O(d)", _C),
                 "Mamba (Gu & Dao 2023), §3.3.2; Blelloch 1990, §1.4",
                 {"path": lambda m: Regime(2, steps=_scan_path(m)), "memory": _two_rounds}),
    ),
    decode=DecodeMachine(N_("selective recurrence"), fixed_state=True,
                         step_multiplications=lambda d, batch: cost.selective_recurrence_step_multiplications(
                             d, d, batch=batch)),  # d_state = d_model: W_Δ, W_u, W_C in and W_o out
    label=N_("Selective recurrence"),
    equation="Δ_t = softplus(W_Δx_t + δ), h_t = exp(−Δ_t ⊙ A) ⊙ h_{t−1} + Δ_t ⊙ W_u x_t, y_t = W_o(W_C x_t ⊙ h_t)",
    closed_form="selective_recurrence_multiplications",
    learn=LearnModel({"form": "scan"}, ("d_state",), lambda d, w: 4 * d * w + 2 * w),  # W_Δ, W_u, W_C, W_o; A, δ
))

register(Mixer(
    "sliding_window", "seqlab.layers.sliding_window", "SlidingWindowAttention",
    rows=(
        MixerRow("sliding_window", N_("Sliding-window attention (w = {w})"), {"form": "banded"},
                 ("O(w·T·d)", _L), ("O(1)", _C), ("O(T/w)", _L), ("O(w·T·d)", _L), ("O(w·d)", _C), ("O(w·d)", _C),
                 "Longformer (Beltagy et al. 2020), §3.1",
                 {"path": _sliding_path, "memory": _past_window}),
    ),
    factory=_sliding_window,
    step_multiplications=lambda module: cost.sliding_window_step_multiplications(module.d_model, module.window),
    connecting_depth=_sliding_window_depth,
    label=N_("Sliding window"),
    equation="y_t = Σ_{t−w<j≤t} softmax_j(q_tᵀk_j / √d_k) v_j",
    closed_form="sliding_window_multiplications",
    learn=LearnModel({"form": "banded"}, ("d_k", "d_v"), lambda d, w: 4 * d * w),  # W_q, W_k, W_v, W_o
))

register(Mixer(
    "mamba_block", "seqlab.layers.mamba_block", "MambaBlock",
    rows=(
        MixerRow("mamba_loop", N_("Mamba block (N = 4), loop"), {"form": "loop", "d_state": 4},
                 ("O(T·d²)", _L), ("O(T)", _L), ("O(T)", _L), ("O(T·d·N)", _L), ("O(d²)", _C), ("O(d·N)", _C),
                 "Mamba (Gu & Dao 2023), Figure 3, Algorithm 2",
                 {"path": _past_convolution, "memory": _past_convolution}),
        MixerRow("mamba_scan", N_("Mamba block (N = 4), parallel scan"), {"form": "scan", "d_state": 4},
                 ("O(T·d²)", _L), ("O(log T)", _G), ("O(log T)", _G), ("O(T·d·N)", _L), ("O(d²)", _C),
                 ("O(d·N)", _C), "Mamba (Gu & Dao 2023), §3.3.2, Figure 3",
                 {"path": lambda m: _past_convolution(m, _scan_path(m, m.d_conv)), "memory": _past_convolution}),
    ),
    decode=DecodeMachine(N_("Mamba block"), {"form": "loop"}, fixed_state=True,
                         step_multiplications=lambda d, batch: cost.mamba_block_step_multiplications(
                             d, batch=batch)),  # N = 16, k = 4, E = 2d, R = ⌈d/16⌉: the paper's defaults
    step_multiplications=lambda module: cost.mamba_block_step_multiplications(
        module.d_model, module.d_state, module.d_conv, module.d_inner // module.d_model, module.dt_rank),
    label=N_("Mamba block"),
    equation="[u, z] = x W_in; u = SiLU(conv_k(u)); h_t = exp(Δ_t A) ⊙ h_{t−1} + (Δ_t ⊙ u_t) B_tᵀ; "
             "y = W_out((h_t C_t + D ⊙ u_t) ⊙ SiLU(z))",
    closed_form="mamba_block_multiplications",
))
