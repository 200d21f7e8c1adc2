"""FX pass over the aten graph: ``aten.nll_loss_forward`` (``F.cross_entropy`` and ``F.nll_loss`` over (N, C)
scores; a Hugging Face model called with ``labels``) as elementwise ops and row reductions.

The targets are integers, which no instruction type computes, so they are recomputed in fp32 by
``float_ids._IntAsFloat`` (Hugging Face pads the labels with ``ignore_index`` and shifts them by one: a
``constant_pad_nd`` and a slice). With t the fp32 targets, logp the (N, C) log-probabilities, w the class
weights (ones when None), following torch's definition (``torch/_decomp/decompositions.py``
``nll_loss_forward``):

- ``hit[n, c] = (t[n] == c)`` (a comparison with a constant 0 .. C - 1 row), ``picked[n] = sum_c logp * hit``
  (a RowReduce; exact: one nonzero term per row);
- ``valid[n] = (t[n] != ignore_index)``; ``w_t[n] = w[t[n] * valid[n]] * valid[n]``, looked up by an
  Embedding of w viewed (C, 1), which also range-checks each target as eager does: a target outside
  [0, C) that is not ``ignore_index`` raises IndexError (eager: "Target .. is out of bounds");
- reduction "none": ``-picked * w_t``; "sum": its sum; "mean": its sum over ``sum(w_t)`` (NaN when every
  target is ignored, as eager). ``total_weight`` (output 1) is ``sum(w_t)`` (0 for "none", as eager).

In fp32, cast once to the scores' dtype. Scores of another rank (``nll_loss2d``) and targets whose chain does
not convert stay as they are (the support report names the op).
"""
from __future__ import annotations

import operator

import torch
import torch.fx
from torch._subclasses.fake_tensor import FakeTensorMode

from megakittens.float_ids import _EXACT, _IntAsFloat
from megakittens.fx_nodes import call, finish, val

aten = torch.ops.aten


def _rewrite(gm: torch.fx.GraphModule, node: torch.fx.Node) -> bool:
    logp, target, weight, reduction, ignore = (list(node.args) + [None, 1, -100][len(node.args) - 2:])[:5]
    lv, tv = val(logp), val(target)
    wv = val(weight) if weight is not None else None
    # Eager's own checks: int64 targets, weights of the scores' dtype (else the op stays, and is reported).
    if lv is None or tv is None or lv.dim() != 2 or not lv.dtype.is_floating_point or tv.dtype != torch.int64 or \
            reduction not in (0, 1, 2) or abs(ignore) >= _EXACT or lv.shape[1] >= _EXACT or \
            (weight is not None and (wv is None or wv.dtype != lv.dtype)):
        return False
    reads = {u.args[1] for u in node.users if u.target is operator.getitem}
    if len(reads) != len(node.users) or (reduction == 0 and 1 in reads):
        return False
    conv = _IntAsFloat(gm, node, torch._guards.detect_fake_mode([lv]) or FakeTensorMode())
    t = conv.convert(target)
    if t is None:
        return False
    e = conv._emit
    n_rows, c = lv.shape
    cols = conv._constant(f"_mk_cols_f32_{c}", torch.arange(c, dtype=torch.float32, device=lv.device))
    hit = conv.compare(e(aten.unsqueeze.default, (t, -1)), cols, "eq", False)
    picked = e(aten.sum.dim_IntList, (e(aten.mul.Tensor, (conv._as_f32(logp), hit)), [-1]))
    valid = conv.compare(t, float(ignore), "ne", False)
    table = conv._constant(f"_mk_ones_f32_{c}", torch.ones(c, 1, dtype=torch.float32, device=lv.device)) \
        if weight is None else e(aten.view.default, (weight, [c, 1]))
    w_t = e(aten.view.default, (e(torch.ops.megakittens.embedding.default,
                                  (table, e(aten.mul.Tensor, (t, valid)))), [n_rows]))
    w_t = e(aten.mul.Tensor, (conv._as_f32(w_t), valid))
    out = e(aten.neg.default, (e(aten.mul.Tensor, (picked, w_t)),))
    total = None
    if reduction:
        out = e(aten.sum.dim_IntList, (out, [-1]))
        if 1 in reads or reduction == 1:
            total = e(aten.sum.dim_IntList, (w_t, [-1]))
        if reduction == 1:
            out = e(aten.div.Tensor, (out, total))
    results = [out, total]
    for i, r in enumerate(results):
        if r is not None and lv.dtype != torch.float32:
            results[i] = e(aten._to_copy.default, (r,), {"dtype": lv.dtype})
    for u in list(node.users):
        u.replace_all_uses_with(results[u.args[1]])
    return True


def nll_loss_as_reductions(gm: torch.fx.GraphModule) -> int:
    """Rewrite each ``aten.nll_loss_forward`` over (N, C) scores (module doc); returns how many."""
    count = sum(_rewrite(gm, n) for n in list(gm.graph.nodes) if call(n, aten.nll_loss_forward.default))
    return finish(gm, count)
