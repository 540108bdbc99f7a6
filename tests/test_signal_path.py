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
from seqlab.measure.signal_path import SignalReading, declared_factors, measure_signal_path, read_signal_path
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


# --- issue 34 item 5, issue 38 items 1 and 6: probes, log space, bounds, readings that can fail --------------------

def _block_reading(module: torch.nn.Module, x: torch.Tensor, source: int, target: int, output=None,
                   scales=(1.25, 0.8)) -> tuple[int | None, float]:
    """The whole-block route, written again here: J(s) (d_out × d_in) in float64 by torch.autograd.functional.jacobian
    with the legacy float scale on every declaring module; k from ‖J(s)‖_F / ‖J(1)‖_F, accepted as before."""
    import copy
    import math

    from seqlab.layers.transition import declares_transition

    copy64 = copy.deepcopy(module).double().eval()
    x64 = x.detach().double()

    def block(s: float) -> torch.Tensor:
        for m in copy64.modules():
            if declares_transition(m):
                m.transition_scale = s

        def y_target(row: torch.Tensor) -> torch.Tensor:
            full = x64.clone()
            full[..., source, :] = row
            out = copy64(full)
            return (output(out) if output is not None else out)[..., target, :].reshape(-1)
        J = torch.autograd.functional.jacobian(y_target, x64[..., source, :].clone())
        for m in copy64.modules():
            if declares_transition(m):
                m.transition_scale = None
        return J.reshape(J.shape[0], -1)  # (d_out, d_in)

    J1 = block(1.0)
    reach = float(torch.linalg.matrix_norm(J1))
    if reach == 0:
        return None, 0.0  # no dependence (a window that does not reach, causality)
    readings = [math.log(float(torch.linalg.matrix_norm(block(s))) / reach) / math.log(s) for s in scales]
    k = round(readings[0])
    residuals = [float(torch.linalg.matrix_norm(block(s) - s ** k * J1)) / float(torch.linalg.matrix_norm(s ** k * J1))
                 for s in scales]
    accepted = all(abs(r - k) <= 1e-6 for r in readings) and max(residuals) <= 1e-9
    return (k if accepted else None), reach


def _registry_layers() -> list[tuple[str, torch.nn.Module]]:
    from seqlab.layers.mixers import mixers

    return [(row.name, mixer.build(D, window=3, chunk=4, generator=_gen(), **dict(row.options)))
            for mixer in mixers() if mixer.available() for row in mixer.rows]


@pytest.mark.parametrize(("name", "module", "output"), [
    ("elman", ElmanRNN(D, 3, generator=_gen()), None),
    ("attention", SelfAttention(D, generator=_gen()), lambda out: out[0]),
    ("causal_attention", SelfAttention(D, causal=True, generator=_gen()), lambda out: out[0]),
    *[(name, module, None) for name, module in _registry_layers()],
])
@pytest.mark.parametrize(("T", "source"), [(6, 0), (9, 2)])
def test_probe_reading_agrees_with_the_whole_block_reading(name, module, output, T, source) -> None:
    from seqlab.layers.transition import declares_transition

    x = _x(T)
    if not any(declares_transition(m) for m in module.modules()):  # a registered mixer may declare none: named
        with pytest.raises(SeqlabError, match="declares no transition factor"):
            measure_signal_path(module, x, source=source, target=T - 1, output=output)
        return
    k_block, reach_block = _block_reading(module, x, source, T - 1, output)
    sp = measure_signal_path(module, x, source=source, target=T - 1, output=output)  # probes=None: reach exact
    assert sp.factors == k_block, name
    if k_block is not None:
        assert sp.reach == pytest.approx(reach_block, rel=1e-10)
        probed = measure_signal_path(module, x, source=source, target=T - 1, output=output, probes=1)
        assert probed.factors == k_block and probed.probes == 1
    else:
        assert (sp.reason, sp.reach) == (("no_dependence", 0.0) if reach_block == 0 else ("not_a_power", None))


def _elman_log10_reach(rnn: ElmanRNN, x: torch.Tensor) -> float:
    """log₁₀ ‖∂h_T/∂x_1‖_F factor by factor: M = D_1 W_xh, then M ← D_t W_hh M, renormalised at every step."""
    import math

    w_xh, w_hh = rnn.weight_xh.detach().double(), rnn.weight_hh.detach().double()
    with torch.no_grad():
        h = rnn.double()(x.double())[0]  # (T, d_h)
    rnn.float()
    M = (1 - h[0] ** 2)[:, None] * w_xh  # (d_h, d_in)
    log10 = 0.0
    for t in range(1, h.shape[0]):
        M = (1 - h[t] ** 2)[:, None] * (w_hh @ M)
        top = float(M.abs().max())
        M, log10 = M / top, log10 + math.log10(top)
    return log10 + math.log10(float(torch.linalg.matrix_norm(M)))


@pytest.mark.parametrize("T", [744, 2917])  # the built-in text; the packaged Quijote chapter
def test_elman_reading_at_the_commands_lengths_never_underflows(T: int) -> None:
    rnn = ElmanRNN(8, 8, generator=_gen())
    x = torch.randn(1, T, 8, generator=_gen(1))
    sp = measure_signal_path(rnn, x)  # the reach exact: 8 output directions
    assert (sp.factors, sp.reason, sp.reach_missing) == (T - 1, None, None)
    assert sp.rescaled > 0  # the gradient left [2^-256, 2^256] and was brought back, factor by factor
    assert sp.log10_reach == pytest.approx(_elman_log10_reach(rnn, x), rel=1e-10)
    assert sp.log10_reach < -150
    assert (sp.reach is None) == (sp.log10_reach < -307.65)  # below float64's smallest normal: log space only


def test_read_signal_path_at_the_quijote_length_reads_and_says_the_reach() -> None:
    from seqlab.render.signal_path import reading_words

    T = 2917
    reading = read_signal_path(ElmanRNN(8, 8, generator=_gen()), torch.randn(1, T, 8, generator=_gen(1)))
    assert (reading.path.factors, reading.path.probes, reading.path.reach) == (T - 1, 1, None)
    words = reading_words(reading)
    assert words.startswith("2,916 transition factors (W_hh), reach ≈ ") and "e-" in words
    assert "(from 1 probe); W_hh counted at its marked product (declared, not measured)" in words


def test_rescaling_gives_the_same_reading_as_none(monkeypatch) -> None:
    """Two routes: the gradient kept in range by powers of two at every mark (band 2^±3) or never rescaled."""
    from seqlab.layers import transition

    rnn, x = ElmanRNN(D, 6, generator=_gen()), _x(60)
    plain = measure_signal_path(rnn, x)
    monkeypatch.setattr(transition, "BAND", 3)
    rescaled = measure_signal_path(rnn, x)
    assert plain.rescaled == 0 and rescaled.rescaled > 5
    assert rescaled.factors == plain.factors == 59
    assert rescaled.reach == pytest.approx(plain.reach, rel=1e-12)


def test_rescaling_at_marks_off_the_routes_names_the_missing_reach(monkeypatch) -> None:
    from seqlab.layers import transition
    from seqlab.render.signal_path import reading_words

    monkeypatch.setattr(transition, "BAND", 3)  # marks before x_21 are rescaled too, off every route from x_21
    sp = measure_signal_path(ElmanRNN(D, 6, generator=_gen()), _x(60), source=20)
    assert (sp.factors, sp.reach, sp.log10_reach, sp.reach_missing) == (39, None, None, "uneven_rescaling")
    words = reading_words(SignalReading("ElmanRNN", sp))
    assert "reach not read (the gradient had to be rescaled into float64's range at factors that not every" in words


@pytest.mark.parametrize(("T", "reason", "words"), [
    (900, "out_of_range", ("the gradient from y_T to x_1 left float64's range (below 2^-1000, or not finite) where "
                           "no marked factor could rescale it")),  # 0.4536^899 ≈ 1e-309: subnormal, precision gone
    (1500, "zero_gradient", "the gradient from y_T to x_1 is exactly 0 although a path connects them"),  # ≈ 1e-515
])
def test_a_forward_scaled_decay_past_float64_is_named_never_no_dependence(T, reason, words) -> None:
    from seqlab.render.signal_path import count_words

    layer = DiagonalRecurrence(D, a_min=0.3, a_max=0.5, generator=_gen())  # largest decay 0.4536
    sp = measure_signal_path(layer, _x(T))
    assert (sp.factors, sp.reason, sp.reach) == (None, reason, None)
    assert count_words(SignalReading("DiagonalRecurrence", sp)).startswith(f"not measured: {words}")
    assert measure_signal_path(layer, _x(800)).factors == 799  # 1e-275: still read


@pytest.mark.parametrize(("unreached", "reason"), [(True, "no_dependence"), (False, "zero_gradient"),
                                                   (None, "zero_undecided")])
def test_an_exact_zero_is_no_dependence_only_by_structure(monkeypatch, unreached, reason) -> None:
    import seqlab.measure.signal_path as module
    from seqlab.render.signal_path import count_words

    real = module._pull
    monkeypatch.setattr(module, "_pull", lambda *a, **k: module._Pulled(torch.zeros_like(real(*a, **k).g)))
    monkeypatch.setattr(module, "_structurally_unreached", lambda *a: unreached)
    sp = measure_signal_path(ElmanRNN(D, 3, generator=_gen()), _x(6))
    assert (sp.factors, sp.reason, sp.reach) == (None, reason, 0.0 if unreached else None)
    words = count_words(SignalReading("ElmanRNN", sp), "es")
    assert words.startswith("sin medir: ") and {"no_dependence": "y_T no depende de x_1",
                                                "zero_gradient": "aunque un camino los conecta",
                                                "zero_undecided": "trazador"}[reason] in words


def test_the_structural_check_sees_a_causal_zero() -> None:
    sp = measure_signal_path(ElmanRNN(D, 3, generator=_gen()), _x(6), source=4, target=1)
    assert (sp.factors, sp.reason, sp.reach) == (None, "no_dependence", 0.0)


def _patch_scaled(monkeypatch, change):
    """Patch the scaled passes' gradient (s ≠ 1) with change(g, s)."""
    import seqlab.measure.signal_path as module

    real = module._pull

    def patched(y_j, x, source, u, scaling, s, *rest):
        pulled = real(y_j, x, source, u, scaling, s, *rest)
        return pulled if s == 1.0 else module._Pulled(change(pulled.g, s))
    monkeypatch.setattr(module, "_pull", patched)


@pytest.mark.parametrize(("fraction", "factors"), [(0.5, 5), (0.999, 5), (1.001, None), (2.0, None)])
def test_tolerance_boundary(monkeypatch, fraction, factors) -> None:
    """A reading off its integer by the tolerance itself or less is accepted; past it, not (residual opened wide)."""
    from seqlab.measure.signal_path import TOLERANCE

    _patch_scaled(monkeypatch, lambda g, s: g * s ** (fraction * TOLERANCE))
    sp = measure_signal_path(ElmanRNN(D, 3, generator=_gen()), _x(6), residual=1.0)
    assert sp.factors == factors and sp.readings[0] == pytest.approx(5 + fraction * TOLERANCE, abs=1e-12)
    assert sp.reason == (None if factors else "not_a_power")


@pytest.mark.parametrize(("fraction", "factors"), [(0.5, 5), (0.999, 5), (1.001, None), (2.0, None)])
def test_residual_boundary(monkeypatch, fraction, factors) -> None:
    """A component across uᵀJ(s) of relative size ρ: accepted up to RESIDUAL, refused past it (the norm, hence the
    reading, moves by ρ²/2 only)."""
    from seqlab.measure.signal_path import RESIDUAL

    def across(g, s):
        other = torch.randn(g.shape, dtype=g.dtype, generator=_gen(5))
        other = other - (other @ g) / (g @ g) * g  # orthogonal to g
        return g + fraction * RESIDUAL * float(torch.linalg.vector_norm(g)) * other / torch.linalg.vector_norm(other)
    _patch_scaled(monkeypatch, across)
    sp = measure_signal_path(ElmanRNN(D, 3, generator=_gen()), _x(6))
    assert sp.factors == factors and sp.residual == pytest.approx(fraction * RESIDUAL, rel=1e-5)


def test_a_patched_measurement_changes_the_reading_and_the_sentence(monkeypatch) -> None:
    from seqlab.render.signal_path import cell_words, count_words, reading_words

    rnn, x = ElmanRNN(D, 3, generator=_gen()), _x(6)
    assert reading_words(read_signal_path(rnn, x)).startswith("5 transition factors (W_hh), reach ≈ ")
    _patch_scaled(monkeypatch, lambda g, s: g * s)  # one factor more on every route
    reading = read_signal_path(rnn, x)
    assert reading.path.factors == 6 and cell_words(reading) == "6 (W_hh)"
    assert reading_words(reading, "es").startswith("6 factores de transición (W_hh), alcance ≈ ")
    _patch_scaled(monkeypatch, lambda g, s: g * s ** 0.5)  # half a factor: no power
    reading = read_signal_path(rnn, x)
    assert (reading.path.factors, reading.path.reason) == (None, "not_a_power")
    assert reading_words(reading).startswith("not measured: routes from x_1 to y_T cross different numbers")
    assert cell_words(reading) == count_words(reading)  # the cell says why, too


# --- undeclared factors: a bound, named ---------------------------------------------------------------------------

class _Feeds(torch.nn.Module):
    """``first`` (any module, tuple outputs read at 0) feeding a SelfAttention, which declares α_ji."""

    def __init__(self, first: torch.nn.Module) -> None:
        super().__init__()
        self.first = first
        self.attention = SelfAttention(D, generator=_gen())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.first(x)
        return self.attention(h[0] if isinstance(h, tuple) else h)[0]


def _bert_self_attention() -> torch.nn.Module:
    from transformers import BertConfig
    from transformers.models.bert.modeling_bert import BertSelfAttention

    torch.manual_seed(0)
    config = BertConfig(hidden_size=D, num_attention_heads=1, intermediate_size=8, attn_implementation="eager")
    return BertSelfAttention(config).eval()


@pytest.mark.parametrize(("first", "name"), [
    (lambda: torch.nn.RNN(D, D, batch_first=True), "RNN"),
    (lambda: torch.nn.GRU(D, D, batch_first=True), "GRU"),
    (_bert_self_attention, "BertSelfAttention"),
])
def test_an_undeclared_module_that_mixes_positions_makes_the_reading_a_bound(first, name) -> None:
    from seqlab.render.signal_path import cell_words, count_words

    reading = read_signal_path(_Feeds(first()), _x(7))
    path = reading.path
    assert (path.factors, path.undeclared, path.unchecked, path.bound) == (1, (name,), (), True)
    assert cell_words(reading) == "≥ 1 (α_ji)"
    assert count_words(reading) == (f"at least 1 transition factor (α_ji): {name} mixes positions without declaring "
                                    f"its factors, which are not counted")
    assert count_words(reading, "es") == (f"al menos 1 factor de transición (α_ji): {name} mezcla posiciones sin "
                                          f"declarar sus factores, que no se cuentan")


@pytest.mark.parametrize("first", [lambda: torch.nn.Linear(D, D), lambda: torch.nn.LayerNorm(D),
                                   lambda: torch.nn.Sequential(torch.nn.Linear(D, D), torch.nn.GELU())])
def test_a_position_wise_module_leaves_the_count_whole(first) -> None:
    path = read_signal_path(_Feeds(first()), _x(7)).path
    assert (path.factors, path.undeclared, path.unchecked, path.bound) == (1, (), (), False)


def test_a_module_whose_positions_cannot_be_read_is_named_unchecked() -> None:
    from seqlab.render.signal_path import count_words

    class NeedsMask(torch.nn.Module):
        def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
            return x * mask

    class Masked(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.gate, self.attention = NeedsMask(), SelfAttention(D, generator=_gen())

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.attention(self.gate(x, torch.ones_like(x)))[0]

    reading = read_signal_path(Masked(), _x(5))
    assert (reading.path.factors, reading.path.unchecked, reading.path.bound) == (1, ("NeedsMask",), True)
    assert count_words(reading).endswith("whether NeedsMask mixes positions could not be checked")


# --- attention's α: a power of the function, that a wrong layer fails ----------------------------------------------

class _Weighting(torch.nn.Module):
    """A one-head attention that declares α_ji, scaled in the forward, marked where ``mark`` says."""

    transition_factor = "α_ji"
    transition_scaling = "forward"
    transition_scale = None

    def __init__(self, mark: str) -> None:
        super().__init__()
        self.mark = mark
        self.q, self.k, self.v = (torch.nn.Linear(D, D, bias=False) for _ in range(3))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q, k, v = self.q(x), self.k(x), self.v(x)
        scores = q @ k.transpose(-2, -1) / 2.0  # (1, T, T)
        if self.mark == "scores":  # the wrong tensor: softmax is not homogeneous in it
            return torch.softmax(apply_transition(self, scores), dim=-1) @ v
        alpha = apply_transition(self, torch.softmax(scores, dim=-1))
        if self.mark == "twice":  # α applied twice on every route
            return alpha @ (alpha @ v)
        if self.mark == "residual":  # a route around α
            return alpha @ v + x
        return alpha @ v


@pytest.mark.parametrize(("mark", "factors", "reason"), [("weights", 1, None), ("twice", 2, None),
                                                         ("scores", None, "not_a_power"),
                                                         ("residual", None, "not_a_power")])
def test_attention_weights_are_read_from_the_function(mark, factors, reason) -> None:
    torch.manual_seed(0)
    sp = measure_signal_path(_Weighting(mark), _x(6), source=5, target=5)  # the residual route stays at its position
    assert (sp.factors, sp.reason, sp.marked) == (factors, reason, ())


def test_which_counts_are_declared_at_a_mark_and_which_are_measured() -> None:
    assert measure_signal_path(SelfAttention(D, generator=_gen()), _x(5), output=lambda out: out[0]).marked == ()
    assert measure_signal_path(ElmanRNN(D, 3, generator=_gen()), _x(5)).marked == ("W_hh",)
    assert measure_signal_path(LinearAttention(D, generator=_gen()), _x(5)).marked == ("α_ji",)


# --- the reach's directions pulled back batched or one pass per row: the same numbers ------------------------------

class _Clock:
    """A CPU clock for ``signal_path.time`` (its ``thread_time``): each call reads the next of ``readings``, then one
    more second a call."""

    def __init__(self, *readings: float) -> None:
        self.readings, self.now = list(readings), 0.0

    def thread_time(self) -> float:
        self.now = self.readings.pop(0) if self.readings else self.now + 1.0
        return self.now


class _Counted:
    """Counts the backward passes ``torch.autograd.grad`` runs: batched and one row each."""

    def __init__(self, monkeypatch) -> None:
        from seqlab.measure import signal_path

        self.batched = self.single = 0
        self.grad = torch.autograd.grad
        monkeypatch.setattr(signal_path.torch.autograd, "grad", self)

    def __call__(self, *args, **kwargs):
        if kwargs.get("is_grads_batched"):
            self.batched += 1
        else:
            self.single += 1
        return self.grad(*args, **kwargs)


@pytest.mark.parametrize(("module", "output", "probes", "factors"), [
    (ElmanRNN(D, 6, generator=_gen()), None, None, 39),
    (ElmanRNN(D, 6, generator=_gen()), None, 5, 39),
    (SelfAttention(D, generator=_gen()), lambda out: out[0], None, 1),
    (SelectiveRecurrence(D, generator=_gen()), None, None, 39),
    (LinearAttention(D, generator=_gen()), None, None, 1),
    (MambaBlock(D, d_state=2, generator=_gen()), None, None, None),
])
def test_batched_and_row_by_row_directions_read_the_same(monkeypatch, module, output, probes, factors) -> None:
    from seqlab.measure import signal_path

    x = _x(40)
    monkeypatch.setattr(signal_path, "SMALL_BYTES", 2**40)  # every forward's tensors count as small
    monkeypatch.setattr(signal_path, "BATCH_BYTES", 2**40)  # one chunk holds every row
    monkeypatch.setattr(signal_path, "time", _Clock())  # each pass takes one second: a batch is cheaper per row
    counted = _Counted(monkeypatch)
    batched = measure_signal_path(module, x, output=output, probes=probes)
    assert counted.batched == 1  # the directions after the first, in one batched pass
    monkeypatch.setattr(signal_path, "SMALL_BYTES", 0)  # no forward's tensors count as small: one pass per row
    one_by_one = measure_signal_path(module, x, output=output, probes=probes)
    assert counted.batched == 1
    assert batched == one_by_one and batched.factors == factors


def test_a_batch_slower_per_row_than_one_pass_turns_batching_off(monkeypatch) -> None:
    from seqlab.measure import signal_path

    rnn, x = ElmanRNN(D, 6, generator=_gen()), _x(20)
    plain = measure_signal_path(rnn, x)  # exact reach: 6 directions
    monkeypatch.setattr(signal_path._Saved, "rows", lambda self: 2)  # two rows per batched pass
    # the lone first row takes 1 s (0 → 1); the first batch of 2 rows 3 s (1 → 4), more than 2 × 1 s: batching stops
    monkeypatch.setattr(signal_path, "time", _Clock(0.0, 1.0, 1.0, 4.0))
    counted = _Counted(monkeypatch)
    assert measure_signal_path(rnn, x) == plain
    # base and scaled passes 2, then the directions: 1 alone + 2 in one batched pass + the last 3 alone
    assert (counted.batched, counted.single) == (1, 2 + 1 + 3)


def test_a_backward_that_cannot_be_batched_is_pulled_back_row_by_row(monkeypatch) -> None:
    from seqlab.measure import signal_path

    rnn, x = ElmanRNN(D, 6, generator=_gen()), _x(30)
    plain = measure_signal_path(rnn, x)  # exact reach: 6 directions
    grad = torch.autograd.grad
    refused = []

    def no_batching(*args, **kwargs):
        if kwargs.get("is_grads_batched"):
            refused.append(1)
            raise RuntimeError("Batching rule not implemented")
        return grad(*args, **kwargs)

    monkeypatch.setattr(signal_path.torch.autograd, "grad", no_batching)
    monkeypatch.setattr(signal_path, "SMALL_BYTES", 2**40)
    assert measure_signal_path(rnn, x) == plain and refused  # tried batched, refused, then row by row


def test_a_forward_that_refuses_the_counting_hooks_runs_again_without_them(monkeypatch) -> None:
    from seqlab.measure import signal_path

    rnn, x = ElmanRNN(D, 6, generator=_gen()), _x(12)
    plain = measure_signal_path(rnn, x)

    def refuse(self, t: torch.Tensor) -> torch.Tensor:  # as torch.func refuses saved-tensor hooks
        raise RuntimeError("saved tensor hooks are not supported here")

    monkeypatch.setattr(signal_path._Saved, "pack", refuse)
    again = measure_signal_path(rnn, x)
    assert again == plain and (again.factors, again.probes) == (11, None)
