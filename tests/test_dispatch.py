"""seqlab.measure.dispatch: the one prologue every measuring mode runs before its own rule (issue 36)."""

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from seqlab.measure import dispatch
from seqlab.measure.modes import EngineMode


class Recording(EngineMode):
    """Runs every op; records which the prologue passed on and which it left to the mode's own rule."""

    supports_higher_order_operators = True  # as the engine's modes: higher-order ops reach __torch_dispatch__

    def __init__(self):
        super().__init__()
        self.own, self.passed = [], []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        answer = dispatch.passed_on(self, func, types, args, kwargs)
        if answer is dispatch.OWN_RULE:
            self.own.append(func.overloadpacket.__name__)
            return func(*args, **kwargs)
        self.passed.append(str(func))
        return answer


def test_plain_ops_are_the_modes_own():
    x = torch.ones(3)
    with Recording() as mode:
        y = (x * 2).sum()
    assert y.item() == 6.0 and mode.own == ["mul", "sum"] and mode.passed == []


def test_a_higher_order_op_is_handed_to_its_eager_runner(monkeypatch):
    """The prologue hands a higher-order op (FlexAttention, cond, while_loop) to ops.run_higher_order with the mode
    itself, so its parts come back to that mode (tests/test_traced_pass.py runs real ones end to end)."""
    calls = []
    monkeypatch.setattr(dispatch, "is_higher_order", lambda func: func == "hop")
    monkeypatch.setattr(dispatch, "run_higher_order", lambda mode, func, args, kwargs: calls.append(
        (mode, func, args, kwargs)) or "ran")
    mode = Recording()
    assert dispatch.passed_on(mode, "hop", (torch.Tensor,), (1,), {"k": 2}) == "ran"
    assert calls == [(mode, "hop", (1,), {"k": 2})]
    assert dispatch.passed_on(mode, torch.ops.aten.mul.Tensor, (torch.Tensor,), (), {}) is dispatch.OWN_RULE


def test_a_subclass_that_dispatches_itself_gets_not_implemented():
    class Wrapper(torch.Tensor):
        @classmethod
        def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
            unwrapped = [a.as_subclass(torch.Tensor) if isinstance(a, Wrapper) else a for a in args]
            return func(*unwrapped, **(kwargs or {}))

    answers = []
    mode = Recording()
    answer = dispatch.passed_on(mode, torch.ops.aten.add.Tensor, (Wrapper,), (), {})
    answers.append(answer)
    assert answers == [NotImplemented]
    assert dispatch.passed_on(mode, torch.ops.aten.add.Tensor, (torch.Tensor,), (), {}) is dispatch.OWN_RULE


def test_own_rule_is_a_sentinel_no_op_returns():
    assert dispatch.OWN_RULE is not None and dispatch.OWN_RULE is not NotImplemented
    assert isinstance(Recording(), TorchDispatchMode)
