#!/usr/bin/env bash
# Second of the three back-to-back FlashInfer calls: stage the first half of its CUTLASS DSL, then (while the
# machine is held) the accuracy of flashqla and FlashQLA against the float64 recurrence.
# Carry [".device-fi/cdsl.part.aa", ".device-bins"] on a machine warm from the first call.
set -uo pipefail
mkdir -p /tmp/stage && cp .device-fi/cdsl.part.aa /tmp/stage/
source benchmarks/device_env.sh
timeout 200 python benchmarks/accuracy.py --out "$R/accuracy.json" 2>&1 | grep -v Warn | grep -E "^(1x|ragged)" | cut -c1-300
keep
