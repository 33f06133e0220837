"""``check()`` inside a notebook: immediate feedback on one exercise, or on all of them.

The first code cell of an exercise notebook sets it up::

    from grader import checker
    check = checker("00_warmup")

and a cell after each exercise calls ``check("softmax")``. The checks run on the learner's real
objects, found in the notebook's globals, and the verdict is printed in the same words the
command-line grader uses. ``check`` never raises, so a notebook run top to bottom keeps going, and
it prints nothing that varies between runs (no timings, no addresses), so solved notebooks can be
tested with nbval.

A failure says what went wrong, not how to fix it: the hints a check has for it stay hidden until
the learner asks, with ``hint("softmax")`` (``from grader import hint``), or until the exercise
has failed :data:`HINTS_AFTER_FAILURES` ``check()`` calls in this session.
"""

from __future__ import annotations

import sys
from pathlib import Path

from grader.chapters import default_checks_dir, load_checks
from grader.checks import Namespace
from grader.outcome import Result, Status, format_points, run_check

#: The failed ``check()`` of an exercise that shows its hints unasked (and every later one).
HINTS_AFTER_FAILURES = 3

_muted = False
#: The checker made last in this process, which :func:`hint` asks.
_latest: Checker | None = None


def mute() -> None:
    """Make every ``check()`` call a no-op in this process.

    The grader's worker calls this before running a notebook: the grader runs each check itself,
    under time and output limits, right after the exercise cell. Running the notebook's own
    ``check()`` cells too would only repeat that work, without the limits.
    """
    global _muted
    _muted = True


class Checker:
    """The ``check`` function of one chapter (see the module docstring)."""

    def __init__(self, chapter: str, checks_dir: Path) -> None:
        global _latest
        self.chapter = chapter
        # Muted, in the grader's worker, the check module is not even read: the worker's folder
        # holds no check modules, and their expected values stay out of the learner's process.
        self.checks = {} if _muted else load_checks(chapter, checks_dir)
        self.failures: dict[str, int] = {}  # failed check() calls, by exercise
        self.hinted: set[str] = set()  # exercises whose hints the learner asked for
        _latest = self

    def __call__(self, name: str | None = None, namespace: Namespace | None = None) -> None:
        """Print the verdict on exercise ``name``, or on every exercise and the total.

        ``namespace`` defaults to the caller's globals, which in a notebook are the notebook's.
        """
        if _muted:
            return
        ns = namespace if namespace is not None else sys._getframe(1).f_globals
        if name is None:
            results = [run_check(check, ns) for check in self.checks.values()]
            for result in results:
                print(self.shown(result))
            score = format_points(sum(result.points for result in results))
            most = format_points(sum(result.max_points for result in results))
            print(f"total: {score}/{most} points")
        elif name in self.checks:
            print(self.shown(run_check(self.checks[name], ns)))
        else:
            print(self.unknown(name))

    def hint(self, name: str, namespace: Namespace | None = None) -> None:
        """Check exercise ``name`` and print the verdict with its hints, as every later
        ``check(name)`` will."""
        if _muted:
            return
        if name not in self.checks:
            print(self.unknown(name))
            return
        self.hinted.add(name)
        ns = namespace if namespace is not None else sys._getframe(1).f_globals
        result = run_check(self.checks[name], ns)
        print(result.summary())
        if result.status is Status.FAILED and not result.has_hint:
            print("    (the check has no hint for this failure: its message says what is wrong)")

    def shown(self, result: Result) -> str:
        """The verdict as ``check()`` prints it, counting the failure; hints only if asked for
        or after :data:`HINTS_AFTER_FAILURES` failures."""
        if result.status is Status.FAILED:
            self.failures[result.name] = self.failures.get(result.name, 0) + 1
        hints = (result.name in self.hinted
                 or self.failures.get(result.name, 0) >= HINTS_AFTER_FAILURES)
        text = result.summary(hints=hints)
        if result.has_hint and not hints:
            text += f'\n    (for a hint: from grader import hint; hint("{result.name}"))'
        return text

    def unknown(self, name: str) -> str:
        return (f"{name}: no such exercise in chapter {self.chapter} "
                f"(its exercises: {', '.join(self.checks)})")


def checker(chapter: str, checks_dir: str | Path | None = None) -> Checker:
    """The ``check`` function for ``chapter`` (e.g. ``"00_warmup"``).

    ``checks_dir`` defaults to the course's ``exercises/checks``; tests point it elsewhere.
    """
    return Checker(chapter, Path(checks_dir) if checks_dir is not None else default_checks_dir())


def hint(name: str, namespace: Namespace | None = None) -> None:
    """``check.hint(name)`` of the notebook's ``check`` (the checker made last): the verdict on
    exercise ``name`` with its hints."""
    if _latest is None:
        print("no checker yet: run the notebook's first cell (check = checker(...)) first")
        return
    _latest.hint(name, namespace if namespace is not None else sys._getframe(1).f_globals)
