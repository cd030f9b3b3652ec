# Sourced at the start of every device script: package bundle, prebuilt binaries, paths.
# The binaries travel compressed (.device-bins/torch-cuda.tar.xz, made by benchmarks/pack_bins.sh):
# 28 shared libraries that each link the CUDA runtime statically compress ~10x as one xz stream.
if [ -f .device/bootstrap.sh ]; then
  source .device/bootstrap.sh
else  # a later call of a warm machine: the bundle (and FlashInfer, if sent) is already in /tmp/site
  export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 TILELANG_CACHE_DIR=/tmp/tilelang-cache
fi
[ -d /tmp/site/nvidia_cutlass_dsl/dsl_packages ] && export PYTHONPATH=/tmp/site/nvidia_cutlass_dsl/dsl_packages:$PYTHONPATH
if [ -f .device-bins/torch-cuda.tar.xz ]; then
  mkdir -p build && rm -rf build/torch-cuda && tar xJf .device-bins/torch-cuda.tar.xz -C build
fi
export PYTHONPATH=$PWD/torch-ext:$PYTHONPATH
export FLASHQLA_BINARIES_DIR=$PWD/build/torch-cuda/_binaries
