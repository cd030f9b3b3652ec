"""Build one chunk_fwd spec as a diagnostic variant into <out>/_binaries (wrong outputs allowed).

python benchmarks/build_diag.py SPEC_NAME OUT_DIR   (then python -m flashqla_kernels.build --skip-compile --out OUT_DIR)
With a patch that reads FLASHQLA_FUSED_DIAG (e.g. results/2026-11-27-h100-s35/fused_inverse_loo/inverse_diag.patch)
applied and that variable set; lowered with TileLang's buffer-initialisation check off, since a skipped phase leaves
a tile unwritten.
"""
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
