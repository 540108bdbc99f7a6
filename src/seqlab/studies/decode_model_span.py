"""The span of a causal LM: ops in a row of the prefill against those of generation, traced at two lengths T
(``seqlab decode --model``, issue 24; L1, L2, L6).

At each length T the model's own code runs twice under the span tracer (:func:`seqlab.measure.trace.measure_span`):
one forward pass over T given token ids (the prefill, no cache), and the writing of T tokens from one, each step's
most likely token (``argmax`` of the logits) fed back through the cache. Attention's prefill chain does not grow
with T (every position is read at once), a recurrence's scan adds a few ops per position, and generation grows
like T for every family (:func:`seqlab.fit.grows_like_length`): the asymmetry of L6, on a real model.

Shape letters: T positions, V vocabulary.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch

from seqlab.errors import require_positive_int
from seqlab.fit import grows_like_length
from seqlab.measure.trace import measure_span

if TYPE_CHECKING:
    from seqlab.studies.decode_model import ModelFacts


@dataclass(frozen=True)
class ModelSpan:
    """Ops in a row (span) of the prefill against generation, traced on the model at two lengths T.

    Attributes:
        lengths: (T1, T2).
        prefill_ops, prefill_products: one forward pass over T given tokens: the longest chain of dependent ops,
            and of matrix products along it (:func:`seqlab.measure.trace.measure_span`).
        generation_ops, generation_products: writing T tokens from one, each step's most likely token fed back
            (``argmax`` of the logits, through the cache).
        prefill_constant: the prefill's ops in a row are the same at both T (attention reads all positions at
            once; a recurrence's scan adds a few ops per position).
        generation_grows: generation's ops in a row grow like T (:func:`seqlab.fit.grows_like_length`).
    """

    lengths: tuple[int, int]
    prefill_ops: tuple[int, int]
    prefill_products: tuple[int, int]
    generation_ops: tuple[int, int]
    generation_products: tuple[int, int]
    prefill_constant: bool
    generation_grows: bool


def measure_model_span(model: Any, facts: ModelFacts, lengths: tuple[int, int], seed: int = 0) -> ModelSpan:
    """Trace the prefill over T tokens and the generation of T tokens at both lengths (ops and products in a row).

    Args:
        model: from :func:`~seqlab.studies.decode_model.load_causal_lm`.
        facts: its :class:`~seqlab.studies.decode_model.ModelFacts`. lengths: (T1, T2). seed: the ids.

    Returns:
        A :class:`ModelSpan`.

    Raises:
        SeqlabError: a length that is not an integer >= 2, or beyond the model's maximum positions.
    """
    for T in lengths:
        require_positive_int("span_lengths", T, facts.max_positions)
    spans = []
    for T in lengths:
        ids = torch.randint(0, facts.vocabulary, (1, T), generator=torch.Generator().manual_seed(seed))  # (1, T)

        def generate(T: int = T, ids: torch.Tensor = ids) -> None:
            token, past = ids[:, :1], {}  # (1, 1)
            for _ in range(T):
                out = model(token, use_cache=True, logits_to_keep=1, **past)
                past = {facts.cache_argument: out.get(facts.cache_argument)}
                token = out.logits[:, -1:].argmax(-1)  # (1, 1): the output fed back

        prefill = measure_span(lambda ids=ids: model(ids, use_cache=False, logits_to_keep=1))
        spans.append((prefill, measure_span(generate)))
    (p1, g1), (p2, g2) = spans
    return ModelSpan(lengths=tuple(lengths), prefill_ops=(p1.ops, p2.ops),
                     prefill_products=(p1.products, p2.products), generation_ops=(g1.ops, g2.ops),
                     generation_products=(g1.products, g2.products), prefill_constant=p1.ops == p2.ops,
                     generation_grows=grows_like_length(lengths, (g1.ops, g2.ops)))
