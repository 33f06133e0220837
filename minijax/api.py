"""The transformations users call: for now ``make_jaxpr``.

``make_jaxpr(f)(*args)`` shows the jaxpr that tracing ``f`` produces: it runs ``f`` once
on tracers that stand for the arguments' *types* (shape, dtype, weak type), never their
values, and prints what was recorded. Arguments may be pytrees; their leaves may be
arrays, Python or NumPy scalars and arrays, or :class:`ShapeDtypeStruct` descriptions.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from minijax import dtypes
from minijax.array import Array
from minijax.core import ShapedArray
from minijax.lax.control_flow.common import DebugInfo, argument_names, trace_function
from minijax.tree_util import tree_map


class ShapeDtypeStruct:
    """The type of an array without its values: a ``shape`` and a ``dtype`` (and weak type).

    Pass one to ``make_jaxpr`` instead of an array to trace without making data.
    """

    __slots__ = ("shape", "dtype", "weak_type")

    def __init__(self, shape: Sequence[int], dtype: Any, *, weak_type: bool = False) -> None:
        if dtype is None:
            raise ValueError("ShapeDtypeStruct: dtype must be specified.")
        self.shape = tuple(int(d) for d in shape)
        self.dtype = np.dtype(dtype)
        self.weak_type = bool(weak_type)

    ndim = property(lambda self: len(self.shape))
    size = property(lambda self: int(np.prod(self.shape, dtype=np.int64)))
    sharding = None

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, ShapeDtypeStruct) and self.shape == other.shape
                and self.dtype == other.dtype and self.weak_type == other.weak_type)

    def __hash__(self) -> int:
        return hash((self.shape, self.dtype, self.weak_type))

    def __repr__(self) -> str:
        weak = ", weak_type=True" if self.weak_type else ""
        return f"ShapeDtypeStruct(shape={self.shape}, dtype={self.dtype.name}{weak})"


def _abstractify(x: Any, fun: Callable, name: str) -> ShapedArray:
    """The type a traced argument gets: an array's own; a Python scalar's is weak; NumPy
    values and ``ShapeDtypeStruct`` s get their dtype, canonicalised (float64 -> float32)."""
    if isinstance(x, Array):
        return x.aval
    try:
        dtype = dtypes.canonicalize_dtype(dtypes.dtype(x))
    except (TypeError, ValueError):
        raise TypeError(
            f"Error interpreting argument to {fun} as an abstract array. The problematic "
            f"value is of type {type(x)} and was passed to the function at path {name}.\n"
            "This typically means that a jit-wrapped function was called with a non-array "
            "argument, and this argument was not marked as static using the static_argnums "
            "or static_argnames parameters of jax.jit.") from None
    return ShapedArray(np.shape(x), dtype, dtypes.is_weakly_typed(x))


def make_jaxpr(fun: Callable, static_argnums: int | Sequence[int] = (),
               return_shape: bool = False) -> Callable[..., Any]:
    """A function that traces ``fun`` on example arguments and returns its ``ClosedJaxpr``
    (with ``return_shape=True``, also the output's types as ``ShapeDtypeStruct`` s).

    Arguments at ``static_argnums`` are not traced: ``fun`` receives them as they are.
    """
    if isinstance(static_argnums, int):
        static_argnums = (static_argnums,)

    @functools.wraps(fun)
    def make_jaxpr_f(*args: Any, **kwargs: Any) -> Any:
        static = {i % len(args) for i in static_argnums if -len(args) <= i < len(args)}
        dynamic = [a for i, a in enumerate(args) if i not in static]

        def dynamic_fun(*dynamic_args: Any, **keyword_args: Any) -> Any:
            filled = iter(dynamic_args)
            full = [a if i in static else next(filled) for i, a in enumerate(args)]
            return fun(*full, **keyword_args)

        names = argument_names(fun, args, kwargs, static)
        leaf_names = iter(names)
        avals = tree_map(lambda x: _abstractify(x, fun, next(leaf_names, "")), (dynamic, kwargs))
        closed, out_tree = trace_function(dynamic_fun, tuple(avals[0]),
                                          DebugInfo("jit", fun, names), avals[1])
        if not return_shape:
            return closed
        shapes = [ShapeDtypeStruct(a.shape, a.dtype, weak_type=a.weak_type)
                  for a in closed.out_avals]
        return closed, out_tree.unflatten(shapes)

    return make_jaxpr_f


__all__ = ["ShapeDtypeStruct", "make_jaxpr"]
