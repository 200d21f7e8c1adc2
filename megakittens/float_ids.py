"""FX pass over the aten graph: Embedding ids computed by integer arithmetic, recomputed in fp32.

RoBERTa, XLM-RoBERTa and MPNet number their positions from the input ids, and OPT from the attention mask::

    m = input_ids.ne(padding_idx).int();  position_ids = cumsum(m, 1) * m + padding_idx      # RoBERTa
    position_ids = cumsum(attention_mask, 1) * attention_mask - 1 + 2                        # OPT

No instruction type writes integers (Copy refuses integer outputs: docs/itypes.md), so the chain would not
compile. Its values are small integers, exact in fp32 below 2^24, so ``embedding_ids_in_float`` re-emits the
chain in fp32 and hands the Embedding fp32 ids (``megakittens.embedding``, whose instruction reads an id of
any dtype and range-checks it as eager does):

- a graph input or constant: cast to fp32; a cast to an integer dtype of an integer or boolean: nothing;
- booleans (comparisons with a number, and / or / not): 0 / 1 as the SDPA masks are
  (``sdpa_math._BoolAsFloat``);
- add / sub / mul / neg: the same op in fp32 (exact while every value stays below 2^24);
- ``cumsum`` over the last dim: the values times a constant lower-triangular 0 / 1 matrix, summed over its
  last dim (``x[.., None, :] * tril`` then a RowReduce sum: exact for integers below 2^24; an (.., S, S)
  fp32 intermediate, 1 MB for S = 512);
- views (view, expand, unsqueeze, slice, select, transpose, permute, clone): the same view.

Any other producer leaves the Embedding as it is (its error names the op). A chain whose values could
reach 2^24 (a cumsum over more than 2^24 elements) is left alone too.
"""
from __future__ import annotations

from typing import Optional

import torch
import torch.fx
from torch._subclasses.fake_tensor import FakeTensorMode

from megakittens.fx_nodes import call, finish, val
from megakittens.sdpa_math import _VIEWS, _BoolAsFloat

aten = torch.ops.aten
_INTS = (torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8)
_ARITH = (aten.add.Tensor, aten.sub.Tensor, aten.mul.Tensor, aten.add.Scalar, aten.sub.Scalar, aten.mul.Scalar,
          aten.rsub.Scalar, aten.neg.default)


class _IntAsFloat(_BoolAsFloat):
    """``_BoolAsFloat`` extended to integer producers (module doc): ``convert(n)`` is an fp32 node holding
    the values of the integer or boolean node ``n``, or None."""

    def _convert(self, n: torch.fx.Node) -> Optional[torch.fx.Node]:
        v = val(n)
        if v is None or v.dtype == torch.bool:
            return super()._convert(n)
        if v.dtype not in _INTS:
            return None
        if n.op == "get_attr" and isinstance(getattr(self.gm, str(n.target), None), torch.Tensor):
            return self._constant(f"{n.target}_f32", getattr(self.gm, str(n.target)).to(torch.float32))
        if n.op != "call_function":  # a graph input
            return self._emit(aten._to_copy.default, (n,), {"dtype": torch.float32})
        t, args = n.target, n.args
        if t is aten._to_copy.default and set(n.kwargs) <= {"dtype", "layout", "device"} and \
                val(args[0]) is not None and (val(args[0]).dtype in _INTS or val(args[0]).dtype == torch.bool):
            return self.convert(args[0])
        if t in _ARITH:
            xs = [self.convert(a) if isinstance(a, torch.fx.Node) else a for a in args]
            if any(x is None for x in xs) or not all(isinstance(a, (torch.fx.Node, int, float)) for a in args):
                return None
            return self._emit(t, tuple(xs), dict(n.kwargs))
        if t is aten.cumsum.default and not n.kwargs and len(args) == 2 and v.dim() in (1, 2, 3) and \
                args[1] % v.dim() == v.dim() - 1 and v.shape[-1] < 2 ** 24:
            x = self.convert(args[0])
            return None if x is None else self._cumsum(x, v.shape[-1])
        if t in _VIEWS:
            x = self.convert(args[0])
            return None if x is None else self._emit(t, (x,) + tuple(args[1:]), dict(n.kwargs))
        if t is aten.argmax.default and len(args) == 2 and val(args[0]) is not None and \
                args[1] % max(val(args[0]).dim(), 1) == val(args[0]).dim() - 1 and val(args[0]).dim() in (1, 2, 3):
            x = self.convert(args[0]) if val(args[0]).dtype in _INTS or val(args[0]).dtype == torch.bool else \
                (args[0] if val(args[0]).dtype == torch.float32 else None)
            return None if x is None else self._argmax(x, bool(n.kwargs.get("keepdim", False)))
        return None

    def _argmax(self, x: torch.fx.Node, keepdim: bool) -> torch.fx.Node:
        """The first index of each row's maximum (torch.argmax's tie rule): e = (x == max), kept where the
        running count of e is 1, times the column index, summed; every step exact in fp32."""
        s = val(x).shape[-1]
        top = self._emit(aten.amax.default, (x, [-1], True))
        e = self._emit(aten.rsub.Scalar, (self._nonzero(self._emit(aten.sub.Tensor, (x, top)), "ne"), 1.0))
        once = self._nonzero(self._emit(aten.sub.Tensor, (self._cumsum(e, s), 1.0)), "ne")
        first = self._emit(aten.mul.Tensor, (e, self._emit(aten.rsub.Scalar, (once, 1.0))))
        cols = self._constant(f"_mk_cols_f32_{s}", torch.arange(s, dtype=torch.float32, device=val(x).device))
        idx = self._emit(aten.sum.dim_IntList, (self._emit(aten.mul.Tensor, (first, cols)), [-1]))
        return self._emit(aten.unsqueeze.default, (idx, -1)) if keepdim else idx

    def _as_f32(self, x: torch.fx.Node) -> torch.fx.Node:
        """A comparison's operand: a computed integer converted, anything else cast."""
        v = val(x)
        if v is not None and v.dtype in _INTS and x.op == "call_function":
            f = self.convert(x)
            if f is not None:
                return f
        return super()._as_f32(x)

    def _constant(self, name: str, value: torch.Tensor) -> torch.fx.Node:
        if not hasattr(self.gm, name):
            self.gm.register_buffer(name, value, persistent=False)
        with self.gm.graph.inserting_before(self.before):
            const = self.gm.graph.get_attr(name)
        const.meta["val"] = getattr(self.gm, name)
        return const

    def _cumsum(self, x: torch.fx.Node, s: int) -> torch.fx.Node:
        # tril[j, i] = 1 for i <= j: row j sums x[.., :j + 1]
        tril = self._constant(f"_mk_tril_f32_{s}", torch.ones(s, s, device=val(x).device).tril())
        terms = self._emit(aten.mul.Tensor, (self._emit(aten.unsqueeze.default, (x, -2)), tril))
        return self._emit(aten.sum.dim_IntList, (terms, [-1]))


def _index_rows(gm: torch.fx.GraphModule, conv: _IntAsFloat, node: torch.fx.Node) -> Optional[torch.fx.Node]:
    """``x[i0, i1]`` (two integer index tensors on dims 0 and 1, CLIP's pooled ``hidden[arange(B), eos]``) as a
    lookup of the rows of x viewed (X0 X1, ...) at fp32 ids i0 X1 + i1 (exact below 2^24), else None."""
    x, (i0, i1) = node.args[0], node.args[1]
    xv, ov = val(x), val(node)
    if xv is None or ov is None or xv.dim() < 2 or not xv.dtype.is_floating_point or \
            xv.shape[0] * xv.shape[1] >= 2 ** 24 or not all(isinstance(i, torch.fx.Node) for i in (i0, i1)):
        return None
    f0, f1 = conv.convert(i0), conv.convert(i1)
    if f0 is None or f1 is None:
        return None
    ids = conv._emit(aten.add.Tensor, (conv._emit(aten.mul.Tensor, (f0, float(xv.shape[1]))), f1))
    with gm.graph.inserting_before(node):
        table = conv._emit(aten.view.default, (x, [xv.shape[0] * xv.shape[1], -1]))
    rows = conv._emit(torch.ops.megakittens.embedding.default, (table, ids))
    return conv._emit(aten.view.default, (rows, list(ov.shape)))


def embedding_ids_in_float(gm: torch.fx.GraphModule) -> int:
    """Give each Embedding whose ids are computed in integers (module doc) the same ids in fp32; returns how
    many."""
    conv, count = None, 0
    for node in list(gm.graph.nodes):
        if call(node, aten.index.Tensor) and len(node.args) == 2 and len(node.args[1]) == 2 and \
                val(node.args[0]) is not None:
            conv = conv or _IntAsFloat(gm, node, torch._guards.detect_fake_mode([val(node.args[0])]) or
                                       FakeTensorMode())
            conv.before = node
            out = _index_rows(gm, conv, node)
            if out is not None:
                node.replace_all_uses_with(out)
                count += 1
            continue
        if not call(node, aten.embedding.default):
            continue
        weight, ids = node.args[:2]
        iv = val(ids)
        if not isinstance(ids, torch.fx.Node) or iv is None or iv.dtype not in _INTS:
            continue
        src = ids
        while call(src, *_VIEWS):
            src = src.args[0]
        if src.op != "call_function":  # views of an input or a constant: the Embedding reads them as they are
            continue
        if conv is None:
            conv = _IntAsFloat(gm, node, torch._guards.detect_fake_mode([iv]) or FakeTensorMode())
        conv.before = node  # a later Embedding's chain may be computed after an earlier one
        f = conv.convert(ids)
        if f is None:
            continue
        with gm.graph.inserting_before(node):
            out = gm.graph.call_function(torch.ops.megakittens.embedding.default, (weight, f))
        out.meta["val"] = node.meta["val"]
        node.replace_all_uses_with(out)
        count += 1
    return finish(gm, count)
