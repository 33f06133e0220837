"""Where are the nonzero elements? ``nonzero``, ``argwhere``, ``flatnonzero``, ``compress``,
``extract`` (and the one-argument ``jnp.where``).

How many elements are nonzero depends on the *values*, and a traced program must know
every shape in advance. So each of these functions takes a static ``size=``: the result
has exactly that many entries, cut short or padded with ``fill_value``. Without it the
count must be concrete (eager code), and under ``jit`` JAX's ConcretizationTypeError says
so.

The positions themselves are found without sorting, in O(n): number the true elements
with a running sum (the k-th true element has rank k), scatter-add a 1 at each element's
rank, and a running sum of those marks gives, at slot k, how many elements have a rank
of at most k -- which is the flat position of the (k+1)-th true element.
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from minijax import dtypes, errors, lax
from minijax.core import Tracer
from minijax.numpy import ufuncs
from minijax.numpy.creation import asarray, zeros
from minijax.numpy.indexing import take
from minijax.numpy.promotion import check_arraylike

__all__ = ["argwhere", "compress", "extract", "flatnonzero", "nonzero", "where"]


def static_size(count: Any, problem: str) -> int:
    """A count computed from the values, as a Python int (JAX's ConcretizationTypeError,
    explaining ``problem``, if it is only known when the program runs)."""
    if isinstance(count, Tracer) and count.to_concrete_value() is None:
        raise errors.ConcretizationTypeError(count.aval.str_long(), problem, count._context())
    return int(np.asarray(count))


def truth(a: Any) -> Any:
    """``a != 0`` (booleans are their own truth values)."""
    return a if a.dtype == np.bool_ else lax.ne(a, lax.convert_element_type(0, a.dtype))


def true_positions(mask: Any, size: int) -> Any:
    """The flat positions of the first ``size`` true elements of ``mask`` (flattened by
    the running sum); ``mask.size`` in the slots beyond the last one."""
    from minijax.numpy.reductions import cumsum
    from minijax.numpy.ufuncs import clip

    ranks = cumsum(mask)
    # Ranks are never negative; JAX clips them at 0 all the same (the jaxprs show it).
    marks = zeros(size, ranks.dtype).at[clip(ranks, 0)].add(1, mode="drop")
    return cumsum(marks)


def nonzero(a: Any, *, size: int | None = None,
            fill_value: Any = None) -> tuple[Any, ...]:
    """One array of indices per dimension: where ``a`` is nonzero, in row-major order.

    With ``size``, exactly ``size`` entries per array; the slots past the last nonzero
    element hold ``fill_value`` (0 if None; a tuple gives one per dimension).
    """
    from minijax.numpy.reductions import sum
    from minijax.numpy.ufuncs import floor_divide, remainder, where

    check_arraylike("nonzero", a)
    a = asarray(a)
    if a.ndim == 0:
        raise ValueError("Calling nonzero on 0d arrays is not allowed. Use "
                         "jnp.atleast_1d(scalar).nonzero() instead.")
    mask = truth(a)
    if size is None:
        size = static_size(sum(mask), "The size argument of jnp.nonzero must be statically "
                           "specified to use jnp.nonzero within JAX transformations.")
    size = operator.index(size)
    if a.size == 0 or size == 0:
        return tuple(zeros(size, dtypes.canonicalize_dtype(np.int64)) for _ in a.shape)
    flat = true_positions(mask, size)
    strides = np.cumprod((1, *a.shape[:0:-1]))[::-1]  # NumPy ints: strongly typed, as in JAX
    indices = [remainder(floor_divide(flat, stride), n) for stride, n in zip(strides, a.shape)]
    if fill_value is None:
        return tuple(indices)
    fills = fill_value if isinstance(fill_value, tuple) else (fill_value,) * a.ndim
    if len(fills) != a.ndim:
        raise ValueError(f"nonzero: fill_value must be a scalar or a tuple of length "
                         f"{a.ndim}; got {fill_value}")
    past_end = lax.ge(lax.iota(flat.dtype, size), sum(mask))
    return tuple(where(past_end, fill, index) for fill, index in zip(fills, indices))


def where(condition: Any, x: Any = None, y: Any = None, /, *, size: int | None = None,
          fill_value: Any = None) -> Any:
    """``x`` where ``condition`` holds, else ``y`` (broadcast together, dtypes promoted).

    With ``condition`` alone, ``jnp.nonzero(condition, size=size, fill_value=fill_value)``:
    that form is why ``jnp.where`` is here, above ``nonzero`` and the selection itself
    (``ufuncs.where``, which this module's functions use too).
    """
    if x is None and y is None:
        return nonzero(condition, size=size, fill_value=fill_value)
    if x is None or y is None:
        raise ValueError("Either both or neither of the x and y arguments should be provided "
                         f"to jax.numpy.where, got {x} and {y}.")
    return ufuncs.where(condition, x, y)


def flatnonzero(a: Any, *, size: int | None = None, fill_value: Any = None) -> Any:
    """The positions of the nonzero elements of ``a`` flattened."""
    from minijax.numpy.manipulation import ravel

    return nonzero(ravel(a), size=size, fill_value=fill_value)[0]


def argwhere(a: Any, *, size: int | None = None, fill_value: Any = None) -> Any:
    """The indices of the nonzero elements, one row per element: shape ``(count, ndim)``."""
    from minijax.numpy.manipulation import atleast_1d, stack

    check_arraylike("argwhere", a)
    a = asarray(a)
    columns = nonzero(atleast_1d(a), size=size, fill_value=fill_value)
    result = stack(columns, axis=1)
    return result if a.ndim else result[:, :0]


def compress(condition: Any, a: Any, axis: int | None = None, *, size: int | None = None,
             fill_value: Any = 0, out: None = None) -> Any:
    """The slices of ``a`` along ``axis`` (of ``a`` flattened if None) where the 1-D
    ``condition`` is true; with ``size``, padded with ``fill_value``."""
    from minijax.numpy.manipulation import ravel

    check_arraylike("compress", condition, a)
    if out is not None:
        raise NotImplementedError("The 'out' argument to jnp.compress is not supported.")
    condition, a = asarray(condition), asarray(a)
    if condition.ndim != 1:
        raise ValueError("condition must be a 1D array")
    if axis is None:
        a, axis = ravel(a), 0
    axis = lax.canonicalize_axes((operator.index(axis),), a.ndim)[0]
    length = a.shape[axis]
    if condition.shape[0] > length:
        condition = condition[:length]
    if size is not None and not 0 < size <= length:
        raise ValueError("size must be positive and not greater than the size of the array "
                         f"axis; got size={size} for a.shape[axis]={length}")
    # A fill position past the end of the axis, which take(mode="fill") turns into fill_value.
    positions = nonzero(condition, size=size, fill_value=length)[0]
    return take(a, positions, axis=axis, mode="fill", fill_value=fill_value)


def extract(condition: Any, arr: Any, *, size: int | None = None, fill_value: Any = 0) -> Any:
    """The elements of ``arr`` where ``condition`` is true, both flattened."""
    from minijax.numpy.manipulation import ravel

    return compress(ravel(condition), ravel(arr), size=size, fill_value=fill_value)
