"""The ``seqlab`` command line: parse, call a study, render. Nothing here measures.

Bad usage exits with code 2 and one ``Error: Invalid value for '--option': …`` line (click's
convention, with a ``--help`` hint); a result is printed as a Rich table or, with ``--json``, as JSON.
"""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from seqlab.errors import SeqlabError

app = typer.Typer(
    name="seqlab",
    help="Measure what recurrence costs and what attention buys, on your own text and hardware.",
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
    no_args_is_help=True,
    add_completion=False,
)

@app.callback()
def root() -> None:
    """Measure what recurrence costs and what attention buys, on your own text and hardware."""


LANG_HELP = "Language of the output: en or es (default: from the environment's locale)."


def _bad(option: str, error: Exception) -> typer.BadParameter:
    return typer.BadParameter(str(error), param_hint=f"'{option}'")


def _language(lang: Optional[str]) -> str:
    from seqlab.i18n import check_language, default_language

    try:
        return check_language(lang) if lang is not None else default_language()
    except SeqlabError as error:
        raise _bad("--lang", error) from None


def _tokens(text: Optional[str], tokens: Optional[int], tokenizer: str, lang: str):
    """Resolve --text / --tokens into (Tokens, source label); every failure names its option."""
    from seqlab.text import builtin_text, read_text, synthetic_tokens, tokenize

    if text is not None and tokens is not None:
        raise typer.BadParameter("give either --text or --tokens, not both", param_hint="'--text' / '--tokens'")
    try:
        if tokens is not None:
            return synthetic_tokens(tokens, tokenizer), f"synthetic ({tokens} tokens)"
        source = builtin_text(lang) if text is None else read_text(text)
    except SeqlabError as error:
        raise _bad("--tokens" if tokens is not None else "--text", error) from None
    try:
        return tokenize(source.content, tokenizer), source.source
    except SeqlabError as error:
        raise _bad("--tokenizer" if "tokenizer" in str(error) else "--text", error) from None


@app.command()
def compare(
    text: Annotated[Optional[str], typer.Option("--text", help="A UTF-8 text file, or - for standard input. "
                                                "Default: the built-in text in the output language.")] = None,
    tokens: Annotated[Optional[int], typer.Option("--tokens", min=1, help="Use a synthetic text of exactly N "
                                                  "tokens (the built-in text, cycled).")] = None,
    tokenizer: Annotated[str, typer.Option(help="o200k_base (GPT-4o's subwords, offline) or words.")] = "o200k_base",
    d_model: Annotated[int, typer.Option("--d-model", min=1, help="Token-vector width (the paper's 512).")] = 512,
    d_h: Annotated[Optional[int], typer.Option("--d-h", min=1, help="Hidden width of the RNN (default d_model).")]
    = None,
    d_k: Annotated[Optional[int], typer.Option("--d-k", min=1, help="Query/key width (default d_model).")] = None,
    d_v: Annotated[Optional[int], typer.Option("--d-v", min=1, help="Value width (default d_model).")] = None,
    score: Annotated[str, typer.Option(help="Attention score: dot, scaled_dot, additive, general.")] = "scaled_dot",
    spectral_radius: Annotated[Optional[float], typer.Option("--spectral-radius", help="Rescale W_hh to this "
                                                             "spectral radius (> 0).")] = None,
    seed: Annotated[int, typer.Option(min=0, help="Seed for the embedding, weights and permutations.")] = 0,
    probes: Annotated[int, typer.Option(min=1, max=4096, help="Random probes of the reach estimate.")] = 8,
    exact_reach: Annotated[bool, typer.Option("--exact-reach", help="Exact reach norms (d_h or d_v "
                                              "backward rows instead of --probes).")] = False,
    no_time: Annotated[bool, typer.Option("--no-time", help="Skip the wall-time measurements.")] = False,
    detailed: Annotated[bool, typer.Option("--detailed", help="Add explicit-machine times, reach fits, "
                                           "parallelism and uncounted ops.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the full result as JSON.")] = False,
    lang: Annotated[Optional[str], typer.Option("--lang", help=LANG_HELP)] = None,
) -> None:
    """Recurrence against attention on a text: work, span, reach, order and time, side by side."""
    from seqlab.studies.compare import SCORES, CompareConfig, check_compare_size, run_compare

    lang = _language(lang)
    if score not in SCORES:
        raise typer.BadParameter(f"must be one of {', '.join(SCORES)}; received {score!r}", param_hint="'--score'")
    if spectral_radius is not None and not 0 < spectral_radius < float("inf"):
        raise typer.BadParameter(f"must be a number > 0, received {spectral_radius}",
                                 param_hint="'--spectral-radius'")
    config = CompareConfig(d_model=d_model, d_h=d_h, d_k=d_k, d_v=d_v, score=score, seed=seed,
                           spectral_radius=spectral_radius, probes=probes, exact_reach=exact_reach, time=not no_time,
                           time_explicit=detailed and not no_time)
    try:
        if tokens is not None:  # refuse an absurd length before building the tokens
            check_compare_size(tokens, config)
    except SeqlabError as error:
        raise _bad("--tokens", error) from None
    token_sequence, source = _tokens(text, tokens, tokenizer, lang)
    try:
        result = run_compare(token_sequence, source, config)
    except SeqlabError as error:
        raise _bad("--text" if text is not None else "--d-model", error) from None
    if as_json:
        from seqlab.render.json_output import to_json

        typer.echo(to_json(result))
        return
    from rich.console import Console

    from seqlab.render.compare import render_compare

    Console().print(render_compare(result, lang, detailed))


def main() -> None:
    """Console-script entry point (``seqlab``)."""
    app()


if __name__ == "__main__":
    main()
