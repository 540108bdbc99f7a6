"""seqlab.measure.layout: where a module expects its positions (its own ``batch_first``, through containers).

(The docs' layout page, the map of the modules, is checked in tests/test_docs_layout.py.)
"""

from __future__ import annotations

import pytest
import torch
from torch import nn

from seqlab.errors import SeqlabError
from seqlab.measure.layout import batch_first_of, check_positions_layout


@pytest.mark.filterwarnings("ignore:enable_nested_tensor is True")  # nn.Transformer's own encoder, built inside
@pytest.mark.parametrize("batch_first", [False, True])
def test_the_flag_is_read_on_the_module_and_through_every_container(batch_first):
    assert batch_first_of(nn.RNN(2, 2, batch_first=batch_first)) is batch_first
    assert batch_first_of(nn.LSTM(2, 2, batch_first=batch_first)) is batch_first
    assert batch_first_of(nn.MultiheadAttention(4, 1, batch_first=batch_first)) is batch_first
    encoder_layer = nn.TransformerEncoderLayer(4, 1, dim_feedforward=8, batch_first=batch_first)
    decoder_layer = nn.TransformerDecoderLayer(4, 1, dim_feedforward=8, batch_first=batch_first)
    assert batch_first_of(encoder_layer) is batch_first
    assert batch_first_of(decoder_layer) is batch_first
    assert batch_first_of(nn.TransformerEncoder(encoder_layer, 2, enable_nested_tensor=False)) is batch_first
    assert batch_first_of(nn.TransformerDecoder(decoder_layer, 1)) is batch_first
    transformer = nn.Transformer(4, 1, 1, 1, dim_feedforward=8, batch_first=batch_first)
    assert batch_first_of(transformer) is batch_first


def test_pytorchs_defaults_are_sequence_first():
    assert batch_first_of(nn.GRU(2, 2)) is False
    assert batch_first_of(nn.MultiheadAttention(4, 1)) is False


@pytest.mark.parametrize("layer", [nn.Linear(2, 2), nn.Sequential(nn.RNN(2, 2)), lambda x: x, None])
def test_a_module_without_the_flag_leaves_the_layout_to_the_caller(layer):
    assert batch_first_of(layer) is None
    check_positions_layout(layer, torch.zeros(2, 3, 2))  # nothing to refuse


def test_a_flag_that_is_not_a_bool_is_not_read():
    class Odd(nn.Module):
        batch_first = "yes"

    assert batch_first_of(Odd()) is None


def test_an_empty_transformer_stack_has_no_flag():
    layer = nn.TransformerEncoderLayer(4, 1, dim_feedforward=8)
    stack = nn.TransformerEncoder(layer, 1, enable_nested_tensor=False)
    stack.layers = nn.ModuleList()
    assert batch_first_of(stack) is None


def test_a_batched_x_for_a_sequence_first_module_is_refused():
    with pytest.raises(SeqlabError) as error:
        check_positions_layout(nn.GRU(2, 2), torch.zeros(4, 5, 2))
    assert str(error.value) == ("GRU has batch_first=False: it reads x (4, 5, 2) as (T, B, d), but the positions "
                                "here are on dim -2; pass x as (T, d) or a batch_first module")
    assert error.value.parameter == "module"


@pytest.mark.parametrize("shape", [(5, 2), (1, 1, 5, 2)])
def test_only_a_three_dimensional_x_is_refused(shape):
    check_positions_layout(nn.GRU(2, 2), torch.zeros(shape))


def test_a_batch_first_module_takes_a_batched_x():
    check_positions_layout(nn.GRU(2, 2, batch_first=True), torch.zeros(4, 5, 2))
