#!/bin/bash
# Session 42: what the dst release's MEMBAR costs. MK_RELEASE_RELAXED=1 (kernels/mk/vm.cuh, timing only) adds
# to the dst barriers without it; timelines of small Gemm chains and the HF 1B, alternating with the default.
# Usage: [ROUNDS=2] [AB_ROUNDS=5 (0: no HF 1B)] bash benchmarks/release_ab.sh   (logs under $OUT; a short summary on stdout)
set -u
OUT=${OUT:-/tmp/mk-out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 MEGAKITTENS_CACHE_DIR=/tmp/mk-cache
t0=$(date +%s)
el() { echo "($(( $(date +%s) - t0 )) s)"; }
python3 -m pip install --no-build-isolation --no-deps -e . > "$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
echo "build $(el)"
short() {  # launch time, per-SM interval and the store-side phases of timeline.py's summary lines
  python3 -c '
import re, sys
for line in sys.stdin:
    if not re.match(r"^(mlp|o8b|gemm|tiny)", line): continue
    keep = [p.strip() for p in line.split("|") if re.match(r"\s*(\w+ +\w+ +n=|per-SM|stored|complete|release|total|compute|inputs)", p)]
    print(" | ".join(keep)[:330])'
}
for r in $(seq 1 ${ROUNDS:-2}); do
  for v in 0 1; do
    MEGAKITTENS_DEFINES=MK_RELEASE_RELAXED=$v MODES=per_sm timeout 150 python3 benchmarks/timeline.py tiny mlp512 mlp1024 o8b \
      > "$OUT/tl_${v}_$r.log" 2>&1
    echo "== relaxed=$v round $r rc=$? $(el)"; short < "$OUT/tl_${v}_$r.log"
  done
done
if [ "${AB_ROUNDS:-5}" != 0 ]; then
  timeout 330 python3 benchmarks/ab_fuse.py hf:1b MEGAKITTENS_DEFINES=MK_RELEASE_RELAXED=1 ${AB_ROUNDS:-5} > "$OUT/ab_1b.log" 2>&1
  echo "ab_fuse hf:1b rc=$? $(el)"; tail -5 "$OUT/ab_1b.log" | cut -c1-300
fi
echo "total $(el)"
