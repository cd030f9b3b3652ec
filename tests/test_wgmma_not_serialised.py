"""ptxas must not serialise chunk_fwd's wgmma (no GPU needed: nvcc compiles the kept sources to a cubin).

When ptxas cannot prove an accumulator or an A operand untouched while its wgmma runs, or when a wgmma issued on one
branch is awaited on another, it serialises every wgmma of the kernel (info C7512 / C7514 / C7518) and still builds
it: the kernel is correct and 6-13% slower. Session 42's and session 45's first tries of issuing the next chunk's
K K^T early measured exactly that and were read as the idea's cost (results/2026-11-28-h100-s45). This test compiles
the sources the build keeps (<repo>/build/_binaries/*.cu, or FLASHQLA_BINARIES_DIR) of chunk_fwd's 128-wide specs
that the runtime takes by default on Hopper: the split path and the fused variant with the register inverse, whose
auxiliary warpgroup issues each chunk's K K^T during the chunk before (merged_producer). Since then the build itself
keeps `ptxas -v`'s reading of every kernel in the manifest ("ptxas": registers, spills, serialisation infos) and
warns on serialisation; the last test here reads it for every kernel.
"""

import os
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SPECS = (
    "chunk_fwd__block_v-128__dtype-bf16__fused_inverse-0__persistent-0__use_l2norm-0",
    "chunk_fwd__block_v-128__dtype-bf16__fused_inverse-1__inverse_form-regs__persistent-0__use_l2norm-0",
    "chunk_fwd__block_v-128__dtype-fp16__fused_inverse-1__inverse_form-regs__persistent-0__use_l2norm-0",
)


@pytest.mark.parametrize("spec", SPECS)
def test_chunk_fwd_wgmma_not_serialised(spec, tmp_path):
    src = Path(os.environ.get("FLASHQLA_BINARIES_DIR", REPO / "build" / "_binaries")) / f"{spec}.cu"
    if not src.exists():
        pytest.skip(f"{src} not built (python -m flashqla_kernels.build keeps the generated sources)")
    tilelang = pytest.importorskip("tilelang")
    from flashqla_kernels.aot import GENCODE, find_nvcc

    try:
        nvcc = find_nvcc()
    except RuntimeError as e:
        pytest.skip(str(e))
    tl_root = Path(tilelang.__file__).parent
    res = subprocess.run(
        [nvcc, "-std=c++20", "-O3", "-cubin", "-gencode", GENCODE, "--use_fast_math",
         "-Xptxas", "-v", f"-I{tl_root / '3rdparty' / 'cutlass' / 'include'}", f"-I{tl_root / 'src'}", str(src),
         "-o", str(tmp_path / "k.cubin")], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr[-2000:]
    serialised = [line for line in res.stderr.splitlines() if "serialized" in line]
    assert not serialised, f"{spec}: ptxas serialises its wgmma:\n" + "\n".join(serialised)
    if "inverse_form-regs" in spec:  # the merged layout: three warpgroups, no 24-register producer
        text = src.read_text()
        assert "__launch_bounds__(384, 1)" in text and "warpgroup_reg_dealloc<120>" in text
        assert "warpgroup_reg_dealloc<24>" not in text


def test_ptxas_report_reads_registers_spills_and_serialisation():
    """aot.ptxas_report, the build's reading of `ptxas -v` (kept per kernel in the manifest as "ptxas")."""
    aot = pytest.importorskip("flashqla_kernels.aot")
    log = """ptxas info    : Compiling entry function 'chunk_fwd_kernel' for 'sm_90a'
ptxas info    : (C7518) Potential Performance Loss: wgmma.mma_async instructions are serialized due to program dependence on compiler-inserted WG.DP in divergent path in the function 'chunk_fwd_kernel'
ptxas info    : Function properties for chunk_fwd_kernel
    32 bytes stack frame, 36 bytes spill stores, 60 bytes spill loads
ptxas info    : Used 168 registers, used 15 barriers, 32 bytes cumulative stack size, 1024 bytes smem
"""
    r = aot.ptxas_report(log)
    assert (r["registers"], r["spill_stores"], r["spill_loads"]) == (168, 36, 60)
    assert len(r["wgmma_serialised"]) == 1 and r["wgmma_serialised"][0].startswith("(C7518)")
    clean = aot.ptxas_report(log.replace(log.splitlines()[1] + "\n", ""))
    assert clean["wgmma_serialised"] == [] and clean["registers"] == 168


def test_manifest_kernels_not_serialised():
    """Every kernel of the build whose manifest entry carries a ptxas report: no serialised wgmma (the build also
    prints a warning for each; the manifest keeps the registers and spills of every kernel)."""
    import json

    path = Path(os.environ.get("FLASHQLA_BINARIES_DIR", REPO / "build" / "_binaries")) / "manifest.json"
    if not path.exists():
        pytest.skip(f"{path} not built")
    entries = json.loads(path.read_text())["kernels"]
    reported = {n: e["ptxas"] for n, e in entries.items() if "ptxas" in e}
    if not reported:
        pytest.skip("a build from before the manifest kept ptxas reports")
    bad = {n: r["wgmma_serialised"] for n, r in reported.items() if r["wgmma_serialised"]}
    assert not bad, bad
