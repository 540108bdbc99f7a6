"""seqlab.layers.anatomy: where a Hugging Face model keeps its layers, attention and positions, read by structure on
tiny random-weight models of three families built from their configs (nothing downloaded), and positions switched
off checked by a second route (the same model run with the position table zeroed, or with every position id 0)."""

from __future__ import annotations

import pytest
import torch

from seqlab.errors import SeqlabError
from seqlab.layers.anatomy import (
    LEARNED,
    LEARNED_NAMES,
    ROTARY,
    PositionSwitch,
    attention_module,
    contains_attention,
    find_position_switch,
    layer_stack,
    modules_of_interest,
    without_positions,
)


def build(family: str):
    import transformers

    torch.manual_seed(0)
    sizes = dict(vocab_size=40, hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32,
                 max_position_embeddings=32)
    if family == "bert":
        config = transformers.BertConfig(**sizes)
        model = transformers.BertModel(config, add_pooling_layer=False)
    elif family == "gpt2":
        config = transformers.GPT2Config(vocab_size=40, n_embd=16, n_layer=2, n_head=2, n_positions=32)
        model = transformers.GPT2Model(config)
    else:
        config = transformers.LlamaConfig(**sizes)
        model = transformers.LlamaModel(config)
    config._attn_implementation = "eager"
    return model.double().eval()


@pytest.mark.parametrize("family, stack, attention, switch", [
    ("bert", "encoder.layer", "encoder.layer.1.attention.self", PositionSwitch(LEARNED, ("embeddings.position_embeddings",))),
    ("gpt2", "h", "h.1.attn", PositionSwitch(LEARNED, ("wpe",))),
    ("llama", "layers", "layers.1.self_attn", PositionSwitch(ROTARY, ("rotary_emb",))),
])
def test_the_stack_the_attention_and_the_positions_of_three_families(family, stack, attention, switch):
    model = build(family)
    assert layer_stack(model, 2) == stack
    assert attention_module(model, 2, 2) == attention
    assert find_position_switch(model) == switch
    assert contains_attention(model.get_submodule(f"{stack}.0")) and not contains_attention(torch.nn.Linear(2, 2))


def test_modules_of_interest_number_the_layers_from_one_and_leave_out_dropouts_and_rotary_tables():
    model = build("llama")
    chosen = dict(modules_of_interest(model, 2))
    assert chosen["embed_tokens"] == 0
    assert chosen["layers.0"] == 1 and chosen["layers.1.self_attn"] == 2
    assert "layers" not in chosen and "rotary_emb" not in chosen and "norm" not in chosen  # after the stack
    bert = dict(modules_of_interest(build("bert"), 2))
    assert bert["embeddings.position_embeddings"] == 0 and "encoder" not in bert
    assert not any(name.endswith("dropout") for name in bert)


def test_a_missing_stack_or_attention_is_refused():
    with pytest.raises(SeqlabError, match="^found no list of 3 layers in GPT2Model; expected a Transformer encoder "
                                          "or decoder$"):
        layer_stack(build("gpt2"), 3)
    net = torch.nn.Module()
    net.layers = torch.nn.ModuleList([torch.nn.Linear(2, 2), torch.nn.Linear(2, 2)])
    with pytest.raises(SeqlabError, match="^layer 1 of Module holds no attention module$"):
        attention_module(net, 2, 1)


def test_learned_positions_off_equal_a_zeroed_table():
    model = build("gpt2")
    ids = torch.tensor([[3, 1, 4, 1, 5]])
    with torch.no_grad(), without_positions(model) as switch:
        off = model(ids).last_hidden_state
    assert switch.kind == LEARNED
    with torch.no_grad():
        on = model(ids).last_hidden_state  # the hook is gone
        saved = model.wpe.weight.clone()
        model.wpe.weight.zero_()
        zeroed = model(ids).last_hidden_state
        model.wpe.weight.copy_(saved)
    torch.testing.assert_close(off, zeroed, rtol=1e-12, atol=1e-12)
    assert not torch.allclose(on, off)


def test_an_encoder_without_positions_is_permutation_equivariant():
    model = build("bert")
    ids = torch.tensor([[2, 7, 9, 11, 5]])
    order = torch.tensor([4, 2, 0, 3, 1])
    with torch.no_grad(), without_positions(model):
        y = model(ids).last_hidden_state
        y_permuted = model(ids[:, order]).last_hidden_state
    torch.testing.assert_close(y_permuted, y[:, order], rtol=1e-10, atol=1e-12)


def test_rotary_positions_off_equal_every_position_id_zero():
    model = build("llama")
    ids = torch.tensor([[3, 1, 4, 1, 5]])
    with torch.no_grad(), without_positions(model) as switch:
        off = model(ids).last_hidden_state
    assert switch == PositionSwitch(ROTARY, ("rotary_emb",))
    with torch.no_grad():
        same_position = model(ids, position_ids=torch.zeros(1, 5, dtype=torch.int64)).last_hidden_state
    torch.testing.assert_close(off, same_position, rtol=1e-12, atol=1e-12)


def test_the_hooks_are_removed_on_error():
    model = build("gpt2")
    with pytest.raises(RuntimeError), without_positions(model):
        raise RuntimeError
    assert not model.wpe._forward_hooks


def test_a_model_with_no_position_module_is_refused_by_its_architecture():
    import transformers

    bloom = transformers.BloomModel(transformers.BloomConfig(vocab_size=40, hidden_size=16, n_layer=1, n_head=2))
    with pytest.raises(SeqlabError) as error:
        find_position_switch(bloom)
    assert str(error.value).startswith("cannot switch the positions off in BloomModel (model type 'bloom'): it has no "
                                       f"learned position table ({', '.join(LEARNED_NAMES)}) and no rotary embedding")
    with pytest.raises(SeqlabError, match=r"^cannot switch the positions off in Linear: it has no learned"):
        find_position_switch(torch.nn.Linear(2, 2))
