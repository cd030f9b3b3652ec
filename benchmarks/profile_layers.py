"""Where a GDN layer's prefill time goes: torch.profiler's CUDA kernel table for the GDN mixers alone.

python benchmarks/profile_layers.py flashqla|fla T [--decode]   (fla: FLA_FLASH_QLA=0 for FLA's Triton kernels)
Builds bench_layers' model (Qwen3.5-35B-A3B GDN sizes), runs the stack of `linear_attn` modules on a
T-token prompt and prints the top CUDA kernels by total time. With --decode: one decode step of the whole
model on a cache filled by a T-token prompt, with CPU and CUDA activity, sorted by CPU time.
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
    acts = [torch.profiler.ProfilerActivity.CUDA]
    sort = "cuda_time_total"
    with torch.inference_mode():
        if "--decode" in sys.argv:
            from transformers import DynamicCache

            acts.append(torch.profiler.ProfilerActivity.CPU)
            sort = "cpu_time_total"
            cache = DynamicCache(config=m.config)
            out = m(torch.randint(1, 1024, (1, T), device="cuda"), past_key_values=cache, use_cache=True)
            nxt = out.logits[:, -1:].argmax(-1)
            for _ in range(3):
                out = m(nxt, past_key_values=cache, use_cache=True)
            torch.cuda.synchronize()
            with torch.profiler.profile(activities=acts) as prof:
                m(nxt, past_key_values=cache, use_cache=True)
                torch.cuda.synchronize()
        else:
            x = torch.randn(1, T, m.config.hidden_size, device="cuda", dtype=torch.bfloat16)
            for _ in range(2):
                mixers_forward(m, x)
            torch.cuda.synchronize()
            with torch.profiler.profile(activities=acts) as prof:
                mixers_forward(m, x)
                torch.cuda.synchronize()
    print(f"== {which} T={T} FLA_FLASH_QLA={os.environ.get('FLA_FLASH_QLA')} {' '.join(sys.argv[3:])}")
    print(prof.key_averages().table(sort_by=sort, row_limit=25, max_name_column_width=70))
    rows = [{"name": e.key, "cuda_us": e.device_time_total, "count": e.count}
            for e in sorted(prof.key_averages(), key=lambda e: -e.device_time_total)[:25]]
    out = os.environ.get("PROFILE_JSON")
    if out:
        json.dump({"which": which, "T": T, "kernels": rows}, open(out, "w"), indent=1)


if __name__ == "__main__":
    main()
