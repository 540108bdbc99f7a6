"""The mixers' benchmark scripts (benchmarks/scan_vs_loop.py, gpu_bench.py's mixer comparison) run and report
ratios computed from their own times; no wall time is asserted."""

import importlib.util
import sys
from pathlib import Path

import pytest
import torch

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def load(name: str):
    spec = importlib.util.spec_from_file_location(name, BENCHMARKS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # a dataclass looks its module up there
    spec.loader.exec_module(module)
    return module


def test_ratios_are_the_sequential_forms_time_over_each_form():
    bench = load("scan_vs_loop")
    times = [bench.FormTime("selective recurrence", "loop", 0.3, 0.01, 0.4, 5, 100),
             bench.FormTime("selective recurrence", "scan (Hillis-Steele)", 0.1, 0.01, 0.2, 5, 100),
             bench.FormTime("linear attention", "recurrent", 0.2, 0.01, 0.2, 5, 10),
             bench.FormTime("linear attention", "parallel", 0.8, 0.01, 0.9, 5, 40)]
    lines = bench.report(times)
    assert "  selective recurrence: loop / scan (Hillis-Steele) = 3.00" in lines  # 0.3 / 0.1
    assert "  linear attention: recurrent / parallel = 0.25" in lines  # 0.2 / 0.8
    times[1] = bench.FormTime("selective recurrence", "scan (Hillis-Steele)", 0.6, 0.01, 0.2, 5, 100)
    assert "  selective recurrence: loop / scan (Hillis-Steele) = 0.50" in bench.report(times)


def test_scan_vs_loop_runs_small_and_refuses_bad_sizes(capsys):
    bench = load("scan_vs_loop")
    assert bench.main(["--T", "16", "--d", "4", "--repeats", "3", "--chunk", "4"]) == 0
    out = capsys.readouterr().out
    assert "T = 16, d = 4" in out and "selective recurrence: loop / scan (Blelloch) = " in out
    # the printed multiplications are the closed forms: selective 4 * 16 * 4 * 4 = 1,024
    assert any(line.startswith("selective recurrence") and line.endswith(" 1,024") for line in out.splitlines())
    with pytest.raises(SystemExit) as exit_:
        bench.main(["--T", "0"])
    assert exit_.value.code == 2
    assert "--T must be an integer >= 1, received '0'" in capsys.readouterr().err


def test_gpu_bench_dry_run_times_the_mixers_on_the_cpu(monkeypatch, capsys):
    gpu = load("gpu_bench")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    threads = torch.get_num_threads()
    assert gpu.main(["--dry-run"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split(":")[0] for line in lines[1:]] == ["T = 16, d = 8 (cpu)", "T = 32, d = 8 (cpu)"]
    assert all("loop / scan" in line and "scan / SDPA" in line for line in lines[1:])
    assert torch.get_num_threads() == threads  # the timer's thread setting is restored
    assert str(BENCHMARKS) in sys.path  # gpu_bench found scan_vs_loop beside itself


def test_spans_option_prints_the_measured_spans_and_their_fits(capsys):
    assert load("scan_vs_loop").main(["--spans"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "[16, 18, 20, 22, 24]; fit log" in lines[1]  # Hillis-Steele: 8 + 2 log2 T
    assert "[38, 70, 134, 262, 518]; fit power" in lines[0]  # loop: 6 + 2 T
