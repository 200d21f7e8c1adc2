"""Whole graphs through megakittens.compile on the CPU reference interpreter, against eager PyTorch.

Tolerance (DESIGN §8): relative Frobenius error <= 1e-2, no NaN (intermediates are NaN-poisoned, so an
unwritten tile shows up as inf error).
"""
import warnings

import pytest
import torch
import torch.nn.functional as F

import megakittens
import megakittens.backend as mk_backend
from megakittens import _C
from common import check_close, check_interleavings, many_slots, many_slots_inputs, mlp, mlp_inputs, randn

mk = torch.ops.megakittens




# --- the seed MLP ------------------------------------------------------------------------------------

@pytest.mark.parametrize("M,H", [(512, 512), (1024, 512), (1024, 1024)])
def test_mlp(M, H):
    args = mlp_inputs(M, H)
    check_close(megakittens.compile(mlp)(*args), mlp(*args))


def mlp_sliced(W, x, b):
    """The MLP over W[1:] (a slice view on W) and b[1:]: two layers."""
    return mlp(W[1:], x, b[1:])


def test_mlp_sliced_weights():
    args = mlp_inputs(256, 256)
    check_close(megakittens.compile(mlp_sliced)(*args), mlp_sliced(*args))


# --- every IType in one graph ------------------------------------------------------------------------

def mixed(x, y, g, W, A3, B3, q, k, v, k1, v1):
    """x, y (64, 128); g (128,); W (128, 128); A3 (2, 64, 32), B3 (2, 32, 64); q, k, v (1, 2, 64, 64);
    k1, v1 (1, 1, 64, 64) (GQA for the custom attention)."""
    u = torch.exp(torch.neg(torch.abs(x)))                       # unary chain, in (0, 1]
    s = torch.add(u, y, alpha=0.5)                               # binary with alpha
    d = torch.sub(s, x, alpha=2.0) * u / torch.sqrt(u)           # sub(alpha), mul, div, sqrt
    e = torch.maximum(d, y) - torch.minimum(d, x)
    n = mk.rms_norm(e, g, 1e-5)
    h = torch.relu(n @ W)                                        # mm
    bm = torch.bmm(A3, B3)                                       # bmm
    o1 = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    o2 = F.scaled_dot_product_attention(q, k, v, scale=0.3)
    c1 = mk.elementwise_unary(h, "abs,sqrt,neg")
    c2 = mk.elementwise_binary(c1, y, "sub", 0.25)
    c3 = mk.gemm(c2, W)
    c4 = mk.attention(q, k1, v1, True, 0.125)
    return c3, bm, o1, o2, c4


def mixed_inputs():
    return (randn(64, 128), randn(64, 128), randn(128), randn(128, 128, scale=128 ** -0.5),
            randn(2, 64, 32), randn(2, 32, 64, scale=32 ** -0.5),
            randn(1, 2, 64, 64), randn(1, 2, 64, 64), randn(1, 2, 64, 64),
            randn(1, 1, 64, 64), randn(1, 1, 64, 64))


def test_mixed_graph():
    args = mixed_inputs()
    check_close(megakittens.compile(mixed)(*args), mixed(*args))


def torch_rms_norm(x, g):
    return F.rms_norm(x, (x.shape[-1],), g, eps=1e-5)


class LlamaRMSNorm(torch.nn.Module):
    """Hugging Face's Llama RMSNorm, as written there: fp32 statistics, cast back, weight in bf16."""

    def __init__(self, hidden: int, eps: float = 1e-6):
        super().__init__()
        self.weight = torch.nn.Parameter(randn(hidden), requires_grad=False)
        self.variance_epsilon = eps

    def forward(self, hidden_states):
        input_dtype = hidden_states.dtype
        hidden_states = hidden_states.to(torch.float32)
        variance = hidden_states.pow(2).mean(-1, keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)
        return self.weight * hidden_states.to(input_dtype)


def test_torch_rms_norm():
    """F.rms_norm arrives decomposed on a CPU torch; the tracer fuses it back into one RMSNorm."""
    args = randn(64, 128), randn(128)
    check_close(megakittens.compile(torch_rms_norm)(*args), torch_rms_norm(*args))
    assert mk_backend.dispatchers[-1].program.icodes[1:] == ["RMSNorm(eps=9.99999975e-06)"]


@pytest.mark.parametrize("pages", [1, 2, 3])
def test_rms_norm_pages_from_the_profile_env(monkeypatch, pages):
    """MEGAKITTENS_PROFILE=rms_norm_pages=N sets the RMSNorm rows per instruction (N pages of 4 rows of
    C = 4096; 1000 rows leave every SM an instruction only up to 2 pages), and the result is unchanged."""
    monkeypatch.setenv("MEGAKITTENS_PROFILE", f"rms_norm_pages={pages}")
    torch._dynamo.reset()
    args = randn(1000, 4096), randn(4096)
    check_close(megakittens.compile(torch_rms_norm)(*args), torch_rms_norm(*args))
    program = mk_backend.dispatchers[-1].program
    rows = max(program.instruction(i)["indices"][12] for i in range(program.num_instructions))
    assert rows == 4 * min(pages, 2), rows


@pytest.mark.parametrize("balance", [0, 1])
def test_rms_norm_balanced_row_tiles(monkeypatch, balance):
    """3000 rows of C = 4096 in tiles of at most 12 rows: 250 tiles (20 SMs of 132 get one more) or, balanced
    (the default), 264 tiles of 11-12 rows, two per SM; every row normalised once either way."""
    monkeypatch.setenv("MEGAKITTENS_PROFILE", f"rms_norm_balance={balance}")
    torch._dynamo.reset()
    args = randn(3000, 4096), randn(4096)
    check_close(megakittens.compile(torch_rms_norm)(*args), torch_rms_norm(*args))
    program = mk_backend.dispatchers[-1].program
    tiles = [program.instruction(i)["indices"] for i in range(program.num_instructions)]
    tiles = [(t[6], t[12]) for t in tiles if len(t) > 12 and t[13] == 4096]  # (output row, rows)
    assert len(tiles) == (264 if balance else 250), len(tiles)
    assert {rows for _, rows in tiles} == ({11, 12} if balance else {12, 3000 - 249 * 12})
    assert sorted(r for r0, rows in tiles for r in range(r0, r0 + rows)) == list(range(3000))


def test_torch_rms_norm_without_weight():
    f = lambda x: F.rms_norm(x, (x.shape[-1],), eps=1e-5)  # noqa: E731
    x = randn(2, 16, 256)
    check_close(megakittens.compile(f)(x), f(x))


def test_llama_rms_norm_module():
    m, x = LlamaRMSNorm(256), randn(4, 32, 256)
    check_close(megakittens.compile(m)(x), m(x))
    assert [n.itype for n in mk_backend.dispatchers[-1].program.nodes] == ["RMSNorm(eps=1e-06)"]


def test_llama_rms_norm_with_a_broadcast_weight():
    """An HF-pattern norm whose weight is (1, C): RMSNorm takes a (C,) weight only, so the weight stays a multiply of
    its own after a weightless RMSNorm (it was a CompileError on the weight's shape)."""
    m, x = LlamaRMSNorm(256), randn(4, 32, 256)
    m.weight = torch.nn.Parameter(randn(1, 256))
    check_close(megakittens.compile(m)(x), m(x))
    itypes = [n.itype for n in mk_backend.dispatchers[-1].program.nodes]
    assert itypes[0] == "RMSNorm(eps=1e-06,no_weight)" and len(itypes) == 2, itypes


# --- interleavings: 20 seeds x queue modes x cluster sizes -------------------------------------------

GRAPHS = {
    "mlp": (mlp, lambda: mlp_inputs(128, 256)),
    "mixed": (mixed, mixed_inputs),
}


@pytest.mark.parametrize("graph", sorted(GRAPHS))
@pytest.mark.parametrize("global_work_queue", [False, True])
@pytest.mark.parametrize("cluster_size", [1, 2])
def test_interleavings(graph, global_work_queue, cluster_size):
    fn, make_inputs = GRAPHS[graph]
    check_interleavings(fn, make_inputs(), global_work_queue, cluster_size)


# --- buffers -----------------------------------------------------------------------------------------

def inplace_on_intermediate(a, b):
    t = a * b
    mk.elementwise_binary_(t, b, "add", 0.5)   # t += 0.5 * b, in place on an intermediate
    return torch.relu(t), a + t


def test_inplace_custom_op():
    args = randn(64, 128), randn(64, 128)
    check_close(megakittens.compile(inplace_on_intermediate)(*args), inplace_on_intermediate(*args))


def test_returned_tensor_survives_next_call():
    f = megakittens.compile(mlp)
    args1, args2 = mlp_inputs(64, 128), mlp_inputs(64, 128)
    y1 = f(*args1)
    kept = y1.clone()
    y2 = f(*args2)
    assert y1.data_ptr() != y2.data_ptr()
    torch.testing.assert_close(y1, kept, rtol=0, atol=0)
    check_close(y2, mlp(*args2))


def test_inputs_not_written():
    args = randn(64, 128), randn(64, 128)
    before = [a.clone() for a in args]
    megakittens.compile(inplace_on_intermediate)(*args)
    for a, b in zip(args, before):
        torch.testing.assert_close(a, b, rtol=0, atol=0)


@pytest.mark.gpu
def test_mlp_cuda_tensors():
    """The seed's MLP on CUDA tensors runs on the megakernel (no fallback warning)."""
    args = mlp_inputs(256, 256, device="cuda")
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        y = megakittens.compile(mlp)(*args)
    assert y.device.type == "cuda"
    check_close(y, mlp(*args))
    assert mk_backend.dispatchers[-1]._gpu_error == ""


def test_unused_inputs_are_ignored():
    """Inputs the graph never reads (even of other shapes and dtypes) do not disturb the call."""
    def f(x, y, z):
        return torch.relu(x)

    x = randn(64, 128)
    check_close(megakittens.compile(f)(x, randn(4, 4), torch.randn(3)), torch.relu(x))


@pytest.mark.parametrize("n", [300, 800])
def test_more_than_256_tensor_slots(n):
    """n inputs: slots up to ~n + 5, beyond the seed's one-byte slot ids (bit 8, and past 512 bit 9)."""
    args = many_slots_inputs(n)
    f = megakittens.compile(many_slots)
    check_close(f(*args), many_slots(*args))
    p = mk_backend.dispatchers[-1].program
    assert len(p.slots) > n
    insts = [p.instruction(i) for i in range(p.num_instructions)]
    gemm = [d for d in insts if d["icode"] and p.icodes[d["icode"]].startswith("Gemm")]
    assert gemm and all(d["src_tensors"][1] >= (512 if n > 512 else 256) for d in gemm)  # W: the top bit set
    # Slot ids round-trip through the packed words (the table the GPU reads): [Note: slot bits].
    words = p.table_global()
    seen = set()
    for i, d in enumerate(insts):
        assert words[i][0] & 0xFFFF == d["icode"]
        lo = [(words[i][1 + k // 4] >> (8 * (k % 4))) & 0xFF for k in range(16)]
        b8 = [(words[i][0] >> (16 + k)) & 1 for k in range(16)]
        b9 = [(words[i][6] >> (16 + k)) & 1 for k in range(16)]
        assert [l | h << 8 | t << 9 for l, h, t in zip(lo, b8, b9)] == d["src_tensors"]
        assert [(words[i][5 + k // 2] >> (16 * (k % 2))) & 0xFFFF for k in range(3)] == d["dst_tensors"]
        seen.update(d["src_tensors"])
    assert max(seen) > (512 if n > 512 else 256)


def test_too_many_tensor_slots_names_the_count(monkeypatch):
    """Past the slot limit the error names the count, the limit and the first node past it. The limit is
    1016 ([Note: slot bits]); MEGAKITTENS_PROFILE=max_slots lowers it, which keeps this test small."""
    assert _C.Profile.by_name("h200").max_slots == 0 and _C.max_slots == 1016
    monkeypatch.setenv("MEGAKITTENS_PROFILE", "max_slots=300")
    args = many_slots_inputs(n=310)
    with pytest.raises(Exception, match=r"needs (\d+) tensor slots, at most 300 .*node 'arg\d+_1'.*smaller pieces"):
        megakittens.compile(many_slots)(*args)
