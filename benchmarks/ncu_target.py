"""A small driver for Nsight Compute: run one library's forward on one grid row a few times, the last call inside
an NVTX range "target" (profile it alone with --nvtx --nvtx-include "target/").

ncu --clock-control none -k regex:"kkt_solve|chunk_fwd" python benchmarks/ncu_target.py 397B-TP1 8192x4
NCU_LIB=flashinfer (or any library bench_prefill.py runs) profiles that peer's forward instead of flashqla's.
"""

import os
import sys

import torch

sys.path.insert(0, os.path.dirname(__file__))
from bench_prefill import runner  # noqa: E402
from grid import HEAD_CONFIGS, SEQ_LAYOUTS, make_inputs  # noqa: E402


def main():
    head, seqs = sys.argv[1], sys.argv[2]
    H, HV = HEAD_CONFIGS[head]
    inp = make_inputs(H, HV, SEQ_LAYOUTS[seqs])
    run = runner(os.environ.get("NCU_LIB", "flashqla"))
    if hasattr(run, "prep"):
        inp["_fi"] = run.prep(inp)
    for _ in range(int(os.environ.get("NCU_REPEATS", "3"))):
        run(inp)
    torch.cuda.synchronize()
    with torch.cuda.nvtx.range("target"):
        run(inp)
    torch.cuda.synchronize()


if __name__ == "__main__":
    main()
