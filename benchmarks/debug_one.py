"""Smallest end-to-end GPU check (debugging aid): one relu graph, JIT, launch, compare."""
import faulthandler
import os
import sys

faulthandler.enable()
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))
os.environ.setdefault("MEGAKITTENS_DEBUG", "1")
import torch  # noqa: E402
from test_gpu_kernels import CASES, inputs_for, program_for, run_gpu  # noqa: E402
from megakittens import gpu  # noqa: E402

case = sys.argv[1] if len(sys.argv) > 1 else "relu_ragged"
fn, shapes = CASES[case]
print("candidates", gpu.nvrtc_candidates()[:3], gpu.cuda_include_dir(), flush=True)
p = program_for(fn, shapes, num_sms=gpu.num_ctas(1), name=case)
args = inputs_for(shapes, "cuda")
(out,) = run_gpu(p, args, {"sync": True, "watchdog_s": 5.0})
ref = fn(*args)
print(case, "rel err", ((out.float() - ref.float()).norm() / ref.float().norm()).item(), flush=True)
