"""Run a notebook in a fresh Jupyter kernel of this interpreter (the notebook tests share it)."""

from __future__ import annotations

import json
import pathlib
import sys

from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import KernelManager
from nbclient import NotebookClient

ROOT = pathlib.Path(__file__).resolve().parent.parent


def execute(nb, tmp_path, timeout=120):
    """Run ``nb`` in a fresh kernel of this interpreter (a kernelspec written to ``tmp_path``, so
    no user-installed kernel can stand in for it); fails on the first cell that raised."""
    spec_dir = tmp_path / "kernels" / "gpexplorer-venv"
    spec_dir.mkdir(parents=True)
    (spec_dir / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "gpexplorer venv", "language": "python"}))
    km = KernelManager(kernel_name="gpexplorer-venv",
                       kernel_spec_manager=KernelSpecManager(kernel_dirs=[str(tmp_path / "kernels")]))
    NotebookClient(nb, km=km, timeout=timeout, kernel_name="gpexplorer-venv",
                   resources={"metadata": {"path": str(ROOT)}}).execute()
    for i, cell in enumerate(nb.cells):
        errors = [o for o in cell.get("outputs", []) if o.get("output_type") == "error"]
        assert not errors, f"cell {i} raised {errors[0]['ename']}: {errors[0]['evalue']}"
    return nb
