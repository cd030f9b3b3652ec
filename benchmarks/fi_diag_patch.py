"""DIAGNOSTIC (wrong outputs): FlashInfer 0.7.2's sm90 GDN prefill with only the first FI_DIAG_LEVELS levels of its
64 x 64 inverse (collective_inverse_hmma.CollectiveInverse.run: 1 the 8 x 8 diagonal blocks, 2 the 16 x 16 merges,
3 the 32 x 32 merges, 4 the 64 x 64 level; 0 none; default 4, the kernel as shipped). Edits the installed file in
place (the level guards are compile-time `cutlass.const_expr`); run once per machine before timing, then time each
level count in its own process with its own CUTE_DSL_CACHE_DIR. Prices FlashInfer's inverse inside its own kernel, as
our leave-one-outs price ours (benchmarks/NOTES.md, session 43).
Usage: python benchmarks/fi_diag_patch.py /tmp/site/flashinfer/gdn_kernels/delta_rule_dsl/collective_inverse_hmma.py"""
import sys

OLD_BODY = '''        # ── Level 1: 8×8 Gauss on diagonal 8×8 blocks (threads 0-63) ────────────
        t8x8 = cute.flat_divide(sT, (8, 8))
        if thread_idx < 64:
            blk = thread_idx // 8
            self.compute_diagonal_inverse_NxN(
                t8x8[None, None, blk, blk], thread_idx % 8, 8
            )

        cute.arch.barrier(barrier_id=barrier_id, number_of_threads=128)

        # ── Level 2: 16×16 blockwise inverse (all 4 warps → 4 diagonal blocks) ──
        t16x16 = cute.flat_divide(sT, (16, 16))
        blk2 = thread_idx // 32
        self.blockwise_8x8_to_16x16(t16x16[None, None, blk2, blk2])

        cute.arch.barrier(barrier_id=barrier_id, number_of_threads=128)

        # ── Level 3: 32×32 blockwise inverse (threads 0-63 → 2 diagonal blocks) ─
        t32x32 = cute.flat_divide(sT, (32, 32))
        if thread_idx < 64:
            blk3 = thread_idx // 32
            self.blockwise_16x16_to_32x32(t32x32[None, None, blk3, blk3])

        cute.arch.barrier(barrier_id=barrier_id, number_of_threads=128)

        # ── Level 4: 64×64 blockwise inverse (all 4 warps) ───────────────────────
        self.blockwise_32x32_to_64x64(sT, barrier_id)
'''

NEW_BODY = '''        if cutlass.const_expr(_FI_DIAG_LEVELS >= 1):
            t8x8 = cute.flat_divide(sT, (8, 8))
            if thread_idx < 64:
                blk = thread_idx // 8
                self.compute_diagonal_inverse_NxN(
                    t8x8[None, None, blk, blk], thread_idx % 8, 8
                )
            cute.arch.barrier(barrier_id=barrier_id, number_of_threads=128)
        if cutlass.const_expr(_FI_DIAG_LEVELS >= 2):
            t16x16 = cute.flat_divide(sT, (16, 16))
            blk2 = thread_idx // 32
            self.blockwise_8x8_to_16x16(t16x16[None, None, blk2, blk2])
            cute.arch.barrier(barrier_id=barrier_id, number_of_threads=128)
        if cutlass.const_expr(_FI_DIAG_LEVELS >= 3):
            t32x32 = cute.flat_divide(sT, (32, 32))
            if thread_idx < 64:
                blk3 = thread_idx // 32
                self.blockwise_16x16_to_32x32(t32x32[None, None, blk3, blk3])
            cute.arch.barrier(barrier_id=barrier_id, number_of_threads=128)
        if cutlass.const_expr(_FI_DIAG_LEVELS >= 4):
            self.blockwise_32x32_to_64x64(sT, barrier_id)
'''

HEADER_OLD = "from .helpers import SM80, select_tensor_10\n"
HEADER_NEW = HEADER_OLD + ('import os as _os\n_FI_DIAG_LEVELS = int(_os.environ.get("FI_DIAG_LEVELS", "4"))  '
                           '# DIAGNOSTIC (benchmarks/fi_diag_patch.py)\n')


def main():
    path = sys.argv[1]
    text = open(path).read()
    if "_FI_DIAG_LEVELS" in text:
        print("already patched:", path)
        return
    assert text.count(OLD_BODY) == 1 and text.count(HEADER_OLD) == 1, "unexpected FlashInfer source"
    open(path, "w").write(text.replace(HEADER_OLD, HEADER_NEW).replace(OLD_BODY, NEW_BODY))
    print("patched:", path)


if __name__ == "__main__":
    main()
