"""FX pass over the aten graph: boolean masks and integer tensors that floating-point ops read, recomputed in
fp32 (``float_ids._IntAsFloat``: 0 / 1 for booleans, exact integers below 2^24).

No instruction type computes booleans or integers, yet models build masks outside attention:
``scores.masked_fill(mask, min)`` written out (DeBERTa, Funnel), ``hidden * mask[..., None]`` (BLOOM,
SqueezeBERT, XLNet), ``where(mask, x, 0)``, a count of kept labels (``cross_entropy``'s label smoothing
divides by ``(~ignored).sum()``). ``masks_in_float`` rewrites each floating-point node that reads such a
tensor:

- ``where(c, a, b)``: ``select(m, a) + select(1 - m, b)`` with m = c as 0 / 1 and ``megakittens.select``
  (ElementwiseBinary(op=select): x where m != 0, else 0). One term is exactly 0, so the sum is the branch
  taken, bit for bit, and an inf or NaN in the branch not taken stays out (an arithmetic blend
  ``a m + b (1 - m)`` would turn ``masked_fill(.., -inf)`` into NaN). ``masked_fill(x, c, v)`` is
  ``where(c, v, x)``; a and b are cast to the result dtype first, as eager's where does.
- ``_to_copy`` of a boolean or integer to a float: the converted tensor, cast.
- ``x.gather(0, idx)`` of a vector x (label smoothing's class weights): an Embedding of x viewed (N, 1) at the
  fp32 idx (out of range: IndexError, as eager).
- any other pointwise op (``torch.Tag.pointwise``: ``x * mask``, ``total / count`` with an integer count):
  the same op on the converted operands, cast back to the node's dtype where fp32 operands promoted it.

Comparisons follow eager's NaN and infinity rules and round a number to a 16-bit operand's dtype first
(``_BoolAsFloat.compare``). Integers are cast as eager casts them for a floating-point op (no 2^24 guard,
``_IntAsFloat(guard=False)``), but a comparison of two integer tensors either of which is 2^24 or more gives
NaN (fp32 could round them equal). A ``masked_fill`` value that overflows the tensor's dtype raises
CompileError (eager raises too). Operands whose chain does not convert (``_IntAsFloat``'s module doc lists
what does) leave the node as it is; the support report then names the op.
"""
from __future__ import annotations

import torch
import torch.fx
from torch._subclasses.fake_tensor import FakeTensorMode

from megakittens.float_ids import _IntAsFloat, integral
from megakittens.fx_nodes import finish, val

aten = torch.ops.aten
_WHERE = (aten.where.self,)
_FILL = (aten.masked_fill.Scalar, aten.masked_fill.Tensor)


def _rewrite(conv: _IntAsFloat, node: torch.fx.Node):
    t, args, out = node.target, node.args, val(node)
    if t in _WHERE or t in _FILL:
        c, a, b = (args[0], args[1], args[2]) if t in _WHERE else (args[1], args[2], args[0])
        y = conv.where(c, a, b, out.dtype, out.device)
        if y is None or list(val(y).shape) == list(out.shape):
            return y
        return conv._emit(aten.expand.default, (y, list(out.shape)))
    if t is aten.gather.default and len(args) == 3 and val(args[0]).dim() == 1 and val(args[2]).dim() == 1:
        ids = conv.convert(args[2])  # x.gather(0, idx) of a vector (cross_entropy's class weights): an Embedding
        if ids is None:
            return None
        table = conv._emit(aten.view.default, (args[0], [-1, 1]))
        return conv._emit(aten.view.default, (conv._emit(torch.ops.megakittens.embedding.default, (table, ids)), [-1]))
    if t is aten._to_copy.default and set(node.kwargs) <= {"dtype", "layout", "device"}:
        f = conv.convert(args[0])
        if f is None:
            return None
        return f if val(f).dtype == out.dtype else conv._emit(aten._to_copy.default, (f,), {"dtype": out.dtype})
    if not isinstance(t, torch._ops.OpOverload) or torch.Tag.pointwise not in t.tags:
        return None
    ok = True

    def arg(a):
        nonlocal ok
        if isinstance(a, torch.fx.Node) and integral(val(a)):
            f = conv.convert(a)
            ok = ok and f is not None
            return f
        return a

    new_args, new_kwargs = torch.fx.node.map_arg((args, dict(node.kwargs)), arg)
    if not ok:
        return None
    y = conv._emit(t, new_args, new_kwargs)
    return y if val(y).dtype == out.dtype else conv._emit(aten._to_copy.default, (y,), {"dtype": out.dtype})


def masks_in_float(gm: torch.fx.GraphModule) -> int:
    """Rewrite each floating-point node that reads a boolean or integer tensor (module doc); returns how many."""
    conv, count = None, 0
    for node in list(gm.graph.nodes):
        out = val(node)
        if node.op != "call_function" or out is None or not out.dtype.is_floating_point or \
                not any(integral(val(a)) for a in node.all_input_nodes):
            continue
        conv = conv or _IntAsFloat(gm, node, torch._guards.detect_fake_mode([out]) or FakeTensorMode(), guard=False)
        conv.before = node
        y = _rewrite(conv, node)
        if y is not None:
            node.replace_all_uses_with(y)
            count += 1
    return finish(gm, count)
