"""Each run of benchmarks/device_variance.sh beside the GPU state it ran in.

python benchmarks/variance_report.py DIR
Prints, per run, its rows' medians and, over the nvidia-smi samples taken in that run's window while the GPU was
not idle (event-reason word other than 0x1, GpuIdle), the mean and range of the SM clock, the mean power, the
temperature and the event-reason words seen (0x4: software power cap).
"""
import datetime
import json
import sys
from pathlib import Path


def main(d: Path):
    runs, t = {}, {}
    for line in (d / "runs.log").read_text().split("\n"):
        if line.strip():
            kind, i, ts = line.split()
            t.setdefault(int(i), {})[kind] = float(ts)
    samples = []
    for line in (d / "smi_samples.csv").read_text().split("\n")[1:]:
        f = [x.strip() for x in line.split(",")]
        if len(f) < 6 or not f[1].isdigit():
            continue
        ts = datetime.datetime.strptime(f[0], "%Y/%m/%d %H:%M:%S.%f").replace(tzinfo=datetime.timezone.utc).timestamp()
        samples.append((ts, int(f[1]), float(f[3]), int(f[4]), f[5]))
    for i in sorted(t):
        rows = json.loads((d / f"run_{i}.json").read_text())["rows"]
        med = "  ".join(f"{r['head']} {r['seqs']} {r['ms']:.3f} (kkt {r.get('kkt_solve_ms') or 0:.3f})" for r in rows)
        busy = [s for s in samples if t[i]["start"] <= s[0] <= t[i]["end"] and s[4] != "0x0000000000000001"]
        if busy:
            clk = [s[1] for s in busy]
            info = (f"clock {sum(clk) / len(clk):.0f} MHz [{min(clk)}, {max(clk)}], "
                    f"power {sum(s[2] for s in busy) / len(busy):.0f} W, temp {busy[-1][3]} C, "
                    f"reasons {sorted(set(s[4] for s in busy))}, {len(busy)} samples")
        else:
            info = "no busy samples"
        print(f"run {i}: {med}\n        {info}")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
