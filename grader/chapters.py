"""Finding a chapter's check module and the chapter a notebook belongs to.

Checks live beside the exercises, one module per chapter: ``exercises/checks/ch00_warmup.py`` holds
the checks of ``00_warmup.ipynb``. They are loaded by file path rather than imported as a package,
so notebooks in ``exercises/`` and ``solutions/`` (and learners' submissions anywhere) are graded by
the same checks, and the checks folder needs no ``__init__.py`` or ``sys.path`` entry.
The grader's worker gets a module's source from the grader rather than from the disk.
"""

from __future__ import annotations

import re
import sys
import types
from pathlib import Path

from grader.checks import Check

_MODULE_PREFIX = "ch"


class ChapterError(Exception):
    """The chapter or its checks cannot be found: a usage error, not a learner's mistake."""


def default_checks_dir() -> Path:
    """``exercises/checks`` of the repository this package lives in (installed editable)."""
    return Path(__file__).resolve().parents[1] / "exercises" / "checks"


def known_chapters(checks_dir: Path) -> list[str]:
    """Chapters that have a check module, e.g. ``["00_warmup", "01_tracing"]``."""
    return sorted(
        path.stem[len(_MODULE_PREFIX) :] for path in checks_dir.glob(f"{_MODULE_PREFIX}*.py")
    )


def detect_chapter(notebook: Path, chapters: list[str]) -> str:
    """The chapter named inside the notebook's file name.

    A chapter name counts when it is not glued to other letters or digits, so a learner may add a
    prefix or suffix (``alice_00_warmup.ipynb``, ``00_warmup-final.ipynb``) but ``100_warmup``
    does not match ``00_warmup``. If several chapters match, the longest name wins.
    """
    found = [
        chapter
        for chapter in chapters
        if re.search(rf"(?<![0-9A-Za-z]){re.escape(chapter)}(?![0-9A-Za-z])", notebook.stem)
    ]
    if not found:
        raise ChapterError(
            f"cannot tell the chapter of {notebook.name}: its name contains none of "
            f"{', '.join(chapters) or '(no check modules found)'}; pass --chapter"
        )
    return max(found, key=len)


def load_checks(chapter: str, checks_dir: Path) -> dict[str, Check]:
    """The checks of ``chapter`` by exercise name, in the order the module defines them.

    The module is executed afresh on every call, so an instructor's edits are picked up by the
    next ``checker(...)`` call in a notebook without restarting the kernel.
    """
    return checks_from_source(chapter, check_module_source(chapter, checks_dir))


def check_module_source(chapter: str, checks_dir: Path) -> str:
    """The source of ``chapter``'s check module. The grader reads it and sends it to its worker,
    which cannot read the checks folder itself."""
    path = checks_dir / f"{_MODULE_PREFIX}{chapter}.py"
    if not path.is_file():
        raise ChapterError(f"no checks for chapter {chapter!r}: {path} does not exist")
    return path.read_text(encoding="utf-8")


def checks_from_source(chapter: str, source: str) -> dict[str, Check]:
    """Execute a check module's ``source`` as module ``_grader_checks_<chapter>``; its checks."""
    name = f"{_MODULE_PREFIX}{chapter}.py"
    module = types.ModuleType(f"_grader_checks_{chapter}")
    module.__file__ = name
    sys.modules[module.__name__] = module  # dataclasses and pickling look modules up there
    exec(compile(source, name, "exec"), module.__dict__)
    checks: dict[str, Check] = {}
    for check in vars(module).values():
        if isinstance(check, Check):
            if check.name in checks:
                raise ChapterError(f"{name} defines two checks for exercise {check.name!r}")
            checks[check.name] = check
    return checks
