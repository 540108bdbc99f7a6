"""How often the timing rule names a winner between two equally fast machines (issue 38; not a test).

Two machines of equal cost are timed through :func:`seqlab.measure.rounds.measure_rounds` on fake clocks, 7 rounds,
and judged by :func:`~seqlab.measure.rounds.decide` at margin 1.2. Other work on the computer is simulated as time
stolen from this process: it advances the wall clock, not this process's CPU clock. Two kinds of bursts:

* ``blocks`` — 30 % of the timed blocks are slowed 1.5–5× (a burst as long as a block);
* ``calls`` — 30 % of single calls are slowed 1.5–5×, the warm-up calls too (a burst as short as a call).

It prints, per kind, the false calls among ``--runs`` runs: by the quartiles alone, by the wall clock's rule
(quartiles and quickest rounds), and by the two clocks' rule that :func:`decide` applies. The figures go into
:data:`seqlab.measure.rounds.FALSE_CALLS` and the module docstring.

    python benchmarks/false_calls.py [--runs 20000]
"""

from __future__ import annotations

import argparse
import random

from seqlab.measure import rounds as rounds_module
from seqlab.measure.timing import MachineLoad

QUIET = MachineLoad(0.0, 2, False)
COST = 1e-3
MARGIN = rounds_module.MARGIN  # the one time-win margin of every front end


class Clocks:
    """A wall clock and a CPU clock; machines advance both by their cost, bursts the wall clock alone."""

    def __init__(self) -> None:
        self.wall = 0.0
        self.cpu = 0.0

    def machine(self, steal):
        def call():
            self.wall += COST + steal()
            self.cpu += COST
        return call


def one_run(kind: str, rng: random.Random) -> tuple[bool, bool, bool]:
    clocks = Clocks()
    block = {"slow": False}
    if kind == "calls":
        def steal():
            return COST * rng.uniform(0.5, 4.0) if rng.random() < 0.3 else 0.0
    else:
        def steal():
            return COST * block["factor"] if block["slow"] else 0.0
    functions = {name: clocks.machine(steal) for name in ("a", "b")}
    if kind == "blocks":  # the slowdown is drawn once per block, at the block's first call
        def wrap(function):
            state = {"left": 0}

            def call():
                if state["left"] == 0:
                    block["slow"] = rng.random() < 0.3
                    block["factor"] = rng.uniform(0.5, 4.0)
                    state["left"] = 10
                state["left"] -= 1
                function()
            return call
        functions = {name: wrap(f) for name, f in functions.items()}
    measured = rounds_module.measure_rounds(functions, rounds=7, block_seconds=10 * COST, threads=1, load=QUIET,
                                            clock=lambda: clocks.wall, cpu_clock=lambda: clocks.cpu)
    a, b = measured.per_round["a"], measured.per_round["b"]
    ratios = [x / y for x, y in zip(a, b)]
    low, high = rounds_module._quartiles(tuple(ratios))
    quartiles = low > MARGIN or high < 1 / MARGIN
    wall = rounds_module.classify(a, b, MARGIN) in ("a_first", "b_first")
    both = rounds_module.decide(measured, "a", "b", MARGIN).faster is not None
    return quartiles, wall, both


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20_000)
    args = parser.parse_args()
    for kind in ("blocks", "calls"):
        rng = random.Random(0)
        counts = [0, 0, 0]
        for _ in range(args.runs):
            for i, called in enumerate(one_run(kind, rng)):
                counts[i] += called
        print(f"{kind}: false calls in {args.runs:,} runs — quartiles alone {counts[0]}, wall clock's rule "
              f"{counts[1]}, two clocks {counts[2]}")


if __name__ == "__main__":
    main()
