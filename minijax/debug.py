"""``minijax.debug.print``: print values when the program *runs*, not when it is traced.

Python's ``print`` inside a jitted function runs once, while tracing, and shows tracers.
``debug.print`` instead records an equation, ``debug_print[fmt=...] x``, whose job is a
side effect: each time the compiled program runs, it formats the actual values with
``fmt.format(*args, **kwargs)`` and prints them. Eagerly it prints at once.

An equation with an effect must never be dropped as dead code (it has no results) and
must happen in order; a jitted call whose program prints waits for its device before
returning, so that the output appears where the call is.
"""

from __future__ import annotations

import builtins
import string
from collections.abc import Sequence
from typing import Any

import numpy as np

from minijax import runtime
from minijax.array import Array
from minijax.compiler import lowering
from minijax.compiler.stablehlo_ir import Typed
from minijax.core import Primitive, ShapedArray
from minijax.interpreters import ad, batching
from minijax.jaxpr import effectful_primitives
from minijax.lax.base import operand
from minijax.lax.slicing import index_in_dim
from minijax.numpy.promotion import is_arraylike
from minijax.tree_util import PyTreeDef, tree_flatten

__all__ = ["print"]


def _format(values: Sequence[Any], *, fmt: str, in_tree: PyTreeDef,
            static_args: tuple[tuple[int, Any], ...], np_printoptions: tuple) -> str:
    """The printed text: the arguments rebuilt around the values (arrays, of which a 0-d
    one formats as its Python number), formatted with ``fmt`` under the NumPy print
    options there were when ``debug.print`` was called."""
    values_iter = iter(values)
    static = dict(static_args)
    leaves = [static[i] if i in static else next(values_iter)
              for i in range(in_tree.num_leaves)]
    args, kwargs = in_tree.unflatten(leaves)
    with np.printoptions(**dict(np_printoptions)):
        return string.Formatter().format(fmt, *args, **kwargs)


def _print_eager(*values: Array, **params: Any) -> list:
    """Eagerly the values are Arrays: wait for them and print now, in program order."""
    builtins.print(_format(values, **_format_params(params)))
    return []


def _print_impl(*values: np.ndarray, **params: Any) -> list:
    """In a compiled program the values are NumPy arrays (shown as Arrays)."""
    device = runtime.default_device()
    arrays = [Array(ShapedArray(v.shape, v.dtype), v, device) for v in map(np.asarray, values)]
    builtins.print(_format(arrays, **_format_params(params)))
    return []


def _format_params(params: dict[str, Any]) -> dict[str, Any]:
    return {k: params[k] for k in ("fmt", "in_tree", "static_args", "np_printoptions")}


debug_print_p = Primitive("debug_print", multiple_results=True)
debug_print_p.def_impl(_print_impl)
debug_print_p.def_eager_rule(_print_eager)
debug_print_p.def_abstract_eval(lambda *avals, **params: [])
effectful_primitives.add(debug_print_p)


def _debug_print_jvp(primals: list, tangents: list, **params: Any) -> tuple[list, list]:
    """A print shows the primal values, as JAX's does; it has no results, so no tangents."""
    return debug_print_p.bind(*primals, **params), []


ad.jvp_rules[debug_print_p] = _debug_print_jvp


def print(fmt: str, *args: Any, ordered: bool = False, **kwargs: Any) -> None:  # noqa: A001
    """Print ``fmt.format(*args, **kwargs)`` with the values the arguments have at run time.

    Arguments may be pytrees of arrays; other values (strings, say) are passed through.
    A bad format (``"{} {}"`` with one argument) raises here, at the call.
    """
    leaves, in_tree = tree_flatten((args, kwargs))
    static_args = tuple((i, x) for i, x in enumerate(leaves) if not is_arraylike(x))
    operands = [operand(x) for x in leaves if is_arraylike(x)]
    _check_format(fmt, in_tree, leaves, static_args)
    has_placeholders = any(field is not None for _, field, _, _ in string.Formatter().parse(fmt))
    debug_print_p.bind(
        *operands, fmt=fmt, has_placeholders=has_placeholders, in_tree=in_tree,
        logging_record=None, np_printoptions=tuple(np.get_printoptions().items()),
        ordered=ordered, partitioned=False, static_args=static_args)


def _check_format(fmt: str, in_tree: PyTreeDef, leaves: list[Any], static_args: tuple
                  ) -> None:
    """Format once with stand-in zeros, so that a missing argument is reported now."""
    static = dict(static_args)
    stand_ins = [static[i] if i in static else np.zeros(np.shape(x), _dtype(x))
                 for i, x in enumerate(leaves)]
    args, kwargs = in_tree.unflatten(stand_ins)
    string.Formatter().format(fmt, *args, **kwargs)


def _dtype(x: Any) -> Any:
    return x.dtype if hasattr(x, "dtype") else type(x)


def _debug_print_lowering(ctx: lowering.RuleContext, *args: Any, **params: Any) -> list[Any]:
    """A side-effecting custom call to a Python function that prints the values."""
    lowering.host_callbacks.append(lambda *values: debug_print_p.impl(*values, **params))
    attributes = {"has_side_effect": True,
                  "mhlo.backend_config": {"index": Typed(len(lowering.host_callbacks) - 1, "ui64")}}
    ctx.b.op("stablehlo.custom_call", args, [], {"call_target_name": "minijax_python_callback",
                                                 "attributes": attributes})
    return []


lowering.lowering_rules[debug_print_p] = _debug_print_lowering


def _print_batching(axis_data: batching.AxisData, vals: list, dims: list, **params: Any
                    ) -> tuple[list, list]:
    """vmap: one print per example, in order, as JAX does (the values of each example
    are sliced out of the batches)."""
    for i in range(axis_data.size):
        debug_print_p.bind(*[x if d is None else index_in_dim(x, i, d, keepdims=False)
                             for x, d in zip(vals, dims)], **params)
    return [], []


batching.batching_rules[debug_print_p] = _print_batching  # vmap: batching rules
