"""Gemm on the H200 (issue 4): the wgmma megakernel body against fp32 torch.matmul, both queue modes,
cluster sizes 1 and 2; the seed's MLP through megakittens.compile as exactly one kernel launch.

Shapes cover whole tiles, ragged M / N / K (TMA zero fill and store clipping), m_rows <= 64 (the second
warpgroup idles), m_rows = 0 ranks (cluster 2 past M), batched bmm, sliced views (stacked weights, a
K tail that TMA cannot zero-fill), and nk < 4 / nk = 5 (partly used and wrapped page rings).

Gemm flags (mk::GemmT<TA, TB, BIAS>): `ta` (A^T stored row-major), `tb` (B^T stored row-major, nn.Linear's
weight), `bias_row` / `bias_full` (fused fp32 bias epilogue), alone and combined, batched, ragged, with K
tails zeroed by hand in both smem layouts, sliced / unaligned bias views; an exact integer-valued check for
every flag combination; nn.Linear modules through megakittens.compile with no fallback."""
from __future__ import annotations

import functools
import os
import warnings
from unittest import mock

import pytest
import torch

import megakittens
import megakittens.backend as mk_backend
from common import mlp, mlp_inputs, rel_err
from test_gpu_kernels import _gpu_ok, inputs_for, program_for, run_gpu

pytestmark = pytest.mark.gpu
BF16 = torch.bfloat16


def g_mm(a, b):
    return a @ b


def g_bmm(a, b):
    return torch.bmm(a, b)


def g_sliced_k(x, w):  # K = 200 of backings 256 wide / tall: the loader zeroes the K tail by hand
    return x[:, :200] @ w[:200]


def g_col_origin_b(x, w):  # B's view starts at column 32 of a 64-aligned backing: no split-map copies
    return x @ w[:, 32:288]  # (kernels/mk/itypes/gemm.cuh [Note: gemm wide boxes]); 8 KB boxes instead


def g_col_origin_ta(a, b):  # A^T's view starts at column 32 (M): the same fallback for an M-major A
    return a[:, 32:160].t() @ b


def g_stacked(x, w):  # B = w[1] of a (3, K, N) stack: origin d = 1
    return x @ w[1]


def g_ta(a, b):  # a holds A^T: (K, M)
    return a.t() @ b


def g_tb(a, b):  # b holds B^T: (N, K)
    return a @ b.t()


def g_ta_tb(a, b):
    return a.t() @ b.t()


def g_addmm(c, a, b):  # c (N,): bias_row; c (M, N): bias_full
    return torch.addmm(c, a, b)


def g_linear(x, w, b):  # Gemm(tb,bias_row)
    return torch.nn.functional.linear(x, w, b)


def g_bmm_tb(a, b):
    return a @ b.transpose(1, 2)


def g_baddbmm_all(c, a, b):  # Gemm(ta,tb,bias_full), batched
    return torch.baddbmm(c, a.transpose(1, 2), b.transpose(1, 2))


def g_baddbmm_row(c, a, b):  # c (N,) broadcast over batches and rows
    return torch.baddbmm(c, a, b)


def g_sliced_k_t(a, b):  # K = 200 of 256: the K tail zeroed in the M-major A and K-major B tiles
    return a[:200].t() @ b[:, :200].t()


def g_bias_sliced(c, a, b):  # bias_full view at (1, 3) of a (310, 528) backing: 2-byte aligned rows
    return torch.addmm(c[1:301, 3:523], a, b)


def g_bias_stacked(c, x, w):  # bias_row c[1] of a (3, N) stack, with tb
    return torch.nn.functional.linear(x, w, c[1])


def g_two(x, w1, w2):  # a Gemm feeding a Gemm: global barriers between TMA store and TMA load
    return (x @ w1) @ w2


def g_act_relu_bias_full(c, x, w):  # the seed MLP's layer: Gemm(bias_full,act=relu)
    return torch.relu(torch.addmm(c, x, w))


def g_act_gelu_tanh_linear(x, w, b):  # Gemm(tb,bias_row,act=gelu_tanh)
    return torch.nn.functional.gelu(torch.nn.functional.linear(x, w, b), approximate="tanh")


def g_act_silu_tb(x, w):  # Gemm(tb,act=silu)
    return torch.nn.functional.silu(x @ w.t())


def _rms_norm(h, w):  # HF LlamaRMSNorm's arithmetic (the tracer fuses it into one RMSNorm)
    v = h.float()
    return w * (v * torch.rsqrt(v.pow(2).mean(-1, keepdim=True) + 1e-5)).to(h.dtype)


def g_rmsin_linear(x, nw, w):  # RMSNorm -> Gemm(tb,rms_in): the norm folded into its reader
    return _rms_norm(x, nw) @ w.t()


def g_rmsin_linear_bias(x, nw, w, b):  # Gemm(tb,bias_row,rms_in): q / k / v with a bias (Qwen2)
    return torch.nn.functional.linear(_rms_norm(x, nw), w, b)


def g_rmsin_swiglu(x, nw, wg, wu):  # Gemm(tb,swiglu,rms_in), x 3-D: A read through a reshape of x
    y = _rms_norm(x, nw)
    # Flattened: the harness compares the output slot itself, the Gemm's 2-D D.
    return (torch.nn.functional.silu(y @ wg.t()) * (y @ wu.t())).flatten(0, 1)


def g_rmsin_two_readers(x, nw, wq, wk):  # two Gemms reading one norm (q / k style); the sum a residual epilogue
    y = _rms_norm(x, nw)
    return y @ wq.t() + y @ wk.t()


# name -> (fn, input shapes); Gemm shapes are M x N x K.
CASES = {
    "mm_512x256x64": (g_mm, [(512, 64), (64, 256)]),
    "mm_1024": (g_mm, [(1024, 1024), (1024, 1024)]),
    "mm_2048": (g_mm, [(2048, 2048), (2048, 2048)]),
    "mm_ragged_1000x3000x512": (g_mm, [(1000, 512), (512, 3000)]),
    "mm_ragged_k_300x520x200": (g_mm, [(300, 200), (200, 520)]),
    "mm_small_m_50x296x128": (g_mm, [(50, 128), (128, 296)]),
    "mm_m100_k320": (g_mm, [(100, 320), (320, 256)]),  # 5 k-tiles (ring wraps), cluster 2: rank 1 empty
    "bmm_4x1000x768x256": (g_bmm, [(4, 1000, 256), (4, 256, 768)]),  # M=1000, N=768, K=256
    "bmm_4x1000x256x768": (g_bmm, [(4, 1000, 768), (4, 768, 256)]),  # M=1000, N=256, K=768
    "sliced_k": (g_sliced_k, [(300, 256), (256, 384)]),
    "stacked_weight": (g_stacked, [(256, 512), (3, 512, 256)]),
    "col_origin_b": (g_col_origin_b, [(300, 256), (256, 320)]),
    "gemm_chain": (g_two, [(512, 768), (768, 512), (512, 1024)]),
}


# Gemm flags: name -> (fn, input shapes, cluster size). One cluster size per case (alternating, so every
# flag runs under both across the cases and the exact check) keeps the number of JIT compiles down.
FLAG_CASES = {
    "ta_512x768x1024": (g_ta, [(1024, 512), (1024, 768)], 1),
    "ta_small_m_56x296x320": (g_ta, [(320, 56), (320, 296)], 2),  # m_rows <= 64, 5 k-tiles; rank 1 empty
    "tb_ragged_1000x3000x512": (g_tb, [(1000, 512), (3000, 512)], 1),
    "tb_ragged_1000x3000x512_c2": (g_tb, [(1000, 512), (3000, 512)], 2),
    "ta_tb_ragged_1000x296x520": (g_ta_tb, [(520, 1000), (296, 520)], 2),
    "bias_row_1000x768x512": (g_addmm, [(768,), (1000, 512), (512, 768)], 1),
    "bias_full_ragged_1000x3000x512": (g_addmm, [(1000, 3000), (1000, 512), (512, 3000)], 2),
    "linear_1000x3000x512": (g_linear, [(1000, 512), (3000, 512), (3000,)], 1),
    "linear_1000x3000x512_c2": (g_linear, [(1000, 512), (3000, 512), (3000,)], 2),
    "bmm_tb_4x1000x768x256": (g_bmm_tb, [(4, 1000, 256), (4, 768, 256)], 2),
    "baddbmm_all_4x512x768x256": (g_baddbmm_all, [(4, 512, 768), (4, 256, 512), (4, 768, 256)], 1),
    "baddbmm_row_4x300x520x256": (g_baddbmm_row, [(520,), (4, 300, 256), (4, 256, 520)], 2),
    "sliced_k_ta_tb": (g_sliced_k_t, [(256, 304), (384, 256)], 1),
    "col_origin_ta": (g_col_origin_ta, [(256, 192), (256, 320)], 2),
    "bias_full_sliced": (g_bias_sliced, [(310, 528), (300, 256), (256, 520)], 2),
    "bias_row_stacked_tb": (g_bias_stacked, [(3, 264), (100, 320), (264, 320)], 1),
    # `act` (src/trace/fuse_gemm_act.h): the activation after the bias, before the rounding
    "act_relu_bias_full_512x512x512": (g_act_relu_bias_full, [(512, 512), (512, 512), (512, 512)], 1),
    "act_gelu_tanh_linear_1000x768x512": (g_act_gelu_tanh_linear, [(1000, 512), (768, 512), (768,)], 2),
    "act_silu_tb_300x520x256": (g_act_silu_tb, [(300, 256), (520, 256)], 1),
    # rms_in (src/trace/fuse_rms_norm_gemm.h, under MEGAKITTENS_FUSE=rms_in): ragged M and K (520: a last k-tile of 8 columns),
    # a 3-D x, m_rows <= 64 (warpgroup 1 idle), two readers of one norm
    "rmsin_linear_1000x768x520": (g_rmsin_linear, [(1000, 520), (520,), (768, 520)], 1),
    "rmsin_linear_bias_300x1000x256_c2": (g_rmsin_linear_bias, [(300, 256), (256,), (1000, 256), (1000,)], 2),
    "rmsin_swiglu_2x300x640x512": (g_rmsin_swiglu, [(2, 300, 512), (512,), (640, 512), (640, 512)], 2),
    "rmsin_two_readers_56x384x256": (g_rmsin_two_readers, [(56, 256), (256,), (384, 256), (384, 256)], 1),
    "rmsin_two_readers_100x384x256_c2": (g_rmsin_two_readers, [(100, 256), (256,), (384, 256), (384, 256)], 2),
}


def reference(fn, args):
    """fp32 matmuls on the bf16 inputs; a chained product rounds its intermediate to bf16 as the kernel does."""
    if fn is g_two:
        x, w1, w2 = args
        return (x.float() @ w1.float()).to(BF16).float() @ w2.float()
    return fn(*[a.float() for a in args])


# Tile widths (kernels/mk/itypes/gemm.cuh): 256-wide tiles run m64n256k16, 128-wide ones m64n128k16 (the
# profile picks per node; the same kernel source serves both, so the JIT cache is shared).
TILE_N = [128, 256]


@functools.cache
def _program(case, cluster, tile_n):
    from megakittens import gpu
    fn, shapes = CASES[case]
    return program_for(fn, shapes, cluster_size=cluster, num_sms=gpu.num_ctas(cluster), name=f"gemm_{case}",
                       gemm_n=tile_n)


def _tile_widths(program):
    """The set of n_cols (word 13 of a Gemm instruction's indices) over the program's Gemm instructions."""
    gemm = {i for i, n in enumerate(program.icodes) if n.startswith("Gemm")}
    t = program.table_global()
    return {int(row[7 + 13]) for row in t if int(row[0]) in gemm}


def _launch_twice_and_check(case, program, fn, shapes, global_queue):
    """Two launches on fresh inputs (the second exercises epoch-scaled barriers), each vs fp32."""
    for seed in (1, 2):
        args = inputs_for(shapes, "cuda", seed=seed)
        (out,) = run_gpu(program, args, {"global_work_queue": global_queue, "sync": True, "watchdog_s": 5.0})
        ref = reference(fn, args)
        assert out.shape == ref.shape and out.dtype == BF16
        assert torch.isfinite(out).all(), f"{case}: NaN/inf in the output (unwritten tile?)"
        err = rel_err(out, ref)
        assert err <= 1e-2, f"{case}: relative error {err:.3e}"


@pytest.mark.parametrize("tile_n", TILE_N)
@pytest.mark.parametrize("cluster", [1, 2])
@pytest.mark.parametrize("global_queue", [False, True])
@pytest.mark.parametrize("case", sorted(CASES))
def test_gemm_vs_fp32(case, global_queue, cluster, tile_n):
    if not _gpu_ok():
        pytest.skip("needs a Hopper GPU and the GPU runtime")
    fn, shapes = CASES[case]
    program = _program(case, cluster, tile_n)
    assert max(_tile_widths(program)) <= tile_n
    assert any(n.startswith("Gemm") for n in program.icodes), program.icodes
    _launch_twice_and_check(case, program, fn, shapes, global_queue)


@pytest.mark.parametrize("tile_n", TILE_N)
@pytest.mark.parametrize("global_queue", [False, True])
@pytest.mark.parametrize("case", sorted(FLAG_CASES))
def test_gemm_flags_vs_fp32(case, global_queue, tile_n):
    if not _gpu_ok():
        pytest.skip("needs a Hopper GPU and the GPU runtime")
    fn, shapes, _ = FLAG_CASES[case]  # the cluster size is part of the cached program
    if "swiglu" in case and tile_n == 128:
        pytest.skip("a swiglu tile is half of a 256-column B panel (src/runtime/codegen.cpp)")
    program = _flag_program(case, tile_n)
    assert any(n.startswith("Gemm(") for n in program.icodes), program.icodes  # a flagged Gemm
    assert case.startswith("act_") == any("act=" in n for n in program.icodes), program.icodes
    assert case.startswith("rmsin_") == any("rms_in=" in n for n in program.icodes), program.icodes
    assert not any(n.startswith("RMSNorm") for n in program.icodes), program.icodes
    assert not any(n.startswith("Elementwise") for n in program.icodes), program.icodes
    _launch_twice_and_check(case, program, fn, shapes, global_queue)


@functools.cache
def _flag_program(case, tile_n):
    from megakittens import gpu
    fn, shapes, cluster = FLAG_CASES[case]
    # The rms fold is opt-in (src/trace/fuse_rms_norm_gemm.h).
    with mock.patch.dict(os.environ, {"MEGAKITTENS_FUSE": "rms_in"} if case.startswith("rmsin_") else {}):
        return program_for(fn, shapes, cluster_size=cluster, num_sms=gpu.num_ctas(cluster), name=f"gemm_{case}",
                           gemm_n=tile_n)


@pytest.mark.parametrize("tile_n", TILE_N)
def test_gemm_tiles_exactly_right(tile_n):
    """Integer-valued inputs: every output element is exact in fp32 and in bf16 (|values| < 256), so a
    wrong swizzle, descriptor or store coordinate shows as a mismatch, not as noise."""
    if not _gpu_ok():
        pytest.skip("needs a Hopper GPU and the GPU runtime")
    from megakittens import gpu
    M, N, K = 200, 320, 136
    program = program_for(g_mm, [(M, K), (K, N)], num_sms=gpu.num_ctas(1), name="gemm_exact", gemm_n=tile_n)
    assert _tile_widths(program) == ({128, 64} if tile_n == 128 else {256, 64})
    g = torch.Generator().manual_seed(7)
    a = torch.randint(-2, 3, (M, K), generator=g).to(BF16).cuda()
    b = torch.randint(-1, 2, (K, N), generator=g).to(BF16).cuda()
    b[:, ::7] = 0
    (out,) = run_gpu(program, [a, b], {"sync": True, "watchdog_s": 5.0})
    ref = a.float() @ b.float()
    assert (ref.abs() < 256).all()  # exact in bf16
    bad = (out.float() != ref).nonzero()
    assert bad.numel() == 0, f"{bad.shape[0]} wrong elements, first at {bad[:5].tolist()}"


FLAG_COMBOS = [(ta, tb, bias) for ta in (False, True) for tb in (False, True) for bias in ("none", "row", "full")]


def _exact_fn(ta, tb, bias):
    def ab(a, b):
        return (a.t() if ta else a), (b.t() if tb else b)

    if bias == "none":
        def f(a, b):
            A, B = ab(a, b)
            return A @ B
    else:
        def f(a, b, c):
            A, B = ab(a, b)
            return torch.addmm(c, A, B)
    return f


@pytest.mark.parametrize("tile_n", TILE_N)
@pytest.mark.parametrize("combo", range(len(FLAG_COMBOS)))
def test_gemm_flags_exactly_right(combo, tile_n):
    """Integer-valued inputs for every (ta, tb, bias) combination, ragged M / N / K: each output element
    is exact, so a wrong descriptor, transpose bit, swizzle, box coordinate or bias element shows as a
    mismatch. Cluster size and queue mode alternate over the combinations."""
    if not _gpu_ok():
        pytest.skip("needs a Hopper GPU and the GPU runtime")
    from megakittens import gpu
    ta, tb, bias = FLAG_COMBOS[combo]
    cluster, global_queue = 1 + combo % 2, (combo // 2) % 2 == 1
    M, N, K = 200, 320, 136
    shapes = [(K, M) if ta else (M, K), (N, K) if tb else (K, N)]
    if bias != "none":
        shapes.append((N,) if bias == "row" else (M, N))
    fn = _exact_fn(ta, tb, bias)
    program = program_for(fn, shapes, cluster_size=cluster, num_sms=gpu.num_ctas(cluster), name=f"gemm_exact_{combo}",
                          gemm_n=tile_n)
    want = ("ta," if ta else "") + ("tb," if tb else "") + ("" if bias == "none" else f"bias_{bias},")
    assert f"Gemm({want[:-1]})" in program.icodes or (want == "" and "Gemm" in program.icodes), program.icodes
    g = torch.Generator().manual_seed(11 + combo)
    args = [torch.randint(-2, 3, shapes[0], generator=g), torch.randint(-1, 2, shapes[1], generator=g)]
    if bias != "none":
        args.append(torch.randint(-8, 9, shapes[2], generator=g))
    args = [t.to(BF16).cuda() for t in args]
    (out,) = run_gpu(program, args, {"global_work_queue": global_queue, "sync": True, "watchdog_s": 5.0})
    ref = fn(*[t.float() for t in args])
    assert (ref.abs() <= 256).all()  # exact in bf16
    bad = (out.float() != ref).nonzero()
    assert bad.numel() == 0, f"{(ta, tb, bias)}: {bad.shape[0]} wrong elements, first at {bad[:5].tolist()}"


# ---- nn.Linear (tb, tb + bias_row) through megakittens.compile -------------------------------------

@pytest.mark.parametrize("cluster_size", [1, 2])
@pytest.mark.parametrize("global_work_queue", [False, True])
@pytest.mark.parametrize("bias", [True, False])
def test_linear_module_on_the_megakernel(bias, global_work_queue, cluster_size):
    if not _gpu_ok():
        pytest.skip("needs a Hopper GPU and the GPU runtime")
    torch.manual_seed(5)
    lin = torch.nn.Linear(512, 768, bias=bias).to(device="cuda", dtype=BF16)
    f = megakittens.compile(lin, cluster_size=cluster_size, global_work_queue=global_work_queue)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no fallback warning: Gemm(tb[,bias_row]) runs on the megakernel
        for seed in (0, 1):  # ragged M; the second call relaunches the cached kernel
            x = torch.randn(300, 512, device="cuda", generator=torch.Generator("cuda").manual_seed(seed)).to(BF16)
            with torch.no_grad():
                out = f(x)
            ref = torch.nn.functional.linear(x.float(), lin.weight.float(), lin.bias.float() if bias else None)
            assert out.is_cuda and out.shape == (300, 768)
            err = rel_err(out, ref)
            assert err <= 1e-2, f"Linear(bias={bias}): relative error {err:.3e}"
    d = mk_backend.dispatchers[-1]
    assert d._gpu_error == "", d._gpu_error


@pytest.mark.gpu
@pytest.mark.parametrize("in_f,out_f", [(768, 2), (3, 64), (100, 10)])
def test_linear_off_tma_rows_on_the_megakernel(in_f, out_f):
    """A classification head (N = 2) and small inputs (K = 3): zero-padded to 16-byte rows
    (megakittens/gemm_padding.py), one launch, the values of the unpadded product."""
    if not _gpu_ok():
        pytest.skip("needs a Hopper GPU and the GPU runtime")
    torch.manual_seed(7)
    lin = torch.nn.Linear(in_f, out_f).to(device="cuda", dtype=BF16)
    x = torch.randn(300, in_f, device="cuda").to(BF16)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with torch.no_grad():
            out = megakittens.compile(lin)(x)
    ref = torch.nn.functional.linear(x.float(), lin.weight.float(), lin.bias.float())
    assert out.shape == (300, out_f) and out.is_contiguous() and rel_err(out, ref) <= 1e-2
    assert mk_backend.dispatchers[-1]._gpu_error == ""


def test_linear_module_3d_input():
    """nn.Linear on a (2, 300, 256) input: the reshape to (600, 256) is an alias slot (no copy) that the
    Gemm(tb,bias_row) reads through its own tensor map."""
    if not _gpu_ok():
        pytest.skip("needs a Hopper GPU and the GPU runtime")
    torch.manual_seed(6)
    lin = torch.nn.Linear(256, 520, bias=True).to(device="cuda", dtype=BF16)
    f = megakittens.compile(lin, cluster_size=2, global_work_queue=True)
    x = torch.randn(2, 300, 256, device="cuda").to(BF16)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with torch.no_grad():
            out = f(x)
    ref = torch.nn.functional.linear(x.float(), lin.weight.float(), lin.bias.float())
    assert out.shape == (2, 300, 520) and rel_err(out, ref) <= 1e-2
    assert mk_backend.dispatchers[-1]._gpu_error == ""


# ---- the seed's MLP through megakittens.compile ----------------------------------------------------

MLP_SHAPES = [(512, 512), (1024, 512), (1024, 1024)]


def _mlp_ref(W, x, b):
    for i in range(W.shape[0]):
        x = torch.relu((x.float() @ W[i].float()).to(BF16) + b[i]).to(BF16)
    return x


@pytest.mark.parametrize("cluster_size", [1, 2])
@pytest.mark.parametrize("global_work_queue", [False, True])
@pytest.mark.parametrize("M,H", MLP_SHAPES)
def test_mlp_compile_on_the_megakernel(M, H, global_work_queue, cluster_size):
    if not _gpu_ok():
        pytest.skip("needs a Hopper GPU and the GPU runtime")
    f = megakittens.compile(mlp, cluster_size=cluster_size, global_work_queue=global_work_queue)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no fallback warning: the whole MLP runs on the megakernel
        for seed in (0, 1):
            torch.manual_seed(seed)
            args = mlp_inputs(M, H, device="cuda")
            out = f(*args)
            assert out.is_cuda and out.shape == (M, H)
            err = rel_err(out, _mlp_ref(*args))
            assert err <= 1e-2, f"MLP ({M},{H}): relative error {err:.3e}"
            assert rel_err(out, mlp(*args)) <= 2e-2  # and eager bf16
    d = mk_backend.dispatchers[-1]
    assert d._gpu_error == "", d._gpu_error


def test_mlp_sliced_weights():
    """W[2:] of a (5, H, H) stack: the Gemm's B origins are d = 2, 3, 4."""
    if not _gpu_ok():
        pytest.skip("needs a Hopper GPU and the GPU runtime")

    def model(W, x, b):
        return mlp(W[2:], x, b)

    torch.manual_seed(3)
    W, x, b = mlp_inputs(512, 512, layers=5, device="cuda")
    b = b[:3].contiguous()
    f = megakittens.compile(model)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = f(W, x, b)
    assert rel_err(out, _mlp_ref(W[2:], x, b)) <= 1e-2


@pytest.mark.parametrize("M,H", MLP_SHAPES)
def test_mlp_is_one_kernel_launch(M, H):
    if not _gpu_ok():
        pytest.skip("needs a Hopper GPU and the GPU runtime")
    args = mlp_inputs(M, H, device="cuda")
    f = megakittens.compile(mlp)
    f(*args)  # compile + JIT outside the profiled region
    torch.cuda.synchronize()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        out = f(*args)
        torch.cuda.synchronize()
    kernels = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    names = [e.name for e in kernels]
    assert len(kernels) == 1 and "megakittens" in names[0], names
    assert not any("memset" in n.lower() for n in names), names
    assert rel_err(out, _mlp_ref(*args)) <= 1e-2


# ---- Gemm(swiglu): silu(A @ B) * (A @ B2) (src/trace/fuse_swiglu.h, GemmT<..., SWIGLU>) -------------

def s_linear(x, wg, wu):  # Gemm(tb,swiglu); a 3-D x gives two views of x
    return torch.nn.functional.silu(torch.nn.functional.linear(x, wg)) * torch.nn.functional.linear(x, wu)


def s_plain(a, bg, bu):  # Gemm(swiglu): N-major B tiles
    return torch.nn.functional.silu(a @ bg) * (a @ bu)


def s_sliced_k(x, wg, wu):  # K = 200 of 256-wide backings: the loader zeroes the K tail of B and B2 by hand
    return s_linear(x[:, :200], wg[:, :200], wu[:, :200])


# name -> (fn, input shapes, cluster size)
SWIGLU_CASES = {
    "tb_ragged_1000x3000x512": (s_linear, [(1000, 512), (3000, 512), (3000, 512)], 1),
    "tb_ragged_1000x3000x512_c2": (s_linear, [(1000, 512), (3000, 512), (3000, 512)], 2),
    "tb_3d_1x1024x2048x512": (s_linear, [(1, 1024, 512), (2048, 512), (2048, 512)], 1),
    "plain_ragged_k_300x520x200": (s_plain, [(300, 200), (200, 520), (200, 520)], 2),
    "plain_small_m_50x296x320": (s_plain, [(50, 320), (320, 296), (320, 296)], 1),  # 5 k-tiles, m_rows <= 64
    "tb_sliced_k": (s_sliced_k, [(300, 256), (384, 256), (384, 256)], 2),
}


@pytest.mark.parametrize("global_queue", [False, True])
@pytest.mark.parametrize("case", sorted(SWIGLU_CASES))
def test_gemm_swiglu_vs_fp32(case, global_queue):
    """Against fp32 products and an fp32 silu * up, within 5e-3 (one bf16 rounding is ~2e-3): a gate
    column paired with the wrong up column, a wrong B2 box or an unwritten tile is far outside it."""
    if not _gpu_ok():
        pytest.skip("needs a Hopper GPU and the GPU runtime")
    fn, shapes, _ = SWIGLU_CASES[case]  # the cluster size is part of the cached program
    program = _swiglu_program(case)
    assert sum("swiglu" in n for n in program.icodes) == 1, program.icodes
    assert not any(n.startswith("Elementwise") for n in program.icodes), program.icodes
    for seed in (1, 2):
        args = inputs_for(shapes, "cuda", seed=seed)
        (out,) = run_gpu(program, args, {"global_work_queue": global_queue, "sync": True, "watchdog_s": 5.0})
        ref = fn(*[a.float() for a in args])
        assert out.numel() == ref.numel() and out.dtype == BF16  # the slot of a 3-D case is its 2-D product
        out = out.reshape(ref.shape)
        assert torch.isfinite(out).all(), f"{case}: NaN/inf in the output (unwritten tile?)"
        err = rel_err(out, ref)
        assert err <= 5e-3, f"{case}: relative error {err:.3e}"


@functools.cache
def _swiglu_program(case):
    from megakittens import gpu
    fn, shapes, cluster = SWIGLU_CASES[case]
    return program_for(fn, shapes, cluster_size=cluster, num_sms=gpu.num_ctas(cluster), name=f"gemm_swiglu_{case}")


# ---- [Note: gemm multicast]: B multicast across the cluster pair ---------------------------------------

KEV_FLAGS = 12  # kernels/mk/vm.cuh kEvFlags: Gemm writes 1 when its B boxes were multicast


def _gemm_flags_under(define, case, cluster, gemm_n, global_queue, monkeypatch, seeds=(3,)):
    """Build CASES[case] with MEGAKITTENS_DEFINES=define (part of the source: its own kernel), launch it once
    per seed with the timeline on, check each output against fp32, and return the timeline flag word
    (kEvFlags) of every Gemm instruction that has rows."""
    from megakittens import gpu
    monkeypatch.setenv("MEGAKITTENS_DEFINES", define)
    fn, shapes = CASES[case]
    program = program_for(fn, shapes, cluster_size=cluster, num_sms=gpu.num_ctas(cluster), gemm_n=gemm_n,
                          name=f"gemm_{define.split('=')[0].lower()}_{case}_{cluster}")
    gemm = {i for i, n in enumerate(program.icodes) if n.startswith("Gemm")}
    rows = [i for i, r in enumerate(program.table_global()) if int(r[0]) in gemm and int(r[7 + 12]) > 0]
    assert rows
    for seed in seeds:
        t = torch.zeros(program.num_instructions, gpu.TIMELINE_WORDS, dtype=torch.int64, device="cuda")
        args = inputs_for(shapes, "cuda", seed=seed)
        (out,) = run_gpu(program, args, {"global_work_queue": global_queue, "sync": True, "watchdog_s": 5.0},
                         timeline=t)
        assert torch.isfinite(out).all()
        assert rel_err(out, reference(fn, args)) <= 1e-2
    return t[rows, KEV_FLAGS].cpu()


@pytest.mark.parametrize("global_queue", [False, True])
@pytest.mark.parametrize("case,cluster,want", [
    ("mm_2048", 2, "all"),           # every cluster tile: both ranks have rows, same page renaming
    ("gemm_chain", 2, "all"),        # Gemm -> Gemm: the second node's pages follow the first's
    ("mm_m100_k320", 2, "none"),     # rank 1 of every tile is past M: nothing to share
    ("mm_2048", 1, "none"),          # no cluster
])
def test_gemm_multicast_engages(case, cluster, want, global_queue, monkeypatch):
    """With MK_GEMM_MULTICAST=1 (off by default), the timeline's flag word says which Gemm instructions
    multicast B; the outputs stay right either way."""
    if not _gpu_ok():
        pytest.skip("needs a Hopper GPU and the GPU runtime")
    flags = _gemm_flags_under("MK_GEMM_MULTICAST=1", case, cluster, 256, global_queue, monkeypatch)
    assert ((flags == 1).all() if want == "all" else (flags == 0).all()), flags.tolist()


# ---- split-K chains (src/schedule/phase0_split_k.cpp): late bias barriers on the device -------------

@functools.cache
def _split_program(case, cluster):
    from megakittens import gpu
    from test_linear import SPLIT_K_CASES, SPLIT_K_CHAIN_STEPS
    fn, shapes, chain = SPLIT_K_CASES[case]
    program = program_for(fn, shapes, cluster_size=cluster, num_sms=gpu.num_ctas(cluster), name=f"gemm_split_{case}",
                          split_chain_steps=SPLIT_K_CHAIN_STEPS)
    return fn, shapes, program


@pytest.mark.parametrize("cluster", [1, 2])
@pytest.mark.parametrize("global_queue", [False, True])
@pytest.mark.parametrize("case", ["mm_256x256x4096", "linear_bias_row_200x312x2048", "residual_ta_tb_1024x2048x8192",
                                  "addmm_k_tail_128x520x3000"])
def test_split_k_vs_fp32(case, global_queue, cluster):
    """Each piece's mainloop runs before the previous piece is stored (its loader skips the late bias
    barrier); its epilogue must still read that piece's finished output."""
    if not _gpu_ok():
        pytest.skip("needs a Hopper GPU and the GPU runtime")
    fn, shapes, program = _split_program(case, cluster)
    assert sum(n.itype.startswith("Gemm") for n in program.nodes) >= 2, [n.itype for n in program.nodes]
    _launch_twice_and_check(case, program, fn, shapes, global_queue)


# ---- Rope in the q / k projections' epilogue (Gemm flag rope=D, tests/test_gemm_rope.py) -------------

@pytest.mark.gpu
@pytest.mark.parametrize("cluster_size,global_work_queue", [(1, False), (2, True)])
@pytest.mark.parametrize("D,B,S,table,bshd,bias", [
    (64, 1, 1024, "1s", True, False),   # HF Llama-1B's heads
    (128, 2, 300, "bs", True, False),   # ragged M (600 rows), per-batch table rows (T = B S)
    (64, 2, 200, "s", False, True),     # rotated before the transpose, after a bias_row (Qwen2)
    (128, 1, 512, "s", True, True),
])
def test_gemm_rope_epilogue_vs_fp32(D, B, S, table, bshd, bias, cluster_size, global_work_queue, monkeypatch):
    if not _gpu_ok():
        pytest.skip("needs a Hopper GPU and the GPU runtime")
    monkeypatch.setenv("MEGAKITTENS_FUSE", "gemm_rope")  # every head dim (the default folds D 64: src/trace/fuse_gemm_rope.h)
    from test_gemm_rope import attn_block, block_inputs
    args = [a.cuda() for a in block_inputs(B=B, S=S, D=D, H=8, KV=2, table=table, bias=bias, hidden=512)]

    def fn(x, wq, wk, wv, c, s, *bq):
        return attn_block(x, wq, wk, wv, c, s, *bq, bshd=bshd)
    f = megakittens.compile(fn, cluster_size=cluster_size, global_work_queue=global_work_queue)
    with torch.no_grad():
        out = f(*args)
        ref = fn(*[a.float() for a in args])
    err = rel_err(out, ref)
    assert err <= 1e-2, f"relative error {err:.3e}"
    d = mk_backend.dispatchers[-1]
    assert d._gpu_error == "", d._gpu_error
    it = [n.itype for n in d.program.nodes]
    assert sum(t.startswith("Gemm(tb") and t.endswith(f"rope={D})") for t in it) == 2, it
