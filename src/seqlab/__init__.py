"""seqlab: measure what recurrence costs and what attention buys.

The library returns values (frozen dataclasses); the command line (:mod:`seqlab.cli`)
renders them. Heavy imports happen inside the functions that need them, so
``import seqlab`` stays fast and has no side effects.
"""

__version__ = "0.1.0"
