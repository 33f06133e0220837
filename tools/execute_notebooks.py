"""Re-execute the course's notebooks in place, so their stored outputs are what the code prints now.

    python tools/execute_notebooks.py                 # every notebook in book/ and solutions/
    python tools/execute_notebooks.py book/01_arrays.ipynb

Why a script of our own rather than ``jupyter nbconvert --execute``: the stored notebooks
must be byte-stable from run to run, so that a diff shows only real changes. Each notebook
gets a fresh kernel of *this* interpreter (the same one ``pytest --nbval-current-env``
uses), runs with its own folder as working directory, records no timing metadata, and is
saved with normalised notebook metadata. Exercise notebooks are never executed: they are
handed to learners clean.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import nbformat
from ipykernel.kernelspec import get_kernel_dict
from jupyter_client.kernelspec import KernelSpec, KernelSpecManager
from jupyter_client.manager import AsyncKernelManager
from nbclient import NotebookClient

from booktools.notebook_format import normalise_metadata

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ("book", "solutions")


class CurrentInterpreterKernels(KernelSpecManager):
    """Always start the kernel with this interpreter, whatever kernelspecs the machine has."""

    def get_kernel_spec(self, kernel_name: str) -> KernelSpec:
        return KernelSpec(resource_dir="", **get_kernel_dict())


def _machine_independent(line: str) -> str:
    """A traceback line with this machine's paths made relative (the repository's) or
    elided (the Python installation's), so stored error outputs read the same everywhere."""
    line = line.replace(f"{ROOT}{os.sep}", "")
    for prefix in {sys.prefix, sys.base_prefix}:
        line = line.replace(prefix, "<python>")
    return line


def coalesce_streams(outputs: list) -> list:
    """One output for each run of prints to the same stream: how a busy machine splits
    them (a thread printing, the kernel flushing early) varies from run to run."""
    merged: list = []
    for output in outputs:
        previous = merged[-1] if merged else None
        if (output.output_type == "stream" and previous is not None
                and previous.output_type == "stream" and previous.name == output.name):
            previous.text += output.text
        else:
            merged.append(output)
    return merged


def normalise(nb: nbformat.NotebookNode) -> None:
    """Drop metadata that changes from run to run or from machine to machine."""
    normalise_metadata(nb)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = coalesce_streams(cell.outputs)
            cell.metadata.pop("collapsed", None)
            cell.metadata.pop("scrolled", None)
            for output in cell.outputs:
                if output.output_type == "error":  # nbval compares only ename and evalue
                    output.traceback = [_machine_independent(t) for t in output.traceback]


def execute(path: Path) -> float:
    """Run one notebook top to bottom in a fresh kernel and save it; return seconds taken."""
    nb = nbformat.read(path, as_version=4)
    kernel = AsyncKernelManager(kernel_name="python3",
                                kernel_spec_manager=CurrentInterpreterKernels())
    client = NotebookClient(nb, km=kernel, timeout=600, record_timing=False,
                            resources={"metadata": {"path": str(path.parent)}})
    start = time.perf_counter()
    client.execute(cwd=str(path.parent))
    normalise(nb)
    nbformat.write(nb, path)
    return time.perf_counter() - start


def notebooks(args: list[str]) -> list[Path]:
    if args:
        return [Path(a).resolve() for a in args]
    return [p for folder in FOLDERS for p in sorted((ROOT / folder).glob("*.ipynb"))]


def normalise_exercises() -> None:
    """Exercise notebooks are never executed, but they are stored in the same form."""
    for path in sorted((ROOT / "exercises").glob("*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        normalise_metadata(nb)
        nbformat.write(nb, path)


def main(args: list[str]) -> None:
    if not args:
        normalise_exercises()
    for path in notebooks(args):
        if path.parent.name == "exercises":
            sys.exit(f"{path}: exercise notebooks stay unexecuted; run the solution instead")
        seconds = execute(path)
        print(f"{path.relative_to(ROOT)}: executed in {seconds:.1f} s", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
