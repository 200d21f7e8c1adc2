"""Diagnostic (device): where the float32 bmm of HF ViT-B on CUDA comes from (tests/test_gpu_vision.py fails with
"bmm input A must be bfloat16, got float32"; the CPU graph has none). Prints each bmm's producer chain."""
import torch, transformers, megakittens
import megakittens.backend as mkb
orig = mkb.compile_graph
def cg(gm, ex, options, name, is_backward=False):
    try:
        return orig(gm, ex, options, name, is_backward)
    except Exception as e:
        for n in gm.graph.nodes:
            if n.op == "call_function" and "bmm" in str(n.target):
                chain, x = [], n
                for _ in range(8):
                    v = x.meta.get("val")
                    chain.append(f"{x.name}:{x.target}:{getattr(v,'dtype',None)}:{tuple(getattr(v,'shape',()))}")
                    xs = [a for a in x.args if isinstance(a, torch.fx.Node)]
                    if not xs: break
                    x = xs[0]
                print("BMM", " <- ".join(chain))
        raise
mkb.compile_graph = cg
cfg = transformers.ViTConfig(hidden_size=768, num_hidden_layers=1, num_attention_heads=12, intermediate_size=3072, image_size=224, patch_size=16)
cfg._attn_implementation = "sdpa"
model = transformers.ViTModel(cfg).to(device="cuda", dtype=torch.bfloat16).eval()
px = torch.randn(2, 3, 224, 224, device="cuda").to(torch.bfloat16)
with torch.no_grad():
    try:
        megakittens.compile(lambda p: model(pixel_values=p).last_hidden_state)(px)
        print("VIT OK")
    except Exception as e:
        print("VIT ERR", str(e)[:300])
