"""seqlab.layers.transformer: Figure 1 as fifteen callable boxes — the paper's sinusoids, the shift, the shared
embedding, and two routes to one forward (the boxes composed, PyTorch's own layer forwards). The first two tests
were in tests/test_figure.py (the figure study, which measures which boxes mix, stays there).
"""

from __future__ import annotations

import math

import pytest
import torch
from jacobian_oracle import dependence

from seqlab.errors import SeqlabError
from seqlab.layers.transformer import (
    BOX_KEYS,
    DECODER,
    ENCODER,
    Transformer,
    compose,
    shift_right,
    sinusoidal_encoding,
)

F64 = torch.float64


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_the_composed_boxes_give_the_full_forward(dtype):
    # float32 without grad: PyTorch's encoder layer takes its fused fast path, another implementation
    torch.manual_seed(2)
    model = Transformer(vocabulary=20, d_model=16, heads=4, max_length=8, dtype=dtype).eval()
    source, target_in = torch.randint(0, 20, (1, 7)), shift_right(torch.randint(0, 19, (1, 6)), 19)
    with torch.no_grad():
        full = model(source, target_in)  # (1, 6, 20)
        composed, inputs = compose(model.boxes(), source, target_in)
    assert full.shape == (1, 6, 20) and list(inputs) == list(BOX_KEYS)
    tolerance = 1e-12 if dtype == torch.float64 else 1e-6
    torch.testing.assert_close(composed, full, atol=tolerance, rtol=0)
    torch.testing.assert_close(full.sum(-1), torch.ones(1, 6, dtype=dtype))  # each row a distribution


def test_sinusoids_and_the_shift():
    pe = sinusoidal_encoding(5, 8, torch.float64)
    # PE(3, 2i + 1) = cos(3 / 10000^(2i/8)); i = 1: cos(3 / 10)
    assert pe[3, 3].item() == pytest.approx(torch.cos(torch.tensor(0.3, dtype=torch.float64)).item())
    assert sinusoidal_encoding(2, 5).shape == (2, 5)  # an odd width keeps its last sine
    assert shift_right(torch.tensor([[7, 8, 9]]), 1).tolist() == [[1, 7, 8]]


@pytest.mark.parametrize("pos, d_model", [(0, 6), (3, 8), (7, 5), (11, 4)])
def test_sinusoids_by_the_papers_formula(pos, d_model):
    pe = sinusoidal_encoding(pos + 1, d_model, F64)
    for k in range(d_model):
        angle = pos / 10000 ** ((k - k % 2) / d_model)
        expected = math.sin(angle) if k % 2 == 0 else math.cos(angle)
        assert pe[pos, k].item() == pytest.approx(expected, abs=1e-15)
    assert sinusoidal_encoding(2, 4).dtype == torch.float32


@pytest.mark.parametrize("T, d_model", [(0, 4), (3, 0), (2.0, 4)])
def test_sinusoids_refuse_bad_sizes(T, d_model):
    with pytest.raises(SeqlabError, match="must be an integer >= 1"):
        sinusoidal_encoding(T, d_model)


def test_fifteen_boxes_in_the_papers_order_sharing_the_models_parameters():
    assert len(BOX_KEYS) == 15 and len(set(BOX_KEYS)) == 15
    assert [key.split(".")[0] for key in BOX_KEYS] == [ENCODER] * 6 + [DECODER] * 9
    model = Transformer(vocabulary=9, d_model=8, heads=2, max_length=6, dtype=F64)
    boxes = model.boxes()
    assert list(boxes) == list(BOX_KEYS)
    assert boxes["encoder.input_embedding"] is boxes["decoder.output_embedding"]
    assert model.generator.weight is model.embedding.weight  # §3.4: one matrix
    own = {id(p) for p in model.parameters()}
    for box in boxes.values():
        assert {id(p) for p in box.parameters()} <= own


def test_the_embedding_is_drawn_with_variance_one_over_d_model():
    torch.manual_seed(0)
    model = Transformer(vocabulary=400, d_model=64, heads=4, max_length=4, dtype=F64)
    variance = float(model.embedding.weight.detach().var())
    assert variance == pytest.approx(1 / 64, rel=0.05)  # 25,600 draws: a 5 % band is about 7 standard errors


def test_the_masked_self_attention_box_is_causal_and_the_cross_attention_reads_every_memory_row():
    torch.manual_seed(1)
    model = Transformer(vocabulary=10, d_model=8, heads=2, max_length=6, dtype=F64).eval()
    boxes = model.boxes()
    x = torch.randn(1, 5, 8, dtype=F64)
    causal = dependence(lambda z: boxes["decoder.masked_self_attention"](x=z), x)
    assert causal == tuple(tuple(j >= i for j in range(5)) for i in range(5))
    full = dependence(lambda z: boxes["encoder.self_attention"](x=z), x)
    assert full == ((True,) * 5,) * 5
    target = torch.randn(1, 3, 8, dtype=F64)
    cross = dependence(lambda m: boxes["decoder.cross_attention"](x=target, memory=m), x)
    assert cross == ((True,) * 3,) * 5  # each of the 5 memory rows reaches each of the 3 target rows


@pytest.mark.parametrize("arguments, message", [
    (dict(vocabulary=1, d_model=8, heads=2), "vocabulary must be an integer >= 2, received 1"),
    (dict(vocabulary=9, d_model=8, heads=3), "heads must divide d_model, received d_model = 8 and heads = 3"),
    (dict(vocabulary=9, d_model=0, heads=2), "d_model must be an integer >= 1, received 0"),
    (dict(vocabulary=9, d_model=8, heads=2, d_ff=0), "d_ff must be an integer >= 1, received 0"),
    (dict(vocabulary=9, d_model=8, heads=2, max_length=0), "max_length must be an integer >= 1, received 0"),
])
def test_bad_sizes_are_refused(arguments, message):
    with pytest.raises(SeqlabError) as error:
        Transformer(**arguments)
    assert str(error.value) == message


def test_shift_right_keeps_the_length():
    target = torch.tensor([[4]])
    assert shift_right(target, 9).tolist() == [[9]]
    assert shift_right(torch.tensor([[1, 2, 3, 4]]), 0).tolist() == [[0, 1, 2, 3]]
