"""Reading a learner's notebook: its code cells, which of them are exercises, and IPython magics.

An exercise cell carries cell metadata ``"exercise": {"name": "softmax", "points": 2}``. Metadata
survives a learner's edits to the cell's source and is invisible in the notebook view, which makes
it a sturdier marker than a comment in the code.

The grader runs cells with plain ``exec``, which does not understand IPython syntax (``%timeit``,
``%%time``, ``!ls``): :func:`find_magic` finds such syntax so the grader can say so plainly instead
of reporting a puzzling ``SyntaxError``.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# A call that IPython's input transformer writes in place of magic syntax, with its first argument.
_MAGIC_CALL = re.compile(
    r"get_ipython\(\)\.(run_line_magic|run_cell_magic|system|getoutput)"
    r"""\(('(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")"""
)
_MAGIC_PREFIX = {"run_line_magic": "%", "run_cell_magic": "%%", "system": "!", "getoutput": "!"}


class NotebookError(Exception):
    """The file is not a notebook the grader can read."""


@dataclass(frozen=True)
class ExerciseTag:
    """An exercise cell's metadata. ``points`` is what the notebook claims (None if absent)."""

    name: str
    points: float | None


@dataclass(frozen=True)
class CodeCell:
    """A code cell. ``number`` counts all cells from 1, so a learner can find it in Jupyter."""

    number: int
    source: str
    exercise: ExerciseTag | None = None

    def label(self) -> str:
        """``cell 4 (`x = f(1)`)``: how notes refer to this cell."""
        first_line = next((line.strip() for line in self.source.splitlines() if line.strip()), "")
        if len(first_line) > 40:
            first_line = first_line[:37] + "..."
        return f"cell {self.number} (`{first_line}`)"

    def to_json(self) -> dict[str, Any]:
        tag = self.exercise
        exercise = None if tag is None else {"name": tag.name, "points": tag.points}
        return {"number": self.number, "source": self.source, "exercise": exercise}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> CodeCell:
        tag = data["exercise"]
        return cls(data["number"], data["source"], None if tag is None else ExerciseTag(**tag))


def read_code_cells(path: Path) -> list[CodeCell]:
    """The code cells of the notebook at ``path``, in order. Only reads the file."""
    import nbformat  # imported here: it takes a second, and the worker never reads notebooks

    try:
        with path.open(encoding="utf-8") as file:
            nb = nbformat.read(file, as_version=4)
        return [
            CodeCell(number, cell.source, _exercise_tag(cell.get("metadata", {})))
            for number, cell in enumerate(nb.cells, start=1)
            if cell.cell_type == "code"
        ]
    except (OSError, ValueError, KeyError, AttributeError) as exc:
        raise NotebookError(f"cannot read {path.name} as a notebook ({exc})") from exc


def _exercise_tag(metadata: dict[str, Any]) -> ExerciseTag | None:
    tag = metadata.get("exercise")
    if not isinstance(tag, dict) or not isinstance(tag.get("name"), str):
        return None
    points = tag.get("points")
    valid = isinstance(points, (int, float)) and not isinstance(points, bool)
    return ExerciseTag(tag["name"], points if valid else None)


def find_magic(source: str) -> str | None:
    """The first IPython-only syntax in ``source`` (``%timeit``, ``%%time``, ``!ls``), or None.

    Source that compiles as Python has none: IPython syntax is invalid Python by design, and
    ``a % b`` or ``a != b`` compile fine. Otherwise IPython's own input transformer decides, as it
    understands strings, brackets and continuation lines exactly as Jupyter does.
    """
    try:
        compile(source, "<cell>", "exec")
        return None
    except (SyntaxError, ValueError):
        pass
    from IPython.core.inputtransformer2 import TransformerManager  # only needed on this path

    transformed = TransformerManager().transform_cell(source)
    for match in _MAGIC_CALL.finditer(transformed):
        if match.group(0) in source:  # the learner wrote get_ipython() by hand: not magic syntax
            continue
        kind, argument = match.group(1), ast.literal_eval(match.group(2))
        words = argument.split()
        return _MAGIC_PREFIX[kind] + (words[0] if words else "")
    return None
