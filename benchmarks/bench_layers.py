"""Prefill through transformers' GDN layers at Qwen3.5-35B-A3B GDN sizes (issue 4's target).

python benchmarks/bench_layers.py flashqla|fla T      (fla: run with FLA_FLASH_QLA=0 for FLA's Triton kernels,
                                                      or with flash_qla importable for FLA -> FlashQLA)
A model of GDN layers only (hidden 2048, 16 key / 32 value heads, head dim 128, random weights, bf16);
prints the median prefill time of a T-token prompt over 5 runs (CUDA events) and tokens/s.
"""

import copy
import json
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))


def build(layers=4):
    import transformers

    cfg = transformers.Qwen3_5TextConfig(
        vocab_size=1024, hidden_size=2048, intermediate_size=4096, num_hidden_layers=layers,
        num_attention_heads=16, num_key_value_heads=2, head_dim=128, linear_conv_kernel_dim=4,
        linear_key_head_dim=128, linear_value_head_dim=128, linear_num_key_heads=16, linear_num_value_heads=32,
        layer_types=["linear_attention"] * layers, max_position_embeddings=1 << 17, initializer_range=0.02)
    torch.manual_seed(0)
    return transformers.Qwen3_5ForCausalLM(cfg).eval().to(torch.bfloat16).cuda()


def main():
    which, T = sys.argv[1], int(sys.argv[2])
    m = build()
    if which == "flashqla":
        import kernels
        from kernels import Mode

        import flashqla
        from test_layers_e2e_cpu import runs_flashqla

        flashqla.register()
        kernels.kernelize(m, mode=Mode.INFERENCE, device="cuda")
        assert runs_flashqla(m)
    ids = torch.randint(1, 1024, (1, T), device="cuda")
    pos = torch.arange(T, device="cuda")[None]
    with torch.inference_mode():
        for _ in range(2):
            m(ids, position_ids=pos, use_cache=False)
        times = []
        for _ in range(5):
            e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            e0.record()
            m(ids, position_ids=pos, use_cache=False)
            e1.record()
            torch.cuda.synchronize()
            times.append(e0.elapsed_time(e1))
    ms = sorted(times)[2]
    print(json.dumps({"which": which, "FLA_FLASH_QLA": os.environ.get("FLA_FLASH_QLA"), "T": T,
                      "device": torch.cuda.get_device_name(), "prefill_ms": ms, "tokens_per_s": T / ms * 1e3}))


if __name__ == "__main__":
    main()
