"""Where megakittens' compile time goes, per stage, on this machine's CPU (issue 6: warm compile <= 2 s).

    python benchmarks/compile_profile.py [hf|example] [--shape small|1b] [--layers 16] [--repeat 2]
                                         [--profile out.prof]

Builds a 16-layer Hugging Face LlamaModel (use_cache=False) or examples/llama.py's model with random bf16
weights on the CPU, then compiles it ``--repeat`` times in this process (``torch._dynamo.reset()`` between,
as benchmarks/llama.py's warm compile does) and prints per compile: Dynamo (the first call minus
everything below), the capture (``backend.capture_inference``), the FX folds, ``fx_export``, ``_C.trace``,
``_C.schedule``, the Dispatcher's construction, and what the GPU runtime would do on its first call that
needs no GPU (``_C.gpu_generate_source`` and the cache key's sha256 over the source and kernels/). The
dispatcher's first call (the CPU reference interpreter) is not run: it returns zeros of the output shapes.
``small``: hidden 256, 4 heads, 2 KV heads, intermediate 512, vocab 512, seq 64 (the HF model at 16 layers
takes 259 of the 512 tensor slots there); ``1b``: Llama-3.2-1B shapes (hidden
2048, seq 1024; only the graph and instruction counts matter, the weights are random).
"""
from __future__ import annotations

import argparse
import collections
import cProfile
import hashlib
import os
import sys
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
SHAPES = {  # hidden, heads, kv heads, intermediate, vocab, seq
    "small": (256, 4, 2, 512, 512, 64),
    "1b": (2048, 32, 8, 8192, 128256, 1024),
}

times: "collections.defaultdict[str, float]" = collections.defaultdict(float)


def _timed(owner, attr, key):
    fn = getattr(owner, attr)

    def wrapper(*a, **k):
        t0 = time.perf_counter()
        try:
            return fn(*a, **k)
        finally:
            times[key] += time.perf_counter() - t0
    setattr(owner, attr, wrapper)


def _instrument():
    from megakittens import _C, backend, dispatcher, fold, fx_export
    _timed(backend, "capture_inference", "capture")
    _timed(fold, "drop_empty_cat_operands", "fold")
    _timed(fold, "fold_constants", "fold")
    _timed(fx_export, "export_graph", "fx_export")
    _timed(_C, "trace", "trace")
    _timed(_C, "schedule", "schedule")
    _timed(backend, "make_aot_backend", "aot")

    init = dispatcher.Dispatcher.__init__

    def dispatcher_init(self, *a, **k):
        t0 = time.perf_counter()
        init(self, *a, **k)
        times["dispatcher"] += time.perf_counter() - t0

    def no_call(self, *args):  # the interpreter is runtime, not compile time
        return [torch.zeros(list(self.slots[s].shape), dtype=dispatcher._DTYPES[self.slots[s].dtype])
                for s in self.output_slots]
    dispatcher.Dispatcher.__init__ = dispatcher_init
    dispatcher.Dispatcher.__call__ = no_call


def _gpu_side(program):
    """What GpuKernel's constructor does before NVRTC / the cache lookup: source and cache key."""
    from megakittens import _C, gpu
    t0 = time.perf_counter()
    src = _C.gpu_generate_source(program)
    times["gpu source"] += time.perf_counter() - t0
    t0 = time.perf_counter()
    h = hashlib.sha256(src.encode())
    for root, _, files in sorted(os.walk(gpu.kernels_dir())):
        for f in sorted(files):
            with open(os.path.join(root, f), "rb") as fh:
                h.update(fh.read())
    times["cache key (hashlib)"] += time.perf_counter() - t0
    return len(src)


def build(kind, shape, layers):
    hidden, heads, kv, inter, vocab, seq = SHAPES[shape]
    torch.manual_seed(0)
    if kind == "hf":
        import transformers
        cfg = transformers.LlamaConfig(vocab_size=vocab, hidden_size=hidden, intermediate_size=inter,
                                       num_hidden_layers=layers, num_attention_heads=heads, num_key_value_heads=kv,
                                       max_position_embeddings=max(seq, 2048), rope_theta=500000.0)
        cfg._attn_implementation = "sdpa"
        model = transformers.LlamaModel(cfg).to(dtype=torch.bfloat16).eval()

        def fwd(i):
            return model(input_ids=i, use_cache=False).last_hidden_state
    else:
        import importlib.util
        from dataclasses import replace
        spec = importlib.util.spec_from_file_location("mk_example_llama", os.path.join(HERE, "..", "examples", "llama.py"))
        mod = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = mod  # dataclasses look their module up
        spec.loader.exec_module(mod)
        args = replace(mod.CONFIGS["tiny"], dim=hidden, n_layer=layers, n_head=heads, n_local_heads=kv,
                       intermediate_size=inter, vocab_size=vocab, seq=seq)
        model = mod.build(args, seq, "cpu")

        def fwd(i):
            return model(i)[0]
    ids = torch.randint(0, vocab, (1, seq))
    return fwd, ids


def main():
    p = argparse.ArgumentParser()
    p.add_argument("kind", choices=("hf", "example"))
    p.add_argument("--shape", choices=sorted(SHAPES), default="small")
    p.add_argument("--layers", type=int, default=16)
    p.add_argument("--repeat", type=int, default=2)
    p.add_argument("--profile", default=None, help="cProfile the last compile into this file")
    p.add_argument("--inference-mode", action="store_true", help="torch.inference_mode instead of no_grad")
    a = p.parse_args()

    t0 = time.perf_counter()
    import megakittens
    from megakittens import backend
    print(f"import megakittens {time.perf_counter() - t0:.2f} s")
    fwd, ids = build(a.kind, a.shape, a.layers)
    _instrument()
    ctx = torch.inference_mode if a.inference_mode else torch.no_grad
    for r in range(a.repeat):
        times.clear()
        torch._dynamo.reset()
        prof = cProfile.Profile() if a.profile and r == a.repeat - 1 else None
        with ctx():
            fn = megakittens.compile(fwd)
            t0 = time.perf_counter()
            if prof:
                prof.enable()
            fn(ids)
            if prof:
                prof.disable()
            total = time.perf_counter() - t0
        d = backend.dispatchers[-1]
        nsrc = _gpu_side(d.program)
        inside = sum(v for k, v in times.items() if k in ("capture", "fold", "fx_export", "trace", "schedule",
                                                        "dispatcher"))
        stages = {"dynamo (rest)": total - inside, **{k: times[k] for k in
                  ("capture", "fold", "fx_export", "trace", "schedule", "dispatcher")},
                  "first call total": total, "gpu source": times["gpu source"],
                  "cache key (hashlib)": times["cache key (hashlib)"]}
        print(f"compile {r + 1} ({a.kind} {a.shape}, {a.layers} layers, capture {dict(backend.captures)}): {len(d.dag.nodes)} nodes, "
              f"{d.program.num_instructions} instructions, {len(d.program.slots)} slots, source {nsrc / 1e3:.0f} kB")
        print("  " + "  ".join(f"{k} {v:.3f}" for k, v in stages.items()))
        if prof:
            prof.dump_stats(a.profile)
    return 0


if __name__ == "__main__":
    sys.exit(main())
