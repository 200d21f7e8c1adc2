"""Launch one benchmarks/timeline.py case (or `cublas:<case>`: torch's own kernels on the same inputs) a few
times, with only the last launch inside cudaProfilerStart/Stop, for
`ncu --profile-from-start off --clock-control none ...`: `python3 benchmarks/ncu_case.py gemm8k`,
`python3 benchmarks/ncu_case.py cublas:gemm8k`."""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(__file__))
from common import MkRunner, program_for  # noqa: E402
from timeline import cases  # noqa: E402

name = sys.argv[1]
eager = name.startswith("cublas:")
fn, args = cases()[name.split(":")[-1]]
run = (lambda: fn(*args)) if eager else MkRunner(program_for(fn, args, name=f"ncu_{name}"), args)
for _ in range(4):
    run()
torch.cuda.synchronize()
torch.cuda.cudart().cudaProfilerStart()
run()
torch.cuda.synchronize()
torch.cuda.cudart().cudaProfilerStop()
print("ok", name)
