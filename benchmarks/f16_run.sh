#!/bin/bash
# Session 43's device calls: float16 on the megakernel and the bf16 kernel with the new headers.
#   PART=t: build, tests/test_gpu_f16.py, then a bf16 sanity subset of test_gpu_gemm / test_gpu_attention /
#           test_gpu_llama (the headers' Half<F16> and wgmma macros changed under them).
#   PART=p: benchmarks/ab_kernels.py: HF 1B (bf16) with HEAD~'s headers (OLDK, a kernels/ folder) against this
#           tree's, alternating in one process; the same model in fp16.
# Usage: [PART=p OLDK=abk_old/kernels] bash benchmarks/f16_run.sh   (logs under $OUT; a summary on stdout)
set -u
OUT=${OUT:-/tmp/mk-out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 MEGAKITTENS_CACHE_DIR=/tmp/mk-cache
t0=$(date +%s)
el() { echo "($(( $(date +%s) - t0 )) s)"; }
python3 -m pip install --no-build-isolation --no-deps -e . > "$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
echo "build $(el)"
runf() {  # test file, timeout, optional -k expression
  if [ -n "${3:-}" ]; then set -- "$1" "$2" -k "$3"; else set -- "$1" "$2"; fi
  local f=$1 to=$2; shift 2
  timeout $to python3 -m pytest -v -m gpu --tb=short "$@" tests/$f.py > "$OUT/$f.log" 2>&1
  echo "$f $* rc=$? $(tail -1 $OUT/$f.log) $(el)"
  grep -E "^(FAILED|ERROR)| FAILED" "$OUT/$f.log" | head -12 | cut -c1-250
  grep -E "^E  " "$OUT/$f.log" | head -8 | cut -c1-300
}
case "${PART:-t}" in
t)
  runf test_gpu_f16 330
  runf test_gpu_gemm 90 "mlp or rope or swiglu"
  runf test_gpu_attention 60 "d64 or mask"
  runf test_gpu_llama 100 ;;
p)
  timeout 540 python3 benchmarks/ab_kernels.py "${OLDK:-abk_old/kernels}" hf:1b hf16:1b > "$OUT/ab.log" 2>&1
  echo "ab rc=$? $(el)"; grep -vE '^\s*$' "$OUT/ab.log" | grep -v Warning | tail -8 | cut -c1-250 ;;
esac
echo "total $(el)"
