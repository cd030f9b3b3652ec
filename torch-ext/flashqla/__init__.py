"""flashqla: Gated DeltaNet linear-attention kernels for NVIDIA Hopper (sm_90a), prebuilt from TileLang.

Public API (FLA's names and conventions):
    chunk_gated_delta_rule(q, k, v, g, beta, scale=None, initial_state=None, output_final_state=False,
                           use_qk_l2norm_in_kernel=False, cu_seqlens=None) -> (o, final_state | None)
    fused_recurrent_gated_delta_rule(...)  same arguments, for decoding
    kernels_available() -> (bool, reason)
    reference                              the pure-torch reference (oracle and fallback)
"""

from __future__ import annotations

from . import reference
from .api import chunk_gated_delta_rule, fused_recurrent_gated_delta_rule

__version__ = "0.1.0"


def kernels_available(device=None) -> tuple[bool, str]:
    """Whether the prebuilt GPU kernels can run here, and if not, why."""
    import torch

    from .dispatch import _binaries_ready, device_supported

    if not torch.cuda.is_available():
        return False, "no CUDA device: the pure-torch reference runs"
    dev = torch.device("cuda", torch.cuda.current_device()) if device is None else torch.device(device)
    ok, why = device_supported(dev)
    if not ok:
        return False, why
    return _binaries_ready()


try:  # transformers integration; optional so the core API imports without transformers/kernels
    from . import layers  # noqa: F401
    from .register import register  # noqa: F401
except ImportError as _e:  # pragma: no cover - depends on the environment
    if (_e.name or "").split(".")[0] not in ("transformers", "kernels"):
        raise
    _LAYERS_IMPORT_ERROR = _e

__all__ = ["chunk_gated_delta_rule", "fused_recurrent_gated_delta_rule", "kernels_available", "reference"]
