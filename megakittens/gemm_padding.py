"""FX pass over the aten graph: matrix products whose rows TMA cannot address, padded with zeros.

The Gemm instruction loads and stores through TMA, which needs every row of a tensor to start 16 bytes
apart: K and N multiples of 8 in bf16 (src/itypes/gemm.cpp, ``require_tma_rows``). A classification head of
2 labels (``BertForSequenceClassification``, ViT's classifier), an input of 3 features, or a written-out
attention over 197 tokens is not. ``pad_unaligned_products`` rewrites each such ``mm``, ``bmm``, ``addmm``
and ``baddbmm`` (alpha = beta = 1; a bias other than 1-D added after) as the product of zero-padded operands (K and N up to multiples of 8,
``convolution._gemm``), sliced back and copied to eager's contiguous strides. The zeros add nothing, so the
values are the unpadded product's; the padding costs one small Cat per operand per call.

It runs after ``eager_attention.fuse_eager_attention`` and ``sdpa_math`` (a product that becomes an Attention
is never padded) and before the graph is exported; the zero blocks are constants, folded by
``fold.fold_constants`` after it.
"""
from __future__ import annotations

import contextlib
from typing import Optional

import torch
import torch.fx
from torch.fx.experimental.proxy_tensor import make_fx

from megakittens import convolution
from megakittens.fx_nodes import as_fake, call, finish, val

aten = torch.ops.aten


def _unaligned(a: Optional[torch.Tensor], b: Optional[torch.Tensor], outer_ok: bool = True) -> bool:
    """Whether a bf16 / fp16 ``a (.., M, K) @ b (.., K, N)`` has K or N off TMA's 16-byte rows. ``outer_ok``: K = 1 (an
    outer product) is left alone, as the tracer makes mm / bmm of it a broadcast multiply (no Gemm)."""
    return a is not None and b is not None and a.dim() == b.dim() and a.dtype == b.dtype \
        and a.dtype in (torch.bfloat16, torch.float16) \
        and not (outer_ok and a.shape[-1] == 1) and (a.shape[-1] % 8 != 0 or b.shape[-1] % 8 != 0)


def _mm(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return convolution._gemm(a[None], b.t()[None], None)[0].contiguous()


def _bmm(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return convolution._gemm(a, b.transpose(1, 2), None).contiguous()


def _addmm(bias: torch.Tensor, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    if bias.dim() == 1:
        return convolution._gemm(a[None], b.t()[None], bias)[0].contiguous()
    return _mm(a, b) + bias  # a full bias: added after (the Gemm's bias epilogue may take it back)


def _baddbmm(bias: torch.Tensor, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return _bmm(a, b) + bias


def _padded(node: torch.fx.Node):
    """(function, operand nodes) that computes ``node`` on padded operands, else None."""
    if call(node, aten.mm.default, aten.bmm.default) and not node.kwargs and _unaligned(*map(val, node.args)):
        return (_mm if node.target is aten.mm.default else _bmm), list(node.args)
    if call(node, aten.addmm.default, aten.baddbmm.default) and not node.kwargs and len(node.args) == 3 and \
            _unaligned(val(node.args[1]), val(node.args[2]), outer_ok=False):
        bias = val(node.args[0])
        if bias is not None and bias.dtype == val(node.args[1]).dtype:
            return (_addmm if node.target is aten.addmm.default else _baddbmm), list(node.args)
    return None


def pad_unaligned_products(gm: torch.fx.GraphModule) -> int:
    """Rewrite each product of ``gm`` that TMA cannot address (module doc) in place; returns how many."""
    count = 0
    for node in list(gm.graph.nodes):
        p = _padded(node)
        if p is None:
            continue
        fn, operands = p
        vals = [val(a) for a in operands]
        mode = torch._guards.detect_fake_mode(vals)
        vals = as_fake(mode, vals)  # a folded constant operand: faked beside the others
        with mode or contextlib.nullcontext():
            sub = make_fx(fn)(*vals)  # the padded product as aten ops, on the operands' fake values
        inputs = [n for n in sub.graph.nodes if n.op == "placeholder"]
        with gm.graph.inserting_before(node):
            out = gm.graph.graph_copy(sub.graph, dict(zip(inputs, operands)))
        node.replace_all_uses_with(out)
        count += 1
    return finish(gm, count)
