"""Figure 1 panel: the fifteen boxes of the Transformer, each measured for whether it mixes positions (L11).

The endpoint calls :func:`seqlab.studies.figure.measure_figure` (a seeded one-layer encoder–decoder on
the built-in story's tokens; a dependency matrix per input of every box) and returns its JSON form
(:func:`seqlab.render.json_output.to_jsonable`) with each title and lesson translated through the
study's gettext domain. The page lays the boxes out by ``column`` and ``row`` and lights those whose
measured ``mixes`` is true. When the study is not installed the endpoint says so (``available`` false)
and the page shows that instead of a figure.

Shapes: S = T_source source positions, T = T_target target positions, d_model width, h heads.
"""

from __future__ import annotations

import importlib
from typing import Annotated, Literal

from fastapi import APIRouter, Query, Request
from pydantic import AfterValidator, BaseModel, Field

from seqlab.errors import SeqlabError
from seqlab.seeds import MAX_SEED
from seqlab.web.panels.figure_check import MAX_WIDTH, check, figure_work
from seqlab.web.cache import ResultCache
from seqlab.web.messages import N_
from seqlab.web.validation import lab_error
from seqlab.web.workers import pool_of

router = APIRouter()
#: Seconds one Figure 1 measurement may take in its worker.
LIMIT_S = 90.0
_results = ResultCache(32)

#: Longest source and target: with :data:`~seqlab.web.panels.figure_check.MAX_WIDTH` and 16 heads the largest
#: request still fits one request's memory budget (tests/test_web_api.py checks it), so no size the schema
#: allows is refused.
MAX_LENGTH = 16
#: The head counts accepted: each divides every accepted d_model (a multiple of the largest), so that
#: "heads divides d_model", a rule across two fields that JSON Schema cannot state, holds by construction.
HEADS = (1, 2, 4, 8, 16)
MAX_HEADS = HEADS[-1]


def _one_of_heads(value: int) -> int:
    """``value`` if it is one of :data:`HEADS`, else the lab's refusal naming them."""
    if value not in HEADS:
        raise lab_error(N_("heads must be one of {values}, received {received}"),
                        values=", ".join(map(str, HEADS)), received=value)
    return value


class BandView(BaseModel):
    """A measured band (:class:`seqlab.measure.mixing.Band`): row j reads i − j ∈ {−lower, …, upper}, step dilation."""

    lower: int = Field(description="how far back row j reads, in positions")
    upper: int = Field(description="how far ahead row j reads, in positions (0: causal)")
    dilation: int = Field(description="step between the rows read (1: contiguous)")
    width: int = Field(description="input rows an interior output row reads")
    formula: str = Field(description="the rows read, as a formula in i and j (language-neutral)")


class Dependency(BaseModel):
    """One input of one box: how strongly each output row reads each input row."""

    input_name: str
    strength: list[list[float]] = Field(description="T_out × T_in; exactly 0 where row j does not read row i")
    method: str
    other_sequence: bool
    pattern: str
    mixes: bool
    band: BandView | None = Field(default=None, description="the band, where the pattern is a band")


class Box(BaseModel):
    """One box of Figure 1, measured."""

    key: str
    stack: str
    title: str = Field(description="in the requested language")
    lesson: str = Field(description="the lesson that builds it, in the requested language")
    column: int = Field(description="0 encoder, 1 decoder")
    row: int = Field(description="0 at the bottom of its stack")
    mixes: bool
    pattern: str
    dependencies: list[Dependency]
    band: BandView | None = Field(default=None, description="the box's band, where its pattern is a band")


class FigureResponse(BaseModel):
    """Figure 1 measured, or why it cannot be."""

    available: bool = Field(description="false when seqlab.studies.figure is not installed")
    reason: str | None = None
    T_source: int | None = None
    T_target: int | None = None
    d_model: int | None = None
    heads: int | None = None
    seed: int | None = None
    source_words: list[str] = Field(default_factory=list)
    target_words: list[str] = Field(default_factory=list)
    lit: list[str] = Field(default_factory=list, description="keys of the boxes that mix positions")
    boxes: list[Box] = Field(default_factory=list)


def _translate(lang: str):
    """The figure study's catalogue for ``lang``; English ids unchanged when it has none."""
    from seqlab.i18n import translator

    try:
        return translator(lang)
    except SeqlabError:
        return lambda message: message


def band_view(band: dict | None) -> dict | None:
    """A band of the study's JSON form ``{lower, upper, dilation}`` with its width and formula added, for the page.

    >>> band_view({"lower": 2, "upper": 0, "dilation": 1})["formula"], band_view(None)
    ('j − 3 < i ≤ j', None)
    """
    if band is None:
        return None
    from seqlab.measure.mixing import Band
    from seqlab.render.band import band_formula

    measured = Band(**band)
    return {**band, "width": measured.width, "formula": band_formula(measured)}


def measure(T_source: int, T_target: int, d_model: int, heads: int, seed: int, lang: str) -> FigureResponse:
    """Measure Figure 1 with :func:`seqlab.studies.figure.measure_figure` and translate its labels (in a worker).

    The tokens are the built-in story in the page's language, cut in two (source, then target), so that a page
    shows no words of the other language (:func:`seqlab.studies.figure.figure_tokens` with ``text``).

    >>> r = measure(4, 3, 8, 2, 0, "en")
    >>> r.available, len(r.boxes), r.lit[0]
    (True, 15, 'encoder.self_attention')

    Raises:
        SeqlabError: sizes the study refuses (:func:`check` refuses them first in the server).
    """
    try:
        figure = importlib.import_module("seqlab.studies.figure")
    except ImportError as error:
        return FigureResponse(available=False, reason=f"seqlab.studies.figure is not available ({error})")
    from seqlab.render.json_output import to_jsonable

    from seqlab.text import builtin_text

    figure.check_figure_arguments(T_source, T_target, d_model, heads, seed)
    story = builtin_text(lang)
    data = to_jsonable(figure.measure_figure(T_source=T_source, T_target=T_target, d_model=d_model, heads=heads,
                                             seed=seed, text=story))
    source, target = figure.figure_tokens(T_source, T_target, story)
    translate = _translate(lang)
    for box in data["boxes"]:
        box["title"], box["lesson"] = translate(box["title"]), translate(box["lesson"])
        box["band"] = band_view(box["band"])
        for dependency in box["dependencies"]:
            dependency["band"] = band_view(dependency["band"])
    return FigureResponse(available=True, source_words=list(source.pieces), target_words=list(target.pieces),
                          **data)


@router.get("/api/figure", response_model=FigureResponse, tags=["figure"],
            summary="Figure 1's fifteen boxes, each measured for whether it mixes positions (L11)")
async def figure_panel(
    request: Request,
    T_source: Annotated[int, Query(ge=2, le=MAX_LENGTH, description="source tokens S")] = 8,
    T_target: Annotated[int, Query(ge=2, le=MAX_LENGTH, description="target tokens T")] = 8,
    d_model: Annotated[int, Query(ge=MAX_HEADS, le=MAX_WIDTH, multiple_of=MAX_HEADS,
                                  description="row width, a multiple of 16 (so every accepted heads divides it)")] = 512,
    heads: Annotated[int, AfterValidator(_one_of_heads),
                     Query(json_schema_extra={"enum": list(HEADS)},
                           description="attention heads h: 1, 2, 4, 8 or 16")] = 8,
    seed: Annotated[int, Query(ge=0, le=MAX_SEED, description="seeds the weights and the probes")] = 0,
    lang: Annotated[Literal["en", "es"], Query(description="language of titles and lessons")] = "en",
) -> FigureResponse:
    """Measure every box's dependency matrices; ``lit`` names the boxes that read other positions."""
    key = (T_source, T_target, d_model, heads, seed, lang)
    found = _results.get(key)
    if found is None:
        check(T_source, T_target, d_model, heads)
        found = await pool_of(request).run(measure, key, limit_s=LIMIT_S, request=request,
                                           work=figure_work(T_source, T_target, d_model, heads))
        _results.put(key, found)
    return found
