"""The transformations users call: for now ``make_jaxpr``.

``make_jaxpr(f)(*args)`` shows the jaxpr that tracing ``f`` produces: it runs ``f`` once
on tracers that stand for the arguments' *types* (shape, dtype, weak type), never their
values, and prints what was recorded. Arguments may be pytrees; their leaves may be
arrays, Python or NumPy scalars and arrays, or :class:`ShapeDtypeStruct` descriptions.

The tracing is ``jit``'s, cache included, as in JAX: asking again for the jaxpr of the
same function at the same argument types (or calling ``jit(f)`` on them afterwards) does
not run ``f`` again.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from minijax.compiler.jit import jit
from minijax.interpreters import ad, transpose
from minijax.jaxpr import ClosedJaxpr, Jaxpr
from minijax.runtime import _copy_p as device_put_p
from minijax.shape_dtype import ShapeDtypeStruct


def make_jaxpr(fun: Callable, static_argnums: int | Sequence[int] = (),
               return_shape: bool = False) -> Callable[..., Any]:
    """A function that traces ``fun`` on example arguments and returns its ``ClosedJaxpr``
    (with ``return_shape=True``, also the output's types as ``ShapeDtypeStruct`` s).

    Arguments at ``static_argnums`` are not traced: ``fun`` receives them as they are.
    The trace is the one ``jit(fun)`` makes (and caches) for these arguments.
    """
    if not callable(fun):
        raise TypeError("the first argument must be callable")
    jitted = jit(fun, static_argnums=static_argnums)

    @functools.wraps(fun)
    def make_jaxpr_f(*args: Any, **kwargs: Any) -> Any:
        entry, _, captured_tracers = jitted._entry(args, kwargs)
        closed = _as_constvars(entry.params["jaxpr"], captured_tracers)
        if not return_shape:
            return closed
        shapes = [ShapeDtypeStruct(a.shape, a.dtype, weak_type=a.weak_type)
                  for a in closed.out_avals]
        return closed, entry.out_tree.unflatten(shapes)

    return make_jaxpr_f


def _as_constvars(closed: ClosedJaxpr, tracers: Sequence[Any]) -> ClosedJaxpr:
    """``jit`` passes the tracers of an enclosing trace that ``fun`` captured as leading
    inputs; ``make_jaxpr`` shows them as what they are, captured constants."""
    if not tracers:
        return closed
    j, n = closed.jaxpr, len(tracers)
    jaxpr = Jaxpr([*j.invars[:n], *j.constvars], j.invars[n:], j.outvars, j.eqns)
    return ClosedJaxpr(jaxpr, [*tracers, *closed.consts])


def device_get(x: Any) -> Any:
    """The pytree ``x`` with every array fetched to the host as a NumPy array (other
    leaves, such as Python numbers, are left as they are)."""
    from minijax.array import Array
    from minijax.tree_util import tree_map

    return tree_map(lambda leaf: np.asarray(leaf) if isinstance(leaf, Array) else leaf, x)


def effects_barrier() -> None:
    """Wait until everything queued so far (computations and their effects, such as
    ``debug.print``) has run on every device."""
    from minijax.runtime import devices

    for device in devices():
        device.synchronize()


# ``device_put``'s copy to a device is a primitive of the runtime, which sits in the core
# layer, below the transformations, and so cannot register its rules itself: this module,
# the lowest above the transformations that deals with where arrays live (``device_get``,
# ``effects_barrier``), registers them. The copy is the identity on values, so it is
# linear, and its transpose hands the cotangent back unchanged.
ad.deflinear(device_put_p)
transpose.deftranspose(device_put_p, lambda ct, x: [ct])


__all__ = ["ShapeDtypeStruct", "device_get", "effects_barrier", "make_jaxpr"]
