#!/bin/bash
# ncu (Nsight Compute) on benchmarks/ncu_case.py cases: `bash benchmarks/ncu_run.sh gemm8k cublas:gemm8k`.
# Clocks as found (--clock-control none, device METHOD.md). Per case: the details page (.txt), the SASS
# with per-instruction stall samples (.sass.csv, SOURCE=1) and the raw metrics (.raw.txt), packed into
# $OUT/ncu.tar.gz (few files come back from the device); a short table of key rates is printed.
#   NCU_SET   ncu --set (default full); NCU_SECTIONS "A B" replaces it with --section A --section B
set -u
OUT=${OUT:-/tmp/mk-out}; mkdir -p "$OUT/ncu"
NCU=${NCU:-ncu}
sel="--set ${NCU_SET:-full}"
if [ -n "${NCU_SECTIONS:-}" ]; then sel=""; for s in $NCU_SECTIONS; do sel="$sel --section $s"; done; fi
for c in "$@"; do
  f=$OUT/ncu/${c//:/_}
  timeout ${NCU_TIMEOUT:-240} $NCU --profile-from-start off --clock-control none $sel --import-source no \
    -o "$f" -f python3 benchmarks/ncu_case.py "$c" > "$f.log" 2>&1
  echo "ncu $c rc=$?"
  $NCU --import "$f.ncu-rep" --page details --print-units base > "$f.txt" 2>&1
  $NCU --import "$f.ncu-rep" --page raw --print-units base > "$f.raw.txt" 2>&1
  [ "${SOURCE:-0}" = 1 ] && $NCU --import "$f.ncu-rep" --page source --print-source sass --csv > "$f.sass.csv" 2>&1
  grep -E "^  [a-z_]+.*\(|Duration|Compute \(SM\) Throughput|L2 Cache Throughput|DRAM Throughput|L2 Hit Rate|Issue Slots Busy|No Eligible|Warp Cycles Per Issued" "$f.txt" | head -14
  grep -E "smsp__average_warp_latency_issue_stalled_[a-z_]+.ratio |smsp__pcsamp_warps_issue_stalled_[a-z_]+ " "$f.raw.txt" \
    | awk '{ if ($NF+0 > 0.05) print }' | sort -k3 -g -r | head -${NCU_STALLS:-12}
done
tar -C "$OUT" -czf "$OUT/ncu.tar.gz" ncu && rm -rf "$OUT/ncu"
