"""FX passes over the aten graph: the rank-5 tensors models build, rewritten in four dims.

The compiler's tensors have at most 4 dims (src/ir/tensor.h, seed §02), so a rank-5 view or copy cannot be
traced. Two forms are common, and both are exact in four dims:

* ``flatten_repeat_kv``: Hugging Face's ``repeat_kv`` (``unsqueeze(x, 2)`` -> rank-5 ``expand`` -> ``clone``
  -> ``view``) read by something other than SDPA (src/trace/fuse_repeat_kv.cpp drops the ones SDPA reads,
  and ``eager_attention.fuse_eager_attention`` those of a written-out attention): the same copy made of x
  viewed (B, Hk, 1, S D) and expanded to (B, Hk, G, S D).
* ``select_from_rank5_views``: a rank-5 ``view`` whose readers each ``select`` one index of one dim that
  is not the last, directly or through one permute (BLOOM views its fused q / k / v projection as (B, S, H,
  3, D) and selects q, k and v; timm permutes (B, N, 3, H, D) to (3, B, H, N, D) and unbinds it),
  or copy a step-1 ``slice`` of it to 4 dims (Falcon's new decoder: (B, S, Hk, G + 2, D), the queries
  ``[..., :G, :]`` flattened to (B, S, Hk G, D), k and v the last two): the view with that dim merged into
  the next one, each select a slice of the merged dim, each slice copy a copy of the merged dim's slice.
* ``merge_high_rank_pointwise``: a pointwise op on rank-5+ tensors (torchvision's Swin adds its window mask,
  a (1, nW, 1, N, N) constant, to the scores viewed (B, nW, H, N, N)): adjacent dims that every operand
  either spans whole or broadcasts whole are merged until 4 are left, the operands viewed so, the op run in
  4 dims and its result viewed back (those views fold with their neighbours: ``flatten_high_rank_copies``).
* ``flatten_high_rank_copies``: a contiguous copy, viewed back to 4 dims or fewer, of a chain of views (view,
  unsqueeze, expand, permute, transpose) through 5 dims or more of a contiguous 4-D tensor (Swin's window
  partition ``x.view(B, H/w, w, W/w, w, C).permute(0, 1, 3, 2, 4, 5).contiguous().view(-1, w, w, C)``, a mask
  unsqueezed and expanded over the windows): the chain's strided view with its size-1 dims dropped and the
  dims that walk memory together merged, which leaves 4 or fewer, rebuilt as one view of the source in memory
  order, a permute, and an expand for broadcast dims, then the same copy and view. More than 4 merged dims
  without a broadcast (torchvision MaxViT's window partition) are copied as a chain of 4-D permute copies. A
  view of such a chain that lays the source out unchanged (a permute of size-1 dims, no copy) is one view of
  the source.
"""
from __future__ import annotations

import math
import operator

import torch
import torch.fx

from megakittens.fx_nodes import call, emit, fake_mode, finish, RESHAPES, val
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


def _selects_through_permute(gm: torch.fx.GraphModule, node: torch.fx.Node) -> bool:
    """A rank-5 view read by one permute whose readers all select one dim of it (timm's attention:
    ``qkv.reshape(B, N, 3, H, D).permute(2, 0, 3, 1, 4).unbind(0)``): each select is the select of the view's
    dim k = perm[d] (a slice of k merged into k + 1, as ``select_from_rank5_views``), then the permute of the
    remaining dims. Whether it was rewritten."""
    nv, users = val(node), list(node.users)
    if len(users) != 1 or not (users[0].op == "call_function" and users[0].target is aten.permute.default):
        return False
    perm = [p % 5 for p in users[0].args[1]]
    sels = list(users[0].users)
    if not sels or any(s.op != "call_function" or s.target is not aten.select.int for s in sels) or \
            len({s.args[1] % 5 for s in sels}) != 1:
        return False
    k = perm[sels[0].args[1] % 5]
    if k == 4:
        return False
    shape = list(nv.shape)
    inner = shape[k + 1]
    rest = [p - (p > k) for p in perm if p != k]
    with gm.graph.inserting_before(node), fake_mode(nv):
        flat = emit(gm, node.target, (node.args[0], shape[:k] + [shape[k] * inner] + shape[k + 2:]))
    for s in sels:
        i = s.args[2] % shape[k]
        with gm.graph.inserting_before(s), fake_mode(nv):
            y = emit(gm, aten.slice.Tensor, (flat, k, i * inner, (i + 1) * inner))
            if rest != list(range(4)):
                y = emit(gm, aten.permute.default, (y, rest))
        s.replace_all_uses_with(y)
    return True


def select_from_rank5_views(gm: torch.fx.GraphModule) -> int:
    """Rewrite the rank-5 views read only through selects of one dim, or copies of a slice of it, directly or
    through one permute (module doc); returns how many."""
    count = 0
    for node in list(gm.graph.nodes):
        nv = val(node)
        if not (node.op == "call_function" and node.target in RESHAPES and nv is not None and nv.dim() == 5):
            continue
        if _selects_through_permute(gm, node):
            count += 1
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


_CHAIN = (aten.view.default, aten._unsafe_view.default, aten.reshape.default, aten.unsqueeze.default,
          aten.squeeze.dim, aten.squeeze.default, aten.expand.default, aten.permute.default, aten.transpose.int)


def _merged(sizes, strides) -> "list[tuple[int, int]]":
    """(size, stride) of a strided view's dims with size-1 dims dropped and each dim merged into the one before
    it where the pair walks memory as one dim (stride[i] = stride[i + 1] * size[i + 1]; broadcast pairs too)."""
    dims = []
    for n, st in zip(sizes, strides):
        if n == 1:
            continue
        if dims and dims[-1][1] == st * n:
            dims[-1] = (dims[-1][0] * n, st)
        else:
            dims.append((n, st))
    return dims


def _as_4d_copy(gm: torch.fx.GraphModule, src: torch.fx.Node, view: torch.Tensor, shape: list):
    """Nodes computing ``view`` (a strided view of the contiguous ``src``, any rank) copied contiguously and
    viewed as ``shape``, through tensors of at most 4 dims; None where its merged dims do not tile ``src``
    exactly, or are more than 4 with a broadcast among them (module doc)."""
    y = _as_4d_view(gm, src, view)
    if y is None:
        y = _permuted_copy(gm, src, view)
        if y is None:
            return None
    else:
        y = emit(gm, aten.clone.default, (y,), {"memory_format": torch.contiguous_format})
    return emit(gm, aten.view.default, (y, shape))


def _memory_order(src: torch.fx.Node, view: torch.Tensor):
    """(dims, real): ``view``'s merged dims (``_merged``) and its non-broadcast ones as (stride, index) in memory
    order, outermost first, when those tile the contiguous ``src`` exactly; else None."""
    sv = val(src)
    dims = _merged(view.shape, view.stride())
    if view.storage_offset() != sv.storage_offset():
        return None
    real = sorted((st, i) for i, (n, st) in enumerate(dims) if st != 0)[::-1]
    expect = 1
    for st, i in reversed(real):
        if st != expect:
            return None
        expect *= dims[i][0]
    return (dims, real) if expect == sv.numel() else None


def _permuted_copy(gm: torch.fx.GraphModule, src: torch.fx.Node, view: torch.Tensor):
    """A contiguous copy of ``view``, a permutation of more than 4 merged dims of ``src`` without broadcast
    (torchvision MaxViT's window partition: (B, C, H/P, P, W/P, P) permuted (0, 2, 4, 3, 5, 1)), as a chain of
    4-D copies: each moves the run of dims that comes next in the view's order in front of the dims before it,
    a (outer, before, run, inner) permute (0, 2, 1, 3). None for a broadcast view or one that does not tile."""
    found = _memory_order(src, view)
    if found is None or any(st == 0 for _, st in found[0]):
        return None
    dims, real = found
    cur = [i for _, i in real]  # the view's dims in memory order
    size = lambda ds: [dims[d][0] for d in ds]  # noqa: E731
    prod = lambda ds: math.prod(size(ds))  # noqa: E731
    y = src
    for i in range(len(cur)):
        if cur[i] == i:
            continue
        j = cur.index(i)
        run = 1
        while j + run < len(cur) and i + run < len(cur) and cur[j + run] == i + run:
            run += 1
        block = [prod(cur[:i]), prod(cur[i:j]), prod(cur[j:j + run]), prod(cur[j + run:])]
        y = emit(gm, aten.view.default, (y, block))
        y = emit(gm, aten.permute.default, (y, [0, 2, 1, 3]))
        y = emit(gm, aten.clone.default, (y,), {"memory_format": torch.contiguous_format})
        cur = cur[:i] + cur[j:j + run] + cur[i:j] + cur[j + run:]
    return y  # the view's elements in its order (4-D): the caller views it to its shape


def _sliced_view(gm: torch.fx.GraphModule, src: torch.fx.Node, view: torch.Tensor):
    """``view`` (no broadcast) as a view of the contiguous ``src`` in memory order, slices where its merged dims
    leave gaps, and a permute: a rank-5 view of a ``chunk`` of ``src``'s last dim (torchvision MaxViT's q / k / v:
    (B, G, P, 3 H Dh) chunked, viewed (B, G, P, H, Dh) and permuted) is ``src`` viewed (B G, P, 3 H, Dh), sliced
    along 3 H and permuted. At most 4 merged dims, innermost stride 1; else None."""
    sv = val(src)
    dims = _merged(view.shape, view.stride())
    real = sorted(((st, i) for i, (n, st) in enumerate(dims)), reverse=True)
    if len(dims) > 4 or any(st == 0 for _, st in dims) or real[-1][0] != 1:
        return None
    sizes = []  # src's extent of each memory-order dim
    for k, (st, i) in enumerate(real):
        outer = real[k - 1][0] if k else sv.numel()
        if outer % st:
            return None
        sizes.append(outer // st)
    rel, starts = view.storage_offset() - sv.storage_offset(), []
    for k, (st, i) in enumerate(real):
        starts.append(rel // st if k == 0 else (rel // st) % sizes[k])
    if sum(a * st for a, (st, _) in zip(starts, real)) != rel or \
            any(a + dims[i][0] > m for a, (_, i), m in zip(starts, real, sizes)):
        return None
    y = emit(gm, aten.view.default, (src, sizes))
    for k, (a, (_, i)) in enumerate(zip(starts, real)):
        if (a, dims[i][0]) != (0, sizes[k]):
            y = emit(gm, aten.slice.Tensor, (y, k, a, a + dims[i][0]))
    order = [i for _, i in real]
    perm = sorted(range(len(order)), key=lambda k: order[k])
    return y if perm == list(range(len(perm))) else emit(gm, aten.permute.default, (y, perm))


def _as_4d_view(gm: torch.fx.GraphModule, src: torch.fx.Node, view: torch.Tensor):
    """``view``'s merged dims (``_merged``) as a view of the contiguous ``src`` in memory order, a permute and an
    expand for broadcast dims (or slices of it where they leave gaps: ``_sliced_view``): at most 4 dims, or None
    (``_as_4d_copy``)."""
    dims = _merged(view.shape, view.stride())
    if dims and all(st != 0 for _, st in dims):
        return _sliced_view(gm, src, view)  # no broadcast: tiling src is the case without slices
    found = _memory_order(src, view)
    if found is None or len(found[0]) > 4:
        return None
    dims, real = found
    y = emit(gm, aten.view.default, (src, [dims[i][0] for _, i in real]))
    order = [i for _, i in real]
    perm = sorted(range(len(order)), key=lambda k: order[k])  # memory order -> the view's order
    if perm != list(range(len(perm))):
        y = emit(gm, aten.permute.default, (y, perm))
    for i, (n, st) in enumerate(dims):  # broadcast dims, in place
        if st == 0:
            y = emit(gm, aten.unsqueeze.default, (y, i))
    if any(st == 0 for _, st in dims):
        y = emit(gm, aten.expand.default, (y, [n for n, _ in dims]))
    return y


def _logical_view(gm: torch.fx.GraphModule, src: torch.fx.Node, x: torch.fx.Node):
    """(a contiguous node holding ``src``'s elements, ``x``'s view of it), ``x`` reached from ``src`` by the steps
    ``_source`` takes, or None. The view is replayed on the contiguous tensor instead of read from ``x``'s meta:
    views are logical, while meta strides are eager's layout, which the rewrites here do not keep (a rewritten
    view's readers would read stale strides). A ``src`` whose meta is not contiguous (a pointwise op keeps a
    permuted input's layout: torchvision MaxViT scales its permuted k before the einsum copies it through 6 dims)
    is copied contiguously first: the megakernel stores it so anyway (an identity pass), and an eager partition
    (fallback="eager") then views a real contiguous tensor."""
    chain = []
    while x is not src:
        chain.append(x)
        x = x.args[0].args[0] if call(x, operator.getitem) else x.args[0]
    c = src if val(src).is_contiguous() else \
        emit(gm, aten.clone.default, (src,), {"memory_format": torch.contiguous_format})
    t = val(c)
    try:
        for n in reversed(chain):
            if call(n, operator.getitem):
                t = n.args[0].target(t, *n.args[0].args[1:], **n.args[0].kwargs)[n.args[1]]
            else:
                t = n.target(t, *n.args[1:], **n.kwargs)
    except (RuntimeError, ValueError):  # a fake tensor's impossible view raises ValueError (Mamba2's 6-D views)
        _unused(gm, c, src)
        return None
    return c, t


def _unused(gm: torch.fx.GraphModule, src: torch.fx.Node, original: torch.fx.Node) -> None:
    """Drops the contiguous copy ``_logical_view`` made of ``original`` when the rewrite did not happen."""
    if src is not original and not src.users:
        gm.graph.erase_node(src)


def _rank4_end_of_rank5_chain(gm: torch.fx.GraphModule, w: torch.fx.Node) -> bool:
    """A view op back to 4 dims or fewer at the end of a view chain through 5 (nn.MultiheadAttention's packed
    projection: ``proj.unflatten(-1, (3, E)).unsqueeze(0).transpose(0, -2).squeeze(-2)``, a permute of the 4-D
    view): ``w`` becomes its merged dims as a view of the source (``_as_4d_view``), viewed to w's shape. A
    broadcast (an expand through 5 dims) is left alone: the view would need a copy. Whether it was rewritten."""
    if not (w.op == "call_function" and w.target in _CHAIN and isinstance(w.args[0], torch.fx.Node)):
        return False
    wv, xv = val(w), val(w.args[0])
    if wv is None or xv is None or wv.dim() > 4 or xv.dim() <= 4 or 0 in wv.stride():
        return False
    src = _source(w.args[0])
    sv = val(src)
    if not isinstance(src, torch.fx.Node) or sv is None or sv.dim() > 4:
        return False
    with gm.graph.inserting_before(w), fake_mode(sv):
        found = _logical_view(gm, src, w)
        if found is None:
            return False
        y = _as_4d_view(gm, *found)
        if y is None:
            _unused(gm, found[0], src)
            return False
        if list(val(y).shape) != list(wv.shape):
            y = emit(gm, aten.view.default, (y, list(wv.shape)))
    w.replace_all_uses_with(y)
    return True


def _source(x: torch.fx.Node) -> torch.fx.Node:
    """The first contiguous node of 4 dims or fewer up the chain of views that made the rank-5+ ``x`` (past
    strided 4-D views in between: XLNet's einsums permute a product's rank-5 view, view it in 4 dims, and
    unsqueeze it again)."""
    while val(x) is not None and (val(x).dim() > 4 or not val(x).is_contiguous()):
        if x.op == "call_function" and x.target in _CHAIN + (aten.slice.Tensor,) and isinstance(x.args[0], torch.fx.Node):
            x = x.args[0]  # a step-1 slice (torch.chunk's, views.py's) too: _sliced_view reads it
        elif call(x, operator.getitem) and call(x.args[0], aten.split.Tensor, aten.split_with_sizes.default):
            x = x.args[0].args[0]
        else:
            break
    return x


def _view_of_rank5_view(gm: torch.fx.GraphModule, w: torch.fx.Node) -> bool:
    """A view to 4 dims or fewer of a rank-5+ view chain that lays the whole contiguous source out as it is
    (Swin's window partition when one window covers the map: the permute moves only size-1 dims, so
    ``.contiguous()`` copies nothing): ``w`` becomes one view of the source. Whether it was rewritten."""
    if not (w.op == "call_function" and w.target in RESHAPES and isinstance(w.args[0], torch.fx.Node)):
        return False
    wv, xv = val(w), val(w.args[0])
    if wv is None or xv is None or wv.dim() > 4 or xv.dim() <= 4 or _unrepeat_kv(w) is not w:
        return False
    src = _source(w.args[0])
    sv = val(src)
    if not isinstance(src, torch.fx.Node) or sv is None or sv.dim() > 4:
        return False
    with gm.graph.inserting_before(w), fake_mode(sv):
        found = _logical_view(gm, src, w)
        if found is None:
            return False
        c, wv = found
        if not wv.is_contiguous() or wv.numel() != val(c).numel() or wv.storage_offset() != val(c).storage_offset():
            _unused(gm, c, src)
            return False
        w.replace_all_uses_with(emit(gm, aten.view.default, (c, list(wv.shape))))
    return True


def flatten_high_rank_copies(gm: torch.fx.GraphModule) -> int:
    """Rewrite each copy of a rank-5+ view chain (module doc) through tensors of at most 4 dims; returns how
    many."""
    count = 0
    for node in list(gm.graph.nodes):
        if _view_of_rank5_view(gm, node) or _rank4_end_of_rank5_chain(gm, node):
            count += 1
            continue
        if not (node.op == "call_function" and node.target is aten.clone.default and len(node.users) == 1 and
                node.kwargs.get("memory_format", torch.contiguous_format) == torch.contiguous_format):
            continue
        w, x = next(iter(node.users)), node.args[0]
        xv, wv = val(x), val(w)
        if not (w.op == "call_function" and w.target in RESHAPES and wv is not None and wv.dim() <= 4 and
                xv is not None and xv.dim() > 4) or _unrepeat_kv(w) is not w:
            continue  # repeat_kv: the GQA of the SDPA that reads it (or flatten_repeat_kv)
        src = _source(x)
        sv = val(src)
        if not isinstance(src, torch.fx.Node) or sv is None or sv.dim() > 4:
            continue
        with gm.graph.inserting_before(w), fake_mode(sv):
            found = _logical_view(gm, src, x)
            out = None if found is None else _as_4d_copy(gm, *found, list(wv.shape))
        if out is None:
            if found is not None:
                _unused(gm, found[0], src)
            continue
        w.replace_all_uses_with(out)
        count += 1
    return finish(gm, count)


def _pointwise_groups(out_shape: list, operands: list, keep_last: bool = False) -> "list[list[int]] | None":
    """Groups of adjacent dims of ``out_shape`` (rank > 4) to merge, at most 4, such that each operand (a tensor
    aligned to the right, broadcast to ``out_shape``) spans every dim of a group or broadcasts every one (dims
    of size 1 go with either) and can be viewed so (``_views_as``); ``keep_last``: the last dim stays alone (a
    row op's). None when no such grouping exists. Merges from the last dims first."""
    r = len(out_shape)

    def fits(group):
        for v in operands:
            sh = [1] * (r - v.dim()) + list(v.shape)
            if len({sh[d] == out_shape[d] for d in group if out_shape[d] != 1}) > 1:
                return False
        return all(_views_as(v, [group], r) for v in operands)

    groups = [[d] for d in range(r)]
    while len(groups) > 4:
        last = len(groups) - (3 if keep_last else 2)
        for i in range(last, -1, -1):
            if fits(groups[i] + groups[i + 1]):
                groups[i:i + 2] = [groups[i] + groups[i + 1]]
                break
        else:
            return None
    return groups


def _views_as(v: torch.Tensor, groups: list, r: int) -> bool:
    """Whether ``v`` (aligned right to rank ``r``) can be viewed with each group of dims merged: within a group
    its dims of size > 1 walk memory as one."""
    sizes, strides = [1] * (r - v.dim()) + list(v.shape), [0] * (r - v.dim()) + list(v.stride())
    for g in groups:
        dims = [d for d in g if sizes[d] != 1]
        if any(strides[a] != strides[b] * sizes[b] for a, b in zip(dims, dims[1:])):
            return False
    return True


def _row_op(node: torch.fx.Node, rank: int) -> bool:
    """A softmax over the last dim (megakittens' own, over the last dim always, or aten's): merged like a pointwise
    op with the last dim kept alone."""
    if node.target is torch.ops.megakittens.softmax.default:
        return True
    return node.target in (aten._softmax.default, aten._log_softmax.default) and node.args[1] in (-1, rank - 1)


def merge_high_rank_pointwise(gm: torch.fx.GraphModule) -> int:
    """Rewrite each pointwise op (or softmax over the last dim) whose result has more than 4 dims in 4 (module
    doc); returns how many."""
    count, made = 0, set()  # made: the views back to rank 5 this pass emitted
    for node in list(gm.graph.nodes):
        out = val(node)
        if not (node.op == "call_function" and isinstance(node.target, torch._ops.OpOverload) and
                out is not None and out.dim() > 4 and node.target is not aten.clone.default):
            continue  # a clone of a rank-5 view: flatten_repeat_kv / flatten_high_rank_copies
        row = _row_op(node, out.dim())
        if not (row or torch.Tag.pointwise in node.target.tags or node.target is aten._to_copy.default):
            continue
        tensors = [a for a in node.args if val(a) is not None]
        if any(isinstance(v, (list, tuple)) for v in node.args) or any(val(a) is not None for a in node.kwargs.values()):
            continue
        groups = _pointwise_groups(list(out.shape), [val(a) for a in tensors], keep_last=row)
        if groups is None:
            continue
        r = out.dim()

        def merged(shape):
            sh = [1] * (r - len(shape)) + list(shape)
            return [math.prod(sh[d] for d in g) for g in groups]

        def operand(a):
            if val(a) is None:
                return a
            shape = merged(val(a).shape)
            if a in made and list(val(a.args[0]).shape) == shape:
                return a.args[0]  # the 4-D result of an op merged before: no round trip through 5 dims
            return emit(gm, aten.view.default, (a, shape))

        with gm.graph.inserting_before(node), fake_mode(out):
            args = [operand(a) for a in node.args]
            if row and node.target is not torch.ops.megakittens.softmax.default:
                args[1] = -1  # aten's softmax dim, in 4 dims
            y = emit(gm, node.target, args, node.kwargs)
            y = emit(gm, aten.view.default, (y, list(out.shape)))
        made.add(y)
        node.replace_all_uses_with(y)
        count += 1
    return finish(gm, count)
