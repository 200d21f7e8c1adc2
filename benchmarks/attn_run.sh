#!/bin/bash
# One device call for issue 5 (Attention): build, ptxas report, a smoke test under a short timeout (a
# hang costs a minute, not the call; on failure the same with ping-pong off, to tell the two apart), the
# attention GPU tests, the attention benchmark (flash and cuDNN SDPA side by side), a short table.
# Logs under $OUT. Knobs: TEST_TIMEOUT, BENCH_TIMEOUT, EXTRA_TESTS (more pytest files), SUITES.
set -u
OUT=${OUT:-/tmp/mk-out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 MEGAKITTENS_CACHE_DIR=${MEGAKITTENS_CACHE_DIR:-/tmp/mk-cache}
t0=$(date +%s)
el() { echo "$(( $(date +%s) - t0 )) s"; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$OUT/gpu.txt" 2>&1
python3 -m pip install --no-build-isolation --no-deps -e . > "$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
echo "build: $(el)"

PYTEST="python3 -m pytest -q -m gpu -p no:cacheprovider"
timeout 60 $PYTEST -x tests/test_gpu_attention.py -k "b1_h1_s128 or s900_d64 or sq40" > "$OUT/smoke.log" 2>&1
rc=$?; echo "smoke rc=$rc ($(el)): $(grep -E 'passed|failed' "$OUT/smoke.log" | tail -1)"
if [ $rc != 0 ]; then
  grep -E "^E |Error|error" "$OUT/smoke.log" | head -12
  rm -rf /tmp/kvar && cp -r kernels /tmp/kvar
  sed -i 's/#define MK_ATTN_PINGPONG 1/#define MK_ATTN_PINGPONG 0/' /tmp/kvar/mk/itypes/attention.cuh
  MEGAKITTENS_KERNELS_DIR=/tmp/kvar timeout 60 $PYTEST -x tests/test_gpu_attention.py -k "b1_h1_s128 or s900_d64" > "$OUT/smoke_nopp.log" 2>&1
  echo "smoke without ping-pong rc=$? ($(el)): $(grep -E 'passed|failed' "$OUT/smoke_nopp.log" | tail -1)"
  grep -E "^E " "$OUT/smoke_nopp.log" | head -6
fi
timeout ${TEST_TIMEOUT:-150} $PYTEST tests/test_gpu_attention.py ${EXTRA_TESTS:-} > "$OUT/tests.log" 2>&1
echo "tests rc=$? ($(el)): $(grep -E 'passed|failed' "$OUT/tests.log" | tail -1)"
grep -E "^(FAILED|ERROR)" "$OUT/tests.log" | head -20
grep -E "^E  " "$OUT/tests.log" | head -12

timeout ${BENCH_TIMEOUT:-90} python3 benchmarks/run.py ${SUITES:-attention} > "$OUT/bench.log" 2>&1
echo "bench rc=$? ($(el))"
grep -E "Error|error|FAILED" "$OUT/bench.log" | head -5
python3 - <<'PY'
import json, os
f = "benchmarks/results/attention.json"
if os.path.exists(f):
    for r in json.load(open(f)):
        b = " ".join(f"{k}={v:.0f}" for k, v in r["baselines"].items() if v is not None)
        print(f"{r['case'][:48]:48s} mk={r['megakittens']:.0f} {b} x{r['ratio'] or 0:.2f} err={r['rel_err_vs_flash']:.1e}")
PY
cp benchmarks/results/attention.json "$OUT/" 2>/dev/null
cd "$OUT" && tar czf logs.tgz *.log && rm -f *.log
