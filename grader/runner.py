"""The grader's side of grading a notebook: start the worker, enforce the notebook time limit,
collect what the worker reported, and account for every exercise.

The parent reads the notebook and pairs cells with checks itself before starting the worker, so it
knows every exercise that should be graded. If the worker runs out of time or dies, each exercise
it did not report is marked "not graded" with the reason, and the exercises it did report keep
their results.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from grader.chapters import ChapterError, detect_chapter, known_chapters, load_checks
from grader.limits import Limits
from grader.notebook import NotebookError, read_code_cells
from grader.outcome import NotebookReport, Result, Status
from grader.plan import make_plan

#: The folder ``grader`` is imported from; the worker must import the same package.
_IMPORT_ROOT = Path(__file__).resolve().parents[1]


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
    job = {
        "chapter": chapter,
        "checks_dir": str(checks_dir.resolve()),
        "limits": asdict(limits),
        "cells": [cell.to_json() for cell in cells],
    }
    run = run_worker(notebook.resolve().parent, job, limits.notebook_seconds)
    missing = run.error or "the grader produced no result for it"
    report.results = [
        run.results.get(name) or Result.of(check, Status.NOT_GRADED, missing)
        for name, check in checks.items()
    ]
    report.notes = make_plan(cells, checks).notes + run.notes
    report.error = run.error
    report.grader_failed = run.crash is not None
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


@dataclass
class WorkerRun:
    """What the worker reported, and why it stopped early (``error``), if it did."""

    results: dict[str, Result] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    finished: bool = False
    crash: str | None = None
    error: str | None = None


def run_worker(cwd: Path, job: dict[str, Any], notebook_seconds: float) -> WorkerRun:
    """Run ``python -m grader.worker`` in ``cwd`` (the notebook's folder, as in Jupyter).

    The worker's stdout and stderr are discarded: they belong to learner code, which may flood
    them. It gets its own session so that killing it also kills any process it started.
    """
    with tempfile.TemporaryDirectory(prefix="grader-") as tmp:
        job_file, results_file = Path(tmp, "job.json"), Path(tmp, "results.jsonl")
        job_file.write_text(json.dumps(job), encoding="utf-8")
        process = subprocess.Popen(
            [sys.executable, "-m", "grader.worker", str(job_file), str(results_file)],
            cwd=cwd,
            env=_worker_environment(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        timed_out = _wait(process, notebook_seconds)
        run = _collect(_read_events(results_file))
    if not run.finished:
        run.error = _why_unfinished(run, process.returncode, timed_out, notebook_seconds)
    return run


def _worker_environment() -> dict[str, str]:
    """The parent's environment, plus a non-interactive plotting backend (no windows open) and
    the grader's import root (the worker must import this very package, whatever its cwd)."""
    path = os.pathsep.join(filter(None, [str(_IMPORT_ROOT), os.environ.get("PYTHONPATH")]))
    return {**os.environ, "MPLBACKEND": "Agg", "PYTHONPATH": path}


def _wait(process: subprocess.Popen[bytes], seconds: float) -> bool:
    """Wait for the worker; kill it (and its process group) after ``seconds``. True if killed."""
    try:
        process.wait(timeout=seconds)
        return False
    except subprocess.TimeoutExpired:
        return True
    finally:
        if process.poll() is None:  # timed out, or the grader itself was interrupted
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def _read_events(results_file: Path) -> list[dict[str, Any]]:
    """The worker's events; a last line cut short by a kill is ignored."""
    if not results_file.exists():
        return []
    events = []
    for line in results_file.read_text(encoding="utf-8").splitlines():
        try:
            events.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return events


def _collect(events: list[dict[str, Any]]) -> WorkerRun:
    run = WorkerRun()
    for event in events:
        if event["event"] == "result":
            result = Result.from_json(event["result"])
            run.results[result.name] = result
        elif event["event"] == "note":
            run.notes.append(event["message"])
        elif event["event"] == "crash":
            run.crash = event["message"]
            run.notes.append(f"the grader failed while running the notebook:\n{run.crash}")
        elif event["event"] == "done":
            run.finished = True
    return run


def _why_unfinished(run: WorkerRun, returncode: int, timed_out: bool, seconds: float) -> str:
    if timed_out:
        return f"notebook time limit exceeded ({seconds:g} s)"
    if run.crash is not None:
        return f"the grader failed: {run.crash.strip().splitlines()[-1]}"
    if returncode < 0:
        return f"the notebook process died (killed by {signal.Signals(-returncode).name})"
    return f"the notebook process died (exit code {returncode})"
