"""FX passes over the aten graph: attention written out as matmul -> softmax -> matmul becomes one SDPA.

Hugging Face's ``eager_attention_forward`` (``attn_implementation="eager"``, and the models without an SDPA
path), nanoGPT and many hand-written models compute attention as

    S = q @ k^T  [* c | / c]  [+ mask | .masked_fill(m, -inf) | where(m, S, -inf)]  [.float()]
    P = softmax(S, -1)  [.to(q.dtype)]
    O = P @ v

``fuse_eager_attention`` matches that chain as AOTAutograd and ``decompose.py`` lower it (``expand`` ->
``view`` -> ``bmm`` -> ``_unsafe_view`` for each matmul, ``megakittens.softmax`` for the softmax) and puts
``aten.scaled_dot_product_attention(q, k, v, attn_mask, scale=c)`` in O's place, so it runs as the Attention
instruction (no score matrix in memory; ``fold.fold_constants`` turns a constant causal mask into
``is_causal``) or as ``sdpa_math`` for the rest. Hugging Face's ``repeat_kv`` in front of k and v is looked
through (GQA), and so are scales on the operands (timm's ``q * scale``) and casts of them to fp32. That also
takes in PyTorch's own math SDPA, which an SDPA call becomes wherever the dispatcher picks the math backend
(``sdpa_kernel(SDPBackend.MATH)``, or inputs no fused kernel takes): q, k and v cast to fp32, q and k^T each
scaled by sqrt(scale), the product P @ v in fp32 and cast back. Inductor fuses the same family of patterns
(torch/_inductor/fx_passes/fuse_attention.py).

It differs from the written-out chain only in rounding: SDPA keeps the scores in fp32 where the chain rounds
q @ k^T to q's dtype before scaling and masking; a row whose every key is masked with -inf gives zeros
(``_safe_softmax``) instead of NaN. It is left alone when any intermediate is read elsewhere (a model that
returns its attention weights), when the softmax is a log_softmax or not over the keys, when the mask is of
another floating dtype than q (SDPA takes bool or q's dtype) or a masked_fill with a finite value (that is
not a mask: the row keeps the value's weight), and when the operands are not 4-D.
"""
from __future__ import annotations

import math
from typing import Optional

import torch
import torch.fx

from megakittens.fx_nodes import call, emit, fake_mode, finish, RESHAPES, val
from megakittens.sdpa_math import _scalar, _unrepeat_kv

aten = torch.ops.aten


def _only_user(n: torch.fx.Node) -> Optional[torch.fx.Node]:
    """The one reader of ``n`` that is not itself dead (PyTorch's math SDPA leaves an unread cast of P)."""
    users = [u for u in n.users if u.users or u.op != "call_function" or u.is_impure()]
    return users[0] if len(users) == 1 else None


def _batched_operand(n) -> Optional[torch.fx.Node]:
    """X (4-D) when ``n`` is a bmm operand made of it by matmul's lowering: view / _unsafe_view to
    (B H, M, K) of an optional contiguous clone of ``expand(X, X.shape)``; else None."""
    if not call(n, *RESHAPES):
        return None
    x = n.args[0]
    if call(x, aten.clone.default):
        x = x.args[0]
    if not call(x, aten.expand.default):
        return None
    x = x.args[0]
    xv, nv = val(x), val(n)
    if xv is None or nv is None or xv.dim() != 4 or nv.dim() != 3 or \
            list(nv.shape) != [xv.shape[0] * xv.shape[1], xv.shape[2], xv.shape[3]]:
        return None
    return x


def _untransposed(n) -> Optional[torch.fx.Node]:
    """k when ``n`` is k with its last two dims swapped (transpose or permute), else None."""
    if call(n, aten.transpose.int) and sorted(d % 4 for d in n.args[1:3]) == [2, 3]:
        return n.args[0]
    if call(n, aten.permute.default) and [d % 4 for d in n.args[1]] == [0, 1, 3, 2]:
        return n.args[0]
    return None


def _bmm_of(out) -> "Optional[tuple[torch.fx.Node, torch.fx.Node]]":
    """(A, B) 4-D when ``out`` is ``A @ B`` as matmul lowers it (bmm of the batched operands, viewed back to
    4-D), else None."""
    if not call(out, *RESHAPES) or not call(out.args[0], aten.bmm.default) or _only_user(out.args[0]) is None:
        return None
    a, b = (_batched_operand(x) for x in out.args[0].args[:2])
    ov = val(out)
    if a is None or b is None or ov is None or ov.dim() != 4:
        return None
    return a, b


def _scaled(gm: torch.fx.GraphModule, x) -> "tuple[torch.fx.Node, float] | None":
    """(s, c) when ``x`` is s * c or s / c (as s * (1 / c)) for a finite nonzero number c, else None."""
    if not (call(x, aten.mul.Tensor, aten.div.Tensor, aten.mul.Scalar, aten.div.Scalar) and len(x.args) == 2):
        return None
    c = _scalar(gm, x.args[1])
    if c is None or c == 0.0 or not math.isfinite(c):
        return None
    return x.args[0], c if x.target in (aten.mul.Tensor, aten.mul.Scalar) else 1.0 / c


def _unscaled(gm: torch.fx.GraphModule, x) -> "tuple[torch.fx.Node, float]":
    """(s, c) when ``x`` is an operand s scaled by c before the product (timm's ``q * scale``; PyTorch's math
    SDPA scales q and k^T by sqrt(scale) each), else (x, 1)."""
    sc = _scaled(gm, x)
    return sc if sc is not None else (x, 1.0)


def _number(gm: torch.fx.GraphModule, n) -> Optional[float]:
    """A Python number, a one-element constant, or ``scalar_tensor(v)`` (torch.where's number operand, not
    folded yet): its value, else None."""
    if call(n, aten.scalar_tensor.default) and isinstance(n.args[0], (int, float)):
        return float(n.args[0])
    return _scalar(gm, n)


def _uncast(n):
    """x when ``n`` is a bf16 / fp16 x cast to fp32 (GPT-J multiplies q and k in fp32, PyTorch's math SDPA all
    three operands: the products of 16-bit values accumulated in fp32, as SDPA's kernels do), else ``n``."""
    if call(n, aten._to_copy.default) and set(n.kwargs) == {"dtype"} and n.kwargs["dtype"] == torch.float32:
        xv = val(n.args[0])
        if xv is not None and xv.dtype in (torch.bfloat16, torch.float16):
            return n.args[0]
    return n


def _source(n):
    """The 16-bit tensor an operand reads: ``n`` less a cast to fp32 and Hugging Face's ``repeat_kv``, in either
    order (the math SDPA repeats the cast k and v for GQA)."""
    return _uncast(_unrepeat_kv(_uncast(n)))


def _big_negative(v, dtype: torch.dtype) -> bool:
    """Whether masked_fill's value ``v`` masks like -inf: -inf, or a finite value of ``dtype`` (finfo.min)
    so far below any score that adding a score to it in fp32 leaves it unchanged, so the additive mask
    where(m, v, 0) gives masked_fill's scores exactly (and a row with every key masked the same uniform
    weights)."""
    if not isinstance(v, (int, float)):
        return False
    return v == -math.inf or (v <= -1e30 and math.isfinite(v) and torch.tensor(v, dtype=dtype).item() == v)


class _Match:
    """What ``_match`` read off one attention chain: SDPA's operands, its mask steps in order (("add",
    tensor), ("fill", boolean tensor, value): the value where True, or ("keep", boolean tensor, value): the
    value where False), its scale, and the P @ v node it replaces."""

    def __init__(self, q, k, v, masks, scale, out):
        self.q, self.k, self.v, self.masks, self.scale, self.out = q, k, v, masks, scale, out


def _match(gm: torch.fx.GraphModule, s: torch.fx.Node) -> Optional[_Match]:
    """The attention chain that starts at the q @ k^T node ``s`` (module doc), walked forward through the
    only reader of each step; None where it is not one."""
    qk = _bmm_of(s)
    if qk is None:
        return None
    (q, cq), (kt, ck) = _unscaled(gm, qk[0]), _unscaled(gm, qk[1])
    k = _untransposed(kt)
    if k is None:
        return None
    k, ck2 = _unscaled(gm, k)
    q, k = _source(q), _source(k)
    qv, kv = val(q), val(k)
    if qv is None or kv is None or kv.dim() != 4 or qv.dtype != kv.dtype or \
            qv.dtype not in (torch.bfloat16, torch.float16):
        return None
    B, H, sq, sk = val(s).shape
    x, scale, masks = s, cq * ck * ck2, []
    if scale <= 0.0:  # SDPA's scale is positive (a negated score matrix stays as written)
        return None
    while True:  # scale, masks and casts up to the softmax
        u = _only_user(x)
        if u is None:
            return None
        if _scaled(gm, u) is not None and u.args[0] is x and not masks:
            scale *= _scaled(gm, u)[1]
            if scale <= 0.0:
                return None
        elif call(u, aten.add.Tensor) and len(u.args) == 2 and not u.kwargs and x in u.args and \
                u.args[0] is not u.args[1]:
            masks.append(("add", u.args[1] if u.args[0] is x else u.args[0]))
        elif call(u, aten.masked_fill.Scalar) and u.args[0] is x and _big_negative(u.args[2], val(x).dtype):
            masks.append(("fill", u.args[1], float(u.args[2])))
        elif call(u, aten.where.self) and u.args[1] is x and _big_negative(_number(gm, u.args[2]), val(x).dtype):
            masks.append(("keep", u.args[0], _number(gm, u.args[2])))  # where(m, S, -inf): fills where m is False
        elif call(u, aten._to_copy.default) and set(u.kwargs) <= {"dtype", "layout", "device"} and \
                u.kwargs.get("dtype") == torch.float32 and val(u).device == val(x).device:
            pass
        elif call(u, torch.ops.megakittens.softmax.default) and u.args[0] is x and u.args[1] is False:
            x = u
            break
        else:
            return None
        x = u
    u = _only_user(x)
    if call(u, aten._to_copy.default) and set(u.kwargs) == {"dtype"}:
        x, u = u, _only_user(u)
    # P's only reader is the P @ v matmul (expand -> [clone] -> view -> bmm -> view), as its first operand.
    while u is not None and not call(u, aten.bmm.default):
        if not call(u, aten.expand.default, aten.clone.default, *RESHAPES):
            return None
        u = _only_user(u)
    out = _only_user(u) if u is not None else None
    pv = _bmm_of(out) if out is not None else None
    if pv is None or pv[0] is not x:
        return None
    v = _source(pv[1])
    vv, ov = val(v), val(out)
    if vv is not None and ov is not None and ov.dtype == torch.float32 and val(pv[1]).dtype == torch.float32 and \
            vv.dtype == qv.dtype:  # P @ v in fp32 (the math SDPA), then cast back: the cast is the output
        out = _only_user(out)
        if not (call(out, aten._to_copy.default) and set(out.kwargs) == {"dtype"} and
                out.kwargs["dtype"] == qv.dtype):
            return None
        ov = val(out)
    if vv is None or vv.dtype != qv.dtype or ov.dtype != qv.dtype:
        return None
    for step in masks:
        mv = val(step[1])
        if mv is None or mv.dim() > 4 or any(a not in (1, b) for a, b in zip(reversed(mv.shape), (sk, sq, H, B))) \
                or (step[0] != "add") != (mv.dtype == torch.bool) or (mv.dtype.is_floating_point and
                                                                        mv.dtype not in (qv.dtype, torch.float32)):
            return None
    return _Match(q, k, v, masks, scale, out)


def _mask(gm: torch.fx.GraphModule, m: _Match):
    """SDPA's attn_mask for the steps of ``m`` (emitted before its out node): None; the boolean ~m of a lone
    masked_fill(m, -inf); else one additive mask (adds summed, masked_fill(m, v) as where(m, v, sum so
    far)), so that scores + mask is what the steps compute."""
    if not m.masks:
        return None
    if len(m.masks) == 1 and m.masks[0][0] != "add" and m.masks[0][2] == -math.inf:
        keep = m.masks[0][1]
        return keep if m.masks[0][0] == "keep" else emit(gm, aten.logical_not.default, (keep,))
    mask = None
    for step in m.masks:
        if step[0] == "add":
            mask = step[1] if mask is None else emit(gm, aten.add.Tensor, (mask, step[1]))
            continue
        on = {"device": val(step[1]).device}  # the mask's device (a CUDA graph's constants live there)
        fill = emit(gm, aten.scalar_tensor.default, (step[2],), on)
        rest = mask if mask is not None else emit(gm, aten.scalar_tensor.default, (0.0,), on)
        mask = emit(gm, aten.where.self, (step[1], fill, rest) if step[0] == "fill" else (step[1], rest, fill))
    return mask


def fuse_eager_attention(gm: torch.fx.GraphModule) -> int:
    """Rewrite each written-out attention of ``gm`` (module doc) as one SDPA node, in place; returns how
    many."""
    count = 0
    for node in list(gm.graph.nodes):
        m = _match(gm, node) if call(node, *RESHAPES) else None
        if m is None:
            continue
        qv, kv = val(m.q), val(m.k)
        with gm.graph.inserting_before(m.out), fake_mode(qv):
            mask = _mask(gm, m)
            sdpa = gm.graph.call_function(
                aten.scaled_dot_product_attention.default, (m.q, m.k, m.v),
                {"attn_mask": mask, "dropout_p": 0.0, "is_causal": False, "scale": m.scale,
                 "enable_gqa": kv.shape[1] != qv.shape[1]})
        sdpa.meta["val"] = m.out.meta["val"]
        m.out.replace_all_uses_with(sdpa)
        count += 1
    return finish(gm, count)
