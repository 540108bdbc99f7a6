"""The attention machine: one call that scores every query against every key at once (L2, L4, L10).

L2: the score e_ij = a(q_i, k_j) reads only q_i and k_j, so for the dot-product scores all
T_q x T_k of them are one matrix product Q K^T. A softmax normalises each row on its own,

    alpha_ij = exp(e_ij) / sum_j' exp(e_ij'),

and the mix c_i = sum_j alpha_ij v_j is a second product A V: three operations in a row,
whatever T is. L4: c_T = alpha_T1 v_1 + ... + alpha_TT v_T, so position 1 reaches position T
through a single factor alpha_T1. L10: the indices i, j only select vectors and the mix is a
sum, so permuting the (k_j, v_j) pairs changes nothing, and permuting the query rows permutes
the output rows.

The score function is pluggable, as in the course (see :data:`SCORES`):

- ``"dot"``:        e_ij = q_i . k_j
- ``"scaled_dot"``: e_ij = q_i . k_j / sqrt(d_k)                    (Vaswani et al. 2017, 3.2.1)
- ``"general"``:    e_ij = q_i^T W k_j, W (d_q, d_k) learned        (Luong et al. 2015, 3.1)
- ``"additive"``:   e_ij = w^T tanh(W_q q_i + W_k k_j), width d_attention  (Bahdanau et al. 2015)

Masks are boolean with ``True`` = may attend, the convention of the boolean ``attn_mask`` of
``torch.nn.functional.scaled_dot_product_attention``; masked scores become -inf, so their
weights are exactly 0.

Shape letters: B batch (optional, first), T_q queries, T_k keys, d_q, d_k, d_v widths,
d_model input width of self-attention.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from seqlab.errors import Message, SeqlabError, require_positive_int
from seqlab.i18n import N_
from seqlab.layers.transition import FORWARD, apply_transition

__all__ = ["SCORES", "Attention", "SelfAttention", "causal_mask"]

SCORES = ("dot", "scaled_dot", "additive", "general")
_DOT_SCORES = ("dot", "scaled_dot")


def _uniform(shape: tuple[int, ...], fan_in: int, generator: torch.Generator | None,
             dtype: torch.dtype) -> torch.nn.Parameter:
    """U(-1/sqrt(fan_in), 1/sqrt(fan_in)), ``torch.nn.Linear``'s bound, drawn from ``generator``."""
    bound = 1.0 / math.sqrt(fan_in)
    return torch.nn.Parameter(
        torch.empty(shape, dtype=dtype).uniform_(-bound, bound, generator=generator))


def causal_mask(T: int) -> Tensor:
    """(T, T) boolean mask, True on and below the diagonal: position i may attend to j <= i.

    >>> causal_mask(3)
    tensor([[ True, False, False],
            [ True,  True, False],
            [ True,  True,  True]])

    Raises:
        SeqlabError: ``T`` is not an integer >= 1.
    """
    T = require_positive_int("T", T)
    return torch.ones(T, T, dtype=torch.bool).tril()  # (T, T)


class Attention(torch.nn.Module):
    """softmax(score(Q, K)) V with a pluggable score (L2); returns (outputs, weights).

    >>> att = Attention("scaled_dot")
    >>> out, w = att(torch.randn(4, 8), torch.randn(6, 8), torch.randn(6, 3))
    >>> out.shape, w.shape  # (T_q, d_v), (T_q, T_k)
    (torch.Size([4, 3]), torch.Size([4, 6]))

    Args:
        score: one of :data:`SCORES`.
        d_k: key width. Optional for ``"dot"`` / ``"scaled_dot"`` (then read from the keys;
            when given it is checked); required for ``"general"`` and ``"additive"``.
        d_q: query width for ``"general"`` / ``"additive"`` (default ``d_k``); for dot scores it
            must equal ``d_k`` when both are given.
        d_attention: hidden width of the ``"additive"`` score (default ``d_k``); refused for others.
        generator: RNG for the learned parameters (reproducible construction).
        dtype: floating dtype of the learned parameters.

    Transition factor (:mod:`seqlab.layers.transition`): the weights α_ij themselves, scaled in the forward: the
    output is homogeneous of degree 1 in them along every route, one per signal whatever |i - j| (L4).

    Raises:
        SeqlabError: unknown ``score`` (the message lists :data:`SCORES`), a missing or
            non-positive width, or a width that the score does not use.
    """

    transition_factor = "α_ji"
    transition_scaling = FORWARD
    transition_scale: float | None = None

    def __init__(self, score: str = "scaled_dot", d_k: int | None = None, *,
                 d_q: int | None = None, d_attention: int | None = None,
                 generator: torch.Generator | None = None,
                 dtype: torch.dtype = torch.float32) -> None:
        super().__init__()
        if score not in SCORES:
            raise SeqlabError(N_("score must be one of {scores}; received {score!r}"), scores=', '.join(SCORES),
                              score=score)
        self.score = score
        self.d_k = None if d_k is None else require_positive_int("d_k", d_k)
        if d_attention is not None and score != "additive":
            raise SeqlabError(N_("d_attention only applies to the additive score, received "
                                 "d_attention={d_attention!r} with score {score!r}"), d_attention=d_attention,
                              score=score)
        if score in _DOT_SCORES:
            self.d_q = None if d_q is None else require_positive_int("d_q", d_q)
            if self.d_q is not None and self.d_k is not None and self.d_q != self.d_k:
                raise SeqlabError(N_("the {score} score needs d_q == d_k, received d_q={d_q}, d_k={d_k}"), score=score,
                                  d_q=self.d_q, d_k=self.d_k)
            self.d_q = self.d_q if self.d_q is not None else self.d_k
            self.d_attention = None
            return
        if d_k is None:
            raise SeqlabError(N_("the {score} score has learned weights and needs d_k, received None"), score=score)
        self.d_q = self.d_k if d_q is None else require_positive_int("d_q", d_q)
        if score == "general":
            self.d_attention = None
            self.weight = _uniform((self.d_q, self.d_k), self.d_k, generator, dtype)  # W
        else:
            self.d_attention = (self.d_k if d_attention is None
                                else require_positive_int("d_attention", d_attention))
            d_a = self.d_attention
            self.weight_q = _uniform((d_a, self.d_q), self.d_q, generator, dtype)  # W_q
            self.weight_k = _uniform((d_a, self.d_k), self.d_k, generator, dtype)  # W_k
            self.weight_score = _uniform((d_a,), d_a, generator, dtype)  # w

    def extra_repr(self) -> str:
        parts = [f"score={self.score!r}", f"d_q={self.d_q}", f"d_k={self.d_k}"]
        if self.d_attention is not None:
            parts.append(f"d_attention={self.d_attention}")
        return ", ".join(parts)

    def _check(self, query: object, key: object, value: object) -> None:
        received = (Message(N_("received query {shape}, key {shape2}, value {shape3}"), shape=_shape(query),
                            shape2=_shape(key), shape3=_shape(value)))
        if not all(isinstance(t, Tensor) for t in (query, key, value)):
            raise SeqlabError(N_("query, key and value must be torch.Tensors; {received}"), received=received)
        if query.dim() not in (2, 3) or key.dim() != query.dim() or value.dim() != query.dim():
            raise SeqlabError(N_("query, key, value must all be (T, d) or all be (B, T, d); {received}"),
                              received=received)
        if query.dim() == 3 and not query.shape[0] == key.shape[0] == value.shape[0]:
            raise SeqlabError(N_("query, key and value must share the batch size B; {received}"), received=received)
        if key.shape[-2] != value.shape[-2] or key.shape[-2] == 0 or query.shape[-2] == 0:
            raise SeqlabError(N_("key and value need the same T_k >= 1 and T_q >= 1; {received}"), received=received)
        if self.score in _DOT_SCORES:  # one width for both, from the constructor or the keys
            d_k = d_q = next(d for d in (self.d_k, self.d_q, key.shape[-1]) if d is not None)
        else:
            d_q, d_k = self.d_q, self.d_k
        if query.shape[-1] != d_q or key.shape[-1] != d_k:
            raise SeqlabError(N_("the {score} score expects query width d_q={d_q} and key width d_k={d_k}; {received}"),
                              score=self.score, d_q=d_q, d_k=d_k, received=received)
        dtypes = {query.dtype, key.dtype, value.dtype}
        dtypes.update(p.dtype for p in self.parameters())
        if len(dtypes) != 1 or not query.is_floating_point():
            raise SeqlabError(N_("query, key, value (and the score weights) must share one floating dtype, received "
                                 "{dtypes}"), dtypes=sorted(str(d) for d in dtypes))

    def scores(self, query: Tensor, key: Tensor) -> Tensor:
        """The raw scores e (…, T_q, T_k), before any mask or softmax."""
        if self.score in _DOT_SCORES:
            e = query @ key.transpose(-2, -1)  # (…, T_q, T_k): all scores in ONE product Q K^T
            if self.score == "scaled_dot":
                e = e / math.sqrt(key.shape[-1])  # (…, T_q, T_k)
            return e
        if self.score == "general":
            return (query @ self.weight) @ key.transpose(-2, -1)  # (…, T_q, T_k): Q W K^T
        q_a = query @ self.weight_q.T  # (…, T_q, d_a): W_q q_i
        k_a = key @ self.weight_k.T  # (…, T_k, d_a): W_k k_j
        hidden = torch.tanh(q_a.unsqueeze(-2) + k_a.unsqueeze(-3))  # (…, T_q, T_k, d_a)
        return hidden @ self.weight_score  # (…, T_q, T_k): w^T tanh(…)

    def forward(self, query: Tensor, key: Tensor, value: Tensor,
                mask: Tensor | None = None) -> tuple[Tensor, Tensor]:
        """Attend: scores, row softmax, then the mix A V.

        Args:
            query: (T_q, d_q) or (B, T_q, d_q).
            key: (T_k, d_k) or (B, T_k, d_k).
            value: (T_k, d_v) or (B, T_k, d_v).
            mask: optional bool tensor broadcastable to (…, T_q, T_k); True = may attend.

        Returns:
            (outputs, weights): outputs (…, T_q, d_v) = weights @ value; weights (…, T_q, T_k),
            each row a probability distribution over the keys (masked entries exactly 0).

        Raises:
            SeqlabError: shapes or dtypes that do not fit (the message shows them), a mask that
                is not bool or does not broadcast, or a row whose every key is masked.
        """
        self._check(query, key, value)
        e = self.scores(query, key)  # (…, T_q, T_k)
        if mask is not None:
            allowed = _check_mask(mask, e.shape)  # (…, T_q, T_k) bool
            e = e.masked_fill(~allowed, float("-inf"))  # (…, T_q, T_k)
        weights = torch.softmax(e, dim=-1)  # (…, T_q, T_k): each row on its own
        outputs = apply_transition(self, weights) @ value  # (…, T_q, d_v): c_i = sum_j alpha_ij v_j, product A V
        return outputs, weights


def _shape(t: object) -> str:
    return str(tuple(t.shape)) if isinstance(t, Tensor) else type(t).__name__


def _check_mask(mask: object, score_shape: torch.Size) -> Tensor:
    """The mask expanded to ``score_shape``; refuse non-bool, non-broadcasting, all-masked rows."""
    _check_mask_dtype(mask)
    try:
        broadcast = torch.broadcast_shapes(mask.shape, score_shape)
    except RuntimeError:
        broadcast = None
    if broadcast != score_shape:
        raise SeqlabError(N_("mask of shape {shape} does not broadcast to the score shape {score_shape} (…, T_q, T_k)"),
                          shape=tuple(mask.shape), score_shape=tuple(score_shape))
    allowed = mask.expand(score_shape)  # (…, T_q, T_k)
    blocked = ~allowed.any(dim=-1)  # (…, T_q)
    if bool(blocked.any()):
        index = tuple(int(i) for i in blocked.nonzero()[0])
        where = (Message(N_("query row {index}"), index=index[-1]) if len(index) == 1
                 else Message(N_("query row {index} of batch index {index2}"), index=index[-1], index2=index[:-1]))
        raise SeqlabError(N_("the mask blocks every key for {where}; each row needs at least one True to avoid a 0/0 "
                             "softmax"), where=where)
    return allowed


class SelfAttention(torch.nn.Module):
    """Self-attention: Q, K, V are three bias-free projections of one x, then :class:`Attention`.

    q_i = W_q x_i, k_i = W_k x_i, v_i = W_v x_i; every position attends to every position,
    itself included (to j <= i only when ``causal``).

    >>> sa = SelfAttention(8, d_v=4, generator=torch.Generator().manual_seed(0))
    >>> out, w = sa(torch.randn(2, 5, 8))
    >>> out.shape, w.shape  # (B, T, d_v), (B, T, T)
    (torch.Size([2, 5, 4]), torch.Size([2, 5, 5]))

    Args:
        d_model: width of x.
        d_k: width of queries and keys (default ``d_model``).
        d_v: width of values and outputs (default ``d_model``).
        score: one of :data:`SCORES`.
        causal: when True, position i attends only to j <= i (combined with any given mask).
        d_attention: hidden width of the additive score.
        generator: RNG for every initial weight (reproducible construction).
        dtype: floating dtype of the parameters.

    Raises:
        SeqlabError: non-positive widths or an unknown score.
    """

    def __init__(self, d_model: int, *, d_k: int | None = None, d_v: int | None = None,
                 score: str = "scaled_dot", causal: bool = False,
                 d_attention: int | None = None, generator: torch.Generator | None = None,
                 dtype: torch.dtype = torch.float32) -> None:
        super().__init__()
        self.d_model = require_positive_int("d_model", d_model)
        self.d_k = d_model if d_k is None else require_positive_int("d_k", d_k)
        self.d_v = d_model if d_v is None else require_positive_int("d_v", d_v)
        self.causal = bool(causal)
        self.q_proj = self._linear(self.d_k, generator, dtype)
        self.k_proj = self._linear(self.d_k, generator, dtype)
        self.v_proj = self._linear(self.d_v, generator, dtype)
        self.attention = Attention(score, self.d_k, d_q=self.d_k, d_attention=d_attention,
                                   generator=generator, dtype=dtype)

    def _linear(self, d_out: int, generator: torch.Generator | None,
                dtype: torch.dtype) -> torch.nn.Linear:
        # Built on the meta device, so the global RNG is not touched, then filled from generator.
        layer = torch.nn.Linear(self.d_model, d_out, bias=False, device="meta", dtype=dtype)
        layer.weight = _uniform((d_out, self.d_model), self.d_model, generator, dtype)
        return layer

    def project(self, x: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """(q, k, v) = (x W_q^T, x W_k^T, x W_v^T): (…, T, d_k), (…, T, d_k), (…, T, d_v).

        Raises:
            SeqlabError: ``x`` is not (T, d_model) or (B, T, d_model).
        """
        if not isinstance(x, Tensor) or x.dim() not in (2, 3) or x.shape[-1] != self.d_model:
            raise SeqlabError(N_("x must have shape (T, {d_model}) or (B, T, {d_model}), received {shape}"),
                              d_model=self.d_model, shape=_shape(x))
        return self.q_proj(x), self.k_proj(x), self.v_proj(x)

    def forward(self, x: Tensor, mask: Tensor | None = None) -> tuple[Tensor, Tensor]:
        """(outputs (…, T, d_v), weights (…, T, T)) for x (T, d_model) or (B, T, d_model)."""
        q, k, v = self.project(x)  # (…, T, d_k), (…, T, d_k), (…, T, d_v)
        if self.causal:
            causal = causal_mask(x.shape[-2]).to(x.device)  # (T, T)
            if mask is None:
                mask = causal
            else:
                _check_mask_dtype(mask)
                try:
                    mask = mask & causal  # (…, T, T)
                except RuntimeError as err:
                    raise SeqlabError(N_("mask of shape {shape} does not broadcast with the causal mask {value}"),
                                      shape=tuple(mask.shape), value=(x.shape[-2],) * 2) from err
        return self.attention(q, k, v, mask)


def _check_mask_dtype(mask: object) -> Tensor:
    if not isinstance(mask, Tensor) or mask.dtype != torch.bool:
        what = mask.dtype if isinstance(mask, Tensor) else type(mask).__name__
        raise SeqlabError(N_("mask must be a bool tensor (True = may attend), received {what}"), what=what)
    return mask
