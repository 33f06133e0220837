"""``show_definitions``: print the module-level statements that define some names.

``show_source`` shows functions and classes; data such as a table of primitives or the
promotion lattice are plain assignments, which Python cannot locate by object. This helper
finds them by name in the module's syntax tree, so a chapter can show "the lines that
define ``LATTICE``" without hard-coding line numbers that drift when the file changes.
"""

from __future__ import annotations

import ast
import inspect
from pathlib import Path
from types import ModuleType

from IPython.display import Markdown

from booktools.source import ROOT


def _assigned_names(node: ast.stmt) -> set[str]:
    """The names a top-level ``x = ...`` or ``x: T = ...`` statement binds."""
    if isinstance(node, ast.Assign):
        targets = node.targets
    elif isinstance(node, ast.AnnAssign):
        targets = [node.target]
    else:
        return set()
    return {t.id for t in targets if isinstance(t, ast.Name)}


def _is_docstring(node: ast.stmt) -> bool:
    return (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str))


def show_definitions(module: ModuleType, *names: str) -> Markdown:
    """The source from the first to the last top-level assignment of ``names`` in
    ``module`` (with the string that documents the last one, if any), headed by its file
    and line like ``show_source``."""
    source = inspect.getsource(module)
    body = ast.parse(source).body
    found = [i for i, node in enumerate(body) if _assigned_names(node) & set(names)]
    missing = set(names) - set().union(*(_assigned_names(body[i]) for i in found))
    if missing:
        raise NameError(f"{module.__name__} assigns no top-level {sorted(missing)}")
    first, last = found[0], found[-1]
    if last + 1 < len(body) and _is_docstring(body[last + 1]):
        last += 1
    lines = source.splitlines()[body[first].lineno - 1:body[last].end_lineno]
    path = Path(inspect.getsourcefile(module)).resolve()
    try:
        path = path.relative_to(ROOT)
    except ValueError:
        pass
    code = "\n".join(lines)
    return Markdown(f"`{path.as_posix()}:{body[first].lineno}`\n\n```python\n{code}\n```")
