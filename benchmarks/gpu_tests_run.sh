#!/bin/bash
# One device call: build, then BENCH (a shell command, run alone so its timings see an idle GPU), then the
# GPU tests one file per process (a sticky CUDA error in one file cannot fail the others). Logs under $OUT;
# a short summary last.
#   FILES   the test files, newest first by default; `name@expr` runs `pytest -k expr` (no spaces in expr),
#           `name:all` every test of the file (CPU ones too: test_llama's HF models meet this machine's
#           transformers)
#   PARALLEL=1  the files run side by side (one GPU; about 2x faster for the whole suite)
#   BENCH   e.g. 'python3 benchmarks/timeline.py mlp512; python3 benchmarks/run.py mlp'
#   MK_COMMIT  the commit the result rows name (benchmarks/common.py): pass it, the device machine's copy of
#           .git may be stale (it read an older HEAD all of session 10)
# Example: BENCH='python3 benchmarks/timeline.py k128' FILES="test_gpu_gemm@split test_gpu_compile" PARALLEL=1
#   MK_COMMIT=abc1234 bash benchmarks/gpu_tests_run.sh
set -u
OUT=${OUT:-/tmp/mk-out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 MEGAKITTENS_CACHE_DIR=${MEGAKITTENS_CACHE_DIR:-/tmp/mk-cache}
t0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
python3 -m pip install --no-build-isolation --no-deps -e . > "$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
echo "build: $(( $(date +%s) - t0 )) s"
if [ -n "${BENCH:-}" ]; then
  eval "$BENCH" > "$OUT/bench.log" 2>&1
  echo "bench rc=$? ($(( $(date +%s) - t0 )) s)"
  grep -vE '^\s*$|^\{' "$OUT/bench.log" | tail -${BENCH_LINES:-40}
fi
run_file() {
  local e=$1 f sel="-m gpu" kx=""
  f=${e%%[:@]*}
  case "$e" in *:all) sel="" ;; *@*) kx=${e#*@} ;; esac
  # Side by side the files share one GPU: test_gpu_kernels alone takes ~270 s, ~350 s next to the others.
  timeout ${FILE_TIMEOUT:-$([ "${PARALLEL:-0}" = 1 ] && echo 480 || echo 300)} python3 -m pytest -q -rfE $sel tests/$f.py ${kx:+-k "$kx"} ${PYTEST_ARGS:-} \
    > "$OUT/$f.log" 2>&1
  echo "$e rc=$? ($(( $(date +%s) - t0 )) s): $(tail -1 "$OUT/$f.log")"
  grep -E "^(FAILED|ERROR)" "$OUT/$f.log" | head -8
}
pids=()
for e in ${FILES-test_gpu_simt test_gpu_kernels test_gpu_llama test_gpu_compile test_llama:all test_gpu_gemm test_gpu_attention}; do
  if [ "${PARALLEL:-0}" = 1 ]; then run_file "$e" & pids+=($!); else run_file "$e"; fi
done
for p in ${pids[@]+"${pids[@]}"}; do wait "$p"; done
echo "total $(( $(date +%s) - t0 )) s"
