"""CPU CI (issue 3): for a test graph of each GPU IType the generated megakernel source compiles with
NVRTC for sm_90a, and ptxas reports no spills. Skips when NVRTC or the CUDA headers are missing."""
from __future__ import annotations

import re

import pytest
import torch

from megakittens import _C

gpu = pytest.importorskip("megakittens.gpu")
from test_gpu_gemm import (g_addmm, g_baddbmm_all, g_bias_sliced, g_bmm_tb, g_linear, g_mm,  # noqa: E402
                           g_ta, g_ta_tb, g_tb)
from test_gpu_kernels import CASES, EW_CASES, program_for  # noqa: E402
from test_gpu_simt import CASES as SIMT_CASES, case_inputs, program_of  # noqa: E402


def _nvrtc_or_skip():
    if getattr(_C, "gpu_runtime_missing", "x"):
        pytest.skip("built without the GPU runtime")
    inc = gpu.cuda_include_dir()
    if inc is None:
        pytest.skip("CUDA headers (cuda_bf16.h, cccl/) not found")
    return inc


def _compile(program):
    inc = _nvrtc_or_skip()
    src = _C.gpu_generate_source(program)
    flags = _C.gpu_jit_flags(gpu.kernels_dir(), inc)
    try:
        cubin, log, ms = _C.nvrtc_compile(src, flags, list(gpu.nvrtc_candidates()))
    except RuntimeError as e:
        if "NVRTC not found" in str(e):
            pytest.skip(str(e).splitlines()[0])
        raise
    return src, cubin, log


def _assert_no_spills(log, wgmma=False):
    """The ptxas report in an NVRTC log shows no spill (and, with wgmma, no serialized wgmma: C7515-C7520,
    correct but a large slowdown); skips when this NVRTC forwards no report."""
    if "megakittens_kernel" not in log:
        pytest.skip(f"this NVRTC printed no ptxas report (log: {log[:200]!r})")
    spills = [int(a) + int(b) for a, b in re.findall(r"(\d+) bytes spill stores, (\d+) bytes spill loads", log)]
    assert spills and max(spills) == 0, log
    if wgmma:
        assert "serialized" not in log, log


@pytest.mark.parametrize("cluster", [1, 2])
@pytest.mark.parametrize("case", ["unary_1024", "add_1024", "rms_2048", "chain", "many_slots", "many_slots_b9",
                                  "fused_chain20", "fused_one_input", "fused_bcast", "fused_fp32"])
def test_generated_source_compiles_without_spills(case, cluster):
    fn, shapes = CASES[case]
    program = program_for(fn, shapes, cluster_size=cluster)
    src, cubin, log = _compile(program)
    assert len(cubin) > 0
    assert f"#define MK_CLUSTER_SIZE {cluster}" in src
    # [Note: tile maps]: past ~200 slots the maps leave the 32 KB kernel parameter for device memory.
    in_global = len(program.slots) * 160 > 32764
    assert case.startswith("many_slots") == in_global, len(program.slots)
    assert f"#define MK_MAPS_IN_GLOBAL {int(in_global)}" in src
    # interpreter.cuh [Note: role calls]: forced calls only beside a Gemm or Attention body.
    tensor_core = "mk::Gemm" in src or "mk::Attention" in src
    assert case.startswith("many_slots") == tensor_core  # its last op is a matmul
    assert f"#define MK_ROLE_CALLS {int(tensor_core)}" in src
    spills = [int(a) + int(b) for a, b in re.findall(r"(\d+) bytes spill stores, (\d+) bytes spill loads", log)]
    if not spills and "megakittens_kernel" not in log:
        # Seen with the NVRTC of the GPU image: it compiled but forwarded no ptxas report to the log.
        pytest.skip(f"this NVRTC printed no ptxas report (log: {log[:200]!r})")
    assert spills and max(spills) == 0, log
    assert "megakittens_kernel" in log


@pytest.mark.parametrize("case", sorted(SIMT_CASES))
def test_simt_source_compiles_without_spills(case):
    """[Note: SIMT bodies]: every plain-load case of tests/test_gpu_simt.py has its bodies and compiles."""
    fn, args = case_inputs(case, 0)
    p = program_of(fn, args)
    assert _C.gpu_missing_bodies(p) == []
    _, cubin, log = _compile(p)
    assert len(cubin) > 0
    spills = [int(a) + int(b) for a, b in re.findall(r"(\d+) bytes spill stores, (\d+) bytes spill loads", log)]
    assert not spills or max(spills) == 0, log


def test_icode_switch_covers_every_itype():
    _nvrtc_or_skip()
    fn, shapes = CASES["chain"]
    p = program_for(fn, shapes)
    src = _C.gpu_generate_source(p)
    for i, name in enumerate(p.icodes):
        assert f"case {i}:" in src and name in src
    assert "eps = 0x1.0c6f7ap-20f" in src  # RMSNorm eps 1e-6 reaches the kernel exactly (fp32)


# ---- Gemm (issue 4): the wgmma body compiles, without spills and without serialized wgmma ----------

def g_mlp(W, x, b):
    for i in range(W.shape[0]):
        x = torch.relu(x @ W[i] + b[i])
    return x


def g_mixed(x, w, W, b):  # every GPU IType in one kernel (the consumer code is their union)
    h = torch.ops.megakittens.rms_norm(x, w, 1e-6)
    return torch.sqrt(torch.abs(torch.relu(h @ W) + b))


def g_flag_mix(x, w1, b1, w2, c, w3):  # several GemmT instantiations in one kernel
    h = torch.nn.functional.linear(x, w1, b1)
    h = torch.addmm(c, h, w2)
    return h.t() @ w3


GEMM_CASES = {
    "mm_ragged": (g_mm, [(1000, 512), (512, 3000)]),
    "mixed": (g_mixed, [(512, 1024), (1024,), (1024, 768), (512, 768)]),
    "mlp_1024": (g_mlp, [(3, 1024, 1024), (1024, 1024), (3, 1024, 1024)]),
    "ta": (g_ta, [(512, 1024), (512, 768)]),
    "tb": (g_tb, [(1000, 512), (3000, 512)]),
    "ta_tb": (g_ta_tb, [(512, 1024), (768, 512)]),
    "bias_row": (g_addmm, [(768,), (1000, 512), (512, 768)]),
    "bias_full": (g_addmm, [(1000, 768), (1000, 512), (512, 768)]),
    "bias_full_sliced": (g_bias_sliced, [(310, 528), (300, 256), (256, 520)]),
    "linear": (g_linear, [(1000, 512), (768, 512), (768,)]),
    "bmm_tb": (g_bmm_tb, [(4, 1000, 256), (4, 768, 256)]),
    "baddbmm_all": (g_baddbmm_all, [(4, 512, 768), (4, 256, 512), (4, 768, 256)]),
    "flag_mix": (g_flag_mix, [(512, 256), (384, 256), (384,), (384, 512), (512, 512), (512, 256)]),
}

# The GemmT<TA, TB, BIAS> each flagged case instantiates (src/runtime/codegen.cpp): a bias_full whose every
# tile starts on a 16-byte column is BIAS 2 (staged tiles only), the sliced view at column 3 BIAS 3.
GEMM_FLAG_TYPES = {
    "ta": ["mk::GemmT<true, false, 0>"],
    "tb": ["mk::GemmT<false, true, 0>"],
    "ta_tb": ["mk::GemmT<true, true, 0>"],
    "bias_row": ["mk::GemmT<false, false, 1>"],
    "bias_full": ["mk::GemmT<false, false, 2>"],
    "bias_full_sliced": ["mk::GemmT<false, false, 3>"],
    "linear": ["mk::GemmT<false, true, 1>"],
    "bmm_tb": ["mk::GemmT<false, true, 0>"],
    "baddbmm_all": ["mk::GemmT<true, true, 2>"],
    "flag_mix": ["mk::GemmT<false, true, 1>", "mk::GemmT<false, false, 2>", "mk::GemmT<true, false, 0>"],
}


@pytest.mark.parametrize("cluster", [1, 2])
@pytest.mark.parametrize("case", sorted(GEMM_CASES))
def test_gemm_source_compiles_without_spills(case, cluster):
    fn, shapes = GEMM_CASES[case]
    p = program_for(fn, shapes, cluster_size=cluster)
    src, cubin, log = _compile(p)
    assert len(cubin) > 0
    assert "mk::Gemm" in src and "#define MK_NUM_XMAPS" in src
    _assert_no_spills(log, wgmma=True)


# Experiment switches of the device bodies (MEGAKITTENS_DEFINES "NAME" for NAME=1, or "NAME=value"; the
# default build is the other value) and the cases (GEMM_CASES, CASES, ATTN_CASES) they must compile.
EXPERIMENTS = [("MK_GEMM_BIAS_EARLY", c, 1) for c in ("mlp_1024", "linear", "bias_row", "baddbmm_all", "flag_mix")] + \
    [("MK_GEMM_MULTICAST", c, 2) for c in ("mlp_1024", "flag_mix")] + \
    [(d, "mlp_1024", 1) for d in ("MK_EXP_GEMM_NO_LOAD", "MK_EXP_GEMM_NO_MMA", "MK_GEMM_WAIT_STATS")] + \
    [("MK_ATTN_TWO_LOADERS=0", c, k) for c, k in (("b2_h8_s512_d128_causal", 1), ("qkv_model", 2))] + \
    [(d, "b1_h8_gqa4_s1000_d64_causal", 1) for d in ("MK_ATTN_WAIT_STATS", "MK_ATTN_SPLIT_SOFTMAX=0",
                                                     "MK_ATTN_PINGPONG=1")] + \
    [("MK_ATTN_WAIT_STATS", "b2_h8_s512_d128_causal", 1)] + \
    [(d, "b1_h8_gqa4_s1000_d64_causal", 1) for d in ("MK_ATTN_SPLIT_RELEASE=0", "MK_ATTN_SOFTMAX_CHAINS=1",
                                                     "MK_ATTN_SOFTMAX_CHAINS=8", "MK_ATTN_POLY_EXP2=2",
                                                     "MK_ATTN_POLY_EXP2=8")] + \
    [("MK_ATTN_POLY_EXP2_D128=2", "b2_h8_s512_d128_causal", 1)] + \
    [("MK_MMA_WAIT_FAST=0", c, k) for c, k in (("mlp_1024", 1), ("b2_h8_s512_d128_causal", 1), ("qkv_model", 2))] + \
    [("MK_RELEASE_LANES=0", c, 1) for c in ("rms_2048", "mlp_1024")]


@pytest.mark.parametrize("define,case,cluster", EXPERIMENTS)
def test_experiment_compiles_without_spills(define, case, cluster, monkeypatch):
    """MEGAKITTENS_DEFINES=<define>: gemm.cuh [Note: gemm early bias] and [Note: gemm multicast] (clusters
    of 2), the timing experiments MK_EXP_GEMM_NO_LOAD / NO_MMA, Attention with one loader warp
    (MK_ATTN_TWO_LOADERS=0), its loop's cycle split (MK_ATTN_WAIT_STATS), the softmax in the P V wait's
    block (MK_ATTN_SPLIT_SOFTMAX=0), ping-pong on causal tiles too (MK_ATTN_PINGPONG=1), one empty barrier per
    K / V stage (MK_ATTN_SPLIT_RELEASE=0), the softmax's chain count (MK_ATTN_SOFTMAX_CHAINS), exponentials by
    polynomial (MK_ATTN_POLY_EXP2), the consumers' plain mbarrier wait (MK_MMA_WAIT_FAST=0, tile.cuh) and the
    dst releases from lane 0 alone (MK_RELEASE_LANES=0, vm.cuh); none may spill or serialize the wgmma."""
    name, _, value = define.partition("=")
    monkeypatch.setenv("MEGAKITTENS_DEFINES", f"{name}={value or 1}")
    all_cases = {**CASES, **GEMM_CASES, **ATTN_CASES}
    if case not in all_cases and not ATTN_CASES:
        pytest.skip("the attention cases did not build here (ATTN_CASES needs tests/test_gpu_attention.py)")
    fn, shapes = all_cases[case]
    src, cubin, log = _compile(program_for(fn, shapes, cluster_size=cluster))
    assert len(cubin) > 0 and f"#define {name} {value or 1}" in src
    _assert_no_spills(log, wgmma=True)


@pytest.mark.parametrize("case", sorted(GEMM_FLAG_TYPES))
def test_flagged_gemm_maps_to_its_template(case):
    """ta / tb / bias_row / bias_full become the template parameters of mk::GemmT (no fallback)."""
    fn, shapes = GEMM_CASES[case]
    src = _C.gpu_generate_source(program_for(fn, shapes))
    for t in GEMM_FLAG_TYPES[case]:
        assert t + ">();" in src, (t, [ln for ln in src.splitlines() if "case" in ln])


def test_bias_input_gets_no_tensor_map():
    """A bias row is read with plain loads: only A, B and D are TMA'd. A and B have a 64x64 xmap and the
    four wide ones (gemm.cuh [Note: gemm wide boxes]), D (stored) its 64x64 xmap: 5 + 5 + 1."""
    fn, shapes = GEMM_CASES["linear"]
    src = _C.gpu_generate_source(program_for(fn, shapes))
    assert "#define MK_NUM_XMAPS 11" in src


def test_bias_full_tile_gets_its_tensor_map():
    """A bias_full tile is TMA-loaded in D's 64x64 boxes (gemm.cuh [Note: gemm bias tile]): 5 + 5 + 1 + 1."""
    fn, shapes = GEMM_CASES["bias_full"]
    src = _C.gpu_generate_source(program_for(fn, shapes))
    assert "mk::GemmT<false, false, 2>" in src
    assert "#define MK_NUM_XMAPS 12" in src


# ---- Attention (issue 5): every generated variant compiles, without spills or serialized wgmma -------

def _attn_cases():
    from test_gpu_attention import CASES as ATTN_CASES, qkv_model
    cases = {k: ATTN_CASES[k][:2] for k in ("b1_h1_s128_d64_full", "b2_h8_s512_d128_causal",
                                              "b1_h8_gqa4_s1000_d64_causal", "b2_h32_gqa8_s1000_d128_full",
                                              "bshd_b2_h8_gqa4_s1000_d128_causal", "bshd_b1_h4_s512_d64_full")}
    # Both head dims in one icode, and the projections + attention kernel (Gemm and Attention consumers).
    cases["both_head_dims"] = (lambda q, k, v, a, b, c: (torch.ops.megakittens.attention(q, k, v, True, 0.125),
                                                         torch.ops.megakittens.attention(a, b, c, True, 0.125)),
                               [(1, 2, 256, 64)] * 3 + [(1, 2, 256, 128)] * 3)
    cases["qkv_model"] = (qkv_model, [(2, 300, 512), (512, 512), (512, 128), (512, 128)])
    return cases


try:
    ATTN_CASES = _attn_cases()
except Exception:  # noqa: BLE001  (collection must not fail where the GPU test module cannot import)
    ATTN_CASES = {}


@pytest.mark.parametrize("cluster", [1, 2])
@pytest.mark.parametrize("case", sorted(ATTN_CASES))
def test_attention_source_compiles_without_spills(case, cluster):
    fn, shapes = ATTN_CASES[case]
    p = program_for(fn, shapes, cluster_size=cluster)
    src, cubin, log = _compile(p)
    assert len(cubin) > 0 and "mk::Attention<P" in src
    _assert_no_spills(log, wgmma=True)


def test_attention_parameters_reach_the_kernel():
    """causal, scale * log2(e) (fp32, exact hex), the head dims to instantiate and the bshd mask become
    the icode's parameter struct; a (B, S, H, D) operand gets a second tile map."""
    fn, shapes = ATTN_CASES["both_head_dims"]
    src = _C.gpu_generate_source(program_for(fn, shapes))
    assert "static constexpr bool causal = true;" in src
    assert "static constexpr float scale_log2 = 0x1.715476p-3f;" in src  # 0.125 * log2(e) in fp32
    assert "static constexpr int head_dims = 3;" in src and "static constexpr unsigned bshd = 0;" in src
    assert "#define MK_NUM_XMAPS 8" in src  # q, k, v, o of both nodes
    fn, shapes = ATTN_CASES["bshd_b1_h4_s512_d64_full"]
    src = _C.gpu_generate_source(program_for(fn, shapes))
    assert "static constexpr unsigned bshd = 7;" in src and "head_dims = 1;" in src
    assert "#define MK_NUM_XMAPS 7" in src  # q, k, v with a second (strided) map each, o


# ---- elementwise ops (issue 6): new unary ops and scalar forms compile, constants exact ---------------

@pytest.mark.parametrize("cluster", [1, 2])
@pytest.mark.parametrize("case", ["ew_unary_ragged", "ew_scalar", "ew_chained", "ew_select"])
def test_elementwise_ops_compile_without_spills(case, cluster):
    fn, shapes, _, _ = EW_CASES[case]
    p = program_for(fn, shapes, cluster_size=cluster)
    src, cubin, log = _compile(p)
    assert len(cubin) > 0
    if case == "ew_select":
        assert "mk::Binary::select" in src
    if case == "ew_unary_ragged":
        for op in ("silu", "gelu", "gelu_tanh", "sigmoid", "tanh", "cos", "sin", "reciprocal", "square", "erf",
                   "expm1"):
            assert f"mk::ElementwiseUnary<mk::Unary::{op}>" in src
    else:
        assert "mk::ElementwiseFused<" in src  # the chains fuse; ew_scalar's single ops stay ElementwiseUnaryK
        assert ("mk::ElementwiseUnaryK<" in src) == (case == "ew_scalar")
    if case == "ew_scalar":
        # Constants reach the kernel exactly (fp32 hex literals): 0.5, 1/10 rounded to fp32, 3, 1e-6, in a step
        # struct of ElementwiseUnaryK or a step of a fused function (x * 0.5 + 1).
        for op, k in (("mul_scalar", "0x1p-1f"), ("mul_scalar", "0x1.99999ap-4f"), ("div_scalar", "0x1.8p+1f"),
                      ("add_scalar", "0x1.0c6f7ap-20f")):
            assert (f"mk::Unary::{op}; static constexpr float k = {k};" in src
                    or re.search(rf"mk::Unary::{op}>\(x\[0\], {re.escape(k)}\)", src)), (op, k)
        assert "mk::unary<mk::Unary::mul_scalar>(x[0], 0x1p-1f)" in src  # x * 0.5 + 1 is fused
    _assert_no_spills(log)


def test_non_finite_scalar_constant_has_no_gpu_body():
    """An infinite/NaN constant has no device literal: codegen refuses it ("no GPU body yet") so the
    dispatcher falls back, never emitting code that computes something else."""
    _nvrtc_or_skip()
    p = program_for(lambda x: torch.ops.megakittens.elementwise_unary(x, "mul_scalar:inf"), [(64, 128)])
    with pytest.raises(Exception, match="no GPU body yet"):
        _C.gpu_generate_source(p)


def _example_llama_program():
    """One layer of examples/llama.py (head_dim 128, bf16) as a Program, its weights as graph inputs."""
    import importlib.util
    import sys
    from dataclasses import replace
    from pathlib import Path
    path = Path(__file__).resolve().parent.parent / "examples" / "llama.py"
    spec = importlib.util.spec_from_file_location("mk_example_llama_nvrtc", path)
    ex = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = ex  # dataclasses resolve the module by name
    spec.loader.exec_module(ex)
    args = replace(ex.CONFIGS["tiny"], n_head=2, n_local_heads=1, n_layer=1)
    model = ex.build(args, 128, "cpu")
    state = {**dict(model.named_parameters()), **dict(model.named_buffers())}
    names = list(state)

    w = next(i for i, n in enumerate(names) if state[n].dim() == 2)

    def fn(*a):  # plus a transposed weight, so that the source holds a Copy body too
        return torch.func.functional_call(model, dict(zip(names, a[:-1])), (a[-1],))[0], a[w].t().contiguous()
    with torch.no_grad():
        return program_of(fn, list(state.values()) + [torch.randint(0, args.vocab_size, (1, 128))])


def test_llama_layer_source_compiles_without_spills():
    """A Llama layer's kernel holds Attention, Gemm, RMSNorm, Rope, Copy, Embedding and elementwise bodies in
    one function capped at 168 registers: extra live values in any body (a SIMT loop with more loads in
    flight, [Note: SIMT chunks]) have spilled in the others before. The consumers' loop is inlined and the
    loader's and storer's are calls taking Ctx by value (kernels/mk/interpreter.cuh worker): no spill, and
    no stack frame in the kernel (a Ctx in local memory, reloaded by every body, cost the 8B's Gemms ~9%,
    benchmarks/notes.md Session 21). No wgmma may be serialized (C7510: a whole model's Gemm k-step took
    ~27% more cycles, benchmarks/notes.md Session 19)."""
    p = _example_llama_program()
    src, cubin, log = _compile(p)
    for body in ("mk::Attention", "mk::Rope<", "mk::Copy<", "mk::Embedding", "mk::RMSNorm<", "mk::GemmT<false, true, 0, true>"):
        assert body in src, body
    assert "#define MK_ROLE_CALLS 1" in src  # [Note: role calls]: inlined role loops spill here
    _assert_no_spills(log)
    frames = [int(a) for a in re.findall(r"(\d+) bytes stack frame", log)]
    assert frames and frames[0] <= 32, log  # the kernel's own frame (the calls' parameters)
    assert "serialized" not in log, log


def test_llama_layer_with_rms_in_compiles_without_spills(monkeypatch):
    """MEGAKITTENS_FUSE=rms_in: the layer's norms fold into q / k / v and the swiglu Gemm (A fragments loaded,
    squared and scaled by the norm's weight in the mainloop, wgmma with A from registers; eps a constant of the
    icode); no spill and no serialized wgmma."""
    monkeypatch.setenv("MEGAKITTENS_FUSE", "rms_in")
    p = _example_llama_program()
    src, cubin, log = _compile(p)
    eps = 0x3727c5ac  # 1e-05 as fp32 bits (the example's norm_eps)
    for body in (f"mk::GemmT<false, true, 0, false, mk::Unary::identity, 0, true, false, {eps}>",
                 f"mk::GemmT<false, true, 0, true, mk::Unary::identity, 0, true, false, {eps}>"):
        assert body in src, body
    assert "mk::RMSNorm<" in src  # the final norm is a graph output
    _assert_no_spills(log, wgmma=True)


@pytest.mark.parametrize("case", ["rmsin_linear_bias_300x1000x256_c2", "rmsin_swiglu_2x300x640x512"])
def test_rms_in_gemm_compiles_without_spills(monkeypatch, case):
    """rms_in beside a bias row (its eps takes no index word) and beside swiglu, in clusters of 2."""
    from test_gpu_gemm import FLAG_CASES
    monkeypatch.setenv("MEGAKITTENS_FUSE", "rms_in")
    fn, shapes, cluster = FLAG_CASES[case]
    p = program_for(fn, shapes, cluster_size=cluster)
    assert any("rms_in=1e-05" in c for c in p.icodes), p.icodes
    src, cubin, log = _compile(p)
    _assert_no_spills(log, wgmma=True)


def test_maps_in_global_switch(monkeypatch):
    """MEGAKITTENS_MAPS_IN_GLOBAL=1 (src/runtime/codegen.cpp param_layout): a program whose maps fit the kernel
    parameter keeps them in the device buffer, as the large models do; the kernel compiles without spills."""
    fn, shapes = GEMM_CASES["mlp_1024"]
    p = program_for(fn, shapes)
    assert "#define MK_MAPS_IN_GLOBAL 0" in _C.gpu_generate_source(p)
    monkeypatch.setenv("MEGAKITTENS_MAPS_IN_GLOBAL", "1")
    src, cubin, log = _compile(p)
    assert len(cubin) > 0 and "#define MK_MAPS_IN_GLOBAL 1" in src
    _assert_no_spills(log, wgmma=True)


def test_timeline_width_matches_the_device():
    """megakittens.gpu.TIMELINE_WORDS (the timeline tensor's row width) is kernels/mk/vm.cuh's kTimelineWords:
    the device writes rows of that many words, so a mismatch would shift every row after the first."""
    import pathlib
    src = (pathlib.Path(gpu.kernels_dir()) / "mk" / "vm.cuh").read_text()
    width = re.search(r"kTimelineWords\s*=\s*(\d+)", src)
    assert width and int(width.group(1)) == gpu.TIMELINE_WORDS, (width and width.group(0), gpu.TIMELINE_WORDS)


def test_serialized_wgmma_in_the_jit_log_warns():
    """megakittens.gpu.warn_ptxas_log: a C7510 line in ptxas's report becomes a UserWarning naming the
    program; a clean report (or the empty log of a cache hit) stays silent."""
    import warnings
    from megakittens import gpu
    line = ("ptxas info    : (C7510) Potential Performance Loss: wgmma.mma_async instructions are serialized "
            "due to wgmma pipeline crossing function boundary at a function call in the function 'megakittens_kernel'")
    with pytest.warns(UserWarning, match="serialized the wgmma instructions of the megakernel for 'llama'"):
        gpu.warn_ptxas_log("llama", "ptxas info    : Used 168 registers\n" + line)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        gpu.warn_ptxas_log("llama", "ptxas info    : Used 168 registers, 0 bytes spill stores")
        gpu.warn_ptxas_log("llama", "")
