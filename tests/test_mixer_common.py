"""seqlab.layers.mixer_common: the modern mixers' weights, input checks and quadratic-memory estimate.

(Generic tests over every registered mixer — forms agree, step = forward, counted = closed form — live with the
registry in tests/test_mixers.py.)
"""

from __future__ import annotations

import math

import pytest
import torch

from seqlab.errors import SeqlabError
from seqlab.layers.mixer_common import (
    check_form,
    check_sequence,
    check_step,
    linear,
    quadratic_bytes,
)

F64 = torch.float64


def test_linear_is_bias_free_seeded_and_leaves_the_global_rng_alone():
    before = torch.random.get_rng_state()
    a = linear(4, 3, torch.Generator().manual_seed(0), F64)
    b = linear(4, 3, torch.Generator().manual_seed(0), F64)
    assert torch.equal(torch.random.get_rng_state(), before)
    assert a.bias is None and a.weight.shape == (3, 4) and a.weight.dtype == F64 and a.weight.device.type == "cpu"
    assert torch.equal(a.weight, b.weight)
    assert not torch.equal(a.weight, linear(4, 3, torch.Generator().manual_seed(1), F64).weight)


@pytest.mark.parametrize("d_in", [1, 4, 100])
def test_linear_draws_within_torchs_bound(d_in):
    """U(−1/√fan_in, 1/√fan_in), as torch.nn.Linear draws its weight."""
    weight = linear(d_in, 64, torch.Generator().manual_seed(3), F64).weight.detach()
    bound = 1 / math.sqrt(d_in)
    assert float(weight.abs().max()) <= bound
    assert float(weight.abs().max()) > 0.9 * bound  # the draw covers the range (64·d_in ≥ 64 samples)


def test_check_sequence():
    module = torch.nn.Linear(3, 3).double()
    x = torch.zeros(2, 5, 3, dtype=F64)
    assert check_sequence(module, x, 3) is x
    assert check_sequence(module, torch.zeros(1, 1, 3, dtype=F64), 3).shape == (1, 1, 3)  # T = 1, the boundary
    for bad, shown in ((torch.zeros(2, 0, 3, dtype=F64), "(2, 0, 3)"), (torch.zeros(5, 3, dtype=F64), "(5, 3)"),
                       (torch.zeros(2, 5, 4, dtype=F64), "(2, 5, 4)"), ([1, 2], "list")):
        with pytest.raises(SeqlabError) as error:
            check_sequence(module, bad, 3)
        assert str(error.value) == f"x must have shape (B, T, 3) with T >= 1, received {shown}"
    with pytest.raises(SeqlabError, match=r"^x must have the mixer's dtype torch.float64, received torch.float32$"):
        check_sequence(module, torch.zeros(2, 5, 3), 3)


def test_check_step():
    module = torch.nn.Linear(3, 3)
    x_t = torch.zeros(2, 3)
    check_step(module, x_t, 3, (torch.zeros(2, 4), torch.zeros(2, 4, 4)), [(2, 4), (2, 4, 4)])
    with pytest.raises(SeqlabError, match=r"^x_t must have shape \(B, 3\), received \(2, 1, 3\)$"):
        check_step(module, torch.zeros(2, 1, 3), 3, (), [])
    with pytest.raises(SeqlabError, match=r"^x_t must have the mixer's dtype torch.float32, received torch.float64$"):
        check_step(module, torch.zeros(2, 3, dtype=F64), 3, (), [])
    with pytest.raises(SeqlabError) as error:
        check_step(module, x_t, 3, (torch.zeros(2, 5),), [(2, 4)])
    assert str(error.value) == ("state must be a tuple of tensors shaped [(2, 4)] (from initial_state), "
                                "received [(2, 5)]")
    with pytest.raises(SeqlabError, match=r"received list$"):
        check_step(module, x_t, 3, [torch.zeros(2, 4)], [(2, 4)])
    with pytest.raises(SeqlabError, match=r"received \['int'\]$"):
        check_step(module, x_t, 3, (3,), [(2, 4)])


@pytest.mark.parametrize("batch, T, dtype, maps, expected", [
    (1, 1024, torch.float32, 3, 3 * 1024**2 * 4), (2, 10, F64, 1, 2 * 100 * 8), (3, 7, torch.bfloat16, 2, 2 * 3 * 49 * 2),
])
def test_quadratic_bytes(batch, T, dtype, maps, expected):
    assert quadratic_bytes(batch, T, dtype, maps) == expected
    assert quadratic_bytes(batch, T, dtype, maps) == maps * torch.zeros(batch, T, T, dtype=dtype).nbytes


def test_check_form_is_the_shared_one():
    assert check_form("loop", ("loop", "scan")) == "loop"
    with pytest.raises(SeqlabError):
        check_form("fast", ("loop",))
