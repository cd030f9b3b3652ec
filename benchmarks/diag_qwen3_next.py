"""Where does the swapped Qwen3-Next model's bf16 error come from? (a diagnostic, not a test)

Prefill of 4 x 150 tokens into a cache (as tests/test_layer_kernels_gpu.py's cache test), median over
tokens of the mean |logit - fp32 logit|, with each flashqla piece switched off in turn.
python benchmarks/diag_qwen3_next.py [family] [dense]
"""

import contextlib
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))
from test_layers_gpu import exact_gdn, swapped_trio  # noqa: E402

import flashqla.api as fa  # noqa: E402
import flashqla.layer_kernels as lk  # noqa: E402


@contextlib.contextmanager
def off(mod, name):
    orig = getattr(mod, name)
    setattr(mod, name, lambda *a, **k: None)
    try:
        yield
    finally:
        setattr(mod, name, orig)


def main():
    from transformers import DynamicCache

    family = sys.argv[1] if len(sys.argv) > 1 else "qwen3_next"
    dense = len(sys.argv) > 2 and sys.argv[2] == "dense"
    fp32, base, fast = swapped_trio(family, dense_mlp=dense)
    gen = torch.Generator().manual_seed(7)
    prompt = torch.randint(1, 512, (4, 150), generator=gen).cuda()

    def err(model, cache):
        with torch.no_grad():
            kw = dict(past_key_values=DynamicCache(config=model.config), use_cache=True) if cache else dict(use_cache=False)
            out = model(prompt, **kw).logits.float()
            kw = dict(past_key_values=DynamicCache(config=fp32.config), use_cache=True) if cache else dict(use_cache=False)
            with exact_gdn(family):  # the tests' yardstick: transformers' pure-torch GDN in fp32
                ref = fp32(prompt, **kw).logits.float()
        e = (out - ref).abs().mean(-1).flatten()
        return f"median {e.median().item():.4f} mean {e.mean().item():.4f}"

    for cache in (False, True):
        print(family, "dense MLPs" if dense else "MoE", "cache" if cache else "no cache")
        print("  transformers bf16      ", err(base, cache))
        print("  flashqla all kernels   ", err(fast, cache))
        with off(lk, "conv_qkv"):
            print("  conv kernel off        ", err(fast, cache))
        with off(lk, "gated_rmsnorm"):
            print("  norm kernel off        ", err(fast, cache))
        with off(fa, "try_chunk_forward"):
            print("  chunk op on reference  ", err(fast, cache))
        with off(lk, "conv_qkv"), off(lk, "gated_rmsnorm"), off(fa, "try_chunk_forward"):
            print("  all three off          ", err(fast, cache))


if __name__ == "__main__":
    main()
