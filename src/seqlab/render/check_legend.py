"""The legend of the lesson's claims L1–L12: a short title and one sentence each, in seqlab's own words.

``seqlab check --list`` prints it without measuring anything; every output of seqlab cites these numbers.
The sentences restate the claims of ``CLAIMS.md`` (the lesson, block 5 lesson 1) without quoting it.
"""

from __future__ import annotations

from dataclasses import dataclass

from seqlab.i18n import translator

DOMAIN = "seqlab"


@dataclass(frozen=True)
class LegendEntry:
    """One claim: ``claim`` (``"L1"`` … ``"L12"``), a short ``title`` and a one-sentence ``statement``."""

    claim: str
    title: str
    statement: str


def legend(lang: str = "en") -> tuple[LegendEntry, ...]:
    """The twelve claims in ``lang``, in the lesson's order.

    >>> [(e.claim, e.title) for e in legend("en")][:2]
    [('L1', 'Recurrence'), ('L2', 'Attention call')]

    Raises:
        SeqlabError: unknown language.
    """
    _ = translator(lang, DOMAIN)
    entries = (
        (_("Recurrence"), _("Each state h_t needs h_{t−1}, so a text of T tokens is a chain of T steps that no number "
                            "of processors shortens; only the W_xh x_t half can run at once.")),
        (_("Attention call"), _("Every score reads one query and one key, so all T² scores are one product Q Kᵀ, "
                                "then a row softmax and a second product A V: three steps whatever T is.")),
        (_("Path in the recurrence"), _("Position 1 reaches position T through T−1 products by the same W_hh, which "
                                        "shrink the signal when its spectral radius is below 1 and blow it up above; "
                                        "LSTM and GRU add a bypass rather than a shorter path.")),
        (_("Path in attention"), _("Position 1 reaches position T through a single weight α_T1, and the gradient "
                                   "comes back the same way, however many positions lie between.")),
        (_("Recurrence work"), _("One multiplication per weight per step: T(d_h² + d_h·d_model) for the whole "
                                 "text.")),
        (_("Attention work"), _("Q Kᵀ and A V cost T²(d_k + d_v) multiplications; the Q, K, V projections are "
                                "extra and counted apart.")),
        (_("Crossover"), _("With one width d the ratio attention / recurrence is T/d, so attention is cheaper below "
                           "T = d and dearer above.")),
        (_("What is bought"), _("Attention does more work on long texts, but in a few large products that spread "
                                "over processors, while the recurrence waits T times in a row.")),
        (_("Worked numbers"), _("At d = 512: T = 50 gives attention about a tenth of the recurrence's "
                                "multiplications, T = 1000 about twice, T = 2000 about four times.")),
        (_("Order blindness"), _("Shuffling the rows fed to attention shuffles its outputs the same way and changes "
                                 "no number: without positional encoding it sees a set, not a sequence.")),
        (_("Figure 1"), _("Of the fifteen boxes of the Transformer's figure, only the three attention boxes mix "
                          "positions; the other twelve act on each row alone.")),
        (_("Self-check"), _("Four questions (the T-step chain, the crossover at 512, shuffled rows, the path from 1 "
                            "to T), each answered by computation.")),
    )
    return tuple(LegendEntry(f"L{i}", title, statement) for i, (title, statement) in enumerate(entries, 1))
