"""The example notebook runs top to bottom (on the CPU in CI: the reference path)."""

from pathlib import Path

import pytest

NOTEBOOK = Path(__file__).resolve().parents[1] / "examples" / "flashqla_tour.ipynb"


def test_tour_notebook_executes():
    nbformat = pytest.importorskip("nbformat", reason="nbformat not installed")
    nbclient = pytest.importorskip("nbclient", reason="nbclient not installed")
    pytest.importorskip("ipykernel", reason="ipykernel not installed")
    nb = nbformat.read(NOTEBOOK, as_version=4)
    nbclient.NotebookClient(nb, timeout=600, kernel_name="python3",
                            resources={"metadata": {"path": str(NOTEBOOK.parent)}}).execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    text = "".join(o.get("text", "") for o in outputs)
    assert "relative L2 error" in text and "flashqla" in text
    assert any("image/png" in o.get("data", {}) for o in outputs), "the plot did not render"
