"""The one base of the engine's dispatch modes: a ``TorchDispatchMode`` that is never compiled (issue 34).

PyTorch wraps every ``TorchDispatchMode.__torch_dispatch__`` in ``torch._disable_dynamo`` unless the class says
otherwise: the first op dispatched then imports ``torch._dynamo`` (about 1.5 s, ENGINE-NOTES "The cost of
measuring") and every op goes through the wrapper. The engine's modes run eager ops only, never inside a compiled
region, so they opt out (``_should_skip_dynamo``, PyTorch's own switch for this). Every dispatch mode of seqlab
derives from :class:`EngineMode`, or sets the same switch where it must derive from a PyTorch mode
(:mod:`seqlab.measure.work`'s counting mode).

A higher-order op (``torch.cond``, ``while_loop``) compiles its functions with Dynamo, which would then trace into a
mode's Python as it dispatches their parts. So once ``torch._dynamo`` is imported — when a mode is entered, and before
a higher-order op runs — :func:`shield_from_dynamo` puts PyTorch's own wrapper back around every engine mode; a process
that never imports Dynamo never pays for it.
"""

from __future__ import annotations

import sys

import torch
from torch.utils._python_dispatch import TorchDispatchMode

__all__ = ["EngineMode", "shield_from_dynamo"]


class EngineMode(TorchDispatchMode):
    """A ``TorchDispatchMode`` without the ``torch._dynamo`` wrapper (see the module's docstring).

    >>> import torch
    >>> class Count(EngineMode):
    ...     def __torch_dispatch__(self, func, types, args=(), kwargs=None):
    ...         return func(*args, **(kwargs or {}))
    >>> with Count():
    ...     (torch.ones(2) + 1).tolist()
    [2.0, 2.0]
    >>> Count._should_skip_dynamo()  # PyTorch adds no wrapper of its own at class creation
    False
    """

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        return False

    def __enter__(self):
        if "torch._dynamo" in sys.modules:  # something may compile while the mode is on (a higher-order op's parts)
            shield_from_dynamo()
        return super().__enter__()


def _engine_modes(cls: type = TorchDispatchMode) -> list[type]:
    """Every dispatch mode class defined in seqlab (subclasses of PyTorch's, found through ``__subclasses__``)."""
    found = []
    for sub in cls.__subclasses__():
        if sub.__module__.startswith("seqlab."):
            found.append(sub)
        found.extend(_engine_modes(sub))
    return found


def shield_from_dynamo() -> None:
    """Put PyTorch's own ``torch._disable_dynamo`` wrapper around every engine mode's ``__torch_dispatch__`` (what
    PyTorch does by default), once Dynamo is imported: whatever compiles while a mode is on (a higher-order op's
    functions, FlexAttention's) then runs the mode's Python untraced. Called when a mode is entered with Dynamo
    imported, and before a higher-order op runs (its first call may import Dynamo). Idempotent.
    """
    for cls in _engine_modes():
        raw = cls.__dict__.get("__torch_dispatch__")
        if raw is not None and not isinstance(raw, classmethod) and not getattr(raw, "_shielded", False):
            wrapped = torch._disable_dynamo(raw, recursive=True)
            wrapped._shielded = True
            cls.__torch_dispatch__ = wrapped
