import csv, collections, sys
# per-line samples as ncu_source_lines.py computes them, then grouped into regions by line number
csvp, cu, key = sys.argv[1], sys.argv[2], sys.argv[3]
rows=list(csv.reader(open(csvp)))
h=None; cur=None; curline=None; info={}
for r in rows:
    if len(r)==2 and r[0]=="File Path": cur=r[1].split('/')[-1]; continue
    if len(r)==2: continue
    if r and r[0]=="Line No": h=r; continue
    if not h or len(r)!=len(h): continue
    if r[0]: curline=int(r[0]); continue
    try: a=int(r[2],16)
    except: continue
    d=dict(zip(h,r))
    e=info.setdefault(a,{'s':int(d['Warp Stall Sampling (All Samples)'] or 0),'main':None,'n':int(d['Instructions Executed'] or 0),
        'reasons':{k[6:]:int(d[k] or 0) for k in h if k.startswith('stall_') and '(Not' not in k and (d[k] or '0')!='0'}})
    if key in cur: e['main']=curline
agg=collections.Counter(); rs=collections.defaultdict(collections.Counter); ins=collections.Counter(); last=None
for a in sorted(info):
    if info[a]['main'] is not None: last=info[a]['main']
    agg[last]+=info[a]['s']; rs[last].update(info[a]['reasons']); ins[last]+=info[a]['n']
regions=[(int(x.split(':')[0].split('-')[0]),int(x.split(':')[0].split('-')[1]),x.split(':')[1]) for x in sys.argv[4:]]
tot=sum(agg.values())
out=collections.Counter(); outr=collections.defaultdict(collections.Counter); outi=collections.Counter()
for l,v in agg.items():
    name='other'
    for a,b,nm in regions:
        if l is not None and a<=l<=b: name=nm
    out[name]+=v; outr[name].update(rs[l]); outi[name]+=ins[l]
for nm,v in out.most_common():
    print(f"{100*v/tot:5.1f}% {nm:28s} instr {outi[nm]:>10d} | "+", ".join(f"{k} {c}" for k,c in outr[nm].most_common(4)))
