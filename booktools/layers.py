"""minijax's layers, read off its source: which module is in which layer, what each
module imports (function-local imports included), and a picture of the whole.

The map is :data:`LAYERS`, lowest layer first. ``tests/test_layers.py`` checks that no
module imports a module of a higher layer and that no imports go round in a circle;
the chapters draw the same map with :func:`draw_layers`.
"""

from __future__ import annotations

import ast
import pathlib
import textwrap

import matplotlib.pyplot as plt

PACKAGE = pathlib.Path(__file__).resolve().parent.parent / "minijax"

# Modules by layer, lowest first. A name covers the module and, for a package, every
# module under it that is not listed more precisely (the longest matching name wins).
LAYERS: dict[str, list[str]] = {
    "utilities": ["errors", "flags", "tree_util", "tree", "pretty_printer", "mlir_numbers"],
    "core": ["dtypes", "core", "jaxpr", "array", "runtime", "shape_dtype"],
    "transformations": [
        "tracing", "interpreters.ad", "interpreters.partial_eval", "interpreters.transpose",
        "interpreters.batching", "compiler.stablehlo_ops", "compiler.stablehlo_ir",
        "compiler.lowering", "compiler.jit_primitive",
    ],
    "primitives": [
        "lax.base", "lax.cpu_math", "lax.elementwise", "lax.shapes", "lax.reductions", "lax.linalg",
        "lax.slicing", "lax.sorting", "lax.special", "lax.convolution", "lax.parallel",
    ],
    "api": ["autodiff", "api", "vectorize", "compiler.jit", "compiler.dispatch",
            "compiler.stages"],
    "breadth": [
        "lax", "lax.control_flow", "custom_derivatives", "debug", "numpy", "scipy", "nn",
        "random", "prng", "symbolic", "test_util",
    ],
    "backends": ["compiler", "compiler.stablehlo", "compiler.passes", "compiler.numpy_backend",
                 "compiler.xla_backend", "compiler.eager_loops"],
    "package": ["", "pieces"],  # the public facade and the learner's plug (import everything)
}

# What each layer is for, in a few words (the picture prints them).
PURPOSE = {
    "utilities": "errors, flags, pytrees, pretty printing",
    "core": "dtypes, avals, primitives, traces, jaxprs, the Array and its runtime",
    "transformations": "tracing, JVP, partial evaluation, transposition, batching, "
                       "the jit primitive, lowering",
    "primitives": "lax: each primitive with all its rules",
    "api": "grad, vjp, vmap, jit and its stages, ..., device_put",
    "breadth": "control flow, jax.numpy, scipy, nn, random",
    "backends": "the StableHLO reader, the mini-XLA (passes, NumPy code), real XLA",
    "package": "import minijax",
}


def module_names() -> dict[str, pathlib.Path]:
    """Every module of minijax, by dotted name below ``minijax`` ("" for the package)."""
    names = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(PACKAGE).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        names[".".join(parts)] = path
    return names


MODULES = module_names()


def layer_of(module: str) -> int:
    """The layer index of ``module`` (its longest listed prefix decides)."""
    best, best_len = None, -1
    for index, names in enumerate(LAYERS.values()):
        for name in names:
            covers = module == name or name == "" or module.startswith(name + ".")
            if covers and len(name) > best_len:
                best, best_len = index, len(name)
    if best is None:
        raise KeyError(f"minijax.{module} is in no layer: add it to booktools.layers.LAYERS")
    return best


def _resolve(name: str) -> str | None:
    """The minijax module an import names (``minijax.lax.add`` is ``lax``'s)."""
    if name != "minijax" and not name.startswith("minijax."):
        return None
    name = name.removeprefix("minijax").removeprefix(".")
    while name not in MODULES:
        if not name:
            return None
        name = name.rpartition(".")[0]
    return name


def imports_of(module: str) -> list[tuple[str, int]]:
    """Every minijax module ``module`` imports, with the line, local imports included."""
    path = MODULES[module]
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = ["minijax", *package.split(".")] if package else ["minijax"]
                parts = parts[:len(parts) - node.level + 1]
                base = ".".join(parts + ([base] if base else []))
            names = [f"{base}.{alias.name}" for alias in node.names]
        else:
            continue
        for name in names:
            target = _resolve(name)
            if target is not None and target != module:
                found.append((target, node.lineno))
    return found


def lines_per_layer() -> dict[str, int]:
    """Lines of source (docstrings and comments included) in each layer."""
    counts = dict.fromkeys(LAYERS, 0)
    names = list(LAYERS)
    for module, path in MODULES.items():
        counts[names[layer_of(module)]] += len(path.read_text(encoding="utf-8").splitlines())
    return counts


def draw_layers(ax: plt.Axes | None = None) -> plt.Axes:
    """The layers as a stack, lowest at the bottom: name, purpose and size of each."""
    if ax is None:
        _, ax = plt.subplots(figsize=(9, 5))
    counts = lines_per_layer()
    names = [n for n in LAYERS if n != "package"]
    widest = max(counts[n] for n in names)
    for row, name in enumerate(names):
        width = counts[name] / widest
        ax.barh(row, width, color=plt.cm.Blues(0.3 + 0.6 * row / len(names)),
                edgecolor="black")
        label = f"{name} ({counts[name]:,} lines)"
        ax.text(0.01, row + 0.12, label, va="center", fontsize=10, weight="bold")
        ax.text(0.01, row - 0.2, textwrap.shorten(PURPOSE[name], 70), va="center", fontsize=8)
    ax.set_yticks([])
    ax.set_xticks([])
    ax.set_xlim(0, 1.02)
    ax.set_title("minijax's layers: each imports only the ones below it")
    for side in ("top", "right", "left"):
        ax.spines[side].set_visible(False)
    return ax
