"""``seqlab learn``: tasks, models, training, the three claims it shows (L3, L4, L10), rendering and CLI.

The qualitative claims are asserted with margins on seeds 0–4 at the smallest sizes that show them:
recall at T = 128, where attention learns in every seed and the Elman RNN is near chance on average
(L3, L4); order at T = 8, where attention without positional encoding sits at chance and with it learns
(L10); position at T = 16, where the per-position MLP fails and attention does not (L10). Training is
deterministic per seed on one machine, not bit for bit across CPUs, so nothing here asserts a trained
figure exactly, nor the reach of a trained Elman RNN (ρ > 1: chaotic). No test reads the clock.
Verdict sentences, rate selection and rendering are tested on hand-made results in
test_learn_verdicts.py.
"""

from __future__ import annotations

import dataclasses
import json
import math

import pytest
import torch

import seqlab.memory
import seqlab.studies.learn as study
from seqlab.errors import SeqlabError
from seqlab.layers.decoding import state_bytes
from seqlab.learn.models import (FIXED_STATE, MIXER_MODELS, MODELS, SLIDING_WINDOW, TaskModel, parameter_count,
                                 sinusoidal_encoding, width_for_budget)
from seqlab.learn.tasks import (IGNORE, KEYS, MQAR_FILLER, MQAR_KEYS, QUERY_MARK, TASKS, make_batch,
                                evaluation_positions, training_positions)
from seqlab.learn.training import Run, TrainSettings, _answers, _optimiser, deterministic_torch, train_run
from seqlab.studies.learn import MAX_LENGTH, LearnConfig, LearnResult, check_learn_config, estimate_learn, run_learn
from seqlab.studies.learn_verdicts import learn_findings

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
    with pytest.raises(SeqlabError, match="recall, order, position, mqar; received 'copy'"):
        make_batch("copy", 4, 8, g)
    with pytest.raises(SeqlabError, match="T >= 4, received 3"):
        make_batch("position", 4, 3, g)
    with pytest.raises(SeqlabError, match="even n, received 5"):
        make_batch("order", 5, 8, g, "test")


def test_mqar_interleaves_the_pairs_then_asks_every_key_once_for_its_value():
    P, T = 4, 20
    tokens, labels = make_batch("mqar", 300, T, torch.Generator().manual_seed(6), pairs=P)
    assert tokens.shape == labels.shape == (300, T)
    for row, label in zip(tokens.tolist(), labels.tolist()):
        keys, values = row[0:2 * P:2], row[1:2 * P:2]
        assert len(set(keys)) == P and all(k < MQAR_KEYS for k in keys)  # distinct keys, then their values
        assert all(MQAR_KEYS <= v < MQAR_FILLER for v in values)
        asked = [t for t in range(T) if label[t] != IGNORE]
        assert len(asked) == P and min(asked) >= 2 * P  # one query per pair, after the pairs
        assert sorted(row[t] for t in asked) == sorted(keys)  # every key asked once
        for t in asked:
            assert label[t] == values[keys.index(row[t])] - MQAR_KEYS  # the value that followed that key
        assert all(row[t] == MQAR_FILLER for t in range(2 * P, T) if t not in asked)
    assert TASKS["mqar"].chance == 1 / 16


def test_mqar_refuses_too_short_a_row_and_missing_pairs():
    g = torch.Generator()
    with pytest.raises(SeqlabError, match="T >= 24 at 8 pairs, received 23"):  # 8 pairs + 8 values + 8 queries
        make_batch("mqar", 2, 23, g, pairs=8)
    with pytest.raises(SeqlabError, match="pairs must be an integer in \\[1, 16\\], received 17"):
        make_batch("mqar", 2, 64, g, pairs=17)
    with pytest.raises(SeqlabError, match="pairs must be an integer >= 1, received None"):
        train_run("mqar", "attention", 8, 0, TrainSettings(steps=1, test_size=2, validation_size=2))
    with pytest.raises(SeqlabError, match="pairs is for the mqar task only"):
        train_run("recall", "attention", 8, 0, TrainSettings(steps=1, test_size=2, validation_size=2), pairs=2)


def test_per_position_answers_are_the_queried_positions_only():
    logits = torch.arange(2 * 3 * 4, dtype=torch.float32).reshape(2, 3, 4)  # (B, T, C)
    labels = torch.tensor([[IGNORE, 1, IGNORE], [3, IGNORE, IGNORE]])
    picked, asked = _answers(logits, labels)
    assert torch.equal(picked, torch.stack([logits[0, 1], logits[1, 0]])) and asked.tolist() == [1, 3]
    last, same = _answers(logits[:, -1], torch.tensor([0, 2]))  # the lesson's tasks: every row answered
    assert torch.equal(last, logits[:, -1]) and same.tolist() == [0, 2]


def test_the_schedule_warms_up_linearly_then_decays_by_a_cosine():
    net = TaskModel("attention", 4, d_model=8, vocab=10, classes=2, T=4, generator=torch.Generator().manual_seed(0))
    optimizer, schedule = _optimiser(net, TrainSettings(steps=100, lr=1e-2, warmup=0.1))
    assert type(optimizer).__name__ == "AdamW" and optimizer.param_groups[0]["weight_decay"] == 0.01
    rates = []
    for _ in range(100):
        rates.append(optimizer.param_groups[0]["lr"])
        optimizer.step()
        schedule.step()
    assert math.isclose(rates[0], 1e-3) and math.isclose(rates[4], 5e-3) and math.isclose(rates[9], 1e-2)  # k/10
    assert all(a >= b for a, b in zip(rates[9:], rates[10:]))  # then only down
    # cosine over the 91 steps after the peak: step 9 + j has lr·(1 + cos(π j / 91)) / 2
    assert math.isclose(rates[9 + 45], 1e-2 * (1 + math.cos(math.pi * 45 / 91)) / 2, rel_tol=1e-9)
    assert 0 < rates[-1] < 1e-4


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


def test_gates_start_with_the_chrono_initialisation():
    T, w = 64, 12
    lstm = TaskModel("lstm", w, d_model=16, vocab=25, classes=8, T=T, generator=torch.Generator().manual_seed(0))
    forget, given = lstm.layer.bias_ih_l0[w:2 * w].detach(), lstm.layer.bias_ih_l0[:w].detach()
    assert bool((forget >= 0).all()) and bool((forget <= math.log(T - 1)).all()) and forget.std() > 0.3
    assert torch.equal(given, -forget) and bool((lstm.layer.bias_hh_l0[:2 * w] == 0).all())
    gru = TaskModel("gru", w, d_model=16, vocab=25, classes=8, T=T, generator=torch.Generator().manual_seed(0))
    update = gru.layer.bias_ih_l0[w:2 * w].detach()  # z of (r, z, n)
    assert bool((update >= 0).all()) and bool((update <= math.log(T - 1)).all())
    assert bool((gru.layer.bias_hh_l0[w:2 * w] == 0).all())
    # what the gate keeps of the first token after T - 1 steps at its mean bias: far more than the old +1 bias's
    assert float(torch.sigmoid(forget).mean()) ** (T - 1) > 1e3 * (1 / (1 + math.exp(-1))) ** (T - 1)


#: Bytes of the decode state after T = 12 tokens at width w = 8, d_model = 16, one example, float32: the shifted
#: embedding row e_T (16 floats) and then the layer's own state.
STATE_BYTES = {
    "elman": 4 * (16 + 8), "gru": 4 * (16 + 8), "lstm": 4 * (16 + 8 + 8),  # (h,), (h, c)
    "attention": 4 * (16 + 2 * 12 * 8), "attention-pe": 4 * (16 + 2 * 12 * 8),  # K, V: 12 rows of 8 each
    "linear_attention": 4 * (16 + 8 * 8 + 8),  # S (d_k × d_v), z (d_k)
    "diagonal_recurrence": 4 * (16 + 8), "selective_recurrence": 4 * (16 + 8),  # h (d_state)
    "sliding_window": 4 * (16 + 2 * SLIDING_WINDOW * 8) + SLIDING_WINDOW,  # the w-row storage of K, V; w flags
}


def expected_state_bytes(net: TaskModel) -> int:
    """:data:`STATE_BYTES`, or for a mixer listed there by no one: e_T and its initial state's tensors (fixed)."""
    if net.model in STATE_BYTES:
        return STATE_BYTES[net.model]
    assert net.model in MIXER_MODELS, net.model
    return 4 * 16 + sum(s.numel() * s.element_size() for s in net.layer.initial_state(1))


@pytest.mark.parametrize("model", [m for m in MODELS if m != "mlp"])
def test_decoding_step_by_step_gives_the_parallel_outputs_and_the_state_bytes(model):
    T = 12
    net = TaskModel(model, 8, d_model=16, vocab=33, classes=16, T=T, per_position=True, shift=True,
                    generator=torch.Generator().manual_seed(0))
    tokens = torch.randint(0, 33, (1, T), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        parallel = net.outputs(net.inputs(tokens))  # (1, T, o)
    stepped, state = net.decode(tokens)
    assert torch.allclose(stepped, parallel, atol=1e-5)  # two routes: the step API and the forward pass
    assert state_bytes(state) == expected_state_bytes(net)
    longer = TaskModel(model, 8, d_model=16, vocab=33, classes=16, T=2 * T, per_position=True, shift=True,
                       generator=torch.Generator().manual_seed(0))
    grown = state_bytes(longer.decode(torch.zeros(1, 2 * T, dtype=torch.long))[1])
    if model in FIXED_STATE:
        assert grown == expected_state_bytes(net)  # fixed whatever T
    else:
        assert grown - 4 * 16 == 2 * (expected_state_bytes(net) - 4 * 16)  # the KV cache doubles with T


def test_a_run_reports_the_state_bytes_its_decoder_holds():
    run = train_run("mqar", "linear_attention", 12, 0, TrainSettings(steps=2, test_size=4, validation_size=4),
                    pairs=2, width=8)
    assert (run.pairs, run.width, run.state_bytes) == (2, 8, STATE_BYTES["linear_attention"])
    mlp = train_run("position", "mlp", 4, 0, TrainSettings(steps=1, test_size=4, validation_size=4))
    assert mlp.state_bytes is None  # no step: it reads every position at once
    with pytest.raises(SeqlabError, match="per-position MLP"):
        check_learn_config(LearnConfig(tasks=("mqar",), models=("mlp",)))


def test_plan_crosses_lengths_pairs_models_and_widths_and_one_run_is_a_pure_function():
    import pickle

    from seqlab.studies.learn import PlannedRun, train_planned

    plan = check_learn_config(LearnConfig(tasks=("mqar",), models=("attention",), lengths=(8, 12), pairs=(1, 2),
                                          widths=(4, 8), seeds=1, rates=(1e-2,)))
    assert [(r.T, r.pairs, r.width) for r in plan.runs] == [(T, p, w) for T in (8, 12) for p in (1, 2) for w in (4, 8)]
    item = PlannedRun("mqar", "attention", 8, 0, 1e-2, pairs=2, width=4)
    assert pickle.loads(pickle.dumps(item)) == item
    settings = TrainSettings(steps=3, test_size=4, validation_size=4)
    first, again = train_planned(item, settings), train_planned(item, settings)
    assert dataclasses.replace(first, seconds=0.0) == dataclasses.replace(again, seconds=0.0)
    with pytest.raises(SeqlabError, match="mqar task needs T >= 24 at 8 pairs, received 16"):
        check_learn_config(LearnConfig(tasks=("mqar",), lengths=(16,), pairs=(8,)))


# --- The claims, trained (seeded, seeds 0-4) --------------------------------------------------------

SEEDS = 5


def _train(task: str, models: tuple[str, ...], T: int, steps: int) -> LearnResult:
    """Seeds 0-4 at one rate (the grid is tested apart, on its own, in test_learn_verdicts.py)."""
    config = LearnConfig(tasks=(task,), models=models, lengths=(T,), seeds=SEEDS, rates=(1e-2,),
                         settings=TrainSettings(steps=steps, test_size=500, validation_size=200))
    return run_learn(config)


@pytest.fixture(scope="module")
def recall() -> LearnResult:
    return _train("recall", ("elman", "attention"), 128, 200)  # attention stops after 65-82 steps


@pytest.fixture(scope="module")
def order() -> LearnResult:
    return _train("order", ("elman", "attention", "attention-pe"), 8, 600)


@pytest.fixture(scope="module")
def position() -> LearnResult:
    return _train("position", ("mlp", "attention", "gru"), 16, 300)


def test_recall_attention_learns_where_the_elman_rnn_does_not(recall):  # L3, L4
    # measured here, seeds 0-4: attention 1.0 in each; the Elman RNN 0.118-0.144 (mean 0.134, chance 0.125); with
    # 300 steps it was 0.104-0.256 here and 0.11-0.26 on an AMD EPYC. The reach of the trained Elman RNN
    # (rho > 1, chaotic: 0.65 against attention's 9.9 on that AMD) is not asserted.
    attention, elman = recall.cell("recall", "attention", 128), recall.cell("recall", "elman", 128)
    assert attention.seeds == elman.seeds == tuple(range(SEEDS))
    assert attention.low >= 0.9  # every seed
    assert elman.mean <= 0.3  # near chance on average: 0.125 + 0.175 of margin
    kinds = [f.kind for f in learn_findings(recall)]
    assert kinds[0] in ("recall_every_seed", "recall_on_average")  # either way the sentence says "as the lesson"
    assert elman.spectral_radius is not None and attention.spectral_radius is None


def test_order_attention_is_blind_without_encoding_and_learns_with_it(order):  # L10
    # measured here, seeds 0-4: attention 0.5 in each (twins give it equal rows), with encoding 0.82-1.0
    attention, pe = order.cell("order", "attention", 8), order.cell("order", "attention-pe", 8)
    assert max(abs(a - 0.5) for a in attention.accuracies) <= 0.05
    assert pe.mean >= 0.75 and pe.low > 0.6
    assert order.cell("order", "elman", 8).mean >= 0.9
    assert [f.kind for f in learn_findings(order)] == ["order_holds"]


def test_position_mlp_fails_where_shared_weights_succeed(position):  # L10
    # measured here, seeds 0-4: MLP 0.478-0.534 on the test half, 1.0 on validation (the trained half)
    mlp = position.cell("position", "mlp", 16)
    assert mlp.high <= 0.65
    assert position.cell("position", "attention", 16).low >= 0.9
    assert position.cell("position", "gru", 16).low >= 0.9
    assert [f.kind for f in learn_findings(position)] == ["position_holds"]


def test_mqar_attention_recalls_every_queried_value():  # Zoology §3, at the smallest size
    result = run_learn(LearnConfig(tasks=("mqar",), models=("attention",), lengths=(12,), pairs=(2,), widths=(16,),
                                   seeds=3, rates=(1e-2,),
                                   settings=TrainSettings(steps=400, test_size=200, validation_size=50)))
    cell = result.cell("mqar", "attention", 12, 2, 16)
    assert cell.low >= 0.9 and cell.learnt == 3  # stops after about 300 steps in each seed
    assert cell.state_bytes == 4 * (16 + 2 * 12 * 16)  # e_T, then its KV cache: 12 rows of K and V


def test_validation_comes_from_the_training_distribution_and_the_test_does_not(position):
    """The MLP answers the held-out validation rows (word in the trained half) and fails the test rows."""
    mlp_runs = [r for r in position.runs if r.model == "mlp"]
    assert len(mlp_runs) == SEEDS
    assert min(r.validation_accuracy for r in mlp_runs) >= 0.9 and max(r.accuracy for r in mlp_runs) <= 0.65


def test_same_seed_same_numbers():
    settings = TrainSettings(steps=60, test_size=200, validation_size=100)
    with deterministic_torch(1):
        first, again = (train_run("position", "elman", 8, 3, settings) for _ in range(2))
        other = train_run("position", "elman", 8, 4, settings)
    fields = ("accuracy", "validation_accuracy", "validation_loss", "steps", "params", "spectral_radius", "reach",
              "reach_last")
    assert [getattr(first, f) for f in fields] == [getattr(again, f) for f in fields]
    assert (other.spectral_radius, other.reach) != (first.spectral_radius, first.reach)


def test_deterministic_torch_restores_the_global_settings():
    threads, deterministic = torch.get_num_threads(), torch.are_deterministic_algorithms_enabled()
    with deterministic_torch(1):
        assert torch.get_num_threads() == 1 and torch.are_deterministic_algorithms_enabled()
    assert (torch.get_num_threads(), torch.are_deterministic_algorithms_enabled()) == (threads, deterministic)


# --- Bad input, estimate, Ctrl-C ----------------------------------------------------------------------

@pytest.mark.parametrize(("changes", "parameter", "message"), [
    ({"tasks": ("recall", "copy")}, "tasks", "among recall, order, position, mqar; received 'copy'"),
    ({"models": ("rnn",)}, "models", f"among {', '.join(MODELS)}; received 'rnn'"),  # every mixer that learns
    ({"lengths": (8, MAX_LENGTH + 1)}, "T", f"at most {MAX_LENGTH}"),
    ({"tasks": ("order",), "lengths": (2,)}, "T", "order task needs T >= 3, received 2"),
    ({"seeds": 0}, "seeds", "received 0"),
    ({"seeds": 11}, "seeds", "in [1, 10], received 11"),
    ({"rates": ()}, "rates", "list of 1 to 5 learning rates, received ()"),
    ({"rates": (1e-2, 0.0)}, "rates", "numbers in (0, 1], received 0.0"),
    ({"rates": (float("nan"),)}, "rates", "numbers in (0, 1], received nan"),
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
                         settings=TrainSettings(steps=10, test_size=20), rates=(1e-2, 1e-3))
    estimate = estimate_learn(config)
    assert estimate.runs == 2 * 2 * 2 * 2 * 2  # tasks × models × lengths × seeds × rates
    assert len(estimate.step_seconds) == 8 and estimate.seconds > 0 and estimate.threads == 1


def _tiny(**changes) -> LearnConfig:
    values = dict(tasks=("position",), models=("mlp", "attention"), lengths=(4, 8), seeds=2, rates=(1e-2,),
                  settings=TrainSettings(steps=5, test_size=20, validation_size=20))
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


# --- Command line ----------------------------------------------------------------------------------------

@pytest.fixture()
def learn_cli(runner):
    from seqlab.cli import app

    def run(*args: str):
        return runner.invoke(app, ["learn", *args], env=CLI_ENV)

    return run


def test_cli_trains_and_prints_the_table_estimate_and_plot(learn_cli, tmp_path):
    result = learn_cli("--quick", "--tasks", "position", "--models", "mlp,attention", "--lengths", "4", "--seeds", "1",
                       "--plot", str(tmp_path / "p"), "--lang", "es")
    assert result.exit_code == 0, result.output
    assert "Una palabra entrenada en la primera mitad" in result.output
    assert "Esta ejecución es más pequeña que la completa: semillas: 1 (ejecución completa: 5)" in result.output
    assert "1 semillas" not in result.output and "tasa elegida" in result.output
    assert "Tiempo estimado: como mucho" in result.output
    assert (tmp_path / "p.png").is_file() and (tmp_path / "p.svg").is_file()


def test_cli_json(learn_cli):
    result = learn_cli("--quick", "--tasks", "recall", "--models", "elman", "--lengths", "3", "--seeds", "1",
                       "--json", "--rates", "1e-2, 1e-7")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert [(r["model"], r["T"], r["lr"]) for r in data["runs"]] == [("elman", 3, 1e-2), ("elman", 3, 1e-7)]
    assert data["summary"][0]["lr"] == 1e-2  # 1e-7 cannot move the weights in 400 steps: validation says so
    assert [c["what"] for c in data["cuts"]] == ["seeds", "steps", "test_size", "validation_size", "rates"]
    assert data["cuts"][-1] == {"what": "rates", "used": [1e-2, 1e-7], "full": [1e-2, 3e-3, 1e-3], "task": None}
    # no attention cell: nothing to compare; the gated recall at T = 64, a known result, is said not run
    assert [f["kind"] for f in data["findings"]] == ["known_not_run"]


@pytest.mark.parametrize(("args", "option", "expected"), [
    (("--tasks", "recall,copy"), "--tasks", "recall, order, position, mqar; received 'copy'"),
    (("--models", "transformer"), "--models", f"{MODELS[-1]}; received 'transformer'"),
    (("--lengths", "8,x"), "--lengths", "received 'x' in '8,x'"),
    (("--lengths", "100000"), "--lengths", "received 100000"),
    (("--tasks", "position", "--lengths", "2"), "--lengths", "T >= 4, received 2"),
    (("--seeds", "0"), "--seeds", "received 0"),
    (("--rates", "1e-2,fast"), "--rates", "received 'fast' in '1e-2,fast'"),
    (("--rates", "1e-2,2"), "--rates", "numbers in (0, 1], received 2.0"),
    (("--tasks", ""), "--tasks", "received ''"),
    (("--plot", "/no/such/folder/p"), "--plot", "does not exist"),
])
def test_cli_bad_input_exits_2_naming_the_option(learn_cli, args, option, expected):
    result = learn_cli(*args)
    assert result.exit_code == 2, result.output
    errors = [line for line in result.output.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1 and f"Invalid value for '{option}'" in errors[0] and expected in errors[0]
    assert "Traceback" not in result.output


def test_cli_ctrl_c_says_in_one_line_what_finished_and_exits_130(learn_cli, monkeypatch):
    real, calls = study.train_run, []

    def interrupted(*args, **kwargs):
        calls.append(args)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(study, "train_run", interrupted)
    result = learn_cli("--tasks", "position", "--models", "mlp", "--lengths", "4,6", "--seeds", "1", "--rates", "1e-2")
    assert result.exit_code == 130, result.output
    last = result.output.splitlines()[-1]
    assert last == "Interrupted after 1 of 2 runs, which are not kept (--results FILE keeps each run as it ends)."
    assert "MLP (per position)" not in result.output  # one line after the interrupt, no partial tables
