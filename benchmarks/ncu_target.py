"""A small driver for Nsight Compute: run flashqla's forward on one grid row a few times.

ncu --clock-control none -k regex:"kkt_solve|chunk_fwd" python benchmarks/ncu_target.py 397B-TP1 8192x4
"""

import os
import sys

import torch

sys.path.insert(0, os.path.dirname(__file__))
from grid import HEAD_CONFIGS, SEQ_LAYOUTS, make_inputs  # noqa: E402


def main():
    import flashqla

    head, seqs = sys.argv[1], sys.argv[2]
    H, HV = HEAD_CONFIGS[head]
    inp = make_inputs(H, HV, SEQ_LAYOUTS[seqs])
    for _ in range(int(os.environ.get("NCU_REPEATS", "3"))):
        flashqla.chunk_gated_delta_rule(**inp, output_final_state=True)
    torch.cuda.synchronize()


if __name__ == "__main__":
    main()
