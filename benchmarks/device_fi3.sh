#!/usr/bin/env bash
# Third of the three back-to-back FlashInfer calls: finish unpacking its CUTLASS DSL, then the full
# 48-row grid, one library at a time (each writes its JSON after every row; merge with
# benchmarks/merge_results.py): FlashInfer, flashqla, FLA Triton, then FlashQLA with the time left.
# PLACEMENTS=P times every row at P memory placements (bench_prefill.py --placements; P times longer); a
# LIB_LIMITS entry library:seconds:P sets P for that library alone.
# Carry [".device-fi/cdsl.part.ab", ".device-bins"] on a machine warm from the first two calls.
set -uo pipefail
# (a later call on the same machine has it unpacked already and carries no part)
[ -f /tmp/stage/cdsl.part.aa ] && cat /tmp/stage/cdsl.part.aa .device-fi/cdsl.part.ab | xz -d | tar -C /tmp/site -xf - \
  && rm -f /tmp/stage/cdsl.part.aa
source benchmarks/device_env.sh
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$R/nvidia-smi.txt"
python -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)" > "$R/versions.txt"
warm_up
for spec in ${LIB_LIMITS:-flashinfer:130 flashqla:100 fla:170 flash_qla:150}; do  # library:seconds[:placements]
  IFS=: read -r lib t p <<< "$spec"
  env $( [ $lib = fla ] && echo FLA_FLASH_QLA=0 ) timeout $t python benchmarks/bench_prefill.py --lib $lib \
    --rows all --rep ${REP:-40} --placements ${p:-${PLACEMENTS:-1}} --out "$R/bench_$lib.json" 2>&1 | grep -E "^$lib " | tail -2
  keep
done
