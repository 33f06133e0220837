"""What grading produces: a :class:`Result` per exercise, a :class:`NotebookReport` per notebook.

Both the in-notebook ``check()`` and the command-line grader turn a check's outcome into a
``Result`` through :func:`run_check` and :func:`result_from_exception`, so a learner sees the same
verdict and the same message in the notebook as in the instructor's score table.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Any

from grader.checks import HINT_MARKER, Check, CheckFailed, Namespace, describe_exception
from grader.limits import GradingLimit

NOT_ATTEMPTED_MESSAGE = "the stub still raises NotImplementedError"


class Status(StrEnum):
    PASSED = "passed"
    FAILED = "failed"
    NOT_ATTEMPTED = "not attempted"
    NOT_GRADED = "not graded"  # the notebook process ended before this exercise was reached


@dataclass(frozen=True)
class Result:
    """The verdict on one exercise. ``points`` are the points earned, out of ``max_points``."""

    name: str
    status: Status
    points: float
    max_points: float
    message: str = ""

    @classmethod
    def of(cls, check: Check, status: Status, message: str = "") -> Result:
        """A result for ``check``: full points if it passed, none otherwise."""
        earned = check.points if status is Status.PASSED else 0
        return cls(check.name, status, earned, check.points, message)

    def summary(self) -> str:
        """One line, as ``check()`` prints it: ``softmax: failed (0/2 points) -- message``."""
        points = f"{format_points(self.points)}/{format_points(self.max_points)} points"
        line = f"{self.name}: {self.status.value} ({points})"
        return f"{line} -- {self.message}" if self.message else line

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "status": self.status.value}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Result:
        return cls(**{**data, "status": Status(data["status"])})


@dataclass
class NotebookReport:
    """Everything known about one graded notebook.

    ``notes`` are remarks that cost no points (a failing non-exercise cell, a skipped magic);
    ``error`` says why the notebook could not be graded completely, if it could not;
    ``unreadable`` that the file is not a notebook at all, ``grader_failed`` that the grader (or
    a check module) broke rather than the learner's code; ``seconds`` is the grading time.
    """

    notebook: str
    chapter: str | None
    results: list[Result] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    error: str | None = None
    unreadable: bool = False
    grader_failed: bool = False
    seconds: float = 0.0

    @property
    def score(self) -> float:
        return sum(result.points for result in self.results)

    @property
    def max_score(self) -> float:
        return sum(result.max_points for result in self.results)


def run_check(check: Check, ns: Namespace) -> Result:
    """Run one check against the learner's namespace and say what happened; never raises.

    ``KeyboardInterrupt`` is the one exception let through: in a notebook it means the learner
    interrupted the kernel on purpose.
    """
    try:
        check.run(ns)
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # a check must not stop the notebook, whatever the code did
        return result_from_exception(check, exc, context="the check stopped with")
    return Result.of(check, Status.PASSED)


def result_from_exception(check: Check, exc: BaseException, *, context: str) -> Result:
    """Turn an exception into a zero-point result; ``context`` introduces an unexpected one
    (``"the exercise cell raised"``)."""
    if isinstance(exc, NotImplementedError):
        return Result.of(check, Status.NOT_ATTEMPTED, NOT_ATTEMPTED_MESSAGE)
    if isinstance(exc, (CheckFailed, GradingLimit)):
        return Result.of(check, Status.FAILED, str(exc))
    if isinstance(exc, SystemExit):
        code = "" if exc.code is None else f" (exit code {exc.code})"
        message = (
            f"sys.exit() or exit() was called{code}; exercise code must return, not stop Python"
        )
        return Result.of(check, Status.FAILED, message)
    return Result.of(check, Status.FAILED, f"{context} {describe_exception(exc)}")


def without_hint(message: str) -> str:
    """``message`` without the hint a check appended to it (the rest of its line)."""
    return "\n".join(line.partition(HINT_MARKER)[0] for line in message.splitlines())


def format_points(points: float) -> str:
    """``2`` rather than ``2.0``; fractional points keep their digits."""
    return f"{points:g}"
