"""Words for the signal path (:mod:`seqlab.measure.signal_path`): its count, why a pair is not measured, why absent.

Shared by ``seqlab profile``, ``seqlab compare`` and ``seqlab table1 --modern``, so one reason reads the same
everywhere. Nothing here measures; the words are English message ids of the gettext domain ``seqlab``.
"""

from __future__ import annotations

from seqlab.i18n import format_integer, format_number, plural_translator, translator
from seqlab.measure.signal_path import SignalReading

DOMAIN = "seqlab"


def reason_words(reason: str, lang: str = "en") -> str:
    """Why a pair has no count (a key of :data:`seqlab.measure.signal_path.REASONS`), in words.

    >>> reason_words("no_dependence")
    'y_T does not depend on x_1'
    """
    tr = translator(lang, DOMAIN)
    return {
        "not_a_power": tr("routes from x_1 to y_T cross different numbers of factors (J(s) is not one power of s)"),
        "no_dependence": tr("y_T does not depend on x_1"),
        "out_of_range": tr("a norm left float64's range"),
    }[reason]


def reading_words(reading: SignalReading | None, lang: str = "en") -> str:
    """One cell: the factors met from x_1 to y_T and the reach, or why there is no count.

    >>> import torch
    >>> from seqlab.measure.signal_path import read_signal_path
    >>> reading_words(read_signal_path(torch.nn.RNN(2, 2, batch_first=True), torch.zeros(1, 3, 2)))
    'absent: RNN declares no transition factor'
    >>> from seqlab.layers.recurrent import ElmanRNN
    >>> x = torch.ones(1, 4, 2)
    >>> reading_words(read_signal_path(ElmanRNN(2, 2, generator=torch.Generator().manual_seed(0)), x))
    '3 transition factors (W_hh), reach 0.00942'
    """
    tr = translator(lang, DOMAIN)
    counted = count_words(reading, lang)
    if reading is None or reading.path is None or reading.path.factors is None:
        return counted
    return tr("{factors}, reach {reach}").format(factors=counted, reach=format_number(reading.path.reach, lang))


def count_words(reading: SignalReading | None, lang: str = "en") -> str:
    """The factors met from x_1 to y_T alone (no reach), or why there is no count.

    >>> import torch
    >>> from seqlab.measure.signal_path import read_signal_path
    >>> count_words(read_signal_path(torch.nn.LSTM(2, 2, batch_first=True), torch.zeros(1, 3, 2)), "es")
    'ausente: LSTM no declara ningún factor de transición'
    """
    tr = translator(lang, DOMAIN)
    if reading is None:
        return tr("not measured")
    if reading.absent == "no_factor":
        return tr("absent: {module} declares no transition factor").format(module=reading.module)
    if reading.absent == "refused":
        return tr("absent: the measurement refused {module} ({detail})").format(module=reading.module,
                                                                               detail=reading.detail)
    path = reading.path
    if path.factors is None:
        return tr("not measured: {reason}").format(reason=reason_words(path.reason, lang))
    ngettext = plural_translator(lang)
    return ngettext("{count} transition factor ({factor})", "{count} transition factors ({factor})",
                    path.factors).format(count=format_integer(path.factors, lang), factor=path.factor)


def cell_words(reading: SignalReading | None, lang: str = "en") -> str:
    """A narrow table cell: ``"49 (W_hh)"``; ``"—"`` where the module declares no factor (the row's label says
    so); ``"not measured"`` where the measurement gave no count (the prose says why).

    >>> import torch
    >>> from seqlab.layers.recurrent import ElmanRNN
    >>> from seqlab.measure.signal_path import read_signal_path
    >>> x = torch.ones(1, 4, 2)
    >>> cell_words(read_signal_path(ElmanRNN(2, 2, generator=torch.Generator().manual_seed(0)), x))
    '3 (W_hh)'
    >>> cell_words(read_signal_path(torch.nn.LSTM(2, 2, batch_first=True), x))
    '—'
    """
    if reading is None or reading.absent is not None:
        return "—"
    if reading.path.factors is None:
        return translator(lang, DOMAIN)("not measured")
    return f"{format_integer(reading.path.factors, lang)} ({reading.path.factor})"
