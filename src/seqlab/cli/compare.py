"""``seqlab compare``: recurrence against attention on a text (parse, call the study, render)."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from seqlab.cli.options import LANG_HELP, bad_parameter, float_between, input_text, integer_at_least, language
from seqlab.cli.output import show_result
from seqlab.cli.progress import progress_bar
from seqlab.cli.threads import ThreadsOption
from seqlab.errors import SeqlabError
from seqlab.seeds import MAX_SEED
from seqlab.cli.options import worded
from seqlab.i18n import N_

#: Which option each library parameter comes from, to point an error at the right one.
OPTIONS = {"d_model": "'--d-model'", "d_h": "'--d-h'", "d_k": "'--d-k'", "d_v": "'--d-v'", "score": "'--score'",
           "tokenizer": "'--tokenizer'", "probes": "'--probes'", "spectral_radius": "'--spectral-radius'"}


def _tokens(text: Optional[str], tokens: Optional[int], tokenizer: str, lang: str):
    """Resolve --text / --tokens into (Tokens, source label); each failure names its option."""
    from seqlab.text import builtin_text, read_text, synthetic_source, synthetic_tokens, tokenize

    option = "'--tokens'" if tokens is not None else "'--text'"
    try:
        if tokens is not None:  # one input whatever the output language: the same command, the same figures
            return synthetic_tokens(tokens, tokenizer), synthetic_source(tokens)
        source = builtin_text(lang) if text is None else read_text(text)
        return tokenize(source.content, tokenizer), source.source
    except SeqlabError as error:
        raise bad_parameter(error, OPTIONS, option) from None


def compare(
    text: Annotated[Optional[str], typer.Option("--text", callback=input_text,
                                                help="A UTF-8 text file, or - for standard input. "
                                                "Default: the built-in text in the output language.")] = None,
    tokens: Annotated[Optional[int], typer.Option("--tokens", parser=integer_at_least(2), metavar="INTEGER",
                                                  help="Use a synthetic text of exactly N >= 2 tokens "
                                                       "(the built-in text of --lang, cycled).")] = None,
    tokenizer: Annotated[str, typer.Option(help="o200k_base (GPT-4o's subwords, offline) or words.")] = "o200k_base",
    d_model: Annotated[int, typer.Option("--d-model", parser=integer_at_least(1), metavar="INTEGER",
                                         help="Token-vector width (the paper's 512).")] = 512,
    d_h: Annotated[Optional[int], typer.Option("--d-h", parser=integer_at_least(1), metavar="INTEGER",
                                               help="Hidden width of the RNN (default d_model).")] = None,
    d_k: Annotated[Optional[int], typer.Option("--d-k", parser=integer_at_least(1), metavar="INTEGER",
                                               help="Query/key width (default d_model).")] = None,
    d_v: Annotated[Optional[int], typer.Option("--d-v", parser=integer_at_least(1), metavar="INTEGER",
                                               help="Value width (default d_model).")] = None,
    score: Annotated[str, typer.Option(help="Attention score: dot, scaled_dot, additive, general.")] = "scaled_dot",
    spectral_radius: Annotated[Optional[float], typer.Option("--spectral-radius", parser=float_between(1e-3, 1e3),
                                                             metavar="FLOAT", help="Rescale W_hh to this "
                                                             "spectral radius, in [0.001, 1000].")] = None,
    seed: Annotated[int, typer.Option(parser=integer_at_least(0, MAX_SEED), metavar="INTEGER",
                                      help="Seed for the embedding, weights and permutations.")] = 0,
    probes: Annotated[int, typer.Option(parser=integer_at_least(1, 4096), metavar="INTEGER",
                                        help="Random probes of the reach estimate.")] = 8,
    exact_reach: Annotated[bool, typer.Option("--exact-reach", help="Exact reach norms (d_h or d_v "
                                              "backward rows instead of --probes).")] = False,
    path_width: Annotated[int, typer.Option("--path-width", parser=integer_at_least(1, 4096), metavar="INTEGER",
                                            help="Width at which the LSTM and GRU paths are traced (capped at "
                                                 "--d-h; the path's length does not depend on it, the tracer's "
                                                 "time does).")] = 16,
    no_time: Annotated[bool, typer.Option("--no-time", help="Skip the wall-time measurements.")] = False,
    detailed: Annotated[bool, typer.Option("--detailed", help="Add explicit-machine times, reach fits, "
                                           "multiplications per link of the chain and uncounted ops.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the full result as JSON.")] = False,
    lang: Annotated[Optional[str], typer.Option("--lang", help=LANG_HELP)] = None,
    threads: ThreadsOption = None,
) -> None:
    """Recurrence, attention, LSTM and GRU on a text: work at three scopes, span, path, reach, order and time."""
    from seqlab.studies.compare import (
        SCORES,
        CompareConfig,
        check_compare_size,
        run_compare,
    )
    from seqlab.text import TOKENIZERS

    lang = language(lang)
    if text is not None and tokens is not None:
        raise typer.BadParameter(worded(N_("give either --text or --tokens, not both")),
                                 param_hint="'--text' / '--tokens'")
    if score not in SCORES:
        raise typer.BadParameter(worded(N_("expected one of {scores}; received {score!r}"), scores=', '.join(SCORES),
                                        score=score), param_hint="'--score'")
    if tokenizer not in TOKENIZERS:
        raise typer.BadParameter(worded(N_("expected one of {tokenizers}; received {tokenizer!r}"),
                                        tokenizers=', '.join(TOKENIZERS), tokenizer=tokenizer),
                                 param_hint="'--tokenizer'")
    config = CompareConfig(d_model=d_model, d_h=d_h, d_k=d_k, d_v=d_v, score=score, seed=seed,
                           spectral_radius=spectral_radius, probes=probes, exact_reach=exact_reach,
                           time=not no_time, time_explicit=detailed and not no_time, path_width=path_width,
                           threads=threads)
    length_option = "'--tokens'" if tokens is not None else "'--text'"
    options = {**OPTIONS, "T": length_option}
    # a memory refusal comes from the sizes together: name every option that fed the estimate
    size_options = " / ".join([length_option, "'--d-model'"] + (["'--exact-reach'"] if exact_reach else
                              ["'--probes'"] if probes != 8 else []) + (["'--score'"] if score == "additive" else []))
    try:
        config.widths()
        if tokens is not None:  # refuse an absurd length before building the tokens
            check_compare_size(tokens, config)
    except SeqlabError as error:
        raise bad_parameter(error, options, size_options) from None
    token_sequence, source = _tokens(text, tokens, tokenizer, lang)
    try:
        with progress_bar() as step:  # the bar only on a terminal (cli.progress)
            result = run_compare(token_sequence, source, config, step)
    except SeqlabError as error:
        raise bad_parameter(error, options, size_options) from None
    show_result(result, lang, as_json, "seqlab.render.compare:render_compare", detailed)
