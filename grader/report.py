"""Presenting grading results: a score table for people, JSON and CSV for programs, and the
``results.json`` that Gradescope's autograder reads.

Gradescope's format (see its autograder specification): ``{"score": total, "output": text,
"tests": [{"name", "score", "max_score", "status", "output"}, ...]}``; ``status`` is ``passed`` or
``failed``, and ``output`` is shown to the learner.
"""

from __future__ import annotations

import csv
import shutil
import textwrap
from pathlib import Path
from typing import Any

from grader.outcome import NotebookReport, Status, format_points, out_of, shown_message


def format_report(report: NotebookReport, *, width: int | None = None,
                  hints: bool = False) -> str:
    """The score table of one notebook, with its notes and error, if any.

    An exercise split into parts has a row per part below its own (unless it failed as a
    whole, with one message). Messages are shown whole, wrapped to ``width`` (the terminal's
    by default), and without their hints unless ``hints``.
    """
    rows = [["exercise", "points", "result", "message"]]
    for result in report.results:
        rows.append([result.name, out_of(result), result.status.value,
                     shown_message(result.message, hints)])
        if not result.message:  # a failure of the whole exercise fails every part
            rows += [[f"  - {part.name}", out_of(part), "passed" if part.passed else "failed",
                      shown_message(part.message, hints)] for part in result.parts]
    rows.append(["total", _score(report), "", ""])
    width = width or shutil.get_terminal_size().columns
    lines = [f"{report.notebook} (chapter {report.chapter})", "", *_align(rows, width)]
    if report.notes:
        lines += ["", "notes:", *(f"  - {note}" for note in report.notes)]
    if report.error:
        lines += ["", f"error: {report.error}"]
    return "\n".join(lines)


def format_batch(reports: list[NotebookReport]) -> str:
    """One line per notebook: its score, and its error if it could not be graded completely."""
    rows = [["notebook", "score", "error"]]
    rows += [[report.notebook, _score(report), report.error or ""] for report in reports]
    return "\n".join(_align(rows))


def report_json(report: NotebookReport) -> dict[str, Any]:
    return {
        "notebook": report.notebook,
        "chapter": report.chapter,
        "score": report.score,
        "max_score": report.max_score,
        "exercises": [result.to_json() for result in report.results],
        "notes": report.notes,
        "error": report.error,
    }


def batch_json(reports: list[NotebookReport]) -> dict[str, Any]:
    return {"notebooks": [report_json(report) for report in reports]}


#: Gradescope's visibility settings, for the whole result and for each test.
VISIBILITIES = ("visible", "hidden", "after_due_date", "after_published")


def gradescope_json(
    report: NotebookReport, *, visibility: str = "visible", show_hints: bool = False
) -> dict[str, Any]:
    """Gradescope's ``results.json`` for one submission.

    ``visibility`` applies to the whole result and to each test. Hints are left out of the
    messages unless ``show_hints``: on Gradescope, an instructor may want students to find the
    bug from the failing input alone, while ``check()`` in the notebook always shows them.
    """
    results: dict[str, Any] = {
        "score": report.score,
        "execution_time": round(report.seconds, 1),
        "visibility": visibility,
        "stdout_visibility": "hidden",  # the score table, for the instructor
        "tests": [
            {
                "name": result.name,
                "score": result.points,
                "max_score": result.max_points,
                "status": "passed" if result.status is Status.PASSED else "failed",
                "output": result.summary(hints=show_hints),
                "visibility": visibility,
            }
            for result in report.results
        ],
    }
    remarks = [*report.notes, *([f"error: {report.error}"] if report.error else [])]
    if remarks:
        results["output"] = "\n".join(remarks)
    return results


def write_csv(reports: list[NotebookReport], path: Path) -> None:
    """One row per notebook: points per exercise, total, maximum, error.

    When the notebooks belong to several chapters, exercise columns are named ``chapter/exercise``
    so that equal exercise names in different chapters stay apart.
    """
    several = len({report.chapter for report in reports if report.chapter}) > 1
    columns: dict[str, None] = {}  # an ordered set: exercises in order of first appearance
    rows = []
    for report in reports:
        row = {"notebook": report.notebook, "chapter": report.chapter or ""}
        for result in report.results:
            column = f"{report.chapter}/{result.name}" if several else result.name
            columns[column] = None
            row[column] = format_points(result.points)
        row |= {
            "score": format_points(report.score),
            "max_score": format_points(report.max_score),
            "error": report.error or "",
        }
        rows.append(row)
    fields = ["notebook", "chapter", *columns, "score", "max_score", "error"]
    with path.open("w", newline="", encoding="utf-8") as file:
        writer = csv.DictWriter(file, fieldnames=fields, restval="")
        writer.writeheader()
        writer.writerows(rows)


def _score(report: NotebookReport) -> str:
    if not report.results:
        return "-"
    return f"{format_points(report.score)}/{format_points(report.max_score)}"


#: The message column is never narrower than this, however narrow the terminal.
_NARROWEST_MESSAGE = 30


def _align(rows: list[list[str]], width: int = 0) -> list[str]:
    """Rows as text with padded columns; the last column is not padded but, when ``width`` is
    given, wrapped so that lines fit in it, each further line starting below the first."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    indent = sum(widths) + 2 * len(widths)
    room = max(width - indent, _NARROWEST_MESSAGE) if width else 0
    lines = []
    for row in rows:
        cells = [cell.ljust(size) for cell, size in zip(row[:-1], widths, strict=True)]
        last = _wrapped(row[-1], room) if room else row[-1].splitlines() or [""]
        lines.append("  ".join([*cells, last[0]]).rstrip())
        lines += [" " * indent + more for more in last[1:]]
    return lines


def _wrapped(text: str, room: int) -> list[str]:
    """``text`` as lines of at most ``room`` characters (a longer word keeps its own line);
    its own line breaks stay, and a line's leading spaces (an indented listing) too."""
    lines = []
    for line in text.splitlines() or [""]:
        body = line.lstrip(" ")
        lead = line[:len(line) - len(body)]
        lines += textwrap.wrap(body, room, initial_indent=lead, subsequent_indent=lead,
                               break_long_words=False, break_on_hyphens=False) or [""]
    return lines
