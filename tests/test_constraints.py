"""constraints.txt pins what CI tests, and every install command of the README, the manual and CI goes through it
(issue 37: a fresh install must get the tools CI ran, not their newest releases)."""

import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import constraints  # noqa: E402  (tools/constraints.py)

PAGES = [ROOT / "README.md", ROOT / "README.es.md", ROOT / "docs" / "en" / "install.md",
         ROOT / "docs" / "es" / "install.md", ROOT / ".ci" / "run"]


def pinned() -> dict[str, str]:
    lines = (ROOT / "constraints.txt").read_text(encoding="utf-8").splitlines()
    return dict(line.split("==") for line in lines if line and not line.startswith("#"))


def test_every_package_the_tests_install_is_pinned():
    missing = sorted(set(constraints.closure()) - set(pinned()))
    assert not missing, f"constraints.txt does not pin {missing}: run python tools/constraints.py"


def test_pins_are_exact_releases():
    for name, version in pinned().items():
        assert re.fullmatch(r"[0-9][0-9A-Za-z.]*", version), (name, version)
        assert "+" not in version  # a local build label would not match the registry's release


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name if p.name != "install.md" else str(p.parent.name))
def test_install_commands_go_through_the_constraints(page):
    commands = [line for line in page.read_text(encoding="utf-8").splitlines()
                if re.match(r"\s*pip install -?.*-e ", line)]
    assert commands, page
    for line in commands:
        if "--no-deps" in line or '"transformers' in line:
            continue  # the install page's by-hand route for the model extra names its own versions
        assert "-c constraints.txt" in line, line


def test_the_closure_follows_extras():
    # seqlab[test] pulls seqlab[docs] whose mkdocstrings[python] pulls mkdocstrings-python: an extra of an extra
    assert {"mkdocstrings-python", "pytest", "torch"} <= set(constraints.closure())
