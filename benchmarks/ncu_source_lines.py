"""Where a kernel's warps spend their time, per line of the generated CUDA source (or per range of lines).

Reads Nsight Compute's source page (`ncu -i REPORT --page source --csv --print-source cuda,sass`, written by
benchmarks/device_profile.sh) and the kernel's generated .cu (build/_binaries/<spec>.cu: the binary was
compiled from it with -lineinfo). SASS inlined from headers (barriers, wgmma wrappers) is charged to the
kernel line that precedes it in address order, i.e. its call site.

python benchmarks/ncu_source_lines.py src_chunk_fwd.csv build/_binaries/chunk_fwd__...cu chunk_fwd [N]
    the N (default 30) lines with the most warp samples, each with its top two stall reasons
python benchmarks/ncu_source_lines.py src_chunk_fwd.csv build/_binaries/chunk_fwd__...cu chunk_fwd --regions A-B:name ...
    warp samples, executed warp instructions and top four stall reasons summed over each range of lines A..B (e.g.
    one warpgroup's branch); lines in no range count as "other"
"""
import csv, collections, sys


def line_counters(csvp, key):
    """Per kernel line (of the file whose name contains key): warp samples, stall reasons, executed instructions."""
    rows = list(csv.reader(open(csvp)))
    h = None; cur = None; curline = None; info = {}
    for r in rows:
        if len(r) == 2 and r[0] == "File Path": cur = r[1].split('/')[-1]; continue
        if len(r) == 2: continue
        if r and r[0] == "Line No": h = r; continue
        if not h or len(r) != len(h): continue
        if r[0]: curline = int(r[0]); continue
        try: a = int(r[2], 16)
        except: continue
        d = dict(zip(h, r))
        e = info.setdefault(a, {'s': int(d['Warp Stall Sampling (All Samples)'] or 0), 'n': int(d['Instructions Executed'] or 0),
            'main': None,
            'reasons': {k[6:]: int(d[k] or 0) for k in h if k.startswith('stall_') and '(Not' not in k and (d[k] or '0') != '0'}})
        if key in cur: e['main'] = curline
    agg = collections.Counter(); rs = collections.defaultdict(collections.Counter); ins = collections.Counter(); last = None
    for a in sorted(info):
        if info[a]['main'] is not None: last = info[a]['main']
        agg[last] += info[a]['s']; rs[last].update(info[a]['reasons']); ins[last] += info[a]['n']
    return agg, rs, ins


def region_counters(csvp, key, regions):
    """line_counters summed over regions [(first line, last line, name)]: warp samples, stall reasons and executed
    instructions by region name; lines in no region count as "other"."""
    agg, rs, ins = line_counters(csvp, key)
    out = collections.Counter(); outr = collections.defaultdict(collections.Counter); outi = collections.Counter()
    for ln, s in agg.items():
        name = next((nm for a, b, nm in regions if ln is not None and a <= ln <= b), "other")
        out[name] += s; outr[name].update(rs[ln]); outi[name] += ins[ln]
    return out, outr, outi


def main(argv):
    csvp, cu, key = argv[1], argv[2], argv[3]
    if len(argv) > 4 and argv[4] == "--regions":
        regions = []
        for spec in argv[5:]:
            span, name = spec.split(':', 1)
            a, b = span.split('-')
            regions.append((int(a), int(b), name))
        out, outr, outi = region_counters(csvp, key, regions)
        tot = sum(out.values())
        for name, s in out.most_common():
            top = ", ".join(f"{k} {v}" for k, v in outr[name].most_common(4))
            print(f"{100*s/tot:5.1f}% {name:28s} instr {outi[name]:>10d} | {top}")
        return
    agg, rs, ins = line_counters(csvp, key)
    tot = sum(agg.values())
    src = open(cu).read().split('\n')
    for ln, s in agg.most_common(int(argv[4]) if len(argv) > 4 else 30):
        top = ", ".join(f"{k} {v}" for k, v in rs[ln].most_common(2))
        print(f"{100*s/tot:5.1f}% L{ln}: {src[ln-1].strip()[:100] if ln else ''} | {top}")


if __name__ == "__main__":
    main(sys.argv)
