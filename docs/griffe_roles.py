"""Griffe extension for the docs build: turn the docstrings' Sphinx roles into cross-references.

seqlab's docstrings name other objects the Sphinx way, ``:func:`measure_span```, ``:class:`~seqlab.x.Band```,
``:data:`MACHINES```; Markdown shows those as raw text. This rewrites each role, once the whole package is
loaded, into an mkdocs-autorefs reference to the object's full path, resolved the way Python would resolve the
name where the docstring sits (the object's own members, its class, its module and what the module imports,
then the package root), and marked *optional*: a target the site does not render (a private helper, a module
outside the API pages) shows as code with its full path as a tooltip instead of failing the strict build. A
name that does not resolve to a seqlab object (``torch.nn.RNN``) is shown as code. ``~`` keeps only the last
part of the name, as in Sphinx. Only the rendered page changes; the source stays as it is. Loaded by
``mkdocs.yml`` (``extensions: [docs/griffe_roles.py:SphinxRoles]``).
"""

from __future__ import annotations

import html
import re
from typing import Any

import griffe

#: ``:role:`target``` or ``:role:`title <target>```, with the roles seqlab's docstrings use.
ROLE = re.compile(r":(?:py:)?(?:func|class|data|mod|attr|meth|exc|obj|const):`(?P<body>[^`]+)`")


def _member(obj: griffe.Object, dotted: str) -> str | None:
    """The full path of ``dotted`` looked up from ``obj`` (members, aliases followed by path), or None."""
    first, _, rest = dotted.partition(".")
    try:
        member = obj.members.get(first)
    except Exception:  # noqa: BLE001  (an alias whose target is outside the loaded packages)
        return None
    if member is None:
        return None
    base = member.target_path if isinstance(member, griffe.Alias) else member.path
    return f"{base}.{rest}" if rest else base


def resolve(obj: griffe.Object, name: str) -> str | None:
    """The full path that ``name`` means in the docstring of ``obj``, or None when it is not a seqlab object."""
    scopes = []
    scope: griffe.Object | None = obj
    while scope is not None:  # the object itself, its class, its module, the parent packages
        scopes.append(scope)
        scope = scope.parent
    for scope in scopes:
        found = _member(scope, name)
        if found is not None:
            return found if found.startswith("seqlab") else None
    return name if name.startswith("seqlab.") or name == "seqlab" else None


def rewrite(text: str, obj: griffe.Object) -> str:
    """Replace every role in ``text`` by an optional autorefs link (or code when it names no seqlab object).

    The title is the name as written (``~`` keeps its last part); the identifier is its resolved full path.
    """

    def replace(match: re.Match) -> str:
        body = match["body"].strip()
        titled = re.fullmatch(r"(?P<title>.+?)\s*<(?P<target>[^>]+)>", body)
        target = titled["target"] if titled else body
        short = target.startswith("~")
        target = target.lstrip("~.").removesuffix("()")
        title = titled["title"] if titled else (target.rsplit(".", 1)[-1] if short else target)
        code = f"<code>{html.escape(title)}</code>"
        path = resolve(obj, target)
        if path is None:
            return f"`{title}`"
        return f'<autoref identifier="{html.escape(path)}" optional>{code}</autoref>'

    return ROLE.sub(replace, text)


class SphinxRoles(griffe.Extension):
    """Rewrite the Sphinx roles of every docstring in the package once it is loaded (names resolve then)."""

    def on_package(self, *, pkg: griffe.Module, **kwargs: Any) -> None:
        self._walk(pkg, set())

    def _walk(self, obj: griffe.Object, seen: set[str]) -> None:
        if obj.path in seen:
            return
        seen.add(obj.path)
        if obj.docstring is not None:
            obj.docstring.value = rewrite(obj.docstring.value, obj)
        for member in obj.members.values():
            if not isinstance(member, griffe.Alias):
                self._walk(member, seen)
