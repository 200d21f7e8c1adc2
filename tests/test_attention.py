"""Attention on the CPU reference interpreter through megakittens.compile (issue 5), against SDPA in
fp32: head dims 64 and 128, causal (top-left) and full, GQA, Sq != Sk, a custom scale, and (B, S, H, D)
tensors read through view + transpose(1, 2) - the same semantics tests/test_gpu_attention.py checks on
the GPU, on small shapes."""
from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import megakittens
import megakittens.backend as mk_backend
from common import check_close, randn


def sdpa(causal, scale=None):
    def f(q, k, v):
        return F.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=scale, enable_gqa=k.shape[1] != q.shape[1])
    return f


@pytest.mark.parametrize("B,H,Hk,Sq,Sk,D,causal,scale", [
    (1, 2, 2, 64, 64, 64, True, None),
    (2, 4, 1, 40, 90, 128, True, None),    # GQA 4, Sq < Sk: row i sees keys 0..i
    (1, 8, 2, 70, 30, 64, True, 0.3),      # rows past Sk see every key
    (2, 2, 2, 33, 129, 128, False, None),
])
def test_sdpa_on_the_reference(B, H, Hk, Sq, Sk, D, causal, scale):
    fn = sdpa(causal, scale)
    args = [randn(B, H, Sq, D), randn(B, Hk, Sk, D), randn(B, Hk, Sk, D)]
    out = megakittens.compile(fn)(*args)
    assert any(n.startswith("Attention") for n in mk_backend.dispatchers[-1].program.icodes)
    check_close(out, fn(*[a.float() for a in args]))


def repeat_kv_sdpa(q, k, v):
    """Hugging Face's repeat_kv written out in front of SDPA (a rank-5 expand)."""
    n = q.shape[1] // k.shape[1]
    k = k[:, :, None].expand(k.shape[0], k.shape[1], n, *k.shape[2:]).reshape(k.shape[0], -1, *k.shape[2:])
    v = v[:, :, None].expand(v.shape[0], v.shape[1], n, *v.shape[2:]).reshape(v.shape[0], -1, *v.shape[2:])
    return F.scaled_dot_product_attention(q, k, v, is_causal=True)


@pytest.mark.parametrize("Hk", [1, 2])
def test_repeat_kv_folds_into_gqa(Hk):
    """src/trace/fuse_repeat_kv.h: the repeat goes, Attention reads KV head h / (H / Hk); with one KV head
    the expand is viewable and Dynamo's graph has no clone, which the fusion matches too."""
    args = [randn(1, 4, 48, 64), randn(1, Hk, 48, 64), randn(1, Hk, 48, 64)]
    out = megakittens.compile(repeat_kv_sdpa)(*args)
    assert mk_backend.dispatchers[-1].program.icodes[1:] == ["Attention(causal=1,scale=0.125)"]
    check_close(out, repeat_kv_sdpa(*[a.float() for a in args]))


def bshd(q, k, v):
    B, S, _ = q.shape
    return F.scaled_dot_product_attention(q.view(B, S, 4, 64).transpose(1, 2), k.view(B, S, 2, 64).transpose(1, 2),
                                          v.view(B, S, 2, 64).transpose(1, 2), is_causal=True, enable_gqa=True)


def test_bshd_views_are_read_in_place():
    args = [randn(2, 50, 256), randn(2, 50, 128), randn(2, 50, 128)]
    out = megakittens.compile(bshd)(*args)
    p = mk_backend.dispatchers[-1].program
    assert p.icodes[1:] == ["Attention(causal=1,scale=0.125,bshd=qkv)"], p.icodes  # no copy node
    check_close(out, bshd(*[a.float() for a in args]))


def attention_block(q, k, v, wo):
    """SDPA, then the transpose back to (B, S, H, D) and the output projection, as models write it."""
    B, S, _ = q.shape
    o = bshd(q, k, v)
    return o.transpose(1, 2).reshape(B, S, 256) @ wo


def test_output_transpose_is_stored_by_the_attention():
    """src/trace/fuse_attention_output.h: the transposed copy of the output goes, Attention stores (B, S, H, D)."""
    args = [randn(2, 50, 256), randn(2, 50, 128), randn(2, 50, 128), randn(256, 256, scale=1 / 16)]
    out = megakittens.compile(attention_block)(*args)
    p = mk_backend.dispatchers[-1].program
    assert p.icodes[1:] == ["Attention(causal=1,scale=0.125,bshd=qkvo)", "Gemm"], p.icodes
    check_close(out, attention_block(*[a.float() for a in args]))

    def two_readers(q, k, v, wo):  # the (B, H, S, D) output is read as it is too: the copy stays
        B, S, _ = q.shape
        o = bshd(q, k, v)
        return o.transpose(1, 2).reshape(B, S, 256) @ wo, o * 2
    out = megakittens.compile(two_readers)(*args)
    p = mk_backend.dispatchers[-1].program
    assert "Attention(causal=1,scale=0.125,bshd=qkv)" in p.icodes and any(n.startswith("Copy") for n in p.icodes)
    check_close(out, two_readers(*[a.float() for a in args]))


def test_other_views_are_copied_first():
    """A (B, D, S, H) backing permuted to (B, H, S, D) is no (B, S, H, D) transpose: the tracer copies it
    into a fresh tensor ([Note: view copies]) and Attention reads that."""
    def f(q, k, v):
        return torch.ops.megakittens.attention(q.permute(0, 3, 2, 1), k, v, False, 0.125)
    args = [randn(1, 64, 32, 2), randn(1, 2, 32, 64), randn(1, 2, 32, 64)]
    out = megakittens.compile(f)(*args)
    icodes = mk_backend.dispatchers[-1].program.icodes
    assert "Attention(causal=0,scale=0.125)" in icodes and any(n.startswith("Copy") for n in icodes), icodes
    check_close(out, f(*[a.float() for a in args]))
