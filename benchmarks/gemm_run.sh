#!/bin/bash
# One device call for issue 4 (Gemm): build, the GPU tests (Gemm first, then the other GPU suites),
# compute-sanitizer memcheck on a small Gemm, the gemm + mlp benchmarks, and a short table.
# Logs under $OUT (tarred at the end).  Knobs: TEST_TIMEOUT, OTHER_TIMEOUT, BENCH_TIMEOUT, SANITIZE=0,
# SUITES, MK_BENCH_COMPILE_BUDGET_S. The default timeouts keep the whole call under ~10 minutes.
set -u
OUT=${OUT:-/tmp/mk-out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 MEGAKITTENS_CACHE_DIR=${MEGAKITTENS_CACHE_DIR:-/tmp/mk-cache}
SUITES=${SUITES:-"gemm mlp"}
t0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$OUT/gpu.txt" 2>&1
python3 -m pip install --no-build-isolation --no-deps -e . > "$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
echo "build: $(( $(date +%s) - t0 )) s"

# NVRTC compile of the Gemm megakernel: registers, spills, wgmma serialization (ptxas report).
python3 - > "$OUT/ptxas.log" 2>&1 <<'PY'
import sys
sys.path.insert(0, "tests")
from megakittens import _C, gpu
from test_nvrtc import GEMM_CASES
from test_gpu_kernels import program_for
fn, shapes = GEMM_CASES["mlp_1024"]
p = program_for(fn, shapes, cluster_size=2)
cubin, log, ms = _C.nvrtc_compile(_C.gpu_generate_source(p), _C.gpu_jit_flags(gpu.kernels_dir(), gpu.cuda_include_dir()),
                                  list(gpu.nvrtc_candidates()))
print(f"nvrtc {ms:.0f} ms, cubin {len(cubin)} B")
print("\n".join(l for l in log.splitlines() if any(w in l for w in ("Used", "spill", "serialized", "C75"))))
PY
echo "ptxas:"; grep -E "nvrtc|Used|serialized" "$OUT/ptxas.log" | head -4

timeout ${TEST_TIMEOUT:-200} python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_gpu_gemm.py > "$OUT/tests_gemm.log" 2>&1
echo "gemm tests rc=$? ($(( $(date +%s) - t0 )) s)"; grep -E "passed|failed" "$OUT/tests_gemm.log" | tail -2
grep -E "^(FAILED|ERROR)" "$OUT/tests_gemm.log" | head -20
timeout ${OTHER_TIMEOUT:-100} python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_gpu_kernels.py tests/test_gpu_compile.py > "$OUT/tests_other.log" 2>&1
echo "other GPU tests rc=$? ($(( $(date +%s) - t0 )) s)"; grep -E "passed|failed" "$OUT/tests_other.log" | tail -2
grep -E "^(FAILED|ERROR)" "$OUT/tests_other.log" | head -10

if [ "${SANITIZE:-1}" = 1 ]; then
  cat > "$OUT/sanitize_gemm.py" <<'PY'
import sys
sys.path.insert(0, "tests")
import torch
from megakittens import gpu
from test_gpu_kernels import inputs_for, program_for, run_gpu
for cluster, shapes in ((1, [(200, 136), (136, 320)]), (2, [(100, 320), (320, 256)])):
    p = program_for(lambda a, b: a @ b, shapes, cluster_size=cluster, num_sms=gpu.num_ctas(cluster), name="san")
    a, b = inputs_for(shapes, "cuda", seed=1)
    (out,) = run_gpu(p, [a, b], {"sync": True, "watchdog_s": 20.0})
    err = ((out.float() - a.float() @ b.float()).norm() / (a.float() @ b.float()).norm()).item()
    print("ok" if err < 1e-2 else "BAD", cluster, err)
PY
  for tool in ${SANITIZERS:-memcheck}; do
    timeout 60 compute-sanitizer --tool $tool --error-exitcode 9 python3 "$OUT/sanitize_gemm.py" > "$OUT/sanitize_gemm_$tool.log" 2>&1
    echo "sanitizer $tool rc=$? $(grep -c '^ok' $OUT/sanitize_gemm_$tool.log) ok; $(grep -m1 'ERROR SUMMARY' $OUT/sanitize_gemm_$tool.log)"
  done
fi

MK_BENCH_COMPILE_BUDGET_S=${MK_BENCH_COMPILE_BUDGET_S:-60} timeout ${BENCH_TIMEOUT:-150} python3 benchmarks/run.py $SUITES > "$OUT/bench.log" 2>&1
echo "bench rc=$? ($(( $(date +%s) - t0 )) s)"
python3 benchmarks/report.py && cp BENCHMARKS.md "$OUT/"
python3 - <<'PY'
import json, os
for s in ("gemm", "mlp"):
    f = f"benchmarks/results/{s}.json"
    if not os.path.exists(f):
        continue
    for r in json.load(open(f)):
        b = ", ".join(f"{k}={v:.1f}" for k, v in r["baselines"].items() if v is not None)
        mk = r["megakittens"]
        print(f"{r['case'][:62]:62s} {r['unit']:7s} mk={mk if mk is None else round(mk, 1)} {b} "
              f"ratio={r['ratio'] and round(r['ratio'], 2)}")
PY
grep -E "FAILED|Error|error" "$OUT/bench.log" | head -5
cd "$OUT" && tar czf logs.tgz *.log && rm -f *.log
