"""What grading produces: a :class:`Result` per exercise, a :class:`NotebookReport` per notebook.

Both the in-notebook ``check()`` and the command-line grader turn a check's outcome into a
``Result`` through :func:`run_check` and :func:`result_from_exception`, so a learner sees the same
verdict and the same message in the notebook as in the instructor's score table.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Any

from grader.checks import (
    HINT_MARKER,
    Check,
    CheckFailed,
    Namespace,
    checking_parts,
    describe_exception,
)
from grader.limits import GradingLimit

NOT_ATTEMPTED_MESSAGE = "the stub still raises NotImplementedError"
UNCHECKED_MESSAGE = "the check did not reach this part (a bug of the check module)"


class Status(StrEnum):
    PASSED = "passed"
    FAILED = "failed"
    NOT_ATTEMPTED = "not attempted"
    NOT_GRADED = "not graded"  # the notebook process ended before this exercise was reached


@dataclass(frozen=True)
class PartResult:
    """The verdict on one part of an exercise (see :func:`grader.checks.part`); ``message``
    says why it failed, if it failed on its own."""

    name: str
    passed: bool
    points: float
    max_points: float
    message: str = ""


@dataclass(frozen=True)
class Result:
    """The verdict on one exercise. ``points`` are the points earned, out of ``max_points``;
    an exercise split into ``parts`` earns the points of the parts that passed."""

    name: str
    status: Status
    points: float
    max_points: float
    message: str = ""
    parts: tuple[PartResult, ...] = ()

    @classmethod
    def of(cls, check: Check, status: Status, message: str = "") -> Result:
        """A result for ``check`` as a whole: full points if it passed, none otherwise."""
        passed = status is Status.PASSED
        parts = tuple(PartResult(name, passed, share if passed else 0, share)
                      for name, share in check.parts)
        return cls(check.name, status, check.points if passed else 0, check.points, message,
                   parts)

    @classmethod
    def of_parts(cls, check: Check, failed: Mapping[str, str]) -> Result:
        """A result for ``check`` whose parts named in ``failed`` failed, each with its
        message, and whose other parts passed."""
        if not failed:
            return cls.of(check, Status.PASSED)
        parts = tuple(PartResult(name, name not in failed, 0 if name in failed else share,
                                 share, failed.get(name, ""))
                      for name, share in check.parts)
        return cls(check.name, Status.FAILED, sum(p.points for p in parts), check.points,
                   parts=parts)

    @property
    def has_hint(self) -> bool:
        """Whether a message of this result holds a hint."""
        return any(without_hint(text) != "\n".join(text.splitlines())
                   for text in (self.message, *(p.message for p in self.parts)))

    def summary(self, *, hints: bool = True) -> str:
        """As ``check()`` prints it: ``softmax: failed (0/2 points) -- message``, then, when
        parts failed on their own, a line per part; hints only if ``hints``. A message's
        further lines are indented under its first."""
        line = f"{self.name}: {self.status.value} ({out_of(self)} points)"
        lines = [f"{line} -- {shown_message(self.message, hints)}" if self.message else line]
        if any(p.message for p in self.parts):
            lines += [f"  - {p.name}: {'passed' if p.passed else 'failed'} ({out_of(p)})"
                      + (f" -- {shown_message(p.message, hints)}" if p.message else "")
                      for p in self.parts]
        return "\n".join(line.replace("\n", "\n    ") for line in lines)

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "status": self.status.value}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Result:
        parts = tuple(PartResult(**part) for part in data.get("parts", ()))
        return cls(**{**data, "status": Status(data["status"]), "parts": parts})


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
    interrupted the kernel on purpose. A part that the check never reached fails (a check
    module must check every part it declares); a part whose stub is not replaced yet fails
    as not attempted, and the exercise is not attempted when none of its parts is.
    """
    try:
        with checking_parts(check) as seen:
            check.run(ns)
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # a check must not stop the notebook, whatever the code did
        return result_from_exception(check, exc, context="the check stopped with")
    if seen.declared and seen.stubs == set(seen.declared):
        return Result.of(check, Status.NOT_ATTEMPTED, NOT_ATTEMPTED_MESSAGE)
    unchecked = {name: UNCHECKED_MESSAGE for name in seen.declared if name not in seen.entered}
    stubs = dict.fromkeys(seen.stubs - seen.failed.keys(), NOT_ATTEMPTED_MESSAGE)
    return Result.of_parts(check, {**unchecked, **stubs, **seen.failed})


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
    """``message`` without the hints a check put in it: the rest of the line from
    :data:`~grader.checks.HINT_MARKER` on, and the lines that start with it."""
    return "\n".join(line.partition(HINT_MARKER)[0] for line in message.splitlines()
                     if not line.startswith(HINT_MARKER.lstrip()))


def format_points(points: float) -> str:
    """``2`` rather than ``2.0``; fractional points keep their digits."""
    return f"{points:g}"


def out_of(result: Result | PartResult) -> str:
    """``1.5/3``: the points earned, out of the most."""
    return f"{format_points(result.points)}/{format_points(result.max_points)}"


def shown_message(message: str, hints: bool) -> str:
    """``message`` as shown: with its hints, or without."""
    return message if hints else without_hint(message)
