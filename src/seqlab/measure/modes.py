"""The one base of the engine's dispatch modes: a ``TorchDispatchMode`` that is never compiled (issue 34).

PyTorch wraps every ``TorchDispatchMode.__torch_dispatch__`` in ``torch._disable_dynamo`` unless the class says
otherwise: the first op dispatched then imports ``torch._dynamo`` (about 1.5 s, ENGINE-NOTES "The cost of
measuring") and every op goes through the wrapper. The engine's modes run eager ops only, never inside a compiled
region, so they opt out (``_should_skip_dynamo``, PyTorch's own switch for this). Every dispatch mode of seqlab
derives from :class:`EngineMode`, or sets the same switch where it must derive from a PyTorch mode
(:mod:`seqlab.measure.work`'s counting mode).
"""

from __future__ import annotations

from torch.utils._python_dispatch import TorchDispatchMode

__all__ = ["EngineMode"]


class EngineMode(TorchDispatchMode):
    """A ``TorchDispatchMode`` without the ``torch._dynamo`` wrapper (see the module's docstring).

    >>> import sys, torch
    >>> class Count(EngineMode):
    ...     def __torch_dispatch__(self, func, types, args=(), kwargs=None):
    ...         return func(*args, **(kwargs or {}))
    >>> with Count():
    ...     _ = torch.ones(2) + 1
    >>> Count.__torch_dispatch__.__module__ != "torch._compile"  # no wrapper around it
    True
    """

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        return False
