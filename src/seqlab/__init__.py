"""seqlab: measure what recurrence costs and what attention buys.

The library returns values (frozen dataclasses); the command line (:mod:`seqlab.cli`)
renders them. Heavy imports happen inside the functions that need them, so
``import seqlab`` stays fast and has no side effects: :func:`profile` is imported
(with torch) the first time it is looked up.
"""

from typing import Any

__version__ = "0.1.0"

__all__ = ["__version__", "profile"]


def __getattr__(name: str) -> Any:
    """Lazy exports: ``seqlab.profile`` is :func:`seqlab.studies.profile.profile`, imported on first use."""
    if name == "profile":
        from seqlab.studies.profile import profile

        return profile
    raise AttributeError(f"module 'seqlab' has no attribute {name!r}")
