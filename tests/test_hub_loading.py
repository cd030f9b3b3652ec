"""flashqla loads as a Hugging Face hub kernel (kernels 0.17.2) the three offline ways users have:

1. kernels.get_local_kernel(<repo>) / get_local_kernel(<repo>/build)
2. LOCAL_KERNELS="qwen/flashqla=<repo>" + get_kernel("qwen/flashqla", version=1)
3. an HF cache laid out as the hub fills it (HF_HUB_CACHE, HF_HUB_OFFLINE=1) + get_kernel(..., version=1)

The layout is written into a temporary repo (bin_dir=None: the reference path, which is what a CPU
torch runs anyway), and, when the real build exists (<repo>/build, as in CI), the real one is loaded
too. Loading through get_kernel / the HF cache runs in a subprocess: huggingface_hub reads
HF_HUB_CACHE / HF_HUB_OFFLINE at import, and each load imports the package afresh under its metadata id.
On a machine with CUDA torch the torch-cuda variant is the one loaded; the tests accept whichever
variant kernels selects for this torch and check that it is the expected one.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from flashqla_kernels.hub_layout import REPO_ID, write_hub_cache, write_hub_layout  # noqa: E402

kernels = pytest.importorskip("kernels", reason="kernels (0.17.2) is not installed")
torch = pytest.importorskip("torch")

EXPECTED_VARIANT = "torch-cuda" if torch.version.cuda else "torch-cpu"
TIMEOUT = 120

# Runs inside the loaded package: a small GVA + varlen problem on the package's own API, compared
# with the package's float64 oracle. Prints one JSON line.
_CHECK = textwrap.dedent(
    """
    import json, sys, time
    from pathlib import Path
    import torch

    def check(fq, how):
        device = "cuda" if torch.cuda.is_available() else "cpu"
        g = torch.Generator().manual_seed(0)
        B, T, H, HV, K, V = 1, 150, 2, 4, 64, 64
        q = torch.randn(B, T, H, K, generator=g)
        k = torch.randn(B, T, H, K, generator=g)
        v = torch.randn(B, T, HV, V, generator=g)
        gate = torch.nn.functional.logsigmoid(torch.randn(B, T, HV, generator=g)) / 16
        beta = torch.sigmoid(torch.randn(B, T, HV, generator=g))
        cu = torch.tensor([0, 37, 37, 150])
        h0 = 0.1 * torch.randn(3, HV, K, V, generator=g)
        args = [x.to(device) for x in (q, k, v, gate, beta)]
        kw = dict(initial_state=h0.to(device), output_final_state=True,
                  use_qk_l2norm_in_kernel=True, cu_seqlens=cu.to(device))
        o, s = fq.chunk_gated_delta_rule(*args, **kw)
        o_ref, s_ref = fq.reference.naive_recurrent_gated_delta_rule_f64(
            q.double(), k.double(), v.double(), gate.double(), beta.double(),
            initial_state=h0.double(), output_final_state=True,
            use_qk_l2norm_in_kernel=True, cu_seqlens=cu)
        rel = lambda a, b: float((a.double().cpu() - b).norm() / b.norm())
        return {
            "how": how,
            "module": fq.__name__,
            "file": str(Path(fq.__file__).absolute()),  # not resolved: HF cache files are symlinks
            "variant": Path(fq.__file__).parent.name,
            "o_shape": list(o.shape), "s_shape": list(s.shape),
            "o_rel": rel(o, o_ref), "s_rel": rel(s, s_ref),
            "device": device,
        }
    """
)


def _run(code: str, env_extra: dict[str, str], drop: tuple[str, ...] = ()) -> dict:
    env = dict(os.environ)
    for name in ("LOCAL_KERNELS", "KERNELS_CACHE", *drop):
        env.pop(name, None)
    env.update({"HF_HUB_OFFLINE": "1", "HF_HUB_DISABLE_TELEMETRY": "1", "PYTHONDONTWRITEBYTECODE": "1"})
    env.update(env_extra)
    proc = subprocess.run(
        [sys.executable, "-c", _CHECK + textwrap.dedent(code)],
        env=env, cwd=str(REPO), capture_output=True, text=True, timeout=TIMEOUT,
    )
    if proc.returncode != 0:
        raise AssertionError(f"subprocess failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    last = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    assert last, f"no result line:\n{proc.stdout}\n{proc.stderr}"
    return json.loads(last[-1])


def _assert_ran(res: dict, under: Path) -> None:
    assert res["variant"] == EXPECTED_VARIANT, res
    assert Path(res["file"]).is_relative_to(under.absolute()), res
    assert res["module"].startswith("_flashqla_"), res
    assert res["o_shape"] == [1, 150, 4, 64] and res["s_shape"] == [3, 4, 64, 64], res
    assert res["o_rel"] < 1e-4 and res["s_rel"] < 1e-4, res


@pytest.fixture(scope="module")
def hub_repo(tmp_path_factory) -> Path:
    """A kernel repo as on the hub: <root>/build/{torch-cuda,torch-cpu} (no binaries)."""
    root = tmp_path_factory.mktemp("hubrepo")
    write_hub_layout(REPO, root / "build", bin_dir=None)
    return root


@pytest.fixture(scope="module")
def hub_cache(tmp_path_factory, hub_repo) -> Path:
    cache = tmp_path_factory.mktemp("hfcache")
    write_hub_cache(cache, hub_repo / "build")
    return cache


# ----------------------------------------------------------------------------- 1. get_local_kernel


def test_get_local_kernel_in_process(hub_repo):
    """In this process, next to an ordinary `import flashqla` (both must coexist)."""
    import flashqla  # the pip / checkout package

    ns = {}
    exec(_CHECK, ns)
    fq = kernels.get_local_kernel(hub_repo)
    assert fq is not flashqla
    assert Path(fq.__file__).parent == hub_repo / "build" / EXPECTED_VARIANT
    res = ns["check"](fq, "get_local_kernel")
    _assert_ran(res, hub_repo)
    # the plain package still works after the hub copy was imported
    res2 = ns["check"](flashqla, "import flashqla")
    assert res2["o_rel"] < 1e-4 and res2["s_rel"] < 1e-4
    # <repo>/build works too (that directory is where the variants are)
    assert kernels.get_local_kernel(hub_repo / "build") is fq


def test_get_local_kernel_cpu_backend(hub_repo):
    fq = kernels.get_local_kernel(hub_repo, backend="cpu")
    assert Path(fq.__file__).parent.name == "torch-cpu"
    assert callable(fq.chunk_gated_delta_rule) and callable(fq.fused_recurrent_gated_delta_rule)


# ----------------------------------------------------------------------------- 2. LOCAL_KERNELS


def test_local_kernels_env_get_kernel(hub_repo):
    res = _run(
        f"""
        import kernels
        fq = kernels.get_kernel({REPO_ID!r}, version=1)
        print(json.dumps(check(fq, "LOCAL_KERNELS")))
        """,
        {"LOCAL_KERNELS": f"{REPO_ID}={hub_repo}"},
    )
    _assert_ran(res, hub_repo)


# ----------------------------------------------------------------------------- 3. HF cache, offline


def test_hf_cache_offline_get_kernel(hub_cache):
    res = _run(
        f"""
        import kernels
        fq = kernels.get_kernel({REPO_ID!r}, version=1)
        out = check(fq, "HF cache")
        try:
            kernels.get_kernel({REPO_ID!r}, version=2)
            out["v2"] = "loaded?!"
        except ValueError as e:
            out["v2"] = str(e)
        print(json.dumps(out))
        """,
        {"HF_HUB_CACHE": str(hub_cache)},
        drop=("HF_HOME",),
    )
    _assert_ran(res, hub_cache / "kernels--qwen--flashqla" / "snapshots")
    assert "Version 2 not found" in res["v2"], res


def test_binaries_found_through_hf_cache_symlinks(tmp_path):
    """In an HF cache every file is a symlink into blobs/: the package must look for _binaries/ next
    to the snapshot's files (Path(__file__).parent), not next to the resolved blob."""
    bins = tmp_path / "bins"
    bins.mkdir()
    (bins / "manifest.json").write_text('{"kernels": {}}')
    (bins / "fake.so").write_bytes(b"\x7fELF")
    write_hub_layout(REPO, tmp_path / "repo" / "build", bin_dir=bins)
    snap = write_hub_cache(tmp_path / "hub", tmp_path / "repo" / "build")
    variant = snap / "build" / "torch-cuda"
    if not (variant / "__init__.py").is_symlink():
        pytest.skip("no symlinks on this filesystem")
    # the variant directory itself, as kernels does after resolving the snapshot (any torch can import it)
    fq = kernels.get_local_kernel(variant)
    assert Path(fq.__file__).parent == variant
    import importlib

    try:
        loader = importlib.import_module(f"{fq.__name__}.loader")
    except ImportError:
        loader = None
    if loader is None or not hasattr(loader, "binaries_dir"):
        pytest.skip("the package has no loader.binaries_dir()")
    found = loader.binaries_dir()
    assert found is not None and Path(found).absolute() == (variant / "_binaries").absolute(), (
        f"binaries looked up at {found}, expected {variant / '_binaries'} (do not resolve() __file__)")


# ----------------------------------------------------------------------------- the real build


REAL_BUILD = REPO / "build"


@pytest.mark.skipif(not (REAL_BUILD / "torch-cpu" / "metadata.json").is_file(),
                    reason="no <repo>/build yet (run python -m flashqla_kernels.build)")
def test_real_build_loads_with_local_kernels():
    res = _run(
        f"""
        import kernels
        fq = kernels.get_kernel({REPO_ID!r}, version=1)
        out = check(fq, "LOCAL_KERNELS=<repo>")
        out["kernels_available"] = list(fq.kernels_available()) if hasattr(fq, "kernels_available") else None
        print(json.dumps(out))
        """,
        {"LOCAL_KERNELS": f"{REPO_ID}={REPO}"},
    )
    _assert_ran(res, REAL_BUILD)
    if res["kernels_available"] is not None:
        ok, reason = res["kernels_available"]
        assert isinstance(ok, bool) and isinstance(reason, str) and reason
        if EXPECTED_VARIANT == "torch-cpu":
            assert ok is False  # the CPU variant has no binaries


# ----------------------------------------------------------------------------- examples


def test_quickstart_example_runs():
    proc = subprocess.run(
        [sys.executable, str(REPO / "examples" / "quickstart_get_kernel.py")],
        cwd=str(REPO), capture_output=True, text=True, timeout=TIMEOUT,
        env={**{k: v for k, v in os.environ.items() if k not in ("LOCAL_KERNELS", "KERNELS_CACHE")},
             "HF_HUB_OFFLINE": "1", "PYTHONDONTWRITEBYTECODE": "1"},
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "loaded qwen/flashqla" in proc.stdout, proc.stdout


def test_demo_runs():
    proc = subprocess.run(
        [sys.executable, str(REPO / "examples" / "demo.py"), "--lengths", "70", "0", "130", "--heads", "2", "4"],
        cwd=str(REPO), capture_output=True, text=True, timeout=TIMEOUT,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1",
             "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO / "torch-ext"), os.environ.get("PYTHONPATH")]))},
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "ran on" in proc.stdout and "PASS" in proc.stdout, proc.stdout
