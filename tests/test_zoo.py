"""The zoo (seqlab.zoo, seqlab.studies.zoo, seqlab.render.zoo): a sample of families checked by two routes, the kinds
read from measurements, closed forms of the cache, the real size on meta, resuming, and the shipped page.

Two routes per sampled family (issue 40): the engine's path matrix against the float64 Jacobian
(:func:`seqlab.zoo.checks.compare_paths`), its work against PyTorch's ``FlopCounterMode`` formulas
(:func:`seqlab.zoo.checks.compare_work`), and the cache's bytes as the zoo reads them
(:func:`seqlab.measure.cache_state.read_cache_state`) against a naive walk of the cache object written here.
"""

from __future__ import annotations

import dataclasses
import json
import pickle
from pathlib import Path

import pytest
import torch

pytest.importorskip("transformers")

from seqlab.zoo import measure, shrink  # noqa: E402
from seqlab.zoo.checks import compare_paths, compare_work  # noqa: E402

#: 40 families, cheap at T = 8, of every kind: full attention, windowed, linear or state-space, hybrid, mixture of
#: experts, encoders.
SAMPLE = ("qwen2", "qwen3", "llama", "gpt2", "opt", "mpt", "bloom", "phi3", "persimmon", "stablelm", "granite",
          "olmo", "gpt_neox", "codegen", "gptj", "nemotron", "biogpt", "ctrl",
          "mistral", "ministral", "starcoder2", "gemma2",
          "mamba", "rwkv",
          "jamba", "lfm2",
          "mixtral", "olmoe",
          "bert", "roberta", "distilbert", "albert", "electra", "deberta-v2", "esm", "camembert", "fnet",
          "nomic_bert", "data2vec-text", "rembert")


def _naive_bytes(cache: object) -> int:
    """Bytes of every floating storage reachable from ``cache`` through attributes, lists, tuples and dicts, each
    storage once: the second route to the zoo's cache bytes."""
    seen: set[int] = set()
    total = 0
    stack, visited = [cache], set()
    while stack:
        value = stack.pop()
        if isinstance(value, torch.Tensor):
            key = value.untyped_storage().data_ptr()
            if value.is_floating_point() and key not in seen:
                seen.add(key)
                total += value.untyped_storage().nbytes()
            continue
        if id(value) in visited:
            continue
        visited.add(id(value))
        if isinstance(value, dict):
            stack.extend(value.values())
        elif isinstance(value, (list, tuple)):
            stack.extend(value)
        elif hasattr(value, "__dict__") and not isinstance(value, (torch.nn.Module, type)):
            stack.extend(vars(value).values())
    return total


@pytest.mark.parametrize("model_type", SAMPLE)
def test_a_sampled_family_agrees_by_two_routes(model_type):
    fam = shrink.family(model_type)
    paths = compare_paths(fam.layer, fam.x)
    assert paths.verdict == "equal", (paths.extra, paths.missing, paths.fallbacks)
    work = compare_work(fam.layer, fam.x, no_grad=False)
    assert work.differing == {} and work.verdict in ("equal", "equal+beyond"), work
    assert work.seqlab >= work.pytorch > 0
    x = shrink.embeddings(5, fam.x.shape[-1])
    try:
        _, _, cache = measure._decode_step(fam.model, x, 5, lambda function: function())
    except shrink.Refused:  # an encoder: its forward returns no cache to walk
        assert not getattr(fam.model.config, "is_decoder", False)
        return
    assert measure._read_state(fam.model, cache).total_bytes == _naive_bytes(cache) > 0


@pytest.fixture(scope="module")
def rows(tmp_path_factory, worker_id):
    """Two families of every kind, measured once per test run through the study (the results file is reused by the
    CLI tests), with the rows as measured.

    Once per run, not per xdist worker: a worker that meets this module's tests after another has (work-stealing
    hands the module's last tests to whichever worker is idle at the end) waits on a lock and takes the first
    worker's results file and its measured rows, pickled (exact: every float as it was measured), instead of
    measuring the twelve families a second time.
    """
    from filelock import FileLock

    from seqlab.studies.zoo import ZooConfig, run_zoo

    shared = tmp_path_factory.getbasetemp().parent if worker_id != "master" else tmp_path_factory.mktemp("zoo")
    path, measured = shared / "zoo-rows.jsonl", shared / "zoo-rows.pickle"
    with FileLock(str(shared / "zoo-rows.lock")):
        if measured.exists():
            return pickle.loads(measured.read_bytes()), path  # noqa: S301 - written by this run's other worker
        result = run_zoo(ZooConfig(families=KIND_FAMILIES), results=path)
        by_name = {row.family: row for row in result.rows}
        measured.write_bytes(pickle.dumps(by_name))
    return by_name, path


#: Two families of each kind, as the zoo measures them (kind read from paths and the decode cache); of two alike,
#: the cheaper to measure (ministral's window rather than mistral's, bamba's Mamba-2 hybrid rather than jamba's,
#: nemotron rather than qwen2, deepseek_v2's experts rather than olmoe's: those four stay in :data:`SAMPLE`); rwkv
#: stays, the one linear family that is not a Mamba.
KINDS = {"llama": "full", "nemotron": "full", "gemma2": "windowed", "ministral": "windowed", "mamba": "linear",
         "rwkv": "linear", "bamba": "hybrid", "lfm2": "hybrid", "mixtral": "moe", "deepseek_v2": "moe",
         "bert": "encoder", "distilbert": "encoder"}
KIND_FAMILIES = tuple(KINDS)


@pytest.mark.parametrize("family", KIND_FAMILIES)
def test_the_kind_is_read_from_the_measurements(rows, family):
    row = rows[0][family]
    assert row.refused is None and row.kind == KINDS[family] and row.kind_from == "measured"
    assert row.causal is (KINDS[family] != "encoder")
    p = row.prefill
    assert p.work_exact and p.paths_exact and p.T == (4, 8, 16)
    assert len(p.multiplications) == 3 and p.multiplications[0] < p.multiplications[1] < p.multiplications[2]
    if row.kind == "encoder":
        assert row.decode is None and "encoder" in row.missing["decode"]
        return
    growth = row.decode.bytes_growth
    assert growth == {"full": "linear", "moe": "linear", "windowed": "linear + capped", "linear": "constant",
                      "hybrid": "constant + linear"}[row.kind] or (row.kind == "windowed" and growth == "capped")


def test_attention_work_grows_as_t_squared_and_a_state_space_span_as_t(rows):
    by_name = rows[0]
    assert by_name["llama"].prefill.work_form == "T²"  # attention's 2·T²·d term
    assert by_name["mamba"].prefill.work_form == "T" and by_name["mamba"].prefill.span_form == "T"  # a scan loop


@pytest.mark.parametrize("family", ["llama", "nemotron"])
def test_full_attention_cache_is_its_closed_form(rows, family):
    """2 (keys, values) · layers · H_kv · d_h · t · 8 bytes (float64) in the tiny twin, at every t."""
    row = rows[0][family]
    config = shrink.tiny_config(family)
    H_kv = config.num_key_value_heads or config.num_attention_heads
    d_h = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
    assert row.decode.cache_bytes == tuple(2 * config.num_hidden_layers * H_kv * d_h * t * 8 for t in row.decode.t)


def test_the_real_size_is_read_from_shapes_alone(rows):
    """Llama's defaults: 32 layers, 32 key-value heads of 128, float32: 2 · 32 · 32 · 128 · 4 = 1,048,576 bytes per
    position; and its decode step against FlopCounterMode on the same meta call."""
    real = rows[0]["llama"].real
    assert real.dtype == "float32" and real.cache_bytes == 2 * 32 * 32 * 128 * 4 * real.t
    assert real.parameters == 6_607_343_616 and real.prefill_multiplications > real.T * real.decode_multiplications // 2
    from torch.utils.flop_counter import FlopCounterMode

    model = shrink.build_config(shrink.real_config("llama"), dtype=torch.float32, device="meta")
    x = torch.empty(1, 9, 4096, device="meta")
    from seqlab.measure.work import count_multiplications

    _, ours, _ = measure._decode_step(model, x, 9, count_multiplications)
    mode = FlopCounterMode(display=False)

    def pytorch(function):
        with mode:
            function()

    measure._decode_step(model, x, 9, pytorch)
    theirs = {str(op): n // 2 for op, n in mode.get_flop_counts()["Global"].items()}
    assert all(ours.by_op.get(op) == n for op, n in theirs.items())


def test_a_state_space_real_prefill_over_the_budget_is_named(rows):
    row = rows[0]["mamba"]
    assert row.real.prefill_multiplications is None and "budget" in row.missing["real prefill"]
    assert row.real.decode_multiplications > 0 and row.real.t < row.real.T


def test_a_results_file_resumes_and_rows_read_back_equal(rows, tmp_path):
    from seqlab.studies.zoo import ZooConfig, run_zoo

    by_name, path = rows
    again = run_zoo(ZooConfig(families=("llama", "bert")), results=path)
    assert again.resumed == 2 and [r.family for r in again.rows] == ["llama", "bert"]
    assert again.rows[0] == by_name["llama"] and again.rows[1] == by_name["bert"]
    only = run_zoo(ZooConfig(families=KIND_FAMILIES, kinds=("linear",)), results=path)
    assert [r.family for r in only.rows] == ["mamba", "rwkv"] and only.resumed == len(KIND_FAMILIES)


def test_a_refused_family_names_why():
    row = measure.measure_family("whisper")
    assert row.refused.startswith("forward: ") and "input_features" in row.refused and row.kind is None


def test_the_shrinker_reads_sizes_by_attribute_name():
    tiny = shrink.tiny_config("mixtral")
    assert (tiny.hidden_size, tiny.num_hidden_layers, tiny.num_local_experts, tiny.num_experts_per_tok) == \
        (shrink.WIDTH, 2, 4, 2)
    assert shrink.tiny_config("gemma2").sliding_window == 3


def test_the_kind_falls_back_to_the_config_words():
    for family in ("jamba", "zamba2"):  # attention placed by period, by a per-layer list of block types
        assert measure.kind_of(True, None, None, shrink.tiny_config(family)) == ("hybrid", "config")
    assert measure.kind_of(True, None, None, shrink.tiny_config("mamba2")) == ("linear", "config")
    assert measure.kind_of(True, None, 8, shrink.tiny_config("llama")) == ("moe", "config")


def test_the_shipped_page_is_the_shipped_dataset():
    """docs/outputs/zoo.md (.es.md) is zoo_markdown of seqlab/data/zoo.json, and the dataset validates."""
    import sys

    from seqlab.render.json_output import schema
    from seqlab.studies.zoo import shipped_catalogue

    jsonschema = pytest.importorskip("jsonschema")
    root = Path(__file__).resolve().parents[1]
    document = json.loads((root / "src" / "seqlab" / "data" / "zoo.json").read_text(encoding="utf-8"))
    assert list(jsonschema.Draft202012Validator(schema("zoo")).iter_errors(document)) == []
    catalogue = shipped_catalogue()
    assert catalogue.planned == len(shrink.model_types())
    assert catalogue.measured + catalogue.refused == len(catalogue.rows) <= catalogue.planned
    assert catalogue.partial or len(catalogue.rows) == catalogue.planned  # an interrupted run says so
    sys.path.insert(0, str(root / "docs"))
    try:
        import generate_outputs
    finally:
        sys.path.remove(str(root / "docs"))
    for name in ("zoo", "zoo.es"):
        assert (root / "docs" / "outputs" / f"{name}.md").read_text(encoding="utf-8") == generate_outputs.TABLES[name]()
    assert dataclasses.asdict(catalogue)["rows"][0]["family"] == catalogue.rows[0].family
