"""``seqlab profile``: work, span and path of your own module (parse, build, call the study, render)."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from seqlab.cli.options import LANG_HELP, bad_parameter, integer_at_least, language
from seqlab.cli.output import show_result
from seqlab.errors import SeqlabError
from seqlab.seeds import MAX_SEED

#: Which option each library parameter comes from, to point an error at the right one.
OPTIONS = {"factory": "'FACTORY'", "module": "'FACTORY'", "d_model": "'--d-model'", "x": "'--seq-len'",
           "sources": "'--all-sources'", "layout": "'--layout'", "output": "'--output'"}

#: Longest sequence ``profile`` accepts; the path analysis's own memory guard still applies below it.
MAX_SEQ_LEN = 65_536


def profile(
    factory: Annotated[str, typer.Argument(metavar="FACTORY",
                                           help="module.path:factory or path/to/file.py:factory — called with "
                                                "d_model, it returns an nn.Module that maps x (B, T, d_model) to "
                                                "(B, T, d_out).")],
    seq_len: Annotated[int, typer.Option("--seq-len", parser=integer_at_least(1, MAX_SEQ_LEN), metavar="INTEGER",
                                         help="Number of positions T of the input.")] = 64,
    d_model: Annotated[int, typer.Option("--d-model", parser=integer_at_least(1), metavar="INTEGER",
                                         help="Width of the input, passed to the factory.")] = 128,
    batch: Annotated[int, typer.Option("--batch", parser=integer_at_least(1, 4096), metavar="INTEGER",
                                       help="Batch size B of the input.")] = 1,
    seed: Annotated[int, typer.Option("--seed", parser=integer_at_least(0, MAX_SEED), metavar="INTEGER",
                                      help="Seed of the random input and of the factory's weights.")] = 0,
    all_sources: Annotated[bool, typer.Option("--all-sources", help="Measure paths from every position, not "
                                              "only the two ends (memory grows with T).")] = False,
    layout: Annotated[Optional[str], typer.Option("--layout", metavar="btd|bdt|tbd",
                                                  help="Where the module's input holds its positions: btd (B, T, "
                                                       "d), bdt (B, d, T) channels first, tbd (T, B, d) sequence "
                                                       "first. Found from the shapes when left out; needed when T = "
                                                       "d and the shapes cannot tell.")] = None,
    output: Annotated[Optional[str], typer.Option("--output", metavar="INDEX|KEY",
                                                  help="Which element of a tuple, list or mapping output to "
                                                       "measure (default: the first).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the full result as JSON.")] = False,
    lang: Annotated[Optional[str], typer.Option("--lang", help=LANG_HELP)] = None,
) -> None:
    """Work, span and path length of your own sequence module: Table 1's three columns for any layer."""
    from seqlab.factory import parse_factory

    try:
        parse_factory(factory)  # a missing or unreadable file is said now, before torch is imported
    except SeqlabError as error:
        raise bad_parameter(error, OPTIONS, "'FACTORY'") from None
    import torch

    from seqlab.measure.layout import check_layout
    from seqlab.studies.profile import build_from_factory, input_for
    from seqlab.studies.profile import profile as measure_profile

    lang = language(lang)
    chosen = int(output) if output is not None and output.isascii() and output.isdigit() else output
    try:
        layout = check_layout(layout)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            module = build_from_factory(factory, d_model)
        # (B, T, d), or the layout named or the one the module takes
        x = input_for(module, batch=batch, seq_len=seq_len, d_model=d_model, layout=layout, seed=seed)
        result = measure_profile(module, x, sources="all" if all_sources else None, layout=layout, output=chosen)
    except SeqlabError as error:
        raise bad_parameter(error, OPTIONS, "'FACTORY'") from None
    show_result(result, lang, as_json, "seqlab.render.table1:profile_table")
