"""Same-process A/B of schedule or kernel settings on the Attention instruction, rounds interleaved so that
drift (clocks, power; ~10% between processes on the H200) hits every variant alike.

    python3 benchmarks/ab_attention.py --shapes "4,32,8192,128;16,16,2048,64" \\
        --variant base: --variant c0:MEGAKITTENS_PROFILE=claim_chunk=0 --rounds 5

Needs a CUDA GPU. A variant is `name:VAR=value|VAR=value` (MEGAKITTENS_* variables, set while its program
is scheduled and its kernel built: MEGAKITTENS_PROFILE and MEGAKITTENS_DEFINES act there); `name:` alone
is the default; names must differ. Programs are scheduled for cluster size 1 (`megakittens.compile`'s
default is 2). Each round times cuDNN SDPA (the drift gauge) and every variant in each of `--modes`
(per_sm, global; bench: median of `iters` launches, CUDA events), starting one runner later each round.
Prints per case the medians over rounds in TFLOP/s (4 B H S^2 D, halved when causal) and each variant's
ratio to the first; every variant's output is checked against flash SDPA first
(relative error <= 1e-2, else the run stops). A second copy of the default under another name shows the
tool's own noise (H200, 2026-12-04: per_sm 0.98-1.04x, global 0.99-1.01x; benchmarks/notes.md Session 33)."""
from __future__ import annotations

import argparse
import os
import statistics
import sys

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel

sys.path.insert(0, os.path.dirname(__file__))
from attention import _sdpa  # noqa: E402
from common import MkRunner, ab_common_args, bench, program_for, with_env  # noqa: E402

BF16 = torch.bfloat16


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shapes", default="16,16,2048,128", help='"B,H,S,D;..."')
    ap.add_argument("--causal", choices=("both", "causal", "full"), default="both")
    check = ab_common_args(ap, "ab_attention")
    ap.add_argument("--iters", type=int, default=10)
    a = ap.parse_args()
    variants, modes = check(a)
    try:
        shapes = [tuple(int(x) for x in t.split(",")) for t in a.shapes.split(";") if t.strip()]
    except ValueError:
        shapes = []
    if not shapes or any(len(t) != 4 or min(t) < 1 for t in shapes):
        ap.error(f'--shapes: "B,H,S,D;..." of positive ints, got {a.shapes!r}')
    if not torch.cuda.is_available():
        raise SystemExit("ab_attention: needs a CUDA GPU (it times the megakernel against cuDNN SDPA)")
    causals = {"both": (False, True), "causal": (True,), "full": (False,)}[a.causal]
    for B, H, S, D in shapes:
        shape = f"{B},{H},{S},{D}"
        args = [torch.randn(B, H, S, D, dtype=BF16, device="cuda") for _ in range(3)]
        for causal in causals:
            fn = _sdpa(causal)
            flops = 4.0 * B * H * S * S * D / (2 if causal else 1)
            with sdpa_kernel([SDPBackend.FLASH_ATTENTION]):
                ref = fn(*args).float()
            runners = {}
            for name, env in variants:
                p = with_env(env, lambda: program_for(fn, args, cluster_size=1, name=f"ab_{B}x{H}x{S}x{D}_{int(causal)}"))
                for mode in modes:
                    r = with_env(env, lambda: MkRunner(p, args, {"global_work_queue": mode == "global"}))
                    r()
                    err = ((r.outputs()[0].float() - ref).norm() / ref.norm()).item()
                    if not err <= 1e-2:
                        raise SystemExit(f"ab_attention: {name} {mode} {shape} causal={causal}: rel. err {err:.3g}")
                    runners[(name, mode)] = r
            times = {k: [] for k in [("cudnn", "")] + list(runners)}
            keys = list(runners)
            for rnd in range(a.rounds):
                with sdpa_kernel([SDPBackend.CUDNN_ATTENTION]):
                    times[("cudnn", "")].append(bench(lambda: fn(*args), iters=a.iters))
                # Each round starts at the next runner, so no variant always follows the same one.
                for k in keys[rnd % len(keys):] + keys[:rnd % len(keys)]:
                    times[k].append(bench(runners[k], iters=a.iters))
            tf = {k: flops / statistics.median(v) / 1e9 for k, v in times.items()}
            label = f"({B},{H},{S},{D}) {'causal' if causal else 'full'}"
            print(f"{label}: cudnn {tf[('cudnn', '')]:.1f} TFLOP/s (rounds "
                  + " ".join(f"{flops / t / 1e9:.0f}" for t in times[("cudnn", "")]) + ")", flush=True)
            for mode in modes:
                first = tf[(variants[0][0], mode)]
                print(f"  {mode:7s} " + "  ".join(
                    f"{name} {tf[(name, mode)]:.1f} (x{tf[(name, mode)] / first:.3f}; rounds "
                    + " ".join(f"{flops / t / 1e9:.0f}" for t in times[(name, mode)]) + ")"
                    for name, _ in variants), flush=True)
            del runners, ref
        del args
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
