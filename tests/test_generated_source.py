"""Structural checks of the generated CUDA that need no GPU: CTA-wide barriers inside per-warp branches must pair up.

TileLang's shared-memory sync pass inserts `__syncthreads()` where it cannot prove two shared accesses independent,
also inside `if (warp == k) { ... }`. A barrier counts arriving threads, not program points, so sibling branches
`warp == 0 .. 3` that each hold the same number of barriers still meet (kkt_solve's norm branches: one each). When
the counts differ, the warps pair barriers that guard different things: session 17's first kkt_solve epilogue had
none in warp 0's branch and one in each other, and only the GPU tests caught it (garbage in `a`). This test reads
the sources the ahead-of-time build keeps beside each binary (<repo>/build/_binaries/*.cu, or FLASHQLA_BINARIES_DIR):
in every run of adjacent sibling branches on the warp index (`(... threadIdx.x ...) >> 5) == k`), the CTA barriers
(`__syncthreads`, named `bar.sync` / `__sync_thread_partial`) must be equal in number in all branches, and the run
must cover whole groups of four warps (a warpgroup) unless it holds none.
"""

import os
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
WARP_BRANCH = re.compile(r"if \(\(+[^{};]*threadIdx\.x[^{};]*>> 5\) == \d+\) \{")
CTA_BARRIERS = ("__syncthreads()", "__sync_thread_partial", "bar.sync", "barrier.sync", "flashqla_bar_sync(",
                "flashqla_bar_arrive(")


def _sources():
    d = Path(os.environ.get("FLASHQLA_BINARIES_DIR", REPO / "build" / "_binaries"))
    return sorted(d.glob("*.cu")) if d.is_dir() else []


def _block_end(text: str, open_brace: int) -> int:
    """Index of the brace closing the one at open_brace (the generated code has no braces in strings)."""
    depth = 0
    for i in range(open_brace, len(text)):
        if text[i] == "{":
            depth += 1
        elif text[i] == "}":
            depth -= 1
            if depth == 0:
                return i
    raise ValueError("unbalanced braces")


def _barrier_count(body: str) -> int:
    return sum(body.count(b) for b in CTA_BARRIERS)


def unpaired_warp_barriers(text: str) -> list[str]:
    """Every run of adjacent sibling warp branches whose CTA barriers do not pair up, as 'warp:count ...'."""
    branches = []  # (start, end, warp, barriers)
    for m in WARP_BRANCH.finditer(text):
        end = _block_end(text, m.end() - 1)
        warp = int(re.search(r"== (\d+)\) \{$", m.group(0)).group(1))
        branches.append((m.start(), end, warp, _barrier_count(text[m.end() - 1:end + 1])))
    runs, run = [], []
    for b in branches:
        if run and text[run[-1][1] + 1:b[0]].strip() == "":
            run.append(b)
        else:
            if run:
                runs.append(run)
            run = [b]
    if run:
        runs.append(run)
    bad = []
    for run in runs:
        counts = {w: n for _, _, w, n in run}
        if not any(counts.values()):
            continue
        warps = sorted(counts)
        whole = warps[0] % 4 == 0 and warps == list(range(warps[0], warps[0] + len(warps))) and len(warps) % 4 == 0
        if len(set(counts.values())) > 1 or not whole:
            bad.append(" ".join(f"{w}:{n}" for w, n in sorted(counts.items())))
    return bad


def test_scanner_flags_unpaired_barriers():
    def branch(w, body):
        return f"if ((((int)threadIdx.x) >> 5) == {w}) {{\n  if (a) {{ x = {w}; }}\n{body}}}\n"
    paired = "".join(branch(w, "  __syncthreads();\n") for w in range(4))
    assert unpaired_warp_barriers(paired) == []
    first_without = branch(0, "") + "".join(branch(w, "  __syncthreads();\n") for w in (1, 2, 3))
    assert unpaired_warp_barriers(first_without) == ["0:0 1:1 2:1 3:1"]
    partial = "".join(branch(w, "  __syncthreads();\n") for w in (1, 2, 3))
    assert unpaired_warp_barriers(partial) == ["1:1 2:1 3:1"]
    no_barriers = "".join(branch(w, "") for w in (9, 10, 11))
    assert unpaired_warp_barriers(no_barriers) == []
    apart = branch(0, "") + "x = 1;\n" + branch(1, "  __syncthreads();\n")  # not adjacent: two runs
    assert unpaired_warp_barriers(apart) == ["1:1"]


@pytest.mark.skipif(not _sources(), reason="no generated sources: run `python -m flashqla_kernels.build` first")
@pytest.mark.parametrize("source", _sources(), ids=lambda p: p.stem)
def test_cta_barriers_in_warp_branches_pair_up(source):
    assert unpaired_warp_barriers(source.read_text()) == []


def named_barrier_collisions(text: str, handover_ids: tuple) -> list[int]:
    """The constant ids of `__sync_thread_partial(id, ...)` in a source that hands P over by named barriers
    (`flashqla_bar_sync`, chunk_fwd's p_ready_arrive / p_ready_wait, ids `handover_ids`) that are among those ids: a
    second use of a hand-over barrier would pair its arrivals with the wrong waits."""
    if "flashqla_bar_sync(" not in text:
        return []
    used = {int(m.group(1)) for m in re.finditer(r"__sync_thread_partial\((\d+),", text)}
    return sorted(used & set(handover_ids))


def test_named_barrier_scanner():
    src = "flashqla_bar_sync(((gc & 1) + 9), 384);\n  tl::__sync_thread_partial(12, 256);\n"
    assert named_barrier_collisions(src, (9, 10)) == []
    assert named_barrier_collisions(src + "tl::__sync_thread_partial(10, 128);", (9, 10)) == [10]
    assert named_barrier_collisions("tl::__sync_thread_partial(9, 128);", (9, 10)) == []  # no hand-over there


@pytest.mark.skipif(not _sources(), reason="no generated sources: run `python -m flashqla_kernels.build` first")
@pytest.mark.parametrize("source", _sources(), ids=lambda p: p.stem)
def test_handover_barriers_not_reused(source):
    from flashqla_kernels.chunk_fwd import P_READY_BARRIER_ID

    ids = (P_READY_BARRIER_ID, P_READY_BARRIER_ID + 1)
    assert named_barrier_collisions(source.read_text(), ids) == []
