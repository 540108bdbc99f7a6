"""What the Figure 1 panel refuses, in the server, before any worker is asked (L11).

:func:`check` refuses a ``heads`` that does not divide ``d_model`` and sizes over one request's budget, with
the widest ``d_model`` that would fit (:func:`widest_fitting`); its sentences are the ``web`` catalogue's.
Shapes: S = T_source source positions, T = T_target target positions, d_model width, h heads.
"""

from __future__ import annotations

import importlib

from seqlab.web.budget import REQUEST_BUDGET_BYTES, Work, require_within_budget
from seqlab.web.messages import N_, LabError, Phrase

DOMAIN = "web"
#: Widest d_model the panel accepts (its query declaration says the same).
MAX_WIDTH = 512


def widest_fitting(T_source: int, T_target: int, heads: int, estimate) -> int | None:
    """The largest d_model (a multiple of ``heads``, at most :data:`MAX_WIDTH`) whose estimate fits one request.

    >>> from seqlab.studies.figure import estimate_figure_bytes
    >>> widest_fitting(32, 32, 16, estimate_figure_bytes), widest_fitting(16, 16, 16, estimate_figure_bytes)
    (368, 512)
    """
    low, high = 0, MAX_WIDTH // heads  # multiples of heads: low fits (or is 0), high + 1 does not exist
    while low < high:
        middle = (low + high + 1) // 2
        if estimate(T_source, T_target, middle * heads, heads).total_bytes <= REQUEST_BUDGET_BYTES:
            low = middle
        else:
            high = middle - 1
    return low * heads if low else None


def check(T_source: int, T_target: int, d_model: int, heads: int) -> None:
    """Refuse, in the server and before any worker is asked, what the study or the budget would refuse.

    >>> try:
    ...     check(8, 8, 30, 4)
    ... except LabError as error:
    ...     print(error.phrase.render("en").replace("; ", ";\\n"))
    heads must divide d_model, received d_model = 30 and heads = 4;
    expected a divisor of 30 in [1, 30]

    Raises:
        LabError: ``heads`` not dividing ``d_model``, or sizes over one request's budget (with the widest
            d_model that would fit).
    """
    if heads > d_model or d_model % heads:
        raise LabError(Phrase(N_("heads must divide d_model, received d_model = {d} and heads = {heads}; expected a "
                              "divisor of {d2} in [1, {d3}]"), {"d": d_model, "heads": heads, "d2": d_model,
                                                                "d3": d_model}), parameter="heads")
    try:
        figure = importlib.import_module("seqlab.studies.figure")
    except ImportError:
        return
    estimate = figure.estimate_figure_bytes(T_source, T_target, d_model, heads)
    hint = None
    if estimate.total_bytes > REQUEST_BUDGET_BYTES:
        widest = widest_fitting(T_source, T_target, heads, figure.estimate_figure_bytes)
        sizes = {"source": T_source, "target": T_target, "heads": heads}
        hint = (Phrase(N_("at S = {source}, T = {target} with {heads} heads, no d_model fits"), sizes) if widest is None
                else Phrase(N_("at S = {source}, T = {target} with {heads} heads, d_model may be at most {width}"),
                            {**sizes, "width": widest}))
    require_within_budget(estimate, Phrase(N_("S = {source}, T = {target} at d_model = {d}"),
                                           {"source": T_source, "target": T_target, "d": d_model}),
                          "d_model", hint=hint)


def figure_work(T_source: int, T_target: int, d_model: int, heads: int) -> Work:
    """Figure 1's run for its time estimate: every box's dependency probe, about (S + T)·(S + T)·d_model units
    (each position probed against every row of its width).

    >>> figure_work(8, 8, 512, 8).units
    131072
    """
    return Work("figure", (T_source + T_target) ** 2 * d_model,
                Phrase(N_("S = {source}, T = {target} at d_model = {d}"),
                       {"source": T_source, "target": T_target, "d": d_model}), "d_model")
