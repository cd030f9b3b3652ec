"""Per-line warp samples of two Nsight Compute source pages of chunk_fwd (the default fused variant and the
leave-one-out without its inverse), the state warpgroups' lines side by side, and the state region's stall reasons.

python diff_state_lines.py SRC_FUSED.csv FUSED.cu SRC_NOINV.csv NOINV.cu
(the .cu: build/_binaries/<spec>.cu of each build; the csv: device_ncu_src.sh's src_*.csv, uncompressed). The state
region is the `threadIdx.x < 256` branch of each .cu; lines of the two builds are paired by their offset (the
leave-one-out's source lacks the inverse's device helpers at the top, so its kernel starts earlier)."""
import collections, os, sys
sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..', '..', '..'))
from ncu_source_lines import line_counters  # benchmarks/ncu_source_lines.py


def state_span(cu):
    src = open(cu).read().split('\n')
    a = next(i for i, l in enumerate(src, 1) if 'threadIdx.x) < 256)' in l)
    b = next(i for i, l in enumerate(src, 1) if 'threadIdx.x) < 384)' in l)
    return src, a, b


def main(sf, cf, sn, cn):
    src, a, b = state_span(cf)
    _, an, bn = state_span(cn)
    off = a - an
    af, rf, _ = line_counters(sf, 'chunk_fwd')
    anl, rn, _ = line_counters(sn, 'chunk_fwd')
    print('all samples fused / noinv:', sum(af.values()), sum(anl.values()))
    print('state region (lines %d-%d / %d-%d):' % (a, b, an, bn),
          sum(v for l, v in af.items() if l and a <= l < b), sum(v for l, v in anl.items() if l and an <= l < bn))
    rows = sorted(((af.get(l, 0) - anl.get(l - off, 0), l) for l in range(a, b)), reverse=True)
    print('state lines with the largest increase (fused - noinv):')
    for d, l in rows[:15]:
        top = lambda r: ", ".join(f"{k} {v}" for k, v in r.most_common(3))
        print(f'{d:+6d} L{l} fused {af.get(l, 0)} noinv {anl.get(l - off, 0)} | {src[l - 1].strip()[:90]}')
        print(f'        fused: {top(rf[l])}\n        noinv: {top(rn[l - off])}')
    sf_, sn_ = collections.Counter(), collections.Counter()
    for l in range(a, b):
        sf_.update(rf.get(l, {})); sn_.update(rn.get(l - off, {}))
    print('state stall reasons fused / noinv / difference:')
    for k in sorted(set(sf_) | set(sn_), key=lambda k: -(sf_[k] - sn_[k])):
        print(f'  {k:20s} {sf_[k]:7d} {sn_[k]:7d} {sf_[k] - sn_[k]:+7d}')


if __name__ == '__main__':
    main(*sys.argv[1:5])
