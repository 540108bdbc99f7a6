"""Decode time per new token at t = 4096, d = 256 on CPU: attention with a KV cache against the recurrences.

Not a test (tests never assert wall times): it prints, for each machine, the counted multiplications of the step
that generates position t, the state bytes it carries, the median ± IQR of the step's time, and the ratio
KV-cache time / machine time. The recurrences' state and work do not depend on t; the cache holds t keys and
values and each new query reads all of them. Two KV caches are timed: the one ``seqlab decode`` measures, which
grows by ``torch.cat`` (as Hugging Face's ``DynamicCache`` does: each step also copies the t rows), and a
preallocated one written in place (as a static cache does). Run from the repository root:

    python benchmarks/decode_cost.py [--t 4096] [--d-model 256] [--threads 1] [--min-run-time 0.5]

On a machine shared with other work the times read long and spread wide; the load average is printed first.
"""

from __future__ import annotations

import argparse

import torch

from seqlab.i18n import format_seconds
from seqlab.layers.decoding import KVCacheDecoder
from seqlab.measure.decode import available_machines, build_decoder, measure_decode_step
from seqlab.measure.timing import machine_load


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--t", type=int, default=4096, help="position of the new token (default 4096)")
    parser.add_argument("--d-model", type=int, default=256, help="every width (default 256)")
    parser.add_argument("--threads", type=int, default=1, help="CPU threads while timing (default 1)")
    parser.add_argument("--min-run-time", type=float, default=0.5, help="seconds of timed blocks per machine")
    parser.add_argument("--no-cache", action="store_true", help="also time attention without a cache (slow)")
    args = parser.parse_args()
    if args.t < 1 or args.d_model < 1 or args.threads < 1 or not args.min_run_time > 0:
        parser.error("--t, --d-model and --threads must be integers >= 1 and --min-run-time a number > 0")
    machines = [m for m in available_machines() if args.no_cache or m != "attention_no_cache"]
    load = machine_load()
    print(f"CPU, PyTorch {torch.__version__}, float32, batch 1, {args.threads} thread(s), t = {args.t}, "
          f"d_model = {args.d_model}; load average {load.load_1min} on {load.cpus} CPUs"
          f"{' (busy: times read long)' if load.busy else ''}")
    timing = {"threads": args.threads, "min_run_time": args.min_run_time, "load": load}
    steps = {m: measure_decode_step(m, args.t, d_model=args.d_model, **timing) for m in machines}
    static = KVCacheDecoder(build_decoder("attention_kv_cache", args.d_model).attention, capacity=args.t)
    steps["kv_cache_preallocated"] = measure_decode_step("attention_kv_cache", args.t, d_model=args.d_model,
                                                         decoder=static, **timing)
    cache = steps["attention_kv_cache"].timing.median_s
    static_s = steps["kv_cache_preallocated"].timing.median_s
    print(f"{'machine':<22}{'multiplications':>16}{'state bytes':>14}{'median ± IQR per token':>28}"
          f"{'KV cache / this':>18}{'preallocated / this':>22}")
    for machine, step in steps.items():
        timing = step.timing
        cell = f"{format_seconds(timing.median_s)} ± {format_seconds(timing.iqr_s)}"
        print(f"{machine:<22}{step.multiplications:>16,}{step.state_bytes:>14,}{cell:>28}"
              f"{cache / timing.median_s:>18.2f}{static_s / timing.median_s:>22.2f}")
    print(f"counted == closed form for every machine: "
          f"{all(s.multiplications == s.closed_form for s in steps.values())}")


if __name__ == "__main__":
    main()
