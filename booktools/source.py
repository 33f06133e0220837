"""``show_source``: print the real code of a minijax function, class or module in a notebook.

The chapters teach minijax by showing its code. Pasting copies into notebooks would drift
from the engine; asking Python for the source of the live object cannot.
"""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

from IPython.display import Markdown

ROOT = Path(__file__).resolve().parents[1]


def _location(obj: Any, first_line: int) -> str:
    path = Path(inspect.getsourcefile(obj)).resolve()
    try:
        path = path.relative_to(ROOT)
    except ValueError:
        pass
    start = inspect.getsourcelines(obj)[1] if not inspect.ismodule(obj) else 1
    return f"{path.as_posix()}:{max(start, 1) + first_line - 1}"


def show_source(obj: Any, *, lines: tuple[int, int] | None = None) -> Markdown:
    """The source of ``obj`` as a highlighted code block, headed by its file and line.

    ``lines=(first, last)`` keeps only those lines (1-based, inclusive) of the source, for
    long functions where one part is the point.
    """
    obj = inspect.unwrap(obj)
    source = inspect.getsource(obj)
    first = 1
    if lines is not None:
        first, last = lines
        source = "\n".join(source.splitlines()[first - 1:last]) + "\n"
    return Markdown(f"`{_location(obj, first)}`\n\n```python\n{source}```")
