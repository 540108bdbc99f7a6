"""Issue 13, the census half: nested tensors (kind 3), in-place twins in the work census (kind 4), the span
of PyTorch's own LSTM/GRU cells (kind 5), side effects (kind 8), ``profile mymod:factory`` (kind 10) and
storage identity without ``_cdata``. Each kind: the issue's input and a second input of the same kind.
"""

from __future__ import annotations

import sys
import threading

import pytest
import torch
from torch import nn
from typer.testing import CliRunner

from seqlab.cli import app
from seqlab.measure import ops, trace
from seqlab.measure.modules import measure_submodules
from seqlab.measure.switches import SharedSwitch, evaluation_mode, reference_kernels
from seqlab.measure.trace import measure_span
from seqlab.measure.work import count_multiplications
from seqlab.studies.profile import load_factory, profile

aten = torch.ops.aten
NESTED_WARNING = "ignore:The PyTorch API of nested tensors is in prototype stage:UserWarning"
ENV = {"COLUMNS": "200", "NO_COLOR": "1", "FORCE_COLOR": None, "TTY_COMPATIBLE": None}


# --- Kind 3: nested tensors are counted on real tokens ------------------------------------------------------

def encoder(d: int, heads: int, d_ff: int, layers: int) -> nn.TransformerEncoder:
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(d, heads, d_ff, dropout=0, batch_first=True)
    return nn.TransformerEncoder(layer, layers).eval()


def padding_mask(lengths: list[int], T: int) -> torch.Tensor:
    return torch.arange(T)[None, :] >= torch.tensor(lengths)[:, None]  # (B, T), True on padding


@pytest.mark.filterwarnings(NESTED_WARNING)
@pytest.mark.parametrize(("sizes", "lengths", "real", "padded"), [
    # issue's input: per layer and sequence 4 T d² + 2 T² d + 2 T d d_ff = 512 T + 16 T²;
    # T = 5, 2, 4: 2 layers * (512 * 11 + 16 * 45) = 12_704; padded 2 * 3 * (512 * 5 + 16 * 25) = 17_760
    ((8, 2, 16, 2), [5, 2, 4], 12_704, 17_760),
    # 1 layer, d = 16, d_ff = 32: 4 T 256 + 2 T² 16 + 2 T 16 32 = 2048 T + 32 T²; T = 6, 1, 3:
    # 2048 * 10 + 32 * 46 = 21_952; padded 3 * (2048 * 6 + 32 * 36) = 40_320
    ((16, 4, 32, 1), [6, 1, 3], 21_952, 40_320),
])
def test_nested_fast_path_counts_real_tokens(sizes, lengths, real, padded):
    model = encoder(*sizes)
    x = torch.randn(len(lengths), max(lengths), sizes[0])  # (B, T, d)
    with torch.no_grad():
        work = count_multiplications(lambda z: model(z, src_key_padding_mask=padding_mask(lengths, x.shape[1])), x)
        alone = sum(count_multiplications(model, x[i:i + 1, :n]).multiplications for i, n in enumerate(lengths))
    assert work.calls["aten._transformer_encoder_layer_fwd"] == sizes[3]  # the fast path ran, on nested tensors
    assert (work.multiplications, work.padded_multiplications) == (real, padded)
    assert work.multiplications == alone  # the sum over each sequence run alone
    assert work.complete and work.unaccounted == {}


@pytest.mark.filterwarnings(NESTED_WARNING)
def test_user_nested_tensors_count_each_sequence():
    a = torch.nested.nested_tensor([torch.randn(2, 3), torch.randn(4, 3)])  # sequences of 2 and 4 rows
    b = torch.nested.nested_tensor([torch.randn(3, 5), torch.randn(3, 5)])
    for product in (torch.bmm, torch.matmul):
        counted = count_multiplications(product, a, b)
        assert (counted.multiplications, counted.padded_multiplications) == ((2 + 4) * 3 * 5, 2 * 4 * 3 * 5)
        assert counted.complete  # 90 on real rows, 120 padded
    linear = nn.Linear(3, 6)
    counted = count_multiplications(linear, a)  # PyTorch's own counter would decompose linear and raise
    assert (counted.multiplications, counted.padded_multiplications) == ((2 + 4) * 3 * 6, 2 * 4 * 3 * 6)
    assert counted.by_module["Linear"] == 108 and counted.complete
    dense = count_multiplications(torch.bmm, torch.randn(2, 4, 3), torch.randn(2, 3, 5))
    assert dense.padded_multiplications is None  # no nested tensor: no bound to report


@pytest.mark.filterwarnings(NESTED_WARNING)
@pytest.mark.parametrize("lengths", [[5, 2, 4], [3]])
def test_padded_model_profiles_and_its_submodules_measure(lengths):
    model = encoder(8, 2, 16, 2)

    class Padded(nn.Module):
        def __init__(self, mask):
            super().__init__()
            self.encoder, self.mask = model, mask

        def forward(self, x):
            return self.encoder(x, src_key_padding_mask=self.mask)

    T = 5
    result = profile(Padded(padding_mask(lengths, T)), torch.randn(len(lengths), T, 8))
    assert result.complete and result.unaccounted == {} and result.path.fallbacks == {}
    # per layer and sequence 512 n + 16 n² (see above); padded: every sequence as long as the longest, m
    m = max(lengths)
    assert result.multiplications == 2 * sum(512 * n + 16 * n * n for n in lengths)
    assert result.padded_multiplications == 2 * len(lengths) * (512 * m + 16 * m * m)
    one = Padded(padding_mask(lengths[:1], T)).double().eval()
    rows = measure_submodules(one, torch.randn(1, T, 8, dtype=torch.float64), names=["encoder", "encoder.layers.0"])
    n = lengths[0]
    for row in rows:  # real positions read real positions only: the padding is masked out of every score
        assert all(row.strength[j][i] == 0.0 for j in range(n) for i in range(n, T))
        assert all(row.strength[j][i] > 0.0 for j in range(n) for i in range(n))


# --- Kind 4 (census): in-place twins of point-wise ops ------------------------------------------------------

def _all_overloads():
    for name in dir(aten):
        packet = getattr(aten, name)
        if isinstance(packet, torch._ops.OpOverloadPacket):
            yield from (getattr(packet, overload) for overload in packet.overloads())


def test_every_in_place_twin_is_sorted_like_its_out_of_place_form():
    sorted_like_twin = 0
    for func in _all_overloads():
        twin = ops.functional_twin(func)
        if twin is func:
            continue
        if not ops.is_unknown(twin):
            assert not ops.is_unknown(func), func
            sorted_like_twin += 1
        if ops.is_uncounted_compute(twin):
            assert ops.is_uncounted_compute(func), func
        if ops.is_contraction(twin) and torch.Tag.inplace in func.tags:
            assert ops.is_contraction(func), func
    assert sorted_like_twin > 100  # a real sweep, not an empty loop
    assert ops.is_unknown(aten._to_sparse.default)  # and an op with no twin and no rule stays unknown


def test_threshold_in_place_is_point_wise():
    model = nn.Sequential(nn.Linear(4, 4), nn.Threshold(0.1, 0.0, inplace=True))
    work = count_multiplications(model, torch.randn(1, 3, 4))
    assert work.calls["aten.threshold_"] == 1 and work.unaccounted == {}
    assert work.multiplications == 3 * 4 * 4  # 48: the Linear only
    span = measure_span(model, torch.randn(1, 3, 4))
    assert (span.ops, span.products) == (2, 1)  # addmm, then threshold_


def test_scores_masked_in_place_and_in_place_products():
    def causal_attention(x):  # (T, d)
        scores = x @ x.T  # (T, T)
        causal = torch.ones(len(x), len(x), dtype=torch.bool).tril()
        scores.masked_fill_(~causal, float("-inf"))
        return torch.softmax(scores, dim=-1) @ x

    work = count_multiplications(causal_attention, torch.randn(5, 8))
    assert work.calls["aten.masked_fill_"] == 1 and work.unaccounted == {}
    assert work.multiplications == 2 * 5 * 5 * 8  # 400: scores and mix, the causal saving not counted
    c, a, b = torch.zeros(3, 5), torch.randn(3, 4), torch.randn(4, 5)
    in_place = count_multiplications(lambda: aten.gelu_(c.addmm_(a, b)).eq_(0.0))
    assert in_place.multiplications == 3 * 4 * 5 and in_place.unaccounted == {}  # 60 for addmm_, like addmm
    assert in_place.source == "pytorch"  # addmm_ counted with PyTorch's own addmm formula


@pytest.fixture()
def fresh_rules():
    """The op rules are cached per op: start and end with empty caches when a test patches one."""
    ops.forget_decisions()
    yield
    ops.forget_decisions()


def test_census_sees_a_wrong_rule(fresh_rules, monkeypatch):  # caches cleared after the patch is undone
    monkeypatch.setattr(ops, "functional_twin", lambda func: func)  # the old rule: tags only
    model = nn.Sequential(nn.Linear(4, 4), nn.Threshold(0.1, 0.0, inplace=True))
    assert count_multiplications(model, torch.randn(1, 3, 4)).unaccounted == {"aten.threshold_": 1}
    assert not profile(model, torch.randn(1, 3, 4)).complete  # and profile's verdict follows the census


# --- Kind 5: the span of PyTorch's own gated cells ----------------------------------------------------------

def gru_oracle(gru: nn.GRU):
    """nn.GRU's CPU cell (ATen's GRUCell) with the same ops in the same order, every one out of place."""
    def direction(x, suffix, reverse):  # x (T, B, d)
        w_ih, w_hh = getattr(gru, f"weight_ih_l0{suffix}"), getattr(gru, f"weight_hh_l0{suffix}")
        b_ih, b_hh = getattr(gru, f"bias_ih_l0{suffix}"), getattr(gru, f"bias_hh_l0{suffix}")
        T, B, d = x.shape
        gi = torch.addmm(b_ih, x.reshape(T * B, d), w_ih.t()).view(T, B, -1)  # every step's input gates at once
        h, out = torch.zeros(B, gru.hidden_size), []
        for t in (reversed(range(T)) if reverse else range(T)):
            i_r, i_z, i_n = gi[t].chunk(3, 1)
            h_r, h_z, h_n = torch.addmm(b_hh, h, w_hh.t()).chunk(3, 1)
            reset, update = torch.sigmoid(h_r + i_r), torch.sigmoid(h_z + i_z)
            new = torch.tanh(i_n + h_n * reset)
            h = (h - new) * update + new
            out.append(h)
        return torch.stack(out[::-1] if reverse else out)
    return direction


def lstm_oracle(lstm: nn.LSTM):
    """nn.LSTM's CPU cell (ATen's LSTMCell) with the same ops in the same order, every one out of place."""
    def direction(x, suffix, reverse):
        w_ih, w_hh = getattr(lstm, f"weight_ih_l0{suffix}"), getattr(lstm, f"weight_hh_l0{suffix}")
        b_ih, b_hh = getattr(lstm, f"bias_ih_l0{suffix}"), getattr(lstm, f"bias_hh_l0{suffix}")
        T, B, d = x.shape
        gi = torch.addmm(b_ih, x.reshape(T * B, d), w_ih.t()).view(T, B, -1)
        h = c = torch.zeros(B, lstm.hidden_size)
        out = []
        for t in (reversed(range(T)) if reverse else range(T)):
            i, f, g, o = (torch.addmm(b_hh, h, w_hh.t()) + gi[t]).chunk(4, 1)
            i, f, g, o = torch.sigmoid(i), torch.sigmoid(f), torch.tanh(g), torch.sigmoid(o)
            c = f * c + i * g
            h = o * torch.tanh(c)
            out.append(h)
        return torch.stack(out[::-1] if reverse else out)
    return direction


def run_oracle(module, direction, x):
    """Both directions when bidirectional, joined along the features as nn.GRU / nn.LSTM do; x (T, B, d)."""
    forward = direction(x, "", False)
    return torch.cat([forward, direction(x, "_reverse", True)], -1) if module.bidirectional else forward


GATED = [
    (nn.GRU, 2, 3, False, (4, 2)),  # the input: nn.GRU(2, 3), T = 4, unbatched
    (nn.GRU, 3, 4, True, (3, 2, 3)),  # bidirectional, batch 2: the gates are strided slices
    (nn.LSTM, 2, 3, False, (5, 2)),
    (nn.LSTM, 3, 5, True, (4, 2, 3)),
]


@pytest.mark.parametrize(("kind", "d", "hidden", "bidirectional", "shape"), GATED,
                         ids=["gru-issue", "gru-bi-batched", "lstm", "lstm-bi-batched"])
def test_gated_span_equals_an_out_of_place_cell(kind, d, hidden, bidirectional, shape):
    torch.manual_seed(0)
    module = kind(d, hidden, bidirectional=bidirectional).eval()
    x = torch.randn(*shape)
    x3 = x if x.dim() == 3 else x[:, None]  # (T, B, d)
    oracle = lstm_oracle(module) if kind is nn.LSTM else gru_oracle(module)
    expected = measure_span(run_oracle, module, oracle, x3)
    measured = measure_span(module, x)
    with torch.no_grad():  # the oracle computes what the module computes
        torch.testing.assert_close(run_oracle(module, oracle, x3), module(x3)[0])
    assert (measured.ops, measured.products) == (expected.ops, expected.products)
    assert measured.total_ops == expected.total_ops  # the same ops, only in place
    assert measured.products == shape[0]  # one product by W_hh per step, both directions side by side
    assert measured.ops == shape[0] * (9 if kind is nn.GRU else 7)  # 9 ops a step for GRU, 7 for LSTM


@pytest.mark.parametrize(("kind", "per_step"), [(nn.GRU, 9), (nn.LSTM, 7)])
def test_profile_reports_the_gated_span_complete(kind, per_step):
    result = profile(kind(2, 3, batch_first=True), torch.randn(1, 4, 2))
    assert result.complete and (result.span_ops, result.span_products) == (4 * per_step, 4)
    assert result.path.last_to_first_products is None  # no path from the future


def test_profile_of_an_in_place_threshold_is_complete_without_false_paths():
    model = nn.Sequential(nn.Linear(4, 4), nn.Threshold(0.1, 0.0, inplace=True))
    result = profile(model, torch.randn(1, 3, 4))
    assert result.complete and result.unaccounted == {}
    assert (result.path.first_to_last_products, result.path.last_to_first_products) == (None, None)


def test_storage_granularity_over_counts_the_gru(monkeypatch):
    """The measurement the span stands on: with one depth per storage the issue's 44 comes back."""
    monkeypatch.setattr(trace._StorageDepth, "write_part", lambda self, tensor, depth: False)
    assert measure_span(nn.GRU(2, 3), torch.randn(4, 2)).ops == 44  # 11 a step: the gates chained


def test_partial_writes_still_order_what_they_touch():
    def write_slices(x):  # x (2, 3)
        buffer = x.exp()  # 1
        buffer[0].sin_()  # 2: row 0
        buffer[0].cos_()  # 3: row 0 again, after the sin_
        buffer[1].neg_()  # 2: row 1 is independent of row 0
        return buffer[1] * 2.0, buffer[:, 0] + 1.0  # 3 (row 1), 4 (column 0 reaches row 0)

    span = measure_span(write_slices, torch.randn(2, 3))
    assert (span.ops, span.total_ops) == (4, 6)


def test_a_copy_into_one_row_does_not_wait_for_another_rows_chain():
    def rows(x, fresh):  # x (2, 3), fresh (3,)
        buffer = x.exp()  # 1
        for _ in range(3):
            buffer[1].sin_()  # 2, 3, 4: row 1 only
        buffer[0].copy_(fresh)  # movement into row 0, which is still at depth 1
        return buffer[0].cos()  # 2

    span = measure_span(rows, torch.randn(2, 3), torch.randn(3))
    assert (span.ops, span.total_ops) == (4, 5)  # one depth per storage: the cos after row 1's chain, 5


def test_arguments_written_without_being_returned():
    def foreach(x):
        pair = [x.exp(), x.sin()]  # 1, 1
        torch._foreach_mul_(pair, 2.0)  # 2: writes both, returns nothing
        return pair[0].cos()  # 3

    assert measure_span(foreach, torch.randn(3)).ops == 3


def test_identity_without_cdata_on_meta_tensors():
    def two_chains(x, y):
        x.exp().exp().exp()  # 3 ops in a row
        return y.sin() * 2.0  # 2 ops: must not read the first chain (meta storages have no data pointer)

    span = measure_span(two_chains, torch.empty(4, device="meta"), torch.empty(4, device="meta"))
    assert (span.ops, span.total_ops) == (3, 5)


# --- Kind 8: side effects -----------------------------------------------------------------------------------

def switches() -> tuple:
    cuda = torch.backends.cuda
    return (torch.backends.mha.get_fastpath_enabled(), torch.backends.mkldnn.enabled, cuda.flash_sdp_enabled(),
            cuda.mem_efficient_sdp_enabled(), cuda.math_sdp_enabled(), cuda.cudnn_sdp_enabled())


def flags(module: nn.Module) -> list[bool]:
    return [m.training for m in module.modules()]


@pytest.mark.parametrize("build", [
    lambda: _with_modes(nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5)), train=True, evaluated=["1"]),
    lambda: _with_modes(nn.Sequential(nn.Linear(4, 4), nn.Sequential(nn.BatchNorm1d(3), nn.Dropout(0.1))),
                        train=False, trained=["1.0"]),
], ids=["train-with-eval-dropout", "eval-with-train-batchnorm"])
def test_profile_gives_every_flag_back(build):
    model = build()
    before = flags(model)
    profile(model, torch.randn(1, 3, 4))
    assert flags(model) == before


def _with_modes(model: nn.Module, *, train: bool, evaluated=(), trained=()) -> nn.Module:
    model.train(train)
    for name in evaluated:
        model.get_submodule(name).eval()
    for name in trained:
        model.get_submodule(name).train()
    return model


def test_profile_gives_global_switches_back_even_when_not_default():
    model = nn.MultiheadAttention(8, 2, batch_first=True)
    attention = lambda x: model(x, x, x)  # noqa: E731
    before = switches()
    profile(attention, torch.randn(1, 4, 8))
    assert switches() == before
    torch.backends.mha.set_fastpath_enabled(False)
    torch.backends.cuda.enable_cudnn_sdp(False)
    try:
        changed = switches()
        profile(attention, torch.randn(1, 4, 8))
        assert switches() == changed
    finally:
        torch.backends.mha.set_fastpath_enabled(before[0])
        torch.backends.cuda.enable_cudnn_sdp(before[5])


def test_reference_kernels_hold_while_another_thread_leaves():
    before = switches()
    both_inside, first_left = threading.Event(), threading.Event()
    entered, seen = threading.Event(), {}

    def first():  # enters first, leaves first
        with reference_kernels():
            entered.set()
            both_inside.wait(10)
            seen["both inside"] = switches()
        first_left.set()

    def second():  # enters second, still measuring when the first leaves
        entered.wait(10)
        with reference_kernels():
            both_inside.set()
            first_left.wait(10)
            seen["after the other left"] = switches()

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(20)
    reference = (False, False, False, False, True, False)  # fast path, oneDNN, flash, efficient, math, cuDNN
    assert seen == {"both inside": reference, "after the other left": reference}
    assert switches() == before


def test_two_threads_profile_one_module_at_once():
    model = _with_modes(nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5), nn.LSTM(4, 4, batch_first=True)),
                        train=True, evaluated=["1"])
    before, global_before, errors = flags(model), switches(), []
    barrier = threading.Barrier(2)

    def work():
        try:
            for _ in range(3):
                barrier.wait(10)
                profile(model, torch.randn(1, 3, 4))
        except Exception as error:  # noqa: BLE001 - reported below
            errors.append(error)

    threads = [threading.Thread(target=work) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert errors == []
    assert flags(model) == before and switches() == global_before


def test_a_naive_save_and_restore_leaks():
    """What the shared switch prevents: overlapping holders that save and restore on their own."""
    box = {"on": True}
    naive_saved = []
    naive_saved.append(box["on"])
    box["on"] = False  # thread A saves True, sets False
    naive_saved.append(box["on"])
    box["on"] = False  # thread B saves False, sets False
    box["on"] = naive_saved[0]  # A leaves first: restores True while B still measures
    box["on"] = naive_saved[1]  # B leaves: restores False for good
    assert box["on"] is False
    switch = SharedSwitch("demo", lambda: box["on"], lambda value: box.update(on=value))
    box["on"] = True
    first, second = switch.held(False), switch.held(False)
    first.__enter__()
    second.__enter__()
    first.__exit__(None, None, None)  # the first holder leaves first
    assert box["on"] is False  # the second still measures with the switch held
    second.__exit__(None, None, None)
    assert box["on"] is True and switch.holds == 0


def test_evaluation_mode_nests():
    model = _with_modes(nn.Sequential(nn.Linear(2, 2), nn.Dropout()), train=True, evaluated=["1"])
    with evaluation_mode(model):
        with evaluation_mode(model):
            assert flags(model) == [False, False, False]
        assert flags(model) == [False, False, False]
    assert flags(model) == [True, True, False]


# --- Kind 10: the factory's module in the current folder ----------------------------------------------------

FACTORY = "import torch\n\ndef {name}(d_model):\n    return torch.nn.RNN(d_model, d_model, batch_first=True)\n"


def test_cli_finds_a_module_in_the_current_folder(tmp_path, monkeypatch):
    (tmp_path / "seqlab_kind10_mymod.py").write_text(FACTORY.format(name="factory"))
    monkeypatch.chdir(tmp_path)
    monkeypatch.delitem(sys.modules, "seqlab_kind10_mymod", raising=False)
    path_before = list(sys.path)
    result = CliRunner().invoke(app, ["profile", "seqlab_kind10_mymod:factory", "--seq-len", "3", "--d-model", "2",
                                      "--json"], env=ENV)
    assert result.exit_code == 0, result.output
    assert '"multiplications": 24' in result.output  # 3 * (4 + 4)
    assert sys.path == path_before  # the folder was on the path for the import only
    monkeypatch.delitem(sys.modules, "seqlab_kind10_mymod")


def test_package_in_the_current_folder_importing_a_sibling_when_called(tmp_path, monkeypatch):
    package = tmp_path / "seqlab_kind10_pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "layers.py").write_text("def make(d_model):\n    import seqlab_kind10_helper\n"
                                       "    return seqlab_kind10_helper.build(d_model)\n")
    (tmp_path / "seqlab_kind10_helper.py").write_text(FACTORY.format(name="build"))
    monkeypatch.chdir(tmp_path)
    for name in ("seqlab_kind10_pkg", "seqlab_kind10_pkg.layers", "seqlab_kind10_helper"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    assert callable(load_factory("seqlab_kind10_pkg.layers:make"))
    result = CliRunner().invoke(app, ["profile", "seqlab_kind10_pkg.layers:make", "--seq-len", "2", "--d-model",
                                      "3", "--json"], env=ENV)
    assert result.exit_code == 0, result.output
    assert '"multiplications": 36' in result.output  # 2 * (9 + 9)
    for name in ("seqlab_kind10_pkg", "seqlab_kind10_pkg.layers", "seqlab_kind10_helper"):
        monkeypatch.delitem(sys.modules, name, raising=False)
