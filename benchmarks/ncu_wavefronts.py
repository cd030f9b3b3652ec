"""Shared-memory wavefronts and warp samples per line of a kernel's generated CUDA (Nsight Compute source page).

python benchmarks/ncu_wavefronts.py src_<kernel>.csv[.xz] <spec>.cu[.xz] [N]
The .cu must be the source the profiled binary was built from (kept beside the profile, e.g. profile/source/).
Reads the per-source-line rows of the .cu section (written by benchmarks/device_ncu.sh), prints the N lines with
the most shared-memory wavefronts (with their bank-conflict excess and stall samples) and the totals.
"""
import csv
import io
import lzma
import sys


def rows(path):
    text = lzma.open(path, "rt").read() if path.endswith(".xz") else open(path).read()
    return list(csv.reader(io.StringIO(text)))


def main():
    path, cu = sys.argv[1], sys.argv[2]
    n = int(sys.argv[3]) if len(sys.argv) > 3 else 20
    stem = cu.split("/")[-1].removesuffix(".xz")
    src = (lzma.open(cu, "rt") if cu.endswith(".xz") else open(cu)).read().split("\n")
    hdr, section, out = None, None, []
    for r in rows(path):
        if len(r) == 2 and r[0] == "File Path":
            section = r[1].split("/")[-1]
            continue
        if r and r[0] == "Line No":
            hdr = r
            continue
        if hdr and section == stem and len(r) == len(hdr) and r[0].isdigit():
            d = dict(zip(hdr, r))
            num = lambda k: int(d.get(k) or 0)  # noqa: E731
            out.append((num("L1 Wavefronts Shared"), num("L1 Wavefronts Shared Excessive"),
                        num("Warp Stall Sampling (All Samples)"), int(r[0])))
    tw, ts = sum(o[0] for o in out), sum(o[2] for o in out)
    print(f"{stem}: shared wavefronts {tw}, excess {sum(o[1] for o in out)}, samples {ts} (this file's lines)")
    for w, ex, s, line in sorted(out, reverse=True)[:n]:
        text = src[line - 1].strip()[:110] if line <= len(src) else ""
        print(f"{line:5d} wf {w:10d} ({100 * w / max(tw, 1):4.1f}%) excess {ex:9d} samples {s:6d} ({100 * s / max(ts, 1):4.1f}%)  {text}")


if __name__ == "__main__":
    main()
