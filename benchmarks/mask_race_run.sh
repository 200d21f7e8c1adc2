#!/bin/bash
# The device calls prepared in Sessions 38-41 and not yet (all) run, in three parts of <= 600 s each:
#   PART=a: test_gpu_kernels whole (MK_LANES_ARRIVE=1 is the default since Session 41: kernels/mk/vm.cuh
#           [Note: lanes arrive]), the 10-bit slot ids on the megakernel (test_gpu_compile -k tensor_slots),
#           racecheck of the default on the multi-wave cases.
#   PART=b: the GPU tests of Sessions 38-41's front-end work: the SDPA math path and the zero-padded head dims
#           (test_gpu_sdpa_math), masked Attention, PyTorch's math SDPA, ViT-B (test_gpu_vision), the encoders
#           (BERT / RoBERTa / OPT / DeBERTa-v2 / nn.TransformerEncoder), padded Linear, fp32-id Embeddings, losses.
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
  timeout $to python3 -m pytest -q -m gpu --tb=short "$@" tests/$f.py > "$OUT/$f.log" 2>&1
  echo "$f $* rc=$? $(tail -1 $OUT/$f.log) $(el)"
  grep -E "^(FAILED|ERROR)" "$OUT/$f.log" | head -12 | cut -c1-250
  grep -E "^E  " "$OUT/$f.log" | head -8 | cut -c1-300
}
case "${PART:-a}" in
a)
  runf test_gpu_compile 120 "tensor_slots"
  for c in relu_waves add_waves rms_waves; do
    timeout 60 compute-sanitizer --tool racecheck --error-exitcode 9 --print-limit 20 python3 benchmarks/sanitize.py $c > "$OUT/race_$c.log" 2>&1
    echo "racecheck $c rc=$? $(grep -m1 'RACECHECK SUMMARY' $OUT/race_$c.log | sed 's/.*RACECHECK/RACECHECK/') $(el)"
  done
  runf test_gpu_kernels 380 ;;
b)
  runf test_gpu_sdpa_math 150; runf test_gpu_attention 90 "padding_mask or masked"
  runf test_gpu_eager_attention 60 "math"; runf test_gpu_vision 90; runf test_gpu_encoders 100
  runf test_gpu_gemm 60 "off_tma"; runf test_gpu_simt 60 "float_ids or embedding"; runf test_gpu_loss 60 ;;
c)
  timeout 200 python3 benchmarks/debug_vit_bmm.py 2>&1 | grep -E "BMM|VIT" | head -12
  MK_COMMIT=${MKC:-unknown} MK_LLAMA_CASES=hfmask:1b,hf:1b MK_TC_MODE=none timeout 300 python3 benchmarks/run.py llama > "$OUT/llama.log" 2>&1
  echo "llama rc=$?"; grep -vE '^\s*$|^\{' "$OUT/llama.log" | tail -8 | cut -c1-250 ;;
esac
echo "total $(el)"
