"""Diagnostic (device): why HF LlamaModel's SDPA mask on CUDA is not folded into is_causal. Prints the
producer chain of every SDPA mask argument and whether fold.py evaluated it."""
import torch
import transformers
from torch._dynamo.backends.common import aot_autograd

from megakittens import fold

cfg = transformers.LlamaConfig(vocab_size=512, hidden_size=256, intermediate_size=512, num_hidden_layers=1,
                               num_attention_heads=4, num_key_value_heads=2)
cfg._attn_implementation = "sdpa"
model = transformers.LlamaModel(cfg).to(device="cuda", dtype=torch.bfloat16).eval()
ids = torch.randint(0, 512, (1, 64), device="cuda")


def fw(gm, _):
    env = fold._constant_nodes(gm)
    for n in gm.graph.nodes:
        if n.op == "call_function" and str(n.target) in fold._SDPA:
            b = fold._bound_args(n)
            for k in fold._MASK_ARGS:
                m = b.get(k)
                if isinstance(m, torch.fx.Node):
                    print("SDPA", n.target, k, "folded:", m in env)
                    seen, todo = set(), [m]
                    while todo:
                        x = todo.pop()
                        if x in seen:
                            continue
                        seen.add(x)
                        print("  ", x.name, x.op, x.target, "folded" if x in env else "NOT", [str(a) for a in x.args][:4])
                        todo.extend(x.all_input_nodes)
                    if m in env:
                        v = env[m]
                        print("  value", v.dtype, tuple(v.shape), v.flatten()[:8])
    return gm


with torch.no_grad():
    torch.compile(lambda i: model(input_ids=i, use_cache=False).last_hidden_state,
                  backend=aot_autograd(fw_compiler=fw), fullgraph=True)(ids)
