"""Issue 35, item 3: the perturbation check after every trace (:mod:`seqlab.measure.perturbation`).

Dependence the dispatcher never sees — NumPy inside a ``torch.autograd.Function``, NumPy on a tensor, values that go
through Python (``.tolist()``), C code writing raw memory (``ctypes.memmove``) — was reported "not connected", exact.
The check perturbs each traced source and compares what moves with what the trace reaches: a pair that moves where
the trace has no path makes the matrix a named bound. The other direction: a path whose derivative is exactly 0 at
this input (an exact cancellation) is named too; a dependence that is merely small (a vanishing gradient) is not.
"""

from __future__ import annotations

import ctypes

import numpy as np
import pytest
import torch

from seqlab.measure import perturbation
from seqlab.measure.paths import measure_paths
from seqlab.measure.perturbation import check_paths

T, D = 5, 4


def _x(seed: int = 0, dtype=torch.float32, shape=(T, D)) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=dtype)


class NumpyCumsum(torch.autograd.Function):
    """A prefix sum along the positions computed in NumPy (the dispatcher sees no op of it)."""

    @staticmethod
    def forward(ctx, x):
        return torch.from_numpy(np.cumsum(x.detach().numpy(), axis=-2))

    @staticmethod
    def backward(ctx, grad):
        return grad.flip(-2).cumsum(-2).flip(-2)


class NumpyShift(torch.autograd.Function):
    """Position i takes position i - 1 (position 0 takes the last), in NumPy."""

    @staticmethod
    def forward(ctx, x):
        return torch.from_numpy(np.roll(x.detach().numpy(), 1, axis=-2))

    @staticmethod
    def backward(ctx, grad):
        return grad.roll(-1, -2)


def _pairs(condition) -> tuple[tuple[int, int], ...]:
    return tuple((s, j) for s in range(T) for j in range(T) if condition(s, j))


def test_numpy_inside_a_function_is_named_as_a_bound():
    weight = torch.randn(D, D, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    matrix = measure_paths(lambda x: NumpyCumsum.apply(x) @ weight, _x(dtype=torch.float64))
    assert matrix.products == ((None,) * T,) * T  # what the dispatcher sees: no dependence at all
    assert not matrix.exact
    assert matrix.check.route == "finite differences" and matrix.check.dtype == "float64"
    assert matrix.check.missed == _pairs(lambda s, j: s <= j)  # a prefix sum: x_s moves every y_j with j >= s
    assert matrix.check.unmoved == ()
    assert "unreachable move" in matrix.bound_reason and "(5, 4)" in matrix.bound_reason  # the NumPy result, named


def test_numpy_shift_beside_a_traced_path_names_only_the_missed_pairs():
    layer = torch.nn.Linear(D, D).eval()
    matrix = measure_paths(lambda x: layer(x) + NumpyShift.apply(x), _x(2))
    assert matrix.products == tuple(tuple(1 if j == s else None for j in range(T)) for s in range(T))
    assert matrix.check.missed == _pairs(lambda s, j: j == (s + 1) % T)
    assert matrix.check.dtype == "float32"  # the lambda holds a float32 module: the check runs in x's dtype
    assert not matrix.exact


def test_values_through_python_are_found_by_the_finite_difference_beside_forward_mode():
    """Forward mode runs (no Function), but .tolist() drops the tangent: the finite difference along the sum of the
    directions differs from the tangents, and each source is then taken by finite differences."""
    matrix = measure_paths(lambda x: torch.tensor(x.cumsum(-2).tolist(), dtype=x.dtype) + x,
                           _x(3, dtype=torch.float64))
    assert matrix.check.route == "finite differences"  # x (T, d) has no batch dim to hold the copies
    assert matrix.check.missed == _pairs(lambda s, j: s < j)
    assert not matrix.exact


def test_c_code_writing_raw_memory_is_found():
    """A copy shifted by one position written with ctypes.memmove: no op, no autograd."""
    def layer(x):
        out = torch.zeros_like(x)
        row = x.shape[-1] * x.element_size()
        ctypes.memmove(out.data_ptr() + row, x.data_ptr(), (x.shape[-2] - 1) * row)
        return out * 2 + x

    matrix = measure_paths(layer, _x(4, dtype=torch.float64))
    assert matrix.check.missed == _pairs(lambda s, j: j == s + 1)
    assert not matrix.exact


def test_an_exact_cancellation_is_named_as_unmoved():
    """y = x + (x_{i-1} - x_{i-1}): the trace has the structural path i-1 -> i; its derivative is exactly 0."""
    matrix = measure_paths(lambda x: x + (x.roll(1, -2) - x.roll(1, -2).clone()), _x(5, dtype=torch.float64))
    assert matrix.check.unmoved == _pairs(lambda s, j: j == (s + 1) % T)
    assert matrix.check.missed == () and matrix.check.route == "finite differences + forward mode"
    assert not matrix.exact and "derivative of exactly 0" in matrix.bound_reason


@pytest.mark.parametrize("scale", [1e-3, 1e-12])
def test_a_vanishing_dependence_is_not_named(scale):
    """An Elman recurrence with W_hh scaled down: x_s reaches y_j by a factor of about scale^(j-s) (down to 1e-48,
    far under float64's resolution next to y: those outputs do not change by a bit). The pairs are reachable, as the
    trace says, and never named: a fading source's still pairs are unresolved (no verdict), a source that does not
    fade has its still pairs certified by forward mode (a derivative != 0: they agree)."""
    rnn = torch.nn.RNN(D, D, batch_first=True).double().eval()
    with torch.no_grad():
        rnn.weight_hh_l0.mul_(scale)
    matrix = measure_paths(rnn, _x(6, dtype=torch.float64, shape=(1, T, D)))
    check = matrix.check
    assert check.route.startswith("finite differences, batched") and check.dtype == "float64"
    assert check.agrees and matrix.exact and check.unmoved == () and check.missed == ()
    assert all(j - s >= 2 for s, j in check.unresolved)  # 1e-24 and further: under float64's resolution
    assert matrix.products[0] == (1, 2, 3, 4, 5)


def test_agreeing_layers_run_in_float64_and_stay_exact():
    attention = torch.nn.MultiheadAttention(D, 2, batch_first=True).eval()
    mask = torch.ones(T, T, dtype=torch.bool).triu(1)
    matrix = measure_paths(lambda x: attention(x, x, x, attn_mask=mask)[0], _x(7, shape=(1, T, D)))
    assert matrix.check is not None and matrix.check.agrees and matrix.exact
    module = torch.nn.RNN(D, D).eval()
    checked = measure_paths(module, _x(8))
    assert checked.check.dtype == "float64" and checked.check.route == "finite differences"
    assert module.weight_hh_l0.dtype == torch.float32  # the module itself is left as it was


def test_the_check_can_be_switched_off(monkeypatch):
    layer = lambda x: NumpyCumsum.apply(x)
    assert measure_paths(layer, _x(), check=False).check is None
    assert measure_paths(layer, _x(), check=False).exact  # the trace alone: the old answer
    monkeypatch.setattr(perturbation, "CHECK", False)
    assert measure_paths(layer, _x()).check is None


def test_a_layer_that_cannot_be_perturbed_is_said_so():
    def layer(x):
        if x.dtype != torch.float32 or x.sum().item() > 1e9:  # refuses anything but the traced input's dtype
            raise ValueError("float32 only")
        return x.cumsum(-2)

    calls = {"n": 0}

    def flaky(x):
        calls["n"] += 1
        if calls["n"] > 1:
            raise ValueError("runs once")
        return layer(x)

    check = check_paths(flaky, _x(), (0,), lambda y: [y], [[[True] * T]], [()])[0]
    assert check.route == "not run" and "runs once" in check.reason and check.agrees


def test_a_layer_that_mixes_its_batch_rows_runs_each_copy_alone():
    """x - mean over the batch: the copies cannot share a batch with x (each would move the others' rows); the check
    sees the batch's own x rows differ from a plain run and runs each copy alone, with no pair wrongly named."""
    def layer(x):
        return x - x.mean(dim=0, keepdim=True) + x.cumsum(-2)

    matrix = measure_paths(layer, _x(11, dtype=torch.float64, shape=(2, T, D)))
    assert matrix.check.route == "finite differences"
    assert matrix.check.agrees and matrix.exact
    assert matrix.products == tuple(tuple(0 if j >= s else None for j in range(T)) for s in range(T))


def test_the_check_leaves_the_generator_as_it_was():
    """A layer that draws (dropout in training mode): every run draws the same noise, the caller's stream moves on as
    if no check had run."""
    dropout = torch.nn.Dropout(0.5).train()
    x = _x(12, dtype=torch.float64, shape=(1, T, D))
    torch.manual_seed(3)
    measure_paths(lambda z: dropout(z).cumsum(-2), x, check=False)
    expected = torch.rand(3)
    torch.manual_seed(3)
    matrix = measure_paths(lambda z: dropout(z).cumsum(-2), x)
    assert torch.equal(torch.rand(3), expected)
    assert matrix.check.missed == ()


def test_a_layer_that_writes_into_its_input_is_checked_on_fresh_copies():
    def layer(x):
        x.mul_(2.0)  # in place, on the input it is given
        return x.cumsum(-2)

    x = _x(13, dtype=torch.float64)
    kept = x.clone()
    matrix = measure_paths(layer, x)
    assert torch.equal(x, kept)  # neither the trace nor the check wrote into the caller's x
    assert matrix.check.agrees and matrix.exact


def _first(output):
    return output[0] if isinstance(output, tuple) else output


def _counted(layer):
    """``layer`` with a count of its calls (``.calls``)."""
    def run(z):
        run.calls += 1
        return layer(z)
    run.calls = 0
    return run


def _check_alone(layer, x, sources, reachable):
    """The check as it runs without the traced pass's output: its own plain run of x."""
    return check_paths(layer, x, sources, lambda y: [y], [reachable], [()])[0]


@pytest.mark.parametrize("kind", ["elman", "attention", "transformers"])
def test_the_traced_pass_stands_in_for_the_checks_plain_run(kind):
    """measure_pass hands its own output to the check (``ran``): the batch's x rows are compared with it, the same
    verdicts come out, and the layer runs once less in the check (float32 callables: float64 fails, then x's dtype)."""
    from seqlab.layers.attention import SelfAttention
    from seqlab.layers.recurrent import ElmanRNN
    from seqlab.measure.traced_pass import measure_pass

    if kind == "transformers":
        pytest.importorskip("transformers")
        import hf_mixers
        layer, x = hf_mixers.last_hidden(hf_mixers.build("mistral", torch.float32)), hf_mixers.embeddings(
            6, torch.float32)
    else:
        module = (ElmanRNN(D, D, generator=torch.Generator().manual_seed(0)) if kind == "elman"
                  else SelfAttention(D, generator=torch.Generator().manual_seed(0))).eval()
        layer, x = (lambda z: _first(module(z))), _x(14, shape=(1, 6, D))
    counted = _counted(layer)
    measured = measure_pass(counted, x, sources=(0, 5), work=False, span=False)
    reachable = [[v is not None for v in row] for row in measured.paths.products]
    alone = _counted(layer)
    expected = _check_alone(alone, x, (0, 5), reachable)
    assert measured.paths.check == expected and expected.route == "finite differences, batched"
    assert expected.dtype == "float32" and expected.agrees
    # the traced pass, then the check: float64 (refused at its first op), the batch; alone: float64, x, the batch
    assert (counted.calls, alone.calls) == (1 + 2, 3)


def test_a_traced_output_that_disagrees_with_the_batch_falls_back_to_the_plain_run():
    """A stand-in that is not what a plain run gives (here: a wrong one on purpose) is never trusted alone: the
    plain run is taken, and the verdicts are those of the check without it."""
    layer = lambda z: z.cumsum(-2)
    x = _x(15, dtype=torch.float64, shape=(1, T, D))
    reachable = [[j >= s for j in range(T)] for s in (0, T - 1)]
    wrong = [layer(x) + 1.0]
    with_wrong = check_paths(layer, x, (0, T - 1), lambda y: [y], [reachable], [()], ran=wrong)[0]
    assert with_wrong == _check_alone(layer, x, (0, T - 1), reachable)
    assert with_wrong.route == "finite differences, batched" and with_wrong.agrees


@pytest.mark.parametrize("shape", [(2, T, D), (3, T, D)])
def test_a_layer_that_mixes_its_batch_rows_with_the_traced_output_still_runs_each_copy_alone(shape):
    def layer(x):
        return x - x.mean(dim=0, keepdim=True) + x.cumsum(-2)

    x = _x(16, dtype=torch.float64, shape=shape)
    from seqlab.measure.traced_pass import measure_pass

    measured = measure_pass(layer, x, sources=(0, T - 1), work=False, span=False)
    assert measured.paths.check.route == "finite differences" and measured.paths.check.agrees


@pytest.mark.parametrize("p", [0.5, 0.25])
def test_a_layer_that_draws_with_the_traced_output_runs_each_copy_alone(p):
    """Dropout in training mode: whether the layer draws shows when the batch runs (no plain run came first); the
    batch is dropped and every copy runs alone, as without the traced output."""
    from seqlab.measure.traced_pass import measure_pass

    dropout = torch.nn.Dropout(p).train()
    layer = lambda z: dropout(z).cumsum(-2)
    x = _x(17, dtype=torch.float64, shape=(1, T, D))
    measured = measure_pass(layer, x, sources=(0, T - 1), work=False, span=False)
    reachable = [[v is not None for v in row] for row in measured.paths.products]
    assert measured.paths.check == _check_alone(layer, x, (0, T - 1), reachable)
    assert measured.paths.check.route == "finite differences"


@pytest.mark.parametrize(("hand", "dtype"), [("function", "float32"), ("module", "float64")])
def test_a_fading_recurrence_is_unresolved_in_any_dtype_never_unmoved(hand, dtype):
    """An LSTM over 300 steps, x_1's signal fading by about half a decade a step: its late outputs do not move a bit.
    Handed as a function the check runs in float32, where the signal stops moving about 4.6 decades down (so the
    float64 fraction 1e-8 is never met) and forward mode's tangent underflows to exactly 0 below 1e-45: those pairs
    once read as "unmoved", a dependence that does not exist. By the dtype's own fraction (fading_fraction) the source
    fades, and its still pairs are unresolved, as in float64 (the module handed: a float64 copy)."""
    from seqlab.measure.paths import measure_paths

    torch.manual_seed(0)
    lstm = torch.nn.LSTM(8, 8, batch_first=True).eval()
    layer = (lambda rows: lstm(rows)[0]) if hand == "function" else lstm
    check = measure_paths(layer, torch.randn(1, 300, 8), sources=(0,)).check
    assert check.dtype == dtype and check.missed == ()
    assert check.unmoved == () and len(check.unresolved) > 100


@pytest.mark.parametrize(("dtype", "factor", "fades"), [(torch.float32, 0.99, True), (torch.float32, 1.01, False),
                                                        (torch.float64, 0.99, True), (torch.float64, 1.01, False)])
def test_a_source_fades_below_its_dtypes_fraction_and_only_there(dtype, factor, fades):
    """The verdict on patched movements at its boundary: smallest movement just under (just over) the dtype's fraction
    of the largest. A fading source's still pair is left for no verdict; else it is a candidate for forward mode."""
    from seqlab.measure.perturbation import _compare, fading_fraction

    fraction = fading_fraction(dtype)
    movement = torch.tensor([[1.0, factor * fraction, 0.0]], dtype=torch.float64)
    still = torch.tensor([[False, False, True]])
    _, candidates, fading = _compare(movement, still, 1e-3, (0,), [[True, True, True]], (), fraction)
    assert fading == ({0} if fades else set()) and candidates == [(0, 2)]
