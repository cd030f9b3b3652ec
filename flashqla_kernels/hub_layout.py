"""Write the Hugging Face hub-kernel layout: build/<variant>/ for `kernels` 0.17.2.

Variants (checked against kernels 0.17.2, variants.py / resolver.py / importer.py / validate.py):

- `torch-cuda`: a *noarch* variant. kernels accepts it for any torch built with CUDA, whatever the
  torch minor, C++ ABI or CUDA minor (only `torch<xy>-...` arch variants are pinned to one torch
  minor). That is exactly right for flashqla: the binaries are C-ABI shared libraries loaded with
  ctypes (no torch C++ ABI inside), so one build serves every torch >= 2.8. Its metadata declares
  backend cuda, archs ["9.0a"]: `get_kernel` (check_arch=True) then refuses a non-Hopper GPU with
  kernels' own message; `check_arch=False` or `get_local_kernel` load it anyway and the package
  falls back to the reference. A torch with CUDA on a machine without a GPU also selects it (the
  arch check is skipped when no device is visible) and runs the reference.
- `torch-cpu`: a noarch variant selected by CPU-only torch builds (and by `backend="cpu"`): the same
  Python package without binaries, so CI, notebooks and laptops load the same API on the reference.

Not used: `torch-universal` (legacy, sorted last and deprecated by kernels in favour of noarch),
`torch<xy>-cxx11-cu<xyz>-x86_64-linux` (would need one build per torch minor for no benefit).

Layout written under `out_dir` (normally <repo>/build):

    build/torch-cuda/
        metadata.json          name, id, version, license, python-depends, backend, digest
        __init__.py ...        torch-ext/flashqla/**.py, flat in the variant directory (kernels'
                               importer loads <variant>/__init__.py first; imports are relative)
        _binaries/*.so         C-ABI kernels for sm_90a + manifest.json (from the AOT build)
    build/torch-cpu/
        metadata.json, __init__.py ...   (no _binaries)

The module is imported by kernels under the name `metadata["id"]`, so the id is unique per variant
and per content (`_flashqla_<variant>_<hash>`): two different builds can live in one process.

Also here, for tests and offline use: `write_hub_cache()` fills an HF cache directory the way
`get_kernel("qwen/flashqla", version=1)` finds it with HF_HUB_OFFLINE=1
(kernels--qwen--flashqla/{blobs, refs/v1, refs/main, snapshots/<sha>/build/<variant>/...}).

CLI: python -m flashqla_kernels.hub_layout [--bin-dir DIR] [--out build] [--hf-cache DIR]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import sys
from pathlib import Path

__all__ = [
    "KERNEL_NAME",
    "REPO_ID",
    "KERNEL_VERSION",
    "LICENSE",
    "CUDA_ARCHS",
    "KERNELS_MINVER",
    "VARIANTS",
    "BINARIES_DIRNAME",
    "package_files",
    "variant_metadata",
    "write_hub_layout",
    "write_hub_cache",
]

KERNEL_NAME = "flashqla"
REPO_ID = "qwen/flashqla"
KERNEL_VERSION = 1  # major API version; the hub branch is v1
LICENSE = "MIT"  # keep in step with pyproject.toml and build.toml
CUDA_ARCHS = ["9.0a"]  # wgmma + TMA: sm_90a only (H100 / H200 / H20 / H800)
KERNELS_MINVER = "0.17.2"  # the kernels release this layout was checked against (DESIGN.md section 3)
BINARIES_DIRNAME = "_binaries"  # the runtime package looks in Path(__file__).parent / "_binaries"
PACKAGE_SUFFIXES = (".py", ".pyi")

# variant name -> metadata "backend" and whether the AOT binaries ship in it
VARIANTS: dict[str, dict] = {
    "torch-cuda": {"backend": {"type": "cuda", "archs": list(CUDA_ARCHS)}, "binaries": True},
    "torch-cpu": {"backend": {"type": "cpu"}, "binaries": False},
}


def _package_dir(repo_root: Path) -> Path:
    return Path(repo_root) / "torch-ext" / KERNEL_NAME


def package_files(repo_root: Path) -> list[Path]:
    """The runtime package's source files, relative to torch-ext/flashqla/ (sorted).

    Python sources only: no __pycache__, no locally built _binaries/ (those come from bin_dir).
    """
    pkg = _package_dir(repo_root)
    if not (pkg / "__init__.py").is_file():
        raise FileNotFoundError(f"runtime package not found: {pkg / '__init__.py'} does not exist")
    files = []
    for path in pkg.rglob("*"):
        rel = path.relative_to(pkg)
        if not path.is_file() or path.suffix not in PACKAGE_SUFFIXES:
            continue
        if "__pycache__" in rel.parts or rel.parts[0] == BINARIES_DIRNAME:
            continue
        files.append(rel)
    return sorted(files)


def _binary_files(bin_dir: Path) -> list[Path]:
    bin_dir = Path(bin_dir)
    manifest = bin_dir / "manifest.json"
    if not manifest.is_file():
        raise FileNotFoundError(f"bin_dir {bin_dir} has no manifest.json (expected <bin_dir>/*.so + manifest.json)")
    try:
        json.loads(manifest.read_text())
    except ValueError as e:
        raise ValueError(f"{manifest} is not valid JSON: {e}") from e
    sos = sorted(p for p in bin_dir.glob("*.so") if p.is_file())
    if not sos:
        raise FileNotFoundError(f"bin_dir {bin_dir} has a manifest.json but no *.so files")
    return [manifest] + sos


def _content_hash(repo_root: Path, files: list[Path], binaries: list[Path]) -> str:
    h = hashlib.sha256()
    pkg = _package_dir(repo_root)
    for rel in files:
        h.update(rel.as_posix().encode() + b"\0" + (pkg / rel).read_bytes() + b"\0")
    for path in binaries:
        h.update(f"{BINARIES_DIRNAME}/{path.name}".encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


def variant_metadata(variant: str, content_hash: str) -> dict:
    """metadata.json for one variant (before the digest is added)."""
    spec = VARIANTS[variant]
    backend_type = spec["backend"]["type"]
    return {
        "name": KERNEL_NAME,
        # kernels imports the package as sys.modules[id]: keep it an identifier, unique per build.
        "id": f"_{KERNEL_NAME}_{backend_type}_{content_hash[:10]}",
        "version": KERNEL_VERSION,
        "kernels-minver": KERNELS_MINVER,
        "license": LICENSE,
        # kernels allows only einops, tvm-ffi, helion (+ nvidia-cutlass-dsl on CUDA): we need none;
        # torch is the host, and tilelang is a build-time dependency only.
        "python-depends": [],
        "backend": json.loads(json.dumps(spec["backend"])),
    }


def _digest(variant_dir: Path) -> dict | None:
    """A sha256 digest of the variant's files in kernels' format (None if kernels is absent)."""
    try:
        from kernels._rust import Digest, DigestAlgorithm  # type: ignore
    except Exception:
        return None
    d = Digest.hash_variant(DigestAlgorithm.SHA256, str(variant_dir))
    return {"algorithm": "sha256", "files": dict(sorted(d.files.items()))}


def write_hub_layout(repo_root: Path, out_dir: Path, bin_dir: Path | None) -> list[Path]:
    """Write build/<variant>/ for every variant in VARIANTS; return the variant directories.

    repo_root: the flashqla checkout (package source in torch-ext/flashqla/).
    out_dir:   where the variants go, normally <repo_root>/build. Existing variant dirs are replaced.
    bin_dir:   the AOT build output (*.so + manifest.json), copied to torch-cuda/_binaries/;
               None writes the layout without binaries (the package then runs the reference).
    """
    repo_root = Path(repo_root).resolve()
    out_dir = Path(out_dir)
    files = package_files(repo_root)
    binaries = _binary_files(Path(bin_dir)) if bin_dir is not None else []
    chash = _content_hash(repo_root, files, binaries)
    pkg = _package_dir(repo_root)

    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for variant, spec in VARIANTS.items():
        final = out_dir / variant
        tmp = out_dir / f".{variant}.tmp-{os.getpid()}"
        if tmp.exists():
            shutil.rmtree(tmp)
        tmp.mkdir()
        try:
            for rel in files:
                dst = tmp / rel
                dst.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(pkg / rel, dst)
            if spec["binaries"] and binaries:
                bdir = tmp / BINARIES_DIRNAME
                bdir.mkdir()
                for path in binaries:
                    shutil.copyfile(path, bdir / path.name)
                    shutil.copymode(path, bdir / path.name)
            meta = variant_metadata(variant, chash)
            digest = _digest(tmp)
            if digest is not None:
                meta["digest"] = digest
            (tmp / "metadata.json").write_text(json.dumps(meta, indent=2) + "\n")
            if final.exists():
                shutil.rmtree(final)
            tmp.rename(final)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        written.append(final)
    return written


# ----------------------------------------------------------------------------- HF cache (offline)


def _files_under(root: Path) -> list[Path]:
    return sorted(
        p.relative_to(root)
        for p in root.rglob("*")
        if p.is_file() and "__pycache__" not in p.relative_to(root).parts and p.suffix != ".pyc"
    )


def write_hub_cache(
    cache_dir: Path,
    layout_dir: Path,
    *,
    repo_id: str = REPO_ID,
    version: int = KERNEL_VERSION,
    commit: str | None = None,
    variants: list[str] | None = None,
) -> Path:
    """Lay out `layout_dir` (a build/ directory holding <variant>/ dirs) in an HF hub cache.

    Mirrors what huggingface_hub writes when kernels downloads a kernel repo:
        <cache_dir>/kernels--<org>--<name>/blobs/<sha256>
        <cache_dir>/kernels--<org>--<name>/snapshots/<commit>/build/<variant>/<file> -> ../../blobs/...
        <cache_dir>/kernels--<org>--<name>/refs/v<version>   (the commit; kernels resolves version=N here)
        <cache_dir>/kernels--<org>--<name>/refs/main
    Then, with HF_HUB_CACHE=<cache_dir> HF_HUB_OFFLINE=1, get_kernel(repo_id, version=version) loads it.
    Returns the snapshot directory. `commit` defaults to a content hash (40 hex digits).
    """
    cache_dir = Path(cache_dir)
    layout_dir = Path(layout_dir)
    names = variants or sorted(v for v in VARIANTS if (layout_dir / v / "metadata.json").is_file())
    if not names:
        raise FileNotFoundError(f"no variant with a metadata.json under {layout_dir}")
    entries: list[tuple[str, Path]] = []
    for v in names:
        for rel in _files_under(layout_dir / v):
            entries.append((f"build/{v}/{rel.as_posix()}", layout_dir / v / rel))
    if commit is None:
        h = hashlib.sha1()
        for name, src in entries:
            h.update(name.encode() + b"\0" + src.read_bytes())
        commit = h.hexdigest()
    if len(commit) != 40 or any(c not in "0123456789abcdef" for c in commit):
        raise ValueError(f"commit must be 40 lowercase hex digits, got {commit!r}")

    org_name = repo_id.replace("/", "--")
    repo_cache = cache_dir / f"kernels--{org_name}"
    blobs = repo_cache / "blobs"
    snapshot = repo_cache / "snapshots" / commit
    refs = repo_cache / "refs"
    for d in (blobs, snapshot, refs):
        d.mkdir(parents=True, exist_ok=True)
    for name, src in entries:
        data = src.read_bytes()
        blob = blobs / hashlib.sha256(data).hexdigest()
        if not blob.exists():
            blob.write_bytes(data)
        link = snapshot / name
        link.parent.mkdir(parents=True, exist_ok=True)
        if link.exists() or link.is_symlink():
            link.unlink()
        try:
            link.symlink_to(os.path.relpath(blob, link.parent))
        except OSError:  # filesystems without symlinks: huggingface_hub copies too
            shutil.copyfile(blob, link)
    (refs / f"v{version}").write_text(commit)
    (refs / "main").write_text(commit)
    return snapshot


def _main(argv: list[str] | None = None) -> int:
    repo = Path(__file__).resolve().parent.parent
    ap = argparse.ArgumentParser(prog="python -m flashqla_kernels.hub_layout", description=__doc__.split("\n")[0])
    ap.add_argument("--repo", type=Path, default=repo, help="flashqla checkout (default: this one)")
    ap.add_argument("--out", type=Path, default=None, help="output directory (default: <repo>/build)")
    ap.add_argument("--bin-dir", type=Path, default=None, help="AOT build output (*.so + manifest.json)")
    ap.add_argument("--no-write", action="store_true", help="do not (re)write the layout, only --hf-cache")
    ap.add_argument("--hf-cache", type=Path, default=None, help="also lay the result out as an HF hub cache here")
    args = ap.parse_args(argv)
    out = args.out or args.repo / "build"
    if not args.no_write:
        for d in write_hub_layout(args.repo, out, args.bin_dir):
            meta = json.loads((d / "metadata.json").read_text())
            nbin = len(list((d / BINARIES_DIRNAME).glob("*.so"))) if (d / BINARIES_DIRNAME).is_dir() else 0
            print(f"{d}: id={meta['id']} backend={meta['backend']} binaries={nbin}")
    if args.hf_cache is not None:
        snap = write_hub_cache(args.hf_cache, out)
        print(f"HF cache snapshot: {snap}")
        print(f"use: HF_HUB_CACHE={args.hf_cache} HF_HUB_OFFLINE=1 python -c "
              f"\"import kernels; kernels.get_kernel('{REPO_ID}', version={KERNEL_VERSION})\"")
    return 0


if __name__ == "__main__":
    sys.exit(_main())
