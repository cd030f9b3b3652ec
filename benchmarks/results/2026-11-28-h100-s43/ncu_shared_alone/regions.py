"""Warp samples, stall reasons and executed instructions of chunk_fwd's regions (state, auxiliary, its inlined inverse
helpers, producer) in two Nsight Compute source pages: the shared-gate kernel (argv[1]) and its no-state twin (argv[2]),
by line ranges of their generated sources (shared_gate_alone.patch's bf16 specs). Run from the repository root with the
csv files decompressed."""
import sys
sys.path.insert(0, 'benchmarks')
from ncu_source_lines import region_counters
full = region_counters(sys.argv[1], 'chunk_fwd', [(1, 202, 'helpers(aux)'), (203, 623, 'state'), (624, 841, 'aux'),
                                                  (842, 1171, 'producer')])
ns = region_counters(sys.argv[2], 'chunk_fwd', [(1, 202, 'helpers(aux)'), (203, 400, 'state'), (401, 618, 'aux'),
                                                (619, 948, 'producer')])
for name in ['aux', 'helpers(aux)', 'state', 'producer', 'other']:
    print(f"{name:14s} samples full {full[0][name]:7d} ns {ns[0][name]:7d} | instr full {full[2][name]:10d} ns {ns[2][name]:10d}")
    a = full[1][name]; b = ns[1][name]
    ks = sorted(set(a) | set(b), key=lambda k: -(a[k] + b[k]))[:9]
    print("    " + ", ".join(f"{k}: {a[k]}/{b[k]}" for k in ks))
