"""Issue 6 benchmark: Hugging Face LlamaModel prefill (batch 1, random bf16 weights, sdpa, use_cache=False)
at the Llama-3.2-1B shape (16 layers, seq 1024) and the Llama-3-8B shape (4 layers, seq 2048):
megakittens (cold compile with an empty JIT cache, warm compile from the disk cache, latency) against eager
and torch.compile in the same run (its cold and warm compile too, in a fresh Inductor / Triton cache); MK_LLAMA_CASES picks the cases ("hf:1b,example:8b", ...; examples/llama.py
includes the lm_head; "hfmask:1b" calls the HF model with an all-ones attention_mask, as a tokenizer's output
does: Attention with is_causal and the padding mask). MK_TC_MODE picks torch.compile's mode ("max-autotune-no-cudagraphs"
by default; "none" skips it, e.g. to save device time)."""
from __future__ import annotations

import os
import tempfile
import time

import torch

from common import bench, host_ms, rel_err, row, write

SHAPES = {  # name: (hidden, layers, heads, kv heads, intermediate, seq)
    "1b": (2048, 16, 32, 8, 8192, 1024),
    "8b": (4096, 4, 32, 8, 14336, 2048),
}


def _model(name):
    import transformers
    hidden, layers, heads, kv, inter, seq = SHAPES[name]
    cfg = transformers.LlamaConfig(vocab_size=128256, hidden_size=hidden, intermediate_size=inter,
                                   num_hidden_layers=layers, num_attention_heads=heads, num_key_value_heads=kv,
                                   max_position_embeddings=max(seq, 2048), rope_theta=500000.0)
    cfg._attn_implementation = "sdpa"
    torch.manual_seed(0)
    model = transformers.LlamaModel(cfg).to(device="cuda", dtype=torch.bfloat16).eval()
    ids = torch.randint(0, cfg.vocab_size, (1, seq), device="cuda")
    return model, ids


def _example_module():
    """examples/llama.py, imported once."""
    import importlib.util
    import sys
    if "mk_example_llama_bench" not in sys.modules:
        path = os.path.join(os.path.dirname(__file__), "..", "examples", "llama.py")
        spec = importlib.util.spec_from_file_location("mk_example_llama_bench", path)
        mod = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = mod
        spec.loader.exec_module(mod)
    return sys.modules["mk_example_llama_bench"]


def _example_model(name):
    """examples/llama.py (gpt-fast style, with the lm_head) at the same shapes: returns (fwd, ids)."""
    from dataclasses import replace
    mod = _example_module()
    hidden, layers, heads, kv, inter, seq = SHAPES[name]
    args = replace(mod.CONFIGS[name], n_layer=layers)
    torch.manual_seed(0)
    model = mod.build(args, seq, "cuda")
    ids = torch.randint(0, args.vocab_size, (1, seq), device="cuda")
    return (lambda i: model(i)[0]), ids


def _timed_first_call(fn, ids):
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    out = fn(ids)
    torch.cuda.synchronize()
    return time.perf_counter() - t0, out


def suite_llama(env):
    import megakittens
    mode = os.environ.get("MK_TC_MODE", "max-autotune-no-cudagraphs")
    rows = []
    for spec in os.environ.get("MK_LLAMA_CASES", "hf:1b,hf:8b,example:1b,example:8b").split(","):
        kind, name = spec.split(":")
        hidden, layers, _, _, _, seq = SHAPES[name]
        if kind in ("hf", "hfmask"):
            model, ids = _model(name)
            case = f"HF LlamaModel {name} shape ({layers} layers, seq {seq})"
            am = torch.ones_like(ids) if kind == "hfmask" else None
            if am is not None:
                case += ", attention_mask passed"

            def fwd(i, model=model, am=am):
                return model(input_ids=i, attention_mask=am, use_cache=False).last_hidden_state
        else:
            model, ids = _example_model(name)
            fwd = model
            case = f"examples/llama.py {name} shape ({layers} layers, seq {seq}, with lm_head)"

        with torch.no_grad():
            ref = fwd(ids)
            eager_ms = bench(lambda: fwd(ids), iters=10, warmup=2)
            old = os.environ.get("MEGAKITTENS_CACHE_DIR")
            with tempfile.TemporaryDirectory() as cache:
                os.environ["MEGAKITTENS_CACHE_DIR"] = cache
                torch._dynamo.reset()
                cold, out = _timed_first_call(megakittens.compile(fwd), ids)
                torch._dynamo.reset()
                warm_fn = megakittens.compile(fwd)
                warm, _ = _timed_first_call(warm_fn, ids)
                mk_ms = bench(lambda: warm_fn(ids), iters=10, warmup=2)
                mk_host = host_ms(lambda: warm_fn(ids))
            if old is None:
                os.environ.pop("MEGAKITTENS_CACHE_DIR", None)
            else:
                os.environ["MEGAKITTENS_CACHE_DIR"] = old
            err = rel_err(out, ref)
            base = {"eager": eager_ms}
            tc_cold = tc_warm = None
            if mode != "none":
                # Inductor's and Triton's caches in a fresh directory (in-memory caches cleared too):
                # cold is cold after earlier cases and processes; warm (a second compile after Dynamo's
                # reset, the in-memory caches cleared again) reads what the cold one wrote to disk, as ours does.
                import torch._inductor.utils as iu
                fresh = getattr(iu, "fresh_cache", None) or iu.fresh_inductor_cache
                clear = getattr(iu, "clear_caches", None) or iu.clear_inductor_caches
                with fresh():
                    torch._dynamo.reset()
                    tc = torch.compile(fwd, mode=mode)
                    tc_cold, _ = _timed_first_call(tc, ids)
                    torch._dynamo.reset()
                    clear()
                    tc = torch.compile(fwd, mode=mode)
                    tc_warm, _ = _timed_first_call(tc, ids)
                    base = {f"torch.compile({mode})": bench(lambda: tc(ids), iters=10, warmup=2), **base}
        rows.append(row("llama", case, "latency", "ms", mk_ms, base, env, higher_is_better=False,
                        note=f"relative error of the hidden state vs eager {err:.2e}; host time of a call "
                             f"(until it returns, GPU idle before) {mk_host:.2f} ms"))
        rows.append(row("llama", case, "cold compile (first call)", "s", cold,
                        {f"torch.compile({mode})": tc_cold} if tc_cold else {}, env, higher_is_better=False))
        rows.append(row("llama", case, "warm compile (disk cache, first call)", "s", warm,
                        {f"torch.compile({mode})": tc_warm} if tc_warm else {}, env, higher_is_better=False))
        del model
        torch.cuda.empty_cache()
    write("llama", rows)
    return rows
