"""Prefill and decode through transformers' GDN layers at Qwen3.5-35B-A3B GDN sizes (issue 4's target).

python benchmarks/bench_layers.py flashqla|fla T [--out r.json] [--decode-only]
    fla: run with FLA_FLASH_QLA=0 for FLA's Triton kernels, or with flash_qla importable for FLA -> FlashQLA.
A Qwen3.5 model of 4 GDN layers and one attention layer (hidden 2048, 16 key / 32 value heads, head dim 128, random weights,
bf16). Prints, as one JSON line (medians, CUDA events):
    mixers_ms   the T-token prompt through the stack of GDN mixers (`layer.linear_attn`, with the input
                norms and residuals between them): what the swap replaces, the issue's target
    model_ms    the whole model's prefill (adds the MLPs, norms and head, the same in every run)
    decode_ms   one decode step of the whole model on a cache filled by a 512-token prompt, batch 1 (its
                attention layer's cuDNN SDPA builds a plan for every new length: ~49 ms of host time a step
                on an H200, the same in every run; see profile_layers.py --decode)
    mixer_decode_ms  one decode step through the GDN mixers alone (with their cache), batch 1: the
                decode latency the swap changes
"""

import json
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))


def build(layers=4):
    """`layers` GDN layers, then one full-attention layer (transformers' cache needs one to count tokens)."""
    import transformers

    cfg = transformers.Qwen3_5TextConfig(
        vocab_size=1024, hidden_size=2048, intermediate_size=4096, num_hidden_layers=layers + 1,
        num_attention_heads=16, num_key_value_heads=2, head_dim=128, linear_conv_kernel_dim=4,
        linear_key_head_dim=128, linear_value_head_dim=128, linear_num_key_heads=16, linear_num_value_heads=32,
        layer_types=["linear_attention"] * layers + ["full_attention"], max_position_embeddings=1 << 17, initializer_range=0.02)
    torch.manual_seed(0)
    return transformers.Qwen3_5ForCausalLM(cfg).eval().to(torch.bfloat16).cuda()


def swap_in_flashqla(m):
    import kernels
    from kernels import Mode

    import flashqla
    from test_layers_e2e_cpu import runs_flashqla

    flashqla.register()
    kernels.kernelize(m, mode=Mode.INFERENCE, device="cuda")
    assert runs_flashqla(m)


def mixers_forward(m, x):
    """The prompt through every layer's GDN mixer (pre-norm and residual as in the decoder layer)."""
    h = x
    for layer in m.model.layers:
        if layer.block_type != "linear_attention":
            continue
        h = h + layer.linear_attn(hidden_states=layer.input_layernorm(h), cache_params=None, attention_mask=None)
    return h


def median_ms(fn, runs=7, warmup=2):
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(runs):
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        fn()
        e1.record()
        torch.cuda.synchronize()
        times.append(e0.elapsed_time(e1))
    return sorted(times)[len(times) // 2]


def decode_step_ms(m, prompt=512, steps=16):
    from transformers import DynamicCache

    ids = torch.randint(1, 1024, (1, prompt), device="cuda")
    cache = DynamicCache(config=m.config)
    out = m(ids, past_key_values=cache, use_cache=True)
    nxt = out.logits[:, -1:].argmax(-1)
    times = []
    for i in range(steps):
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        out = m(nxt, past_key_values=cache, use_cache=True)
        e1.record()
        torch.cuda.synchronize()
        nxt = out.logits[:, -1:].argmax(-1)
        if i >= 3:
            times.append(e0.elapsed_time(e1))
    return sorted(times)[len(times) // 2]


def mixer_decode_step_ms(m, prompt=512, steps=20):
    from transformers import DynamicCache

    cache = DynamicCache(config=m.config)
    m(torch.randint(1, 1024, (1, prompt), device="cuda"), past_key_values=cache, use_cache=True)
    gdn = [layer for layer in m.model.layers if layer.block_type == "linear_attention"]
    x = torch.randn(1, 1, m.config.hidden_size, device="cuda", dtype=torch.bfloat16)

    def step():
        h = x
        for layer in gdn:
            h = h + layer.linear_attn(hidden_states=layer.input_layernorm(h), cache_params=cache, attention_mask=None)
        return h
    return median_ms(step, runs=steps, warmup=3)


def main():
    which, T = sys.argv[1], int(sys.argv[2])
    m = build()
    if which == "flashqla":
        swap_in_flashqla(m)
    ids = torch.randint(1, 1024, (1, T), device="cuda")
    pos = torch.arange(T, device="cuda")[None]
    x = torch.randn(1, T, m.config.hidden_size, device="cuda", dtype=torch.bfloat16)
    with torch.inference_mode():
        skip = "--decode-only" in sys.argv
        mixers = None if skip else median_ms(lambda: mixers_forward(m, x))
        model = None if skip else median_ms(lambda: m(ids, position_ids=pos, use_cache=False), runs=5)
        decode = decode_step_ms(m)
        mixer_decode = mixer_decode_step_ms(m)
    res = {"which": which, "FLA_FLASH_QLA": os.environ.get("FLA_FLASH_QLA"), "T": T,
           "flash_qla_imported": "flash_qla" in sys.modules,  # FLA -> FlashQLA really dispatched
           "device": torch.cuda.get_device_name(), "mixers_ms": mixers, "mixer_tokens_per_s": None if mixers is None else T / mixers * 1e3,
           "model_ms": model, "decode_ms": decode,
           "mixer_decode_ms": mixer_decode}
    print(json.dumps(res))
    if "--out" in sys.argv:
        json.dump(res, open(sys.argv[sys.argv.index("--out") + 1], "w"), indent=1)


if __name__ == "__main__":
    main()
