"""Linear attention (seqlab.layers.linear_attention): three forms agree, decoding equals forward, counts are exact.

Tolerance: float64, atol 1e-10 (the forms regroup the same sums; outputs are of size ~1).
"""

import pytest
import torch

from seqlab.errors import SeqlabError
from seqlab.layers.linear_attention import (LINEAR_ATTENTION_FORMS, LinearAttention, feature_map,
                                            linear_attention_multiplications, linear_attention_step_multiplications)
from seqlab.measure.trace import measure_span
from seqlab.measure.work import count_multiplications, count_on_meta

ATOL = 1e-10


def layer(form: str, *, chunk_size: int = 4, causal: bool = True, d_model: int = 6, d_k: int = 4,
          d_v: int = 5) -> LinearAttention:
    """One set of weights (seed 0) in the asked form."""
    return LinearAttention(d_model, d_k, d_v, form=form, chunk_size=chunk_size, causal=causal,
                           generator=torch.Generator().manual_seed(0), dtype=torch.float64)


def from_the_definition(module: LinearAttention, x: torch.Tensor, causal: bool) -> torch.Tensor:
    """y_i = Σ_j sim(q_i, k_j) v_j / Σ_j sim(q_i, k_j), sim = φ(q)ᵀφ(k), one pair at a time: a fourth route."""
    q, k, v = feature_map(module.q_proj(x)), feature_map(module.k_proj(x)), module.v_proj(x)
    B, T = x.shape[:2]
    out = torch.zeros(B, T, module.d_v, dtype=x.dtype)
    for b in range(B):
        for i in range(T):
            keys = range(i + 1) if causal else range(T)
            sims = [torch.dot(q[b, i], k[b, j]) for j in keys]
            out[b, i] = sum(s * v[b, j] for s, j in zip(sims, keys)) / sum(sims)
    return module.o_proj(out)


@pytest.mark.parametrize("causal", [True, False])
def test_the_three_forms_agree_with_the_definition(causal):
    x = torch.randn(2, 10, 6, dtype=torch.float64, generator=torch.Generator().manual_seed(int(causal)))
    reference = from_the_definition(layer("parallel", causal=causal), x, causal)
    runs = [("parallel", 4), ("recurrent", 4)] + [("chunked", C) for C in (1, 3, 5, 16)]  # C ∤ T, C | T, C > T
    for form, chunk_size in runs:
        y = layer(form, chunk_size=chunk_size, causal=causal)(x)
        assert y.shape == (2, 10, 6)
        assert torch.allclose(y, reference, rtol=0, atol=ATOL), (form, chunk_size)


def test_causal_output_does_not_read_later_positions():
    x = torch.randn(1, 8, 6, dtype=torch.float64)
    changed = x.clone()
    changed[:, 5:] += 1.0
    for form in LINEAR_ATTENTION_FORMS:
        y, z = layer(form)(x), layer(form)(changed)
        assert torch.allclose(y[:, :5], z[:, :5], rtol=0, atol=ATOL)
        assert not torch.allclose(y[:, 5:], z[:, 5:], rtol=0, atol=1e-3)


@pytest.mark.parametrize("form", LINEAR_ATTENTION_FORMS)
def test_step_by_step_decoding_equals_forward(form):
    module = layer(form)
    x = torch.randn(3, 9, 6, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    state, outputs = module.initial_state(3), []
    for t in range(9):
        y, state = module.step(x[:, t], state)
        outputs.append(y)
        assert [tuple(s.shape) for s in state] == [(3, 4, 5), (3, 4)]  # the state never grows
    assert torch.allclose(torch.stack(outputs, dim=1), module(x), rtol=0, atol=ATOL)


# --- Counted work equals the closed forms ---------------------------------------------------------------------

@pytest.mark.parametrize("T, chunk_size", [(8, 4), (13, 4), (24, 5)])
@pytest.mark.parametrize("form", LINEAR_ATTENTION_FORMS)
def test_counted_multiplications_equal_the_closed_form(form, T, chunk_size):
    module = LinearAttention(6, 4, 5, form=form, chunk_size=chunk_size)
    counted = count_multiplications(module, torch.randn(2, T, 6))
    assert counted.complete
    assert counted.multiplications == linear_attention_multiplications(T, 6, 4, 5, form, chunk_size, batch=2)


def test_recurrent_work_is_t_dk_dv_by_hand():
    # mixing only: 32 * (2 * 4 * 5 + 4) = 1,408; projections 32 * 6 * (8 + 5) + 32 * 5 * 6 = 3,456
    module = LinearAttention(6, 4, 5, form="recurrent")
    assert count_multiplications(module, torch.randn(1, 32, 6)).multiplications == 1_408 + 3_456
    assert linear_attention_multiplications(32, 6, 4, 5, "recurrent", projections=False) == 1_408
    # parallel mixing: 32**2 * (4 + 5) = 9,216; chunked C = 8: 4 * 64 * 9 + 1,408 = 3,712
    assert linear_attention_multiplications(32, 6, 4, 5, "parallel", projections=False) == 9_216
    assert linear_attention_multiplications(32, 6, 4, 5, "chunked", 8, projections=False) == 3_712


def test_a_wrong_closed_form_is_caught():
    """The exact comparison must fail for a count off by one product (so the test above can fail)."""
    counted = count_multiplications(LinearAttention(6, 4, 5, form="recurrent"), torch.randn(1, 32, 6))
    assert counted.multiplications != linear_attention_multiplications(32, 6, 4, 5, "parallel")


def test_decode_step_costs_the_same_at_every_position():
    module = layer("recurrent")
    state = module.initial_state(2)
    x = torch.randn(2, 6, dtype=torch.float64)
    expected = linear_attention_step_multiplications(6, 4, 5, batch=2)  # 2 * (2*20 + 4 + 6*13 + 30) = 304
    assert expected == 304
    for _ in range(3):
        assert count_multiplications(module.step, x, state).multiplications == expected
        _, state = module.step(x, state)


def test_recurrent_span_grows_with_t_and_parallel_span_does_not():
    spans = {form: [measure_span(LinearAttention(4, form=form), torch.randn(1, T, 4)).ops for T in (8, 16, 32)]
             for form in LINEAR_ATTENTION_FORMS}
    assert len(set(spans["parallel"])) == 1
    recurrent = spans["recurrent"]
    assert recurrent[2] - recurrent[1] == 2 * (recurrent[1] - recurrent[0]) > 0  # linear in T
    chunked = spans["chunked"]  # C = 16: one chunk, then two
    assert chunked[0] == chunked[1] < chunked[2]


# --- Bad input --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("call, message", [
    (lambda: LinearAttention(4, form="softmax"), "form must be one of parallel, recurrent, chunked"),
    (lambda: LinearAttention(4, chunk_size=0), "chunk_size must be an integer >= 1"),
    (lambda: LinearAttention(4)(torch.randn(5, 4)), "x must have shape (B, T, 4)"),
    (lambda: LinearAttention(4)(torch.randn(1, 5, 4, dtype=torch.float64)), "the mixer's dtype"),
    (lambda: LinearAttention(4, causal=False).step(torch.randn(1, 4), ()), "causal=False"),
    (lambda: LinearAttention(4).step(torch.randn(1, 4), (torch.zeros(1, 4, 4),)), "state must be a tuple"),
    (lambda: linear_attention_multiplications(0, 4, 4, 4, "parallel"), "T must be an integer >= 1"),
])
def test_bad_input_is_refused_with_one_clear_line(call, message):
    with pytest.raises(SeqlabError) as error:
        call()
    assert message in str(error.value) and "\n" not in str(error.value)


def test_parallel_form_refuses_a_map_that_would_not_fit(monkeypatch):
    monkeypatch.setattr("seqlab.memory.available_memory_bytes", lambda: 1024)
    with pytest.raises(SeqlabError, match="parallel linear attention at B = 1, T = 64"):
        LinearAttention(4)(torch.randn(1, 64, 4))
    assert LinearAttention(4, form="recurrent")(torch.randn(1, 64, 4)).shape == (1, 64, 4)  # the state fits
    # on the meta device nothing is allocated, so nothing is refused: the count still comes back
    assert count_on_meta(LinearAttention(4), torch.randn(1, 64, 4)).multiplications == \
        linear_attention_multiplications(64, 4, 4, 4, "parallel")
