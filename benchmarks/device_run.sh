#!/bin/bash
# One device call: build, GPU tests, sanitizers, benchmarks. Logs under $OUT; a short table last.
set -u
OUT=${OUT:-/tmp/mk-out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 MEGAKITTENS_CACHE_DIR=/tmp/mk-cache
SUITES=${SUITES:-"ceilings jit chain memory"}
t0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$OUT/gpu.txt" 2>&1
python3 -m pip install --no-build-isolation --no-deps -e . > "$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
echo "build: $(( $(date +%s) - t0 )) s"
timeout ${TEST_TIMEOUT:-300} python3 -m pytest -x -q -m gpu tests/test_gpu_kernels.py ${PYTEST_ARGS:-} > "$OUT/tests.log" 2>&1
rc=$?; echo "tests rc=$rc ($(( $(date +%s) - t0 )) s)"; grep -E "passed|failed" "$OUT/tests.log" | tail -3
if [ $rc != 0 ] && [ -n "${FALLBACK_KERNELS:-}" ]; then
  grep -E "^(FAILED|E )" "$OUT/tests.log" | head -15
  export MEGAKITTENS_KERNELS_DIR=$FALLBACK_KERNELS; echo "falling back to $FALLBACK_KERNELS"
  timeout 200 python3 -m pytest -x -q -m gpu tests/test_gpu_kernels.py > "$OUT/tests_fallback.log" 2>&1
  echo "fallback tests rc=$?"; grep -E "passed|failed" "$OUT/tests_fallback.log" | tail -2
fi
if [ "${SANITIZE:-1}" = 1 ]; then
  for tool in memcheck racecheck synccheck; do
    timeout 60 compute-sanitizer --tool $tool --error-exitcode 9 python3 benchmarks/sanitize.py > "$OUT/sanitize_$tool.log" 2>&1
    echo "sanitizer $tool rc=$? $(grep -c '^ok' $OUT/sanitize_$tool.log) cases; $(grep -m1 'ERROR SUMMARY' $OUT/sanitize_$tool.log)"
    grep -E "Race reported|Hazard|Error|Warning" "$OUT/sanitize_$tool.log" | sed 's/0x[0-9a-f]*/0x?/g' | sort | uniq -c | sort -rn | head -6
  done
fi
timeout ${BENCH_TIMEOUT:-240} python3 benchmarks/run.py $SUITES > "$OUT/bench.log" 2>&1
echo "bench rc=$? ($(( $(date +%s) - t0 )) s)"
python3 benchmarks/report.py && cp BENCHMARKS.md "$OUT/"
python3 - <<'PY'
import json, glob
for f in sorted(glob.glob("benchmarks/results/*.json")):
    for r in json.load(open(f)):
        b = ", ".join(f"{k}={v:.1f}" for k, v in r["baselines"].items() if v is not None)
        mk = r["megakittens"]
        print(f"{r['case'][:58]:58s} {r['unit']:7s} mk={mk if mk is None else round(mk,1)} {b} ratio={r['ratio'] and round(r['ratio'],2)}")
PY
grep -E "FAILED|Error|error" "$OUT/bench.log" | head -5
cd "$OUT" && tar czf logs.tgz *.log && rm -f *.log
