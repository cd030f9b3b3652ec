#!/usr/bin/env bash
# Kernel durations of two builds by Nsight Compute (no host time in them): chunk_fwd and kkt_solve on a few rows,
# new / old / new / old. Carry .device, .device-bins, .device-bins-old. ROWS="head:seqs ..." to choose the rows.
set -uo pipefail
source benchmarks/device_env.sh
rm -rf /tmp/old && mkdir -p /tmp/old && tar xJf .device-bins-old/torch-cuda.tar.xz -C /tmp/old
mkdir -p /tmp/oldpkg && ln -sfn /tmp/old/torch-cuda /tmp/oldpkg/flashqla
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
ROWS=${ROWS:-"397B-TP1:8192x4 27B-TP1:1x32768 27B-TP1:16384+16384 397B-TP8:1x8192"}
for rep in 1 2; do
  for side in new old; do
    for row in $ROWS; do
      head=${row%%:*}; seqs=${row#*:}
      if [ $side = old ]; then env_="PYTHONPATH=/tmp/oldpkg:$PYTHONPATH FLASHQLA_BINARIES_DIR=/tmp/old/torch-cuda/_binaries"; else env_=""; fi
      for k in chunk_fwd kkt_solve; do
        d=$(env $env_ timeout 120 "$NCU" --clock-control none -k regex:$k --launch-skip 2 --launch-count 1 --section SpeedOfLight \
          python benchmarks/ncu_target.py $head $seqs 2>/dev/null | grep -E "^\s+Duration" | awk '{print $2, $3}')
        echo "$side$rep $head $seqs $k $d" | tee -a "$R/ncu_ab.txt"
      done
    done
  done
done
keep
