"""Same-process A/B of kernel or schedule settings on the memory suite's ops (relu, add, RMSNorm), rounds
interleaved so that drift hits every variant alike.

    python3 benchmarks/ab_memory.py --cases rmsnorm --shapes 16384x8192,16384x16384 \\
        --variant flat: --variant old:MEGAKITTENS_DEFINES=MK_RMS_FLAT=0 --rounds 5

Needs a CUDA GPU. Variants as in ab_attention.py (`name:VAR=value|VAR=value`, MEGAKITTENS_* variables set
while the program is scheduled and its kernel built). Each round times a 1 GiB device copy (the ceiling,
as benchmarks/run.py's memory suite) and then every variant in each of `--modes`, starting one runner
later each round (bench: median of `iters` launches, device time). Prints per case the medians over
rounds as % of the same round's copy bandwidth, and each variant's ratio to the first. Every variant's
output is checked against eager first (relative error <= 1e-2, else the run stops)."""
from __future__ import annotations

import argparse
import os
import statistics
import sys

import torch

sys.path.insert(0, os.path.dirname(__file__))
from common import MkRunner, ab_common_args, bench, program_for, with_env  # noqa: E402
from run import MEMORY_CASES, copy_gbs, memory_args, memory_ref  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", default="rmsnorm", help="comma list of " + ",".join(MEMORY_CASES))
    ap.add_argument("--shapes", default="16384x8192", help="comma list of ROWSxCOLS")
    check = ab_common_args(ap, "ab_memory")
    ap.add_argument("--iters", type=int, default=20)
    a = ap.parse_args()
    variants, modes = check(a)
    cases = a.cases.split(",")
    if any(c not in MEMORY_CASES for c in cases):
        ap.error(f"--cases: a comma list of {','.join(MEMORY_CASES)}, got {a.cases!r}")
    try:
        shapes = [tuple(int(v) for v in s.split("x")) for s in a.shapes.split(",") if s.strip()]
    except ValueError:
        shapes = []
    if not shapes or any(len(s) != 2 or min(s) < 1 for s in shapes):
        ap.error(f"--shapes: a comma list of ROWSxCOLS (positive ints), got {a.shapes!r}")
    if not torch.cuda.is_available():
        raise SystemExit("ab_memory: needs a CUDA GPU (it times the megakernel against a device copy)")
    for name in cases:
        fn, _, passes = MEMORY_CASES[name]
        for r, c in shapes:
            args = memory_args(name, r, c)
            ref = memory_ref(name, fn, args).float()
            gb = passes * r * c * 2 / 1e9
            runners = {}
            for vname, env in variants:
                p = with_env(env, lambda: program_for(fn, args, name=f"ab_{name}_{r}x{c}"))
                for mode in modes:
                    run = with_env(env, lambda: MkRunner(p, args, {"global_work_queue": mode == "global"}))
                    run()
                    err = ((run.outputs()[0].float() - ref).norm() / ref.norm()).item()
                    if not err <= 1e-2:
                        raise SystemExit(f"ab_memory: {vname} {mode} {name} {r}x{c}: rel. err {err:.3g}")
                    runners[(vname, mode)] = run
            keys = list(runners)
            pct = {k: [] for k in keys}
            copies = []
            for rnd in range(a.rounds):
                copy = copy_gbs()
                copies.append(copy)
                for k in keys[rnd % len(keys):] + keys[:rnd % len(keys)]:
                    pct[k].append(100 * gb / (bench(runners[k], iters=a.iters, device_only=True) / 1e3) / copy)
            print(f"{name} {r}x{c}: copy {statistics.median(copies):.0f} GB/s (rounds "
                  + " ".join(f"{v:.0f}" for v in copies) + ")", flush=True)
            for mode in modes:
                first = statistics.median(pct[(variants[0][0], mode)])
                print(f"  {mode:7s} " + "  ".join(
                    f"{vn} {statistics.median(pct[(vn, mode)]):.1f}% (x{statistics.median(pct[(vn, mode)]) / first:.3f};"
                    " rounds " + " ".join(f"{v:.1f}" for v in pct[(vn, mode)]) + ")" for vn, _ in variants), flush=True)
            del runners, args, ref
            torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
