"""Where a GDN layer's prefill time goes: torch.profiler's CUDA kernel table for the GDN mixers alone.

python benchmarks/profile_layers.py flashqla|fla T      (fla: FLA_FLASH_QLA=0 for FLA's Triton kernels)
Builds bench_layers' model (Qwen3.5-35B-A3B GDN sizes), runs the stack of `linear_attn` modules on a
T-token prompt, prints the top CUDA kernels by total time and the mixers' median time (CUDA events).
"""

import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(__file__))
from bench_layers import build, mixers_forward, swap_in_flashqla  # noqa: E402


def main():
    which, T = sys.argv[1], int(sys.argv[2])
    m = build()
    if which == "flashqla":
        swap_in_flashqla(m)
    x = torch.randn(1, T, m.config.hidden_size, device="cuda", dtype=torch.bfloat16)
    with torch.inference_mode():
        for _ in range(2):
            mixers_forward(m, x)
        torch.cuda.synchronize()
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
            mixers_forward(m, x)
            torch.cuda.synchronize()
    print(f"== {which} T={T} FLA_FLASH_QLA={os.environ.get('FLA_FLASH_QLA')}")
    print(prof.key_averages().table(sort_by="cuda_time_total", row_limit=18, max_name_column_width=70))
    rows = [{"name": e.key, "cuda_us": e.device_time_total, "count": e.count}
            for e in sorted(prof.key_averages(), key=lambda e: -e.device_time_total)[:25]]
    out = os.environ.get("PROFILE_JSON")
    if out:
        json.dump({"which": which, "T": T, "kernels": rows}, open(out, "w"), indent=1)


if __name__ == "__main__":
    main()
