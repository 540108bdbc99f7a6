"""The faithful Mamba block (seqlab.layers.mamba_block) against two references, in float64.

1. Transformers' ``MambaMixer`` (its PyTorch path, the one that runs without CUDA kernels) with the same state dict;
2. the paper's sequential reference re-written here from Algorithm 2, loop over t, one line per equation.
Then: loop = scan = step by step, the work counter = the closed form, and the path engine's causal pattern.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from seqlab.errors import SeqlabError
from seqlab.layers.mamba_block import MambaBlock, mamba_block_multiplications

WIDTHS = [dict(d_model=4, d_state=3, d_conv=2, expand=2, dt_rank=1),
          dict(d_model=6, d_state=5, d_conv=4, expand=1, dt_rank=2)]


def _block(form: str, seed: int = 0, **widths) -> MambaBlock:
    return MambaBlock(**widths, form=form, generator=torch.Generator().manual_seed(seed), dtype=torch.float64).eval()


def _x(B: int, T: int, d: int, seed: int = 1) -> torch.Tensor:
    return torch.randn(B, T, d, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


def paper_reference(block: MambaBlock, x: torch.Tensor) -> torch.Tensor:
    """Algorithm 2 of Gu & Dao (2023) and Figure 3's block, step by step (x (B, T, d_model), float64)."""
    B, T, _ = x.shape
    E, N, R, k = block.d_inner, block.d_state, block.dt_rank, block.d_conv
    W_in, W_x, W_dt, b_dt = block.in_proj.weight, block.x_proj.weight, block.dt_proj.weight, block.dt_proj.bias
    conv_w, conv_b = block.conv1d.weight[:, 0, :], block.conv1d.bias  # (E, k), (E,)
    A = -torch.exp(block.A_log)  # (E, N)
    out = torch.zeros(B, T, block.d_model, dtype=x.dtype)
    for b in range(B):
        u_raw, z = (x[b] @ W_in.T).split([E, E], dim=-1)  # (T, E)
        h = torch.zeros(E, N, dtype=x.dtype)
        for t in range(T):
            window = torch.stack([u_raw[t - k + 1 + j] if t - k + 1 + j >= 0 else torch.zeros(E, dtype=x.dtype)
                                  for j in range(k)], dim=-1)  # (E, k): inputs t-k+1 … t, zeros before the start
            u = F.silu((window * conv_w).sum(-1) + conv_b)  # (E,)
            low, B_t, C_t = (u @ W_x.T).split([R, N, N])
            delta = F.softplus(low @ W_dt.T + b_dt)  # (E,)
            h = torch.exp(delta[:, None] * A) * h + delta[:, None] * B_t[None, :] * u[:, None]  # (E, N)
            y = h @ C_t + block.D * u  # (E,)
            out[b, t] = (y * F.silu(z[t])) @ block.out_proj.weight.T
    return out


@pytest.mark.parametrize("widths", WIDTHS)
@pytest.mark.parametrize("form", ["loop", "scan"])
def test_the_block_matches_the_papers_sequential_reference(form, widths):
    block = _block(form, **widths)
    x = _x(2, 9, widths["d_model"])
    torch.testing.assert_close(block(x), paper_reference(block, x), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("widths", WIDTHS)
def test_the_block_matches_transformers_mamba_mixer(widths):
    from transformers import MambaConfig
    from transformers.models.mamba.modeling_mamba import MambaMixer

    config = MambaConfig(hidden_size=widths["d_model"], state_size=widths["d_state"], conv_kernel=widths["d_conv"],
                         expand=widths["expand"], time_step_rank=widths["dt_rank"], use_bias=False,
                         use_conv_bias=True, hidden_act="silu", num_hidden_layers=1, use_mambapy=False)
    block = _block("scan", **widths)
    mixer = MambaMixer(config, layer_idx=0).to(torch.float64).eval()
    missing, unexpected = mixer.load_state_dict(block.state_dict(), strict=False)
    assert missing == [] and unexpected == []
    x = _x(2, 7, widths["d_model"], seed=3)
    with torch.no_grad():  # the mixer takes A = -exp(A_log.float()) in float32, so agreement is to float32's A
        torch.testing.assert_close(block(x), mixer(x), rtol=1e-6, atol=1e-9)


def test_loop_scan_and_steps_agree():
    widths = WIDTHS[1]
    loop, scan = _block("loop", **widths), _block("scan", **widths)
    x = _x(2, 11, widths["d_model"])
    torch.testing.assert_close(loop(x), scan(x), rtol=1e-12, atol=1e-12)
    state, steps = loop.initial_state(2), []
    for t in range(x.shape[1]):
        y_t, state = loop.step(x[:, t], state)
        steps.append(y_t)
    torch.testing.assert_close(torch.stack(steps, dim=1), loop(x), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize(("T", "widths"), [(8, WIDTHS[0]), (5, WIDTHS[1])])
def test_work_equals_its_closed_form(T, widths):
    from seqlab.measure.work import count_multiplications

    for form in ("loop", "scan"):
        count = count_multiplications(_block(form, **widths), _x(3, T, widths["d_model"]))
        assert count.complete and count.multiplications == mamba_block_multiplications(T, **widths, batch=3)


def test_paths_are_causal_with_the_scan_shorter_than_the_loop():
    """Every output position reads only earlier ones; the scan's chain of waits is shorter than the loop's."""
    from seqlab.measure.paths import measure_paths
    from seqlab.measure.trace import measure_span

    widths, T = WIDTHS[0], 8
    x = _x(1, T, widths["d_model"])
    for form in ("loop", "scan"):
        paths = measure_paths(_block(form, **widths), x)
        assert paths.exact
        assert all((paths.ops[i][j] is not None) == (j >= i) for i in range(T) for j in range(T))
    spans = {form: measure_span(_block(form, **widths), x).ops for form in ("loop", "scan")}
    assert spans["scan"] < spans["loop"]


def test_bad_sizes_and_inputs_are_refused():
    with pytest.raises(SeqlabError, match="d_state"):
        MambaBlock(4, d_state=0)
    with pytest.raises(SeqlabError, match="form"):
        MambaBlock(4, form="fast")
    with pytest.raises(SeqlabError, match=r"\(B, T, 4\)"):
        _block("loop", **WIDTHS[0])(torch.zeros(2, 3, 5, dtype=torch.float64))


@pytest.mark.parametrize("batch", [1, 3])
def test_a_decode_step_equals_its_closed_form(batch):
    from seqlab.cost import mamba_block_step_multiplications
    from seqlab.measure.work import count_multiplications

    widths = WIDTHS[1]
    block = _block("loop", **widths)
    state = block.initial_state(batch)
    count = count_multiplications(lambda x_t: block.step(x_t, state)[0], _x(batch, 1, widths["d_model"])[:, 0])
    assert count.complete and count.multiplications == mamba_block_step_multiplications(**widths, batch=batch)


def test_one_position_counts_the_decay_as_a_gate():
    from seqlab.measure.work import count_multiplications

    widths = WIDTHS[0]
    count = count_multiplications(_block("scan", **widths), _x(1, 1, widths["d_model"]))
    assert count.multiplications == mamba_block_multiplications(1, **widths)
