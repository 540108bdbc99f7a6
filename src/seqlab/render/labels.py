"""Machine labels in the output language: the studies name what they ran in English, the renderers translate.

A study's label is data (it is also written to JSON as it is): a module name (``nn.RNN``, ``SDPA``) is a name
and stays; a label that adds how it ran (``ElmanRNN, loop``, ``Attention (explicit)``,
``nn.MultiheadAttention, 8 heads``; seqlab's own ``Attention`` is a word, not a name) is worded again from the
``seqlab`` catalogue, with the glossary's terms.
"""

from __future__ import annotations

import re

from seqlab.i18n import format_integer, plural_translator, translator

__all__ = ["machine_label"]

#: "<name>, <how>" or "<name> (<how>)" or "<name> <how>" for the ways of running a label may add.
_LABEL = re.compile(r"^(?P<name>.+?)(?:, | \(| )(?P<how>loop|explicit|(?P<heads>\d+) heads)\)?$")


def machine_label(label: str, lang: str = "en") -> str:
    """``label`` in ``lang``: the module's name as it is, the way it ran translated.

    >>> machine_label("ElmanRNN loop", "es"), machine_label("Attention (explicit)", "es")
    ('ElmanRNN, bucle', 'Atención, explícita')
    >>> machine_label("nn.MultiheadAttention, 8 heads", "es"), machine_label("nn.RNN", "es")
    ('nn.MultiheadAttention, 8 cabezas', 'nn.RNN')
    >>> machine_label("ElmanRNN loop", "en")
    'ElmanRNN, loop'

    Raises:
        SeqlabError: ``lang`` is not en or es.
    """
    _, ngettext = translator(lang), plural_translator(lang)
    match = _LABEL.match(label)
    if match is None:
        return label
    name, how = match.group("name"), match.group("how")
    if name == "Attention":  # seqlab's own attention, written out (not a library module's name)
        name = _("Attention")
    if match.group("heads"):
        count = int(match.group("heads"))
        return f"{name}, " + ngettext("{count} head", "{count} heads", count).format(count=format_integer(count, lang))
    return (_("{name}, loop") if how == "loop" else _("{name}, explicit")).format(name=name)
