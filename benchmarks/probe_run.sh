#!/bin/bash
# One device call: build, all GPU tests, then the device timeline of each benchmark case and the
# elementwise leave-one-out experiments, or any define A/B (VARIANTS, VARIANT_CASES; benchmarks/notes.md).
# Logs under $OUT; a short summary last.
set -u
OUT=${OUT:-/tmp/mk-out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 MEGAKITTENS_CACHE_DIR=/tmp/mk-cache
t0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader
python3 -m pip install --no-build-isolation --no-deps -e . > "$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
echo "build: $(( $(date +%s) - t0 )) s"
if [ "${TESTS:-1}" = 1 ]; then
  timeout ${TEST_TIMEOUT:-300} python3 -m pytest -q -rfE -m gpu tests ${PYTEST_ARGS:-} > "$OUT/tests.log" 2>&1
  echo "pytest -m gpu rc=$? ($(( $(date +%s) - t0 )) s)"
  grep -E "^(FAILED|ERROR)|passed|failed" "$OUT/tests.log" | tail -15
fi
timeout ${TL_TIMEOUT:-150} python3 benchmarks/timeline.py ${CASES:-} 2>&1 | tee "$OUT/timeline.log" | grep -v "^phase"
# Compact rows of a run.py log: case, unit, megakittens, baselines, ratio (and % of copy).
rows() { grep -E '"case"' "$1" | python3 -c "
import json, sys
for l in sys.stdin:
    r = json.loads(l); b = {k: round(v, 1) for k, v in r['baselines'].items() if v is not None}
    print(r['case'][:60], r['unit'], r['megakittens'] and round(r['megakittens'], 1), b, r['ratio'] and round(r['ratio'], 3),
          r.get('pct_of_copy') and round(r['pct_of_copy'], 1) or '', *['%s=%.1e' % (k, v) for k, v in r.items() if k.startswith('rel_err')])"; }
# Each define of VARIANTS (MEGAKITTENS_DEFINES values) against the run above, on VARIANT_CASES; with
# VARIANT_SUITES also run.py of those suites without and with the define (OUT unset: no result files).
for d in ${VARIANTS:-MK_EXP_EW_NO_LOAD MK_EXP_EW_NO_STORE}; do
  [ -n "${VARIANT_CASES-relu add}" ] && MEGAKITTENS_DEFINES=$d timeout ${TL_TIMEOUT:-150} python3 benchmarks/timeline.py ${VARIANT_CASES-relu add} 2>&1 |
    tee "$OUT/timeline_$d.log" | grep -v "^phase"
  if [ -n "${VARIANT_SUITES:-}" ]; then
    for v in "" "$d"; do
      OUT= MEGAKITTENS_DEFINES=$v timeout ${BENCH_TIMEOUT:-200} python3 benchmarks/run.py $VARIANT_SUITES > "$OUT/bench_v$v.log" 2>&1
      echo "== run.py $VARIANT_SUITES MEGAKITTENS_DEFINES=$v rc=$?"; rows "$OUT/bench_v$v.log"
    done
  fi
done
for case in ${NCU_CASES:-}; do
  timeout 120 ncu --launch-skip 3 --launch-count 1 -k regex:megakittens --section SpeedOfLight \
    --section MemoryWorkloadAnalysis --section WarpStateStats --section ComputeWorkloadAnalysis \
    python3 benchmarks/ncu_case.py $case > "$OUT/ncu_$case.log" 2>&1
  echo "ncu $case rc=$?"; grep -E "Throughput|Busy|Pipe|Stall|Warp Cycles|Issued|L2 Hit|Bandwidth|Duration" "$OUT/ncu_$case.log" | head -30
done
if [ -n "${SUITES:-}" ]; then
  timeout ${BENCH_TIMEOUT:-200} python3 benchmarks/run.py $SUITES > "$OUT/bench.log" 2>&1
  echo "bench rc=$?"; python3 benchmarks/report.py && cp BENCHMARKS.md benchmarks/results/*.json "$OUT/"
  rows "$OUT/bench.log"
fi
echo "total $(( $(date +%s) - t0 )) s"
