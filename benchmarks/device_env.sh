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

# Steps shared by the device scripts (each writes under $OUT/r; `keep` packs what exists so far).
R=$OUT/r; mkdir -p "$R"
keep() { tar czf "$OUT/results.tar.gz" -C "$OUT" r; }
kernel_tests() {  # the fused-forward kernel tests on poisoned outputs: the fast correctness gate
  FLASHQLA_POISON=1 timeout ${1:-120} python -m pytest -q -m gpu -p no:cacheprovider tests/test_gpu_kernels.py \
    > "$R/kernel_tests.log" 2>&1; tail -2 "$R/kernel_tests.log"
}
quick_rows() {  # flashqla's quick rows with the kkt_solve time alone; extra env (e.g. FLASHQLA_BLOCK_V=64) in $1
  env ${1:-} timeout 120 python benchmarks/bench_prefill.py --lib flashqla --rows quick --rep 50 --breakdown \
    --out "$R/quick_flashqla${2:-}.json" 2>&1 | grep -v Warn
}
gpu_tests() {  # every GPU test (tests/gpu_entry.py: poisoned outputs, SASS checks)
  timeout ${1:-300} python tests/gpu_entry.py --out "$R/gpu_tests.json" --gpu-only > "$R/gpu_tests.log" 2>&1
  grep -E "^(FAILED|ERROR)|passed|failed|per-token" "$R/gpu_tests.log" | tail -10
}
layers_side_by_side() {  # the GDN layer stack, flashqla then FLA's Triton kernels; $1 = "32768" or "512 --decode-only"
  local tag=$(echo "$1" | tr -d ' -')
  timeout 100 python benchmarks/bench_layers.py flashqla $1 --out "$R/layers_flashqla_$tag.json" 2>&1 | tail -1
  FLA_FLASH_QLA=0 timeout 120 python benchmarks/bench_layers.py fla $1 --out "$R/layers_fla_$tag.json" 2>&1 | tail -1
}
compile_test() {  # the deep-model torch.compile test on the kernels, one family ($1, default qwen3_5)
  timeout 200 python -m pytest -q -m gpu -p no:cacheprovider -rA \
    "tests/test_layers_compile_gpu.py::test_deep_model_compiles_to_kernel_nodes[${1:-qwen3_5}]" \
    > "$R/compile_test.log" 2>&1; tail -2 "$R/compile_test.log"
}
warm_up() {  # discarded: the first process of a fresh machine times its short (host-bound) rows up to 2x slow
  timeout 30 python benchmarks/bench_prefill.py --lib flashqla --rows quick --rep 20 --out /tmp/warmup.json > /dev/null 2>&1
}
unpack_baseline() {  # the baseline's pack (.device-bins-old) into /tmp/old, importable as `flashqla` from /tmp/oldpkg;
  # a fresh copy every call (a warm machine keeps /tmp); no pack or manifest: stop, never time without the baseline
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$R/nvidia-smi.txt"
  rm -rf /tmp/old && mkdir -p /tmp/old && tar xJf .device-bins-old/torch-cuda.tar.xz -C /tmp/old \
    && [ -f /tmp/old/torch-cuda/_binaries/manifest.json ] || { echo "no baseline binaries in .device-bins-old"; exit 2; }
  mkdir -p /tmp/oldpkg && ln -sfn /tmp/old/torch-cuda /tmp/oldpkg/flashqla
}
timeline_line() {  # one line of a timeline JSON ($1) under a label ($2): each row's span and its kernels' durations (us)
  python - "$1" "$2" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
print(sys.argv[2], " ".join(f"{r['head']}/{r['seqs']}={r['span_us']:.1f}|" + ",".join(f"{k.split(':')[1]}:{v['dur_us']:.1f}" for k, v in r['kernels'].items()) for r in d['rows']))
PY
}
