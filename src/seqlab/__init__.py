"""seqlab: measure what recurrence costs and what attention buys.

The library returns values (frozen dataclasses); the command line (:mod:`seqlab.cli`)
renders them, and so does a notebook: every result below shows itself as an HTML table in
Jupyter and draws itself with ``result.plot()`` (a Matplotlib figure). Heavy imports happen
inside the functions that need them, so ``import seqlab`` stays fast and has no side effects
(no torch): each function is imported the first time it is looked up. The one thing done at import is
connecting the results' notebook view to its renderer (:func:`seqlab.studies.notebook_view.connect`): the
studies never import :mod:`seqlab.render`, which imports them.

* :func:`profile` — work, span and path of your own module (:func:`seqlab.studies.profile.profile`);
* :func:`compare` — recurrence against attention on a text (:func:`seqlab.studies.compare.run_compare`);
* :func:`table1` — Table 1 measured (:func:`seqlab.studies.table1.run_table1`);
* :func:`table1_modern` — Table 1 extended to modern mixers (:func:`seqlab.studies.table1_modern.run_modern`);
* :func:`check` — the lesson's claims L1–L12 measured (:func:`seqlab.studies.check.run_check`);
* :func:`decode` — the cost of generating one token at position t (:func:`seqlab.studies.decode.run_decode`);
* :func:`run_learn` — train tiny models on the lesson's tasks and on MQAR (:func:`seqlab.studies.learn.run_learn`;
  not ``seqlab.learn``, which is the package of its tasks, models and training).
"""

from importlib import import_module
from typing import Any

from seqlab import errors as _errors  # noqa: F401  (first: it registers the exception seqlab.i18n raises)

__version__ = "0.1.0"

#: Public name -> "module:function", imported on first use.
_LAZY = {
    "profile": "seqlab.studies.profile:profile",
    "compare": "seqlab.studies.compare:run_compare",
    "table1": "seqlab.studies.table1:run_table1",
    "table1_modern": "seqlab.studies.table1_modern:run_modern",
    "check": "seqlab.studies.check:run_check",
    "decode": "seqlab.studies.decode:run_decode",
    "run_learn": "seqlab.studies.learn:run_learn",
}

__all__ = ["__version__", *_LAZY]


def __getattr__(name: str) -> Any:
    """Lazy exports: ``seqlab.profile`` is :func:`seqlab.studies.profile.profile`, imported on first use."""
    if name in _LAZY:
        module, function = _LAZY[name].split(":")
        return getattr(import_module(module), function)
    raise AttributeError(f"module 'seqlab' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


def _result_html(result: Any, lang: str | None) -> str:
    """:func:`seqlab.render.notebook.result_html`, imported when a notebook first shows a result."""
    from seqlab.render.notebook import result_html

    return result_html(result, lang)


def _result_figure(result: Any, lang: str | None) -> Any:
    """:func:`seqlab.render.notebook.result_figure`, imported when a result is first drawn."""
    from seqlab.render.notebook import result_figure

    return result_figure(result, lang)


from seqlab.studies import notebook_view as _notebook_view  # noqa: E402  (light: no torch, no render)

_notebook_view.connect(_result_html, _result_figure)
