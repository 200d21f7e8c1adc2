"""One small graph of each GPU IType, launched once: run under compute-sanitizer (memcheck, racecheck,
synccheck) by benchmarks/device_run.sh."""
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))
from test_gpu_kernels import CASES, inputs_for, program_for, run_gpu  # noqa: E402

from megakittens import gpu  # noqa: E402

for case in ["relu_ragged", "binary_all_ragged", "fused_bcast", "rms_odd_cols", "rms_4096_ragged"]:  # binary_all fuses (TMA path)
    fn, shapes = CASES[case]
    p = program_for(fn, shapes, num_sms=gpu.num_ctas(1), name=case)
    run_gpu(p, inputs_for(shapes, "cuda"), {"sync": True, "watchdog_s": 60.0})
    print("ok", case, flush=True)
