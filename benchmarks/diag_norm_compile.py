"""Which check of layer_kernels.gated_rmsnorm declines under torch.compile on the GPU (diagnostic; it found
that torch 2.11's Dynamo reads a forward-identity check, since removed, differently from eager).

python benchmarks/diag_norm_compile.py   (needs an sm_90 GPU and the binaries)
Builds the GPU tests' tiny Qwen3.5 model, kernelizes it as the compile test does, and evaluates each check
eagerly and inside a fullgraph-compiled function.
"""

import copy
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))


def main():
    import kernels
    from kernels import Mode

    import flashqla
    from flashqla import layer_kernels as lk
    from test_layers_gpu import _model

    flashqla.register()
    model = _model("qwen3_5").cuda().to(torch.bfloat16)
    kernels.kernelize(model, mode=Mode.INFERENCE | Mode.TORCH_COMPILE, device="cuda")
    norm = next(m for m in model.modules() if type(m).__name__.endswith("RMSNormGated"))
    x = torch.randn(64, 128, device="cuda", dtype=torch.bfloat16)
    z = torch.randn(64, 128, device="cuda", dtype=torch.bfloat16)
    checks = {
        "class name": lambda: type(norm).__name__ in lk._NORM_CLASSES,
        "activation": lambda: getattr(norm, "activation", "silu") in ("silu", "swish"),
        "eligible": lambda: lk._eligible(x, norm.weight),
        "has_binary": lambda: lk.has_binary("gated_rmsnorm", (("dtype", "bfloat16"), ("dim", 128))),
        "gated_rmsnorm runs": lambda: lk.gated_rmsnorm(norm, x, z) is not None,
    }
    with torch.no_grad():
        for name, check in checks.items():
            def fn(t, check=check):
                return t + (1 if check() else 0)
            torch._dynamo.reset()
            try:
                traced = torch.compile(fn, backend="eager", fullgraph=True)(x)[0, 0].item() - x[0, 0].item()
            except Exception as e:  # noqa: BLE001
                traced = f"error: {str(e).splitlines()[0][:200]}"
            print(f"{name}: eager {check()} compiled {traced}", flush=True)


if __name__ == "__main__":
    main()
