"""FX passes over the aten graph: the rank-5 tensors models build, rewritten in four dims.

The compiler's tensors have at most 4 dims (src/ir/tensor.h, seed §02), so a rank-5 view or copy cannot be
traced. Two forms are common, and both are exact in four dims:

* ``flatten_repeat_kv``: Hugging Face's ``repeat_kv`` (``unsqueeze(x, 2)`` -> rank-5 ``expand`` -> ``clone``
  -> ``view``) read by something other than SDPA (src/trace/fuse_repeat_kv.cpp drops the ones SDPA reads,
  and ``eager_attention.fuse_eager_attention`` those of a written-out attention): the same copy made of x
  viewed (B, Hk, 1, S D) and expanded to (B, Hk, G, S D).
* ``select_from_rank5_views``: a rank-5 ``view`` whose readers each ``select`` one index of one dim that
  is not the last (BLOOM views its fused q / k / v projection as (B, S, H, 3, D) and selects q, k and v),
  or copy a step-1 ``slice`` of it to 4 dims (Falcon's new decoder: (B, S, Hk, G + 2, D), the queries
  ``[..., :G, :]`` flattened to (B, S, Hk G, D), k and v the last two): the view with that dim merged into
  the next one, each select a slice of the merged dim, each slice copy a copy of the merged dim's slice.
"""
from __future__ import annotations

import torch
import torch.fx

from megakittens.fx_nodes import emit, fake_mode, finish, RESHAPES, val
from megakittens.sdpa_math import _unrepeat_kv

aten = torch.ops.aten


def _is_sdpa(n: torch.fx.Node) -> bool:
    return n.op == "call_function" and "scaled_dot_product" in str(n.target)


def flatten_repeat_kv(gm: torch.fx.GraphModule) -> int:
    """Rewrite the rank-5 ``repeat_kv`` copies no SDPA reads (module doc) in four dims; returns how many."""
    count = 0
    for node in list(gm.graph.nodes):
        if not (node.op == "call_function" and node.target in RESHAPES):
            continue
        x = _unrepeat_kv(node)
        others = [u for u in node.users if not _is_sdpa(u)]
        if x is node or not others:
            continue
        xv, nv = val(x), val(node)
        b, hk, s, d = xv.shape
        g = nv.shape[1] // hk
        contiguous = {"memory_format": torch.contiguous_format}
        with gm.graph.inserting_before(node), fake_mode(xv):
            y = x if xv.is_contiguous() else emit(gm, aten.clone.default, (x,), contiguous)
            y = emit(gm, aten.view.default, (y, [b, hk, 1, s * d]))
            y = emit(gm, aten.expand.default, (y, [b, hk, g, s * d]))
            y = emit(gm, aten.clone.default, (y,), contiguous)
            y = emit(gm, aten.view.default, (y, [b, hk * g, s, d]))
        for u in others:
            u.replace_input_with(node, y)
        count += 1
    return finish(gm, count)


def _slice_copy(u: torch.fx.Node, size: int) -> "tuple[int, int, torch.fx.Node] | None":
    """(start, end, w) when ``u`` is a step-1 slice of a rank-5 view whose only reader is a contiguous clone
    whose only reader is the view ``w`` to 4 dims or fewer (Falcon's grouped queries: ``grouped[..., :-2, :]
    .flatten(-3, -2)``), else None."""
    if u.target is not aten.slice.Tensor or (len(u.args) > 4 and u.args[4] != 1) or len(u.users) != 1:
        return None
    c = next(iter(u.users))
    if not (c.op == "call_function" and c.target is aten.clone.default and len(c.users) == 1 and
            c.kwargs.get("memory_format", torch.contiguous_format) == torch.contiguous_format):
        return None
    w = next(iter(c.users))
    if not (w.op == "call_function" and w.target in RESHAPES and val(w) is not None and val(w).dim() <= 4):
        return None
    start = 0 if len(u.args) < 3 or u.args[2] is None else u.args[2]
    end = size if len(u.args) < 4 or u.args[3] is None else u.args[3]
    start, end = (min(max(v + size if v < 0 else v, 0), size) for v in (start, end))
    return (start, end, w) if start < end else None


def select_from_rank5_views(gm: torch.fx.GraphModule) -> int:
    """Rewrite the rank-5 views read only through selects of one dim, or copies of a slice of it (module doc);
    returns how many."""
    count = 0
    for node in list(gm.graph.nodes):
        nv = val(node)
        if not (node.op == "call_function" and node.target in RESHAPES and nv is not None and nv.dim() == 5):
            continue
        users = list(node.users)
        kinds = (aten.select.int, aten.slice.Tensor)
        dims = {u.args[1] % 5 for u in users if u.op == "call_function" and u.target in kinds}
        if not users or len(dims) != 1 or any(u.op != "call_function" or u.target not in kinds for u in users):
            continue
        dim = dims.pop()
        shape = list(nv.shape)
        if dim == 4 or any(u.target is aten.slice.Tensor and _slice_copy(u, shape[dim]) is None for u in users):
            continue
        inner = shape[dim + 1]
        merged = shape[:dim] + [shape[dim] * inner] + shape[dim + 2:]
        with gm.graph.inserting_before(node), fake_mode(nv):
            flat = emit(gm, node.target, (node.args[0], merged))
        for u in users:
            with gm.graph.inserting_before(u), fake_mode(nv):
                if u.target is aten.select.int:
                    i = u.args[2] % shape[dim]
                    u.replace_all_uses_with(emit(gm, aten.slice.Tensor, (flat, dim, i * inner, (i + 1) * inner)))
                    continue
                start, end, w = _slice_copy(u, shape[dim])
                part = emit(gm, aten.slice.Tensor, (flat, dim, start * inner, end * inner))
                part = emit(gm, aten.clone.default, (part,), {"memory_format": torch.contiguous_format})
                w.replace_all_uses_with(emit(gm, aten.view.default, (part, list(val(w).shape))))
        count += 1
    return finish(gm, count)
