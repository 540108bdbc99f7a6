"""examples/seqlab_tour.ipynb runs top to bottom and shows a profile table and a figure.

The notebook is executed in a fresh ``python3`` Jupyter kernel (nbclient + ipykernel; the kernel spec is
installed for the user only if the environment has none). Its outputs are then read: the profile cell
shows an HTML table with the terminal's row names and the GRU's 6,144 multiplications
(3 gates · 2 products · T · d · d = 3 · 2 · 16 · 8 · 8), and the plot cell shows a PNG image; the learn cell
(three training steps per run) shows the mqar table, and its plot cell the frontier's PNG.
"""

from __future__ import annotations

import subprocess
import sys
import warnings
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")

NOTEBOOK = Path(__file__).resolve().parents[1] / "examples" / "seqlab_tour.ipynb"
ROWS = ("Multiplications counted", "Span: operations in a row", "Span: matrix products in a row", "Longest path",
        "Path from position 1 to T")


def _ensure_kernel() -> None:
    """Install the ``python3`` kernel spec for this interpreter (user scope, offline) if none is found."""
    from jupyter_client.kernelspec import KernelSpecManager

    if "python3" not in KernelSpecManager().find_kernel_specs():
        subprocess.run([sys.executable, "-m", "ipykernel", "install", "--user", "--name", "python3"], check=True,
                       capture_output=True)


def execute(folder: Path):
    """The notebook after a run in ``folder`` (English output: the kernel inherits an English locale)."""
    _ensure_kernel()
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    patch = pytest.MonkeyPatch()
    for variable in ("LANGUAGE", "LC_ALL", "LC_MESSAGES"):
        patch.delenv(variable, raising=False)
    patch.setenv("LANG", "C.UTF-8")
    patch.setenv("JUPYTER_PLATFORM_DIRS", "1")  # jupyter_core warns about its path migration otherwise
    try:
        with warnings.catch_warnings():  # the Jupyter machinery's own deprecations are not seqlab's
            warnings.simplefilter("ignore", DeprecationWarning)
            nbclient.NotebookClient(notebook, timeout=120, kernel_name="python3",
                                    resources={"metadata": {"path": str(folder)}}).execute()
    finally:
        patch.undo()
    return notebook


def outputs(notebook, source: str) -> list[dict]:
    cells = [cell for cell in notebook.cells if cell.cell_type == "code" and cell.source.strip() == source]
    assert len(cells) == 1, f"one code cell '{source}' expected"
    return cells[0].outputs


def test_the_notebook_welcomes_in_spanish_too():
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    assert any(cell.cell_type == "markdown" and "Bienvenida" in cell.source for cell in notebook.cells)
    assert all(not cell.get("outputs") for cell in notebook.cells if cell.cell_type == "code")  # stored clean


def test_the_notebook_runs_and_shows_the_table_and_a_figure(tmp_path):
    """One run (a kernel start and torch's import take seconds): the table cell, then the figure cell."""
    import base64

    executed = execute(tmp_path)
    assert not [o for cell in executed.cells for o in cell.get("outputs", []) if o["output_type"] == "error"]
    shown = [output["data"]["text/html"] for output in outputs(executed, "result") if "text/html" in
             output.get("data", {})]
    assert len(shown) == 1
    page = shown[0]
    assert page.count("<table") == 1 and "Profile of GRU" in page
    for row in ROWS:
        assert f">{row}</td>" in page
    assert ">6,144</td>" in page  # 3 · 2 · 16 · 8 · 8
    images = [output["data"]["image/png"] for output in outputs(executed, "result.plot()")
              if "image/png" in output.get("data", {})]
    assert len(images) == 1 and base64.b64decode(images[0])[:8] == b"\x89PNG\r\n\x1a\n"
    learnt = [cell for cell in executed.cells if cell.cell_type == "code" and "seqlab.run_learn(" in cell.source]
    assert len(learnt) == 1
    shown = [output["data"]["text/html"] for output in learnt[0].outputs if "text/html" in output.get("data", {})]
    assert len(shown) == 1 and shown[0].count("<table") == 1 and "Multi-query associative recall" in shown[0]
    assert ">Linear attention (w = 8, 352 B)</td>" in shown[0]  # its fixed state, measured on its decoder
    images = [output["data"]["image/png"] for output in outputs(executed, "learnt.plot()")
              if "image/png" in output.get("data", {})]
    assert len(images) == 1 and base64.b64decode(images[0])[:8] == b"\x89PNG\r\n\x1a\n"
