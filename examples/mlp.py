"""The seed's 3-layer MLP, x = relu(x @ W[i] + b[i]), compiled with megakittens and checked against eager.

    python examples/mlp.py [--M 512] [--H 512] [--target h200|b200] [--cluster-size 2] [--global-work-queue]

Runs on CUDA tensors when a GPU is present, else on CPU tensors (the reference interpreter). Prints the
schedule size and the relative Frobenius error ||out - ref|| / ||ref||; exits 1 above 1e-2 or on NaN.
"""
import argparse
import math
import sys
import time

import torch

import megakittens
import megakittens.backend
import megakittens.options

TOL = 1e-2


def mlp(W: torch.Tensor, x: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """W (3, H, H), x (M, H), b (3, M, H), bf16 -> (M, H)."""
    for i in range(3):
        x = torch.relu(x @ W[i] + b[i])
    return x


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--M", type=int, default=512)
    p.add_argument("--H", type=int, default=512)
    p.add_argument("--target", choices=["h200", "b200"], default=None)
    p.add_argument("--cluster-size", type=int, choices=[1, 2], default=2)
    p.add_argument("--global-work-queue", choices=["true", "false"], default=None,
                   help="the work queue (default: chosen by program, megakittens.options.work_queue_for)")
    p.add_argument("--verbose", action="store_true")
    a = p.parse_args()

    device = "cuda" if torch.cuda.is_available() else "cpu"
    torch.manual_seed(0)
    bf16 = torch.bfloat16
    # W scaled by 1/sqrt(H) so activations stay O(1) through the three layers.
    W = (torch.randn(3, a.H, a.H, device=device) * a.H ** -0.5).to(bf16)
    x = torch.randn(a.M, a.H, device=device).to(bf16)
    b = torch.randn(3, a.M, a.H, device=device).to(bf16)

    queue = None if a.global_work_queue is None else a.global_work_queue == "true"
    fn = megakittens.compile(mlp, target=a.target, cluster_size=a.cluster_size,
                             global_work_queue=queue, verbose=a.verbose)
    t0 = time.perf_counter()
    out = fn(W, x, b)
    if device == "cuda":
        torch.cuda.synchronize()
    elapsed = time.perf_counter() - t0
    ref = mlp(W, x, b)

    program = megakittens.backend.dispatchers[-1].program
    print(f"mlp M={a.M} H={a.H} on {device}: {program.num_instructions} instructions, "
          f"{program.num_barriers} barriers, {len(program.slots)} slots, {program.num_sms} SMs, "
          f"cluster {program.cluster_size}, "
          f"{'global queue' if megakittens.options.work_queue_for(program, queue) else 'per-SM tables'}")
    err = ((out.float() - ref.float()).norm() / ref.float().norm()).item()
    ok = math.isfinite(err) and not torch.isnan(out).any().item() and err <= TOL
    print(f"first call {elapsed:.2f} s (compile + run); relative error {err:.3e} "
          f"({'ok' if ok else f'FAIL, limit {TOL}'})")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
