"""A picture of broadcasting: two operands stretched to a common shape, and the result.

Broadcasting never copies data; it *reads* an axis of length 1 again and again. The picture
shows exactly that: the cells an operand really holds are drawn solid, the cells it only
appears to hold after stretching are drawn faded.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import matplotlib.pyplot as plt
import numpy as np

SOLID, FADED = "#90caf9", "#e3f2fd"


def _as_2d(x: np.ndarray) -> np.ndarray:
    """Scalars and vectors as matrices: NumPy's rule adds missing axes on the left."""
    return x.reshape((1,) * (2 - x.ndim) + x.shape)


def _draw_grid(ax: plt.Axes, x: np.ndarray, shape: tuple[int, int], title: str) -> None:
    """Draw ``x`` stretched to ``shape``: cells it really holds solid, copies faded."""
    held = _as_2d(x)
    stretched = np.broadcast_to(held, shape)
    for i in range(shape[0]):
        for j in range(shape[1]):
            real = i < held.shape[0] and j < held.shape[1]
            ax.add_patch(plt.Rectangle((j, -i - 1), 1, 1, fc=SOLID if real else FADED,
                                       ec="#455a64", lw=1.2))
            ax.text(j + 0.5, -i - 0.5, f"{stretched[i, j]:g}", ha="center", va="center",
                    fontsize=11, color="black" if real else "#90a4ae")
    ax.set_xlim(-0.1, shape[1] + 0.1)
    ax.set_ylim(-shape[0] - 0.1, 0.1)
    ax.set_aspect("equal")
    ax.axis("off")
    ax.set_title(title, fontsize=11)


def draw_broadcast(a: Any, b: Any, combine: Callable[[Any, Any], Any] = np.add,
                   symbol: str = "+") -> plt.Figure:
    """Draw ``combine(a, b)`` for operands of at most two dimensions (NumPy or minijax).

    Each operand is titled with its real shape; faded cells are the ones broadcasting
    supplies by repeating an axis of length 1.
    """
    a, b = np.asarray(a), np.asarray(b)
    out = np.asarray(combine(a, b))
    if out.ndim > 2:
        raise ValueError(f"draw_broadcast draws at most 2-D results, got shape {out.shape}")
    shape = _as_2d(out).shape
    fig, axes = plt.subplots(1, 3, figsize=(3 * (shape[1] + 1.2), shape[0] + 1.2))
    _draw_grid(axes[0], a, shape, f"a: shape {a.shape}")
    _draw_grid(axes[1], b, shape, f"b: shape {b.shape}")
    _draw_grid(axes[2], out, shape, f"a {symbol} b: shape {out.shape}")
    for left, right, sign in ((axes[0], axes[1], symbol), (axes[1], axes[2], "=")):
        left.apply_aspect()
        right.apply_aspect()
        x = (left.get_position().x1 + right.get_position().x0) / 2
        y = (left.get_position().y0 + left.get_position().y1) / 2
        fig.text(x, y, sign, fontsize=22, ha="center", va="center")
    return fig
