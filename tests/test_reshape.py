"""[Note: reshape aliases] view/reshape/flatten/unsqueeze/squeeze of contiguous runs fold into the edge as
an alias slot over the same memory: nn.Linear on 3-D inputs, flatten before a matmul, views of slices."""
import pytest
import torch

import megakittens
import megakittens.backend as mk_backend
from common import randn, rel_err

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


def test_step_slice_of_the_last_dim_keeps_the_error():
    with pytest.raises(Exception, match="step"):
        megakittens.compile(lambda x: x[..., ::2] * 2.0)(randn(4, 16))


def test_as_strided_that_is_a_view():
    x = randn(2, 24)
    fn = lambda x: torch.as_strided(x * 2.0, (2, 24, 1), (24, 1, 1)).squeeze(-1)  # noqa: E731
    out = megakittens.compile(fn)(x)
    assert torch.equal(out, fn(x))
