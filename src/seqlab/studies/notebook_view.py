"""A result in a Jupyter notebook: an HTML table and a Matplotlib figure (issue 16, notebooks).

The result dataclasses (``ProfileResult``, ``CompareResult``, ``Table1Result``, ``CheckResult``, ``DecodeResult``,
``ModernResult``, ``LearnResult``...) inherit :class:`NotebookView`. It holds no data and formats nothing: each
method hands the result to the renderer :func:`connect` was given. The package root (``seqlab/__init__``, which
Python runs before any ``seqlab.studies`` module) connects :func:`seqlab.render.notebook.result_html` and
:func:`~seqlab.render.notebook.result_figure`, each imported only when called. So the data flows one way (studies
hold values; render turns them into HTML and pictures), no studies module imports render (no import cycle), and
``import seqlab.studies...`` never imports Rich's HTML walker or Matplotlib.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from seqlab.errors import SeqlabError
from seqlab.i18n import N_

__all__ = ["NotebookView", "connect"]

#: "html" and "figure" -> the renderer (result, lang) -> HTML text / a Matplotlib figure; set by :func:`connect`.
_RENDERERS: dict[str, Callable[[Any, str | None], Any]] = {}


def connect(html: Callable[[Any, str | None], str], figure: Callable[[Any, str | None], Any]) -> None:
    """Give every result its notebook renderers: ``html(result, lang)`` and ``figure(result, lang)``.

    Called once by the package root with :mod:`seqlab.render.notebook`'s functions; a test may connect others.
    """
    _RENDERERS.update(html=html, figure=figure)


def _renderer(kind: str) -> Callable[[Any, str | None], Any]:
    if kind not in _RENDERERS:
        raise SeqlabError(N_("no notebook renderer is connected (seqlab/__init__ connects seqlab.render.notebook)"))
    return _RENDERERS[kind]


class NotebookView:
    """Mixin for result dataclasses: ``_repr_html_`` for Jupyter, :meth:`html` and :meth:`plot`.

    >>> from seqlab.studies.profile import ProfileResult
    >>> issubclass(ProfileResult, NotebookView)
    True
    """

    __slots__ = ()

    def _repr_html_(self) -> str:
        """What Jupyter shows: :meth:`html` in the environment's language."""
        return self.html()

    def html(self, lang: str | None = None) -> str:
        """The terminal's tables and sentences for this result as HTML (:func:`seqlab.render.notebook.result_html`).

        Args:
            lang: ``"en"`` or ``"es"``; None: the environment's language.

        Returns:
            An HTML fragment with one ``<table>`` per table the terminal prints.

        Raises:
            SeqlabError: an unknown language.
        """
        return _renderer("html")(self, lang)

    def plot(self, lang: str | None = None) -> Any:
        """This result drawn as a ``matplotlib.figure.Figure`` (:func:`seqlab.render.notebook.result_figure`).

        The figure is made off-screen, without pyplot: a notebook shows it when it is a cell's value
        (or through ``display``); ``figure.savefig(path)`` writes it.

        Args:
            lang: ``"en"`` or ``"es"``; None: the environment's language.

        Returns:
            A ``matplotlib.figure.Figure``.

        Raises:
            SeqlabError: an unknown language, or matplotlib is not installed.
        """
        return _renderer("figure")(self, lang)
