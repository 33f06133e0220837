"""Each layer of minijax has a line budget, as tinygrad keeps its core small: a layer that
grows past its budget fails here. The budgets are today's sizes, so they can only push
down; lower one when a layer shrinks (raising one needs a reason in the commit).

Run with ``-s`` to see the table; ``booktools.layers.draw_layers`` draws it.
"""

from __future__ import annotations

import pytest

from booktools.layers import LAYERS, lines_per_layer

# Lines (docstrings and comments included) per layer. The teaching core is the core and
# transformation layers with the base primitives (``lax/base.py``); the transformation
# layer, the heart of chapters 04-07, aims at about 3,000 lines.
BUDGETS = {
    "utilities": 1_304,
    "core": 2_491,
    "transformations": 3_036,
    "primitives": 7_443,
    "api": 1_625,
    "breadth": 11_051,
    "backends": 3_327,
    "package": 424,
}


def test_every_layer_has_a_budget():
    assert set(BUDGETS) == set(LAYERS)


@pytest.mark.parametrize("layer", list(LAYERS))
def test_layer_within_budget(layer):
    lines = lines_per_layer()
    print(f"{layer:>16}: {lines[layer]:6,} lines (budget {BUDGETS[layer]:,})")
    assert lines[layer] <= BUDGETS[layer], (
        f"the {layer} layer has {lines[layer]:,} lines, over its budget of "
        f"{BUDGETS[layer]:,}: make it smaller, or move breadth out of it")
