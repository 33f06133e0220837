"""Reading the course leaves the clone clean.

When JupyterLab opens a notebook it writes the running kernel's ``language_info`` (with
this machine's Python version) into it, and two minutes later it autosaves. These tests do
what JupyterLab does, through Jupyter Server's real contents manager configured as
``tools/course.py lab`` configures it, and check that the saved file is byte for byte the
committed one.
"""

from __future__ import annotations

import copy
import importlib.util
import json
from pathlib import Path

import pytest
from ipykernel.ipkernel import IPythonKernel
from jupyter_server.services.contents.filemanager import FileContentsManager

from booktools.notebook_format import LANGUAGE_INFO, pre_save_hook

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted(p for folder in ("book", "exercises", "solutions")
                   for p in (ROOT / folder).glob("*.ipynb"))


def as_jupyterlab_sends_it(path: Path) -> dict:
    """The notebook as JupyterLab's front end hands it to the server after opening it:
    the kernel's metadata set, each cell's source one string."""
    nb = json.loads(path.read_text(encoding="utf-8"))
    nb["metadata"]["language_info"] = copy.deepcopy(IPythonKernel.language_info)
    nb["metadata"]["kernelspec"] = {"display_name": "Python 3 (ipykernel)",
                                    "language": "python", "name": "python3"}
    for cell in nb["cells"]:
        cell["source"] = "".join(cell["source"])
    return nb


def contents_manager(root: Path) -> FileContentsManager:
    return FileContentsManager(root_dir=str(root),
                               pre_save_hook="booktools.notebook_format.pre_save_hook")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_opening_and_saving_a_notebook_changes_nothing(path, tmp_path):
    manager = contents_manager(tmp_path)
    manager.save({"type": "notebook", "format": "json",
                  "content": as_jupyterlab_sends_it(path)}, path.name)
    saved = (tmp_path / path.name).read_bytes()
    assert saved == path.read_bytes(), (
        f"{path.relative_to(ROOT)} is not stored as JupyterLab saves it: "
        "re-execute it with `python3 tools/course.py execute`"
    )


def test_the_stored_language_info_is_the_kernels_without_its_version():
    kernel_info = dict(IPythonKernel.language_info)
    assert kernel_info.pop("version")
    assert kernel_info == LANGUAGE_INFO


def test_the_hook_leaves_other_files_and_other_kernels_alone():
    text = {"type": "file", "format": "text", "content": "language_info"}
    pre_save_hook(copy.deepcopy(text), path="notes.txt")
    julia = {"type": "notebook", "content": {"cells": [], "metadata": {
        "kernelspec": {"name": "julia-1.10"}, "language_info": {"name": "julia"}}}}
    pre_save_hook(julia, path="x.ipynb")
    assert julia["content"]["metadata"] == {"kernelspec": {"name": "julia-1.10"},
                                            "language_info": {"name": "julia"}}


def test_the_lab_command_installs_the_hook():
    spec = importlib.util.spec_from_file_location("course", ROOT / "tools" / "course.py")
    course = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(course)
    args = course.lab_command(Path("python"), browser=False)
    assert "--ContentsManager.pre_save_hook=booktools.notebook_format.pre_save_hook" in args
