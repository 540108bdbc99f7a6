"""The signal's path (seqlab.measure.signal_path): transition factors met from x_i to y_j, from J(s) = s^k J(1).

Exact integer counts, by agreement of two routes: the loop and the scan (or the recurrent and the parallel form) of
one layer give the same count and the same reach, while their graph paths differ.
"""

from __future__ import annotations

import pytest
import torch

from seqlab.errors import SeqlabError
from seqlab.layers.attention import SelfAttention
from seqlab.layers.linear_attention import LinearAttention
from seqlab.layers.linear_recurrence import DiagonalRecurrence, SelectiveRecurrence
from seqlab.layers.mamba_block import MambaBlock
from seqlab.layers.recurrent import ElmanRNN
from seqlab.layers.transition import apply_transition, declares_transition
from seqlab.measure.signal_path import declared_factors, measure_signal_path
from seqlab.measure.trace import measure_span

D = 4


def _gen(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def _x(T: int, d: int = D, seed: int = 1) -> torch.Tensor:
    return torch.randn(1, T, d, generator=_gen(seed))  # (1, T, d)


@pytest.mark.parametrize(("source", "target"), [(0, 7), (2, 7), (3, 3), (0, 1), (5, 6)])
def test_elman_meets_j_minus_i_products_by_w_hh(source: int, target: int) -> None:
    rnn = ElmanRNN(D, 3, generator=_gen())
    sp = measure_signal_path(rnn, _x(8), source=source, target=target)
    assert (sp.factors, sp.factor, sp.modules) == (target - source, "W_hh", ("ElmanRNN",))
    assert sp.reason is None and sp.residual < 1e-12


@pytest.mark.parametrize("cls", [DiagonalRecurrence, SelectiveRecurrence])
@pytest.mark.parametrize("T", [5, 16, 33])
def test_recurrence_loop_and_scan_meet_t_minus_1_decays(cls: type, T: int) -> None:
    x = _x(T)
    readings = {}
    for form in ("loop", "scan"):
        layer = cls(D, 3, form=form, generator=_gen())
        readings[form] = measure_signal_path(layer, x)
        assert (readings[form].factors, readings[form].factor) == (T - 1, "a_t")
    assert readings["loop"].reach == pytest.approx(readings["scan"].reach, rel=1e-12)


def test_the_scan_shortens_the_graph_path_not_the_factor_count() -> None:
    x = _x(32)
    loop = DiagonalRecurrence(D, form="loop", generator=_gen())
    scan = DiagonalRecurrence(D, form="scan", generator=_gen())
    assert measure_span(scan, x).ops < measure_span(loop, x).ops  # 10 against 64 ops in a row
    assert measure_signal_path(scan, x).factors == measure_signal_path(loop, x).factors == 31


@pytest.mark.parametrize("T", [6, 20])
def test_linear_attention_recurrent_parallel_and_chunked_meet_one_weight(T: int) -> None:
    x = _x(T)
    paths = [measure_signal_path(LinearAttention(D, form=form, chunk_size=4, generator=_gen()), x)
             for form in ("recurrent", "parallel", "chunked")]
    assert [p.factors for p in paths] == [1, 1, 1]
    assert paths[0].reach == pytest.approx(paths[1].reach, rel=1e-12) == paths[2].reach


@pytest.mark.parametrize("T", [4, 16, 64])
def test_attention_meets_one_weight_whatever_the_distance(T: int) -> None:
    attention = SelfAttention(D, causal=True, generator=_gen())
    sp = measure_signal_path(attention, _x(T), output=lambda out: out[0])
    assert (sp.factors, sp.factor, sp.modules) == (1, "α_ji", ("Attention",))


def test_mamba_block_routes_meet_different_counts_so_not_measured() -> None:
    # the causal convolution spreads x_1 over d_conv = 4 positions: routes of T - 4 … T - 1 decays
    for form in ("loop", "scan"):
        sp = measure_signal_path(MambaBlock(D, d_state=2, form=form, generator=_gen()), _x(10))
        assert (sp.factors, sp.reason) == (None, "not_a_power")
        assert 6 < sp.readings[0] < 9


def test_selective_decay_chosen_by_x_i_adds_a_route_so_i_after_1_is_not_measured() -> None:
    # x_i also sets a_i, which multiplies h_{i-1} ≠ 0: routes of j - i and j - i + 1 decays (from x_1, h_0 = 0)
    x = _x(8)
    assert measure_signal_path(SelectiveRecurrence(D, form="scan", generator=_gen()), x, source=0).factors == 7
    sp = measure_signal_path(SelectiveRecurrence(D, form="scan", generator=_gen()), x, source=3)
    assert (sp.factors, sp.reason) == (None, "not_a_power")
    assert measure_signal_path(DiagonalRecurrence(D, generator=_gen()), x, source=3).factors == 4  # fixed decay


def test_no_dependence_is_named() -> None:
    sp = measure_signal_path(DiagonalRecurrence(D, generator=_gen()), _x(6), source=5, target=0)  # causal: none
    assert (sp.factors, sp.reason, sp.reach) == (None, "no_dependence", 0.0)


@pytest.mark.parametrize("module", [torch.nn.RNN(D, 3, batch_first=True), torch.nn.Linear(D, D)])
def test_a_module_without_declared_factors_is_refused_by_name(module: torch.nn.Module) -> None:
    assert declared_factors(module) == ()
    with pytest.raises(SeqlabError, match=f"^{type(module).__name__} declares no transition factor"):
        measure_signal_path(module, _x(5))


def test_a_declared_factor_the_forward_never_applies_is_refused() -> None:
    class Bypass(torch.nn.Module):  # holds an attention that declares α_ji, but never calls it
        def __init__(self) -> None:
            super().__init__()
            self.inner = SelfAttention(D, generator=_gen())

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x.cumsum(1)

    with pytest.raises(SeqlabError, match="Attention declares a transition factor that this forward never applied"):
        measure_signal_path(Bypass(), _x(5))


def test_restricted_attention_meets_one_weight_inside_its_band() -> None:
    from seqlab.layers.restricted import RestrictedSelfAttention

    layer = RestrictedSelfAttention(D, 2, generator=_gen())  # its banded attend marks Σ α_ij v_j too
    sp = measure_signal_path(layer, _x(5), source=0, target=2, output=lambda out: out[0])
    assert (sp.factors, sp.factor) == (1, "α_ji")


def test_default_forward_is_untouched_and_the_caller_module_is_left_as_it_was() -> None:
    rnn = ElmanRNN(D, 3, generator=_gen())
    x = _x(6)
    before = rnn(x)
    measure_signal_path(rnn, x)
    assert rnn.transition_scale is None and rnn.weight_hh.dtype == torch.float32
    assert torch.equal(rnn(x), before)
    a = torch.tensor([0.5])
    assert apply_transition(rnn, a) is a  # scale None: the very tensor, no op added


def test_declarations() -> None:
    assert declares_transition(ElmanRNN(2, 2)) and not declares_transition(torch.nn.RNN(2, 2))
    assert declared_factors(MambaBlock(4, d_state=2)) == ("a_t",)
    assert declared_factors(LinearAttention(4)) == ("α_ji",)


@pytest.mark.parametrize("bad", [{"scales": (1.0,)}, {"scales": ()}, {"source": 9}, {"target": 1.5}])
def test_bad_arguments_are_refused(bad: dict) -> None:
    with pytest.raises(SeqlabError):
        measure_signal_path(ElmanRNN(D, 3), _x(5), **bad)


# --- table1 --modern: both readings of path side by side ---------------------------------------------------------

@pytest.fixture(scope="module")
def modern():
    from seqlab.studies.table1_modern import ModernConfig, run_modern

    return run_modern(ModernConfig(lengths=(8, 16, 32), long_lengths=(64, 128, 256), d_model=4,
                                   rows=("elman", "self_attention", "convolution", "diagonal_loop", "diagonal_scan",
                                         "mamba_scan")))


def test_table1_modern_loop_and_scan_same_factors_different_graph_paths(modern) -> None:
    rows = {r.row: r for r in modern.rows}
    loop, scan = rows["diagonal_loop"].short, rows["diagonal_scan"].short
    assert [s.signal_factors for s in loop] == [s.signal_factors for s in scan] == [7, 15, 31]  # T - 1
    assert [s.path_ops for s in loop] == [17, 33, 65] and [s.path_ops for s in scan] == [9, 11, 13]
    assert all(a.signal_reach == pytest.approx(b.signal_reach, rel=1e-12) for a, b in zip(loop, scan))
    assert [s.signal_factors for s in rows["elman"].short] == [7, 15, 31]
    assert [s.signal_factors for s in rows["self_attention"].short] == [1, 1, 1]
    assert [(s.signal_factors, s.signal_absent) for s in rows["convolution"].short] == [(None, "no_factor")] * 3
    assert rows["mamba_scan"].short[-1].signal_absent == "not_a_power"


@pytest.mark.parametrize(("lang", "caption", "sentence", "absent"), [
    ("en", "A parallel scan shortens the first and leaves the second as it was.",
     "yet in both the signal meets 31 decays a_t", "their module declares no transition factor: Convolution"),
    ("es", "Un scan paralelo acorta el primero y deja el segundo como estaba.",
     "pero en las dos la señal encuentra 31 decaimientos a_t", "su módulo no declara ningún factor de transición"),
])
def test_table1_modern_shows_both_readings(modern, lang, caption, sentence, absent) -> None:
    from rich.console import Console

    from seqlab.render.table1_modern import modern_sentences, raw_table

    console = Console(width=260, record=True, color_system=None)
    console.print(raw_table(modern, lang))
    text = console.export_text()
    assert caption in " ".join(text.split()) and "31 a_t (" in text
    assert ("not measured" if lang == "en" else "sin medir") in text  # the Mamba block's routes
    words = " ".join(modern_sentences(modern, lang))
    assert sentence in words and absent in words


def test_table1_modern_json_carries_the_signal_path(modern) -> None:
    import json

    from seqlab.render.json_output import to_json

    document = json.loads(to_json(modern))
    elman = document["rows"][0]["short"][-1]
    assert (elman["signal_factors"], elman["signal_factor"], elman["signal_absent"]) == (31, "W_hh", None)


# --- profile: the signal path where the module declares factors, named as absent otherwise ------------------------

@pytest.mark.parametrize(("module", "factors", "words_en", "words_es"), [
    (ElmanRNN(D, D, generator=_gen()), 5, "5 transition factors (W_hh), reach",
     "5 factores de transición (W_hh), alcance"),
    (torch.nn.RNN(D, D, batch_first=True), None, "absent: RNN declares no transition factor",
     "ausente: RNN no declara ningún factor de transición"),
    (MambaBlock(D, d_state=2, generator=_gen()), None, "not measured: routes from x_1 to y_T cross different",
     "sin medir: las rutas de x_1 a y_T cruzan números distintos"),
])
def test_profile_reads_the_signal_path(module, factors, words_en, words_es) -> None:
    from rich.console import Console

    from seqlab.render.table1 import profile_table
    from seqlab.studies.profile import profile

    result = profile(module, _x(6))
    path = result.signal.path
    assert (path.factors if path is not None else None) == factors
    assert result.signal.absent == ("no_factor" if isinstance(module, torch.nn.RNN) else None)
    for lang, words in (("en", words_en), ("es", words_es)):
        console = Console(width=240, record=True, color_system=None)
        console.print(profile_table(result, lang))
        assert words in console.export_text()


def test_probes_give_the_same_count_and_estimate_the_reach() -> None:
    rnn = ElmanRNN(D, 6, generator=_gen())
    exact = measure_signal_path(rnn, _x(9))
    probed = measure_signal_path(rnn, _x(9), probes=3)
    assert exact.factors == probed.factors == 8 and (exact.probes, probed.probes) == (None, 3)
    assert 0.1 < probed.reach / exact.reach < 10  # an estimate of ‖J‖_F from 3 directions
    sp = measure_signal_path(MambaBlock(D, d_state=2, generator=_gen()), _x(8), probes=2)
    assert sp.reason == "not_a_power"  # routes of different lengths show through random directions too


# --- compare: each machine's signal path, LSTM and GRU named as absent ---------------------------------------------

def test_compare_reads_each_machine_signal_path() -> None:
    from rich.console import Console

    from seqlab.render.compare import render_compare
    from seqlab.studies.compare import CompareConfig, run_compare
    from seqlab.text import tokenize

    result = run_compare(tokenize("el perro muerde al cartero que pasa", "words"), "example",
                         CompareConfig(d_model=8, time=False, sensitivity_draws=0))
    assert result.recurrence.signal.path.factors == result.T - 1 == 6  # W_hh from x_1 to h_T
    assert result.attention.signal.path.factors == 1  # one α_T1
    assert [g.signal.absent for g in result.gated] == ["no_factor", "no_factor"]
    console = Console(width=260, record=True, color_system=None)
    console.print(render_compare(result, "en"))
    exported = console.export_text()
    text = " ".join(exported.split())
    row = next(line for line in exported.splitlines() if "Signal path, 1 to T" in line)
    assert [cell.strip() for cell in row.split("│")[2:-1]] == ["6 (W_hh)", "1 (α_ji)", "—", "—"]
    assert "Signal path, 1 to T: factors met (—: none declared)" in text


def test_notebook_views_show_the_signal_path(modern) -> None:
    from seqlab.studies.profile import profile

    assert "31 a_t (" in modern.html("en") and "Camino de la señal: factores 1 → T" in modern.html("es")
    html = profile(ElmanRNN(D, D, generator=_gen()), _x(5)).html("en")
    assert "4 transition factors (W_hh), reach" in html


def test_a_declaring_module_that_fails_in_float64_is_refused_by_name_and_profile_goes_on() -> None:
    from seqlab.measure.signal_path import read_signal_path

    class Float32Only(DiagonalRecurrence):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            if x.dtype != torch.float32:
                raise TypeError("float32 only")
            return super().forward(x)

    layer = Float32Only(D, generator=_gen())
    with pytest.raises(SeqlabError, match="Float32Only fails on its float64 copy: TypeError: float32 only"):
        measure_signal_path(layer, _x(4))
    reading = read_signal_path(layer, _x(4))
    assert (reading.absent, reading.path) == ("refused", None) and "float32 only" in reading.detail
