"""The persistent megakernel on the H200 (issue 3): every GPU IType against its eager oracle, both
queue modes, cluster sizes 1 and 2, chained graphs, and a planted deadlock that must raise.

The graph builders here are also used by tests/test_nvrtc.py (CPU: generated source compiles)."""
from __future__ import annotations

import math
import os

import pytest
import torch
import torch.nn.functional as F
from torch.fx.experimental.proxy_tensor import make_fx

import megakittens.ops  # noqa: F401  (registers torch.ops.megakittens.*)
from megakittens import _C, fx_export

mkops = torch.ops.megakittens
BF16 = torch.bfloat16


# ---- test graphs: (name, fn, input shapes) --------------------------------------------------------

def g_unary(x):
    return mkops.elementwise_unary(x, "abs,log,neg")


def g_relu(x):
    return torch.relu(x)


def g_add(a, b):
    return torch.add(a, b, alpha=0.5)


def g_binary_all(a, b):
    y = torch.sub(a, b)
    y = torch.mul(y, b)
    y = torch.maximum(y, a)
    y = torch.minimum(y, b)
    return torch.div(y, torch.exp(b))


def g_rms(x, w):
    return mkops.rms_norm(x, w, 1e-5)


def g_rms_two_weights(x, w1, w2):
    # Consecutive RMSNorm instructions of one CTA with different weights (rms_norm.cuh [Note: resident
    # weight]: the second must reload), and the same weight (kept in place).
    return mkops.rms_norm(mkops.rms_norm(x, w1, 1e-5), w2, 1e-5)


def g_rms_noweight(x):
    return mkops.rms_norm(x, None, 1e-2)


def g_chain(x, y, w):
    a = torch.relu(x)
    b = a + y
    c = mkops.rms_norm(b, w, 1e-6)
    d = torch.mul(c, y)
    return torch.sqrt(torch.abs(d))


def g_chain20(x, y):  # benchmarks/run.py chain20 (sqrt of |x|: no NaN a last-bit difference could flip)
    ops = [torch.relu, torch.abs, torch.neg, torch.exp, lambda t: torch.sqrt(torch.abs(t))]
    for i in range(20):
        x = x + y if i % 2 else ops[(i // 2) % 5](x)
    return x


def g_fused_one_input(x):  # a diamond over one input: 4 tiles per instruction
    a = torch.relu(x)
    return a * torch.sigmoid(a) - 0.5 * x


def g_fused_bcast(x, w):  # a broadcast row (plain-load path) and an output that is read again
    h = torch.tanh(x * w)
    return h, h * 2 + torch.neg(w)


def g_fused_fp32(x, y):  # fp32 steps between casts: mixed dtypes on the plain-load path
    a = x.float()
    b = torch.sigmoid(a) * a + y
    return (b.square() - 1).to(BF16)


def g_mlp_like(x, b):  # views: b[i] of a (3, R, C) tensor
    for i in range(3):
        x = torch.relu(x + b[i])
    return x


MANY = 200


def g_many_slots(*xs):  # 226 slots: too many for the tile maps in the kernel parameter ([Note: tile maps])
    acc = xs[0]
    for x in xs[1:-1]:
        acc = acc + x
    return acc @ xs[-1]


# ---- elementwise ops for Llama-family models (issue 6): multi-output graphs, one output per op -------

def g_new_unary(x):
    return (F.silu(x), F.gelu(x), F.gelu(x, approximate="tanh"), torch.sigmoid(x), torch.tanh(x), torch.cos(x),
            torch.sin(x), torch.reciprocal(x), torch.square(x), torch.erf(x), torch.expm1(x), torch.log1p(x.abs()))


NEW_UNARY_NAMES = ["silu", "gelu", "gelu_tanh", "sigmoid", "tanh", "cos", "sin", "reciprocal", "square", "erf", "expm1",
                   "log1p"]


def g_scalar(x):
    return (x * 0.5 + 1, 2 * x, 3 + x, x - 1.5, 1 - x, torch.rsub(x, 1.0, alpha=3), x / 3, torch.add(x, 2, alpha=3),
            x * 0.1, x ** 3, x.abs() ** 1.5, (x.abs() + 0.1) ** -0.5, torch.clamp(x, min=0), torch.clamp(x, -1, 0.5),
            x.clamp_max(0.25), torch.ops.aten.add.Scalar(x, 1e-6), torch.ops.aten.div.Scalar(x, 7.0))


SCALAR_NAMES = ["x*0.5+1", "2*x", "3+x", "x-1.5", "1-x", "rsub(alpha=3)", "x/3", "add(alpha=3)", "x*0.1", "x**3",
                "|x|**1.5", "(|x|+.1)**-0.5", "clamp(min=0)", "clamp(-1,0.5)", "clamp_max", "add.Scalar", "div.Scalar"]


def g_chained_scalar(x, y):  # scalar steps between binary ops and a custom op list with constants
    a = F.silu(x) * y
    b = mkops.elementwise_unary(a, "mul_scalar:0.125,add_scalar:1,clamp_min:0.5,pow_scalar:2.5")
    return (b / 3 + torch.sigmoid(y),)


def g_select(x, y):  # megakittens/masks.py's where: a 0 / 1 mask from y's sign, both branches, an inf in each
    m = (y * 1e30).clamp(0, 1)
    big = x * 1e30 * 1e30  # +-inf wherever x != 0 (past fp32's range too): the branch not taken keeps it out
    return (mkops.select(m, x), mkops.select(m, x * 2) + mkops.select(1 - m, big),
            mkops.select(1 - m, x.exp()) + mkops.select(m, big))


def g_swiglu(x, wg, wu):
    return (F.silu(x @ wg) * (x @ wu),)


EW_CASES = {  # name: (fn, input shapes, input scale, output names)
    "ew_unary_ragged": (g_new_unary, [(300, 520)], 3.0, NEW_UNARY_NAMES),
    "ew_scalar": (g_scalar, [(300, 520)], 1.0, SCALAR_NAMES),
    "ew_chained": (g_chained_scalar, [(256, 1024), (256, 1024)], 1.0, ["chain"]),
    "ew_select": (g_select, [(300, 520), (300, 520)], 1.0, ["select", "where", "where_inf"]),
    "ew_swiglu": (g_swiglu, [(256, 512), (512, 1024), (512, 1024)], 512 ** -0.25, ["swiglu"]),
}

CASES = {
    "unary_1024": (g_unary, [(1024, 1024)]),
    "relu_ragged": (g_relu, [(300, 520)]),
    "relu_3d": (g_relu, [(3, 256, 384)]),
    "add_1024": (g_add, [(1024, 1024), (1024, 1024)]),
    "binary_all_ragged": (g_binary_all, [(200, 136), (200, 136)]),
    "rms_2048": (g_rms, [(1024, 2048), (2048,)]),
    "rms_4096_ragged": (g_rms, [(37, 4096), (4096,)]),
    "rms_odd_cols": (g_rms_noweight, [(50, 100)]),
    "rms_two_weights": (g_rms_two_weights, [(8000, 2048), (2048,), (2048,)]),
    "chain": (g_chain, [(512, 1024), (512, 1024), (1024,)]),
    "mlp_views": (g_mlp_like, [(1024, 1024), (3, 1024, 1024)]),
    "many_slots": (g_many_slots, [(256, 384)] * MANY + [(384, 128)]),
    "many_slots_b9": (g_many_slots, [(128, 128)] * 800 + [(128, 128)]),  # slots >= 512 ([Note: slot bits])
    "fused_chain20": (g_chain20, [(1024, 1024), (1024, 1024)]),
    "fused_one_input": (g_fused_one_input, [(300, 1000)]),
    "fused_bcast": (g_fused_bcast, [(200, 264), (264,)]),
    "fused_fp32": (g_fused_fp32, [(128, 384), (128, 384)]),
}
# Cases whose elementwise nodes fuse (src/trace/fuse_elementwise.h): test_unfused_vs_eager runs them with
# fuse=False too, so every unfused IType keeps running on the device.
FUSING = ["binary_all_ragged", "chain", "mlp_views", "fused_chain20"]


def inputs_for(shapes, device="cpu", seed=0):
    g = torch.Generator(device="cpu").manual_seed(seed)
    return [torch.randn(s, generator=g, dtype=torch.float32).to(BF16).to(device) for s in shapes]


def program_for(fn, shapes, cluster_size=1, num_sms=132, name="test", gemm_n=None, split_k=None,
                split_chain_steps=None, fuse=True, rms_pages=None, balance_costs=None, claim_chunk=None):
    """Trace ``fn`` (aten + megakittens ops) on fake bf16 inputs and schedule it for ``num_sms`` CTAs.
    gemm_n (128 or 256) fixes the Gemm tile width and turns split-K off; None lets the profile choose
    per node. split_k: Profile.gemm_split_k (the most K splits; 1 = none), None: the profile's.
    split_chain_steps: Profile.gemm_split_chain_steps (the split-K cost of each link), None: the profile's.
    fuse: _C.trace's (False: no fusion passes, each aten op its own node).
    rms_pages: Profile.rms_norm_pages (RMSNorm row pages per instruction, 1-3), None: the profile's.
    balance_costs: Profile.balance_costs (0-3), None: the profile's.
    claim_chunk: Profile.claim_chunk (waves per chunk of the claim order; 0 one chunk, -1 the IType's order)."""
    gm = make_fx(fn, tracing_mode="fake")(*inputs_for(shapes))
    dag = _C.trace(fx_export.export_graph(gm, name), fuse=fuse)
    profile = _C.Profile.by_name("h200", num_sms)
    if gemm_n is not None:
        profile.gemm_n, profile.gemm_n_narrow, profile.gemm_split_k = gemm_n, 0, 1
    if split_k is not None:
        profile.gemm_split_k = split_k
    if split_chain_steps is not None:
        profile.gemm_split_chain_steps = split_chain_steps
    if rms_pages is not None:
        profile.rms_norm_pages = rms_pages
    if balance_costs is not None:
        profile.balance_costs = balance_costs
    if claim_chunk is not None:
        profile.claim_chunk = claim_chunk
    return _C.schedule(dag, profile, cluster_size=cluster_size)


# ---- GPU ------------------------------------------------------------------------------------------

def _gpu_ok():
    if not torch.cuda.is_available():
        return False
    from megakittens import gpu
    return gpu.available()[0]


def alloc_slots(program, args):
    """Every slot as a CUDA tensor: inputs = args; a reshape alias on its base slot's memory, as the
    dispatcher does; the rest in its own dtype, poisoned with NaN or a large integer."""
    slots = [None] * len(program.slots)
    for k, s in enumerate(program.input_slots):
        slots[s] = args[k].contiguous()
    base, offset = list(program.slot_base), list(program.slot_offset)
    for s, meta in enumerate(program.slots):
        if slots[s] is None and base[s] < 0:
            dt = getattr(torch, meta.dtype)
            slots[s] = torch.full(list(meta.shape), float("nan") if dt.is_floating_point else 12345, dtype=dt,
                                  device="cuda")
    for s, meta in enumerate(program.slots):
        if base[s] >= 0:
            n = math.prod(meta.shape)
            slots[s] = slots[base[s]].reshape(-1)[offset[s]:offset[s] + n].view(list(meta.shape))
    return slots


def run_gpu(program, args, options, timeline=None):
    """Launch over alloc_slots(program, args), return the outputs. timeline: as gpu.run_program_gpu's."""
    from megakittens import gpu
    slots = alloc_slots(program, args)
    gpu.run_program_gpu(program, slots, options=options, timeline=timeline)
    torch.cuda.synchronize()
    return [slots[s] for s in program.output_slots]


def rel_err(out, ref):
    out, ref = out.double(), ref.double()
    return ((out - ref).norm() / ref.norm().clamp_min(1e-30)).item()


@pytest.mark.gpu
@pytest.mark.parametrize("cluster", [1, 2])
@pytest.mark.parametrize("global_queue", [False, True])
@pytest.mark.parametrize("case", sorted(CASES))
def test_itype_vs_eager(case, global_queue, cluster):
    _check_vs_eager(case, global_queue, cluster, fuse=True)


@pytest.mark.gpu
@pytest.mark.parametrize("cluster", [1, 2])
@pytest.mark.parametrize("global_queue", [False, True])
@pytest.mark.parametrize("case", FUSING)
def test_unfused_vs_eager(case, global_queue, cluster):
    _check_vs_eager(case, global_queue, cluster, fuse=False)


def _check_vs_eager(case, global_queue, cluster, fuse):
    if not _gpu_ok():
        pytest.skip("needs a Hopper GPU and the GPU runtime")
    from megakittens import gpu
    fn, shapes = CASES[case]
    program = program_for(fn, shapes, cluster_size=cluster, num_sms=gpu.num_ctas(cluster), name=case, fuse=fuse)
    for seed in (1, 2):  # fresh inputs each launch; the second launch exercises epoch-scaled barriers
        args = inputs_for(shapes, "cuda", seed=seed)
        outs = run_gpu(program, args, {"global_work_queue": global_queue, "sync": True, "watchdog_s": 5.0})
        refs = fn(*args)  # eager bf16: every op rounds its output to bf16 once, as each megakernel node does
        refs = refs if isinstance(refs, tuple) else (refs,)
        assert len(outs) == len(refs)
        for out, ref in zip(outs, refs):
            assert not torch.isnan(out).any() or torch.isnan(ref).any(), "unwritten or NaN output"
            finite = torch.isfinite(ref.float())
            err = rel_err(out.float()[finite], ref.float()[finite])
            assert err <= 1e-2, f"{case}: relative error {err:.3e}"
            assert torch.equal(torch.isnan(out), torch.isnan(ref)), "NaN pattern differs from eager"


def _check_rms_against_eager(program, fn, shapes, global_queue):
    """Two seeds of fresh inputs through the program on the GPU, each within 1e-2 of eager, no NaN."""
    for seed in (1, 2):
        args = inputs_for(shapes, "cuda", seed=seed)
        (out,) = run_gpu(program, args, {"global_work_queue": global_queue, "sync": True, "watchdog_s": 5.0})
        ref = fn(*args)
        assert not torch.isnan(out).any()
        assert rel_err(out.float(), ref.float()) <= 1e-2


@pytest.mark.gpu
@pytest.mark.parametrize("global_queue", [False, True])
@pytest.mark.parametrize("pages", [1, 2, 3])
@pytest.mark.parametrize("shape,weighted", [((2000, 8192), True), ((901, 4100), False), ((300, 16384), False)])
def test_rms_norm_row_pages(shape, weighted, pages, global_queue):
    """RMSNorm instructions of 1, 2 and 3 row pages (the unused row lids rotate: rms_norm.cuh [Note: page
    release order]), bulk rows (C 8192: 2 rows a page; C 16384: 1) and generic ones (C 4100: 3 rows a page).
    Instructions of at most 4 bulk rows spread each row over all consumer warps (rms_norm.cuh [Note: rms
    spread])."""
    if not _gpu_ok():
        pytest.skip("needs a Hopper GPU and the GPU runtime")
    from megakittens import gpu
    fn, shapes = (g_rms, [shape, shape[-1:]]) if weighted else (g_rms_noweight, [shape])
    program = program_for(fn, shapes, num_sms=gpu.num_ctas(1), name=f"rms_pages{pages}", rms_pages=pages)
    rows = {program.instruction(i)["indices"][12] for i in range(program.num_instructions)}  # Noops: 0
    per_page = 32768 // ((2 * shape[-1] + 127) // 128 * 128)
    assert max(rows) == pages * per_page, rows
    _check_rms_against_eager(program, fn, shapes, global_queue)


@pytest.mark.gpu
@pytest.mark.parametrize("global_queue", [False, True])
@pytest.mark.parametrize("shape", [(8192, 4096), (4000, 8192), (16384, 2048)])
def test_rms_norm_every_row_matches(shape, global_queue):
    """Many RMSNorm instructions per CTA through the two loader warps and the page-wise row pages
    (rms_norm.cuh [Note: page-wise rows]; vm.cuh [Note: page counts]): every row within 1e-2 of eager on
    its own, so that one row overwritten before its store read it fails (a norm over the whole output
    would not see it). Three launches, fresh inputs each."""
    if not _gpu_ok():
        pytest.skip("needs a Hopper GPU and the GPU runtime")
    from megakittens import gpu
    shapes = [shape, shape[-1:]]
    program = program_for(g_rms, shapes, num_sms=gpu.num_ctas(1), name="rms_rows")
    assert program.num_instructions >= 4 * gpu.num_ctas(1)
    for seed in (1, 2, 3):
        args = inputs_for(shapes, "cuda", seed=seed)
        (out,) = run_gpu(program, args, {"global_work_queue": global_queue, "sync": True, "watchdog_s": 5.0})
        ref = g_rms(*args).float()
        row_err = (out.float() - ref).norm(dim=-1) / ref.norm(dim=-1)
        assert not torch.isnan(out).any()
        assert row_err.max().item() <= 1e-2, (seed, row_err.argmax().item(), row_err.max().item())


@pytest.mark.gpu
def test_planted_deadlock_raises_and_context_survives():
    if not _gpu_ok():
        pytest.skip("needs a Hopper GPU and the GPU runtime")
    import time
    from megakittens import gpu
    fn, shapes = CASES["chain"]
    program = program_for(fn, shapes, num_sms=gpu.num_ctas(1), name="deadlock")
    victim = next(i for i in range(program.num_instructions) if program.instruction(i)["src_barriers"])
    args = inputs_for(shapes, "cuda", seed=3)
    t0 = time.time()
    with pytest.raises(_C.DeadlockError) as e:
        run_gpu(program, args, {"sync": True, "watchdog_s": 0.5, "plant_deadlock": victim})
    assert time.time() - t0 < 10
    msg = str(e.value)
    assert "barrier" in msg and "instruction" in msg and "SM" in msg, msg
    # The context is usable and the next launch is correct.
    (out,) = run_gpu(program, args, {"sync": True, "watchdog_s": 5.0})
    ref = fn(*args)
    assert rel_err(out.float(), ref.float()) <= 1e-2
    x = torch.ones(4, device="cuda") * 2
    assert x.sum().item() == 8.0


@pytest.mark.gpu
def test_outputs_are_not_overwritten():
    if not _gpu_ok():
        pytest.skip("needs a Hopper GPU and the GPU runtime")
    from megakittens import gpu
    fn, shapes = CASES["add_1024"]
    program = program_for(fn, shapes, num_sms=gpu.num_ctas(1), name="fresh")
    a1, a2 = inputs_for(shapes, "cuda", seed=4), inputs_for(shapes, "cuda", seed=5)
    (o1,) = run_gpu(program, a1, {"sync": True})
    keep = o1.clone()
    (o2,) = run_gpu(program, a2, {"sync": True})
    assert torch.equal(o1, keep) and not torch.equal(o1, o2)


@pytest.mark.gpu
def test_launcher_runs_on_the_current_stream():
    """gpu.launcher (the dispatcher's per-call path) launches on torch's current stream, read through the
    raw-stream call: on a side stream the result is there once that stream is synchronised."""
    if not _gpu_ok():
        pytest.skip("needs a Hopper GPU and the GPU runtime")
    from megakittens import gpu
    fn, shapes = CASES["add_1024"]
    program = program_for(fn, shapes, num_sms=gpu.num_ctas(1), name="launcher")
    args = inputs_for(shapes, "cuda", seed=6)
    slots = alloc_slots(program, args)
    launch = gpu.launcher(program, {"global_work_queue": True})
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        assert gpu._current_raw_stream() == side.cuda_stream
        launch([int(t.data_ptr()) for t in slots])
    side.synchronize()
    (out,) = [slots[s] for s in program.output_slots]
    assert not out.isnan().any()
    torch.testing.assert_close(out, fn(*args), rtol=1e-2, atol=1e-2)


@pytest.mark.gpu
def test_relaunch_with_some_slots_moved():
    """The kernel parameter is rebuilt only for the slots whose address changed (GpuKernel::build_params):
    alternating one input and the output between two buffers, with the other input fixed, every launch
    reads and writes the buffers it was given."""
    if not _gpu_ok():
        pytest.skip("needs a Hopper GPU and the GPU runtime")
    from megakittens import gpu
    fn, shapes = CASES["add_1024"]
    program = program_for(fn, shapes, num_sms=gpu.num_ctas(1), name="moved")
    fixed = inputs_for(shapes, "cuda", seed=7)[1]
    xs = [inputs_for(shapes, "cuda", seed=8 + i)[0] for i in range(2)]
    (out_slot,) = program.output_slots
    outs = [torch.full(list(program.slots[out_slot].shape), float("nan"), dtype=torch.bfloat16, device="cuda")
            for _ in range(2)]
    slots = alloc_slots(program, [xs[0], fixed])
    launch = gpu.launcher(program, {"sync": True})
    for i in (0, 1, 0, 1):
        slots[program.input_slots[0]], slots[program.input_slots[1]], slots[out_slot] = xs[i], fixed, outs[i]
        outs[i].fill_(float("nan"))
        launch([int(t.data_ptr()) for t in slots])
        torch.testing.assert_close(outs[i], fn(xs[i], fixed), rtol=1e-2, atol=1e-2)


@pytest.mark.gpu
@pytest.mark.parametrize("cluster", [1, 2])
@pytest.mark.parametrize("rows", [1024, 8192])
def test_global_queue_relaunches(rows, cluster):
    """kernels/mk/interpreter.cuh [Note: static first claim]: a launch makes exactly `units` claims and the
    host's queue_base follows, whether the program has fewer units than clusters (an add of 1024 x 1024:
    every CTA past them claims nothing) or more (8192 rows: dynamic claims after the static first one).
    Five launches of one launcher with fresh inputs each: a wrong base would skip or repeat units (NaN left
    in the poisoned output) or wait on the watchdog."""
    if not _gpu_ok():
        pytest.skip("needs a Hopper GPU and the GPU runtime")
    from megakittens import gpu
    fn, shapes = g_add, [(rows, 1024), (rows, 1024)]
    program = program_for(fn, shapes, cluster_size=cluster, num_sms=gpu.num_ctas(cluster), name=f"relaunch_{rows}")
    units = program.num_instructions // cluster
    assert (units < gpu.num_ctas(cluster) // cluster) == (rows == 1024), units
    launch = gpu.launcher(program, {"global_work_queue": True, "sync": True, "watchdog_s": 5.0})
    for i in range(5):
        args = inputs_for(shapes, "cuda", seed=20 + i)
        slots = alloc_slots(program, args)
        launch([int(t.data_ptr()) for t in slots])
        (out,) = [slots[s] for s in program.output_slots]
        assert not out.isnan().any(), i
        torch.testing.assert_close(out, fn(*args), rtol=1e-2, atol=1e-2)


@pytest.mark.gpu
def test_jit_cache_hit(tmp_path, monkeypatch):
    if not _gpu_ok():
        pytest.skip("needs a Hopper GPU and the GPU runtime")
    from megakittens import gpu
    monkeypatch.setenv("MEGAKITTENS_CACHE_DIR", str(tmp_path))
    fn, shapes = CASES["relu_ragged"]
    p1 = program_for(fn, shapes, num_sms=gpu.num_ctas(1), name="cache")
    k1 = gpu.kernel_for(p1)
    p2 = program_for(fn, shapes, num_sms=gpu.num_ctas(1), name="cache")
    k2 = gpu.kernel_for(p2)
    assert not k1.cache_hit and k2.cache_hit and k1.key == k2.key
    assert any(f.endswith(".cubin") for f in os.listdir(tmp_path))


@pytest.mark.gpu
@pytest.mark.parametrize("cluster", [1, 2])
@pytest.mark.parametrize("global_queue", [False, True])
@pytest.mark.parametrize("case", sorted(EW_CASES))
def test_elementwise_ops_vs_eager(case, global_queue, cluster):
    """Every new unary op and scalar form on the megakernel, one output per op, against eager bf16."""
    if not _gpu_ok():
        pytest.skip("needs a Hopper GPU and the GPU runtime")
    from megakittens import gpu
    fn, shapes, scale, names = EW_CASES[case]
    program = program_for(fn, shapes, cluster_size=cluster, num_sms=gpu.num_ctas(cluster), name=case)
    assert len(program.output_slots) == len(names)
    for seed in (1, 2):
        args = [(a.float() * scale).to(BF16) for a in inputs_for(shapes, "cuda", seed=seed)]
        outs = run_gpu(program, args, {"global_work_queue": global_queue, "sync": True, "watchdog_s": 5.0})
        refs = fn(*args)
        for name, out, ref in zip(names, outs, refs):
            assert torch.equal(torch.isnan(out), torch.isnan(ref)), f"{case} {name}: NaN pattern differs from eager"
            finite = torch.isfinite(ref.float())
            err = rel_err(out.float()[finite], ref.float()[finite])
            assert err <= 1e-2, f"{case} {name}: relative error {err:.3e}"


@pytest.mark.gpu
def test_elementwise_graph_runs_on_the_megakernel_via_compile():
    """megakittens.compile on CUDA tensors: SwiGLU + scalar ops launch the megakernel (no fallback)."""
    if not _gpu_ok():
        pytest.skip("needs a Hopper GPU and the GPU runtime")
    import warnings

    import megakittens
    import megakittens.backend as mk_backend

    def f(x, wg, wu):
        h = F.silu(x @ wg) * (x @ wu)
        return F.gelu(h * 0.5 + 1, approximate="tanh") - torch.clamp(h, -1, 1) / 3

    args = [(a.float() * s).to(BF16) for a, s in zip(inputs_for([(256, 512), (512, 768), (512, 768)], "cuda", seed=7),
                                                   (1.0, 512 ** -0.5, 512 ** -0.5))]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a fallback to the CPU interpreter warns: must not happen here
        out = megakittens.compile(f)(*args)
    assert mk_backend.dispatchers[-1]._gpu_error == "", mk_backend.dispatchers[-1]._gpu_error
    assert out.is_cuda
    assert rel_err(out.float(), f(*args).float()) <= 1e-2
