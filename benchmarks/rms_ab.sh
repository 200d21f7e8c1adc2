#!/bin/bash
# Session 9's last device call: RMSNorm bandwidth with and without MK_RMS_GLOBAL_WEIGHT, same process tree,
# then the RMSNorm GPU tests under the switch.
OUT=${OUT:-/tmp/mk-out}; mkdir -p "$OUT"; export MEGAKITTENS_CACHE_DIR=/tmp/mk-cache
python3 -m pip install --no-build-isolation --no-deps -e . > "$OUT/build.log" 2>&1 || { tail -20 "$OUT/build.log"; exit 1; }
show() { python3 -c "import json,sys; [print(sys.argv[1], r['case'], round(r['megakittens']), round(r['pct_of_copy'],1)) for r in json.load(open('$OUT/memory.json')) if 'rmsnorm' in r['case'] or 'copy' in r['case']]" "$1"; }
python3 benchmarks/run.py memory > "$OUT/mem_base.log" 2>&1; show base; cp "$OUT/memory.json" "$OUT/memory_base.json"
MEGAKITTENS_DEFINES=MK_RMS_GLOBAL_WEIGHT python3 benchmarks/run.py memory > "$OUT/mem_gw.log" 2>&1; show global_weight
MEGAKITTENS_DEFINES=MK_RMS_GLOBAL_WEIGHT timeout 120 python3 -m pytest -q -m gpu tests/test_gpu_kernels.py -k "rms or chain" 2>&1 | tail -2
