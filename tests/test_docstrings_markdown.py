"""No docstring prose that Markdown reads as a reference link (issue 37).

mkdocstrings renders every docstring as Markdown, so ``name[i][j]`` or ``T[, pairs][, width]`` written as prose is
a reference-style link ``[text][label]``; the documentation tools' newer releases refuse an unresolved one under
``mkdocs build --strict`` (the manual's build broke on a fresh install that way). Such text belongs in a code span.
Doctest examples and literal blocks (after a line ending in ``::``) are code already and are not read.
"""

import ast
import re
from pathlib import Path

SOURCE = Path(__file__).resolve().parents[1] / "src" / "seqlab"
CODE_SPAN = re.compile(r"``.*?``|`[^`]*`")
REFERENCE = re.compile(r"\[[^\]\n]*\]\[[^\]\n]*\]")


def prose(docstring: str) -> list[str]:
    """The docstring's lines outside doctest examples and ``::`` literal blocks."""
    lines, example, literal_indent = [], False, None
    for line in docstring.splitlines():
        stripped, indent = line.strip(), len(line) - len(line.lstrip())
        if literal_indent is not None:
            if not stripped or indent > literal_indent:
                continue
            literal_indent = None
        if stripped.startswith((">>>", "...")):
            example = True
            continue
        if not stripped:
            example = False
            continue
        if example:
            continue  # a doctest's expected output
        if stripped.endswith("::"):
            literal_indent = indent
        lines.append(line)
    return lines


def links_in(docstring: str) -> list[str]:
    return [line.strip() for line in prose(docstring) if REFERENCE.search(CODE_SPAN.sub("", line))]


def test_the_scan_finds_a_reference_and_spares_code():
    assert links_in("The summary of one (task, T[, pairs][, width]).") == ["The summary of one (task, T[, pairs][, width])."]
    assert links_in("The summary of one ``(task, T[, pairs][, width])``.") == []
    assert links_in("Example::\n\n    d[j][i] = 1\n\nAfter.") == []
    assert links_in(">>> d[0][1]\n3") == []


def test_no_docstring_holds_a_markdown_reference_link():
    found = []
    for path in sorted(SOURCE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                docstring = ast.get_docstring(node)
                found += [f"{path.relative_to(SOURCE)}: {line}" for line in links_in(docstring or "")]
    assert not found, "put these in a code span (``...``):\n" + "\n".join(found)
