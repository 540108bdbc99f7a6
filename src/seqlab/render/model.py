"""Render a :class:`~seqlab.studies.model.ModelResult`: two tables, sentences and the α heat map (L4, L10, L11).

Results in, pictures out: nothing here measures. The first table groups the measured modules by
their place in a layer (the same module of layers 1…L on one row) with the pattern the dependency
matrices showed; the second puts the order test of every depth side by side, without and with the
position vectors; the sentences say what was measured and whether it is what the lesson says.
:mod:`seqlab.render.model_plot` draws α of the chosen layer and head (re-exported here).

Words go through the gettext domain ``seqlab`` (``locale/es/LC_MESSAGES/seqlab.po``) with the
function ``tr``; they are English message ids.
"""

from __future__ import annotations

import math
from pathlib import Path

from rich.console import Group
from rich.table import Table
from rich.text import Text

from seqlab.i18n import format_integer, format_number, format_source, plural_translator, translator
from seqlab.measure.mixing import BAND, BLOCKS, Band, Blocks
from seqlab.render.band import band_text, blocks_text
from seqlab.render.tables import FittedTable
from seqlab.studies.model import ModelResult, ModuleMixing, OrderCheck
from seqlab.studies.model_mixing import DIFFERS

DOMAIN = "seqlab"
DASH = "—"


def pattern_name(pattern: str, lang: str = "en", band: Band | None = None, blocks: Blocks | None = None) -> str:
    """A pattern of :mod:`seqlab.measure.mixing` in words; a band with its width (:func:`~seqlab.render.band.band_text`),
    blocks with their size (:func:`~seqlab.render.band.blocks_text`).

    >>> pattern_name("per-row", "es")
    'fila a fila'
    >>> pattern_name("band", "es", Band(2, 0))
    'banda causal de anchura 3 (j − 3 < i ≤ j)'
    >>> pattern_name("blocks", "en", blocks=Blocks(4))
    'blocks of 4 positions (⌊i/4⌋ = ⌊j/4⌋)'
    >>> pattern_name("partial")  # fits none of the named patterns: says which figures it lacks
    'partial (no band width or block size fits)'
    """
    if pattern == BAND:
        return band_text(band, lang)
    if pattern == BLOCKS:
        return blocks_text(blocks, lang)
    tr = translator(lang)
    names = {"per-row": tr("per row"), "all-to-all": tr("all-to-all"), "causal": tr("causal"),
             "cross": tr("cross"), "partial": tr("partial (no band width or block size fits)"), "none": tr("none"),
             "differs": tr("differs between sequences")}
    return names.get(pattern, pattern)


def _local_name(module: ModuleMixing) -> str:
    """The module's name inside its layer: ``attention.self.query`` (BERT), ``attn.c_proj`` (GPT-2); the
    layer itself is ``""``. The layer's index is the first part of the path equal to layer − 1."""
    if module.layer == 0:
        return module.name
    parts = module.name.split(".")
    index = parts.index(str(module.layer - 1)) if str(module.layer - 1) in parts else len(parts) - 1
    return ".".join(parts[index + 1:])


def _span(layers: list[int]) -> str:
    """1, 2, 3, 4 -> "1–4"; 1, 3 -> "1, 3"."""
    if len(layers) > 1 and layers == list(range(layers[0], layers[-1] + 1)):
        return f"{layers[0]}–{layers[-1]}"
    return ", ".join(str(layer) for layer in layers)


def mixing_table(result: ModelResult, lang: str = "en") -> Table:
    """One row per module of the embeddings and per module of a layer (layers 1…L together).

    A :class:`~seqlab.render.tables.FittedTable`: module names are never cut; below about 100
    columns the Type column (the module's class) is left out to make room for them.
    """
    tr = translator(lang)
    groups: dict[str, list[ModuleMixing]] = {}
    for module in result.modules:
        groups.setdefault(_local_name(module), []).append(module)
    title = tr("Which modules mix positions (first {T} positions of the window)") if len(result.windows) < 2 else \
        tr("Which modules mix positions (first {T} positions of each of the {B} windows)")
    table = FittedTable(title=title.format(T=result.mixing_tokens, B=len(result.windows)), title_justify="left", caption_justify="left", droppable=(1,), caption=tr(
        "Does output row j read input row i ≠ j? Measured in {dtype}: Jacobian probes for vectors, one token "
        "replaced at a time for token ids. Off-diagonal strength: the norm of ∂y_j/∂x_i, the smallest over the pairs "
        "i ≠ j a mixing module connects (a causal, banded or partial module leaves the others at exactly 0) or the "
        "largest over every i ≠ j (per-row modules); 0 means exactly zero. Dropout is the identity in eval mode and "
        "is left out.").format(dtype=result.dtype) + _batch_caption(result, lang))
    table.add_column(tr("Module"), no_wrap=True)  # query, key and value differ only in the last word
    table.add_column(tr("Type"))
    table.add_column(tr("Layers"), justify="right")
    table.add_column(tr("Pattern"))
    table.add_column(tr("Mixes"))
    table.add_column(tr("Off-diagonal strength"), justify="right")
    for local, modules in groups.items():
        layers = [m.layer for m in modules]
        patterns = {(m.pattern, m.band, m.blocks) for m in modules}
        if len(patterns) == 1:
            pattern = pattern_name(modules[0].pattern, lang, modules[0].band, modules[0].blocks)
        else:
            pattern = "; ".join(f"{pattern_name(m.pattern, lang, m.band, m.blocks)} ({m.layer})" for m in modules)
        mixing = [m.layer for m in modules if m.mixes]
        if not mixing:
            mixes = tr("no")
        elif len(mixing) == len(modules):
            mixes = tr("yes")
        else:
            mixes = tr("layers {layers}").format(layers=_span(mixing))
        if mixing:
            strength = "≥ " + format_number(min(m.min_off_diagonal for m in modules if m.mixes), lang)
        else:
            strength = format_number(max(m.max_off_diagonal for m in modules), lang)
        name = local or tr("(the whole layer)")
        style = "bold" if mixing else ""
        table.add_row(Text(name, style=style), modules[0].kind, DASH if layers == [0] else _span(layers),
                      Text(pattern, style=style), Text(mixes, style=style), strength)
    return table


def _batch_caption(result: ModelResult, lang: str) -> str:
    """For a batch: each sequence measured on its own real positions, padding never read."""
    if len(result.windows) < 2:
        return ""
    tr = translator(lang)
    return " " + tr("{B} sequences in one padded batch, each measured on its own positions: a padded position is "
                    "never a source or a target.").format(B=format_integer(len(result.windows), lang))


def _switch_words(result: ModelResult, lang: str) -> str:
    """How the positions were switched off, in words."""
    tr = translator(lang)
    if result.position_switch.startswith("rotary"):
        return tr("the rotary rotation made the identity")
    return tr("the position vectors set to 0")


def _depth_name(depth: int, lang: str) -> str:
    tr = translator(lang)
    return tr("embeddings") if depth == 0 else tr("layer {layer}").format(layer=depth)


def _order_cells(check: OrderCheck, depth: int, lang: str) -> tuple[str, str]:
    tr = translator(lang)
    row = check.depths[depth]
    said = row.verdict
    if said.startswith("cannot tell at "):  # within the depth's own rounding, not settled in float64
        verdict = tr("cannot tell at {dtype}").format(dtype=said.removeprefix("cannot tell at "))
    else:
        verdict = tr("moved with the tokens") if said == "holds" else tr("changed")
    which = f" #{row.sequence}" if len(check.sequences) > 1 else ""
    return f"{format_number(row.max_abs_change, lang)} ({format_number(row.tolerance, lang)}){which}", verdict


def order_table(result: ModelResult, lang: str = "en") -> Table:
    """max |f(x[π]) − f(x)[π]| at every depth, without and with the position vectors (L10)."""
    tr = translator(lang)
    off, on = result.order_without_positions, result.order_with_positions
    caption = tr("max |f(x[π]) − f(x)[π]| over every row and feature of a depth's output, beside the rounding "
                 "tolerance 64·eps·max(1, max |f|)·√T in brackets; {dtype}, eval mode.").format(dtype=result.dtype)
    caption += " " + tr("Positions off: {how}.").format(how=_switch_words(result, lang))
    if result.softmax_below_dtype:
        caption += " " + tr("The softmax runs in {softmax} inside this {dtype} model (measured: the rows of α sum to 1 "
                            "within {error}), so each tolerance is {softmax}'s.").format(
            softmax=result.softmax_dtype, dtype=result.dtype,
            error=format_number(result.attention.max_row_sum_error, lang))
    if len(off.sequences) > 1:
        caption += " " + tr("Each sequence is shuffled on its own real positions; #k is the sequence that decides "
                            "the row (one that changed, else the closest to its tolerance).")
    table = FittedTable(title=tr("Order (L10): the {T} tokens shuffled by one permutation (seed {seed})").format(
        T=format_integer(result.T, lang), seed=result.seed) if len(off.sequences) < 2 else tr(
        "Order (L10): each sequence's tokens shuffled by one permutation (seed {seed})").format(seed=result.seed),
        title_justify="left", caption_justify="left", caption=caption)
    table.add_column(tr("Output of"))
    table.add_column(tr("Positions off: max |Δ| (tolerance)"), justify="right")
    table.add_column(tr("Verdict"))
    table.add_column(tr("Positions on: max |Δ| (tolerance)"), justify="right")
    table.add_column(tr("Verdict"))
    for depth in range(len(off.depths)):
        table.add_row(_depth_name(depth, lang), *_order_cells(off, depth, lang), *_order_cells(on, depth, lang))
    return table


def _with_specials(pieces: tuple[str, ...], lang: str) -> str:
    """"with [CLS] and [SEP]", "with no special tokens"."""
    tr = translator(lang)
    if not pieces:
        return tr("with no special tokens")
    if len(pieces) == 1:
        return tr("with {piece}").format(piece=pieces[0])
    return tr("with {pieces} and {last}").format(pieces=", ".join(pieces[:-1]), last=pieces[-1])


def _window_sentence(result: ModelResult, lang: str) -> str:
    tr = translator(lang)
    first = result.windows[0] if result.windows else None
    values = dict(source=format_source(result.source, lang), model=result.model, T=format_integer(result.T, lang),
                  kept=format_integer(result.kept_pieces, lang), total=format_integer(result.text_pieces, lang),
                  chars=format_integer(result.window_chars, lang), text_chars=format_integer(result.text_chars, lang),
                  limit=format_integer(result.max_positions, lang),
                  specials=_with_specials(first.special_pieces if first else ("[CLS]", "[SEP]"), lang))
    if result.windowed and result.kept_pieces == 1:
        said = tr("{source}: the window holds only the first of the text's {total} word pieces (characters 1 to "
                  "{chars} of {text_chars}), T = {T} positions {specials}; the rest of the text is left out "
                  "({model} reads at most {limit} positions).").format(**values)
    elif result.windowed:
        said = tr("{source}: the window holds the first {kept} of the text's {total} word pieces (characters 1 to "
                  "{chars} of {text_chars}), T = {T} positions {specials}; the rest of the text is left out "
                  "({model} reads at most {limit} positions).").format(**values)
    elif result.text_pieces == 1:
        said = tr("{source}: the text's only word piece, T = {T} positions {specials} ({model} reads at most "
                  "{limit}).").format(**values)
    else:
        said = tr("{source}: all {total} word pieces of the text, T = {T} positions {specials} ({model} reads at "
                  "most {limit}).").format(**values)
    if len(result.windows) > 1:
        said += " " + tr("That is the first of {B} sequences, of {lengths} positions, run as one batch padded to {T} "
                         "with its attention mask; padded positions are never measured.").format(
            B=format_integer(len(result.windows), lang), T=format_integer(result.padded_T, lang),
            lengths=", ".join(format_integer(len(window), lang) for window in result.windows))
    return said + _keyless_sentence(result, lang)


def _keyless_sentence(result: ModelResult, lang: str) -> str:
    """" Queries that read no key …" naming each sequence's keyless positions (1-based), or ``""`` when none."""
    tr = translator(lang)
    where = []
    for b, positions in enumerate(result.keyless, 1):
        if positions:
            text = _span([q + 1 for q in positions])
            where.append((tr("position {positions} of sequence {b}") if len(positions) == 1 else
                          tr("positions {positions} of sequence {b}")).format(positions=text,
                                                                              b=format_integer(b, lang)))
    if not where:
        return ""
    return " " + tr("Queries that read no key at all (every key masked), {where}: their attention weights are taken as "
                    "0, PyTorch's rule for such a row (as its scaled_dot_product_attention does), so they contribute "
                    "nothing.").format(where="; ".join(where))


def _mixing_sentence(result: ModelResult, lang: str) -> str:
    tr = translator(lang)
    mixing = [m for m in result.modules if m.mixes]
    attention_only = all(m.mixes == m.contains_attention for m in result.modules)
    values = dict(mixing=format_integer(len(mixing), lang), total=format_integer(len(result.modules), lang),
                  rest=format_integer(len(result.modules) - len(mixing), lang))
    if attention_only and mixing and result.kind == "all-to-all":
        return tr("As the lesson says (L11): of the {total} modules measured, the {mixing} that mix positions are "
                  "exactly those that contain an attention, and each mixes all-to-all, as an encoder's "
                  "self-attention does; the other {rest} act on one row at a time.").format(**values)
    if attention_only and mixing and result.kind == "causal":
        return tr("As the lesson says of a decoder (L11): of the {total} modules measured, the {mixing} that mix "
                  "positions are exactly those that contain an attention, and each mixes causally (row i reads rows "
                  "1 to i only), as masked self-attention does; the other {rest} act on one row at a "
                  "time.").format(**values)
    if attention_only and mixing and result.kind == BAND:
        return tr("As the lesson says (L11): of the {total} modules measured, the {mixing} that mix positions are "
                  "exactly those that contain an attention, and each reads the same {band}, the window its attention "
                  "is restricted to; the other {rest} act on one row at a time.").format(
            band=band_text(result.band, lang), **values)
    if attention_only and mixing and result.kind == BLOCKS:
        return tr("As the lesson says (L11): of the {total} modules measured, the {mixing} that mix positions are "
                  "exactly those that contain an attention, and each reads the same {blocks}, the blocks its attention "
                  "is restricted to; the other {rest} act on one row at a time.").format(
            blocks=blocks_text(result.blocks, lang), **values)
    if not mixing:
        return tr("Not as the lesson says (L11): none of the {total} modules measured mixes positions, not even those "
                  "that contain an attention; see the table.").format(**values)
    if not attention_only:
        values.update(without=format_integer(sum(m.mixes and not m.contains_attention for m in result.modules), lang),
                      idle=format_integer(sum(m.contains_attention and not m.mixes for m in result.modules), lang))
        return tr("Not as the lesson says (L11): of the {total} modules measured, {without} mix positions without "
                  "containing an attention and {idle} contain an attention but act on one row at a time; see the "
                  "table.").format(**values)
    ways = list(dict.fromkeys(pattern_name(m.pattern, lang, m.band, m.blocks) if m.pattern != DIFFERS else
                              "; ".join(pattern_name(p, lang) for p in m.patterns) for m in mixing))
    return tr("Not one pattern (L11): the {mixing} modules that mix positions are exactly those that contain an "
              "attention, but they do not all mix the same way: {ways}; see the table.").format(
        ways="; ".join(ways), **values)


def _undecided_sentence(result: ModelResult, lang: str) -> list[str]:
    """What an all-to-all or causal reading cannot decide, with the figure it lacks: a window or blocks as wide as the
    T_m measured positions, or wider, read the same there (empty when the model reads no more than T_m positions,
    or the reading is a band or blocks, whose size the measurement gives)."""
    if result.kind not in ("all-to-all", "causal") or result.mixing_tokens >= result.max_positions:
        return []
    tr = translator(lang)
    return [tr("Read on the first {T} positions: an attention restricted to a window or to blocks of {T} positions or "
               "more reads the same there, so these figures cannot tell it from full attention; the width such a window "
               "would have is the figure they lack (more positions, with --mixing-tokens and a longer text, would "
               "show it).").format(T=format_integer(result.mixing_tokens, lang))]


def _closest_depth(check: OrderCheck):
    """The depth whose change comes closest to its own tolerance (largest |Δ| / tolerance)."""
    return max(check.depths, key=lambda row: row.max_abs_change / row.tolerance if row.tolerance else math.inf)


def _order_sentence(result: ModelResult, lang: str) -> str:
    """L10 in a sentence; each |Δ| is named with the tolerance of its own depth."""
    tr = translator(lang)
    off, on = result.order_without_positions, result.order_with_positions
    last = len(on.depths) - 1
    closest = _closest_depth(off)
    values = dict(how=_switch_words(result, lang), depth=_depth_name(closest.depth, lang),
                  off=format_number(closest.max_abs_change, lang), tol=format_number(closest.tolerance, lang),
                  layer=last, on=format_number(on.depths[last].max_abs_change, lang))
    unsettled = [row for row in (*off.depths, *on.depths) if row.verdict.startswith("cannot tell at ")]
    if unsettled and result.softmax_below_dtype:
        return tr("The order test cannot tell (L10): this model computes its softmax in {softmax} (the rows of α sum "
                  "to 1 within {error}), and the change of {depth}, {change}, lies within {softmax} rounding "
                  "({tol}); no float64 rerun computes that softmax better.").format(
            softmax=result.softmax_dtype, error=format_number(result.attention.max_row_sum_error, lang),
            depth=_depth_name(unsettled[0].depth, lang), change=format_number(unsettled[0].max_abs_change, lang),
            tol=format_number(unsettled[0].tolerance, lang))
    if unsettled:
        return tr("The order test cannot tell (L10): at {dtype} the change of {depth}, {change}, lies within its own "
                  "rounding and the float64 rerun does not settle it, so this run does not show that shuffling only "
                  "moves the rows.").format(dtype=result.dtype, depth=_depth_name(unsettled[0].depth, lang),
                                            change=format_number(unsettled[0].max_abs_change, lang))
    if result.kind not in ("causal", BAND, BLOCKS) and all(row.holds is True for row in off.depths) \
            and on.depths[last].holds is False:
        return tr("As the lesson says (L10): with the positions off ({how}), shuffling the tokens only shuffled "
                  "every layer's output rows, each depth within its own rounding tolerance (closest to it: {depth}, "
                  "max |Δ| = {off} against a tolerance of {tol}); with them on, the output of layer {layer} changed "
                  "by up to {on}. Only the positions tell this model the order.").format(**values)
    if result.kind == "causal" and off.depths[last].holds is False and on.depths[last].holds is False:
        values.update(depth=_depth_name(last, lang), off=format_number(off.depths[last].max_abs_change, lang),
                      tol=format_number(off.depths[last].tolerance, lang))
        return tr("As the lesson says of a decoder (L10): even with the positions off ({how}), shuffling the tokens "
                  "changed the output of {depth} by up to {off} against a tolerance of {tol}: row i reads rows 1 to i "
                  "only, so the causal mask itself tells the model the order; with the positions on, layer {layer} "
                  "changed by up to {on}.").format(**values)
    if result.kind in (BLOCKS, BAND) and off.depths[last].holds is False and on.depths[last].holds is False:
        reads = (tr("only its own block, in {blocks}").format(blocks=blocks_text(result.blocks, lang))
                 if result.kind == BLOCKS else tr("only a {band}").format(band=band_text(result.band, lang)))
        values.update(depth=_depth_name(last, lang), off=format_number(off.depths[last].max_abs_change, lang),
                      tol=format_number(off.depths[last].tolerance, lang), reads=reads)
        return tr("As the lesson says of a masked attention (L10): even with the positions off ({how}), shuffling the "
                  "tokens changed the output of {depth} by up to {off} against a tolerance of {tol}: each row reads "
                  "{reads}, so the mask itself tells the model the order; with the positions on, layer {layer} "
                  "changed by up to {on}.").format(**values)
    return tr("Not as the lesson says (L10): with the positions off ({how}), {depth} changed by {off} against a "
              "tolerance of {tol} there (the largest change for its tolerance); with them on, layer {layer} changed "
              "by {on}; see the table.").format(**values)


def _attention_sentences(result: ModelResult, lang: str) -> list[str]:
    tr = translator(lang)
    a = result.attention
    values = dict(layer=a.layer, head=a.head, T=format_integer(result.T, lang),
                  alpha=format_number(a.alpha_T1, lang), uniform=format_number(a.uniform, lang),
                  first=result.pieces[0], last=result.pieces[result.T - 1], module=a.module,
                  products=plural_translator(lang)("{count} product", "{count} products", a.recurrence_steps).format(
                      count=format_integer(a.recurrence_steps, lang)),  # a decoder on two tokens: "1 product"
                  reach=format_number(a.reach_T1, lang),
                  error=format_number(a.max_row_sum_error, lang))
    if a.alpha_T1 == 0:  # exactly 0 (a window, a local pattern): no path in this head, not "one weight"
        sentences = [tr("Not as the lesson says (L4): in layer {layer}, head {head}, position 1 ({first}) has no path "
                        "into the output of position {T} ({last}): its weight α_T1 is exactly 0 (an even spread "
                        "would give {uniform}), so this head does not connect them in one step.").format(**values)]
    else:
        sentences = [tr("Layer {layer}, head {head} (L4): position 1 ({first}) enters the output of position {T} "
                        "({last}) through one weight, α_T1 = {alpha} (an even spread would give {uniform}); a "
                        "recurrence would put {products} by W_hh on that path.").format(**values)]
    if a.alpha_T1 == 0 and a.reach_T1 == 0 and a.reach_scope == "module":
        reach = tr("Measured backwards: ‖∂y_T/∂x_1‖ of that layer's attention module ({module}, every head and its "
                   "output projection) is exactly 0 as well.").format(**values)
    elif a.alpha_T1 == 0 and a.reach_T1 == 0:
        reach = tr("Measured backwards: ‖∂c_T/∂x_1‖ of that head through that module is exactly 0 as well.")
    elif a.reach_T1 > 0 and a.reach_scope == "module":
        reach = tr("Measured backwards: ‖∂y_T/∂x_1‖ of that layer's attention module ({module}, every head and its "
                   "output projection) is {reach}, not zero.").format(**values)
    elif a.reach_T1 > 0:
        reach = tr("Measured backwards: ‖∂c_T/∂x_1‖ of that head through that one module is {reach}, not "
                   "zero.").format(**values)
    else:
        reach = tr("Not as the lesson says (L4): ‖∂c_T/∂x_1‖ of that head through that module measured "
                   "exactly 0.")
    sums = tr("Every row of α sums to 1 within {error}.").format(**values) if a.max_row_sum_error else \
        tr("Every row of α sums to exactly 1.")
    sentences.append(f"{reach} {sums}")
    return sentences


def run_line(result: ModelResult, lang: str = "en") -> str:
    """How it was measured: model sizes, dtype, seed, threads and versions."""
    tr = translator(lang)
    torch_version, transformers_version = result.versions
    ngettext = plural_translator(lang, DOMAIN)  # a checkpoint of your own may have 1 layer or 1 head
    threads = tr("1 thread") if result.threads == 1 else tr("{count} threads").format(count=result.threads)
    return tr("{model} ({architecture}): {layers}, {heads}, d_model = {d}; {dtype}, eval mode, eager "
              "attention; seed {seed}; {threads}; PyTorch {torch}, transformers {transformers}.").format(
        model=result.model, architecture=result.architecture,
        layers=ngettext("{count} layer", "{count} layers", result.layers).format(count=result.layers),
        heads=ngettext("{count} head", "{count} heads", result.heads).format(count=result.heads),
        d=result.d_model, dtype=result.dtype, seed=result.seed, threads=threads, torch=torch_version,
        transformers=transformers_version)


def model_sentences(result: ModelResult, lang: str = "en", figures: tuple[Path, ...] = ()) -> list[str]:
    """The plain sentences of the report, with the heat map's files when there are some."""
    tr = translator(lang)
    sentences = [_window_sentence(result, lang), _mixing_sentence(result, lang), *_undecided_sentence(result, lang),
                 _order_sentence(result, lang), *_attention_sentences(result, lang)]
    if result.unmeasured:
        sentences.append(tr("Not measured (named, not skipped): {modules}.").format(
            modules="; ".join(result.unmeasured)))
    if figures:
        sentences.append(tr("Heat map of α: {files}").format(files=", ".join(str(path) for path in figures)))
    sentences.append(run_line(result, lang))
    return sentences


def render_model(result: ModelResult, lang: str = "en", figures: tuple[Path, ...] = ()) -> Group:
    """The report as one Rich renderable: the title, both tables and the sentences."""
    tr = translator(lang)
    title = Text(tr("A trained Transformer under the microscope: {model}").format(model=result.model), style="bold")
    return Group(title, mixing_table(result, lang), order_table(result, lang),
                 *(Text(sentence) for sentence in model_sentences(result, lang, figures)))


def model_json(result: ModelResult) -> str:
    """The whole result (every module, both order checks, α) as JSON: indented, each row of α on one line."""
    from seqlab.render.json_output import compact_json, to_jsonable, versioned

    return compact_json(versioned({**to_jsonable(result), "kind": result.kind}, "model"))


from seqlab.render.model_plot import MAX_TICKS, plot_attention, write_attention_plot  # noqa: E402,F401
