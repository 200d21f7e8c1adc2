"""Attention written out as matmul -> softmax -> matmul (megakittens/eager_attention.py), on the CPU
interpreter: recognised as one SDPA (the Attention instruction for the causal / full cases, the score-matrix
math for runtime masks), and Hugging Face's repeat_kv without an SDPA reader copied in four dims."""
from __future__ import annotations

import math
import warnings

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import megakittens
import megakittens.backend as mk_backend
from common import BF16, randn, rel_err
from test_sdpa_math import assert_gpu_bodies
from megakittens.eager_attention import _big_negative


def kinds():
    return [n.itype for n in mk_backend.dispatchers[-1].program.nodes]


def _attention(q, k, v, variant):
    """Hand-written attention over (B, H, S, D) bf16 operands, the way models write it."""
    T = q.shape[-2]
    if variant == "div_sqrt":
        att = (q @ k.transpose(-2, -1)) / math.sqrt(k.shape[-1])
    else:
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.shape[-1]))
    if variant == "tril_masked_fill":  # a constant causal mask: the Attention instruction
        att = att.masked_fill(torch.tril(torch.ones(T, T, dtype=torch.bool, device=q.device)) == 0, float("-inf"))
    if variant == "tril_where":
        att = torch.where(torch.ones(T, T, dtype=torch.bool, device=q.device).tril(), att, float("-inf"))
    if variant == "float_softmax":
        return torch.softmax(att.float(), dim=-1).to(q.dtype) @ v
    return F.softmax(att, dim=-1) @ v


@pytest.mark.parametrize("variant", ["full", "div_sqrt", "tril_masked_fill", "tril_where", "float_softmax"])
def test_written_out_attention_runs_as_the_attention_instruction(variant):
    q, k, v = (randn(2, 4, 96, 64) for _ in range(3))
    fn = lambda q, k, v: _attention(q, k, v, variant)  # noqa: E731
    out = megakittens.compile(fn)(q, k, v)
    causal = variant.startswith("tril")
    ref = F.scaled_dot_product_attention(q.float(), k.float(), v.float(), is_causal=causal)
    assert rel_err(out, ref) <= 1e-2 and rel_err(out, fn(q, k, v)) <= 1e-2
    assert kinds() == [f"Attention(causal={int(causal)},scale=0.125)"], kinds()


class _NanoGPTAttention(nn.Module):
    """nanoGPT's CausalSelfAttention (its causal mask a buffer, compared with 0 and filled with -inf)."""

    def __init__(self, C=128, nh=2, T=64):
        super().__init__()
        self.c_attn, self.c_proj, self.nh = nn.Linear(C, 3 * C), nn.Linear(C, C), nh
        self.register_buffer("bias", torch.tril(torch.ones(T, T)).view(1, 1, T, T))

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = (t.view(B, T, self.nh, C // self.nh).transpose(1, 2) for t in self.c_attn(x).split(C, dim=2))
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = F.softmax(att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf")), dim=-1)
        return self.c_proj((att @ v).transpose(1, 2).contiguous().view(B, T, C))


def test_nanogpt_attention_with_a_buffer_mask():
    """The mask is a module buffer (a graph input, not a constant): the SDPA takes it as a runtime boolean
    mask, Attention's additive mask."""
    m = _NanoGPTAttention().to(BF16).eval()
    x = randn(2, 48, 128)
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore", megakittens.MathAttentionWarning)
        out, ref = megakittens.compile(m)(x), m(x)
        ref32 = m.float()(x.float())
    assert rel_err(out, ref) <= 1e-2 and rel_err(out, ref32) <= 1e-2
    assert _masked_attention(1) and sum(k.startswith("Gemm") for k in kinds()) == 2, kinds()


def _masked_attention(n):
    """The last program has n Attention instructions with an additive mask and no score-matrix softmax."""
    return sum(k.startswith("Attention") and "mask=add" in k for k in kinds()) == n and \
        not any(k.startswith("Softmax") for k in kinds())


def _masked(q, k, v, mask, fill, bias):
    """MPT's form: scores + a position bias, masked_fill with the dtype's min, softmax in fp32."""
    att = q @ k.transpose(-1, -2) * 0.125 + bias
    att = att.masked_fill(mask, fill)
    return torch.softmax(att.float(), dim=-1).to(v.dtype) @ v


def test_masked_fill_with_the_dtype_min_and_a_bias():
    """masked_fill(m, finfo.min) after an additive bias becomes one additive mask (Attention's); a row with
    every key masked gets eager's uniform weights (not SDPA's zeros)."""
    q, k, v = (randn(2, 2, 40, 64) for _ in range(3))
    mask = torch.rand(2, 1, 40, 40) < 0.3
    mask[1, 0, 7] = True  # every key of one query masked
    bias = randn(1, 2, 1, 40, dtype=torch.float32)
    fn = lambda q, k, v, m, b: _masked(q, k, v, m, torch.finfo(BF16).min, b)  # noqa: E731
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", megakittens.MathAttentionWarning)
        out = megakittens.compile(fn)(q, k, v, mask, bias)
    ref = fn(q, k, v, mask, bias)
    assert rel_err(out, ref) <= 1e-2
    assert rel_err(out[1, :, 7], v[1].float().mean(-2)) <= 1e-2  # uniform over the keys, as eager
    assert _masked_attention(1) and not any(k.startswith("Gemm") for k in kinds()), kinds()


def test_where_with_the_dtype_min_and_a_runtime_mask():
    """torch.where(m, scores, finfo.min) with a boolean graph input: an additive where(m, 0, min), Attention's
    mask; a row with every key dropped keeps eager's uniform weights."""
    def fn(q, k, v, m):
        att = (q @ k.transpose(-2, -1)) / math.sqrt(q.shape[-1])
        return torch.softmax(torch.where(m, att, torch.finfo(q.dtype).min), dim=-1) @ v

    q, k, v = (randn(2, 2, 24, 64) for _ in range(3))
    m = torch.rand(2, 1, 24, 24) < 0.7
    m[0, 0, 3] = False
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", megakittens.MathAttentionWarning)
        out = megakittens.compile(fn)(q, k, v, m)
    assert rel_err(out, fn(q, k, v, m)) <= 1e-2
    assert rel_err(out[0, :, 3], v[0].float().mean(-2)) <= 1e-2
    assert _masked_attention(1) and not any(k.startswith("ElementwiseUnary(ops=where") for k in kinds()), kinds()


@pytest.mark.parametrize("case", ["full", "scale", "causal", "mask", "gqa"])
def test_pytorch_math_sdpa_runs_as_the_attention_instruction(case):
    """PyTorch's math SDPA (the CUDA and CPU dispatch's last resort, and what ``sdpa_kernel(MATH)`` pins) casts
    q, k and v to fp32, scales q and k^T by sqrt(scale) each, and multiplies in fp32: recognised as the SDPA it
    came from, so it runs as one bf16 Attention instead of raising at its fp32 bmm."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    q, m = randn(2, 4, 72, 64), randn(2, 1, 72, 72)
    k, v = (randn(2, 2 if case == "gqa" else 4, 72, 64) for _ in range(2))
    args = {"full": {}, "scale": {"scale": 0.3}, "causal": {"is_causal": True}, "mask": {"attn_mask": m},
            "gqa": {"enable_gqa": True}}[case]
    fn = lambda q, k, v: F.scaled_dot_product_attention(q, k, v, **args)  # noqa: E731
    with sdpa_kernel([SDPBackend.MATH]), torch.no_grad():
        out, ref = megakittens.compile(fn)(q, k, v), fn(q, k, v)
    ref32 = F.scaled_dot_product_attention(q.float(), k.float(), v.float(),
                                           **{**args, **({"attn_mask": m.float()} if case == "mask" else {})})
    assert rel_err(out, ref) <= 1e-2 and rel_err(out, ref32) <= 1e-2
    scale = 0.3 if case == "scale" else 0.125
    assert len(kinds()) == 1 and kinds()[0].startswith(f"Attention(causal={int(case == 'causal')}"), kinds()
    assert math.isclose(float(kinds()[0].split("scale=")[1].split(",")[0].rstrip(")")), scale, rel_tol=1e-6)
    assert ("mask=add" in kinds()[0]) == (case == "mask"), kinds()


def test_operands_scaled_before_the_product():
    """timm's ``q = q * scale; attn = q @ k.transpose(-2, -1)``: the scale moves onto the scores."""
    def fn(q, k, v):
        return (q * 0.125 @ k.transpose(-2, -1)).softmax(dim=-1) @ v

    q, k, v = (randn(2, 3, 50, 64) for _ in range(3))
    out = megakittens.compile(fn)(q, k, v)
    assert rel_err(out, fn(q, k, v)) <= 1e-2
    assert kinds() == ["Attention(causal=0,scale=0.125)"], kinds()


def test_negative_scale_stays_as_written():
    """softmax(q k^T * -c) @ v: no SDPA (its scale is positive); compiled as written."""
    def fn(q, k, v):
        return torch.softmax(q @ k.transpose(-2, -1) * -0.125, dim=-1) @ v

    q, k, v = (randn(1, 2, 32, 64) for _ in range(3))
    out = megakittens.compile(fn)(q, k, v)
    assert rel_err(out, fn(q, k, v)) <= 1e-2
    assert not any(k.startswith("Attention") for k in kinds()), kinds()


def test_not_recognised_where_the_weights_are_read():
    """Attention weights returned beside the output: the chain stays as written (a Softmax, two Gemms)."""
    def fn(q, k, v):
        p = torch.softmax(q @ k.transpose(-2, -1) * 0.125, dim=-1)
        return p @ v, p

    q, k, v = (randn(1, 2, 64, 64) for _ in range(3))
    out, ref = megakittens.compile(fn)(q, k, v), fn(q, k, v)
    assert rel_err(out[0], ref[0]) <= 1e-2 and rel_err(out[1], ref[1]) <= 1e-2
    assert "Softmax" in kinds() and not any(k.startswith("Attention") for k in kinds())


def test_big_negative_fill_values():
    assert _big_negative(-math.inf, BF16) and _big_negative(torch.finfo(BF16).min, BF16)
    assert _big_negative(torch.finfo(torch.float32).min, torch.float32)
    assert not _big_negative(-1e4, BF16)  # a fill the scores can still outweigh
    assert not _big_negative(torch.finfo(torch.float32).min, BF16)  # not a bf16 value: -inf once rounded
    assert not _big_negative(0.0, BF16) and not _big_negative(math.nan, BF16)


transformers = pytest.importorskip("transformers")


def _hf(config_cls, model_cls, **extra):
    cfg = config_cls(**{"hidden_size": 256, "intermediate_size": 512, "num_hidden_layers": 2,
                        "num_attention_heads": 4, "vocab_size": 256, "pad_token_id": 0, "bos_token_id": 1,
                        "eos_token_id": 2, **extra})
    cfg._attn_implementation = "eager"
    torch.manual_seed(0)
    return model_cls(cfg).eval().to(BF16)


def test_hf_llama_eager_attention_is_the_attention_instruction():
    """attn_implementation="eager" (repeat_kv, matmul, causal mask added, fp32 softmax) compiles to the same
    program as "sdpa": one causal Attention a layer reading the 2 KV heads directly, no softmax, no rank-5."""
    m = _hf(transformers.LlamaConfig, transformers.LlamaForCausalLM, num_key_value_heads=2)
    ids = torch.randint(0, 256, (2, 64))
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("error", megakittens.MathAttentionWarning)
        out, ref = megakittens.compile(m)(ids).logits, m(ids).logits
    assert rel_err(out, ref) <= 2e-2
    assert kinds().count("Attention(causal=1,scale=0.125,bshd=qvo)") == 2, kinds()
    assert not any(k.startswith("Softmax") for k in kinds())
    assert_gpu_bodies()


@pytest.mark.parametrize("family", ["gemma2", "gptj", "mpt", "llama_attentions"])
def test_hf_eager_attention_models_match_eager(family):
    """Gemma2 (tanh soft-capping between the scores and the mask: not recognised, its repeat_kv copied in four
    dims), GPT-J (q and k multiplied in fp32), MPT (ALiBi bias, masked_fill with the dtype's min) and Llama
    returning its attention weights, whole, against eager."""
    T = transformers
    kw = {}
    if family == "gemma2":
        m = _hf(T.Gemma2Config, T.Gemma2Model, num_key_value_heads=2, head_dim=64)
    elif family == "gptj":
        m = _hf(T.GPTJConfig, T.GPTJModel, n_embd=256, n_layer=2, n_head=4, rotary_dim=16)
    elif family == "mpt":
        m = _hf(T.MptConfig, T.MptModel, d_model=256, n_heads=4, n_layers=2)
    else:
        m = _hf(T.LlamaConfig, T.LlamaModel, num_key_value_heads=2)
        kw = {"output_attentions": True}
    ids = torch.randint(3, 256, (2, 48))
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore", megakittens.MathAttentionWarning)
        ref = m(ids, **kw)  # first: output_attentions installs hooks under a lock, which Dynamo cannot trace
        out = megakittens.compile(m)(ids, **kw)
    assert rel_err(out.last_hidden_state, ref.last_hidden_state) <= 2e-2
    if kw:
        assert all(rel_err(a, b) <= 1e-2 for a, b in zip(out.attentions, ref.attentions))
        assert "Softmax" in kinds()
    attention = [k for k in kinds() if k.startswith("Attention")]
    if family == "gptj":  # its constant causal mask folds to is_causal
        assert len(attention) == 2 and all("causal=1" in k for k in attention), kinds()
    if family == "mpt":  # a runtime ALiBi bias: Attention's additive mask
        assert _masked_attention(2), kinds()
