#!/bin/bash
# One device call: build, then the GPU tests one file per process (a sticky CUDA error in one file cannot
# fail the others), newest first. FILES overrides the list. Logs under $OUT; a short summary last.
set -u
OUT=${OUT:-/tmp/mk-out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 MEGAKITTENS_CACHE_DIR=/tmp/mk-cache
t0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
python3 -c "import transformers; print('transformers', transformers.__version__)"
python3 -m pip install --no-build-isolation --no-deps -e . > "$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
echo "build: $(( $(date +%s) - t0 )) s"
# name:all runs every test of the file (CPU ones too: test_llama's HF models meet this machine's transformers).
for e in ${FILES:-test_gpu_simt test_gpu_kernels test_gpu_llama test_gpu_compile test_llama:all test_gpu_gemm test_gpu_attention}; do
  f=${e%%:*}; sel="-m gpu"; [ "$e" != "$f" ] && sel=""
  timeout ${FILE_TIMEOUT:-240} python3 -m pytest -q -rfE $sel tests/$f.py ${PYTEST_ARGS:-} > "$OUT/$f.log" 2>&1
  echo "$f rc=$? ($(( $(date +%s) - t0 )) s): $(tail -1 "$OUT/$f.log")"
  grep -E "^(FAILED|ERROR)" "$OUT/$f.log" | head -8
done
echo "total $(( $(date +%s) - t0 )) s"
