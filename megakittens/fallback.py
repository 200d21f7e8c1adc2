"""``fallback="eager"`` (issue 6): one megakernel per maximal supported subgraph, torch ops between them.

Support comes from the compiler itself: ``_C.op_units`` cuts each op out of the graph as it would sit in a
partition (its view chains folded into its edges, producers as inputs) and each unit is traced and
scheduled; with CUDA inputs on a GPU that runs the megakernel, an op whose IType has no device body
(``_C.gpu_missing_bodies``) is unsupported too, so it runs eagerly instead of sending its whole megakernel
to the CPU reference interpreter. Views and getitem are supported when the op that reads them is, and
fused-away intermediates (the decomposed RMSNorm) when their fused op is. torch.fx's
``CapabilityBasedPartitioner`` then forms maximal cycle-free partitions; each becomes a submodule of the
graph compiled through the whole-graph path, and every other node stays an ordinary aten call.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Sequence

import torch
import torch.fx
from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner
from torch.fx.passes.operator_support import create_op_support
from torch.fx.passes.utils.fuser_utils import fuse_by_partitions

from megakittens import _C, fx_export
from megakittens.options import Options

SUBMODULE_PREFIX = "megakernel_"


@dataclass
class Partitioning:
    """How one graph was split. ``megakernels``: (program name, op node names) per compiled partition, in
    graph order; ``eager``: (node, target, reason) per op left to torch; ``failed``: (program name, op
    node names, reason) per partition that did not compile as a whole (its ops run eagerly too)."""
    name: str
    megakernels: list = field(default_factory=list)
    eager: list = field(default_factory=list)
    failed: list = field(default_factory=list)

    @property
    def num_megakernels(self) -> int:
        return len(self.megakernels)

    def report(self) -> str:
        n_eager = len(self.eager) + sum(len(ops) for _, ops, _ in self.failed)
        lines = [f"[megakittens] fallback='eager' for '{self.name}': {self.num_megakernels} megakernel(s), "
                 f"{n_eager} op(s) run eagerly"]
        for program, ops in self.megakernels:
            lines.append(f"  megakernel {program}: {len(ops)} op(s) ({', '.join(ops)})")
        for program, ops, reason in self.failed:
            lines.append(f"  eager, did not compile as a megakernel: {program} ({', '.join(ops)}): {reason}")
        lines += grouped_lines("  eager ", [(target, node, reason) for node, target, reason in self.eager])
        return "\n".join(lines)


def grouped_lines(prefix: str, hits: list) -> list:
    """One line per (target, reason) of ``hits`` (target, node name, reason), in first-seen order:
    ``{prefix}{target} x{count} ({nodes}): {reason}``. A reason names its first node; the others of the
    group failed the same way (their messages differ only in the node name)."""
    groups: dict = {}
    for target, node, reason in hits:
        key = (target, reason.replace(f"'{node}'", "'?'", 1) if node else reason)
        groups.setdefault(key, []).append((node, reason))
    lines = []
    for (target, _), members in groups.items():
        nodes = ", ".join(n for n, _ in members if n)
        lines.append(f"{prefix}{target} x{len(members)}" + (f" ({nodes})" if nodes else "") + f": {members[0][1]}")
    return lines


class _Megakernel(torch.nn.Module):
    """Stands in for a partition's submodule: runs its compiled program, returns the outputs as a tuple.

    ``floats``: (argument index, dtype) of the arguments that are floating tensors in the graph. An eager op
    before the partition may return another dtype than its meta says (on the CPU, a bf16 train-mode batch norm
    returns bf16 batch statistics where the meta, and CUDA, give fp32): such an argument is cast to the
    graph's dtype, as the partition was compiled for it."""

    def __init__(self, run: Callable[..., list], floats: Sequence[tuple] = ()):
        super().__init__()
        self.run = run
        self.floats = list(floats)

    def forward(self, *args: Any) -> tuple:
        off = [(k, d) for k, d in self.floats if args[k].dtype != d and args[k].dtype.is_floating_point]
        if off:
            args = list(args)
            for k, d in off:
                args[k] = args[k].to(d)
        return tuple(self.run(*args))


def _meta_tensors(node: torch.fx.Node) -> list:
    v = node.meta.get("val")
    return [x for x in (v if isinstance(v, (tuple, list)) else [v]) if isinstance(x, torch.Tensor)]


def _needs_device_bodies(gm: torch.fx.GraphModule, profile: Any) -> bool:
    """True when this graph's CUDA tensors will run on the megakernel (else on the CPU interpreter)."""
    if not any(t.device.type == "cuda" for n in gm.graph.nodes for t in _meta_tensors(n)):
        return False
    from megakittens import gpu  # noqa: PLC0415
    return gpu.available()[0] and profile.name == "h200"


def _unit_reason(unit: Any, profile: Any, options: Options, device_bodies: bool) -> str:
    """"" when the op's unit graph traces and schedules (and has device bodies if asked), else why not."""
    try:
        program = _C.schedule(_C.trace(unit, fuse=options.fuse), profile, cluster_size=options.cluster_size)
    except _C.CompileError as e:
        return str(e)
    if device_bodies:
        missing = _C.gpu_missing_bodies(program)
        if missing:
            return missing[0][1]
    return ""


def _supported_nodes(gm: torch.fx.GraphModule, graph: Any, options: Options) -> tuple[set, dict, list]:
    """(supported nodes, reason per unsupported op node, owner per node index) for ``gm``."""
    nodes = list(gm.graph.nodes)
    owner, units = _C.op_units(graph)
    profile = options.profile()
    device_bodies = _needs_device_bodies(gm, profile)
    if graph.is_backward:  # no op of a backward graph compiles: the tracer's one message says why
        try:
            _C.trace(graph, fuse=options.fuse)
            raise AssertionError("megakittens: internal: the tracer accepted a backward graph")
        except _C.CompileError as e:
            reason = {k: str(e) for k, _ in units}
    else:
        reason = {k: _unit_reason(unit, profile, options, device_bodies) for k, unit in units}
    supported: set = set()
    why: dict = {}
    for k, n in enumerate(nodes):
        o = owner[k]
        if o == k:
            if reason[k]:
                why[n] = reason[k]
            else:
                supported.add(n)
        elif o >= 0:  # fused into op o: compiles exactly when o does
            if reason[o]:
                why[n] = f"fused into '{nodes[o].name}', which cannot be compiled: {reason[o]}"
            else:
                supported.add(n)
        elif (o == _C.OP_UNIT_NOT_OP and n.op in ("call_function", "call_method", "call_module")
              and fx_export.target_name(n) != "getitem"):  # an unread output of a multi-output op
            why[n] = f"node '{n.name}' ({fx_export.target_name(n)}): the output does not depend on it (a side effect)"
    # A getitem goes with the op it picks from; a view with the ops that read it (their unit graphs
    # folded it), so it is supported when any reader is: users come later, hence the reverse walk.
    for k, n in enumerate(nodes):
        if owner[k] == _C.OP_UNIT_FOLDED and fx_export.target_name(n) == "getitem":
            if n.args[0] in supported:
                supported.add(n)
    for k in reversed(range(len(nodes))):
        n = nodes[k]
        if owner[k] == _C.OP_UNIT_FOLDED and fx_export.target_name(n) != "getitem":
            if any(u in supported for u in n.users):
                supported.add(n)
    return supported, why, owner


def _whole_graph(gm: torch.fx.GraphModule, options: Options, name: str, is_backward: bool,
                 compile_part: Callable) -> Optional[tuple]:
    """(runnable, Partitioning) with one megakernel for all of ``gm`` when the whole graph compiles (with
    device bodies for every op when it will run on the megakernel), else None. Tried first: the per-op
    analysis judges each op alone, and an op that only compiles inside a fused pattern (repeat_kv's
    clone before SDPA) would split a model that compiles whole. When the megakernel needs device bodies,
    the graph is scheduled here to check them before ``compile_part`` schedules it again."""
    if is_backward:
        return None
    graph = fx_export.export_graph(gm, name, is_backward, contiguous_inputs=True)
    profile = options.profile()
    if _needs_device_bodies(gm, profile):
        try:
            program = _C.schedule(_C.trace(graph, fuse=options.fuse), profile, cluster_size=options.cluster_size)
        except _C.CompileError:
            return None
        if _C.gpu_missing_bodies(program):
            return None
    try:
        run = compile_part(gm, graph, name)
    except _C.CompileError:  # then the partitions decide
        return None
    result = Partitioning(name)
    result.megakernels.append((name, [n.name for n in gm.graph.nodes if n.op == "call_function"]))
    return (run if run is not None else gm), result


def partition(gm: torch.fx.GraphModule, options: Options, name: str, is_backward: bool,
              compile_part: Callable[[torch.fx.GraphModule, Any, str], Callable]
              ) -> tuple[torch.fx.GraphModule, Partitioning]:
    """Split ``gm`` (in place) into megakernel partitions and eager ops; returns the graph module to run
    and the partitioning. ``compile_part(submodule, fx_graph, program_name)`` compiles one partition and
    returns the callable that replaces it (args -> list of outputs), or None to leave it eager; a
    CompileError from it leaves that partition eager with a RuntimeWarning."""
    gm.graph.eliminate_dead_code()
    gm.recompile()
    whole = _whole_graph(gm, options, name, is_backward, compile_part)
    if whole is not None:
        return whole
    graph = fx_export.export_graph(gm, name, is_backward)
    supported, why, owner = _supported_nodes(gm, graph, options)
    index = {n: k for k, n in enumerate(gm.graph.nodes)}

    def is_op(n: torch.fx.Node) -> bool:
        return owner[index[n]] >= 0

    partitioner = CapabilityBasedPartitioner(gm, create_op_support(lambda _, n: n in supported),
                                             allows_single_node_partition=True)
    # Partitions of views alone compute nothing: their views run eagerly (free). Graph order, so that
    # megakernel_0 runs first.
    parts = [p for p in partitioner.propose_partitions() if any(is_op(n) for n in p.nodes)]
    parts.sort(key=lambda p: min(index[n] for n in p.nodes))
    result = Partitioning(name)
    result.eager = [(n.name, fx_export.target_name(n), reason) for n, reason in why.items()]
    op_names = [[n.name for n in sorted(p.nodes, key=index.get) if is_op(n)] for p in parts]
    if not parts:
        return gm, result

    fused = fuse_by_partitions(gm, [p.nodes for p in parts], prefix=SUBMODULE_PREFIX, always_return_tuple=True)
    fused.recompile()
    for i, ops in enumerate(op_names):
        _compile_piece(fused, f"{SUBMODULE_PREFIX}{i}", f"{name}_part{i}", ops, is_backward, compile_part, result)
    return fused, result


# The scheduler's message for a graph with more tensor slots than an instruction can name
# (src/schedule/phase2_slots.cpp): such a partition is split in two instead of left eager.
_TOO_MANY_SLOTS = "tensor slots, at most"


def _compile_piece(owner: torch.fx.GraphModule, attr: str, program_name: str, ops: list, is_backward: bool,
                   compile_part: Callable, result: Partitioning, depth: int = 0) -> None:
    """Compiles submodule ``owner.<attr>`` and puts its megakernel in its place. A partition that needs
    more tensor slots than a program has (many small layers) is split in graph order into two halves, each
    compiled the same way (``<program_name>_a`` / ``_b``); any other CompileError leaves it eager."""
    sub = getattr(owner, attr)
    try:
        run = compile_part(sub, fx_export.export_graph(sub, program_name, is_backward, contiguous_inputs=True),
                           program_name)
    except _C.CompileError as e:
        calls = [n for n in sub.graph.nodes if n.op == "call_function"]
        if _TOO_MANY_SLOTS in str(e) and len(calls) > 1 and depth < 16:
            # A prefix of a partition in graph order and the rest are both cycle-free; a getitem stays with
            # the op it picks from.
            first = set(calls[:len(calls) // 2])
            for n in calls[len(calls) // 2:]:
                if fx_export.target_name(n) == "getitem" and n.args[0] in first:
                    first.add(n)
            halves = [[n for n in calls if n in first], [n for n in calls if n not in first]]
            split = fuse_by_partitions(sub, [dict.fromkeys(h) for h in halves], prefix=SUBMODULE_PREFIX,
                                       always_return_tuple=True)
            split.recompile()
            for j, half in enumerate(halves):
                names = [n.name for n in half if fx_export.target_name(n) != "getitem"]
                _compile_piece(split, f"{SUBMODULE_PREFIX}{j}", f"{program_name}_{'ab'[j]}", names, is_backward,
                               compile_part, result, depth + 1)
            setattr(owner, attr, split)
            return
        result.failed.append((program_name, ops, str(e)))
        warnings.warn(f"megakittens: fallback='eager': partition '{program_name}' did not compile as a "
                      f"megakernel ({e}); its {len(ops)} op(s) run eagerly", RuntimeWarning, stacklevel=3)
        return
    result.megakernels.append((program_name, ops))
    if run is not None:
        vals = [n.meta.get("val") for n in sub.graph.nodes if n.op == "placeholder"]
        floats = [(k, v.dtype) for k, v in enumerate(vals) if isinstance(v, torch.Tensor) and v.dtype.is_floating_point]
        setattr(owner, attr, _Megakernel(run, floats))
