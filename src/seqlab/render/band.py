"""A measured band (:class:`~seqlab.measure.mixing.Band`) or blocks (:class:`~seqlab.measure.mixing.Blocks`) in words
and a formula, for every view that names a pattern.

One place for the band's name, so the model table, Figure 1 and the web lab say the same thing: its kind
(causal, symmetric ±h, dilated), its width (input rows an interior output row reads) and the rows it reads
as an inequality in j (output row) and i (input row), e.g. ``causal band of width 3 (j − 3 < i ≤ j)``.
Blocks are said with their size b read from the measurement, e.g. ``causal blocks of 4 positions (⌊i/4⌋ = ⌊j/4⌋,
i ≤ j)`` (:func:`blocks_text`). The formula is mathematics, the same in every language; the words go through the gettext domain ``seqlab``
(``locale/es/LC_MESSAGES/seqlab.po``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from seqlab.i18n import format_integer, translator

if TYPE_CHECKING:
    from seqlab.measure.mixing import Band, Blocks

DOMAIN = "seqlab"
#: Up to this many offsets a dilated band lists them all; beyond, the first two and the last.
LISTED_OFFSETS = 5
MINUS = "−"


def _signed(value: int) -> str:
    """+ 2, − 3 (with the minus sign U+2212), as in j − 3."""
    return f"+ {value}" if value >= 0 else f"{MINUS} {-value}"


def _offset(value: int) -> str:
    return f"{MINUS}{-value}" if value < 0 else str(value)


def band_formula(band: Band) -> str:
    """The rows output row j reads, as a formula in i and j (language-neutral).

    >>> from seqlab.measure.mixing import Band
    >>> band_formula(Band(2, 0)), band_formula(Band(1, 1)), band_formula(Band(1, 2))
    ('j − 3 < i ≤ j', '|i − j| ≤ 1', 'j − 1 ≤ i ≤ j + 2')
    >>> band_formula(Band(4, 0, 2)), band_formula(Band(12, 0, 2))
    ('i − j ∈ {−4, −2, 0}', 'i − j ∈ {−12, −10, …, 0}')
    >>> band_formula(Band(0, 0)), band_formula(Band(2, -1))  # only itself; a delay of 1 or 2
    ('i = j', 'j − 2 ≤ i ≤ j − 1')
    """
    if band.dilation > 1:
        offsets = [_offset(o) for o in band.offsets]
        if len(offsets) > LISTED_OFFSETS:
            offsets = [*offsets[:2], "…", offsets[-1]]
        return "i − j ∈ {" + ", ".join(offsets) + "}"
    if band.lower == 0 and band.upper == 0:
        return "i = j"
    if band.symmetric:
        return f"|i − j| ≤ {band.lower}"
    if band.causal:
        return f"j − {band.width} < i ≤ j"
    low = "j" if band.lower == 0 else f"j {_signed(-band.lower)}"
    high = "j" if band.upper == 0 else f"j {_signed(band.upper)}"
    return f"{low} ≤ i ≤ {high}"


def band_text(band: Band | None, lang: str = "en") -> str:
    """The band's name, width and formula in ``lang``; the bare word where the band is not known (None).

    >>> from seqlab.measure.mixing import Band
    >>> band_text(Band(2, 0))
    'causal band of width 3 (j − 3 < i ≤ j)'
    >>> band_text(Band(1, 1), "es")
    'banda ±1, de anchura 3 (|i − j| ≤ 1)'
    >>> band_text(Band(4, 0, 2))
    'causal dilated band of width 3, dilation 2 (i − j ∈ {−4, −2, 0})'
    >>> band_text(None, "es")
    'banda'

    Raises:
        SeqlabError: an unknown language.
    """
    tr = translator(lang, DOMAIN)
    if band is None:
        return tr("band")
    width, dilation = format_integer(band.width, lang), format_integer(band.dilation, lang)
    if band.dilation > 1:
        if band.causal:
            words = tr("causal dilated band of width {width}, dilation {dilation}")
        elif band.symmetric:
            words = tr("dilated band ±{half}, of width {width}, dilation {dilation}")
        else:
            words = tr("dilated band of width {width}, dilation {dilation}")
    elif band.causal and band.lower > 0:
        words = tr("causal band of width {width}")
    elif band.symmetric and band.lower > 0:
        words = tr("band ±{half}, of width {width}")
    else:
        words = tr("band of width {width}")
    words = words.format(width=width, dilation=dilation, half=format_integer(band.lower, lang))
    return f"{words} ({band_formula(band)})"


def blocks_formula(blocks: Blocks) -> str:
    """The rows output row j reads in blocks of b, as a formula in i and j (language-neutral).

    >>> from seqlab.measure.mixing import Blocks
    >>> blocks_formula(Blocks(4)), blocks_formula(Blocks(2, causal=True))
    ('⌊i/4⌋ = ⌊j/4⌋', '⌊i/2⌋ = ⌊j/2⌋, i ≤ j')
    """
    same = f"⌊i/{blocks.size}⌋ = ⌊j/{blocks.size}⌋"
    return f"{same}, i ≤ j" if blocks.causal else same


def blocks_text(blocks: Blocks | None, lang: str = "en") -> str:
    """The blocks' name, size b (positions) and formula in ``lang``; the bare word where they are not known (None).

    >>> from seqlab.measure.mixing import Blocks
    >>> blocks_text(Blocks(4))
    'blocks of 4 positions (⌊i/4⌋ = ⌊j/4⌋)'
    >>> blocks_text(Blocks(3, causal=True), "es")
    'bloques causales de 3 posiciones (⌊i/3⌋ = ⌊j/3⌋, i ≤ j)'
    >>> blocks_text(None, "es")
    'bloques'

    Raises:
        SeqlabError: an unknown language.
    """
    tr = translator(lang, DOMAIN)
    if blocks is None:
        return tr("blocks")
    words = tr("causal blocks of {size} positions") if blocks.causal else tr("blocks of {size} positions")
    return f"{words.format(size=format_integer(blocks.size, lang))} ({blocks_formula(blocks)})"
