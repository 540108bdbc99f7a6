"""``--threads``: the CPU threads a command's *timings* use (compare, check, decode; issue 17).

Counting and tracing always run on one thread (:func:`seqlab.measure.switches.one_thread`): they pay
Python per op, and on a busy machine idle threads spinning on taken cores slowed ``seqlab compare`` ten
times. Only the timings use the threads asked for here; without ``--threads`` compare and check time on
:func:`seqlab.measure.rounds.timing_threads_default`: PyTorch's own count (the machine's cores, or
``OMP_NUM_THREADS``) capped by the cores the machine's load leaves free, so a busy machine is not
oversubscribed (issue 23).
"""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from seqlab.cli.options import integer_at_least

THREADS_HELP = ("CPU threads for the timings (default: PyTorch's count, the machine's cores, capped by the cores "
                "its load leaves free); counting and tracing always run on one thread.")

DECODE_THREADS_HELP = ("CPU threads for the timings (default: 1, since one step at batch 1 is a few small "
                       "products); counting and tracing always run on one thread.")


def threads_option(help_text: str):
    """The ``--threads`` option as a command parameter's annotation, with its own help text."""
    return Annotated[Optional[int], typer.Option("--threads", parser=integer_at_least(1, 1024),
                                                 metavar="INTEGER", help=help_text)]


#: The option as a command parameter's annotation: ``threads: ThreadsOption = None``.
ThreadsOption = threads_option(THREADS_HELP)
#: decode's: its timings default to one thread (see seqlab.studies.decode.DecodeConfig.threads).
DecodeThreadsOption = threads_option(DECODE_THREADS_HELP)
