"""Your engine: every piece you wrote in the exercise notebooks, installed at once.

Chapters 02-09 each have you write mechanisms of minijax ("Build it"): the evaluation trace,
the JVP trace, ``backward_pass``, the jaxpr printer, ... Each exercise notebook installs a
piece right after you write it, for that notebook's session only. The capstone trains a model
on all of them together; :func:`your_engine` is the one call that gathers them.

How it finds them, without running the notebooks' demos: in each notebook ``NN_*.ipynb`` of
the folder, its first code cell (the imports), the cells that only import and define, and
its exercise cells (the cells you write in, marked by the grader's ``exercise`` metadata) run
in a fresh namespace, and every
``pieces.install("name", expression)`` call in the notebook says which object is which
piece. A piece still at its stub (``pieces.is_stub``) is left out, and so is
one whose cell raises: minijax's own stays in its place, and the report says so.
"""

from __future__ import annotations

import ast
import contextlib
import json
import linecache
import pathlib
from collections.abc import Iterator
from typing import Any, NamedTuple

from minijax import pieces


class Found(NamedTuple):
    """One ``pieces.install`` call of a notebook: the piece and the expression installed."""

    notebook: str
    piece: str
    expression: str


def your_engine(folder: str | pathlib.Path | None = None, *, quiet: bool = False
                ) -> dict[str, str]:
    """Install every piece written in the exercise notebooks of ``folder`` (by default the
    current directory, where a notebook's kernel runs) and print what came from where.
    Returns ``{piece: "installed from NN_topic.ipynb" or why it was left out}``;
    ``pieces.reset()`` takes minijax's own pieces back."""
    report: dict[str, str] = {}
    root = pathlib.Path.cwd() if folder is None else pathlib.Path(folder)
    for path in sorted(root.glob("[0-9][0-9]_*.ipynb")):
        report.update(_install_notebook(path))
    if not quiet and not report:
        print("no pieces written in the exercise notebooks here: minijax's own pieces throughout")
    elif not quiet:
        width = max((len(name) for name in report), default=0)
        for name, outcome in report.items():
            print(f"{name:<{width}}  {outcome}")
    return report


def _install_notebook(path: pathlib.Path) -> dict[str, str]:
    cells = [cell for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]
             if cell["cell_type"] == "code"]
    found = [f for cell in cells for f in install_calls(_source(cell), path.name)]
    if not found:
        return {}
    namespace: dict[str, Any] = {"__name__": f"your_engine_{path.stem}"}
    failed: dict[int, str] = {}
    written = [cell for index, cell in enumerate(cells)
               if index == 0 or "exercise" in cell.get("metadata", {})
               or _defines_only(_source(cell))]
    with _installing_nothing():  # a cell may install its own piece: we decide below
        for index, cell in enumerate(written):
            filename, source = f"{path.name}, cell {cell.get('id')}", _source(cell)
            # inspect.getsource (pieces.install reads it to spot stubs) looks here
            linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
            try:
                exec(compile(source, filename, "exec"), namespace)
            except Exception as exc:  # the learner's cell: say so, keep the reference
                failed[index] = f"{type(exc).__name__}: {exc}"
    return {f.piece: _install_found(f, namespace, failed) for f in found}


def _install_found(found: Found, namespace: dict[str, Any], failed: dict[int, str]) -> str:
    try:
        implementation = eval(found.expression, namespace)
    except Exception as exc:
        why = "; ".join(failed.values()) or f"{type(exc).__name__}: {exc}"
        return f"left out ({found.notebook}: {why})"
    note = ""
    if isinstance(implementation, dict):  # a rule table: the rules written so far
        written = {p: rule for p, rule in implementation.items() if not pieces.is_stub(rule)}
        if written and len(written) < len(implementation):
            note = f" ({len(written)} of its {len(implementation)} rules)"
        implementation = written or implementation
    if pieces.is_stub(implementation):
        return f"minijax's own (the stub in {found.notebook} is not written yet)"
    pieces.install(found.piece, implementation)
    return f"yours, from {found.notebook}{note}"


@contextlib.contextmanager
def _installing_nothing() -> Iterator[None]:
    """While the notebooks' cells run, their own ``pieces.install``/``reset`` do nothing."""
    install, reset = pieces.install, pieces.reset
    pieces.install = pieces.reset = lambda *args, **kwargs: None
    try:
        yield
    finally:
        pieces.install, pieces.reset = install, reset


def install_calls(source: str, notebook: str = "") -> list[Found]:
    """The ``pieces.install("name", expression)`` calls in a cell's source."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    calls = []
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr == "install" and len(node.args) == 2
                and isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[0].value, str)):
            calls.append(Found(notebook, node.args[0].value, ast.unparse(node.args[1])))
    return calls


def _defines_only(source: str) -> bool:
    """Whether a cell only imports, defines and assigns (the building blocks a notebook's
    pieces use, given in a cell of their own): such a cell runs; a demo, which prints or
    plots, does not."""
    try:
        body = ast.parse(source).body
    except SyntaxError:
        return False
    kinds = (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.ClassDef, ast.Assign)
    return bool(body) and all(isinstance(node, kinds) for node in body)


def _source(cell: dict[str, Any]) -> str:
    source = cell["source"]
    return source if isinstance(source, str) else "".join(source)
