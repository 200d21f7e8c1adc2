#!/bin/bash
# The device calls prepared in Sessions 38-41 and not yet (all) run, in three parts of <= 600 s each. Session 42
# (H100) ran the rest: racecheck of the default (0 hazards), test_gpu_compile -k tensor_slots, test_gpu_kernels
# up to ew_scalar (122 passed), test_gpu_sdpa_math (21), the masked attention cases (5 of 6), eager_attention -k
# math, gemm -k off_tma, simt -k "float_ids or embedding", one vision and one encoder case; no failure.
#   PART=a: test_gpu_kernels' tail (ew_scalar, ew_select, ew_swiglu, ew_unary_ragged, the compiled elementwise
#           graph), the masked attention cases, the losses.
#   PART=b: ViT-B and the encoders (BERT / RoBERTa / OPT / DeBERTa-v2 / nn.TransformerEncoder); each compiles a
#           whole model (~100 s a case on the H100).
#   PART=c: the ViT-B bmm diagnostic (benchmarks/debug_vit_bmm.py) and the hfmask llama rows.
# Usage: MKC=<commit> [PART=b] bash benchmarks/mask_race_run.sh   (logs under $OUT; a short summary on stdout)
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
  echo "  passed: $(grep -c " PASSED" "$OUT/$f.log")"; grep -E "^(FAILED|ERROR)| FAILED" "$OUT/$f.log" | head -12 | cut -c1-250
  grep -E "^E  " "$OUT/$f.log" | head -8 | cut -c1-300
}
case "${PART:-a}" in
a)
  runf test_gpu_kernels 300 "ew_scalar or ew_select or ew_swiglu or ew_unary_ragged or elementwise_graph"
  runf test_gpu_attention 120 "padding_mask or masked"; runf test_gpu_loss 150 ;;
b)
  runf test_gpu_vision 200; runf test_gpu_encoders 380 ;;
c)
  timeout 200 python3 benchmarks/debug_vit_bmm.py 2>&1 | grep -E "BMM|VIT" | head -12
  MK_COMMIT=${MKC:-unknown} MK_LLAMA_CASES=hfmask:1b,hf:1b MK_TC_MODE=none timeout 300 python3 benchmarks/run.py llama > "$OUT/llama.log" 2>&1
  echo "llama rc=$?"; grep -vE '^\s*$|^\{' "$OUT/llama.log" | tail -8 | cut -c1-250 ;;
esac
echo "total $(el)"
