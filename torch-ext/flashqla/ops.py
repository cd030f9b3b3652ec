"""torch.library custom ops over the prebuilt binaries, with fake implementations for torch.compile.

Every launch goes to torch's current CUDA stream of the input's device; nothing here synchronises with
the host, so the ops can be captured in CUDA graphs. Inputs are packed: tokens of all sequences along
one axis ([T, heads, dim]); `cu_seqlens` (int32 [N+1]), `chunk_offsets` (int32 [N+1], see
`chunk_offsets_for`) and kkt_solve's `chunk_table` (int32 [T // 64 + N + 1, 2], see `chunk_table_for`)
describe the sequences.
"""

from __future__ import annotations

import functools
import os
from typing import Optional

import torch

from . import loader

CHUNK = 64


def factor_rows(use_l2norm: bool) -> int:
    """kkt_solve's per-token factor rows (G, beta, and 1/||k|| with the in-kernel norm), one TMA box a chunk for
    chunk_fwd; flashqla_kernels.kkt_solve.factor_rows at build time (a test checks that the two agree)."""
    return 3 if use_l2norm else 2


# One op namespace per loaded copy of the package: the hub loader imports it under an id such as
# "_flashqla_cuda_<hash>", so a pip install and a hub copy in one process register distinct ops.
_NS = (__package__ or "flashqla").split(".")[0].strip("_") or "flashqla"
# Tests set FLASHQLA_POISON=1 so every output buffer starts as NaN: an element a kernel fails to write fails.
_POISON = os.environ.get("FLASHQLA_POISON") == "1"
# kkt_solve's variant (FLASHQLA_KKT_MERGE): "auto" (the default) runs "gva" at every GVA ratio: one CTA per chunk
# and key head forms the inverses of its HV / H value heads, which share K's load and K K^T (kkt_solve_gva.py; H200:
# kkt_solve -23% at GVA 4, -11% at 2, -15% at 3 against "mma16", results/2026-11-25-h200-s21/gva_ab). At GVA 1 it
# took "mma16" until A~ left by its lower blocks (a_tile.py): kkt_solve.py stages A~ in K's tile, whose K load then
# takes eight 32-byte boxes, and its kernel grew 3-13%, while kkt_solve_gva's fell below the old "mma16" (H100: 2B-TP1
# spans within 1% of the old default, results/2026-11-26-h100-s25/kkt_gva1). Per value head (kkt_solve.py): "mma16"
# (the row stripes' blocks below the diagonal by fp16 m16n8k16 mma.sync), "mma" (tf32 m16n8k8, v12-v20), "tc"
# (32 -> 64 merge on tf32 tensor cores, v3-v11), "regs" (CUDA cores); they stay built as A/B baselines.
KKT_MERGE = os.environ.get("FLASHQLA_KKT_MERGE", "auto")


def _env_choice(name: str, choices: tuple[str, ...]) -> str:
    """Environment variable ``name`` if it is one of ``choices``, "" when unset; any other value warns once and
    counts as unset (the runtime's rule)."""
    value = os.environ.get(name, "")
    if value in ("",) + choices:
        return value
    from .warn import warn_once

    warn_once(name, f"flashqla: {name}: expected one of {', '.join(choices)}, got {value!r}; using the runtime's rule")
    return ""


# kkt_solve_gva's factor load (FLASHQLA_KKT_FETCH: "once" or "per_head" at every ratio up to 4; unset: the rule below)
KKT_FETCH = _env_choice("FLASHQLA_KKT_FETCH", ("once", "per_head"))
KKT_ONCE_MAX_GVA = 4  # value heads a key head whose factors "once" holds (flashqla_kernels/kkt_solve_gva.py MAX_GVA)


def kkt_gva_fetch(num_k_heads: int, num_v_heads: int) -> str:
    """kkt_solve_gva's factor_fetch (flashqla_kernels/kkt_solve_gva.py): "once" (every head's beta and g by one 16-byte
    copy a token at GVA 4, 8-byte at GVA 2; two CTA barriers a head instead of four) at GVA 2 and 4, "per_head" (a
    4-byte copy a token and head, the next head's during this one) at GVA 1 and 3. Measured on H200 since "once" has
    two barriers a head (results/2026-11-27-h200-s39/kkt_barriers_ab3, timeline, two passes, against "per_head"):
    kkt_solve_gva -4% at GVA 2 (35B-TP1 8192x4 100.5 -> 96.3 us), -0.4% at GVA 4, +0.5% at GVA 3, +8% at GVA 1
    (its one head has no barrier to save; the loads it replaces overlap K's). FLASHQLA_KKT_FETCH forces one ("once"
    holds at most 4 heads' factors: "per_head" above that)."""
    if KKT_FETCH:
        return "once" if KKT_FETCH == "once" and num_v_heads <= KKT_ONCE_MAX_GVA * num_k_heads else "per_head"
    return "once" if num_v_heads in (2 * num_k_heads, KKT_ONCE_MAX_GVA * num_k_heads) else "per_head"


# kkt_solve_gva's launch order (FLASHQLA_KKT_ORDER=slots forces chunk slots fastest; default: key heads fastest)
KKT_ORDER = _env_choice("FLASHQLA_KKT_ORDER", ("heads", "slots"))
MAX_GRID_Y = 65535  # CUDA's limit on gridDim.y, where "heads" puts the chunk slots


def kkt_gva_order(num_slots: int) -> str:
    """kkt_solve_gva's grid order (flashqla_kernels/kkt_solve_gva.py `grid_order`): "heads" (key heads fastest: -3 to
    -15% on the H100's long rows, -3% on the H200's long GVA-4 rows, +1.5 to +3% there on the short GVA 1-3 ones; see
    there) up to MAX_GRID_Y chunk slots (~4.2 M tokens), "slots" past that or when FLASHQLA_KKT_ORDER=slots."""
    return "heads" if KKT_ORDER != "slots" and num_slots <= MAX_GRID_Y else "slots"


def kkt_variant(num_k_heads: int, num_v_heads: int) -> str:
    """The kkt_solve variant that KKT_MERGE selects for these head counts (see KKT_MERGE)."""
    if KKT_MERGE == "auto":
        return "gva"
    return KKT_MERGE


# The fused-inverse variant's pass before chunk_fwd, without the in-kernel norms (FLASHQLA_ROWS_PASS): "warps" (the
# default: flashqla_kernels/factor_rows.py, a warp a chunk slot and value head, the same bits as kkt_solve's rows;
# session 36, H200: 13.4 against 22.4 us on 35B-TP1 8192x4, spans -2.4%) or "kkt" (kkt_solve's rows-only pass, a
# 128-thread CTA a chunk slot and value head).
ROWS_PASS = _env_choice("FLASHQLA_ROWS_PASS", ("kkt", "warps")) or "warps"

# V blocks at which chunk_fwd can form each chunk's inverse itself, so kkt_solve runs as its rows-only pass (the
# kernels' table, flashqla_kernels/specs.py FUSED_INVERSE_BLOCK_VS, says the same; a test checks it), and whether
# it does: FLASHQLA_FUSED_INVERSE=1 (always, at those V blocks) or 0 (never) forces it; unset (None), the runtime
# chooses by card and shape (dispatch.choose_fused_inverse). Both variants are built.
FUSED_INVERSE_BLOCK_VS = (128,)


def _fused_inverse_setting(value: str) -> Optional[bool]:
    """FLASHQLA_FUSED_INVERSE: "1" -> True, "0" -> False, "" or "auto" -> None (the runtime chooses); any other value
    warns once and means "auto"."""
    if value in ("", "auto"):
        return None
    if value in ("0", "1"):
        return value == "1"
    from .warn import warn_once

    warn_once("FLASHQLA_FUSED_INVERSE", f"flashqla: FLASHQLA_FUSED_INVERSE: expected 1, 0 or auto, got {value!r}; "
              "using auto (the runtime chooses)")
    return None


FUSED_INVERSE = _fused_inverse_setting(os.environ.get("FLASHQLA_FUSED_INVERSE", ""))
# How the fused variant forms the inverse (FLASHQLA_INVERSE_FORM): "regs" (the default: flashqla_kernels/
# inverse_regs.py, the gate before the inverse, the row stripes in registers, merges by mma.sync; the fused chunk_fwd
# -1 to -3.5% against "stripes" on the H200 and the H100, session 38, results/2026-11-27-h200-s38/regs_ab1,
# results/2026-11-27-h100-s38/regs_ab; A~ differs from kkt_solve's by rounding) or "stripes" (chunk_inverse.py's fp32
# tile and row stripes; its A~ is bitwise kkt_solve "mma16"'s, the fused/split twin test's form). Both are built.
INVERSE_FORM = _env_choice("FLASHQLA_INVERSE_FORM", ("stripes", "regs")) or "regs"
# the V block of the second launch of a head split (chunk_fwd's head_split)
HEAD_SPLIT_BLOCK_V = 64
# chunk_fwd's grid: a persistent one (one CTA an SM, each walking several (sequence, head, V block) items) when the
# items outnumber the SMs and are short enough for the card (dispatch.persistent_max_chunks), or one CTA an item
# (always with FLASHQLA_PERSISTENT=0), see chunk_fwd_grid
PERSISTENT = os.environ.get("FLASHQLA_PERSISTENT", "1") != "0"
PERSISTENT_BLOCK_VS = (128,)  # the V blocks with a persistent variant (flashqla_kernels/specs.py says the same)
_DTYPE_NAME = {torch.bfloat16: "bfloat16", torch.float16: "float16"}


def kernel_op(fn):
    """Register ``fn`` as the custom op ``<ns>::<fn name>`` and return its entry point.

    Under torch.compile, for fake / meta / non-CUDA tensors, under torch.jit.trace and under a
    TorchDispatchMode (make_fx and friends) the entry calls the custom op, so the launch is recorded (one
    graph node, with the fake implementation registered through ``entry.register_fake``); the op first makes
    every tensor input contiguous and 16-byte aligned (a compiled graph may hand it views of a larger
    buffer). Plain eager calls on CUDA tensors run ``fn`` directly: torch's dispatcher adds ~10 us per
    custom-op call, which on short inputs is as long as the kernels. Eager callers pass contiguous tensors
    and ``fn`` itself aligns those that TMA or vector loads read; they never pass tensors that require
    grad (dispatch serves those with the reference).
    """
    @functools.wraps(fn)
    def dense_fn(*args):
        return fn(*(_dense(a) if isinstance(a, torch.Tensor) else a for a in args))

    op = torch.library.custom_op(f"{_NS}::{fn.__name__}", mutates_args=())(dense_fn)

    @functools.wraps(fn)
    def entry(*args):
        if runs_directly(args[0]):
            return fn(*args)
        return op(*args)

    entry.op = op
    entry.register_fake = op.register_fake
    return entry


def runs_directly(x) -> bool:
    """Whether a call on ``x`` (its first tensor) launches directly rather than through the custom op (see
    :func:`kernel_op`): a plain CUDA tensor, outside torch.compile, torch.jit.trace and any TorchDispatchMode."""
    return (type(x) is torch.Tensor and x.is_cuda and not torch.compiler.is_compiling()
            and not torch._C._get_tracing_state() and not torch._C._len_torch_dispatch_stack())


def _aligned(t: Optional[torch.Tensor]) -> Optional[torch.Tensor]:
    """t, or a copy when its address is not 16-byte aligned (TMA and 16-byte vector loads need it)."""
    return t if t is None or t.data_ptr() % 16 == 0 else t.clone(memory_format=torch.contiguous_format)


# the raw cudaStream_t of torch's current stream (the capture stream under CUDA graph capture) without a
# torch.cuda.Stream object per call; the public call where this torch lacks it
_raw_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None) or (
    lambda index: torch.cuda.current_stream(index).cuda_stream)


def _launch(binary: loader.Binary, device: torch.device, **named) -> None:
    """Launch with arguments given by the names of the generated `call` signature (see the manifest)."""
    index = _device_index(device)
    binary.ensure_init(index)
    args = [named[name].data_ptr() if is_ptr else named[name] for name, is_ptr in binary.arg_ptrs]
    binary(*args, stream=_raw_stream(index))


class BoundLaunch:
    """One binary with the arguments that stay fixed across calls bound once (sizes, flags, the chunk table's and
    cu_seqlens' addresses), so a launch fills in only the per-call tensors and scalars: no name lookup of every
    argument, no init check, on the eager path's ~70 us of host time a call. Only the addresses of bound tensors
    are kept: their owner keeps them alive and unmoved (dispatch's plan holds the chunk table and its cu_seqlens
    copy; a caller's own cu_seqlens is checked by identity and version before every fast-path call).
    ``launch(stream, **per_call)`` takes tensors for pointer arguments."""

    def __init__(self, binary: loader.Binary, device_index: int, **fixed):
        binary.ensure_init(device_index)
        self.binary = binary
        self.template = [(fixed[n].data_ptr() if is_ptr else fixed[n]) if n in fixed else None
                         for n, is_ptr in binary.arg_ptrs]
        self.slots = [(i, n, is_ptr) for i, (n, is_ptr) in enumerate(binary.arg_ptrs) if n not in fixed]

    def launch(self, stream: int, **per_call) -> None:
        args = list(self.template)
        for i, n, is_ptr in self.slots:
            args[i] = per_call[n].data_ptr() if is_ptr else per_call[n]
        self.binary(*args, stream=stream)


def _device_index(device: torch.device) -> int:
    return device.index if device.index is not None else torch.cuda.current_device()


def _dense(t: Optional[torch.Tensor]) -> Optional[torch.Tensor]:
    """t if it is contiguous and 16-byte aligned (TMA and the kernels' vector loads need both), else a
    contiguous copy. Eager callers pass such tensors already; under torch.compile the graph may hand an op
    a view of a larger buffer."""
    if t is None or t.is_contiguous():
        return _aligned(t)
    return t.clone(memory_format=torch.contiguous_format)


def _empty(*shape, dtype, device) -> torch.Tensor:
    if _POISON:
        return torch.full(shape, float("nan"), dtype=dtype, device=device)
    return torch.empty(shape, dtype=dtype, device=device)


def _state_outputs(q, v, N: int, output_final_state: bool, alloc):
    """o [T, HV, V] in v's dtype and the final states [N, HV, K, V] fp32 ([0] when not asked for)."""
    T, K = q.shape[0], q.shape[2]
    HV, V = v.shape[1], v.shape[2]
    o = alloc(T, HV, V, dtype=v.dtype, device=v.device)
    ht = alloc(*((N, HV, K, V) if output_final_state else (0,)), dtype=torch.float32, device=v.device)
    return o, ht


def _binary(kernel: str, **params) -> loader.Binary:
    b = loader.find(kernel, **params)  # cached there, per (kernel, params)
    if b is None:
        raise RuntimeError(f"flashqla: no prebuilt binary for {kernel} {params}; run `python -m flashqla_kernels.build`")
    return b


def chunk_offsets_for(cu_seqlens: torch.Tensor, chunk: int = CHUNK) -> torch.Tensor:
    """Exclusive prefix sum of ceil(len_n / chunk), int32 [N+1], computed on the device (no sync)."""
    lens = cu_seqlens[1:] - cu_seqlens[:-1]
    counts = torch.div(lens + (chunk - 1), chunk, rounding_mode="floor")
    return torch.cat([counts.new_zeros(1), torch.cumsum(counts, 0)]).to(torch.int32)


# The order of kkt_solve's chunk slots (FLASHQLA_KKT_SLOTS forces one; unset: KKT_SLOTS_DEFAULT), see `chunk_table_for`
KKT_SLOT_ORDERS = ("sequences", "chunks_last_first", "chunks_first_last")
KKT_SLOTS = _env_choice("FLASHQLA_KKT_SLOTS", KKT_SLOT_ORDERS)
KKT_SLOTS_DEFAULT = "chunks_last_first"


def chunk_table_for(cu_seqlens: torch.Tensor, chunk_offsets: torch.Tensor, num_tokens: int,
                    chunk: int = CHUNK, order: str | None = None) -> torch.Tensor:
    """kkt_solve's chunk slots: int32 [num_tokens // chunk + N + 1, 3], row s = (first token t0 of chunk s,
    end of its sequence, the factor row of t0 (:func:`rows_start` of its sequence + t0 - its first token)),
    zeros for the slots past the last chunk. Computed on the device from the two int32 [N+1] tensors (no
    sync); the slot count depends on shapes only, so it is the kernel's grid.

    order (default: FLASHQLA_KKT_SLOTS, else KKT_SLOTS_DEFAULT): the order of the chunks, which is the order
    kkt_solve's grid takes them in. "sequences": sequence by sequence, each in chunk order. "chunks_last_first"
    (the default): every sequence's chunk c before any sequence's chunk c - 1, sequences ascending within a
    chunk index, so the K tiles kkt_solve reads last and the A~ tiles it writes last are the first chunks, which
    chunk_fwd reads first (what is still in L2 then is what it needs first). "chunks_first_last": chunk 0 of
    every sequence first (the control of that hypothesis). In every order the chunks 0 keep the sequences'
    order and adjacency, which a_tile.first_chunk_of_sequence relies on (the slot before a sequence's chunk 0
    is the previous non-empty sequence's last chunk, or its chunk 0 in the chunk-major orders: both end at t0).
    Measured "sequences" -> "chunks_last_first" (H100, timeline, four passes a side,
    benchmarks/results/2026-11-27-h100-s32/slot_order_ab2): chunk_fwd -1.5 to -2% on the GVA-1 to 3 rows (35B-TP1
    1024x8 101.6 -> 99.9 us, 35B-TP1 8192x4 379 -> 374, 2B-TP1 8192x4 254 -> 250, 27B-TP2 8192x4 271 -> 267)
    and -3.4% on 2B-TP1 1024x8's split path (63.3 -> 61.2); kkt_solve_gva within +-1% there and +1% on the
    16-key-head GVA-4 rows, whose spans were unchanged within their placement spread; "chunks_first_last" gained
    nothing (slot_order_ab), so the gain is what L2 still holds when chunk_fwd starts. On the H200 (whose chunk_fwd
    is further from its DRAM's peak) spans 0 to -1.5%, no row slower (results/2026-11-27-h200-s32/slot_order_ab)."""
    order = order or KKT_SLOTS or KKT_SLOTS_DEFAULT
    if order not in KKT_SLOT_ORDERS:
        raise ValueError(f"chunk_table_for: order must be one of {', '.join(KKT_SLOT_ORDERS)}, got {order!r}")
    slots = torch.arange(num_tokens // chunk + cu_seqlens.shape[0], dtype=torch.int32, device=cu_seqlens.device)
    # seq in [0, N]: the last n with chunk_offsets[n] <= slot (N for the slots past the last chunk, which
    # the padded copy of cu_seqlens lets index n + 1 without a branch on N)
    seq = torch.searchsorted(chunk_offsets, slots, right=True) - 1
    ends = torch.cat([cu_seqlens, cu_seqlens[-1:]])
    valid = slots < chunk_offsets[-1]
    c = slots - chunk_offsets[seq]  # the slot's chunk index in its sequence
    t0 = torch.where(valid, cu_seqlens[seq] + c * chunk, 0)
    t_end = torch.where(valid, ends[seq + 1], 0)
    r0 = torch.where(valid, rows_start(cu_seqlens[seq], seq, chunk) + c * chunk, 0)
    table = torch.stack([t0, t_end, r0], 1).to(torch.int32)
    if order != "sequences":
        # a stable sort on the chunk index (descending for chunks_last_first) keeps the sequences ascending within
        # a chunk index; the slots past the last chunk sort after every chunk
        key = torch.where(valid, -c if order == "chunks_last_first" else c, torch.iinfo(torch.int32).max)
        table = table[torch.argsort(key, stable=True)]
    return table.contiguous()


def sequence_table(cu_seqlens: torch.Tensor) -> torch.Tensor:
    """chunk_fwd's seq_table: int32 [N + 1, 4], row i = (n, cu_seqlens[n], cu_seqlens[n + 1], 0) for the i-th
    sequence longest first (ties in index order; the last row unused), computed on the device (no sync). The
    grid hands out the items in this order, a persistent grid in rounds of alternating direction, so the longest
    sequences start first and no CTA takes the longest item of every round; a row gives an item's sequence and
    token range in one load."""
    lens = cu_seqlens[1:] - cu_seqlens[:-1]
    order = torch.argsort(lens, descending=True, stable=True)
    rows = torch.stack([order.to(torch.int32), cu_seqlens[order], cu_seqlens[order + 1], torch.zeros_like(lens)], 1)
    return torch.cat([rows.to(torch.int32), rows.new_zeros(1, 4, dtype=torch.int32)]).contiguous()


def chunk_fwd_grid(items: int, sms: int, block_v: int, fused: bool, chunks_per_item: float,
                   max_chunks: float) -> tuple[int, bool]:
    """(CTAs, persistent) of a chunk_fwd launch over `items` (sequence, head, V block) items of `chunks_per_item`
    chunks on average: a persistent grid of one CTA an SM when the items outnumber the SMs and are short enough (at
    most `max_chunks`, dispatch.persistent_max_chunks of the device; V blocks of PERSISTENT_BLOCK_VS, A~ from
    kkt_solve; its warpgroups run on from one item into the next, so the next item's loads, its P and its initial
    state's prefetch into L2 overlap the end of the item before instead of a new CTA's start-up), else a CTA an item
    (also with FLASHQLA_PERSISTENT=0)."""
    if (PERSISTENT and not fused and block_v in PERSISTENT_BLOCK_VS and items > sms
            and chunks_per_item <= max_chunks):
        return sms, True
    return items, False


def rows_start(seq_start, n, chunk: int = CHUNK):
    """First row of sequence n in kkt_solve's factor rows: its first token rounded up to a multiple of 4 (a TMA
    box starts 16-byte aligned) plus a gap of `chunk` rows per earlier sequence (a partial last chunk's box
    reads zeros past its end). chunk_fwd computes the same from cu_seqlens[n] and n."""
    return (seq_start + 3) // 4 * 4 + chunk * n


# --------------------------------------------------------------------------------------------- kkt_solve
def _seqs_of_table(chunk_table, num_tokens):
    """N from the chunk table's shape alone (:func:`chunk_table_for` has num_tokens // 64 + N + 1 slots)."""
    return chunk_table.shape[0] - num_tokens // CHUNK - 1


def rows_len(num_tokens, num_seqs):
    """Row extent of kkt_solve's factor rows: room for every sequence at its :func:`rows_start` and its last
    chunk's box, a multiple of 4 (TMA needs 16-byte strides)."""
    return (num_tokens + 3) // 4 * 4 + CHUNK * num_seqs


def bind_kkt(dtype: torch.dtype, use_l2norm: bool, solve: bool, T: int, H: int, HV: int, N: int,
             chunk_table: torch.Tensor, device_index: int) -> BoundLaunch:
    """kkt_solve's launch for T tokens of N sequences (solve=False: the rows-only pass, merge "mma", or factor_rows
    with ROWS_PASS "warps" and no in-kernel norms), per call: k, beta, g, a (any valid pointer without solve) and
    rows."""
    merge = kkt_variant(H, HV) if solve else "mma"
    if not solve and not use_l2norm and ROWS_PASS == "warps":  # rows only (factor_rows.py): beta, g and the table
        b = _binary("factor_rows")
    elif merge == "gva":  # one CTA per key head and chunk (kkt_solve_gva.py)
        order = kkt_gva_order(chunk_table.shape[0])
        b = _binary("kkt_solve_gva", dtype=_DTYPE_NAME[dtype], use_l2norm=use_l2norm,
                    factor_fetch=kkt_gva_fetch(H, HV), **({"grid_order": order} if order != "heads" else {}))
    else:
        b = _binary("kkt_solve", dtype=_DTYPE_NAME[dtype], use_l2norm=use_l2norm, merge=merge, solve=solve)
    return BoundLaunch(b, device_index, chunk_table=chunk_table, gva=HV // H, num_tokens=T, num_k_heads=H,
                       num_v_heads=HV, rows_len=rows_len(T, N), num_slots=chunk_table.shape[0])


@kernel_op
def kkt_solve(k: torch.Tensor, beta: torch.Tensor, g: torch.Tensor, chunk_table: torch.Tensor, num_v_heads: int,
              use_l2norm: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """Per chunk: A~ = (I + strict_lower(K K^T diag(beta)))^-1 (.) exp(G_r - G_s) (lower triangle; the delta
    rule's beta enters chunk_fwd's output and state update instead, see kkt_solve.py), G = the chunk-local cumsum of g,
    and the fused kernel's per-token factors.

    k [T, H, 128] bf16/fp16, beta, g [T, HV] fp32, chunk_table (:func:`chunk_table_for`) -> a [T, HV, 64]
    (k's dtype; per chunk only the 16 x 16 blocks on or below the diagonal are written, a sequence's first chunk
    whole (flashqla_kernels/a_tile.py), the others are never read), rows [factor_rows(use_l2norm), HV,
    rows_len(T, N)] fp32: G (log2 units), beta, and 1/||k|| with use_l2norm; sequence n's tokens from row
    :func:`rows_start`, zero past each sequence's end up to its last chunk's end (other rows unwritten).
    """
    T, H, K = k.shape
    N = _seqs_of_table(chunk_table, T)
    a = _empty(T, num_v_heads, CHUNK, dtype=k.dtype, device=k.device)
    rows = _empty(factor_rows(use_l2norm), num_v_heads, rows_len(T, N), dtype=torch.float32, device=k.device)
    if T == 0:
        return a, rows
    k, beta, g = _aligned(k), _aligned(beta), _aligned(g)  # (kkt_solve_gva's vector copies of beta and g)
    index = _device_index(k.device)
    bind_kkt(k.dtype, use_l2norm, True, T, H, num_v_heads, N, chunk_table, index).launch(
        _raw_stream(index), k=k, beta=beta, g=g, a=a, rows=rows)
    return a, rows


@kernel_op
def kkt_rows(k: torch.Tensor, beta: torch.Tensor, g: torch.Tensor, chunk_table: torch.Tensor, num_v_heads: int,
             use_l2norm: bool) -> torch.Tensor:
    """kkt_solve's rows-only pass, for chunk_fwd's fused-inverse variant: the same rows [factor_rows(use_l2norm), HV,
    rows_len(T, N)] fp32 as :func:`kkt_solve` (bitwise), no inverse (k is read only with use_l2norm, for its norms)."""
    T, H, K = k.shape
    N = _seqs_of_table(chunk_table, T)
    rows = _empty(factor_rows(use_l2norm), num_v_heads, rows_len(T, N), dtype=torch.float32, device=k.device)
    if T == 0:
        return rows
    k = _aligned(k)
    index = _device_index(k.device)
    # the rows-only pass never touches `a`: any valid pointer stands in
    bind_kkt(k.dtype, use_l2norm, False, T, H, num_v_heads, N, chunk_table, index).launch(
        _raw_stream(index), k=k, beta=beta, g=g, a=rows, rows=rows)
    return rows


@kkt_rows.register_fake
def _(k, beta, g, chunk_table, num_v_heads, use_l2norm):
    N = _seqs_of_table(chunk_table, k.shape[0])
    return k.new_empty(factor_rows(use_l2norm), num_v_heads, rows_len(k.shape[0], N), dtype=torch.float32)


@kkt_solve.register_fake
def _(k, beta, g, chunk_table, num_v_heads, use_l2norm):
    T = k.shape[0]
    N = _seqs_of_table(chunk_table, T)
    return (k.new_empty(T, num_v_heads, CHUNK),
            k.new_empty(factor_rows(use_l2norm), num_v_heads, rows_len(T, N), dtype=torch.float32))


# --------------------------------------------------------------------------------------------- chunk_fwd
class ChunkForward:
    """The launches of one chunked forward (kkt_solve or its rows-only pass, then chunk_fwd, one launch or the two
    of a head split) for fixed sizes, settings and sequences, bound once; a call allocates the outputs (o shaped
    ``o_shape``) and the intermediates and launches. The custom op builds one per call; an eager call of a new
    signature builds one, runs it and keeps it in its plan (dispatch.try_chunk_forward), which the fast path
    (fast_path.py) then calls, so that a repeated call costs its allocations and launches only.
    Needs T > 0 and N > 0; tensors contiguous and 16-byte aligned (the callers see to it)."""

    def __init__(self, *, T: int, H: int, HV: int, K: int, V: int, N: int, dtype: torch.dtype, device: torch.device,
                 use_l2norm: bool, output_final_state: bool, has_h0: bool, block_v: int, head_split: int,
                 chunk_table: torch.Tensor, cu_seqlens: torch.Tensor, o_shape: tuple, fused: bool = False):
        self.fused = bool(fused) and block_v in FUSED_INVERSE_BLOCK_VS
        if head_split and (self.fused or block_v != 128 or not 0 < head_split < HV):
            raise ValueError(f"head_split: expected 0, or 0 < head_split < HV = {HV} with block_v 128 and A~ from "
                             f"kkt_solve; got {head_split} (block_v {block_v}, fused inverse {self.fused})")
        self.index = _device_index(device)
        self.device = device
        self.dtype, self.o_shape, self.output_final_state = dtype, o_shape, output_final_state
        self.ht_shape = (N, HV, K, V) if output_final_state else (0,)
        self.a_shape = (T, HV, CHUNK)
        self.rows_shape = (factor_rows(use_l2norm), HV, rows_len(T, N))
        self.kkt = bind_kkt(dtype, use_l2norm, not self.fused, T, H, HV, N, chunk_table, self.index)
        flags = (1 if has_h0 else 0) | (2 if output_final_state else 0)
        parts = ((block_v, 0, head_split), (HEAD_SPLIT_BLOCK_V, head_split, HV - head_split)) if head_split else \
            ((block_v, 0, HV),)
        from .dispatch import persistent_max_chunks, sm_count

        sms, max_chunks = sm_count(device), persistent_max_chunks(device)
        chunks_per_item = T / (N * CHUNK)  # the mean, from shapes alone (no host synchronisation)
        grids = [chunk_fwd_grid(N * heads * (V // bv), sms, bv, self.fused, chunks_per_item, max_chunks)
                 for bv, _, heads in parts]
        # only a persistent launch reads the table (a CTA an item takes the sequences in index order): otherwise any
        # valid pointer stands in, and no per-construction device work (the custom op builds one per call). Kept
        # alive here: the launches hold its address.
        self.seq_table = sequence_table(cu_seqlens) if any(p for _, p in grids) else cu_seqlens
        form = {"inverse_form": "regs"} if self.fused and INVERSE_FORM == "regs" else {}
        self.parts = [BoundLaunch(_binary("chunk_fwd", dtype=_DTYPE_NAME[dtype], use_l2norm=use_l2norm, block_v=bv,
                                          fused_inverse=self.fused, persistent=persistent, **form), self.index,
                                  cu_seqlens=cu_seqlens, flags=flags, hv_base=hv_base, launch_heads=heads, num_tokens=T,
                                  num_k_heads=H, num_v_heads=HV, rows_len=rows_len(T, N), num_seqs_p1=N + 1,
                                  seq_table=self.seq_table, num_ctas=ctas)
                      for (bv, hv_base, heads), (ctas, persistent) in zip(parts, grids)]

    def __call__(self, q, k, v, g, beta, initial_state, scale: float) -> tuple[torch.Tensor, torch.Tensor]:
        dev = self.device
        o = _empty(*self.o_shape, dtype=self.dtype, device=dev)
        ht = _empty(*self.ht_shape, dtype=torch.float32, device=dev)
        rows = _empty(*self.rows_shape, dtype=torch.float32, device=dev)
        a = rows if self.fused else _empty(*self.a_shape, dtype=self.dtype, device=dev)  # fused: never touched
        stream = _raw_stream(self.index)
        # kkt_solve_gva's "once" loads a token's beta and g of a key head's value heads by one 16-byte copy
        self.kkt.launch(stream, k=k, beta=_aligned(beta), g=_aligned(g), a=a, rows=rows)
        # absent states are passed as a valid pointer that the kernel never touches (flags say so)
        h0 = initial_state if initial_state is not None else o
        ht_arg = ht if self.output_final_state else o
        for part in self.parts:
            part.launch(stream, q=q, k=k, v=v, rows=rows, a=a, h0=h0, ht=ht_arg, o=o, scale=scale)
        return o, ht


@kernel_op
def chunk_fwd(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, g: torch.Tensor, beta: torch.Tensor,
              initial_state: Optional[torch.Tensor], cu_seqlens: torch.Tensor, chunk_table: torch.Tensor,
              scale: float, use_l2norm: bool, output_final_state: bool,
              block_v: int, head_split: int = 0, fused: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    """Fused GDN chunked forward on packed inputs.

    q, k [T, H, 128], v [T, HV, 128] (bf16/fp16), g, beta [T, HV] fp32, initial_state [N, HV, 128, 128]
    fp32 or None, cu_seqlens int32 [N+1], chunk_table (:func:`chunk_table_for`) -> o [T, HV, 128] (v's
    dtype), final_state [N, HV, 128, 128] fp32 (empty [0] when output_final_state is False).
    head_split (0 < head_split < HV, block_v 128, A~ from kkt_solve): value heads [0, head_split) run at block_v,
    heads [head_split, HV) by a second launch at V block 64 (:func:`dispatch.choose_head_split`); 0: one launch.
    fused (block_v 128, no head split): chunk_fwd forms each chunk's inverse itself and kkt_solve writes only the
    factor rows (:func:`dispatch.choose_fused_inverse`).
    """
    T, H = q.shape[0], q.shape[1]
    HV = v.shape[1]
    N = cu_seqlens.numel() - 1
    if N == 0 or T == 0:
        o, ht = _state_outputs(q, v, N, output_final_state, _empty)
        if N and output_final_state:  # every sequence is empty: no tokens to launch over (TMA maps cannot have
            ht.copy_(initial_state) if initial_state is not None else ht.zero_()  # a zero extent)
        return o, ht
    q, k, v, initial_state = _aligned(q), _aligned(k), _aligned(v), _aligned(initial_state)
    forward = ChunkForward(T=T, H=H, HV=HV, K=q.shape[2], V=v.shape[2], N=N, dtype=v.dtype, device=v.device,
                           use_l2norm=use_l2norm, output_final_state=output_final_state,
                           has_h0=initial_state is not None, block_v=block_v, head_split=head_split,
                           chunk_table=chunk_table, cu_seqlens=cu_seqlens, o_shape=(T, HV, v.shape[2]), fused=fused)
    return forward(q, k, v, g, beta, initial_state, float(scale))


@chunk_fwd.register_fake
def _(q, k, v, g, beta, initial_state, cu_seqlens, chunk_table, scale, use_l2norm, output_final_state, block_v,
      head_split=0, fused=False):
    return _state_outputs(q, v, cu_seqlens.shape[0] - 1, output_final_state,
                          lambda *shape, dtype, device: v.new_empty(shape, dtype=dtype))


# --------------------------------------------------------------------------------------------- recurrent_fwd
@kernel_op
def recurrent_fwd(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, g: torch.Tensor, beta: torch.Tensor,
                  initial_state: Optional[torch.Tensor], cu_seqlens: torch.Tensor, scale: float,
                  use_l2norm: bool, output_final_state: bool,
                  block_v: int) -> tuple[torch.Tensor, torch.Tensor]:
    """GDN token recurrence (decode) on packed inputs, the state in registers.

    q, k [T, H, 128], v [T, HV, 128] (bf16/fp16), g, beta [T, HV] fp32, initial_state [N, HV, 128, 128]
    fp32 or None -> o [T, HV, 128] (v's dtype), final_state [N, HV, 128, 128] fp32 (empty [0] when
    output_final_state is False).
    """
    T, H = q.shape[0], q.shape[1]
    HV = v.shape[1]
    N = cu_seqlens.numel() - 1
    o, ht = _state_outputs(q, v, N, output_final_state, _empty)
    if N == 0 or (T == 0 and not output_final_state):
        return o, ht
    # the kernel moves q, k (one lane's 8 rows), h0 and ht in 16-byte vectors: a view at an odd offset is copied
    q, k, v, initial_state = _aligned(q), _aligned(k), _aligned(v), _aligned(initial_state)
    # absent states are passed as a valid pointer that the kernel never touches (flags say so); with
    # T == 0 the launch still runs, to copy h0 (or zeros) into ht for the empty sequences
    unused = o if o.numel() else ht
    h0 = initial_state if initial_state is not None else unused
    ht_arg = ht if output_final_state else unused
    flags = (1 if initial_state is not None else 0) | (2 if output_final_state else 0)
    b = _binary("recurrent_fwd", dtype=_DTYPE_NAME[v.dtype], use_l2norm=use_l2norm, block_v=block_v)
    _launch(b, v.device, q=q, k=k, v=v, g=g, beta=beta, h0=h0, ht=ht_arg, cu_seqlens=cu_seqlens, o=o,
            scale=float(scale), flags=flags, num_tokens=T, num_k_heads=H, num_v_heads=HV,
            num_seqs_p1=cu_seqlens.numel())
    return o, ht


@recurrent_fwd.register_fake
def _(q, k, v, g, beta, initial_state, cu_seqlens, scale, use_l2norm, output_final_state, block_v):
    return _state_outputs(q, v, cu_seqlens.shape[0] - 1, output_final_state,
                          lambda *shape, dtype, device: v.new_empty(shape, dtype=dtype))


# --------------------------------------------------------------------------------------------- conv_qkv
@kernel_op
def conv_qkv(x: torch.Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor], left: Optional[torch.Tensor],
             cu_seqlens: torch.Tensor, chunk_offsets: torch.Tensor,
             key_dim: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Causal depthwise conv + SiLU of packed x [T, 2*key_dim + value_dim] into contiguous q, k, v.

    weight [C, W] and bias [C] (or None) in x's dtype; left [N, C, W-1] (or None: zeros) holds the inputs
    before each sequence; no tap reaches across a sequence start. Returns q, k [T, key_dim], v [T, value_dim].
    """
    T, C = x.shape
    W = weight.shape[1]
    q = _empty(T, key_dim, dtype=x.dtype, device=x.device)
    k = _empty(T, key_dim, dtype=x.dtype, device=x.device)
    v = _empty(T, C - 2 * key_dim, dtype=x.dtype, device=x.device)
    if T == 0:
        return q, k, v
    x, weight, bias, left = _aligned(x), _aligned(weight), _aligned(bias), _aligned(left)
    b = _binary("conv_qkv", dtype=_DTYPE_NAME[x.dtype], width=W)
    flags = (1 if left is not None else 0) | (2 if bias is not None else 0)
    _launch(b, x.device, x=x, w=weight, bias=bias if bias is not None else weight,
            left=left if left is not None else x, cu_seqlens=cu_seqlens, chunk_offsets=chunk_offsets,
            q=q, k=k, v=v, flags=flags, num_tokens=T, num_ch=C, key_dim=key_dim, value_dim=C - 2 * key_dim,
            num_seqs_p1=cu_seqlens.numel())
    return q, k, v


@conv_qkv.register_fake
def _(x, weight, bias, left, cu_seqlens, chunk_offsets, key_dim):
    T, C = x.shape
    return x.new_empty(T, key_dim), x.new_empty(T, key_dim), x.new_empty(T, C - 2 * key_dim)


# ----------------------------------------------------------------------------------------- gated_rmsnorm
@kernel_op
def gated_rmsnorm(x: torch.Tensor, z: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    """(weight * rmsnorm(x)) * silu(z) over rows of x, z [R, D] (x's dtype), rounding as transformers."""
    R, D = x.shape
    out = _empty(R, D, dtype=x.dtype, device=x.device)
    if R == 0:
        return out
    x, z, weight = _aligned(x), _aligned(z), _aligned(weight)
    b = _binary("gated_rmsnorm", dtype=_DTYPE_NAME[x.dtype], dim=D)
    _launch(b, x.device, x=x, z=z, weight=weight, out=out, eps=float(eps), num_rows=R)
    return out


@gated_rmsnorm.register_fake
def _(x, z, weight, eps):
    return torch.empty_like(x)
