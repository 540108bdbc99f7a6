"""``seqlab learn``: tasks, models, training, the three claims it shows (L3, L4, L10), rendering and CLI.

The qualitative claims are asserted with margins on seeded runs at the smallest sizes that show them
(checked over seeds 0–2 or 0–4 before relying on them): recall at T = 128, where attention learns and
the Elman RNN does not (L3, L4); order at T = 8, where attention without positional encoding sits at
chance and with it learns (L10); position at T = 16, where the per-position MLP fails and attention
does not (L10). No test reads the clock.
"""

from __future__ import annotations

import gettext
import io
import json
import math
import string
from pathlib import Path

import pytest
import torch
from babel.messages.extract import extract_from_dir
from babel.messages.mofile import write_mo
from babel.messages.pofile import read_po

import seqlab.memory
import seqlab.studies.learn as study
from seqlab.errors import SeqlabError
from seqlab.learn.models import MODELS, TaskModel, parameter_count, sinusoidal_encoding, width_for_budget
from seqlab.learn.tasks import KEYS, QUERY_MARK, TASKS, make_batch, evaluation_positions, training_positions
from seqlab.learn.training import Run, TrainSettings, deterministic_torch, train_run
from seqlab.render.learn import learn_json, learn_sentences, learn_table, render_learn, write_plots
from seqlab.studies.learn import (MAX_LENGTH, LearnConfig, LearnResult, check_learn_config, estimate_learn,
                                  run_learn, summarise)

LOCALE = Path(study.__file__).resolve().parents[1] / "locale" / "es" / "LC_MESSAGES"
SOURCES = Path(study.__file__).resolve().parents[1]
COMPILE = "pybabel compile -d src/seqlab/locale -D learn -l es"
#: A wide, colourless console for in-process CLI runs (as conftest's CLI_ENV for compare).
CLI_ENV = {"COLUMNS": "200", "NO_COLOR": "1", "FORCE_COLOR": None, "TTY_COMPATIBLE": None}


# --- Tasks ------------------------------------------------------------------------------------------

def test_recall_puts_the_key_first_distractors_between_and_the_mark_last():
    tokens, labels = make_batch("recall", 200, 10, torch.Generator().manual_seed(1))
    assert torch.equal(tokens[:, 0], labels) and bool((tokens[:, -1] == QUERY_MARK).all())
    assert bool((tokens[:, 1:-1] >= KEYS).all()) and bool((tokens[:, 1:-1] < QUERY_MARK).all())
    assert set(labels.tolist()) == set(range(KEYS))  # 200 draws of 8 keys: every key appears


def test_order_marks_two_positions_never_the_last_and_labels_their_order():
    tokens, labels = make_batch("order", 300, 6, torch.Generator().manual_seed(2))
    for row, label in zip(tokens, labels):
        a, b = (row == 0).nonzero().flatten().tolist(), (row == 1).nonzero().flatten().tolist()
        assert len(a) == 1 and len(b) == 1 and 5 not in (a[0], b[0])
        assert int(label) == int(a[0] < b[0])


def test_order_test_set_comes_in_swapped_twins():
    tokens, labels = make_batch("order", 100, 8, torch.Generator().manual_seed(3), "test")
    first, twin = tokens[0::2], tokens[1::2]
    assert torch.equal(first.sort(dim=1).values, twin.sort(dim=1).values)  # the same set of tokens
    assert torch.equal(labels[0::2], 1 - labels[1::2])
    assert labels.float().mean() == 0.5


@pytest.mark.parametrize("split", ["train", "test"])
def test_position_word_sits_in_its_half(split):
    T = 16
    tokens, labels = make_batch("position", 400, T, torch.Generator().manual_seed(4), split)
    allowed = set(training_positions(T) if split == "train" else evaluation_positions(T))
    for row, label in zip(tokens, labels):
        where = (row == 0).nonzero().flatten().tolist()
        assert (len(where) == 1 and where[0] in allowed) if label == 1 else where == []
    assert allowed == (set(range(8)) if split == "train" else set(range(8, 15)))


def test_make_batch_refuses_bad_input():
    g = torch.Generator()
    with pytest.raises(SeqlabError, match="recall, order, position; received 'copy'"):
        make_batch("copy", 4, 8, g)
    with pytest.raises(SeqlabError, match="T >= 4, received 3"):
        make_batch("position", 4, 3, g)
    with pytest.raises(SeqlabError, match="even n, received 5"):
        make_batch("order", 5, 8, g, "test")


# --- Models ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("task", list(TASKS))
def test_parameter_count_closed_form_equals_the_module_and_fits_the_budget(task, model):
    spec, T = TASKS[task], 16
    sizes = dict(d_model=16, vocab=spec.vocab, classes=spec.classes, T=T)
    width = width_for_budget(model, 2000, **sizes)
    net = TaskModel(model, width, generator=torch.Generator().manual_seed(0), **sizes)
    assert net.parameter_count() == parameter_count(model, width, **sizes)
    assert 1800 <= net.parameter_count() <= 2000  # one budget: every model within 10 % of it
    assert parameter_count(model, width + 1, **sizes) > 2000


def test_sinusoidal_encoding_is_the_papers_formula():
    T, d = 50, 6
    pe = sinusoidal_encoding(T, d)
    for pos in (0, 1, 17, 49):
        for i in range(d // 2):
            angle = pos / 10000 ** (2 * i / d)
            assert math.isclose(pe[pos, 2 * i], math.sin(angle), abs_tol=1e-6)
            assert math.isclose(pe[pos, 2 * i + 1], math.cos(angle), abs_tol=1e-6)
    assert sinusoidal_encoding(3, 5).shape == (3, 5)  # an odd width ends on a sine column


def test_attention_without_encoding_cannot_tell_twins_apart_and_with_it_can():
    tokens, _ = make_batch("order", 64, 8, torch.Generator().manual_seed(5), "test")
    logits = {}
    for model in ("attention", "attention-pe"):
        net = TaskModel(model, 8, d_model=16, vocab=18, classes=2, T=8, generator=torch.Generator().manual_seed(0))
        with torch.no_grad():
            logits[model] = net(tokens)
    assert torch.allclose(logits["attention"][0::2], logits["attention"][1::2], atol=1e-6)  # L10
    assert not torch.allclose(logits["attention-pe"][0::2], logits["attention-pe"][1::2], atol=1e-4)


def test_recurrent_weight_is_square_and_reach_layer_is_float64():
    for model in ("elman", "lstm", "gru"):
        net = TaskModel(model, 7, d_model=16, vocab=24, classes=8, T=5, generator=torch.Generator().manual_seed(0))
        assert net.recurrent_weight().shape == (7, 7)
        assert next(net.reach_layer().parameters()).dtype == torch.float64
    mlp = TaskModel("mlp", 3, d_model=16, vocab=17, classes=2, T=5, generator=torch.Generator())
    assert mlp.recurrent_weight() is None and mlp.reach_layer() is None


# --- The claims, trained (seeded) --------------------------------------------------------------------

def _train(task: str, models: tuple[str, ...], T: int, steps: int) -> LearnResult:
    config = LearnConfig(tasks=(task,), models=models, lengths=(T,), seeds=2,
                         settings=TrainSettings(steps=steps, test_size=500))
    return run_learn(config)


@pytest.fixture(scope="module")
def recall() -> LearnResult:
    return _train("recall", ("elman", "attention"), 128, 300)


@pytest.fixture(scope="module")
def order() -> LearnResult:
    return _train("order", ("elman", "attention", "attention-pe"), 8, 600)


@pytest.fixture(scope="module")
def position() -> LearnResult:
    return _train("position", ("mlp", "attention", "gru"), 16, 300)


def test_recall_attention_learns_where_the_elman_rnn_does_not(recall):  # L3, L4
    # seeds 0-4 measured: attention 1.0 in each, the Elman RNN 0.10-0.26 (chance 0.125)
    attention, elman = recall.cell("recall", "attention", 128), recall.cell("recall", "elman", 128)
    assert attention.low >= 0.9
    assert elman.high <= 0.35 and elman.mean <= 0.3
    # the measured path explains it: the gradient from y_T to x_1 is orders of magnitude weaker
    assert elman.reach < 1e-3 * attention.reach
    assert elman.spectral_radius is not None and attention.spectral_radius is None


def test_order_attention_is_blind_without_encoding_and_learns_with_it(order):  # L10
    assert abs(order.cell("order", "attention", 8).mean - 0.5) <= 0.05
    assert order.cell("order", "attention-pe", 8).mean >= 0.75
    assert order.cell("order", "elman", 8).mean >= 0.9


def test_position_mlp_fails_where_shared_weights_succeed(position):  # L10
    assert position.cell("position", "mlp", 16).high <= 0.65
    assert position.cell("position", "attention", 16).low >= 0.9
    assert position.cell("position", "gru", 16).low >= 0.9


def test_same_seed_same_numbers():
    settings = TrainSettings(steps=60, test_size=200)
    with deterministic_torch(1):
        first, again = (train_run("position", "elman", 8, 3, settings) for _ in range(2))
        other = train_run("position", "elman", 8, 4, settings)
    fields = ("accuracy", "steps", "params", "spectral_radius", "reach", "reach_last")
    assert [getattr(first, f) for f in fields] == [getattr(again, f) for f in fields]
    assert (other.spectral_radius, other.reach) != (first.spectral_radius, first.reach)


def test_deterministic_torch_restores_the_global_settings():
    threads, deterministic = torch.get_num_threads(), torch.are_deterministic_algorithms_enabled()
    with deterministic_torch(1):
        assert torch.get_num_threads() == 1 and torch.are_deterministic_algorithms_enabled()
    assert (torch.get_num_threads(), torch.are_deterministic_algorithms_enabled()) == (threads, deterministic)


# --- Bad input, estimate, Ctrl-C ----------------------------------------------------------------------

@pytest.mark.parametrize(("changes", "parameter", "message"), [
    ({"tasks": ("recall", "copy")}, "tasks", "among recall, order, position; received 'copy'"),
    ({"models": ("rnn",)}, "models", "among elman, lstm, gru, attention, attention-pe, mlp; received 'rnn'"),
    ({"lengths": (8, MAX_LENGTH + 1)}, "T", f"at most {MAX_LENGTH}"),
    ({"tasks": ("order",), "lengths": (2,)}, "T", "order task needs T >= 3, received 2"),
    ({"seeds": 0}, "seeds", "received 0"),
    ({"seeds": 11}, "seeds", "in [1, 10], received 11"),
])
def test_bad_config_is_refused_with_the_valid_values(changes, parameter, message):
    with pytest.raises(SeqlabError, match=message.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")) \
            as error:
        check_learn_config(LearnConfig(**changes))
    assert error.value.parameter == parameter


def test_sizes_that_would_not_fit_are_refused_before_training(monkeypatch):
    monkeypatch.setattr(seqlab.memory, "available_memory_bytes", lambda: 1_000_000)
    monkeypatch.setattr(study, "train_run", lambda *a, **k: pytest.fail("trained despite the refusal"))
    with pytest.raises(SeqlabError, match="would need about"):
        run_learn(LearnConfig(tasks=("recall",), lengths=(MAX_LENGTH,)))


def test_estimate_prices_every_run():
    config = LearnConfig(tasks=("recall", "position"), models=("elman", "mlp"), lengths=(4, 8), seeds=2,
                         settings=TrainSettings(steps=10, test_size=20))
    estimate = estimate_learn(config)
    assert estimate.runs == 2 * 2 * 2 * 2  # tasks × models × lengths × seeds
    assert len(estimate.step_seconds) == 8 and estimate.seconds > 0 and estimate.threads == 1


def _tiny(**changes) -> LearnConfig:
    values = dict(tasks=("position",), models=("mlp", "attention"), lengths=(4, 8), seeds=2,
                  settings=TrainSettings(steps=5, test_size=20))
    return LearnConfig(**{**values, **changes})


def test_ctrl_c_in_the_callback_keeps_the_finished_runs():
    seen = []

    def progress(done, total, run):
        seen.append((done, total))
        if done == 3:
            raise KeyboardInterrupt

    result = run_learn(_tiny(), progress)
    assert result.partial and result.planned == 8 and len(result.runs) == 3
    assert [(r.model, r.T, r.seed) for r in result.runs] == [("mlp", 4, 0), ("attention", 4, 0), ("mlp", 8, 0)]
    assert len(result.summary) == 3 and seen[-1] == (3, 8)
    assert torch.get_num_threads() >= 1 and not torch.are_deterministic_algorithms_enabled()


def test_ctrl_c_during_training_keeps_the_finished_runs(monkeypatch):
    calls = []
    real = study.train_run

    def interrupted(*args, **kwargs):
        calls.append(args)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(study, "train_run", interrupted)
    result = run_learn(_tiny())
    assert result.partial and len(result.runs) == 1 and result.summary[0].accuracies == (result.runs[0].accuracy,)


# --- Rendering ------------------------------------------------------------------------------------------

def _run(task, model, T, seed, accuracy, rho=None, reach=None) -> Run:
    return Run(task, model, T, seed, accuracy, TASKS[task].chance, 1990, 28, 100, accuracy > 0.99, rho, reach,
               1.0 if reach is not None else None, 0.5)


@pytest.fixture(scope="module")
def made_up() -> LearnResult:
    """A result built by hand (no training): every task, one cell missing, partial."""
    runs = []
    for seed, (low, high) in enumerate(((0.12, 1.0), (0.14, 0.98))):
        runs += [_run("recall", "elman", 8, seed, 1.0, 0.9, 0.5), _run("recall", "elman", 64, seed, low, 2.5, 1e-9),
                 _run("recall", "attention", 8, seed, 1.0, None, 9.0),
                 _run("recall", "attention", 64, seed, high, None, 8.0),
                 _run("order", "attention", 8, seed, 0.5, None, 0.3), _run("order", "attention-pe", 8, seed, 0.97),
                 _run("position", "mlp", 16, seed, 0.52), _run("position", "attention", 16, seed, 1.0, None, 0.5)]
    config = LearnConfig(seeds=2)
    return LearnResult(config=config, models={"recall": ("elman", "attention"), "order": ("attention", "attention-pe"),
                                              "position": ("mlp", "gru", "attention")},
                       lengths={"recall": (8, 64), "order": (8,), "position": (16,)}, runs=tuple(runs),
                       summary=summarise(tuple(runs)), planned=20, partial=True, threads=1, deterministic=True,
                       torch_version=torch.__version__, seconds=75.0)


def _text(renderable) -> str:
    from rich.console import Console

    console = Console(width=200, record=True, no_color=True)
    console.print(renderable)
    return console.export_text()


def test_tables_show_mean_and_half_range_and_the_measured_path(made_up):
    text = _text(learn_table(made_up, "recall"))
    assert "Recall the first token, T-1 positions back (L3, L4)" in text and "T = 64" in text
    assert "0.130 ± 0.010" in text and "0.990 ± 0.010" in text  # elman (0.12, 0.14); attention (1.0, 0.98)
    assert "ρ 2.5 · ∂ 1.0e-9" in text and "∂ 8.0" in text
    assert "Elman RNN (1,990)" in text
    position = _text(learn_table(made_up, "position"))
    assert "GRU" in position and "—" in position  # a model with no finished run


def test_sentences_say_what_was_measured_in_both_languages(made_up):
    english = " ".join(learn_sentences(made_up, "en"))
    assert "As the lesson says (L3, L4): at T = 64 the Elman RNN is near chance in every seed (0.130, chance 0.125)" \
        in english
    assert "attention without positional encoding scores 0.500" in english
    assert "the per-position MLP scores 0.520" in english and "positions 9–15" in english
    assert "Interrupted: 16 of 20 runs finished" in english and "1 min 15 s" in english
    spanish = " ".join(learn_sentences(made_up, "es"))
    assert "con T = 64 la RNN de Elman se queda cerca del azar en todas las semillas (0,130" in spanish
    assert "Atención + CP 0,970" in spanish and "Interrumpido: terminaron 16 de 20" in spanish
    assert "Recordar el primer token" in _text(render_learn(made_up, "es"))


def test_json_keeps_every_run_and_the_partial_flag(made_up):
    data = json.loads(learn_json(made_up))
    assert len(data["runs"]) == 16 and data["partial"] is True and data["planned"] == 20
    assert data["runs"][1]["reach"] == 1e-9 and data["summary"][0]["accuracies"] == [1.0, 1.0]
    assert data["config"]["settings"]["steps"] == 1200


def test_plot_writes_png_and_svg(made_up, tmp_path):
    pytest.importorskip("matplotlib")
    png, svg = write_plots(made_up, tmp_path / "learn.png", "es")
    assert (png.name, svg.name) == ("learn.png", "learn.svg")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and "<svg" in svg.read_text(encoding="utf-8")
    assert "exactitud en la prueba" in svg.read_text(encoding="utf-8")


# --- Command line ----------------------------------------------------------------------------------------

@pytest.fixture()
def learn_cli(runner):
    from seqlab.cli import app

    def run(*args: str):
        return runner.invoke(app, ["learn", *args], env=CLI_ENV)

    return run


def test_cli_trains_and_prints_the_table_estimate_and_plot(learn_cli, tmp_path):
    result = learn_cli("--tasks", "position", "--models", "mlp,attention", "--lengths", "4", "--seeds", "1",
                       "--plot", str(tmp_path / "p"), "--lang", "es")
    assert result.exit_code == 0, result.output
    assert "Una palabra entrenada en la primera mitad" in result.output
    assert "Tiempo estimado: como mucho" in result.output
    assert (tmp_path / "p.png").is_file() and (tmp_path / "p.svg").is_file()


def test_cli_json(learn_cli):
    result = learn_cli("--tasks", "recall", "--models", "elman", "--lengths", "3", "--seeds", "1", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert [(r["model"], r["T"]) for r in data["runs"]] == [("elman", 3)]


@pytest.mark.parametrize(("args", "option", "expected"), [
    (("--tasks", "recall,copy"), "--tasks", "recall, order, position; received 'copy'"),
    (("--models", "transformer"), "--models", "attention-pe, mlp; received 'transformer'"),
    (("--lengths", "8,x"), "--lengths", "received 'x' in '8,x'"),
    (("--lengths", "100000"), "--lengths", "received 100000"),
    (("--tasks", "position", "--lengths", "2"), "--lengths", "T >= 4, received 2"),
    (("--seeds", "0"), "--seeds", "received 0"),
    (("--tasks", ""), "--tasks", "received ''"),
    (("--plot", "/no/such/folder/p"), "--plot", "does not exist"),
])
def test_cli_bad_input_exits_2_naming_the_option(learn_cli, args, option, expected):
    result = learn_cli(*args)
    assert result.exit_code == 2, result.output
    errors = [line for line in result.output.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1 and f"Invalid value for '{option}'" in errors[0] and expected in errors[0]
    assert "Traceback" not in result.output


def test_cli_ctrl_c_prints_what_finished_and_exits_130(learn_cli, monkeypatch):
    real, calls = study.train_run, []

    def interrupted(*args, **kwargs):
        calls.append(args)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(study, "train_run", interrupted)
    result = learn_cli("--tasks", "position", "--models", "mlp", "--lengths", "4,6", "--seeds", "1")
    assert result.exit_code == 130, result.output
    assert "Interrupted: kept 1 of 2 runs." in result.output and "MLP (per position)" in result.output


# --- The Spanish catalogue of the "learn" domain -----------------------------------------------------------

@pytest.fixture(scope="module")
def catalogue():
    with open(LOCALE / "learn.po", "rb") as po:
        return read_po(po, locale="es")


def _fields(text: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(text) if name is not None}


def test_learn_catalogue_is_complete_current_and_matches_the_code(catalogue):
    messages = {m.id: m.string for m in catalogue if m.id}
    assert not catalogue.fuzzy and not [m.id for m in catalogue if m.id and m.fuzzy]
    for msgid, msgstr in messages.items():
        assert msgstr.strip() and _fields(msgstr) == _fields(msgid), msgid
    compiled = io.BytesIO()
    write_mo(compiled, catalogue)
    expected = gettext.GNUTranslations(io.BytesIO(compiled.getvalue()))._catalog
    with open(LOCALE / "learn.mo", "rb") as mo:
        assert gettext.GNUTranslations(mo)._catalog == expected, f"learn.mo is out of date: run `{COMPILE}`"
    used = set()
    for relative in ("render/learn.py", "cli/learn.py"):
        path = SOURCES / relative
        found = extract_from_dir(str(path.parent), method_map=[(path.name, "python")], keywords={"tl": None})
        used |= {message for _, _, message, _, _ in found}
    assert used - set(messages) == set(), "strings missing from learn.po"
    assert set(messages) - used == set(), "msgids no code uses any more"
