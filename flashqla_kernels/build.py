"""Ahead-of-time build: `python -m flashqla_kernels.build [--only NAME_SUBSTRING] [--jobs N]`.

Compiles every specialisation of specs.py for sm_90a on a machine without a GPU (TileLang lowers,
nvcc compiles), writes the binaries and a manifest.json to build/_binaries/, then lays out the hub
variants under build/ (hub_layout.py). At run time nothing compiles: the package loads these files.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
MANIFEST_FORMAT = 1


def _compile_one(spec_tuple, out_dir: str):
    from .aot import build_spec
    from .specs import Spec

    spec = Spec(spec_tuple[0], spec_tuple[1])
    t0 = time.time()
    ck = build_spec(spec, Path(out_dir))
    return {
        "name": spec.name,
        "kernel": spec.kernel,
        "params": dict(spec.params),
        "library": ck.library.name,
        "args": ck.args,
        "source_sha256": ck.source_sha256,
        "ptxas": ck.ptxas,
        "seconds": round(time.time() - t0, 1),
    }


def build_binaries(out_dir: Path, only: str | None = None, jobs: int = 1) -> dict:
    from .progress import Progress
    from .specs import all_specs

    specs = [s for s in all_specs() if not only or only in s.name]
    out_dir.mkdir(parents=True, exist_ok=True)
    manifest_path = out_dir / "manifest.json"
    entries = {}
    if manifest_path.exists() and only:
        entries = json.loads(manifest_path.read_text()).get("kernels", {})
    with Progress(len(specs), "compiling sm_90a kernels") as bar:
        if jobs <= 1:
            for s in specs:
                bar.step(s.name)
                e = _compile_one((s.kernel, s.params), str(out_dir))
                entries[e["name"]] = e
        else:
            with ProcessPoolExecutor(max_workers=jobs) as pool:
                futs = {pool.submit(_compile_one, (s.kernel, s.params), str(out_dir)): s for s in specs}
                for f, s in futs.items():
                    e = f.result()
                    bar.step(s.name)
                    entries[e["name"]] = e
    current = {s.name for s in all_specs()}
    for name in [n for n in entries if n not in current]:  # specialisations no longer in the table
        del entries[name]
    for f in out_dir.iterdir():
        if f.suffix in (".so", ".cu") and f.stem not in current:
            f.unlink()
    for name, e in sorted(entries.items()):  # say it where the build is watched, not only in the manifest
        if e.get("ptxas", {}).get("wgmma_serialised"):
            print(f"warning: ptxas serialises the wgmma of {name}: {e['ptxas']['wgmma_serialised'][0]}",
                  file=sys.stderr)
    manifest = {"format": MANIFEST_FORMAT, "arch": "sm_90a", "kernels": entries}
    manifest_path.write_text(json.dumps(manifest, indent=1, sort_keys=True))
    return manifest


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--only", default=None, help="build only specialisations whose name contains this")
    ap.add_argument("--jobs", type=int, default=int(os.environ.get("FLASHQLA_BUILD_JOBS", os.cpu_count() or 1)))
    ap.add_argument("--out", type=Path, default=REPO / "build")
    ap.add_argument("--skip-compile", action="store_true", help="only rewrite the hub layout")
    args = ap.parse_args(argv)
    bin_dir = args.out / "_binaries"
    t0 = time.time()
    if not args.skip_compile:
        build_binaries(bin_dir, args.only, args.jobs)
    from .hub_layout import write_hub_layout

    written = write_hub_layout(REPO, args.out, bin_dir)
    print(f"built {bin_dir} and {len(written)} hub variant(s) in {time.time() - t0:.0f} s", file=sys.stderr)
    for w in written:
        print(f"  {w}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
