"""The trusted side of grading a notebook: the only process that decides a score.

The grader reads the notebook and pairs its cells with checks itself (:func:`make_plan`), then
drives a worker (:mod:`grader.worker`, started through :mod:`grader.session`) cell by cell: each
ordinary cell is run there, each exercise cell is run there and then checked. A ``remote`` check
runs here, reaching the learner's functions through the worker with plain data; another check
runs in the worker and returns only a status and a message, and the points come from here.

When the worker breaks a limit from outside its own guard, dies, or sends something malformed,
it is killed; the exercise (or cell) that did it gets the reason, a fresh worker re-runs the cells
that had run before, and grading continues with the next cell. Only the notebook's time limit,
or a failure of the grader itself, ends grading early: the exercises not reached are then marked
"not graded" with the reason.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from grader.chapters import (
    ChapterError,
    check_module_source,
    detect_chapter,
    known_chapters,
    load_checks,
)
from grader.checks import Check
from grader.limits import GradingLimit, Limits, TimeLimitExceeded
from grader.notebook import CodeCell, NotebookError, find_magic, read_code_cells
from grader.outcome import NotebookReport, Result, Status, result_from_exception, run_check
from grader.plan import Plan, make_plan
from grader.remote import ReferenceUsed, RemoteNamespace, WorkerLost, rebuild_exception
from grader.session import Session


def grade_notebook(
    notebook: Path, chapter: str, checks_dir: Path, limits: Limits
) -> NotebookReport:
    """Grade one notebook against ``chapter``'s checks. Never writes to the notebook.

    Raises :class:`ChapterError` if the chapter has no check module (a usage error); every problem
    with the notebook itself ends up in the report instead.
    """
    start = time.monotonic()
    checks = load_checks(chapter, checks_dir)
    report = NotebookReport(notebook=str(notebook), chapter=chapter)
    try:
        cells = read_code_cells(notebook)
    except NotebookError as exc:
        report.error = str(exc)
        report.unreadable = True
        report.results = [
            Result.of(check, Status.NOT_GRADED, str(exc)) for check in checks.values()
        ]
        return report
    plan = make_plan(cells, checks)
    grading = Grading(notebook, chapter, checks_dir, limits, start)
    grading.run(plan)
    missing = grading.error or "the grader produced no result for it"
    report.results = [
        grading.results.get(name) or Result.of(check, Status.NOT_GRADED, missing)
        for name, check in checks.items()
    ]
    report.notes = plan.notes + grading.notes
    report.error = grading.error
    report.grader_failed = grading.crashed
    report.seconds = time.monotonic() - start
    return report


def grade_many(
    notebooks: list[Path],
    chapter: str | None,
    checks_dir: Path,
    limits: Limits,
    progress: Callable[[int, NotebookReport], None] | None = None,
) -> list[NotebookReport]:
    """Grade each notebook; its chapter is ``chapter`` or else detected from its file name.

    ``progress(i, report)`` is called as soon as the ``i``-th notebook (from 1) is graded, so
    that a long batch shows its progress.
    """
    chapters = known_chapters(checks_dir)
    reports = []
    for number, notebook in enumerate(notebooks, start=1):
        try:
            report = grade_notebook(
                notebook, chapter or detect_chapter(notebook, chapters), checks_dir, limits
            )
        except ChapterError as exc:
            report = NotebookReport(notebook=str(notebook), chapter=None, error=str(exc))
        reports.append(report)
        if progress is not None:
            progress(number, report)
    return reports


class StopGrading(Exception):
    """The notebook's time is up, or the grader itself failed: grade nothing more."""


@dataclass
class Budget:
    """One exercise's (or one cell's) time, counted from its start; ``lost`` once the worker had
    to be killed for it (every later request of the same exercise fails the same way)."""

    seconds: float
    check: Check | None = None
    start: float = field(default_factory=time.monotonic)
    lost: GradingLimit | None = None

    def left(self) -> float:
        return self.seconds - (time.monotonic() - self.start)


class Grading:
    """Grading one notebook: the worker session, the cells to re-run after a restart, and what
    has been found so far."""

    def __init__(
        self, notebook: Path, chapter: str, checks_dir: Path, limits: Limits, start: float
    ) -> None:
        self.chapter, self.limits = chapter, limits
        self.checks_source = check_module_source(chapter, checks_dir)
        self.session = Session(notebook, limits, start + limits.notebook_seconds)
        self.ran: list[CodeCell] = []  # cells to re-run in a fresh worker
        self.results: dict[str, Result] = {}
        self.notes: list[str] = []
        self.error: str | None = None
        self.crashed = False

    def run(self, plan: Plan) -> None:
        try:
            self.session.start()
            for step in plan.steps:
                if step.check is None:
                    self.ordinary(step.cell)
                else:
                    self.results[step.check.name] = self.exercise(step.cell, step.check)
            for check in plan.unclaimed:
                self.results[check.name] = self.judge(check, self.budget(check))
        except StopGrading:
            pass
        finally:
            self.session.close()

    def budget(self, check: Check | None = None) -> Budget:
        if self.session.notebook_time_left() <= 0:
            self.error = self.limits.notebook_time_is_up()
            raise StopGrading
        return Budget(self.limits.exercise_seconds, check)

    def ordinary(self, cell: CodeCell) -> None:
        """Run an ordinary cell; a problem becomes a note (it costs no points)."""
        magic = find_magic(cell.source)
        if magic is not None:
            self.notes.append(f"{cell.label()} skipped: IPython magic `{magic}` (the grader runs "
                              "plain Python only)")
            return
        try:
            reply = self.ask(self.run_request(cell), self.budget())
        except GradingLimit as lost:  # the worker was lost, or the exercise's time is up
            self.notes.append(f"{cell.label()} stopped: {lost}; the grader restarted the "
                              "notebook without it and continued")
            return
        if reply.get("outcome") != "limit":
            self.ran.append(cell)
        if reply.get("outcome") == "raised":
            self.notes.append(f"{cell.label()} raised {_describe(reply)}; grading continued")
        elif reply.get("outcome") == "limit":
            problem = rebuild_exception(reply, self.limits.exercise_seconds,
                                        self.limits.output_chars)
            self.notes.append(f"{cell.label()} stopped: {problem}; grading continued")

    def exercise(self, cell: CodeCell, check: Check) -> Result:
        """Run an exercise cell, then its check, both within one exercise's budget."""
        magic = find_magic(cell.source)
        if magic is not None:
            message = f"exercise cells must be plain Python (found IPython magic `{magic}`)"
            return Result.of(check, Status.FAILED, message)
        budget = self.budget(check)
        try:
            reply = self.ask(self.run_request(cell), budget)
        except GradingLimit as lost:  # the worker was lost, or the exercise's time is up
            return Result.of(check, Status.FAILED, str(lost))
        if reply.get("outcome") != "limit":
            self.ran.append(cell)
        if reply.get("outcome") != "ok":
            problem = rebuild_exception(reply, self.limits.exercise_seconds,
                                        self.limits.output_chars)
            return result_from_exception(check, problem, context="the exercise cell raised")
        return self.judge(check, budget)

    def judge(self, check: Check, budget: Budget) -> Result:
        """The verdict of ``check`` on the notebook as it stands."""
        if check.remote:
            ns = RemoteNamespace(lambda request: self.ask(request, budget),
                                 self.limits.exercise_seconds, self.limits.output_chars)
            return run_check(check, ns)  # a KeyboardInterrupt here is the grader's own
        request = {"op": "check", "chapter": self.chapter, "source": self.checks_source,
                   "name": check.name}
        try:
            reply = self.ask(request, budget)
        except GradingLimit as lost:  # the worker was lost, or the exercise's time is up
            return Result.of(check, Status.FAILED, str(lost))
        if reply.get("outcome") == "verdict":
            return _verdict(check, reply)
        problem = rebuild_exception(reply, self.limits.exercise_seconds, self.limits.output_chars)
        return result_from_exception(check, problem, context="the check stopped with")

    def run_request(self, cell: CodeCell) -> dict[str, Any]:
        return {"op": "run", "source": cell.source, "number": cell.number}

    def ask(self, request: dict[str, Any], budget: Budget) -> dict[str, Any]:
        """The worker's reply to ``request`` within ``budget``. If the worker is lost, a fresh one
        replaces it and :class:`WorkerLost` is raised; if the notebook's time is up or the
        worker reports a failure of the grader itself, :class:`StopGrading` is."""
        if budget.lost is not None:
            raise budget.lost
        left = budget.left()
        if left <= 0:
            raise TimeLimitExceeded(self.limits.exercise_seconds)
        if budget.check is not None and budget.check.replaces:
            request = {**request, "forbid": list(budget.check.replaces)}
        try:
            reply = self.session.ask(request, left)
        except WorkerLost as lost:
            budget.lost = lost
            if self.session.notebook_time_left() <= 0:
                self.error = str(lost)
                raise StopGrading from None
            self.restart()
            raise
        if reply.get("outcome") == "crash":
            message = str(reply.get("message"))
            self.crashed = True
            self.error = f"the grader failed: {message.strip().splitlines()[-1]}"
            self.notes.append(f"the grader failed while running the notebook:\n{message}")
            raise StopGrading
        self.refused(reply, budget)
        return reply

    def refused(self, reply: dict[str, Any], budget: Budget) -> None:
        """What the worker refused during the request: in an exercise's request, it fails the
        exercise (:class:`ReferenceUsed`); in an ordinary cell's, it is a note."""
        refused = reply.get("refused")
        if type(refused) is not list or not refused:
            return
        words = [str(item)[:300] for item in refused]
        if budget.check is None:
            self.notes.append(f"the notebook tried to read the course's answers: {words[0]}")
            return
        budget.lost = ReferenceUsed(words)
        raise budget.lost

    def restart(self) -> None:
        """A fresh worker, with the cells that ran before re-run in it (their outcomes were
        recorded already). A cell that loses this worker too is left out from then on."""
        self.session.start()
        for cell in list(self.ran):
            try:
                self.session.ask(self.run_request(cell), self.limits.exercise_seconds)
            except WorkerLost:
                if self.session.notebook_time_left() <= 0:
                    self.error = self.limits.notebook_time_is_up()
                    raise StopGrading from None
                self.ran.remove(cell)
                self.session.start()


def _describe(reply: dict[str, Any]) -> str:
    """``TypeError: message``, as :func:`grader.checks.describe_exception` words it."""
    name, message = str(reply.get("type")), str(reply.get("message"))
    return f"{name}: {message}" if message else name


def _verdict(check: Check, reply: dict[str, Any]) -> Result:
    """A verdict from the worker: its status, its message and the messages of the parts that
    failed; the points come from the check module."""
    status, message, failed = reply.get("status"), reply.get("message"), reply.get("parts", {})
    malformed = Result.of(check, Status.FAILED, "the notebook process sent a malformed verdict")
    if status not in {status.value for status in Status} or type(message) is not str:
        return malformed
    if not failed:
        return Result.of(check, Status(status), message)
    names = {name for name, _ in check.parts}
    if (status != Status.FAILED.value or message or type(failed) is not dict
            or not all(type(name) is str and name in names and type(text) is str
                       for name, text in failed.items())):
        return malformed
    return Result.of_parts(check, failed)
