"""Griffe extension for the docs build: show each docstring's ``>>>`` examples as Python console code.

seqlab's docstrings put their doctests (run by pytest) straight after the summary, not in an
``Examples:`` section, so Markdown would read ``>>> x`` as a quotation and ``[(0, 1), (2, 3)]`` in an
output line as a link. This wraps every block of lines that starts at the margin with ``>>>`` (up to the
next blank line) in a ```` ```pycon ```` fence. Only the rendered page changes; the source and its
doctests stay as they are. Loaded by ``mkdocs.yml`` (``extensions: [docs/griffe_doctests.py]``).
"""

from __future__ import annotations

from typing import Any

import griffe


def fence_doctests(text: str) -> str:
    r"""Wrap each doctest block (from a line starting ``>>>`` to the next blank line) in a pycon fence.

    >>> fence_doctests("Sum.\n\n>>> 1 + 1\n2\n\nMore.").splitlines()[2:6:3]  # the opening and closing fence
    ['```pycon', '```']
    """
    out: list[str] = []
    inside = False
    for line in text.splitlines():
        if not inside and line.startswith(">>>"):
            out.append("```pycon")
            inside = True
        elif inside and not line.strip():
            out.append("```")
            inside = False
        out.append(line)
    if inside:
        out.append("```")
    return "\n".join(out)


class DoctestFences(griffe.Extension):
    """Fence the doctests of every object's docstring as it is loaded."""

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = fence_doctests(obj.docstring.value)
