"""Vision and audio encoder benchmark, random bf16 weights, megakittens' latency and first-call compile time
against eager and torch.compile (MK_TC_MODE, "default" here; "none" skips it) in the same run. MK_VISION_MODELS
(comma-separated, default "vit_b16,whisper_base,resnet50") picks from:
- vit_b16: Hugging Face ViTModel at the ViT-B/16 shape (hidden 768, 12 layers, 12 heads, MLP 3072, 224 x 224
  images: 197 tokens), sdpa, batch MK_VISION_BATCH (32 by default); the patch embedding is one matrix product.
- whisper_base: WhisperModel's encoder at the base shape (d_model 512, 6 layers, 8 heads), 30 s of 80 mel bins
  (3000 frames), batch MK_VISION_BATCH / 4: two im2col convolutions, then the transformer.
- resnet50 / convnext_t: ResNetModel / ConvNextModel at their default (ImageNet) shapes, 224 x 224, batch
  MK_VISION_BATCH; ResNet-50 needs more tensor slots than one program has, so it runs with fallback="eager"
  (megakernels split in graph order). Convolutions by im2col (megakittens/convolution.py).
"""
from __future__ import annotations

import os
import time

import torch

from common import bench, rel_err, row, write


def _model(name, batch):
    """(case, module, input, compile options) of one MK_VISION_MODELS entry."""
    import transformers as T
    torch.manual_seed(0)
    if name == "vit_b16":
        cfg = T.ViTConfig(hidden_size=768, num_hidden_layers=12, num_attention_heads=12, intermediate_size=3072,
                          image_size=224, patch_size=16)
        cfg._attn_implementation = "sdpa"
        return f"HF ViTModel B/16 (12 layers, 224^2, batch {batch})", T.ViTModel(cfg), (batch, 3, 224, 224), {}
    if name == "whisper_base":
        cfg = T.WhisperConfig(d_model=512, encoder_layers=6, encoder_attention_heads=8, encoder_ffn_dim=2048,
                              decoder_layers=1, decoder_attention_heads=8)
        b = max(1, batch // 4)
        return f"HF Whisper-base encoder (6 layers, 3000 frames, batch {b})", T.WhisperModel(cfg).encoder, \
            (b, 80, 3000), {}
    if name == "resnet50":
        return f"HF ResNet-50 (224^2, batch {batch}, fallback=eager)", T.ResNetModel(T.ResNetConfig()), \
            (batch, 3, 224, 224), {"fallback": "eager"}
    if name == "convnext_t":
        return f"HF ConvNeXt-T (224^2, batch {batch})", T.ConvNextModel(T.ConvNextConfig()), (batch, 3, 224, 224), {}
    raise ValueError(f"MK_VISION_MODELS: unknown model {name!r} (vit_b16, whisper_base, resnet50, convnext_t)")


def suite_vision(env):
    import megakittens
    mode = os.environ.get("MK_TC_MODE", "default")
    batch = int(os.environ.get("MK_VISION_BATCH", "32"))
    rows = []
    for name in os.environ.get("MK_VISION_MODELS", "vit_b16,whisper_base,resnet50").split(","):
        case, model, shape, options = _model(name.strip(), batch)
        model = model.to(device="cuda", dtype=torch.bfloat16).eval()
        x = torch.randn(*shape, device="cuda").to(torch.bfloat16)

        def fwd(p, model=model):
            return model(p).last_hidden_state

        def first_call(fn):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            out = fn(x)
            torch.cuda.synchronize()
            return time.perf_counter() - t0, out

        with torch.no_grad():
            ref = fwd(x)
            base = {"eager": bench(lambda: fwd(x), iters=10, warmup=2)}
            torch._dynamo.reset()
            mk = megakittens.compile(fwd, **options)
            cold, out = first_call(mk)
            mk_ms = bench(lambda: mk(x), iters=10, warmup=2)
            tc_cold = None
            if mode != "none":
                torch._dynamo.reset()
                tc = torch.compile(fwd, mode=mode)
                tc_cold, _ = first_call(tc)
                base = {f"torch.compile({mode})": bench(lambda: tc(x), iters=10, warmup=2), **base}
        rows += [row("vision", case, "latency", "ms", mk_ms, base, env, higher_is_better=False,
                     note=f"relative error of the hidden state vs eager {rel_err(out, ref):.2e}"),
                 row("vision", case, "compile (first call)", "s", cold,
                     {f"torch.compile({mode})": tc_cold} if tc_cold else {}, env, higher_is_better=False)]
        del model, mk
    write("vision", rows)
    return rows
