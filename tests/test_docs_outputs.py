"""The program outputs the manual shows are what the program prints now (docs/generate_outputs.py).

Every file under docs/outputs/ is a transcript written by ``python docs/generate_outputs.py``; the pages include
them with pymdownx.snippets. Each test runs one command again, as the generator ran it, and compares the
deterministic figures of the two transcripts in order (counts, spans, paths, bytes, exponents, file names;
a line that carries a time or a load is left out, see ``figures``). When one fails, the shown file is stale:
rerun the generator for that name and read the difference.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "docs"))
try:
    import generate_outputs as generator
finally:
    sys.path.remove(str(ROOT / "docs"))

PAGES = sorted((ROOT / "docs").glob("*/**/*.md"))
INCLUDE = re.compile(r'--8<-- "docs/outputs/([^":]+)\.txt(?::\d+:\d+)?"')


@pytest.mark.parametrize("name", sorted(generator.OUTPUTS))
def test_a_shown_output_still_matches_the_program(name, request):
    if generator.OUTPUTS[name].command.startswith(("seqlab model", "seqlab decode --model")):
        request.getfixturevalue("model_measured_once")  # an English and a Spanish page: one measurement, two renderings
    shown = (generator.OUT / f"{name}.txt").read_text(encoding="utf-8")
    fresh = generator.run(generator.OUTPUTS[name])
    assert shown.splitlines()[0] == fresh.splitlines()[0] == f"$ {generator.OUTPUTS[name].command}"
    expected, measured = generator.figures(shown), generator.figures(fresh)
    assert expected, f"docs/outputs/{name}.txt shows no deterministic figure to check"
    first = next((i for i, (a, b) in enumerate(zip(expected, measured)) if a != b), min(len(expected), len(measured)))
    assert measured == expected, (f"docs/outputs/{name}.txt is stale: run python docs/generate_outputs.py {name}; "
                                  f"figure {first + 1} of {len(expected)}: shown {expected[first:first + 5]}, "
                                  f"now {measured[first:first + 5]}")


def test_every_output_is_included_by_a_page_and_every_include_exists():
    included = {name for page in PAGES for name in INCLUDE.findall(page.read_text(encoding="utf-8"))}
    assert included == set(generator.OUTPUTS)
    assert {p.stem for p in generator.OUT.glob("*.txt")} == set(generator.OUTPUTS)  # no stale leftover


def test_figures_keep_counts_and_drop_times_loads_and_threads():
    transcript = ("│ Span: operations in a row │ 256 │ 4 │\n"
                  "│ 64 │ 1.22 ms ± 392 µs † │ 0.500 │\n"  # a row with a time: out whole
                  "spectral radius 0.603; seed 0; 2 threads; PyTorch 2.13.0+cpu\n"
                  "The machine was busy: its load average was 6.58 on 2 CPUs\n"
                  "3 of 3 claims hold (1.13 s, CPU threads: 1)\n")
    assert generator.figures(transcript) == ["256", "4", "0.603", "0", "2.13.0"]
    assert generator.figures("radio espectral 0,603; 2 hilos; 1.024 bytes\n") == ["0,603", "1.024"]
    # rounding-level figures, which another CPU or thread count computes differently, are left out
    assert generator.figures("│ 2.65e-21 │ (max |Δ| =\n│ 1.04e-7) │ 0 (3.18e-14)\nwithin 1.11e-16 of 1\n") == \
        ["2.65e-21", "0", "1"]
    assert generator.figures('"rounding": 1.06e-07,\n"tolerance": 2.41e-05,\n') == ["2.41e-05"]
    # the same figures wrapped at another width compare equal
    assert generator.figures("a 1,024 b\nc 512\n") == generator.figures("a 1,024\nb c 512\n")
