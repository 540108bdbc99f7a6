"""Mixing (seqlab.measure.mixing): dependency matrices of blocks and their patterns (L11, L4).

Blocks built from PyTorch's own modules are measured on float64 inputs; the expected patterns follow
from what each module reads, and a module that does mix (a convolution, a cumulative sum) must be seen
mixing, so a measurement that always answered "per-row" would fail here.
"""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from seqlab.errors import SeqlabError
from seqlab.layers.convolution import ConvolutionStack, reach
from seqlab.layers.sliding_window import SlidingWindowAttention
from seqlab.measure.mixing import (
    ALL_TO_ALL, BAND, CAUSAL, CROSS, NONE, PARTIAL, PER_ROW, Band, band_of, classify, dependency_matrix,
    measure_receptive_fields, receptive_field, stacked_band,
)
from seqlab.measure.paths import measure_paths

D = 8
T = 6


@pytest.fixture
def x() -> torch.Tensor:
    return torch.randn(1, T, D, dtype=torch.float64, generator=torch.Generator().manual_seed(1))


@pytest.fixture
def attention() -> torch.nn.MultiheadAttention:
    torch.manual_seed(0)
    return torch.nn.MultiheadAttention(D, 2, batch_first=True).double().eval()


def test_self_attention_is_all_to_all(x, attention):
    matrix = dependency_matrix(lambda x: attention(x, x, x, need_weights=False), {"x": x}, "x")
    assert matrix.shape == (T, T)
    assert matrix.pattern == ALL_TO_ALL and matrix.mixes
    assert all(value > 0.0 for row in matrix.strength for value in row)


def test_masked_self_attention_is_causal(x, attention):
    mask = torch.nn.Transformer.generate_square_subsequent_mask(T, dtype=torch.float64)
    matrix = dependency_matrix(lambda x: attention(x, x, x, attn_mask=mask, need_weights=False), {"x": x}, "x")
    assert matrix.pattern == CAUSAL
    assert all(matrix.strength[j][i] == 0.0 for j in range(T) for i in range(j + 1, T))


def test_cross_attention_reads_the_other_sequence_and_only_its_own_query_row(x, attention):
    memory = torch.randn(1, 9, D, dtype=torch.float64)
    block = lambda query, memory: attention(query, memory, memory, need_weights=False)  # noqa: E731
    inputs = {"query": x, "memory": memory}
    from_memory = dependency_matrix(block, inputs, "memory", other_sequence=True)
    from_query = dependency_matrix(block, inputs, "query")
    assert from_memory.shape == (T, 9) and from_memory.pattern == CROSS and from_memory.mixes
    assert from_query.pattern == PER_ROW and not from_query.mixes


@pytest.mark.parametrize("make", [
    lambda: torch.nn.LayerNorm(D).double(),
    lambda: torch.nn.Sequential(torch.nn.Linear(D, 4 * D), torch.nn.ReLU(), torch.nn.Linear(4 * D, D)).double(),
    lambda: torch.nn.Softmax(dim=-1),
])
def test_row_wise_modules_are_per_row(x, make):
    module = make().eval()
    matrix = dependency_matrix(lambda x: module(x), {"x": x}, "x")
    assert matrix.pattern == PER_ROW and not matrix.mixes
    assert all(matrix.strength[j][j] > 0.0 for j in range(T))


def test_a_convolution_mixes_in_a_band(x):
    convolution = torch.nn.Conv1d(D, D, kernel_size=3, padding=1).double()
    matrix = dependency_matrix(lambda x: convolution(x.transpose(1, 2)).transpose(1, 2), {"x": x}, "x")
    assert matrix.pattern == BAND and matrix.mixes
    assert matrix.band == Band(1, 1) and matrix.band.width == 3 and matrix.band.symmetric  # ±1: j − 1 ≤ i ≤ j + 1
    assert [sum(row) for row in matrix.depends] == [2] + [3] * (T - 2) + [2]


def test_a_circular_convolution_is_no_band_and_stays_partial(x):
    convolution = torch.nn.Conv1d(D, D, kernel_size=3, padding=1, padding_mode="circular").double()
    matrix = dependency_matrix(lambda x: convolution(x.transpose(1, 2)).transpose(1, 2), {"x": x}, "x")
    assert matrix.pattern == PARTIAL and matrix.band is None  # row 0 reads row T − 1: offset T − 1
    assert [sum(row) for row in matrix.depends] == [3] * T


def test_token_ids_are_measured_by_replacement():
    embedding = torch.nn.Embedding(20, D)
    ids = torch.tensor([[3, 7, 7, 19, 0]])
    per_row = dependency_matrix(lambda ids: embedding(ids), {"ids": ids}, "ids", vocabulary=20)
    assert per_row.method == "token-replacement" and per_row.pattern == PER_ROW
    running_sum = dependency_matrix(lambda ids: embedding(ids).cumsum(dim=1), {"ids": ids}, "ids", vocabulary=20)
    assert running_sum.pattern == CAUSAL


def test_an_input_that_is_not_read_gives_none(x):
    matrix = dependency_matrix(lambda x, y: y * 2.0, {"x": x, "y": x.clone()}, "x")
    assert matrix.pattern == NONE and not matrix.mixes
    assert matrix.strength == tuple((0.0,) * T for _ in range(T))


def test_probe_estimate_matches_the_exact_block_norm():
    """With many probes the estimate approaches ||dy_j/dx_i||_F computed by torch.autograd.functional."""
    torch.manual_seed(3)
    weight = torch.randn(3, 3, dtype=torch.float64)
    x = torch.randn(1, 4, 3, dtype=torch.float64)
    function = lambda x: (x @ weight).cumsum(dim=1).tanh()  # noqa: E731
    jacobian = torch.autograd.functional.jacobian(function, x)[0, :, :, 0]  # (T_out, d_out, T_in, d_in)
    exact = jacobian.square().sum(dim=(1, 3)).sqrt()
    estimate = torch.tensor(dependency_matrix(function, {"x": x}, "x", probes=4000).strength, dtype=torch.float64)
    assert torch.allclose(estimate, exact, rtol=0.08, atol=1e-12)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 6).flatmap(lambda n: st.lists(st.lists(st.booleans(), min_size=n, max_size=n),
                                                    min_size=n, max_size=n)))
def test_classify_is_consistent_with_the_definitions(matrix):
    depends = tuple(tuple(row) for row in matrix)
    pattern = classify(depends)
    n = len(depends)
    off_diagonal = any(depends[j][i] for j in range(n) for i in range(n) if i != j)
    if not any(any(row) for row in depends):
        assert pattern == NONE
    elif not off_diagonal:
        assert pattern == PER_ROW
    else:
        assert pattern in (ALL_TO_ALL, CAUSAL, BAND, PARTIAL)
        assert (pattern == ALL_TO_ALL) == all(all(row) for row in depends)
        band = band_of(depends)
        if pattern == BAND:  # the band it names reads exactly the matrix's entries
            assert all(depends[j][i] == (i - j in band.offsets) for j in range(n) for i in range(n))
        if pattern == PARTIAL:
            assert band is None


@pytest.mark.parametrize("call, message", [
    (lambda x: dependency_matrix(lambda x: x, {"x": x}, "y"), "input 'y' is not among"),
    (lambda x: dependency_matrix(lambda x: x, {"x": x.repeat(2, 1, 1)}, "x"), "batch 1"),
    (lambda x: dependency_matrix(lambda x: x, {"x": x}, "x", probes=0), "probes"),
    (lambda x: dependency_matrix(lambda i: i, {"i": torch.zeros(1, 3, dtype=torch.long)}, "i"), "vocabulary"),
    (lambda x: dependency_matrix(lambda x: 3.0, {"x": x}, "x"), "batch-first tensor"),
])
def test_bad_input_is_refused_with_one_line(x, call, message):
    with pytest.raises(SeqlabError, match=message) as caught:
        call(x)
    assert "\n" not in str(caught.value)


# --- Bands and receptive fields (issue 21) ---------------------------------------------------------------

@settings(max_examples=80, deadline=None)
@given(st.integers(0, 4), st.integers(0, 4), st.integers(1, 3), st.integers(0, 4))
def test_band_of_finds_the_band_a_matrix_was_built_from(lower, upper, dilation, spare):
    band = Band(lower, upper + (-(lower + upper)) % dilation, dilation)  # the upper end on the dilation's grid
    n = band.extent + 1 + spare  # longer than the band: no edge hides an offset
    depends = tuple(tuple(i - j in band.offsets for i in range(n)) for j in range(n))
    found = band_of(depends)
    assert found.offsets == band.offsets and found.width == band.width
    assert classify(depends) == (PER_ROW if band.offsets == (0,) else BAND)


def _layers_stack(layers):
    """Batch-first (1, T, d) -> every layer's output, layer after layer."""
    def stack(x):
        outputs, h = [], x
        for layer in layers:
            h = layer(h)
            outputs.append(h)
        return outputs
    return stack


def _path_depends(path, T):
    """T_out x T_in booleans from a :class:`PathMatrix` (rows: sources): a path means a dependence."""
    return tuple(tuple(path.row(i)[j] is not None for i in range(T)) for j in range(T))


@pytest.mark.parametrize("form", ["banded", "masked"])
def test_sliding_window_is_a_causal_band_and_stacked_windows_grow_by_w_minus_1(form):
    window, depth, T_ = 3, 3, 12
    generator = torch.Generator().manual_seed(5)
    layers = [SlidingWindowAttention(D, window, form=form, generator=generator, dtype=torch.float64).eval()
              for _ in range(depth)]
    stack = _layers_stack(layers)
    x = torch.randn(1, T_, D, dtype=torch.float64, generator=generator)
    fields = measure_receptive_fields(stack, {"x": x}, "x", outputs=lambda out: out)
    # closed form: L causal windows of w read L·(w − 1) + 1 rows: 3, 5, 7
    assert [f.width for f in fields] == [3, 5, 7] == [stacked_band([Band(window - 1, 0)] * L).width
                                                      for L in (1, 2, 3)]
    assert [f.band for f in fields] == [Band(2, 0), Band(4, 0), Band(6, 0)]
    assert all(f.pattern == BAND and f.band.causal for f in fields)
    assert fields[0].positions == (1, 2) + (3,) * (T_ - 2)  # the first rows have fewer rows before them
    assert fields[2].positions == (1, 2, 3, 4, 5, 6) + (7,) * (T_ - 6)
    # the second route: the path tracer's structural matrices, per layer
    paths = measure_paths(stack, x, outputs=lambda out: out)
    assert [receptive_field(_path_depends(p, T_), depth=L + 1).band for L, p in enumerate(paths)] == \
        [f.band for f in fields]


@pytest.mark.parametrize("kernel, dilations", [(3, (1, 1, 1)), (2, (1, 2, 4)), (3, (2, 2))])
def test_causal_depthwise_convolutions_are_bands_with_their_dilation(kernel, dilations):
    T_ = 20
    generator = torch.Generator().manual_seed(2)
    convolutions = []
    for dilation in dilations:
        conv = torch.nn.Conv1d(D, D, kernel, groups=D, dilation=dilation, padding=dilation * (kernel - 1)).double()
        with torch.no_grad():
            conv.weight.copy_(torch.randn(conv.weight.shape, generator=generator, dtype=torch.float64))
        convolutions.append(conv)
    # causal: pad (k − 1)·r on both sides, keep the first T outputs; position t reads t − m·r, m = 0…k − 1
    layers = [lambda h, c=c: torch.tanh(c(h.transpose(1, 2))[..., :h.shape[1]].transpose(1, 2)) for c in convolutions]
    x = torch.randn(1, T_, D, dtype=torch.float64, generator=generator)
    fields = measure_receptive_fields(_layers_stack(layers), {"x": x}, "x", outputs=lambda out: out)
    layer_bands = [Band((kernel - 1) * r, 0, r) for r in dilations]  # offsets 0, −r, …, −(k − 1)·r
    expected = [stacked_band(layer_bands[:L]) for L in range(1, len(dilations) + 1)]
    assert [f.band for f in fields] == expected
    if dilations == (1, 1, 1):  # k, 2k − 1, 3k − 2 = 3, 5, 7
        assert [f.width for f in fields] == [3, 5, 7]
    if dilations == (1, 2, 4):  # WaveNet's doubling, k = 2: 2, 4, 8 contiguous rows
        assert [f.width for f in fields] == [2, 4, 8] and all(f.band.dilation == 1 for f in fields)
    if dilations == (2, 2):  # every other row: t, t − 2, t − 4, then … t − 8
        assert [(f.band.dilation, f.band.width, f.band.lower) for f in fields] == [(2, 3, 4), (2, 5, 8)]


def test_seqlabs_dilated_convolution_stack_reaches_twice_its_reach_plus_one():
    T_ = 20
    stack = ConvolutionStack(4, 3, layers=3, dilated=True, generator=torch.Generator().manual_seed(0),
                             dtype=torch.float64).eval()
    x = torch.randn(1, T_, 4, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    fields = measure_receptive_fields(stack.forward_all, {"x": x}, "x", outputs=lambda out: out)
    # dilations 1, 2, 4: ±(2^L − 1), i.e. 2·reach + 1 = 3, 7, 15 rows
    assert [f.width for f in fields] == [2 * reach(L, 3, True) + 1 for L in (1, 2, 3)] == [3, 7, 15]
    assert [f.band for f in fields] == [Band(1, 1), Band(3, 3), Band(7, 7)]


def _tiny_mistral(window, layers):
    transformers = pytest.importorskip("transformers")
    config = transformers.MistralConfig(vocab_size=32, hidden_size=16, intermediate_size=32, num_hidden_layers=layers,
                                        num_attention_heads=2, num_key_value_heads=1, sliding_window=window,
                                        max_position_embeddings=64, attn_implementation="eager")
    torch.manual_seed(0)
    return transformers.MistralModel(config).double().eval()


def _tiny_gpt_neo(window, layers):
    transformers = pytest.importorskip("transformers")
    config = transformers.GPTNeoConfig(vocab_size=32, hidden_size=16, num_layers=layers, num_heads=2,
                                       attention_types=[[["local"], layers]], window_size=window,
                                       max_position_embeddings=64, bos_token_id=None, eos_token_id=None,
                                       attn_implementation="eager")
    torch.manual_seed(0)
    return transformers.GPTNeoModel(config).double().eval()


@pytest.mark.parametrize("make", [_tiny_mistral, _tiny_gpt_neo])
def test_a_transformers_model_with_local_attention_is_a_band_growing_by_w_minus_1(make):
    window, layers, T_ = 3, 3, 10
    model = make(window, layers)
    x = torch.randn(1, T_, 16, dtype=torch.float64, generator=torch.Generator().manual_seed(3))
    fields = measure_receptive_fields(lambda x: model(inputs_embeds=x, output_hidden_states=True), {"x": x}, "x",
                                      outputs=lambda out: out.hidden_states[1:])  # after layer 1, 2, 3
    assert [f.width for f in fields] == [3, 5, 7] == [L * (window - 1) + 1 for L in (1, 2, 3)]
    assert [f.band for f in fields] == [stacked_band([Band(window - 1, 0)] * L) for L in (1, 2, 3)]
