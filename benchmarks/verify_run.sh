#!/bin/bash
# One device call: build, then the whole pytest suite (CPU and GPU tests). Logs under $OUT.
set -u
OUT=${OUT:-/tmp/mk-out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 MEGAKITTENS_CACHE_DIR=/tmp/mk-cache
t0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
python3 -m pip install --no-build-isolation --no-deps -e . > "$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
echo "build: $(( $(date +%s) - t0 )) s"
timeout ${TEST_TIMEOUT:-420} python3 -m pytest -q -rfE tests ${PYTEST_ARGS:-} > "$OUT/tests.log" 2>&1
echo "pytest rc=$? ($(( $(date +%s) - t0 )) s)"
grep -E "^(FAILED|ERROR)|passed|failed" "$OUT/tests.log" | tail -25
