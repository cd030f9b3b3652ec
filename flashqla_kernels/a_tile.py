"""A~'s tile between kkt_solve (which stores it) and chunk_fwd (which loads it): only the blocks on or below the
diagonal travel through HBM.

A~ [C, C] is lower triangular by SUB x SUB blocks (C = 64, SUB = 16: 10 of 16 blocks). Both kernels hold it in
shared memory with a 32-byte swizzle (`a_tile_layout`): column block cb (SUB columns, 32 bytes a row) is one
contiguous 2 KB region, and its rows [SUB cb, C), the blocks from the diagonal down, are one TMA box. So
kkt_solve stores four boxes (rows 64, 48, 32, 16 of one column block each: 5 KB of the tile's 8 KB) and chunk_fwd
loads the same four; the blocks above the diagonal stay unwritten in `a` and zero in chunk_fwd's stages (set once
at its start). The 32-byte swizzle keeps a wgmma operand's 8-row core matrices and the mma C-fragment pairs of
kkt_solve's epilogue free of bank conflicts, as the 128-byte swizzle did.

A sequence's first chunk (after another sequence's tokens) is stored whole, its upper blocks as the zeros they are:
chunk_fwd loads a sequence's partial last chunk by the same four boxes, whose rows past the sequence's end are the
next sequence's first rows, read at another alignment. Were their upper blocks unwritten, those rows would bring
whatever the buffer held (NaN, say) into the chunk's tile, and a zero factor times NaN is NaN. Every row such a box
reads past a sequence's end lies in a later sequence's first chunk (the box spans fewer than C rows past the end),
and rows past the tensor's end arrive as zeros.

The boxes are written out, not looped: a loop inside a prim_func is a TIR loop, whose box extents would be
symbolic, and TMA boxes need constant extents.
"""

import tilelang
import tilelang.language as T

from .chunk_inverse import CHUNK, SUB

C = CHUNK
assert C // SUB == 4, "the macros below issue one box per column block, four of them"


def a_tile_layout(buf):
    """The shared layout of an A~ tile ([C, C], or [stages, C, C]): column blocks of SUB, 32-byte swizzle."""
    return tilelang.layout.make_quarter_bank_swizzled_layout(buf)


@T.macro
def load_a_column_block(a, a_s, full, t0, hv, st, cb):
    """Column block cb of the chunk at token t0 from its diagonal block down (rows [SUB cb, C)) into a_s[st] by
    one TMA box, completing on the mbarrier full[st] (the barrier array and its index: a macro argument
    `full[st]` would arrive as a bound value, not as the barrier's load)."""
    T.tma_copy(a[t0 + cb * SUB:t0 + C, hv, cb * SUB:(cb + 1) * SUB],
               a_s[st, cb * SUB:C, cb * SUB:(cb + 1) * SUB], barrier=full[st])


@T.macro
def load_a_lower(a, a_s, full, t0, hv, st):
    """The chunk's A~ blocks on or below the diagonal into stage st (four TMA boxes, 5 KB, on full[st])."""
    load_a_column_block(a, a_s, full, t0, hv, st, 0)
    load_a_column_block(a, a_s, full, t0, hv, st, 1)
    load_a_column_block(a, a_s, full, t0, hv, st, 2)
    load_a_column_block(a, a_s, full, t0, hv, st, 3)


@T.macro
def store_a_column_block(ao_s, a, t0, hv, cb, r0):
    """Column block cb of ao_s from row r0 down to a's rows [t0 + r0, t0 + C) by one TMA store."""
    T.tma_copy(ao_s[r0:C, cb * SUB:(cb + 1) * SUB], a[t0 + r0:t0 + C, hv, cb * SUB:(cb + 1) * SUB])


@T.macro
def store_a_lower(ao_s, a, t0, t_end, hv, whole):
    """The chunk's gated inverse ao_s (a generic-proxy write, fenced by the caller for the TMA path) to
    a[t0 + i, hv, j]: the blocks on or below the diagonal, or with `whole` (a sequence's first chunk, see the module
    docstring) every block. A full chunk leaves by four TMA stores, a sequence's partial last chunk by masked
    16-byte row stores of its rows (a TMA box would write into the next sequence's rows)."""
    if t0 + C <= t_end:
        if whole:
            store_a_column_block(ao_s, a, t0, hv, 0, 0)
            store_a_column_block(ao_s, a, t0, hv, 1, 0)
            store_a_column_block(ao_s, a, t0, hv, 2, 0)
            store_a_column_block(ao_s, a, t0, hv, 3, 0)
        else:
            store_a_column_block(ao_s, a, t0, hv, 0, 0)
            store_a_column_block(ao_s, a, t0, hv, 1, SUB)
            store_a_column_block(ao_s, a, t0, hv, 2, 2 * SUB)
            store_a_column_block(ao_s, a, t0, hv, 3, 3 * SUB)
    else:
        for i, j in T.Parallel(C, C):
            if (t0 + i < t_end) & (whole | (j // SUB <= i // SUB)):
                a[t0 + i, hv, j] = ao_s[i, j]


def first_chunk_of_sequence(chunk_table, cid, t0):
    """Whether chunk slot cid starts a sequence that follows another's tokens: the slot before it ends a sequence
    (its t_end, column 1 of kkt_solve's chunk table) at this chunk's first token. Zero-length sequences own no
    slot, so the slot before is the last chunk of the sequence before."""
    return (cid > 0) & (chunk_table[T.max(cid - 1, 0), 1] == t0)
