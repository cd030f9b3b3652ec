"""Quick start: flashqla as a Hugging Face hub kernel.

From the hub (kernels 0.17.2):

    from kernels import get_kernel
    flashqla = get_kernel("qwen/flashqla", version=1)
    o, state = flashqla.chunk_gated_delta_rule(q, k, v, g, beta, output_final_state=True)

kernels picks the build variant for your torch: `torch-cuda` (any torch >= 2.8 built with CUDA; the
prebuilt sm_90a kernels run on H100/H200) or `torch-cpu` (CPU-only torch; the pure-torch reference).

This script runs the same call offline against this checkout, the way kernels resolves local overrides:

    LOCAL_KERNELS="qwen/flashqla=<repo>"  ->  get_kernel("qwen/flashqla", version=1) loads <repo>/build/<variant>

(`kernels.get_local_kernel(Path("<repo>"))` is the other offline route; --local uses it.)
It needs <repo>/build from `python -m flashqla_kernels.build`; without it, a reference-only layout is
written to a temporary directory first. --hub loads from the Hugging Face Hub instead (network).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
REPO_ID = "qwen/flashqla"


def layout_root(tmp: str) -> Path:
    """<repo> when the build exists, else a temporary repo with a reference-only layout."""
    if (REPO / "build" / "torch-cpu" / "metadata.json").is_file():
        return REPO
    sys.path.insert(0, str(REPO))
    from flashqla_kernels.hub_layout import write_hub_layout

    root = Path(tmp)
    write_hub_layout(REPO, root / "build", bin_dir=None)
    print(f"(no {REPO / 'build'}: wrote a reference-only layout to {root / 'build'}; "
          "run `python -m flashqla_kernels.build` for the real one)")
    return root


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="Load flashqla with kernels and run it once.")
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--local", action="store_true", help="use kernels.get_local_kernel(<repo>)")
    mode.add_argument("--hub", action="store_true", help="download from the Hugging Face Hub")
    args = ap.parse_args(argv)

    with tempfile.TemporaryDirectory() as tmp:
        if args.hub:
            how = f'get_kernel("{REPO_ID}", version=1) from the Hub'
        else:
            root = layout_root(tmp)
            if args.local:
                how = f"get_local_kernel({root})"
            else:
                # LOCAL_KERNELS must be set before get_kernel runs; kernels reads it on every call.
                os.environ["LOCAL_KERNELS"] = f"{REPO_ID}={root}"
                how = f'LOCAL_KERNELS="{REPO_ID}={root}" + get_kernel("{REPO_ID}", version=1)'

        import torch
        import kernels

        if args.local:
            fq = kernels.get_local_kernel(root)
        else:
            # Online, kernels only loads repos of publishers the Hub marks as trusted, unless allowed
            # explicitly: --hub allows exactly this repository. Offline overrides skip that check.
            fq = kernels.get_kernel(REPO_ID, version=1, trust_remote_code=[REPO_ID] if args.hub else False)

        variant = Path(fq.__file__).parent.name
        print(f"loaded {REPO_ID} via {how}")
        print(f"  module {fq.__name__}  variant {variant}  ({Path(fq.__file__).parent})")
        if hasattr(fq, "kernels_available"):
            ok, reason = fq.kernels_available()
            print(f"  GPU kernels available: {ok} ({reason})")

        # One small call: 2 packed sequences, 2 key heads shared by 4 value heads, head dim 128.
        device = "cuda" if torch.cuda.is_available() else "cpu"
        gen = torch.Generator().manual_seed(0)
        T, H, HV, D = 200, 2, 4, 128
        dtype = torch.bfloat16
        q = torch.randn(1, T, H, D, generator=gen).to(dtype)
        k = torch.randn(1, T, H, D, generator=gen).to(dtype)
        v = torch.randn(1, T, HV, D, generator=gen).to(dtype)
        g = torch.nn.functional.logsigmoid(torch.randn(1, T, HV, generator=gen)) / 16
        beta = torch.sigmoid(torch.randn(1, T, HV, generator=gen))
        cu_seqlens = torch.tensor([0, 80, T], dtype=torch.int32)
        inputs = (q, k, v, g, beta)

        o, state = fq.chunk_gated_delta_rule(
            *(x.to(device) for x in inputs), output_final_state=True,
            use_qk_l2norm_in_kernel=True, cu_seqlens=cu_seqlens.to(device))
        o_ref, s_ref = fq.reference.naive_recurrent_gated_delta_rule_f64(
            *(x.double() for x in inputs), output_final_state=True,
            use_qk_l2norm_in_kernel=True, cu_seqlens=cu_seqlens)
        err_o = float((o.double().cpu() - o_ref).norm() / o_ref.norm())
        err_s = float((state.double().cpu() - s_ref).norm() / s_ref.norm())
        print(f"  chunk_gated_delta_rule on {device}: o {list(o.shape)} {o.dtype}, final state {list(state.shape)}")
        print(f"  relative L2 error vs the float64 reference: o {err_o:.2e}, state {err_s:.2e}")
        return 0 if max(err_o, err_s) < 2e-2 else 1


if __name__ == "__main__":
    sys.exit(main())
