"""The path engine on a curated subset of PyTorch's own op database (issue 21, item 5; harness: conformance.py).

One test per op, over its CPU float32 samples (the :data:`SAMPLES` smallest that fit :data:`MAX_INPUT` input and
:data:`MAX_OUTPUT` output elements, or its smallest within the harness's bounds):
no MISSED pair (a float64 Jacobian entry the engine has no path for), no EXTRA pair (a path nothing witnesses)
unless the sample was refused by name (its figure a stated bound), and no crash. The ops cover the kinds the
engine meets: point-wise, reductions, movement, products, composite activations, pooling, FFT, fills, complex
views, scatter and index. ``benchmarks/conformance.py`` runs every entry of both databases.
"""

from __future__ import annotations

import pytest
import torch

import conformance

#: op_db's sparse samples are built with to_sparse_csr(), which warns that the layout is in beta.
pytestmark = pytest.mark.filterwarnings("ignore:Sparse CSR tensor support is in beta:UserWarning")

#: Samples per op at most (each op's first ones that fit; enough to see its kinds of input, quick on one core).
SAMPLES = 4
#: Size bounds here, below the harness's (512 / 4096): a sample's witness search grows with its pairs.
MAX_INPUT, MAX_OUTPUT = 128, 1024

#: Op names (``op_db``: ``name`` or ``name.variant``) grouped by kind.
KINDS = {
    "point-wise": ["add", "mul", "sin", "nn.functional.relu", "where", "sigmoid"],
    "reduction": ["sum", "amax", "logsumexp", "cumsum", "softmax", "var", "max.reduction_with_dim", "sort"],
    "movement": ["permute", "transpose", "cat", "stack", "flip", "roll", "narrow", "index_select"],
    "product": ["mm", "bmm", "matmul", "addmm", "einsum", "nn.functional.linear", "outer"],
    "composite activation": ["nn.functional.logsigmoid", "nn.functional.glu", "nn.functional.hardswish",
                             "nn.functional.prelu", "nn.functional.rrelu"],
    "pooling": ["nn.functional.max_pool2d", "nn.functional.avg_pool2d", "nn.functional.adaptive_avg_pool1d"],
    "fft": ["fft.fft", "fft.rfft", "fft.ifft"],
    "fill": ["full_like", "ones_like", "zeros_like"],
    "complex view": ["view_as_complex", "complex", "polar"],
    "scatter and index": ["scatter", "scatter_add", "index_add", "gather", "masked_fill", "take",
                          "nn.functional.max_unpool2d"],
    "linear algebra": ["linalg.eigh", "linalg.qr", "linalg.cholesky"],
    "sparse (refused by name)": ["sparse.mm.reduce"],
}

#: Modules (``module_db``), built in eval mode from their own inputs.
MODULES = ["nn.Linear", "nn.Conv1d", "nn.GRU"]

#: Ops that still mismatch on main, each with what it does wrong (reported in the conformance findings for the
#: engine's owner). Strict: the day the engine is fixed, the test says so and the entry goes.
STILL_FAILING: dict[str, str] = {}
#: Ops whose engine answer changes from run to run (not strict: a run may pass by chance).
UNSTABLE: dict[str, str] = {}


def _param(name: str):
    if name in STILL_FAILING:
        return pytest.param(name, marks=pytest.mark.xfail(strict=True, reason=f"{name}: {STILL_FAILING[name]}"))
    if name in UNSTABLE:
        return pytest.param(name, marks=pytest.mark.xfail(strict=False, reason=f"{name}: {UNSTABLE[name]}"))
    return name


OPS = [_param(name) for names in KINDS.values() for name in names]


def _failures(results: list[conformance.Result]) -> list[str]:
    """What each failing sample did wrong, one line per sample."""
    lines = []
    for r in results:
        if r.coverage == "crashed":
            lines.append(f"#{r.index} {r.shapes}: crashed: {r.reason}")
        elif r.missed:
            lines.append(f"#{r.index} {r.shapes}: MISSED {r.missed} pairs, first (i, j) {r.missed_pairs}")
        elif r.extra and not r.extra_bound:
            lines.append(f"#{r.index} {r.shapes}: EXTRA {r.extra} pairs, first (i, j) {r.extra_pairs}")
    return lines


def _run(cases, work: bool = False) -> list[conformance.Result]:
    """The first :data:`SAMPLES` results within :data:`MAX_INPUT` / :data:`MAX_OUTPUT` that were not skipped (the
    op's smallest sample within the harness's own bounds when none is that small); an op that raised on its own
    fails."""
    results, fallback = [], None
    for case in sorted(cases, key=lambda c: sum(t.numel() for t in c.sources)):  # smallest first
        if len(results) == SAMPLES:
            break
        small = sum(t.numel() for t in case.sources) <= MAX_INPUT
        if not small and (results or fallback is not None):
            continue
        result = conformance.run_case(case, work=work, max_input=MAX_INPUT if small else None,
                                      max_output=MAX_OUTPUT if small else None)
        assert not (result.reason or "").startswith("the op itself raised"), result
        if result.coverage != "skipped":
            if small:
                results.append(result)
            else:
                fallback = result
    return results or ([fallback] if fallback is not None else [])


@pytest.mark.parametrize("name", OPS)
def test_op_agrees_with_its_jacobian(name: str) -> None:
    results = _run(conformance.op_cases([name]))
    assert results, f"{name}: no sample fits the harness's bounds"
    assert all(r.judged in ("jacobian", "perturbation") for r in results
               if r.coverage != "crashed" and not (r.reason or "").startswith("refused by the engine")), results
    assert _failures(results) == []


@pytest.mark.parametrize("name", MODULES)
def test_module_agrees_with_its_jacobian(name: str) -> None:
    results = _run(conformance.module_cases([name]))
    assert results, f"{name}: no input fits the harness's bounds"
    assert _failures(results) == []


def test_every_curated_name_is_in_the_databases() -> None:
    ops, modules = conformance.databases()
    names = [name for group in KINDS.values() for name in group]
    assert set(names) - {conformance.entry_name(info) for info in ops} == set()
    assert set(STILL_FAILING) | set(UNSTABLE) <= set(names)
    assert set(MODULES) - {info.name for info in modules} == set()


def test_a_missed_dependence_is_caught() -> None:
    """The harness's own check, on a case whose engine answer is known to be wrong: an identity whose
    engine pattern is emptied must show every diagonal pair as MISSED."""
    x = torch.arange(6.0).reshape(2, 3)
    case = conformance.Case("identity", "op", 0, [x], lambda ts: ts[0] * 2.0, lambda ts: ts[0] * 2.0)
    result = conformance.Result("identity", "op", 0, case.shapes, "exact")
    engine = torch.zeros(6, 6, dtype=torch.bool)  # (m, n): no path at all
    conformance._compare(case, result, engine, torch.ones(6, dtype=torch.bool), [x.reshape(-1) * 2.0])
    assert (result.missed, result.extra) == (6, 0)  # 2 * 3 diagonal pairs
    assert result.missed_pairs == [(0, 0), (1, 1), (2, 2), (3, 3), (4, 4)]


def test_an_unwitnessed_path_is_extra_and_a_relu_at_negatives_is_not() -> None:
    """EXTRA: a path where y_j cannot depend on x_i; relu's zero slope at negatives is witnessed (a move of
    x_i makes it positive), so an exact relu answer has no EXTRA."""
    x = torch.tensor([-1.0, 2.0, -3.0])
    relu = conformance.Case("relu", "op", 0, [x], lambda ts: ts[0].relu(), lambda ts: ts[0].relu())
    result = conformance.Result("relu", "op", 0, relu.shapes, "exact")
    conformance._compare(relu, result, torch.eye(3, dtype=torch.bool), torch.ones(3, dtype=torch.bool),
                         [x.relu()])
    assert (result.missed, result.extra) == (0, 0)
    result = conformance.Result("relu", "op", 0, relu.shapes, "exact")
    conformance._compare(relu, result, torch.ones(3, 3, dtype=torch.bool), torch.ones(3, dtype=torch.bool),
                         [x.relu()])
    assert (result.missed, result.extra) == (0, 6)  # 3 * 3 pairs less the 3 of the diagonal


def test_the_databases_leave_pytorch_as_it_was() -> None:
    conformance.databases()
    assert not torch.backends.flags_frozen()


@pytest.mark.parametrize("name", ["mm", "bmm", "addmm", "nn.functional.linear", "matmul", "outer"])
def test_op_work_agrees_with_flop_counter(name: str) -> None:
    """count_multiplications against FlopCounterMode / 2: equal where PyTorch has a formula; where it has none
    (aten.mv, aten.dot, an outer product) every multiplication is from a seqlab formula, named."""
    statuses = [r.work["status"] for r in _run(conformance.op_cases([name]), work=True)]
    assert set(statuses) <= {"agree", "seqlab only", "none"}, statuses
    assert "agree" in statuses or "seqlab only" in statuses


def test_work_of_a_matrix_product_is_counted_by_both() -> None:
    case = next(c for c in conformance.op_cases(["mm"]) if c.shapes == [(5, 10)])  # mm's first sample: (5, 10) @ (10, 5)
    work = conformance.compare_work(case)
    assert (work["status"], work["seqlab"], work["pytorch"]) == ("agree", 250, 250)  # 5 * 10 * 5 = 250


def test_module_work_agrees_with_flop_counter() -> None:
    results = _run(conformance.module_cases(["nn.Linear"]), work=True)
    # smallest first: Linear(3, 5) on an unbatched (3,): 3 * 5 = 15; Linear(10, 8) on (4, 10): 4 * 10 * 8 = 320
    assert [(r.shapes, r.work["seqlab"], r.work["pytorch"]) for r in results[:2]] == [([(3,)], 15, 15),
                                                                                     ([(4, 10)], 320, 320)]
    assert {r.work["status"] for r in results} == {"agree"}


@pytest.mark.parametrize("name", ["softmax", "matmul", "cat", "nn.functional.max_pool2d", "nn.functional.glu", "gather"])
def test_element_and_position_level_distances_give_the_same_pattern(name: str) -> None:
    """Two routes: the tracer's element-level distances (positions=False) and its position-level row form
    (positions=True) on the same samples give the same (m, n) dependence pattern."""
    cases = [c for c in conformance.op_cases([name]) if c.skip is None and 0 < sum(t.numel() for t in c.sources) <= 64]
    cases = cases[:2]
    assert cases
    for case in cases:
        n = sum(t.numel() for t in case.sources)
        scratch = conformance.Result(name, "op", case.index, case.shapes, "exact")
        element, _ = conformance._engine_pattern(conformance._engine(case, False), n, scratch)
        position, _ = conformance._engine_pattern(conformance._engine(case, True), n, scratch)
        assert torch.equal(element, position), (case.index, case.shapes)


def test_the_benchmark_prints_the_classes_and_writes_json(tmp_path, capsys) -> None:
    """benchmarks/conformance.py in-process on one op: its table and its JSON agree on the counts."""
    import importlib.util
    import json
    from pathlib import Path

    script = Path(__file__).resolve().parents[1] / "benchmarks" / "conformance.py"
    spec = importlib.util.spec_from_file_location("conformance_benchmark", script)
    benchmark = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(benchmark)
    out = tmp_path / "mm.json"
    assert benchmark.main(["--ops", "mm", "--no-modules", "--in-process", "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    results = json.loads(out.read_text())["results"]
    coverage = [r["coverage"] for r in results]
    assert "op_db: 1 entries" in printed
    assert f"  {'exact':<11} {coverage.count('exact'):>8} {1:>8}" in printed  # every run sample exact: one entry
    assert coverage.count("exact") >= 1 and set(coverage) <= {"exact", "skipped"}
    assert not any(r["mismatch"] for r in results)


def test_a_jacobian_entry_no_move_witnesses_is_autograd_only() -> None:
    """Two writes to one place keep one (the second, on CPU), while autograd's backward hands the gradient to both:
    the engine's answer for the lost write is not a MISSED pair, and the harness names it ``autograd_only``."""
    def call(ts):
        return ts[0].new_zeros(2).index_put((torch.tensor([0, 0]),), ts[0])

    x = torch.tensor([0.5, -1.5])
    assert call([x]).tolist() == [-1.5, 0.0]  # the second write lands
    case = conformance.Case("two writes", "op", 0, [x], call, lambda ts: call([ts[0].double()]))
    result = conformance.Result("two writes", "op", 0, case.shapes, "derived")
    engine = torch.tensor([[False, True], [False, False]])  # (m, n): output 0 reads input 1 only
    conformance._compare(case, result, engine, torch.ones(2, dtype=torch.bool), [call([x])])
    assert (result.missed, result.extra, result.autograd_only) == (0, 0, 1)
    assert result.autograd_only_pairs == [(0, 0)]
