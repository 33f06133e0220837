"""Helpers for the tests of the chapters' Build-it pieces: a solved piece taken from the
solutions notebook the course ships, and the verdict of its chapter's check on it."""

from __future__ import annotations

import linecache
import textwrap
from pathlib import Path

import nbformat

from grader.chapters import load_checks
from grader.outcome import Result, run_check

ROOT = Path(__file__).resolve().parents[1]


def solved_namespace(chapter: str, exercises: tuple[str, ...], *extra: str) -> dict:
    """The notebook namespace after running ``solutions/<chapter>.ipynb``'s setup cell and
    its exercise cells ``exercises`` (then the sources ``extra``, a broken piece, say).
    Each source is registered with ``linecache``, as IPython does, so that ``inspect``
    (and ``pieces.install``'s look for a stub) finds it."""
    cells = nbformat.read(ROOT / "solutions" / f"{chapter}.ipynb", as_version=4).cells
    sources = [next(cell.source for cell in cells if cell.cell_type == "code")]
    sources += [cell.source for cell in cells
                if cell.metadata.get("exercise", {}).get("name") in exercises]
    ns: dict = {}
    for number, source in enumerate([*sources, *map(textwrap.dedent, extra)]):
        filename = f"<{chapter} test cell {number}>"
        linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
        exec(compile(source, filename, "exec"), ns)
    return ns


def verdict(chapter: str, name: str, ns: dict) -> Result:
    """What the check of exercise ``name`` gives on the namespace ``ns``."""
    return run_check(load_checks(chapter, ROOT / "exercises" / "checks")[name], ns)


def failed_parts(result: Result) -> dict[str, str]:
    """The failed parts of a check's result, by name, with their messages."""
    return {part.name: part.message for part in result.parts if not part.passed}
