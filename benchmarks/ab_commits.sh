#!/bin/bash
# The same benchmark at several commits in one device call (how Session 27 bisected the RMSNorm
# regression: 14 trees in ~440 s). Two steps:
#   here:    bash benchmarks/ab_commits.sh pack f7b5866 3d42f77 HEAD   (writes ab_trees.tgz, untracked; the
#            device's copy of .git may be stale, so the trees travel as files; `WORKTREE` packs the working
#            tree as it is)
#   device:  BENCH='MK_MEMORY_CASES=rmsnorm python3 benchmarks/run.py memory' SHOW=memory \
#            bash benchmarks/ab_commits.sh run [commit ...]   (default: every packed tree, in pack order,
#            then the first and last again)
# `run` builds every tree as a wheel side by side (each in its own build dir), then per commit installs
# its wheel and runs BENCH in that tree with MEGAKITTENS_KERNELS_DIR at its kernels (a wheel carries no
# kernels/). SHOW=<suite> prints that suite's megakittens values from the tree's results JSON after each
# run; the logs go to $OUT/ab_logs.tgz. Remove ab_trees.tgz afterwards (7 MB for 14 trees).
set -u
mode=${1:-}; shift || true
case "$mode" in
  pack)
    root=$(git rev-parse --show-toplevel); tmp=$(mktemp -d)
    for c in "$@"; do
      mkdir -p "$tmp/$c"
      if [ "$c" = WORKTREE ]; then (cd "$root" && git ls-files -z | xargs -0 -I{} cp --parents {} "$tmp/$c/")
      else git -C "$root" archive "$c" | tar -x -C "$tmp/$c"; fi
    done
    printf '%s\n' "$@" > "$tmp/ORDER"
    tar -czf "$root/ab_trees.tgz" -C "$tmp" . && rm -rf "$tmp"
    echo "$root/ab_trees.tgz: $*" ;;
  run)
    : "${BENCH:?set BENCH to the command to run in each tree}"
    t0=$(date +%s); el() { echo "$(( $(date +%s) - t0 )) s"; }
    root=$PWD; trees=/tmp/ab_trees; logs=/tmp/ab_logs; mkdir -p "$trees" "$logs"
    tar -xzf ab_trees.tgz -C "$trees"
    order=$(cat "$trees/ORDER")
    export PYTHONUNBUFFERED=1 MEGAKITTENS_CACHE_DIR=${MEGAKITTENS_CACHE_DIR:-/tmp/mk-cache} logs
    build() { cd "/tmp/ab_trees/$1" && python3 -m pip wheel --no-build-isolation --no-deps -w "/tmp/ab_wheels/$1" . \
      > "$logs/wheel_$1.log" 2>&1 || echo "wheel $1 FAILED"; }
    export -f build
    printf '%s\n' $order | xargs -P "${JOBS:-7}" -I{} bash -c 'build {}'
    echo "wheels built ($(el))"
    runs="$*"; [ -n "$runs" ] || runs="$order $(echo $order | awk '{print $1, $NF}')"
    for c in $runs; do
      python3 -m pip install -q --no-deps --force-reinstall /tmp/ab_wheels/$c/*.whl > "$logs/install_$c.log" 2>&1 \
        || { echo "$c: install FAILED"; continue; }
      # PYTHONSAFEPATH: `python3 -c` / `-m` in the tree would import its source package (no _C) before the wheel.
      (cd "$trees/$c" && PYTHONSAFEPATH=1 MEGAKITTENS_KERNELS_DIR="$trees/$c/kernels" bash -c "$BENCH" \
        > "$logs/bench_$c.log" 2>&1)
      line=""
      if [ -n "${SHOW:-}" ]; then
        line=$(python3 - "$trees/$c/benchmarks/results/$SHOW.json" 2>&1 <<'PY' | tail -1
import json, sys
rows = [r for r in json.load(open(sys.argv[1])) if r["megakittens"] is not None]
print(" | ".join(f"{r['case']}: {r['megakittens']:.4g}" for r in rows))
PY
)
      fi
      echo "[$c $(el)] $line"
    done
    tar -czf "${OUT:-/tmp}/ab_logs.tgz" -C "$logs" . ;;
  *) echo "usage: $0 pack <commit|WORKTREE>... | run [commit ...]" >&2; exit 2 ;;
esac
