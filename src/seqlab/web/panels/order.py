"""Order panel: the same words in another order, through both machines (L10).

The sentence is split with seqlab's ``words`` tokenizer and every word gets its seeded vector
(:func:`seqlab.text.embed`); the reordered sentence must use the same words (compared without regard to
capitals: "El perro" and "el perro" hold the same words; both are shown as typed), and each of its words gets
the *same id* as in the first sentence, so its rows are exactly the first sentence's rows permuted,
x' = x[π]. Both machines run on x and on x' in float64:

* self-attention is permutation-equivariant: f(x[π]) = f(x)[π], every number the same up to rounding;
* the recurrence reads in order, so f(x[π]) and f(x)[π] differ.

Every request the schema allows is answered (a schema-driven client never meets a refusal): a sentence is 1 to 300
characters holding at least one word (:data:`~seqlab.web.validation.NOT_BLANK`), so at most 300 words; and a
reordering whose words differ from the sentence's is answered with ``same_words: false`` and the differing words,
and no comparison (there is no π to compare by), rather than refused.

The largest change max |f(x[π]) − f(x)[π]| is judged against :func:`seqlab.measure.order.tolerance`,
the rounding allowance of the order engine. The key–value check of
:func:`seqlab.measure.order.measure_key_value_order` (pairs shuffled together: nothing changes) is
reported beside it.

Shapes: T words, d = d_model = d_h = d_k = d_v.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Annotated, Literal

from fastapi import APIRouter, Query, Request
from pydantic import BaseModel, ConfigDict, Field

from seqlab.memory import FLOAT64_BYTES, MemoryEstimate
from seqlab.seeds import MAX_SEED
from seqlab.web.budget import Work, require_within_budget
from seqlab.web.messages import N_, FieldName, LabError, Phrase
from seqlab.web.cache import ResultCache
from seqlab.web.validation import NOT_BLANK, JsonInt
from seqlab.web.workers import pool_of

DOMAIN = "web"

router = APIRouter()
#: Seconds one order measurement may take in its worker.
LIMIT_S = 30.0
_results = ResultCache(128)

MAX_CHARACTERS = 300
MAX_WIDTH = 64
#: Output numbers shown per row (the first few of d).
SHOWN = 4


class OrderRequest(BaseModel):
    """Two sentences, meant to hold the same words, the width of the machines and the seed."""

    model_config = ConfigDict(extra="forbid", strict=True)

    sentence: str = Field(min_length=1, max_length=MAX_CHARACTERS, pattern=NOT_BLANK,
                          description="the sentence: 1 to 300 characters, at least one of them not a space (each run "
                                      "of letters or digits is a word, each other mark one)",
                          examples=["el perro muerde al cartero"])
    reordered: str = Field(min_length=1, max_length=MAX_CHARACTERS, pattern=NOT_BLANK,
                           description="the same words in another order (capitals aside); other words are answered "
                                       "with same_words false and no comparison",
                           examples=["al cartero muerde el perro"])
    d_model: JsonInt = Field(8, ge=2, le=MAX_WIDTH, description="every width of both machines")
    seed: JsonInt = Field(0, ge=0, le=MAX_SEED, description="seeds the word vectors and the weights")


class MachineOrder(BaseModel):
    """One machine's outputs on both orders, and the verdict."""

    rows: list[list[float]] = Field(description="f(x): first numbers of each output row, sentence order")
    rows_reordered: list[list[float]] = Field(description="f(x[π]): first numbers of each row, reordered")
    row_change: list[float] = Field(description="max |f(x[π])_r − f(x)_π(r)| for every reordered row r")
    max_abs_change: float
    tolerance: float = Field(description="rounding allowance (seqlab.measure.order.tolerance)")
    same_numbers: bool = Field(description="max_abs_change ≤ tolerance: the rows only moved")


class OrderResponse(BaseModel):
    """What the order panel draws."""

    words: list[str]
    reordered_words: list[str]
    same_words: bool = Field(True, description="both hold the same words (capitals aside); false: no comparison, "
                                               "and ``differing`` names the words that differ")
    differing: list[str] = Field(default_factory=list, description="words in one sentence and not the other "
                                                                   "(lower case); empty when the words are the same")
    permutation: list[int] = Field(description="reordered word r is word permutation[r] of the sentence; empty when "
                                               "the words differ")
    identity: bool = Field(description="the reordered sentence has the words in the same order")
    d_model: int
    seed: int
    shown: int = Field(description="numbers shown per row")
    recurrence: MachineOrder | None = Field(description="None when the words differ")
    attention: MachineOrder | None = Field(description="None when the words differ")
    key_value_change: float | None = Field(description="attention's call with (k, v) pairs shuffled: max |Δ|; None "
                                                       "when the words differ or there is one word")
    key_value_tolerance: float | None


def permutation_of(words: tuple[str, ...], reordered: tuple[str, ...]) -> tuple[int, ...]:
    """π with reordered[r] == words[π[r]], capitals aside; repeated words are matched in order of appearance.

    >>> permutation_of(("el", "perro", "muerde"), ("muerde", "el", "perro"))
    (2, 0, 1)
    >>> permutation_of(("El", "perro", "muerde", "al", "cartero"), ("Al", "cartero", "muerde", "el", "perro"))
    (3, 4, 2, 0, 1)

    Raises:
        LabError: the two do not hold the same words (the message names what differs).
    """
    folded, moved = [word.lower() for word in words], [word.lower() for word in reordered]
    if sorted(folded) != sorted(moved):
        differing = sorted(set(folded) ^ set(moved))
        values = {"name": FieldName("reordered"), "other": FieldName("sentence"), "count": len(reordered),
                  "expected": len(words)}
        phrase = (Phrase(N_("{name} must use exactly the words of {other} (capitals aside), in any order; received "
                         "{count} words for {expected}, differing in {words}"), {**values, "words": differing})
                  if differing else
                  Phrase(N_("{name} must use exactly the words of {other} (capitals aside), in any order; received "
                         "{count} words for {expected}, differing in how often words repeat"), values))
        raise LabError(phrase, parameter="reordered")
    queues: dict[str, list[int]] = defaultdict(list)
    for index, word in enumerate(folded):
        queues[word].append(index)
    return tuple(queues[word].pop(0) for word in moved)


def _split(text: str, name: str) -> tuple[str, ...]:
    from seqlab.text import tokenize

    pieces = tokenize(text, "words").pieces if text.strip() else ()
    if not pieces:  # the schema's NOT_BLANK pattern lets none through; a direct call may
        raise LabError(Phrase(N_("{name} must hold at least one word, received {count}"),
                              {"name": FieldName(name), "count": 0}), parameter=name)
    return pieces


def differing_words(words: tuple[str, ...], reordered: tuple[str, ...]) -> list[str] | None:
    """The words (lower case) in one and not the other; [] when they differ only in how often words repeat; None
    when both hold the same words (capitals aside).

    >>> differing_words(("El", "perro"), ("el", "gato")), differing_words(("a", "a", "b"), ("a", "b", "b"))
    (['gato', 'perro'], [])
    >>> differing_words(("El", "perro"), ("perro", "el")) is None
    True
    """
    folded, moved = [word.lower() for word in words], [word.lower() for word in reordered]
    if sorted(folded) == sorted(moved):
        return None
    return sorted(set(folded) ^ set(moved))


def _machine(layer, x, perm, shown: int) -> MachineOrder:
    import torch

    from seqlab.measure.order import tolerance

    with torch.no_grad():
        y = layer(x)  # (T, d)
        y_reordered = layer(x[perm])  # (T, d)
    change = (y_reordered - y[perm]).abs()  # (T, d)
    largest = float(change.max())
    allowed = tolerance(float(y.abs().max()), x.shape[0], y.dtype)
    return MachineOrder(rows=y[:, :shown].tolist(), rows_reordered=y_reordered[:, :shown].tolist(),
                        row_change=change.amax(dim=1).tolist(), max_abs_change=largest, tolerance=allowed,
                        same_numbers=largest <= allowed)


def measure_reordering(sentence: str, reordered: str, d: int, seed: int) -> OrderResponse:
    """Run both machines on the sentence and on its reordering; compare row by row (in a worker process).

    >>> r = measure_reordering("el perro muerde al cartero", "al cartero muerde el perro", 8, 0)
    >>> r.permutation, r.attention.same_numbers, r.recurrence.same_numbers
    ([3, 4, 2, 0, 1], True, False)

    Raises:
        LabError: a sentence with no word (the schema refuses it first).
    """
    import torch

    from seqlab.measure.order import measure_key_value_order
    from seqlab.text import Tokens, embed, tokenize
    from seqlab.web.panels.chain import build_machines

    words, moved = _split(sentence, "sentence"), _split(reordered, "reordered")
    differing = differing_words(words, moved)
    if differing is not None:  # nothing to compare by: said, not refused
        return OrderResponse(words=list(words), reordered_words=list(moved), same_words=False, differing=differing,
                             permutation=[], identity=False, d_model=d, seed=seed, shown=min(SHOWN, d),
                             recurrence=None, attention=None, key_value_change=None, key_value_tolerance=None)
    perm = permutation_of(words, moved)
    T = len(words)
    tokens = tokenize(" ".join(words), "words")
    x = embed(Tokens(tokens.ids, tokens.pieces, "words"), d, seed=seed, dtype=torch.float64)  # (T, d)
    rnn, attention = (machine.double() for machine in build_machines(d, seed))  # compare's weights, in float64
    index = torch.tensor(perm)
    shown = min(SHOWN, d)
    recurrence = _machine(rnn, x, index, shown)
    attended = _machine(lambda rows: attention(rows)[0], x, index, shown)
    with torch.no_grad():
        q, k, v = attention.project(x)
    # (k, v) pairs shuffled together need two rows to shuffle: one word has no such check (None, not a figure)
    pairs = measure_key_value_order(lambda q_, k_, v_: attention.attention(q_, k_, v_)[0], q, k, v, seed=seed) \
        if T >= 2 else None
    return OrderResponse(words=list(words), reordered_words=list(moved), permutation=list(perm),
                         identity=list(perm) == list(range(T)), d_model=d, seed=seed, shown=shown,
                         recurrence=recurrence, attention=attended,
                         key_value_change=None if pairs is None else pairs.max_abs_change,
                         key_value_tolerance=None if pairs is None else pairs.tolerance)


@router.post("/api/order", response_model=OrderResponse, tags=["order"],
             summary="The same words in another order through both machines (L10)")
async def order_panel(body: OrderRequest, request: Request,
                      lang: Annotated[Literal["en", "es"], Query(description="language of the messages")] = "en"
                      ) -> OrderResponse:
    """Attention's rows come out permuted with identical numbers; the recurrence's change.

    ``lang`` sets the language of a refusal's message only (the numbers have none). The sentences are
    checked here, in the server; the machines run in a worker process.
    """
    key = (body.sentence, body.reordered, body.d_model, body.seed)
    found = _results.get(key)
    if found is None:
        words, moved = _split(body.sentence, "sentence"), _split(body.reordered, "reordered")
        T, d = max(len(words), len(moved)), body.d_model
        require_within_budget(MemoryEstimate(16 * T * d * FLOAT64_BYTES + 8 * d * d * FLOAT64_BYTES,
                                             Phrase(N_("activations of {count} words"), {"count": T})),
                              Phrase(N_("{count} words at d_model = {d}"), {"count": T, "d": d}), "sentence")
        found = await pool_of(request).run(
            measure_reordering, key, limit_s=LIMIT_S, request=request,
            work=Work("order", T * d * d + T * T * d, Phrase(N_("{count} words at d_model = {d}"),
                                                             {"count": T, "d": d}), "sentence"))
        _results.put(key, found)
    return found

