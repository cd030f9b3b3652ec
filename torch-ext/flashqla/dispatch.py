"""Decide whether the prebuilt Hopper kernels can serve a call, and run them.

The kernels take: CUDA tensors on a compute-capability 9.0 GPU (H100/H200), K == V == 128, q/k/v in
bf16 or fp16, any GVA ratio, fixed-length or packed varlen, with no autograd graph requested (no
backward kernel yet). fp32 q/k/v run on the reference (exact, slower) rather than being cast, so an fp32
caller keeps fp32 accuracy. Everything else valid falls back to the reference with a one-time warning
naming the reason; CPU tensors use the reference silently.
"""

from __future__ import annotations

import os
import weakref

import torch

from .warn import warn_once

HEAD_DIM = 128
_KERNEL_DTYPES = (torch.bfloat16, torch.float16)
_DTYPE_NAMES = {torch.bfloat16: "bfloat16", torch.float16: "float16"}
_CU_CACHE: dict[int, tuple] = {}
_FIXED_CACHE: dict[tuple, tuple] = {}
_FIXED_CACHE_SIZE = 64
_MAX_GRID_Y = 65535  # CUDA's grid y limit: the kernels put sequences on grid y


def device_supported(device: torch.device) -> tuple[bool, str]:
    if device.type != "cuda":
        return False, "inputs are not on a CUDA device"
    major, minor = torch.cuda.get_device_capability(device)
    if (major, minor) != (9, 0):
        return False, f"the kernels are built for sm_90a (H100/H200); this GPU is sm_{major}{minor}"
    return True, ""


def _binaries_ready() -> tuple[bool, str]:
    from . import loader

    if loader.find("chunk_fwd", dtype="bfloat16", use_l2norm=False, block_v=128) is None:
        return False, "no prebuilt binaries found (run `python -m flashqla_kernels.build`)"
    return True, ""


def kernel_decline_reason(problem, q, k, v, g, beta, initial_state) -> str | None:
    """None when the kernels can serve this call, else why not (for the one-time warning)."""
    ok, why = device_supported(q.device)
    if not ok:
        return why
    if problem.K != HEAD_DIM or problem.V != HEAD_DIM:
        return f"head dims K={problem.K}, V={problem.V}: the kernels are built for K = V = {HEAD_DIM}"
    if q.dtype not in _KERNEL_DTYPES:
        return f"q/k/v dtype {q.dtype}: the kernels take bf16/fp16 (fp32 runs on the exact reference)"
    if torch.is_grad_enabled() and any(
        t is not None and t.requires_grad for t in (q, k, v, g, beta, initial_state)
    ):
        return "autograd requested: no backward kernel yet, the differentiable reference serves it"
    ok, why = _binaries_ready()
    if not ok:
        return why
    return None


def _chunk_offsets(cu32: torch.Tensor) -> torch.Tensor:
    from .ops import chunk_offsets_for

    return chunk_offsets_for(cu32)


def packed_seqlens(cu_seqlens: torch.Tensor | None, B: int, T: int, device) -> tuple[torch.Tensor, torch.Tensor]:
    """(cu_seqlens int32, chunk_offsets int32) on the device, cached: no host sync once a tensor is known.

    Packed varlen: cached per cu_seqlens tensor object (held weakly) and its version counter, so an
    in-place edit or a new tensor recomputes; a new tensor's values are checked once (one host sync,
    skipped while a CUDA graph is being captured). Fixed length: cached per (B, T, device).
    """
    if cu_seqlens is None:
        key = (B, T, str(device))
        hit = _FIXED_CACHE.get(key)
        if hit is None:
            cu = (torch.arange(B + 1, dtype=torch.int32, device=device) * T)
            hit = (cu, _chunk_offsets(cu))
            if len(_FIXED_CACHE) >= _FIXED_CACHE_SIZE:  # bounded: many distinct (B, T) must not leak
                _FIXED_CACHE.pop(next(iter(_FIXED_CACHE)))
            _FIXED_CACHE[key] = hit
        return hit
    hit = _CU_CACHE.get(id(cu_seqlens))
    if hit is not None and hit[0]() is cu_seqlens and hit[1] == cu_seqlens._version:
        return hit[2], hit[3]
    capturing = cu_seqlens.is_cuda and torch.cuda.is_current_stream_capturing()
    if not capturing:
        # once per cu_seqlens tensor (one sync, then cached): bad offsets would make the kernels read
        # and write out of bounds. Under graph capture the tensor must have been seen once before.
        from .validation import _check_cu_seqlens_values, cu_seqlens_host

        _check_cu_seqlens_values(cu_seqlens_host(cu_seqlens), T)
    cu = cu_seqlens.to(device=device, dtype=torch.int32).contiguous()
    off = _chunk_offsets(cu)
    key = id(cu_seqlens)
    _CU_CACHE[key] = (weakref.ref(cu_seqlens, lambda _r, key=key, cache=_CU_CACHE: cache.pop(key, None)),
                      cu_seqlens._version, cu, off)
    return cu, off


def choose_block_v(num_pairs: int, device: torch.device) -> int:
    """Split V across two CTAs when (sequence, head) pairs alone would leave SMs idle.

    FLASHQLA_BLOCK_V=64|128 forces a choice (tests and benchmarks use it to cover both binaries).
    """
    forced = os.environ.get("FLASHQLA_BLOCK_V")
    if forced:
        return int(forced)
    sms = torch.cuda.get_device_properties(device).multi_processor_count
    return 64 if num_pairs < sms else 128


def _packed(problem, q, k, v, g, beta, initial_state):
    """The kernels' inputs: tokens packed along one axis ([B*T, heads, dim]), gates and states in fp32."""
    BT, H, HV, K, V = problem.B * problem.T, problem.H, problem.HV, problem.K, problem.V
    h0 = None if initial_state is None else initial_state.to(torch.float32).contiguous()
    return (q.reshape(BT, H, K).contiguous(), k.reshape(BT, H, K).contiguous(),
            v.reshape(BT, HV, V).contiguous(), g.reshape(BT, HV).to(torch.float32).contiguous(),
            beta.reshape(BT, HV).to(torch.float32).contiguous(), h0)


def _scale(problem, scale) -> float:
    return float(problem.K ** -0.5 if scale is None else scale)


@torch.compiler.disable  # under torch.compile: a graph break, then exactly the eager path
def try_chunk_forward(problem, q, k, v, g, beta, scale, initial_state, output_final_state,
                      use_qk_l2norm_in_kernel, cu_seqlens):
    """Run the chunked forward on the kernels, or return None to let the reference serve it."""
    if q.device.type != "cuda":
        return None
    why = kernel_decline_reason(problem, q, k, v, g, beta, initial_state)
    if why is not None:
        warn_once("chunk:" + why, f"flashqla: chunk_gated_delta_rule runs on the reference: {why}")
        return None
    from .ops import chunk_fwd

    cu, off = packed_seqlens(cu_seqlens, problem.B, problem.T, q.device)
    o, ht = chunk_fwd(*_packed(problem, q, k, v, g, beta, initial_state), cu, off,
                      _scale(problem, scale), bool(use_qk_l2norm_in_kernel), bool(output_final_state),
                      choose_block_v(problem.N * problem.HV, q.device))
    return o.view(problem.B, problem.T, problem.HV, problem.V), (ht if output_final_state else None)


def choose_recurrent_block_v(num_pairs: int, device: torch.device) -> int:
    """V columns a decode CTA owns: 16 when 32-column CTAs (4 per (sequence, head)) would not cover
    the SMs, else 32. The thread count is 4 per column either way; only the spread over SMs changes.

    FLASHQLA_RECURRENT_BLOCK_V=32|16 forces a choice (tests and benchmarks use it to cover both binaries).
    """
    forced = os.environ.get("FLASHQLA_RECURRENT_BLOCK_V")
    if forced:
        return int(forced)
    sms = torch.cuda.get_device_properties(device).multi_processor_count
    return 16 if num_pairs * (HEAD_DIM // 32) < sms else 32


@torch.compiler.disable  # under torch.compile: a graph break, then exactly the eager path
def try_recurrent_forward(problem, q, k, v, g, beta, scale, initial_state, output_final_state,
                          use_qk_l2norm_in_kernel, cu_seqlens):
    """Run the token recurrence (decode) on the kernels, or return None to let the reference serve it."""
    if q.device.type != "cuda":
        return None
    why = kernel_decline_reason(problem, q, k, v, g, beta, initial_state)
    if why is None and problem.N > _MAX_GRID_Y:
        why = f"{problem.N} sequences: the decode kernel's grid takes at most {_MAX_GRID_Y}"
    if why is None:
        from . import loader

        block_v = choose_recurrent_block_v(problem.N * problem.HV, q.device)
        if loader.find("recurrent_fwd", dtype=_DTYPE_NAMES[q.dtype], use_l2norm=bool(use_qk_l2norm_in_kernel),
                       block_v=block_v) is None:
            why = "no prebuilt recurrent_fwd binary (rebuild with `python -m flashqla_kernels.build`)"
    if why is not None:
        warn_once("recurrent:" + why, f"flashqla: fused_recurrent_gated_delta_rule runs on the reference: {why}")
        return None
    from .ops import recurrent_fwd

    cu, _ = packed_seqlens(cu_seqlens, problem.B, problem.T, q.device)
    o, ht = recurrent_fwd(*_packed(problem, q, k, v, g, beta, initial_state), cu,
                          _scale(problem, scale), bool(use_qk_l2norm_in_kernel), bool(output_final_state),
                          block_v)
    return o.view(problem.B, problem.T, problem.HV, problem.V), (ht if output_final_state else None)
