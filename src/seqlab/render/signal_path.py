"""Words for the signal path (:mod:`seqlab.measure.signal_path`): its count, why a pair is not measured, why absent.

Shared by ``seqlab profile``, ``seqlab compare`` and ``seqlab table1 --modern``, so one reason reads the same
everywhere. A missing figure always comes with its reason; a count that undeclared position mixing makes a bound
reads "at least" and names the modules; a count read at a product marked in the backward says so; a reach estimated
from probes reads "≈", and a reach outside float64's range is written from its logarithm. Nothing here measures;
the words are English message ids of the gettext domain ``seqlab``.
"""

from __future__ import annotations

import math

from seqlab.i18n import format_integer, format_number, plural_translator, translator
from seqlab.measure.signal_path import SignalPath, SignalReading

DOMAIN = "seqlab"


def reason_words(reason: str, lang: str = "en") -> str:
    """Why a pair has no count or no reach (a key of :data:`~seqlab.measure.signal_path.REASONS` or of
    :data:`~seqlab.measure.signal_path.REACH_REASONS`), in words.

    >>> reason_words("no_dependence")
    'y_T does not depend on x_1'
    """
    tr = translator(lang, DOMAIN)
    return {
        "not_a_power": tr("routes from x_1 to y_T cross different numbers of factors (J(s) is not one power of s)"),
        "no_dependence": tr("y_T does not depend on x_1"),
        "out_of_range": tr("the gradient from y_T to x_1 left float64's range (below 2^-1000, or not finite) where no "
                           "marked factor could rescale it"),
        "zero_gradient": tr("the gradient from y_T to x_1 is exactly 0 although a path connects them: it underflowed "
                            "where no marked factor could rescale it, or a derivative on the way is exactly 0 at this "
                            "input"),
        "zero_undecided": tr("the gradient from y_T to x_1 is exactly 0 and the path tracer could not tell a missing "
                             "route from an underflow"),
        "uneven_rescaling": tr("the gradient had to be rescaled into float64's range at factors that not every route "
                               "crosses"),
    }[reason]


def reach_words(path: SignalPath, lang: str = "en") -> str:
    """The reach ‖∂y_T/∂x_1‖ as read: a number, "≈" a number from probes, or a number written from its logarithm.

    >>> from dataclasses import replace
    >>> import torch
    >>> from seqlab.layers.recurrent import ElmanRNN
    >>> from seqlab.measure.signal_path import measure_signal_path
    >>> path = measure_signal_path(ElmanRNN(2, 2, generator=torch.Generator().manual_seed(0)), torch.ones(1, 4, 2))
    >>> reach_words(path)
    '0.00942'
    >>> reach_words(replace(path, reach=None, log10_reach=-903.61, probes=1))
    '≈ 2.45e-904'
    >>> reach_words(replace(path, reach=None, log10_reach=None, reach_missing="uneven_rescaling"))
    "not read (the gradient had to be rescaled into float64's range at factors that not every route crosses)"
    """
    if path.reach is not None:
        number = format_number(path.reach, lang)
    elif path.log10_reach is not None:
        exponent = math.floor(path.log10_reach)
        mantissa = 10 ** (path.log10_reach - exponent)  # [1, 10)
        if round(mantissa, 2) >= 10:
            mantissa, exponent = mantissa / 10, exponent + 1
        number = f"{format_number(mantissa, lang)}e{exponent}"
    elif path.reach_missing is not None:
        tr = translator(lang, DOMAIN)
        return tr("not read ({reason})").format(reason=reason_words(path.reach_missing, lang))
    else:
        return "—"
    return number if path.probes is None else f"≈ {number}"


def _bound_words(path: SignalPath, lang: str) -> str:
    """The modules that make a reading a bound, in words (empty when none)."""
    tr = translator(lang, DOMAIN)
    parts = []
    if path.undeclared:
        parts.append(tr("{modules} mixes positions without declaring its factors, which are not counted").format(
            modules=", ".join(path.undeclared)))
    if path.unchecked:
        parts.append(tr("whether {modules} mixes positions could not be checked").format(
            modules=", ".join(path.unchecked)))
    return "; ".join(parts)


def reading_words(reading: SignalReading | None, lang: str = "en") -> str:
    """One cell: the factors met from x_1 to y_T and the reach, or why there is no count.

    >>> import torch
    >>> from seqlab.measure.signal_path import read_signal_path
    >>> reading_words(read_signal_path(torch.nn.RNN(2, 2, batch_first=True), torch.zeros(1, 3, 2)))
    'absent: RNN declares no transition factor'
    >>> from seqlab.layers.recurrent import ElmanRNN
    >>> x = torch.ones(1, 4, 2)
    >>> reading_words(read_signal_path(ElmanRNN(2, 2, generator=torch.Generator().manual_seed(0)), x, probes=None))
    '3 transition factors (W_hh), reach 0.00942; W_hh counted at its marked product (declared, not measured)'
    """
    tr = translator(lang, DOMAIN)
    counted = count_words(reading, lang)
    if reading is None or reading.path is None or reading.path.factors is None:
        return counted
    path = reading.path
    words = tr("{factors}, reach {reach}").format(factors=counted, reach=reach_words(path, lang))
    if path.probes is not None:
        ngettext = plural_translator(lang)
        words += " " + ngettext("(from {count} probe)", "(from {count} probes)", path.probes).format(
            count=format_integer(path.probes, lang))
    if path.marked:
        words += "; " + tr("{factor} counted at its marked product (declared, not measured)").format(
            factor=", ".join(path.marked))
    return words


def count_words(reading: SignalReading | None, lang: str = "en") -> str:
    """The factors met from x_1 to y_T alone (no reach), or why there is no count; "at least", with the modules,
    when undeclared position mixing makes it a bound.

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
    bound = _bound_words(path, lang)
    if path.factors is None:
        words = tr("not measured: {reason}").format(reason=reason_words(path.reason, lang))
        return f"{words}; {bound}" if bound else words
    ngettext = plural_translator(lang)
    if not path.bound:
        return ngettext("{count} transition factor ({factor})", "{count} transition factors ({factor})",
                        path.factors).format(count=format_integer(path.factors, lang), factor=path.factor)
    counted = ngettext("at least {count} transition factor ({factor})", "at least {count} transition factors ({factor})",
                       path.factors).format(count=format_integer(path.factors, lang), factor=path.factor)
    return f"{counted}: {bound}"


def cell_words(reading: SignalReading | None, lang: str = "en") -> str:
    """A narrow table cell: ``"49 (W_hh)"``; ``"≥ 1 (α_ji)"`` for a bound; ``"—"`` where the module declares no
    factor (the row's label says so); ``"not measured: "`` and the reason where the measurement gave no count.

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
    if reading.path.factors is None:  # never a missing figure without its reason
        tr = translator(lang, DOMAIN)
        return tr("not measured: {reason}").format(reason=reason_words(reading.path.reason, lang))
    count = format_integer(reading.path.factors, lang)
    return f"{'≥ ' if reading.path.bound else ''}{count} ({reading.path.factor})"
