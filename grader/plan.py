"""Pairing a notebook's cells with its chapter's checks, before anything runs.

Parent and worker both need the same decisions -- which cell is graded by which check, which
checks have no cell -- so both call :func:`make_plan`: the parent to report the notes (it sees the
whole notebook, even if the worker later dies), the worker to know what to run.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from grader.checks import Check
from grader.notebook import CodeCell
from grader.outcome import format_points


@dataclass(frozen=True)
class Step:
    """Run ``cell``; if ``check`` is set, the cell is that exercise's cell and is graded."""

    cell: CodeCell
    check: Check | None = None


@dataclass
class Plan:
    """Cells in notebook order, checks that no cell claims, and notes about the pairing."""

    steps: list[Step] = field(default_factory=list)
    unclaimed: list[Check] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def make_plan(cells: list[CodeCell], checks: dict[str, Check]) -> Plan:
    """Pair each exercise cell with its check; any other cell runs as ordinary code.

    A check whose exercise cell is missing (a learner deleted it, or its metadata) still runs, at
    the end, on the notebook's final namespace: the learner may have defined the function
    elsewhere, and grading it is fairer than a silent zero.
    """
    plan = Plan()
    claimed: set[str] = set()
    for cell in cells:
        check = _claim(cell, checks, claimed, plan.notes)
        plan.steps.append(Step(cell, check))
    for name, check in checks.items():
        if name not in claimed:
            plan.unclaimed.append(check)
            plan.notes.append(
                f"no cell is marked as exercise {name!r}; it was checked on the notebook's "
                "final state"
            )
    return plan


def _claim(
    cell: CodeCell, checks: dict[str, Check], claimed: set[str], notes: list[str]
) -> Check | None:
    tag = cell.exercise
    if tag is None:
        return None
    check = checks.get(tag.name)
    if check is None:
        notes.append(
            f"{cell.label()} is marked as exercise {tag.name!r}, which has no check; "
            "ran it as an ordinary cell"
        )
        return None
    if tag.name in claimed:
        notes.append(
            f"{cell.label()} is a second cell for exercise {tag.name!r}; ran it as an ordinary cell"
        )
        return None
    claimed.add(tag.name)
    if tag.points != check.points:
        claimed_points = (
            "no points" if tag.points is None else f"{format_points(tag.points)} points"
        )
        notes.append(
            f"{cell.label()}: the notebook gives exercise {tag.name!r} {claimed_points}, its check "
            f"gives {format_points(check.points)}; grading uses {format_points(check.points)}"
        )
    return check
