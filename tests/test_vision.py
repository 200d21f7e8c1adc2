"""Hugging Face vision encoders (ViT, DeiT, BEiT, DINOv2, CLIP's and SigLIP's vision towers) compiled whole on the
CPU interpreter: the patch embedding's convolution becomes one matrix product (megakittens/decompose.py), the rest
is LayerNorm, full (non-causal) SDPA, GELU and linear layers. Tiny configs, random bf16 weights, batch 2."""
from __future__ import annotations

import contextlib
import warnings

import pytest
import torch

import megakittens
import megakittens.backend as mk_backend
from common import BF16, rel_err
from test_llama import HIDDEN_TOL
from test_sdpa_math import assert_gpu_bodies

# family: (config class, model class, config kwargs beyond the shared tiny ones, image side). Patch 14 (CLIP,
# DINOv2) takes the 16-byte row padding: 14 x 14 x 3 = 588 values a patch.
VISION = {
    "vit": ("ViTConfig", "ViTModel", {"patch_size": 16, "intermediate_size": 512}, 64),
    "deit": ("DeiTConfig", "DeiTModel", {"patch_size": 16, "intermediate_size": 512}, 64),
    "beit": ("BeitConfig", "BeitModel", {"patch_size": 16, "intermediate_size": 512}, 64),
    "dinov2": ("Dinov2Config", "Dinov2Model", {"patch_size": 14, "mlp_ratio": 2}, 56),
    "clip_vision": ("CLIPVisionConfig", "CLIPVisionModel", {"patch_size": 14, "intermediate_size": 512}, 56),
    "siglip_vision": ("SiglipVisionConfig", "SiglipVisionModel", {"patch_size": 16, "intermediate_size": 512}, 64),
}


@pytest.mark.parametrize("family", sorted(VISION) + ["vit_math_sdpa"])
def test_hf_vision_encoders_match_eager(family):
    """vit_math_sdpa: ViT with PyTorch's math SDPA pinned (``sdpa_kernel(MATH)``), whose fp32 graph
    (megakittens/eager_attention.py) must still give two Attention instructions."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    math_sdpa = family == "vit_math_sdpa"
    family = "vit" if math_sdpa else family
    transformers = pytest.importorskip("transformers")
    cfg_name, model_name, extra, side = VISION[family]
    if not hasattr(transformers, cfg_name):
        pytest.skip(f"transformers {transformers.__version__} has no {cfg_name}")
    cfg = getattr(transformers, cfg_name)(hidden_size=256, num_hidden_layers=2, num_attention_heads=4,
                                         image_size=side, **extra)
    cfg._attn_implementation = "sdpa"
    model = getattr(transformers, model_name)(cfg).to(BF16).eval()
    pixels = torch.randn(2, 3, side, side).to(BF16)
    fwd = lambda p: model(pixel_values=p).last_hidden_state  # noqa: E731
    with torch.no_grad(), sdpa_kernel([SDPBackend.MATH]) if math_sdpa else contextlib.nullcontext():
        h, h_ref = megakittens.compile(fwd)(pixels), fwd(pixels)
    err = rel_err(h, h_ref)
    assert err <= HIDDEN_TOL, f"{family}: relative error {err:.3g}"
    program = mk_backend.dispatchers[-1].program
    kinds = [n.itype for n in program.nodes]
    assert sum(k.startswith("Attention(causal=0") for k in kinds) == 2, kinds
    assert not any("onvolution" in k for k in kinds), kinds
    assert_gpu_bodies()


@pytest.mark.parametrize("model,image,window", [("Swin", 64, 4), ("Swin", 60, 4), ("Swin", 64, 8), ("Swinv2", 64, 4)])
def test_hf_swin_matches_eager(model, image, window):
    """Swin whole: rank-6 window partitions and reverses (megakittens/rank5.py; with one window over the map, a
    plain view), shifted windows (torch.roll: a cat of slices), patch merging's step slices
    (megakittens/views.py), the pooler's as_strided, a map padded to the windows (60: equal folded padding
    constants shared); its attention (head dims 8 / 16, a runtime position-bias mask) on the score-matrix math.
    Swin v2's cosine attention (F.normalize: an order-2 vector norm) against the fp32 model."""
    transformers = pytest.importorskip("transformers")
    if not hasattr(transformers, f"{model}Config"):
        pytest.skip(f"transformers {transformers.__version__} has no {model}Config")
    cfg = getattr(transformers, f"{model}Config")(image_size=image, patch_size=4, embed_dim=16, depths=[1, 1],
                                                  num_heads=[1, 2], window_size=window)
    torch.manual_seed(0)
    m = getattr(transformers, f"{model}Model")(cfg).to(BF16).eval()
    pixels = torch.randn(2, 3, image, image).to(BF16)
    torch._dynamo.reset()
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore", megakittens.MathAttentionWarning)
        out = megakittens.compile(m)(pixels)
        ref = m.float()(pixels.float()) if model == "Swinv2" else m(pixels)
    for field in ("last_hidden_state", "pooler_output"):
        err = rel_err(getattr(out, field), getattr(ref, field))
        assert err <= HIDDEN_TOL, f"{field}: relative error {err:.3g}"


def test_hf_mobilevit_matches_eager():
    """MobileViT whole: convolutions with eval batch norm and SiLU around transformer blocks whose written-out
    attention (megakittens/eager_attention.py) has head dims 20, 24 and 28, run as Attention with q, k, v
    zero-padded to 64 (megakittens/sdpa_math.py); against the fp32 model."""
    transformers = pytest.importorskip("transformers")
    if not hasattr(transformers, "MobileViTConfig"):
        pytest.skip(f"transformers {transformers.__version__} has no MobileViTConfig")
    cfg = transformers.MobileViTConfig(image_size=64, hidden_sizes=[40, 48, 56],
                                       neck_hidden_sizes=[16, 16, 24, 24, 32, 32, 64], num_attention_heads=2)
    torch.manual_seed(0)
    m = transformers.MobileViTModel(cfg).eval()
    for bn in (mod for mod in m.modules() if isinstance(mod, torch.nn.BatchNorm2d)):
        bn.running_mean.uniform_(-0.5, 0.5)
        bn.running_var.uniform_(0.5, 2)
        bn.weight.data.uniform_(0.5, 1.5)
    m = m.to(BF16)
    pixels = torch.randn(2, 3, 64, 64).to(BF16)
    torch._dynamo.reset()
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("error", megakittens.MathAttentionWarning)  # no score-matrix math
        out = megakittens.compile(m)(pixels)
        ref = m.float()(pixels.float())
    for field in ("last_hidden_state", "pooler_output"):
        err = rel_err(getattr(out, field), getattr(ref, field))
        assert err <= HIDDEN_TOL, f"{field}: relative error {err:.3g}"
    kinds = [n.itype for n in mk_backend.dispatchers[-1].program.nodes]
    assert sum(k.startswith("Attention(causal=0") for k in kinds) == 9, kinds
    assert_gpu_bodies()
