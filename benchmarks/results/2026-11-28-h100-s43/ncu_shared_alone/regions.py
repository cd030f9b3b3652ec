"""Warp samples, stall reasons and executed instructions of chunk_fwd's regions (state, auxiliary, its inlined inverse
helpers, producer) in two Nsight Compute source pages: the shared-gate kernel (argv[1]) and its no-state twin (argv[2]),
by line ranges of their generated sources (shared_gate_alone.patch's bf16 specs). Run from the repository root with the
csv files decompressed."""
import sys, collections
sys.path.insert(0, 'benchmarks')
from ncu_source_lines import line_counters
def regions(csvp, spans):
    agg, rs, ins = line_counters(csvp, 'chunk_fwd')
    out = collections.Counter(); outr = collections.defaultdict(collections.Counter); outi = collections.Counter()
    for ln, s in agg.items():
        name = next((nm for a, b, nm in spans if ln is not None and a <= ln <= b), "other")
        out[name] += s; outr[name].update(rs[ln]); outi[name] += ins[ln]
    return out, outr, outi
full = regions(sys.argv[1], [(1,202,'helpers(aux)'),(203,623,'state'),(624,841,'aux'),(842,1171,'producer')])
ns = regions(sys.argv[2], [(1,202,'helpers(aux)'),(203,400,'state'),(401,618,'aux'),(619,948,'producer')])
keys = ['selected','not_selected','wait','short_scoreboard','long_scoreboard','barrier','math_pipe_throttle','mio_throttle','dispatch_stall','no_instructions','branch_resolving','lg_throttle','membar','sleeping','tex_throttle','drain','misc','imc_miss']
for name in ['aux','helpers(aux)','state','producer','other']:
    print(f"{name:14s} samples full {full[0][name]:7d} ns {ns[0][name]:7d} | instr full {full[2][name]:10d} ns {ns[2][name]:10d}")
    a = full[1][name]; b = ns[1][name]
    ks = sorted(set(a)|set(b), key=lambda k: -(a[k]+b[k]))[:9]
    print("    " + ", ".join(f"{k}: {a[k]}/{b[k]}" for k in ks))
