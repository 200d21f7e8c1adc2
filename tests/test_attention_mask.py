"""Attention's additive mask (src/itypes/attention.h, [Note: attention mask]) on the CPU interpreter: float and
boolean SDPA masks of head dims 64 / 128 run as one Attention instruction type with the mask as input 3, read in
place through its broadcast dims (no (B, H, Sq, Sk) copy); the fp32 softmax of the reference matches
PyTorch's, rows wholly at -inf give 0 and rows wholly at bf16's lowest value average V."""
from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import megakittens
import megakittens.backend as mk_backend
from common import BF16, rel_err
from test_gpu_attention import MASK_CASES, _mask, masked_reference


def _kinds():
    return [n.itype for n in mk_backend.dispatchers[-1].program.nodes]


@pytest.mark.parametrize("case", list(MASK_CASES))
def test_masked_attention_matches_fp32(case):
    B, H, Hk, Sq, Sk, D, ms, kind, _ = MASK_CASES[case]
    Sq, Sk = min(Sq, 256), min(Sk, 256) + (Sk % 2)  # smaller, the same kinds of rows (odd Sk stays odd)
    ms = tuple(min(d, 256) + (d % 2 if i == 3 else 0) for i, d in enumerate(ms))
    g = torch.Generator().manual_seed(3)
    q, k, v = (torch.randn(s, generator=g).to(BF16) for s in ((B, H, Sq, D), (B, Hk, Sk, D), (B, Hk, Sk, D)))
    m = _mask(kind, ms, g)
    fn = lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m, enable_gqa=H != Hk)  # noqa: E731
    out = megakittens.compile(fn)(q, k, v, m)
    assert sum(x.startswith("Attention") and "mask=add" in x for x in _kinds()) == 1, _kinds()
    assert not any(x.startswith(("Copy", "Gemm", "Softmax")) for x in _kinds()), _kinds()  # read in place
    ref = masked_reference(q, k, v, m, 1.0 / D ** 0.5)
    assert not out.isnan().any() and rel_err(out.float(), ref) <= 1e-2, rel_err(out.float(), ref)
    if kind == "inf_rows":
        assert out[..., 5, :].abs().max() == 0
    if kind == "hf_min":  # the wholly masked rows: the mean of V over the keys
        want = v.float().repeat_interleave(H // Hk, 1).mean(-2, keepdim=True).expand(-1, -1, 40, -1)
        assert rel_err(out[..., :40, :].float(), want) <= 1e-2


def test_a_models_layers_share_one_converted_mask():
    """A boolean mask read by several SDPA calls (a model's layers) is converted to Attention's additive bf16
    mask once."""
    q = torch.randn(2, 4, 96, 64).to(BF16)
    am = torch.ones(2, 96, dtype=torch.long)
    am[0, 80:] = 0

    def fn(q, am):
        m = am.bool()[:, None, None, :]
        x = q
        for _ in range(3):
            x = F.scaled_dot_product_attention(x, q, q, attn_mask=m)
        return x
    out = megakittens.compile(fn)(q, am)
    ref = fn(q.float(), am)
    assert rel_err(out.float(), ref) <= 1e-2
    kinds = _kinds()
    assert sum(x.startswith("Attention") for x in kinds) == 3, kinds
    assert sum(x.startswith("Elementwise") for x in kinds) <= 2, "\n".join(kinds)  # the mask conversion, once


@pytest.mark.parametrize("left_pad", [0, 9])
def test_causal_and_padding_mask_becomes_is_causal_plus_the_padding(left_pad):
    """causal & padding (Hugging Face's and_masks): the causal factor is a constant, so Attention takes
    is_causal (blocks past the diagonal skipped) and only the (B, 1, 1, Sk) padding as its mask. Left padding
    leaves the first rows of a sequence with no key: rows of zeros, as SDPA's math."""
    q, k, v = (torch.randn(2, 4, 200, 64).to(BF16) for _ in range(3))
    am = torch.ones(2, 200, dtype=torch.long)
    am[1, :left_pad] = 0
    am[0, 190:] = 0

    def fn(q, k, v, am):
        s = q.shape[2]
        causal = torch.arange(s)[:, None] >= torch.arange(s)[None, :]
        return F.scaled_dot_product_attention(q, k, v, attn_mask=causal[None, None] & am.bool()[:, None, None, :])
    out = megakittens.compile(fn)(q, k, v, am)
    kinds = _kinds()
    assert sum(x.startswith("Attention(causal=1") and "mask=add" in x for x in kinds) == 1, kinds
    keep = torch.ones(2, 200, dtype=torch.bool)
    keep[1, :left_pad] = False  # rows with no key: 0 here; PyTorch's CPU kernel gives NaN or 0 by backend
    ref = fn(q.double(), k.double(), v.double(), am).to(BF16)
    assert rel_err(out.transpose(1, 2)[keep].float(), ref.transpose(1, 2)[keep].float()) <= 1e-2
    assert out.transpose(1, 2)[~keep].abs().sum() == 0


@pytest.mark.parametrize("family", ["gpt2", "bert", "mistral_window"])
def test_hf_models_with_a_padding_mask_run_attention_with_its_mask(family):
    """Hugging Face models called with a left-padded attention_mask: GPT-2 (causal: is_causal plus the
    padding), BERT (bidirectional: the padding alone) and Mistral with a sliding window shorter than the
    sequence (a full mask: causal, window and padding together). No score matrix; the kept rows match eager."""
    transformers = pytest.importorskip("transformers")
    T = transformers
    cls, model_cls, kw = {
        "gpt2": (T.GPT2Config, T.GPT2Model, dict(n_embd=256, n_layer=2, n_head=4)),
        "bert": (T.BertConfig, T.BertModel, dict(hidden_size=256, num_hidden_layers=2, num_attention_heads=4,
                                                 intermediate_size=512)),
        "mistral_window": (T.MistralConfig, T.MistralModel, dict(hidden_size=256, intermediate_size=512,
                                                                 num_hidden_layers=2, num_attention_heads=4,
                                                                 num_key_value_heads=2, sliding_window=16)),
    }[family]
    cfg = cls(vocab_size=300, **kw)
    cfg._attn_implementation = "sdpa"
    torch.manual_seed(0)
    model = model_cls(cfg).to(BF16).eval()
    ids = torch.randint(3, 300, (2, 40))
    am = torch.ones(2, 40, dtype=torch.long)
    am[1, :7] = 0
    extra = {"token_type_ids": torch.zeros_like(ids)} if family == "bert" else {}
    fwd = lambda i, a: model(input_ids=i, attention_mask=a, **extra).last_hidden_state  # noqa: E731
    with torch.no_grad():
        out, ref = megakittens.compile(fwd)(ids, am), fwd(ids, am)
    attention = [k for k in _kinds() if k.startswith(("Attention", "Softmax"))]
    causal = family == "gpt2"
    assert len(attention) == 2 and all(k.startswith(f"Attention(causal={int(causal)}") and "mask=add" in k
                                       for k in attention), attention
    keep = am.bool()
    assert not out[keep].isnan().any() and rel_err(out[keep].float(), ref[keep].float()) <= 2e-2
