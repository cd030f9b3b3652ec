"""The eager fast path of chunk_gated_delta_rule: a call whose signature the kernels served before skips the
validation and the plan and goes straight to the launches.

On short inputs the forward is bound by its host time (~100 us a call on the H200 machine's host, against
50-80 us of GPU time on the grid's short rows; `benchmarks/host_breakdown.py`): validation, the plan, packing
and their Python layers were about half of it. A call's *signature* holds every fact those steps decide on:
the shapes, dtypes, devices and contiguity of the tensors, scale and the flags (with their Python types),
the cu_seqlens tensor (by identity, held weakly, and its version counter), whether autograd is asked for,
and the settings read per call (FLASHQLA_BLOCK_V, FLASHQLA_HEAD_SPLIT, the kkt merge, the fused inverse, output
poisoning). Equal signatures give equal validation results and plans, so a hit reuses the plan that
:func:`dispatch.try_chunk_forward` recorded after serving the first call. Only 16-byte alignment of the data
pointers is a property of the call itself; it is checked on every hit. Writes that torch's version counter does
not see (through `.data`, DLPack or another library) are not seen here either, as in the cu_seqlens caches of the
full path. A cu_seqlens made under torch.inference_mode has no version counter and always takes the full path
(build it outside inference mode to keep the fast path). Anything else (a miss, a non-CUDA tensor, torch.compile
or a dispatch mode, fp32 q/k/v, non-fp32 gates or states, non-contiguous or misaligned inputs) takes
the full path.
"""

from __future__ import annotations

import os
import weakref

import torch

from .validation import tensor_version

_PLANS: dict[tuple, tuple] = {}
_MAX_PLANS = 64  # distinct signatures kept (a new batch shape is a new signature); cleared when full


def signature(q, k, v, g, beta, scale, initial_state, output_final_state, use_l2norm, cu_seqlens):
    """The call's signature, or None when it cannot take the fast path."""
    from . import ops

    try:
        if not ops.runs_directly(q):  # the launches would go through the custom op: the full path records them
            return None
        f32 = torch.float32
        if g.dtype is not f32 or beta.dtype is not f32:
            return None
        contiguous = (q.is_contiguous() and k.is_contiguous() and v.is_contiguous() and g.is_contiguous()
                      and beta.is_contiguous())
        if not contiguous:
            return None
        if initial_state is None:
            state = None
        elif initial_state.dtype is not f32 or not initial_state.is_contiguous():
            return None
        else:
            state = (initial_state.shape, initial_state.device)
        if type(use_l2norm) is not bool or type(scale) not in (float, int, type(None)):
            return None  # e.g. a tensor flag: its value could change under the same key
        if torch.is_grad_enabled() and (q.requires_grad or k.requires_grad or v.requires_grad or g.requires_grad
                                        or beta.requires_grad
                                        or (initial_state is not None and initial_state.requires_grad)):
            return None
        cu = None
        if cu_seqlens is not None:
            version = tensor_version(cu_seqlens)
            if version is None:  # an inference tensor has no version counter: it cannot be a key
                return None
            cu = (id(cu_seqlens), version, cu_seqlens.dtype, cu_seqlens.shape, cu_seqlens.device)
        sig = (q.shape, k.shape, v.shape, g.shape, beta.shape, q.dtype, k.dtype, v.dtype, q.device, k.device,
               v.device, g.device, beta.device, state, type(scale), scale, type(output_final_state),
               output_final_state, type(use_l2norm), use_l2norm, cu, os.environ.get("FLASHQLA_BLOCK_V"),
               os.environ.get("FLASHQLA_HEAD_SPLIT"), ops.KKT_MERGE, ops.FUSED_INVERSE, ops._POISON)
        hash(sig)
        return sig
    except (AttributeError, TypeError):  # not tensors, unhashable scale, ...: the full path says what is wrong
        return None


def remember(sig, cu_seqlens, plan) -> None:
    """Record the :class:`dispatch.ChunkPlan` that served a call with signature ``sig`` (None: nothing to
    record), cu_seqlens held weakly."""
    if sig is None:
        return
    if len(_PLANS) >= _MAX_PLANS:
        _PLANS.clear()
    _PLANS[sig] = (None if cu_seqlens is None else weakref.ref(cu_seqlens), plan)


def run(sig, q, k, v, g, beta, scale, initial_state, cu_seqlens):
    """The forward of a call whose signature was served before, or None (then the full path runs)."""
    hit = _PLANS.get(sig)
    if hit is None:
        return None
    ref, plan = hit
    if ref is not None and ref() is not cu_seqlens:  # another tensor now has the id: not ours
        return None
    if (q.data_ptr() | k.data_ptr() | v.data_ptr() | (0 if initial_state is None else initial_state.data_ptr())) & 15:
        return None
    from .dispatch import _scale, run_chunk_plan

    if plan.eager is not None:  # the launches bound once (ops.ChunkForward): only allocations and launches here
        o, ht = plan.eager(q, k, v, g, beta, initial_state, _scale(plan, scale))
        return o, (ht if plan.output_final_state else None)
    BT = plan.B * plan.T
    return run_chunk_plan(plan, q.view(BT, plan.H, plan.K), k.view(BT, plan.H, plan.K), v.view(BT, plan.HV, plan.V),
                          g.view(BT, plan.HV), beta.view(BT, plan.HV), initial_state,
                          cu_seqlens if plan.cu is None else plan.cu,
                          _scale(plan, scale))  # from the call: -0.0 and 0.0 share a key
