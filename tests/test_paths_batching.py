"""Issue 35, item 2: every source's distances are those it has traced alone, whatever the batching.

Which sources share a pass (the default pair (0, T-1), all of them, any grouping), ``batch_bytes`` (a memory
setting: it sets how many sources a pass takes) and ``positions`` (a representation) must not change a single
distance. Before the fix a source that is causal alone reached every position when traced with source 0: the
weight 0 / Σ of a masked key depends on the open keys of its row, so with source 0 in the pass it was not a
constant and did not cut. Now no rule judges "constant" across the pass's sources (a zero cuts by the product
rule, for each source alone), so this holds by construction; these tests check it on every shipped layer, the
hand-written softmax of the issue and tiny ``transformers`` models.
"""

from __future__ import annotations

import functools

import pytest
import torch

from seqlab.layers import mixers
from seqlab.layers.attention import SelfAttention
from seqlab.layers.recurrent import ElmanRNN
from seqlab.measure.paths import measure_paths

from test_paths_zeros import HAND_WRITTEN, bucketed_attention

T, D = 6, 8


def _g() -> torch.Generator:
    return torch.Generator().manual_seed(0)


def _shipped() -> dict[str, tuple[object, torch.Tensor]]:
    x = torch.randn(1, T, D, generator=torch.Generator().manual_seed(1))
    cases = {
        "elman": (ElmanRNN(D, D, generator=_g()).eval(), x),
        "self-attention": (SelfAttention(D, generator=_g()).eval(), x),
        "causal self-attention": (SelfAttention(D, causal=True, generator=_g()).eval(), x),
    }
    for name, (mixer, row) in mixers.mixer_rows().items():
        if mixer.available():
            cases[f"mixer {name}"] = (mixer.build(D, window=3, chunk=4, generator=_g(), **row.options), x)
    small = torch.randn(T, 4, generator=torch.Generator().manual_seed(2))
    for layer in HAND_WRITTEN:
        cases[f"hand-written {layer.__name__}"] = (layer, small)
    cases["bucketed attention"] = (bucketed_attention, small)
    return cases


SHIPPED = _shipped()
#: Groupings of the T sources into passes (each a tuple of passes), beside "all in one pass" and "one per pass".
GROUPINGS = {
    "the default pair then the rest": ((0, T - 1), tuple(range(1, T - 1))),
    "reversed": (tuple(reversed(range(T))),),
    "odd and even": (tuple(range(1, T, 2)), tuple(range(0, T, 2))),
}


def _alone(layer, x, positions: bool = False) -> dict[int, tuple]:
    return {s: _rows(measure_paths(layer, x, sources=(s,), check=False, positions=positions))[s] for s in range(T)}


def _rows(matrix) -> dict[int, tuple]:
    return {s: (p, o) for s, p, o in zip(matrix.sources, matrix.products, matrix.ops, strict=True)}


def _assert_every_batching_is_alone(layer, x) -> None:
    alone = _alone(layer, x)
    assert _alone(layer, x, positions=True) == alone
    for batch_bytes in (1, 2_000, 2**30):  # one source per pass after the first, a few, all at once
        for positions in (False, True):
            together = _rows(measure_paths(layer, x, batch_bytes=batch_bytes, positions=positions, check=False))
            assert together == alone, (batch_bytes, positions)
    for name, passes in GROUPINGS.items():
        got = {}
        for group in passes:
            got.update(_rows(measure_paths(layer, x, sources=group, check=False)))
        assert got == alone, name


@pytest.mark.parametrize("name", sorted(SHIPPED))
def test_each_source_alone_equals_every_batching(name):
    layer, x = SHIPPED[name]
    _assert_every_batching_is_alone(layer, x)


def test_the_issue_case_source_alone_is_causal_with_source_zero_beside_it():
    """The issue's case: the last source of a hand-written masked softmax reaches only the last position, alone
    and beside source 0 (profile's default pair)."""
    layer, x = SHIPPED["hand-written fill_exp_divide"]
    alone = measure_paths(layer, x, sources=(T - 1,))
    pair = measure_paths(layer, x, sources=(0, T - 1))
    assert alone.products[0] == pair.products[1] == (None,) * (T - 1) + (2,)


# --- transformers-config models (tests/hf_mixers.py), a subset that traces in about a second each -------------

HF_SUBSET = ["mistral", "mamba2", "rwkv", "mixtral", "gemma2", "longformer"]


@functools.cache
def _hf(name: str):
    pytest.importorskip("transformers")
    from hf_mixers import build, embeddings, last_hidden

    model = build(name, dtype=torch.float32)
    return last_hidden(model), embeddings(T, dtype=torch.float32)


@pytest.mark.parametrize("name", HF_SUBSET)
def test_transformers_models_each_source_alone_equals_every_batching(name):
    layer, x = _hf(name)
    alone = _alone(layer, x)
    for batch_bytes in (1, 2**30):
        assert _rows(measure_paths(layer, x, batch_bytes=batch_bytes, check=False)) == alone, batch_bytes
    got = {}
    for group in GROUPINGS["the default pair then the rest"]:
        got.update(_rows(measure_paths(layer, x, sources=group, check=False)))
    assert got == alone
