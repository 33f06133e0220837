"""Making arrays: from Python and NumPy data, and from shapes (zeros, ones, full, arange).

Values from the host get JAX's dtypes: canonicalised (float64 becomes float32 unless x64
is on), and *weak* if they were bare Python scalars -- ``jnp.asarray(1.0)`` is a weak
float32, ``jnp.asarray([1.0])`` is not.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from minijax import dtypes, lax
from minijax.array import Array
from minijax.core import Tracer
from minijax.runtime import host_to_array, put_numpy


def _contains_arrays(obj: Any) -> bool:
    if isinstance(obj, (list, tuple)):
        return any(_contains_arrays(o) for o in obj)
    return isinstance(obj, (Array, Tracer))


def asarray(a: Any, dtype: Any = None, order: str | None = None, *, copy: bool | None = None
            ) -> Any:
    """``a`` as an array, without copying if it already is one of the right dtype."""
    return array(a, dtype=dtype, copy=False if copy is None else copy)


def array(object: Any, dtype: Any = None, copy: bool = True, order: str | None = "K",
          ndmin: int = 0) -> Any:
    """An array from a scalar, nested lists/tuples (which may hold arrays) or an array."""
    if dtype is not None:
        dtype = dtypes.check_and_canonicalize_user_dtype(dtype, "array")
    if isinstance(object, (Array, Tracer)):
        out = object
    elif _contains_arrays(object):
        out = _stack_nested(object)
    elif isinstance(object, (list, tuple)) and not object:
        out = put_numpy(np.zeros(0, dtype=dtypes.canonicalize_dtype(np.float64)))
    else:
        out = host_to_array(object if not isinstance(object, (list, tuple))
                            else np.asarray(object))
    if dtype is not None:
        out = lax.convert_element_type(out, dtype, False)
    for _ in range(ndmin - np.ndim(out)):
        out = lax.broadcast_in_dim(out, (1, *out.shape), range(1, out.ndim + 1))
    return out


def _stack_nested(obj: Any) -> Any:
    """Nested lists that hold arrays (or tracers): convert each, promote, and stack."""
    from minijax.numpy import stack

    if isinstance(obj, (list, tuple)):
        return stack([_stack_nested(o) for o in obj])
    return array(obj)


def zeros(shape: Any, dtype: Any = None, *, device: Any = None) -> Any:
    return full(shape, 0, dtype if dtype is not None else float)


def ones(shape: Any, dtype: Any = None, *, device: Any = None) -> Any:
    return full(shape, 1, dtype if dtype is not None else float)


def empty(shape: Any, dtype: Any = None, *, device: Any = None) -> Any:
    """JAX has no uninitialised memory: ``empty`` is ``zeros``."""
    return zeros(shape, dtype)


def full(shape: Any, fill_value: Any, dtype: Any = None, *, device: Any = None) -> Any:
    if dtype is not None:
        dtype = dtypes.check_and_canonicalize_user_dtype(dtype, "full")
    if np.ndim(fill_value) == 0:
        return lax.full(shape, fill_value, dtype)
    from minijax.numpy.promotion import broadcast_to

    return broadcast_to(asarray(fill_value, dtype=dtype), shape)


def _like(fill: Any) -> Any:
    def like(a: Any, dtype: Any = None, shape: Any = None, *, device: Any = None) -> Any:
        a = asarray(a)
        if dtype is not None:
            dtype = dtypes.check_and_canonicalize_user_dtype(dtype, "full_like")
        return lax.full_like(a, fill, dtype, shape)

    return like


zeros_like = _like(0)
ones_like = _like(1)
empty_like = zeros_like


def full_like(a: Any, fill_value: Any, dtype: Any = None, shape: Any = None, *,
              device: Any = None) -> Any:
    a = asarray(a)
    if dtype is not None:
        dtype = dtypes.check_and_canonicalize_user_dtype(dtype, "full_like")
    return lax.full_like(a, fill_value, dtype, shape)
