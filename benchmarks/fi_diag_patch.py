"""DIAGNOSTIC (wrong outputs): FlashInfer 0.7.2's sm90 GDN prefill with only the first FI_DIAG_LEVELS levels of its
64 x 64 inverse (collective_inverse_hmma.CollectiveInverse.run: 1 the 8 x 8 diagonal blocks, 2 the 16 x 16 merges,
3 the 32 x 32 merges, 4 the 64 x 64 level; 0 none; default 4, the kernel as shipped). Edits the installed file in
place: each level's lines in `run` (from its "Level N" comment to the next) go under a compile-time guard
`if cutlass.const_expr(_FI_DIAG_LEVELS >= N):`, and the module reads FI_DIAG_LEVELS at import. Run once per machine
before timing, then time each level count in its own process with its own CUTE_DSL_CACHE_DIR. Prices FlashInfer's
inverse inside its own kernel, as our leave-one-outs price ours (benchmarks/NOTES.md, session 43).
Usage: python benchmarks/fi_diag_patch.py /tmp/site/flashinfer/gdn_kernels/delta_rule_dsl/collective_inverse_hmma.py"""
import re
import sys

LEVEL_MARK = re.compile(r"^\s*# \W* Level (\d):")  # a level's comment line in `run`
LAST_CALL = "self.blockwise_32x32_to_64x64("  # level 4's call: the end of `run`'s body
FLAG = "_FI_DIAG_LEVELS"


def guard_levels(text: str) -> str:
    """The source with run's four levels under their guards and the flag read after the imports."""
    lines = text.split("\n")
    run = next(i for i, line in enumerate(lines) if line.strip().startswith("def run("))
    starts = [i for i in range(run, len(lines)) if LEVEL_MARK.match(lines[i])]
    assert [int(LEVEL_MARK.match(lines[i]).group(1)) for i in starts] == [1, 2, 3, 4], "unexpected FlashInfer source"
    end = next(i for i in range(starts[-1], len(lines)) if LAST_CALL in lines[i])
    indent = lines[starts[0]][:len(lines[starts[0]]) - len(lines[starts[0]].lstrip())]
    out = lines[:starts[0]]
    for n, i in enumerate(starts, 1):
        out.append(f"{indent}if cutlass.const_expr({FLAG} >= {n}):")
        stop = starts[n] if n < 4 else end + 1
        out += ["    " + line if line.strip() else line for line in lines[i + 1:stop]]
    out += lines[end + 1:]
    last_import = max(i for i, line in enumerate(out[:run]) if line.startswith(("import ", "from ")))
    out[last_import + 1:last_import + 1] = [
        "import os as _os", f'{FLAG} = int(_os.environ.get("FI_DIAG_LEVELS", "4"))  # DIAGNOSTIC (fi_diag_patch.py)']
    return "\n".join(out)


def main():
    path = sys.argv[1]
    text = open(path).read()
    if FLAG in text:
        print("already patched:", path)
        return
    open(path, "w").write(guard_levels(text))
    print("patched:", path)


if __name__ == "__main__":
    main()
