"""PyTorch's own transformer modules on the CPU interpreter: nn.TransformerEncoder / nn.TransformerEncoderLayer and
nn.MultiheadAttention under torch.no_grad() take their fused fast path (aten._transformer_encoder_layer_fwd,
aten._native_multi_head_attention), written out by megakittens/native_layers.py; with a key padding mask (its
float form starts as zeros_like: megakittens/fold.py), a causal mask, post- and pre-norm, ReLU and GELU; the
decoder layer and the packed in-projection through 5 dims (megakittens/rank5.py)."""
from __future__ import annotations

import pytest
import torch

import megakittens
from common import BF16, randn, rel_err

E, H, S = 128, 4, 16


def _pad():
    pad = torch.zeros(2, S, dtype=torch.bool)
    pad[1, 11:] = True
    return pad


def _check(f, args, keep=None):
    torch._dynamo.reset()
    with torch.no_grad():
        out, ref = megakittens.compile(f)(*args), f(*args)
    if keep is not None:
        out, ref = out[keep], ref[keep]
    assert not out.isnan().any() and rel_err(out, ref) <= 1e-2, rel_err(out, ref)


@pytest.mark.parametrize("activation", ["relu", "gelu"])
@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("mask", ["none", "padding", "causal"])
def test_transformer_encoder(mask, norm_first, activation):
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(E, H, 2 * E, dropout=0.0, activation=activation, batch_first=True,
                                             norm_first=norm_first)
    enc = torch.nn.TransformerEncoder(layer, 2).to(BF16).eval()
    x = randn(2, S, E)
    if mask == "padding":
        _check(lambda x, p: enc(x, src_key_padding_mask=p), (x, _pad()), ~_pad())
    elif mask == "causal":
        causal = torch.nn.Transformer.generate_square_subsequent_mask(S).to(BF16)
        _check(lambda x: enc(x, mask=causal, is_causal=True), (x,))
    else:
        _check(enc, (x,))


@pytest.mark.parametrize("case", ["weights", "fast", "fast_padding", "cross"])
def test_multihead_attention(case):
    torch.manual_seed(1)
    mha = torch.nn.MultiheadAttention(E, H, batch_first=True).to(BF16).eval()
    x, probe = randn(2, S, E), randn(2, 1, E)
    if case == "weights":
        _check(lambda x: mha(x, x, x)[0], (x,))
    elif case == "fast":
        _check(lambda x: mha(x, x, x, need_weights=False)[0], (x,))
    elif case == "fast_padding":
        _check(lambda x, p: mha(x, x, x, key_padding_mask=p, need_weights=False)[0], (x, _pad()), ~_pad())
    else:  # an attention-pooling probe (SigLIP's head): key is value, the query another tensor
        _check(lambda q, x: mha(q, x, x)[0], (probe, x))


def test_transformer_decoder_layer():
    torch.manual_seed(2)
    dec = torch.nn.TransformerDecoderLayer(E, H, 2 * E, dropout=0.0, batch_first=True).to(BF16).eval()
    causal = torch.nn.Transformer.generate_square_subsequent_mask(S).to(BF16)
    _check(lambda x, m: dec(x, m, tgt_mask=causal, tgt_is_causal=True), (randn(2, S, E), randn(2, 10, E)))
