"""Decompositions of PyTorch's fused inference layers (``megakittens/decompose.py``'s table uses them).

In eval mode under ``torch.no_grad()``, ``nn.TransformerEncoderLayer`` and ``nn.MultiheadAttention`` take
their "fast path": one native op for the whole layer (``aten._transformer_encoder_layer_fwd``) or attention
(``aten._native_multi_head_attention``). Both are written here with the ops the layer's ordinary forward uses
(``torch/nn/modules/transformer.py``, ``torch/nn/functional.py multi_head_attention_forward``): the packed
in-projection as one linear, q / k / v as slices of it viewed (B, H, S, D), SDPA, the out-projection,
LayerNorm, and the feed-forward block with ReLU or exact GELU.

Masks (``merge_masks``): type 0 an (S, S) attention mask, type 1 a (B, S) key padding mask, type 2 (B, H, S,
S). The layer has already made them float (``F._canonical_mask``: 0 kept, -inf masked); a boolean one masks
where True, as the native kernels read it. Inputs must be batch-first (B, S, E): the fast path's own
condition.
"""
from __future__ import annotations

from typing import Any, Optional

import torch
import torch.nn.functional as F


def _additive(mask: Optional[torch.Tensor], mask_type: Optional[int], b: int, sq: int, sk: int, dtype) -> Any:
    """The layer's mask as SDPA's additive (B | 1, H | 1, Sq, Sk) mask."""
    if mask is None:
        return None
    if mask.dtype == torch.bool:
        mask = torch.zeros(mask.shape, dtype=dtype, device=mask.device).masked_fill(mask, float("-inf"))
    if mask_type == 1:
        return mask.view(b, 1, 1, sk)
    return mask if mask.dim() == 4 else mask.view(1, 1, sq, sk) if mask.dim() == 2 else mask.view(b, -1, sq, sk)


def _attention(x: torch.Tensor, kv: torch.Tensor, num_heads: int, qkv_weight: torch.Tensor,
               qkv_bias: Optional[torch.Tensor], proj_weight: torch.Tensor, proj_bias: Optional[torch.Tensor],
               mask: Any) -> torch.Tensor:
    b, s, e = x.shape
    d = e // num_heads
    if kv is x:
        q, k, v = F.linear(x, qkv_weight, qkv_bias).split(e, -1)
    else:
        w, bias = qkv_weight.split(e), qkv_bias.split(e) if qkv_bias is not None else (None,) * 3
        q = F.linear(x, w[0], bias[0])
        k, v = F.linear(kv, torch.cat([w[1], w[2]]), None if bias[1] is None else torch.cat([bias[1], bias[2]])
                        ).split(e, -1)

    def heads(t):
        return t.reshape(b, -1, num_heads, d).transpose(1, 2)

    o = F.scaled_dot_product_attention(heads(q), heads(k), heads(v), attn_mask=mask)
    return F.linear(o.transpose(1, 2).reshape(b, s, e), proj_weight, proj_bias)


def transformer_encoder_layer(src, embed_dim, num_heads, qkv_weight, qkv_bias, proj_weight, proj_bias, use_gelu,
                              norm_first, eps, norm_weight_1, norm_bias_1, norm_weight_2, norm_bias_2, ffn_weight_1,
                              ffn_bias_1, ffn_weight_2, ffn_bias_2, mask=None, mask_type=None) -> Any:
    """``aten._transformer_encoder_layer_fwd``: one ``nn.TransformerEncoderLayer`` (module doc)."""
    if src.dim() != 3 or src.shape[-1] != embed_dim or embed_dim % num_heads:
        return NotImplemented
    b, s, _ = src.shape
    m = _additive(mask, mask_type, b, s, s, src.dtype)

    def sa(x):
        return _attention(x, x, num_heads, qkv_weight, qkv_bias, proj_weight, proj_bias, m)

    def ff(x):
        h = F.linear(x, ffn_weight_1, ffn_bias_1)
        return F.linear(F.gelu(h) if use_gelu else F.relu(h), ffn_weight_2, ffn_bias_2)

    def ln1(x):
        return F.layer_norm(x, (embed_dim,), norm_weight_1, norm_bias_1, eps)

    def ln2(x):
        return F.layer_norm(x, (embed_dim,), norm_weight_2, norm_bias_2, eps)

    if norm_first:
        x = src + sa(ln1(src))
        return x + ff(ln2(x))
    x = ln1(src + sa(src))
    return ln2(x + ff(x))


def native_multi_head_attention(query, key, value, embed_dim, num_head, qkv_weight, qkv_bias, proj_weight,
                                proj_bias, mask=None, need_weights=True, average_attn_weights=True,
                                mask_type=None) -> Any:
    """``aten._native_multi_head_attention`` without the weights (``need_weights=False``): self-attention or
    key is value (module doc)."""
    if need_weights or query.dim() != 3 or key is not value or query.shape[-1] != embed_dim or embed_dim % num_head:
        return NotImplemented
    b, s, _ = query.shape
    m = _additive(mask, mask_type, b, s, key.shape[1], query.dtype)
    out = _attention(query, key, num_head, qkv_weight, qkv_bias, proj_weight, proj_bias, m)
    return out, torch.empty(0, dtype=query.dtype, device=query.device)
