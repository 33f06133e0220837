"""The solved Build-it pieces of the whole course stay compact (the "build it yourself" issue:
about 1,500 lines together), so that a learner can write them all.

A piece is what an exercise notebook installs with ``pieces.install("name", expression)``;
its lines are those of the solved exercise cells that define (or assign) a name the
expression uses: a function, a class, a rule table.
"""

from __future__ import annotations

import ast
from pathlib import Path

import nbformat

from booktools.your_engine import install_calls

SOLUTIONS = Path(__file__).resolve().parents[1] / "solutions"
BUDGET = 1_500


def piece_lines(notebook: Path) -> dict[str, int]:
    """Lines of each solved exercise cell that defines something the notebook installs."""
    cells = [c for c in nbformat.read(notebook, as_version=4).cells if c.cell_type == "code"]
    installed = {node.id for cell in cells for found in install_calls(cell.source)
                 for node in ast.walk(ast.parse(found.expression)) if isinstance(node, ast.Name)}
    sizes = {}
    for cell in cells:
        if "exercise" not in cell.metadata:
            continue
        body = ast.parse(cell.source).body
        defined = {node.name for node in body if isinstance(node, (ast.FunctionDef, ast.ClassDef))}
        defined |= {target.id for node in body if isinstance(node, ast.Assign)
                    for target in node.targets if isinstance(target, ast.Name)}
        if defined & installed:
            sizes[cell.metadata["exercise"]["name"]] = len(cell.source.splitlines())
    return sizes


def test_the_solved_pieces_stay_within_the_budget():
    sizes = {f"{path.stem}: {name}": lines for path in sorted(SOLUTIONS.glob("*.ipynb"))
             for name, lines in piece_lines(path).items()}
    print("\n".join(f"{lines:5} {name}" for name, lines in sizes.items()))
    assert len(sizes) >= 10, "fewer pieces than the chapters install"
    assert sum(sizes.values()) <= BUDGET, (
        f"the solved pieces take {sum(sizes.values())} lines, over the {BUDGET} a learner is "
        "promised")
