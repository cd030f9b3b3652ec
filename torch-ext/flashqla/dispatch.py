"""Decide whether the prebuilt Hopper kernels can serve a call, and run them.

The kernels take: CUDA tensors on a compute-capability 9.0 GPU (H100/H200), K == V == 128, q/k/v in
bf16 or fp16, any GVA ratio, fixed-length or packed varlen, with no autograd graph requested (no
backward kernel yet). fp32 q/k/v run on the reference (exact, slower) rather than being cast, so an fp32
caller keeps fp32 accuracy. Everything else valid falls back to the reference with a one-time warning
naming the reason; CPU tensors use the reference silently.

Under torch.compile the call traces as graph nodes, with no graph break: the decisions that depend only on
the machine and constants of the graph (device, dtype, binaries present, SM count, the FLASHQLA_*BLOCK_V
overrides) are functions Dynamo runs once while tracing and keeps as constants
(:func:`kernel_plan`, :func:`sm_count`, :func:`forced_block_v`, ``torch.compiler.assume_constant_result``);
every size test (head dims, sequences, pairs per SM count, short sequences) is plain traced code, so
symbolic sizes give guards, not graph breaks; the kernels are ``torch.library`` custom ops with fake
implementations (:mod:`.ops`); the per-tensor ``cu_seqlens`` cache of eager calls is replaced by the same
few device ops traced into the graph, with the values checked on the device.
"""

from __future__ import annotations

import os
import weakref
from typing import NamedTuple, Optional

import torch

from .validation import tensor_version
from .warn import warn_once

HEAD_DIM = 128
_KERNEL_DTYPES = (torch.bfloat16, torch.float16)
_DTYPE_NAMES = {torch.bfloat16: "bfloat16", torch.float16: "float16"}
_CU_CACHE: dict[int, tuple] = {}
_FIXED_CACHE: dict[tuple, tuple] = {}
_FIXED_CACHE_SIZE = 64
_MAX_GRID_Y = 65535  # CUDA's grid y limit: the kernels put sequences on grid y
# Host-side caches of facts that cannot change while a process runs (the eager path asks them every call):
# (op, device, dtype, use_l2norm) keys the kernels served (declines are not cached: they warn once and
# take the reference anyway), and SM counts per device.
_SERVED: set[tuple] = set()
_SM_COUNTS: dict[torch.device, int] = {}


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


def _static_decline_reason(device: torch.device, dtype: torch.dtype) -> str | None:
    ok, why = device_supported(device)
    if not ok:
        return why
    if dtype not in _KERNEL_DTYPES:
        return f"q/k/v dtype {dtype}: the kernels take bf16/fp16 (fp32 runs on the exact reference)"
    ok, why = _binaries_ready()
    return None if ok else why


def _autograd_requested(*tensors) -> bool:
    return torch.is_grad_enabled() and any(t is not None and t.requires_grad for t in tensors)


_OP_NAMES = {"chunk": "chunk_gated_delta_rule", "recurrent": "fused_recurrent_gated_delta_rule"}
_AUTOGRAD_REASON = "autograd requested: no backward kernel yet, the differentiable reference serves it"


@torch.compiler.assume_constant_result
def kernel_plan(op: str, device: torch.device, dtype: torch.dtype, use_l2norm: bool) -> str | None:
    """Why the kernels decline a call on ``device`` with this dtype and flag, or None (warned once per reason).

    ``op`` is "chunk" or "recurrent". Depends only on the machine, the prebuilt binaries and its arguments,
    which are constants of a compiled graph, so torch.compile runs it once while tracing and keeps the
    result. Every size (head dims, sequences, tokens) is tested by the caller in traced code
    (:func:`_plan`), where it becomes a guard, not a constant (sizes may be symbolic). Autograd is checked
    by the caller too.
    """
    key = (op, device, dtype, bool(use_l2norm))
    if key in _SERVED:  # eager calls: a CUDA device the kernels served once keeps being served
        return None
    why = _static_decline_reason(device, dtype)
    if why is None and op == "recurrent" and not all(
            has_binary("recurrent_fwd", (("dtype", _DTYPE_NAMES[dtype]), ("use_l2norm", bool(use_l2norm)),
                                         ("block_v", block_v))) for block_v in (16, 32)):
        why = "no prebuilt recurrent_fwd binary (rebuild with `python -m flashqla_kernels.build`)"
    if why is not None:
        warn_once(f"{op}:{why}", f"flashqla: {_OP_NAMES[op]} runs on the reference: {why}")
    elif device.type == "cuda":
        _SERVED.add(key)
    return why


@torch.compiler.assume_constant_result
def sm_count(device: torch.device) -> int:
    """Streaming multiprocessors of ``device`` (a constant under torch.compile; cached per device)."""
    n = _SM_COUNTS.get(device)
    if n is None:
        n = _SM_COUNTS[device] = torch.cuda.get_device_properties(device).multi_processor_count
    return n


# chunk_fwd's persistent grid (ops.chunk_fwd_grid) by card. Its gain is per item boundary (~2 us of an item's start
# and end hidden). On an H200 (141 GB, HBM3e) it is the faster grid at every item length (397B-TP1: 1024x8 -3.7%,
# 2048x16 -2.7%, 4096x8 -1.5%, 8192x4 734 vs 745 us; results/2026-11-26-h200-s25/persistent_probe); on an H100 (80 GB,
# HBM3) it made 128-chunk items 11% slower (8192x4: 925 vs 830 us, old and new kernels alike) while the 1024x8 rows
# (16 chunks an item) keep their 0.5-2% (results/2026-11-26-h100-s25/persistent_ab); the cause is not known. Memory
# size tells the two apart (large_memory_card): cards of at least LARGE_CARD_MEMORY keep it for items of any length,
# smaller ones up to PERSISTENT_MAX_CHUNKS chunks an item.
LARGE_CARD_MEMORY = 100 << 30


def large_memory_card(device: torch.device) -> bool:
    """Whether ``device`` has at least LARGE_CARD_MEMORY: an H200 (141 GB, HBM3e) rather than an H100 (80 GB,
    HBM3). Memory size is the runtime's proxy for the card's bandwidth class (the persistent grid's item length,
    :func:`persistent_max_chunks`, and the fused inverse, :func:`fused_inverse_card`)."""
    return torch.cuda.get_device_properties(device).total_memory >= LARGE_CARD_MEMORY


PERSISTENT_MAX_CHUNKS = 32.0


@torch.compiler.assume_constant_result
def persistent_max_chunks(device: torch.device) -> float:
    """The longest items (mean chunks a sequence) that take chunk_fwd's persistent grid on ``device``: any length on
    cards of at least LARGE_CARD_MEMORY, else PERSISTENT_MAX_CHUNKS; FLASHQLA_PERSISTENT_MAX_CHUNKS sets
    it on every card (A/B runs)."""
    forced = os.environ.get("FLASHQLA_PERSISTENT_MAX_CHUNKS")
    if forced:
        try:
            return float(forced)
        except ValueError:
            raise ValueError(f"FLASHQLA_PERSISTENT_MAX_CHUNKS: expected a number of chunks, got {forced!r}") \
                from None
    big = large_memory_card(device)
    return float("inf") if big else PERSISTENT_MAX_CHUNKS


@torch.compiler.assume_constant_result
def forced_block_v(name: str) -> int:
    """The V block forced by environment variable ``name`` (FLASHQLA_BLOCK_V, FLASHQLA_RECURRENT_BLOCK_V),
    or 0. Tests and benchmarks use it to cover every binary; under torch.compile it is read once, while
    tracing (a compiled graph keeps the value it was traced with)."""
    return int(os.environ.get(name) or 0)


def _weak_lookup(cache: dict, obj: torch.Tensor, stamp):
    """The value cached for this tensor object (held weakly) with this stamp, or None."""
    hit = cache.get(id(obj))
    if hit is not None and hit[0]() is obj and hit[1] == stamp:
        return hit[2]
    return None


def _weak_store(cache: dict, obj: torch.Tensor, stamp, value):
    """Cache value for this tensor object until it is freed (its entry then leaves the cache)."""
    key = id(obj)
    cache[key] = (weakref.ref(obj, lambda _r, key=key, cache=cache: cache.pop(key, None)), stamp, value)
    return value


def _chunk_offsets(cu32: torch.Tensor) -> torch.Tensor:
    from .ops import chunk_offsets_for

    return chunk_offsets_for(cu32)


def packed_seqlens(cu_seqlens: torch.Tensor | None, B: int, T: int, device) -> tuple[torch.Tensor, torch.Tensor]:
    """(cu_seqlens int32, chunk_offsets int32) on the device, cached: no host sync once a tensor is known.

    Packed varlen: cached per cu_seqlens tensor object (held weakly) and its version counter, so an
    in-place edit or a new tensor recomputes; a new tensor's values are checked once (one host sync,
    skipped while a CUDA graph is being captured). A cu_seqlens made under torch.inference_mode has no version
    counter, so it is checked and converted every call (one host sync a call). Fixed length: cached per
    (B, T, device).

    Under torch.compile the two tensors are computed by device ops traced into the graph (a few tiny
    kernels, no host sync), and a packed ``cu_seqlens`` is checked by a device-side assert (on CUDA a
    failed one stops the process with the message; under CUDA graph capture of eager calls the values are
    not checked: the tensor must have been seen once before).
    """
    if torch.compiler.is_compiling():
        if cu_seqlens is None:
            cu = torch.arange(B + 1, dtype=torch.int32, device=device) * T
        else:
            cu = cu_seqlens.to(device=device, dtype=torch.int32).contiguous()
            # the host check of eager calls, as a device-side assert (no sync): bad offsets would make the
            # kernels read and write out of bounds
            torch._assert_async((cu[0] == 0) & (cu[-1] == T) & (cu[1:] >= cu[:-1]).all(),
                                "flashqla: cu_seqlens must start at 0, be non-decreasing and end at T")
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
    version = tensor_version(cu_seqlens)  # None: an inference tensor, computed afresh every call (no cache)
    hit = None if version is None else _weak_lookup(_CU_CACHE, cu_seqlens, version)
    if hit is not None:
        return (cu_seqlens if hit[0] is None else hit[0]), hit[1]
    capturing = cu_seqlens.is_cuda and torch.cuda.is_current_stream_capturing()
    if not capturing:
        # once per cu_seqlens tensor (one sync, then cached): bad offsets would make the kernels read
        # and write out of bounds. Under graph capture the tensor must have been seen once before.
        from .validation import _check_cu_seqlens_values, cu_seqlens_host

        _check_cu_seqlens_values(cu_seqlens_host(cu_seqlens), T)
    cu = cu_seqlens.to(device=device, dtype=torch.int32).contiguous()
    off = _chunk_offsets(cu)
    if version is not None:
        # when the conversion was a no-op, cu *is* cu_seqlens: the entry must not hold it (a strong reference
        # to its own key would keep the tensor, its offsets and its chunk table alive forever)
        _weak_store(_CU_CACHE, cu_seqlens, version, (None if cu is cu_seqlens else cu, off))
    return cu, off


_TABLE_CACHE: dict[int, tuple] = {}


def kkt_chunk_table(cu: torch.Tensor, off: torch.Tensor, T: int) -> torch.Tensor:
    """kkt_solve's (first token, sequence end) per chunk slot (:func:`ops.chunk_table_for`), cached per
    ``off`` tensor (which :func:`packed_seqlens` caches per cu_seqlens), so an eager call computes it once
    per cu_seqlens; under torch.compile it is traced into the graph like ``off`` itself."""
    from .ops import chunk_table_for

    if torch.compiler.is_compiling():
        return chunk_table_for(cu, off, T)
    hit = _weak_lookup(_TABLE_CACHE, off, T)
    return hit if hit is not None else _weak_store(_TABLE_CACHE, off, T, chunk_table_for(cu, off, T))


def choose_block_v(num_pairs: int, sms: int) -> int:
    """V columns a fused-forward CTA owns: 64 (two CTAs per (sequence, head)) or 128.

    The fused kernel runs one CTA per SM, each walking its sequence's chunks. A V block of 64 halves each
    CTA's work a chunk (~1.5 vs ~2.4 us a chunk on an H200) but doubles the CTAs, so it wins only while
    both halves fit in one wave (2 x pairs <= SMs); past that, 128 was as fast or faster on every row of
    DESIGN.md's grid, short sequences included (`benchmarks/blockv_graph.py`, GPU time by CUDA graph
    replay, results/2026-11-24-h200-s12/blockv_graph). FLASHQLA_BLOCK_V=64|128 forces a choice
    (:func:`forced_block_v`). Under torch.compile ``num_pairs`` may be symbolic: the comparison becomes a
    guard (a new batch size recompiles only when it crosses the bound).
    """
    forced = forced_block_v("FLASHQLA_BLOCK_V")
    if forced:
        return forced
    return 64 if 2 * num_pairs <= sms else 128


def choose_head_split(num_seqs: int, num_heads: int, sms: int, block_v: int, fused: bool = False) -> int:
    """Value heads that run at V block 128 when the rest run at 64 by a second launch (0: no split).

    The fused kernel holds one CTA per SM, and at V block 128 the (sequence, head) pairs past the last full
    wave form a partial wave that takes as long as a full one. When those pairs, split in two V halves (each
    ~0.6 of a 128-block CTA's time a chunk), fit in one wave, the heads [0, split) run at 128 in the full waves
    and the others at 64 after them: w waves of 128-blocks and one of 64-blocks instead of w + 1 of 128-blocks
    (e.g. 48 heads x 4 sequences on 132 SMs: heads 0-32 at 128, heads 33-47 at 64). The rule assumes sequences
    of similar length, like :func:`choose_block_v`. No split when the V block is forced (FLASHQLA_BLOCK_V), when
    chunk_fwd forms the inverse itself (``fused``, :func:`choose_fused_inverse`: the 64-block launch needs
    kkt_solve's A~) or with FLASHQLA_HEAD_SPLIT=0.
    """
    if (block_v != 128 or fused or forced_block_v("FLASHQLA_BLOCK_V") or head_split_disabled()):
        return 0
    pairs = num_seqs * num_heads
    waves = pairs // sms
    if waves == 0 or pairs == waves * sms:
        return 0
    split = waves * sms // num_seqs  # heads whose pairs fill the full waves
    if split < 1 or 2 * num_seqs * (num_heads - split) > sms:
        return 0
    return split


# The fused inverse by card: on an H100 (80 GB, HBM3) chunk_fwd is DRAM-bound (85% of peak on 397B-TP1 8192x4,
# 74% on 2B-TP1 1024x8), and at GVA 1 the split path moves ~1.45x the bytes of one pass (kkt_solve reads K, A~ and
# the factor rows go through HBM), so the fused variant, which pays more a chunk step in its auxiliary warpgroup,
# is faster where its 128-blocks fill the card: 2B-TP1 with 8 sequences of 512 / 1024 / 2048 / 4096 tokens -2 /
# -7.5 / -10 / -12.5%, 16 of 1024 -5%, 7 of 1024 -1.5% (results/2026-11-26-h100-s27/fused_probe). Since P moved to
# the state warpgroups (chunk_fwd's p_on_state, session 35: the fused chunk_fwd -11 to -14%) it also wins at GVA 2
# within one wave of pairs: 35B-TP1 8192x4 (128 pairs) 438 against 481 us, 1024x4 equal (68.7 / 68.2); past one
# wave it loses (35B-TP1 1024x8, 256 pairs, 134.6 against 130.0), and at GVA 3-4 everywhere (27B-TP2 8192x4 427
# against 332, 397B-TP2 8192x4 435 against 394; results/2026-11-27-h100-s35/p_on_state_ab/rule_probe). With fewer
# pairs than half the SMs (V block 64 doubles the split path's CTAs) it is far slower. On an H200, whose bandwidth
# is 1.4x the H100's, it is slower on every length probed (session 36, with factor_rows: 2B-TP1 8 sequences of 256
# to 4096 tokens +3-6%, 35B-TP1 4 of 512 to 8192 +8-14%; results/2026-11-27-h200-s36/scaling_probe): cards of at
# least LARGE_CARD_MEMORY keep the split path (large_memory_card, the card's proxy, as for the persistent grid).
# Measured up to FUSED_INVERSE_MAX_PAIRS_PER_SM[gva] x SMs pairs. Not with the norms of q and k in the kernels
# (use_qk_l2norm_in_kernel, as transformers' layers call it): there the fused variant (196 bytes of spill) and its
# rows-only pass (20 us on 2B-TP1 1024x8, 4.6 without) made it 21-22% slower on the same shapes
# (results/2026-11-26-h100-s27/fused_l2norm). Since session 45's fused chunk_fwd (no producer warpgroup, K K^T a
# chunk ahead) GVA 2 takes it past one wave too, up to two, except where the split path splits its heads
# (choose_head_split: the heads past the full waves at V block 64, which the fused variant cannot): H100 spans,
# 35B-TP1 with 8 sequences of 1024 / 2048 / 4096 tokens (256 pairs) fused 127.9 / 228 / 429 against split 129.8 /
# 243.5 / 467 us, with 6 sequences (192 pairs, a head split) 123.3 / 422 against 109.4 / 366
# (results/2026-11-28-h100-s45/split_vs_fused, rule_probe).
FUSED_INVERSE_MAX_PAIRS_PER_SM = {1: 2, 2: 2}  # by GVA ratio; ratios not listed keep the split path


@torch.compiler.assume_constant_result
def fused_inverse_card(device: torch.device) -> bool:
    """Whether ``device`` is a card on which :func:`choose_fused_inverse` may pick the fused inverse (a constant
    under torch.compile)."""
    return not large_memory_card(device)


def choose_fused_inverse(num_k_heads: int, num_v_heads: int, num_pairs: int, sms: int, block_v: int,
                         device: torch.device, use_l2norm: bool = False, num_seqs: int | None = None) -> bool:
    """Whether chunk_fwd forms each chunk's inverse itself (its fused-inverse variant; kkt_solve then writes only
    the factor rows) instead of reading kkt_solve's A~. FLASHQLA_FUSED_INVERSE=1|0 forces it (ops.FUSED_INVERSE);
    otherwise only at the V blocks that have the variant, at the GVA ratios of FUSED_INVERSE_MAX_PAIRS_PER_SM (1 and
    2), without the in-kernel norms (use_l2norm), on cards below LARGE_CARD_MEMORY (the measurements above), with
    more pairs than half the SMs (V block 128) and at most FUSED_INVERSE_MAX_PAIRS_PER_SM[gva] x SMs; at GVA 2 past
    one wave only where the split path would not split its heads (:func:`choose_head_split` of ``num_seqs``
    sequences; without ``num_seqs``, one wave). Under torch.compile the pair count may be symbolic: the comparisons
    become guards."""
    from .ops import FUSED_INVERSE, FUSED_INVERSE_BLOCK_VS

    if block_v not in FUSED_INVERSE_BLOCK_VS:
        return False
    if FUSED_INVERSE is not None:
        return FUSED_INVERSE
    gva = num_v_heads // num_k_heads
    per_sm = FUSED_INVERSE_MAX_PAIRS_PER_SM.get(gva, 0)
    if gva == 2 and num_pairs > sms and (num_seqs is None or choose_head_split(num_seqs, num_v_heads, sms, block_v)):
        return False
    return (per_sm > 0 and not use_l2norm and 2 * num_pairs > sms and num_pairs <= per_sm * sms
            and fused_inverse_card(device))


@torch.compiler.assume_constant_result
def head_split_disabled() -> bool:
    """FLASHQLA_HEAD_SPLIT=0 turns :func:`choose_head_split` off (read once under torch.compile)."""
    return os.environ.get("FLASHQLA_HEAD_SPLIT", "1") == "0"


def _packed(problem, q, k, v, g, beta, initial_state):
    """The kernels' inputs: tokens packed along one axis ([B*T, heads, dim]), gates and states in fp32."""
    BT, H, HV, K, V = problem.B * problem.T, problem.H, problem.HV, problem.K, problem.V
    return (q.reshape(BT, H, K).contiguous(), k.reshape(BT, H, K).contiguous(),
            v.reshape(BT, HV, V).contiguous(), _fp32(g.reshape(BT, HV)), _fp32(beta.reshape(BT, HV)),
            None if initial_state is None else _fp32(initial_state))


def _fp32(t: torch.Tensor) -> torch.Tensor:
    """t as a contiguous fp32 tensor (itself when it already is one: a no-op .to() still costs ~1.3 us)."""
    return (t if t.dtype == torch.float32 else t.to(torch.float32)).contiguous()


def _scale(problem, scale) -> float:
    """The output scale: ``scale``, or K ** -0.5 when None (``problem``: a Problem or a ChunkPlan)."""
    return float(problem.K ** -0.5 if scale is None else scale)


class ChunkPlan(NamedTuple):
    """What a served chunked call was launched with, apart from its tensors and scale: the sizes, the device
    cu_seqlens (None: the caller's own tensor, already int32 on the device), kkt_solve's chunk table, the flags,
    the V block and the head split (:func:`choose_head_split`). :mod:`.fast_path` keeps it per call signature."""
    B: int
    T: int
    H: int
    K: int
    HV: int
    V: int
    cu: Optional[torch.Tensor]
    table: torch.Tensor
    use_l2norm: bool
    output_final_state: bool
    block_v: int
    head_split: int
    fused: bool = False  # chunk_fwd forms the inverse itself (choose_fused_inverse)
    eager: Optional[object] = None  # the bound launches (ops.ChunkForward) that the eager fast path calls


def run_chunk_plan(plan: ChunkPlan, q, k, v, g, beta, initial_state, cu, scale: float):
    """The fused forward of a plan on packed inputs ([B*T, heads, dim], gates and states fp32): (o, final state)
    shaped as the public function returns them."""
    from .ops import chunk_fwd

    o, ht = chunk_fwd(q, k, v, g, beta, initial_state, cu, plan.table, scale, plan.use_l2norm,
                      plan.output_final_state, plan.block_v, plan.head_split, plan.fused)
    return o.view(plan.B, plan.T, plan.HV, plan.V), (ht if plan.output_final_state else None)


def _plan(op, problem, q, k, v, g, beta, initial_state, use_qk_l2norm_in_kernel) -> tuple[bool, int]:
    """(whether the kernels serve the call, block_v): the static plan, the sizes, then the autograd check.

    Traced as plain code under torch.compile: the static plan is a constant, and the size tests (sequences
    per grid, pairs per SM count, short sequences) are comparisons that become guards, so a new batch size,
    sequence count or prompt length neither breaks the graph nor recompiles unless it crosses a bound.
    """
    if kernel_plan(op, q.device, q.dtype, bool(use_qk_l2norm_in_kernel)) is not None:
        return False, 0
    why = None
    if problem.K != HEAD_DIM or problem.V != HEAD_DIM:
        why = f"head dims K={problem.K}, V={problem.V}: the kernels are built for K = V = {HEAD_DIM}"
    elif problem.N > _MAX_GRID_Y:  # both kernels put sequences on grid y
        why = f"{problem.N} sequences: the kernels' grid takes at most {_MAX_GRID_Y}"
    elif _autograd_requested(q, k, v, g, beta, initial_state):
        why = _AUTOGRAD_REASON
    if why is not None:
        if not torch.compiler.is_compiling():  # a warning would be a graph break
            warn_once(f"{op}:{why}", f"flashqla: {_OP_NAMES[op]} runs on the reference: {why}")
        return False, 0
    sms = sm_count(q.device)
    pairs = problem.N * problem.HV
    if op == "recurrent":
        return True, choose_recurrent_block_v(pairs, sms)
    return True, choose_block_v(pairs, sms)


def try_chunk_forward(problem, q, k, v, g, beta, scale, initial_state, output_final_state,
                      use_qk_l2norm_in_kernel, cu_seqlens):
    """Run the chunked forward on the kernels, or return None to let the reference serve it."""
    if q.device.type != "cuda":
        return None
    ok, block_v = _plan("chunk", problem, q, k, v, g, beta, initial_state, use_qk_l2norm_in_kernel)
    if not ok:
        return None
    cu, off = packed_seqlens(cu_seqlens, problem.B, problem.T, q.device)
    sms = sm_count(q.device)
    fused = choose_fused_inverse(problem.H, problem.HV, problem.N * problem.HV, sms, block_v, q.device,
                                 bool(use_qk_l2norm_in_kernel), problem.N)
    plan = ChunkPlan(problem.B, problem.T, problem.H, problem.K, problem.HV, problem.V,
                     None if cu is cu_seqlens else cu, kkt_chunk_table(cu, off, problem.B * problem.T),
                     bool(use_qk_l2norm_in_kernel), bool(output_final_state), block_v,
                     choose_head_split(problem.N, problem.HV, sms, block_v, fused), fused)
    packed = _packed(problem, q, k, v, g, beta, initial_state)
    from . import ops

    if problem.N > 0 and problem.B * problem.T > 0 and ops.runs_directly(packed[0]):
        # eager: the launches are bound once (ops.ChunkForward), run here and kept in the plan, so the next call with
        # this signature skips straight to them (the custom op would build its own copy for this call)
        plan = plan._replace(eager=ops.ChunkForward(
            T=problem.B * problem.T, H=problem.H, HV=problem.HV, K=problem.K, V=problem.V, N=problem.N,
            dtype=v.dtype, device=q.device, use_l2norm=plan.use_l2norm, output_final_state=plan.output_final_state,
            has_h0=initial_state is not None, block_v=block_v, head_split=plan.head_split, chunk_table=plan.table,
            cu_seqlens=cu, o_shape=(problem.B, problem.T, problem.HV, problem.V), fused=plan.fused))
        pq, pk, pv, pg, pbeta, ph0 = packed
        o, ht = plan.eager(ops._aligned(pq), ops._aligned(pk), ops._aligned(pv), pg, pbeta, ops._aligned(ph0),
                           _scale(problem, scale))
        out = o, (ht if plan.output_final_state else None)
    else:
        out = run_chunk_plan(plan, *packed, cu, _scale(problem, scale))
    if not torch.compiler.is_compiling():
        from . import fast_path

        fast_path.remember(fast_path.signature(q, k, v, g, beta, scale, initial_state, output_final_state,
                                               use_qk_l2norm_in_kernel, cu_seqlens), cu_seqlens, plan)
    return out


def choose_recurrent_block_v(num_pairs: int, sms: int) -> int:
    """V columns a decode CTA owns: 16 when 32-column CTAs (4 per (sequence, head)) would not cover
    the SMs, else 32. The thread count is 4 per column either way; only the spread over SMs changes.

    FLASHQLA_RECURRENT_BLOCK_V=32|16 forces a choice (:func:`forced_block_v`).
    """
    forced = forced_block_v("FLASHQLA_RECURRENT_BLOCK_V")
    if forced:
        return forced
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
