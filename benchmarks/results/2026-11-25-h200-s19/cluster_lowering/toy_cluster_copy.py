"""Compile-only (session 19): does TileLang 0.1.15 lower a 2-CTA cluster kernel with an SM-to-SM shared-memory copy
on a cluster barrier through flashqla_kernels.aot? (Groundwork for one P shared by the two V halves at block_v 64.)
Run from the repository root with tilelang installed; prints how often the cluster constructs occur in the source."""
import sys
sys.path.insert(0, '.')
import tilelang
import tilelang.language as T
from flashqla_kernels.aot import lower_to_source

C = 64

@T.prim_func
def toy(x: T.Tensor((1024, C), "bfloat16"), y: T.Tensor((1024, C), "bfloat16")):
    with T.Kernel(16, threads=128, cluster_dims=(2, 1, 1)) as bx:
        p_s = T.alloc_shared((2, C, C), "bfloat16")
        ready = T.alloc_cluster_barrier([1, 1])
        rank = bx % 2
        T.copy(x[(bx // 2) * C:(bx // 2) * C + C, :], p_s[rank, :, :])
        # this CTA's tile into the peer's slot of the same index
        T.copy_cluster(p_s[rank, :, :], p_s[rank, :, :], dst_block=1 - rank, remote_barrier=ready[rank])
        T.barrier_wait(ready[1 - rank], 0)
        T.copy(p_s[1 - rank, :, :], y[(bx // 2) * C:(bx // 2) * C + C, :])  # (rank r writes the peer's tile: a race
        # with its peer's identical write, harmless here; a real kernel also needs a cluster sync before exit)

src = lower_to_source(toy)
for key in ("clusterDim", "cluster", "mapa", "cp.async.bulk", "shared::cluster"):
    print(key, src.count(key))
