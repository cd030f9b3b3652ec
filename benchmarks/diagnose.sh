#!/usr/bin/env bash
# A diagnostic device call: Nsight Compute on flashqla's two forward kernels (one grid row), the GPU
# tests, and where the GDN layers' prefill time goes (torch.profiler) next to FLA's Triton kernels.
# On the GPU machine (carry .device and build/torch-cuda):  bash benchmarks/diagnose.sh [row_head] [row_seqs]
set -uo pipefail
HEAD=${1:-397B-TP1}; SEQS=${2:-8192x4}
source benchmarks/device_env.sh
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
if [ "${SKIP_NCU:-0}" != 1 ]; then
  timeout 200 "$NCU" --clock-control none -k regex:"kkt|chunk_fwd" --launch-skip 2 --launch-count 2 \
    --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats \
    --section SchedulerStats --section MemoryWorkloadAnalysis --section ComputeWorkloadAnalysis \
    --section SourceCounters python benchmarks/ncu_target.py "$HEAD" "$SEQS" > "$R/ncu.txt" 2>&1
  grep -E "kkt|chunk_fwd|Duration|Registers|Achieved Occupancy|Theoretical Occupancy|Compute \(SM\) Thr|Memory Thr|Stall|No Eligible|Issued Warp" "$R/ncu.txt" | head -60
fi
if [ "${SKIP_TESTS:-0}" != 1 ]; then
  timeout 300 python tests/gpu_entry.py --out "$R/gpu_tests.json" --gpu-only > "$R/gpu_tests.log" 2>&1
  grep -E "^(FAILED|ERROR)|passed|failed" "$R/gpu_tests.log" | tail -15
fi
if [ "${SKIP_LAYERS:-0}" != 1 ]; then
  PROFILE_JSON=$R/profile_flashqla.json timeout 120 python benchmarks/profile_layers.py flashqla 32768 > "$R/profile_flashqla.txt" 2>&1
  FLA_FLASH_QLA=0 PROFILE_JSON=$R/profile_fla.json timeout 150 python benchmarks/profile_layers.py fla 32768 > "$R/profile_fla.txt" 2>&1
  head -30 "$R/profile_flashqla.txt" | cut -c1-150; head -30 "$R/profile_fla.txt" | cut -c1-150
  timeout 120 python benchmarks/bench_layers.py flashqla 32768 --out "$R/layers_flashqla.json" 2>&1 | tail -1
  FLA_FLASH_QLA=0 timeout 150 python benchmarks/bench_layers.py fla 32768 --out "$R/layers_fla.json" 2>&1 | tail -1
fi
tar czf "$OUT/results.tar.gz" -C "$OUT" r && rm -rf "$R"
