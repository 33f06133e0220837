"""The Gradescope autograder bundle, built by ``python -m grader bundle`` and run as Gradescope
runs it: unpacked into ``ROOT/source``, the student's notebook in ``ROOT/submission``, and
``run_autograder`` writing ``ROOT/results/results.json`` (``ROOT`` is a temporary folder here,
``/autograder`` on Gradescope).

The chapter is the real ``00_warmup``: its solution must score full marks, its pristine exercise
notebook zero.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Iterator
from pathlib import Path

import nbformat
import pytest

from grader.outcome import NotebookReport, Result, Status
from grader.report import gradescope_json
from grader.session import worker_has_a_user_of_its_own

REPOSITORY = Path(__file__).resolve().parents[1]
SOLVED = REPOSITORY / "solutions" / "00_warmup.ipynb"
PRISTINE = REPOSITORY / "exercises" / "00_warmup.ipynb"
OVERFLOW_HINT = "np.exp(1000.0) is inf"


def build(folder: Path, *options: str) -> Path:
    zip_path = folder / "autograder.zip"
    command = [sys.executable, "-m", "grader", "bundle", "00_warmup", "-o", str(zip_path), *options]
    done = subprocess.run(command, capture_output=True, text=True, timeout=60, cwd=folder)
    assert done.returncode == 0, done.stderr
    return zip_path


def gradescope_run(bundle: Path, submission: Path, root: Path) -> dict:
    """Lay out ``root`` as Gradescope does, run ``run_autograder`` there, return results.json."""
    source = root / "source"
    with zipfile.ZipFile(bundle) as archive:
        archive.extractall(source)
        for info in archive.infolist():  # extractall drops the permission bits; Gradescope not
            (source / info.filename).chmod((info.external_attr >> 16) & 0o777)
    shutil.copy2(source / "run_autograder", root / "run_autograder")
    (root / "submission").mkdir()
    shutil.copy2(submission, root / "submission" / submission.name)
    environment = {**os.environ, "AUTOGRADER_ROOT": str(root), "AUTOGRADER_PYTHON": sys.executable}
    environment.pop("PYTHONPATH", None)  # the bundle must carry its own code
    done = subprocess.run(
        [str(root / "run_autograder")], capture_output=True, text=True, timeout=300, cwd=root,
        env=environment,
    )
    assert done.returncode == 0, done.stderr
    assert "total" in done.stdout  # the score table, for the instructor's results/stdout
    return json.loads((root / "results" / "results.json").read_text())


def naive_softmax(tmp_path: Path) -> Path:
    """The solution with a softmax that overflows: 3 of 5 points, and a failure with a hint."""
    nb = nbformat.read(SOLVED, as_version=4)
    cell = next(c for c in nb.cells if c.metadata.get("exercise", {}).get("name") == "softmax")
    cell.source = "def softmax(x):\n    e = np.exp(x)\n    return e / e.sum(axis=-1, keepdims=True)"
    path = tmp_path / "00_warmup.ipynb"
    nbformat.write(nb, path)
    return path


@pytest.fixture(scope="module")
def bundle(tmp_path_factory) -> Path:
    return build(tmp_path_factory.mktemp("bundle"))


@pytest.fixture
def root() -> Iterator[Path]:
    """A folder to play /autograder, readable by all like Gradescope's (pytest's own temporary
    folders are private to their user, and the worker may run as another)."""
    folder = Path(tempfile.mkdtemp(prefix="autograder-"))
    folder.chmod(0o755)
    yield folder
    shutil.rmtree(folder)


def test_the_bundle_holds_what_gradescope_needs(bundle):
    with zipfile.ZipFile(bundle) as archive:
        infos = {info.filename: info for info in archive.infolist()}
        config = json.loads(archive.read("autograder.json"))
        requirements = archive.read("requirements.txt").decode().split()
    for script in ("setup.sh", "run_autograder"):  # at the root of the zip, executable
        assert infos[script].external_attr >> 16 & stat.S_IXUSR
    assert {"requirements.txt", "exercises/checks/ch00_warmup.py", "grader/cli.py",
            "minijax/__init__.py"} <= set(infos)
    assert not any(name.startswith(("solutions/", "exercises/checks/ch01")) for name in infos)
    assert config["chapter"] == "00_warmup" and config["show_hints"] is False
    assert any(line.startswith("numpy") for line in requirements)
    assert any(line.startswith("nbformat") for line in requirements)
    assert not any(line.startswith("jupyterlab") for line in requirements)


def test_a_solved_submission_scores_full_marks(bundle, root):
    results = gradescope_run(bundle, SOLVED, root)
    assert results["score"] == 5
    assert [test["status"] for test in results["tests"]] == ["passed"] * 3
    assert sum(test["max_score"] for test in results["tests"]) == 5
    assert results["execution_time"] > 0
    assert results["visibility"] == "visible"
    assert {test["visibility"] for test in results["tests"]} == {"visible"}


def test_a_pristine_submission_scores_zero(bundle, root):
    results = gradescope_run(bundle, PRISTINE, root)
    assert results["score"] == 0
    assert all("not attempted" in test["output"] for test in results["tests"])


def test_hints_are_hidden_from_students_by_default(bundle, tmp_path, root):
    results = gradescope_run(bundle, naive_softmax(tmp_path), root)
    softmax = next(test for test in results["tests"] if test["name"] == "softmax")
    assert results["score"] == 3 and softmax["score"] == 0
    assert "softmax(np.array([1000.0, 1001.0])) returned" in softmax["output"]
    assert "hint" not in softmax["output"] and OVERFLOW_HINT not in softmax["output"]


def test_the_instructor_may_show_hints_and_choose_the_visibility(tmp_path, root):
    bundle = build(tmp_path, "--show-hints", "--visibility", "after_due_date")
    results = gradescope_run(bundle, naive_softmax(tmp_path), root)
    softmax = next(test for test in results["tests"] if test["name"] == "softmax")
    assert OVERFLOW_HINT in softmax["output"]
    assert results["visibility"] == "after_due_date"
    assert {test["visibility"] for test in results["tests"]} == {"after_due_date"}


def test_a_missing_or_corrupt_submission_still_gets_results(bundle, tmp_path, root):
    corrupt = tmp_path / "00_warmup.ipynb"
    corrupt.write_text("{ not a notebook", encoding="utf-8")
    results = gradescope_run(bundle, corrupt, root)
    assert results["score"] == 0
    assert "cannot read 00_warmup.ipynb as a notebook" in results["output"]


@pytest.mark.skipif(not worker_has_a_user_of_its_own(), reason="the worker runs as nobody only "
                    "when graded as root")
def test_the_submission_cannot_read_the_checks(bundle, tmp_path, root):
    nb = nbformat.read(SOLVED, as_version=4)
    cell = next(c for c in nb.cells if c.metadata.get("exercise", {}).get("name") == "relu")
    cell.source = (
        "import pathlib\n\nimport grader\n\n"
        "CHECKS = pathlib.Path(grader.__file__).parents[1] / 'exercises' / 'checks'\n\n\n"
        "def relu(x):\n"
        "    (CHECKS / 'ch00_warmup.py').read_text()\n"
        "    return np.maximum(x, 0)"
    )
    nbformat.write(nb, tmp_path / "00_warmup.ipynb")
    results = gradescope_run(bundle, tmp_path / "00_warmup.ipynb", root)
    relu = next(test for test in results["tests"] if test["name"] == "relu")
    # the grader's audit hook refuses first (the file is also unreadable to the worker's user)
    assert "the course's solutions and checks are not the notebook's to read" in relu["output"]
    assert results["score"] == 4


def test_gradescope_json_strips_only_the_hint():
    message = "f(1) returned 2; expected 3 -- hint: add one"
    report = NotebookReport("n.ipynb", "99_fixture", [Result("f", Status.FAILED, 0, 1, message)])
    assert gradescope_json(report)["tests"][0]["output"] == "f: failed (0/1 points) -- f(1) " \
        "returned 2; expected 3"
    shown = gradescope_json(report, show_hints=True)["tests"][0]["output"]
    assert shown.endswith(" -- hint: add one")
