#!/bin/bash
# Session 3 device call: the SIMT and Llama GPU tests, the HF mask diagnostic, the llama benchmark.
set -u
OUT=${OUT:-/tmp/mk-out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 MEGAKITTENS_CACHE_DIR=/tmp/mk-cache
t0=$(date +%s)
python3 -m pip install --no-build-isolation --no-deps -e . > "$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
echo "build: $(( $(date +%s) - t0 )) s"
timeout 150 python3 -m pytest -q -rfE -m gpu tests/test_gpu_simt.py > "$OUT/simt.log" 2>&1
echo "simt rc=$? $(tail -1 $OUT/simt.log)"; grep -E "^(FAILED|ERROR)" "$OUT/simt.log" | head -5
timeout 60 python3 benchmarks/debug_hf_mask.py > "$OUT/mask.log" 2>&1; echo "mask rc=$?"; grep -v "^\s*$" "$OUT/mask.log" | cut -c1-200 | head -40
timeout 200 python3 -m pytest -q -rfE -m gpu tests/test_gpu_llama.py -k example > "$OUT/llama_tests.log" 2>&1
echo "llama tests rc=$? $(tail -1 $OUT/llama_tests.log) ($(( $(date +%s) - t0 )) s)"; grep -E "^(FAILED|ERROR)|^E " "$OUT/llama_tests.log" | head -12
MK_TC_MODE=${MK_TC_MODE:-default} MK_LLAMA_CASES=${MK_LLAMA_CASES:-example:1b,example:8b} timeout ${BENCH_TIMEOUT:-200} python3 benchmarks/run.py llama > "$OUT/bench.log" 2>&1
echo "bench rc=$?"; grep -E '"case"|FAILED|Error' "$OUT/bench.log" | cut -c1-400
echo "total $(( $(date +%s) - t0 )) s"
