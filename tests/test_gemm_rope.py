"""Rope folded into the epilogue of the Gemm that projects q / k (src/trace/fuse_gemm_rope.h, Gemm flag
`rope=D`, kernels/mk/itypes/gemm.cuh [Note: gemm rope epilogue]): the fusion fires on HF's pattern and on
the (B, S, H, D) one (by default at head dim 64, at every head dim with MEGAKITTENS_FUSE=gemm_rope, at none with
MEGAKITTENS_FUSE=no_gemm_rope), keeps the Rope where it must, and matches eager on the CPU reference interpreter;
the generated source compiles without spills. The GPU run is in tests/test_gpu_gemm.py."""
import re

import pytest
import torch
import torch.nn.functional as F

import megakittens
import megakittens.backend as mk_backend
from common import rel_err

BF16 = torch.bfloat16


@pytest.fixture(autouse=True)
def gemm_rope_on(monkeypatch):
    """Every head dim (the default folds D = 64 only: src/trace/fuse_gemm_rope.h)."""
    monkeypatch.setenv("MEGAKITTENS_FUSE", "gemm_rope")


def rotate_half(t):
    h = t.shape[-1] // 2
    return torch.cat((-t[..., h:], t[..., :h]), -1)


def attn_block(x, wq, wk, wv, cos, sin, bq=None, bshd=True, also_q=False):
    """HF's LlamaAttention core: q/k/v projections of x (B, S, hidden), q and k rotated (rotate_half, tables
    cos / sin of (S, D), (1, S, D) or (B, S, D)), causal GQA SDPA. bshd=False rotates the (B, S, H, D) view
    before the transpose (gpt-fast's order). also_q: returns the rotated q too."""
    B, S, _ = x.shape
    D = cos.shape[-1]
    c, s = (cos.unsqueeze(-3), sin.unsqueeze(-3)) if bshd else (cos.unsqueeze(-2), sin.unsqueeze(-2))

    def heads(w, b=None):
        return F.linear(x, w, b).view(B, S, -1, D)

    def rot(t):  # fp32 tables: rotated in fp32 (examples/llama.py's apply_rotary_emb)
        f = t.to(c.dtype)
        return (f * c + rotate_half(f) * s).type_as(t)
    if bshd:
        q, k = rot(heads(wq, bq).transpose(1, 2)), rot(heads(wk).transpose(1, 2))
    else:
        q, k = rot(heads(wq, bq)).transpose(1, 2), rot(heads(wk)).transpose(1, 2)
    v = heads(wv).transpose(1, 2)
    o = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
    return (o, q) if also_q else o


def block_inputs(B=1, S=96, D=64, H=4, KV=2, table="s", bias=False, dtype=BF16, seed=0, hidden=256):
    """table: "s" (S, D), "1s" (1, S, D), "bs" (B, S, D) per-batch rows. CPU tensors."""
    g = torch.Generator().manual_seed(seed)

    def r(*shape, scale=1.0):
        return (torch.randn(*shape, generator=g) * scale).to(BF16)
    pos = torch.arange(S, dtype=torch.float32)[None].expand(B, S) + 3 * torch.arange(B)[:, None]
    inv = 1.0 / (10000 ** (torch.arange(0, D, 2, dtype=torch.float32) / D))
    ang = pos[..., None] * inv
    ang = torch.cat((ang, ang), -1)  # (B, S, D)
    ang = {"s": ang[0], "1s": ang[:1], "bs": ang}[table]
    args = [r(B, S, hidden), r(H * D, hidden, scale=hidden ** -0.5), r(KV * D, hidden, scale=hidden ** -0.5),
            r(KV * D, hidden, scale=hidden ** -0.5), ang.cos().to(dtype), ang.sin().to(dtype)]
    return args + ([r(H * D)] if bias else [])


def _itypes():
    return [n.itype for n in mk_backend.dispatchers[-1].program.nodes]


def _run(fn, args):
    with torch.no_grad():
        out = megakittens.compile(fn)(*args)
        ref = fn(*[a.double() for a in args]).to(out.dtype)
    return out, ref


@pytest.mark.parametrize("D,B,table,bshd", [(64, 1, "s", True), (128, 1, "1s", True), (64, 2, "1s", True),
                                            (64, 2, "bs", True), (128, 2, "s", False)])
def test_rope_folds_into_the_projections(D, B, table, bshd):
    args = block_inputs(B=B, D=D, table=table)
    out, ref = _run(lambda *a: attn_block(*a, bshd=bshd), args)
    assert rel_err(out, ref) <= 1e-2
    it = _itypes()
    assert it.count(f"Gemm(tb,rope={D})") == 2, it  # q and k
    assert not any(t.startswith("Rope") for t in it), it
    assert any(t.startswith("Attention") and "bshd=qkv" in t for t in it), it


def test_rope_folds_after_a_bias():
    """Qwen2's q projection has a bias: bias_row, then the rotation of the biased values."""
    args = block_inputs(B=2, table="1s", bias=True)
    out, ref = _run(lambda x, wq, wk, wv, c, s, bq: attn_block(x, wq, wk, wv, c, s, bq), args)
    assert rel_err(out, ref) <= 1e-2
    it = _itypes()
    assert "Gemm(tb,bias_row,rope=64)" in it and "Gemm(tb,rope=64)" in it, it


def test_rope_stays_where_it_cannot_fold(monkeypatch):
    # fp32 tables (the epilogue reads bf16 ones)
    args = block_inputs(dtype=torch.float32)
    out, ref = _run(attn_block, args)
    assert rel_err(out, ref) <= 1e-2
    assert sum(t.startswith("Rope") for t in _itypes()) == 2 and not any("rope=" in t for t in _itypes())
    # q read by something other than attention too
    args = block_inputs()
    fn = lambda *a: attn_block(*a, also_q=True)  # noqa: E731
    with torch.no_grad():
        out = megakittens.compile(fn)(*args)
        ref = fn(*[a.double() for a in args])
    assert all(rel_err(o, r.to(o.dtype)) <= 1e-2 for o, r in zip(out, ref))
    it = _itypes()
    assert it.count("Gemm(tb,rope=64)") == 1 and sum(t.startswith("Rope") for t in it) == 1, it  # k folds, q not
    # the default: D 64 folds, D 128 keeps its Rope; MEGAKITTENS_FUSE=no_gemm_rope keeps both
    monkeypatch.delenv("MEGAKITTENS_FUSE")
    for D, env, folds in [(64, None, True), (128, None, False), (64, "no_gemm_rope", False)]:
        if env:
            monkeypatch.setenv("MEGAKITTENS_FUSE", env)
        torch._dynamo.reset()
        out, ref = _run(attn_block, block_inputs(D=D))
        assert rel_err(out, ref) <= 1e-2
        it = _itypes()
        assert it.count(f"Gemm(tb,rope={D})") == (2 if folds else 0), (D, env, it)
        assert sum(t.startswith("Rope") for t in it) == (0 if folds else 2), (D, env, it)


def _nvrtc():
    from megakittens import _C, gpu
    if getattr(_C, "gpu_runtime_missing", "x"):
        pytest.skip("built without the GPU runtime")
    if gpu.cuda_include_dir() is None:
        pytest.skip("CUDA headers (cuda_bf16.h, cccl/) not found")
    return _C, gpu


@pytest.mark.parametrize("cluster", [1, 2])
@pytest.mark.parametrize("D,bias", [(64, False), (128, False), (64, True)])
def test_rope_gemm_source_compiles_without_spills(D, bias, cluster):
    from torch.fx.experimental.proxy_tensor import make_fx
    from megakittens import fx_export
    _C, gpu = _nvrtc()
    args = block_inputs(B=1, S=256, D=D, H=8, KV=2, bias=bias)
    fn = (lambda x, wq, wk, wv, c, s, bq: attn_block(x, wq, wk, wv, c, s, bq)) if bias else \
        (lambda x, wq, wk, wv, c, s: attn_block(x, wq, wk, wv, c, s))
    gm = make_fx(fn, tracing_mode="fake")(*args)
    prog = _C.schedule(_C.trace(fx_export.export_graph(gm, "rope")), _C.Profile.by_name("h200", 132),
                       cluster_size=cluster)
    src = _C.gpu_generate_source(prog)
    assert f"mk::GemmT<false, true, {int(bias)}, false, mk::Unary::identity, {D}>" in src
    try:
        cubin, log, _ = _C.nvrtc_compile(src, _C.gpu_jit_flags(gpu.kernels_dir(), gpu.cuda_include_dir()),
                                         list(gpu.nvrtc_candidates()))
    except RuntimeError as e:
        if "NVRTC not found" in str(e):
            pytest.skip(str(e).splitlines()[0])
        raise
    assert len(cubin) > 0
    if "megakittens_kernel" not in log:
        pytest.skip(f"this NVRTC printed no ptxas report (log: {log[:200]!r})")
    spills = [int(a) + int(b) for a, b in re.findall(r"(\d+) bytes spill stores, (\d+) bytes spill loads", log)]
    assert spills and max(spills) == 0, log
    assert "serialized" not in log, log
