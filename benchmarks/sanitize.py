"""One small graph of each GPU IType, launched once: run under compute-sanitizer (memcheck, racecheck,
synccheck) by benchmarks/device_run.sh. Arguments name the cases to run (default: all), e.g. `sanitize.py cat softmax`."""
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))
from test_gpu_kernels import CASES, inputs_for, program_for, run_gpu  # noqa: E402

from megakittens import gpu  # noqa: E402

WANTED = set(sys.argv[1:])

# Every IType of issue 3: Noop (the per-SM table's padding), ElementwiseUnary, ElementwiseBinary (add_1024: a
# lone add), ElementwiseFused (binary_all fuses: TMA path; fused_bcast: plain loads), RMSNorm (generic rows:
# rms_odd_cols; bulk rows: rms_4096_ragged).
# The same ITypes with several waves of instructions per CTA, so that every CTA reuses its stages and word
# slots (the hazards of the stage rewrite only show then: kernels/mk/vm.cuh [Note: lanes arrive]).
WAVES = {"relu_waves": (CASES["relu_ragged"][0], [(32768, 1000)]),
         "add_waves": (CASES["add_1024"][0], [(8192, 2048), (8192, 2048)]),
         "rms_waves": (CASES["rms_2048"][0], [(10240, 2048), (2048,)])}
for case in ["relu_ragged", "add_1024", "binary_all_ragged", "fused_bcast", "rms_odd_cols", "rms_4096_ragged",
             *WAVES]:
    if WANTED and case not in WANTED:
        continue
    fn, shapes = WAVES[case] if case in WAVES else CASES[case]
    p = program_for(fn, shapes, num_sms=gpu.num_ctas(1), name=case)
    run_gpu(p, inputs_for(shapes, "cuda"), {"sync": True, "watchdog_s": 60.0})
    print("ok", case, flush=True)

# The plain-load bodies written since (tests/test_gpu_simt.py cases): Cat (one plane and stacked planes),
# RowReduce max, Softmax, LayerNorm, Copy.
from test_gpu_simt import case_inputs, program_of  # noqa: E402

for case in ["cat", "cat_planes", "row_max", "softmax", "layer_norm", "bhsd_to_bshd"]:
    if WANTED and case not in WANTED:
        continue
    fn, args = case_inputs(case, 0)
    p = program_of(fn, args, num_sms=gpu.num_ctas(1), name=case)
    run_gpu(p, [a.cuda() for a in args], {"sync": True, "watchdog_s": 60.0})
    print("ok", case, flush=True)
