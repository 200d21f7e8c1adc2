"""FX passes over the aten graph: views written in forms the tracer does not take, as plain ones.

``as_strided_as_views``: ``as_strided(x, size, stride)`` of a contiguous x at offset 0 whose (size, stride) is
the contiguous layout of ``size`` (size-1 dims aside) is ``x.view(size)``. Functionalization writes some view
chains so (Swin's pooler: an adaptive average pool's squeezed output).

``step_slices_as_views``: slices with a step.

The compiler's views take every element of a dim's range (docs/ir.md); ``x[:, a::s]`` takes every s-th.
Swin's patch merging takes the four phases of a 2 x 2 grid, ``x[:, 0::2, 0::2, :]`` ... ``x[:, 1::2, 1::2, :]``,
and concatenates them. When the stepped dim d is not the last and it walks memory as one dim with the next
(``stride[d] == stride[d + 1] * size[d + 1]``: d and d + 1 of a contiguous tensor), d's size n splits as
(n / s, s) and the s phases merge with dim d + 1, so ``x[.., a::s, ..]`` is

    x.view(.., n / s, s * m, ..)[.., :, a * m:(a + 1) * m, ..]          (m = the size of dim d + 1)

a view and a unit-step slice of the same rank, exact (no element moves). Along the last dim (YOLO's Focus
``x[..., ::2, ::2]``, interleaved pairs) or one that does not merge with the next, d splits as (n / s, s) and
phase a is a ``select`` of the new dim: a strided view, which its reader reads through a Copy the tracer
inserts (docs/ir.md [Note: view copies]); tensors have at most 4 dims, so a 4-D x first merges two other
adjacent dims (a contiguous copy of x when none merge) and the result is viewed back. Any start, end and n:
the L picks lie in a window of L s elements at one phase (a step-1 slice first); when n < L s no window
holds them all and the last pick joins the others by a Cat. The step-2 slices of an interleaved RoPE's
``rotate_every_two`` stay as they are when fusion is on (``src/trace/fuse_rope.cpp`` reads them).
"""
from __future__ import annotations

import torch
import torch.fx

from megakittens.fx_nodes import RESHAPES, call, emit, fake_mode, finish, val

aten = torch.ops.aten


def _rotate_every_two(node: torch.fx.Node) -> bool:
    """Whether step slice ``node`` looks like one of rotate_every_two's, ``stack((-x[..., 1::2], x[..., ::2]), -1)``
    (or the cat of unsqueezed parts that megakittens/decompose.py makes of the stack) viewed as x and multiplied:
    the interleaved RoPE that src/trace/fuse_rope.cpp fuses."""
    x, dim, start, _, step = node.args[:5]
    if step != 2 or start not in (0, 1, None) or dim not in (-1, val(x).dim() - 1):
        return False
    only = lambda n: next(iter(n.users)) if n is not None and len(n.users) == 1 else None  # noqa: E731
    u = node
    for target in ((aten.neg.default,) if start == 1 else ()) + (aten.unsqueeze.default,):
        u = only(u) if call(only(u), target) else u
    join = only(u)
    if not (call(join, aten.stack.default, aten.cat.default) and val(join) is not None and len(join.args) == 2 and
            len(join.args[0]) == 2 and join.args[1] in (-1, val(join).dim() - 1)):
        return False
    pairs = only(join)  # viewed back to x's shape, (cast to fp32: Ernie4_5) times sin
    times = only(pairs) if not call(only(pairs), aten._to_copy.default) else only(only(pairs))
    return call(pairs, *RESHAPES) and call(times, aten.mul.Tensor) and \
        all(isinstance(a, torch.fx.Node) for a in times.args)


def _phase(gm: torch.fx.GraphModule, x: torch.fx.Node, d: int, s: int, a: int) -> torch.fx.Node:
    """x[.., a::s, ..] along dim d, whose size is a multiple of s (the module doc's views)."""
    xv = val(x)
    shape, r = list(xv.shape), xv.dim()
    n = shape[d] // s
    if d + 1 < r and xv.stride(d) == xv.stride(d + 1) * shape[d + 1]:  # the phases merge with dim d + 1
        m = shape[d + 1]
        y = emit(gm, aten.view.default, (x, shape[:d] + [n, s * m] + shape[d + 2:]))
        return emit(gm, aten.slice.Tensor, (y, d + 1, a * m, (a + 1) * m))
    groups = [[k] for k in shape]
    groups[d] = [n, s]
    merge = None
    if r == 4:  # d's split makes 5 dims: two others merge (x copied contiguous when no two do)
        merge = next((i for i in range(3) if d not in (i, i + 1) and xv.stride(i) == xv.stride(i + 1) * shape[i + 1]),
                     None)
        if merge is None:
            x = emit(gm, aten.clone.default, (x,), {"memory_format": torch.contiguous_format})
            merge = 0 if d >= 2 else 2
        groups[merge:merge + 2] = [[shape[merge] * shape[merge + 1]]]
    at = (d - 1 if merge is not None and merge < d else d)  # d's group after the merge
    y = emit(gm, aten.view.default, (x, [k for g in groups for k in g]))
    y = emit(gm, aten.select.int, (y, sum(len(g) for g in groups[:at]) + 1, a))
    if merge is not None:
        y = emit(gm, aten.view.default, (y, shape[:d] + [n] + shape[d + 1:]))
    return y


def _stepped(gm: torch.fx.GraphModule, x: torch.fx.Node, d: int, a: int, count: int, s: int) -> torch.fx.Node:
    """The ``count`` elements a, a + s, ... of x along dim d."""
    n = val(x).shape[d]
    if count == 1:
        return emit(gm, aten.slice.Tensor, (x, d, a, a + 1))
    if n < count * s:  # no window of count * s elements: the last pick joins by a Cat
        last = a + (count - 1) * s
        parts = [_stepped(gm, x, d, a, count - 1, s), emit(gm, aten.slice.Tensor, (x, d, last, last + 1))]
        return emit(gm, aten.cat.default, (parts, d))
    w = min(a, n - count * s)  # a window of count * s elements whose phase a - w holds the picks
    if (w, count * s) != (0, n):
        x = emit(gm, aten.slice.Tensor, (x, d, w, w + count * s))
    return _phase(gm, x, d, s, a - w)


def step_slices_as_views(gm: torch.fx.GraphModule, keep_rope: bool = False) -> int:
    """Rewrite each step slice of ``gm`` as the module doc says (``keep_rope``: not rotate_every_two's, which
    fusion reads); returns how many."""
    count = 0
    for node in list(gm.graph.nodes):
        if not call(node, aten.slice.Tensor) or len(node.args) < 5 or node.args[4] in (None, 1):
            continue
        x, dim, start, end, step = node.args[:5]
        xv = val(x)
        if xv is None or xv.dim() == 0 or (keep_rope and _rotate_every_two(node)):
            continue
        d = dim % xv.dim()
        picks = range(*slice(start, end, step).indices(xv.shape[d]))  # torch's clamping, as Python's
        if not picks:
            continue  # zero-size: the tracer's error names it
        with gm.graph.inserting_before(node), fake_mode(xv):
            y = _stepped(gm, x, d, picks.start, len(picks), step)
        node.replace_all_uses_with(y)
        count += 1
    return finish(gm, count)


def _contiguous_strides(size) -> list:
    out, acc = [], 1
    for n in reversed(size):
        out.append(acc)
        acc *= n
    return out[::-1]


def as_strided_as_views(gm: torch.fx.GraphModule) -> int:
    """Rewrite each ``as_strided`` of the module doc's form as a view; returns how many."""
    count = 0
    for node in list(gm.graph.nodes):
        if not call(node, aten.as_strided.default) or len(node.args) < 3:
            continue
        x, size, stride = node.args[:3]
        offset = node.args[3] if len(node.args) > 3 else node.kwargs.get("storage_offset", 0)
        xv = val(x)
        if xv is None or not xv.is_contiguous() or offset not in (None, xv.storage_offset()) or \
                xv.numel() != torch.Size(size).numel() or \
                any(n != 1 and st != want for n, st, want in zip(size, stride, _contiguous_strides(size))):
            continue
        with gm.graph.inserting_before(node), fake_mode(xv):
            y = emit(gm, aten.view.default, (x, list(size)))
        node.replace_all_uses_with(y)
        count += 1
    return finish(gm, count)
