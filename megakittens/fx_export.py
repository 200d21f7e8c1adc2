"""Serialize an aten FX GraphModule into ``_C.FxGraph`` (docs/core-api.md, "FX graph hand-over").

Each node becomes ``(name, op, target, args, kwargs, outputs, multi_output)``: node arguments become
``NodeRef(index)``, plain constants pass through, anything else (dtype, device, layout, memory format,
OpOverload) is passed as its ``str()``; outputs come from ``node.meta["val"]``.
"""
from __future__ import annotations

import operator
from typing import Any, Callable, Optional

import torch
import torch.fx
from torch.fx.experimental.symbolic_shapes import free_unbacked_symbols, is_concrete_int

NodeTuple = tuple  # (name, op, target, args, kwargs, outputs, multi_output)


def target_name(node: torch.fx.Node) -> str:
    """The target string the tracer keys on: "aten.mm.default", "getitem", "auto_functionalized_v2", ..."""
    t = node.target
    if isinstance(t, str):  # placeholder name, get_attr path, method or module name, "output"
        return t
    if t is operator.getitem:
        return "getitem"
    if isinstance(t, torch._ops.OpOverload):
        return str(t)
    if isinstance(t, torch._ops.HigherOrderOperator):
        return t.name()  # "auto_functionalized_v2"
    return getattr(t, "__name__", str(t))


def _static(dims: Any, node: torch.fx.Node) -> tuple:
    """Plain ints of a shape/stride; raises CompileError for a symbolic (dynamic) size."""
    out = []
    for d in dims:
        if not is_concrete_int(d):
            from megakittens import _C
            if free_unbacked_symbols(d):  # a size only the data decides (x[mask], nonzero, unique)
                raise _C.CompileError(
                    f"node '{node.name}' ({target_name(node)}): its shape depends on the values of its input "
                    f"(size {d} in {list(dims)}), and a megakernel's tensors have static shapes; compute with a "
                    f"fixed shape instead (torch.where(mask, x, 0) rather than x[mask])")
            raise _C.CompileError(
                f"node '{node.name}' ({target_name(node)}): megakittens compiles static shapes only, got the "
                f"symbolic size {d} in {list(dims)}; use megakittens.compile, or torch.compile(..., dynamic=False)")
        out.append(int(d))
    return tuple(out)


def _tensor_record(v: Any, node: torch.fx.Node) -> Optional[tuple]:
    """(shape, stride, dtype, device) of a (fake) tensor; None for a non-tensor output. Zero-size tensors are
    recorded: the tracer rejects the ops that would compute or read one (src/trace/tracer.cpp to_meta), so
    that fallback="eager" runs just those eagerly and an unused one (SDPA's logsumexp) costs nothing."""
    if isinstance(v, torch.Tensor):
        shape = _static(v.shape, node)
        return (shape, _static(v.stride(), node), str(v.dtype).removeprefix("torch."), str(v.device))
    return None


def _meta_value(node: torch.fx.Node, gm: Optional[torch.nn.Module]) -> Any:
    meta = node.meta
    if "val" in meta:
        return meta["val"]
    if "example_value" in meta:
        return meta["example_value"]
    if node.op == "get_attr" and gm is not None:  # constants may carry no meta: read the attribute
        obj = gm
        for part in node.target.split("."):
            obj = getattr(obj, part)
        return obj
    return None


def encode_outputs(node: torch.fx.Node, gm: Optional[torch.nn.Module] = None) -> tuple[list, bool]:
    """One record per tensor output of meta["val"] (None for non-tensors) and whether it is a tuple/list."""
    if node.op == "output":
        return [], False
    val = _meta_value(node, gm)
    if isinstance(val, (tuple, list)):
        return [_tensor_record(v, node) for v in val], True
    return [_tensor_record(val, node)], False


def _contiguous(record: Optional[tuple]) -> Optional[tuple]:
    if record is None:
        return None
    shape, _, dtype, device = record
    stride, s = [], 1
    for d in reversed(shape):
        stride.append(s)
        s *= d
    return shape, tuple(reversed(stride)), dtype, device


def encode_nodes(graph: torch.fx.Graph, gm: Optional[torch.nn.Module] = None,
                 node_ref: Optional[Callable[[int], Any]] = None, contiguous_inputs: bool = False) -> list[NodeTuple]:
    """The node tuples of ``graph`` in FX order. ``node_ref`` builds a node reference (default ``_C.NodeRef``;
    tests pass a stand-in to check the encoding without the extension). ``contiguous_inputs``: record
    placeholders with contiguous strides (the dispatcher passes a contiguous copy of a strided argument)."""
    if node_ref is None:
        from megakittens import _C
        node_ref = _C.NodeRef
    index = {n: i for i, n in enumerate(graph.nodes)}

    def arg(a: Any) -> Any:
        if isinstance(a, torch.fx.Node):
            return node_ref(index[a])
        if a is None or isinstance(a, (bool, int, float, str)):
            return a
        if isinstance(a, tuple):
            return tuple(arg(x) for x in a)
        if isinstance(a, list):  # also fx's immutable_list
            return [arg(x) for x in a]
        return str(a)  # dtype, device, layout, memory format, OpOverload, ...

    nodes = []
    for n in graph.nodes:
        outputs, multi = encode_outputs(n, gm)
        if contiguous_inputs and n.op == "placeholder":
            outputs = [_contiguous(o) for o in outputs]
        nodes.append((n.name, n.op, target_name(n), [arg(a) for a in n.args],
                      {k: arg(v) for k, v in n.kwargs.items()}, outputs, multi))
    return nodes


def export_graph(gm: torch.fx.GraphModule, name: str, is_backward: bool = False, contiguous_inputs: bool = False):
    """``_C.FxGraph`` of an aten-level GraphModule (AOTAutograd's forward or backward graph, or a
    partition of one: ``contiguous_inputs``, see ``encode_nodes``)."""
    from megakittens import _C
    return _C.FxGraph.from_nodes(name, encode_nodes(gm.graph, gm, contiguous_inputs=contiguous_inputs), is_backward)
