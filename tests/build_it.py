"""Helpers for the tests of the chapters' Build-it pieces: a piece's cell taken from the
notebooks the course ships, run as a notebook runs it, and the verdict of its chapter's
check on it."""

from __future__ import annotations

import itertools
import linecache
import textwrap
from pathlib import Path

import nbformat

from grader.chapters import load_checks
from grader.outcome import Result, run_check

ROOT = Path(__file__).resolve().parents[1]
_CELLS = itertools.count()


def notebook_cells(folder: str, chapter: str) -> tuple[str, dict[str, str]]:
    """``<folder>/<chapter>.ipynb``'s setup cell (its first code cell) and each exercise
    cell's source by exercise name."""
    cells = nbformat.read(ROOT / folder / f"{chapter}.ipynb", as_version=4).cells
    setup = next(cell.source for cell in cells if cell.cell_type == "code")
    exercises = {cell.metadata["exercise"]["name"]: cell.source
                 for cell in cells if "exercise" in cell.metadata}
    return setup, exercises


def run_cell(source: str, ns: dict) -> None:
    """Run a cell's source in ``ns``, its lines registered with ``linecache`` as IPython
    does, so that ``inspect`` (and ``pieces.install``'s look for a stub) finds them."""
    filename = f"<Build-it test cell {next(_CELLS)}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    exec(compile(source, filename, "exec"), ns)


def solved_namespace(chapter: str, exercises: tuple[str, ...], *extra: str) -> dict:
    """The notebook namespace after running ``solutions/<chapter>.ipynb``'s setup cell and
    its exercise cells ``exercises`` (then the sources ``extra``, a broken piece, say)."""
    setup, solved = notebook_cells("solutions", chapter)
    ns: dict = {}
    for source in [setup, *(solved[name] for name in exercises), *map(textwrap.dedent, extra)]:
        run_cell(source, ns)
    return ns


def verdict(chapter: str, name: str, ns: dict) -> Result:
    """What the check of exercise ``name`` gives on the namespace ``ns``."""
    return run_check(load_checks(chapter, ROOT / "exercises" / "checks")[name], ns)


def failed_parts(result: Result) -> dict[str, str]:
    """The failed parts of a check's result, by name, with their messages."""
    return {part.name: part.message for part in result.parts if not part.passed}
