"""Markdown table of benchmarks/device_timeline_ab.sh results: python benchmarks/timeline_table.py DIR old,new[,alt]
(each variant v read from DIR/timeline_v.json and DIR/timeline_v2.json: spans, chunk_fwd and kkt_solve durations, us)."""
import json, sys
base = sys.argv[1]; vs = sys.argv[2].split(',')
runs = {v: json.load(open(f'{base}/timeline_{v}.json')) for v in vs + [v + '2' for v in vs]}
rows = [(r['head'], r['seqs']) for r in runs[vs[0]]['rows']]
def g(v, i, k):
    r = runs[v]['rows'][i]
    return r['span_us'] if k == 'span' else [x['dur_us'] for kk, x in r['kernels'].items() if k in kk][0]
hdr = '| row | ' + ' | '.join(f'span {v}' for v in vs) + ' | ' + ' | '.join(f'change {v}' for v in vs[1:]) + ' | ' + ' | '.join(f'chunk_fwd {v}' for v in vs) + ' | ' + ' | '.join(f'kkt {v}' for v in vs) + ' |'
print(hdr); print('|' + '---|' * (hdr.count('|') - 1))
for i, (h, s) in enumerate(rows):
    m = {v: (g(v, i, 'span') + g(v + '2', i, 'span')) / 2 for v in vs}
    cells = [f"{g(v, i, 'span'):.1f}, {g(v + '2', i, 'span'):.1f}" for v in vs]
    cells += [f"{100 * (m[v] / m[vs[0]] - 1):+.1f}%" for v in vs[1:]]
    cells += [f"{g(v, i, 'chunk_fwd'):.1f}, {g(v + '2', i, 'chunk_fwd'):.1f}" for v in vs]
    cells += [f"{g(v, i, 'kkt'):.1f}, {g(v + '2', i, 'kkt'):.1f}" for v in vs]
    print(f'| {h} {s} | ' + ' | '.join(cells) + ' |')
