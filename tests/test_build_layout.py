"""The hub-kernel layout (flashqla_kernels/hub_layout.py), build.toml, and the build's progress bar.

CPU only, no tilelang needed: the layout is written into a temporary directory (bin_dir=None or a fake
bin_dir), and checked with kernels' own parsers (metadata, variants, build.toml, digest). When the real
build has run (<repo>/build exists, as in CI after `python -m flashqla_kernels.build`), that layout is
checked too.
"""

from __future__ import annotations

import io
import json
import re
import sys
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))  # flashqla_kernels is a build-time package living at the repo root

from flashqla_kernels import hub_layout  # noqa: E402
from flashqla_kernels.hub_layout import (  # noqa: E402
    BINARIES_DIRNAME,
    VARIANTS,
    package_files,
    write_hub_cache,
    write_hub_layout,
)
from flashqla_kernels.progress import Progress, format_seconds  # noqa: E402

kernels = pytest.importorskip("kernels", reason="kernels (0.17.2) is not installed")
from kernels._rust import Build, Digest, DigestAlgorithm, Metadata  # noqa: E402
from kernels.variants import NoarchVariant, parse_variant  # noqa: E402

PKG = REPO / "torch-ext" / "flashqla"


@pytest.fixture(scope="module")
def layout(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("layout") / "build"
    written = write_hub_layout(REPO, out, bin_dir=None)
    assert sorted(p.name for p in written) == sorted(VARIANTS)
    return out


@pytest.fixture(scope="module")
def fake_bins(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("bins")
    (d / "manifest.json").write_text(json.dumps({"arch": "sm_90a", "kernels": ["a", "b"]}))
    (d / "flashqla_a_sm90a.so").write_bytes(b"\x7fELF fake a")
    (d / "flashqla_b_sm90a.so").write_bytes(b"\x7fELF fake b")
    (d / "notes.txt").write_text("not copied")
    return d


# ----------------------------------------------------------------------------- metadata


def _metadata(variant_dir: Path) -> tuple[dict, Metadata]:
    raw = json.loads((variant_dir / "metadata.json").read_text())
    return raw, Metadata.read_from_file(variant_dir / "metadata.json")


def test_variants_are_noarch_torch_cuda_and_torch_cpu(layout):
    names = sorted(p.name for p in layout.iterdir() if p.is_dir() and not p.name.startswith("."))
    assert names == ["torch-cpu", "torch-cuda"]
    for name in names:
        v = parse_variant(name)
        assert isinstance(v, NoarchVariant), name
        assert v.variant_str == name
    assert not list(layout.glob(".*tmp*")), "temporary directories left behind"


def test_metadata_cuda(layout):
    raw, meta = _metadata(layout / "torch-cuda")
    assert raw["name"] == "flashqla" and str(meta.name) == "flashqla"
    assert raw["version"] == 1 and meta.version == 1
    assert raw["license"] == "MIT"
    assert raw["python-depends"] == [] and meta.python_depends == []
    assert raw["backend"] == {"type": "cuda", "archs": ["9.0a"]}
    assert str(meta.backend.backend_type).lower().endswith("cuda")
    assert meta.backend.archs == ["9.0a"]
    assert raw["kernels-minver"] == "0.17.2"


def test_metadata_cpu(layout):
    raw, meta = _metadata(layout / "torch-cpu")
    assert raw["name"] == "flashqla" and raw["version"] == 1 and raw["license"] == "MIT"
    assert raw["python-depends"] == []
    assert raw["backend"] == {"type": "cpu"}
    assert str(meta.backend.backend_type).lower().endswith("cpu")
    assert not meta.backend.archs


def test_metadata_ids_are_module_names_unique_per_variant(layout):
    ids = {}
    for v in VARIANTS:
        raw, _ = _metadata(layout / v)
        # kernels imports the package as sys.modules[id]: it must be a plain identifier.
        assert re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", raw["id"]), raw["id"]
        assert raw["id"].startswith("_flashqla_")
        ids[v] = raw["id"]
    assert len(set(ids.values())) == len(ids)


def test_ids_change_with_content(tmp_path, fake_bins, layout):
    with_bins = write_hub_layout(REPO, tmp_path / "build", bin_dir=fake_bins)
    a = json.loads((layout / "torch-cuda" / "metadata.json").read_text())["id"]
    b = json.loads((with_bins[0].parent / "torch-cuda" / "metadata.json").read_text())["id"]
    assert a != b


def test_kernels_validators_accept_metadata(layout):
    from kernels.validate import ArchValidator, default_metadata_validators

    for v in VARIANTS:
        meta = Metadata.read_from_file(layout / v / "metadata.json")
        for validator in default_metadata_validators() + [ArchValidator()]:
            validator.validate_metadata(metadata=meta, variant=v)


def test_digest_matches_files(layout):
    for v in VARIANTS:
        meta = Metadata.read_from_file(layout / v / "metadata.json")
        assert meta.digest is not None
        meta.digest.validate(Digest.hash_variant(DigestAlgorithm.SHA256, str(layout / v)))


# ----------------------------------------------------------------------------- files


def test_package_files_copied_flat(layout):
    files = package_files(REPO)
    assert Path("__init__.py") in files
    for v in VARIANTS:
        for rel in files:
            dst = layout / v / rel
            assert dst.is_file(), f"{v}: {rel} missing"
            assert dst.read_bytes() == (PKG / rel).read_bytes(), f"{v}: {rel} differs from the source"
        # kernels' importer loads <variant>/__init__.py first
        assert (layout / v / "__init__.py").is_file()
        assert not list((layout / v).rglob("__pycache__"))
        assert not list((layout / v).rglob("*.pyc"))


def test_layout_without_bin_dir_has_no_binaries(layout):
    for v in VARIANTS:
        assert not (layout / v / BINARIES_DIRNAME).exists()


def test_binaries_go_to_cuda_variant_only(tmp_path, fake_bins):
    out = tmp_path / "build"
    write_hub_layout(REPO, out, bin_dir=fake_bins)
    bins = out / "torch-cuda" / BINARIES_DIRNAME
    assert sorted(p.name for p in bins.iterdir()) == ["flashqla_a_sm90a.so", "flashqla_b_sm90a.so", "manifest.json"]
    assert (bins / "manifest.json").read_bytes() == (fake_bins / "manifest.json").read_bytes()
    assert not (out / "torch-cpu" / BINARIES_DIRNAME).exists()
    meta = Metadata.read_from_file(out / "torch-cuda" / "metadata.json")
    assert f"{BINARIES_DIRNAME}/manifest.json" in meta.digest.files


def test_rewrite_replaces_stale_files(tmp_path, fake_bins):
    out = tmp_path / "build"
    write_hub_layout(REPO, out, bin_dir=fake_bins)
    (out / "torch-cpu" / "stale.py").write_text("x = 1\n")
    write_hub_layout(REPO, out, bin_dir=None)
    assert not (out / "torch-cpu" / "stale.py").exists()
    assert not (out / "torch-cuda" / BINARIES_DIRNAME).exists()


def test_bad_bin_dir_is_refused(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(FileNotFoundError, match="manifest.json"):
        write_hub_layout(REPO, tmp_path / "build", bin_dir=empty)
    (empty / "manifest.json").write_text("{}")
    with pytest.raises(FileNotFoundError, match=r"\*\.so"):
        write_hub_layout(REPO, tmp_path / "build", bin_dir=empty)


def test_package_files_skip_caches_and_local_binaries(tmp_path):
    pkg = tmp_path / "torch-ext" / "flashqla"
    (pkg / "__pycache__").mkdir(parents=True)
    (pkg / BINARIES_DIRNAME).mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "api.py").write_text("")
    (pkg / "__pycache__" / "api.cpython-311.pyc").write_bytes(b"")
    (pkg / BINARIES_DIRNAME / "loader_helper.py").write_text("")
    (pkg / "notes.md").write_text("")
    assert package_files(tmp_path) == [Path("__init__.py"), Path("api.py")]


# ----------------------------------------------------------------------------- variant resolution


@pytest.mark.parametrize(
    "backend, expected",
    [("cuda:12.8", "torch-cuda"), ("cuda:13.0", "torch-cuda"), ("cuda:12.6", "torch-cuda"), ("cpu", "torch-cpu")],
)
@pytest.mark.parametrize("torch_version", ["2.8", "2.11", "2.13"])
def test_kernels_selects_variant(backend, expected, torch_version):
    """Every torch >= 2.8 with CUDA picks torch-cuda, CPU-only torch picks torch-cpu (kernels' resolver)."""
    from kernels.backends import CPU, CUDA
    from kernels.variants import _resolve_variant_for_system
    from packaging.version import Version

    be = CPU() if backend == "cpu" else CUDA(version=Version(backend.split(":")[1]))
    variants = [parse_variant(v) for v in VARIANTS]
    accepted, _ = _resolve_variant_for_system(variants, be, "x86_64", "linux", Version(torch_version), True, None)
    assert [v.variant_str for v in accepted] == [expected]


def test_kernels_selects_variant_here(layout):
    """The same decision through kernels' public path, for the torch installed here."""
    import torch
    from kernels.variants import get_variants_local, resolve_variant

    chosen, _ = resolve_variant(get_variants_local(layout))
    assert chosen is not None
    assert chosen.variant_str == ("torch-cuda" if torch.version.cuda else "torch-cpu")
    cpu, _ = resolve_variant(get_variants_local(layout), backend="cpu")
    assert cpu.variant_str == "torch-cpu"


def test_arch_validator_refuses_other_gpus(layout, monkeypatch):
    """On a CUDA device other than 9.0, get_kernel (check_arch=True) raises kernels' clear error."""
    import torch
    from kernels.validate import ArchValidator

    meta = Metadata.read_from_file(layout / "torch-cuda" / "metadata.json")
    monkeypatch.setattr(torch.version, "cuda", "13.0", raising=False)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda *a, **k: (9, 0))
    ArchValidator().validate_metadata(metadata=meta, variant="torch-cuda")
    for cap in [(8, 0), (8, 9), (10, 0), (12, 0)]:
        monkeypatch.setattr(torch.cuda, "get_device_capability", lambda *a, cap=cap, **k: cap)
        with pytest.raises(RuntimeError, match="9.0a"):
            ArchValidator().validate_metadata(metadata=meta, variant="torch-cuda")


# ----------------------------------------------------------------------------- HF cache helper


def test_write_hub_cache_layout(tmp_path, layout):
    snap = write_hub_cache(tmp_path / "hub", layout)
    repo_cache = tmp_path / "hub" / "kernels--qwen--flashqla"
    commit = (repo_cache / "refs" / "v1").read_text()
    assert re.fullmatch(r"[0-9a-f]{40}", commit)
    assert (repo_cache / "refs" / "main").read_text() == commit
    assert snap == repo_cache / "snapshots" / commit
    for v in VARIANTS:
        init = snap / "build" / v / "__init__.py"
        assert init.is_file()
        assert init.read_bytes() == (layout / v / "__init__.py").read_bytes()
        if init.is_symlink():
            assert init.resolve().parent == (repo_cache / "blobs").resolve()
    from kernels._versions import _get_available_versions_from_cache
    from huggingface_hub import constants

    old = constants.HF_HUB_CACHE
    try:
        constants.HF_HUB_CACHE = str(tmp_path / "hub")
        import os

        if os.environ.get("KERNELS_CACHE"):
            pytest.skip("KERNELS_CACHE is set; kernels would look there")
        versions = _get_available_versions_from_cache("qwen/flashqla")
    finally:
        constants.HF_HUB_CACHE = old
    assert versions[1].target_commit == commit


# ----------------------------------------------------------------------------- build.toml / flake.nix


def test_build_toml_parses_with_kernels():
    build = Build.open(str(REPO))
    assert sorted(str(b).lower().split(".")[-1] for b in build.general.backends) == ["cpu", "cuda"]
    cfg = tomllib.loads((REPO / "build.toml").read_text())
    assert cfg["general"]["edition"] == 5
    assert cfg["general"]["name"] == "flashqla"
    assert cfg["general"]["version"] == hub_layout.KERNEL_VERSION
    assert cfg["general"]["license"] == hub_layout.LICENSE
    assert cfg["general"]["hub"]["repo-id"] == hub_layout.REPO_ID
    assert cfg["torch-noarch"]["cuda_capabilities"] == hub_layout.CUDA_ARCHS
    assert "kernel" not in cfg, "no [kernel.*] sections: the kernels are TileLang, built by flashqla_kernels.build"


def test_license_consistent_with_pyproject():
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text())
    lic = pyproject["project"].get("license")
    lic = lic.get("text") if isinstance(lic, dict) else lic
    assert lic == hub_layout.LICENSE


def test_flake_describes_the_real_build():
    text = (REPO / "flake.nix").read_text()
    assert "python -m flashqla_kernels.build" in text
    assert "cudaPackages_13_0" in text
    assert ".cu\"" not in text


# ----------------------------------------------------------------------------- the real build


REAL_BUILD = REPO / "build"


@pytest.mark.skipif(not (REAL_BUILD / "torch-cuda" / "metadata.json").is_file(),
                    reason="no <repo>/build yet (run python -m flashqla_kernels.build)")
def test_real_build_layout():
    for v in VARIANTS:
        raw, meta = _metadata(REAL_BUILD / v)
        assert raw["name"] == "flashqla" and raw["version"] == 1
        assert raw["backend"] == VARIANTS[v]["backend"]
        for rel in package_files(REPO):
            dst = REAL_BUILD / v / rel
            assert dst.is_file() and dst.read_bytes() == (PKG / rel).read_bytes(), (
                f"build/{v}/{rel} is missing or stale: rerun python -m flashqla_kernels.build")
    bins = REAL_BUILD / "torch-cuda" / BINARIES_DIRNAME
    assert (bins / "manifest.json").is_file(), "the AOT build wrote no binaries into build/torch-cuda/_binaries"
    json.loads((bins / "manifest.json").read_text())
    sos = list(bins.glob("*.so"))
    assert sos, "no .so in build/torch-cuda/_binaries"
    for so in sos:
        assert so.read_bytes()[:4] == b"\x7fELF", so
    assert not (REAL_BUILD / "torch-cpu" / BINARIES_DIRNAME).exists()


# ----------------------------------------------------------------------------- progress bar


def test_progress_plain_lines():
    buf = io.StringIO()  # not a TTY -> plain lines
    with Progress(3, "compiling", stream=buf) as bar:
        assert bar.mode == "plain"
        bar.step("kkt_solve fp32")
        bar.step("fused_fwd bf16 hv/h=2")
        bar.log("note: cached")
        bar.step("cumsum")
    lines = buf.getvalue().splitlines()
    assert lines[0].startswith("[1/3] compiling kkt_solve fp32 ...")
    assert lines[1].startswith("[2/3] compiling fused_fwd bf16 hv/h=2 ...")
    assert lines[2] == "note: cached"
    assert lines[3].startswith("[3/3] compiling cumsum ...")
    assert lines[4].startswith("compiling: done, 3/3 steps")
    assert "\r" not in buf.getvalue()


def test_progress_tty_redraws_in_place():
    buf = io.StringIO()
    bar = Progress(2, "compiling", stream=buf, mode="tty")
    bar.step("a")
    bar.step("b")
    bar.done()
    out = buf.getvalue()
    assert out.count("\r") >= 2 and out.endswith("\n")
    assert "[##########..........]" in out  # 1 of 2 done when "b" is announced
    assert "done, 2/2 steps" in out


def test_progress_failure_and_quiet(monkeypatch):
    buf = io.StringIO()
    with pytest.raises(KeyError):
        with Progress(4, "compiling", stream=buf) as bar:
            bar.step("a")
            raise KeyError("boom")
    assert "compiling: failed, 1/4 steps" in buf.getvalue()

    monkeypatch.setenv("FLASHQLA_PROGRESS", "0")
    quiet = io.StringIO()
    with Progress(2, "x", stream=quiet) as bar:
        bar.step("a")
    assert quiet.getvalue() == ""
    monkeypatch.setenv("FLASHQLA_PROGRESS", "plain")
    assert Progress(1, stream=io.StringIO(), mode=None).mode == "plain"


def test_progress_misc():
    assert format_seconds(7.4) == "0:07"
    assert format_seconds(3723) == "1:02:03"
    with pytest.raises(ValueError):
        Progress(-1)
    bar = Progress(1, stream=io.StringIO())
    bar.done()
    bar.done()  # idempotent
    with pytest.raises(RuntimeError):
        bar.step("late")
