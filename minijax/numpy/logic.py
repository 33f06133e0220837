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
from minijax.numpy.promotion import promote_args, to_inexact_dtype


@partial(jit, static_argnames=("equal_nan",))
def isclose(a: Any, b: Any, rtol: Any = 1e-05, atol: Any = 1e-08,
            equal_nan: bool = False) -> Any:
    """``a == b``, or |a - b| <= atol + rtol * |b| where ``b`` is finite, elementwise.

    Integers are compared as floats. NaNs are close to nothing, unless ``equal_nan``.
    """
    a, b = promote_args("isclose", a, b)
    if not dtypes.issubdtype(a.dtype, np.inexact):
        a, b = (lax.convert_element_type(x, to_inexact_dtype(a.dtype)) for x in (a, b))
    real_dtype = dtypes.finfo(a.dtype).dtype  # the tolerances of complex numbers are real
    rtol, atol = (lax.convert_element_type(t, real_dtype) for t in (rtol, atol))
    both_nan = lax.bitwise_and(ufuncs.isnan(a), ufuncs.isnan(b))
    finite_b = ufuncs.isfinite(b)
    within = lax.le(lax.abs(lax.sub(a, b)), lax.add(atol, lax.mul(rtol, lax.abs(b))))
    close = lax.bitwise_or(lax.eq(a, b), lax.bitwise_and(finite_b, within))
    return lax.bitwise_or(close, both_nan) if equal_nan else close


@partial(jit, static_argnames=("equal_nan",))
def allclose(a: Any, b: Any, rtol: float = 1e-05, atol: float = 1e-08,
             equal_nan: bool = False) -> Any:
    from minijax.numpy.reductions import all as all_

    return all_(isclose(a, b, rtol, atol, equal_nan))


def array_equal(a1: Any, a2: Any, equal_nan: bool = False) -> Any:
    """True (a 0-d array) if the shapes agree and every element does."""
    from minijax.numpy.reductions import all as all_

    a1, a2 = asarray(a1), asarray(a2)
    if a1.shape != a2.shape:
        return asarray(False)
    equal = ufuncs.equal(a1, a2)
    if equal_nan:
        equal = ufuncs.logical_or(equal, ufuncs.logical_and(ufuncs.isnan(a1), ufuncs.isnan(a2)))
    return all_(equal)


def array_equiv(a1: Any, a2: Any) -> Any:
    """True (a 0-d array) if the arrays broadcast together and are equal everywhere."""
    from minijax.numpy.reductions import all as all_

    a1, a2 = asarray(a1), asarray(a2)
    try:
        np.broadcast_shapes(a1.shape, a2.shape)
    except ValueError:
        return asarray(False)
    return all_(ufuncs.equal(a1, a2))


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


__all__ = ["allclose", "array_equal", "array_equiv", "iscomplexobj", "isclose", "isrealobj",
           "isscalar", "ndim", "shape", "size"]
