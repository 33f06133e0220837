"""Pictures of type promotion: JAX's lattice as a graph, and promotion tables as grids.

Both read the rules from the engine (``minijax.dtypes``) and from NumPy at the moment they
draw, so the pictures cannot disagree with the code.
"""

from __future__ import annotations

import warnings

import matplotlib.pyplot as plt
import numpy as np

from minijax import dtypes

# Where each lattice node sits in the drawing: (column, row). Rows grow upward with the
# width of the type; columns group the kinds (unsigned, signed, floating, complex).
LATTICE_LAYOUT = {
    "b1": (2.0, 0), "i*": (2.0, 1),
    "u8": (0.5, 2), "u16": (0.5, 3), "u32": (0.5, 4), "u64": (0.5, 5),
    "i8": (2.0, 2), "i16": (2.0, 3), "i32": (2.0, 4), "i64": (2.0, 5),
    "f*": (3.5, 6), "bf16": (3.0, 7), "f16": (4.0, 7), "f32": (3.5, 8), "f64": (3.5, 9),
    "c*": (5.2, 7), "c64": (5.2, 9), "c128": (5.2, 10),
}
KIND_COLOURS = {"b": "#9e9e9e", "u": "#64b5f6", "i": "#1e88e5", "f": "#43a047",
                "c": "#8e24aa", "e": "#e53935"}


def _kind(node: str) -> str:
    return "f" if node.startswith("bf") else node[0]


def draw_lattice(ax: plt.Axes | None = None, x64: bool = True,
                 join: tuple[str, ...] | None = None) -> plt.Axes:
    """Draw JAX's promotion lattice: an arrow a -> b means a promotes to b.

    The result of mixing two dtypes is their least upper bound: the lowest node that can be
    reached from both. Weak types (``i*``, ``f*``, ``c*``) are drawn with dashed outlines.

    ``join=("u8", "i8")`` shows one such join: the nodes reachable from every one of the
    given nodes (their common upper bounds) stay bright, the others fade, the given nodes
    get a thick black frame and their least upper bound a thick red one.
    """
    ax = ax or plt.subplots(figsize=(6, 6.5))[1]
    common = lub = None
    if join is not None:
        common = frozenset.intersection(*(dtypes.upper_bounds(n, x64=x64) for n in join))
        lub = dtypes.least_upper_bound(*join, x64=x64)
    for lower, upper in dtypes.lattice_edges(x64=x64):
        (x0, y0), (x1, y1) = LATTICE_LAYOUT[lower], LATTICE_LAYOUT[upper]
        bright = common is None or (lower in common or lower in join) and upper in common
        ax.annotate("", xy=(x1, y1 - 0.22), xytext=(x0, y0 + 0.22),
                    arrowprops={"arrowstyle": "->", "color": "#555555", "lw": 1.2,
                                "alpha": 1.0 if bright else 0.25})
    for node, (x, y) in LATTICE_LAYOUT.items():
        weak = node.endswith("*")
        edge, width, alpha = "black", 1.0, 1.0
        if join is not None:
            alpha = 1.0 if node in common or node in join else 0.3
            if node in join:
                width = 3.0
            if node == lub:
                edge, width = "#d50000", 3.5
        ax.text(x, y, node, ha="center", va="center", fontsize=11,
                color="white" if alpha == 1.0 else "#555555",
                bbox={"boxstyle": "round,pad=0.35", "fc": KIND_COLOURS[_kind(node)],
                      "ec": edge, "lw": width, "ls": "--" if weak else "-", "alpha": alpha})
    ax.set_xlim(-0.2, 6.0)
    ax.set_ylim(-0.7, 10.7)
    ax.axis("off")
    if join is None:
        ax.set_title("JAX's type promotion lattice" + ("" if x64 else " (x64 off)"))
    else:
        ax.set_title(f"{' + '.join(join)} -> {lub}")
    return ax


def _kind_of_dtype(dt: np.dtype | None) -> str:
    if dt is None:
        return "e"
    if dt == np.bool_:
        return "b"
    return "f" if dt == dtypes.bfloat16 else dt.kind


def _short(dt: np.dtype | None) -> str:
    if dt is None:
        return "err"
    return dtypes.lattice_node(dt)


def numpy_promotion(a: np.dtype, b: np.dtype) -> np.dtype | None:
    """What NumPy gives for ``a`` combined with ``b`` (None if it refuses)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return np.promote_types(a, b)
    except TypeError:
        return None


def jax_promotion(a: np.dtype, b: np.dtype) -> np.dtype:
    """What minijax (and JAX) give for ``a`` combined with ``b``, before canonicalisation."""
    return dtypes.promote_types(a, b)


def promotion_grid(rule, ax: plt.Axes, title: str, highlight=None) -> None:
    """A colour-coded table of ``rule(row_dtype, column_dtype)`` over the 15 dtypes.

    ``highlight(a, b)`` may mark cells (with a black frame), e.g. where two rules differ.
    """
    names = [np.dtype(t) for t in dtypes.SUPPORTED_DTYPES]
    colours = {kind: plt.matplotlib.colors.to_rgb(c) for kind, c in KIND_COLOURS.items()}
    image = np.zeros((len(names), len(names), 3))
    for i, a in enumerate(names):
        for j, b in enumerate(names):
            result = rule(a, b)
            image[i, j] = colours[_kind_of_dtype(result)]
            ax.text(j, i, _short(result), ha="center", va="center", fontsize=6.5,
                    color="white")
            if highlight is not None and highlight(a, b):
                ax.add_patch(plt.Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, lw=1.6))
    ax.imshow(image)
    labels = [_short(n) for n in names]
    ax.set_xticks(range(len(names)), labels, fontsize=7, rotation=90)
    ax.set_yticks(range(len(names)), labels, fontsize=7)
    ax.set_title(title)


def compare_promotion_tables() -> plt.Figure:
    """NumPy's table beside JAX's, cells where they differ framed in black."""
    fig, (left, right) = plt.subplots(1, 2, figsize=(13, 6.5))
    differ = lambda a, b: numpy_promotion(a, b) != jax_promotion(a, b)  # noqa: E731
    promotion_grid(numpy_promotion, left, "NumPy: np.promote_types", differ)
    promotion_grid(jax_promotion, right, "JAX / minijax: jnp.promote_types", differ)
    fig.tight_layout()
    return fig
