"""Tests of the exercise grader (package ``grader``).

The fixture notebooks in ``tests/fixtures/grader/`` belong to the fixture chapter ``99_fixture``,
whose checks are ``tests/fixtures/grader/checks/ch99_fixture.py``:

* ``99_fixture_solved``  -- every exercise right (a plot, a data file read relative to the cwd);
* ``99_fixture_stubs``   -- every exercise still a stub;
* ``99_fixture_trouble`` -- each exercise goes wrong in its own way (see ``TROUBLE`` below);
* ``99_fixture_dies``    -- ``os._exit(3)`` after the second exercise;
* ``99_fixture_slow``    -- a cell after the second exercise outlasts the notebook time limit.

The trouble fixture runs under small time limits (1 s per exercise) so that this file runs in
seconds; notebooks that must finish get the room a slow or busy machine needs (importing
matplotlib alone can take more than a second there).
"""

from __future__ import annotations

import csv
import json
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import numpy as np
import pytest

from grader import checker, inline
from grader.chapters import ChapterError, detect_chapter, load_checks
from grader.checks import CheckFailed, Returned, call, expect_close, expect_dtype, expect_equal
from grader.limits import Limits
from grader.notebook import find_magic, read_code_cells
from grader.outcome import NOT_ATTEMPTED_MESSAGE, NotebookReport, Status
from grader.plan import make_plan
from grader.runner import grade_notebook

FIXTURES = Path(__file__).parent / "fixtures" / "grader"
CHECKS = FIXTURES / "checks"
CHAPTER = "99_fixture"
FAST = Limits(exercise_seconds=1, notebook_seconds=30)
ROOMY = Limits(exercise_seconds=30, notebook_seconds=120)
FULL_MARKS = 11
EXERCISES = [
    "add_one", "double", "square", "negate", "halve",
    "cube", "triple", "shout", "patient", "greeting",
]  # fmt: skip


def grade(path: Path, limits: Limits = ROOMY) -> NotebookReport:
    return grade_notebook(path, CHAPTER, CHECKS, limits)


def by_name(report: NotebookReport) -> dict:
    return {result.name: result for result in report.results}


def run_cli(*args: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "grader", *map(str, args)]
    return subprocess.run(command, capture_output=True, text=True, cwd=cwd, timeout=120)


def furnish(folder: Path) -> Path:
    """Give ``folder`` what the fixture notebooks read at run time: their checks and data file."""
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy2(FIXTURES / "fixture_data.txt", folder)
    shutil.copytree(CHECKS, folder / "checks", dirs_exist_ok=True)
    return folder


def variant(source: Path, target: Path, edit) -> Path:
    """A copy of the notebook ``source`` at ``target``, with ``edit(cells)`` applied."""
    nb = nbformat.read(source, as_version=4)
    edit(nb.cells)
    target.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, target)
    return target


def broken_checks(folder: Path) -> Path:
    """A checks folder whose module loads in the grader's process but breaks in the worker."""
    checks = folder / "checks"
    checks.mkdir()
    (checks / "ch99_fixture.py").write_text(
        (CHECKS / "ch99_fixture.py").read_text()
        + "\nimport sys\n\nif sys.argv[0].endswith('worker.py'):\n"
        + "    raise RuntimeError('broken check module')\n"
    )
    return checks


def exercise_cell(cells, name: str):
    return next(cell for cell in cells if cell.metadata.get("exercise", {}).get("name") == name)


def mixed_variant(target: Path) -> Path:
    """The solved fixture with ``shout`` wrong, ``add_one`` a stub, and ``greeting``'s cell
    unmarked (so its check runs on the notebook's final state): 9 of 11 points."""

    def edit(cells):
        exercise_cell(cells, "shout").source = "def shout(s):\n    return s.upper()"
        exercise_cell(cells, "add_one").source = "def add_one(x):\n    raise NotImplementedError"
        del exercise_cell(cells, "greeting").metadata["exercise"]

    return variant(FIXTURES / "99_fixture_solved.ipynb", target, edit)


# --- whole notebooks, graded in a separate process ---------------------------------------------


@pytest.fixture(scope="module")
def solved() -> NotebookReport:
    return grade(FIXTURES / "99_fixture_solved.ipynb")


@pytest.fixture(scope="module")
def trouble() -> NotebookReport:
    return grade(FIXTURES / "99_fixture_trouble.ipynb", FAST)


def test_solved_notebook_scores_full_marks_without_notes(solved):
    # The notebook reads a data file by a relative path (cwd = its folder), asserts the Agg
    # backend before plotting, calls display() without importing it, uses `%` and `!=` in an
    # exercise cell, and calls check() in cells that the grader mutes: any problem would show up
    # as a note or a failure.
    assert [result.name for result in solved.results] == EXERCISES
    assert all(result.status is Status.PASSED for result in solved.results), solved.results
    assert (solved.score, solved.max_score) == (FULL_MARKS, FULL_MARKS)
    assert solved.notes == []
    assert solved.error is None


def test_untouched_stubs_are_not_attempted():
    report = grade(FIXTURES / "99_fixture_stubs.ipynb")
    assert [result.name for result in report.results] == EXERCISES
    for result in report.results:  # stubs in function bodies and at cell level alike
        assert (result.status, result.points) == (Status.NOT_ATTEMPTED, 0)
        assert result.message == NOT_ATTEMPTED_MESSAGE
    assert report.error is None


TROUBLE = {
    "add_one": "add_one(1) raised ValueError: boom",
    "double": "timed out after 1 s",  # the exercise cell loops forever
    "square": "timed out after 1 s",  # the learner's function loops when the check calls it
    "negate": "printed more than 100,000 characters of output",
    "halve": "sys.exit() or exit() was called (exit code 3)",
    "cube": "sys.exit() or exit() was called;",  # exit() inside the learner's function
    "triple": "exercise cells must be plain Python (found IPython magic `%timeit`)",
    "shout": "shout('hi') returned 'HI'; expected 'HI!'",
    "patient": "timed out after 1 s",  # swallows the time limit, then returns the right answer
}


@pytest.mark.parametrize("name", TROUBLE)
def test_a_failing_exercise_scores_zero_with_a_specific_message(trouble, name):
    result = by_name(trouble)[name]
    assert (result.status, result.points) == (Status.FAILED, 0)
    assert TROUBLE[name] in result.message


def test_other_exercises_are_still_graded_after_trouble(trouble):
    greeting = by_name(trouble)["greeting"]  # the last exercise, after all the trouble
    assert (greeting.status, greeting.points) == (Status.PASSED, 2)
    assert trouble.score == 2
    assert trouble.error is None


def test_the_check_module_decides_points_and_the_disagreement_is_noted(trouble):
    assert by_name(trouble)["greeting"].max_points == 2  # the notebook's metadata claims 10
    assert any(
        "gives exercise 'greeting' 10 points, its check gives 2; grading uses 2" in note
        for note in trouble.notes
    )


@pytest.mark.parametrize(
    "expected",
    [
        "(`%matplotlib inline`) skipped: IPython magic `%matplotlib`",
        "(`!ls`) skipped: IPython magic `!ls`",
        "(`1 / 0`) raised ZeroDivisionError: division by zero; grading continued",
        "(`while True:  # an ordinary cell that ...`) stopped: timed out after 1 s; grading",
    ],
)
def test_ordinary_cells_that_fail_or_use_magic_become_notes(trouble, expected):
    assert sum(expected in note for note in trouble.notes) == 1, trouble.notes


def test_a_cell_that_kills_the_process_costs_nothing_and_grading_continues():
    # The grader restarts the notebook process, re-runs the cells before the fatal one, and
    # grades the exercises after it (an ordinary cell costs no points).
    report = grade(FIXTURES / "99_fixture_dies.ipynb")
    assert all(result.status is Status.PASSED for result in report.results), report.results
    assert (report.score, report.error) == (FULL_MARKS, None)
    assert report.notes == [
        "cell 7 (`import os`) stopped: the notebook process died (exit code 3); the grader "
        "restarted the notebook without it and continued"
    ]


def test_the_notebook_time_limit_keeps_earlier_results_and_reports_the_rest():
    report = grade(
        FIXTURES / "99_fixture_slow.ipynb", Limits(exercise_seconds=30, notebook_seconds=3)
    )
    results = by_name(report)
    assert results["add_one"].status is results["double"].status is Status.PASSED
    for name in EXERCISES[2:]:
        assert results[name].status is Status.NOT_GRADED
        assert results[name].message == "notebook time limit exceeded (3 s)"
    assert report.error == "notebook time limit exceeded (3 s)"


def test_an_unreadable_notebook_is_reported_not_raised(tmp_path):
    broken = tmp_path / "99_fixture_broken.ipynb"
    broken.write_text("this is not JSON", encoding="utf-8")
    report = grade(broken)
    assert report.error is not None and "cannot read 99_fixture_broken.ipynb" in report.error
    assert {result.status for result in report.results} == {Status.NOT_GRADED}
    assert report.score == 0


def test_a_failure_of_the_grader_itself_is_reported(tmp_path):
    checks = broken_checks(tmp_path)
    report = grade_notebook(FIXTURES / "99_fixture_solved.ipynb", CHAPTER, checks, ROOMY)
    assert report.error == "the grader failed: RuntimeError: broken check module"
    assert {result.status for result in report.results} == {Status.NOT_GRADED}
    assert any("Traceback" in note for note in report.notes)


def test_grading_never_writes_to_the_notebook(tmp_path):
    notebook = tmp_path / "99_fixture_solved.ipynb"
    shutil.copy2(FIXTURES / "99_fixture_solved.ipynb", furnish(tmp_path))
    before = notebook.read_bytes(), notebook.stat().st_mtime_ns
    report = grade(notebook)
    assert report.score == FULL_MARKS
    assert (notebook.read_bytes(), notebook.stat().st_mtime_ns) == before


# --- the command line ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def cli_single(tmp_path_factory):
    """One CLI run on a notebook with mixed results, writing JSON and Gradescope files."""
    folder = tmp_path_factory.mktemp("single")
    notebook = mixed_variant(furnish(folder) / "99_fixture_mixed.ipynb")
    json_file, gradescope_file = folder / "out.json", folder / "results.json"
    done = run_cli(
        notebook, "--checks-dir", CHECKS, "--timeout", 30,
        "--json", json_file, "--gradescope", gradescope_file,
    )  # fmt: skip
    return done, json.loads(json_file.read_text()), json.loads(gradescope_file.read_text())


def test_cli_prints_a_score_table(cli_single):
    done, _, _ = cli_single
    assert done.returncode == 0, done.stderr
    rows = [line.split() for line in done.stdout.splitlines()]
    assert ["exercise", "points", "result", "message"] in rows
    assert ["double", "1/1", "passed"] in rows
    assert "shout     0/1     failed         shout('hi') returned 'HI'; expected 'HI!'" in (
        done.stdout.splitlines()
    )
    assert ["add_one", "0/1", "not", "attempted", *NOT_ATTEMPTED_MESSAGE.split()] in rows
    assert ["total", "9/11"] in rows
    unmarked = (
        "no cell is marked as exercise 'greeting'; it was checked on the notebook's final state"
    )
    assert unmarked in done.stdout


def test_cli_json_holds_every_result(cli_single):
    _, data, _ = cli_single
    assert data["chapter"] == CHAPTER
    assert (data["score"], data["max_score"], data["error"]) == (9, FULL_MARKS, None)
    statuses = {result["name"]: result["status"] for result in data["exercises"]}
    assert list(statuses) == EXERCISES
    assert statuses["shout"] == "failed" and statuses["add_one"] == "not attempted"
    assert statuses["greeting"] == "passed"


def test_cli_writes_gradescope_results(cli_single):
    _, _, results = cli_single
    assert set(results) <= {
        "score", "output", "tests", "execution_time", "visibility", "stdout_visibility",
    }  # fmt: skip
    assert results["score"] == 9
    assert results["execution_time"] > 0
    assert (results["visibility"], results["stdout_visibility"]) == ("visible", "hidden")
    assert [test["name"] for test in results["tests"]] == EXERCISES
    for test in results["tests"]:
        assert set(test) == {"name", "score", "max_score", "status", "output", "visibility"}
        assert test["visibility"] == "visible"
        assert all(isinstance(test[key], (int, float)) for key in ("score", "max_score"))
        assert test["status"] in {"passed", "failed"}
        assert test["output"].startswith(f"{test['name']}: ")
    assert sum(test["score"] for test in results["tests"]) == results["score"]
    assert sum(test["max_score"] for test in results["tests"]) == FULL_MARKS
    shout = next(test for test in results["tests"] if test["name"] == "shout")
    assert shout["status"] == "failed" and "expected 'HI!'" in shout["output"]
    assert "no cell is marked as exercise 'greeting'" in results["output"]


@pytest.fixture(scope="module")
def cli_batch(tmp_path_factory):
    """One CLI run over a folder of submissions, writing CSV and JSON."""
    root = tmp_path_factory.mktemp("batch")
    submissions = furnish(root / "submissions")
    shutil.copy2(FIXTURES / "99_fixture_solved.ipynb", submissions / "alice_99_fixture.ipynb")
    shutil.copy2(FIXTURES / "99_fixture_stubs.ipynb", submissions / "bob_99_fixture.ipynb")
    mixed_variant(furnish(submissions / "late") / "carol-99_fixture-final.ipynb")
    shutil.copy2(FIXTURES / "99_fixture_solved.ipynb", submissions / "notes.ipynb")
    checkpoints = submissions / ".ipynb_checkpoints"
    checkpoints.mkdir()
    stale = checkpoints / "alice_99_fixture-checkpoint.ipynb"
    shutil.copy2(FIXTURES / "99_fixture_stubs.ipynb", stale)
    done = run_cli(
        "submissions", "--checks-dir", CHECKS, "--timeout", 30,
        "--csv", "table.csv", "--json", "table.json", cwd=root,
    )  # fmt: skip
    with (root / "table.csv").open(newline="") as file:
        rows = {row["notebook"]: row for row in csv.DictReader(file)}
    return done, rows, json.loads((root / "table.json").read_text())


def test_batch_grading_writes_one_csv_row_per_submission(cli_batch):
    done, rows, _ = cli_batch
    assert done.returncode == 0, done.stderr
    assert list(rows) == [
        "submissions/alice_99_fixture.ipynb",
        "submissions/bob_99_fixture.ipynb",
        "submissions/late/carol-99_fixture-final.ipynb",
        "submissions/notes.ipynb",
    ]  # sorted, checkpoints skipped
    alice, bob, carol, notes = rows.values()
    assert list(alice) == ["notebook", "chapter", *EXERCISES, "score", "max_score", "error"]
    assert (alice["chapter"], alice["score"], alice["max_score"], alice["error"]) == (
        CHAPTER, "11", "11", ""
    )  # fmt: skip
    assert (bob["score"], bob["add_one"], bob["greeting"]) == ("0", "0", "0")
    assert (carol["score"], carol["shout"], carol["greeting"]) == ("9", "0", "2")
    assert (notes["chapter"], notes["score"]) == ("", "0")
    assert notes["error"].startswith("cannot tell the chapter of notes.ipynb")


def test_batch_grading_writes_json_and_prints_a_summary(cli_batch):
    done, _, data = cli_batch
    reports = {report["notebook"]: report for report in data["notebooks"]}
    assert reports["submissions/late/carol-99_fixture-final.ipynb"]["score"] == 9
    assert reports["submissions/notes.ipynb"]["exercises"] == []
    summary = [line.split()[:2] for line in done.stdout.splitlines()]
    assert ["submissions/alice_99_fixture.ipynb", "11/11"] in summary
    assert ["submissions/notes.ipynb", "-"] in summary


def test_batch_grading_reports_progress_per_notebook(cli_batch):
    done, _, _ = cli_batch
    assert done.stderr.splitlines()[:3] == [
        "[1/4] submissions/alice_99_fixture.ipynb: 11/11",
        "[2/4] submissions/bob_99_fixture.ipynb: 0/11",
        "[3/4] submissions/late/carol-99_fixture-final.ipynb: 9/11",
    ]
    assert done.stderr.splitlines()[3].startswith(
        "[4/4] submissions/notes.ipynb: cannot tell the chapter of notes.ipynb"
    )


def test_a_corrupt_submission_has_its_own_exit_status(tmp_path):
    submissions = furnish(tmp_path / "submissions")
    shutil.copy2(FIXTURES / "99_fixture_solved.ipynb", submissions / "alice_99_fixture.ipynb")
    (submissions / "bob_99_fixture.ipynb").write_text("{ not json", encoding="utf-8")
    done = run_cli(submissions, "--checks-dir", CHECKS, "--csv", tmp_path / "scores.csv")
    assert done.returncode == 1, done.stderr  # grader.cli.UNREADABLE
    assert "alice_99_fixture.ipynb  11/11" in done.stdout
    assert "cannot read bob_99_fixture.ipynb as a notebook" in done.stdout
    assert (tmp_path / "scores.csv").exists()  # the readable ones are still recorded
    single = run_cli(submissions / "bob_99_fixture.ipynb", "--checks-dir", CHECKS)
    assert single.returncode == 1


def test_a_failing_check_module_has_its_own_exit_status(tmp_path):
    checks = broken_checks(tmp_path)
    done = run_cli(FIXTURES / "99_fixture_solved.ipynb", "--checks-dir", checks)
    assert done.returncode == 3, done.stderr  # grader.cli.GRADER_FAILED
    assert "the grader failed: RuntimeError: broken check module" in done.stdout


def test_chapter_option_overrides_the_file_name(tmp_path):
    notebook = furnish(tmp_path) / "homework.ipynb"
    shutil.copy2(FIXTURES / "99_fixture_stubs.ipynb", notebook)
    done = run_cli(notebook, "--checks-dir", CHECKS, "--chapter", CHAPTER)
    assert done.returncode == 0, done.stderr
    assert "total     0/11" in done.stdout


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["nowhere.ipynb"], "nowhere.ipynb does not exist"),
        ([FIXTURES, "--gradescope", "results.json"], "--gradescope describes one submission"),
        ([FIXTURES / "99_fixture_stubs.ipynb", "--chapter", "42_nothing"], "no checks for chapter"),
        ([FIXTURES / "fixture_data.txt"], "cannot tell the chapter of fixture_data.txt"),
        ([FIXTURES, "--timeout", "0"], "argument --timeout: must be positive, not 0"),
    ],
)
def test_usage_errors_exit_with_status_2(tmp_path, arguments, message):
    done = run_cli(*arguments, "--checks-dir", CHECKS, cwd=tmp_path)
    assert done.returncode == 2
    assert message in done.stderr
    assert not (tmp_path / "results.json").exists()


# --- in-process pieces: check(), the check helpers, magics, chapters, plans --------------------


@pytest.fixture
def check():
    return checker(CHAPTER, checks_dir=CHECKS)


def test_check_prints_a_pass(check, capsys):
    check("double", namespace={"double": lambda x: 2 * x})
    assert capsys.readouterr().out == "double: passed (1/1 points)\n"


def test_check_prints_a_specific_failure(check, capsys):
    check("shout", namespace={"shout": str.upper})
    expected = "shout: failed (0/1 points) -- shout('hi') returned 'HI'; expected 'HI!'\n"
    assert capsys.readouterr().out == expected


def test_check_prints_not_attempted_for_a_stub(check, capsys):
    def double(x):
        raise NotImplementedError

    check("double", namespace={"double": double})
    expected = f"double: not attempted (0/1 points) -- {NOT_ATTEMPTED_MESSAGE}\n"
    assert capsys.readouterr().out == expected


def test_check_names_an_undefined_function(check, capsys):
    check("double", namespace={})
    message = "double is not defined: did you run the cell that defines it?"
    assert capsys.readouterr().out == f"double: failed (0/1 points) -- {message}\n"


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("raise SystemExit(4)", "sys.exit() or exit() was called (exit code 4)"),
        ("return 1 / 0", "double(3) raised ZeroDivisionError: division by zero"),
    ],
)
def test_check_never_raises(check, capsys, body, message):
    ns: dict = {}
    exec(f"def double(x):\n    {body}", ns)
    check("double", namespace=ns)
    assert message in capsys.readouterr().out


def test_check_reads_the_callers_globals(check, capsys):
    # In a notebook the caller's globals are the notebook's namespace.
    ns = {"check": check, "double": lambda x: 2 * x}
    exec('check("double")', ns)
    assert capsys.readouterr().out == "double: passed (1/1 points)\n"


def test_check_without_a_name_checks_everything_and_totals(check, capsys):
    ns = {"double": lambda x: 2 * x, "greeting": lambda: "hello from the fixture folder"}
    check(namespace=ns)
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == len(EXERCISES) + 1
    assert "double: passed (1/1 points)" in lines and "greeting: passed (2/2 points)" in lines
    assert "add_one: failed (0/1 points) -- add_one is not defined" in lines[0]
    assert lines[-1] == "total: 3/11 points"


def test_check_of_an_unknown_exercise_says_so(check, capsys):
    check("dobule", namespace={})
    assert capsys.readouterr().out.startswith("dobule: no such exercise in chapter 99_fixture")


def test_muted_check_does_nothing(check, capsys, monkeypatch):
    monkeypatch.setattr(inline, "_muted", True)
    check("double", namespace={})
    assert capsys.readouterr().out == ""


def test_expect_close_reports_input_result_and_expectation():
    got = Returned("softmax(np.array([1000.0, 1001.0]))", np.array([np.nan, np.nan]))
    with pytest.raises(CheckFailed) as failure:
        expect_close(got, [0.26894142, 0.73105858], hint="subtract the maximum")
    assert str(failure.value) == (
        "softmax(np.array([1000.0, 1001.0])) returned [nan nan]; expected [0.2689 0.7311] "
        "(within rtol=1e-06) -- hint: subtract the maximum"
    )


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (None, "f(x) returned None; expected [1. 2.] (did you forget `return`?)"),
        ([[1.0, 2.0]], "f(x) returned an array of shape (1, 2); expected an array of shape (2,)"),
        (3.0, "f(x) returned a single number; expected an array of shape (2,)"),
        ("oops", "f(x) returned 'oops'; expected [1. 2.]"),
    ],
)
def test_expect_close_explains_wrong_kinds_of_result(value, message):
    with pytest.raises(CheckFailed) as failure:
        expect_close(Returned("f(x)", value), [1.0, 2.0])
    assert str(failure.value).startswith(message)


def test_expect_close_passes_within_tolerance():
    expect_close(Returned("f(x)", [1.0 + 1e-9, 2.0]), [1.0, 2.0])


def test_expect_equal_and_expect_dtype():
    expect_equal(Returned("f(x)", np.array([1, 2])), np.array([1, 2]))
    with pytest.raises(CheckFailed, match=r"^f\(x\) returned \[1 3\]; expected \[1 2\]$"):
        expect_equal(Returned("f(x)", np.array([1, 3])), np.array([1, 2]))
    with pytest.raises(
        CheckFailed, match=r"^f\(x\) returned dtype float64; expected dtype float32"
    ):
        expect_dtype(Returned("f(x)", np.zeros(2)), np.float32)


def test_call_shows_the_call_and_catches_modified_arguments():
    def subtract_max(x):
        x -= x.max()
        return x

    with pytest.raises(CheckFailed) as failure:
        call({"subtract_max": subtract_max}, "subtract_max", np.array([1.0, 3.0], dtype=np.float32))
    assert str(failure.value).startswith(
        "subtract_max(np.array([1.0, 3.0], dtype=np.float32)) modified its argument in place"
    )


def test_call_passes_stubs_through_and_names_other_exceptions():
    def stub(x):
        raise NotImplementedError

    with pytest.raises(NotImplementedError):
        call({"f": stub}, "f", 1)
    with pytest.raises(CheckFailed, match=r"^f\(\[1, 2\]\) raised KeyError: 'k'$"):
        call({"f": lambda x: {}["k"]}, "f", [1, 2])
    with pytest.raises(CheckFailed, match="^f should be a function, but it is of type int$"):
        call({"f": 3}, "f")


@pytest.mark.parametrize(
    ("source", "magic"),
    [
        ("%timeit f(x)", "%timeit"),
        ("x = 1\n%%time\n", "%%time"),  # misplaced, but still IPython syntax, not Python
        ("%%time\nx = f(1)", "%%time"),
        ("!ls -la", "!ls"),
        ("files = !ls", "!ls"),
        ("def f():\n    %timeit g()\n", "%timeit"),
        ("if a != b:\n    c = a % 2", None),
        ("y = (a\n     % b)", None),
        ('text = """\n%timeit f()\n!ls\n"""', None),
        ("def broken(:\n    pass", None),  # a plain syntax error is not a magic
    ],
)
def test_find_magic(source, magic):
    assert find_magic(source) == magic


@pytest.mark.parametrize(
    ("file_name", "chapter"),
    [
        ("00_warmup.ipynb", "00_warmup"),
        ("alice_00_warmup.ipynb", "00_warmup"),
        ("00_warmup-final.ipynb", "00_warmup"),
        ("bob_00_warmup_extra.ipynb", "00_warmup_extra"),  # the longest match wins
    ],
)
def test_detect_chapter(file_name, chapter):
    chapters = ["00_warmup", "00_warmup_extra", "01_tracing"]
    assert detect_chapter(Path(file_name), chapters) == chapter


@pytest.mark.parametrize("file_name", ["100_warmup.ipynb", "00_warmups.ipynb", "warmup.ipynb"])
def test_detect_chapter_rejects_names_without_a_chapter(file_name):
    with pytest.raises(ChapterError, match="cannot tell the chapter"):
        detect_chapter(Path(file_name), ["00_warmup"])


def test_load_checks_keeps_the_modules_order_and_points():
    checks = load_checks(CHAPTER, CHECKS)
    assert list(checks) == EXERCISES
    assert sum(check.points for check in checks.values()) == FULL_MARKS


def test_plan_notes_unknown_and_duplicate_exercise_cells(tmp_path):
    def edit(cells):
        exercise_cell(cells, "double").metadata["exercise"]["name"] = "add_one"
        exercise_cell(cells, "triple").metadata["exercise"]["name"] = "quadruple"

    notebook = variant(FIXTURES / "99_fixture_solved.ipynb", tmp_path / "x.ipynb", edit)
    plan = make_plan(read_code_cells(notebook), load_checks(CHAPTER, CHECKS))
    assert [check.name for check in plan.unclaimed] == ["double", "triple"]
    assert sum("is a second cell for exercise 'add_one'" in note for note in plan.notes) == 1
    assert sum("exercise 'quadruple', which has no check" in note for note in plan.notes) == 1
    assert sum("no cell is marked as exercise" in note for note in plan.notes) == 2
