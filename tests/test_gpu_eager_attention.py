"""Attention written out as matmul -> softmax -> matmul (megakittens/eager_attention.py) on the H200: the
Attention instruction for hand-written causal / full attention and Hugging Face's eager Llama, the
score-matrix math for a runtime mask, one megakernel launch each, no fallback."""
from __future__ import annotations

import warnings

import pytest
import torch

import megakittens
import megakittens.backend as mk_backend
from common import rel_err
from test_eager_attention import _attention, _masked
from test_gpu_llama import _compile_no_fallback, _gpu_ok, _megakernel_launches


def _need_gpu():
    if not _gpu_ok():
        pytest.skip("needs a Hopper GPU and the GPU runtime")


def _kinds():
    return [n.itype for n in mk_backend.dispatchers[-1].program.nodes]


def _rand(*shape):
    return torch.randn(*shape, device="cuda").to(torch.bfloat16)


@pytest.mark.gpu
@pytest.mark.parametrize("variant", ["full", "tril_masked_fill", "float_softmax"])
def test_written_out_attention_on_the_gpu(variant):
    _need_gpu()
    q, k, v = (_rand(2, 8, 1000, 128) for _ in range(3))
    fn = lambda q, k, v: _attention(q, k, v, variant)  # noqa: E731
    compiled = _compile_no_fallback(fn)
    out = compiled(q, k, v)
    assert mk_backend.dispatchers[-1]._gpu_error == "", mk_backend.dispatchers[-1]._gpu_error
    ref = torch.nn.functional.scaled_dot_product_attention(q.float(), k.float(), v.float(),
                                                           is_causal=variant == "tril_masked_fill")
    assert rel_err(out, ref) <= 1e-2
    assert [k for k in _kinds() if k.startswith("Attention")] and "Softmax" not in _kinds(), _kinds()
    assert _megakernel_launches(compiled, q, k, v)[0] == 1


@pytest.mark.gpu
def test_masked_fill_with_the_dtype_min_on_the_gpu():
    _need_gpu()
    q, k, v = (_rand(2, 4, 300, 64) for _ in range(3))
    mask = torch.rand(2, 1, 300, 300, device="cuda") < 0.3
    mask[1, 0, 7] = True
    bias = torch.randn(1, 4, 1, 300, device="cuda")
    fn = lambda q, k, v, m, b: _masked(q, k, v, m, torch.finfo(torch.bfloat16).min, b)  # noqa: E731
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", megakittens.MathAttentionWarning)
        out = _compile_no_fallback(fn)(q, k, v, mask, bias)
    assert mk_backend.dispatchers[-1]._gpu_error == "", mk_backend.dispatchers[-1]._gpu_error
    assert rel_err(out, fn(q, k, v, mask, bias)) <= 1e-2
    assert rel_err(out[1, :, 7], v[1].float().mean(-2)) <= 1e-2


@pytest.mark.gpu
def test_hf_llama_eager_attention_on_the_gpu():
    _need_gpu()
    transformers = pytest.importorskip("transformers")
    cfg = transformers.LlamaConfig(hidden_size=1024, intermediate_size=2048, num_hidden_layers=2,
                                   num_attention_heads=8, num_key_value_heads=2, vocab_size=1000)
    cfg._attn_implementation = "eager"
    torch.manual_seed(0)
    m = transformers.LlamaModel(cfg).eval().to("cuda", torch.bfloat16)
    ids = torch.randint(0, 1000, (1, 512), device="cuda")
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("error", megakittens.MathAttentionWarning)
        compiled = _compile_no_fallback(m)
        out, ref = compiled(ids).last_hidden_state, m(ids).last_hidden_state
        assert mk_backend.dispatchers[-1]._gpu_error == "", mk_backend.dispatchers[-1]._gpu_error
        assert rel_err(out, ref) <= 2e-2
        assert sum(k.startswith("Attention(causal=1,") for k in _kinds()) == 2, _kinds()
        assert _megakernel_launches(compiled, ids)[0] == 1


@pytest.mark.gpu
@pytest.mark.parametrize("causal", [False, True])
def test_pytorch_math_sdpa_on_the_gpu(causal):
    """An SDPA the dispatcher sends to PyTorch's math backend (pinned here; the fp32 operands of its two bmm
    raised before) runs as one Attention instruction at ViT-B's shape (197 tokens, 12 heads of 64)."""
    _need_gpu()
    from torch.nn.attention import SDPBackend, sdpa_kernel
    q, k, v = (_rand(8, 12, 197, 64) for _ in range(3))
    fn = lambda q, k, v: torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)  # noqa: E731
    with sdpa_kernel([SDPBackend.MATH]), torch.no_grad():
        compiled = _compile_no_fallback(fn)
        out = compiled(q, k, v)
        assert mk_backend.dispatchers[-1]._gpu_error == "", mk_backend.dispatchers[-1]._gpu_error
        assert _kinds() == [f"Attention(causal={int(causal)},scale=0.125)"], _kinds()
        assert _megakernel_launches(compiled, q, k, v)[0] == 1
    ref = torch.nn.functional.scaled_dot_product_attention(q.float(), k.float(), v.float(), is_causal=causal)
    assert rel_err(out, ref) <= 1e-2
