"""TileLang piece: which packed sequence a chunk slot belongs to (conv_qkv; kkt_solve reads a per-slot table
that the runtime caches instead, see ops.chunk_table_for)."""


import tilelang.language as T


@T.macro
def sequence_of_chunk(chunk_offsets, num_seqs_p1, cid, search_steps=31):
    """The largest n with chunk_offsets[n] <= cid: a binary search of `search_steps` halvings (31 is enough for any
    int32 count; a run-time value >= bit_length(number of sequences) is enough for the call at hand)."""
    lo = T.alloc_var("int32")
    hi = T.alloc_var("int32")
    mid = T.alloc_var("int32")
    lo = 0
    hi = num_seqs_p1 - 1
    for _ in T.serial(search_steps):
        if hi - lo > 1:
            mid = (lo + hi) // 2
            if chunk_offsets[mid] <= cid:
                lo = mid
            else:
                hi = mid
    return lo
