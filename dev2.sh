#!/bin/bash
export MK_COMMIT=$(cat .mk_commit) PYTHONUNBUFFERED=1 MEGAKITTENS_CACHE_DIR=/tmp/mk-cache
t0=$(date +%s)
python3 -m pip install --no-build-isolation --no-deps -e . > $OUT/build.log 2>&1 || { tail -20 $OUT/build.log; exit 1; }
echo "build $(( $(date +%s) - t0 )) s"
python3 benchmarks/run.py memory > $OUT/memory.log 2>&1; echo "memory rc=$? $(( $(date +%s) - t0 )) s"
python3 - <<'PY'
import json, os
for r in json.load(open(os.environ["OUT"] + "/memory.json")):
    print(f"{r['case'][:48]:48s} {r['megakittens']:8.1f} eager {r['baselines'].get('eager') or 0:8.1f} pct {r.get('pct_of_copy') or 0:5.1f} call_ms {r.get('mk_call_ms') or 0:.4f} ms {r.get('mk_ms') or 0:.4f}")
PY
for v in 0 1; do echo "== BIAS_PREFETCH=$v"; MEGAKITTENS_DEFINES=MK_GEMM_BIAS_PREFETCH=$v MODES=per_sm python3 benchmarks/timeline.py mlp512 mlp1024 2>&1 | grep -v "^ *mm\|host"; done
for v in 1 2; do echo "== EARLY_RELEASE=$v"; MEGAKITTENS_DEFINES=MK_GEMM_EARLY_RELEASE=$v MODES=per_sm python3 benchmarks/timeline.py k128 mlp1024 2>&1 | grep -v "^ *mm\|host"; done
echo "== default k128"; MODES=per_sm python3 benchmarks/timeline.py k128 2>&1 | grep -v "^ *mm\|host"
OUT= MK_BENCH_COMPILE_BUDGET_S=0 python3 benchmarks/run.py mlp 2>&1 | grep -o "\"case\": \"[^\"]*\"\|megakittens\": [0-9.]*" | paste - - | head -30
echo "bench done $(( $(date +%s) - t0 )) s"
timeout 200 python3 -m pytest -q -m gpu tests/test_gpu_gemm.py -k "flags or linear or mlp or split_k" > $OUT/gemm.log 2>&1 & 
timeout 200 python3 -m pytest -q -m gpu tests/test_gpu_simt.py -k "rope" > $OUT/simt.log 2>&1 &
wait
tail -1 $OUT/gemm.log; grep "^FAILED" $OUT/gemm.log | head; tail -1 $OUT/simt.log; grep "^FAILED" $OUT/simt.log | head
for tool in memcheck synccheck; do timeout 90 compute-sanitizer --tool $tool python3 benchmarks/sanitize.py > $OUT/$tool.log 2>&1; echo "$tool rc=$? $(grep -c '^ok' $OUT/$tool.log) $(grep -m1 'ERROR SUMMARY' $OUT/$tool.log)"; done
echo "total $(( $(date +%s) - t0 )) s"
