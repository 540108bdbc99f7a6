"""What one traced pass costs against a forward pass and against a do-nothing dispatch mode (issue 34; not a test).

For the Elman RNN, self-attention, ``nn.LSTM``, ``nn.GRU``, the selective recurrence run by its scan and the bundled
all-MiniLM-L6-v2 (its six encoder layers), at T = 128, d = 256 and at T = 1000, d = 512 (MiniLM: d = 384, T = 128
and 512, its longest), this times in CPU seconds (``time.process_time``, one thread):

* ``forward`` — the module under ``no_grad``;
* ``nothing`` — the same under a ``TorchDispatchMode`` that only runs each op, fused kernels off as in the traced
  pass (the floor of any per-op tracer on the same ops);
* ``one pass`` — :func:`seqlab.measure.traced_pass.measure_pass`: work, span and the paths from the two ends;
* ``check apart`` — the same pass with ``check=False``: the tracer alone, without the perturbation check of the path
  matrix (printed beside the one pass, to show where its time goes);
* ``check alone`` — the CPU time of the perturbation check inside each ``one pass``, read directly around
  :func:`seqlab.measure.paths.check_paths`, and the **floor** it sets: whatever the tracer costs, a pass with its check
  costs at least the do-nothing mode plus the check, printed as a multiple of the forward and of the do-nothing mode
  beside the bars it already exceeds;
* ``three passes`` — :func:`~seqlab.measure.work.count_multiplications`, :func:`~seqlab.measure.trace.measure_span`
  and :func:`~seqlab.measure.paths.measure_paths` one after another (what the engine did before issue 34);

interleaved round by round (each round times every candidate once, so a burst of load hits all alike), and prints
the medians as ratios — one pass / forward and one pass / nothing — beside issue 34's bars (one pass ≤ 1.5×
nothing; ≤ 3× a forward at T = 1000, d = 512, MiniLM 4×) and the load average. Then ``seqlab.profile`` as a whole
(work, span, two-end paths and the signal path) against a forward pass (bar: 4×, MiniLM 5×), and where its time
went, each stage as a multiple of the same forward: the traced pass (its perturbation check apart), the perturbation
check, the signal path, and the rest (the module's plain first call, the checks of its input and output).

    python benchmarks/one_pass_cost.py [--rounds 5] [--quick] [--no-profile] [--no-three]
    python benchmarks/one_pass_cost.py --profile-only [--layers elman,attention,minilm]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import time
from collections.abc import Callable

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from seqlab.measure.paths import measure_paths
from seqlab.measure.switches import reference_kernels
from seqlab.measure.trace import measure_span
from seqlab.measure.traced_pass import measure_pass
from seqlab.measure.work import count_multiplications

SIZES = ((128, 256), (1000, 512))
MINILM_LENGTHS = (128, 512)
BAR_NOTHING = 1.5
BAR_FORWARD = {"all-MiniLM-L6-v2": 4.0}
BAR_PROFILE = {"all-MiniLM-L6-v2": 5.0}


class Nothing(TorchDispatchMode):
    """A dispatch mode that runs each op and records nothing: the floor of a per-op tracer."""

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        return False

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        return func(*args, **(kwargs or {}))


def first(output):
    """The sequence output of a module that returns a tuple (nn.RNN's (y, h))."""
    return output[0] if isinstance(output, tuple) else output


def layers(d: int) -> dict[str, Callable[[torch.Tensor], torch.Tensor]]:
    """The layers at width d, eval mode, each as x (1, T, d) -> y (1, T, d)."""
    from seqlab.layers.attention import SelfAttention
    from seqlab.layers.mixers import mixer
    from seqlab.layers.recurrent import ElmanRNN

    generator = torch.Generator().manual_seed(0)
    made = {
        "Elman RNN": ElmanRNN(d, d, generator=generator),
        "self-attention": SelfAttention(d, generator=generator),
        "nn.LSTM": torch.nn.LSTM(d, d, batch_first=True),
        "nn.GRU": torch.nn.GRU(d, d, batch_first=True),
        "selective recurrence (scan)": mixer("selective_recurrence").build(d, form="scan", generator=generator),
    }
    return {name: (lambda x, m=module.eval(): first(m(x))) for name, module in made.items()}


def minilm() -> Callable[[torch.Tensor], torch.Tensor] | None:
    """all-MiniLM-L6-v2's encoder layers (the ``model`` extra), or None when not installed."""
    import sys
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if root not in sys.path:  # run as a script, the repository root is not on the path: benchmarks.* would not import
        sys.path.insert(0, root)
    try:
        from benchmarks.minilm_factory import make_minilm
    except ImportError:
        return None
    try:
        model = make_minilm(384).eval()
    except Exception:  # noqa: BLE001 - the weights package is not installed
        return None
    return model


def candidates(layer, x: torch.Tensor, three: bool) -> tuple[dict[str, Callable[[], object]], list[float]]:
    """The timed calls on one layer and input, and the list to which each ``one pass`` adds its check's CPU seconds."""
    T = x.shape[-2]
    ends = (0, T - 1)

    def forward():
        with torch.no_grad():
            layer(x)

    def nothing():  # the same ops as the traced pass: fused kernels off
        with reference_kernels(), torch.no_grad(), Nothing():
            layer(x)

    checks: list[float] = []

    def one_pass():
        seconds: dict[str, float] = {}
        with stage_timers(seconds):
            measure_pass(layer, x, sources=ends)
        checks.append(seconds.get("perturbation check", 0.0))

    def unchecked():  # the same pass, its perturbation check apart: what the tracer itself costs
        measure_pass(layer, x, sources=ends, check=False)

    def three_passes():
        with torch.no_grad():
            count_multiplications(layer, x)
        measure_span(layer, x)
        measure_paths(layer, x, sources=ends)

    chosen = {"forward": forward, "nothing": nothing, "one pass": one_pass, "check apart": unchecked}
    if three:
        chosen["three passes"] = three_passes
    return chosen, checks


def timed_layer(layer, x: torch.Tensor, three: bool, rounds: int) -> dict[str, float]:
    """:func:`interleaved` medians of the :func:`candidates`, with ``"check alone"``: the median CPU seconds of the
    check inside the timed ``one pass`` calls (the warm-up call apart)."""
    calls, checks = candidates(layer, x, three)
    medians = interleaved(calls, rounds)
    medians["check alone"] = statistics.median(checks[1:])
    return medians


def interleaved(calls: dict[str, Callable[[], object]], rounds: int) -> dict[str, float]:
    """Median CPU seconds of each call over ``rounds`` rounds, every call once per round, after a warm-up."""
    for call in calls.values():
        call()
    times: dict[str, list[float]] = {name: [] for name in calls}
    for _ in range(rounds):
        for name, call in calls.items():
            start = time.process_time()
            call()
            times[name].append(time.process_time() - start)
    return {name: statistics.median(values) for name, values in times.items()}


def report(name: str, T: int, d: int, medians: dict[str, float]) -> None:
    forward, nothing, one = medians["forward"], medians["nothing"], medians["one pass"]
    bar = BAR_FORWARD.get(name, 3.0)
    on_forward = one / forward
    verdict_nothing = "meets" if one / nothing <= BAR_NOTHING else "MISSES"
    verdict_forward = ("meets" if on_forward <= bar else "MISSES") if T >= 512 else "(bar set at the long size)"
    three = medians.get("three passes")
    extra = f"; three passes {three / forward:5.1f}× fwd" if three is not None else ""
    unchecked = medians.get("check apart")
    if unchecked is not None:
        extra = f"; check apart {unchecked / forward:5.2f}× fwd, {unchecked / nothing:4.2f}× nothing" + extra
    print(f"{name:28s} T={T:5d} d={d:4d}  fwd {forward * 1e3:8.1f} ms  nothing {nothing / forward:4.2f}×  "
          f"one pass {on_forward:5.2f}× fwd ({verdict_forward} ≤ {bar:g}×), {one / nothing:4.2f}× nothing "
          f"({verdict_nothing} ≤ {BAR_NOTHING:g}×){extra}; load {os.getloadavg()[0]:.1f}", flush=True)
    check = medians.get("check alone")
    if check is not None:
        floor = nothing + check
        above = [f"{BAR_NOTHING:g}× nothing"] if floor / nothing > BAR_NOTHING else []
        if T >= 512 and floor / forward > bar:
            above.append(f"{bar:g}× fwd")
        print(f"{'':28s}   check alone {check / forward:5.2f}× fwd; floor (nothing + check) {floor / forward:5.2f}× fwd, "
              f"{floor / nothing:4.2f}× nothing: " + (f"above the bar{'s' if len(above) > 1 else ''} "
                                                      f"{' and '.join(above)}" if above else "below the bars"),
              flush=True)


@contextlib.contextmanager
def stage_timers(seconds: dict[str, float]):
    """CPU seconds spent in profile's stages, added up in ``seconds`` while the block runs (the functions are wrapped
    where profile and the traced pass look them up, and put back after)."""
    import seqlab.measure.paths as paths_module
    import seqlab.studies.profile as profile_module

    wrapped = [(profile_module, "measure_pass", "traced pass"), (paths_module, "check_paths", "perturbation check"),
               (profile_module, "read_signal_path", "signal path")]
    originals = [getattr(module, name) for module, name, _ in wrapped]

    def timed(function, label):
        def run(*args, **kwargs):
            start = time.process_time()
            try:
                return function(*args, **kwargs)
            finally:
                seconds[label] = seconds.get(label, 0.0) + time.process_time() - start
        return run

    for (module, name, label), original in zip(wrapped, originals):
        setattr(module, name, timed(original, label))
    try:
        yield
    finally:
        for (module, name, _), original in zip(wrapped, originals):
            setattr(module, name, original)


def profile_cost(name: str, module: torch.nn.Module, x: torch.Tensor, rounds: int) -> None:
    """seqlab.profile as a whole (signal path included) against a forward pass, interleaved; then its stages."""
    import seqlab

    def forward():
        with torch.no_grad():
            first(module(x))

    stages: dict[str, list[float]] = {}

    def profiled():
        seconds: dict[str, float] = {}
        with stage_timers(seconds):
            start = time.process_time()
            seqlab.profile(module, x)
            seconds["total"] = time.process_time() - start
        for label, value in seconds.items():
            stages.setdefault(label, []).append(value)

    medians = interleaved({"forward": forward, "profile": profiled}, rounds)
    ratio = medians["profile"] / medians["forward"]
    bar = BAR_PROFILE.get(name, 4.0)
    print(f"profile {name:20s} T={x.shape[-2]:5d} d={x.shape[-1]:4d}  {medians['profile']:7.2f} s CPU = {ratio:6.1f}× "
          f"fwd ({'meets' if ratio <= bar else 'MISSES'} ≤ {bar:g}×); load {os.getloadavg()[0]:.1f}", flush=True)
    runs = stages.pop("total")[1:]  # the warm-up call apart
    timed = {label: values[1:] for label, values in stages.items()}
    check = timed.get("perturbation check", [0.0] * len(runs))
    parts = {"traced pass (check apart)": [a - b for a, b in zip(timed.get("traced pass", [0.0] * len(runs)), check)],
             "perturbation check": check, "signal path": timed.get("signal path", [0.0] * len(runs))}
    parts["rest"] = [total - sum(values[i] for values in parts.values()) for i, total in enumerate(runs)]
    print("    " + "; ".join(f"{label} {statistics.median(values) / medians['forward']:.2f}×"
                             for label, values in parts.items()), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds (default 5)")
    parser.add_argument("--quick", action="store_true", help="only T = 128, d = 256")
    parser.add_argument("--no-profile", action="store_true", help="skip seqlab.profile as a whole")
    parser.add_argument("--no-three", action="store_true", help="skip the three separate passes")
    parser.add_argument("--profile-only", action="store_true", help="only seqlab.profile as a whole, with its stages")
    parser.add_argument("--layers", default="elman,attention,minilm",
                        help="profile's layers, comma-separated from elman, attention, minilm (default: all three)")
    options = parser.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    print(f"CPU time, 1 thread, PyTorch {torch.__version__}, {os.cpu_count()} cores; load {os.getloadavg()[0]:.1f}")
    sizes = SIZES[:1] if options.quick else SIZES
    if options.profile_only:
        whole(options, sizes, minilm() if "minilm" in options.layers.split(",") else None)
        return
    for T, d in sizes:
        for name, layer in layers(d).items():
            x = torch.randn(1, T, d)
            rounds = options.rounds if T < 512 else max(3, options.rounds // 2)
            report(name, T, d, timed_layer(layer, x, not options.no_three, rounds))
    encoder = minilm()
    if encoder is not None:
        for T in MINILM_LENGTHS[:1] if options.quick else MINILM_LENGTHS:
            x = torch.randn(1, T, 384)
            report("all-MiniLM-L6-v2", T, 384, timed_layer(encoder, x, not options.no_three, 3))
    if options.no_profile:
        return
    whole(options, sizes, encoder)


def whole(options, sizes, encoder) -> None:
    """seqlab.profile at the longest size, for the layers asked for."""
    T, d = sizes[-1]
    chosen = options.layers.split(",")
    rounds = max(3, options.rounds // 2)
    for key, name in (("elman", "Elman RNN"), ("attention", "self-attention")):
        if key in chosen:
            profile_cost(name, _module_of(name, d), torch.randn(1, T, d), rounds)
    if encoder is not None and "minilm" in chosen:
        profile_cost("all-MiniLM-L6-v2", encoder, torch.randn(1, MINILM_LENGTHS[-1] if T >= 512 else MINILM_LENGTHS[0],
                                                                  384), rounds)


def _module_of(name: str, d: int) -> torch.nn.Module:
    from seqlab.layers.attention import SelfAttention
    from seqlab.layers.recurrent import ElmanRNN

    generator = torch.Generator().manual_seed(0)
    return (ElmanRNN(d, d, generator=generator) if name == "Elman RNN" else SelfAttention(d, generator=generator)).eval()


if __name__ == "__main__":
    main()
