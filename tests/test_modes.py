"""seqlab.measure.modes: the engine's dispatch modes run without Dynamo's wrapper, and are shielded once it is
imported."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import torch

from seqlab.measure import modes
from seqlab.measure.modes import EngineMode


class Recording(EngineMode):
    """Records the op names it dispatches."""

    def __init__(self):
        super().__init__()
        self.seen = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.seen.append(str(func.overloadpacket))
        return func(*args, **(kwargs or {}))


def test_an_engine_mode_dispatches_every_op_and_returns_its_result():
    with Recording() as mode:
        y = torch.ones(2, 3) @ torch.ones(3, 1) + 1
    assert y.tolist() == [[4.0], [4.0]]
    assert mode.seen == ["aten.ones", "aten.ones", "aten.mm", "aten.add"]


def test_an_engine_mode_never_imports_dynamo():
    """In a fresh process: a mode entered and an op dispatched leave ``torch._dynamo`` unimported (≈ 1.5 s saved)."""
    code = textwrap.dedent("""
        import sys, torch
        from seqlab.measure.modes import EngineMode
        class M(EngineMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                return func(*args, **(kwargs or {}))
        with M():
            torch.ones(3).sum()
        print("torch._dynamo" in sys.modules)
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"


def test_every_seqlab_mode_opts_out_of_the_wrapper():
    import seqlab.measure.path_tracer
    import seqlab.measure.trace
    import seqlab.measure.traced_pass
    import seqlab.measure.work  # noqa: F401

    found = modes._engine_modes()
    assert Recording not in found  # only seqlab's own modes
    names = {cls.__qualname__ for cls in found}
    assert len(found) >= 4, names
    assert all(cls._should_skip_dynamo() is False for cls in found), names


def test_shielding_wraps_each_mode_once_and_the_mode_still_works():
    """In a fresh process (the shield changes classes for the whole process): once Dynamo is imported, every engine
    mode's ``__torch_dispatch__`` is wrapped, once, and the engine still measures."""
    code = textwrap.dedent("""
        import torch
        from seqlab.measure import modes, path_tracer, trace, traced_pass, work
        import torch._dynamo
        raw = {cls: cls.__dict__.get("__torch_dispatch__") for cls in modes._engine_modes()}
        modes.shield_from_dynamo()
        first = {cls: cls.__dict__.get("__torch_dispatch__") for cls in modes._engine_modes()}
        modes.shield_from_dynamo()
        again = {cls: cls.__dict__.get("__torch_dispatch__") for cls in modes._engine_modes()}
        wrapped = [cls for cls in raw if raw[cls] is not None and first[cls] is not raw[cls]]
        print(len(wrapped) >= 3, all(first[cls]._shielded for cls in wrapped), first == again)
        w = torch.ones(2, 2)
        print(trace.measure_span(lambda x: x @ w @ w, torch.ones(3, 2)).products == 2)
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "True", "True", "True"]
