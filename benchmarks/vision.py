"""Vision encoder benchmark: Hugging Face ViTModel at the ViT-B/16 shape (hidden 768, 12 layers, 12 heads, MLP
3072, 224 x 224 images: 197 tokens), random bf16 weights, sdpa, batch MK_VISION_BATCH (32 by default):
megakittens' latency and first-call compile time against eager and torch.compile (MK_TC_MODE, "default" here;
"none" skips it) in the same run. The patch embedding runs as one matrix product (megakittens/decompose.py)."""
from __future__ import annotations

import os
import time

import torch

from common import bench, rel_err, row, write


def suite_vision(env):
    import transformers

    import megakittens
    mode = os.environ.get("MK_TC_MODE", "default")
    batch = int(os.environ.get("MK_VISION_BATCH", "32"))
    cfg = transformers.ViTConfig(hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
                                 intermediate_size=3072, image_size=224, patch_size=16)
    cfg._attn_implementation = "sdpa"
    torch.manual_seed(0)
    model = transformers.ViTModel(cfg).to(device="cuda", dtype=torch.bfloat16).eval()
    pixels = torch.randn(batch, 3, 224, 224, device="cuda").to(torch.bfloat16)

    def fwd(p):
        return model(pixel_values=p).last_hidden_state

    def first_call(fn):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        out = fn(pixels)
        torch.cuda.synchronize()
        return time.perf_counter() - t0, out

    case = f"HF ViTModel B/16 (12 layers, 224^2, batch {batch})"
    with torch.no_grad():
        ref = fwd(pixels)
        base = {"eager": bench(lambda: fwd(pixels), iters=10, warmup=2)}
        torch._dynamo.reset()
        mk = megakittens.compile(fwd)
        cold, out = first_call(mk)
        mk_ms = bench(lambda: mk(pixels), iters=10, warmup=2)
        tc_cold = None
        if mode != "none":
            torch._dynamo.reset()
            tc = torch.compile(fwd, mode=mode)
            tc_cold, _ = first_call(tc)
            base = {f"torch.compile({mode})": bench(lambda: tc(pixels), iters=10, warmup=2), **base}
    rows = [row("vision", case, "latency", "ms", mk_ms, base, env, higher_is_better=False,
                note=f"relative error of the hidden state vs eager {rel_err(out, ref):.2e}"),
            row("vision", case, "compile (first call)", "s", cold, {f"torch.compile({mode})": tc_cold} if tc_cold else {},
                env, higher_is_better=False)]
    write("vision", rows)
    return rows
