"""The whole benchmark suite on one GPU: `python3 benchmarks/run.py [suite ...]`.

Suites: ceilings (copy bandwidth, cuBLAS 8192^3), memory (relu / add / RMSNorm from 4096^2 to >= 256 MB,
megakittens vs eager), chain (20 elementwise ops on 1024x1024 vs eager and a CUDA graph of eager),
jit (cold and warm JIT of a small graph), gemm and mlp (benchmarks/gemm.py), attention
(benchmarks/attention.py), llama (benchmarks/llama.py), vision (benchmarks/vision.py: ViT-B/16, the Whisper-base encoder, ResNet-50). Each writes benchmarks/results/<suite>.json; then
`python3 benchmarks/report.py` regenerates BENCHMARKS.md."""
from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time

import torch

sys.path.insert(0, os.path.dirname(__file__))
import common  # noqa: E402
from common import MkRunner, bench, program_for, row, write  # noqa: E402

mkops = torch.ops.megakittens
BF16 = torch.bfloat16


def suite_ceilings(env):
    rows = []
    n = 1 << 30  # 1 GiB
    src = torch.randn(n // 2, dtype=BF16, device="cuda")
    dst = torch.empty_like(src)
    ms = bench(lambda: dst.copy_(src), iters=30, device_only=True)
    rows.append(row("ceilings", "copy 1 GiB", "bandwidth", "GB/s", 2 * n / ms / 1e6, {}, env,
                    note="device-to-device copy, bytes read + written, device time"))
    a = torch.randn(8192, 8192, dtype=BF16, device="cuda")
    b = torch.randn(8192, 8192, dtype=BF16, device="cuda")
    ms = bench(lambda: torch.mm(a, b), iters=20)
    rows.append(row("ceilings", "cuBLAS bf16 8192^3", "throughput", "TFLOP/s", None,
                    {"cublas": 2 * 8192 ** 3 / ms / 1e9}, env))
    write("ceilings", rows)
    return rows


# The memory suite's ops: name -> (fn, number of (rows, cols) inputs, passes over one tensor's bytes);
# rmsnorm also takes a (cols,) weight (memory_args).
MEMORY_CASES = {
    "relu": (lambda x: torch.relu(x), 1, 2),
    "add": (lambda x, y: x + y, 2, 3),
    "rmsnorm": (lambda x, w: mkops.rms_norm(x, w, 1e-6), 1, 2),
}


def memory_args(name, r, c):
    """Fresh random bf16 CUDA inputs of MEMORY_CASES[name] at (r, c)."""
    args = [torch.randn(r, c, dtype=BF16, device="cuda") for _ in range(MEMORY_CASES[name][1])]
    if name == "rmsnorm":
        args.append(torch.randn(c, dtype=BF16, device="cuda"))
    return args


def memory_ref(name, fn, args):
    """The eager result the megakernel is checked against (fp32 math for relu / add)."""
    return fn(*[a.float() for a in args]).to(BF16) if name != "rmsnorm" else fn(*args)


def copy_gbs():
    n = 1 << 30
    src = torch.randn(n // 2, dtype=BF16, device="cuda")
    dst = torch.empty_like(src)
    return 2 * n / bench(lambda: dst.copy_(src), iters=20, device_only=True) / 1e6


def suite_memory(env, modes=("per_sm", "global")):
    rows = []
    copy = copy_gbs()
    rows.append(row("memory", "copy 1 GiB (same run)", "bandwidth", "GB/s", copy, {}, env))
    shapes = [(4096, 4096), (8192, 8192), (16384, 8192), (16384, 16384)]
    cases = dict(MEMORY_CASES)
    # MK_MEMORY_CASES=rmsnorm (comma list) / MK_MEMORY_SHAPES=16384x8192: a subset for a quick comparison.
    keep = os.environ.get("MK_MEMORY_CASES")
    if keep:
        cases = {k: v for k, v in cases.items() if k in keep.split(",")}
    if os.environ.get("MK_MEMORY_SHAPES"):
        shapes = [tuple(int(v) for v in s.split("x")) for s in os.environ["MK_MEMORY_SHAPES"].split(",")]
    rounds = int(os.environ.get("MK_MEMORY_ROUNDS", "3"))
    for name, (fn, _, passes) in cases.items():
        for (r, c) in shapes:
            args = memory_args(name, r, c)
            bytes_moved = passes * r * c * 2
            eager_ms = bench(lambda: fn(*args), iters=20, device_only=True)
            p = program_for(fn, args, name=f"{name}_{r}x{c}")
            runners = {mode: MkRunner(p, args, {"global_work_queue": mode == "global"}) for mode in modes}
            # Rounds alternate the copy with every mode, so each mode's % of copy is a median of ratios taken
            # minutes apart at most (benchmarks/ab_memory.py's method): the copy measured once at the start
            # of the suite read ~0.8% above the later rounds' (Session 35), on a card still cool.
            copies, ms, pct = [], {m: [] for m in modes}, {m: [] for m in modes}
            for _ in range(rounds):
                copies.append(copy_gbs())
                for mode in modes:
                    t = bench(runners[mode], iters=20, device_only=True)
                    ms[mode].append(t)
                    pct[mode].append(100 * bytes_moved / t / 1e6 / copies[-1])
            for mode in modes:
                runner = runners[mode]
                mk_ms = statistics.median(ms[mode])
                call_ms = bench(runner, iters=20)  # the same with the host's launch latency (GPU idle before)
                out = runner.outputs()[0]
                ref = memory_ref(name, fn, args)
                err = ((out.float() - ref.float()).norm() / ref.float().norm()).item()
                mb = r * c * 2 / 2 ** 20
                rows.append(row("memory", f"{name} {r}x{c} ({mb:.0f} MB/tensor) {mode}", "bandwidth", "GB/s",
                                bytes_moved / mk_ms / 1e6, {"eager": bytes_moved / eager_ms / 1e6}, env,
                                mk_ms=mk_ms, mk_call_ms=call_ms, eager_ms=eager_ms,
                                pct_of_copy=statistics.median(pct[mode]), copy_gbs=statistics.median(copies),
                                rounds=rounds, rel_err=err))
            del runners
            del args
    write("memory", rows)
    return rows


def chain20(x, y):
    ops = [torch.relu, torch.abs, torch.neg, torch.exp, torch.sqrt]
    for i in range(20):
        x = x + y if i % 2 else ops[(i // 2) % 5](x)
    return x


def suite_chain(env):
    rows = []
    x = torch.randn(1024, 1024, dtype=BF16, device="cuda") * 0.1
    y = torch.randn(1024, 1024, dtype=BF16, device="cuda") * 0.1
    eager_ms = bench(lambda: chain20(x, y), iters=100)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        chain20(x, y)
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        static_out = chain20(x, y)
    graph_ms = bench(lambda: g.replay(), iters=100)
    # Fused (one ElementwiseFused instruction type, the default) in every mode; unfused (fuse=False: 20
    # dependent steps, as before the elementwise fusion pass) once, for comparison.
    configs = [(c, m, True) for c in (1, 2) for m in ("per_sm", "global")] + [(1, "per_sm", False)]
    for cluster, mode, fuse in configs:
        p = program_for(chain20, [x, y], cluster_size=cluster, name=f"chain20_c{cluster}", fuse=fuse)
        runner = MkRunner(p, [x, y], {"global_work_queue": mode == "global"})
        mk_ms = bench(runner, iters=100)
        out = runner.outputs()[0]
        ref = chain20(x.float(), y.float())
        fin = torch.isfinite(ref)
        err = ((out.float()[fin] - ref[fin]).norm() / ref[fin].norm()).item()
        rows.append(row("chain", f"20 elementwise ops 1024x1024, cluster {cluster}, {mode}"
                        + ("" if fuse else ", unfused (fuse=False)"), "time", "us",
                        mk_ms * 1e3, {"eager": eager_ms * 1e3, "cuda_graph_of_eager": graph_ms * 1e3}, env,
                        higher_is_better=False, speedup_vs_graph=graph_ms / mk_ms, rel_err=err,
                        instructions=p.num_instructions))
    write("chain", rows)
    return rows


def suite_jit(env):
    rows = []
    x = torch.randn(1024, 1024, dtype=BF16, device="cuda")
    w = torch.randn(1024, dtype=BF16, device="cuda")
    fn = lambda a, b: mkops.rms_norm(torch.relu(a) + a, b, 1e-6)  # noqa: E731
    with tempfile.TemporaryDirectory() as d:
        os.environ["MEGAKITTENS_CACHE_DIR"] = d
        from megakittens import gpu
        p = program_for(fn, [x, w], name="jit_cold")
        t0 = time.perf_counter()
        k = gpu.kernel_for(p, use_jit_cache=True)
        cold = time.perf_counter() - t0
        p2 = program_for(fn, [x, w], name="jit_cold")
        t0 = time.perf_counter()
        k2 = gpu.kernel_for(p2, use_jit_cache=True)
        warm = time.perf_counter() - t0
        del os.environ["MEGAKITTENS_CACHE_DIR"]
    rows.append(row("jit", "cold JIT (relu, add, RMSNorm graph)", "time", "ms", cold * 1e3, {}, env,
                    higher_is_better=False, cache_hit=k.cache_hit, target_ms=5000))
    rows.append(row("jit", "warm JIT from disk cache", "time", "ms", warm * 1e3, {}, env, higher_is_better=False,
                    cache_hit=k2.cache_hit, target_ms=50))
    write("jit", rows)
    return rows


from gemm import suite_gemm, suite_mlp  # noqa: E402  (issue 4)

from attention import suite_attention  # noqa: E402  (issue 5)
from llama import suite_llama  # noqa: E402  (issue 6)
from vision import suite_vision  # noqa: E402

SUITES = {"ceilings": suite_ceilings, "jit": suite_jit, "chain": suite_chain, "memory": suite_memory,
          "gemm": suite_gemm, "mlp": suite_mlp, "attention": suite_attention,
          "llama": suite_llama, "vision": suite_vision}

if __name__ == "__main__":
    names = sys.argv[1:] or list(SUITES)
    env = common.env_info()
    for n in names:
        t0 = time.time()
        try:
            SUITES[n](env)
        except Exception as e:  # keep the other suites running; the failure is in the log
            import traceback
            traceback.print_exc()
            print(f"suite {n} FAILED: {e}", flush=True)
        print(f"# suite {n}: {time.time() - t0:.1f} s", flush=True)
