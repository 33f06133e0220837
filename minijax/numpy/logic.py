"""Comparing whole arrays: ``isclose``, ``allclose``, ``array_equal`` -- and shape queries.

``allclose`` and ``array_equal`` return 0-d boolean *arrays* in JAX, not Python bools:
under ``jit`` they are traced like any other computation.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import numpy as np

from minijax import dtypes, lax
from minijax.array import Array
from minijax.compiler.jit import jit
from minijax.core import Tracer
from minijax.numpy import ufuncs
from minijax.numpy.creation import asarray
from minijax.numpy.promotion import promote_args, promote_args_inexact


@partial(jit, static_argnames=("equal_nan",))
def isclose(a: Any, b: Any, rtol: float = 1e-05, atol: float = 1e-08,
            equal_nan: bool = False) -> Any:
    """|a - b| <= atol + rtol * |b|, elementwise; infinities must match exactly."""
    a, b = promote_args("isclose", a, b)
    if not dtypes.issubdtype(a.dtype, np.inexact):
        return lax.eq(a, b)
    a, b = promote_args_inexact("isclose", a, b)
    tolerance = ufuncs.add(atol, ufuncs.multiply(rtol, ufuncs.abs(b)))
    close = ufuncs.less_equal(ufuncs.abs(ufuncs.subtract(a, b)), tolerance)
    both_inf = ufuncs.logical_and(ufuncs.isinf(a), ufuncs.isinf(b))
    close = ufuncs.where(both_inf, ufuncs.equal(a, b), ufuncs.logical_and(
        close, ufuncs.logical_and(ufuncs.isfinite(a), ufuncs.isfinite(b))))
    if equal_nan:
        close = ufuncs.logical_or(close, ufuncs.logical_and(ufuncs.isnan(a), ufuncs.isnan(b)))
    return close


@partial(jit, static_argnames=("equal_nan",))
def allclose(a: Any, b: Any, rtol: float = 1e-05, atol: float = 1e-08,
             equal_nan: bool = False) -> Any:
    from minijax.numpy import all as all_

    return all_(isclose(a, b, rtol, atol, equal_nan))


def array_equal(a1: Any, a2: Any, equal_nan: bool = False) -> Any:
    """True (a 0-d array) if the shapes agree and every element does."""
    from minijax.numpy import all as all_

    a1, a2 = asarray(a1), asarray(a2)
    if a1.shape != a2.shape:
        return asarray(False)
    equal = ufuncs.equal(a1, a2)
    if equal_nan:
        equal = ufuncs.logical_or(equal, ufuncs.logical_and(ufuncs.isnan(a1), ufuncs.isnan(a2)))
    return all_(equal)


def isscalar(element: Any) -> bool:
    """Python and NumPy scalars, and 0-d arrays, are scalars to JAX."""
    if isinstance(element, (Array, Tracer)):
        return element.ndim == 0
    return np.isscalar(element) or (isinstance(element, np.ndarray) and element.ndim == 0)


def ndim(a: Any) -> int:
    return np.ndim(a) if not isinstance(a, (Array, Tracer)) else a.ndim


def shape(a: Any) -> tuple[int, ...]:
    return np.shape(a) if not isinstance(a, (Array, Tracer)) else a.shape


def size(a: Any, axis: int | None = None) -> int:
    dims = shape(a)
    return int(np.prod(dims, dtype=np.int64)) if axis is None else dims[axis]


def iscomplexobj(x: Any) -> bool:
    return dtypes.issubdtype(dtypes.dtype(x), np.complexfloating)


def isrealobj(x: Any) -> bool:
    return not iscomplexobj(x)


__all__ = ["allclose", "array_equal", "iscomplexobj", "isclose", "isrealobj", "isscalar",
           "ndim", "shape", "size"]
