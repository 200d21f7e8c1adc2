"""FX passes: SDPA masks as Attention's, and the SDPA calls the Attention instruction type cannot take rewritten
as the math they compute.

Attention (flash-style, no score matrix in memory) takes head dims 64 and 128 (others up to 128 as q, k, v
zero-padded to one of them: ``_pad_head_dim``), value's head dim equal to query's, the causal flag
(``fold.fold_constants`` turns a constant causal mask into ``is_causal``) and an additive bf16 mask of shape
(B|1, H|1, Sq|1, Sk) (src/itypes/attention.h). ``decompose_unsupported_sdpa`` (the aten graph, after
``fold.fold_constants``) first gives such SDPA calls that mask (``_attention_mask``: a float mask cast to bf16,
a boolean one as 0 / -inf, a constant causal factor as ``is_causal``), then rewrites any other SDPA without
dropout and with 4-D operands (GQA included) as ``softmax(q @ k^T * scale + mask) @ v``:
two batched Gemms over the score matrix (B x H x Sq x Sk in memory) and the softmax of ``decompose.py`` (fp32,
rounded once), the mask added in fp32 (rows with no key left give 0, as ``_safe_softmax``), keys padded
with zeros to a multiple of 8 and masked (the Gemms' TMA rows are 16-byte multiples). PyTorch's math
backend computes the same (``_scaled_dot_product_attention_math``; like it on CUDA, the scores are rounded
once to bf16 by their Gemm, so logits of magnitude ~20 and more lose accuracy). It costs what the score matrix costs,
so it warns (``MathAttentionWarning``); it is what makes head dims above 128 (256), and Dv != Dq run at all.

Left alone (the tracer's error names them): dropout, operands that are not 4-D, key / value heads that do
not divide the query heads, a boolean mask built by other ops than graph inputs, casts, comparisons with a
number, and / or / not and views (``_BoolAsFloat``; a tokenizer's attention_mask combined with the causal
one is such a mask), and head dims that are not multiples of 8 (above 128, or with a mask Attention cannot take).

``sdpa_compatible`` (Dynamo's graph, before it is lowered to aten): PyTorch itself routes SDPA with 2-D or
3-D operands, a 3-D mask, key / value broadcast over the batch, or value's head dim unlike query's, to its
math backend, which on the CPU computes in fp32 (fp32 matrix products: no Gemm takes them). Such calls go
through ``sdpa_compat`` instead: 2-D / 3-D operands as a batch of one, a 3-D mask with a batch dim, key /
value copied to the query's batch (then Attention, or the pass above), Dv != Dq as the math above in the
operands' dtype.
"""
from __future__ import annotations

import math
import operator
import warnings
from typing import Optional

import torch
import torch.fx
from torch._subclasses.fake_tensor import FakeTensor, FakeTensorMode
from torch.fx.experimental.proxy_tensor import make_fx

from megakittens import decompose, fold
from megakittens.fold import _MASK_ARGS, _SDPA, _bound_args
from megakittens.fx_nodes import emit

_TARGETS = _SDPA | {"aten._scaled_dot_product_flash_attention.default"}


class MathAttentionWarning(UserWarning):
    """Some SDPA calls of a compiled graph run as the score-matrix math (``decompose_unsupported_sdpa``)."""


def _math(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: Optional[torch.Tensor], scale: float,
          causal: bool, kind: str = "additive", order: tuple = (0, 1, 2, 3)) -> torch.Tensor:
    """softmax(q @ k^T * scale + mask) @ v: the scores rounded once to q's dtype by their Gemm, then in fp32.

    GQA (k / v with Hk heads, Hq = G Hk): the G query heads of a key head are one (G Sq)-row block of q, so
    no key or value is repeated. Keys are padded with zeros to a multiple of 16 bytes (the Gemms' TMA rows)
    and masked out with -inf. The constants (the causal mask, the padding) depend on no input:
    ``fold.fold_constants`` makes them constants. ``kind``: the mask is added ("additive"), or is a 0 / 1
    float of a boolean mask, 1 where a key is kept ("keep": added as its log, 0 or -inf) or dropped ("drop").
    ``order``: the output's dims from outermost to innermost in memory, as the replaced SDPA op laid it out
    (PyTorch's fused CPU / CUDA kernels write (B, S, H, D)), so the views that read it stay valid."""
    B, hq, sq, _ = q.shape
    hk, sk = k.shape[1], k.shape[-2]
    g = hq // hk
    dev = q.device
    bias = None
    if causal:  # SDPA's is_causal: top-left aligned, query i sees keys j <= i
        later = torch.ones(sq, sk, dtype=torch.bool, device=dev).triu(1)
        bias = torch.zeros(sq, sk, device=dev).masked_fill(later, -math.inf)
    if mask is not None:  # with is_causal too: both apply, as PyTorch's kernels apply them
        m = mask.to(torch.float32)
        if kind != "additive":
            m = torch.log(m if kind == "keep" else 1.0 - m)
        bias = m if bias is None else bias + m
    if bias is not None:
        bias = bias.reshape((1,) * (4 - bias.dim()) + tuple(bias.shape))
        if g > 1 and bias.shape[1] == 1 and bias.shape[2] != 1:  # the same rows for every query head of a block
            bias = torch.cat([bias] * g, 2)
        elif g > 1 and bias.shape[1] != 1:  # per query head: rows (head, query) are the block's rows
            if bias.shape[2] == 1:
                bias = bias + torch.zeros(sq, 1, device=dev)
            bias = bias.reshape(bias.shape[0], hk, g * sq, bias.shape[-1])
    pad = -sk % (16 // q.element_size())
    if pad:
        zeros = lambda t: torch.zeros(*t.shape[:-2], pad, t.shape[-1], dtype=t.dtype, device=dev)  # noqa: E731
        k, v = torch.cat([k, zeros(k)], -2), torch.cat([v, zeros(v)], -2)
        if bias is None:
            bias = torch.cat([torch.zeros(sk, device=dev), torch.full((pad,), -math.inf, device=dev)])
        else:
            bias = bias + torch.zeros(sk, device=dev)  # a mask broadcast over the keys, materialised
            bias = torch.cat([bias, torch.full((*bias.shape[:-1], pad), -math.inf, device=dev)], -1)
    scores = (q.reshape(B, hk, g * sq, q.shape[-1]) @ k.transpose(-2, -1)).to(torch.float32) * scale
    if bias is not None:
        scores = scores + bias
    out = (torch.ops.aten._safe_softmax.default(scores, -1, q.dtype) @ v).reshape(B, hq, sq, v.shape[-1])
    if tuple(order) != (0, 1, 2, 3):
        out = out.permute(order).contiguous().permute([list(order).index(d) for d in range(4)])
    return out


def _fake(mode: FakeTensorMode, t: torch.Tensor) -> torch.Tensor:
    """t as a fake tensor of ``mode``; a constant (a real tensor) with static shapes (``mode`` may hold a
    ShapeEnv, whose dims would otherwise be symbolic)."""
    return t if isinstance(t, FakeTensor) else mode.from_tensor(t, static_shapes=True)


def _memory_order(t) -> tuple:
    """t's dims from the largest stride to the smallest (ties in dim order); (0, 1, 2, 3) for no tensor."""
    if not isinstance(t, torch.Tensor) or t.dim() != 4:
        return (0, 1, 2, 3)
    return tuple(sorted(range(4), key=lambda d: (-t.stride(d), d)))


def _dims_ok(q: torch.Tensor, v: torch.Tensor) -> bool:
    """Head dims the math's Gemms take: rows of 16-byte multiples (else the SDPA keeps the tracer's error,
    which names the head dim)."""
    return q.shape[-1] % 8 == 0 and v.shape[-1] % 8 == 0


def _attention_width(q: torch.Tensor, v: torch.Tensor) -> Optional[int]:
    """The head dim Attention runs q's at: 64 up to 64, 128 up to 128 (zero-padded: ``_pad_head_dim``); None
    above 128 or for value's head dim unlike query's."""
    d = q.shape[-1]
    return None if v.shape[-1] != d or d > 128 else 64 if d <= 64 else 128


def _zero_columns(gm: torch.fx.GraphModule, t: torch.fx.Node, width: int) -> torch.fx.Node:
    """t (B, H, S, D) with zero columns up to ``width``: a Cat with a constant block (folded), along the last dim
    in t's memory order, so that the transpose of a (B, S, H, D) projection stays one (Attention reads it)."""
    aten = torch.ops.aten
    tv = t.meta["val"]
    order = _memory_order(tv)
    order = order if order[-1] == 3 else (0, 1, 2, 3)
    x = t if order == (0, 1, 2, 3) else emit(gm, aten.permute.default, (t, list(order)))
    shape = list(x.meta["val"].shape)
    zeros = emit(gm, aten.full.default, (shape[:-1] + [width - shape[-1]], 0.0),
                 {"dtype": tv.dtype, "device": tv.device})
    y = emit(gm, aten.cat.default, ([x, zeros], -1))
    return y if order == (0, 1, 2, 3) else emit(gm, aten.permute.default, (y, [order.index(d) for d in range(4)]))


def _pad_head_dim(gm: torch.fx.GraphModule, node: torch.fx.Node, width: int) -> bool:
    """Run the SDPA ``node`` of head dim D < ``width`` (64 or 128, Attention's) as one of q, k, v zero-padded to
    ``width`` (MobileViT's 20, 32, 80, 96): zero columns add nothing to q k^T, and v's give output columns of
    zeros, sliced off. The scale stays D's (passed explicitly) and the output is copied to the memory order of
    node's, so the views that read it stay valid. False (node unchanged) when an output other than the
    attention's is read, or the key / value heads do not divide the query heads."""
    aten = torch.ops.aten
    bound = _bound_args(node)
    single = str(node.target) == "aten.scaled_dot_product_attention.default"
    users = [] if single else list(node.users)
    if not all(u.op == "call_function" and u.target is operator.getitem for u in users) or \
            any(u.args[1] != 0 and u.users for u in users):
        return False
    outs = [node] if single else [u for u in users if u.args[1] == 0]
    q, k, v = bound["query"], _unrepeat_kv(bound["key"]), _unrepeat_kv(bound["value"])  # GQA: Attention's
    qv, kv, vv = (x.meta["val"] for x in (q, k, v))
    if not outs or not _heads_ok(qv, kv, vv, True):
        return False
    scale = bound.get("scale")
    scale = 1.0 / math.sqrt(qv.shape[-1]) if scale is None else float(scale)
    mask = next((bound[a] for a in _MASK_ARGS if bound.get(a) is not None), None)
    order = _memory_order(outs[0].meta.get("val"))
    mode = torch._guards.detect_fake_mode([qv, kv, vv]) or FakeTensorMode()
    with gm.graph.inserting_before(node), mode:
        padded = {}
        for x in (q, k, v):  # self-attention's q, k, v may be one node: padded once
            padded[x] = padded.get(x) or _zero_columns(gm, x, width)
        o = emit(gm, aten.scaled_dot_product_attention.default, (padded[q], padded[k], padded[v]),
                 {"attn_mask": mask, "is_causal": bool(bound.get("is_causal", False)), "scale": scale,
                  "enable_gqa": kv.shape[1] != qv.shape[1]})
        o = emit(gm, aten.slice.Tensor, (o, 3, 0, qv.shape[-1]))
        o = emit(gm, aten.permute.default, (o, list(order)))
        o = emit(gm, aten.clone.default, (o,), {"memory_format": torch.contiguous_format})
        o = emit(gm, aten.permute.default, (o, [order.index(d) for d in range(4)]))
    for u in outs:
        u.replace_all_uses_with(o)
    for u in users:
        gm.graph.erase_node(u)
    gm.graph.erase_node(node)
    return True


def _heads_ok(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, enable_gqa: bool) -> bool:
    """As many key / value heads as query heads, or (GQA) a divisor of them."""
    hq, hk = q.shape[1], k.shape[1]
    return v.shape[1] == hk and (hk == hq or (hq % hk == 0 and enable_gqa))


def sdpa_compat(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, attn_mask: Optional[torch.Tensor] = None,
                dropout_p: float = 0.0, is_causal: bool = False, scale: Optional[float] = None,
                enable_gqa: bool = False, math_ok: bool = True) -> torch.Tensor:
    """``F.scaled_dot_product_attention`` with the same arguments and result; see the module doc. math_ok:
    Dv != Dq may take the score-matrix math (else it stays PyTorch's SDPA)."""
    sdpa = torch.nn.functional.scaled_dot_product_attention
    if query.dim() == key.dim() == value.dim() and query.dim() in (2, 3):  # (H, S, D) or (S, D): a mask
        lead = (None,) * (4 - query.dim())                                # broadcasts the same
        out = sdpa_compat(query[lead], key[lead], value[lead], attn_mask, dropout_p, is_causal, scale, enable_gqa,
                          math_ok)
        return out[(0,) * (4 - query.dim())]
    if query.dim() == key.dim() == value.dim() == 4:
        if attn_mask is not None and attn_mask.dim() == 3:  # (H, Sq, Sk): PyTorch's fused CPU kernel takes 4-D
            attn_mask = attn_mask[None]
        for name in ("key", "value"):  # a batch of 1 against the query's: one copy per batch (a Copy)
            t = key if name == "key" else value
            if t.shape[0] == 1 and query.shape[0] > 1:
                t = t.expand(query.shape[0], *t.shape[1:]).contiguous()
                key, value = (t, value) if name == "key" else (key, t)
    if math_ok and query.dim() == key.dim() == value.dim() == 4 and value.shape[-1] != query.shape[-1] and dropout_p == 0.0 and \
            _heads_ok(query, key, value, enable_gqa) and _dims_ok(query, value) and \
            (attn_mask is None or attn_mask.dtype.is_floating_point):
        s = 1.0 / math.sqrt(query.shape[-1]) if scale is None else scale
        warnings.warn(f"megakittens: an SDPA call with value's head dim {value.shape[-1]} unlike query's "
                      f"{query.shape[-1]} runs as two Gemms around a softmax of the whole score matrix",
                      MathAttentionWarning, stacklevel=2)
        return _math(query, key, value, attn_mask, s, is_causal)
    return sdpa(query, key, value, attn_mask, dropout_p, is_causal, scale=scale, enable_gqa=enable_gqa)


def sdpa_compat_no_math(*args, **kwargs) -> torch.Tensor:
    """``sdpa_compat`` with math_ok=False (fallback="eager": Dv != Dq stays PyTorch's SDPA)."""
    return sdpa_compat(*args, **kwargs, math_ok=False)


def sdpa_compatible(gm: torch.fx.GraphModule, math: bool = True) -> int:
    """Point Dynamo's SDPA calls at ``sdpa_compat`` (module doc; ``math``: its math_ok); returns how many."""
    count = 0
    for node in gm.graph.nodes:
        if node.op == "call_function" and node.target is torch.nn.functional.scaled_dot_product_attention:
            node.target = sdpa_compat if math else sdpa_compat_no_math
            count += 1
    if count:
        gm.recompile()
    return count


_VIEWS = {torch.ops.aten.view.default, torch.ops.aten._unsafe_view.default, torch.ops.aten.expand.default,
          torch.ops.aten.unsqueeze.default, torch.ops.aten.squeeze.dim, torch.ops.aten.slice.Tensor,
          torch.ops.aten.select.int, torch.ops.aten.permute.default, torch.ops.aten.transpose.int,
          torch.ops.aten.clone.default, torch.ops.aten.alias.default, torch.ops.aten.reshape.default}
_AND = {torch.ops.aten.bitwise_and.Tensor, torch.ops.aten.logical_and.default}
_OR = {torch.ops.aten.bitwise_or.Tensor, torch.ops.aten.logical_or.default}
_NOT = {torch.ops.aten.bitwise_not.default, torch.ops.aten.logical_not.default}


_CMP = {torch.ops.aten.eq.Scalar: "eq", torch.ops.aten.ne.Scalar: "ne", torch.ops.aten.gt.Scalar: "gt",
        torch.ops.aten.ge.Scalar: "ge", torch.ops.aten.lt.Scalar: "lt", torch.ops.aten.le.Scalar: "le"}
_TINY = 2.0 ** 75  # applied twice: 2^150 lifts fp32's smallest subnormal (2^-149) past 1, and any nonzero |d|


class _BoolAsFloat:
    """A boolean mask's producers re-emitted on fp32 0 / 1 tensors (the instruction types compute in floats).

    x != 0 is min(|x| 2^150, 1) (x as fp32: exact for integers below 2^24 and for any float, subnormals
    included; the scale is two multiplies by 2^75), which covers casts to bool (a tokenizer's
    attention_mask, int or float) and comparisons with a Python scalar through d = x - c: ne min(|d| 2^150, 1),
    gt clamp(d 2^150, 0, 1), lt clamp(-d 2^150, 0, 1), and eq / le / ge as 1 minus ne / gt / lt; a float
    operand also gets eager's NaN and infinity rules (``compare``); a number is rounded to a 16-bit operand's
    dtype first, as eager does. And / or / not are *, max and 1 - x of their operands' truth; views are the
    same views; constants become fp32 constants; any other boolean tensor (a graph input) is cast.
    ``convert`` returns None for other producers (the mask is left alone)."""

    def __init__(self, gm: torch.fx.GraphModule, before: torch.fx.Node, fake_mode):
        self.gm, self.before, self.fake_mode, self.done = gm, before, fake_mode, {}

    def _emit(self, target, args, kwargs=None) -> torch.fx.Node:
        with self.gm.graph.inserting_before(self.before), self.fake_mode:
            return emit(self.gm, target, args, kwargs)

    def _constant(self, name: str, value: torch.Tensor) -> torch.fx.Node:
        """A get_attr of ``value`` registered as ``name`` (once per graph), before ``self.before``."""
        if not hasattr(self.gm, name):
            self.gm.register_buffer(name, value, persistent=False)
        with self.gm.graph.inserting_before(self.before):
            const = self.gm.graph.get_attr(name)
        const.meta["val"] = getattr(self.gm, name)
        return const

    def convert(self, n) -> Optional[torch.fx.Node]:
        if not isinstance(n, torch.fx.Node):
            return None
        if n not in self.done:
            self.done[n] = self._convert(n)
        return self.done[n]

    def _convert(self, n: torch.fx.Node) -> Optional[torch.fx.Node]:
        aten = torch.ops.aten
        val = n.meta.get("val")
        if not isinstance(val, torch.Tensor) or val.dtype != torch.bool:
            return None
        if n.op == "get_attr":
            value = getattr(self.gm, str(n.target), None)
            if not isinstance(value, torch.Tensor):
                return None
            return self._constant(f"{n.target}_f32", value.to(torch.float32))
        if n.op != "call_function":  # a boolean graph input: 0 / 1 by a cast
            return self._emit(aten._to_copy.default, (n,), {"dtype": torch.float32})
        t, args = n.target, n.args
        if t is aten._to_copy.default:
            x = args[0]
            xv = x.meta.get("val") if isinstance(x, torch.fx.Node) else None
            if not isinstance(xv, torch.Tensor) or xv.is_complex():
                return None
            if xv.dtype == torch.bool:
                return self.convert(x)
            f = self._as_f32(x)
            if f is None:
                return None
            return self.compare(f, 0.0, "ne", xv.dtype.is_floating_point)
        if t in _CMP and len(args) == 2 and isinstance(args[1], (int, float)) and isinstance(args[0], torch.fx.Node):
            xv = args[0].meta.get("val")
            if not isinstance(xv, torch.Tensor) or xv.dtype == torch.bool or xv.is_complex():
                return None
            f = self._as_f32(args[0])
            if f is None:
                return None
            c = float(args[1])
            if xv.dtype in (torch.bfloat16, torch.float16):  # eager rounds the number to the tensor's dtype
                c = float(torch.tensor(c, dtype=xv.dtype))
            return self.compare(f, c, _CMP[t], xv.dtype.is_floating_point)
        if t in _VIEWS:
            x = self.convert(args[0])
            return None if x is None else self._emit(t, (x,) + tuple(args[1:]), dict(n.kwargs))
        if t in _AND or t in _OR:
            a, b = self._truth(args[0]), self._truth(args[1])
            if a is None or b is None:
                return None
            return self._emit(aten.mul.Tensor if t in _AND else aten.maximum.default, (a, b))
        if t in _NOT:
            a = self._truth(args[0])
            return None if a is None else self._emit(aten.rsub.Scalar, (a, 1.0))
        return None

    def _truth(self, x) -> Optional[torch.fx.Node]:
        """An operand of and / or / not as 0 / 1: a boolean converted, a number's truth (logical_and of
        integers: x != 0)."""
        xv = x.meta.get("val") if isinstance(x, torch.fx.Node) else None
        if not isinstance(xv, torch.Tensor):
            return None
        f = self.convert(x) if xv.dtype == torch.bool else self._as_f32(x)
        if f is None or xv.dtype == torch.bool:
            return f
        return self.compare(f, 0.0, "ne", xv.dtype.is_floating_point)

    def compare(self, a: torch.fx.Node, b, op: str, may_nan: bool, b_may_nan: bool = False) -> torch.fx.Node:
        """``a <op> b`` as 0 / 1 (a fp32, b fp32 or a number; op eq ne gt ge lt le) through d = a - b, with
        eager's rules for floats (``may_nan``: a may hold NaN or inf; ``b_may_nan``: b too): a comparison with
        a NaN is false but for !=, and equal infinities are equal (their difference, NaN, counts as 0). The
        NaN handling uses ``megakittens.select``, so integer and boolean masks (no NaN) keep the plain form."""
        aten = torch.ops.aten
        d = self._emit(aten.sub.Tensor, (a, b))
        nan = None
        if may_nan or b_may_nan:
            nan = self._isnan(a) if may_nan else None
            if b_may_nan:
                nb = self._isnan(b)
                nan = nb if nan is None else self._emit(aten.maximum.default, (nan, nb))
            d = self._select(self._emit(aten.rsub.Scalar, (self._isnan(d), 1.0)), d)
        f = self._nonzero(d, {"eq": "ne", "le": "gt", "ge": "lt"}.get(op, op))
        if op in ("eq", "le", "ge"):
            f = self._emit(aten.rsub.Scalar, (f, 1.0))
        if nan is None:
            return f
        f = self._select(self._emit(aten.rsub.Scalar, (nan, 1.0)), f)
        return self._emit(aten.add.Tensor, (f, nan)) if op == "ne" else f

    def _select(self, m: torch.fx.Node, x: torch.fx.Node) -> torch.fx.Node:
        return self._emit(torch.ops.megakittens.select.default, (m, x))

    def _isnan(self, x: torch.fx.Node) -> torch.fx.Node:
        """1 where the fp32 x is NaN, else 0: clamp(x, -1, 1) is finite but for NaN, so its difference with
        itself is 0 but for NaN, and select reads NaN as nonzero."""
        aten = torch.ops.aten
        c = self._emit(aten.clamp.default, (x, -1.0, 1.0))
        one = self._constant("_mk_one_f32", torch.ones(1, device=x.meta["val"].device))
        return self._select(self._emit(aten.sub.Tensor, (c, c)), one)

    def _as_f32(self, x: torch.fx.Node) -> torch.fx.Node:
        if x.meta["val"].dtype == torch.float32:
            return x
        return self._emit(torch.ops.aten._to_copy.default, (x,), {"dtype": torch.float32})

    def _nonzero(self, d: torch.fx.Node, op: str) -> torch.fx.Node:
        """0 / 1 of d != 0 ("ne"), d > 0 ("gt") or d < 0 ("lt"), d fp32."""
        aten = torch.ops.aten
        if op == "ne":
            d = self._emit(aten.abs.default, (d,))
        elif op == "lt":
            d = self._emit(aten.neg.default, (d,))
        big = self._emit(aten.mul.Tensor, (self._emit(aten.mul.Tensor, (d, _TINY)), _TINY))
        return self._emit(aten.clamp.default, (big, 0.0, 1.0))


def _unrepeat_kv(n):
    """k0 when ``n`` is Hugging Face's ``repeat_kv(k0, G)`` (unsqueeze(k0, 2) -> expand (B, Hk, G, S, D) ->
    clone -> view (B, Hk G, S, D); no clone when Hk = 1), the pattern src/trace/fuse_repeat_kv.cpp folds into
    Attention's GQA; else ``n``. The math reads k0 by groups instead, with no rank-5 copy."""
    aten = torch.ops.aten
    if not (isinstance(n, torch.fx.Node) and n.op == "call_function" and
            n.target in (aten.view.default, aten._unsafe_view.default, aten.reshape.default)):
        return n
    e = n.args[0]
    if isinstance(e, torch.fx.Node) and e.op == "call_function" and e.target is aten.clone.default:
        e = e.args[0]
    if not (isinstance(e, torch.fx.Node) and e.op == "call_function" and e.target is aten.expand.default):
        return n
    u = e.args[0]
    if not (isinstance(u, torch.fx.Node) and u.op == "call_function" and u.target is aten.unsqueeze.default and
            u.args[1] == 2 and isinstance(u.args[0], torch.fx.Node)):
        return n
    k0, ev = u.args[0], e.meta.get("val")
    k0v, nv = k0.meta.get("val"), n.meta.get("val")
    if not all(isinstance(t, torch.Tensor) for t in (k0v, ev, nv)) or k0v.dim() != 4 or ev.dim() != 5 or \
            list(ev.shape) != [k0v.shape[0], k0v.shape[1], ev.shape[2], k0v.shape[2], k0v.shape[3]] or \
            list(nv.shape) != [k0v.shape[0], k0v.shape[1] * ev.shape[2], k0v.shape[2], k0v.shape[3]]:
        return n
    return k0


def _mask_as(mask: torch.fx.Node, conv: _BoolAsFloat) -> "tuple[Optional[torch.fx.Node], str]":
    """(node, kind) of ``_math``'s mask: a float mask as it is; a boolean one (True = attend: SDPA's rule) as a
    0 / 1 "keep" float; the float form PyTorch builds of a boolean mask for its CUDA kernels (``zeros_like(m)
    .masked_fill(~m, -inf)``) as "drop" of the filled positions. (None, "") when it cannot be converted."""
    mv = mask.meta.get("val")
    if not isinstance(mv, torch.Tensor):
        return None, ""
    if mv.dtype == torch.bool:
        f = conv.convert(mask)
        return (f, "keep") if f is not None else (None, "")
    if not mv.dtype.is_floating_point:
        return None, ""
    aten = torch.ops.aten
    mask = _mask_values(mask)
    if mask.op == "call_function" and mask.target is aten.masked_fill.Scalar and len(mask.args) == 3 and \
            mask.args[2] == -math.inf and isinstance(mask.args[0], torch.fx.Node) and \
            mask.args[0].op == "call_function" and mask.args[0].target in (aten.zeros_like.default, aten.zeros.default):
        f = conv.convert(mask.args[1])
        if f is not None:
            return f, "drop"
    if mask.op == "call_function" and mask.target is aten.where.self and len(mask.args) == 3:
        # where(c, 0, -inf) (Hugging Face's sdpa mask, and SDPA's own conversion) keeps c; where(c, -inf, 0) drops c
        a, b = (_scalar(conv.gm, x) for x in mask.args[1:])
        f = conv.convert(mask.args[0])
        if f is not None and (a, b) in ((0.0, -math.inf), (-math.inf, 0.0)):
            return f, "keep" if a == 0.0 else "drop"
        # where(c, x, y) with finite branches (T5: where(mask, position_bias, finfo.min)): x c + y (1 - c)
        if f is not None and all(v is None or math.isfinite(v) for v in (a, b)) and \
                all(isinstance(x, torch.fx.Node) and x.meta["val"].dtype.is_floating_point for x in mask.args[1:]):
            x, y = mask.args[1:]
            keep = conv._emit(aten.mul.Tensor, (conv._as_f32(x), f))
            drop = conv._emit(aten.mul.Tensor, (conv._as_f32(y), conv._emit(aten.rsub.Scalar, (f, 1.0))))
            return conv._emit(aten.add.Tensor, (keep, drop)), "additive"
    if mask.op == "call_function" and mask.target is aten.add.Tensor and len(mask.args) == 2 and not mask.kwargs \
            and all(isinstance(x, torch.fx.Node) for x in mask.args):
        # A sum of masks (MPNet: its position bias plus where(padding, 0, finfo.min)): each term converted
        parts = [_mask_as(x, conv) for x in mask.args]
        if all(p[0] is not None for p in parts) and any(p != (x, "additive") for p, x in zip(parts, mask.args)):
            return conv._emit(aten.add.Tensor, tuple(_additive(conv, *p) for p in parts)), "additive"
    return mask, "additive"


def _additive(conv: _BoolAsFloat, f: torch.fx.Node, kind: str) -> torch.fx.Node:
    """``_mask_as``'s (node, kind) as an additive mask: a 0 / 1 mask f ("keep": 1 where kept, "drop": 1 where
    dropped) becomes 0 where kept and -inf where dropped ((f - 1) 2^200, or -f 2^200, in fp32)."""
    aten = torch.ops.aten
    if kind == "additive":
        return f
    f = conv._emit(aten.sub.Tensor, (f, 1.0)) if kind == "keep" else conv._emit(aten.neg.default, (f,))
    return conv._emit(aten.mul.Tensor, (conv._emit(aten.mul.Tensor, (f, _BIG)), _BIG))


def _mask_values(mask: torch.fx.Node) -> torch.fx.Node:
    """The node whose values ``mask`` broadcasts: through clones and aliases (T5 clones its where), expands
    (PyTorch's CUDA SDPA expands a mask to (B, H, Sq, Sk)) and a pad of the last dim sliced back off (its
    memory-efficient kernel's 16-element alignment of the bias rows). Both consumers of the result (Attention's
    mask, the math's add) broadcast it themselves."""
    aten = torch.ops.aten

    def arg0(n):
        return n.args[0] if n.args and isinstance(n.args[0], torch.fx.Node) else None

    while mask.op == "call_function":
        x = arg0(mask)
        if x is None:
            break
        if mask.target in (aten.clone.default, aten.alias.default, aten.expand.default):
            mask = x
        elif mask.target is aten.slice.Tensor and x.op == "call_function" and \
                x.target is aten.constant_pad_nd.default and isinstance(arg0(x), torch.fx.Node):
            y, pad = arg0(x), list(x.args[1])
            dim, start, end = (list(mask.args[1:]) + [0, 0, None])[:3]
            n = y.meta["val"].shape[-1]
            if len(pad) != 2 or pad[0] != 0 or dim not in (-1, y.meta["val"].dim() - 1) or start != 0 or \
                    end is None or min(end, n + pad[1]) != n:
                break
            mask = y
        else:
            break
    return mask


def _scalar(gm: torch.fx.GraphModule, n) -> Optional[float]:
    """The value of a one-element constant (a folded ``scalar_tensor``: a get_attr of gm), else None."""
    if isinstance(n, (int, float)):
        return float(n)
    if isinstance(n, torch.fx.Node) and n.op == "get_attr":
        value = getattr(gm, str(n.target), None)
        if isinstance(value, torch.Tensor) and value.numel() == 1:
            return float(value.item())
    return None


_BIG = 2.0 ** 100  # applied twice: (f - 1) 2^200 is -inf for f = 0 and 0 for f = 1


def _attention_mask(node: torch.fx.Node, mask: torch.fx.Node, qv: torch.Tensor, kv: torch.Tensor,
                    conv: _BoolAsFloat, done: dict) -> bool:
    """Give the SDPA ``node`` Attention's mask in place of ``mask``: additive, of the query's dtype, 4-D, each of (B, H, Sq,
    Sk) or 1 but Sk ([Note: attention mask], src/itypes/attention.h). A boolean mask
    (or PyTorch's float form of one) becomes 0 where a key is kept and -inf where it is dropped; a float mask
    is cast to the query's dtype (bfloat16 or float16: what SDPA wants of the mask anyway). False (node unchanged) when the
    mask is neither. ``conv`` and ``done`` ((converted mask, kind) -> Attention's mask) are shared by the SDPA
    calls of one graph: a model's layers mask alike, and a conversion made for an earlier call precedes the
    later ones."""
    aten = torch.ops.aten
    conv.before = node
    add, kind = _mask_as(mask, conv)
    B, H, Sq, Sk = qv.shape[0], qv.shape[1], qv.shape[2], kv.shape[2]
    causal = None
    if add is not None and kind != "additive" and not _bound_args(node).get("is_causal"):
        causal = _causal_factor(conv.gm, add, kind, Sq, Sk)
        if causal is not None:
            add, kind = causal
    mv = add.meta.get("val") if add is not None else None
    if not isinstance(mv, torch.Tensor) or mv.dim() > 4:
        return False
    shape4 = (1,) * (4 - mv.dim()) + tuple(mv.shape)
    if any(d not in (1, want) for d, want in zip(shape4, (B, H, Sq, Sk))) or shape4[3] != Sk:
        return False
    if (add, kind) in done:
        add = done[(add, kind)]
    else:
        key = (add, kind)
        add = _additive(conv, add, kind)  # f: 1 where kept ("keep") or dropped ("drop")
        want = qv.dtype if qv.dtype in (torch.bfloat16, torch.float16) else torch.bfloat16
        if add.meta["val"].dtype != want:
            add = conv._emit(aten._to_copy.default, (add,), {"dtype": want})
        if tuple(add.meta["val"].shape) != shape4:
            add = conv._emit(aten.view.default, (add, list(shape4)))
        done[key] = add
    node.replace_input_with(mask, add)
    if causal is not None:
        fold.set_sdpa_arg(node, "is_causal", True)
    return True


def _causal_factor(gm: torch.fx.GraphModule, f: torch.fx.Node, kind: str, sq: int, sk: int):
    """(x, "keep") when the 0 / 1 mask ``f`` (``kind`` "keep" or "drop", as ``_mask_as`` gives) keeps key j of
    query i only where j <= i and x does: the product of SDPA's causal mask (a constant, top-left aligned) and
    x, as Hugging Face builds a padding mask (and_masks(causal, padding)). Attention then takes is_causal and
    the mask x, so the blocks past the diagonal are skipped as without a mask. None otherwise."""
    aten = torch.ops.aten

    def call(n, target):
        return isinstance(n, torch.fx.Node) and n.op == "call_function" and n.target is target

    if kind == "drop":  # 1 - keep (PyTorch's float form of a boolean mask: masked_fill(~m, -inf))
        if not (call(f, aten.rsub.Scalar) and f.args[1] == 1.0):
            return None
        f = f.args[0]
    while call(f, aten.expand.default):
        f = f.args[0]
    if not call(f, aten.mul.Tensor):
        return None
    for c, x in (f.args, f.args[::-1]):
        value = getattr(gm, str(c.target), None) if isinstance(c, torch.fx.Node) and c.op == "get_attr" else None
        if isinstance(value, torch.Tensor) and value.dtype.is_floating_point and value.dim() >= 2 and \
                tuple(value.shape[-2:]) == (sq, sk) and isinstance(x, torch.fx.Node) and \
                bool((value == torch.ones(sq, sk, device=value.device).tril()).all()):
            return x, "keep"
    return None


def decompose_unsupported_sdpa(gm: torch.fx.GraphModule, math_ok: bool = True) -> int:
    """Rewrite the SDPA nodes of ``gm`` that Attention cannot take (module doc) in place; returns how many.
    Masks Attention can take become its additive bf16 mask first (``_attention_mask``); ``math_ok=False``
    (fallback="eager") does only that, and leaves the rest to PyTorch's SDPA."""
    count, masked, padded, why, done, conv = 0, 0, 0, set(), {}, None
    for node in list(gm.graph.nodes):
        if node.op != "call_function" or str(node.target) not in _TARGETS:
            continue
        bound = _bound_args(node)
        q, k, v = (bound.get(n) for n in ("query", "key", "value"))
        k, v = _unrepeat_kv(k), _unrepeat_kv(v)
        mask = next((bound[a] for a in _MASK_ARGS if bound.get(a) is not None), None)
        qv, kv, vv, mv = (x.meta.get("val") if isinstance(x, torch.fx.Node) else None for x in (q, k, v, mask))
        if not all(isinstance(t, torch.Tensor) and t.dim() == 4 for t in (qv, kv, vv)) or \
                (mask is not None and not isinstance(mv, torch.Tensor)):
            continue
        causal = bool(bound.get("is_causal", False))
        fake_mode = torch._guards.detect_fake_mode([qv, kv, vv]) or FakeTensorMode()
        width = _attention_width(qv, vv)
        if width and (bound.get("dropout_p") or 0.0) == 0.0:
            attention = mask is None  # Attention's
            if not attention:
                conv = conv or _BoolAsFloat(gm, node, fake_mode)
                attention = _heads_ok(qv, kv, vv, True) and _attention_mask(node, mask, qv, kv, conv, done)
                masked += attention  # Attention's, with its additive mask
            if attention:
                # Other head dims up to 128 zero-padded (else the tracer's error names the head dim).
                padded += qv.shape[-1] != width and _pad_head_dim(gm, node, width)
                continue
        if not math_ok:
            continue
        # The aten SDPA ops take no enable_gqa: fewer key / value heads reach them only as GQA.
        if (bound.get("dropout_p") or 0.0) != 0.0 or not _heads_ok(qv, kv, vv, True) or not _dims_ok(qv, vv):
            continue
        # Only the attention output may be read (the other outputs are statistics for backward);
        # aten.scaled_dot_product_attention returns that output alone.
        single = str(node.target) == "aten.scaled_dot_product_attention.default"
        users = [] if single else list(node.users)
        if not all(u.op == "call_function" and u.target is operator.getitem for u in users) or \
                any(u.args[1] != 0 and u.users for u in users):
            continue
        outs = [node] if single else [u for u in users if u.args[1] == 0]
        scale = bound.get("scale")
        scale = 1.0 / math.sqrt(qv.shape[-1]) if scale is None else float(scale)
        kind = "additive"
        if mask is not None:
            mask, kind = _mask_as(mask, _BoolAsFloat(gm, node, fake_mode))
            if mask is None:
                continue
        args = [q, k, v] + ([mask] if mask is not None else [])
        order = _memory_order(next((u.meta.get("val") for u in outs), None))
        with fake_mode:
            fakes = [a.meta["val"] for a in args]
            fakes = [_fake(fake_mode, t) for t in fakes]
            sub = make_fx(lambda *t: _math(*t[:3], t[3] if len(t) > 3 else None, scale, causal, kind, order),
                          tracing_mode="real", decomposition_table=decompose.TABLE)(*fakes)
        placeholders = [n for n in sub.graph.nodes if n.op == "placeholder"]
        with gm.graph.inserting_before(node):
            out = gm.graph.graph_copy(sub.graph, dict(zip(placeholders, args)))
        for u in outs:
            u.replace_all_uses_with(out)
        for u in users:
            gm.graph.erase_node(u)
        gm.graph.erase_node(node)
        count += 1
        why.add("a runtime mask" if mask is not None else
                f"head dim {qv.shape[-1]}" + (f" (value {vv.shape[-1]})" if vv.shape[-1] != qv.shape[-1] else ""))
    if count or masked or padded:
        gm.graph.eliminate_dead_code()  # a boolean mask's own producers, now unread
        gm.graph.lint()
        gm.recompile()
        fold.fold_constants(gm)  # _math's causal mask and key padding, a constant mask's conversion, zero columns
    if count:
        warnings.warn(f"megakittens: {count} SDPA call(s) run as two Gemms around a softmax of the whole score "
                      f"matrix ({', '.join(sorted(why))}): the Attention instruction type takes head dims up to "
                      "128 with value's equal, and masks that are additive or boolean ones built by casts, "
                      "comparisons with a number, and / or / not and views; fallback=\"eager\" runs such calls "
                      "as PyTorch's SDPA between megakernels instead", MathAttentionWarning, stacklevel=2)
    return count
