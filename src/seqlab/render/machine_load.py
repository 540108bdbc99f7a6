"""The busy-machine caveat: one sentence, worded once, under every time seqlab shows.

``compare``, ``bench``, ``decode``, the report and the web lab's timing panel all append this sentence when
the machine was busy as their timing began. Whether it was busy is decided in one place,
:attr:`seqlab.measure.timing.MachineLoad.busy` (the load average against the CPUs); only the words are here,
in the ``seqlab`` catalogue.
"""

from __future__ import annotations

from seqlab.i18n import format_integer, format_number, translator
from seqlab.measure.timing import MachineLoad

__all__ = ["busy_caveat"]


def busy_caveat(load: MachineLoad | None, lang: str = "en") -> str:
    """The busy-machine caveat in ``lang``, or ``""`` on a quiet machine or where the load is unknown.

    >>> busy_caveat(MachineLoad(3.0, 2, True))[:22], busy_caveat(MachineLoad(0.2, 2, False)), busy_caveat(None)
    ('The machine was busy: ', '', '')
    >>> busy_caveat(MachineLoad(3.0, 2, True), "es")[:26]
    'La máquina estaba ocupada:'

    Args:
        load: the machine's load when the timing began (:func:`seqlab.measure.timing.machine_load`), or None.
        lang: ``en`` or ``es``.

    Raises:
        SeqlabError: ``lang`` is not en or es.
    """
    _ = translator(lang)
    if load is None or not load.busy or load.load_1min is None:
        return ""
    return _("The machine was busy: its load average was {load} on {cpus} CPUs when the timing began, so these "
             "times may read long and spread wide; time again on a quiet machine before comparing them.").format(
        load=format_number(load.load_1min, lang), cpus=format_integer(load.cpus, lang))
