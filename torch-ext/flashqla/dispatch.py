"""Decide whether the prebuilt Hopper kernels can serve a call, and run them.

The kernels take: CUDA tensors on a compute-capability 9.0 GPU (H100/H200), K == V == 128, q/k/v in
bf16 or fp16, any GVA ratio, fixed-length or packed varlen, with no autograd graph requested (no
backward kernel yet). fp32 q/k/v run on the reference (exact, slower) rather than being cast, so an fp32
caller keeps fp32 accuracy. Everything else valid falls back to the reference with a one-time warning
naming the reason; CPU tensors use the reference silently.

Under torch.compile the call traces as graph nodes, with no graph break: the decisions that depend only on
the machine and the call's static properties (device, dtype, head dims, binaries present, block size) are
made in :func:`kernel_plan`, which Dynamo runs once while tracing and treats as a constant
(``torch.compiler.assume_constant_result``); the kernels are ``torch.library`` custom ops with fake
implementations (:mod:`.ops`); the per-tensor ``cu_seqlens`` cache of eager calls is replaced by the same
few device ops traced into the graph.
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


@torch.compiler.assume_constant_result
def has_binary(kernel: str, params: tuple) -> bool:
    """Whether the prebuilt ``kernel`` with static parameters ``params`` ((name, value) pairs) exists.
    A constant under torch.compile (the binaries do not change while a process runs)."""
    from . import loader

    return loader.find(kernel, **dict(params)) is not None


@torch.compiler.assume_constant_result
def runs_kernels_on(device: torch.device) -> bool:
    """Whether ``device`` is a GPU the kernels are built for (a constant under torch.compile)."""
    return device_supported(device)[0]


def _static_decline_reason(device: torch.device, dtype: torch.dtype, K: int, V: int) -> str | None:
    ok, why = device_supported(device)
    if not ok:
        return why
    if K != HEAD_DIM or V != HEAD_DIM:
        return f"head dims K={K}, V={V}: the kernels are built for K = V = {HEAD_DIM}"
    if dtype not in _KERNEL_DTYPES:
        return f"q/k/v dtype {dtype}: the kernels take bf16/fp16 (fp32 runs on the exact reference)"
    ok, why = _binaries_ready()
    return None if ok else why


def _autograd_requested(*tensors) -> bool:
    return torch.is_grad_enabled() and any(t is not None and t.requires_grad for t in tensors)


_OP_NAMES = {"chunk": "chunk_gated_delta_rule", "recurrent": "fused_recurrent_gated_delta_rule"}
_AUTOGRAD_REASON = "autograd requested: no backward kernel yet, the differentiable reference serves it"


@torch.compiler.assume_constant_result
def kernel_plan(op: str, device: torch.device, dtype: torch.dtype, K: int, V: int, use_l2norm: bool,
                num_seqs: int, num_v_heads: int, short_seqs: bool = False) -> tuple[str | None, int]:
    """(why the kernels decline the call, or None; the block_v to launch) from a call's static properties.

    ``op`` is "chunk" or "recurrent"; ``short_seqs``: the sequences average at most SHORT_SEQ_CHUNKS chunks
    (a bool, so that under torch.compile a new prompt length does not recompile, only crossing the bound). Warns once per reason when declining. The result depends only on
    the machine, the prebuilt binaries, the FLASHQLA_*BLOCK_V overrides and the arguments, so
    torch.compile runs this once while tracing and keeps the result as a constant (the graph is
    specialised on device, dtype and these sizes anyway). Autograd is checked by the caller.
    """
    why = _static_decline_reason(device, dtype, K, V)
    block_v = 0
    if why is None and op == "recurrent":
        block_v = choose_recurrent_block_v(num_seqs * num_v_heads, device)
        if num_seqs > _MAX_GRID_Y:
            why = f"{num_seqs} sequences: the decode kernel's grid takes at most {_MAX_GRID_Y}"
        elif not has_binary("recurrent_fwd", (("dtype", _DTYPE_NAMES[dtype]), ("use_l2norm", bool(use_l2norm)),
                                              ("block_v", block_v))):
            why = "no prebuilt recurrent_fwd binary (rebuild with `python -m flashqla_kernels.build`)"
    elif why is None:
        block_v = choose_block_v(num_seqs * num_v_heads, device, short_seqs)
    if why is not None:
        warn_once(f"{op}:{why}", f"flashqla: {_OP_NAMES[op]} runs on the reference: {why}")
    return why, block_v


def _chunk_offsets(cu32: torch.Tensor) -> torch.Tensor:
    from .ops import chunk_offsets_for

    return chunk_offsets_for(cu32)


def packed_seqlens(cu_seqlens: torch.Tensor | None, B: int, T: int, device) -> tuple[torch.Tensor, torch.Tensor]:
    """(cu_seqlens int32, chunk_offsets int32) on the device, cached: no host sync once a tensor is known.

    Packed varlen: cached per cu_seqlens tensor object (held weakly) and its version counter, so an
    in-place edit or a new tensor recomputes; a new tensor's values are checked once (one host sync,
    skipped while a CUDA graph is being captured). Fixed length: cached per (B, T, device).

    Under torch.compile the two tensors are computed by device ops traced into the graph (a few tiny
    kernels, no host sync); the values of a packed ``cu_seqlens`` are then not checked, as under CUDA
    graph capture (checking them needs the host).
    """
    if torch.compiler.is_compiling():
        if cu_seqlens is None:
            cu = torch.arange(B + 1, dtype=torch.int32, device=device) * T
        else:
            cu = cu_seqlens.to(device=device, dtype=torch.int32).contiguous()
        return cu, _chunk_offsets(cu)
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


SHORT_SEQ_CHUNKS = 32  # sequences of at most this many 64-token chunks on average count as short


def choose_block_v(num_pairs: int, device: torch.device, short_seqs: bool = False) -> int:
    """V columns a fused-forward CTA owns: 64 (two CTAs per (sequence, head)) or 128.

    The fused kernel runs one CTA per SM, each walking its sequence's chunks. A V block of 64 halves each
    CTA's chain but doubles the CTAs: it wins when both halves still fit in one wave (2 x pairs <= SMs),
    and, measured, on short sequences (``short_seqs``: at most SHORT_SEQ_CHUNKS chunks on average) with
    fewer pairs than SMs.
    With long sequences and SMs / 2 < pairs < SMs the second wave would double the time, so 128.
    FLASHQLA_BLOCK_V=64|128 forces a choice (tests and benchmarks use it to cover both binaries).
    """
    forced = os.environ.get("FLASHQLA_BLOCK_V")
    if forced:
        return int(forced)
    sms = torch.cuda.get_device_properties(device).multi_processor_count
    if 2 * num_pairs <= sms:
        return 64
    if num_pairs < sms and short_seqs:
        return 64
    return 128


def _packed(problem, q, k, v, g, beta, initial_state):
    """The kernels' inputs: tokens packed along one axis ([B*T, heads, dim]), gates and states in fp32."""
    BT, H, HV, K, V = problem.B * problem.T, problem.H, problem.HV, problem.K, problem.V
    h0 = None if initial_state is None else initial_state.to(torch.float32).contiguous()
    return (q.reshape(BT, H, K).contiguous(), k.reshape(BT, H, K).contiguous(),
            v.reshape(BT, HV, V).contiguous(), g.reshape(BT, HV).to(torch.float32).contiguous(),
            beta.reshape(BT, HV).to(torch.float32).contiguous(), h0)


def _scale(problem, scale) -> float:
    return float(problem.K ** -0.5 if scale is None else scale)


def _plan(op, problem, q, k, v, g, beta, initial_state, use_qk_l2norm_in_kernel) -> tuple[bool, int]:
    """(whether the kernels serve the call, block_v): the static plan, then the autograd check."""
    why, block_v = kernel_plan(op, q.device, q.dtype, int(problem.K), int(problem.V),
                               bool(use_qk_l2norm_in_kernel), int(problem.N), int(problem.HV),
                               bool(problem.B * problem.T <= SHORT_SEQ_CHUNKS * 64 * problem.N))
    if why is not None:
        return False, 0
    if _autograd_requested(q, k, v, g, beta, initial_state):
        if not torch.compiler.is_compiling():  # a warning would be a graph break; eager calls say it
            warn_once(f"{op}:autograd", f"flashqla: {_OP_NAMES[op]} runs on the reference: {_AUTOGRAD_REASON}")
        return False, 0
    return True, block_v


def try_chunk_forward(problem, q, k, v, g, beta, scale, initial_state, output_final_state,
                      use_qk_l2norm_in_kernel, cu_seqlens):
    """Run the chunked forward on the kernels, or return None to let the reference serve it."""
    if q.device.type != "cuda":
        return None
    ok, block_v = _plan("chunk", problem, q, k, v, g, beta, initial_state, use_qk_l2norm_in_kernel)
    if not ok:
        return None
    from .ops import chunk_fwd

    cu, off = packed_seqlens(cu_seqlens, problem.B, problem.T, q.device)
    o, ht = chunk_fwd(*_packed(problem, q, k, v, g, beta, initial_state), cu, off,
                      _scale(problem, scale), bool(use_qk_l2norm_in_kernel), bool(output_final_state), block_v)
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


def try_recurrent_forward(problem, q, k, v, g, beta, scale, initial_state, output_final_state,
                          use_qk_l2norm_in_kernel, cu_seqlens):
    """Run the token recurrence (decode) on the kernels, or return None to let the reference serve it."""
    if q.device.type != "cuda":
        return None
    ok, block_v = _plan("recurrent", problem, q, k, v, g, beta, initial_state, use_qk_l2norm_in_kernel)
    if not ok:
        return None
    from .ops import recurrent_fwd

    cu, _ = packed_seqlens(cu_seqlens, problem.B, problem.T, q.device)
    o, ht = recurrent_fwd(*_packed(problem, q, k, v, g, beta, initial_state), cu,
                          _scale(problem, scale), bool(use_qk_l2norm_in_kernel), bool(output_final_state),
                          block_v)
    return o.view(problem.B, problem.T, problem.HV, problem.V), (ht if output_final_state else None)
