"""The answers a submission must not reach for, watched from inside the worker.

Two kinds, both reported to the grader with the reply of the request during which they were
tried (``"refused"``: what was refused, in words), so that the exercise being graded scores
zero with a message that says why (:class:`~grader.remote.ReferenceUsed`):

* the course's ``solutions/`` and check modules: an audit hook (which Python code cannot
  remove) refuses opening, listing or importing anything beneath them, on top of the
  sandbox (:mod:`grader.sandbox`) that makes them unreadable where Landlock exists;
* the reference piece an exercise replaces (``@exercise(..., replaces=("minijax.jacrev",))``):
  while one of that exercise's requests runs, the function refuses to run
  (:func:`grader.checks.forbidding`), even through a name the learner took beforehand.
  A piece whose module has not been imported yet is not loaded to refuse it (importing SciPy
  alone would cost a second per request); it is refused from the next request on.

This is detection, not the boundary: a submission that tampers with the worker can silence it.
The boundary is that the worker never holds an expected value (see :mod:`grader.runner`).
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

#: What was refused during the current request, in words; the worker sends and clears it.
REFUSED: list[str] = []

_WATCHED_EVENTS = ("open", "os.listdir", "os.scandir", "import")


def guard_course_files(course_roots: list[Path]) -> None:
    """Refuse, from now on in this process, any access beneath the ``solutions/`` and
    ``exercises/checks/`` folders of the course checkouts ``course_roots``."""
    closed = tuple(str(root / folder) + os.sep for root in course_roots
                   for folder in ("solutions", os.path.join("exercises", "checks")))

    def hook(event: str, args: tuple[Any, ...]) -> None:
        if event not in _WATCHED_EVENTS or not args:
            return
        target = args[0] if event != "import" else (args[1] if len(args) > 1 else None)
        if not isinstance(target, (str, bytes, os.PathLike)):
            return
        try:
            path = os.path.realpath(os.fsdecode(target)) + os.sep
        except (TypeError, ValueError, OSError):
            return
        if path.startswith(closed):
            what = f"{path.rstrip(os.sep)}: the course's solutions and checks are not the " \
                   "notebook's to read"
            REFUSED.append(what)
            raise PermissionError(what)

    sys.addaudithook(hook)


def course_roots() -> list[Path]:
    """The course checkouts this process could import from: the grader's own, and any on the
    import path (a folder that holds a ``grader`` package)."""
    roots = {Path(__file__).resolve().parents[1]}
    for entry in sys.path:
        path = Path(entry or ".").resolve()
        if (path / "grader" / "__init__.py").is_file():
            roots.add(path)
    return sorted(roots)


@contextlib.contextmanager
def refusing(names: list[str]) -> Iterator[None]:
    """While the block runs, each dotted ``names`` (``"minijax.jacrev"``) whose module is
    loaded refuses to run, and a call is recorded in :data:`REFUSED`."""
    from grader.checks import forbidding

    with contextlib.ExitStack() as stack:
        for name in names:
            module_name, _, attribute = name.rpartition(".")
            module = sys.modules.get(module_name)
            if module is not None and callable(getattr(module, attribute, None)):
                stack.enter_context(forbidding(
                    module, attribute, instead="it is the piece this exercise asks you to write",
                    label=name))
        yield


def take_refused() -> list[str]:
    """What was refused since the last call (and forget it)."""
    refused = list(dict.fromkeys(REFUSED))[:5]
    REFUSED.clear()
    return refused
