"""Rebuild the prefill table from saved per-library JSON files (bench_<lib>.json) without a GPU.

python benchmarks/merge_results.py DIR   -> DIR/prefill.md, DIR/prefill.json, DIR/prefill_speedup.png
A library with no file in DIR is shown as "not run" (e.g. FlashInfer when its bundle could not travel).
"""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run_prefill import report  # noqa: E402

LIBS = ("flashqla", "fla", "flash_qla", "flashinfer")

if __name__ == "__main__":
    out = sys.argv[1]
    per_lib = {}
    for lib in LIBS:
        path = os.path.join(out, f"bench_{lib}.json")
        per_lib[lib] = json.load(open(path)) if os.path.exists(path) else {"error": "not run", "rows": []}
    report(per_lib, out)
