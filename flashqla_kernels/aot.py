"""Lower a TileLang prim_func ahead of time to a C-ABI shared library for sm_90a.

The library exports four symbols and nothing else (a linker version script hides the rest):

    const char* get_last_error();
    int init();                                   // sets the dynamic shared-memory limit
    int call(<pointers and scalars...>, cudaStream_t stream);
    int call_packed(const unsigned char* args, cudaStream_t stream);   // the same, arguments in 8-byte slots

The CUDA runtime is linked statically and the driver is reached through cudaGetDriverEntryPoint
(looked up once per process, see `cache_driver_entry_points`), so the binary needs only the NVIDIA driver
at run time: no TileLang, no compiler, no torch C++ ABI. The argument list of `call` is recorded in the
manifest so the runtime can build a ctypes signature (and `call_packed`'s slot layout).
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from .inverse_regs_cuda import CUDA_HELPERS as INVERSE_REGS_HELPERS

TARGET = {"kind": "cuda", "arch": "sm_90a"}
GENCODE = "arch=compute_90a,code=sm_90a"

_VERSION_SCRIPT = "{ global: init; call; call_packed; get_last_error; local: *; };\n"

# C types that appear in TileLang's generated `call(...)` signature, mapped to the names the
# runtime loader understands.
_CTYPE_KIND = {
    "bfloat16_t*": "ptr",
    "half_t*": "ptr",
    "float*": "ptr",
    "int*": "ptr",
    "int64_t*": "ptr",
    "signed char*": "ptr",
    "unsigned char*": "ptr",
    "bool*": "ptr",
    "int": "i32",
    "int64_t": "i64",
    "float": "f32",
}


@dataclass
class CompiledKernel:
    name: str
    library: Path
    args: list[dict] = field(default_factory=list)
    source_sha256: str = ""
    ptxas: dict = field(default_factory=dict)  # ptxas_report of its compile


_PTXAS_REGS = re.compile(r"Used (\d+) registers")
_PTXAS_SPILL = re.compile(r"(\d+) bytes spill stores, (\d+) bytes spill loads")


def ptxas_report(log: str) -> dict:
    """What `ptxas -v` said of a kernel's device code: registers a thread (the largest function's), spill stores and
    loads in bytes (summed), and its "wgmma ... serialized" infos (C7512 / C7514 / C7518: ptxas serialised every
    wgmma of the function, which still builds and runs, 6-13% slower in session 45's measurements)."""
    regs = [int(m) for m in _PTXAS_REGS.findall(log)]
    spills = [(int(a), int(b)) for a, b in _PTXAS_SPILL.findall(log)]
    return {"registers": max(regs, default=0), "spill_stores": sum(a for a, _ in spills),
            "spill_loads": sum(b for _, b in spills),
            "wgmma_serialised": [line.split("ptxas info    : ")[-1].strip() for line in log.splitlines()
                                 if "wgmma" in line and "serialized" in line]}


def find_nvcc() -> str:
    for cand in (os.environ.get("NVCC"), shutil.which("nvcc"), "/usr/local/cuda/bin/nvcc"):
        if cand and Path(cand).exists():
            return cand
    raise RuntimeError("nvcc not found: install a CUDA toolkit >= 12.8 or set NVCC=/path/to/nvcc")


def lower_to_source(prim_func, pass_configs: dict | None = None, manual_fences: bool = False) -> str:
    """TileLang prim_func -> complete CUDA source (device kernel + C-ABI host wrapper).

    manual_fences: skip TileLang's InjectFenceProxy pass (it has no switch; its module attribute is swapped for
    an identity pass while lowering). For kernels that place every needed fence.proxy.async themselves: the pass
    fences any generic shared-memory write before any later wgmma or TMA, and a fence waits for every memory
    operation its thread has in flight (global loads and stores included).
    """
    import contextlib

    import tilelang.cuda.transform as tl_cuda_transform
    from tilelang import tvm
    from tilelang.engine.lower import lower
    from tilelang.jit.adapter.wrapper import TLWrapper
    from tvm.target import Target

    @contextlib.contextmanager
    def fence_pass_skipped():
        original = tl_cuda_transform.InjectFenceProxy
        tl_cuda_transform.InjectFenceProxy = lambda: (lambda mod: mod)
        try:
            yield
        finally:
            tl_cuda_transform.InjectFenceProxy = original

    target = Target(TARGET)
    pass_configs = dict(pass_configs or {})
    with tvm.transform.PassContext(opt_level=3, config=pass_configs), target, \
            (fence_pass_skipped() if manual_fences else contextlib.nullcontext()):
        artifact = lower(prim_func, target=target)
    wrapper = TLWrapper(target)
    wrapper.assign_optimized_module(tvm.IRModule({prim_func.attrs["global_symbol"]: prim_func}))
    wrapper.assign_pass_configs(pass_configs)
    wrapper.assign_host_module(artifact.host_mod)
    wrapper.assign_device_module(artifact.device_mod)
    return add_packed_entry(cache_driver_entry_points(add_device_helpers(wrapper.wrap(artifact.kernel_source))))


# Device helpers that kernels call by name (T.call_extern) where TileLang has no builtin, defined in the generated
# source before the first kernel when it calls them.
_DEVICE_HELPERS = {
    "flashqla_prefetch_l2": """
// bytes (a multiple of 16) from a 16-byte aligned global address into L2, asynchronously (one bulk operation)
__device__ __forceinline__ void flashqla_prefetch_l2(const void* ptr, unsigned int bytes) {
  asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" :: "l"(ptr), "r"(bytes) : "memory");
}
""",
    "flashqla_inv_diag": INVERSE_REGS_HELPERS,  # chunk_fwd's inverse_form "regs" (inverse_regs.py)
    # chunk_fwd's hand-over of P (p_ready_arrive / p_ready_wait): named barrier `id` of n threads
    "flashqla_bar_arrive": """
// named barrier id of n threads: arrive without waiting
__device__ __forceinline__ void flashqla_bar_arrive(int id, int n) {
  asm volatile("bar.arrive %0, %1;" :: "r"(id), "r"(n) : "memory");
}
""",
    "flashqla_bar_sync": """
// named barrier id of n threads: arrive and wait for all n
__device__ __forceinline__ void flashqla_bar_sync(int id, int n) {
  asm volatile("bar.sync %0, %1;" :: "r"(id), "r"(n) : "memory");
}
""",
}


def add_device_helpers(source: str) -> str:
    """The generated source with the definitions of the `_DEVICE_HELPERS` it calls inserted before its first
    kernel declaration; unchanged if it calls none."""
    used = [body for name, body in _DEVICE_HELPERS.items() if name + "(" in source]
    if not used:
        return source
    at = source.index('extern "C" __global__')
    return source[:at] + "".join(used) + "\n" + source[at:]


# TileLang's host wrapper encodes each TMA descriptor through CUTLASS's driver wrapper, which asks
# cudaGetDriverEntryPoint for cuTensorMapEncodeTiled on every call: once per descriptor per launch (six per
# chunk_fwd launch, two per kkt_solve). This stand-in looks the entry point up once per process.
_ENCODE_TILED_CALL = "CUTLASS_CUDA_DRIVER_WRAPPER_CALL(cuTensorMapEncodeTiled)"
_ENCODE_TILED_CACHED = r"""
// flashqla: cuTensorMapEncodeTiled's driver entry point, looked up once per process (thread-safe static)
using flashqla_encode_tiled_fn = decltype(&::cuTensorMapEncodeTiled);
static flashqla_encode_tiled_fn flashqla_encode_tiled_entry() {
  static const flashqla_encode_tiled_fn entry = [] {
    void* pfn = nullptr;
    cudaDriverEntryPointQueryResult status;
#if __CUDACC_VER_MAJOR__ > 12
    cudaError_t err = cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &pfn, 12000, cudaEnableDefault,
                                                       &status);
#else
    cudaError_t err = cudaGetDriverEntryPoint("cuTensorMapEncodeTiled", &pfn, cudaEnableDefault, &status);
#endif
    return (err == cudaSuccess && status == cudaDriverEntryPointSuccess)
               ? reinterpret_cast<flashqla_encode_tiled_fn>(pfn) : nullptr;
  }();
  return entry;
}
template <typename... Args>
static CUresult flashqla_encode_tiled(Args... args) {
  flashqla_encode_tiled_fn entry = flashqla_encode_tiled_entry();
  return entry ? entry(args...) : CUDA_ERROR_UNKNOWN;
}
"""


def cache_driver_entry_points(source: str) -> str:
    """The generated source with its per-call driver entry-point lookups replaced by one cached lookup
    (`flashqla_encode_tiled`, defined before the first exported function); unchanged if it encodes no TMA map."""
    if _ENCODE_TILED_CALL not in source:
        return source
    head, sep, tail = source.partition('extern "C" TL_EXPORT')
    if not sep:
        raise RuntimeError("generated source has no exported host function")
    return head + _ENCODE_TILED_CACHED + "\n" + sep + tail.replace(_ENCODE_TILED_CALL, "flashqla_encode_tiled")


# `call_packed`: `call` with its arguments in consecutive 8-byte slots (pointers and integers as 64-bit
# integers, floats as doubles), so that the runtime passes two ctypes arguments instead of one per kernel
# argument (ctypes converts each declared argument on every call: ~4 us a launch for chunk_fwd's 19).
_SLOT_READ = {"ptr": "({ctype})(uintptr_t)flashqla_slot_u64(args, {i})",
              "i32": "(int)(int64_t)flashqla_slot_u64(args, {i})",
              "i64": "(int64_t)flashqla_slot_u64(args, {i})",
              "f32": "(float)flashqla_slot_f64(args, {i})"}


def add_packed_entry(source: str) -> str:
    """The generated source with `call_packed` appended: it reads `call`'s arguments from 8-byte slots (the order
    of :func:`parse_call_signature`, the stream apart) and calls `call`."""
    args = [a for a in parse_call_signature(source) if a["kind"] != "stream"]
    reads = ", ".join(_SLOT_READ[a["kind"]].format(ctype=a.get("ctype", ""), i=i) for i, a in enumerate(args))
    return source + f"""
static inline uint64_t flashqla_slot_u64(const unsigned char* args, int i) {{
  uint64_t u;
  __builtin_memcpy(&u, args + 8 * i, 8);
  return u;
}}
static inline double flashqla_slot_f64(const unsigned char* args, int i) {{
  double d;
  __builtin_memcpy(&d, args + 8 * i, 8);
  return d;
}}
extern "C" TL_EXPORT int call_packed(const unsigned char* args, cudaStream_t stream) {{
  return call({reads}{", " if reads else ""}stream);
}}
"""


def parse_call_signature(source: str) -> list[dict]:
    """Read the argument list of the exported `call` from the generated source."""
    m = re.search(r'extern "C" TL_EXPORT int call\(([^)]*)\)', source)
    if not m:
        raise RuntimeError("generated source has no `call` entry point")
    args = []
    for raw in m.group(1).split(","):
        raw = raw.split("=")[0].replace("__restrict__", " ").strip()
        raw = re.sub(r"\s+", " ", raw).replace(" *", "*")
        ctype, name = raw.rsplit(" ", 1)
        if name.startswith("*"):
            ctype, name = ctype + "*", name[1:]
        if ctype == "cudaStream_t":
            args.append({"name": name, "kind": "stream"})
            continue
        if ctype not in _CTYPE_KIND:
            raise RuntimeError(f"unsupported argument type {ctype!r} for {name!r} in `call`")
        args.append({"name": name, "kind": _CTYPE_KIND[ctype], "ctype": ctype})
    return args


def compile_source(source: str, out_path: Path, fast_math: bool = True, keep_source: bool = True) -> dict:
    """nvcc the generated source into a self-contained shared library; returns `ptxas_report` of the compile (nvcc's
    output is kept, not printed, so no -w: that flag also hid ptxas's serialisation infos)."""
    import tilelang

    tl_root = Path(tilelang.__file__).parent
    includes = [tl_root / "3rdparty" / "cutlass" / "include", tl_root / "src"]
    out_path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        cu = Path(tmp) / (out_path.stem + ".cu")
        cu.write_text(source)
        vs = Path(tmp) / "exports.map"
        vs.write_text(_VERSION_SCRIPT)
        cmd = [
            find_nvcc(), "-std=c++20", "-O3", "-Xptxas", "-v", "-Xcudafe", "--diag_suppress=177", "-lineinfo",
            "--shared", "--compiler-options", "-fPIC", "-gencode", GENCODE, "-cudart", "static",
            f"-Xlinker=--version-script={vs}", *[f"-I{p}" for p in includes], str(cu), "-o", str(out_path),
        ]
        if fast_math:
            cmd.append("--use_fast_math")
        res = subprocess.run(cmd, capture_output=True, text=True)
        if res.returncode != 0:
            raise RuntimeError(f"nvcc failed for {out_path.name}:\n{res.stdout}\n{res.stderr}")
    if keep_source:
        out_path.with_suffix(".cu").write_text(source)
    return ptxas_report(res.stdout + res.stderr)


def build_kernel(name: str, prim_func, out_dir: Path, pass_configs: dict | None = None,
                 manual_fences: bool = False) -> CompiledKernel:
    source = lower_to_source(prim_func, pass_configs, manual_fences)
    lib = out_dir / f"{name}.so"
    report = compile_source(source, lib)
    return CompiledKernel(
        name=name,
        library=lib,
        args=parse_call_signature(source),
        source_sha256=hashlib.sha256(source.encode()).hexdigest(),
        ptxas=report,
    )


def build_spec(spec, out_dir: Path) -> CompiledKernel:
    """Compile one specialisation of specs.py (its program, lowered with the fence policy the spec asks for)."""
    from .specs import manual_fences, manual_syncs, program_for

    configs = {"tl.disable_thread_storage_sync": True} if manual_syncs(spec) else None
    return build_kernel(spec.name, program_for(spec), out_dir, pass_configs=configs, manual_fences=manual_fences(spec))
