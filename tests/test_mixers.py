"""The one mixer registry (seqlab.layers.mixers): a toy mixer registered here, once, appears everywhere mixers are
listed (table1 --modern rows and names, decode machines and labels, their closed forms), and is gone after
unregistering; a broken mixer module fails with its own ImportError, only a missing optional package reads
"not installed"."""

from __future__ import annotations

import io
import sys

import pytest
import torch
from rich.console import Console
from typer.testing import CliRunner

from seqlab.cli import app
from seqlab.errors import SeqlabError
from seqlab.layers import mixers
from seqlab.measure import decode
from seqlab.render.decode import machine_label
from seqlab.render.table1_modern import render_modern, row_name
from seqlab.studies import table1_modern_rows
from seqlab.studies.table1_modern import ModernConfig, run_modern

TINY = {"lengths": (8, 16, 32), "long_lengths": (16, 32, 64), "d_model": 4}


class ToyAccumulator(torch.nn.Module):
    """h_t = h_{t-1} + W x_t, y_t = h_t: a running sum of projected inputs, one d×d product per position."""

    def __init__(self, d_model: int, *, generator: torch.Generator | None = None,
                 dtype: torch.dtype = torch.float32) -> None:
        super().__init__()
        self.d_model = d_model
        self.weight = torch.nn.Parameter(torch.randn(d_model, d_model, generator=generator, dtype=dtype) / d_model)

    def multiplications(self, T: int, batch: int = 1) -> int:
        return batch * toy_multiplications(T, self.d_model)

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # (B, T, d) -> (B, T, d)
        h, outputs = torch.zeros_like(x[:, 0]), []
        for t in range(x.shape[1]):
            h = h + x[:, t] @ self.weight.T  # (B, d)
            outputs.append(h)
        return torch.stack(outputs, dim=1)

    def initial_state(self, batch: int, *, dtype: torch.dtype | None = None) -> tuple[torch.Tensor]:
        return (torch.zeros(batch, self.d_model, dtype=dtype or self.weight.dtype),)

    def step(self, x_t: torch.Tensor, state: tuple[torch.Tensor]) -> tuple[torch.Tensor, tuple[torch.Tensor]]:
        h = state[0] + x_t @ self.weight.T  # (B, d)
        return h, (h,)


def toy_multiplications(T: int, d: int) -> int:
    return T * d * d  # one d×d product per position


TOY = mixers.Mixer(
    "toy_accumulator", __name__, "ToyAccumulator",
    rows=(mixers.MixerRow("toy_loop", "Toy accumulator, loop", {}, ("O(T·d²)", "linear"), ("O(T)", "linear"),
                          ("O(T)", "linear"), ("O(T·d)", "linear"), ("O(d²)", "constant"), ("O(d)", "constant"),
                          "this test"),),
    decode=mixers.DecodeMachine("toy accumulator", fixed_state=True,
                                step_multiplications=lambda d, batch: batch * toy_multiplications(1, d)))


@pytest.fixture
def toy():
    """The toy mixer, registered for one test (its one registration) and unregistered after it."""
    assert sys.modules[__name__].ToyAccumulator is ToyAccumulator  # the registry finds the class by module name
    mixers.register(TOY)
    try:
        yield TOY
    finally:
        mixers.unregister(TOY.name)


def test_the_shipped_mixers_and_their_rows():
    assert [m.name for m in mixers.mixers()] == ["linear_attention", "diagonal_recurrence", "selective_recurrence",
                                                 "sliding_window", "mamba_block"]
    assert list(table1_modern_rows.ROWS)[5:] == list(mixers.mixer_rows()) == list(table1_modern_rows.modern_rows())
    assert tuple(decode.MACHINES) == ("elman", "attention_kv_cache", "attention_static_cache", "attention_no_cache",
                                      "linear_attention", "selective_recurrence", "mamba_block")
    assert tuple(decode.FIXED_STATE) == ("elman", "linear_attention", "selective_recurrence", "mamba_block")


def test_a_toy_mixer_appears_everywhere_mixers_are_listed(toy):
    assert "toy_loop" in table1_modern_rows.ROWS and list(table1_modern_rows.ROWS)[-1] == "toy_loop"
    assert table1_modern_rows.row_available("toy_loop")
    assert row_name("toy_loop", None, "en") == "Toy accumulator, loop"
    assert decode.MACHINES[-1] == "toy_accumulator" and "toy_accumulator" in decode.FIXED_STATE
    assert "toy_accumulator" in decode.available_machines()
    assert machine_label("toy_accumulator") == "toy accumulator"
    assert decode.check_machine("toy_accumulator") == "toy_accumulator"


def test_the_toy_decode_step_is_counted_and_matches_its_closed_form(toy):
    step = decode.measure_decode_step("toy_accumulator", 8, d_model=4, time=False)
    assert (step.multiplications, step.closed_form) == (16, 16)  # 4 * 4: one d×d product per step
    assert step.state_bytes == 4 * 4  # h: 4 float32 values, whatever t


def test_the_toy_row_is_measured_by_table1_modern(toy):
    result = run_modern(ModernConfig(rows=("elman", "toy_loop"), **TINY))
    assert [row.row for row in result.rows] == ["elman", "toy_loop"] and result.missing == ()
    row = result.rows[1]
    assert [s.multiplications for s in row.long] == [s.closed_form for s in row.long] == [256, 512, 1024]  # T * 16
    assert [s.decode_multiplications for s in row.long] == [16, 16, 16]  # d²: the toy's machine, fixed in t
    assert row.work.matches and row.decode.matches and row.state.matches
    console = Console(width=240, record=True, file=io.StringIO())
    console.print(render_modern(result, "en"))
    assert "Toy accumulator, loop" in console.export_text()


def test_the_toy_machine_is_a_decode_option(toy):
    result = CliRunner().invoke(app, ["decode", "--machines", "elman,toy_accumulator", "--positions", "4,8,16",
                                      "--d-model", "4", "--no-time", "--json"])
    assert result.exit_code == 0, result.output
    assert '"machine": "toy_accumulator"' in result.output


def test_unregistering_removes_it_everywhere():
    mixers.register(TOY)
    mixers.unregister(TOY.name)
    assert "toy_loop" not in table1_modern_rows.ROWS and "toy_accumulator" not in decode.MACHINES
    with pytest.raises(SeqlabError, match="machine must be one of"):
        decode.check_machine("toy_accumulator")
    with pytest.raises(SeqlabError, match="no mixer named"):
        mixers.unregister(TOY.name)


def test_a_name_is_registered_once(toy):
    with pytest.raises(SeqlabError, match="already registered"):
        mixers.register(TOY)


def _broken_module(tmp_path, monkeypatch, name: str) -> None:
    (tmp_path / f"{name}.py").write_text("import seqlab_no_such_package_abc  # noqa: F401\n\nclass Broken: pass\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, name, raising=False)


def _with_module(name: str, requires: tuple[str, ...]) -> mixers.Mixer:
    return mixers.Mixer(TOY.name, name, "Broken", rows=TOY.rows, decode=TOY.decode, requires=requires)


def test_a_broken_mixer_module_fails_with_its_own_import_error(tmp_path, monkeypatch):
    _broken_module(tmp_path, monkeypatch, "seqlab_toy_broken_a")
    mixers.register(_with_module("seqlab_toy_broken_a", ()))
    try:
        with pytest.raises(ModuleNotFoundError, match="seqlab_no_such_package_abc"):
            table1_modern_rows.row_available("toy_loop")
        with pytest.raises(ModuleNotFoundError, match="seqlab_no_such_package_abc"):
            decode.available_machines()
    finally:
        mixers.unregister(TOY.name)


def test_only_a_missing_required_package_reads_not_installed(tmp_path, monkeypatch):
    _broken_module(tmp_path, monkeypatch, "seqlab_toy_broken_b")
    mixers.register(_with_module("seqlab_toy_broken_b", ("seqlab_no_such_package_abc",)))
    try:
        assert not table1_modern_rows.row_available("toy_loop")
        assert "toy_accumulator" not in decode.available_machines()
        with pytest.raises(SeqlabError, match="needs seqlab_no_such_package_abc, which is not installed"):
            decode.check_machine("toy_accumulator")
        result = run_modern(ModernConfig(rows=("elman", "toy_loop"), **TINY))
        assert [row.row for row in result.rows] == ["elman"] and result.missing == ("toy_loop",)
    finally:
        mixers.unregister(TOY.name)
