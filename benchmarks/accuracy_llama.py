"""Diagnostic (device): how far megakittens and eager bf16 each are from an fp32 run of the same model
(examples/llama.py, `python3 benchmarks/accuracy_llama.py 8b 4 2048`): tells bf16 rounding drift from a bug."""
import sys

import torch

sys.path.insert(0, __import__("os").path.dirname(__file__))
from llama import _example_model  # noqa: E402

import megakittens  # noqa: E402


def rel(a, b):
    return ((a.double() - b.double()).norm() / b.double().norm()).item()


name = sys.argv[1] if len(sys.argv) > 1 else "8b"
fwd, ids = _example_model(name)
model = fwd.__closure__[0].cell_contents if fwd.__closure__ else None
with torch.no_grad():
    h_mk = megakittens.compile(fwd)(ids)
    h_bf = fwd(ids)
    model.float()
    h_32 = fwd(ids)
print(f"{name}: |mk - eager| {rel(h_mk, h_bf):.3e}, |mk - fp32| {rel(h_mk, h_32):.3e}, |eager - fp32| {rel(h_bf, h_32):.3e}")
