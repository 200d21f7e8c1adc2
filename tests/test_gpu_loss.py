"""Cross-entropy over integer targets on the H200 (megakittens/loss.py): a LlamaForCausalLM at Llama-3.2-1B
widths (2 layers, vocab 32000) called with labels, as one megakernel: loss within 1e-2 of eager's; F.cross_entropy
with class weights and a target out of range raising (the weights' Embedding reads fp32 ids on the device)."""
from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import megakittens.backend as mk_backend
from common import rel_err
from test_gpu_llama import _compile_no_fallback, _gpu_ok, _megakernel_launches


@pytest.mark.gpu
def test_llama_for_causal_lm_loss_is_one_megakernel():
    if not _gpu_ok():
        pytest.skip("needs a Hopper GPU and the GPU runtime")
    transformers = pytest.importorskip("transformers")
    cfg = transformers.LlamaConfig(vocab_size=32000, hidden_size=2048, intermediate_size=8192, num_hidden_layers=2,
                                   num_attention_heads=32, num_key_value_heads=8)
    cfg._attn_implementation = "sdpa"
    torch.manual_seed(0)
    model = transformers.LlamaForCausalLM(cfg).to(device="cuda", dtype=torch.bfloat16).eval()
    ids = torch.randint(0, 32000, (2, 512), device="cuda")
    labels = ids.clone()
    labels[1, :100] = -100

    def fwd(i, lab):
        return model(input_ids=i, labels=lab, use_cache=False).loss

    with torch.no_grad():
        ref = fwd(ids, labels)
        fn = _compile_no_fallback(fwd)
        out = fn(ids, labels)
        assert mk_backend.dispatchers[-1]._gpu_error == "", mk_backend.dispatchers[-1]._gpu_error
        assert _megakernel_launches(fn, ids, labels)[0] == 1
    assert not torch.isnan(out) and rel_err(out, ref) <= 1e-2, (out, ref)


@pytest.mark.gpu
def test_weighted_cross_entropy_and_a_bad_target():
    if not _gpu_ok():
        pytest.skip("needs a Hopper GPU and the GPU runtime")
    torch.manual_seed(1)
    x = torch.randn(1024, 1000, device="cuda")
    t = torch.randint(0, 1000, (1024,), device="cuda")
    t[::7] = -100
    w = torch.rand(1000, device="cuda") + 0.5

    def f(x, t, w):
        return F.cross_entropy(x, t, weight=w)

    fn = _compile_no_fallback(f)
    out = fn(x, t, w)
    assert mk_backend.dispatchers[-1]._gpu_error == "", mk_backend.dispatchers[-1]._gpu_error
    assert rel_err(out, f(x, t, w)) <= 1e-4, (out, f(x, t, w))
    bad = t.clone()
    bad[10] = 1000
    # The device reports the index asynchronously (docs/itypes.md Embedding): the bad call's loss is NaN, the
    # next call raises IndexError, and the one after runs as before.
    assert torch.isnan(fn(x, bad, w)).item()
    with pytest.raises(IndexError, match="out of range"):
        fn(x, t, w)
    torch.cuda.synchronize()
    assert rel_err(fn(x, t, w), f(x, t, w)) <= 1e-4  # the context survives the error
