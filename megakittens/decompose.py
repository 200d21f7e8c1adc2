"""Decompositions applied while Dynamo's graph is lowered to aten (``make_fx`` in ``capture_inference``,
AOTAutograd's ``decompositions``): aten ops without an instruction type of their own, rewritten into ops
that have one.

- ``aten.native_layer_norm`` (``nn.LayerNorm``, ``F.layer_norm``; GPT-2, OLMo): the input upcast to fp32,
  mean and biased variance over the normalized dims (two ``mean`` row reductions), ``rsqrt``, then the
  affine weight and bias in fp32 and one rounding back to the input's dtype, the computation eager's CPU
  and CUDA kernels do (torch/_refs ``native_layer_norm``: computation dtype fp32, ``var_mean`` with
  correction 0). Only a normalization over the last dim is rewritten; others stay unsupported and the
  support report names them.
- ``aten.split.Tensor`` / ``aten.split_with_sizes`` (GPT-2's fused q/k/v projection): one ``slice`` view
  per piece, which the tracer reads as a view of the input (no copy).
- ``aten.unbind.int`` (``q, k, v = qkv.unbind(2)``): one ``select`` view per index, as ``split``.
- ``aten.stack`` (interleaved RoPE's ``stack((-x2, x1), -1)``): each input ``unsqueeze``d at ``dim``, then
  one ``cat`` (the Cat instruction type; the unsqueezes are views).

torch's own table (torch._decomp) lowers these to prims (``prims.var``, ``split_with_sizes``) that the
tracer does not take either.
"""
from __future__ import annotations

from typing import Any, Optional, Sequence

import torch

aten = torch.ops.aten


def _layer_norm(x: torch.Tensor, normalized_shape: Sequence[int], weight: Optional[torch.Tensor],
                bias: Optional[torch.Tensor], eps: float) -> Any:
    if len(normalized_shape) != 1 or not x.dtype.is_floating_point:
        return NotImplemented
    xf = x.to(torch.float32)
    mean = xf.mean(-1, keepdim=True)
    centered = xf - mean
    rstd = torch.rsqrt((centered * centered).mean(-1, keepdim=True) + eps)
    out = centered * rstd
    if weight is not None:
        out = out * weight
    if bias is not None:
        out = out + bias
    # contiguous: eager's output is, whatever x's strides (the elementwise ops above keep a transposed x's)
    return out.to(x.dtype).contiguous(), mean, rstd


def _split_sizes(x: torch.Tensor, sizes: Sequence[int], dim: int = 0) -> list:
    dim = dim % x.dim() if x.dim() else 0
    out, start = [], 0
    for n in sizes:
        out.append(aten.slice.Tensor(x, dim, start, start + n))
        start += n
    return out


def _split(x: torch.Tensor, split_size: int, dim: int = 0) -> list:
    n = x.shape[dim]
    if not isinstance(split_size, int) or split_size <= 0:
        return NotImplemented
    sizes = [min(split_size, n - s) for s in range(0, n, split_size)] or [0]
    return _split_sizes(x, sizes, dim)


def _unbind(x: torch.Tensor, dim: int = 0) -> list:
    dim = dim % x.dim() if x.dim() else 0
    return [aten.select.int(x, dim, i) for i in range(x.shape[dim])]


def _stack(tensors: Sequence[torch.Tensor], dim: int = 0) -> Any:
    if not tensors:
        return NotImplemented
    dim = dim % (tensors[0].dim() + 1)
    return aten.cat.default([aten.unsqueeze.default(t, dim) for t in tensors], dim)


TABLE = {
    aten.native_layer_norm.default: _layer_norm,
    aten.split.Tensor: _split,
    aten.split_with_sizes.default: _split_sizes,
    aten.unbind.int: _unbind,
    aten.stack.default: _stack,
}
