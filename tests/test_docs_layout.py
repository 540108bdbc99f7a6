"""The map of the code, checked against the code: the layout page (``docs/en/layout.md`` and ``docs/es/layout.md``)
names every module under ``src/seqlab`` and every Spanish catalogue, and nothing that does not exist; and the tests
mirror the engine (every module of ``measure/``, ``layers/`` and the top level has its ``tests/test_<name>.py``).

How the page is read: its first code block is a tree. A line indented by two spaces under ``src/seqlab/`` opens an
entry (``cost.py``, ``measure/``); the lines indented deeper continue it. A top-level module is named by its own
entry; a module inside a folder (at any depth, ``web/panels/chain.py`` included) is named in its folder's entry by
its file name as a word (``traced_pass.py``), and a sub-folder as ``panels/``. Nothing may be named
that does not exist: a ``name.py``, a ``name/`` or a snake_case word in a folder's entry is a module or folder there,
or a name its code defines (``W_hh``, ``_repr_html_``); in the ``locale/`` entry each ``name.po`` is a catalogue.

A failure lists exactly what is missing or stale, page by page, so that the page can be fixed in one edit: the
page is written by hand, in both languages, and this test keeps it true when modules are added, split or removed.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "seqlab"
TESTS = ROOT / "tests"
PAGES = {"en": ROOT / "docs" / "en" / "layout.md", "es": ROOT / "docs" / "es" / "layout.md"}
#: The folders whose modules each have their own test file (and the top level, "").
MIRRORED = ("", "measure", "layers")


def modules() -> list[Path]:
    """Every module of the package, relative to ``src/seqlab`` (``__init__.py`` of a sub-package excluded: the
    folder itself is named)."""
    found = sorted(path.relative_to(PACKAGE) for path in PACKAGE.rglob("*.py") if "__pycache__" not in path.parts)
    return [path for path in found if not (path.name == "__init__.py" and len(path.parts) > 1)]


def catalogues() -> set[str]:
    """The Spanish catalogues' domains (``locale/es/LC_MESSAGES/<domain>.po``)."""
    return {path.stem for path in (PACKAGE / "locale" / "es" / "LC_MESSAGES").glob("*.po")}


def tree(page: Path) -> str:
    """The page's first fenced code block: the tree of ``src/seqlab``."""
    match = re.search(r"^```\n(.*?)^```", page.read_text(encoding="utf-8"), re.DOTALL | re.MULTILINE)
    if match is None:
        raise AssertionError(f"{page.relative_to(ROOT)} has no code block with the tree of src/seqlab")
    return match.group(1)


def entries(text: str) -> dict[str, str]:
    """The tree's entries under ``src/seqlab/``: name (``cost.py``, ``measure/``) → its text, continuation lines
    included."""
    found: dict[str, str] = {}
    current = None
    for line in text.splitlines():
        if re.match(r"^  \S", line):
            name, _, rest = line.strip().partition(" ")
            current = name
            found[current] = rest
        elif re.match(r"^   ", line) and current is not None:
            found[current] += "\n" + line
        else:  # a line at the left margin (src/seqlab/, benchmarks/, docs/): outside the package
            current = None
    return found


def named(file: str, text: str) -> bool:
    """The file name ``file`` (``traced_pass.py``) stands as a word in ``text``: a bare ``traced_pass`` or
    ``mixers`` would be found in prose ("the modern mixers") whether or not the module is named."""
    return re.search(rf"(?<![\w./-]){re.escape(file)}(?![\w])", text) is not None


def source_words(folder: Path) -> set[str]:
    """Every identifier written in the code and files of ``folder`` (names a page may cite: ``W_hh``, ``a_t``)."""
    words: set[str] = set()
    for path in folder.rglob("*"):
        if path.is_file() and path.suffix in {".py", ".js", ".html", ".css", ".txt"}:
            words |= set(re.findall(r"\w+", path.read_text(encoding="utf-8", errors="replace")))
    return words


def problems(page: Path) -> list[str]:
    """What the page fails to name, and what it names that does not exist, one line each."""
    found = entries(tree(page))
    missing, stale = [], []
    for module in modules():
        if len(module.parts) == 1:
            if module.name not in found:
                missing.append(f"{module} (an entry of its own)")
            continue
        folder = module.parts[0] + "/"
        text = found.get(folder)
        if text is None:
            missing.append(f"{folder} (an entry of its own, for {module})")
        elif not named(module.name, text):
            missing.append(f"{module} (as '{module.name}' in the {folder} entry)")
    for directory in sorted(p for p in PACKAGE.rglob("*") if p.is_dir() and (p / "__init__.py").exists()):
        relative = directory.relative_to(PACKAGE)
        if len(relative.parts) > 1 and relative.parts[-1] + "/" not in found.get(relative.parts[0] + "/", ""):
            missing.append(f"{relative}/ (as '{relative.parts[-1]}/' in the {relative.parts[0]}/ entry)")
    for name, text in found.items():
        where = PACKAGE / name.rstrip("/")
        if not where.exists():
            stale.append(f"{name} (an entry for nothing under src/seqlab)")
            continue
        if name == "locale/":
            listed = set(re.findall(r"(\w+)\.po\b", text))
            missing += [f"locale/es/LC_MESSAGES/{domain}.po (as '{domain}.po' in the locale/ entry)"
                        for domain in sorted(catalogues() - listed)]
            stale += [f"{domain}.po in the locale/ entry (no such catalogue)" for domain in sorted(listed - catalogues())]
            continue
        if not where.is_dir():
            continue
        stems = {path.stem for path in where.rglob("*.py")} | {path.name for path in where.rglob("*") if path.is_dir()}
        files = {path.name for path in where.rglob("*")}
        defined = None
        for token in re.findall(r"(?<![\w./-])(\w+(?:\.py|/)|[a-z]\w*_\w+)", text):
            if token.endswith(".py"):
                ok = token in files
            elif token.endswith("/"):
                ok = token[:-1] in stems
            else:
                if defined is None:
                    defined = source_words(where)
                ok = token in stems or token in defined
            if not ok:
                stale.append(f"'{token}' in the {name} entry (no such module, folder or name in src/seqlab/{name})")
    return [f"missing: {line}" for line in missing] + [f"names what does not exist: {line}" for line in stale]


@pytest.mark.parametrize("language", sorted(PAGES))
def test_the_layout_page_names_every_module_and_catalogue_and_nothing_else(language):
    page = PAGES[language]
    found = problems(page)
    assert not found, f"{page.relative_to(ROOT)} is behind the code:\n  " + "\n  ".join(found)


def test_the_page_reader_sees_a_missing_module_and_a_stale_one(tmp_path):
    """The check itself, on a copy of the English page with one module taken out and a made-up one put in."""
    text = PAGES["en"].read_text(encoding="utf-8")
    assert "path_tracer.py" in text
    page = tmp_path / "layout.md"
    page.write_text(text.replace("path_tracer.py", "made_up_tracer.py"), encoding="utf-8")
    assert problems(page) == ["missing: measure/path_tracer.py (as 'path_tracer.py' in the measure/ entry)",
                              ("names what does not exist: 'made_up_tracer.py' in the measure/ entry (no such module, "
                               "folder or name in src/seqlab/measure/)")]


def test_the_page_reader_sees_a_stale_catalogue(tmp_path):
    text = PAGES["en"].read_text(encoding="utf-8")
    page = tmp_path / "layout.md"
    page.write_text(text.replace("web.po", "quiz.po"), encoding="utf-8")
    assert problems(page) == ["missing: locale/es/LC_MESSAGES/web.po (as 'web.po' in the locale/ entry)",
                              "names what does not exist: quiz.po in the locale/ entry (no such catalogue)"]


# --- The tests mirror the engine ----------------------------------------------------------------------------------

def mirrored_modules() -> list[Path]:
    """The modules of ``measure/``, ``layers/`` and the top level (``__init__`` and ``__main__`` excluded)."""
    return [path for path in modules() if str(path.parent) in {".", *MIRRORED[1:]}
            and path.stem not in {"__init__", "__main__"}]


def test_the_mirrored_modules_have_distinct_names():
    """The rule ``tests/test_<module>.py`` needs one name per module across the three folders."""
    stems = [path.stem for path in mirrored_modules()]
    assert len(stems) == len(set(stems)), sorted(stem for stem in stems if stems.count(stem) > 1)


def test_every_engine_layer_and_top_level_module_has_its_test_file():
    """Each module of ``measure/``, ``layers/`` and the top level is tested in ``tests/test_<module>.py`` (the
    rule stated in ``tests/conftest.py``)."""
    missing = [f"{path} -> tests/test_{path.stem}.py" for path in mirrored_modules()
               if not (TESTS / f"test_{path.stem}.py").exists()]
    assert not missing, "modules without their test file:\n  " + "\n  ".join(missing)


def test_no_hypothesis_test_has_a_deadline():
    """No test depends on the machine's speed: the suite's Hypothesis profile (tests/conftest.py) has no deadline,
    and no ``@settings(...)`` in a test sets one other than None."""
    from hypothesis import settings

    assert settings.default.deadline is None
    setting = re.compile(r"@settings\([^)]*?\bdeadline\s*=\s*(?!None\b)([^,)\s]+)")
    offenders = [f"{path.name}: deadline={match.group(1)}" for path in sorted(TESTS.glob("*.py"))
                 if path.name != Path(__file__).name  # this file's own examples of the pattern
                 for match in setting.finditer(path.read_text(encoding="utf-8"))]
    assert not offenders, offenders


def test_the_deadline_check_sees_a_deadline():
    setting = re.compile(r"@settings\([^)]*?\bdeadline\s*=\s*(?!None\b)([^,)\s]+)")
    assert setting.search("@settings(max_examples=5, deadline=200)").group(1) == "200"
    assert setting.search("@settings(deadline=timedelta(seconds=1))") is not None
    assert setting.search("@settings(max_examples=60, deadline=None)") is None
