"""``show_statements``: print the module-level statements that begin with given text.

Rule tables are filled by top-level calls such as ``defjvp(ew.sin_p, ...)``: they are
neither functions (``show_source``) nor assignments (``show_definitions``). This helper
finds each statement by how it begins, in the module's syntax tree, so a chapter can show
"the rule for ``sin``" without hard-coding line numbers that drift when the file changes.
"""

from __future__ import annotations

import ast
import inspect
from pathlib import Path
from types import ModuleType

from IPython.display import Markdown

from booktools.source import ROOT


def show_statements(module: ModuleType, *beginnings: str) -> Markdown:
    """The top-level statements of ``module`` whose source begins with one of
    ``beginnings`` (each must match exactly one statement), in the order given, each headed
    by its file and line like ``show_source``."""
    source = inspect.getsource(module)
    lines = source.splitlines()
    body = ast.parse(source).body
    path = Path(inspect.getsourcefile(module)).resolve()
    try:
        path = path.relative_to(ROOT)
    except ValueError:
        pass
    blocks = []
    for beginning in beginnings:
        found = [node for node in body if lines[node.lineno - 1].startswith(beginning)]
        if len(found) != 1:
            raise LookupError(f"{len(found)} top-level statements of {module.__name__} "
                              f"begin with {beginning!r}; expected exactly one")
        (node,) = found
        code = "\n".join(lines[node.lineno - 1:node.end_lineno])
        blocks.append(f"`{path.as_posix()}:{node.lineno}`\n\n```python\n{code}\n```")
    return Markdown("\n\n".join(blocks))
