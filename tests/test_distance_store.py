"""The one path-memory estimate (seqlab.measure.distance_store.estimate_path_bytes) against what the tracer holds.

Two routes: the estimate from the tracer's sizes (int32 distances, two rows per source, the 64 MiB chunk of the
masked min-plus product), and the bytes the tracer itself charges (``PathBatch.stored_bytes``, the store's
``used_bytes``) or allocates (the largest temporary of the masked product, recorded as it is made). Every
front end that refuses a size before tracing (``seqlab table1`` / ``table1-modern``, the web lab's chain
panel) must bound what the tracer holds, at two sizes each.
"""

from __future__ import annotations

import pytest
import torch

from seqlab.errors import SeqlabError
from seqlab.measure import contraction_rules
from seqlab.measure.contraction_rules import CHUNK_ELEMENTS
from seqlab.measure.distance_store import PathBytes, estimate_path_bytes
from seqlab.measure.distances import ITEMSIZE
from seqlab.measure.paths import path_batches
from seqlab.measure.switches import one_thread


def stored_bytes(layer, x: torch.Tensor, sources) -> list[tuple[int, int]]:
    """(sources, bytes of distances held) of every pass, element level (the estimate's own form)."""
    with one_thread():
        return [(len(b.sources), b.stored_bytes)
                for b in path_batches(layer, x, tuple(sources), lambda y: [y], positions=False)]


def test_constants_are_the_tracers():
    assert ITEMSIZE == 4 and CHUNK_ELEMENTS == 2**24  # int32 distances; 2**24 * 4 = 64 MiB chunk
    assert estimate_path_bytes(1, 1) == PathBytes(distances=8, values=0, temporary=0)  # 2 rows x 4 bytes


@pytest.mark.parametrize(("T", "d_in", "d_out"), [(8, 4, 6), (64, 16, 32)])
def test_distances_equal_the_stores_own_count(T: int, d_in: int, d_out: int):
    """tanh(x W): the pass writes the traced copy of x, x W and its tanh; the store charges exactly those."""
    w = torch.randn(d_in, d_out, generator=torch.Generator().manual_seed(0))  # (d_in, d_out)
    x = torch.randn(T, d_in, generator=torch.Generator().manual_seed(1))  # (T, d_in)
    passes = stored_bytes(lambda rows: torch.tanh(rows @ w), x, (0, T - 1))
    elements = T * d_in + 2 * T * d_out
    assert passes == [(2, estimate_path_bytes(elements, 2).distances)]
    # 8 * 4 + 2 * 8 * 6 = 128 elements x 4 rows x 4 bytes = 2_048;  64 * 16 + 2 * 64 * 32 = 5_120 -> 81_920
    assert passes[0][1] == {8: 2_048, 64: 81_920}[T]


class _RecordingTorch:
    """``torch`` as contraction_rules sees it, recording the bytes of every ``torch.where`` result (the masked
    product's temporary)."""

    def __init__(self) -> None:
        self.largest = 0

    def __getattr__(self, name: str):
        return getattr(torch, name)

    def where(self, *args, **kwargs):
        out = torch.where(*args, **kwargs)
        self.largest = max(self.largest, out.numel() * out.element_size())
        return out


@pytest.mark.parametrize(("T", "d"), [(16, 8), (4096, 64)])  # 2 * 16 * 8 * 8 under the chunk; 2 * 4096 * 64 * 64 over
def test_temporary_bounds_the_masked_products_largest_allocation(monkeypatch, T: int, d: int):
    """x @ triu(W): the constant zeros of triu(W) cut paths, so the tracer takes its chunked min-plus product, on the
    d − 1 columns of W that hold a zero only: the estimate (every column) bounds it, within one column's share."""
    recording = _RecordingTorch()
    monkeypatch.setattr(contraction_rules, "torch", recording)
    w = torch.triu(torch.ones(d, d))  # (d, d), exact zeros below the diagonal
    x = torch.ones(T, d)  # (T, d)
    stored_bytes(lambda rows: rows @ w, x, (0,))
    expected = estimate_path_bytes(2 * T * d, 1, product=(T, d, d)).temporary
    assert expected * (d - 1) // d <= recording.largest <= expected
    assert expected == {16: 2 * 16 * 8 * 8 * 4, 4096: 2**24 * 4}[T]  # 8_192 bytes; the 64 MiB chunk


@pytest.mark.parametrize(("T", "d"), [(12, 16), (48, 32)])
def test_the_chain_panels_estimate_bounds_its_trace(T: int, d: int):
    from seqlab.text import embed, synthetic_tokens
    from seqlab.web.panels.chain import build_machines, estimate_chain_bytes

    x = embed(synthetic_tokens(T, "words", "en"), d, seed=0)  # (T, d)
    rnn, attention = build_machines(d, 0)
    estimate = estimate_chain_bytes(T, d).total_bytes
    for layer in (rnn, lambda rows: attention(rows)[0]):
        held = max(nbytes for _, nbytes in stored_bytes(layer, x, range(T)))
        assert held <= estimate


@pytest.mark.parametrize(("T", "d"), [(8, 4), (16, 8)])
@pytest.mark.parametrize("layer", ["self_attention", "rnn", "lstm", "gru", "convolution", "dilated_convolution",
                                   "restricted"])
def test_table1s_estimate_bounds_each_layers_trace(layer: str, T: int, d: int):
    from seqlab.studies import table1

    built = table1._build(layer, T, d, table1.DEFAULT_KERNEL, table1.DEFAULT_WINDOW, 0)
    x = torch.randn(1, T, d, generator=torch.Generator().manual_seed(1))  # (1, T, d)
    with one_thread():
        (batch,) = path_batches(built.stack, x, (0, T - 1), lambda outputs: outputs, positions=False)
    elements = table1._elements(layer, T, d, table1.DEFAULT_KERNEL, table1.DEFAULT_WINDOW)
    assert batch.stored_bytes <= estimate_path_bytes(elements, 2).distances


@pytest.mark.parametrize(("kwargs", "match"), [({"elements": 0, "sources": 1}, "elements"),
                                               ({"elements": 1, "sources": 1.5}, "sources"),
                                               ({"elements": 1, "sources": 1, "value_bytes": -4}, "value_bytes"),
                                               ({"elements": 1, "sources": 1, "product": (4, 0, 4)}, "k must")])
def test_bad_sizes_are_refused(kwargs: dict, match: str):
    with pytest.raises(SeqlabError, match=match):
        estimate_path_bytes(**kwargs)
