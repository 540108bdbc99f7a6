"""The one mixer registry (seqlab.layers.mixers): a toy mixer registered here, once, appears everywhere mixers are
listed (table1 --modern rows and names, decode machines and labels, their closed forms), and is gone after
unregistering; a broken mixer module fails with its own ImportError, only a missing optional package reads
"not installed".

The generic tests run over every registered mixer (``mixers.mixers()`` at collection, as PyTorch's ``@ops`` runs
over ``op_db``), so a new registration is checked with no new test code: its forms agree in float64 and each
form's ``step`` gives its ``forward``; counted multiplications equal its closed forms (forward and decode step);
the decode state's bytes equal a walk of its tensors and stay fixed where the row says O(1) growth; the learn
model's parameters equal their closed form; the docs' mixer table is the registry's.
Tolerance: float64, atol 1e-10 (the forms regroup the same sums; outputs are of size ~1)."""

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
from seqlab.learn import LESSON_MODELS
from seqlab.learn import models as learn_models
from seqlab.measure import decode
from seqlab.measure.work import count_multiplications
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


def test_every_list_of_mixers_is_the_registry():
    names = [m.name for m in mixers.mixers()]
    assert names[:2] == ["linear_attention", "diagonal_recurrence"] and len(set(names)) == len(names)
    assert list(table1_modern_rows.ROWS)[5:] == list(mixers.mixer_rows()) == list(table1_modern_rows.modern_rows())
    machines = tuple(name for name, _ in mixers.decode_machines())
    assert tuple(decode.MACHINES) == mixers.LESSON_MACHINES + machines
    assert tuple(decode.FIXED_STATE) == ("elman",) + tuple(name for name, m in mixers.decode_machines()
                                                           if m.decode.fixed_state)
    assert learn_models.MODELS == LESSON_MODELS + tuple(m.name for m in mixers.learn_models())
    assert all(learn_models.LABELS[m.name] == m.label for m in mixers.learn_models())


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


# --- generic: every registered mixer ------------------------------------------------------------------------------

ATOL = 1e-10
D, WINDOW, CHUNK = 6, 3, 4  # a window and a chunk smaller than T, so that the forms differ in what they compute
SHIPPED = mixers.mixers()  # every mixer registered when the tests are collected
ROWS = [(m, row) for m in SHIPPED for row in m.rows]
WITH_MACHINE = [m for m in SHIPPED if m.decode is not None]
LEARNING = [m for m in SHIPPED if m.learn is not None]


def _row_id(pair) -> str:
    return pair[1].name


def _build(m: mixers.Mixer, options, *, dtype=torch.float64, d: int = D):
    """The mixer at width d with ``options``, weights from seed 0 (the same weights whatever the form)."""
    return m.build(d, window=WINDOW, chunk=CHUNK, generator=torch.Generator().manual_seed(0), dtype=dtype,
                   **options)


def _x(T: int, batch: int = 2, dtype=torch.float64, d: int = D) -> torch.Tensor:
    return torch.randn(batch, T, d, dtype=dtype, generator=torch.Generator().manual_seed(T))  # (B, T, d)


def _stepped(module, x: torch.Tensor) -> tuple[torch.Tensor, tuple]:
    """Decode x one position at a time: the outputs (B, T, d) and the state after the last."""
    state, outputs = module.initial_state(x.shape[0], dtype=x.dtype), []
    with torch.no_grad():
        for t in range(x.shape[1]):
            y, state = module.step(x[:, t], state)  # (B, d)
            outputs.append(y)
    return torch.stack(outputs, dim=1), state


def _walk(state) -> int:
    """Bytes of a state by a walk of its tensors (nested tuples and lists too): numel × element size of each."""
    if isinstance(state, torch.Tensor):
        return state.numel() * state.element_size()
    return sum(_walk(part) for part in state)


def _without_form(options) -> tuple:
    return tuple(sorted((k, v) for k, v in options.items() if k != "form"))


@pytest.mark.parametrize("mixer", SHIPPED, ids=lambda m: m.name)
def test_its_forms_agree_in_float64_and_step_equals_forward(mixer):
    """Every form of the mixer (its rows, its decode machine's, its learn model's) on one set of weights gives the
    same outputs, and decoding step by step gives them too — at a T past the window and the chunk, not a multiple."""
    forms = [row.options for row in mixer.rows]
    forms += [o.options for o in (mixer.decode, mixer.learn) if o is not None]
    x = _x(11)
    groups: dict[tuple, list] = {}
    for options in forms:
        groups.setdefault(_without_form(options), []).append(options)
    for group in groups.values():
        reference = None
        for options in group:
            module = _build(mixer, options)
            with torch.no_grad():
                y = module(x)  # (2, 11, d)
            assert y.shape == x.shape, (mixer.name, dict(options))
            reference = y if reference is None else reference
            assert torch.allclose(y, reference, rtol=0, atol=ATOL), (mixer.name, dict(options))
            stepped, _ = _stepped(module, x)
            assert torch.allclose(stepped, y, rtol=0, atol=ATOL), (mixer.name, dict(options), "step")


@pytest.mark.parametrize("T", [5, 11])
@pytest.mark.parametrize("pair", ROWS, ids=_row_id)
def test_counted_work_of_each_row_equals_its_closed_form(pair, T):
    mixer, row = pair
    module = _build(mixer, row.options, dtype=torch.float32)
    counted = count_multiplications(module, _x(T, dtype=torch.float32))
    assert counted.complete, counted.unaccounted
    assert counted.multiplications == module.multiplications(T, batch=2)
    if mixer.step_multiplications is not None:  # the row's own step, batch 1 (table1's decode column)
        state = module.initial_state(1, dtype=torch.float32)
        step = count_multiplications(lambda x_t: module.step(x_t, state)[0], _x(1, batch=1, dtype=torch.float32)[:, 0])
        assert step.complete and step.multiplications == mixer.step_multiplications(module)


@pytest.mark.parametrize("pair", ROWS, ids=_row_id)
def test_the_state_of_each_row_is_fixed_where_its_row_says_so(pair):
    mixer, row = pair
    module = _build(mixer, row.options)
    sizes = [_walk(_stepped(module, _x(T))[1]) for T in (3, 9)]
    assert (sizes[0] == sizes[1]) == (row.state[1] == "constant"), (row.name, row.state, sizes)


@pytest.mark.parametrize("batch", [1, 2])
@pytest.mark.parametrize("mixer", WITH_MACHINE, ids=lambda m: m.name)
def test_its_decode_step_is_its_closed_form_and_its_state_bytes_a_walk(mixer, batch):
    steps = []
    for t in (2, 9):
        prepared = decode.prepare_decode_step(mixer.name, t, d_model=D, batch=batch)
        step = decode.count_decode_step(prepared)
        with torch.no_grad():
            _, after = prepared.decoder.step(prepared.x_t, prepared.state)
        assert step.multiplications == step.closed_form == mixer.decode.step_multiplications(D, batch)
        assert step.state_bytes == _walk(after)  # the storages counted == the tensors walked
        steps.append(step)
    assert (steps[0].state_bytes == steps[1].state_bytes) == mixer.decode.fixed_state


@pytest.mark.parametrize("width", [3, 5])
@pytest.mark.parametrize("mixer", LEARNING, ids=lambda m: m.name)
def test_its_learn_parameters_are_their_closed_form(mixer, width):
    module = mixer.build(8, window=learn_models.SLIDING_WINDOW, generator=torch.Generator().manual_seed(0),
                         **mixer.learn.options, **dict.fromkeys(mixer.learn.width, width))
    assert sum(p.numel() for p in module.parameters()) == mixer.learn.parameters(8, width)
    net = learn_models.TaskModel(mixer.name, width, d_model=8, vocab=12, classes=4, T=6,
                                 generator=torch.Generator().manual_seed(0))
    assert net.parameter_count() == learn_models.parameter_count(mixer.name, width, d_model=8, vocab=12, classes=4,
                                                                 T=6)


@pytest.mark.parametrize("lang", ["en", "es"])
def test_the_docs_mixer_table_is_the_registry(lang):
    """docs/outputs/mixers.md (.es.md), which the mixers pages include, is the table written from the registry now."""
    from pathlib import Path

    docs = Path(__file__).resolve().parents[1] / "docs"
    sys.path.insert(0, str(docs))
    try:
        import generate_outputs as generator
    finally:
        sys.path.remove(str(docs))
    name = "mixers" if lang == "en" else "mixers.es"
    fresh = generator.TABLES[name]()
    assert (generator.OUT / f"{name}.md").read_text(encoding="utf-8") == fresh, \
        f"docs/outputs/{name}.md is stale: run python docs/generate_outputs.py mixers"
    assert [line.split("`")[1] for line in fresh.splitlines()[2:]] == [m.name for m in mixers.mixers()]
    assert f'--8<-- "docs/outputs/{name}.md"' in (docs / lang / "mixers.md").read_text(encoding="utf-8")


@pytest.mark.parametrize("mixer", SHIPPED, ids=lambda m: m.name)
def test_its_closed_form_is_a_registered_one_and_the_class_uses_it(mixer):
    from seqlab import cost

    assert mixer.label and mixer.equation and mixer.closed_form in cost.CLOSED_FORMS
    module = _build(mixer, mixer.rows[0].options)
    assert mixer.closed_form in (type(module).multiplications.__doc__ or ""), "multiplications names its closed form"


def test_a_closed_form_defined_beside_its_layer_registers_when_the_mixer_is_registered(tmp_path, monkeypatch):
    """contributing.md: a mixer's closed form lives in its own module; registering the mixer imports that module,
    which registers the form, and a name that no module registers is refused at registration."""
    import sys

    from seqlab import cost
    from seqlab.errors import SeqlabError

    (tmp_path / "beside_mixer.py").write_text(
        "from seqlab.cost import closed_form\n"
        "@closed_form('7 T', 'test')\n"
        "def beside_multiplications(T):\n"
        "    return 7 * T\n"
        "class Beside:\n"
        "    pass\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(cost, "_CLOSED_FORMS", dict(cost._CLOSED_FORMS))
    monkeypatch.setattr(cost, "_FUNCTIONS", dict(cost._FUNCTIONS))
    monkeypatch.setattr(cost, "CLOSED_FORMS", __import__("types").MappingProxyType(cost._FUNCTIONS))
    monkeypatch.delitem(sys.modules, "beside_mixer", raising=False)
    entry = mixers.Mixer("beside", "beside_mixer", "Beside", rows=(), closed_form="beside_multiplications")
    assert cost.CLOSED_FORMS[entry.closed_form](3) == 21
    with pytest.raises(SeqlabError, match="must name a registered closed form"):
        mixers.Mixer("beside", "beside_mixer", "Beside", rows=(), closed_form="nowhere_multiplications")
