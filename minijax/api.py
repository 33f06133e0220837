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

from minijax.lax.control_flow.common import DebugInfo, argument_names, trace_function
from minijax.shape_dtype import ShapeDtypeStruct
from minijax.shape_dtype import abstractify as _abstractify
from minijax.tree_util import tree_map


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
