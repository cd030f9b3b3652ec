"""Build one diagnostic chunk_fwd spec (FLASHQLA_FUSED_DIAG set) into <out>/_binaries and rewrite the hub layout."""
import sys, shutil
from pathlib import Path
from flashqla_kernels import specs, aot
from flashqla_kernels.chunk_fwd import chunk_fwd_program
name, out = sys.argv[1], Path(sys.argv[2])
spec = [s for s in specs.all_specs() if s.name == name][0]
cfg = {"tl.disable_thread_storage_sync": True, "tl.disable_buffer_init_check": True}
src = aot.lower_to_source(chunk_fwd_program(**spec.kwargs()), cfg, True)
aot.compile_source(src, out / "_binaries" / f"{name}.so")
print("built", name)
