"""``seqlab decode --model DIR``: a local Hugging Face causal LM's cost per new token, read from its own cache.

Parse, call :func:`seqlab.studies.decode_model.run_model_decode`, render. Everything that can be refused is refused
before the prefill (exit 2, one ``Error:`` line): a folder that is missing or holds no causal LM, positions below 2
or beyond the model's maximum, fewer than three positions, a ``--dtype`` outside float32, bfloat16, float16 and
float64, work that would not fit in memory, and a cache seqlab cannot read (the line names the types it found).
"""

from __future__ import annotations

from pathlib import Path

from seqlab.cli.options import bad_parameter, integer_list
from seqlab.cli.output import show_result
from seqlab.cli.options import worded
from seqlab.errors import SeqlabError
from seqlab.i18n import N_

OPTIONS = {"model": "'--model'", "positions": "'--positions'", "threads": "'--threads'", "dtype": "'--dtype'"}


def decode_model(model: str, positions: str | None, time: bool, quick: bool, as_json: bool, lang: str,
                 threads: int | None, plot: Path | None = None, dtype: str | None = None) -> None:
    """Measure and print (a table and sentences, or ``--json``); draw to ``plot`` when given; ``dtype`` (None: the
    checkpoint's own) is the weights' and the cache's."""
    from seqlab.studies.decode_model import ModelDecodeConfig, run_model_decode

    changes: dict[str, object] = {"time": time, "dtype": dtype}
    if threads is not None:
        changes["threads"] = threads
    if positions is not None:
        changes["positions"] = integer_list(positions, 2, "'--positions'")
    try:
        config = ModelDecodeConfig.quick(model, **changes) if quick else ModelDecodeConfig(model, **changes)
        result = run_model_decode(config)
    except SeqlabError as error:
        raise bad_parameter(error, OPTIONS, "'--model'") from None
    show_result(result, lang, as_json, "seqlab.render.decode_model:render_model_decode",
                plot="seqlab.render.decode_model:plot_model_decode", plot_path=plot)
