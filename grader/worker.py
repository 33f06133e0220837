"""The child process that runs one learner notebook: ``python -m grader.worker JOB RESULTS``.

Learner code runs here, never in the grader's own process, so that nothing it does -- loop
forever, print megabytes, call ``sys.exit()`` or ``os._exit()``, crash the interpreter -- can stop
the grading of other exercises or other notebooks. The parent (:mod:`grader.runner`) writes the
cells to run into the JSON file ``JOB``; this process runs them in order in one namespace, as
Jupyter would, and appends one JSON line per event to ``RESULTS``:

* ``{"event": "result", "result": {...}}`` -- an exercise graded (right after its cell ran);
* ``{"event": "note", "message": "..."}`` -- a remark about an ordinary cell (it failed, or used
  IPython magic and was skipped);
* ``{"event": "done"}`` -- the notebook ran to the end; ``{"event": "crash", ...}`` -- the grader
  itself failed.

Results go to a file and not to stdout because learner code owns stdout. Each line is flushed at
once, so results written before the process is killed are kept.
"""

from __future__ import annotations

import json
import sys
import traceback
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from grader import inline
from grader.chapters import load_checks
from grader.checks import Check, describe_exception
from grader.limits import GradingLimit, Limits, guard
from grader.notebook import CodeCell, find_magic
from grader.outcome import Result, Status, result_from_exception, run_check
from grader.plan import make_plan

Emit = Callable[[dict[str, Any]], None]


def main(argv: list[str] | None = None) -> int:
    job_path, results_path = argv if argv is not None else sys.argv[1:]
    job = json.loads(Path(job_path).read_text(encoding="utf-8"))
    with open(results_path, "a", encoding="utf-8") as sink:

        def emit(event: dict[str, Any]) -> None:
            sink.write(json.dumps(event) + "\n")
            sink.flush()

        try:
            run_job(job, emit)
        except Exception:  # a bug in the grader or a check module: tell the parent what it was
            emit({"event": "crash", "message": traceback.format_exc(limit=-3)})
            return 1
    return 0


def run_job(job: dict[str, Any], emit: Emit) -> None:
    """Run the notebook cells of ``job``, grading each exercise right after its cell.

    Grading right after the cell (rather than at the end) matches where the learner's own
    ``check()`` cell sits, and means that exercises graded before a fatal cell keep their results.
    """
    inline.mute()
    limits = Limits(**job["limits"])
    checks = load_checks(job["chapter"], Path(job["checks_dir"]))
    plan = make_plan([CodeCell.from_json(cell) for cell in job["cells"]], checks)
    ns = _notebook_namespace()
    for step in plan.steps:
        if step.check is None:
            note = run_cell(step.cell, ns, limits)
            if note is not None:
                emit({"event": "note", "message": note})
        else:
            _emit_result(emit, grade_exercise(step.cell, step.check, ns, limits))
    for check in plan.unclaimed:
        _emit_result(emit, _limited(check, limits, partial(run_check, check, ns)))
    emit({"event": "done"})


def _notebook_namespace() -> dict[str, Any]:
    """A fresh namespace like a Jupyter kernel's, where ``display`` needs no import."""
    from IPython.display import display

    return {"__name__": "__main__", "display": display}


def _emit_result(emit: Emit, result: Result) -> None:
    emit({"event": "result", "result": result.to_json()})


def grade_exercise(cell: CodeCell, check: Check, ns: dict[str, Any], limits: Limits) -> Result:
    """Run an exercise cell, then its check, both under one time and output budget."""
    magic = find_magic(cell.source)
    if magic is not None:
        message = f"exercise cells must be plain Python (found IPython magic `{magic}`)"
        return Result.of(check, Status.FAILED, message)

    def cell_then_check() -> Result:
        error = _execute(cell, ns)
        if error is not None:
            return result_from_exception(check, error, context="the exercise cell raised")
        return run_check(check, ns)

    return _limited(check, limits, cell_then_check)


def run_cell(cell: CodeCell, ns: dict[str, Any], limits: Limits) -> str | None:
    """Run an ordinary cell; return a note if it could not run cleanly (it costs no points)."""
    magic = find_magic(cell.source)
    if magic is not None:
        return (
            f"{cell.label()} skipped: IPython magic `{magic}` (the grader runs plain Python only)"
        )
    with guard(limits) as breach:
        error = _execute(cell, ns)
    problem = breach.first or error
    if problem is None:
        return None
    if isinstance(problem, GradingLimit):
        return f"{cell.label()} stopped: {problem}; grading continued"
    return f"{cell.label()} raised {describe_exception(problem)}; grading continued"


def _limited(check: Check, limits: Limits, work: Callable[[], Result]) -> Result:
    """``work()``'s result, unless it broke a limit -- even one that learner code swallowed."""
    with guard(limits) as breach:
        result = work()
    if breach.first is not None:
        return Result.of(check, Status.FAILED, str(breach.first))
    return result


def _execute(cell: CodeCell, ns: dict[str, Any]) -> BaseException | None:
    """Execute a cell's source in the notebook namespace; return what it raised, if anything."""
    try:
        exec(compile(cell.source, f"<cell {cell.number}>", "exec"), ns)
    except BaseException as exc:  # learner code may raise anything, SystemExit included
        return exc
    return None


if __name__ == "__main__":
    raise SystemExit(main())
