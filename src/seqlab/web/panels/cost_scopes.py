"""The Cost panel's three scopes side by side: what the lesson counts, a layer does, the kernels run (L5–L7).

The lesson (L5 against L6) charges the recurrence its input weights W_xh but leaves attention's Q, K, V and
output projections out. This module shows, at one T, the closed forms of :mod:`seqlab.scopes` at four scopes —

* ``lesson``: T(d_h² + d_h·d_model) against the attention call T²(d_k + d_v);
* ``layer``: the same recurrence against a whole attention layer, Q, K, V and W_O included;
* ``layer_without_output``: the same without W_O;
* ``kernels``: ``nn.RNN(d_model, d_h)`` against ``nn.MultiheadAttention(d_model, 1 head)``, which projects Q, K
  and V to d_model (so its closed form is the layer scope's with d_k = d_v = d_model; H heads count the same);

— and beside each closed form a *counted* value from a source other than that closed form: the module or call
run on the meta device under :func:`seqlab.measure.work.count_on_meta` (PyTorch's own flop formulas; no memory
for data, no compute). Counting runs one recurrence step at a time (about a millisecond each), so it happens up
to T = :data:`COUNT_MAX`, in a worker process (:mod:`seqlab.web.workers`); beyond, or while every worker is busy,
the closed forms stand
alone and the response says so. :func:`verdict` says which side does fewer multiplications at each scope and
why, from the counted values where they exist (a count that differs from its closed form is reported).

Unit: multiplications (one per multiply-add); biases, activations and softmax are left out. Shapes: T
positions, d_model input width, d_h state width, d_k query/key width, d_v value width.
"""

from __future__ import annotations

from fractions import Fraction
from functools import lru_cache
from typing import Literal

from pydantic import BaseModel, Field

from seqlab import cost, scopes
from seqlab.i18n import format_fraction, format_integer
from seqlab.web.budget import LabBusy
from seqlab.web.messages import tr
from seqlab.web.workers import default_pool

DOMAIN = "web"
#: Longest T that is counted on the meta device (the recurrence's count walks its T steps: about 1 s here).
COUNT_MAX = 1024
#: Seconds the count may take in its worker.
COUNT_LIMIT_S = 30.0
#: The rows, in the order they are shown.
SCOPE_ROWS = ("lesson", "layer", "layer_without_output", "kernels")
Side = Literal["attention", "recurrence", "tie"]
#: The recurrence's closed form at every scope (L5; a tanh RNN has one weight block per step).
RECURRENCE_FORMULA = "T(d_h² + d_h·d_model)"


class Ratio(BaseModel):
    """An exact fraction, its value, and the value as the page shows it."""

    fraction: str = Field(description="numerator/denominator, exact")
    value: float
    text: str = Field(description="formatted for the language")


def ratio(value: Fraction, lang: str, digits: int = 3) -> Ratio:
    """A :class:`Ratio` of ``value`` for ``lang``.

    >>> ratio(Fraction(25, 256), "es").text
    '0,0977'
    """
    return Ratio(fraction=f"{value.numerator}/{value.denominator}", value=float(value),
                 text=format_fraction(value, lang, digits=digits))


class ScopeCount(BaseModel):
    """One machine at one scope: the closed form, and the count beside it when there is one."""

    what: str = Field(description="what is counted, in PyTorch's names")
    formula: str = Field(description="the closed form, in the lesson's letters")
    closed_form: int = Field(description="multiplications by seqlab.scopes' closed form")
    closed_form_text: str
    counted: int | None = Field(description="multiplications counted on the meta device; None: not counted")
    counted_text: str | None
    source: str | None = Field(description="WorkCount.source of the count: 'pytorch' = PyTorch's own formulas")


class Scope(BaseModel):
    """Both machines at one scope, which does fewer multiplications, and where they cross."""

    scope: Literal["lesson", "layer", "layer_without_output", "kernels"]
    recurrence: ScopeCount
    attention: ScopeCount
    ratio: Ratio = Field(description="attention / recurrence, from the counts where counted, else the closed forms")
    fewer: Side = Field(description="the machine that does fewer multiplications at this T and scope")
    crossover: Ratio | None = Field(description="closed-form T of equal work; None: attention costs more at every T")


class Scopes(BaseModel):
    """The four scopes at one T, how the counts were obtained, and the sentence that reads them."""

    T: int
    method: Literal["counted", "closed form"]
    count_limit: int = Field(COUNT_MAX, description="longest T that is counted")
    busy: bool = Field(False, description="the counter was busy with another request: closed forms, not cached")
    device: str = Field("meta", description="where the counts ran: no memory for data, no compute")
    rows: list[Scope]
    verdict: str = Field(description="which side does fewer multiplications at which scope, and why")


@lru_cache(maxsize=128)
def _counts(T: int, d_model: int, d_h: int, d_k: int, d_v: int) -> dict[str, tuple[int, str]]:
    """Count every machine on the meta device in a worker process: name -> (multiplications, source).

    Raises:
        LabBusy: no worker freed up within a fifth of a second (not cached: the next request tries again).
    """
    done, found = default_pool().try_call(count_machines, (T, d_model, d_h, d_k, d_v), limit_s=COUNT_LIMIT_S)
    if not done:
        raise LabBusy()
    return found


def count_machines(T: int, d_model: int, d_h: int, d_k: int, d_v: int) -> dict[str, tuple[int, str]]:
    """Multiplications of every machine of the table, counted on the meta device, with each count's source.

    >>> found = count_machines(50, 512, 512, 512, 512)
    >>> found["rnn"], found["sdpa"], found["mha"]  # 2·50·512²; 2·50²·512; 4·50·512² + 2·50²·512
    ((26214400, 'pytorch'), (2560000, 'pytorch'), (54988800, 'pytorch'))
    """
    import torch
    import torch.nn.functional as F

    from seqlab.measure.work import count_on_meta

    meta = {"device": "meta"}
    rnn = torch.nn.RNN(d_model, d_h, batch_first=True, **meta)
    mha = torch.nn.MultiheadAttention(d_model, 1, batch_first=True, **meta).eval()
    w_q, w_k, w_v = (torch.nn.Linear(d_model, width, **meta) for width in (d_k, d_k, d_v))
    w_o = torch.nn.Linear(d_v, d_model, **meta)
    x = torch.empty(1, T, d_model, **meta)  # (B, T, d_model)
    q, k, v = torch.empty(1, 1, T, d_k, **meta), torch.empty(1, 1, T, d_k, **meta), torch.empty(1, 1, T, d_v, **meta)

    def layer(x: torch.Tensor, output: bool) -> torch.Tensor:
        mixed = F.scaled_dot_product_attention(w_q(x)[:, None], w_k(x)[:, None], w_v(x)[:, None])[:, 0]  # (B, T, d_v)
        return w_o(mixed) if output else mixed

    with torch.no_grad():
        counted = {"rnn": count_on_meta(rnn, x), "sdpa": count_on_meta(F.scaled_dot_product_attention, q, k, v),
                   "layer": count_on_meta(lambda x: layer(x, True), x),
                   "layer_without_output": count_on_meta(lambda x: layer(x, False), x),
                   "mha": count_on_meta(lambda x: mha(x, x, x, need_weights=False), x)}
    return {name: (work.multiplications, work.source) for name, work in counted.items()}


def scope_rows(T: int, d_model: int, d_h: int, d_k: int, d_v: int, lang: str) -> Scopes:
    """Closed forms at the four scopes, counted beside them when T <= :data:`COUNT_MAX` and a worker is free.

    >>> s = scope_rows(50, 512, 512, 512, 512, "en")
    >>> [row.fewer for row in s.rows]  # lesson, layer, layer without W_O, kernels: only the lesson favours attention
    ['attention', 'recurrence', 'recurrence', 'recurrence']
    """
    counts, method, busy = None, "closed form", False
    if T <= COUNT_MAX:
        try:
            counts, method = _counts(T, d_model, d_h, d_k, d_v), "counted"
        except LabBusy:
            busy = True
    lesson, layer, without = scopes.scoped_work(T, d_model, d_h, d_k, d_v)
    kernels = scopes.scoped_work(T, d_model, d_h, d_model, d_model)[1]  # nn.MultiheadAttention: d_k = d_v = d_model
    rnn = (f"nn.RNN({d_model}, {d_h})", RECURRENCE_FORMULA, "rnn")
    projections = "T·d_model(2d_k + d_v) + T²(d_k + d_v)"
    plan = (
        (lesson, rnn, (f"SDPA: Q Kᵀ, A V (d_k = {d_k}, d_v = {d_v})", "T²(d_k + d_v)", "sdpa")),
        (layer, rnn, ("W_Q, W_K, W_V, SDPA, W_O", projections + " + T·d_v·d_model", "layer")),
        (without, rnn, ("W_Q, W_K, W_V, SDPA", projections, "layer_without_output")),
        (replace_scope(kernels, "kernels"), rnn,
         (f"nn.MultiheadAttention({d_model}, 1)", "4T·d_model² + 2T²·d_model", "mha")),
    )
    rows = [_row(work, rec, att, counts, lang) for work, rec, att in plan]
    result = Scopes(T=T, method=method, busy=busy, rows=rows, verdict="")
    return result.model_copy(update={"verdict": verdict(result, (d_model, d_h, d_k, d_v), lang)})


def replace_scope(work: scopes.ScopedWork, name: str) -> scopes.ScopedWork:
    """``work`` renamed to the scope ``name`` (the kernels' closed form is a layer-scope one)."""
    from dataclasses import replace

    return replace(work, scope=name)


def _count(machine: tuple[str, str, str], closed: int, counts: dict | None, lang: str) -> ScopeCount:
    what, formula, key = machine
    value, source = counts[key] if counts is not None else (None, None)
    return ScopeCount(what=what, formula=formula, closed_form=closed, closed_form_text=format_integer(closed, lang),
                      counted=value,
                      counted_text=None if value is None else format_integer(value, lang), source=source)


def _row(work: scopes.ScopedWork, rec: tuple[str, str, str], att: tuple[str, str, str], counts: dict | None,
         lang: str) -> Scope:
    recurrence = _count(rec, work.recurrence, counts, lang)
    attention = _count(att, work.attention, counts, lang)
    rec_value = recurrence.counted if recurrence.counted is not None else recurrence.closed_form
    att_value = attention.counted if attention.counted is not None else attention.closed_form
    fewer = "tie" if att_value == rec_value else "attention" if att_value < rec_value else "recurrence"
    return Scope(scope=work.scope, recurrence=recurrence, attention=attention,
                 ratio=ratio(Fraction(att_value, rec_value), lang), fewer=fewer,
                 crossover=None if work.crossover is None else ratio(work.crossover, lang, digits=4))


def verdict(result: Scopes, widths: tuple[int, int, int, int], lang: str) -> str:
    """Which machine does fewer multiplications at each scope, and why the scopes disagree (en or es).

    Read from the rows (counted values where counted): a count that differs from its closed form is said,
    and the closed form's claim about every T is then not repeated.

    >>> print(scope_rows(50, 512, 512, 512, 512, "en").verdict)  # doctest: +ELLIPSIS
    At T = 50 attention does 0.0977× the recurrence's multiplications at the lesson's scope, 2.10× at the layer's...
    """
    _ = tr(lang)
    by = {row.scope: row for row in result.rows}
    names = {"lesson": _("the lesson's scope"), "layer": _("the layer's scope"),
             "layer_without_output": _("the layer's scope without W_O"), "kernels": _("the library kernels")}
    sides = {"attention": _("attention"), "recurrence": _("the recurrence")}
    sentences = [_("At T = {T} attention does {lesson}× the recurrence's multiplications at the lesson's scope, "
                   "{layer}× at the layer's scope ({without}× without W_O) and {kernels}× in what the library "
                   "kernels run.").format(T=format_integer(result.T, lang), lesson=by["lesson"].ratio.text,
                                          layer=by["layer"].ratio.text, without=by["layer_without_output"].ratio.text,
                                          kernels=by["kernels"].ratio.text)]
    lesson, layer = by["lesson"].fewer, by["layer"].fewer
    if lesson == "attention" and layer != "attention":
        sentences.append(_("The scope decides: the lesson charges the recurrence its input weights W_xh but leaves "
                           "attention's Q, K, V and W_O projections out; charge both layers all their weights and "
                           "attention no longer does fewer multiplications."))
    elif lesson != layer:
        sentences.append(_("The scopes disagree: {lesson} favours {a}, {layer} favours {b}.").format(
            lesson=names["lesson"], layer=names["layer"], a=sides.get(lesson, lesson), b=sides.get(layer, layer)))
    else:
        sentences.append(_("Both scopes agree here: {side} does fewer multiplications.").format(
            side=sides.get(layer, layer)) if layer != "tie" else _("Both scopes give equal work here."))
    differ = [row for row in result.rows for side in (row.recurrence, row.attention)
              if side.counted is not None and side.counted != side.closed_form]
    if differ:
        sentences.append(_("The count differs from the closed form at {scope}, so the closed form's statement about "
                           "other lengths is not repeated here.").format(scope=names[differ[0].scope]))
    elif by["layer"].crossover is None:
        equal = len(set(widths)) == 1
        sentences.append((_("With every width d a whole attention layer costs (2 + T/d)× the recurrent layer (1.5 + "
                            "T/d without W_O): more at every T. The lesson's crossover at T = {T} exists only at its "
                            "own scope.") if equal else
                          _("With these widths a whole attention layer costs more than the recurrent layer at every "
                            "T. The lesson's crossover at T = {T} exists only at its own scope.")).format(
            T=by["lesson"].crossover.text if by["lesson"].crossover else "—"))
    else:
        sentences.append(_("At the layer's scope the two do equal work at T = {T}: attention does fewer "
                           "multiplications below it, more above it.").format(T=by["layer"].crossover.text))
    return " ".join(sentences)
