"""``check()`` inside a notebook: immediate feedback on one exercise, or on all of them.

The first code cell of an exercise notebook sets it up::

    from grader import checker
    check = checker("00_warmup")

and a cell after each exercise calls ``check("softmax")``. The checks run on the learner's real
objects, found in the notebook's globals, and the verdict is printed in the same words the
command-line grader uses. ``check`` never raises, so a notebook run top to bottom keeps going, and
it prints nothing that varies between runs (no timings, no addresses), so solved notebooks can be
tested with nbval.
"""

from __future__ import annotations

import sys
from pathlib import Path

from grader.chapters import default_checks_dir, load_checks
from grader.checks import Namespace
from grader.outcome import format_points, run_check

_muted = False


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
        self.chapter = chapter
        # Muted, in the grader's worker, the check module is not even read: the worker's folder
        # holds no check modules, and their expected values stay out of the learner's process.
        self.checks = {} if _muted else load_checks(chapter, checks_dir)

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
                print(result.summary())
            score = format_points(sum(result.points for result in results))
            most = format_points(sum(result.max_points for result in results))
            print(f"total: {score}/{most} points")
        elif name in self.checks:
            print(run_check(self.checks[name], ns).summary())
        else:
            print(
                f"{name}: no such exercise in chapter {self.chapter} "
                f"(its exercises: {', '.join(self.checks)})"
            )


def checker(chapter: str, checks_dir: str | Path | None = None) -> Checker:
    """The ``check`` function for ``chapter`` (e.g. ``"00_warmup"``).

    ``checks_dir`` defaults to the course's ``exercises/checks``; tests point it elsewhere.
    """
    return Checker(chapter, Path(checks_dir) if checks_dir is not None else default_checks_dir())
