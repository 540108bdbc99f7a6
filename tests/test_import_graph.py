"""No import cycle among seqlab's modules (issue 22): the graph is read statically with ``ast`` over src/seqlab.

An edge A -> B is any import of B written in A: module-level *and* inside functions (a lazy import is still a
dependency), ``importlib.import_module("seqlab.…")`` with a literal name, and ``"seqlab.module:function"``
strings (the lazy tables of ``seqlab/__init__`` and ``seqlab.render.notebook``). Left out: imports under
``if TYPE_CHECKING:`` (never run), and the implicit import of a parent package (Python initialises
``seqlab/x/__init__`` before ``seqlab.x.y`` anyway; an explicit ``from seqlab.x import name`` is an edge).
``from P import name`` is an edge to the submodule ``P.name`` when there is one, else to ``P``.
"""

from __future__ import annotations

import ast
from collections import deque
from importlib import resources
from pathlib import Path

import pytest

PACKAGE = Path(str(resources.files("seqlab")))


def _modules(root: Path) -> dict[str, tuple[Path, bool]]:
    """Dotted module name -> (file, is a package's __init__)."""
    found = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        package = parts[-1] == "__init__"
        found[".".join(parts[:-1] if package else parts)] = (path, package)
    return found


def _type_checking_blocks(tree: ast.AST) -> set[int]:
    """ids of the nodes under ``if TYPE_CHECKING:``."""
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and (getattr(node.test, "id", None) == "TYPE_CHECKING"
                                         or getattr(node.test, "attr", None) == "TYPE_CHECKING"):
            for child in node.body:
                skipped.update(id(n) for n in ast.walk(child))
    return skipped


def import_graph(root: Path = PACKAGE) -> dict[str, set[str]]:
    """module -> the seqlab modules it imports (module-level and in functions), by the rules above."""
    modules = _modules(root)
    top = root.name

    def resolve(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, (path, package) in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        skipped = _type_checking_blocks(tree)
        here = name if package else name.rpartition(".")[0]
        targets: set[str | None] = set()
        for node in ast.walk(tree):
            if id(node) in skipped:
                continue
            if isinstance(node, ast.Import):
                targets.update(resolve(alias.name) for alias in node.names if alias.name.split(".")[0] == top)
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = here.split(".")[:len(here.split(".")) - node.level + 1]
                    source = ".".join(base + ([node.module] if node.module else []))
                else:
                    source = node.module or ""
                if source.split(".")[0] != top:
                    continue
                for alias in node.names:
                    submodule = f"{source}.{alias.name}"
                    targets.add(submodule if submodule in modules else resolve(source))
            elif (isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", None))
                  == "import_module" and node.args and isinstance(node.args[0], ast.Constant)
                  and isinstance(node.args[0].value, str) and node.args[0].value.split(".")[0] == top):
                targets.add(resolve(node.args[0].value))
            elif (isinstance(node, ast.Constant) and isinstance(node.value, str)
                  and node.value.startswith(top + ".") and node.value.count(":") == 1
                  and node.value.partition(":")[0] in modules and node.value.partition(":")[2].isidentifier()):
                targets.add(node.value.partition(":")[0])
        graph[name] = {target for target in targets if target is not None and target != name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle (a -> … -> a) through each strongly connected component of more than one module."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []

    def visit(start: str) -> None:  # Tarjan's algorithm, iteratively
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, successors = work[-1]
            for successor in successors:
                if successor not in index:
                    index[successor] = low[successor] = len(index)
                    stack.append(successor)
                    on_stack.add(successor)
                    work.append((successor, iter(sorted(graph[successor]))))
                    break
                if successor in on_stack:
                    low[node] = min(low[node], index[successor])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        components.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    found = []
    for component in components:  # the shortest way back to the component's first module
        members, first = set(component), component[0]
        previous: dict[str, str] = {}
        queue = deque([first])
        while queue:
            node = queue.popleft()
            for successor in sorted(graph[node] & members):
                if successor == first:
                    path = [node]
                    while path[-1] != first:
                        path.append(previous[path[-1]])
                    found.append([first, *reversed(path[:-1]), first])
                    queue.clear()
                    break
                if successor not in previous:
                    previous[successor] = node
                    queue.append(successor)
    return found


def test_no_import_cycle():
    found = cycles(import_graph())
    assert found == [], "import cycles:\n" + "\n".join(" -> ".join(cycle) for cycle in found)


def test_the_graph_sees_lazy_and_registered_imports():
    graph = import_graph()
    assert len(graph) > 150  # every module of the package
    assert "seqlab.cli.compare" in graph["seqlab.cli"]  # explicit command registration
    assert "seqlab.studies.table1" in graph["seqlab.cli.table1"]  # an import inside the command's function
    assert "seqlab.studies.profile" in graph["seqlab"]  # a "module:function" entry of the lazy table
    assert "seqlab.render.notebook" in graph["seqlab"]  # the notebook renderer the package root connects
    assert not any(target.startswith("seqlab.render") for target in graph["seqlab.studies.notebook_view"])


@pytest.mark.parametrize(("graph", "expected"), [
    ({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}, [["a", "b", "c", "a"]]),
    ({"a": {"b"}, "b": set(), "c": {"d"}, "d": {"c"}}, [["c", "d", "c"]]),
    ({"a": {"b", "c"}, "b": {"c"}, "c": set()}, []),
])
def test_cycles_are_found_and_named(graph, expected):
    assert cycles(graph) == expected


def test_a_lazy_import_back_is_a_cycle(tmp_path):
    package = tmp_path / "seqlab"
    (package / "studies").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "studies" / "__init__.py").write_text("")
    (package / "render.py").write_text("from seqlab.studies import result\n")
    (package / "studies" / "result.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from seqlab import typing_only\n"
        "def show():\n    from seqlab.render import draw\n")
    (package / "typing_only.py").write_text("from seqlab.studies.result import show\n")
    assert cycles(import_graph(package)) == [["seqlab.render", "seqlab.studies.result", "seqlab.render"]]
