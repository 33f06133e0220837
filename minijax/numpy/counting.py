"""Counting: ``bincount``, how many times each small non-negative integer occurs.

A count is a *scatter-add*: start from zeros and add 1 (or the element's weight) at the
position each value names. Its catch under ``jit`` is the output's length, which depends
on the largest value: a shape must be known when the program is traced, so a traced
input needs a static ``length=``, as in JAX.
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from minijax import dtypes, errors, lax
from minijax.core import Tracer
from minijax.numpy.creation import asarray, zeros
from minijax.numpy.promotion import check_arraylike
from minijax.numpy.ufuncs import clip

__all__ = ["bincount"]


def _known(value: Any, arg_name: str, advice: str = "") -> Any:
    """``value`` as NumPy, or JAX's ConcretizationTypeError if it is only traced."""
    if isinstance(value, Tracer) and value.to_concrete_value() is None:
        problem = f"The error occurred because of argument '{arg_name}' of jnp.bincount."
        raise errors.ConcretizationTypeError(
            value.aval.str_long(), f"{problem} {advice}" if advice else problem,
            value._context())
    return np.asarray(value)


def bincount(x: Any, weights: Any = None, minlength: int = 0, *,
             length: int | None = None) -> Any:
    """``out[i]`` = how many elements of ``x`` equal ``i`` (or the sum of their
    ``weights``), for ``i < length``. Negative values count as 0; values from ``length``
    on are dropped. ``length`` defaults to ``max(minlength, x.max() + 1)``, which needs
    a concrete ``x``."""
    check_arraylike("bincount", x)
    x = asarray(x)
    if not dtypes.issubdtype(x.dtype, np.integer) and x.dtype != np.bool_:
        raise TypeError(f"x argument to bincount must have an integer type; got {x.dtype.name}")
    if x.ndim != 1:
        raise ValueError("only 1-dimensional input supported.")
    if x.dtype == np.bool_:
        x = lax.convert_element_type(x, dtypes.canonicalize_dtype(np.int64))  # False, True: 0, 1
    minlength = operator.index(_known(minlength, "minlength"))
    if length is None:
        values = _known(x, "x", "To avoid this error, pass a static `length` argument.")
        length = max(minlength, int(values.max()) + 1 if values.size else 0)
    length = operator.index(length)
    if weights is None:
        counts, updates = zeros(length, int), 1
    else:
        updates = asarray(weights)
        if updates.shape != x.shape:
            raise ValueError(
                "type of weights must match type of x. Got "
                f"typeof(x)={x.aval.str_short()}({{}}) and "
                f"typeof(weights)={updates.aval.str_short()}({{}})")
        counts = zeros(length, updates.dtype)
    return counts.at[clip(x, 0)].add(updates, mode="drop")
