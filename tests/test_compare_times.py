"""``compare``'s times: every machine in one interleaved measurement, who finishes first only as rounds.decide says.

The measurement is replaced by a hand-built :class:`~seqlab.measure.rounds.Rounds`, or run on a fake clock with
machines that take the seconds a schedule gives them; no test reads a real clock or depends on the CPU.
"""

from __future__ import annotations

import json
import random
from dataclasses import replace

import pytest

import seqlab.measure.rounds
from seqlab.measure.rounds import Rounds, decide, measure_rounds
from seqlab.measure.timing import MachineLoad
from seqlab.render import compare_prose as prose
from seqlab.render.compare_format import Formatter
from seqlab.measure.rounds import MARGIN as SPEED_MARGIN
from seqlab.studies.compare import CompareConfig, run_compare
from seqlab.studies.compare_times import ROUNDS
from seqlab.text import synthetic_tokens

EN, ES = Formatter("en"), Formatter("es")
QUIET = MachineLoad(0.0, 2, False)
LAYER = "nn.MultiheadAttention (8 heads)"
#: Seconds per call of each machine (the recurrence 4 ms; the call ×4 ahead, the layer ×2).
PLAIN = {"nn.RNN": 0.004, "SDPA": 0.001, LAYER: 0.002, "nn.LSTM": 0.003, "nn.GRU": 0.003}
STEADY = (1.0, 1.01, 0.99, 1.02, 0.98, 1.0, 1.01)


def fake_rounds(monkeypatch, seconds: dict, shape: dict | None = None, seen: list | None = None) -> None:
    """``measure_rounds`` answering ``seconds[name] * shape[name][k]`` in round k (STEADY by default)."""
    shape = shape or {}

    def fake(functions, *, rounds=7, threads=None, load=None, **kwargs):
        if seen is not None:
            seen.append((tuple(functions), rounds, threads))
        per_round = {name: tuple(seconds[name] * m for m in shape.get(name, STEADY)) for name in functions}
        return Rounds(per_round=per_round, calls=dict.fromkeys(functions, 1), first_call_s=dict.fromkeys(functions, 0.1),
                      threads=threads or 2, device="cpu", load=load)

    monkeypatch.setattr(seqlab.measure.rounds, "measure_rounds", fake)


@pytest.fixture(scope="module")
def untimed():
    return run_compare(synthetic_tokens(12), "tiny", CompareConfig(d_model=16, time=False))


def timed(monkeypatch, seconds: dict = PLAIN, shape: dict | None = None, seen: list | None = None, **config):
    fake_rounds(monkeypatch, seconds, shape, seen)
    return run_compare(synthetic_tokens(12), "tiny", CompareConfig(d_model=16, sensitivity_draws=0, **config))


def test_every_machine_is_timed_in_one_interleaved_measurement(monkeypatch):
    seen = []
    result = timed(monkeypatch, {**PLAIN, "ElmanRNN (loop)": 0.04, "Attention (explicit)": 0.01}, seen=seen,
                   time_explicit=True, threads=2)
    ((names, rounds, threads),) = seen
    assert set(names) == {*PLAIN, "ElmanRNN (loop)", "Attention (explicit)"} and rounds == ROUNDS == 7
    assert threads == 2 == result.threads
    sdpa, layer = result.time_decisions
    assert (sdpa.a, sdpa.b, sdpa.outcome, sdpa.faster) == ("nn.RNN", "SDPA", "b_first", "SDPA")
    assert sdpa.ratio == pytest.approx(4.0) and sdpa.margin == SPEED_MARGIN
    assert (layer.b, layer.outcome) == (LAYER, "b_first") and layer.ratio == pytest.approx(2.0)
    assert result.attention.time_library.samples == pytest.approx([0.001 * m for m in STEADY])
    assert result.recurrence.time_explicit.median_s == pytest.approx(0.04)


def test_threads_default_to_the_free_cores(monkeypatch):
    seen = []
    monkeypatch.setattr(seqlab.measure.rounds, "timing_threads_default", lambda load=None: 1)
    real = measure_rounds

    def recording(functions, **kwargs):  # the real rule for the default, on a fake clock
        seen.append(kwargs["threads"])
        now = [0.0]

        def tick():
            now[0] += 0.001

        fakes = {name: tick for name in functions}
        return real(fakes, **{**kwargs, "clock": lambda: now[0]})

    monkeypatch.setattr(seqlab.measure.rounds, "measure_rounds", recording)
    result = run_compare(synthetic_tokens(12), "tiny", CompareConfig(d_model=16, sensitivity_draws=0))
    assert seen == [None] and result.threads == 1 and result.recurrence.time_library.threads == 1
    assert [d.outcome for d in result.time_decisions] == ["tie", "tie"]  # every machine 1 ms: a tie, not a lead


# --- (a) decided: the sentence names the faster one ----------------------------------------------------

def test_a_decided_lead_names_the_faster_one_with_its_spread(monkeypatch):
    sentences = prose.time_sentences(timed(monkeypatch, threads=2), EN)
    assert sentences[0].startswith("On 2 threads nn.RNN takes 4.00 ms and SDPA (the attention call alone) 1.00 ms: "
                                   "attention finishes 4.00 times as fast (×4.00–4.00 over 7 interleaved rounds)")
    assert sentences[1].startswith("At layer scope on 2 threads nn.MultiheadAttention (8 heads) takes 2.00 ms: "
                                   "attention finishes 2.00 times as fast as nn.RNN")


def test_the_recurrence_first_shows_its_own_lead(monkeypatch):
    """SDPA 2 ms (±10 % by round) to the RNN's 1 ms: the ratios' quartiles 0.477 and 0.528, so the recurrence's lead
    is ×1.89–2.10 (their inverses, 1/0.528 and 1/0.477)."""
    shape = {"SDPA": (1.0, 1.1, 0.9, 1.0, 1.1, 0.9, 1.0), "nn.RNN": (1.0,) * 7}
    result = timed(monkeypatch, {**PLAIN, "nn.RNN": 0.001, "SDPA": 0.002}, shape, threads=1)
    assert result.time_decisions[0].outcome == "a_first"
    sentence = prose.time_sentences(result, EN)[0]
    assert "On 1 thread" in sentence and "the recurrence finishes 2.00 times as fast (×1.89–2.10 over 7" in sentence


# --- (b, e) rounds that disagree: no "faster" sentence ---------------------------------------------------

STRADDLE = (0.8, 1.5, 1.3, 0.7, 1.6, 1.0, 1.4)  # nn.RNN / SDPA by round: quartiles 0.900 and 1.45


def test_rounds_that_disagree_print_no_faster_sentence(monkeypatch):
    result = timed(monkeypatch, {**PLAIN, "SDPA": 0.004},
                   {"nn.RNN": (1.0,) * 7, "SDPA": tuple(1 / r for r in STRADDLE)}, threads=2)
    assert result.time_decisions[0].outcome == "not_judged"
    sentence = prose.time_sentences(result, EN)[0]
    assert sentence == ("On 2 threads nn.RNN takes 4.00 ms and SDPA (the attention call alone) 3.08 ms: which "
                        "finishes first is not judged, since the time ratio nn.RNN / SDPA spread ×0.900–1.45 over 7 "
                        "interleaved rounds (across the ×1.20 margin).")
    assert "as fast" not in sentence
    spanish = prose.time_sentences(result, ES)[0]
    assert "no se juzga" in spanish and "×0,900–1,45" in spanish


def test_quickest_rounds_that_disagree_are_said(monkeypatch):
    """Six of the recurrence's rounds slowed 3× by a burst, its quickest as fast as SDPA's: not judged."""
    result = timed(monkeypatch, {**PLAIN, "SDPA": 0.004},
                   {"nn.RNN": (3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 1.0), "SDPA": (1.0,) * 7}, threads=2)
    assert result.time_decisions[0].outcome == "not_judged"
    assert "(the quickest rounds disagree)." in prose.time_sentences(result, EN)[0]


# --- (d) exactly at the margin ---------------------------------------------------------------------------

@pytest.mark.parametrize(("sdpa", "outcome", "words"), [
    (0.004 / SPEED_MARGIN, "tie", "about as fast, within ×1.20 either way"),
    (0.004 * SPEED_MARGIN, "tie", "about as fast, within ×1.20 either way"),
    (0.004 / SPEED_MARGIN / 1.01, "b_first", "attention finishes 1.21 times as fast"),
    (0.004 * SPEED_MARGIN * 1.01, "a_first", "the recurrence finishes 1.21 times as fast"),
])
def test_ratios_at_the_margin(monkeypatch, sdpa, outcome, words):
    result = timed(monkeypatch, {**PLAIN, "SDPA": sdpa}, {"nn.RNN": (1.0,) * 7, "SDPA": (1.0,) * 7}, threads=2)
    assert result.time_decisions[0].outcome == outcome
    assert words in prose.time_sentences(result, EN)[0]


def test_consecutive_noisy_runs_never_say_opposite_things(untimed):
    """Two equally fast machines on a fake clock where bursts slow 30 % of calls 1.5–5×: run after run, never
    "attention finishes first" and then "the recurrence does"; a run the rounds leave undecided says so."""
    rng = random.Random(11)

    def burst() -> float:
        return 0.001 * (1 + (rng.random() < 0.3) * rng.uniform(0.5, 4.0))

    said = []
    for _ in range(150):
        now = [0.0]

        def machine():
            now[0] += burst()

        measured = measure_rounds({"nn.RNN": machine, "SDPA": machine}, threads=1, block_seconds=0.001, load=QUIET,
                                  clock=lambda: now[0])
        result = replace(untimed, recurrence=replace(untimed.recurrence, time_library=measured.timing("nn.RNN")),
                         attention=replace(untimed.attention, time_library=measured.timing("SDPA"), time_layer=None),
                         gated=(), time_decisions=(decide(measured, "nn.RNN", "SDPA", SPEED_MARGIN),))
        sentence = prose.time_sentences(result, EN)[0]
        said.append("attention" if "attention finishes" in sentence else
                    "recurrence" if "recurrence finishes" in sentence else
                    "not judged" if "not judged" in sentence else "tie")
        if result.time_decisions[0].outcome == "not_judged":
            assert "as fast" not in sentence
    for first, second in zip(said, said[1:]):
        assert {first, second} != {"attention", "recurrence"}
    assert "not judged" in said and not {"attention", "recurrence"} <= set(said)


def test_json_carries_the_decisions(monkeypatch):
    from seqlab.render.json_output import to_json

    document = json.loads(to_json(timed(monkeypatch, threads=2)))
    sdpa, layer = document["time_decisions"]
    assert (sdpa["a"], sdpa["b"], sdpa["outcome"], sdpa["margin"], sdpa["rounds"]) == ("nn.RNN", "SDPA", "b_first",
                                                                                       1.2, 7)
    assert sdpa["low"] == pytest.approx(4.0) and layer["b"] == LAYER and document["threads"] == 2
    jsonschema = pytest.importorskip("jsonschema")
    from seqlab.render.json_output import schema

    assert list(jsonschema.Draft202012Validator(schema("compare")).iter_errors(document)) == []


def test_every_time_shown_states_its_threads(monkeypatch, untimed):
    """The table's time rows name the timings' threads; untimed (``--no-time``) they name none."""
    from seqlab.render.compare import _rows

    labels = [row[0] for row in _rows(timed(monkeypatch, threads=2), EN, detailed=True)]
    assert {"Wall time on 2 threads, the library layer", "Wall time on 2 threads, the call alone (SDPA)",
            "Wall time on 2 threads, explicit machine"} <= set(labels)
    untimed_labels = [row[0] for row in _rows(untimed, ES, detailed=False)]
    assert "Tiempo real, la capa de la biblioteca" in untimed_labels
    assert not any("hilo" in label for label in untimed_labels)


def test_a_bad_thread_count_is_refused_before_any_tracing(monkeypatch):
    from seqlab.errors import SeqlabError

    traced = []
    monkeypatch.setattr("seqlab.studies.compare._build", lambda config: traced.append(config))
    with pytest.raises(SeqlabError, match="threads must be an integer >= 1, received 0"):
        run_compare(synthetic_tokens(12), "tiny", CompareConfig(d_model=16, threads=0))
    assert traced == []
