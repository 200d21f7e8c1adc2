#!/bin/bash
export MK_COMMIT=$(cat .mk_commit) PYTHONUNBUFFERED=1 MEGAKITTENS_CACHE_DIR=/tmp/mk-cache
t0=$(date +%s)
python3 -m pip install --no-build-isolation --no-deps -e . > $OUT/build.log 2>&1 || { tail -20 $OUT/build.log; exit 1; }
echo "build $(( $(date +%s) - t0 )) s"
MODES=per_sm python3 benchmarks/timeline.py mlp512 mlp1024 k132 2>&1 | grep -v "^ *mm\|host" | tail -20
MK_BENCH_COMPILE_BUDGET_S=0 python3 benchmarks/run.py mlp > $OUT/mlp.log 2>&1
grep -o "\"case\": \"[^\"]*\"\|megakittens\": [0-9.]*" $OUT/mlp.log | paste - - | head -30
echo "bench done $(( $(date +%s) - t0 )) s"
export PARALLEL=1 FILE_TIMEOUT=330 FILES="test_gpu_kernels test_gpu_gemm test_gpu_simt test_gpu_attention test_gpu_compile test_gpu_llama"
bash benchmarks/gpu_tests_run.sh 2>&1 | grep -v "^build\|^NVIDIA"
echo "total $(( $(date +%s) - t0 )) s"
