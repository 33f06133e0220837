"""Tables and plots for chapter 03, *Four ways to differentiate*.

The chapter computes every number it shows in its own cells; these helpers only lay the
numbers out, so that the notebook's code is about derivatives, not about matplotlib.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
from IPython.display import Markdown


def table(header: Sequence[str], rows: Sequence[Sequence[Any]], floats: str = ".4g"
          ) -> Markdown:
    """A Markdown table; floats are written with the format spec ``floats``."""

    def cell(value: Any) -> str:
        if isinstance(value, (float, np.floating)):
            return format(float(value), floats)
        return str(value)

    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return Markdown("\n".join(lines))


def plot_step_errors(ax: plt.Axes, steps: np.ndarray, measured: Mapping[str, np.ndarray],
                     theory: Mapping[str, Mapping[str, np.ndarray]], best: Mapping[str, float],
                     title: str, legend: bool = True) -> None:
    """Error against step size on log-log axes, with the lines theory predicts.

    ``measured`` maps a method to its errors, one per step (an error of exactly 0, which a
    log scale cannot show, is drawn at ``1e-17``). ``theory`` maps a method to its predicted
    error terms, drawn dashed and dotted in the method's colour; ``best`` maps a method to
    the step theory predicts to be best, drawn as a vertical line.
    """
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for colour, (method, error) in zip(colours, measured.items()):
        ax.loglog(steps, np.maximum(error, 1e-17), color=colour, linewidth=2, label=method)
        for style, (term, line) in zip(("--", ":"), theory.get(method, {}).items()):
            ax.loglog(steps, line, style, color=colour, linewidth=1, label=f"{method}: {term}")
        if method in best:
            ax.axvline(best[method], color=colour, linestyle="-.", linewidth=1, alpha=0.6)
    ax.set_ylim(1e-18, 1e2)
    ax.set_xlabel("step size h")
    ax.set_ylabel("absolute error of f'(x)")
    ax.set_title(title)
    ax.grid(True, which="major", alpha=0.3)
    if legend:
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.02, 1))
