"""A Hugging Face ViT at the ViT-B/16 shape (hidden 768, 12 heads, MLP 3072, 224 x 224 images: 197 tokens) on the
H200 as one megakernel: the patch embedding's convolution as a matrix product (megakittens/decompose.py), full
(non-causal) attention over a sequence that is not a tile multiple, LayerNorm, GELU. Random bf16 weights; four
layers, batch 8; the final hidden state within 2e-2 of eager (the model in fp32 the anchor where two bf16 runs
drift further apart, as for the Llamas)."""
from __future__ import annotations

import pytest
import torch

import megakittens.backend as mk_backend
from test_gpu_llama import _compile_no_fallback, _example, _gpu_ok, _megakernel_launches


@pytest.mark.gpu
@pytest.mark.parametrize("patch", [16, 14])  # 14: the 588-value patch rows padded to 592 columns (a Cat)
def test_hf_vit_base_is_one_megakernel(patch):
    if not _gpu_ok():
        pytest.skip("needs a Hopper GPU and the GPU runtime")
    transformers = pytest.importorskip("transformers")
    cfg = transformers.ViTConfig(hidden_size=768, num_hidden_layers=4, num_attention_heads=12, intermediate_size=3072,
                                 image_size=224, patch_size=patch)
    cfg._attn_implementation = "sdpa"
    torch.manual_seed(0)
    model = transformers.ViTModel(cfg).to(device="cuda", dtype=torch.bfloat16).eval()
    pixels = torch.randn(8, 3, 224, 224, device="cuda").to(torch.bfloat16)

    def fwd(p):
        return model(pixel_values=p).last_hidden_state

    with torch.no_grad():
        h_ref = fwd(pixels)
        fn = _compile_no_fallback(fwd)
        h = fn(pixels)
        assert mk_backend.dispatchers[-1]._gpu_error == "", mk_backend.dispatchers[-1]._gpu_error
        n, names = _megakernel_launches(fn, pixels)
        assert n == 1, names
        ok, msg = _example().verdict(h, None, h_ref, None,
                                     lambda: (model.float()(pixel_values=pixels.float()).last_hidden_state, None))
        assert ok, msg
