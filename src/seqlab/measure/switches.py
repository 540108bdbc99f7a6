"""Global switches and module modes that seqlab changes while it measures, put back exactly as they were.

Some measurements need PyTorch in another state than the user's: the span and path tracers switch
fused kernels off (:func:`reference_kernels`) so the chain inside them is seen as ops, and ``profile``
measures a module in eval mode (:func:`evaluation_mode`). Those are *process-wide* settings — the
``nn.MultiheadAttention`` / ``nn.TransformerEncoderLayer`` fast path, oneDNN, the SDPA backends — or
flags on a module several threads may share. A plain save-and-restore breaks when two threads measure
at once: the second saves the first's temporary value and restores it last, so the change outlives
both, and the first to leave switches the setting back while the other is still measuring.

Rule (issue 13, kind 8): a :class:`SharedSwitch` keeps the *holds* on one setting. The first hold
saves the setting's value; every hold sets its own value; when a hold ends, the setting takes the
value of the latest hold still active, or, when none is left, exactly the value saved by the first.
Holds may nest in one thread or overlap across threads, in any order of leaving. Holds are counted
under a lock; the value is what the latest hold asked for. Code that does not hold a switch but runs
while another thread holds it sees the held value (the settings are process-wide in PyTorch itself).

The CPU thread count is not a :class:`SharedSwitch`: under PyTorch's OpenMP backend ``torch.set_num_threads``
sets the count of the *calling* thread (other running threads keep theirs; a thread started later begins with
the count set last). :func:`one_thread` therefore holds it per thread — re-entrant in a thread, restored on
exit and on exception — so a trace on one thread never changes the threads of a timing running beside it in
another thread (timings set their own count, :func:`seqlab.measure.timing.fixed_threads`). Web workers are
separate processes and have counts of their own. Grad mode is per thread in PyTorch and not handled here.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import importlib
import re
import sys
import threading
import warnings
import weakref
from collections.abc import Callable, Iterator
from typing import Any

import torch

__all__ = ["SharedSwitch", "collector_paused", "evaluation_mode", "fast_paths_off", "one_thread", "reference_kernels",
           "warnings_ignored"]


class SharedSwitch:
    """One process-wide setting, held at a value by any number of nested or concurrent holders.

    >>> box = {"on": True}
    >>> switch = SharedSwitch("demo", lambda: box["on"], lambda value: box.update(on=value))
    >>> with switch.held(False):
    ...     with switch.held(False):
    ...         inner = box["on"]
    ...     still = box["on"]
    >>> inner, still, box["on"]
    (False, False, True)

    Args:
        name: what the setting is, for messages and ``repr``.
        read: returns the current value. write: sets a value (any value ``read`` returned or a hold asked).
    """

    def __init__(self, name: str, read: Callable[[], Any], write: Callable[[Any], None]) -> None:
        self.name = name
        self._read = read
        self._write = write
        self._lock = threading.Lock()
        self._holds: list[tuple[object, Any]] = []
        self._saved: Any = None

    def __repr__(self) -> str:
        return f"SharedSwitch({self.name!r}, holds={len(self._holds)})"

    @property
    def holds(self) -> int:
        """How many holds are active now (0: the setting is the user's)."""
        return len(self._holds)

    @contextlib.contextmanager
    def held(self, value: Any) -> Iterator[None]:
        """Hold the setting at ``value`` for the block; see the module's rule for how holds combine."""
        token = object()
        with self._lock:
            if not self._holds:
                self._saved = self._read()
            self._holds.append((token, value))
            self._write(value)
        try:
            yield
        finally:
            with self._lock:
                self._holds = [hold for hold in self._holds if hold[0] is not token]
                self._write(self._holds[-1][1] if self._holds else self._saved)
                if not self._holds:
                    self._saved = None


def _set_warning_filters(value: list) -> None:
    warnings.filters[:] = value
    mutated = getattr(warnings, "_filters_mutated", None)  # the C side's cache of the filters
    if mutated is not None:
        mutated()


#: Python's warning filters: process-wide, and ``warnings.catch_warnings`` restores them by save-and-restore,
#: so two threads that overlap leave one's filter behind (a reach on compare's reach thread beside a check on the
#: main thread did). Measurements hold them through :func:`warnings_ignored`.
WARNING_FILTERS = SharedSwitch("warning filters", lambda: list(warnings.filters), _set_warning_filters)


@contextlib.contextmanager
def warnings_ignored(message: str | None = None, category: type[Warning] = Warning) -> Iterator[None]:
    """Ignore the warnings whose text matches ``message`` (a regular expression, case-insensitive, from the start,
    as :func:`warnings.filterwarnings` reads it; ``None``: every warning of ``category``) for the block, in every
    thread, and give the filters back exactly as they were once no thread holds them (:class:`SharedSwitch`).

    >>> before = list(warnings.filters)
    >>> with warnings_ignored(".*performance drop.*"):
    ...     warnings.warn("a performance drop, as vmap says")  # ignored
    >>> warnings.filters == before
    True
    """
    entry = ("ignore", None if message is None else re.compile(message, re.I), category, None, 0)
    with WARNING_FILTERS.held([entry, *(item for item in warnings.filters if item != entry)]):
        yield


def _sdpa_backends() -> tuple[bool, bool, bool, bool]:
    cuda = torch.backends.cuda
    return (cuda.flash_sdp_enabled(), cuda.mem_efficient_sdp_enabled(), cuda.math_sdp_enabled(),
            cuda.cudnn_sdp_enabled())


def _set_sdpa_backends(value: tuple[bool, bool, bool, bool]) -> None:
    cuda = torch.backends.cuda
    flash, efficient, math, cudnn = value
    cuda.enable_flash_sdp(flash)
    cuda.enable_mem_efficient_sdp(efficient)
    cuda.enable_math_sdp(math)
    cuda.enable_cudnn_sdp(cudnn)


def _set_mkldnn(value: bool) -> None:
    torch.backends.mkldnn.enabled = value


FAST_PATH = SharedSwitch("nn.MultiheadAttention / TransformerEncoderLayer fast path",
                         torch.backends.mha.get_fastpath_enabled, torch.backends.mha.set_fastpath_enabled)
"""The ``torch.backends.mha`` fast path switch (PyTorch's public getter and setter)."""

ONEDNN = SharedSwitch("oneDNN (torch.backends.mkldnn.enabled)", lambda: bool(torch.backends.mkldnn.enabled),
                      _set_mkldnn)
"""oneDNN on CPU: with it, ``nn.LSTM`` / ``nn.GRU`` run as one fused ``mkldnn_rnn_layer`` op."""

SDPA_BACKENDS = SharedSwitch("SDPA backends (flash, memory-efficient, math, cuDNN)", _sdpa_backends,
                             _set_sdpa_backends)
"""Which SDPA kernels may run, through ``torch.backends.cuda``'s public switches (they also govern the CPU
flash kernel); held at math only, SDPA runs its reference: two ``bmm`` and a softmax. The "overrideable"
backend of out-of-tree devices has no public switch and is left as it is."""


#: The modules whose ``torch.backends.mha`` fast path can change what runs, not only which kernel: under
#: ``no_grad`` in eval mode a padded batch with a key-padding mask is packed into a nested tensor, so the padding
#: is never computed (PyTorch's own list: the modules that read ``torch.backends.mha.get_fastpath_enabled``).
FAST_PATH_MODULES = (torch.nn.MultiheadAttention, torch.nn.TransformerEncoderLayer, torch.nn.TransformerEncoder)


def has_fast_path(module: object) -> bool:
    """Whether ``module`` holds a module whose fast path can change the work it does (:data:`FAST_PATH_MODULES`):
    its work under the default kernels may then differ from its work under :func:`reference_kernels`.

    >>> has_fast_path(torch.nn.TransformerEncoderLayer(8, 2)), has_fast_path(torch.nn.LSTM(4, 4))
    (True, False)
    """
    return isinstance(module, torch.nn.Module) and any(isinstance(m, FAST_PATH_MODULES) for m in module.modules())


@contextlib.contextmanager
def fast_paths_off() -> Iterator[None]:
    """Hold the ``nn.MultiheadAttention`` / ``nn.TransformerEncoderLayer`` fast path off (re-entrant, thread-safe).

    >>> with fast_paths_off():
    ...     torch.backends.mha.get_fastpath_enabled()
    False
    """
    with FAST_PATH.held(False):
        yield


#: FlexAttention's switch for its eager path: on, it calls its higher-order op directly (no ``torch.compile``, which
#: cannot run under a dispatch mode and, once it has failed there, fails the next call of the process too).
_FLEX_MODULE = "torch.nn.attention.flex_attention"
_FLEX_FLAG = "_FLEX_ATTENTION_DISABLE_COMPILE_DEBUG"


@functools.cache
def _flex_switch():
    module = sys.modules[_FLEX_MODULE]
    return SharedSwitch("FlexAttention's eager path", lambda: getattr(module, _FLEX_FLAG),
                        lambda value: setattr(module, _FLEX_FLAG, value))


@contextlib.contextmanager
def eager_higher_order() -> Iterator[None]:
    """Hold FlexAttention on its eager path for the block (its higher-order op reaches the dispatch mode, which runs
    it by :func:`~seqlab.measure.ops.run_higher_order`), re-entrant and thread-safe, the flag back as it was after (a
    :class:`SharedSwitch`). FlexAttention's module is imported here (a few milliseconds, not Dynamo), so that a layer
    importing it in its own forward still finds the flag held.

    >>> with eager_higher_order():
    ...     pass
    """
    # imported here (4 ms, no Dynamo), so the flag is held even when the layer imports FlexAttention in its forward
    importlib.import_module(_FLEX_MODULE)
    if not hasattr(sys.modules[_FLEX_MODULE], _FLEX_FLAG):  # another PyTorch: nothing to switch
        yield
        return
    with _flex_switch().held(True):
        yield


@contextlib.contextmanager
def reference_kernels() -> Iterator[None]:
    """Switch off fused CPU kernels so their inner chain runs as ordinary ops that a trace can see.

    SDPA uses its math reference (two ``bmm`` and a softmax), ``nn.MultiheadAttention`` and
    ``nn.TransformerEncoderLayer`` leave their fast path, oneDNN's fused LSTM/GRU is disabled, and FlexAttention
    calls its higher-order op without ``torch.compile`` (:func:`eager_higher_order`).
    Results are the same up to rounding; only the kernels change. Re-entrant and thread-safe: every
    switch comes back exactly as it was when the last holder leaves (see :class:`SharedSwitch`).

    >>> before = torch.backends.mkldnn.enabled
    >>> with reference_kernels():
    ...     torch.backends.mkldnn.enabled, torch.backends.cuda.flash_sdp_enabled()
    (False, False)
    >>> torch.backends.mkldnn.enabled == before
    True
    """
    with FAST_PATH.held(False), ONEDNN.held(False), SDPA_BACKENDS.held((False, False, True, False)), \
            eager_higher_order():
        yield


_MODULE_SWITCHES: weakref.WeakKeyDictionary[torch.nn.Module, SharedSwitch] = weakref.WeakKeyDictionary()
_MODULE_SWITCHES_LOCK = threading.Lock()


def _module_switch(module: torch.nn.Module) -> SharedSwitch:
    """The switch of every ``training`` flag in ``module``'s tree (one per module object, made on first use); a module
    with no flag (a ``torch.jit.freeze``'d one, always in eval mode, its flag inlined) is left alone."""
    with _MODULE_SWITCHES_LOCK:
        switch = _MODULE_SWITCHES.get(module)
        if switch is None:
            ref = weakref.ref(module)

            def read() -> tuple[tuple[torch.nn.Module, bool], ...]:
                return tuple((m, m.training) for m in ref().modules() if hasattr(m, "training"))

            def write(flags: tuple[tuple[torch.nn.Module, bool], ...] | bool) -> None:
                for m, flag in flags if isinstance(flags, tuple) else ((m, flags) for m in ref().modules()
                                                                        if hasattr(m, "training")):
                    m.training = flag

            switch = _MODULE_SWITCHES[module] = SharedSwitch(f"training flags of {type(module).__name__}", read,
                                                             write)
        return switch


@contextlib.contextmanager
def evaluation_mode(module: object) -> Iterator[None]:
    """Every submodule of ``module`` in eval mode for the block, then each ``training`` flag as it was.

    Unlike ``module.train(was_training)``, which sets every child to the parent's mode, each submodule
    gets its own flag back (an eval-mode ``Dropout`` inside a training model stays in eval mode). A
    callable that is not an ``nn.Module`` is left alone. Re-entrant and thread-safe (:class:`SharedSwitch`).

    >>> net = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.Dropout()).train()
    >>> _ = net[1].eval()
    >>> with evaluation_mode(net):
    ...     net.training, net[1].training
    (False, False)
    >>> net.training, net[0].training, net[1].training
    (True, True, False)
    """
    if not isinstance(module, torch.nn.Module):
        yield
        return
    with _module_switch(module).held(False):
        yield


_THREADS = threading.local()


@contextlib.contextmanager
def one_thread() -> Iterator[None]:
    """Run the block on one CPU thread, then give the calling thread its count back (issue 17).

    Tracing and counting pay Python per op: on a busy machine idle OpenMP threads spinning on taken cores
    slow them many times (``seqlab compare`` took 98 s instead of 9.7 s with a load of 3.5 on 2 cores).
    Re-entrant (nested holds in one thread restore once, at the outermost exit) and thread-safe: the count
    is per thread (see the module's docstring), so holds in different threads do not fight.

    >>> before = torch.get_num_threads()
    >>> with one_thread():
    ...     with one_thread():
    ...         inner = torch.get_num_threads()
    ...     still = torch.get_num_threads()
    >>> inner, still, torch.get_num_threads() == before
    (1, 1, True)
    """
    depth = getattr(_THREADS, "depth", 0)
    if depth == 0:
        _THREADS.saved = torch.get_num_threads()
        if _THREADS.saved != 1:
            torch.set_num_threads(1)
    _THREADS.depth = depth + 1
    try:
        yield
    finally:
        _THREADS.depth -= 1
        if _THREADS.depth == 0 and _THREADS.saved != 1:
            torch.set_num_threads(_THREADS.saved)


_COLLECTOR = threading.local()


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector for a traced pass run in the main thread; elsewhere do nothing.

    A pass allocates a few small objects per op while it keeps every distance tensor alive, so the collector's
    full sweeps grow with the pass itself: about a fifth of an Elman RNN's traced pass at T = 1000, d = 512 (CPU
    time, ``benchmarks/one_pass_cost.py``). Reference counting still frees what each op drops; only cycles wait
    until the block ends. The collector is the interpreter's, so the switch is touched only from the main thread
    (never from a server's worker thread), re-entrantly (nested blocks restore once, at the outermost exit), and
    left alone when someone else has already turned it off.

    >>> import gc
    >>> with collector_paused():
    ...     with collector_paused():
    ...         inner = gc.isenabled()
    ...     still = gc.isenabled()
    >>> inner, still, gc.isenabled()
    (False, False, True)
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    depth = getattr(_COLLECTOR, "depth", 0)
    if depth == 0:
        _COLLECTOR.owned = gc.isenabled()
        if _COLLECTOR.owned:
            gc.disable()
    _COLLECTOR.depth = depth + 1
    try:
        yield
    finally:
        _COLLECTOR.depth -= 1
        if _COLLECTOR.depth == 0 and _COLLECTOR.owned:
            gc.enable()
