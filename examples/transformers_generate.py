"""Swap flashqla's Gated DeltaNet layers into a transformers model and generate.

    # tiny random Qwen3.5 model built from a config (no download), on the GPU if there is one
    python examples/transformers_generate.py
    python examples/transformers_generate.py --family qwen3_next --prompt-len 4096 --new-tokens 64
    # a checkpoint (name or local path), through from_pretrained(..., use_kernels=True)
    python examples/transformers_generate.py --model Qwen/Qwen3.5-2B --via from_pretrained
    # on a CPU, route the layers to flashqla anyway (its reference runs; slow, for checking)
    python examples/transformers_generate.py --cpu-mapping --prompt-len 128 --new-tokens 16

Steps: ``flashqla.register()`` maps transformers' GatedDeltaNet layers to flashqla for sm_90 GPUs,
then the model is kernelized (``kernels.kernelize(model, mode=Mode.INFERENCE)``, offline) or loaded
with ``use_kernels=True`` (which also pulls transformers' own default hub kernels). The script prints
how many GDN modules run flashqla's forward, how many times it ran, whether the Hopper kernels or the
reference served the op, prefill and decode tokens/s, and with ``--compare`` the same generation on
the unswapped model (tokens equal? speedup?).
"""

from __future__ import annotations

import argparse
import copy
import sys
import time
import warnings
from pathlib import Path

import torch

try:
    import flashqla
except ImportError:  # running from a checkout without installing
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "torch-ext"))
    import flashqla

import kernels
import transformers
from kernels import Mode


def tiny_model(family: str, dtype: torch.dtype, layers: int, hidden: int, vocab: int):
    """A random model with the real GDN head geometry (head dims 128, 2 value heads per key head)."""
    common = dict(
        vocab_size=vocab, hidden_size=hidden, intermediate_size=2 * hidden, num_hidden_layers=layers,
        num_attention_heads=max(hidden // 128, 2), num_key_value_heads=1, head_dim=128,
        linear_conv_kernel_dim=4, linear_key_head_dim=128, linear_value_head_dim=128,
        linear_num_key_heads=2, linear_num_value_heads=4,
        layer_types=["full_attention" if (i + 1) % 4 == 0 else "linear_attention" for i in range(layers)],
        max_position_embeddings=1 << 17, pad_token_id=0,
    )
    moe = dict(num_experts=8, num_experts_per_tok=2, moe_intermediate_size=hidden // 2,
               shared_expert_intermediate_size=hidden // 2)
    if family == "qwen3_5":
        config, cls = transformers.Qwen3_5TextConfig(**common), transformers.Qwen3_5ForCausalLM
    elif family == "qwen3_5_moe":
        config, cls = transformers.Qwen3_5MoeTextConfig(**common, **moe), transformers.Qwen3_5MoeForCausalLM
    else:
        config = transformers.Qwen3NextConfig(**common, **moe)
        cls = transformers.Qwen3NextForCausalLM
    torch.manual_seed(0)
    return cls(config).to(dtype).eval()


def gdn_modules(model):
    return [m for m in model.modules() if type(m).__name__.endswith("GatedDeltaNet")]


def runs_flashqla(module) -> bool:
    fn = getattr(module.forward, "__func__", None)
    # the package may be loaded under another name (hub / local kernel): match on the layer class
    return fn is not None and fn.__module__.endswith("layers") and fn.__qualname__ in (
        "Qwen3_5GatedDeltaNet.forward", "Qwen3NextGatedDeltaNet.forward")


def count_calls(model) -> dict:
    """Count forward calls of GDN modules that run flashqla's forward (hooks fire whatever forward runs)."""
    counter = {"flashqla": 0, "other": 0}

    def hook(module, args, output):
        counter["flashqla" if runs_flashqla(module) else "other"] += 1

    for m in gdn_modules(model):
        m.register_forward_hook(hook)
    return counter


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def timed_run(model, ids, new_tokens, device):
    """Prefill once into a cache, then ``new_tokens - 1`` greedy single-token decode steps, timed
    separately (after a short warm-up). Returns (prefill seconds, decode seconds per step)."""
    with torch.inference_mode():
        for n in (16, ids.shape[1]):  # warm-up (first calls, allocator, kernel loading)
            model(ids[:, :n], use_cache=False)
        sync(device)
        cache = transformers.DynamicCache(config=model.config)
        t0 = time.perf_counter()
        logits = model(ids, past_key_values=cache, use_cache=True).logits
        sync(device)
        t_prefill = time.perf_counter() - t0
        token = logits[:, -1:].argmax(-1)
        steps = max(new_tokens - 1, 1)
        t0 = time.perf_counter()
        for _ in range(steps):
            token = model(token, past_key_values=cache, use_cache=True).logits[:, -1:].argmax(-1)
        sync(device)
        t_step = (time.perf_counter() - t0) / steps
    return t_prefill, t_step


def generate(model, ids, new_tokens, device):
    with torch.inference_mode():
        sync(device)
        t0 = time.perf_counter()
        out = model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=new_tokens,
                             min_new_tokens=new_tokens, do_sample=False, pad_token_id=0)
        sync(device)
    return out, time.perf_counter() - t0


def report(name, args, t_prefill, t_step, t_gen):
    print(f"{name}: prefill {args.batch * args.prompt_len / t_prefill:,.0f} tokens/s "
          f"({t_prefill * 1e3:.1f} ms for {args.batch}x{args.prompt_len}); decode {t_step * 1e3:.2f} ms/step "
          f"({args.batch / t_step:,.1f} tokens/s); generate() {args.batch * args.new_tokens / t_gen:,.1f} "
          f"new tokens/s")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default=None, help="checkpoint name or path (default: a tiny random model)")
    ap.add_argument("--family", choices=["qwen3_5", "qwen3_5_moe", "qwen3_next"], default="qwen3_5")
    ap.add_argument("--via", choices=["kernelize", "from_pretrained"], default="kernelize",
                    help="kernelize (offline, flashqla's mappings only) or from_pretrained(use_kernels=True)")
    ap.add_argument("--dtype", choices=["bfloat16", "float16", "float32"], default="bfloat16")
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--hidden", type=int, default=512)
    ap.add_argument("--vocab", type=int, default=4096)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--prompt-len", type=int, default=1024)
    ap.add_argument("--new-tokens", type=int, default=32)
    ap.add_argument("--cpu-mapping", action="store_true",
                    help="also map the CPU (flashqla's reference serves it), to see the swap without a GPU")
    ap.add_argument("--compare", action="store_true", help="also run the unswapped model")
    args = ap.parse_args(argv)

    device = torch.device(args.device)
    dtype = getattr(torch, args.dtype)
    ok, why = flashqla.kernels_available(device if device.type == "cuda" else None)
    print(f"flashqla {flashqla.__version__}, transformers {transformers.__version__}, kernels {kernels.__version__}, "
          f"torch {torch.__version__}")
    print(f"device {device}" + (f" ({torch.cuda.get_device_name(device)})" if device.type == "cuda" else "")
          + f"; Hopper kernels available: {ok}{'' if ok else ' - ' + why}")

    # 1. the one call
    flashqla.register()
    if args.cpu_mapping:
        flashqla.register(devices=["cpu"], functions=False)

    # 2. the model, kernelized
    if args.model is None:
        base = tiny_model(args.family, dtype, args.layers, args.hidden, args.vocab).to(device)
        model = copy.deepcopy(base) if args.compare else base
        kernels.kernelize(model, mode=Mode.INFERENCE, device=device.type)
    elif args.via == "from_pretrained":
        load = dict(dtype=dtype, device_map=str(device))
        base = transformers.AutoModelForCausalLM.from_pretrained(args.model, **load).eval() if args.compare else None
        model = transformers.AutoModelForCausalLM.from_pretrained(args.model, use_kernels=True, **load).eval()
    else:
        base = transformers.AutoModelForCausalLM.from_pretrained(args.model, dtype=dtype, device_map=str(device)).eval()
        model = copy.deepcopy(base) if args.compare else base
        kernels.kernelize(model, mode=Mode.INFERENCE, device=device.type)

    gdn = gdn_modules(model)
    swapped = sum(runs_flashqla(m) for m in gdn)
    print(f"GDN modules: {len(gdn)}, running flashqla's layer: {swapped}")
    calls = count_calls(model)

    vocab = model.config.get_text_config().vocab_size
    ids = torch.randint(1, vocab, (args.batch, args.prompt_len), generator=torch.Generator().manual_seed(0)).to(device)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out, t_gen = generate(model, ids, args.new_tokens, device)
        t_prefill, t_step = timed_run(model, ids, args.new_tokens, device)
    for w in caught:
        if "flashqla" in str(w.message):
            print(f"warning: {w.message}")
    print(f"flashqla's layer ran: {'yes' if calls['flashqla'] else 'no'} "
          f"({calls['flashqla']} calls; GDN calls through another forward: {calls['other']})")
    if calls["flashqla"]:
        kernel_path = ok and device.type == "cuda" and dtype != torch.float32
        print(f"op served by: {'Hopper kernels' if kernel_path else 'reference'}"
              + ("" if kernel_path or not any("flashqla" in str(w.message) for w in caught) else " (see warning)"))
    print("generated:", out[0, args.prompt_len:].tolist())
    report("swapped" if swapped else "model", args, t_prefill, t_step, t_gen)

    if args.compare and base is not None:
        ref, t_gen_ref = generate(base, ids, args.new_tokens, device)
        t_prefill_ref, t_step_ref = timed_run(base, ids, args.new_tokens, device)
        report("unswapped", args, t_prefill_ref, t_step_ref, t_gen_ref)
        same = torch.equal(ref, out)
        print(f"prefill speedup x{t_prefill_ref / t_prefill:.2f}, decode step speedup x{t_step_ref / t_step:.2f}; "
              f"generated tokens equal: {same}")
        if not same:
            n = (ref[:, args.prompt_len:] != out[:, args.prompt_len:]).sum().item()
            print(f"  ({n} of {ref[:, args.prompt_len:].numel()} generated tokens differ: bf16 near-ties "
                  "in random models make greedy choices diverge; see tests/test_layers_e2e_cpu.py)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
