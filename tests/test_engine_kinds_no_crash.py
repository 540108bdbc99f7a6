"""Issue 35, kinds 4 and 7: what reached the dispatcher in forms the engine did not expect is measured, or refused in
one line naming the op or module — never a crash, and never a process left broken.

4a. a view of a parameter made under ``no_grad`` crossing a submodule boundary (Transformer-XL's relative table,
    DeBERTa-v2, Perceiver, every Hugging Face state-space and hybrid family); 4b. higher-order ops (FlexAttention
    with score_mod and block_mask, ``torch.cond``, ``while_loop``; ``scan`` refused); 4c. frozen TorchScript and
    dynamically quantised Linear; 7. jagged nested tensors, counted per sequence.
Each kind: two inputs at least, one from ``transformers`` where one exists; two routes where there are two.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.flop_counter import FlopCounterMode, flop_registry
from typer.testing import CliRunner

from seqlab.cli import app
from seqlab.errors import SeqlabError
from seqlab.measure.paths import measure_paths
from seqlab.measure.trace import measure_span
from seqlab.measure.work import count_multiplications
from seqlab.studies.profile import profile

import hf_mixers
import hf_state_space
import long_tail_layers

TESTS = Path(__file__).resolve().parent
ENV = {"COLUMNS": "200", "NO_COLOR": "1", "FORCE_COLOR": None, "TTY_COMPATIBLE": None}
NESTED_WARNING = "ignore:The PyTorch API of nested tensors is in prototype stage:UserWarning"
JIT_WARNING = "ignore:`torch.jit.*is deprecated:DeprecationWarning"  # the kinds themselves are deprecated
QUANT_WARNING = "ignore:torch.ao.quantization is deprecated:DeprecationWarning"
QUANT_TENSOR_WARNING = "ignore:torch.quantize_per_tensor, torch.quantize_per_channel:UserWarning"
FLEX_WARNING = "ignore:flex_attention called without torch.compile:UserWarning"  # the plain call, outside a trace


def pytorch_count(module: nn.Module, function, *args) -> int:
    """PyTorch's own counter (multiplications) of ``function(*args)``, run with every parameter of ``module``
    frozen: its module tracker then hooks nothing, so the no_grad views that crashed it do not matter."""
    flags = [(p, p.requires_grad) for p in module.parameters()]
    for p, _ in flags:
        p.requires_grad_(False)
    try:
        with torch.no_grad(), FlopCounterMode(display=False) as counter:
            function(*args)
    finally:
        for p, flag in flags:
            p.requires_grad_(flag)
    return counter.get_total_flops() // 2


def on_pytorch_formulas(work) -> int:
    """The part of a count that PyTorch's registry has formulas for."""
    names = {str(packet) for packet in flop_registry}
    return sum(count for name, count in work.by_op.items() if name in names)


# --- 4a: no_grad views of parameters cross submodule boundaries -------------------------------------------------

class RelativeTable(nn.Module):
    """Transformer-XL-style: a relative position table sliced under no_grad, the slice handed to a submodule."""

    def __init__(self, d: int, span: int) -> None:
        super().__init__()
        self.table = nn.Parameter(torch.randn(2 * span - 1, d))
        self.project = nn.Linear(d, d, bias=False)
        self.span = span

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # (B, T, d)
        T = x.shape[1]
        with torch.no_grad():
            relative = self.table[self.span - T:self.span + T - 1]  # a view of a parameter, made under no_grad
        r = self.project(relative)  # (2T - 1, d): crosses a submodule boundary
        return x @ r[:T].mT @ x  # (B, T, T) @ (B, T, d)


def test_a_no_grad_view_of_a_parameter_crossing_a_submodule_is_counted():
    layer = RelativeTable(8, 10)
    x = torch.randn(2, 6, 8)
    work = count_multiplications(layer, x)  # raised "Expected gradient function to be set" before
    # projection of 11 rows: 11 * 8 * 8 = 704; x r^T: 2 * 6 * 8 * 6 = 576; (B, T, T) @ x: 2 * 6 * 6 * 8 = 576
    assert work.multiplications == 704 + 576 + 576
    assert work.module("RelativeTable.project") == 704
    assert work.multiplications == pytorch_count(layer, layer, x)  # a second route


def _deberta():
    import transformers

    config = transformers.DebertaV2Config(vocab_size=32, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                                          intermediate_size=24, max_position_embeddings=64, relative_attention=True,
                                          position_buckets=8, pos_att_type=["p2c", "c2p"], hidden_dropout_prob=0.0,
                                          attention_probs_dropout_prob=0.0)
    torch.manual_seed(0)
    model = transformers.DebertaV2Model(config).eval()
    return model, lambda x: model(inputs_embeds=x).last_hidden_state


def _perceiver():
    import transformers

    config = transformers.PerceiverConfig(num_latents=4, d_latents=16, d_model=16, num_blocks=1,
                                          num_self_attends_per_block=1, num_self_attention_heads=2,
                                          num_cross_attention_heads=2, qk_channels=8, v_channels=16)
    torch.manual_seed(0)
    model = transformers.PerceiverModel(config).eval()
    return model, lambda x: model(inputs=x).last_hidden_state


@pytest.mark.parametrize("build", [_deberta, _perceiver], ids=["deberta-v2", "perceiver"])
def test_transformers_models_with_no_grad_views_count_as_pytorch_does(build):
    model, layer = build()
    x = torch.randn(1, 6, 16, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        work = count_multiplications(layer, x)  # crashed before any figure
    assert work.complete
    assert on_pytorch_formulas(work) == pytorch_count(model, layer, x) > 0


def test_state_space_families_are_found_from_transformers_itself():
    families = hf_state_space.state_space_families()
    # the families are among those found (the finding never reads this list)
    assert {"mamba", "mamba2", "falcon_mamba", "jamba", "zamba", "bamba", "lfm2", "nemotron_h"} <= set(families)
    assert len(families) >= 25


@pytest.mark.parametrize("family", hf_state_space.state_space_families())
def test_profile_gives_every_figure_on_each_state_space_family(family):
    layer = hf_state_space.LastHidden(hf_state_space.build(family))
    x = torch.randn(1, 6, hf_state_space.D_MODEL, generator=torch.Generator().manual_seed(1))
    result = profile(layer, x)
    assert result.unaccounted == {} and result.fused == {}
    assert result.multiplications >= on_pytorch_formulas(result) == pytorch_count(layer, layer, x) > 0  # two routes
    assert result.span_products >= 1 and result.total_products >= result.span_products
    assert result.path.exact and result.path.fallbacks == {}
    assert result.path.first_to_last_products is not None  # y_5 depends on x_0 in a causal decoder
    assert result.path.last_to_first_products is None  # and y_0 never on x_5
    assert result.signal is not None


# --- 4b: higher-order ops ----------------------------------------------------------------------------------------

def _flex_flag() -> bool:
    return sys.modules["torch.nn.attention.flex_attention"]._FLEX_ATTENTION_DISABLE_COMPILE_DEBUG


@pytest.mark.filterwarnings(FLEX_WARNING)
@pytest.mark.parametrize("window", [None, 2])
def test_flex_attention_is_measured_with_its_score_mod_and_block_mask(window):
    torch.manual_seed(0)
    layer = long_tail_layers.FlexLayer(8, window)
    x = torch.randn(1, 8, 8)
    with torch.no_grad():
        assert torch.allclose(layer(x), layer.reference(x), atol=1e-5)  # the layer is what its reference says
        work = count_multiplications(layer, x)
        reference = count_multiplications(layer.reference, x)
    # qkv 8 * 8 * 24 = 1536; the dense scores and mix of every pair: 64 * (8 + 8) = 1024
    assert work.multiplications == reference.multiplications == 1536 + 1024
    open_pairs = sum(min(i + 1, window or 8) for i in range(8))
    assert work.masked_multiplications == reference.masked_multiplications == (64 - open_pairs) * 16
    T = 8
    paths = measure_paths(layer, x, sources=tuple(range(T)))
    expected = measure_paths(layer.reference, x, sources=tuple(range(T)))
    assert paths.exact and paths.products == expected.products  # (ops differ: the dense form has casts of its own)
    for i in range(T):  # block_mask respected: a position reaches itself and the next window (or all later ones)
        assert [paths.products[i][j] is not None for j in range(T)] == \
            [i <= j < i + (window or T) for j in range(T)]
    assert measure_span(layer, x).products == measure_span(layer.reference, x).products == 3  # W_qkv, q kᵀ, A v
    assert _flex_flag() is False  # put back


@pytest.mark.filterwarnings(FLEX_WARNING)
def test_a_failure_inside_flex_attention_leaves_the_next_call_working():
    torch.manual_seed(0)
    layer = long_tail_layers.FlexLayer(8)
    x = torch.randn(1, 8, 8)

    def failing(score, b, h, q, kv):
        raise RuntimeError("a score_mod that fails")

    layer.bias = failing
    with pytest.raises(RuntimeError, match="a score_mod that fails"), torch.no_grad():
        count_multiplications(layer, x)
    del layer.bias
    assert _flex_flag() is False
    with torch.no_grad():
        assert torch.allclose(layer(x), layer.reference(x), atol=1e-5)  # plain FlexAttention still works
        assert count_multiplications(layer, x).multiplications == 2560


@pytest.mark.parametrize(("sign", "expected"), [(1.0, 27), (-1.0, 0)])
def test_cond_counts_the_branch_that_ran(sign, expected):
    def layer(x: torch.Tensor) -> torch.Tensor:
        return torch.cond(x.sum() > 0, lambda z: z @ z.mT, lambda z: z * 2, (x,))

    x = sign * torch.ones(3, 3)
    assert count_multiplications(layer, x).multiplications == expected  # 3 * 3 * 3 = 27 for the product
    assert measure_span(layer, x).products == (1 if expected else 0)


@pytest.mark.parametrize("steps", [2, 4])
def test_while_loop_counts_every_step(steps):
    from torch._higher_order_ops.while_loop import while_loop

    def layer(x: torch.Tensor) -> torch.Tensor:
        return while_loop(lambda i, z: i < steps, lambda i, z: (i + 1, z @ z), (torch.tensor(0), x))[1]

    x = torch.eye(3) * 0.5
    assert count_multiplications(layer, x).multiplications == steps * 27
    assert measure_span(layer, x).products == steps


def test_a_higher_order_op_computing_outside_its_functions_is_refused_in_one_line():
    torch.manual_seed(0)
    layer = long_tail_layers.make_scan(4)
    x = torch.randn(1, 5, 4)
    with pytest.raises(SeqlabError) as error:
        profile(layer, x)
    message = str(error.value)
    assert "\n" not in message and "higher-order op scan" in message and "ScanLayer" in message
    assert error.value.parameter == "module"
    with torch.no_grad():
        assert layer(x).shape == (1, 5, 4)  # nothing left broken


@pytest.mark.parametrize("as_json", [False, True])
def test_the_cli_refuses_a_higher_order_op_in_one_line(monkeypatch, as_json):
    monkeypatch.syspath_prepend(str(TESTS))
    result = CliRunner().invoke(app, ["profile", "long_tail_layers:make_scan", "--seq-len", "4", "--d-model", "4",
                                      *(["--json"] if as_json else [])], env=ENV)
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    errors = [line for line in result.output.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1 and "higher-order op scan" in errors[0], result.output


# --- 4c: frozen TorchScript and quantised Linear -----------------------------------------------------------------

def _block(d: int) -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(d, 2 * d), nn.ReLU(), nn.Linear(2 * d, d)).eval()


def _figures(result):
    return (result.multiplications, result.span_ops, result.span_products, result.path.first_to_last_products,
            result.path.longest_products, result.path.longest_ops, result.path.exact)


@pytest.mark.filterwarnings(JIT_WARNING)
@pytest.mark.parametrize("d", [4, 8])
def test_a_frozen_module_profiles_as_the_module_it_was(d):
    frozen = torch.jit.freeze(torch.jit.script(_block(d)))  # raised AttributeError ('training') before
    x = torch.randn(1, 6, d)
    result = profile(frozen, x)
    assert _figures(result) == _figures(profile(_block(d), x))
    assert result.multiplications == 6 * d * 2 * d * 2  # two Linear layers of d x 2d
    assert result.unaccounted == {} and result.path.exact


@pytest.mark.filterwarnings(QUANT_WARNING)
@pytest.mark.filterwarnings(QUANT_TENSOR_WARNING)
@pytest.mark.parametrize("d", [4, 8])
def test_a_quantised_linear_is_the_contraction_it_is(d):
    quantised = torch.ao.quantization.quantize_dynamic(_block(d), {nn.Linear}, dtype=torch.qint8)
    x = torch.randn(1, 6, d)
    result = profile(quantised, x)  # "matrix products in a row 0", no caveat, before
    assert _figures(result)[:-1] == _figures(profile(_block(d), x))[:-1]
    # dynamic quantisation scales the activations by max|x| over the whole tensor, so every position depends a little
    # on the largest one: the float product's rule misses it, the perturbation check sees it (then a named bound)
    check = result.path.check
    assert result.path.exact == check.agrees and (check.agrees or check.missed)
    assert result.by_op == {"quantized.linear_dynamic": 6 * d * 2 * d * 2}
    assert result.unaccounted == {} and result.span_products == 2


@pytest.mark.filterwarnings(QUANT_WARNING)
@pytest.mark.filterwarnings(QUANT_TENSOR_WARNING)
def test_a_quantised_transformers_model_counts_and_traces_as_its_float_model():
    model = hf_mixers.build("mistral", dtype=torch.float32)
    x = hf_mixers.embeddings(5, dtype=torch.float32)
    quantised = torch.ao.quantization.quantize_dynamic(model, {nn.Linear}, dtype=torch.qint8)
    with torch.no_grad():
        counted = count_multiplications(hf_mixers.last_hidden(quantised), x)
        float_count = count_multiplications(hf_mixers.last_hidden(model), x)
    assert counted.multiplications == float_count.multiplications and counted.complete
    assert counted.by_op["quantized.linear_dynamic"] == float_count.by_op["aten.mm"]
    paths = measure_paths(hf_mixers.last_hidden(quantised), x)
    float_paths = measure_paths(hf_mixers.last_hidden(model), x)
    assert paths.exact and paths.products == float_paths.products


# --- 7: jagged nested tensors, per sequence ------------------------------------------------------------------------

@pytest.mark.filterwarnings(NESTED_WARNING)
@pytest.mark.parametrize("lengths", [[2, 4], [5, 1, 3]])
def test_jagged_batches_are_counted_per_sequence(lengths):
    g = torch.Generator().manual_seed(0)
    rows = [torch.randn(n, 3, generator=g) for n in lengths]
    jagged = torch.nested.nested_tensor(rows, layout=torch.jagged)
    linear = nn.Linear(3, 6)
    counted = count_multiplications(linear, jagged)  # "NestedTensorImpl doesn't support sizes" before
    assert counted.multiplications == sum(lengths) * 3 * 6
    assert counted.multiplications == sum(count_multiplications(linear, r).multiplications for r in rows)
    assert counted.complete


@pytest.mark.filterwarnings(NESTED_WARNING)
@pytest.mark.parametrize("lengths", [[2, 5], [3, 3, 1]])
def test_jagged_attention_is_counted_per_sequence(lengths):
    g = torch.Generator().manual_seed(0)
    heads, width = 2, 4
    rows = [torch.randn(n, heads, width, generator=g) for n in lengths]
    q = torch.nested.nested_tensor(rows, layout=torch.jagged).transpose(1, 2)  # (B, heads, j, width)
    counted = count_multiplications(lambda z: F.scaled_dot_product_attention(z, z, z), q)
    # per sequence heads * n^2 * (width + width)
    assert counted.multiplications == sum(heads * n * n * 2 * width for n in lengths)
    assert counted.multiplications == sum(count_multiplications(
        lambda z: F.scaled_dot_product_attention(z, z, z), r.transpose(0, 1)[None]).multiplications for r in rows)
    assert counted.padded_multiplications == len(lengths) * heads * max(lengths) ** 2 * 2 * width
    assert math.isfinite(counted.arithmetic_flops)


def test_the_refusal_is_worded_in_spanish(monkeypatch):
    monkeypatch.syspath_prepend(str(TESTS))
    result = CliRunner().invoke(app, ["profile", "long_tail_layers:make_scan", "--seq-len", "4", "--d-model", "4",
                                      "--lang", "es"], env=ENV)
    assert result.exit_code == 2, result.output
    errors = [line for line in result.output.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1 and "la operación de orden superior scan calcula fuera de las funciones" in errors[0]
