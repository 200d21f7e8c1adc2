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

a view and a unit-step slice of the same rank, exact (no element moves). ``step_slices_as_views`` rewrites
each step slice that runs to the end of its dim, with n a multiple of s and the start below s; the others stay
(a ``CompileError`` names them).
"""
from __future__ import annotations

import torch
import torch.fx

from megakittens.fx_nodes import call, emit, fake_mode, finish, val

aten = torch.ops.aten


def step_slices_as_views(gm: torch.fx.GraphModule) -> int:
    """Rewrite each step slice of ``gm`` that has the form of the module doc; returns how many."""
    count = 0
    for node in list(gm.graph.nodes):
        if not call(node, aten.slice.Tensor) or len(node.args) < 5 or node.args[4] in (None, 1):
            continue
        x, dim, start, end, step = node.args[:5]
        xv = val(x)
        if xv is None or xv.dim() < 2:
            continue
        d = dim % xv.dim()
        n = xv.shape[d]
        start = 0 if start is None else (start + n if start < 0 else start)
        end = n if end is None else (end + n if end < 0 else end)
        if d == xv.dim() - 1 or n % step or not 0 <= start < step or end < n - (step - 1 - start) or \
                xv.stride(d) != xv.stride(d + 1) * xv.shape[d + 1]:
            continue
        m = xv.shape[d + 1]
        shape = list(xv.shape[:d]) + [n // step, step * m] + list(xv.shape[d + 2:])
        with gm.graph.inserting_before(node), fake_mode(xv):
            y = emit(gm, aten.view.default, (x, shape))
            y = emit(gm, aten.slice.Tensor, (y, d + 1, start * m, (start + 1) * m))
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
