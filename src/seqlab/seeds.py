"""Seeds: the range every front end accepts, and the seed of a run's random inputs.

A run's seed N fixes everything random in it. The weights of each layer come from
:func:`seqlab.text.seeded_generator` (its own stream per role), the token vectors from
:func:`seqlab.text.embed`, and a study that draws its inputs directly (a (1, T, d) tensor of N(0, 1) entries, the
state and the input of a decoding step at position t) seeds them with :func:`input_seed` — the one rule, so that
``table1``, ``table1 --modern``, ``check`` B1–B5 and ``decode`` draw the same inputs for the same seed and size.

This module imports nothing heavy (no torch), so the command line and the web lab can read :data:`MAX_SEED` to
validate a seed before anything is measured.
"""

from __future__ import annotations

__all__ = ["MAX_SEED", "input_seed"]

#: The largest seed any command, the web lab or a study accepts: seeds are unsigned 32-bit integers, 0 to
#: 4_294_967_295. Why 32 bits: it is the range NumPy and most tools take (``numpy.random.seed``), so a seed can be
#: carried to another program unchanged; every weight stream of such a seed stays distinct and below 2**63
#: (:func:`seqlab.text.stream_seed`: seed · 1_000_003 + stream < 2**63 without wrapping); and one limit means a run
#: made on the command line can be repeated in the web lab (which used to stop at 2**31 - 1) and the other way.
#: ``torch.manual_seed`` takes larger seeds, so this is a choice, not PyTorch's limit.
MAX_SEED = 2**32 - 1


def input_seed(seed: int, n: int) -> int:
    """The seed of the inputs drawn at size ``n`` under a run's ``seed``: ``seed + n``.

    ``n`` is what the input is drawn for: its length T (a (1, T, d) input), or the position t whose state and
    input a decoding step prepares. Each size has its own stream, so the inputs at T and at 2T are independent
    draws, and the same seed and size give the same inputs in every study and front end. ``n >= 1`` keeps the
    stream apart from the weights a study seeds with ``seed`` itself.

    >>> input_seed(0, 64), input_seed(7, 1)  # 0 + 64, 7 + 1
    (64, 8)

    Args:
        seed: the run's seed, an integer in [0, :data:`MAX_SEED`] (validated by the caller's front end).
        n: the length T or position t the input is drawn for (>= 1).

    Returns:
        An integer for ``torch.Generator().manual_seed`` (at most MAX_SEED + n).
    """
    return seed + n
