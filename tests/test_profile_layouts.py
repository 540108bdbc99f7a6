"""``seqlab profile`` on your own module: which output is measured, where the input holds its positions, and the
inputs it refuses (issue 37, item 6).

Three kinds, each with modules from ``torch.nn`` and of our own (``examples/my_pitfalls.py``, the tutorial's):

1. a tuple, list or mapping output: the element measured is named (index, key, shape) in the result, the table and
   the JSON; ``output`` chooses another; its figures equal those of a module returning that element alone;
2. the positions dim told from the shapes: a channels-first (B, d, T) layer is measured on its positions (the same
   figures as its (B, T, d) twin that transposes inside), also at T = d; where the shapes cannot tell at T = d the
   layout must be named; a sequence-first module needs (T, B, d) named;
3. a 2-D x (no batch dim) is refused in one line.

Refusals are checked word for word in English and Spanish; the CLI exits 2 with one ``Error:`` line.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
import torch
from rich.console import Console
from torch import nn
from typer.testing import CliRunner

from seqlab.cli import app
from seqlab.errors import SeqlabError
from seqlab.render.json_output import to_json
from seqlab.render.table1 import profile_table
from seqlab.studies.profile import input_for, load_factory, profile

ROOT = Path(__file__).resolve().parents[1]
PITFALLS = ROOT / "examples" / "my_pitfalls.py"
ENV = {"COLUMNS": "200", "NO_COLOR": "1", "FORCE_COLOR": None, "TTY_COMPATIBLE": None}


def pitfall(name: str, d: int) -> nn.Module:
    torch.manual_seed(0)
    return load_factory(f"{PITFALLS}:{name}")(d)


def x_of(*shape: int) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(1))


def figures(result) -> tuple:
    """Every measured figure of a profile (work, span, paths), to compare two routes to one measurement."""
    path = result.path
    return (result.T, result.d_model, result.multiplications, result.span_ops, result.span_products,
            result.total_ops, path.longest_products, path.longest_ops, path.first_to_last_products,
            path.first_to_last_ops, path.last_to_first_products, path.last_to_first_ops, path.exact)


def printed(result, lang: str) -> str:
    console = Console(width=200, file=io.StringIO(), color_system=None)
    console.print(profile_table(result, lang))
    return console.file.getvalue()


def refusal(call) -> SeqlabError:
    with pytest.raises(SeqlabError) as error:
        call()
    return error.value


def cli(*args: str):
    return CliRunner().invoke(app, ["profile", *args], env=ENV)


def one_error(result) -> str:
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    errors = [line for line in result.output.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1, result.output
    return errors[0]


class Only(nn.Module):
    """``module``'s element ``index`` alone: the route a container output's measurement must agree with."""

    def __init__(self, module: nn.Module, index: int | str) -> None:
        super().__init__()
        self.module, self.index = module, index

    def forward(self, x):
        return self.module(x)[self.index]


class StateFirst(nn.Module):
    """Returns (h_T, outputs): the sequence is element 1."""

    def __init__(self, d: int) -> None:
        super().__init__()
        self.rnn = nn.RNN(d, d, batch_first=True)

    def forward(self, x):  # (B, T, d)
        y, h = self.rnn(x)
        return h[0], y  # (B, d), (B, T, d)


class Mapped(nn.Module):
    """Returns a dict {"scores": (B, T, T), "mixed": (B, T, d)}, as a Hugging Face output holds named fields."""

    def __init__(self, d: int) -> None:
        super().__init__()
        self.proj = nn.Linear(d, d)

    def forward(self, x):  # (B, T, d)
        scores = x @ x.transpose(1, 2)  # (B, T, T)
        return {"scores": scores, "mixed": torch.softmax(scores, -1) @ self.proj(x)}


class Transposed(nn.Module):
    """A channels-first layer made (B, T, d): the twin whose figures the (B, d, T) measurement must give."""

    def __init__(self, layer: nn.Module) -> None:
        super().__init__()
        self.layer = layer

    def forward(self, x):  # (B, T, d)
        return self.layer(x.transpose(1, 2)).transpose(1, 2)


# --- Kind 1: container outputs ------------------------------------------------------------------------------

@pytest.mark.parametrize("make", [lambda d: nn.RNN(d, d, batch_first=True), lambda d: nn.LSTM(d, d, batch_first=True),
                                  lambda d: pitfall("make_recurrence", d)], ids=["RNN", "LSTM", "DecayRecurrence"])
def test_a_tuple_output_names_its_first_element_and_measures_it(make):
    module, x = make(4), x_of(1, 5, 4)
    result = profile(module, x)
    assert (result.output_index, result.output_key, result.output_count) == (0, None, 2)
    assert result.output_shape == (1, 5, 4)
    assert figures(result) == figures(profile(Only(module, 0), x))
    assert "0 of 2, (1, 5, 4)" in printed(result, "en") and "0 de 2, (1, 5, 4)" in printed(result, "es")
    assert "Output measured (element, shape)" in result.html("en") and "0 of 2, (1, 5, 4)" in result.html("en")
    assert "Salida medida (elemento, forma)" in result.html("es")  # the notebook view, in both languages
    document = json.loads(to_json(result))
    assert (document["output_index"], document["output_key"], document["output_count"]) == (0, None, 2)
    assert document["output_shape"] == [1, 5, 4]


def test_a_tensor_output_is_named_as_such():
    result = profile(nn.Linear(4, 4), x_of(1, 5, 4))
    assert (result.output_index, result.output_key, result.output_count, result.output_shape) == \
        (None, None, None, (1, 5, 4))
    assert "the tensor returned, (1, 5, 4)" in printed(result, "en")
    assert "el tensor devuelto, (1, 5, 4)" in printed(result, "es")


@pytest.mark.parametrize(("make", "output", "key"), [(StateFirst, 1, None), (Mapped, "mixed", "mixed"),
                                                     (Mapped, 1, "mixed")], ids=["tuple", "mapping key", "mapping"])
def test_another_output_is_chosen_and_measured(make, output, key):
    torch.manual_seed(0)
    module, x = make(4), x_of(1, 6, 4)
    result = profile(module, x, output=output)
    assert (result.output_index, result.output_key, result.output_count, result.output_shape) == (1, key, 2, (1, 6, 4))
    assert figures(result) == figures(profile(Only(module, key or 1), x))
    if key is not None:  # x xᵀ: T·T·d = 144, the projection T·d² = 96, the mix T·T·d = 144
        assert result.multiplications == 6 * 6 * 4 + 6 * 16 + 6 * 6 * 4


def test_a_mapping_names_its_first_key_by_default():
    result = profile(Mapped(4), x_of(1, 6, 4))
    assert (result.output_index, result.output_key, result.output_shape) == (0, "scores", (1, 6, 6))
    assert "'scores', 0 of 2, (1, 6, 6)" in printed(result, "en")


def test_a_hugging_face_output_is_read_by_its_field():
    transformers = pytest.importorskip("transformers")
    config = transformers.GPT2Config(n_embd=8, n_layer=1, n_head=2, n_positions=16, vocab_size=10,
                                     attn_pdrop=0.0, resid_pdrop=0.0, embd_pdrop=0.0)
    torch.manual_seed(0)
    model = transformers.GPT2Model(config).eval()

    class Embedded(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, x):  # (B, T, d) -> GPT2's ModelOutput (last_hidden_state first)
            return self.model(inputs_embeds=x, use_cache=False)

    x = x_of(1, 5, 8)
    result = profile(Embedded(), x)
    assert (result.output_index, result.output_key, result.output_shape) == (0, "last_hidden_state", (1, 5, 8))
    assert figures(result) == figures(profile(Only(Embedded(), "last_hidden_state"), x))
    assert result.path.last_to_first_products is None  # causal


@pytest.mark.parametrize("lang", ["en", "es"])
def test_output_refusals_word_for_word(lang):
    words = {
        "output 1 of RNN has no dim of the 5 positions, received shape (1, 1, 4); choose another with output":
            "la salida 1 de RNN no tiene ninguna dimensión de las 5 posiciones; se recibió la forma (1, 1, 4); "
            "elige otra con output",
        "output 1 of LSTM is a tuple, not a tensor; choose another with output":
            "la salida 1 de LSTM es un tuple, no un tensor; elige otra con output",
        "output must be an index in [0, 1] of what RNN returns; received 2":
            "la salida debe ser un índice en [0, 1] de lo que devuelve RNN; se recibió 2",
        "output must be an index in [0, 1] or a key (scores, mixed) of what Mapped returns; received 'weights'":
            "la salida debe ser un índice en [0, 1] o una clave (scores, mixed) de lo que devuelve Mapped; se "
            "recibió 'weights'",
        "output 1 names an element, but Linear returns one tensor; leave output out":
            "la salida 1 nombra un elemento, pero Linear devuelve un solo tensor; no des output",
    }
    x = x_of(1, 5, 4)
    calls = [lambda: profile(nn.RNN(4, 4, batch_first=True), x, output=1),
             lambda: profile(nn.LSTM(4, 4, batch_first=True), x, output=1),
             lambda: profile(nn.RNN(4, 4, batch_first=True), x, output=2),
             lambda: profile(Mapped(4), x, output="weights"),
             lambda: profile(nn.Linear(4, 4), x, output=1)]
    for call, (english, spanish) in zip(calls, words.items()):
        error = refusal(call)
        assert error.parameter == "output"
        assert error.localized(lang) == (english if lang == "en" else spanish)


# --- Kind 2: the positions dim ---------------------------------------------------------------------------------

CHANNELS_FIRST = [lambda d: nn.Conv1d(d, d, 3, padding=1), lambda d: pitfall("make_channels_first", d)]


@pytest.mark.parametrize("T", [6, 9], ids=["T = d", "T != d"])
@pytest.mark.parametrize("make", CHANNELS_FIRST, ids=["Conv1d", "ChannelsFirstConv"])
def test_a_channels_first_layer_is_measured_on_its_positions(make, T):
    torch.manual_seed(0)
    layer, d = make(6), 6
    result = profile(layer, x_of(1, d, T))  # (B, d, T)
    assert (result.layout, result.layout_found, result.T, result.d_model, result.shape) == \
        ("bdt", "shapes", T, d, (1, d, T))
    assert figures(result) == figures(profile(Transposed(layer), x_of(1, d, T).transpose(1, 2)))
    assert result.multiplications == 3 * T * d * d  # width 3: 3 · T · d², never across the channels
    # width 3 reaches 1 (causal) or 2 positions: the ends stay apart (the "T to 1: 1 product" was channels)
    assert result.path.first_to_last_products is None and result.path.last_to_first_products is None
    assert "(B, d, T), from the shapes" in printed(result, "en")
    assert "(B, d, T), según las formas" in printed(result, "es")
    assert json.loads(to_json(result))["layout"] == "bdt"


class Halving(nn.Module):
    """A channels-first layer that halves the positions: (B, d, T) -> (B, d, T / 2)."""

    def __init__(self, d: int) -> None:
        super().__init__()
        self.conv = nn.Conv1d(d, d, 2, stride=2)

    def forward(self, x):  # (B, d, T)
        return torch.tanh(self.conv(x))


@pytest.mark.parametrize("T", [4, 8], ids=["T = d", "T != d"])
@pytest.mark.parametrize("make", [lambda d: nn.Conv1d(d, d, 2, stride=2), Halving], ids=["Conv1d", "Halving"])
def test_a_layer_that_drops_positions_is_refused_never_read_across_channels(make, T):
    module = make(4)
    error = refusal(lambda: profile(module, x_of(1, 4, T)))  # the width fails longer, T runs: T is on dim -1
    assert str(error) == f"{type(module).__name__} must return a tensor with the {T} positions on dim -1 (or a " \
                         f"tuple whose first element is one), received shape (1, 4, {T // 2})"
    assert error.parameter == "module"


@pytest.mark.parametrize("make", [lambda d: nn.RNN(d, d, batch_first=True), lambda d: pitfall("make_recurrence", d)],
                         ids=["RNN", "DecayRecurrence"])
def test_a_batch_first_layer_at_t_equal_d_is_read_as_such(make):
    result = profile(make(5), x_of(1, 5, 5))
    assert (result.layout, result.layout_found) == ("btd", "shapes")
    assert result.path.first_to_last_products is not None  # a recurrence connects 1 to T


def test_a_hugging_face_conv1d_is_a_linear_over_the_width():
    pytorch_utils = pytest.importorskip("transformers.pytorch_utils")
    torch.manual_seed(0)
    result = profile(pytorch_utils.Conv1D(5, 5), x_of(1, 5, 5))  # GPT-2's "Conv1D": x (B, T, d) @ W, despite its name
    assert (result.layout, result.layout_found, result.multiplications) == ("btd", "shapes", 5 * 5 * 5)
    assert result.path.first_to_last_products is None  # per position: no path between positions


@pytest.mark.parametrize("module", [nn.Softmax(dim=1), pitfall("make_running_mean", 6)], ids=["Softmax", "RunningMean"])
def test_t_equal_d_without_weights_needs_the_layout_named(module):
    message = f"cannot tell which dim of x (1, 6, 6) holds the positions: T = d and {type(module).__name__} runs " \
              "with either dim longer; name the layout: btd for (B, T, d) or bdt for (B, d, T)"
    error = refusal(lambda: profile(module, x_of(1, 6, 6)))
    assert str(error) == message and error.parameter == "layout"
    assert error.localized("es") == (
        "no se puede saber qué dimensión de x (1, 6, 6) guarda las posiciones: T = d y "
        f"{type(module).__name__} funciona alargando cualquiera de las dos; nombra la disposición: btd para "
        "(B, T, d) o bdt para (B, d, T)")
    named = profile(module, x_of(1, 6, 6), layout="btd")
    assert (named.layout, named.layout_found, named.T) == ("btd", "named", 6)
    by_columns = profile(module, x_of(1, 6, 6), layout="bdt")  # the other reading, named: another measurement
    assert by_columns.layout == "bdt" and by_columns.T == 6
    given = profile(module, x_of(1, 6, 5))  # T ≠ d: read as documented, and said so
    assert (given.layout, given.layout_found, given.T) == ("btd", "as_given", 6)
    assert "(B, T, d) as given (the shapes cannot tell)" in printed(given, "en")


class FixedPositions(nn.Module):
    """A learned embedding per position and a Linear: neither dim of x can grow."""

    def __init__(self, T: int, d: int) -> None:
        super().__init__()
        self.position = nn.Parameter(torch.randn(T, d))
        self.proj = nn.Linear(d, d)

    def forward(self, x):  # (B, T, d)
        return self.proj(x + self.position)


@pytest.mark.parametrize("make", [lambda: FixedPositions(4, 4),
                                  lambda: nn.Sequential(nn.Flatten(1), nn.Linear(16, 16), nn.Unflatten(1, (4, 4)))],
                         ids=["FixedPositions", "Flatten-Linear"])
def test_t_equal_d_of_fixed_sizes_needs_the_layout_named(make):
    torch.manual_seed(0)
    module = make()
    name = type(module).__name__
    error = refusal(lambda: profile(module, x_of(1, 4, 4)))
    assert str(error) == f"cannot tell which dim of x (1, 4, 4) holds the positions: T = d and {name} runs with " \
                         "neither dim longer; name the layout: btd for (B, T, d) or bdt for (B, d, T)"
    assert profile(module, x_of(1, 4, 4), layout="btd").layout_found == "named"


class SequenceFirst(nn.Module):
    """A running sum over dim 0, declaring batch_first=False as PyTorch's sequence-first modules do."""

    batch_first = False

    def __init__(self, d: int) -> None:
        super().__init__()
        self.proj = nn.Linear(d, d)

    def forward(self, x):  # (T, B, d)
        return self.proj(x).cumsum(dim=0)


@pytest.mark.parametrize("make", [lambda: nn.GRU(4, 4), lambda: SequenceFirst(4)], ids=["GRU", "SequenceFirst"])
def test_a_sequence_first_module_is_measured_with_its_layout_named(make):
    torch.manual_seed(0)
    module = make()
    name = type(module).__name__
    error = refusal(lambda: profile(module, x_of(1, 5, 4)))
    assert str(error) == f"{name} has batch_first=False: it reads x (1, 5, 4) as (T, B, d), but the positions here " \
                         "are on dim 1; pass x as (T, B, d) and name the layout tbd, or a batch_first module"
    assert error.localized("es") == (
        f"{name} tiene batch_first=False: lee x (1, 5, 4) como (T, B, d), pero aquí las posiciones están en la "
        "dimensión 1; pasa x como (T, B, d) nombrando la disposición tbd, o un módulo batch_first")
    x = x_of(1, 5, 4)  # (B, T, d)
    result = profile(module, x.transpose(0, 1).contiguous(), layout="tbd")  # (T, B, d)
    assert (result.layout, result.layout_found, result.T, result.shape) == ("tbd", "named", 5, (5, 1, 4))

    class BatchFirst(nn.Module):  # the twin: (B, T, d) in, the module run on (T, B, d)
        def __init__(self) -> None:
            super().__init__()
            self.inner = module

        def forward(self, z):
            out = self.inner(z.transpose(0, 1))
            return (out[0] if isinstance(out, tuple) else out).transpose(0, 1)

    assert figures(result) == figures(profile(BatchFirst(), x))


def test_a_layout_that_contradicts_batch_first_is_refused():
    error = refusal(lambda: profile(nn.RNN(4, 4, batch_first=True), x_of(5, 1, 4), layout="tbd"))
    assert str(error) == "RNN has batch_first=True: it reads x (5, 1, 4) as (B, T, d), not as (T, B, d); name the " \
                         "layout btd"
    assert error.localized("es") == "RNN tiene batch_first=True: lee x (5, 1, 4) como (B, T, d), no como " \
                                                "(T, B, d); nombra la disposición btd"
    error = refusal(lambda: profile(nn.Linear(4, 4), x_of(1, 5, 4), layout="tb"))
    assert str(error) == "layout must be one of btd, bdt, tbd; received 'tb'"
    assert error.localized("es") == "la disposición debe ser una de btd, bdt, tbd; se recibió 'tb'"


# --- Kind 3: a 2-D input ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("make", [lambda: nn.RNN(4, 4, batch_first=True), lambda: pitfall("make_recurrence", 4)],
                         ids=["RNN", "DecayRecurrence"])
def test_a_2d_input_is_refused_in_one_line(make):
    error = refusal(lambda: profile(make(), x_of(5, 4)))
    message = "x of shape (5, 4) has no batch dim: profile takes x (B, T, d) (or (B, d, T), (T, B, d) with the " \
              "layout named); add one with x.unsqueeze(0)"
    assert str(error) == message and error.parameter == "x"
    assert error.localized("es") == (
        "x de forma (5, 4) no tiene dimensión de lote: profile toma x (B, T, d) (o (B, d, T), (T, B, d) nombrando "
        "la disposición); añade una con x.unsqueeze(0)")


# --- The command line -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("T", [8, 12], ids=["T = d", "T != d"])
def test_cli_finds_a_channels_first_factory(T):
    result = cli(f"{PITFALLS}:make_channels_first", "--seq-len", str(T), "--d-model", "8", "--json")
    assert result.exit_code == 0, result.output
    document = json.loads(result.output)
    assert (document["layout"], document["layout_found"], document["T"], document["shape"]) == \
        ("bdt", "shapes", T, [1, 8, T])
    assert document["multiplications"] == 3 * T * 8 * 8


def test_input_for_builds_the_layout_the_module_takes():
    conv = nn.Conv1d(4, 4, 1)
    assert input_for(conv, batch=2, seq_len=6, d_model=4).shape == (2, 4, 6)  # T ≠ d: the shapes tell
    assert input_for(nn.Linear(4, 4), batch=2, seq_len=6, d_model=4).shape == (2, 6, 4)
    same = input_for(nn.GRU(4, 4), batch=2, seq_len=6, d_model=4, layout="tbd")
    assert same.shape == (6, 2, 4) and torch.equal(same.transpose(0, 1),
                                                   input_for(nn.Linear(4, 4), batch=2, seq_len=6, d_model=4))


@pytest.mark.parametrize(("args", "option", "en", "es"), [
    (["make_running_mean", "--seq-len", "8", "--d-model", "8"], "--layout",
     ("cannot tell which dim of x (1, 8, 8) holds the positions: T = d and RunningMean runs with either dim longer; "
      "name the layout: btd for (B, T, d) or bdt for (B, d, T)"),
     ("no se puede saber qué dimensión de x (1, 8, 8) guarda las posiciones: T = d y RunningMean funciona alargando "
      "cualquiera de las dos; nombra la disposición: btd para (B, T, d) o bdt para (B, d, T)")),
    (["make_recurrence", "--seq-len", "8", "--d-model", "4", "--output", "1"], "--output",
     "output 1 of DecayRecurrence has no dim of the 8 positions, received shape (1, 4); choose another with output",
     ("la salida 1 de DecayRecurrence no tiene ninguna dimensión de las 8 posiciones; se recibió la forma (1, 4); "
      "elige otra con output")),
    (["make_recurrence", "--layout", "xyz"], "--layout", "layout must be one of btd, bdt, tbd; received 'xyz'",
     "la disposición debe ser una de btd, bdt, tbd; se recibió 'xyz'"),
])
@pytest.mark.parametrize("lang", ["en", "es"])
def test_cli_refusals_exit_2_in_one_line(args, option, en, es, lang):
    line = one_error(cli(f"{PITFALLS}:{args[0]}", *args[1:], "--lang", lang))
    invalid = "Invalid value for" if lang == "en" else "Valor no válido para"
    assert line == f"Error: {invalid} '{option}': {en if lang == 'en' else es}"


def test_cli_measures_the_named_layout_and_the_chosen_output():
    named = cli(f"{PITFALLS}:make_running_mean", "--seq-len", "8", "--d-model", "8", "--layout", "btd", "--json")
    assert named.exit_code == 0, named.output
    assert json.loads(named.output)["layout_found"] == "named"
    chosen = cli(f"{PITFALLS}:make_recurrence", "--seq-len", "6", "--d-model", "4", "--output", "0")
    assert chosen.exit_code == 0, chosen.output
    assert "0 of 2, (1, 6, 4)" in chosen.output
