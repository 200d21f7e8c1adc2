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
- views (view, expand, unsqueeze, slice, select, transpose, permute, clone): the same view;
- ``argmax`` over the last dim: the first maximum (a RowReduce max, comparisons, the cumsum above).

Integer graph inputs are guarded: values of magnitude 2^24 or more (which the cast rounds) become +-inf, so a
comparison still sees a large number and anything else ends in an id no Embedding takes (IndexError); numbers
and constants of 2^24 or more leave the chain alone. ``x[i0]`` and ``x[i0, i1]`` (``aten.index.Tensor`` on
leading dims) become Embeddings the same way (``_index_rows``).

Any other producer leaves the Embedding as it is (its error names the op). A cumsum over 2^24 elements or
more is left alone too. Integer add / sub / mul results of 2^24 or more are guarded as the inputs are (a
product of large ids cancelled by a subtraction ends in inf or NaN: an IndexError, never a wrong row). An id
that ends outside the table raises IndexError, as eager.
"""
from __future__ import annotations

import math
from typing import Optional

import torch
import torch.fx
from torch._subclasses.fake_tensor import FakeTensorMode

from megakittens._C import CompileError
from megakittens.fx_nodes import call, finish, val
from megakittens.sdpa_math import _CMP, _VIEWS, _BoolAsFloat

aten = torch.ops.aten
_INTS = (torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8)
_EXACT = 2 ** 24  # fp32 holds every integer below it


def integral(v) -> bool:
    """Whether the tensor ``v`` holds integers or booleans (what ``_IntAsFloat`` converts)."""
    return v is not None and (v.dtype == torch.bool or v.dtype in _INTS)


def _name(value) -> str:
    """A number as text for a constant's attribute name, one per value (float.hex: exact, 1e30 unlike 1e-30)."""
    text = float(value).hex() if isinstance(value, float) else str(value)
    return text.replace("-", "m").replace("+", "p").replace(".", "d")


_CMP_T = {aten.eq.Tensor: "eq", aten.ne.Tensor: "ne", aten.gt.Tensor: "gt", aten.ge.Tensor: "ge",
          aten.lt.Tensor: "lt", aten.le.Tensor: "le"}
_ARITH = (aten.add.Tensor, aten.sub.Tensor, aten.mul.Tensor, aten.add.Scalar, aten.sub.Scalar, aten.mul.Scalar,
          aten.rsub.Scalar, aten.neg.default)


class _IntAsFloat(_BoolAsFloat):
    """``_BoolAsFloat`` extended to integer producers (module doc): ``convert(n)`` is an fp32 node holding
    the values of the integer or boolean node ``n``, or None.

    ``guard``: integer graph inputs and integer add / sub / mul results of 2^24 or more become +-inf (ids:
    an IndexError, never a wrong row). Without it (megakittens/masks.py: integers that floating-point ops
    read, which eager casts to float there too) they are cast, rounding as that cast does, and only a
    comparison of two integer tensors, which rounding could flip, gives NaN where either is that large."""

    def __init__(self, gm: torch.fx.GraphModule, before: torch.fx.Node, fake_mode, guard: bool = True):
        super().__init__(gm, before, fake_mode)
        self.guard, self.poisoned = guard, False

    def _convert(self, n: torch.fx.Node) -> Optional[torch.fx.Node]:
        v = val(n)
        if v is not None and v.dtype == torch.bool and call(n, *_CMP) and len(n.args) == 2 and \
                isinstance(n.args[1], (int, float)) and abs(n.args[1]) >= _EXACT and val(n.args[0]) is not None and \
                val(n.args[0]).dtype in _INTS:
            return None  # a number fp32 does not hold: the comparison could flip
        if v is not None and v.dtype == torch.bool and call(n, *_CMP_T) and len(n.args) == 2 and \
                all(isinstance(a, torch.fx.Node) for a in n.args):
            a, b = (self._as_f32(a) for a in n.args)
            if a is None or b is None:
                return None
            av, bv = val(n.args[0]), val(n.args[1])
            f = self.compare(a, b, _CMP_T[n.target], av.dtype.is_floating_point, bv.dtype.is_floating_point)
            if not self.guard and (av.dtype in _INTS or bv.dtype in _INTS):  # NaN where rounding could flip it
                f = self._poison(f, self._emit(aten.maximum.default, (self._big(a), self._big(b))))
            return f
        if v is None or v.dtype == torch.bool:
            return super()._convert(n)
        if v.dtype not in _INTS:
            return None
        if n.op == "get_attr" and isinstance(getattr(self.gm, str(n.target), None), torch.Tensor):
            const = getattr(self.gm, str(n.target))
            if const.numel() and int(const.abs().max()) >= _EXACT:
                return None
            return self._constant(f"{n.target}_f32", const.to(torch.float32))
        if n.op != "call_function":  # a graph input
            x = self._emit(aten._to_copy.default, (n,), {"dtype": torch.float32})
            return self._guarded(x) if self.guard else x
        t, args = n.target, n.args
        if t is aten._to_copy.default and set(n.kwargs) <= {"dtype", "layout", "device"} and integral(val(args[0])):
            return self.convert(args[0])
        if t in _ARITH:
            if any(isinstance(a, (int, float)) and abs(a) >= _EXACT for a in args):
                return None
            xs = [self.convert(a) if isinstance(a, torch.fx.Node) else a for a in args]
            if any(x is None for x in xs) or not all(isinstance(a, (torch.fx.Node, int, float)) for a in args):
                return None
            y = self._emit(t, tuple(xs), dict(n.kwargs))
            if t is aten.neg.default:
                return y
            return self._guarded(y) if self.guard else self._poison(y, self._big(y))
        if t in (aten.clamp.default, aten.clamp_min.default, aten.clamp_max.default) and \
                all(isinstance(a, (int, float, type(None))) for a in args[1:]):
            x = self.convert(args[0])
            return None if x is None else self._emit(t, (x,) + tuple(args[1:]))
        if t is aten.where.self or t in (aten.masked_fill.Scalar, aten.masked_fill.Tensor):
            c, a, b = (args[0], args[1], args[2]) if t is aten.where.self else (args[1], args[2], args[0])
            return self.where(c, a, b, torch.float32, v.device)
        if t is aten.cumsum.default and set(n.kwargs) <= {"dtype"} and len(args) == 2 and v.dim() in (1, 2, 3) and \
                args[1] % v.dim() == v.dim() - 1 and v.shape[-1] < _EXACT:
            x = self.convert(args[0])
            return None if x is None else self._cumsum(x, v.shape[-1])
        if t in _VIEWS:
            x = self.convert(args[0])
            return None if x is None else self._emit(t, (x,) + tuple(args[1:]), dict(n.kwargs))
        if t in (aten.maximum.default, aten.minimum.default):
            a, b = self.convert(args[0]), self.convert(args[1])
            return None if a is None or b is None else self._emit(t, (a, b))
        if t in (aten.sum.default, aten.sum.dim_IntList) and val(args[0]) is not None and val(args[0]).dim() >= 1:
            return self._sum(n)
        if t is aten.constant_pad_nd.default and len(args) >= 2 and v.dim() <= 4:
            x, value = self.convert(args[0]), (args[2] if len(args) > 2 else 0)
            return None if x is None or abs(value) >= _EXACT else self._pad(x, list(args[1]), float(value))
        if t is aten.cat.default:
            xs = [self.convert(a) for a in args[0]]
            return None if any(x is None for x in xs) else self._emit(t, (xs,) + tuple(args[1:]))
        if t is aten.argmax.default and len(args) == 2 and val(args[0]) is not None and \
                args[1] % max(val(args[0]).dim(), 1) == val(args[0]).dim() - 1 and val(args[0]).dim() in (1, 2, 3):
            x = self.convert(args[0]) if integral(val(args[0])) else \
                (args[0] if val(args[0]).dtype == torch.float32 else None)
            return None if x is None else self._argmax(x, bool(n.kwargs.get("keepdim", False)))
        return None

    def _argmax(self, x: torch.fx.Node, keepdim: bool) -> torch.fx.Node:
        """The first index of each row's maximum (torch.argmax's tie rule; a NaN is the maximum): e = (x ==
        max), kept where the running count of e is 1, times the column index, summed; every step exact in
        fp32."""
        s = val(x).shape[-1]
        top = self._emit(aten.amax.default, (x, [-1], True))
        if val(x).dtype.is_floating_point:  # eager's rules: an inf maximum is found, a NaN is the maximum
            e = self._emit(aten.add.Tensor, (self.compare(x, top, "eq", True, True), self._isnan(x)))
        else:
            e = self._emit(aten.rsub.Scalar, (self._nonzero(self._emit(aten.sub.Tensor, (x, top)), "ne"), 1.0))
        once = self._nonzero(self._emit(aten.sub.Tensor, (self._cumsum(e, s), 1.0)), "ne")
        first = self._emit(aten.mul.Tensor, (e, self._emit(aten.rsub.Scalar, (once, 1.0))))
        cols = self._constant(f"_mk_cols_f32_{s}", torch.arange(s, dtype=torch.float32, device=val(x).device))
        idx = self._emit(aten.sum.dim_IntList, (self._emit(aten.mul.Tensor, (first, cols)), [-1]))
        return self._emit(aten.unsqueeze.default, (idx, -1)) if keepdim else idx

    def _sum(self, n: torch.fx.Node) -> Optional[torch.fx.Node]:
        """A sum of integers or booleans (a count of kept positions) over the last dim or every element, in
        fp32 (exact below 2^24)."""
        xv = val(n.args[0])
        dims = n.args[1] if n.target is aten.sum.dim_IntList and len(n.args) > 1 else None
        keep = bool(n.args[2]) if n.target is aten.sum.dim_IntList and len(n.args) > 2 else \
            bool(n.kwargs.get("keepdim", False))
        if xv.numel() >= _EXACT or (dims and [d % xv.dim() for d in dims] != [xv.dim() - 1]):
            return None
        x = self.convert(n.args[0])
        if x is None:
            return None
        if not dims:  # every element: one row
            x = self._emit(aten.view.default, (x, [-1])) if xv.dim() != 1 else x
            y = self._emit(aten.sum.dim_IntList, (x, [-1]))
            return self._emit(aten.view.default, (y, [1] * xv.dim())) if keep else y
        return self._emit(aten.sum.dim_IntList, (x, [-1], keep))

    def _pad(self, x: torch.fx.Node, pad: list, value: float) -> torch.fx.Node:
        """F.pad's constant mode on fp32 ``x`` (pairs from the last dim backwards; negative pads crop): a Cat
        with constant blocks, as megakittens/convolution.py pads floats (Hugging Face pads its labels with
        ignore_index before shifting them)."""
        for i in range(len(pad) // 2):
            shape = list(val(x).shape)
            dim, before, after = len(shape) - 1 - i, pad[2 * i], pad[2 * i + 1]
            if before < 0 or after < 0:
                x = self._emit(aten.slice.Tensor, (x, dim, max(0, -before), shape[dim] - max(0, -after)))
                shape = list(val(x).shape)
            parts = [x]
            for side, amount in ((0, before), (1, after)):
                if amount > 0:
                    block = shape[:dim] + [amount] + shape[dim + 1:]
                    name = f"_mk_full_f32_{'x'.join(map(str, block))}_{_name(value)}"
                    const = self._constant(name, torch.full(block, value, device=val(x).device))
                    parts.insert(0 if side == 0 else len(parts), const)
            if len(parts) > 1:
                x = self._emit(aten.cat.default, (parts, dim))
        return x

    def _as_f32(self, x: torch.fx.Node) -> torch.fx.Node:
        """A comparison's operand: an integer converted (a graph input guarded), a boolean converted (None
        where it does not), anything else cast."""
        v = val(x)
        if v is not None and v.dtype == torch.bool:
            return self.convert(x)
        if v is not None and v.dtype in _INTS:
            f = self.convert(x)
            if f is not None:
                return f
        return super()._as_f32(x)

    def where(self, c, a, b, dtype: torch.dtype, device) -> Optional[torch.fx.Node]:
        """``where(c, a, b)`` in ``dtype`` as ``select(m, a) + select(1 - m, b)`` (m = c as 0 / 1; numbers as
        one-element constants, integers converted, other dtypes cast): one term is exactly 0, so the sum is
        the branch taken, and an inf or NaN of the other stays out. None where an operand does not convert."""
        m = self.convert(c)
        a, b = self._operand(a, dtype, device), self._operand(b, dtype, device)
        if m is None or a is None or b is None:
            return None
        keep = self._select(m, a)
        other = self._select(self._emit(aten.rsub.Scalar, (m, 1.0)), b)
        y = self._emit(aten.add.Tensor, (keep, other))
        if self.poisoned:  # a NaN mask (a poisoned comparison) must reach the result, which select would hide
            y = self._emit(aten.add.Tensor, (y, self._emit(aten._to_copy.default, (self._emit(
                aten.sub.Tensor, (m, m)),), {"dtype": dtype})))
        return y

    def _operand(self, a, dtype: torch.dtype, device) -> Optional[torch.fx.Node]:
        if not isinstance(a, torch.fx.Node):
            value = torch.tensor([a], dtype=dtype, device=device)
            if value.isinf().any() and not (isinstance(a, float) and math.isinf(a)):
                raise CompileError(f"masked_fill / where: the value {a} overflows {dtype} (eager raises too)")
            return self._constant(f"_mk_scalar_{str(dtype).split('.')[-1]}_{_name(value.item())}", value)
        v = val(a)
        if integral(v):
            a = self.convert(a)
            if a is None:
                return None
            v = val(a)
        if v.dtype != dtype:
            a = self._emit(aten._to_copy.default, (a,), {"dtype": dtype})
        return self._emit(aten.view.default, (a, [1])) if v.dim() == 0 else a

    def _poison(self, x: torch.fx.Node, where: torch.fx.Node) -> torch.fx.Node:
        """x, NaN where ``where`` is 1 (an integer result fp32 may have rounded: visible, never silently off)."""
        self.poisoned = True
        nan = self._constant("_mk_nan_f32", torch.full([1], float("nan"), device=val(x).device))
        return self._emit(aten.add.Tensor, (x, self._select(where, nan)))

    def _big(self, x: torch.fx.Node) -> torch.fx.Node:
        """1 where |x| is 2^24 or more (fp32 may have rounded it), else 0."""
        return self._nonzero(self._emit(aten.sub.Tensor, (self._emit(aten.abs.default, (x,)), float(_EXACT - 1))),
                             "gt")

    def _guarded(self, x: torch.fx.Node) -> torch.fx.Node:
        """An input's values cast to fp32, those of magnitude 2^24 or more (rounded by the cast) made +-inf:
        x / (1 - big), big = 1 where |x| > 2^24 - 1. An inf compares as the large number it stood for, and
        anything else it reaches (a sum, a difference, an id) becomes inf or NaN, which no Embedding takes
        (IndexError): never a wrong row."""
        return self._emit(aten.div.Tensor, (x, self._emit(aten.rsub.Scalar, (self._big(x), 1.0))))

    def _cumsum(self, x: torch.fx.Node, s: int) -> torch.fx.Node:
        # tril[j, i] = 1 for i <= j: row j sums x[.., :j + 1]
        tril = self._constant(f"_mk_tril_f32_{s}", torch.ones(s, s, device=val(x).device).tril())
        terms = self._emit(aten.mul.Tensor, (self._emit(aten.unsqueeze.default, (x, -2)), tril))
        return self._emit(aten.sum.dim_IntList, (terms, [-1]))


def _index_rows(gm: torch.fx.GraphModule, conv: _IntAsFloat, node: torch.fx.Node) -> Optional[torch.fx.Node]:
    """``x[i0]`` or ``x[i0, i1]`` (integer index tensors on x's leading dims: Whisper's
    ``embed_positions.weight[position_ids]``, CLIP's pooled ``hidden[arange(B), eos]``) as a lookup of the rows
    of x viewed (X0 [X1], ...) at the fp32 id i0 [X1 + i1]: negative indices wrap as eager's, and an i1 outside
    [-X1, X1) makes the id inf, so the Embedding raises IndexError as eager does (i0 out of range lands outside
    the table by itself). None where an index does not convert or the rows are 2^24 or more."""
    x, index = node.args[0], list(node.args[1])
    xv, ov = val(x), val(node)
    k = len(index)
    if xv is None or ov is None or xv.dim() < k or not xv.dtype.is_floating_point or \
            not all(isinstance(i, torch.fx.Node) and val(i) is not None and val(i).dtype in _INTS for i in index):
        return None
    rows = 1
    for d in range(k):
        rows *= xv.shape[d]
    shape = torch.broadcast_shapes(*(val(i).shape for i in index))
    if rows >= _EXACT or len(shape) > 3:
        return None
    fs = [conv.convert(i) for i in index]
    if any(f is None for f in fs):
        return None
    wrapped = []
    for d, f in enumerate(fs):  # f + X_d where f < 0
        neg = conv._nonzero(f, "lt")
        wrapped.append(conv._emit(aten.add.Tensor, (f, conv._emit(aten.mul.Tensor, (neg, float(xv.shape[d]))))))
    ids = wrapped[0]
    if k == 2:
        w, n = wrapped[1], float(xv.shape[1])
        bad = conv._emit(aten.maximum.default, (conv._nonzero(w, "lt"),
                                                 conv._nonzero(conv._emit(aten.sub.Tensor, (w, n - 1)), "gt")))
        ids = conv._emit(aten.add.Tensor, (conv._emit(aten.mul.Tensor, (ids, n)), w))
        ids = conv._emit(aten.div.Tensor, (ids, conv._emit(aten.rsub.Scalar, (bad, 1.0))))
    table = x if xv.dim() == 2 and k == 1 else conv._emit(aten.view.default, (x, [rows, -1]))
    out = conv._emit(torch.ops.megakittens.embedding.default, (table, ids))
    return out if list(val(out).shape) == list(ov.shape) else conv._emit(aten.view.default, (out, list(ov.shape)))


def embedding_ids_in_float(gm: torch.fx.GraphModule) -> int:
    """Give each Embedding whose ids are computed in integers (module doc) the same ids in fp32; returns how
    many."""
    conv, count = None, 0
    for node in list(gm.graph.nodes):
        if call(node, aten.index.Tensor) and len(node.args) == 2 and len(node.args[1]) in (1, 2) and \
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
        src, copied = ids, False
        while call(src, *_VIEWS):
            copied = copied or call(src, aten.expand.default, aten.clone.default)
            src = src.args[0]
        # Views of an input or a constant: the Embedding reads them as they are, but for an expand or a clone
        # (BigBird's token type ids, a buffer row expanded over the batch; XLNet's input_ids.t().contiguous()),
        # which would be an integer Copy.
        if src.op != "call_function" and not copied:
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
