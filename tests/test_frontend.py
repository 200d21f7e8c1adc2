"""megakittens.compile: decorator forms, options, artifacts and the errors a user sees (CPU)."""
import json
import math
import shutil

import pytest
import torch

import megakittens
import megakittens.backend as mk_backend
from megakittens.options import work_queue_for
from common import BF16, check_close, mlp, mlp_inputs, randn, rel_err


def relu_add(a, b):
    return torch.relu(a + b)


def _ab():
    return randn(64, 128), randn(64, 128)


def _num_dispatchers():
    return mk_backend.compiled_count


# --- decorator forms ---------------------------------------------------------------------------------

def test_bare_decorator():
    @megakittens.compile
    def f(a, b):
        return torch.relu(a + b)

    a, b = _ab()
    n = _num_dispatchers()
    assert rel_err(f(a, b), relu_add(a, b)) <= 1e-2
    assert _num_dispatchers() == n + 1


def test_decorator_factory():
    @megakittens.compile(cluster_size=1, global_work_queue=True)
    def f(a, b):
        return torch.relu(a + b)

    a, b = _ab()
    assert rel_err(f(a, b), relu_add(a, b)) <= 1e-2
    d = mk_backend.dispatchers[-1]
    assert d.program.cluster_size == 1 and d.options.global_work_queue


class MLP(torch.nn.Module):
    def __init__(self, M, H):
        super().__init__()
        W, _, b = mlp_inputs(M, H)
        self.W = torch.nn.Parameter(W, requires_grad=False)
        self.register_buffer("b", b)

    def forward(self, x):
        return mlp(self.W, x, self.b)


def test_module():
    model = MLP(64, 128)
    x = randn(64, 128)
    compiled = megakittens.compile(model)
    assert rel_err(compiled(x), model(x)) <= 1e-2
    assert mk_backend.dispatchers[-1].program.name == "MLP"


def test_torch_compile_backend_name():
    f = torch.compile(relu_add, backend="megakittens", fullgraph=True, dynamic=False)
    a, b = _ab()
    n = _num_dispatchers()
    assert rel_err(f(a, b), relu_add(a, b)) <= 1e-2
    assert _num_dispatchers() == n + 1


# --- options -----------------------------------------------------------------------------------------

def test_enable_false_runs_eagerly():
    f = megakittens.compile(lambda x: torch.cumsum(x, 0), enable=False)  # cumsum has no IType: proof that nothing compiles
    x = randn(8, 8)
    n = _num_dispatchers()
    torch.testing.assert_close(f(x), torch.cumsum(x, 0))
    assert _num_dispatchers() == n


def test_dry_run_runs_eagerly():
    f = megakittens.compile(relu_add, dry_run=True)
    a, b = _ab()
    n = _num_dispatchers()
    torch.testing.assert_close(f(a, b), relu_add(a, b))
    assert _num_dispatchers() == n


def test_dry_run_prints_a_support_report(capsys):
    """dry_run never raises for unsupported ops: it reports each one, how often and why, and runs eagerly."""
    def f(x):
        return torch.relu(torch.cumsum(x, 0) + torch.cumsum(x, 1))

    x = randn(8, 8)
    torch.testing.assert_close(megakittens.compile(f, dry_run=True)(x), f(x))
    out = capsys.readouterr().out
    assert "support report for " in out and "aten.cumsum.default x2" in out and "no instruction type" in out
    megakittens.compile(relu_add, dry_run=True)(*_ab())
    assert "every op has an instruction type" in capsys.readouterr().out
    megakittens.compile(lambda a, b: a @ b, dry_run=True)(torch.randn(8, 8), torch.randn(8, 8))
    assert "must be bfloat16" in capsys.readouterr().out  # the trace error, once every op resolves


def test_dry_run_reports_every_op_and_reason(capsys):
    """One dry run lists every op that cannot compile, grouped by op and reason: an op without an
    instruction type and two matmuls that fail different constraints (TMA row alignment, dtype)."""
    def f(x, w1, w2):
        h = torch.cumsum(x.t() @ w1, 0)  # x.t(): rows of M = 100 elements (200 bytes, not a multiple of 16)
        return h.float() @ w2            # fp32 operands

    x, w1, w2 = randn(64, 100), randn(64, 64), torch.randn(64, 32)
    torch.testing.assert_close(megakittens.compile(f, dry_run=True)(x, w1, w2), f(x, w1, w2))
    out = capsys.readouterr().out
    assert "3 node(s) cannot be compiled" in out, out
    assert "aten.cumsum.default x1 (cumsum)" in out and "no instruction type" in out, out
    lines = [ln for ln in out.splitlines() if "aten.mm.default x1" in ln]
    assert len(lines) == 2 and any("multiple of 16 bytes" in ln for ln in lines) and any("bfloat16" in ln for ln in lines), out


def test_dry_run_reports_a_graph_that_fails_only_whole(capsys):
    """An unfused repeat_kv: its rank-5 clone compiles when checked op by op (inside the pattern), so the
    per-op check clears every node; the report must then give the whole graph's error, as compiling does."""
    import torch.nn.functional as F  # noqa: PLC0415

    def attn(q, k, v):
        B, H, S, D = k.shape
        k = k[:, :, None].expand(B, H, 2, S, D).reshape(B, H * 2, S, D)
        v = v[:, :, None].expand(B, H, 2, S, D).reshape(B, H * 2, S, D)
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)

    q, k, v = randn(1, 4, 64, 64), randn(1, 2, 64, 64), randn(1, 2, 64, 64)
    torch.testing.assert_close(megakittens.compile(attn, dry_run=True, fuse=False)(q, k, v), attn(q, k, v))
    out = capsys.readouterr().out
    assert "1 node(s) cannot be compiled" in out and "'clone'" in out and "rank-5" in out, out
    torch._dynamo.reset()
    with pytest.raises(Exception, match="rank-5"):
        megakittens.compile(attn, fuse=False)(q, k, v)


def test_verbose_prints_timings(capsys):
    f = megakittens.compile(relu_add, verbose=True)
    f(*_ab())
    out = capsys.readouterr().out
    assert "relu" in out  # the FX graph
    assert "[megakittens] trace" in out and " ms" in out
    assert "phase" in out
    assert "[megakittens] dispatcher ready" in out


def test_save_dag_and_schedule(tmp_path, monkeypatch):
    monkeypatch.setenv("MEGAKITTENS_LOG_DIR", str(tmp_path))
    f = megakittens.compile(mlp, save_dag=True, save_schedule=True)
    with pytest.warns() if shutil.which("dot") is None else _no_warning():
        f(*mlp_inputs(64, 128))
    (graph,) = tmp_path.glob("mlp.*.graph.json")
    data = json.loads(graph.read_text())
    kinds = [n["kind"] for n in data["nodes"]]
    assert kinds.count("input") == 3 and kinds.count("output") == 1 and "compute" in kinds
    gemm = next(n for n in data["nodes"] if n["itype"] and n["itype"].startswith("Gemm"))
    w_edge = gemm["inputs"][1]  # W[i]: a (1, 1) x ... box on W, seen as (H, H)
    assert w_edge["view_shape"] == [128, 128] and len(w_edge["box"]) == 4
    assert gemm["outputs"][0]["dtype"] == "bfloat16"
    if shutil.which("dot"):
        assert graph.with_name(graph.name.replace(".json", ".png")).stat().st_size > 0
    (schedule,) = tmp_path.glob("mlp.*.schedule.txt")
    assert schedule.name.split(".")[1] == graph.name.split(".")[1]  # same graph number
    assert len(schedule.read_text().splitlines()) > mk_backend.dispatchers[-1].program.num_instructions
    assert schedule.read_text().startswith("# work queue per-SM tables")
    torch._dynamo.reset()
    megakittens.compile(mlp, save_schedule=True, global_work_queue=True)(*mlp_inputs(64, 128))
    newest = max(tmp_path.glob("mlp.*.schedule.txt"), key=lambda p: int(p.name.split(".")[1]))
    assert newest.read_text().startswith("# work queue global")


def test_log_dir_env_edge_cases(tmp_path, monkeypatch):
    """MEGAKITTENS_LOG_DIR naming a file is an error that names the directory and the variable; set but
    empty, it means the default ./log (not the current directory)."""
    afile = tmp_path / "afile"
    afile.write_text("x")
    monkeypatch.setenv("MEGAKITTENS_LOG_DIR", str(afile))
    torch._dynamo.reset()
    with pytest.raises(Exception, match="cannot create the log directory .*afile.*MEGAKITTENS_LOG_DIR"):
        megakittens.compile(relu_add, save_schedule=True)(*_ab())
    monkeypatch.setenv("MEGAKITTENS_LOG_DIR", "")
    monkeypatch.chdir(tmp_path)
    torch._dynamo.reset()
    megakittens.compile(relu_add, save_schedule=True)(*_ab())
    assert list((tmp_path / "log").glob("relu_add.*.schedule.txt")) and not list(tmp_path.glob("*.schedule.txt"))


class _no_warning:
    def __enter__(self):
        import warnings
        self._ctx = warnings.catch_warnings()
        self._ctx.__enter__()
        warnings.simplefilter("error", UserWarning)

    def __exit__(self, *exc):
        self._ctx.__exit__(*exc)


@pytest.mark.parametrize("value", [0, 3, 4])
def test_bad_cluster_size(value):
    with pytest.raises(ValueError, match=f"cluster_size.*{value}"):
        megakittens.compile(relu_add, cluster_size=value)


def test_bad_target():
    with pytest.raises(ValueError, match="a100"):
        megakittens.compile(relu_add, target="a100")


def test_unknown_option():
    with pytest.raises(TypeError, match=r"megakittens.compile: unknown option\(s\) \['fast'\]; valid: .*'cluster_size'"):
        megakittens.compile(relu_add, fast=True)


@pytest.mark.parametrize("target,num_sms", [("b200", 148), ("h200", 132)])
def test_targets(target, num_sms):
    f = megakittens.compile(relu_add, target=target)
    a, b = _ab()
    assert rel_err(f(a, b), relu_add(a, b)) <= 1e-2
    assert mk_backend.dispatchers[-1].program.num_sms == num_sms


# --- errors ------------------------------------------------------------------------------------------

def _raises(fn, *args, match):
    with pytest.raises(Exception, match=match) as info:
        megakittens.compile(fn)(*args)
    return info


def test_unsupported_op():
    _raises(lambda x: torch.cumsum(x, 0), randn(8, 8), match=r"(?s)(unsupported.*aten\.cumsum|aten\.cumsum.*unsupported)")


def test_non_contiguous_inputs_are_copied():
    """Strided inputs (a transpose, a step slice, an expand) run on contiguous copies; the caller's tensors
    are untouched, and an in-place op on a strided input still lands in the caller's tensor (as eager)."""
    x, y = randn(64, 64), randn(64, 128)
    ref = x.t() @ y
    x0 = x.clone()
    assert rel_err(megakittens.compile(lambda a, b: a @ b)(x.t(), y), ref) <= 1e-2
    assert torch.equal(x, x0)
    z = randn(128, 64)
    f = megakittens.compile(lambda a, b: torch.relu(a) + b)
    e = randn(1, 64).expand(64, 64)  # stride 0 along dim 0
    assert torch.equal(f(z[::2], e), torch.relu(z[::2]) + e)

    def g(a):
        a.mul_(2)
        return a + 1

    w = randn(32, 64)
    w_eager = w.clone()
    out_eager = g(w_eager.t())
    out = megakittens.compile(g)(w.t())
    assert torch.equal(out, out_eager) and torch.equal(w, w_eager)


def test_step_slice():
    """W[::2] of a contiguous W is a view; W[:, ::2] along the last dim a strided view read through a Copy
    (megakittens/views.py)."""
    W, x = randn(128, 64), randn(64, 64)
    check_close(megakittens.compile(lambda W, x: x @ W[::2])(W, x), x @ W[::2])
    W = randn(64, 128)
    check_close(megakittens.compile(lambda W, x: x @ W[:, ::2].t())(W, x), x @ W[:, ::2].t())


def test_rank_5_input():
    _raises(torch.relu, randn(2, 2, 2, 4, 8), match="rank")


def test_float32_matmul():
    _raises(lambda a, b: a @ b, torch.randn(64, 64), torch.randn(64, 64), match="bfloat16")


def test_backward_graph():
    a = randn(64, 64).requires_grad_()
    b = randn(64, 64).requires_grad_()
    y = megakittens.compile(lambda a, b: a * b)(a, b)  # the forward compiles and runs
    assert rel_err(y, a * b) <= 1e-2
    with pytest.raises(Exception, match="backward"):
        y.backward(torch.ones_like(y))


def test_input_validation_message():
    f = megakittens.compile(relu_add)
    f(*_ab())
    d = mk_backend.dispatchers[-1]
    with pytest.raises(ValueError, match=r"input 0 of 'relu_add': expected bfloat16\[64, 128\], got float32\[64, 128\]"):
        d(torch.randn(64, 128), randn(64, 128))


def test_error_classes_exported():
    for cls in (megakittens.CompileError, megakittens.DeadlockError, megakittens.RaceError):
        assert issubclass(cls, RuntimeError)
    assert isinstance(megakittens.__version__, str)


# --- regressions from a fresh user's session ------------------------------------------------------------

def test_dead_input_computation():
    """An input only used by dead code has no slot; the interpreter must not trip over it."""
    @megakittens.compile
    def f(x, y):
        unused = y * y  # noqa: F841
        return torch.relu(x)

    x, y = _ab()
    assert rel_err(f(x, y), torch.relu(x)) <= 1e-2


def test_dynamic_shapes_rejected_clearly():
    """torch.compile marks a size dynamic after a shape change; megakittens compiles static shapes only."""
    g = torch.compile(lambda a, b: torch.relu(a + b), backend="megakittens")
    a, b = _ab()
    assert rel_err(g(a, b), relu_add(a, b)) <= 1e-2
    with pytest.raises(Exception, match="static shapes only"):
        g(randn(32, 128), randn(32, 128))
    h = torch.compile(relu_add, backend="megakittens", dynamic=False)
    for rows in (64, 32, 16):
        a, b = randn(rows, 128), randn(rows, 128)
        assert rel_err(h(a, b), relu_add(a, b)) <= 1e-2


def test_compiling_again_reuses_the_graph():
    """Ten compiles of the same function with the same options stay under Dynamo's recompile limit."""
    a, b = _ab()
    n = _num_dispatchers()
    for _ in range(10):
        assert rel_err(megakittens.compile(relu_add)(a, b), relu_add(a, b)) <= 1e-2
    assert _num_dispatchers() == n + 1


def test_linear_module_with_trainable_parameters():
    """Parameters that require grad put aten.detach into the forward graph; it folds away."""
    torch.manual_seed(1)
    m = torch.nn.Sequential(torch.nn.Linear(128, 256), torch.nn.ReLU(), torch.nn.Linear(256, 64)).to(torch.bfloat16)
    x = randn(32, 128)
    with torch.no_grad():
        ref = m(x)
    assert rel_err(megakittens.compile(m)(x), ref) <= 1e-2


def test_log_numbers_continue_after_existing_files(tmp_path, monkeypatch):
    monkeypatch.setenv("MEGAKITTENS_LOG_DIR", str(tmp_path))
    (tmp_path / "relu_add.41.graph.json").write_text("{}")
    megakittens.compile(relu_add, save_schedule=True)(*_ab())
    assert (tmp_path / "relu_add.42.schedule.txt").exists()
    assert (tmp_path / "relu_add.41.graph.json").read_text() == "{}"


def test_returned_views_alias_their_slot():
    """A graph may return views (slice, select, transpose) of its results or inputs: zero-copy, as eager."""
    def f(x, W):
        y = torch.relu(x @ W)
        return y[8:40], y.t(), W[1], y[3]

    x, W = randn(64, 128), randn(3, 128, 128, scale=128 ** -0.5)
    outs = megakittens.compile(lambda x, W: f(x, W[0])[:3] + (W[1],))(x, W)
    refs = f(x, W[0])[:3] + (W[1],)
    for o, r in zip(outs, refs):
        assert o.shape == r.shape and rel_err(o, r) <= 1e-2
    assert outs[1].data_ptr() == outs[0].data_ptr() - 8 * 128 * 2  # both views of the one result slot
    assert outs[3].data_ptr() == W[1].data_ptr()  # a view of an input is the caller's memory


_IDENTITY_COPIES = {
    "pad_0": lambda x: torch.nn.functional.pad(x, (0, 0)),
    "pad_crop": lambda x: torch.nn.functional.pad(x, (-1, 0)),
    "repeat_1": lambda x: x.repeat(1, 1),
    "tile_1": lambda x: x.tile(1),
    "roll_0": lambda x: torch.roll(x, 0, 0),
    "roll_dim": lambda x: torch.roll(x, 8, 0),
    "cat_empty": lambda x: torch.cat([x, x[:0]]),
    "max_pool_1": lambda x: torch.nn.functional.max_pool1d(x, 1),
    "max_pool2d_1": lambda x: torch.nn.functional.max_pool2d(x.view(1, 8, 4, 4), 1),
    "index_all_rows": lambda x: x[torch.arange(8)],
}


@pytest.mark.parametrize("case", sorted(_IDENTITY_COPIES))
def test_identity_copies_return_storage_of_their_own(case):
    """Ops that copy in eager and are the identity here (F.pad by 0, repeat(1, 1), roll by the dim's size, ...)
    return a tensor of their own, not the caller's input: an in-place op on the input after them (functionalized
    into the graph, applied to the input afterwards) must not show in the output, and the output must not
    write the input."""
    op = _IDENTITY_COPIES[case]

    def f(x):
        y = op(x)
        x.add_(1)
        return y

    x = randn(8, 16)
    ref = f(x.clone())
    xc = x.clone()
    out = megakittens.compile(f)(xc)
    assert rel_err(out, ref) <= 1e-2 and torch.equal(xc, (x + 1))
    assert out.untyped_storage().data_ptr() != xc.untyped_storage().data_ptr()


def test_a_graph_of_input_views_alone_runs():
    """`x.T` (and a pair of them): AOTAutograd regenerates outputs that are views of inputs and hands the
    backend a graph of no outputs, which has nothing to compile."""
    x, y = randn(8, 16), randn(4, 8)
    out = megakittens.compile(lambda x, y: (x.T, y.mT))(x, y)
    assert torch.equal(out[0], x.T) and torch.equal(out[1], y.mT)
    assert out[0].data_ptr() == x.data_ptr()


def test_outputs_eager_makes_separately_do_not_share_storage():
    """Two outputs of one slot (y and an identity copy of it, a parameter and a copy of it) are separate tensors,
    as in eager; a view of an input stays the caller's memory."""
    w = torch.nn.Parameter(randn(8, 16), requires_grad=False)

    def f(x):
        y = x * 2
        return y, torch.nn.functional.pad(y, (0, 0)), x.t(), torch.nn.functional.pad(w, (0, 0))

    x = randn(8, 16)
    outs = megakittens.compile(f)(x)
    for o, r in zip(outs, f(x)):
        assert rel_err(o, r) <= 1e-2
    ptrs = [o.untyped_storage().data_ptr() for o in outs]
    assert ptrs[0] != ptrs[1] and ptrs[3] != w.untyped_storage().data_ptr()
    assert ptrs[2] == x.untyped_storage().data_ptr()


@pytest.mark.parametrize("name,value", [("enable", "no"), ("dry_run", "yes"), ("save_dag", None),
                                        ("global_work_queue", 1), ("global_work_queue", "auto")])
def test_bool_options_are_type_checked(name, value):
    with pytest.raises(ValueError, match=f"{name} must be True(, False or None| or False)"):
        megakittens.compile(relu_add, **{name: value})


def test_work_queue_by_program(tmp_path, monkeypatch, capsys):
    """global_work_queue=None (the default) takes the global queue for a program of memory-bound ops only and
    the per-SM tables for one with a Gemm; True / False are taken as given (the schedule file and verbose
    say which)."""
    monkeypatch.setenv("MEGAKITTENS_LOG_DIR", str(tmp_path))

    def queue_of(fn, args, **kw):
        torch._dynamo.reset()
        before = set(tmp_path.glob("*.schedule.txt"))
        out = megakittens.compile(fn, save_schedule=True, **kw)(*args)
        (new,) = set(tmp_path.glob("*.schedule.txt")) - before
        program = mk_backend.dispatchers[-1].program
        return new.read_text().splitlines()[0], program, out

    ab = _ab()
    head, program, out = queue_of(relu_add, ab)
    assert head.startswith("# work queue global") and work_queue_for(program) is True
    assert rel_err(out, relu_add(*ab)) <= 1e-2
    assert queue_of(relu_add, _ab(), global_work_queue=False)[0].startswith("# work queue per-SM tables")
    head, program, out = queue_of(mlp, mlp_inputs(64, 128))
    assert head.startswith("# work queue per-SM tables") and work_queue_for(program) is False
    assert work_queue_for(program, True) is True and work_queue_for(program, False) is False
    assert queue_of(mlp, mlp_inputs(64, 128), global_work_queue=True)[0].startswith("# work queue global")
    capsys.readouterr()
    queue_of(relu_add, _ab(), verbose=True)
    assert "SMs, global queue" in capsys.readouterr().out
    with pytest.raises(ValueError, match="global_work_queue must be True, False or None .*got 'yes'"):
        work_queue_for(program, "yes")


def test_bad_cluster_size_type():
    with pytest.raises(ValueError, match="cluster_size"):
        megakittens.compile(relu_add, cluster_size=2.0)


def test_torch_compile_options():
    """torch.compile(backend="megakittens", options={...}) takes megakittens.compile's keyword arguments."""
    f = torch.compile(lambda x: torch.cumsum(torch.relu(x), 0) + 1, backend="megakittens", dynamic=False,
                      options={"fallback": "eager", "cluster_size": 1})
    x = randn(16, 32)
    assert rel_err(f(x), torch.cumsum(torch.relu(x), 0) + 1) <= 1e-2
    assert mk_backend.partitionings[-1].eager  # cumsum ran as a torch op: the option was applied
    with pytest.raises(Exception, match="unknown option.*'fast'"):
        torch.compile(relu_add, backend="megakittens", options={"fast": True})(*_ab())
    with pytest.raises(Exception, match="Inductor setting"):
        torch.compile(relu_add, backend="megakittens", mode="max-autotune")(*_ab())
    torch._dynamo.reset()
    with pytest.raises(Exception, match="options must be a dict.*got str 'fallback'"):
        torch.compile(relu_add, backend="megakittens", options="fallback")(*_ab())


def test_zero_size_tensor_is_a_clear_error():
    with pytest.raises(Exception, match=r"zero-size tensors are not supported, got shape \[0, 8\]"):
        megakittens.compile(torch.relu)(randn(0, 8))


def test_compiling_a_compiled_function_again():
    """megakittens.compile of a megakittens.compile'd function compiles the original with the outer options
    (Dynamo's own wrapper cannot be wrapped again: it raised an AssertionError)."""
    def f(x):
        return torch.relu(x) + 1

    x = randn(8, 16)
    g = megakittens.compile(megakittens.compile(f), fuse=False)
    assert torch.equal(g(x), f(x))
    assert mk_backend.dispatchers[-1].options.fuse is False


@pytest.mark.parametrize("case", ["conv", "max_pool", "softmax_dim1", "group_norm"])
def test_channels_last_outputs_keep_eager_layout(case):
    """Outputs come back in eager's layout even where a decomposition lays the result out otherwise (a
    convolution of a channels_last input is channels_last in eager, NCHW in convolution.py; a softmax over the
    channels of one is contiguous in eager): user code after the call may view them (backend._eager_layouts)."""
    torch.manual_seed(0)
    conv = torch.nn.Conv2d(8, 16, 3, padding=1).to(BF16)
    fn = {"conv": conv, "max_pool": lambda x: torch.nn.functional.max_pool2d(x, 2) + 1,
          "softmax_dim1": lambda x: x.softmax(1),
          "group_norm": lambda x: torch.nn.functional.group_norm(x, 2)}[case]
    x = randn(2, 8, 8, 8).to(memory_format=torch.channels_last)
    with torch.no_grad():
        ref, out = fn(x), megakittens.compile(fn)(x)
    assert out.stride() == ref.stride() and rel_err(out, ref) <= 1e-2


def test_data_dependent_shape_is_a_clear_error():
    """x[mask]: a size only the values decide (an unbacked symbol) is named as such, with the fixed-shape way
    out, not as a dynamic shape that dynamic=False would fix."""
    with pytest.raises(Exception, match="depends on the values of its input.*torch.where"):
        megakittens.compile(lambda x: x[x > 0] * 2)(randn(8, 16))


def test_empty_slice_is_a_clear_error():
    """An empty slice beside other outputs names the slice and its shape (it used to be the DAG's "range
    outside tensor"); fallback="eager" returns it as eager does."""
    def f(x):
        return x + 1, x[:, 16:]

    x = randn(8, 16)
    with pytest.raises(Exception, match=r"node 'slice.*zero-size tensors are not supported, got shape \[8, 0\]"):
        megakittens.compile(f)(x)
    out = megakittens.compile(f, fallback="eager")(x)
    assert out[1].shape == (8, 0) and rel_err(out[0], x + 1) <= 1e-2


def test_input_errors_name_the_python_source():
    """An error about a graph input ('arg1_1') also says where Dynamo read it from (L['x'], a parameter)."""
    w = randn(16, 16)

    def f(w, x):
        return torch.relu(x @ w)

    with pytest.raises(Exception, match=r"unsupported dtype 'float64'.*\[graph input arg\d+_1 is L\['x'\]\]"):
        megakittens.compile(f)(w, torch.randn(8, 16, dtype=torch.float64))

    class Shift(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.shift = torch.nn.Parameter(torch.randn(16, dtype=torch.float64))  # a float64 parameter

        def forward(self, x):
            return torch.relu(x) + self.shift.to(torch.bfloat16)

    with torch.no_grad(), \
            pytest.raises(Exception, match=r"unsupported dtype 'float64'.*\[graph input arg\d+_1 is .*\['shift'\]\]"):
        megakittens.compile(Shift())(randn(8, 16))


def test_outputs_keep_eager_strides():
    """x * 2 on a transposed x keeps x's layout in eager; code after the graph may .view() it that way."""
    def f(x):
        return x.transpose(1, 2) * 2.0

    x = randn(1, 16, 4, 64)
    want = f(x)
    got = megakittens.compile(f)(x)
    assert got.stride() == want.stride() and not want.is_contiguous()
    assert torch.equal(got, want)
    got.transpose(1, 2).view(1, 16, -1)  # eager's layout allows this view


def test_cpu_interpreter_refuses_graphs_larger_than_host_memory(monkeypatch):
    from megakittens import dispatcher
    f = megakittens.compile(relu_add)
    a, b = _ab()
    f(a, b)
    monkeypatch.setattr(dispatcher, "_available_memory", lambda: 1024)
    with pytest.raises(MemoryError, match=r"needs about .* GiB.*race tag"):
        f(a, b)


def test_sdpa_dropout_error_names_the_cause():
    """SDPA with dropout_p > 0 reaches the backend decomposed, with a random draw: the error names it and
    the way out."""
    q = randn(1, 2, 16, 64)
    with pytest.raises(Exception, match=r"node 'native_dropout'.*random numbers: call model.eval\(\).*dropout_p=0"):
        megakittens.compile(lambda q: torch.nn.functional.scaled_dot_product_attention(q, q, q, dropout_p=0.1))(q)


def test_softmax_over_another_dim_runs():
    """softmax / log_softmax over another dim than the last: moved last and back (megakittens/decompose.py)."""
    x = randn(8, 32)
    for fn in (lambda x: torch.softmax(x, 0), lambda x: torch.log_softmax(x, 0)):
        torch._dynamo.reset()
        assert rel_err(megakittens.compile(fn)(x), fn(x)) <= 1e-2


def test_where_on_a_mask_runs_and_an_unconvertible_mask_is_named():
    """A select by a boolean mask runs as 0 / 1 masks (megakittens/masks.py); a mask computed by an op with no
    fp32 form leaves the where unsupported, and the error says which masks run."""
    x = randn(8, 64)
    fn = lambda x, m: torch.where(m, x, x * 2)  # noqa: E731
    assert torch.equal(megakittens.compile(fn)(x, x > 0), fn(x, x > 0))
    torch._dynamo.reset()
    with pytest.raises(Exception, match=r"aten\.bitwise_xor.*|aten\.where\.self.*masks\.py"):
        megakittens.compile(lambda x, i: torch.where((i ^ 1).bool(), x, x * 2))(x, torch.randint(0, 2, (8, 64)))


def test_sdpa_with_grad_error_says_no_grad():
    """Parameters that require grad make Dynamo's graph read SDPA's saved statistics (for backward):
    the error says to run under torch.no_grad()."""
    lin = torch.nn.Linear(64, 64, bias=False).to(torch.bfloat16)

    def f(x):
        q = lin(x).view(1, 16, 1, 64).transpose(1, 2)
        return torch.nn.functional.scaled_dot_product_attention(q, q, q, is_causal=True)

    with pytest.raises(Exception, match=r"torch\.no_grad\(\)"):
        megakittens.compile(f)(randn(16, 64))


def test_training_graph_error_says_no_grad():
    """A repeat_kv (GQA) before SDPA in a training graph (autograd saves the expanded K / V and SDPA's
    statistics): whatever fails in a training capture says how to get the inference graph."""
    lin = torch.nn.Linear(256, 256, bias=False).to(torch.bfloat16)

    def f(x):
        q = lin(x).view(1, 16, 4, 64).transpose(1, 2)
        kv = q[:, :2]
        kv = kv[:, :, None].expand(1, 2, 2, 16, 64).reshape(1, 4, 16, 64)
        return torch.nn.functional.scaled_dot_product_attention(q, kv, kv, is_causal=True)

    with pytest.raises(Exception, match=r"torch\.no_grad\(\)"):
        megakittens.compile(f)(randn(16, 256))
    with torch.no_grad():
        x = randn(16, 256)
        assert rel_err(megakittens.compile(f)(x), f(x)) <= 1e-2


@pytest.mark.parametrize("fn,match", [
    (lambda x: x != 1, r"aten\.ne\.Scalar.*position_ids"),
    (lambda x: x.amin(-1), r"aten\.amin\.default.*last dim"),
    (lambda x: torch.pow(x, x), r"aten\.pow\.Tensor_Tensor.*scalar exponent"),
])
def test_unsupported_op_hints(fn, match):
    """An unsupported op's error says where it usually comes from (src/trace/resolvers.cpp unsupported_hint)."""
    with pytest.raises(Exception, match=match):
        megakittens.compile(fn)(randn(8, 64))


def test_slice_assignment_hint():
    """a[:, :8] = y runs (a Cat: megakittens/decompose.py); with a step the error names the assignment."""
    def f(a, y):
        a = a.clone()
        a[:, ::2] = y
        return a * 2
    with pytest.raises(Exception, match=r"aten\.slice_scatter\.default.*assignment into part.*step"):
        megakittens.compile(f)(randn(8, 64), randn(8, 32))


def test_errors_name_the_megakittens_backend():
    with pytest.raises(Exception, match="backend='megakittens'"):
        megakittens.compile(torch.relu)(randn(0, 8))


def test_gpu_call_plan_puts_intermediates_in_one_arena():
    """megakittens/dispatcher.py _GpuPlan (computed on the CPU): graph outputs get their own tensors, every
    other non-input slot a 256-byte aligned, non-overlapping range of one arena, reshape aliases none."""
    def f(x, w):
        h = torch.relu(x @ w)
        return (h.view(-1) * 2).view(64, 64) + 1, h.sum(-1)
    x, w = torch.randn(64, 128, dtype=torch.bfloat16), torch.randn(128, 64, dtype=torch.bfloat16)
    megakittens.compile(f)(x, w)
    d = mk_backend.dispatchers[-1]
    plan = d._make_plan()
    fresh = {s for s, _, _ in plan.fresh}
    arena = dict(plan.arena)
    inputs = {s for s in d.input_slots if s >= 0}
    aliases = {s for s, _, _ in plan.aliases}
    assert fresh == set(d.output_slots) - inputs - aliases | {d._slot_base[s] for s in d.output_slots if s in aliases}
    assert arena and not (fresh & set(arena)) and not (aliases & (fresh | set(arena) | inputs))
    assert fresh | set(arena) | aliases | inputs == set(range(len(d.slots)))
    end = 0
    for s, off in sorted(plan.arena, key=lambda p: p[1]):
        meta = d.slots[s]
        n = math.prod(meta.shape) * {"bfloat16": 2, "float32": 4}[meta.dtype]
        assert off % 256 == 0 and off >= end, (s, off, end)
        end = off + n
    assert end <= plan.arena_bytes
    for s, base, off in plan.aliases:
        assert d._slot_base[s] == base and off == d._slot_offset[s] * 2


def test_inference_capture_matches_aot_autograd():
    """backend.capture_inference (one functionalized make_fx trace) lowers an inference graph to the same
    program as AOTAutograd: same instruction table, icodes and slots, for a whole tiny Llama."""
    import importlib.util
    import sys
    from pathlib import Path

    import megakittens.backend as mk_backend
    from megakittens.options import Options
    path = Path(__file__).resolve().parent.parent / "examples" / "llama.py"
    spec = importlib.util.spec_from_file_location("mk_example_llama_capture", path)
    ex = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = ex
    spec.loader.exec_module(ex)
    args = ex.CONFIGS["tiny"]
    model = ex.build(args, args.seq, "cpu")
    idx = torch.randint(0, args.vocab_size, (1, args.seq))
    programs = []
    with torch.no_grad():
        for make in (mk_backend.make_backend, mk_backend.make_aot_backend):
            torch._dynamo.reset()
            out = torch.compile(model, backend=make(Options(), "llama"), fullgraph=True, dynamic=False)(idx)
            programs.append((mk_backend.dispatchers[-1].program, out))
    (p, out), (q, ref) = programs
    assert list(p.icodes) == list(q.icodes)
    assert [(m.shape, m.dtype) for m in p.slots] == [(m.shape, m.dtype) for m in q.slots]
    assert (p.table_global() == q.table_global()).all()
    for o, r in zip(out, ref):
        assert torch.equal(o, r)


def test_input_mutation_goes_through_aot_autograd():
    """A graph that writes an input (functionalize leaves a copy_ into it) is not captured by
    capture_inference; AOTAutograd's wrapper writes the input back, as eager does."""
    import megakittens.backend as mk_backend

    def f(x, y):
        x.mul_(2)
        return x + y

    x, y = randn(64, 64), randn(64, 64)
    gm = torch.fx.symbolic_trace(f)
    assert mk_backend.capture_inference(gm, [x.clone(), y]) is None

    def alias(x):  # returns a view of its input: AOTAutograd regenerates it outside the graph
        return x.t(), x + 1

    assert mk_backend.capture_inference(torch.fx.symbolic_trace(alias), [x]) is None
    assert mk_backend.capture_inference(torch.fx.symbolic_trace(lambda x: (x + 1).t()), [x]) is not None
    x_ref = x.clone()
    out = megakittens.compile(f)(x, y)
    ref = f(x_ref, y)
    assert torch.equal(x, x_ref)  # the input was doubled in place by both
    check_close(out, ref)


class _OnGpu(torch.Tensor):
    """A CPU tensor that says it is on a GPU: runs the Dispatcher's GPU call path on the CPU."""
    @property
    def is_cuda(self):
        return True


def test_gpu_call_path_runs_on_the_cpu_interpreter():
    """Dispatcher._call_gpu (the GPU path: slot pointers for the arguments, the arena, reshape aliases, a
    private contiguous copy of a strided input) on CPU memory, with the CPU reference interpreter as the
    launch: it computes what eager does, so no two live slots overlap in the arena and every pointer is
    right; the caller's tensors are untouched, the outputs are fresh tensors."""
    def f(x, w, b):
        h = torch.relu(x @ w)
        return (h.view(-1) * 2).view(64, 64) + b, h.sum(-1)
    x, w, b = randn(64, 128), randn(64, 128).t(), randn(64, 64)  # w strided: copied contiguous per call
    megakittens.compile(f)(x, w, b)
    d = mk_backend.dispatchers[-1]
    launches = []

    def launch(ptrs):
        launches.append(list(ptrs))
        megakittens._C.interpret(d.program, ptrs, seed=0, global_work_queue=False)

    d._launch = launch
    args = tuple(t.as_subclass(_OnGpu) for t in (x, w, b))
    before = [t.clone() for t in (x, w, b)]
    for _ in range(2):  # the second call reuses the plan
        outs = d._call_gpu(args, torch.device("cpu"))
        for o, r in zip(outs, f(x, w, b)):
            check_close(o.as_subclass(torch.Tensor), r)
    assert all(torch.equal(t, u) for t, u in zip((x, w, b), before))
    slot = dict(d._arg_slots)
    ptrs = launches[-1]
    assert ptrs[slot[0]] == x.data_ptr() and ptrs[slot[2]] == b.data_ptr() and ptrs[slot[1]] != w.data_ptr()
    with pytest.raises(ValueError, match="slot .* is on cpu"):
        d._call_gpu((x, args[1], args[2]), torch.device("cpu"))


def test_logger_calls_inside_the_function_are_skipped():
    """A logging call inside the compiled function (Hugging Face's logger.warning_once when loss_type is unset)
    would break the graph under fullgraph: Dynamo is told to skip logger methods (the compiled run does not
    log). Modules keep their type."""
    import logging
    log = logging.getLogger("megakittens.test")

    def f(x):
        log.warning("computing")
        return x * 2

    x = randn(8, 64)
    torch._dynamo.reset()
    assert torch.equal(megakittens.compile(f)(x), x * 2)

    class M(torch.nn.Module):
        def forward(self, x):
            log.info("forward")
            return x + 1

    compiled = megakittens.compile(M())
    assert isinstance(compiled, torch.nn.Module) and torch.equal(compiled(x), x + 1)


def test_gpu_call_copies_a_cpu_graph_attribute_once():
    """Dispatcher._attr_on: a graph attribute on another device than the call (DeBERTa-v2's relative positions, a
    CPU constant, on a CUDA call: was "slot N is on cpu") is copied once, reused, and copied again only when it
    changes (written in place, or replaced). The meta device stands in for the GPU here."""
    from megakittens.dispatcher import Dispatcher

    class Stub:
        _attr_copies: dict = {}
        rel = torch.arange(6.0)

        def _attr(self, path):
            return getattr(self, path)

    stub, meta = Stub(), torch.device("meta")
    first = Dispatcher._attr_on(stub, "rel", 3, meta)
    assert first.device == meta and first.shape == (6,)
    assert Dispatcher._attr_on(stub, "rel", 3, meta) is first  # reused
    stub.rel.add_(1)  # written in place: a new copy
    second = Dispatcher._attr_on(stub, "rel", 3, meta)
    assert second is not first and second.device == meta
    stub.rel = torch.zeros(2)  # replaced
    assert Dispatcher._attr_on(stub, "rel", 3, meta).shape == (2,)
    assert Dispatcher._attr_on(stub, "rel", 3, torch.device("cpu")) is stub.rel  # already there: itself
