"""Where a kernel's warps spend their time, per line of the generated CUDA source.

Reads Nsight Compute's source page (`ncu -i REPORT --page source --csv --print-source cuda,sass`, written by
benchmarks/device_profile.sh) and the kernel's generated .cu (build/_binaries/<spec>.cu: the binary was
compiled from it with -lineinfo). SASS inlined from headers (barriers, wgmma wrappers) is charged to the
kernel line that precedes it in address order, i.e. its call site.

python benchmarks/ncu_source_lines.py src_chunk_fwd.csv build/_binaries/chunk_fwd__...cu chunk_fwd [N]
"""
import csv, collections, sys
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
    e=info.setdefault(a,{'s':int(d['Warp Stall Sampling (All Samples)'] or 0),'sass':r[3].strip(),'n':int(d['Instructions Executed'] or 0),'main':None,
        'reasons':{k[6:]:int(d[k] or 0) for k in h if k.startswith('stall_') and '(Not' not in k and (d[k] or '0')!='0'}})
    if key in cur: e['main']=curline
src=open(cu).read().split('\n')
agg=collections.Counter(); rs=collections.defaultdict(collections.Counter); last=None
for a in sorted(info):
    if info[a]['main'] is not None: last=info[a]['main']
    agg[last]+=info[a]['s']; rs[last].update(info[a]['reasons'])
tot=sum(agg.values())
for ln,s in agg.most_common(int(sys.argv[4]) if len(sys.argv)>4 else 30):
    top=", ".join(f"{k} {v}" for k,v in rs[ln].most_common(2))
    print(f"{100*s/tot:5.1f}% L{ln}: {src[ln-1].strip()[:100] if ln else ''} | {top}")
