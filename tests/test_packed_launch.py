"""The packed launch entry (`call_packed`, flashqla_kernels/aot.py) passes every argument to `call` unchanged.

The runtime launches through `call_packed` (one buffer of 8-byte slots, two ctypes arguments) instead of `call`
(one ctypes conversion per argument). A wrong slot order or width would hand a kernel a wrong pointer or size,
so this test compiles a host-only stand-in for a generated source through the same steps as the ahead-of-time
build (`add_packed_entry`, `cache_driver_entry_points`, nvcc), loads it with the runtime's loader and checks that
`call` saw exactly the values given: pointers above 2^32, negative int32, int64 and float arguments, the stream.
Needs nvcc and TileLang's headers (present wherever the kernels are built, CI included); no GPU.
"""

import ctypes
import importlib.util
import shutil
import struct
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

FAKE_SOURCE = r"""
#include <cuda_runtime.h>
#include <stdint.h>
#define TL_EXPORT __attribute__((visibility("default")))
static char error_buf[64];
static uint64_t seen[8];

extern "C" TL_EXPORT const char* get_last_error() { return error_buf; }
extern "C" TL_EXPORT int init() { return 0; }
extern "C" TL_EXPORT const uint64_t* seen_args() { return seen; }

extern "C" TL_EXPORT int call(float* __restrict__ x, int* __restrict__ y, int n, int64_t m, float s, int k, cudaStream_t stream=cudaStreamDefault) {
  seen[0] = (uint64_t)(uintptr_t)x;
  seen[1] = (uint64_t)(uintptr_t)y;
  seen[2] = (uint64_t)(int64_t)n;
  seen[3] = (uint64_t)m;
  double d = s;
  __builtin_memcpy(&seen[4], &d, 8);
  seen[5] = (uint64_t)(int64_t)k;
  seen[6] = (uint64_t)(uintptr_t)stream;
  return n == 7 ? 1 : 0;
}
"""


def _have_build_tools() -> str | None:
    if importlib.util.find_spec("tilelang") is None:
        return "tilelang is not installed (build-time dependency)"
    if not (shutil.which("nvcc") or Path("/usr/local/cuda/bin/nvcc").exists()):
        return "nvcc is not available"
    return None


@pytest.fixture(scope="module")
def fake_binary(tmp_path_factory):
    reason = _have_build_tools()
    if reason:
        pytest.skip(reason)
    import sys

    sys.path.insert(0, str(REPO))
    from flashqla_kernels.aot import add_packed_entry, cache_driver_entry_points, compile_source, parse_call_signature

    source = add_packed_entry(cache_driver_entry_points(FAKE_SOURCE))
    lib = tmp_path_factory.mktemp("packed") / "fake.so"
    version_script = "{ global: init; call; call_packed; get_last_error; seen_args; local: *; };\n"
    import flashqla_kernels.aot as aot

    saved = aot._VERSION_SCRIPT
    aot._VERSION_SCRIPT = version_script  # the stand-in also exports what `call` saw
    try:
        compile_source(source, lib, keep_source=False)
    finally:
        aot._VERSION_SCRIPT = saved
    return lib, parse_call_signature(source)


def test_packed_entry_passes_every_argument(fake_binary):
    from flashqla import loader

    lib_path, args = fake_binary
    assert [a["kind"] for a in args] == ["ptr", "ptr", "i32", "i64", "f32", "i32", "stream"]
    entry = {"name": "fake", "kernel": "fake", "params": {}, "library": lib_path.name, "args": args}
    binary = loader.Binary(lib_path, entry)
    assert binary._packed is not None, "call_packed is not exported"
    values = (0x7F12_3456_7890, 0x1_0000_0010, -5, -(1 << 40), 0.375, 2**31 - 1)
    binary(*values, stream=0x5_0000_0008)
    binary.lib.seen_args.restype = ctypes.POINTER(ctypes.c_uint64)
    seen = binary.lib.seen_args()
    got = [seen[i] for i in range(7)]
    as_signed = lambda u: struct.unpack("<q", struct.pack("<Q", u))[0]  # noqa: E731
    assert got[0] == values[0] and got[1] == values[1]
    assert as_signed(got[2]) == -5 and as_signed(got[3]) == -(1 << 40)
    assert struct.unpack("<d", struct.pack("<Q", got[4]))[0] == 0.375
    assert got[5] == 2**31 - 1 and got[6] == 0x5_0000_0008


def test_packed_entry_reports_failure(fake_binary):
    """A non-zero status from `call` reaches the caller as an error naming the binary."""
    from flashqla import loader

    lib_path, args = fake_binary
    binary = loader.Binary(lib_path, {"name": "fake", "kernel": "fake", "params": {}, "library": lib_path.name,
                                      "args": args})
    with pytest.raises(RuntimeError, match="launch of fake failed"):
        binary(1, 2, 7, 0, 1.0, 0, stream=0)
