"""Write ``constraints.txt``: every package ``seqlab[test]`` installs, pinned at the version installed here.

The README's commands and ``.ci/run`` install through this file (``pip install -c constraints.txt ...``), so a
fresh machine gets the test, docs and web tools CI last tested, not whatever release came out since (issue 37:
the manual's build broke on a fresh install when a documentation tool released a new version). Run it after a
deliberate upgrade, in an environment where the whole suite passes:

    python tools/constraints.py          # rewrites constraints.txt
    python tools/constraints.py --check  # exit 1 when constraints.txt misses a package or pins another version

The closure is read from the installed packages' own metadata (``importlib.metadata`` and ``packaging``): the
requirements of ``seqlab[test]``, their extras, recursively, under this interpreter's markers.
"""

from __future__ import annotations

import argparse
import sys
from importlib import metadata
from pathlib import Path

from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]
CONSTRAINTS = ROOT / "constraints.txt"
HEADER = ("# What CI tested: every package `pip install -e \".[test]\"` brings, pinned (tools/constraints.py writes "
          "this file;\n# .ci/run and the README's commands install through it).\n")


def requirements_of(name: str, extras: frozenset[str]) -> list[Requirement]:
    """The requirements of an installed distribution that apply here, with the extras asked for."""
    found = []
    for text in metadata.distribution(name).requires or []:
        requirement = Requirement(text)
        if requirement.marker is None:
            found.append(requirement)
            continue
        for extra in extras or {""}:
            if requirement.marker.evaluate({**default_environment(), "extra": extra}):
                found.append(requirement)
                break
    return found


def closure(root: str = "seqlab", extras: frozenset[str] = frozenset({"test"})) -> dict[str, str]:
    """{canonical name: installed version} of every distribution the root with its extras pulls in."""
    seen: dict[str, str] = {}
    asked: set[tuple[str, frozenset[str]]] = set()
    pending = [(root, extras)]
    while pending:
        name, wanted = pending.pop()
        key = (canonicalize_name(name), frozenset(wanted))
        if key in asked:
            continue
        asked.add(key)
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue  # an optional dependency not installed here: nothing to pin
        if canonicalize_name(name) != canonicalize_name(root):
            # a local label (torch's "+cpu") names a build, not a release: == on the release matches it
            seen[canonicalize_name(name)] = dist.version.split("+")[0]
        for requirement in requirements_of(name, frozenset(wanted)):
            pending.append((requirement.name, frozenset(requirement.extras)))
    return dict(sorted(seen.items()))


def render(pins: dict[str, str]) -> str:
    return HEADER + "".join(f"{name}=={version}\n" for name, version in pins.items())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare instead of writing")
    args = parser.parse_args()
    text = render(closure())
    if args.check:
        same = CONSTRAINTS.exists() and CONSTRAINTS.read_text(encoding="utf-8") == text
        print("constraints.txt is current" if same else "constraints.txt differs from this environment")
        return 0 if same else 1
    CONSTRAINTS.write_text(text, encoding="utf-8")
    print(f"wrote {CONSTRAINTS.name}: {text.count('==')} packages")
    return 0


if __name__ == "__main__":
    sys.exit(main())
