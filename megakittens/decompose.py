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
- ``aten.linalg_vector_norm`` of order 2 over the last dim (``F.normalize``: Swin v2's cosine attention):
  sqrt of the row sum of squares in fp32, rounded once.
- ``aten.roll`` along given dims (Swin's shifted windows): per dim, the last ``shift`` rows ahead of the rest,
  one ``cat`` of two slices (views).
- ``aten.repeat`` (SigLIP's attention-pooling probe): per dim a Cat of the copies, or an expand merged.
- ``aten.slice_scatter`` with step 1 and ``select_scatter`` (``a[:, :1] = b``, ``a[:, 1] = b``, functionalized):
  one ``cat`` of a's slices around b;
  the functional ``copy`` / ``fill`` that make b: b in a's dtype broadcast, or a constant.
- ``aten.cat`` of more than 16 tensors (DenseNet): a cat of cats of at most 16.
- ``aten.stack`` (interleaved RoPE's ``stack((-x2, x1), -1)``): each input ``unsqueeze``d at ``dim``, then
  one ``cat`` (the Cat instruction type; the unsqueezes are views).

- ``aten.convolution`` (1-D and 2-D, not transposed), ``aten.max_pool2d_with_indices`` (its indices unread),
  ``aten.avg_pool2d``, ``aten._adaptive_avg_pool2d``, ``aten.im2col`` and ``aten.constant_pad_nd``:
  megakittens/convolution.py (a patch embedding as one matrix product, other convolutions by im2col, depthwise
  ones elementwise, max pooling as the maximum of its taps, padding as a Cat with constant blocks).

- ``aten._transformer_encoder_layer_fwd`` and ``aten._native_multi_head_attention`` (the inference fast path of
  ``nn.TransformerEncoderLayer`` / ``nn.MultiheadAttention``): megakittens/native_layers.py.

- ``aten.native_batch_norm`` in eval mode (running statistics; ResNet, RegNet, MobileNet) and
  ``aten.native_group_norm`` (wav2vec2's feature encoder): elementwise in fp32 around per-channel statistics
  (group norm: row means over each group's values, as LayerNorm's), rounded once, as eager's kernels compute
  them. ``aten.mean.dim`` / ``aten.sum.dim_IntList`` over several trailing dims (global average pooling,
  ``x.mean((-2, -1))``): one reduction over the merged last dim; over other dims (and ``amax``: BEiT's mean over
  the tokens), those dims permuted last first (a Copy). ``aten.sum.default`` / ``aten.mean.default``
  (every element: ``x.sum()``): row sums in fp32 over up to 1024 rows, then their sum, rounded once.

- ``aten._weight_norm_interface`` (``nn.utils.weight_norm``: wav2vec2 / HuBERT's positional convolution):
  the norm of v over every dim but one, as a row sum, then v g / norm, in fp32 and rounded once.

- ``aten.hardtanh`` (ReLU6), ``aten.hardsigmoid`` and ``aten.hardswish`` (MobileNet): clamps and products,
  torch's definitions, in fp32 and rounded once as eager's kernels.

- ``aten._softmax``, ``aten._safe_softmax`` and ``aten._log_softmax`` over the last dim (a model's own
  softmax; the SDPA math of megakittens/sdpa_math.py; another dim moved last and back): one Softmax row instruction
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

from megakittens import convolution, native_layers

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


def _batch_norm_eval(x: torch.Tensor, weight: Optional[torch.Tensor], bias: Optional[torch.Tensor],
                     mean: Optional[torch.Tensor], var: Optional[torch.Tensor], training: bool, eps: float) -> Any:
    if training or mean is None or var is None or not x.dtype.is_floating_point or not 2 <= x.dim() <= 4:
        return NotImplemented
    shape = [1, -1] + [1] * (x.dim() - 2)  # per channel (dim 1)
    f32 = lambda t: t.to(torch.float32).reshape(shape)  # noqa: E731
    y = (x.to(torch.float32) - f32(mean)) * torch.rsqrt(f32(var) + eps)
    if weight is not None:
        y = y * f32(weight)
    if bias is not None:
        y = y + f32(bias)
    none = torch.zeros(0, dtype=torch.float32, device=x.device)  # eval's saved statistics are empty
    return y.to(x.dtype), none, none


def _native_batch_norm(x, weight, bias, running_mean, running_var, training, momentum, eps) -> Any:
    return _batch_norm_eval(x, weight, bias, running_mean, running_var, training, eps)


def _batch_norm_no_training(x, weight, bias, running_mean, running_var, momentum, eps) -> Any:
    return _batch_norm_eval(x, weight, bias, running_mean, running_var, False, eps)


def _group_norm(x: torch.Tensor, weight: Optional[torch.Tensor], bias: Optional[torch.Tensor], N: int, C: int,
                HxW: int, group: int, eps: float) -> Any:
    if not x.dtype.is_floating_point or x.dim() > 4 or C % group:
        return NotImplemented
    xf = x.to(torch.float32).reshape(N, group, -1)
    mean = xf.mean(-1, keepdim=True)
    centered = xf - mean
    rstd = torch.rsqrt((centered * centered).mean(-1, keepdim=True) + eps)
    y = (centered * rstd).reshape(N, C, -1)
    if weight is not None:
        y = y * weight.to(torch.float32).reshape(1, C, 1)
    if bias is not None:
        y = y + bias.to(torch.float32).reshape(1, C, 1)
    return y.to(x.dtype).reshape(x.shape), mean.reshape(N, group), rstd.reshape(N, group)


def _trailing_reduction(op, x: torch.Tensor, dim: Optional[Sequence[int]], keepdim: bool = False,
                        dtype: Optional[torch.dtype] = None) -> Any:
    """A mean / sum / amax over the last k > 1 dims (or all of them) as one over their merged last dim; over
    other dims (BEiT's mean over the tokens, dim 1), those dims moved last first (a Copy), then the same."""
    r = x.dim()
    if r == 0:
        return NotImplemented
    dims = sorted({d % r for d in dim}) if dim else list(range(r))
    k = len(dims)
    kw = {} if dtype is None else {"dtype": dtype}
    if dims == [r - 1]:
        return NotImplemented  # the RowReduce itself
    if dims != list(range(r - k, r)):
        rest = [d for d in range(r) if d not in dims]
        out = op(x.permute(rest + dims).reshape(*[x.shape[d] for d in rest], -1), -1, False, **kw)
        return out.reshape([1 if d in dims else x.shape[d] for d in range(r)]) if keepdim else out
    out = op(x.reshape(*x.shape[:r - k], -1), -1, keepdim, **kw)
    return out.reshape(*x.shape[:r - k], *([1] * k)) if keepdim else out


def _full_reduction(x: torch.Tensor, mean: bool, dtype: Optional[torch.dtype]) -> Any:
    """x.sum() / x.mean() (every element, a 0-dim result): row sums of x's elements as (R, N / R) in fp32 (R up
    to 1024, so the rows spread over the SMs), their sum, the mean's division, rounded once to the result
    dtype (eager accumulates a 16-bit tensor in fp32 and rounds once as well)."""
    n = x.numel()
    if x.dim() == 0 or n == 0 or not x.dtype.is_floating_point:
        return NotImplemented
    rows = 1
    while rows < 1024 and n % (rows * 2) == 0 and n // (rows * 2) >= 256:
        rows *= 2
    partial = aten.sum.dim_IntList(x.reshape(rows, n // rows), [-1], False, dtype=torch.float32)
    total = aten.sum.dim_IntList(partial, [-1], False)
    if mean:
        total = total * (1.0 / n)
    return total.to(dtype or x.dtype)


def _sum_all(x: torch.Tensor, *, dtype: Optional[torch.dtype] = None) -> Any:
    return _full_reduction(x, False, dtype)


def _mean_all(x: torch.Tensor, *, dtype: Optional[torch.dtype] = None) -> Any:
    return _full_reduction(x, True, dtype)


def _mean_dims(x, dim, keepdim=False, *, dtype=None) -> Any:
    return _trailing_reduction(aten.mean.dim, x, dim, keepdim, dtype)


def _sum_dims(x, dim, keepdim=False, *, dtype=None) -> Any:
    return _trailing_reduction(aten.sum.dim_IntList, x, dim, keepdim, dtype)


def _amax_dims(x, dim=(), keepdim=False) -> Any:
    return _trailing_reduction(lambda t, d, k, **_: aten.amax.default(t, [d], k), x, dim, keepdim)


def _isinf(x: torch.Tensor) -> Any:
    """|x| == inf: a comparison with a number, which megakittens/masks.py lowers as any other mask."""
    return NotImplemented if not x.dtype.is_floating_point else x.abs() == float("inf")


def _any_all(x: torch.Tensor) -> Any:
    """x.any() over every element of a boolean x: its sum (0 / 1 in fp32, exact to 2^24 elements, monotone past
    that) > 0, a comparison of a sum (masks.py); T5's fp16 clamp, `where(isinf(h).any(), ...)`."""
    if x.dtype != torch.bool or x.dim() == 0:
        return NotImplemented
    return _full_reduction(x.to(torch.float32), False, None) > 0


def _clamp_tensor(x: torch.Tensor, min: Optional[torch.Tensor] = None, max: Optional[torch.Tensor] = None) -> Any:
    """clamp(x, min, max) with tensor bounds: maximum, then minimum (eager's order: max wins where min > max;
    NaN stays NaN), broadcast as torch broadcasts them. Floating x and bounds only (an integer x with a float
    bound promotes to float in eager: left to the op, which is reported)."""
    if not x.dtype.is_floating_point or any(b is not None and not b.dtype.is_floating_point for b in (min, max)):
        return NotImplemented
    out = x if min is None else torch.maximum(x, min.to(x.dtype) if min.dim() == 0 else min)
    return out if max is None else torch.minimum(out, max.to(x.dtype) if max.dim() == 0 else max)


def _repeat(x: torch.Tensor, repeats: Sequence[int]) -> Any:
    """x.repeat(r0, r1, ..) (SigLIP's probe over the batch): per dim, a Cat of r copies (r <= 16), or the dim
    unsqueezed, expanded r times and merged (a Copy; rank <= 3 before the merge)."""
    if len(repeats) < x.dim() or len(repeats) > 4 or any(r < 1 for r in repeats):
        return NotImplemented
    x = x.reshape([1] * (len(repeats) - x.dim()) + list(x.shape))
    for d, r in enumerate(repeats):
        if r == 1:
            continue
        if r <= 16:
            x = aten.cat.default([x] * r, d)
        elif x.dim() <= 3:
            shape = list(x.shape)
            x = x.unsqueeze(d).expand(*shape[:d], r, *shape[d:]).reshape(*shape[:d], r * shape[d], *shape[d + 1:])
        else:
            return NotImplemented
    return x


def _weight_norm(v: torch.Tensor, g: torch.Tensor, dim: int = 0) -> Any:
    """torch.nn.utils.weight_norm's w = v g / ||v|| (the norm over every dim but ``dim``, fp32, shaped like g),
    computed at each call from the parameters, in fp32 and rounded once; returns (w, norm) as the op."""
    if not v.dtype.is_floating_point or v.dim() > 4 or g.dim() != v.dim():
        return NotImplemented
    dim %= v.dim()
    vf = v.to(torch.float32)
    rows = vf.movedim(dim, 0).reshape(v.shape[dim], -1)
    norm = torch.sqrt((rows * rows).sum(-1)).reshape(g.shape)
    return (vf * (g.to(torch.float32) / norm)).to(v.dtype), norm


def _hardtanh(x: torch.Tensor, min_val: float = -1.0, max_val: float = 1.0) -> Any:
    return torch.clamp(x, min_val, max_val)  # ReLU6 (MobileNet) is hardtanh(0, 6)


def _hardsigmoid(x: torch.Tensor) -> Any:  # relu6(x + 3) / 6 in fp32, rounded once (eager's kernels)
    return (torch.clamp(x.to(torch.float32) + 3.0, 0.0, 6.0) / 6.0).to(x.dtype)


def _hardswish(x: torch.Tensor) -> Any:  # x * relu6(x + 3) / 6 in fp32, rounded once
    xf = x.to(torch.float32)
    return (xf * torch.clamp(xf + 3.0, 0.0, 6.0) / 6.0).to(x.dtype)


def _softplus(x: torch.Tensor, beta: float = 1.0, threshold: float = 20.0) -> Any:
    """log(1 + exp(beta x)) / beta, x itself where beta x > threshold (torch.nn.functional.softplus), in fp32, rounded
    once. The stable form relu(bx) + log1p(exp(-|bx|)) (log1p: an ElementwiseUnary step, exact where log(1 + t)
    would lose t to the sum's rounding)."""
    if not x.dtype.is_floating_point or beta == 0:
        return NotImplemented
    xf = x.to(torch.float32)
    bx = xf * beta
    return torch.where(bx > threshold, xf, (torch.relu(bx) + torch.log1p(torch.exp(-bx.abs()))) / beta).to(x.dtype)


def _softmax_op(x: torch.Tensor, dim: int, log: bool, safe: bool, out: torch.dtype) -> Any:
    if x.dim() == 0 or not x.dtype.is_floating_point:
        return NotImplemented
    dim %= x.dim()
    if dim != x.dim() - 1:  # over another dim (ConvBERT's dim 1): moved last and back (Copies where read)
        return _softmax_op(x.movedim(dim, -1), -1, log, safe, out).movedim(-1, dim)
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


def _roll(x: torch.Tensor, shifts: Sequence[int], dims: Sequence[int] = ()) -> Any:
    if not dims or len(shifts) != len(dims) or x.dim() == 0:
        return NotImplemented  # a roll of the flattened tensor
    for shift, dim in zip(shifts, dims):
        n = x.shape[dim]
        shift %= n
        if shift:
            x = aten.cat.default([aten.slice.Tensor(x, dim, n - shift, n), aten.slice.Tensor(x, dim, 0, n - shift)], dim)
    return x


def _vector_norm(x: torch.Tensor, ord: float = 2, dim: Any = None, keepdim: bool = False, *,
                 dtype: Optional[torch.dtype] = None) -> Any:
    dims = [dim] if isinstance(dim, int) else list(dim or [])
    if ord != 2 or x.dim() == 0 or len(dims) != 1 or dims[0] % x.dim() != x.dim() - 1 or \
            not x.dtype.is_floating_point:
        return NotImplemented
    xf = x.to(torch.float32)
    return torch.sqrt((xf * xf).sum(-1, keepdim=keepdim)).to(dtype or x.dtype)


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


def _slice_scatter(x: torch.Tensor, src: torch.Tensor, dim: int = 0, start: Optional[int] = None,
                   end: Optional[int] = None, step: int = 1) -> Any:
    """x with x[.., start:end, ..] = src along ``dim``, step 1 (``a[:, :1] = b`` functionalized; Funnel):
    one Cat of x's slices before and after and src."""
    if step != 1 or x.dim() == 0:
        return NotImplemented
    dim %= x.dim()
    n = x.shape[dim]
    lo = 0 if start is None else max(0, min(n, start + n if start < 0 else start))
    hi = n if end is None else max(lo, min(n, end + n if end < 0 else end))
    parts = ([aten.slice.Tensor(x, dim, 0, lo)] if lo else []) + [src.to(x.dtype)] + \
        ([aten.slice.Tensor(x, dim, hi, n)] if hi < n else [])
    return aten.cat.default(parts, dim) if len(parts) > 1 else aten.clone.default(parts[0])


def _select_scatter(x: torch.Tensor, src: torch.Tensor, dim: int, index: int) -> Any:
    """x with x[.., index, ..] = src (``a[:, 1] = b``): the slice_scatter of src unsqueezed at ``dim``."""
    if x.dim() == 0:
        return NotImplemented
    dim, index = dim % x.dim(), index % x.shape[dim]
    return _slice_scatter(x, src.unsqueeze(dim), dim, index, index + 1)


def _copy(x: torch.Tensor, src: torch.Tensor, non_blocking: bool = False) -> Any:
    """Functional ``x.copy_(src)`` (the value written by ``a[:, :1] = b``): src in x's dtype, broadcast to x's
    shape (a view; the Cat or Copy reading it writes it)."""
    if src.device != x.device:
        return NotImplemented
    y = src.to(x.dtype)
    return y if y.shape == x.shape else y.expand(x.shape)


def _fill(x: torch.Tensor, value: Any) -> Any:
    """Functional ``x.fill_(v)`` (``a[..., :2] = 0``): a constant (folded) or the 0-dim tensor broadcast."""
    if isinstance(value, torch.Tensor):
        return value.to(x.dtype).expand(x.shape)
    return torch.full(x.shape, value, dtype=x.dtype, device=x.device)


def _cat_many(tensors: Sequence[torch.Tensor], dim: int = 0) -> Any:
    """A cat of more than 16 tensors (DenseNet's growing feature maps) as a cat of cats: one Cat node takes
    at most 16 inputs (src/schedule/instruction.h)."""
    if len(tensors) <= 16:
        return NotImplemented
    return convolution._cat(list(tensors), dim)


def _stack(tensors: Sequence[torch.Tensor], dim: int = 0) -> Any:
    if not tensors:
        return NotImplemented
    dim = dim % (tensors[0].dim() + 1)
    return aten.cat.default([aten.unsqueeze.default(t, dim) for t in tensors], dim)


def _fresh(fn: Any) -> Any:
    """``fn``, a decomposition of an op that returns new tensors in eager, with any output that is an input or a
    view of one (the identity cases: F.pad by 0, repeat(1, 1), roll by the dim's size, a kernel-1 max pool)
    copied. Else the compiled graph would return the caller's own storage, and a later in-place op on either
    would show in the other."""
    def run(*args: Any, **kwargs: Any) -> Any:
        out = fn(*args, **kwargs)
        if out is NotImplemented:
            return out
        ins = [t for t in torch.utils._pytree.tree_leaves((args, kwargs)) if isinstance(t, torch.Tensor)]
        return torch.utils._pytree.tree_map_only(
            torch.Tensor, lambda o: aten.clone.default(o) if any(torch._C._is_alias_of(o, t) for t in ins) else o, out)
    return run


_VIEW_OPS = (aten.split.Tensor, aten.split_with_sizes.default, aten.unbind.int)  # eager's outputs are views

TABLE = {
    aten.native_layer_norm.default: _layer_norm,
    aten.convolution.default: convolution.convolution,
    aten.max_pool2d_with_indices.default: convolution.max_pool2d_with_indices,
    aten.constant_pad_nd.default: convolution.constant_pad_nd,
    aten.avg_pool2d.default: convolution.avg_pool2d,
    aten._adaptive_avg_pool2d.default: convolution.adaptive_avg_pool2d,
    aten.im2col.default: convolution.im2col,
    aten.native_batch_norm.default: _native_batch_norm,
    aten._native_batch_norm_legit_no_training.default: _batch_norm_no_training,
    aten.native_group_norm.default: _group_norm,
    aten._weight_norm_interface.default: _weight_norm,
    aten.hardtanh.default: _hardtanh,
    aten.hardsigmoid.default: _hardsigmoid,
    aten.hardswish.default: _hardswish,
    aten.softplus.default: _softplus,
    aten.mean.dim: _mean_dims,
    aten.sum.dim_IntList: _sum_dims,
    aten.amax.default: _amax_dims,
    aten.repeat.default: _repeat,
    aten.sum.default: _sum_all,
    aten.mean.default: _mean_all,
    aten.baddbmm.default: _baddbmm,
    aten._softmax.default: _softmax,
    aten._safe_softmax.default: _safe_softmax,
    aten._log_softmax.default: _log_softmax,
    aten.roll.default: _roll,
    aten.isinf.default: _isinf,
    aten.any.default: _any_all,
    aten.clamp.Tensor: _clamp_tensor,
    aten._transformer_encoder_layer_fwd.default: native_layers.transformer_encoder_layer,
    aten._native_multi_head_attention.default: native_layers.native_multi_head_attention,
    aten.linalg_vector_norm.default: _vector_norm,
    aten.split.Tensor: _split,
    aten.split_with_sizes.default: _split_sizes,
    aten.unbind.int: _unbind,
    aten.stack.default: _stack,
    aten.cat.default: _cat_many,
    aten.slice_scatter.default: _slice_scatter,
    aten.select_scatter.default: _select_scatter,
    aten.copy.default: _copy,
    aten.fill.Scalar: _fill,
    aten.fill.Tensor: _fill,
    aten.zero.default: lambda x: _fill(x, 0),
}
TABLE = {op: fn if op in _VIEW_OPS else _fresh(fn) for op, fn in TABLE.items()}
