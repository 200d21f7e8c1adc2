"""Helpers shared by the Python tests."""
from __future__ import annotations

import math

import torch

BF16 = torch.bfloat16


def rel_err(out: torch.Tensor, ref: torch.Tensor) -> float:
    """Relative Frobenius error ||out - ref|| / ||ref|| in fp32; inf when out has a NaN/inf."""
    out, ref = out.detach().float().cpu(), ref.detach().float().cpu()
    if out.shape != ref.shape:
        raise AssertionError(f"shape {list(out.shape)} != reference {list(ref.shape)}")
    if not torch.isfinite(out).all():
        return math.inf
    denom = ref.norm().item()
    diff = (out - ref).norm().item()
    return diff / denom if denom > 0 else diff


def randn(*shape: int, scale: float = 1.0, dtype: torch.dtype = BF16, device: str = "cpu") -> torch.Tensor:
    """Fresh random values (never zeros), scaled so results stay O(1)."""
    return (torch.randn(*shape, device=device) * scale).to(dtype)


def mlp(W: torch.Tensor, x: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """The seed's 3-layer MLP: x = relu(x @ W[i] + b[i]); W (L, H, H), x (M, H), b (L, M, H)."""
    for i in range(W.shape[0]):
        x = torch.relu(x @ W[i] + b[i])
    return x


def mlp_inputs(M: int, H: int, layers: int = 3, device: str = "cpu") -> tuple:
    """(W, x, b) for ``mlp`` in bf16; W scaled by 1/sqrt(H) so activations stay O(1)."""
    return (randn(layers, H, H, scale=H ** -0.5, device=device), randn(M, H, device=device),
            randn(layers, M, H, device=device))


def check_close(outs, refs, tol: float = 1e-2) -> None:
    """Every output within relative Frobenius error ``tol`` of its reference (DESIGN §8); NaN fails."""
    outs = outs if isinstance(outs, (tuple, list)) else (outs,)
    refs = refs if isinstance(refs, (tuple, list)) else (refs,)
    assert len(outs) == len(refs)
    for i, (o, r) in enumerate(zip(outs, refs)):
        err = rel_err(o, r)
        assert err <= tol, f"output {i}: relative error {err:.3g}"


def check_interleavings(fn, args, global_work_queue: bool, cluster_size: int, seeds: int = 20) -> None:
    """Compile ``fn`` and run it under ``seeds`` SM interleavings of the CPU reference interpreter
    (``Dispatcher.seed``), each checked against eager."""
    import megakittens
    import megakittens.backend as mk_backend

    refs = fn(*args)
    compiled = megakittens.compile(fn, global_work_queue=global_work_queue, cluster_size=cluster_size)
    check_close(compiled(*args), refs)
    d = mk_backend.dispatchers[-1]
    assert d.program.cluster_size == cluster_size
    for seed in range(1, seeds):
        d.seed = seed
        check_close(d(*args), refs)  # straight to the dispatcher: same program, another interleaving
    assert d.calls == seeds


def many_slots(x: torch.Tensor, ws: list, g: torch.Tensor, W: torch.Tensor) -> torch.Tensor:
    """x (R, C) plus each of ws (R, C), then RMSNorm with weight g (C,) and a matmul by W (C, N): one
    tensor slot per input, so past 256 slots the add, RMSNorm and Gemm instructions read and write
    slots >= 256 ([Note: slot bits] in src/schedule/instruction.h)."""
    for w in ws:
        x = x + w
    return torch.rms_norm(x, (x.shape[-1],), g, 1e-6) @ W


def many_slots_inputs(n: int = 300, device: str = "cpu") -> tuple:
    return (randn(128, 128, device=device), [randn(128, 128, scale=0.1, device=device) for _ in range(n)],
            randn(128, device=device), randn(128, 64, scale=0.1, device=device))
