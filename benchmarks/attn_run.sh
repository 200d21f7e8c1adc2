#!/bin/bash
# One device call for issue 5 (Attention): build, a smoke test under a short timeout (a hang costs a
# minute, not the call), the attention GPU tests, the attention benchmark (flash and cuDNN SDPA side by
# side), optionally the same benchmark for a kernel variant (VARIANT="sed expressions" applied to a copy
# of kernels/, tagged VARIANT_TAG), then the other GPU test files in the time left, and a table.
# Logs under $OUT. Knobs: TEST_TIMEOUT, BENCH_TIMEOUT, OTHER_TESTS, BUDGET_S (whole call), SANITIZE=1.
set -u
# The device copy has no .git: pass MK_COMMIT=<hash> so the result rows name the commit that ran.
export MK_COMMIT=${MK_COMMIT:-unknown}
OUT=${OUT:-/tmp/mk-out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 MEGAKITTENS_CACHE_DIR=${MEGAKITTENS_CACHE_DIR:-/tmp/mk-cache}
t0=$(date +%s)
el() { echo "$(( $(date +%s) - t0 )) s"; }
left() { echo $(( ${BUDGET_S:-280} - ($(date +%s) - t0) )); }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$OUT/gpu.txt" 2>&1
python3 -m pip install --no-build-isolation --no-deps -e . > "$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
echo "build: $(el)"

PYTEST="python3 -m pytest -q -m gpu -p no:cacheprovider"
timeout 60 $PYTEST -x tests/test_gpu_attention.py -k "b1_h1_s128 or s900_d64 or sq40" > "$OUT/smoke.log" 2>&1
rc=$?; echo "smoke rc=$rc ($(el)): $(grep -E 'passed|failed' "$OUT/smoke.log" | tail -1)"
[ $rc != 0 ] && grep -E "^E " "$OUT/smoke.log" | head -12
timeout ${TEST_TIMEOUT:-90} $PYTEST tests/test_gpu_attention.py > "$OUT/tests.log" 2>&1
echo "attention tests rc=$? ($(el)): $(grep -E 'passed|failed' "$OUT/tests.log" | tail -1)"
grep -E "^(FAILED|ERROR)" "$OUT/tests.log" | head -20
grep -E "^E  " "$OUT/tests.log" | head -12

timeout ${BENCH_TIMEOUT:-70} python3 benchmarks/run.py attention > "$OUT/bench.log" 2>&1
echo "bench rc=$? ($(el))"; grep -E "Error|error|FAILED" "$OUT/bench.log" | head -5
if [ -n "${VARIANT:-}" ]; then
  rm -rf /tmp/kvar && cp -r kernels /tmp/kvar && sed -i -e "$VARIANT" /tmp/kvar/mk/vm.cuh /tmp/kvar/mk/itypes/attention.cuh
  MEGAKITTENS_KERNELS_DIR=/tmp/kvar MK_BENCH_TAG=${VARIANT_TAG:-variant} timeout ${BENCH_TIMEOUT:-70} \
    python3 benchmarks/run.py attention > "$OUT/bench_variant.log" 2>&1
  echo "variant bench rc=$? ($(el))"; grep -E "Error|error|FAILED" "$OUT/bench_variant.log" | head -5
fi
if [ -n "${OTHER_TESTS:-}" ] && [ "$(left)" -gt 20 ]; then
  timeout $(left) $PYTEST $OTHER_TESTS > "$OUT/tests_other.log" 2>&1
  echo "other GPU tests rc=$? ($(el)): $(grep -E 'passed|failed' "$OUT/tests_other.log" | tail -1)"
  grep -E "^(FAILED|ERROR)" "$OUT/tests_other.log" | head -10
  tail -c 400 "$OUT/tests_other.log" | grep -v "^$" | tail -2
fi
if [ "${SANITIZE:-0}" = 1 ] && [ "$(left)" -gt 30 ]; then
  cat > "$OUT/san.py" <<'PY'
import sys
sys.path.insert(0, "tests")
import torch, torch.nn.functional as F
from megakittens import gpu
from test_gpu_kernels import program_for, run_gpu
for causal, shapes in ((True, [(1, 2, 200, 128)] * 3), (False, [(1, 1, 130, 64)] * 3)):
    fn = lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    p = program_for(fn, shapes, cluster_size=2, num_sms=gpu.num_ctas(2), name="san")
    args = [torch.randn(s).to(torch.bfloat16).cuda() for s in shapes]
    (out,) = run_gpu(p, args, {"sync": True, "watchdog_s": 20.0})
    ref = fn(*[a.float() for a in args])
    err = ((out.float() - ref).norm() / ref.norm()).item()
    print("ok" if err < 1e-2 else "BAD", causal, err)
PY
  timeout $(left) compute-sanitizer --tool memcheck --error-exitcode 9 python3 "$OUT/san.py" > "$OUT/san.log" 2>&1
  echo "memcheck rc=$? $(grep -c '^ok' "$OUT/san.log") ok; $(grep -m1 'ERROR SUMMARY' "$OUT/san.log")"
fi
python3 - <<'PY'
import glob, json
for f in sorted(glob.glob("benchmarks/results/attention*.json")):
    for r in json.load(open(f)):
        b = " ".join(f"{k}={v:.0f}" for k, v in r["baselines"].items() if v is not None)
        print(f"{r['suite'][10:14]:4s} {r['case'][8:48]:40s} mk={r['megakittens']:.0f} {b} x{r['ratio'] or 0:.2f} "
              f"err={r['rel_err_vs_flash']:.1e}")
PY
cp benchmarks/results/attention*.json "$OUT/" 2>/dev/null
cd "$OUT" && tar czf logs.tgz *.log && rm -f *.log
