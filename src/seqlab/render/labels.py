"""Machine labels in the output language: the studies name what they ran in English, the renderers word them.

A study's label is data (it is also written to JSON as it is): a module name (``nn.RNN``, ``SDPA``) is a name and
stays; a label that adds how it ran (``ElmanRNN, loop``, ``Attention (explicit)``, ``nn.MultiheadAttention, 8
heads``) is a :class:`~seqlab.errors.Worded` label, written where the study names it with the message it is shown
as, so it is worded from the ``seqlab`` catalogue without reading its English back.
"""

from __future__ import annotations

from seqlab.errors import shown

__all__ = ["machine_label"]


def machine_label(label: str, lang: str = "en") -> str:
    """``label`` in ``lang``: a :class:`~seqlab.errors.Worded` label by its message, a module's name as it is.

    >>> from seqlab.errors import Message, Worded
    >>> from seqlab.i18n import N_
    >>> loop = Worded("ElmanRNN loop", Message(N_("{name}, loop"), name="ElmanRNN"))
    >>> machine_label(loop, "es"), machine_label(loop, "en"), machine_label("nn.RNN", "es")
    ('ElmanRNN, bucle', 'ElmanRNN, loop', 'nn.RNN')

    Raises:
        SeqlabError: ``lang`` is not en or es.
    """
    from seqlab.i18n import check_language

    return shown(label, check_language(lang))
