"""GEMM and MLP benchmark suites (issue 4): `python3 benchmarks/run.py gemm mlp` or `python3 benchmarks/gemm.py`.

gemm: TFLOP/s (device time) of the megakernel's Gemm against torch.mm (cuBLAS) at 2048^3, 4096^3, 8192^3 and
      16384x4096x4096 (M x N x K), per-SM table and global queue, cluster 1 and 2.
mlp:  latency of the seed's 3-layer MLP (x = relu(x @ W[i] + b[i])) at (M, H) in {(512, 512),
      (1024, 512), (1024, 1024), (4096, 4096), (128, 4096)}: megakittens (one launch over fixed buffers,
      and through megakittens.compile) against eager, a CUDA graph of eager, torch.compile
      (max-autotune-no-cudagraphs, reduce-overhead) and the three products back to back through cuBLAS;
      the launch rows also carry the device time of the megakernel and of cuBLAS's three products
      (mk_device_us, cublas_3mm_device_us: issue 4's (4096, 4096) target compares GEMM time)."""
from __future__ import annotations

import os
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(__file__))
from common import MkRunner, bench, host_ms, program_for, row, write  # noqa: E402

BF16 = torch.bfloat16
GEMM_SHAPES = [(2048, 2048, 2048), (4096, 4096, 4096), (8192, 8192, 8192), (16384, 4096, 4096)]
MLP_SHAPES = [(512, 512), (1024, 512), (1024, 1024), (4096, 4096), (128, 4096)]


def _mm(a, b):
    return a @ b


def _mm_nt(a, w):
    return a @ w.t()


def _rel(out, ref):
    out, ref = out.float(), ref.float()
    return ((out - ref).norm() / ref.norm()).item()


def suite_gemm(env):
    rows = []
    configs = [(1, "per_sm"), (1, "global"), (2, "per_sm")]
    # MK_GEMM_SHAPES=4096x4096x4096,8192x8192x8192: a subset for a quick comparison.
    shapes = GEMM_SHAPES
    if os.environ.get("MK_GEMM_SHAPES"):
        shapes = [tuple(int(v) for v in s.split("x")) for s in os.environ["MK_GEMM_SHAPES"].split(",")]
    # MK_GEMM_NT=1: B as nn.Linear's weight, (N, K) read transposed (x @ W.T: the Gemm flag tb, every
    # model Gemm's layout), torch.mm(a, w.t()) for cuBLAS.
    nt = os.environ.get("MK_GEMM_NT") == "1"
    for (M, N, K) in shapes:
        a = torch.randn(M, K, dtype=BF16, device="cuda")
        b = torch.randn(N, K, dtype=BF16, device="cuda") if nt else torch.randn(K, N, dtype=BF16, device="cuda")
        mm, fn = (lambda: torch.mm(a, b.t())) if nt else (lambda: torch.mm(a, b)), _mm_nt if nt else _mm
        flops = 2.0 * M * N * K
        iters = 50 if flops < 1e11 else 20
        ref = mm()
        # Device time for both (bench's device_only: the host's launch latency is not the GEMM's), and the
        # same with the launch as a call sees it (the GPU idle before) as extra fields.
        cublas_ms = bench(mm, iters=iters, device_only=True)
        cublas_call_ms = bench(mm, iters=iters)
        for cluster, mode in configs:
            p = program_for(fn, [a, b], cluster_size=cluster, name=f"gemm_{M}x{N}x{K}_c{cluster}")
            runner = MkRunner(p, [a, b], {"global_work_queue": mode == "global"})
            mk_ms = bench(runner, iters=iters, device_only=True)
            mk_call_ms = bench(runner, iters=iters)
            err = _rel(runner.outputs()[0], ref)
            rows.append(row("gemm", f"{M}x{N}x{K} (MxNxK){' B^T' if nt else ''} cluster {cluster} {mode}", "throughput", "TFLOP/s",
                            flops / mk_ms / 1e9, {"cublas": flops / cublas_ms / 1e9}, env, mk_ms=mk_ms,
                            cublas_ms=cublas_ms, mk_call_ms=mk_call_ms, cublas_call_ms=cublas_call_ms,
                            rel_err_vs_cublas=err, instructions=p.num_instructions))
        del a, b, ref
        torch.cuda.empty_cache()
    write("gemm", rows)
    return rows


def mlp(W, x, b):
    for i in range(W.shape[0]):
        x = torch.relu(x @ W[i] + b[i])
    return x


def _cuda_graph(fn, args):
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        fn(*args)
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        fn(*args)
    return g


def suite_mlp(env):
    import megakittens
    rows = []
    t_start = time.time()
    budget = float(os.environ.get("MK_BENCH_COMPILE_BUDGET_S", "150"))  # torch.compile autotuning is slow
    for (M, H) in MLP_SHAPES:
        W = torch.randn(3, H, H, dtype=BF16, device="cuda") * H ** -0.5
        x = torch.randn(M, H, dtype=BF16, device="cuda")
        b = torch.randn(3, M, H, dtype=BF16, device="cuda")
        args = [W, x, b]
        ref = mlp(*args)
        base = {}
        base["eager"] = bench(lambda: mlp(*args), iters=100) * 1e3
        g = _cuda_graph(mlp, args)
        base["cuda_graph_of_eager"] = bench(lambda: g.replay(), iters=100) * 1e3
        base["cublas_3mm"] = bench(lambda: [torch.mm(x, W[i]) for i in range(3)], iters=100) * 1e3
        # Issue 4's (4096, 4096) target compares GEMM time: the three products and the megakernel in device
        # time too (bench's device_only), beside the call latency of the rows.
        cublas_dev_us = bench(lambda: [torch.mm(x, W[i]) for i in range(3)], iters=100, device_only=True) * 1e3
        for mode, key in (("max-autotune-no-cudagraphs", "torch_compile_max_autotune"),
                          ("reduce-overhead", "torch_compile_reduce_overhead")):
            if time.time() - t_start > budget:
                base[key] = None
                continue
            try:
                torch._dynamo.reset()
                cf = torch.compile(mlp, mode=mode)
                for _ in range(3):
                    cf(*args)
                base[key] = bench(lambda: cf(*args), iters=100) * 1e3
            except Exception as e:  # keep the row: the baseline is missing, the reason in the log
                print(f"torch.compile({mode}) failed: {e}", flush=True)
                base[key] = None
        for cluster in (1, 2):
            p = program_for(mlp, args, cluster_size=cluster, name=f"mlp_{M}x{H}_c{cluster}")
            for qmode in ("per_sm", "global"):
                runner = MkRunner(p, args, {"global_work_queue": qmode == "global"})
                mk_us = bench(runner, iters=100) * 1e3
                mk_dev_us = bench(runner, iters=100, device_only=True) * 1e3
                err = _rel(runner.outputs()[0], ref)
                rows.append(row("mlp", f"MLP (M,H)=({M},{H}) 3 layers, cluster {cluster} {qmode}, launch", "time", "us",
                                mk_us, dict(base), env, higher_is_better=False, rel_err_vs_eager=err,
                                instructions=p.num_instructions, mk_device_us=mk_dev_us,
                                cublas_3mm_device_us=cublas_dev_us))
        f = megakittens.compile(mlp)
        f(*args)
        mk_call_us = bench(lambda: f(*args), iters=100) * 1e3
        # Host time of one call (Dynamo's guards, the dispatcher, the launch), the GPU idle before it.
        rows.append(row("mlp", f"MLP (M,H)=({M},{H}) 3 layers, megakittens.compile call", "time", "us", mk_call_us,
                        dict(base), env, higher_is_better=False, rel_err_vs_eager=_rel(f(*args), ref),
                        host_us=host_ms(lambda: f(*args), iters=50) * 1e3))
        del W, x, b, args, g
        torch.cuda.empty_cache()
        write("mlp", rows)  # after every shape: a suite cut off by a timeout keeps its finished rows
    return rows


if __name__ == "__main__":
    import common
    env = common.env_info()
    for n in sys.argv[1:] or ["gemm", "mlp"]:
        {"gemm": suite_gemm, "mlp": suite_mlp}[n](env)
