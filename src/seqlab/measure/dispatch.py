"""What every measuring dispatch mode does before its own rule: ops it must not measure itself are passed on.

Two kinds of op reach a mode that its own rule must not see whole:

* an op on a tensor subclass with a ``__torch_dispatch__`` of its own (a jagged nested tensor, a wrapper): the
  mode answers ``NotImplemented``, the subclass runs it, and its dense parts come back to the mode
  (:func:`seqlab.measure.ops.defers_to_subclass`);
* a higher-order op (FlexAttention, ``torch.cond``, ``while_loop``): it runs through its eager implementation with
  the mode on, so that its parts come back op by op (:func:`seqlab.measure.ops.run_higher_order`).

:func:`passed_on` is that prologue, written once for the span tracer (:mod:`seqlab.measure.trace`), the path
tracer (:mod:`seqlab.measure.path_tracer`), the counting mode (:mod:`seqlab.measure.work`) and the traced pass
(:mod:`seqlab.measure.traced_pass`). It sits apart from :mod:`seqlab.measure.modes` because
:mod:`seqlab.measure.ops` builds on that module.
"""

from __future__ import annotations

import torch

from seqlab.measure.ops import defers_to_subclass, is_higher_order, run_higher_order

__all__ = ["OWN_RULE", "passed_on"]

#: What :func:`passed_on` returns when the op is the mode's own to run and measure.
OWN_RULE = object()


def passed_on(mode, func, types, args: tuple, kwargs: dict) -> object:
    """The answer to an op the mode passes on, or :data:`OWN_RULE` when its own rule takes the op.

    >>> import torch
    >>> from seqlab.measure.modes import EngineMode
    >>> class Mine(EngineMode):
    ...     def __torch_dispatch__(self, func, types, args=(), kwargs=None):
    ...         kwargs = kwargs or {}
    ...         answer = passed_on(self, func, types, args, kwargs)
    ...         return func(*args, **kwargs) if answer is OWN_RULE else answer
    >>> with Mine():
    ...     (torch.ones(2) * 3).tolist()
    [3.0, 3.0]

    Args:
        mode: the dispatch mode the op reached. func, types, args, kwargs: as ``__torch_dispatch__`` got them.

    Returns:
        ``NotImplemented`` for an op of a tensor subclass that dispatches itself; a higher-order op's result
        (its parts measured by ``mode``); else :data:`OWN_RULE`.

    Raises:
        SeqlabError: a higher-order op with no eager implementation (see
            :func:`~seqlab.measure.ops.run_higher_order`).
    """
    types = types if type(types) is tuple else tuple(types)
    defers = _DEFERS.get(types)
    if defers is None:  # decided once per tuple of argument types (a plain tensor's tuple is met at every op)
        defers = _DEFERS[types] = defers_to_subclass(types)
    if defers:  # a jagged nested tensor, a wrapper: its dense parts come back here
        return NotImplemented
    if type(func) is not _OVERLOAD and is_higher_order(func):  # FlexAttention, cond, while_loop: their parts
        return run_higher_order(mode, func, args, kwargs)  # come back here
    return OWN_RULE


_OVERLOAD = torch._ops.OpOverload
#: tuple of argument types -> whether one of them dispatches itself (types live as long as the process)
_DEFERS: dict[tuple, bool] = {}
