"""A result in a Jupyter notebook: an HTML table and a Matplotlib figure (issue 16, notebooks).

The result dataclasses (``ProfileResult``, ``CompareResult``, ``Table1Result``, ``CheckResult``) inherit
:class:`NotebookView`. It holds no data and formats nothing: each method imports
:mod:`seqlab.render.notebook` when called and hands it the result, so the data still flows one way
(studies hold values; render turns them into HTML and pictures) and ``import seqlab.studies...`` never
imports Rich's HTML walker or Matplotlib.
"""

from __future__ import annotations

from typing import Any

__all__ = ["NotebookView"]


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
        from seqlab.render.notebook import result_html

        return result_html(self, lang)

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
        from seqlab.render.notebook import result_figure

        return result_figure(self, lang)
