"""The path claims of ``seqlab check``: how position 1 reaches position T, and how strongly (L3, L4).

One function per claim, ``check_lN(sizes, seed)``, returning a :class:`~seqlab.studies.verdicts.Judgement`.

====  =====================================================================================================
L3    least products from x_1 to h_T through the Elman loop (= T: W_xh, then T-1 by W_hh); the per-step
      factor of ‖∂h_T/∂x_i‖ (autograd, float64) over a grid of spectral radii ρ, at h = 0 (no input: the
      bare repeated product) and *with inputs* (tanh working, median of a few draws); the ρ at which growth
      starts with inputs; LSTM and GRU paths (ops grow with T, products stay flat: the additive bypass)
L4    least products from x_1 to y_T through self-attention at two T (the same); ‖∂y_T/∂x_1‖ at several T
      and the exponent k of its fit ≈ c·T^k (dilution of the one weight α_T1 by the softmax over T keys)
====  =====================================================================================================

Verdicts, with their margins:

* L3 does not hold when the path is not T products, when a gated layer's path does not grow in ops from the
  shorter T to the longer or grows in products (no bypass), when a radius below 1 does not shrink the signal (factor >= 1 - :data:`GROWTH_MARGIN`, at h = 0 or with
  inputs), or when inputs make the factor larger than at h = 0 by more than the margin (tanh can only
  shrink). It holds with a caveat when, with inputs, growth (factor > 1 + :data:`GROWTH_MARGIN`) needs a
  radius above :data:`ONSET_SLACK`, or never starts within the grid (tanh saturates); it holds when growth
  with inputs starts at ρ <= :data:`ONSET_SLACK`.
* L4 does not hold when the path differs between the two T, or is not shorter than T1 − 1 products (a chain's
  length at the shorter T), or the gradient does not reach position 1 (a reach of 0 at some T). It holds with a
  caveat when the reach changes with T faster than T^±:data:`FLAT_EXPONENT` (measured: about 1/T): the
  path stays one weight long, but that weight shrinks as T grows. Otherwise it holds.

Shapes: T positions, d one width for all.
"""

from __future__ import annotations

import statistics

from seqlab.studies.claims import CheckSizes, claim_generator
from seqlab.studies.verdicts import Judgement, power_trend, verdict_of

#: L3: a per-step factor counts as growth above 1 + this, as decay below 1 - this.
GROWTH_MARGIN = 0.05
#: L3: growth that starts at a radius above this (with inputs) is growth "well above 1": a caveat.
ONSET_SLACK = 1.25
#: L4: a reach exponent within ±this counts as "does not depend on T".
FLAT_EXPONENT = 0.25


def _gated_paths(sizes: CheckSizes, x_rows: list) -> dict[str, list[tuple[int, int]]]:
    """(products, ops) from x_1 to h_T of a PyTorch LSTM and GRU at each T (weights from the seeded global RNG)."""
    import torch

    from seqlab.measure.paths import measure_paths

    gated: dict[str, list[tuple[int, int]]] = {"lstm": [], "gru": []}
    for name, kind in (("lstm", torch.nn.LSTM), ("gru", torch.nn.GRU)):
        layer = kind(sizes.width, sizes.width, batch_first=True).eval()
        for x in x_rows:
            matrix = measure_paths(lambda rows, layer=layer: layer(rows)[0], x[None], sources=(0,))  # (1, T, d)
            gated[name].append((matrix.products[0][-1], matrix.ops[0][-1]))
    return gated


def _factors(sizes: CheckSizes, seed: int) -> dict[float, tuple[float, float]]:
    """Per radius: the per-step factor of ‖∂h_T/∂x_i‖ at h = 0 and the median with inputs (float64, T the
    longer path length, no bias so that h = 0 is a fixed point where tanh' = 1)."""
    import torch

    from seqlab.layers.recurrent import ElmanRNN
    from seqlab.measure.reach import measure_reach

    d, T, g = sizes.width, sizes.path_lengths[1], claim_generator(seed, 4)
    loop = ElmanRNN(d, d, bias=False, generator=g, dtype=torch.float64).eval()
    draws = [torch.randn(T, d, generator=g, dtype=torch.float64) for _ in range(sizes.reach_draws)]  # (T, d)
    factors = {}
    for radius in sizes.radii:
        loop.set_spectral_radius(radius)
        at_zero = measure_reach(loop, torch.zeros(T, d, dtype=torch.float64)).decay_per_step()
        with_inputs = statistics.median(measure_reach(loop, x).decay_per_step() for x in draws)
        factors[radius] = (at_zero, with_inputs)
    return factors


def check_l3(sizes: CheckSizes, seed: int) -> Judgement:
    """L3: x_1 reaches h_T after T-1 products by W_hh; below ρ = 1 the signal shrinks; above, it grows only
    once ρ is large enough with inputs (measured); LSTM and GRU keep a path that grows in ops along a
    bypass that crosses no W_hh. Verdict rules: the module docstring."""
    import torch

    from seqlab.layers.recurrent import ElmanRNN
    from seqlab.measure.paths import measure_paths

    d, g = sizes.width, claim_generator(seed, 3)
    rnn = ElmanRNN(d, d, generator=g).eval()
    x_rows = [torch.randn(T, d, generator=g) for T in sizes.path_lengths]  # (T, d_model) each
    paths = [measure_paths(rnn, x, sources=(0,)).products[0][-1] for x in x_rows]
    gated = _gated_paths(sizes, x_rows)
    factors = _factors(sizes, seed)
    below = [r for r in factors if r < 1]
    onset = next((r for r, (_, inputs) in factors.items() if inputs > 1 + GROWTH_MARGIN), None)
    onset_at_zero = next((r for r, (zero, _) in factors.items() if zero > 1 + GROWTH_MARGIN), None)
    broken = {
        "path": paths != list(sizes.path_lengths),
        "gated": not all(p[0][1] < p[1][1] and p[0][0] == p[1][0] for p in gated.values()),
        "no_decay_below_1": any(max(factors[r]) >= 1 - GROWTH_MARGIN for r in below),
        "inputs_grow": any(inputs > zero * (1 + GROWTH_MARGIN) for zero, inputs in factors.values()),
    }
    caveats = [] if onset is not None and onset <= ONSET_SLACK else ["growth_needs_large_radius"]
    condition = {"rule": "decay_below_1_growth_onset", "growth_margin": GROWTH_MARGIN, "onset_slack": ONSET_SLACK,
                 "radii": sizes.radii, "onset_with_inputs": onset, "onset_at_zero": onset_at_zero,
                 "failed": [name for name, bad in broken.items() if bad], "caveats": caveats}
    return Judgement(verdict_of(any(broken.values()), caveats),
                     {"lengths": sizes.path_lengths, "path_products": tuple(paths),
                      "whh_products": tuple(p - 1 for p in paths), "reach_length": sizes.path_lengths[1],
                      "factors": factors, "draws": sizes.reach_draws, "onset_with_inputs": onset,
                      "lstm_path_products_ops": tuple(gated["lstm"]), "gru_path_products_ops": tuple(gated["gru"])},
                     condition)


def check_l4(sizes: CheckSizes, seed: int) -> Judgement:
    """L4: position 1 reaches position T through self-attention in the same few products at any T, and the
    gradient comes back along it; its size, ‖∂y_T/∂x_1‖, measured against T. Verdict rules: the module
    docstring."""
    import torch

    from seqlab.layers.attention import SelfAttention
    from seqlab.measure.paths import measure_paths
    from seqlab.measure.reach import measure_reach

    g = claim_generator(seed, 5)
    layer = SelfAttention(sizes.width, generator=g, dtype=torch.float64).eval()

    def attend(rows):
        return layer(rows)[0]  # (T, d_v)

    paths = [measure_paths(attend, torch.randn(T, sizes.width, generator=g, dtype=torch.float64),
                           sources=(0,)).products[0][-1] for T in sizes.path_lengths]
    reach = {}
    for T in sizes.reach_lengths:
        draws = [measure_reach(attend, torch.randn(T, sizes.width, generator=g, dtype=torch.float64)).first
                 for _ in range(sizes.reach_draws)]
        reach[T] = statistics.median(draws)  # ‖∂y_T/∂x_1‖, median over input draws
    reaches = all(value > 0 for value in reach.values())
    exponent = power_trend(list(reach), list(reach.values())) if reaches else None
    flat_path = paths[0] == paths[1] is not None and paths[1] < sizes.path_lengths[0] - 1
    caveats = [] if exponent is None or abs(exponent) <= FLAT_EXPONENT else ["weight_shrinks_with_T"]
    condition = {"rule": "constant_path_reach_exponent", "flat_exponent": FLAT_EXPONENT, "exponent": exponent,
                 "failed": [name for name, bad in (("path", not flat_path), ("reach", not reaches)) if bad],
                 "caveats": caveats}
    return Judgement(verdict_of(not (flat_path and reaches), caveats),
                     {"lengths": sizes.path_lengths, "path_products": tuple(paths), "reach": reach,
                      "reach_exponent": exponent, "draws": sizes.reach_draws}, condition)
