"""The Dynamo backend (seed §01): aten FX graph -> _C.trace -> _C.schedule -> Dispatcher.

``make_backend(options, name)`` is what ``megakittens.compile`` hands to Dynamo; ``megakittens_backend`` is
the same with default options, for ``torch.compile(backend="megakittens")``. An inference graph (grad mode
off, or no input requiring grad) is lowered to aten by one functionalized ``make_fx`` trace
(``capture_inference``); otherwise, and for graphs that mutate or return their inputs, AOTAutograd lowers
it (``make_aot_backend``), whose forward and backward compilers are the same ``compile_graph``.
"""
from __future__ import annotations

import atexit
import collections
import collections.abc
import copy
import time
import weakref
from typing import Any, Callable, Optional

import torch
from torch._dynamo.backends.common import aot_autograd
from torch._functorch.aot_autograd import make_boxed_func
from torch._subclasses.fake_tensor import FakeTensor, FakeTensorMode, unset_fake_temporarily
from torch.fx.experimental.proxy_tensor import make_fx

from megakittens import (_C, artifacts, decompose, eager_attention, fallback, float_ids, fold, fx_export, gather,
                         gemm_padding, loss, masks, rank5, scalars, sdpa_math, views)
from megakittens import dispatcher as dispatcher_mod
from megakittens.dispatcher import Dispatcher
from megakittens.options import Options, work_queue_for

# The most recent Dispatchers built in this process, oldest first (tests and debugging read the last
# one); bounded so that a long-running process does not keep every compiled program alive.
dispatchers: "collections.deque[Dispatcher]" = collections.deque(maxlen=32)
compiled_count = 0  # Dispatchers built so far in this process
# How Dynamo graphs were lowered to aten so far: "inference" (capture_inference) or "aot" (AOTAutograd).
captures: "collections.Counter[str]" = collections.Counter()
# fallback="eager": how the most recent graphs were split (fallback.Partitioning), oldest first.
partitionings: "collections.deque[fallback.Partitioning]" = collections.deque(maxlen=32)
# Every Dispatcher still alive (a compiled graph may outlive Dynamo's reset: AOTAutograd's autograd.Function
# of a training graph keeps its forward), so that _release can drop their _C objects.
_live: "weakref.WeakSet[Dispatcher]" = weakref.WeakSet()


@atexit.register
def _release() -> None:
    # Drop the _C objects before the extension is torn down (nanobind reports objects alive at exit).
    dispatchers.clear()
    partitionings.clear()
    for d in list(_live):
        d.close()
    try:
        torch._dynamo.reset()
    except RuntimeError:  # at interpreter shutdown reset() may need imports that can no longer happen
        pass


def _log(msg: str) -> None:
    print(f"[megakittens] {msg}", flush=True)


def _print_graph(gm: torch.fx.GraphModule, name: str, is_backward: bool) -> None:
    _log(f"{'backward' if is_backward else 'forward'} graph '{name}'")
    try:
        import tabulate  # noqa: F401  (print_tabular needs it and only prints a hint without it)
    except ImportError:
        print(gm.graph, flush=True)
    else:
        gm.graph.print_tabular()


def _rewrite(gm: torch.fx.GraphModule, options: Options) -> None:
    """The FX passes over the aten graph, in order (each module's doc says what it rewrites)."""
    fold.drop_empty_cat_operands(gm)  # a KV cache that starts empty (use_cache=True prefill)
    rank5.select_from_rank5_views(gm)  # BLOOM's (B, S, H, 3, D) view of its fused q / k / v
    rank5.flatten_high_rank_copies(gm)  # Swin's rank-6 window partitions, copied through 4 dims
    views.step_slices_as_views(gm, keep_rope=options.fuse)  # Swin's x[:, 0::2, 1::2], YOLO's Focus: views
    views.as_strided_as_views(gm)  # as_strided that is a view of a contiguous tensor
    gather.embedding_of_gather(gm)  # BERT's token type ids gathered from a buffer at the positions
    if options.fuse:
        eager_attention.fuse_eager_attention(gm)  # matmul -> softmax -> matmul written out: SDPA
    fold.fold_constants(gm)  # position ids / causal masks built from arange: constants, masks -> is_causal
    if rank5.merge_high_rank_pointwise(gm):  # torchvision Swin's window mask added to (B, nW, H, N, N) scores
        rank5.flatten_high_rank_copies(gm)  # the views into and out of it
        fold.fold_constants(gm)  # the mask constant, viewed in 4 dims
    gm.graph.eliminate_dead_code()  # e.g. LayerNorm's mean / rstd outputs (megakittens/decompose.py), unread
    float_ids.embedding_ids_in_float(gm)  # RoBERTa's / OPT's position ids, x[ids], x[i, j]: ids in fp32
    loss.nll_loss_as_reductions(gm)  # cross_entropy over labels: one-hot products and row sums
    scalars.scalars_as_vectors(gm)  # CLIP's logit_scale.exp(): 0-dim elementwise on (1,) views
    gm.recompile()
    # Masks become Attention's; other head dims the score-matrix math (with fallback="eager": PyTorch's SDPA
    # between megakernels).
    sdpa_math.decompose_unsupported_sdpa(gm, math_ok=options.fallback is None)
    rank5.flatten_repeat_kv(gm)  # GQA's rank-5 copies that no SDPA reads, in four dims
    if masks.masks_in_float(gm):  # masked_fill / where / x * mask outside attention: masks as fp32 0 / 1
        scalars.scalars_as_vectors(gm)  # a count of kept positions divides a 0-dim sum
    if gemm_padding.pad_unaligned_products(gm):  # K or N off TMA's 16-byte rows: zero-padded
        fold.fold_constants(gm)  # the zero blocks


def compile_graph(gm: torch.fx.GraphModule, example_inputs: list, options: Options, name: str,
                  is_backward: bool = False) -> Callable:
    """Compile one aten graph; returns a boxed callable (args list -> outputs).

    Raises CompileError (from the tracer or scheduler) naming the node, op and constraint; a backward
    graph raises "no backward instruction types". With ``fallback="eager"`` nothing raises for an
    unsupported op: see ``_compile_partitioned``.
    """
    if options.verbose:
        _print_graph(gm, name, is_backward)
    # dry_run runs the graph as captured: the rewritten one may view what eager cannot (a view of a transpose
    # that the tracer reads as one, megakittens/rank5.py).
    before = dispatcher_mod.output_sources(gm)
    if not before and not is_backward:
        # Every output is a view of an input (`x.T`): AOTAutograd makes those itself, nothing is left to run.
        return make_boxed_func(lambda *args: [])
    with unset_fake_temporarily():  # AOTAutograd calls its compiler inside its fake mode: constants stay real
        captured = copy.deepcopy(gm) if options.dry_run else None
        _rewrite(gm, options)
    run = _compile_rewritten(gm, options, name, is_backward, captured)
    fresh = dispatcher_mod.fresh_outputs(before, dispatcher_mod.output_sources(gm))
    return _copying(run, fresh) if fresh and not options.dry_run else run


def _copying(run: Callable, fresh: list) -> Callable:
    """The boxed ``run`` with its outputs at indices ``fresh`` copied (``dispatcher.fresh_outputs``)."""
    def copying(args: list) -> list:
        outs = list(run(args))
        for i in fresh:
            outs[i] = outs[i].clone()
        return outs
    copying._boxed_call = True
    return copying


def _compile_rewritten(gm: torch.fx.GraphModule, options: Options, name: str, is_backward: bool,
                       captured: Any) -> Callable:
    """compile_graph after the rewrites: a boxed callable (args list -> outputs)."""
    if options.fallback == "eager":
        return make_boxed_func(_compile_partitioned(gm, options, name, is_backward))
    # Strided inputs arrive as contiguous copies (the dispatcher makes them), so trace them as such.
    graph = fx_export.export_graph(gm, name, is_backward, contiguous_inputs=True)
    if options.dry_run:
        return _dry_run(gm, graph, options, name, captured)
    try:
        return make_boxed_func(_compile_program(gm, graph, options, name))
    except _C.CompileError as e:
        # Step slices left for an interleaved RoPE that src/trace/fuse_rope.cpp then did not fuse (mixed dtypes):
        # rewritten as views like any other, and the graph compiled again.
        if "slices with step != 1" not in str(e):
            raise
        with unset_fake_temporarily():
            if not views.step_slices_as_views(gm, keep_rope=False):
                raise
        graph = fx_export.export_graph(gm, name, is_backward, contiguous_inputs=True)
        return make_boxed_func(_compile_program(gm, graph, options, name))


def _compile_program(gm: torch.fx.GraphModule, graph: Any, options: Options, name: str,
                     dry_run: bool = False) -> Any:
    """trace -> schedule -> Dispatcher for one exported graph (``dry_run``: stop after scheduling and
    return None). Raises CompileError."""
    t0 = time.perf_counter()
    dag = _C.trace(graph, fuse=options.fuse)
    if options.verbose:
        _log(f"trace {(time.perf_counter() - t0) * 1e3:.1f} ms ({len(dag.nodes)} nodes)")
    number = artifacts.next_number(name) if options.save_dag or options.save_schedule else -1
    if options.save_dag:
        path = artifacts.save_dag(dag, name, number)
        if options.verbose:
            _log(f"saved {path}")

    profile = options.profile()
    program = _C.schedule(dag, profile, cluster_size=options.cluster_size)
    queue = work_queue_for(program, options.global_work_queue)
    if options.verbose:
        for phase, ms in program.phase_ms:
            _log(f"{phase} {ms:.1f} ms")
        _log(f"{program.num_instructions} instructions, {program.num_barriers} barriers, "
             f"{len(program.slots)} slots on {program.num_sms} SMs, {'global queue' if queue else 'per-SM tables'}")
    if options.save_schedule:
        path = artifacts.save_schedule(program, name, number, queue)
        if options.verbose:
            _log(f"saved {path}")
    if dry_run:
        return None
    dispatcher = Dispatcher(program, dag, gm, options)
    global compiled_count
    dispatchers.append(dispatcher)
    _live.add(dispatcher)
    compiled_count += 1
    if options.verbose:
        _log("dispatcher ready")
    return dispatcher


def _compile_partitioned(gm: torch.fx.GraphModule, options: Options, name: str, is_backward: bool) -> Callable:
    """fallback="eager": one Dispatcher per maximal supported partition, the other ops run eagerly
    (megakittens/fallback.py). dry_run traces and schedules each partition, prints the partitioning and
    runs everything eagerly. The split is appended to ``partitionings``."""
    def compile_part(sub: torch.fx.GraphModule, graph: Any, part_name: str) -> Any:
        return _compile_program(sub, graph, options, part_name, dry_run=options.dry_run)

    run, split = fallback.partition(gm, options, name, is_backward, compile_part)
    partitionings.append(split)
    if options.dry_run or options.verbose:
        print(split.report(), flush=True)
    return run


def support_report(graph: Any, name: str, options: Options, gm: Optional[torch.fx.GraphModule] = None) -> str:
    """dry_run's report: that the whole graph is supported, else every op that cannot be compiled, grouped
    by op and reason, with how often - an op without an instruction type or one whose own constraints
    fail (dtype, TMA alignment: each op is traced and scheduled alone, as fallback="eager" does, when
    ``gm`` is given) - and the whole graph's trace or schedule error."""
    def whole_error() -> str:
        try:
            _C.schedule(_C.trace(graph, fuse=options.fuse), options.profile(), cluster_size=options.cluster_size)
        except _C.CompileError as e:
            return str(e)
        return ""

    supported = f"[megakittens] support report for '{name}': every op has an instruction type"
    issues = list(_C.support_report(graph, fuse=options.fuse))
    whole = "" if issues else whole_error()
    if not issues and not whole:
        return supported
    if gm is not None and not graph.is_backward:
        # Each op alone; an op that compiles only inside a fused pattern (repeat_kv's clone) shows up too.
        # Pure ops no output needs go first (as fallback="eager" drops them): they are not blockers.
        gm.graph.eliminate_dead_code()
        gm.recompile()
        live = fx_export.export_graph(gm, name, graph.is_backward)
        issues = [(n.name, fx_export.target_name(n), why) for n, why in fallback._supported_nodes(gm, live, options)[1].items()]
        if not issues and not whole:
            # Every op compiles alone (an unfused repeat_kv's rank-5 clone passes the op-by-op check only
            # inside its pattern): the whole graph's trace and schedule decide.
            whole = whole_error()
            if not whole:
                return supported
    if whole and all(why != whole for _, _, why in issues):
        issues.append(("", "", whole))
    lines = [f"[megakittens] support report for '{name}': {len(issues)} node(s) cannot be compiled"]
    lines += fallback.grouped_lines("  ", [(target or "(graph)", node, reason) for node, target, reason in issues])
    return "\n".join(lines)


def _dry_run(gm: torch.fx.GraphModule, graph: Any, options: Options, name: str,
             captured: torch.fx.GraphModule) -> Callable:
    """Trace only: print the support report of the rewritten ``gm`` (and save_dag when the graph traces), then
    run the ``captured`` graph eagerly."""
    print(support_report(graph, name, options, gm), flush=True)
    if options.save_dag:
        try:
            dag = _C.trace(graph, fuse=options.fuse)
        except _C.CompileError:
            pass  # already in the report
        else:
            path = artifacts.save_dag(dag, name, artifacts.next_number(name))
            if options.verbose:
                _log(f"saved {path}")
    return make_boxed_func(captured)


def make_aot_backend(options: Options, name: str) -> Any:
    """The Dynamo backend: AOTAutograd with megakittens forward and backward compilers."""
    def fw_compiler(gm: torch.fx.GraphModule, example_inputs: list) -> Callable:
        return compile_graph(gm, example_inputs, options, name, is_backward=False)

    def bw_compiler(gm: torch.fx.GraphModule, example_inputs: list) -> Callable:
        return compile_graph(gm, example_inputs, options, name, is_backward=True)

    aot = aot_autograd(fw_compiler=fw_compiler, bw_compiler=bw_compiler, decompositions=decompose.TABLE)
    aot.__name__ = "megakittens"  # Dynamo names the backend by it in BackendCompilerFailed ("compiler_fn")
    return aot


def capture_inference(gm: torch.fx.GraphModule, example_inputs: list) -> Optional[torch.fx.GraphModule]:
    """Dynamo's graph as a functional aten graph: one ``make_fx`` trace of ``torch.func.functionalize(gm)``
    on fake copies of the inputs, where AOTAutograd traces twice (once for metadata, once for the graph:
    a 16-layer Llama's capture takes ~3x longer through it). None when the result still has an in-place op
    (an input mutation: functionalize leaves a ``copy_`` into the input; or a decomposition's in-place op
    that functionalize did not see), returns a tensor sharing an input's storage, or cannot be
    functionalized this way (a custom op mutating an input): AOTAutograd handles those."""
    mode = torch._guards.detect_fake_mode(example_inputs) or FakeTensorMode()
    depth = torch._C._functorch.get_dynamic_layer_stack_depth()
    try:
        with mode:
            fake = [x if isinstance(x, FakeTensor) or not isinstance(x, torch.Tensor) else mode.from_tensor(x)
                    for x in example_inputs]
            g = make_fx(torch.func.functionalize(gm, remove="mutations"), tracing_mode="real",
                        decomposition_table=decompose.TABLE)(*fake)
    except RuntimeError:  # e.g. a custom op that mutates an input (torch.func.functionalize refuses those)
        # A trace that failed inside a functorch transform (Mamba's torch.vmap under functionalize) leaves
        # its layers on functorch's stack, and AOTAutograd's trace after this one would run inside them.
        if torch._C._functorch.get_dynamic_layer_stack_depth() > depth:
            torch._C._functorch.pop_dynamic_layer_stack_and_undo_to_depth(depth)
        return None
    placeholders = [n for n in g.graph.nodes if n.op == "placeholder"]
    inputs = {_storage(n.meta.get("val")) for n in placeholders} - {None}
    for n in g.graph.nodes:
        # An in-place op left by a decomposition below the functionalization layer (F.rms_norm's add_),
        # or a copy_ into an input (an input mutation).
        if n.op == "call_function" and isinstance(n.target, torch._ops.OpOverload) and n.target._schema.is_mutable:
            return None
        if n.op == "output":
            outs = torch.utils._pytree.tree_leaves(n.args[0])
            if any(isinstance(o, torch.fx.Node) and _storage(o.meta.get("val")) in inputs for o in outs):
                return None
    return g


def _with_input_sources(msg: str, g: torch.fx.GraphModule, gm: torch.fx.GraphModule) -> str:
    """``msg`` plus, for each graph input it names by its placeholder ('arg0_1'), the Python expression
    Dynamo read it from (L['x'], G['model']._parameters['weight']): the k-th placeholder of the captured
    graph is the k-th of Dynamo's."""
    def source(n: torch.fx.Node) -> Optional[str]:
        src = getattr(n.meta.get("grapharg"), "source", None)
        name = getattr(src, "name", None)
        try:
            return name() if callable(name) else name
        except Exception:  # a source kind without a name: leave the placeholder as it is
            return None
    ours = [n.name for n in g.graph.nodes if n.op == "placeholder"]
    theirs = [source(n) for n in gm.graph.nodes if n.op == "placeholder"]
    named = [f"{a} is {b}" for a, b in zip(ours, theirs) if b and f"'{a}'" in msg]
    return f"{msg} [graph input {', '.join(named)}]" if named else msg


def _storage(v: Any) -> Optional[int]:
    """An identity of a (fake) tensor's storage (its StorageImpl's address), None for a non-tensor."""
    return v.untyped_storage()._cdata if isinstance(v, torch.Tensor) else None


def make_backend(options: Options, name: str) -> Any:
    """The Dynamo backend: ``capture_inference`` + ``compile_graph`` for inference graphs, else
    ``make_aot_backend``'s AOTAutograd."""
    aot = make_aot_backend(options, name)

    def compile_captured(gm: torch.fx.GraphModule, example_inputs: list) -> Callable:
        training = torch.is_grad_enabled() and any(
            isinstance(x, torch.Tensor) and x.requires_grad for x in example_inputs)
        sdpa_math.sdpa_compatible(gm, math=options.fallback is None)  # 3-D operands, Dv != Dq
        g = None if training else capture_inference(gm, example_inputs)
        captures["aot" if g is None else "inference"] += 1
        if g is None:
            try:
                return aot(gm, example_inputs)
            except _C.CompileError as e:
                if not training or "no_grad" in str(e):
                    raise
                # A training capture holds what autograd saves for backward (activations as graph
                # outputs, SDPA's statistics, unfused repeat_kv expands): name the likely cause.
                raise _C.CompileError(f"{e} [autograd is on and an input requires grad, so this is a training "
                                      "graph: for inference run under torch.no_grad() or "
                                      "torch.inference_mode()]") from None
        try:
            compiled = compile_graph(g, example_inputs, options, name)  # boxed: takes the argument list
        except _C.CompileError as e:
            raise _C.CompileError(_with_input_sources(str(e), g, gm)) from None
        return lambda *args: compiled(list(args))

    def backend(gm: torch.fx.GraphModule, example_inputs: list) -> Callable:
        return _eager_layouts(compile_captured(gm, example_inputs), gm)

    backend.__name__ = "megakittens"  # Dynamo names the backend by it in BackendCompilerFailed ("compiler_fn")
    return backend


def _eager_layouts(run: Callable, gm: torch.fx.GraphModule) -> Callable:
    """``run`` (Dynamo's compiled graph) with each output in the layout eager gives it, read from Dynamo's
    example values of ``gm``'s outputs (the real ops' meta kernels): a decomposition may lay a result out
    otherwise (convolution.py returns NCHW where a channels_last input gives channels_last). Which outputs
    differ is settled at the first call; those are copied into eager's strides at every call."""
    try:
        out = next(n for n in gm.graph.nodes if n.op == "output")
        vals = [a.meta.get("example_value") if isinstance(a, torch.fx.Node) else None
                for a in torch.utils._pytree.tree_leaves(out.args[0])]
    except StopIteration:
        return run
    want = [v.stride() if isinstance(v, torch.Tensor) and dispatcher_mod._dense(v.shape, v.stride()) else None
            for v in vals]
    if not any(w is not None for w in want):
        return run
    differ: Optional[list] = None

    def call(*args: Any) -> Any:
        nonlocal differ
        outs = run(*args)
        if differ is None:
            differ = [] if len(outs) != len(want) else [
                i for i, (o, w) in enumerate(zip(outs, want)) if w is not None and isinstance(o, torch.Tensor) and
                o.dim() == len(w) and not dispatcher_mod._same_layout(o, tuple(w))]
        if not differ:
            return outs
        fixed = list(outs)
        for i in differ:
            fixed[i] = dispatcher_mod.restrided(fixed[i], want[i])
        return type(outs)(fixed) if isinstance(outs, tuple) else fixed
    return call


def megakittens_backend(gm: torch.fx.GraphModule, example_inputs: list, *, mode: Optional[str] = None,
                        options: Optional[dict] = None) -> Any:
    """``torch.compile(model, backend="megakittens", options={...})``: the graph named after the Dynamo graph.

    ``options``: the keyword arguments of ``megakittens.compile`` (``Options`` fields), e.g.
    ``{"fallback": "eager", "cluster_size": 1}``. ``mode``: torch.compile's Inductor modes do not apply;
    any mode raises ValueError. Unknown option names raise ValueError naming them; options that are not a
    mapping raise TypeError."""
    if mode is not None:
        raise ValueError(f"megakittens: torch.compile mode={mode!r} is an Inductor setting; megakittens takes "
                         "options={...} (the keyword arguments of megakittens.compile) instead")
    if options is not None and not isinstance(options, collections.abc.Mapping):
        raise TypeError(f"megakittens: torch.compile's options must be a dict of megakittens.compile keyword "
                        f"arguments, e.g. {{'fallback': 'eager'}}; got {type(options).__name__} {options!r}")
    fields = set(Options.__dataclass_fields__)
    unknown = sorted(set(options or {}) - fields)
    if unknown:
        raise ValueError(f"megakittens: unknown option(s) {unknown}; valid: {sorted(fields)}")
    name = getattr(gm, "_megakittens_name", None) or "graph"
    return make_backend(Options(**(options or {})), name)(gm, example_inputs)
