"""Convolutions and max pooling as the instruction types compute them (entries of ``decompose.TABLE``).

``convolution`` (``aten.convolution``; ``nn.Conv1d`` / ``nn.Conv2d``, not transposed, bf16: the Gemm's dtype):

- A kernel that tiles its input (stride == kernel, no padding or dilation, one group: the patch embedding of
  ViT, CLIP and SigLIP) is one matrix product over the patches, which two 4-D permute copies gather as rows
  (``_patches``).
- Any other stride, padding and dilation, one group (Whisper's audio encoder, ResNet's 3 x 3 and 7 x 7
  layers): im2col. Each kernel tap (i, j) is the padded input read at rows i dh + sh r and columns
  j dw + sw c: a slice when the stride is 1, else a slice of the input viewed with the stride as its own
  dim (views cannot step: ``_strided``); the taps are joined by one Cat and permuted into rows of
  C x kh x kw values (``_im2col``), then one matrix product (``_gemm``).
- Several groups (ResNeXt, RegNet, wav2vec2's positional convolution, and depthwise ones: ConvNeXt,
  MobileNet): a batched product, each group's channels' columns of the same rows against its own filters.

The matrix product takes the weight viewed as (out channels, C kh kw) and transposed, plus the bias
(``addmm``, ``baddbmm`` for groups). A row of C kh kw values that is not a multiple of 16 bytes (3 x 7 x 7) is padded with zero
columns in both operands and an output channel count that is not with zero filters (TMA's 16-byte rows);
the result is copied to NCHW as eager's convolution returns it. Padding is a Cat with constant blocks
(``fold.fold_constants`` makes them constants).

``constant_pad_nd`` (``F.pad``, constant mode): a Cat with constant blocks; negative pads crop (a slice).

``max_pool2d`` (``aten.max_pool2d_with_indices`` with its indices unread; ``nn.MaxPool2d``): the
elementwise maximum of the taps, padded with -inf, NaN-propagating as eager. ``ceil_mode`` windows that
would start in the right padding are not produced (eager drops them too: torch's pooling shape rule).

``avg_pool2d`` (``nn.AvgPool2d``, Funnel's pooling): the sum of the zero-padded taps times a constant map of
1 / divisor per output position, the divisor as eager's kernel counts it (aten/src/ATen/native/cpu/
AvgPoolKernel.cpp: the window clipped to the padded input, or to the input without ``count_include_pad``, or
``divisor_override``).

``_adaptive_avg_pool2d`` (``nn.AdaptiveAvgPool2d`` to any size; torchvision's VGG / AlexNet pool to 7 x 7, which
enlarges a 1 x 1 or 2 x 2 map): eager's windows (aten/src/ATen/native/AdaptivePooling.h), rows
floor(i H / Ho) to ceil((i + 1) H / Ho). When each dim divides evenly it is ``avg_pool2d``; otherwise the window
sum runs one dim at a time in fp32: tap t of a dim gathers row start_i + t of every output row i (a Cat of
slices and expanded unit slices), zeroed where the window is shorter, then the sum times 1 / (window area),
rounded once, as eager's kernel.

``im2col`` (``F.unfold``; ConvBERT's span convolution): the taps joined along the channels, (B, kh kw C, Ho Wo)
reordered to eager's (B, C kh kw, Ho Wo) by one permute copy.
"""
from __future__ import annotations

import math
from typing import Any, Optional, Sequence

import torch

def _out_size(n: int, k: int, s: int, p: int, d: int, ceil: bool = False) -> int:
    """torch's output length of a sliding window (aten/src/ATen/native/Pool.h pooling_output_shape)."""
    span = n + 2 * p - d * (k - 1) - 1
    out = (span + (s - 1 if ceil else 0)) // s + 1
    if ceil and (out - 1) * s >= n + p:  # the last window must start inside the input or the left padding
        out -= 1
    return out


def _pad(x: torch.Tensor, dim: int, before: int, after: int, value: float) -> torch.Tensor:
    """x with ``before`` / ``after`` constant slices along ``dim`` (a Cat with constant blocks)."""
    if not before and not after:
        return x
    block = lambda n: torch.full([n if d == dim else s for d, s in enumerate(x.shape)], value,  # noqa: E731
                                 dtype=x.dtype, device=x.device)
    return torch.cat(([block(before)] if before else []) + [x] + ([block(after)] if after else []), dim)


def _taps(x: torch.Tensor, kernel: Sequence[int], stride: Sequence[int], padding: Sequence[int],
          dilation: Sequence[int], out: Sequence[int], fill: float, skip_fill: bool = False) -> list:
    """The kh x kw taps of a 4-D x, row-major over the kernel: tap (i, j) is (B, C, Ho, Wo), the padded x at
    rows i dh + sh r and columns j dw + sw c. Views cannot step, so with a stride the padded x (extended
    with ``fill`` to a multiple of it) is split once into its sh x sw phases, (sh sw B, C, H / sh, W / sw)
    by one permute copy; every tap is then a box of one phase, which the Cat reads in place.
    ``skip_fill`` (pools, where a tap of ``fill`` alone changes no output): the taps whose rows or columns
    all lie in the padding are left out, so a window far larger than x (EfficientNet's AvgPool2d(1280) on a
    7 x 7 map) costs the taps that read x, not kh x kw of them over a padded copy as large as the window."""
    B, C, H, W = x.shape
    (kh, kw), (sh, sw), (dh, dw), (Ho, Wo) = kernel, stride, dilation, out

    def reads_x(i: int, d: int, s: int, p: int, n: int, m: int) -> bool:  # tap offset i reads a row of x
        return not skip_fill or any(p <= i * d + s * r < p + n for r in range(m))
    ki = [i for i in range(kh) if reads_x(i, dh, sh, padding[0], H, Ho)]
    kj = [j for j in range(kw) if reads_x(j, dw, sw, padding[1], W, Wo)]
    rows = sh * max(-(-(H + 2 * padding[0]) // sh), max(i * dh // sh for i in ki) + Ho)
    cols = sw * max(-(-(W + 2 * padding[1]) // sw), max(j * dw // sw for j in kj) + Wo)
    x = _pad(x, 2, padding[0], rows - H - padding[0], fill)
    x = _pad(x, 3, padding[1], cols - W - padding[1], fill)
    Hq, Wq = rows // sh, cols // sw
    if sh * sw > 1:  # (B C Hq, sh, Wq, sw) -> (sh, sw, B C Hq, Wq): phase (r, c) holds x[.., r::sh, c::sw]
        x = x.reshape(B * C * Hq, sh, Wq, sw).permute(1, 3, 0, 2).contiguous().view(sh * sw * B, C, Hq, Wq)
    taps = []
    for i in ki:
        q, r = divmod(i * dh, sh)
        for j in kj:
            p, c = divmod(j * dw, sw)
            phase = r * sw + c
            taps.append(x[phase * B:(phase + 1) * B, :, q:q + Ho, p:p + Wo])
    return taps


def _cat(parts: list, dim: int) -> torch.Tensor:
    """torch.cat, as a cat of cats when there are more parts than one Cat node takes (16)."""
    while len(parts) > 16:
        parts = [torch.cat(parts[i:i + 16], dim) if len(parts[i:i + 16]) > 1 else parts[i]
                 for i in range(0, len(parts), 16)]
    return torch.cat(parts, dim) if len(parts) > 1 else parts[0]


def _gemm(rows: torch.Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor]) -> torch.Tensor:
    """rows (G, M, K) @ weight (G, O, K)^T + bias (G O): (G, M, O), a batched product over the groups; K and
    O padded with zeros to 16-byte multiples (TMA's row alignment)."""
    G, O, K = weight.shape
    align = 16 // rows.element_size()
    zeros = lambda *n: torch.zeros(*n, dtype=rows.dtype, device=rows.device)  # noqa: E731 (folded: no input)
    if -K % align:
        rows = torch.cat([rows, zeros(G, rows.shape[1], -K % align)], 2)
        weight = torch.cat([weight, zeros(G, O, -K % align)], 2)
    bias = bias.reshape(G, 1, O) if bias is not None else None
    if -O % align:  # output rows too: zero filters, sliced off below
        weight = torch.cat([weight, zeros(G, -O % align, weight.shape[2])], 1)
        bias = torch.cat([bias, zeros(G, 1, -O % align).to(bias.dtype)], 2) if bias is not None else None
    if G == 1:
        y = rows[0] @ weight[0].t() if bias is None else torch.addmm(bias[0], rows[0], weight[0].t())
        return y[None, :, :O]
    y = torch.bmm(rows, weight.transpose(1, 2)) if bias is None else torch.baddbmm(bias, rows, weight.transpose(1, 2))
    return y[:, :, :O]


def _weights_left(taps: list, weight: torch.Tensor, bias: Optional[torch.Tensor]) -> torch.Tensor:
    """weight (O, K C) @ cols (B, K C, Ho Wo): the taps joined along the channels are the columns as they are
    (no permute copy) and the product is NCHW as it is. Needs Ho Wo a 16-byte multiple (the columns' rows);
    K C is padded with zero rows and weight columns."""
    B, C, Ho, Wo = taps[0].shape
    O, K = weight.shape[0], len(taps) * C
    pad = -K % (16 // taps[0].element_size())
    zeros = lambda *n: torch.zeros(*n, dtype=taps[0].dtype, device=taps[0].device)  # noqa: E731 (folded)
    cols = _cat(taps + ([zeros(B, pad, Ho, Wo)] if pad else []), 1).view(B, K + pad, Ho * Wo)
    w = weight.reshape(O, K) if len(taps) == 1 else weight.permute(0, 2, 3, 1).reshape(O, K)  # (tap, c) order
    if pad:
        w = torch.cat([w, zeros(O, pad)], 1)
    w = w.expand(B, O, K + pad)
    y = torch.bmm(w, cols) if bias is None else \
        torch.baddbmm(bias.to(cols.dtype).view(1, O, 1).expand(B, O, Ho * Wo), w, cols)
    return y.view(B, O, Ho, Wo)


def _patches(x: torch.Tensor, kernel: Sequence[int]) -> "tuple[torch.Tensor, int, int]":
    """(rows, Ho, Wo): the non-overlapping kh x kw patches of x as rows of C kh kw values (c, i, j order)."""
    B, C, H, W = x.shape
    ph, pw = kernel
    Ho, Wo = H // ph, W // pw
    x = x[:, :, :Ho * ph, :Wo * pw]
    # (B, C, Ho, ph * W') -> (B, Ho, C, ph * W'): a patch row's channels together
    rows = x.reshape(B, C, Ho, ph * Wo * pw).permute(0, 2, 1, 3).contiguous()
    # (B Ho, C ph, Wo, pw) -> (B Ho, Wo, C ph, pw): one patch's C x ph x pw values in a row
    return rows.view(B * Ho, C * ph, Wo, pw).permute(0, 2, 1, 3).contiguous().view(B * Ho * Wo, -1), Ho, Wo


def _im2col(taps: list) -> torch.Tensor:
    """Taps (B, C, Ho, Wo) -> rows (B Ho Wo, K C) in (tap, c) order: the taps joined along the channels (a Cat
    reading each tap's view), then one permute copy."""
    B, C, Ho, Wo = taps[0].shape
    cols = _cat(taps, 1)                                              # (B, K C, Ho, Wo)
    return cols.permute(0, 2, 3, 1).contiguous().view(B * Ho * Wo, len(taps) * C)


def convolution(x: torch.Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor], stride: Sequence[int],
                padding: Sequence[int], dilation: Sequence[int], transposed: bool, output_padding: Sequence[int],
                groups: int) -> Any:
    nd = weight.dim() - 2
    # The matrix product takes bf16 or fp16 (Gemm): other dtypes keep the op, whose error names this rule.
    if nd not in (1, 2) or x.dim() != nd + 2 or transposed or x.dtype not in (torch.bfloat16, torch.float16) or \
            weight.dtype != x.dtype or not isinstance(padding, (list, tuple)):
        return NotImplemented
    # A one-element list stands for every dim (aten passes padding="valid" as [0]).
    stride, padding, dilation = ([v[0]] * nd if len(v) == 1 else list(v) for v in (stride, padding, dilation))
    if nd == 1:  # (B, C, L) as (B, C, 1, L) with a (1, k) kernel
        out = convolution(x.unsqueeze(2), weight.unsqueeze(2), bias, [1, stride[0]], [0, padding[0]],
                          [1, dilation[0]], False, [0, 0], groups)
        return NotImplemented if out is NotImplemented else out.squeeze(2)
    B, C, H, W = x.shape
    O, Cg, kh, kw = weight.shape
    Ho, Wo = (_out_size(n, k, s, p, d) for n, k, s, p, d in zip((H, W), (kh, kw), stride, padding, dilation))
    if Ho <= 0 or Wo <= 0:
        return NotImplemented
    if C % groups or O % groups:
        return NotImplemented
    og = O // groups
    if groups == 1 and Ho * Wo % (16 // x.element_size()) == 0 and not (list(stride) == [kh, kw] and kh * kw > 1):
        return _weights_left(_taps(x, (kh, kw), stride, padding, dilation, (Ho, Wo), 0.0), weight, bias)
    if groups == 1 and list(stride) == [kh, kw] and not any(padding) and list(dilation) == [1, 1]:
        rows, Ho, Wo = _patches(x, (kh, kw))                           # (B Ho Wo, C kh kw)
        rows, weight = rows[None], weight.reshape(1, O, -1)
    else:
        rows = _im2col(_taps(x, (kh, kw), stride, padding, dilation, (Ho, Wo), 0.0))  # (B Ho Wo, K C)
        # Groups: a batch of products, each over its channels' columns (of every tap) with its own filters.
        M = rows.shape[0]
        rows = rows.view(M, kh * kw, groups, Cg).permute(2, 0, 1, 3).reshape(groups, M, -1) if groups > 1 \
            else rows[None]
        weight = weight.permute(0, 2, 3, 1).reshape(groups, og, -1)    # (tap, c) order, as the rows
    y = _gemm(rows, weight, bias)                                      # (G, B Ho Wo, og)
    # NCHW, contiguous as eager's convolution returns it: (G, B, Ho Wo, og) -> (B, G, og, Ho Wo)
    return y.view(groups, B, Ho * Wo, og).permute(1, 0, 3, 2).contiguous().view(B, O, Ho, Wo)


_in_max_pool = False  # max_pool2d_with_indices calls the op itself for its indices: not decomposed again


def max_pool2d_with_indices(x: torch.Tensor, kernel_size: Sequence[int], stride: Sequence[int] = (),
                            padding: Sequence[int] = (0,), dilation: Sequence[int] = (1,),
                            ceil_mode: bool = False) -> Any:
    """(max, indices): the max from the taps; the indices from the op itself, which stays in the graph only
    when they are read (``backend.compile_graph`` drops it otherwise; read, it is an unsupported op)."""
    global _in_max_pool
    if _in_max_pool or x.dim() not in (3, 4) or not x.dtype.is_floating_point:
        return NotImplemented
    two = lambda v, d: list(v) * 2 if len(v) == 1 else (list(v) if v else d)  # noqa: E731
    kernel = two(kernel_size, None)
    stride, padding, dilation = two(stride, kernel), two(padding, [0, 0]), two(dilation, [1, 1])
    x4 = x if x.dim() == 4 else x.unsqueeze(0)
    H, W = x4.shape[2:]
    out = [_out_size(n, k, s, p, d, ceil_mode) for n, k, s, p, d in zip((H, W), kernel, stride, padding, dilation)]
    if min(out) <= 0:
        return NotImplemented
    # ceil_mode's last window may reach past the right padding: -inf there too (the taps pad as needed).
    taps = _taps(x4, kernel, stride, padding, dilation, out, float("-inf"), skip_fill=True)
    y = taps[0]
    for t in taps[1:]:
        y = torch.maximum(y, t)
    y = y if x.dim() == 4 else y.squeeze(0)
    _in_max_pool = True
    try:
        indices = torch.ops.aten.max_pool2d_with_indices.default(x, kernel_size, stride, padding, dilation, ceil_mode)[1]
    finally:
        _in_max_pool = False
    return y, indices


def constant_pad_nd(x: torch.Tensor, pad: Sequence[int], value: float = 0) -> Any:
    """F.pad's constant mode: (before, after) pairs from the last dim backwards; negative pads crop."""
    if x.dim() > 4 or len(pad) % 2 or len(pad) // 2 > x.dim() or (not x.dtype.is_floating_point and value != 0):
        return NotImplemented
    for i in range(len(pad) // 2):
        dim, before, after = x.dim() - 1 - i, pad[2 * i], pad[2 * i + 1]
        if before < 0 or after < 0:
            x = x.narrow(dim, max(0, -before), x.shape[dim] - max(0, -before) - max(0, -after))
        x = _pad(x, dim, max(0, before), max(0, after), value)
    return x


def _pair(v, default=None) -> list:
    return list(v) * 2 if len(v) == 1 else (list(v) if len(v) else default)


def _vector(values: list, device: torch.device) -> torch.Tensor:
    """An fp32 vector of Python numbers as runs of torch.full (input-free: folded to a constant)."""
    runs, start = [], 0
    for i in range(1, len(values) + 1):
        if i == len(values) or values[i] != values[start]:
            runs.append(torch.full([i - start], values[start], dtype=torch.float32, device=device))
            start = i
    return torch.cat(runs) if len(runs) > 1 else runs[0]


def avg_pool2d(x: torch.Tensor, kernel_size: Sequence[int], stride: Sequence[int] = (), padding: Sequence[int] = (0,),
               ceil_mode: bool = False, count_include_pad: bool = True, divisor_override: Optional[int] = None) -> Any:
    """(module doc)"""
    if x.dim() not in (3, 4) or not x.dtype.is_floating_point:
        return NotImplemented
    kernel = _pair(kernel_size)
    stride, padding = _pair(stride, kernel), _pair(padding, [0, 0])
    x4 = x if x.dim() == 4 else x.unsqueeze(0)
    H, W = x4.shape[2:]
    out = [_out_size(n, k, s, p, 1, ceil_mode) for n, k, s, p in zip((H, W), kernel, stride, padding)]
    if min(out) <= 0:
        return NotImplemented

    def divisors(n: int, k: int, s: int, p: int, m: int) -> list:  # per output index: (clipped, padded) lengths
        spans = []
        for o in range(m):
            start, end = o * s - p, min(o * s - p + k, n + p)
            spans.append((min(end, n) - max(start, 0), end - start))
        return spans

    def factors(spans: list) -> torch.Tensor:  # 1 / length per output index
        return _vector([1.0 if divisor_override else 1.0 / s[1 if count_include_pad else 0] for s in spans], x.device)

    # The divisor is the product of the window's row and column lengths: the map is an outer product.
    scale = factors(divisors(H, kernel[0], stride[0], padding[0], out[0])).view(-1, 1) * \
        factors(divisors(W, kernel[1], stride[1], padding[1], out[1])).view(1, -1)
    if divisor_override:
        scale = scale * (1.0 / divisor_override)
    taps = _taps(x4, kernel, stride, padding, (1, 1), out, 0.0, skip_fill=True)
    total = taps[0].to(torch.float32)
    for t in taps[1:]:
        total = total + t.to(torch.float32)
    y = (total * scale).to(x.dtype)
    return y if x.dim() == 4 else y.squeeze(0)


def _gather(x: torch.Tensor, dim: int, index: list) -> torch.Tensor:
    """x's rows ``index`` along ``dim``: runs of consecutive rows as slices, of one repeated row as an expanded
    unit slice (views), joined by one Cat."""
    parts, i = [], 0
    while i < len(index):
        j = i + 1
        while j < len(index) and index[j] == index[i]:
            j += 1
        if j - i > 1:  # one row repeated
            parts.append(x.narrow(dim, index[i], 1).expand([j - i if d == dim else n for d, n in enumerate(x.shape)]))
        else:  # rows counting up, up to one that repeats
            while j < len(index) and index[j] == index[j - 1] + 1 and index[j + 1:j + 2] != [index[j]]:
                j += 1
            parts.append(x.narrow(dim, index[i], j - i))
        i = j
    if len(parts) == 1 and parts[0].shape == x.shape:
        return x
    return _cat(parts, dim)


def adaptive_avg_pool2d(x: torch.Tensor, output_size: Sequence[int]) -> Any:
    """(module doc)"""
    if x.dim() not in (3, 4) or not x.dtype.is_floating_point or min(output_size) <= 0 or min(x.shape[-2:]) <= 0:
        return NotImplemented
    (H, W), (Ho, Wo) = x.shape[-2:], output_size
    if (H, W) == (Ho, Wo):  # VGG's 7 x 7 map at 224 x 224: windows of one element
        return x.clone()
    if H % Ho == 0 and W % Wo == 0:  # windows of H / Ho x W / Wo rows, no overlap: avg_pool2d's
        return avg_pool2d(x, [H // Ho, W // Wo], [H // Ho, W // Wo])
    total, scale = x.to(torch.float32), 1.0
    for dim, n, m in ((x.dim() - 2, H, Ho), (x.dim() - 1, W, Wo)):
        spans = [(i * n // m, -(-(i + 1) * n // m)) for i in range(m)]
        lengths = [e - s for s, e in spans]
        summed = None
        for t in range(max(lengths)):
            tap = _gather(total, dim, [min(s + t, e - 1) for s, e in spans])
            if t >= min(lengths):  # a window shorter than t + 1 adds nothing
                keep = _vector([float(t < k) for k in lengths], x.device)
                tap = tap * (keep.view(-1, 1) if dim == x.dim() - 2 else keep)
            summed = tap if summed is None else summed + tap
        total = summed
        inverse = _vector([1.0 / k for k in lengths], x.device)
        scale = scale * (inverse.view(-1, 1) if dim == x.dim() - 2 else inverse.view(1, -1))
    return (total * scale).to(x.dtype)


def im2col(x: torch.Tensor, kernel_size: Sequence[int], dilation: Sequence[int], padding: Sequence[int],
           stride: Sequence[int]) -> Any:
    """(module doc)"""
    if x.dim() not in (3, 4):
        return NotImplemented
    kernel, dilation, padding, stride = _pair(kernel_size), _pair(dilation), _pair(padding), _pair(stride)
    x4 = x if x.dim() == 4 else x.unsqueeze(0)
    B, C, H, W = x4.shape
    out = [_out_size(n, k, s, p, d) for n, k, s, p, d in zip((H, W), kernel, stride, padding, dilation)]
    if min(out) <= 0:
        return NotImplemented
    taps = _taps(x4, kernel, stride, padding, dilation, out, 0.0)
    K, L = len(taps), out[0] * out[1]
    cols = _cat(taps, 1).view(B, K, C, L).permute(0, 2, 1, 3).contiguous().view(B, C * K, L)
    return cols if x.dim() == 4 else cols.squeeze(0)
