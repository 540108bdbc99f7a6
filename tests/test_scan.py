"""Prefix scans (seqlab.layers.scan): the parallel methods equal the loop; their span grows as log T, the loop's as T.

Tolerance: float64, atol 1e-12 (the scan only regroups the same products and sums of numbers of size ~1).
"""

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch.utils._python_dispatch import TorchDispatchMode

from seqlab.errors import SeqlabError
from seqlab.fit import fit_growth
from seqlab.layers.scan import SCAN_METHODS, associative_scan, scan_products, scan_rounds, sequential_scan
from seqlab.measure.trace import measure_span

LENGTHS = (16, 32, 64, 128, 256)


def by_hand(a: torch.Tensor, b: torch.Tensor, h0: torch.Tensor) -> torch.Tensor:
    """h_t = a_t h_{t-1} + b_t on (T, n), written out element by element: a third route."""
    rows, h = [], h0.tolist()
    for t in range(b.shape[0]):
        h = [a[t, i].item() * h[i] + b[t, i].item() for i in range(b.shape[1])]
        rows.append(h)
    return torch.tensor(rows, dtype=torch.float64)


@pytest.mark.parametrize("method", SCAN_METHODS)
@pytest.mark.parametrize("T", [1, 2, 3, 7, 16, 33])
def test_scan_equals_loop_equals_hand_arithmetic(method, T):
    generator = torch.Generator().manual_seed(T)
    a = torch.rand(T, 3, dtype=torch.float64, generator=generator) * 2 - 1  # (T, n), decays in (-1, 1)
    b = torch.randn(T, 3, dtype=torch.float64, generator=generator)
    h0 = torch.randn(3, dtype=torch.float64, generator=generator)
    expected = by_hand(a, b, h0)
    assert torch.allclose(sequential_scan(a, b, dim=0, initial=h0), expected, rtol=0, atol=1e-12)
    assert torch.allclose(associative_scan(a, b, dim=0, method=method, initial=h0), expected, rtol=0, atol=1e-12)


@settings(max_examples=30, deadline=None)
@given(shape=st.lists(st.integers(1, 5), min_size=1, max_size=3), T=st.integers(1, 40),
       where=st.integers(0, 3), method=st.sampled_from(SCAN_METHODS), constant_decay=st.booleans(),
       with_initial=st.booleans(), seed=st.integers(0, 2**16))
def test_scan_equals_loop_on_random_shapes(shape, T, where, method, constant_decay, with_initial, seed):
    dim = where % (len(shape) + 1)
    full = [*shape[:dim], T, *shape[dim:]]
    generator = torch.Generator().manual_seed(seed)
    b = torch.randn(full, dtype=torch.float64, generator=generator)
    a_shape = [1 if i == dim else n for i, n in enumerate(full)] if constant_decay else full
    a = torch.rand(a_shape, dtype=torch.float64, generator=generator)  # broadcast over T when constant
    initial = torch.randn(shape, dtype=torch.float64, generator=generator) if with_initial else None
    loop = sequential_scan(a, b, dim, initial=initial)
    scan = associative_scan(a, b, dim=dim, method=method, initial=initial)
    assert scan.shape == loop.shape == b.shape
    assert torch.allclose(scan, loop, rtol=0, atol=1e-12)


def test_initial_state_is_h0():
    a, b = torch.full((1, 3, 1), 0.5, dtype=torch.float64), torch.zeros(1, 3, 1, dtype=torch.float64)
    h0 = torch.tensor([[8.0]], dtype=torch.float64)
    # h_t = 8 * 0.5**t: 4, 2, 1
    assert sequential_scan(a, b, initial=h0).flatten().tolist() == [4.0, 2.0, 1.0]
    for method in SCAN_METHODS:
        assert associative_scan(a, b, method=method, initial=h0).flatten().tolist() == [4.0, 2.0, 1.0]


# --- Span: log T against T ---------------------------------------------------------------------------------

def spans(function, **kwargs) -> list[int]:
    return [measure_span(function, torch.rand(1, T, 2), torch.rand(1, T, 2), **kwargs).ops for T in LENGTHS]


def test_hillis_steele_span_is_two_ops_per_round_and_fits_log_t():
    measured = spans(associative_scan, method="hillis_steele")
    assert measured == [2 * scan_rounds(T) for T in LENGTHS]  # 8, 10, 12, 14, 16: a product and a sum per round
    fit = fit_growth(LENGTHS, measured)
    assert fit.model == "log"
    assert fit.log_slope * math.log(2) == pytest.approx(2.0)  # 2 ops per doubling of T


def test_blelloch_span_is_four_ops_per_halving_and_fits_log_t():
    measured = spans(associative_scan, method="blelloch")
    assert measured == [4 * scan_rounds(T) - 2 for T in LENGTHS]  # up 2 and down 2 per level; the top level 2
    fit = fit_growth(LENGTHS, measured)
    assert fit.model == "log" and fit.exponent < 0.3


def test_loop_span_is_two_ops_per_step_and_linear_in_t():
    measured = spans(sequential_scan)
    assert measured == [2 * (T - 1) for T in LENGTHS]  # a product and a sum for each step after the first
    fit = fit_growth(LENGTHS, measured)
    assert fit.model == "power" and abs(fit.exponent - 1) < 0.1


def test_the_log_fit_would_fail_on_a_linear_span():
    """The fit that passes the scan must refuse a span that grows like the loop's (the check can fail)."""
    fit = fit_growth(LENGTHS, [2 * (T - 1) for T in LENGTHS])
    assert fit.model != "log" and fit.exponent > 0.2


def test_scan_rounds():
    assert [scan_rounds(T) for T in (1, 2, 3, 4, 5, 1024, 1025)] == [0, 1, 2, 2, 3, 10, 11]  # ⌈log2 T⌉
    assert scan_rounds(1025, "blelloch") == 11


# --- Element-wise work: what the scan pays for its short chain --------------------------------------------------

class ProductCensus(TorchDispatchMode):
    """Counts the elements written by every aten.mul: the element-wise products actually made."""

    def __init__(self) -> None:
        super().__init__()
        self.products = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        if func.overloadpacket is torch.ops.aten.mul:
            self.products += out.numel()
        return out


@pytest.mark.parametrize("T", [1, 2, 5, 17, 100, 1024])
def test_element_wise_products_equal_their_closed_forms(T):
    routes = {"loop": sequential_scan, "hillis_steele": lambda a, b: associative_scan(a, b, method="hillis_steele"),
              "blelloch": lambda a, b: associative_scan(a, b, method="blelloch")}
    for method, scan in routes.items():
        census = ProductCensus()
        with census:
            scan(torch.rand(1, T, 3), torch.rand(1, T, 3))
        assert census.products == 3 * scan_products(T, method), method  # 3 channels
    if T == 1024:  # loop 1,023; Hillis-Steele (2 * 10 - 1) * 1,024 = 19,456; Blelloch 3,069, about 3T
        assert [scan_products(T, m) for m in routes] == [1_023, 19_456, 3_069]


# --- Bad input ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("call, message", [
    (lambda: associative_scan(torch.rand(2, 3), torch.rand(2, 3), method="kogge_stone"), "method must be one of"),
    (lambda: associative_scan(torch.rand(2, 3, dtype=torch.float64), torch.rand(2, 3)), "one floating dtype"),
    (lambda: sequential_scan(torch.rand(2, 3), torch.rand(2, 3), dim=2), "dim must be in [-2, 1]"),
    (lambda: sequential_scan(torch.rand(4), torch.rand(2, 3)), "does not broadcast"),
    (lambda: associative_scan(torch.rand(2, 0), torch.rand(2, 0)), "at least one position"),
    (lambda: sequential_scan([1.0], torch.rand(2, 3)), "must be tensors"),
    (lambda: sequential_scan(torch.rand(2, 3), torch.rand(2, 3), initial=torch.rand(5)), "does not broadcast"),
    (lambda: scan_rounds(0), "T must be an integer >= 1"),
    (lambda: scan_products(4, "sklansky"), "method must be one of"),
])
def test_bad_input_is_refused_with_one_clear_line(call, message):
    with pytest.raises(SeqlabError) as error:
        call()
    assert message in str(error.value) and "\n" not in str(error.value)
