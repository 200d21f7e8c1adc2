"""Attention benchmark suite (issue 5): `python3 benchmarks/run.py attention` or `python3 benchmarks/attention.py`.

TFLOP/s of the megakittens Attention instruction (one launch over fixed buffers, per-SM table and global
queue) against F.scaled_dot_product_attention with the flash and the cuDNN backends, in one process, at
(B, H, S, D) = (16, 16, 2048, 128) and (4, 32, 8192, 128), causal and full, and the same with D = 64.
FLOPs: 4 B H S^2 D (two matmuls), halved when causal, the convention of the FlashAttention papers."""
from __future__ import annotations

import os
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

sys.path.insert(0, os.path.dirname(__file__))
from common import MkRunner, bench, program_for, row, write  # noqa: E402

BF16 = torch.bfloat16
SHAPES = [(16, 16, 2048, 128), (4, 32, 8192, 128), (16, 16, 2048, 64), (4, 32, 8192, 64)]


def _sdpa(causal):
    def f(q, k, v):
        return F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    return f


def _backend_ms(fn, args, backend, iters):
    try:
        with sdpa_kernel([backend]):
            out = fn(*args)
            return bench(lambda: fn(*args), iters=iters), out
    except Exception as e:  # keep the row: the baseline is missing, the reason in the log
        print(f"SDPA backend {backend} failed: {e}", flush=True)
        return None, None


def suite_attention(env, modes=("per_sm", "global")):
    """MK_BENCH_TAG=x names the rows and the result file attention_x (a kernel variant run side by side);
    MK_ATTN_SHAPES="B,H,S,D;..." runs those shapes only (into attention_subset without a tag)."""
    # A subset of the shapes never replaces results/attention.json (BENCHMARKS.md's rows).
    tag = os.environ.get("MK_BENCH_TAG", "") or ("subset" if os.environ.get("MK_ATTN_SHAPES") else "")
    suite = "attention" + (f"_{tag}" if tag else "")
    rows = []
    # MK_ATTN_SHAPES="16,16,2048,128;16,16,2048,64": a subset (variant sweeps).
    shapes = [tuple(int(x) for x in t.split(",")) for t in os.environ["MK_ATTN_SHAPES"].split(";") if t.strip()] \
        if os.environ.get("MK_ATTN_SHAPES") else SHAPES
    for (B, H, S, D) in shapes:
        args = [torch.randn(B, H, S, D, dtype=BF16, device="cuda") for _ in range(3)]
        for causal in (False, True):
            fn = _sdpa(causal)
            flops = 4.0 * B * H * S * S * D / (2 if causal else 1)
            iters = 30 if flops < 1e12 else 10
            flash_ms, ref = _backend_ms(fn, args, SDPBackend.FLASH_ATTENTION, iters)
            cudnn_ms, _ = _backend_ms(fn, args, SDPBackend.CUDNN_ATTENTION, iters)
            if ref is None:
                with sdpa_kernel([SDPBackend.EFFICIENT_ATTENTION]):
                    ref = fn(*args)
            p = program_for(fn, args, cluster_size=1, name=f"attn_{B}x{H}x{S}x{D}_{int(causal)}")
            base = {"cudnn": flops / cudnn_ms / 1e9 if cudnn_ms else None,
                    "flash": flops / flash_ms / 1e9 if flash_ms else None}
            for mode in modes:
                runner = MkRunner(p, args, {"global_work_queue": mode == "global"})
                mk_ms = bench(runner, iters=iters)
                out = runner.outputs()[0].float()
                err = ((out - ref.float()).norm() / ref.float().norm()).item()
                rows.append(row(suite, f"(B,H,S,D)=({B},{H},{S},{D}) {'causal' if causal else 'full'} {mode}",
                                "throughput", "TFLOP/s", flops / mk_ms / 1e9, dict(base), env, mk_ms=mk_ms,
                                cudnn_ms=cudnn_ms, flash_ms=flash_ms, rel_err_vs_flash=err,
                                instructions=p.num_instructions))
            del ref
        del args
        torch.cuda.empty_cache()
    write(suite, rows)
    return rows


if __name__ == "__main__":
    import common
    suite_attention(common.env_info())
