"""Small helpers the FX passes over the aten graph share (megakittens/eager_attention.py, rank5.py)."""
from __future__ import annotations

import contextlib
from typing import Optional

import torch
import torch.fx
from torch._subclasses.fake_tensor import FakeTensor


aten = torch.ops.aten
RESHAPES = (aten.view.default, aten._unsafe_view.default, aten.reshape.default)  # a node viewed with another shape


def call(n, *targets) -> bool:
    """Whether ``n`` is a node calling one of ``targets``."""
    return isinstance(n, torch.fx.Node) and n.op == "call_function" and n.target in targets


def val(n) -> Optional[torch.Tensor]:
    """The (fake) tensor a node computes, from its meta, else None."""
    v = n.meta.get("val") if isinstance(n, torch.fx.Node) else None
    return v if isinstance(v, torch.Tensor) else None


def fake_mode(v: torch.Tensor):
    """The fake mode ``v`` belongs to, as a context (a null one for a real tensor)."""
    return torch._guards.detect_fake_mode([v]) or contextlib.nullcontext()


def as_fake(mode, values):
    """``values`` (any pytree) with each real tensor made a fake one of ``mode`` (a folded constant's val is a
    real tensor beside the graph's fake ones); unchanged when ``mode`` is None."""
    if mode is None:
        return values
    return torch.utils._pytree.tree_map_only(
        torch.Tensor, lambda t: t if isinstance(t, FakeTensor) else mode.from_tensor(t, static_shapes=True), values)


def emit(gm: torch.fx.GraphModule, target, args, kwargs=None) -> torch.fx.Node:
    """A call of ``target`` at the graph's insertion point, its meta["val"] computed from its inputs' (inside
    the inputs' fake mode: the caller enters it; real constants are faked in it)."""
    n = gm.graph.call_function(target, tuple(args), kwargs or {})
    vals, kw = torch.fx.node.map_arg((tuple(args), kwargs or {}), lambda a: a.meta["val"])
    vals, kw = as_fake(torch._guards.detect_fake_mode(), (vals, kw))  # the caller's mode
    n.meta["val"] = target(*vals, **kw)
    return n


def finish(gm: torch.fx.GraphModule, count: int) -> int:
    """After a pass that rewrote ``count`` places: drop what became unread, check and recompile."""
    if count:
        gm.graph.eliminate_dead_code()
        gm.graph.lint()
        gm.recompile()
    return count
