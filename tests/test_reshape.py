"""[Note: reshape aliases] view/reshape/flatten/unsqueeze/squeeze of contiguous runs fold into the edge as
an alias slot over the same memory: nn.Linear on 3-D inputs, flatten before a matmul, views of slices."""
import pytest
import torch

import megakittens
import megakittens.backend as mk_backend
from common import randn, rel_err
from test_sdpa_math import assert_gpu_bodies

TOL = 1e-2


def _check(fn, *args, seeds=(0,), global_work_queue=False):
    compiled = megakittens.compile(fn, global_work_queue=global_work_queue)
    ref = fn(*args)
    out = compiled(*args)
    d = mk_backend.dispatchers[-1]
    for seed in seeds:
        d.seed = seed
        out = compiled(*args)
        outs, refs = (out, ref) if isinstance(out, (tuple, list)) else ((out,), (ref,))
        for o, r in zip(outs, refs):
            assert o.shape == r.shape and rel_err(o, r) <= TOL, f"seed {seed}: {rel_err(o, r)}"
    return d


def test_linear_on_3d_input():
    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Linear(256, 384), torch.nn.ReLU(), torch.nn.Linear(384, 128, bias=False))
    m = m.to(torch.bfloat16)
    x = randn(2, 48, 256)
    with torch.no_grad():
        d = _check(m, x)
    assert any(b >= 0 for b in d.program.slot_base)  # the (2, 48, 256) -> (96, 256) views are aliases


@pytest.mark.parametrize("global_work_queue", [False, True])
def test_reshape_chain_interleavings(global_work_queue):
    def f(x, w):
        y = torch.relu(x.reshape(-1, 128) @ w)         # (4, 32, 128) -> (128, 128)
        z = y.view(4, 32, 64).unsqueeze(1)            # (4, 1, 32, 64)
        return torch.neg(z).squeeze(1).flatten(0, 1)  # (128, 64)

    _check(f, randn(4, 32, 128), randn(128, 64, scale=128 ** -0.5), seeds=range(20),
           global_work_queue=global_work_queue)


def test_view_of_a_slice_and_returned_reshape():
    def f(W, x):
        w1 = W[1].view(64, 256)        # a contiguous slice reshaped
        y = torch.abs(x @ w1)
        return y.view(-1), W[2].reshape(256, 64)

    W, x = randn(3, 128, 128), randn(32, 64)
    outs = megakittens.compile(f)(W, x)
    refs = f(W, x)
    for o, r in zip(outs, refs):
        assert o.shape == r.shape and rel_err(o, r) <= TOL
    assert outs[1].data_ptr() == W[2].data_ptr()  # returned views alias the caller's tensor


def test_reshape_of_a_transposed_view_copies():
    """AOTAutograd turns it into clone (a transposing Copy) + view (an alias of the copy)."""
    def f(x):
        return torch.relu(x.t().reshape(-1))

    d = _check(f, randn(64, 32))
    assert [n.itype for n in d.program.nodes] == ["Copy(src=32)", "ElementwiseUnary(ops=relu)"]


def test_transposed_3d_copy_then_view():
    """A batch-dim transpose (rows along backing dim 1) copied, then viewed flat (an alias of the copy)."""
    def f(x):
        return torch.relu(x.transpose(0, 1).contiguous().view(-1)) * 2

    d = _check(f, randn(16, 24, 8))
    assert [n.itype for n in d.program.nodes][0] == "Copy(src=13)"


def test_step_slices_of_a_grid_become_views():
    """Swin's patch merging: the four phases x[:, a::2, b::2, :] of a 2 x 2 grid, concatenated; each step slice
    a view with its phases merged into the next dim and a unit-step slice (megakittens/views.py), exact."""
    def merge(x):
        return torch.cat([x[:, 0::2, 0::2, :], x[:, 1::2, 0::2, :], x[:, 0::2, 1::2, :], x[:, 1::2, 1::2, :]], -1)

    x = randn(2, 8, 12, 32)
    out = megakittens.compile(merge)(x)
    assert torch.equal(out, merge(x))


def focus(x):  # YOLOv5's Focus: the 2 x 2 phases of the map stacked on the channels
    return torch.cat([x[..., ::2, ::2], x[..., 1::2, ::2], x[..., ::2, 1::2], x[..., 1::2, 1::2]], 1)


def levit_subsample(x, H=8, W=8):  # LeViT's Subsample: every other token of the (H, W) grid
    B, _, C = x.shape
    return x.view(B, H, W, C)[:, ::2, ::2].reshape(B, -1, C) * 2.0


@pytest.mark.parametrize("name,fn,shape", [
    ("last", lambda x: x[..., ::2] * 2.0, (4, 16)),
    ("last_start_end", lambda x: x[..., 2:15:3] * 2.0, (4, 16)),               # a window of 12 at phase 0
    ("last_odd_n", lambda x: x[..., 1::2] * 2.0, (4, 5)),                      # n not a multiple of the step
    ("last_past_the_window", lambda x: x[..., ::3] * 2.0, (4, 7)),             # 3 picks, 7 < 9: a Cat
    ("last_4d", lambda x: x[:, :, :, 3::4] * 2.0, (2, 3, 5, 13)),              # two leading dims merged
    ("last_of_a_permute", lambda x: x.permute(0, 3, 1, 2)[..., 1::2] * 2.0, (2, 5, 4, 8)),  # a contiguous copy
    ("dim1_odd_n", lambda x: x[:, 1::2] * 2.0, (2, 5, 4, 8)),
    ("1d", lambda x: x[1::2] * 2.0, (16,)),
    ("returned", lambda x: x[..., 1::2], (4, 16)),
    ("focus", focus, (2, 3, 8, 6)),
    ("levit", levit_subsample, (2, 64, 16)),
    ("levit_odd", lambda x: levit_subsample(x, 7, 7), (2, 49, 16)),
])
def test_step_slices_of_any_dim_match_eager(name, fn, shape):
    """x[..., a:b:s] of the last dim, and of other dims with any start, end and size: a split of the dim and a
    select of the phase, read through a Copy (megakittens/views.py); exact."""
    x = randn(*shape)
    out, ref = megakittens.compile(fn)(x), fn(x)
    assert out.shape == ref.shape and torch.equal(out, ref)
    assert_gpu_bodies()


def test_step_slices_without_fusion_match_eager():
    """With fuse=False even rotate_every_two's step-2 slices (left to the RoPE fusion when it is on) are views."""
    fn = lambda x: torch.stack((-x[..., 1::2], x[..., ::2]), -1).flatten(-2) * x  # noqa: E731
    x = randn(4, 16, 32)
    out, ref = megakittens.compile(fn, fuse=False)(x), fn(x)
    assert torch.equal(out, ref)


def test_as_strided_that_is_a_view():
    x = randn(2, 24)
    fn = lambda x: torch.as_strided(x * 2.0, (2, 24, 1), (24, 1, 1)).squeeze(-1)  # noqa: E731
    out = megakittens.compile(fn)(x)
    assert torch.equal(out, fn(x))


@pytest.mark.parametrize("form", ["product", "fp32_tables"])
def test_rope_like_step_slices_that_do_not_fuse(form):
    """Step slices shaped like an interleaved RoPE's (left for src/trace/fuse_rope.cpp under fuse=True) that the
    fusion then does not take (no cos term; fp32 sin / cos beside a bf16 x) are compiled again as views."""
    def f(x, c, s):
        rot = torch.stack((-x[..., 1::2], x[..., ::2]), -1).flatten(-2)
        return rot * s if form == "product" else x * c + rot * s

    tables = torch.float32 if form == "fp32_tables" else torch.bfloat16
    x, c, s = randn(2, 8, 16), torch.randn(8, 16).to(tables), torch.randn(8, 16).to(tables)
    out, ref = megakittens.compile(f)(x, c, s), f(x, c, s)
    assert out.dtype == ref.dtype and rel_err(out, ref) <= 1e-2
