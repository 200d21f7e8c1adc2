"""fallback="eager" (issue 6): megakernels for the maximal supported subgraphs, torch ops between them.

cumsum, sort and topk have no instruction type, so they run eagerly; everything else runs on the CPU
reference interpreter (CUDA: the megakernel). Partition counts are read from
``megakittens.backend.partitionings`` and ``compiled_count``.
"""
import warnings

import pytest
import torch
import torch.nn.functional as F

import megakittens
import megakittens.backend as mk_backend
from common import check_close, randn
from megakittens import _C, fx_export


def compile_eager_fallback(fn, **kw):
    return megakittens.compile(fn, fallback="eager", **kw)


def split():
    return mk_backend.partitionings[-1]


def eager_targets():
    return sorted(t for _, t, _ in split().eager)


def mixed(x, w1, w2):
    """Two megakernels around three unsupported ops; x is read by both and returned as is."""
    h = torch.relu(x @ w1)                           # megakernel 0
    c = torch.cumsum(h, dim=0)                       # eager
    s = torch.sort(h, dim=-1).values                 # eager
    y = (c * 0.05 + s) @ w2 + x                      # megakernel 1
    return torch.topk(y, 8, dim=-1).values, h, x      # topk eager; h (a partition output); x (an input)


def mixed_inputs(M=64, H=128):
    return randn(M, H), randn(H, H, scale=H ** -0.5), randn(H, H, scale=H ** -0.5)


def test_mixed_model_matches_eager():
    args = mixed_inputs()
    n = mk_backend.compiled_count
    out = compile_eager_fallback(mixed)(*args)
    check_close(out, mixed(*args))
    assert out[2] is args[0]  # a returned input is the caller's tensor, as in eager
    assert split().num_megakernels == 2 and mk_backend.compiled_count == n + 2
    assert eager_targets() == ["aten.cumsum.default", "aten.sort.default", "aten.topk.default"]
    assert all("no instruction type" in reason for _, _, reason in split().eager)
    (_, ops0), (_, ops1) = split().megakernels
    assert ops0 == ["mm", "relu"] and sorted(ops1) == ["add", "add_1", "mm_1", "mul"]
    # Fresh inputs through the same compiled function: the megakernels are reused, not rebuilt.
    args2 = mixed_inputs()
    check_close(compile_eager_fallback(mixed)(*args2), mixed(*args2))


def test_fullgraph_default_raises_on_the_same_model():
    unsupported = r"unsupported op aten\.(cumsum|sort|topk)\.default \(no instruction type\)"
    with pytest.raises(Exception, match=unsupported):
        megakittens.compile(mixed)(*mixed_inputs())


@pytest.mark.parametrize("bad", ["inductor", "Eager", True, ""])
def test_unknown_fallback_value_raises(bad):
    with pytest.raises(ValueError, match=r"fallback must be None .* or 'eager'.*got " + repr(bad)):
        megakittens.compile(mixed, fallback=bad)


def test_partitions_respect_dependencies():
    """add reads both mm (directly) and cumsum(mm): one partition holding mm and add would be a cycle
    through the eager cumsum, so they are two megakernels."""
    def f(x, w):
        a = x @ w
        return torch.relu(a) + torch.cumsum(a, dim=0)

    args = randn(64, 128), randn(128, 128, scale=128 ** -0.5)
    check_close(compile_eager_fallback(f)(*args), f(*args))
    assert split().num_megakernels == 2
    (_, ops0), (_, ops1) = split().megakernels
    assert "mm" in ops0 and "add" in ops1


def test_independent_branches_share_one_megakernel():
    """Supported ops with no path between them merge (horizontally) into one megakernel."""
    def f(x):
        a = torch.cumsum(torch.relu(x), dim=0)
        b = torch.sort(torch.exp(x), dim=-1).values
        return a * b

    x = randn(64, 128)
    check_close(compile_eager_fallback(f)(x), f(x))
    assert [sorted(ops) for _, ops in split().megakernels] == [["exp", "relu"], ["mul"]]


def test_views_join_their_consumer():
    """t() folds into the Gemm that reads it (transposed operand); a view read both inside a megakernel and
    by an eager op leaves the megakernel as an output view."""
    def f(x, w):
        y = torch.cumsum(x, dim=0)
        h = torch.relu(y.t() @ w)          # t folds into mm's A operand
        v = h.t()                          # read by mm_1 (in the megakernel) and by cumsum_1 (eager)
        return v @ w, torch.cumsum(v, dim=1)

    x, w = randn(128, 128), randn(128, 128, scale=128 ** -0.5)
    check_close(compile_eager_fallback(f)(x, w), f(x, w))
    assert split().num_megakernels == 1
    assert eager_targets() == ["aten.cumsum.default", "aten.cumsum.default"]
    program = mk_backend.dispatchers[-1].program
    assert [n.itype for n in program.nodes] == ["Gemm(ta,act=relu)", "Gemm(ta)"]  # relu in the epilogue
    assert program.output_views[0] is not None  # h.t() leaves as a view of relu's slot, not a copy


def test_unsupported_view_use_runs_eagerly():
    """mul reading a permuted rank-5 view (whose dims merge to no 4) is not supported (the unit check says why);
    it runs eagerly. (A transposed view is: the tracer copies it, docs/ir.md [Note: view copies].)"""
    def f(x):
        return torch.relu(x).view(2, 2, 16, 2, 64).permute(0, 2, 4, 1, 3) * 2.0

    x = randn(64, 128)
    check_close(compile_eager_fallback(f)(x), f(x))
    assert eager_targets() == ["aten.mul.Tensor"] and "rank-5" in split().eager[0][2]
    assert [ops for _, ops in split().megakernels] == [["relu"]]


def llama_rms_norm(x, w, eps=1e-6):
    h = x.float()
    h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + eps)
    return w * h.to(x.dtype)


def test_decomposed_rms_norm_stays_in_one_megakernel():
    """The fp32 intermediates of HF's RMSNorm have no instruction type alone; fused (as in the whole-graph
    path) they compile, so they join the fused op's megakernel instead of running eagerly."""
    def f(x, w):
        return torch.cumsum(llama_rms_norm(torch.relu(x), w), dim=0)

    x, w = randn(64, 128), randn(128)
    check_close(compile_eager_fallback(f)(x, w), f(x, w))
    assert eager_targets() == ["aten.cumsum.default"]
    assert split().num_megakernels == 1


def test_multi_output_op_and_its_getitem():
    """SDPA is a multi-output aten op (output 0 is kept); its getitem joins its megakernel."""
    def f(q, k, v):
        o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return torch.sort(o, dim=-1).values

    q, k, v = (randn(1, 2, 128, 64) for _ in range(3))
    check_close(compile_eager_fallback(f)(q, k, v), f(q, k, v))
    assert split().num_megakernels == 1 and eager_targets() == ["aten.sort.default"]


def test_nothing_supported_runs_eagerly():
    x = randn(32, 64)
    n = mk_backend.compiled_count
    out = compile_eager_fallback(lambda t: torch.cumsum(t, dim=0))(x)
    torch.testing.assert_close(out, torch.cumsum(x, dim=0))
    assert split().num_megakernels == 0 and mk_backend.compiled_count == n


def test_partition_that_does_not_compile_runs_eagerly(monkeypatch):
    """A partition whose whole-graph compile fails (here a planted CompileError) runs as torch ops, with a
    warning and the reason in the partitioning; the other megakernel still runs."""
    real = mk_backend._compile_program

    def failing(gm, graph, options, name, dry_run=False):
        if name.endswith("_part1"):
            raise _C.CompileError(f"graph '{name}': planted failure")
        return real(gm, graph, options, name, dry_run)

    monkeypatch.setattr(mk_backend, "_compile_program", failing)
    args = mixed_inputs()
    with pytest.warns(RuntimeWarning, match="partition 'mixed_part1' did not compile as a megakernel"):
        out = compile_eager_fallback(mixed)(*args)
    check_close(out, mixed(*args))
    assert split().num_megakernels == 1 and len(split().failed) == 1
    program, ops, reason = split().failed[0]
    assert program == "mixed_part1" and "mm_1" in ops and "planted failure" in reason
    assert "did not compile as a megakernel: mixed_part1" in split().report()


def test_partitioning_is_deterministic():
    args = mixed_inputs()
    compile_eager_fallback(mixed)(*args)
    first = split().report()
    torch._dynamo.reset()
    compile_eager_fallback(mixed)(*args)
    assert split().report() == first


def test_dry_run_reports_the_partitioning(capsys):
    args = mixed_inputs()
    n = mk_backend.compiled_count
    torch.testing.assert_close(compile_eager_fallback(mixed, dry_run=True)(*args), mixed(*args))  # eager, exact
    assert mk_backend.compiled_count == n  # nothing compiled
    out = capsys.readouterr().out
    assert "fallback='eager' for 'mixed': 2 megakernel(s), 3 op(s) run eagerly" in out
    assert "megakernel mixed_part0: 2 op(s) (mm, relu)" in out
    assert "eager aten.cumsum.default x1 (cumsum): " in out and "no instruction type" in out


def test_backward_graph_runs_eagerly():
    """No backward instruction types: with fallback the whole backward graph runs as torch ops."""
    w = torch.nn.Parameter(randn(128, 128, scale=128 ** -0.5))

    def f(x):
        return torch.cumsum(torch.relu(x @ w), dim=0).sum()

    x = randn(64, 128)
    loss = compile_eager_fallback(f)(x)
    loss.backward()
    got, w.grad = w.grad, None
    f(x).backward()
    check_close(got, w.grad)
    assert split().num_megakernels == 0  # the backward graph: every op eager
    assert all("no backward instruction types" in r for _, _, r in split().eager)


def clamp_inf(x, w):
    """clamp(max=inf) has an instruction type but no device body (non-finite constant)."""
    return torch.relu(torch.clamp(x @ w, max=float("inf"))) @ w


def test_cpu_tensors_run_every_supported_op_on_the_interpreter():
    x, w = randn(128, 128), randn(128, 128, scale=128 ** -0.5)
    check_close(compile_eager_fallback(clamp_inf)(x, w), clamp_inf(x, w))
    assert split().num_megakernels == 1 and split().eager == []


@pytest.mark.gpu
def test_cuda_op_without_device_body_runs_eagerly():
    """On the GPU the clamp runs as a torch op between two megakernels instead of sending the whole
    graph to the CPU interpreter."""
    from megakittens import gpu
    ok, why = gpu.available()
    if not ok:
        pytest.skip(why)
    x, w = randn(128, 128, device="cuda"), randn(128, 128, scale=128 ** -0.5, device="cuda")
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # a megakernel sent to the CPU interpreter warns
        out = compile_eager_fallback(clamp_inf)(x, w)
    assert out.is_cuda
    check_close(out, clamp_inf(x, w))
    assert split().num_megakernels == 2
    assert eager_targets() == ["aten.clamp.default"] and "no GPU body" in split().eager[0][2]


# --- the bindings the partitioner uses ---------------------------------------------------------------

def _aten_graph(fn, *args):
    graphs = []

    def fw(gm, _):
        graphs.append(gm)
        return gm

    from torch._dynamo.backends.common import aot_autograd
    torch.compile(fn, backend=aot_autograd(fw_compiler=fw), fullgraph=True, dynamic=False)(*args)
    return graphs[0]


def test_op_units_roles():
    gm = _aten_graph(lambda x, w: torch.cumsum(llama_rms_norm(x, w).t(), 0), randn(64, 128), randn(128))
    owner, units = _C.op_units(fx_export.export_graph(gm, "g"))
    nodes = list(gm.graph.nodes)
    role = {n.name: owner[k] for k, n in enumerate(nodes)}
    fused = next(k for k, n in enumerate(nodes) if n.name == "mul_1")  # w * h.to(x.dtype): the rms_norm
    assert role["arg0_1"] == role["arg1_1"] == role["output"] == _C.OP_UNIT_NOT_OP
    assert role["t"] == _C.OP_UNIT_FOLDED
    assert role["mul_1"] == fused and role["pow_1"] == role["rsqrt"] == role["_to_copy"] == fused
    assert [nodes[k].name for k, _ in units] == ["mul_1", "cumsum"]
    dag = _C.trace(dict(units)[fused])  # the fused op alone: inputs x and w, one RMSNorm
    assert [n.kind for n in dag.nodes] == ["input", "input", "compute", "output"]
    assert dag.nodes[2].itype.startswith("RMSNorm")


@pytest.mark.skipif(bool(_C.gpu_runtime_missing), reason="built without the GPU runtime")
def test_gpu_missing_bodies():
    gm = _aten_graph(clamp_inf, randn(128, 128), randn(128, 128))
    graph = fx_export.export_graph(gm, "g")
    program = _C.schedule(_C.trace(graph, fuse=False), _C.Profile.by_name("h200", 132))
    missing = _C.gpu_missing_bodies(program)
    assert [n for n, _ in missing] == ["clamp"]
    assert "ElementwiseUnary(ops=clamp_max:inf) has no GPU body yet" in missing[0][1]
    # Fused with the relu after it, the step keeps its constant and still has no body.
    missing = _C.gpu_missing_bodies(_C.schedule(_C.trace(graph), _C.Profile.by_name("h200", 132)))
    assert [n for n, _ in missing] == ["relu"]
    assert "ElementwiseFused(x1: clamp_max:inf(x0):f32; relu(t0):bf16) has no GPU body yet" in missing[0][1]


def test_model_that_compiles_whole_is_one_megakernel():
    """fallback="eager" first tries the whole graph: the tiny example Llama compiles whole, though its
    repeat_kv clones (a rank-5 view fused into the attention) fail alone in the per-op analysis."""
    import importlib.util
    import sys
    from dataclasses import replace
    from pathlib import Path
    path = Path(__file__).resolve().parent.parent / "examples" / "llama.py"
    spec = importlib.util.spec_from_file_location("mk_example_llama_fallback", path)
    ex = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = ex
    spec.loader.exec_module(ex)
    args = replace(ex.CONFIGS["tiny"], n_layer=1)
    model = ex.build(args, 32, "cpu")
    idx = torch.randint(0, args.vocab_size, (1, 32))
    with torch.no_grad():
        h, logits = compile_eager_fallback(model)(idx)
        h_ref, logits_ref = model(idx)
    check_close([h, logits], [h_ref, logits_ref])
    assert split().num_megakernels == 1 and split().eager == [] and split().failed == []
    assert "clone" in split().megakernels[0][1]


def zero_size_mixed(x, w, e):  # a zero-size branch next to ops that compile
    return torch.relu(x @ w) + 1, torch.neg(e) * 2


def test_zero_size_ops_run_eagerly():
    """A zero-size tensor has no slot: under fallback="eager" only the ops touching it run as torch ops
    (the tracer names them), the rest is one megakernel."""
    x, w, e = randn(64, 128), randn(128, 128, scale=128 ** -0.5), randn(0, 8)
    out = compile_eager_fallback(zero_size_mixed)(x, w, e)
    ref = zero_size_mixed(x, w, e)
    check_close(out[0], ref[0])
    assert out[1].shape == (0, 8) and out[1].dtype == e.dtype
    assert split().num_megakernels == 1 and split().failed == []
    assert eager_targets() == ["aten.mul.Tensor", "aten.neg.default"], split().eager
    assert all("zero-size tensors are not supported" in why for _, _, why in split().eager)


def test_dry_run_reports_zero_size_ops(capsys):
    x, w, e = randn(64, 128), randn(128, 128, scale=128 ** -0.5), randn(0, 8)
    torch.testing.assert_close(megakittens.compile(zero_size_mixed, dry_run=True)(x, w, e), zero_size_mixed(x, w, e))
    out = capsys.readouterr().out
    assert "node(s) cannot be compiled" in out and "zero-size tensors are not supported, got shape [0, 8]" in out


def repeat_kv_attention(q, k, v):
    """Hugging Face's repeat_kv written out, then SDPA, then an op with no instruction type."""
    n = q.shape[1] // k.shape[1]
    k = k[:, :, None].expand(k.shape[0], k.shape[1], n, *k.shape[2:]).reshape(k.shape[0], -1, *k.shape[2:])
    v = v[:, :, None].expand(v.shape[0], v.shape[1], n, *v.shape[2:]).reshape(v.shape[0], -1, *v.shape[2:])
    return F.scaled_dot_product_attention(q, k, v, is_causal=True).cumsum(-1)


@pytest.mark.parametrize("kv_heads", [1, 2])
def test_repeat_kv_stays_with_its_attention(kv_heads, capsys):
    """The rank-5 repeat_kv views compile inside the attention's partition, not eagerly, though alone they
    cannot compile (trace/op_units.cpp runs the repeat_kv fusion too); with one KV head there is no clone
    (the expand is viewable), which the fusion matches as well."""
    q, k, v = randn(1, 4, 32, 64), randn(1, kv_heads, 32, 64), randn(1, kv_heads, 32, 64)
    check_close(compile_eager_fallback(repeat_kv_attention)(q, k, v), repeat_kv_attention(q, k, v))
    assert split().num_megakernels == 1 and split().failed == []
    assert eager_targets() == ["aten.cumsum.default"], split().eager
    assert any("scaled_dot_product" in op for op in split().megakernels[0][1])
    torch._dynamo.reset()
    compile_eager_fallback(repeat_kv_attention, dry_run=True)(q, k, v)
    out = capsys.readouterr().out
    assert "1 op(s) run eagerly" in out and "getitem" not in out, out


def with_dead_branch(x, w):
    unused = torch.tanh(x @ w)  # noqa: F841  (a pooler nobody returns: pure, so no blocker)
    return (x * 2).cumsum(-1)


def test_dry_run_does_not_count_unused_pure_ops(capsys):
    """Ops no output needs are dropped before the per-op analysis, as fallback="eager" drops them; only an
    op with a side effect that nothing reads would be reported."""
    x, w = randn(64, 64), randn(64, 64)
    megakittens.compile(with_dead_branch, dry_run=True)(x, w)
    out = capsys.readouterr().out
    assert "1 node(s) cannot be compiled" in out and "cumsum" in out, out
    assert "tanh" not in out and "side effect" not in out, out


def test_partition_past_the_slot_limit_is_split_in_two(monkeypatch):
    """A partition needing more tensor slots than a program names (530 weights, the limit lowered to 512 by
    MEGAKITTENS_PROFILE=max_slots=512 to keep the test small; 1016 by default) is split in graph order into
    megakernels `_a` and `_b` (megakittens/fallback.py _compile_piece), not left eager."""
    monkeypatch.setenv("MEGAKITTENS_PROFILE", "max_slots=512")
    ws = [randn(64, 64) * 0.125 for _ in range(530)]

    def f(x, *ws):
        acc = x
        for w in ws:
            acc = acc + torch.relu(x @ w)
        return acc

    x = randn(64, 64)
    with pytest.raises(Exception, match="tensor slots, at most 512"):
        megakittens.compile(f)(x, *ws)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # nothing falls back to eager
        out = megakittens.compile(f, fallback="eager")(x, *ws)
    check_close(out, f(x, *ws))
    split = mk_backend.partitionings[-1]
    assert [name.split(".")[-1] for name, _ in split.megakernels] == ["f_part0_a", "f_part0_b"] and not split.failed
    assert len(split.megakernels[0][1]) > 500 and len(split.megakernels[1][1]) > 500


def test_no_leak_report_at_exit():
    """A process that compiled a training graph with fallback="eager" exits without nanobind's leak report: the
    Dispatcher stays alive past Dynamo's reset (AOTAutograd's autograd.Function keeps its forward), so
    megakittens.backend._release closes every live one."""
    import subprocess
    import sys
    code = ("import torch, megakittens\n"
            "m = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.SiLU(), torch.nn.Linear(128, 64))\n"
            "x = torch.randn(4, 64)\n"
            "y = megakittens.compile(m, fallback='eager')(x)\n"
            "assert (y - m(x)).abs().max() < 1e-2\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "leaked" not in r.stderr, r.stderr[-2000:]


def test_train_mode_batch_norm_in_bf16_runs_with_its_statistics():
    """A train-mode BatchNorm runs eagerly; on the CPU its bf16 batch statistics come back bf16 where the graph
    (and CUDA) say fp32: the next megakernel casts them to the graph's dtype instead of refusing them. Output
    and running statistics as eager's."""
    import copy
    m = torch.nn.Sequential(torch.nn.Conv2d(4, 8, 3, padding=1), torch.nn.BatchNorm2d(8),
                            torch.nn.ReLU()).to(torch.bfloat16).train()
    ref_model = copy.deepcopy(m)
    x = randn(2, 4, 8, 8)
    with torch.no_grad():
        out = compile_eager_fallback(m)(x)
        ref = ref_model(x)
    check_close(out, ref)
    for k in ("1.running_mean", "1.running_var"):
        assert torch.equal(m.state_dict()[k], ref_model.state_dict()[k]), k
