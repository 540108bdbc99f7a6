"""Causal sliding-window attention (seqlab.layers.sliding_window): banded == masked == SDPA with a band mask,
decode == forward, counted work T·w·d (banded) against T²·d (masked).

Tolerance: float64, atol 1e-10.
"""

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from seqlab.errors import SeqlabError
from seqlab.layers.sliding_window import (SLIDING_WINDOW_FORMS, SlidingWindowAttention, sliding_window_multiplications,
                                          sliding_window_step_multiplications)
from seqlab.measure.trace import measure_span
from seqlab.measure.work import count_multiplications, count_on_meta

ATOL = 1e-10


def build(window: int, form: str = "banded", dtype=torch.float64) -> SlidingWindowAttention:
    return SlidingWindowAttention(6, window, form=form, d_k=4, d_v=5, generator=torch.Generator().manual_seed(0),
                                  dtype=dtype)


def band(T: int, window: int) -> torch.Tensor:
    """(T, T) bool from positions: 0 <= i - j < w (True = may attend), SDPA's convention."""
    gap = torch.arange(T)[:, None] - torch.arange(T)[None, :]
    return (gap >= 0) & (gap < window)


@settings(max_examples=12, deadline=None)
@given(T=st.integers(1, 14), window=st.integers(1, 18), seed=st.integers(0, 2**16))
def test_banded_and_masked_equal_pytorch_sdpa_with_a_band_mask(T, window, seed):
    x = torch.randn(2, T, 6, dtype=torch.float64, generator=torch.Generator().manual_seed(seed))
    layer = build(window, "masked")
    q, k, v = layer.q_proj(x), layer.k_proj(x), layer.v_proj(x)
    reference = layer.o_proj(F.scaled_dot_product_attention(q, k, v, attn_mask=band(T, window)))
    for form in SLIDING_WINDOW_FORMS:
        assert torch.allclose(build(window, form)(x), reference, rtol=0, atol=ATOL), form


def test_window_one_sees_only_itself_and_a_window_past_t_is_causal_attention():
    x = torch.randn(1, 7, 6, dtype=torch.float64)
    layer = build(1)
    assert torch.allclose(layer(x), layer.o_proj(layer.v_proj(x)), rtol=0, atol=ATOL)  # weight 1 on itself
    wide = build(50)
    q, k, v = wide.q_proj(x), wide.k_proj(x), wide.v_proj(x)
    causal = wide.o_proj(F.scaled_dot_product_attention(q, k, v, is_causal=True))
    assert torch.allclose(wide(x), causal, rtol=0, atol=ATOL)


@pytest.mark.parametrize("window", [1, 3, 20])
def test_step_by_step_decoding_equals_forward(window):
    layer = build(window)
    x = torch.randn(2, 9, 6, dtype=torch.float64, generator=torch.Generator().manual_seed(window))
    state, outputs = layer.initial_state(2), []
    for t in range(9):
        y, state = layer.step(x[:, t], state)
        outputs.append(y)
        assert [tuple(s.shape) for s in state] == [(2, window - 1, 4), (2, window - 1, 5), (2, window - 1)]
    assert torch.allclose(torch.stack(outputs, dim=1), layer(x), rtol=0, atol=ATOL)


# --- Counted work --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("T, window", [(8, 3), (16, 4), (12, 20)])
@pytest.mark.parametrize("form", SLIDING_WINDOW_FORMS)
def test_counted_multiplications_equal_the_closed_form(form, T, window):
    counted = count_multiplications(build(window, form, torch.float32), torch.randn(2, T, 6))
    assert counted.complete
    assert counted.multiplications == sliding_window_multiplications(T, 6, window, form, d_k=4, d_v=5, batch=2)


def test_banded_work_is_t_w_d_and_masked_work_is_t_squared_d_by_hand():
    assert sliding_window_multiplications(100, 8, 5, "banded", projections=False) == 8_000  # 100 * 5 * (8 + 8)
    assert sliding_window_multiplications(100, 8, 5, "masked", projections=False) == 160_000  # 100**2 * 16
    # projections: 100 * 8 * (16 + 8) + 100 * 8 * 8 = 25,600
    assert sliding_window_multiplications(100, 8, 5, "banded") == 8_000 + 25_600


def test_decode_step_costs_the_same_at_every_position():
    layer = build(3)
    state, x = layer.initial_state(2), torch.randn(2, 6, dtype=torch.float64)
    expected = sliding_window_step_multiplications(6, 3, d_k=4, d_v=5, batch=2)
    assert expected == 2 * (3 * 9 + 6 * 13 + 30)  # w (d_k + d_v) + projections, twice: 270
    for _ in range(4):
        assert count_multiplications(layer.step, x, state).multiplications == expected
        _, state = layer.step(x, state)


def test_span_does_not_grow_with_t():
    for form in SLIDING_WINDOW_FORMS:
        spans = {measure_span(SlidingWindowAttention(4, 3, form=form), torch.randn(1, T, 4)).ops for T in (8, 64)}
        assert len(spans) == 1, form


# --- Bad input -----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("call, message", [
    (lambda: SlidingWindowAttention(4, 0), "window must be an integer >= 1"),
    (lambda: SlidingWindowAttention(4, 2, form="dilated"), "form must be one of banded, masked"),
    (lambda: SlidingWindowAttention(4, 2)(torch.randn(1, 0, 4)), "with T >= 1"),
    (lambda: SlidingWindowAttention(4, 2).step(torch.randn(1, 4), ()), "state must be a tuple"),
    (lambda: sliding_window_multiplications(8, 4, 2, "sparse"), "form must be one of banded, masked"),
])
def test_bad_input_is_refused_with_one_clear_line(call, message):
    with pytest.raises(SeqlabError) as error:
        call()
    assert message in str(error.value) and "\n" not in str(error.value)


def test_masked_form_refuses_scores_that_would_not_fit(monkeypatch):
    monkeypatch.setattr("seqlab.memory.available_memory_bytes", lambda: 1024)
    with pytest.raises(SeqlabError, match="masked sliding-window attention at B = 1, T = 64"):
        SlidingWindowAttention(4, 3, form="masked")(torch.randn(1, 64, 4))
    assert SlidingWindowAttention(4, 3)(torch.randn(1, 64, 4)).shape == (1, 64, 4)  # banded: T·w fits
    assert count_on_meta(SlidingWindowAttention(4, 3, form="masked"), torch.randn(1, 64, 4)).multiplications == \
        sliding_window_multiplications(64, 4, 3, "masked")  # the meta device allocates nothing: not refused
