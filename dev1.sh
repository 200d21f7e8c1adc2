#!/bin/bash
# session 14: MODE=bench (rmsnorm A/B, mlp/chain, timeline, racecheck) or MODE=tests (all GPU files in parallel)
export MK_COMMIT=$(cat .mk_commit) PYTHONUNBUFFERED=1 MEGAKITTENS_CACHE_DIR=/tmp/mk-cache
if [ "$MODE" = bench ]; then
export BENCH='for p in 3 2 1; do for s in 1 0; do [ $p = 3 ] && [ $s = 0 ] && continue; echo "== pages=$p spread=$s"; MEGAKITTENS_PROFILE=rms_norm_pages=$p MEGAKITTENS_DEFINES=MK_RMS_SPREAD=$s MK_MEMORY_CASES=rmsnorm MK_MEMORY_SHAPES=16384x8192 OUT= python3 benchmarks/run.py memory 2>&1 | grep -io "\"case\": \"[^\"]*\"\|pct_of_copy\": [0-9.]*\|rror.*"; done; done; OUT= MK_BENCH_COMPILE_BUDGET_S=0 python3 benchmarks/run.py chain mlp 2>&1 | grep -io "\"case\": \"[^\"]*\"\|megakittens\": [0-9.]*\|cuda_graph_of_eager\": [0-9.]*\|rror.*"; MODES=per_sm python3 benchmarks/timeline.py mlp512 mlp1024 rms16k 2>&1 | tail -70'
export BENCH_LINES=200 FILES=" "
bash benchmarks/gpu_tests_run.sh
timeout 120 compute-sanitizer --tool racecheck python3 benchmarks/sanitize.py > $OUT/racecheck.log 2>&1; echo "racecheck rc=$? $(grep -m1 'ERROR SUMMARY\|RACECHECK SUMMARY' $OUT/racecheck.log)"; grep -c "^ok" $OUT/racecheck.log
else
export PARALLEL=1 FILE_TIMEOUT=480
bash benchmarks/gpu_tests_run.sh
fi
