"""Pictures of minijax's machinery, drawn from live objects so that they cannot drift from
the engine: a jaxpr as a data-flow graph, the stack of traces a transformation builds, and
the stages of ``jit``'s pipeline with the real artifacts of one small function.

Each ``draw_*`` function takes an optional matplotlib ``Axes`` and returns the one it drew
on; the chapters call them in a cell of their own.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Sequence
from typing import Any

import matplotlib.pyplot as plt
from matplotlib.patches import FancyBboxPatch

from minijax.core import Literal, Trace
from minijax.jaxpr import ClosedJaxpr, Jaxpr, PrintContext, _unused_results

_BOX = {"boxstyle": "round,pad=0.35", "linewidth": 1.0}
_COLOURS = {"input": "#dbe9f6", "const": "#f3e3c3", "eqn": "#ffffff", "output": "#d9efd9"}


def _axes(ax: plt.Axes | None, size: tuple[float, float]) -> plt.Axes:
    if ax is None:
        _, ax = plt.subplots(figsize=size)
    ax.set_axis_off()
    return ax


# A jaxpr as a graph ----------------------------------------------------------------------

def _columns(jaxpr: Jaxpr) -> tuple[dict[Any, int], list[int]]:
    """The column of every variable (inputs in column 0) and of every equation: one more
    than the column of its latest input, so that every edge points to the right."""
    column = {v: 0 for v in [*jaxpr.constvars, *jaxpr.invars]}
    eqn_columns = []
    for eqn in jaxpr.eqns:
        here = 1 + max((column[v] for v in eqn.invars if type(v) is not Literal), default=0)
        eqn_columns.append(here)
        column.update({v: here for v in eqn.outvars})
    return column, eqn_columns


def _literal_text(eqn: Any) -> str:
    literals = [v.text() for v in eqn.invars if type(v) is Literal]
    return f"  ({', '.join(literals)})" if literals else ""


def _spread(items: Sequence[Any], x: float, positions: dict[Any, tuple[float, float]]) -> None:
    """Place ``items`` one above the other, centred on y = 0, at column ``x``."""
    for row, item in enumerate(items):
        positions[item] = (x, (len(items) - 1) / 2 - row)


def _by_inputs(eqns: list[Any], positions: dict[Any, tuple[float, float]],
               producer: dict[Any, Any]) -> list[Any]:
    """Equations ordered by the mean height of what they read, so that few arrows cross."""
    def height(eqn: Any) -> float:
        ys = [positions[producer[v]][1] for v in eqn.invars if type(v) is not Literal]
        return -sum(ys) / len(ys) if ys else 0.0
    return sorted(eqns, key=height)


def draw_jaxpr(jaxpr: ClosedJaxpr | Jaxpr, ax: plt.Axes | None = None,
               title: str | None = None) -> plt.Axes:
    """Draw ``jaxpr`` as data flow: inputs on the left (constants below them), one box per
    equation (``outputs = primitive``, with its literal operands), the results on the right,
    and an arrow for every variable an equation reads. Variables carry the names that
    printing the jaxpr gives them."""
    inner = jaxpr.jaxpr if isinstance(jaxpr, ClosedJaxpr) else jaxpr
    names = PrintContext(_unused_results(inner))  # the printer's names, ``_`` included,
    for var in [*inner.constvars, *inner.invars, *(v for e in inner.eqns for v in e.outvars)]:
        names.name(var)  # given in the printer's order
    column, eqn_columns = _columns(inner)
    last = max(eqn_columns, default=0) + 1
    positions: dict[Any, tuple[float, float]] = {}
    producer: dict[Any, Any] = {v: v for v in [*inner.invars, *inner.constvars]}
    _spread([*inner.invars, *inner.constvars], 0, positions)
    for col in range(1, last):
        here = [e for e, c in zip(inner.eqns, eqn_columns) if c == col]
        _spread(_by_inputs(here, positions, producer), col, positions)
        producer.update({v: e for e in here for v in e.outvars})
    outputs = [("out", i) for i in range(len(inner.outvars))]
    _spread(outputs, last, positions)
    rows = max((abs(y) for _, y in positions.values()), default=0) * 2 + 1
    ax = _axes(ax, (2.0 * (last + 1), 0.8 * rows + 0.8))

    def node(key: Any, text: str, kind: str) -> None:
        x, y = positions[key]
        ax.text(x, y, text, ha="center", va="center", fontsize=9, family="monospace",
                bbox={**_BOX, "facecolor": _COLOURS[kind]}, zorder=3)

    def arrow(start: Any, end: Any) -> None:
        # an arrow that skips columns bends, so that it does not run through the boxes
        # of the columns between
        (x0, y0), (x1, y1) = positions[start], positions[end]
        bend = 0.0 if x1 - x0 <= 1 else (0.3 if y1 >= y0 else -0.3)
        ax.annotate("", (x1, y1), (x0, y0), zorder=1, arrowprops={
            "arrowstyle": "->", "color": "0.5", "lw": 1.0, "shrinkA": 28, "shrinkB": 28,
            "connectionstyle": f"arc3,rad={bend}"})

    for var in [*inner.invars, *inner.constvars]:
        kind = "const" if var in inner.constvars else "input"
        node(var, f"{names.name(var)}: {var.aval.str_short()}", kind)
    for eqn in inner.eqns:
        outs = " ".join(names.name(v) for v in eqn.outvars)
        node(eqn, f"{outs} = {eqn.primitive.name}{_literal_text(eqn)}", "eqn")
        for var in eqn.invars:
            if type(var) is not Literal:
                arrow(producer[var], eqn)
    for key, var in zip(outputs, inner.outvars):
        node(key, "out " + (var.text() if type(var) is Literal else names.name(var)), "output")
        if type(var) is not Literal:
            arrow(producer[var], key)
    ax.set_xlim(-0.8, last + 0.8)
    ax.set_ylim(-rows / 2, rows / 2)
    if title:
        ax.set_title(title)
    return ax


# The stack of traces ---------------------------------------------------------------------

def trace_stack(transform: Callable[[Callable[[Any], Any]], Any]) -> list[Trace]:
    """The traces that see a primitive applied inside ``transform``, outermost first.

    ``transform`` receives a function of one argument and must call it on a tracer (for
    example ``lambda g: jax.linearize(g, 1.0)``). From the trace of the tracer that function
    receives, the chain follows ``rule_trace`` (where a JVP trace runs its rules) and
    ``parent`` (where a trace hands the computations it does not handle itself).
    """
    seen: list[Trace] = []

    def spy(x: Any) -> Any:
        trace = x._trace
        while trace is not None and trace not in seen:
            seen.append(trace)
            trace = getattr(trace, "rule_trace", None) or getattr(trace, "parent", None)
        return x

    transform(spy)
    return seen


def draw_trace_stack(traces: Sequence[Trace], roles: dict[str, str],
                     ax: plt.Axes | None = None, title: str | None = None) -> plt.Axes:
    """Nested boxes, the outermost trace outside: each labelled with its class and with
    ``roles``'s sentence for that class (what the trace does with a primitive)."""
    depth = len(traces)
    ax = _axes(ax, (8.5, 1.05 * depth + 0.5))
    for level, trace in enumerate(traces):
        inset, top = 0.2 * level, -1.0 * level
        ax.add_patch(FancyBboxPatch(
            (inset, -depth), 8 - 2 * inset, depth + top,
            boxstyle="round,pad=0.02,rounding_size=0.08", linewidth=1.2,
            facecolor=plt.cm.Blues(0.1 + 0.15 * level), edgecolor="0.3"))
        ax.text(inset + 0.12, top - 0.1, type(trace).__name__, fontsize=10, weight="bold",
                va="top")
        ax.text(inset + 0.12, top - 0.4, textwrap.fill(roles.get(type(trace).__name__, ""), 95),
                fontsize=8.5, va="top")
    ax.set_xlim(-0.1, 8.1)
    ax.set_ylim(-depth - 0.1, 0.1)
    if title:
        ax.set_title(title)
    return ax


# jit's pipeline --------------------------------------------------------------------------

def _excerpt(text: str, lines: int, width: int) -> str:
    kept = [textwrap.shorten(line, width, placeholder=" ...") if len(line) > width else line
            for line in text.strip("\n").splitlines()]
    if len(kept) > lines:
        kept = kept[:lines - 1] + [f"... ({len(kept) - lines + 1} more lines)"]
    return "\n".join(kept)


def draw_pipeline(stages: Sequence[tuple[str, str, str]], ax: plt.Axes | None = None,
                  lines: int = 6, width: int = 90) -> plt.Axes:
    """Stages from top to bottom, each ``(name, text, how it is made)``: a title, an excerpt
    of the artifact, and the label of the arrow that leads to it (empty for the first)."""
    excerpts = [_excerpt(text, lines, width) for _, text, _ in stages]
    heights = [0.45 + 0.21 * excerpt.count("\n") for excerpt in excerpts]
    ax = _axes(ax, (10, 0.75 * sum(heights) + 0.4))
    y = 0.0
    for (name, _, how), excerpt, height in zip(stages, excerpts, heights):
        if how:
            ax.annotate("", (0.6, y + 0.02), (0.6, y + 0.3),
                        arrowprops={"arrowstyle": "-|>", "color": "0.2", "lw": 1.5})
            ax.text(0.7, y + 0.16, how, va="center", fontsize=9, style="italic")
        ax.text(0.0, y - 0.05, textwrap.fill(name, 16), va="top", fontsize=10, weight="bold")
        ax.text(2.2, y - 0.05, excerpt, va="top", fontsize=7.5, family="monospace",
                bbox={**_BOX, "facecolor": "#f6f6f6"})
        y -= height + 0.3
    ax.set_xlim(0, 10)
    ax.set_ylim(y + 0.2, 0.1)
    return ax
