"""Decompositions applied while Dynamo's graph is lowered to aten (``make_fx`` in ``capture_inference``,
AOTAutograd's ``decompositions``): aten ops without an instruction type of their own, rewritten into ops
that have one.

- ``aten.native_layer_norm`` (``nn.LayerNorm``, ``F.layer_norm``; GPT-2, BERT, ViT, OLMo): output 0 is one
  LayerNorm instruction (``megakittens::layer_norm``: mean and biased variance in fp32, the affine weight and
  bias in fp32, one rounding back to the input's dtype, the computation eager's CPU and CUDA kernels do:
  torch/_refs ``native_layer_norm``, ``var_mean`` with correction 0); the mean and rstd outputs as row
  reductions, dropped when nothing reads them. Only a normalization over the last dim is rewritten; others
  stay unsupported and the support report names them.
- ``aten.split.Tensor`` / ``aten.split_with_sizes`` (GPT-2's fused q/k/v projection): one ``slice`` view
  per piece, which the tracer reads as a view of the input (no copy).
- ``aten.unbind.int`` (``q, k, v = qkv.unbind(2)``): one ``select`` view per index, as ``split``.
- ``aten.stack`` (interleaved RoPE's ``stack((-x2, x1), -1)``): each input ``unsqueeze``d at ``dim``, then
  one ``cat`` (the Cat instruction type; the unsqueezes are views).

- ``aten.convolution`` whose kernel tiles its input (stride == kernel size, no padding, no dilation, one group,
  not transposed, 1-D or 2-D): the patch embedding of ViT, CLIP and SigLIP vision encoders. Each output
  position reads its own patch, so the convolution is one matrix product: the patches gathered as rows by
  two 4-D permute copies (channels after patch rows, then the kernel's columns after patch columns), times
  the weight viewed as (out channels, in channels x kernel) and transposed, plus the bias, then copied to
  NCHW as eager returns it. A patch of a length that is not a multiple of 16 bytes (14 x 14 x 3 values) is
  padded with zero columns in both operands, and an output channel count that is not with zero filters
  (sliced off; TMA's row alignment). Rows and columns past the last whole
  patch are dropped, as the convolution drops them.

- ``aten._softmax``, ``aten._safe_softmax`` and ``aten._log_softmax`` over the last dim (a model's own
  softmax; the SDPA math of megakittens/sdpa_math.py): one Softmax row instruction
  (``megakittens::softmax``): the row max subtracted, exponentials, their sum, in fp32, rounded once to the
  output dtype, as eager's kernels compute it. ``_safe_softmax`` gives 0 on a row of -inf (a fully masked
  row) where softmax gives NaN.

- ``aten.baddbmm`` with ``alpha`` or ``beta`` other than 1 (BLOOM's ALiBi scores): the batched product,
  then ``alpha * product + beta * input`` in fp32, rounded once (the product itself is rounded first).

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
    # The statistics, for a caller that reads them (training); inference leaves them unread and
    # backend.compile_graph drops them.
    xf = x.to(torch.float32)
    mean = xf.mean(-1, keepdim=True)
    centered = xf - mean
    rstd = torch.rsqrt((centered * centered).mean(-1, keepdim=True) + eps)
    return torch.ops.megakittens.layer_norm(x, weight, bias, eps), mean, rstd


def _convolution(x: torch.Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor], stride: Sequence[int],
                 padding: Sequence[int], dilation: Sequence[int], transposed: bool, output_padding: Sequence[int],
                 groups: int) -> Any:
    nd = weight.dim() - 2
    kernel = list(weight.shape[2:])
    if nd not in (1, 2) or x.dim() != nd + 2 or transposed or groups != 1 or list(stride) != kernel or \
            any(padding) or any(d != 1 for d in dilation) or not x.dtype.is_floating_point:
        return NotImplemented
    if nd == 1:  # (B, C, L) as (B, C, 1, L) with a (1, k) kernel
        out = _convolution(x.unsqueeze(2), weight.unsqueeze(2), bias, [1, kernel[0]], [0, 0], [1, 1], False, [0, 0], 1)
        return NotImplemented if out is NotImplemented else out.squeeze(2)
    B, C, H, W = x.shape
    O, _, ph, pw = weight.shape
    Ho, Wo = H // ph, W // pw
    if Ho == 0 or Wo == 0:
        return NotImplemented
    x = x[:, :, :Ho * ph, :Wo * pw]
    # (B, C, Ho, ph * W') -> (B, Ho, C, ph * W'): a patch row's channels together
    rows = x.reshape(B, C, Ho, ph * Wo * pw).permute(0, 2, 1, 3).contiguous()
    # (B Ho, C ph, Wo, pw) -> (B Ho, Wo, C ph, pw): one patch's C x ph x pw values in a row
    K = C * ph * pw
    patches = rows.view(B * Ho, C * ph, Wo, pw).permute(0, 2, 1, 3).contiguous().view(B * Ho * Wo, K)
    w = weight.reshape(O, K)
    align = 16 // x.element_size()  # TMA rows are 16-byte multiples (a 14 x 14 RGB patch is 588 values)
    zeros = lambda *n: torch.zeros(*n, dtype=x.dtype, device=x.device)  # noqa: E731 (folded: no input)
    pad = -K % align
    if pad:
        patches = torch.cat([patches, zeros(B * Ho * Wo, pad)], 1)
        w = torch.cat([w, zeros(O, pad)], 1)
    out_pad = -O % align  # output rows too: zero filters, sliced off below
    if out_pad:
        w = torch.cat([w, zeros(out_pad, w.shape[1])], 0)
        bias = torch.cat([bias, zeros(out_pad).to(bias.dtype)]) if bias is not None else None
    y = torch.addmm(bias, patches, w.t()) if bias is not None else torch.mm(patches, w.t())
    y = y[:, :O]
    # NCHW, contiguous as eager's convolution returns it
    return y.view(B, Ho, Wo, O).permute(0, 3, 1, 2).contiguous()


def _softmax_op(x: torch.Tensor, dim: int, log: bool, safe: bool, out: torch.dtype) -> Any:
    if x.dim() == 0 or dim % x.dim() != x.dim() - 1 or not x.dtype.is_floating_point:
        return NotImplemented
    return torch.ops.megakittens.softmax(x, log, safe, str(out).removeprefix("torch."))


def _softmax(x: torch.Tensor, dim: int, half_to_float: bool) -> Any:
    return _softmax_op(x, dim, False, False, torch.float32 if half_to_float else x.dtype)


def _safe_softmax(x: torch.Tensor, dim: int, dtype: Optional[torch.dtype] = None) -> Any:
    return _softmax_op(x, dim, False, True, dtype or x.dtype)


def _log_softmax(x: torch.Tensor, dim: int, half_to_float: bool) -> Any:
    return _softmax_op(x, dim, True, False, torch.float32 if half_to_float else x.dtype)


def _baddbmm(x: torch.Tensor, b1: torch.Tensor, b2: torch.Tensor, *, beta: float = 1, alpha: float = 1) -> Any:
    if beta == 1 and alpha == 1:
        return NotImplemented  # the Gemm's bias epilogue
    return (torch.bmm(b1, b2).to(torch.float32) * alpha + x.to(torch.float32) * beta).to(torch.result_type(x, b1))


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
    aten.convolution.default: _convolution,
    aten.baddbmm.default: _baddbmm,
    aten._softmax.default: _softmax,
    aten._safe_softmax.default: _safe_softmax,
    aten._log_softmax.default: _log_softmax,
    aten.split.Tensor: _split,
    aten.split_with_sizes.default: _split_sizes,
    aten.unbind.int: _unbind,
    aten.stack.default: _stack,
}
