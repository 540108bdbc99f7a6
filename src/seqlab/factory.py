"""Naming your own layer: a factory given as ``module.path:attribute`` or ``path/to/file.py:attribute``.

``seqlab profile`` calls a factory with d_model to build the module it measures. The text that names it is read
here, without importing torch, so the command line refuses a missing or unreadable file in one line before any
heavy import (issue 26); :func:`seqlab.studies.profile.load_factory` then imports what it names.
"""

from __future__ import annotations

import errno
import os
from dataclasses import dataclass
from pathlib import Path

from seqlab.errors import Message, SeqlabError
from seqlab.i18n import N_

__all__ = ["FactorySpec", "parse_factory"]


@dataclass(frozen=True)
class FactorySpec:
    """A factory's name, read: where its module comes from and the attribute inside it.

    Attributes:
        module: the dotted module name (``torch.nn``), or the file's path as given (``./mylayers.py``).
        attribute: the dotted attribute inside the module (``make_attn``, ``Layers.make``).
        file: the module's file when the spec names one (its folder checked to exist and be readable), else None.
    """

    module: str
    attribute: str
    file: Path | None


def _names_a_file(module: str) -> bool:
    """A module part that is a path, not a dotted name: ends in .py or holds a folder separator."""
    separators = {"/", os.sep} | ({os.altsep} if os.altsep else set())
    return module.endswith(".py") or any(separator in module for separator in separators)


def parse_factory(spec: str) -> FactorySpec:
    """Read ``module.path:attribute`` or ``path/to/file.py:attribute`` (the last ``:`` splits, so a Windows drive
    letter stays in the path); a file is checked to exist and be readable. Imports nothing.

    >>> parse_factory("torch.nn:Identity")
    FactorySpec(module='torch.nn', attribute='Identity', file=None)
    >>> try:
    ...     parse_factory("./no/such/layers.py:make")
    ... except SeqlabError as error:
    ...     print(str(error).split(" (from")[0])
    the factory file './no/such/layers.py' does not exist

    Raises:
        SeqlabError: the text is not ``module:attribute``; the file it names is missing, a folder, not a .py
            file, or unreadable.
    """
    module, sep, attribute = spec.rpartition(":") if isinstance(spec, str) else ("", "", "")
    if not sep or not module or not attribute or not all(part.isidentifier() for part in attribute.split(".")):
        raise SeqlabError(N_("expected module.path:factory or path/to/file.py:factory, received {spec!r}"), spec=spec,
                          parameter="factory")
    if not _names_a_file(module):
        return FactorySpec(module, attribute, None)
    path = Path(module).expanduser()
    expected = Message(N_("expected module.path:factory or path/to/file.py:factory"))
    if not path.exists():
        raise SeqlabError(N_("the factory file {module!r} does not exist (from {spec!r}); {expected}"), module=module,
                          spec=spec, expected=expected, parameter="factory")
    if not path.is_file() or path.suffix != ".py":
        raise SeqlabError(N_("the factory file {module!r} is not a Python file (from {spec!r}); {expected}"),
                          module=module, spec=spec, expected=expected, parameter="factory")
    if not os.access(path, os.R_OK):
        raise SeqlabError(N_("the factory file {module!r} cannot be read: {strerror} (from {spec!r})"), module=module,
                          strerror=os.strerror(errno.EACCES), spec=spec, parameter="factory")
    return FactorySpec(module, attribute, path)
