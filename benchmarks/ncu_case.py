"""Launch one benchmarks/timeline.py case a few times (for `ncu --launch-skip 3 --launch-count 1`):
`python3 benchmarks/ncu_case.py gemm8k`."""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(__file__))
from common import MkRunner, program_for  # noqa: E402
from timeline import cases  # noqa: E402

name = sys.argv[1]
fn, args = cases()[name]
runner = MkRunner(program_for(fn, args, name=f"ncu_{name}"), args)
for _ in range(5):
    runner()
torch.cuda.synchronize()
print("ok", name)
