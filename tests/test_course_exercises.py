"""The course's exercise notebooks, their solutions and their checks agree with each other.

``exercises/NN_topic.ipynb`` is what learners fill in, ``solutions/NN_topic.ipynb`` the same
notebook solved, and ``exercises/checks/chNN_topic.py`` the checks that grade both. The tests are
parametrised over the notebooks, so a new chapter is covered as soon as its files exist.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import nbformat
import pytest

from grader.chapters import known_chapters, load_checks
from grader.limits import Limits
from grader.outcome import NotebookReport, Status
from grader.runner import grade_notebook

ROOT = Path(__file__).resolve().parents[1]
EXERCISES = ROOT / "exercises"
SOLUTIONS = ROOT / "solutions"
CHECKS = EXERCISES / "checks"


def notebook_names(folder: Path) -> list[str]:
    return sorted(path.name for path in folder.glob("*.ipynb"))


NAMES = notebook_names(EXERCISES)


@cache
def graded(folder: Path, name: str) -> NotebookReport:
    return grade_notebook(folder / name, Path(name).stem, CHECKS, Limits())


def cells(folder: Path, name: str) -> list:
    return nbformat.read(folder / name, as_version=4).cells


def exercise_tags(folder: Path, name: str) -> list[tuple[str, float]]:
    tagged = [cell for cell in cells(folder, name) if "exercise" in cell.metadata]
    return [
        (cell.metadata["exercise"]["name"], cell.metadata["exercise"]["points"]) for cell in tagged
    ]


def test_exercises_and_solutions_hold_the_same_notebooks():
    assert NAMES, "no exercise notebooks found"
    assert notebook_names(SOLUTIONS) == NAMES


def test_every_chapter_with_checks_has_notebooks_and_vice_versa():
    assert known_chapters(CHECKS) == [Path(name).stem for name in NAMES]


@pytest.mark.parametrize("name", NAMES)
def test_solution_scores_full_marks(name):
    report = graded(SOLUTIONS, name)
    assert all(result.status is Status.PASSED for result in report.results), report.results
    assert report.score == report.max_score > 0
    assert report.notes == []  # a solved notebook runs cleanly from top to bottom
    assert report.error is None


@pytest.mark.parametrize("name", NAMES)
def test_exercise_notebook_scores_zero_with_every_exercise_not_attempted(name):
    report = graded(EXERCISES, name)
    assert report.results
    assert all(result.status is Status.NOT_ATTEMPTED for result in report.results), report.results
    assert report.score == 0
    assert report.error is None


@pytest.mark.parametrize("name", NAMES)
def test_exercises_match_the_check_module_in_names_points_and_order(name):
    checks = load_checks(Path(name).stem, CHECKS)
    expected = [(check.name, check.points) for check in checks.values()]
    assert exercise_tags(EXERCISES, name) == expected
    assert exercise_tags(SOLUTIONS, name) == expected


@pytest.mark.parametrize("name", NAMES)
def test_exercise_and_solution_differ_only_in_exercise_cells(name):
    def outline(folder: Path) -> list[tuple[str, str | None]]:
        return [
            (cell.cell_type, None if "exercise" in cell.metadata else cell.source)
            for cell in cells(folder, name)
        ]

    assert outline(EXERCISES) == outline(SOLUTIONS)


@pytest.mark.parametrize("name", NAMES)
def test_notebook_sets_up_check_for_its_own_chapter(name):
    for folder in (EXERCISES, SOLUTIONS):
        first = next(cell for cell in cells(folder, name) if cell.cell_type == "code")
        assert "from grader import checker" in first.source
        assert f'check = checker("{Path(name).stem}")' in first.source


@pytest.mark.parametrize("name", NAMES)
def test_exercise_notebook_is_committed_without_outputs(name):
    for cell in cells(EXERCISES, name):
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None, cell.source


@pytest.mark.parametrize("name", NAMES)
def test_solution_notebook_is_committed_executed_without_errors(name):
    # nbval never compares a cell whose execution_count is null: an unexecuted solution would
    # pass its nbval run without testing anything.
    for cell in cells(SOLUTIONS, name):
        if cell.cell_type == "code":
            assert cell.execution_count is not None, cell.source
            for output in cell.outputs:
                assert output.output_type != "error", cell.source
                assert output.get("name") != "stderr", cell.source
