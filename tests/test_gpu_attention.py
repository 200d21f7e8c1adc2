"""Attention on the H200 (issue 5): the FlashAttention-style megakernel body against
F.scaled_dot_product_attention computed in fp32, both queue modes, cluster sizes 1 and 2.

A sample of B in {1, 2, 16}, H in {1, 8, 32}, S in {128, 512, 1000, 2048, 4096}, D in {64, 128}, causal and
full, GQA groups 1, 4, 8, plus the edges: Sq != Sk (top-left causal, rows past Sk see every key), Sk not a
multiple of the kv block (masked keys, a 64-row box wholly past Sk), Sq < 64 (warpgroup 1 has no rows),
ragged last query tiles, cluster-2 ranks past Sq, a custom scale, and (B, S, H, D) tensors read through
transpose(1, 2). An exact-boundary test makes every row's softmax one-hot on its last visible key, so a
causal or key-length mask that is off by one key shows as a wrong row, not as noise. Through
megakittens.compile: SDPA on CUDA tensors, and projections -> view -> transpose -> SDPA as one launch.

The graph builders here are also compiled by tests/test_nvrtc.py (CPU: no spills, no serialization)."""
from __future__ import annotations

import functools
import warnings

import pytest
import torch
import torch.nn.functional as F

import megakittens
import megakittens.backend as mk_backend
from common import rel_err
from test_gpu_kernels import _gpu_ok, program_for, run_gpu

pytestmark = pytest.mark.gpu
BF16 = torch.bfloat16


def sdpa(causal: bool, scale=None):
    def f(q, k, v):
        return F.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=scale, enable_gqa=k.shape[1] != q.shape[1])
    return f


def sdpa_bshd(causal: bool):
    """q (B, Sq, H, D), k, v (B, Sk, Hk, D) seen as (B, H, S, D) through transpose(1, 2). (The low-level
    runner binds input slots only, so the view to 4-D - a reshape alias slot - is left to the compile
    test below.)"""
    def f(q, k, v):
        return F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2),
                                              is_causal=causal, enable_gqa=k.shape[2] != q.shape[2])
    return f


def bhsd_shapes(B, H, Hk, Sq, Sk, D):
    return [(B, H, Sq, D), (B, Hk, Sk, D), (B, Hk, Sk, D)]


# name -> (fn, input shapes, cluster size). Cluster sizes alternate so both run across the cases.
CASES = {
    "b1_h1_s128_d64_full": (sdpa(False), bhsd_shapes(1, 1, 1, 128, 128, 64), 1),
    "b2_h8_s512_d128_causal": (sdpa(True), bhsd_shapes(2, 8, 8, 512, 512, 128), 2),
    "b1_h8_gqa4_s1000_d64_causal": (sdpa(True), bhsd_shapes(1, 8, 2, 1000, 1000, 64), 1),
    "b2_h32_gqa8_s1000_d128_full": (sdpa(False), bhsd_shapes(2, 32, 4, 1000, 1000, 128), 2),
    "b16_h8_s128_d64_causal": (sdpa(True), bhsd_shapes(16, 8, 8, 128, 128, 64), 2),
    "b1_h8_gqa8_s2048_d128_causal": (sdpa(True), bhsd_shapes(1, 8, 1, 2048, 2048, 128), 1),
    "b1_h1_s4096_d64_full": (sdpa(False), bhsd_shapes(1, 1, 1, 4096, 4096, 64), 2),
    "b2_h1_s4096_d128_causal": (sdpa(True), bhsd_shapes(2, 1, 1, 4096, 4096, 128), 1),
    # Edges.
    "sq300_sk900_d128_causal": (sdpa(True), bhsd_shapes(1, 4, 4, 300, 900, 128), 2),  # Sq < Sk, top-left
    "sq700_sk333_d64_causal": (sdpa(True), bhsd_shapes(2, 4, 2, 700, 333, 64), 1),  # rows past Sk see all keys
    "s900_d64_full_box_past_end": (sdpa(False), bhsd_shapes(1, 2, 2, 900, 900, 64), 1),  # box at 960 >= 900
    "sq40_sk130_d128_full": (sdpa(False, scale=0.3), bhsd_shapes(2, 2, 1, 40, 130, 128), 2),  # WG 1 idle, scale
    "sq64_sk1000_d64_causal": (sdpa(True), bhsd_shapes(1, 2, 2, 64, 1000, 64), 2),
    "bshd_b2_h8_gqa4_s1000_d128_causal": (sdpa_bshd(True), [(2, 1000, 8, 128), (2, 1000, 2, 128), (2, 1000, 2, 128)], 1),
    "bshd_b1_h4_s512_d64_full": (sdpa_bshd(False), [(1, 512, 4, 64)] * 3, 2),
}


def reference(fn, args):
    return fn(*[a.float() for a in args])


@functools.cache
def _program(case):
    from megakittens import gpu
    fn, shapes, cluster = CASES[case]
    return program_for(fn, shapes, cluster_size=cluster, num_sms=gpu.num_ctas(cluster), name=f"attn_{case}")


def _inputs(shapes, seed):
    g = torch.Generator(device="cpu").manual_seed(seed)
    return [torch.randn(s, generator=g).to(BF16).cuda() for s in shapes]


@pytest.mark.parametrize("global_queue", [False, True])
@pytest.mark.parametrize("case", list(CASES))
def test_attention_vs_fp32(case, global_queue):
    if not _gpu_ok():
        pytest.skip("needs a Hopper GPU and the GPU runtime")
    fn, shapes, _ = CASES[case]
    program = _program(case)
    assert any(n.startswith("Attention") for n in program.icodes), program.icodes
    for seed in (1, 2):  # fresh inputs; the second launch exercises epoch-scaled barriers
        args = _inputs(shapes, seed)
        (out,) = run_gpu(program, args, {"global_work_queue": global_queue, "sync": True, "watchdog_s": 5.0})
        ref = reference(fn, args)
        assert out.shape == ref.shape and out.dtype == BF16
        assert torch.isfinite(out).all(), f"{case}: NaN/inf in the output (unwritten tile?)"
        err = rel_err(out.float(), ref)
        assert err <= 1e-2, f"{case}: relative error {err:.3e}"


@pytest.mark.parametrize("D", [64, 128])
@pytest.mark.parametrize("causal", [False, True])
def test_attention_mask_boundaries_exact(causal, D):
    """Scores 20 * j (key j; q = (64, 1, 0...), k_j = (j // 64, j % 64, 0...), all exact in bf16): each row's
    softmax is one-hot (to 2e-9) on its last visible key, min(i, Sk - 1) causal (top-left) or Sk - 1, so
    o_i equals that row of v. Sq = 300, Sk = 260 (ragged kv blocks, rows past Sk)."""
    if not _gpu_ok():
        pytest.skip("needs a Hopper GPU and the GPU runtime")
    from megakittens import gpu
    B, H, Sq, Sk = 1, 2, 300, 260
    fn = sdpa(causal, scale=20.0)
    shapes = bhsd_shapes(B, H, H, Sq, Sk, D)
    program = program_for(fn, shapes, cluster_size=2, num_sms=gpu.num_ctas(2), name=f"attn_exact_{causal}_{D}")
    j = torch.arange(Sk)
    q = torch.zeros(B, H, Sq, D)
    q[..., 0], q[..., 1] = 64.0, 1.0
    k = torch.zeros(B, H, Sk, D)
    k[..., 0], k[..., 1] = (j // 64).float(), (j % 64).float()
    v = torch.randn(B, H, Sk, D)
    args = [t.to(BF16).cuda() for t in (q, k, v)]
    (out,) = run_gpu(program, args, {"global_work_queue": True, "sync": True, "watchdog_s": 5.0})
    last = torch.arange(Sq).clamp(max=Sk - 1) if causal else torch.full((Sq,), Sk - 1)
    want = args[2][:, :, last.cuda()].float()
    bad = ((out.float() - want).abs() > 1e-2 * want.abs().clamp_min(1)).any(-1).nonzero()
    assert bad.numel() == 0, f"{bad.shape[0]} rows attend to the wrong keys, first (b, h, row) {bad[:5].tolist()}"


@pytest.mark.parametrize("D", [64, 128])
@pytest.mark.parametrize("causal", [False, True])
def test_attention_nan_key_propagates(causal, D):
    """A NaN in one key row (every key position of a thread's fragment in turn: keys 3, 130 and 261) makes
    exactly the rows that see it NaN, as in eager SDPA: causal rows >= the key, full every row; the other
    rows stay finite and close. Guards the softmax's exponentials ([Note: attention fma exp]) and max."""
    if not _gpu_ok():
        pytest.skip("needs a Hopper GPU and the GPU runtime")
    from megakittens import gpu
    fn = sdpa(causal)
    shapes = bhsd_shapes(1, 4, 4, 384, 384, D)
    program = program_for(fn, shapes, cluster_size=1, num_sms=gpu.num_ctas(1), name=f"attn_nan_{causal}_{D}")
    args = _inputs(shapes, 7)
    for h, key in enumerate((3, 130, 261)):
        args[1][0, h, key, 5] = float("nan")
    (out,) = run_gpu(program, args, {"sync": True, "watchdog_s": 5.0})
    ref = reference(fn, args)
    assert torch.equal(out.isnan().any(-1).cpu(), ref.isnan().any(-1).cpu())
    assert ref.isnan().any() and not ref[0, 3].isnan().any()  # the pattern is not trivially all / none
    ok = ~ref.isnan().any(-1, keepdim=True)
    assert rel_err(out.float()[ok.expand_as(out)], ref[ok.expand_as(ref)]) <= 1e-2


# ---- through megakittens.compile -------------------------------------------------------------------

@pytest.mark.parametrize("cluster_size", [1, 2])
@pytest.mark.parametrize("global_work_queue", [False, True])
def test_sdpa_compile_on_the_megakernel(global_work_queue, cluster_size):
    if not _gpu_ok():
        pytest.skip("needs a Hopper GPU and the GPU runtime")
    f = megakittens.compile(sdpa(True), cluster_size=cluster_size, global_work_queue=global_work_queue)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no fallback warning: Attention runs on the megakernel
        for seed in (0, 1):
            args = _inputs(bhsd_shapes(2, 8, 8, 1000, 1000, 128), seed)
            out = f(*args)
            assert out.is_cuda
            assert rel_err(out.float(), reference(sdpa(True), args)) <= 1e-2
    assert mk_backend.dispatchers[-1]._gpu_error == "", mk_backend.dispatchers[-1]._gpu_error


def test_sdpa_gqa_compile_on_the_megakernel():
    if not _gpu_ok():
        pytest.skip("needs a Hopper GPU and the GPU runtime")
    fn = sdpa(False)
    args = _inputs(bhsd_shapes(1, 32, 4, 512, 512, 64), 3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = megakittens.compile(fn)(*args)
    assert rel_err(out.float(), reference(fn, args)) <= 1e-2
    assert mk_backend.dispatchers[-1]._gpu_error == ""


def qkv_model(x, wq, wk, wv):
    """Projections, then .view(B, S, H, D).transpose(1, 2) as models write it: read in place (bshd)."""
    B, S, _ = x.shape
    q = (x @ wq).view(B, S, 8, 64).transpose(1, 2)
    k = (x @ wk).view(B, S, 2, 64).transpose(1, 2)
    v = (x @ wv).view(B, S, 2, 64).transpose(1, 2)
    return F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)


def test_projections_and_bshd_attention_in_one_launch():
    if not _gpu_ok():
        pytest.skip("needs a Hopper GPU and the GPU runtime")
    g = torch.Generator().manual_seed(4)
    x = torch.randn(2, 300, 512, generator=g).to(BF16).cuda()
    ws = [(torch.randn(512, n, generator=g) / 512 ** 0.5).to(BF16).cuda() for n in (512, 128, 128)]
    f = megakittens.compile(qkv_model, global_work_queue=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = f(x, *ws)
    d = mk_backend.dispatchers[-1]
    assert d._gpu_error == "", d._gpu_error
    assert any("bshd=qkv" in n for n in d.program.icodes), d.program.icodes
    # The projections round to bf16 before attention, as the kernel does.
    q, k, v = [(x.float() @ w.float()).to(BF16).float() for w in ws]
    ref = F.scaled_dot_product_attention(q.view(2, 300, 8, 64).transpose(1, 2), k.view(2, 300, 2, 64).transpose(1, 2),
                                         v.view(2, 300, 2, 64).transpose(1, 2), is_causal=True, enable_gqa=True)
    assert rel_err(out.float(), ref) <= 1e-2


def attention_block_model(x, wq, wk, wv, wo):
    """qkv_model, then the transpose back to (B, S, H, D) and the output projection (as models write it)."""
    B, S, _ = x.shape
    return qkv_model(x, wq, wk, wv).transpose(1, 2).reshape(B, S, 512) @ wo


@pytest.mark.parametrize("global_queue", [False, True])
@pytest.mark.parametrize("cluster", [1, 2])
def test_attention_stores_its_output_as_bshd(global_queue, cluster):
    """src/trace/fuse_attention_output.h: no Copy between attention and the output projection; the
    Attention's storer writes (B, S, H, D) rows through the output slot's strided tile map (bshd=o)."""
    if not _gpu_ok():
        pytest.skip("needs a Hopper GPU and the GPU runtime")
    g = torch.Generator().manual_seed(5)
    x = torch.randn(2, 300, 512, generator=g).to(BF16).cuda()
    ws = [(torch.randn(512, n, generator=g) / 512 ** 0.5).to(BF16).cuda() for n in (512, 128, 128, 512)]
    f = megakittens.compile(attention_block_model, global_work_queue=global_queue, cluster_size=cluster)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = f(x, *ws)
    d = mk_backend.dispatchers[-1]
    assert d._gpu_error == "", d._gpu_error
    assert any("bshd=qkvo" in n for n in d.program.icodes) and not any(n.startswith("Copy") for n in d.program.icodes)
    q, k, v = [(x.float() @ w.float()).to(BF16).float() for w in ws[:3]]
    o = F.scaled_dot_product_attention(q.view(2, 300, 8, 64).transpose(1, 2), k.view(2, 300, 2, 64).transpose(1, 2),
                                       v.view(2, 300, 2, 64).transpose(1, 2), is_causal=True, enable_gqa=True)
    ref = o.to(BF16).float().transpose(1, 2).reshape(2, 300, 512) @ ws[3].float()
    assert torch.isfinite(out).all() and rel_err(out.float(), ref) <= 1e-2


# ---- the additive mask (src/itypes/attention.h, kernels/mk/itypes/attention.cuh [Note: attention mask]) ----

MIN = torch.finfo(BF16).min


def _mask(kind, shape, g):
    """An additive bf16 mask: random values ("randn"); keys past a per-batch length at -inf ("pad", a
    tokenizer's padding, (B, 1, 1, Sk)); Hugging Face's causal mask at bf16's lowest value with the first 40
    query rows wholly masked ("hf_min": those rows average V, as eager); rows 5 and 200 wholly at -inf
    ("inf_rows": rows of zeros)."""
    if kind == "randn":
        return (torch.randn(shape, generator=g) * 2).to(BF16)
    m = torch.zeros(shape)
    if kind == "pad":
        for b in range(shape[0]):
            m[b, ..., shape[-1] - 37 * b:] = float("-inf") if b else 0.0
    elif kind == "hf_min":
        sq, sk = shape[-2:]
        m.masked_fill_(torch.ones(sq, sk, dtype=torch.bool).triu(1), MIN)
        m[..., :40, :] = MIN
    elif kind == "inf_rows":
        m[..., 5, :] = m[..., 200, :] = float("-inf")
        m[..., 7, 100:] = float("-inf")
    return m.to(BF16)


def masked_reference(q, k, v, m, scale):
    """fp32 softmax(q k^T scale + m) v with GQA; a row with every key at -inf is 0 (PyTorch's _safe_softmax);
    fp32 as the device, so a row wholly at bf16's lowest value averages V there too."""
    q, k, v, m = (t.float() for t in (q, k, v, m))
    g = q.shape[1] // k.shape[1]
    k, v = k.repeat_interleave(g, 1), v.repeat_interleave(g, 1)
    s = q @ k.transpose(-1, -2) * scale + m
    p = torch.softmax(s, -1).nan_to_num(0.0)
    return p @ v


MASK_CASES = {  # name: (B, H, Hk, Sq, Sk, D, mask shape, kind, cluster)
    "d64_pad_keys": (2, 8, 8, 1000, 1000, 64, (2, 1, 1, 1000), "pad", 1),
    "d128_gqa_per_head": (1, 8, 2, 300, 300, 128, (1, 8, 300, 300), "randn", 2),
    "d64_odd_sk": (2, 4, 4, 200, 333, 64, (2, 1, 200, 333), "randn", 1),  # 2-byte loads: odd rows
    "d128_hf_min_rows": (1, 4, 4, 512, 512, 128, (1, 1, 512, 512), "hf_min", 1),
    "d64_inf_rows": (1, 2, 2, 256, 256, 64, (1, 1, 256, 256), "inf_rows", 2),
}


@pytest.mark.parametrize("case", list(MASK_CASES))
def test_masked_attention_vs_fp32(case):
    if not _gpu_ok():
        pytest.skip("needs a Hopper GPU and the GPU runtime")
    from megakittens import gpu
    B, H, Hk, Sq, Sk, D, ms, kind, cluster = MASK_CASES[case]
    fn = lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m, enable_gqa=H != Hk)  # noqa: E731
    shapes = bhsd_shapes(B, H, Hk, Sq, Sk, D) + [ms]
    program = program_for(fn, shapes, cluster_size=cluster, num_sms=gpu.num_ctas(cluster), name=f"attn_mask_{case}")
    assert any("mask=add" in n for n in program.icodes), program.icodes
    g = torch.Generator(device="cpu").manual_seed(11)
    for global_queue in (False, True):
        args = [torch.randn(s, generator=g).to(BF16).cuda() for s in shapes[:3]] + [_mask(kind, ms, g).cuda()]
        (out,) = run_gpu(program, args, {"global_work_queue": global_queue, "sync": True, "watchdog_s": 5.0})
        ref = masked_reference(*args, 1.0 / D ** 0.5)
        assert not out.isnan().any(), f"{case}: NaN in the output"
        err = rel_err(out.float(), ref)
        assert err <= 1e-2, f"{case} (global_queue={global_queue}): relative error {err:.3e}"
        if kind == "inf_rows":
            assert out[..., 5, :].abs().max() == 0 and out[..., 200, :].abs().max() == 0


def test_hf_llama_with_a_padding_mask_runs_attention_with_its_mask():
    """A Hugging Face Llama called with attention_mask (left padding in one row): every layer's SDPA takes
    Attention's additive mask (no score matrix, no MathAttentionWarning), one launch, hidden states of the
    attended positions within 2e-2 of eager."""
    if not _gpu_ok():
        pytest.skip("needs a Hopper GPU and the GPU runtime")
    transformers = pytest.importorskip("transformers")
    cfg = transformers.LlamaConfig(vocab_size=1000, hidden_size=512, intermediate_size=1024, num_hidden_layers=2,
                                   num_attention_heads=8, num_key_value_heads=2)
    cfg._attn_implementation = "sdpa"
    torch.manual_seed(0)
    model = transformers.LlamaModel(cfg).to(device="cuda", dtype=BF16).eval()
    ids = torch.randint(0, 1000, (2, 300), device="cuda")
    am = torch.ones(2, 300, dtype=torch.long, device="cuda")
    am[1, :45] = 0
    fwd = lambda i, a: model(input_ids=i, attention_mask=a, use_cache=False).last_hidden_state  # noqa: E731
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("error", megakittens.MathAttentionWarning)
        h = megakittens.compile(fwd)(ids, am)
        ref = fwd(ids, am)
    assert mk_backend.dispatchers[-1]._gpu_error == "", mk_backend.dispatchers[-1]._gpu_error
    kinds = [n.itype for n in mk_backend.dispatchers[-1].program.nodes]
    assert sum(k.startswith("Attention") and "mask=add" in k for k in kinds) == 2, kinds
    keep = am.bool()
    assert rel_err(h[keep].float(), ref[keep].float()) <= 2e-2
