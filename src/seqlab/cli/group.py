"""The ``seqlab`` command group: one run in one language, full command summaries, ``--version``.

:class:`SeqlabGroup` is the click group Typer builds for :data:`seqlab.cli.app`. Before anything is
parsed it settles the run's language (``--lang`` anywhere on the line, else the locale) and runs the
whole parse, help and error path inside :func:`seqlab.cli.language.cli_language`; a usage error is
shown by :func:`show_error` in that language (exit 2, as click does), ``--help`` is written in it. Every command
runs inside :func:`seqlab.cli.interrupts.handled`: Ctrl+C and SIGTERM end it with one line, the terminal's cursor
shown, and exit 130 or 143.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

import typer
from typer.core import TyperGroup

from seqlab.cli import interrupts
from seqlab.cli.extras import missing_extra_exit
from seqlab.cli.language import (CLICK_DOMAIN, argument_language, catalogue, cli_language, click_message,
                                 current_language, first_paragraph, localise)
from seqlab.i18n import default_language


def show_error(error: typer.TyperException, lang: str, args: Sequence[str] = (), root: Any = None) -> None:
    """Write ``error`` to standard error as click does (usage, help hint, ``Error: …``), in ``lang``; ``args`` and
    ``root`` (the run's arguments and group) let :func:`seqlab.cli.language.click_message` name what it needs."""
    translate = catalogue(lang, CLICK_DOMAIN).gettext
    context = getattr(error, "ctx", None)
    if context is not None:
        hint = ""
        if context.command.get_help_option(context) is not None:
            hint = translate("Try '{command} {option}' for help.").format(
                command=context.command_path, option=context.help_option_names[0]) + "\n"
        typer.echo(f"{context.get_usage()}\n{hint}", err=True, color=context.color)
    message = click_message(error, lang, args, root)
    typer.echo(translate("Error: {message}").format(message=message), err=True,
               color=context.color if context is not None else None)


class SeqlabGroup(TyperGroup):
    """Typer's group, parsed and answered in the run's language, listing each command's whole summary."""

    def main(self, args: Sequence[str] | None = None, prog_name: str | None = None,  # type: ignore[override]
             complete_var: str | None = None, standalone_mode: bool = True, **extra: Any) -> Any:
        """Run the command line in the language ``--lang`` or the locale asks for (see the module).

        The exit codes are click's: 0 done (or ``--help``), 2 a usage error, a command's own
        ``typer.Exit`` code, 1 aborted; and 130 after Ctrl+C, 143 after SIGTERM, with one line
        (:mod:`seqlab.cli.interrupts`).
        """
        args = list(sys.argv[1:] if args is None else args)
        lang = argument_language(args) or default_language()
        localise(self, lang)
        with cli_language(lang), interrupts.handled():
            try:
                result = super().main(args=args, prog_name=prog_name, complete_var=complete_var,
                                      standalone_mode=False, **extra)
            except typer.TyperException as error:  # click's ClickException and its usage errors
                if not standalone_mode:
                    raise
                show_error(error, lang, args, self)
                sys.exit(error.exit_code)
            except ModuleNotFoundError as error:  # an option's path that needs an extra this install lacks
                if not standalone_mode:
                    raise
                command = next((arg for arg in args if arg in self.commands), "")
                try:
                    missing_extra_exit(error, command, lang)
                except typer.Exit as stop:
                    sys.exit(stop.exit_code)
            except typer.Abort:
                if not standalone_mode:
                    raise
                typer.echo(catalogue(lang, CLICK_DOMAIN).gettext("Aborted!"), err=True)
                sys.exit(1)
            except interrupts.Stop as stop:  # Ctrl+C or SIGTERM: one line, the cursor shown, 130 or 143
                if not standalone_mode:
                    raise stop.interrupt from None
                sys.exit(interrupts.finish(stop.interrupt, current_language()))
        if not standalone_mode:
            return result
        sys.exit(result if isinstance(result, int) and not isinstance(result, bool) else 0)

    def invoke(self, ctx: typer.Context) -> Any:
        """Parse and run the command; an interrupt (Ctrl+C, SIGTERM) that ends it, or an error that follows one, is
        carried past Typer, which would make it a bare exit 130, to :meth:`main`
        (:func:`seqlab.cli.interrupts.finish`)."""
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt as interrupt:
            raise interrupts.Stop(interrupt) from None
        except Exception as error:
            # An error that follows a Ctrl+C or SIGTERM is the interrupt's doing (an import it cut in half, a
            # pipe it closed): the run ends as interrupted, with its one line.
            if interrupts.received() is None or isinstance(error, (typer.Exit, typer.Abort, typer.TyperException)):
                raise
            raise interrupts.Stop(error) from None

    def format_commands(self, ctx: typer.Context, formatter: Any) -> None:
        """Each command with its whole first paragraph (click cuts it to one line with "…")."""
        rows = []
        for name in self.list_commands(ctx):
            command = self.get_command(ctx, name)
            if command is not None and not command.hidden:
                rows.append((name, first_paragraph(command.short_help or command.help)))
        if rows:
            with formatter.section(catalogue(current_language(), CLICK_DOMAIN).gettext("Commands")):
                formatter.write_dl(rows)

    def resolve_command(self, ctx: typer.Context, args: list[str]) -> Any:
        """The command named first in ``args``; an unknown name gets its close matches, in the run's language."""
        try:
            return self._click_resolve_command(ctx, args)
        except typer.TyperException as error:  # click's UsageError: no such command
            from difflib import get_close_matches

            matches = sorted(get_close_matches(args[0], list(self.commands))) if args else []
            if matches:
                named = ", ".join(repr(match) for match in matches)
                suggestion = catalogue(current_language(), CLICK_DOMAIN).gettext("Did you mean {possibilities}?")
                error.message = f"{error.message} {suggestion.format(possibilities=named)}"
            raise


def print_version(value: bool) -> None:
    """``--version``: print ``seqlab <version>`` and stop (eager, before any other option is checked)."""
    if value:
        from seqlab import __version__

        typer.echo(f"seqlab {__version__}")
        raise typer.Exit()
