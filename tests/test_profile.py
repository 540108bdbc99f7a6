"""``seqlab.profile`` and ``seqlab profile`` (seqlab.studies.profile): work, span and path of any module.

The CLI imports its factory by name from ``example_layers`` (this folder, put on ``sys.path``).
"""

from __future__ import annotations

import dataclasses
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from rich.console import Console
from torch import nn
from typer.testing import CliRunner

import seqlab
from seqlab.cli import app
from seqlab.errors import SeqlabError
from seqlab.layers.attention import SelfAttention
from seqlab.layers.recurrent import ElmanRNN
from seqlab.render.json_output import to_json
from seqlab.render.table1 import profile_table
from seqlab.studies.profile import ProfileResult, build_from_factory, load_factory, profile

TESTS = Path(__file__).resolve().parent
ENV = {"COLUMNS": "200", "NO_COLOR": "1", "FORCE_COLOR": None, "TTY_COMPATIBLE": None}


@pytest.fixture()
def example_layers(monkeypatch):
    monkeypatch.syspath_prepend(str(TESTS))
    import example_layers

    return example_layers


@pytest.fixture()
def run(example_layers):
    def invoke(*args: str):
        return CliRunner().invoke(app, ["profile", *args], env=ENV)

    return invoke


# --- The Python API -------------------------------------------------------------------------------------

def test_lazy_export_keeps_import_light():
    code = "import sys, seqlab; assert 'torch' not in sys.modules; seqlab.profile; assert 'torch' in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)
    assert seqlab.profile is profile
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        seqlab.nope  # noqa: B018


def test_elman_rnn():
    result = seqlab.profile(ElmanRNN(4, 4), torch.randn(1, 7, 4))
    assert isinstance(result, ProfileResult)
    assert result.multiplications == 7 * (16 + 16)  # T (d_h² + d_h d_model) = 224
    assert (result.span_products, result.span_ops) == (7, 28)  # 4 ops per step: mm, add, add, tanh
    path = result.path
    assert path.sources == (0, 6)
    assert (path.first_to_last_products, path.first_to_last_ops) == (7, 28)  # j - i + 1 products
    assert (path.last_to_first_products, path.last_to_first_ops) == (None, None)  # never backwards
    assert path.longest_products == 7 and path.fallbacks == {}
    assert result.unaccounted == {} and result.fused == {} and result.complete
    assert (result.T, result.d_model, result.shape, result.dtype) == (7, 4, (1, 7, 4), "float32")


def test_traces_run_on_one_thread_and_restore_the_setting():
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        assert profile(nn.Linear(3, 3), torch.randn(1, 4, 3)).threads == 1
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)


def test_self_attention_and_all_sources():
    layer = SelfAttention(8, generator=torch.Generator().manual_seed(0))
    result = profile(layer, torch.randn(1, 6, 8), sources="all")  # returns (outputs, weights): outputs read
    assert result.path.sources == tuple(range(6))
    assert result.path.longest_products == result.path.first_to_last_products == 2  # W_v, then A V (L4)
    assert result.span_products == 3  # a projection, Q Kᵀ, A V
    assert result.multiplications == 6 * 8 * 24 + 6 * 6 * 16  # projections 2_304 + attention 576


def test_library_module_with_a_tuple_output(example_layers):
    result = profile(example_layers.make_rnn(4), torch.randn(2, 5, 4), sources=[1, 3])
    assert result.multiplications == 2 * 5 * (16 + 16)  # B T (d² + d²) = 320
    assert result.path.sources == (1, 3)
    assert result.path.first_to_last_products is None  # 0 was not measured
    assert result.path.longest_products == 4  # from 1 to 4: 4 - 1 + 1


def test_measured_in_eval_mode_and_mode_restored(example_layers):
    module = example_layers.make_layer(8).train()
    first = profile(module, torch.randn(1, 10, 8))
    assert module.training  # put back
    assert first.multiplications == 3 * 10 * 64 + 10 * 8 * 24 + 10 * 10 * 16 + 10 * 64  # conv, in-proj, SDPA, out
    assert first.path.first_to_last_products == 4  # conv, in-projection (v), A V, out-projection
    assert profile(module, torch.randn(1, 10, 8)) == first  # dropout off: the same every time


# --- What cannot be measured is said ------------------------------------------------------------------

def test_a_module_the_engine_cannot_trace_names_the_op(example_layers):
    with pytest.raises(SeqlabError, match=r"cannot trace SparseMix: the path tracer follows dense \(strided\) tensors "
                                          r"only; aten\._to_sparse met a tensor of layout sparse_coo") as error:
        profile(example_layers.make_sparse(4), torch.randn(1, 5, 4))
    assert error.value.parameter == "module"


def _printed(table) -> str:
    from rich.console import Console

    console = Console(width=200, record=True, file=io.StringIO())
    console.print(table)
    return console.export_text()


class _Distances(nn.Module):
    def forward(self, x):
        return torch.cdist(x, x)  # (B, T, T): no path rule, no decomposition: derived from its Jacobian


def test_an_op_without_rule_is_derived_and_named():
    result = profile(_Distances(), torch.randn(1, 4, 3))
    assert result.path.fallbacks == {} and result.path.derived == {"aten._cdist_forward": 1} and result.path.exact
    assert result.path.first_to_last_products == 0
    text = _printed(profile_table(result))
    assert "Ops whose dependence comes from their own Jacobian" in text and "aten._cdist_forward ×1" in text
    assert "a bound" not in text


@pytest.mark.parametrize("lang", ["en", "es"])
def test_refused_ops_are_named_and_their_paths_printed_as_bounds(monkeypatch, lang):
    from seqlab.measure import jacobian_rule

    monkeypatch.setattr(jacobian_rule, "LIMIT", 0)  # no Jacobian may be taken: cdist is refused
    result = profile(_Distances(), torch.randn(1, 4, 3))
    assert result.path.fallbacks == {"aten._cdist_forward": 1} and not result.path.exact
    assert not result.complete
    text = _printed(profile_table(result, lang))
    bound = {"en": "at least 0 products, 1 op (a bound)", "es": "al menos 0 productos, 1 operación (una cota)"}
    assert text.count(bound[lang]) == 3  # longest, 1 to T, T to 1: none printed as measured
    document = json.loads(to_json(result))
    assert document["path"]["exact"] is False and document["path"]["fallbacks"] == {"aten._cdist_forward": 1}


@pytest.mark.parametrize(("module", "x", "message"), [
    ("not a module", torch.randn(1, 4, 3), "module must be a torch.nn.Module"),
    (nn.Identity(), torch.randn(4), r"x must be a floating tensor of shape \(B, T, d\) with B, T, d >= 1"),
    (nn.Identity(), torch.ones(1, 4, 3, dtype=torch.long), "received torch.int64 tensor"),
    (nn.Linear(5, 5), torch.randn(1, 4, 3), r"Linear fails on x of shape \(1, 4, 3\)"),
    (nn.Flatten(1), torch.randn(2, 4, 3), "must return a tensor with the 4 positions on dim -2"),
])
def test_bad_module_or_input(module, x, message):
    with pytest.raises(SeqlabError, match=message):
        profile(module, x)


@pytest.mark.parametrize("sources", [[], [9], [-1], "some", [True]])
def test_bad_sources(sources):
    with pytest.raises(SeqlabError, match=r"sources must be 'all' or positions in \[0, 3\]"):
        profile(nn.Identity(), torch.randn(1, 4, 3), sources=sources)


# --- Factories ------------------------------------------------------------------------------------------

def test_load_factory(example_layers):
    assert load_factory("example_layers:make_layer") is example_layers.make_layer
    assert load_factory("torch.nn:Linear") is nn.Linear
    assert isinstance(build_from_factory("example_layers:make_rnn", 6), nn.RNN)


@pytest.mark.parametrize(("spec", "message"), [
    ("example_layers", "expected module.path:factory or path/to/file.py:factory, received 'example_layers'"),
    (":make_layer", "expected module.path:factory"),
    ("no_such_module_here:make", "cannot import 'no_such_module_here'"),
    ("example_layers:missing", "'example_layers' has no attribute 'missing'"),
    ("example_layers:NOT_CALLABLE", "is a int, not a callable factory"),
    ("example_layers:make_not_a_module", "must return a torch.nn.Module, received str"),
    ("example_layers:make_broken", r"make_broken\(4\) failed: ValueError: cannot build width 4"),
])
def test_bad_factories(example_layers, spec, message):
    with pytest.raises(SeqlabError, match=message):
        build_from_factory(spec, 4)


# --- The command line -----------------------------------------------------------------------------------

def ok(result) -> str:
    assert result.exit_code == 0, result.output
    return result.output


def test_cli_table(run):
    output = ok(run("example_layers:make_layer", "--seq-len", "16", "--d-model", "8", "--lang", "en"))
    assert "Profile of ConvThenAttention" in output
    # 3*16*64 + 16*8*24 + 16*16*16 + 16*64 = 3_072 + 3_072 + 4_096 + 1_024
    assert "│ Multiplications counted" in output and "11,264" in output
    assert "4 products, 6 ops" in output  # path from position 1 to T
    assert "input (1, 16, 8), float32; CPU threads: 1" in output


def test_cli_spanish(run):
    output = ok(run("example_layers:make_rnn", "--seq-len", "12", "--d-model", "4", "--lang", "es"))
    assert "Perfil de RNN" in output and "Camino de la posición T a la 1" in output
    assert "sin conexión" in output  # a recurrence never reaches backwards
    assert "12 productos, 36 operaciones" in output  # x_1 -> h_T through 12 products by W_hh


def test_cli_json(run):
    data = json.loads(ok(run("example_layers:make_rnn", "--seq-len", "10", "--d-model", "4", "--json",
                             "--all-sources", "--batch", "2")))
    assert data["multiplications"] == 2 * 10 * 32  # B T (d² + d²)
    assert data["shape"] == [2, 10, 4] and data["T"] == 10
    assert data["path"]["sources"] == list(range(10))
    assert data["path"]["first_to_last_products"] == 10 and data["path"]["last_to_first_products"] is None
    assert data["span_products"] == 10 and data["unaccounted"] == {}


@pytest.mark.parametrize(("args", "option", "value"), [
    (["example_layers"], "FACTORY", "'example_layers'"),
    (["example_layers:missing"], "FACTORY", "'missing'"),
    (["example_layers:make_sparse"], "FACTORY", "aten._to_sparse"),
    (["example_layers:make_pooled"], "FACTORY", "received shape (1, 8)"),
    (["example_layers:make_layer", "--seq-len", "0"], "--seq-len", "received 0"),
    (["example_layers:make_layer", "--seq-len", "abc"], "--seq-len", "'abc'"),
    (["example_layers:make_layer", "--d-model", "-1"], "--d-model", "received -1"),
    (["example_layers:make_layer", "--lang", "fr"], "--lang", "'fr'"),
])
def test_cli_bad_usage(run, args, option, value):
    defaults = ["--seq-len", "4", "--d-model", "8"]
    result = run(*defaults, *args)  # the options given last win
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output and "--help" in result.output
    errors = [line for line in result.output.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1 and errors[0].startswith(f"Error: Invalid value for '{option}'"), result.output
    assert value in errors[0]


def test_a_disagreeing_perturbation_check_makes_the_profiles_paths_a_named_bound(monkeypatch):
    """The verdict rests on the check's measurement: patch it to see a pair move that the trace calls unreachable."""
    from rich.console import Console

    from seqlab.measure import paths as paths_module
    from seqlab.measure.perturbation import PerturbationCheck
    from seqlab.render.table1 import profile_table

    rnn = torch.nn.RNN(4, 4, batch_first=True)
    x = torch.randn(1, 5, 4)
    agreed = profile(rnn, x)
    assert agreed.path.exact and agreed.path.check.agrees

    def disagreeing(layer, x, sources, select, batches, check):
        return [PerturbationCheck("finite differences", "float64", sources, ((4, 0),), (), (), ())]
    monkeypatch.setattr(paths_module, "checked", disagreeing)
    monkeypatch.setattr("seqlab.measure.traced_pass.checked", disagreeing)
    bound = profile(rnn, x)
    assert not bound.path.exact and bound.path.check.missed == ((4, 0),)
    assert bound.path.first_to_last_products == agreed.path.first_to_last_products  # the figures stay, marked
    def shown(result):
        console = Console(width=200, record=True)
        console.print(profile_table(result, "en"))
        return console.export_text()
    assert "agrees with the trace" in shown(agreed) and "(the paths are a bound)" not in shown(agreed)
    assert "1 pair(s) the trace calls unreachable move (source 4 -> output 0 first)" in shown(bound)
    assert "(the paths are a bound)" in shown(bound)


# --- A trace that fails names its op; one that succeeds runs without the recorder ---------------------------------

class _TanhFails:
    """Makes the traced pass fail inside aten.tanh (as an engine failure would), only while patched."""

    def __init__(self, monkeypatch):
        from seqlab.measure.traced_pass import TracedPass

        original = TracedPass.__torch_dispatch__

        def failing(mode, func, types, args=(), kwargs=None):
            if func.overloadpacket.__name__ == "tanh":
                raise RuntimeError("engine broke here")
            return original(mode, func, types, args, kwargs)

        monkeypatch.setattr(TracedPass, "__torch_dispatch__", failing)


@pytest.mark.parametrize("module", [ElmanRNN(3, 3, generator=torch.Generator().manual_seed(0)),
                                    nn.Sequential(nn.Linear(3, 3), nn.Tanh())])
def test_a_failing_trace_names_the_op_it_failed_in(monkeypatch, module):
    _TanhFails(monkeypatch)
    with pytest.raises(SeqlabError, match=r"the traced pass cannot trace \w+: op aten\.tanh\S* failed "
                                          r"\(RuntimeError: engine broke here\)"):
        profile(module, torch.randn(1, 4, 3))


@pytest.mark.parametrize("module", [ElmanRNN(3, 3, generator=torch.Generator().manual_seed(0)),
                                    SelfAttention(3, generator=torch.Generator().manual_seed(0))])
def test_a_trace_that_succeeds_runs_without_the_op_recorder(monkeypatch, module):
    """The recorder (a dispatch mode of its own, about 9 µs per op) is only entered to name an op that failed."""
    from seqlab.studies import profile as profile_module

    made = []
    original = profile_module._OpRecorder.__init__

    def counted(recorder):
        made.append(recorder)
        original(recorder)

    monkeypatch.setattr(profile_module._OpRecorder, "__init__", counted)
    result = profile(module, torch.randn(1, 5, 3))
    assert made == [] and result.path.first_to_last_products is not None


# --- folded from tests/test_profile_table_rows.py: ``seqlab profile``'s table: the padded bound when nested tensors r

class PaddedEncoder(nn.Module):
    """The issue's kind-3 input: a two-layer encoder on lengths [5, 2, 4] through the nested-tensor fast path."""

    def __init__(self):
        super().__init__()
        layer = nn.TransformerEncoderLayer(8, 2, 16, dropout=0, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, 2, enable_nested_tensor=True)

    def forward(self, x):  # (3, 5, 8)
        mask = torch.arange(5)[None, :] >= torch.tensor([5, 2, 4])[:, None]  # True = padding
        with torch.no_grad():
            return self.encoder(x, src_key_padding_mask=mask)


class NaNRow(nn.Module):
    """The issue's kind-1 input: attention whose third query may read no key, so its output row is NaN."""

    def __init__(self):
        super().__init__()
        self.attention = nn.MultiheadAttention(4, 2, batch_first=True, dtype=torch.float64)

    def forward(self, x):  # (1, 3, 4)
        inf = float("-inf")
        mask = torch.tensor([[0, inf, inf], [0, 0, inf], [inf, inf, inf]], dtype=torch.float64)
        return self.attention(x, x, x, attn_mask=mask, need_weights=True)[0]


def _text(table) -> str:
    console = Console(width=200, record=True, color_system=None)
    console.print(table)
    return console.export_text()


@pytest.mark.filterwarnings("ignore:The PyTorch API of nested tensors is in prototype stage")
def test_the_padded_bound_has_its_row():
    torch.manual_seed(0)
    result = profile(PaddedEncoder().eval(), torch.randn(3, 5, 8))
    assert result.multiplications == 12_704  # real tokens: each sequence run alone
    assert result.padded_multiplications == 17_760  # 3 sequences of 5: 3 × 5,920
    en, es = _text(profile_table(result, "en")), _text(profile_table(result, "es"))
    assert "Multiplications counted" in en and "12,704" in en
    assert "Multiplications with every sequence padded" in en and "17,760" in en
    assert "Multiplicaciones con cada secuencia rellenada" in es and "17.760" in es
    unpadded = dataclasses.replace(result, padded_multiplications=None)  # no nested tensor measured
    assert "every sequence padded" not in _text(profile_table(unpadded, "en"))


def test_undefined_positions_are_carried_and_shown():
    torch.manual_seed(0)
    result = profile(NaNRow().eval(), torch.randn(1, 3, 4, dtype=torch.float64), sources="all")
    assert result.path.undefined == (2,)  # 0-based: the third output row is NaN
    assert result.path.last_to_first_products is None  # no path to or from the NaN row is claimed
    en, es = _text(profile_table(result, "en")), _text(profile_table(result, "es"))
    assert "Positions whose output is undefined (NaN), no path reported" in en
    (row,) = [line for line in en.splitlines() if "undefined (NaN)" in line]
    assert row.rstrip(" │").endswith("3")  # 1-based, as the table's other positions
    assert "Posiciones cuya salida no está definida (NaN)" in es
    defined = dataclasses.replace(result, path=dataclasses.replace(result.path, undefined=()))
    assert "undefined" not in _text(profile_table(defined, "en"))
