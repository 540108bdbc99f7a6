"""One traced pass (seqlab.measure.traced_pass) against the three separate measurements it replaces (issue 34).

Two routes, one answer: :func:`~seqlab.measure.traced_pass.measure_pass` reads work, span and path lengths from one
forward; :func:`~seqlab.measure.work.count_multiplications` (under the same reference kernels),
:func:`~seqlab.measure.trace.measure_span` and :func:`~seqlab.measure.paths.measure_paths` read each from a pass of
its own. Every figure must be the same, on every layer seqlab ships, every mixer of the registry and the tiny
``transformers`` models of the field's kinds (tests/hf_mixers.py).
"""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch

from seqlab.layers.attention import SelfAttention
from seqlab.layers.mixers import mixers
from seqlab.layers.recurrent import ElmanRNN
from seqlab.measure.paths import measure_paths
from seqlab.measure.switches import reference_kernels
from seqlab.measure.trace import measure_span
from seqlab.measure.traced_pass import TracedPass, measure_pass
from seqlab.measure.work import count_multiplications

import hf_mixers  # noqa: E402 - tests/ is on the path (conftest)

D = 8


def _first(output):
    return output[0] if isinstance(output, tuple) else output


def _shipped() -> dict[str, torch.nn.Module]:
    generator = torch.Generator().manual_seed(0)
    layers = {"elman": ElmanRNN(D, D, generator=generator), "attention": SelfAttention(D, generator=generator),
              "causal attention": SelfAttention(D, causal=True, generator=generator),
              "nn.RNN": torch.nn.RNN(D, D, batch_first=True), "nn.LSTM": torch.nn.LSTM(D, D, batch_first=True),
              "nn.GRU": torch.nn.GRU(D, D, batch_first=True),
              "nn.TransformerEncoderLayer": torch.nn.TransformerEncoderLayer(D, 2, 16, batch_first=True)}
    for entry in mixers():
        if entry.available():
            layers[entry.name] = entry.build(D, window=3, generator=torch.Generator().manual_seed(0))
    return {name: layer.eval() for name, layer in layers.items()}


SHIPPED = _shipped()


def _separately(layer, x, sources):
    with reference_kernels(), torch.no_grad():
        work = count_multiplications(layer, x)
    return work, measure_span(layer, x), measure_paths(layer, x, sources=sources)


def _assert_same(layer, x, sources) -> None:
    one = measure_pass(layer, x, sources=sources)
    work, span, paths = _separately(layer, x, sources)
    assert (one.work.multiplications, one.work.arithmetic_flops) == (work.multiplications, work.arithmetic_flops)
    assert one.work.by_op == work.by_op and one.work.by_module == work.by_module
    assert one.work.unaccounted == work.unaccounted and one.work.masked_multiplications == work.masked_multiplications
    assert (one.span.ops, one.span.products, one.span.total_ops, one.span.total_products) == \
        (span.ops, span.products, span.total_ops, span.total_products)
    assert one.span.op_counts == span.op_counts and one.span.fused == span.fused
    assert (one.paths.products, one.paths.ops) == (paths.products, paths.ops)
    assert (one.paths.fallbacks, one.paths.decomposed, one.paths.derived, one.paths.undefined) == \
        (paths.fallbacks, paths.decomposed, paths.derived, paths.undefined)


@pytest.mark.parametrize("name", list(SHIPPED))
def test_one_pass_gives_the_three_measurements_of_every_shipped_layer(name):
    layer = SHIPPED[name]
    x = torch.randn(1, 7, D, generator=torch.Generator().manual_seed(1))
    _assert_same(lambda rows: _first(layer(rows)), x, None)


@pytest.mark.parametrize("name", list(hf_mixers.MODELS))
def test_one_pass_gives_the_three_measurements_of_each_transformers_kind(name):
    pytest.importorskip("transformers")
    model = hf_mixers.build(name, torch.float32)
    x = hf_mixers.embeddings(8, torch.float32)  # 8: a multiple of the chunked families' chunk sizes
    layer = hf_mixers.last_hidden(model)
    with torch.no_grad():  # a first call may change the model (RWKV rescales its weights, BigBird swaps its attention)
        layer(x)
    _assert_same(layer, x, (0, 7))


def test_sources_that_do_not_fit_one_pass_are_traced_in_more_passes_and_the_first_reads_work_and_span():
    layer = SHIPPED["elman"]
    x = torch.randn(1, 9, D, generator=torch.Generator().manual_seed(2))
    one = measure_pass(lambda rows: _first(layer(rows)), x, sources=None, batch_bytes=1)  # one source a pass
    assert one.passes == 1 + (9 - 2)  # the first pass takes two sources, every later one a single source
    assert one.paths.row(0) == tuple(range(1, 10)) and one.paths.row(8) == (None,) * 8 + (1,)
    assert one.work.multiplications == 9 * (D * D + D * D)  # T (d·d_h + d_h²): one pass counted it once
    assert one.span.products == 9


def test_work_and_span_without_sources_run_no_path_tracer():
    q, k, v = (torch.randn(5, D) for _ in range(3))
    traced = TracedPass(work=True, span=True).run(lambda a, b, c: torch.softmax(a @ b.T, -1) @ c, q, k, v)
    assert traced.work.multiplications == 2 * 5 * 5 * D  # q·kᵀ and α·v: 2 · T² · d
    assert (traced.span.products, traced.span.ops) == (2, 3)  # mm, softmax, mm
    assert measure_pass(SHIPPED["elman"], torch.randn(4, D)).paths is None


def test_no_engine_mode_imports_dynamo():
    code = ("import sys, torch, seqlab\n"
            "from seqlab.layers.recurrent import ElmanRNN\n"
            "seqlab.profile(ElmanRNN(4, 4), torch.randn(1, 5, 4))\n"
            "print('torch._dynamo' in sys.modules)\n")
    shown = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert shown.strip() == "False"
