"""FX passes over the aten graph: the rank-5 tensors models build, rewritten in four dims.

The compiler's tensors have at most 4 dims (src/ir/tensor.h, seed §02), so a rank-5 view or copy cannot be
traced. Two forms are common, and both are exact in four dims:

* ``flatten_repeat_kv``: Hugging Face's ``repeat_kv`` (``unsqueeze(x, 2)`` -> rank-5 ``expand`` -> ``clone``
  -> ``view``) read by something other than SDPA (src/trace/fuse_repeat_kv.cpp drops the ones SDPA reads,
  and ``eager_attention.fuse_eager_attention`` those of a written-out attention): the same copy made of x
  viewed (B, Hk, 1, S D) and expanded to (B, Hk, G, S D).
* ``select_from_rank5_views``: a rank-5 ``view`` whose readers each ``select`` one index of one dim that
  is not the last (BLOOM views its fused q / k / v projection as (B, S, H, 3, D) and selects q, k and v):
  the view with that dim merged into the next one, and each select a slice of the merged dim.
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


def select_from_rank5_views(gm: torch.fx.GraphModule) -> int:
    """Rewrite the rank-5 views read only through selects of one dim (module doc); returns how many."""
    count = 0
    for node in list(gm.graph.nodes):
        nv = val(node)
        if not (node.op == "call_function" and node.target in RESHAPES and nv is not None and nv.dim() == 5):
            continue
        users = list(node.users)
        dims = {u.args[1] % 5 for u in users if u.op == "call_function" and u.target is aten.select.int}
        if not users or len(dims) != 1 or any(u.target is not aten.select.int for u in users):
            continue
        dim = dims.pop()
        if dim == 4:
            continue
        shape = list(nv.shape)
        inner = shape[dim + 1]
        merged = shape[:dim] + [shape[dim] * inner] + shape[dim + 2:]
        with gm.graph.inserting_before(node), fake_mode(nv):
            flat = emit(gm, node.target, (node.args[0], merged))
        for u in users:
            i = u.args[2] % shape[dim]
            with gm.graph.inserting_before(u), fake_mode(nv):
                part = emit(gm, aten.slice.Tensor, (flat, dim, i * inner, (i + 1) * inner))
            u.replace_all_uses_with(part)
        count += 1
    return finish(gm, count)
