"""Shared pytest setup.

- Makes ``import flashqla`` work from a checkout (adds ``torch-ext/`` to sys.path when the package is
  not installed).
- ``@pytest.mark.gpu`` tests skip unless an sm_90 GPU (H100/H200) is present; the fixtures
  ``kernels_ready`` / ``poisoned_kernels`` also skip when the prebuilt binaries are missing.
- When ``FLASHQLA_TEST_JSON`` is set, writes every test's nodeid, outcome and duration to that path
  (the GPU machine's test entry point reads it).
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from pathlib import Path

import pytest

if importlib.util.find_spec("flashqla") is None:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "torch-ext"))

GPU_SKIP_REASON = "needs an sm_90 GPU (H100/H200) and the prebuilt binaries"


def _has_sm90() -> bool:
    import torch

    return torch.cuda.is_available() and torch.cuda.get_device_capability() == (9, 0)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", f"gpu: {GPU_SKIP_REASON}")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    gpu_items = [item for item in items if item.get_closest_marker("gpu") is not None]
    if gpu_items and not _has_sm90():
        skip = pytest.mark.skip(reason=GPU_SKIP_REASON)
        for item in gpu_items:
            item.add_marker(skip)


@pytest.fixture
def kernels_ready():
    """Skip unless flashqla's prebuilt kernels can serve calls here (an sm_90 GPU and the binaries)."""
    import flashqla

    ok, why = flashqla.kernels_available()
    if not ok:
        pytest.skip(why)


@pytest.fixture
def poisoned_kernels(kernels_ready, monkeypatch):
    """kernels_ready, with every op output buffer starting as NaN (an unwritten element then fails)."""
    from flashqla import ops

    monkeypatch.setattr(ops, "_POISON", True)


_results: dict[str, dict] = {}
_SEVERITY = {"passed": 0, "skipped": 1, "failed": 2}


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Fold the setup/call/teardown reports of each test into one record (worst outcome, summed time)."""
    if not os.environ.get("FLASHQLA_TEST_JSON"):
        return
    rec = _results.setdefault(report.nodeid, {"nodeid": report.nodeid, "outcome": "passed", "duration": 0.0})
    rec["duration"] += report.duration
    outcome = report.outcome
    if report.when != "call" and outcome == "failed":
        outcome = "error"
    if _SEVERITY.get(outcome, 3) > _SEVERITY.get(rec["outcome"], 3):
        rec["outcome"] = outcome
        if outcome == "skipped" and isinstance(report.longrepr, tuple):
            rec["reason"] = report.longrepr[2]
        elif outcome in ("failed", "error"):
            rec["message"] = str(report.longrepr)[-4000:]


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    path = os.environ.get("FLASHQLA_TEST_JSON")
    if not path:
        return
    tests = list(_results.values())
    summary: dict[str, int] = {}
    for rec in tests:
        summary[rec["outcome"]] = summary.get(rec["outcome"], 0) + 1
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(json.dumps({"exitstatus": int(exitstatus), "summary": summary, "tests": tests}, indent=1))
