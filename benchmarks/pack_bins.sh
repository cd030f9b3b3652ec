#!/usr/bin/env bash
# Pack build/torch-cuda for a device call (carry .device-bins): one xz stream dedups the static runtimes.
set -euo pipefail
mkdir -p .device-bins
tar cf - -C build torch-cuda | xz -T0 -6 > .device-bins/torch-cuda.tar.xz
du -h .device-bins/torch-cuda.tar.xz
