"""seqlab.seeds: the one seed limit and the one rule for input seeds (issue 36: one home per rule)."""

import subprocess
import sys

import torch

from seqlab import seeds
from seqlab.text import stream_seed


def test_the_limit_is_unsigned_32_bit():
    assert seeds.MAX_SEED == 2**32 - 1 == 4_294_967_295


def test_input_seeds_are_the_run_seed_plus_the_size_and_differ_by_size():
    assert [seeds.input_seed(0, n) for n in (1, 2, 64)] == [1, 2, 64]
    assert seeds.input_seed(seeds.MAX_SEED, 1) == 2**32
    draws = {n: torch.randn(4, generator=torch.Generator().manual_seed(seeds.input_seed(5, n))) for n in (8, 16)}
    assert not torch.equal(draws[8], draws[16])  # the inputs at T and at 2T are independent draws
    again = torch.randn(4, generator=torch.Generator().manual_seed(seeds.input_seed(5, 8)))
    assert torch.equal(draws[8], again)  # the same seed and size: the same inputs


def test_every_weight_stream_of_the_largest_seed_stays_below_2_63():
    assert stream_seed(seeds.MAX_SEED, "output") < 2**63


def test_the_front_ends_share_the_limit():
    """The CLI and the web lab read the one MAX_SEED (it used to be 2**31 - 1 in the lab, 2**32 - 1 elsewhere)."""
    from seqlab.cli import figure as cli_figure
    from seqlab.studies import figure as study_figure

    assert cli_figure.MAX_SEED is seeds.MAX_SEED and study_figure.MAX_SEED is seeds.MAX_SEED


def test_reading_the_limit_imports_no_torch():
    done = subprocess.run([sys.executable, "-c", "import sys, seqlab.seeds; print('torch' in sys.modules)"],
                          capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"
