#!/bin/bash
# One device call prepared in Session 38 (not yet run): the GPU re-runs of the masked Attention and sdpa_math
# fixes, the ViT-B diagnostic (benchmarks/debug_vit_bmm.py), racecheck with MK_LANES_ARRIVE=1 on the multi-wave
# cases (kernels/mk/vm.cuh [Note: lanes arrive]), its cost (ab_memory), and the hfmask llama rows.
# Session 39 added the math-SDPA test, test_gpu_vision (the ViT-B failure, if PyTorch picked its math SDPA),
# test_gpu_encoders (BERT / RoBERTa / OPT: fp32 Embedding ids, padded heads) and the padded Linear cases.
# Two device calls (600 s each at most): PART=a (default) builds, runs the GPU tests and racecheck; PART=b the
# ab_memory A/B and the llama rows.
# Usage: MKC=<commit> [PART=b] bash benchmarks/mask_race_run.sh   (logs under $OUT)
set -u
OUT=${OUT:-/tmp/mk-out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 MEGAKITTENS_CACHE_DIR=/tmp/mk-cache
t0=$(date +%s)
python3 -m pip install --no-build-isolation --no-deps -e . > "$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
echo "build $(( $(date +%s) - t0 )) s"
runf() {
  timeout ${2:-300} python3 -m pytest -q -m gpu --tb=short ${3:-} tests/$1.py > "$OUT/$1.log" 2>&1
  echo "$1 rc=$? $(tail -1 $OUT/$1.log) ($(( $(date +%s) - t0 )) s)" >> "$OUT/tests.sum"
  grep -E "^(FAILED|ERROR)" "$OUT/$1.log" | head -12 | cut -c1-250 >> "$OUT/tests.sum"
  grep -E "^E  " "$OUT/$1.log" | head -8 | cut -c1-300 >> "$OUT/tests.sum"
}
if [ "${PART:-a}" = a ]; then
(runf test_gpu_sdpa_math 250; runf test_gpu_attention 250 "-k padding_mask or masked"; runf test_gpu_eager_attention 120 "-k math"
 runf test_gpu_vision 200; runf test_gpu_encoders 200; runf test_gpu_gemm 150 "-k off_tma"; runf test_gpu_simt 150 "-k float_ids or embedding"; runf test_gpu_loss 150; runf test_gpu_kernels 150 "-k ew_select or many_slots"; runf test_gpu_compile 150 "-k tensor_slots"; timeout 200 python3 benchmarks/debug_vit_bmm.py 2>&1 | grep -E "BMM|VIT" | head -12 > "$OUT/vit.txt") &
p2=$!
for c in relu_waves; do
  timeout 60 compute-sanitizer --tool racecheck --error-exitcode 9 --print-limit 20 python3 benchmarks/sanitize.py $c > "$OUT/race0_$c.log" 2>&1
  echo "race(lane0) $c rc=$? $(grep -m1 'RACECHECK SUMMARY' $OUT/race0_$c.log | sed 's/.*RACECHECK/RACECHECK/') ($(( $(date +%s) - t0 )) s)"
done
for c in cat_planes bhsd_to_bshd relu_waves rms_waves; do
  MEGAKITTENS_DEFINES=MK_LANES_ARRIVE=1 timeout 60 compute-sanitizer --tool racecheck --error-exitcode 9 --print-limit 20 python3 benchmarks/sanitize.py $c > "$OUT/race_$c.log" 2>&1
  echo "race(lanes) $c rc=$? $(grep -m1 'RACECHECK SUMMARY' $OUT/race_$c.log | sed 's/.*RACECHECK/RACECHECK/') ($(( $(date +%s) - t0 )) s)"
done
wait $p2
cat "$OUT/tests.sum"; cat "$OUT/vit.txt"
echo "total $(( $(date +%s) - t0 )) s"; exit 0
fi
timeout 110 python3 benchmarks/ab_memory.py --cases rmsnorm,relu --shapes 16384x8192 --variant lane0: --variant lanes:MEGAKITTENS_DEFINES=MK_LANES_ARRIVE=1 --rounds 3 > "$OUT/ab.log" 2>&1
echo "ab rc=$?"; tail -8 "$OUT/ab.log"
MK_COMMIT=${MKC:-unknown} MK_LLAMA_CASES=hfmask:1b,hf:1b MK_TC_MODE=none timeout 200 python3 benchmarks/run.py llama > "$OUT/llama.log" 2>&1
echo "llama rc=$?"; grep -vE '^\s*$|^\{' "$OUT/llama.log" | tail -8 | cut -c1-250
echo "total $(( $(date +%s) - t0 )) s"
