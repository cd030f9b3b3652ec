"""The table of compiled specialisations: every binary the ahead-of-time build produces.

A specialisation is (kernel program, static parameters). Everything that varies per call and costs
nothing to pass at run time (token count, head counts, number of sequences, scale, GVA ratio, whether
an initial state is given) is a run-time argument, so a new value never selects another binary.
"""

from __future__ import annotations

from dataclasses import dataclass, field

DTYPES = ("bfloat16", "float16")
KKT_GVA_FETCHES = ("per_head", "once")  # kkt_solve_gva's factor_fetch (the runtime: ops.kkt_gva_fetch)
HEAD_DIM = 128
KKT_MERGES = ("regs", "tc", "mma", "mma16")  # kkt_solve block-merge variants (see kkt_solve.py); the runtime picks FLASHQLA_KKT_MERGE
CHUNK = 64
RECURRENT_BLOCK_VS = (32, 16)  # recurrent_fwd V blocks: 16 doubles the CTAs of small decode batches


@dataclass(frozen=True)
class Spec:
    kernel: str                      # program name: "kkt_solve" | "chunk_fwd" | "recurrent_fwd"
    params: tuple = field(default=())  # sorted (key, value) pairs of static parameters

    @property
    def name(self) -> str:
        parts = [self.kernel] + [f"{k}-{_short(v)}" for k, v in self.params]
        return "__".join(parts)

    def kwargs(self) -> dict:
        return dict(self.params)


def _short(v) -> str:
    if isinstance(v, bool):
        return "1" if v else "0"
    return {"bfloat16": "bf16", "float16": "fp16"}.get(str(v), str(v))


def make_spec(kernel: str, **params) -> Spec:
    return Spec(kernel, tuple(sorted(params.items())))


FUSED_INVERSE_BLOCK_VS = (128,)  # chunk_fwd can form the chunk inverse itself at these V blocks (kkt_solve: rows only)


def kkt_solve_specs() -> list[Spec]:
    """The full pass (inverse and rows) in every merge variant, and the rows-only pass (solve=False) that
    chunk_fwd's fused-inverse variant takes its per-token factors from."""
    full = [make_spec("kkt_solve", dtype=d, use_l2norm=l2, merge=m, solve=True)
            for d in DTYPES for l2 in (False, True) for m in KKT_MERGES]
    rows_only = [make_spec("kkt_solve", dtype=d, use_l2norm=l2, merge="mma", solve=False)
                 for d in DTYPES for l2 in (False, True)]
    return full + rows_only


def kkt_solve_gva_specs() -> list[Spec]:
    """kkt_solve per key head (kkt_solve_gva.py): the value heads sharing a key head share K and K K^T."""
    return ([make_spec("kkt_solve_gva", dtype=d, use_l2norm=l2, factor_fetch=f) for d in DTYPES for l2 in (False, True)
             for f in KKT_GVA_FETCHES]
            # chunk slots fastest: for more chunk slots than gridDim.y allows (the runtime: ops.kkt_gva_order)
            + [make_spec("kkt_solve_gva", dtype=d, use_l2norm=l2, factor_fetch=f, grid_order="slots") for d in DTYPES
               for l2 in (False, True) for f in KKT_GVA_FETCHES])


def factor_rows_specs() -> list[Spec]:
    """The factor rows alone (G, beta) at a warp a (chunk slot, value head) (factor_rows.py): the fused-inverse
    variant's pass without the in-kernel norms (ops.ROWS_PASS "warps", the default; "kkt" takes kkt_solve's rows-only
    pass instead)."""
    return [make_spec("factor_rows")]


PERSISTENT_BLOCK_VS = (128,)  # chunk_fwd has a persistent-grid variant at these V blocks (A~ from kkt_solve)


def chunk_fwd_specs() -> list[Spec]:
    """Every V block with A~ from kkt_solve, and at FUSED_INVERSE_BLOCK_VS also the variant that forms it itself
    (the runtime picks by FLASHQLA_FUSED_INVERSE, see ops.py), each with a CTA an item, the fused one in both
    inverse forms ("stripes", unnamed, and "regs"); at PERSISTENT_BLOCK_VS also
    the persistent-grid variant with A~ from kkt_solve (CTAs walking several items, for launches of more items than
    SMs: ops.chunk_fwd_grid)."""
    one_item = [
        make_spec("chunk_fwd", dtype=d, use_l2norm=l2, block_v=bv, fused_inverse=fused, persistent=False)
        for d in DTYPES for l2 in (False, True) for bv in (128, 64)
        for fused in ((True, False) if bv in FUSED_INVERSE_BLOCK_VS else (False,))
    ]
    persistent = [make_spec("chunk_fwd", dtype=d, use_l2norm=l2, block_v=bv, fused_inverse=False, persistent=True)
                  for d in DTYPES for l2 in (False, True) for bv in PERSISTENT_BLOCK_VS]
    # the fused variant with the inverse in registers (inverse_regs.py; the runtime: ops.INVERSE_FORM)
    regs = [make_spec("chunk_fwd", dtype=d, use_l2norm=l2, block_v=bv, fused_inverse=True, persistent=False,
                      inverse_form="regs")
            for d in DTYPES for l2 in (False, True) for bv in FUSED_INVERSE_BLOCK_VS]
    return one_item + persistent + regs


def recurrent_fwd_specs() -> list[Spec]:
    return [
        make_spec("recurrent_fwd", dtype=d, use_l2norm=l2, block_v=bv)
        for d in DTYPES for l2 in (False, True) for bv in RECURRENT_BLOCK_VS
    ]


def layer_specs() -> list[Spec]:
    """The transformers layers' own kernels: the causal conv into q/k/v and the gated RMSNorm."""
    return ([make_spec("conv_qkv", dtype=d, width=4) for d in DTYPES]
            + [make_spec("gated_rmsnorm", dtype=d, dim=HEAD_DIM) for d in DTYPES])


def all_specs() -> list[Spec]:
    return (kkt_solve_specs() + kkt_solve_gva_specs() + factor_rows_specs() + chunk_fwd_specs() + layer_specs()
            + recurrent_fwd_specs())


def manual_fences(spec: Spec) -> bool:
    """Whether the kernel places its own proxy fences (lowered without TileLang's InjectFenceProxy, see
    aot.lower_to_source): chunk_fwd, whose warpgroups keep global loads in flight across their loops and
    whose two generic-write -> async-proxy handoffs (P to the state's wgmma, o_s to the TMA store) are
    fenced explicitly."""
    return spec.kernel == "chunk_fwd"


def manual_syncs(spec: Spec) -> bool:
    """Whether the kernel is lowered without TileLang's shared-memory sync pass (tl.disable_thread_storage_sync)
    and places its CTA-level barriers itself: chunk_fwd, whose warpgroups hand every stage over on mbarriers,
    which the pass cannot see. It put four 128-thread barriers into each step of the auxiliary loop (conflicts
    between the producer warp's writes to different stages), so the three warps that form P waited for the
    producer's loads every chunk. The kernel's own named barriers: o_s (state warpgroups) and rq_s (auxiliary).
    And kkt_solve_gva, whose factor prefetch into one of three slots needs no barrier at a head's start, where the
    pass, unable to tell the slots apart, put one; the kernel writes out the barriers it needs."""
    return spec.kernel in ("chunk_fwd", "kkt_solve_gva")


def program_for(spec: Spec):
    """Return the TileLang prim_func of a specialisation (imports tilelang)."""
    if spec.kernel == "kkt_solve":
        from .kkt_solve import kkt_solve_program
        return kkt_solve_program(**spec.kwargs())
    if spec.kernel == "kkt_solve_gva":
        from .kkt_solve_gva import kkt_solve_gva_program
        return kkt_solve_gva_program(**spec.kwargs())
    if spec.kernel == "factor_rows":
        from .factor_rows import factor_rows_program
        return factor_rows_program(**spec.kwargs())
    if spec.kernel == "chunk_fwd":
        from .chunk_fwd import chunk_fwd_program
        return chunk_fwd_program(**spec.kwargs())
    if spec.kernel == "recurrent_fwd":
        from .recurrent_fwd import recurrent_fwd_program
        return recurrent_fwd_program(**spec.kwargs())
    if spec.kernel == "conv_qkv":
        from .conv_qkv import conv_qkv_program
        return conv_qkv_program(**spec.kwargs())
    if spec.kernel == "gated_rmsnorm":
        from .gated_rmsnorm import gated_rmsnorm_program
        return gated_rmsnorm_program(**spec.kwargs())
    raise KeyError(spec.kernel)
