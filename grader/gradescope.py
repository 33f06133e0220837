"""A Gradescope autograder for one chapter: building its zip, and running inside Gradescope.

``python -m grader bundle 00_warmup -o autograder.zip`` writes the zip an instructor uploads. It
holds, at its root, what Gradescope asks for (see Gradescope's autograder specification):

* ``setup.sh`` -- run once, as root, when Gradescope builds the image: makes a virtual
  environment in ``/autograder/venv`` and installs the grader's dependencies into it;
* ``run_autograder`` -- run once per submission: grades the notebook found in
  ``/autograder/submission`` and writes ``/autograder/results/results.json``;
* ``grader/``, ``minijax/`` and ``exercises/checks/chNN_topic.py`` -- the code that grades (the
  learner's notebook imports minijax), ``requirements.txt``, and ``autograder.json``: the chapter,
  the limits and the visibility settings chosen when the bundle was built.

``run_autograder`` calls ``python -m grader gradescope ROOT`` (:func:`run_in_gradescope`). ``ROOT``
is ``/autograder`` on Gradescope; the environment variable ``AUTOGRADER_ROOT`` moves it (the tests
lay out a temporary folder as Gradescope does), and ``AUTOGRADER_PYTHON`` names another Python
than the one ``setup.sh`` installed.
"""

from __future__ import annotations

import json
import stat
import tomllib
import zipfile
from dataclasses import asdict, dataclass
from pathlib import Path

from grader.chapters import ChapterError, detect_chapter, load_checks
from grader.limits import Limits
from grader.outcome import NotebookReport, Result, Status
from grader.report import format_report, gradescope_json
from grader.runner import grade_notebook

#: The repository the bundle's code is copied from (the one this package lives in).
_REPOSITORY = Path(__file__).resolve().parents[1]

#: Distributions of the course's dependencies that grading does not need (no JupyterLab there),
#: and those it needs beyond them (reading notebooks, IPython's display and magic parser).
_NOT_NEEDED = ("jupyterlab", "ipykernel")
_ALSO_NEEDED = ["nbformat>=5.9", "ipython>=8"]

SETUP_SH = """\
#!/usr/bin/env bash
# Gradescope runs this once, as root, while it builds the autograder image.
set -euo pipefail
apt-get install -y python3 python3-venv python3-pip
python3 -c 'import sys; sys.exit(sys.version_info < (3, 11) and "the course needs Python 3.11 or \
newer: choose a newer Ubuntu base image for the autograder")'
python3 -m venv /autograder/venv
/autograder/venv/bin/pip install --upgrade pip
/autograder/venv/bin/pip install -r /autograder/source/requirements.txt
"""

RUN_AUTOGRADER = """\
#!/usr/bin/env bash
# Gradescope runs this once per submission; it writes $ROOT/results/results.json.
set -euo pipefail
ROOT="${AUTOGRADER_ROOT:-/autograder}"
PYTHON="${AUTOGRADER_PYTHON:-$ROOT/venv/bin/python}"
cd "$ROOT/source"
chmod 700 exercises/checks  # the grader reads the checks; its worker, run as nobody, cannot
export PYTHONPATH="$ROOT/source"
exec "$PYTHON" -m grader gradescope "$ROOT"
"""


@dataclass(frozen=True)
class BundleConfig:
    """The choices an instructor makes when building a bundle (stored as ``autograder.json``)."""

    chapter: str
    limits: Limits
    visibility: str = "visible"
    show_hints: bool = False

    def to_json(self) -> dict[str, object]:
        return {**asdict(self), "limits": asdict(self.limits)}

    @classmethod
    def from_json(cls, data: dict[str, object]) -> BundleConfig:
        limits = Limits(**data["limits"])  # type: ignore[arg-type]
        return cls(**{**data, "limits": limits})  # type: ignore[arg-type]


def build_bundle(config: BundleConfig, checks_dir: Path, output: Path) -> list[str]:
    """Write the autograder zip for ``config.chapter`` to ``output``; return its file names."""
    checks = checks_dir / f"ch{config.chapter}.py"
    if not checks.is_file():
        raise ChapterError(f"no checks for chapter {config.chapter!r}: {checks} does not exist")
    files: dict[str, bytes] = {
        "setup.sh": SETUP_SH.encode(),
        "run_autograder": RUN_AUTOGRADER.encode(),
        "requirements.txt": "".join(f"{line}\n" for line in requirements()).encode(),
        "autograder.json": (json.dumps(config.to_json(), indent=2) + "\n").encode(),
        f"exercises/checks/{checks.name}": checks.read_bytes(),
    }
    for package, pattern in (("grader", "*.py"), ("minijax", "*.py"), ("booktools", "*.py"),
                             ("booktools", "data/*")):
        for path in sorted((_REPOSITORY / package).rglob(pattern)):
            files[path.relative_to(_REPOSITORY).as_posix()] = path.read_bytes()
    with zipfile.ZipFile(output, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, data in files.items():
            info = zipfile.ZipInfo(name, date_time=(2024, 1, 1, 0, 0, 0))  # reproducible zips
            executable = name in ("setup.sh", "run_autograder")
            info.external_attr = (0o755 if executable else 0o644) << 16 | stat.S_IFREG << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, data)
    return list(files)


def requirements() -> list[str]:
    """The course's dependencies (from ``pyproject.toml``) that grading needs, and the grader's."""
    project = tomllib.loads((_REPOSITORY / "pyproject.toml").read_text(encoding="utf-8"))
    needed = [
        line for line in project["project"]["dependencies"]
        if not line.lower().startswith(_NOT_NEEDED)
    ]
    return needed + _ALSO_NEEDED


def run_in_gradescope(root: Path) -> int:
    """Grade the submission below ``root`` as the bundle's config says; write results.json.

    Whatever the submission is -- missing, corrupt, hostile -- a ``results.json`` is written and
    the exit status is 0, because Gradescope shows the student that file; the score table is
    printed for the instructor (Gradescope keeps it in ``results/stdout``).
    """
    source = root / "source"
    config = BundleConfig.from_json(json.loads((source / "autograder.json").read_text()))
    notebook = find_submission(root / "submission", config.chapter)
    if notebook is None:
        report = _missing_submission(config, source / "exercises" / "checks")
    else:
        report = grade_notebook(notebook, config.chapter, source / "exercises" / "checks",
                                config.limits)
    results = root / "results"
    results.mkdir(parents=True, exist_ok=True)
    data = gradescope_json(report, visibility=config.visibility, show_hints=config.show_hints)
    (results / "results.json").write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    print(format_report(report, hints=config.show_hints))
    return 0


def find_submission(folder: Path, chapter: str) -> Path | None:
    """The notebook to grade in ``folder``: the only one, else the one named after the chapter,
    else the first in name order (a student may upload a scratch notebook beside theirs)."""
    notebooks = sorted(
        path for path in folder.rglob("*.ipynb") if ".ipynb_checkpoints" not in path.parts
    )
    if len(notebooks) <= 1:
        return notebooks[0] if notebooks else None
    for notebook in notebooks:
        try:
            if detect_chapter(notebook, [chapter]) == chapter:
                return notebook
        except ChapterError:
            continue
    return notebooks[0]


def _missing_submission(config: BundleConfig, checks_dir: Path) -> NotebookReport:
    message = "no notebook (*.ipynb) was submitted"
    checks = load_checks(config.chapter, checks_dir)
    results = [Result.of(check, Status.NOT_GRADED, message) for check in checks.values()]
    return NotebookReport("(none)", config.chapter, results, error=message, unreadable=True)

