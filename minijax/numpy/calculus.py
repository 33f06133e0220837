"""Discrete calculus: differences (``diff``, ``ediff1d``, ``gradient``), running sums and
products with the Array API's names (``cumulative_sum``, ``cumulative_prod``), and the
trapezoidal rule (``trapezoid``).

A difference is two overlapping slices subtracted (``a[1:] - a[:-1]``); a running sum is
``lax.cumsum``. Both are static-shape operations, so all of these trace and differentiate
like any other ``jnp`` function.
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from minijax import lax
from minijax.numpy.creation import asarray
from minijax.numpy.promotion import check_arraylike, promote_dtypes_inexact

__all__ = ["cumulative_prod", "cumulative_sum", "diff", "ediff1d", "gradient", "trapezoid"]


def _axis(axis: int, ndim: int) -> int:
    return lax.canonicalize_axes((operator.index(axis),), ndim)[0]


def _step_difference(a: Any, axis: int) -> Any:
    """``a[1:] - a[:-1]`` along ``axis`` (for booleans: where they differ)."""
    n = a.shape[axis]
    later = lax.slice_in_dim(a, 1, n, axis=axis)
    earlier = lax.slice_in_dim(a, 0, max(n - 1, 0), axis=axis)
    return lax.ne(later, earlier) if a.dtype == np.bool_ else lax.sub(later, earlier)


def diff(a: Any, n: int = 1, axis: int = -1, prepend: Any = None, append: Any = None) -> Any:
    """The ``n``-th discrete difference along ``axis``; ``prepend``/``append`` are joined
    to ``a`` first (a scalar is broadcast to one slice)."""
    from minijax.numpy.manipulation import concatenate
    from minijax.numpy.promotion import broadcast_to

    check_arraylike("diff", a)
    a = asarray(a)
    n = operator.index(n)
    if n < 0:
        raise ValueError(f"order must be non-negative but got {n}")
    if a.ndim == 0:
        raise ValueError(f"diff requires input that is at least one dimensional; got {a}")
    axis = _axis(axis, a.ndim)
    parts = []
    for extra in (prepend, a, append):
        if extra is None:
            continue
        extra = asarray(extra)
        if extra.ndim == 0:
            shape = list(a.shape)
            shape[axis] = 1
            extra = broadcast_to(extra, tuple(shape))
        parts.append(extra)
    if len(parts) > 1:
        a = concatenate(parts, axis=axis)
    for _ in range(n):
        a = _step_difference(a, axis)
    return a


def ediff1d(ary: Any, to_end: Any = None, to_begin: Any = None) -> Any:
    """The differences of ``ary`` flattened, with ``to_begin``/``to_end`` around them."""
    from minijax.numpy.manipulation import concatenate, ravel

    check_arraylike("ediff1d", ary, *(x for x in (to_begin, to_end) if x is not None))
    result = _step_difference(ravel(ary), 0)
    parts = [ravel(asarray(x, dtype=result.dtype)) for x in (to_begin,) if x is not None]
    parts.append(result)
    parts += [ravel(asarray(x, dtype=result.dtype)) for x in (to_end,) if x is not None]
    return concatenate(parts) if len(parts) > 1 else result


def _cumulative(name: str, lax_fn: Any, identity: int) -> Any:
    def accumulate(x: Any, /, *, axis: int | None = None, dtype: Any = None,
                   include_initial: bool = False) -> Any:
        from minijax.numpy.reductions import cumprod, cumsum

        check_arraylike(name, x)
        x = asarray(x)
        if axis is None:
            if x.ndim > 1:
                raise ValueError(f"The input array has rank {x.ndim}, however axis was not "
                                 "set to an explicit value. The axis argument is only "
                                 "optional for one-dimensional arrays.")
            axis = 0
        axis = _axis(axis, max(x.ndim, 1))
        out = (cumsum if lax_fn is lax.cumsum else cumprod)(x, axis=axis, dtype=dtype)
        if not include_initial:
            return out
        shape = list(out.shape)
        shape[axis] = 1
        return lax.concatenate([lax.full(shape, identity, out.dtype), out], axis)

    accumulate.__name__ = accumulate.__qualname__ = name
    accumulate.__doc__ = (f"The Array API's running {name[11:]} along ``axis`` (required for "
                          "arrays of rank > 1); ``include_initial`` starts with the identity.")
    return accumulate


cumulative_sum = _cumulative("cumulative_sum", lax.cumsum, 0)
cumulative_prod = _cumulative("cumulative_prod", lax.cumprod, 1)


def trapezoid(y: Any, x: Any = None, dx: Any = 1.0, axis: int = -1) -> Any:
    """∫ y along ``axis`` by the trapezoidal rule: Σ Δx[i] (y[i] + y[i+1]) / 2, where the
    widths Δx are ``dx``, or the differences of the sample points ``x``."""
    from minijax.numpy.manipulation import reshape
    from minijax.numpy.reductions import sum
    from minijax.numpy.ufuncs import multiply

    check_arraylike("trapezoid", y, *(() if x is None else (x,)))
    if x is None:
        (y,) = promote_dtypes_inexact(asarray(y))
        widths = lax.convert_element_type(dx, y.dtype)
    else:
        y, x = promote_dtypes_inexact(asarray(y), asarray(x))
        widths = diff(x, axis=axis if x.ndim > 1 else -1)
    axis = _axis(axis, y.ndim)
    if np.ndim(widths) == 1:  # widths along ``axis`` only
        widths = reshape(widths, [-1 if d == axis else 1 for d in range(y.ndim)])
    n = y.shape[axis]
    pair_sums = lax.add(lax.slice_in_dim(y, 1, n, axis=axis),
                        lax.slice_in_dim(y, 0, max(n - 1, 0), axis=axis))
    half = lax.convert_element_type(0.5, y.dtype)
    return lax.mul(half, sum(multiply(widths, pair_sums), axis=axis))


def gradient(f: Any, *varargs: Any, axis: Any = None, edge_order: int | None = None) -> Any:
    """Central differences inside, one-sided at the edges (spacing 1, or the scalar
    spacings given), along each axis; a list of arrays unless there is one axis."""
    from minijax.numpy.manipulation import concatenate

    if edge_order is not None and edge_order != 1:
        raise NotImplementedError("The 'edge_order' argument to jnp.gradient is not supported.")
    check_arraylike("gradient", f)
    (f,) = promote_dtypes_inexact(asarray(f))
    axes = tuple(range(f.ndim)) if axis is None else \
        tuple(_axis(a, f.ndim) for a in ((axis,) if np.ndim(axis) == 0 else axis))
    spacings = varargs if len(varargs) == len(axes) else varargs * len(axes) if varargs \
        else (1.0,) * len(axes)
    results = []
    for ax, h in zip(axes, spacings):
        if np.ndim(h) != 0:
            raise NotImplementedError("jnp.gradient with coordinate arrays is not supported")
        n = f.shape[ax]
        if n < 2:
            raise ValueError("Shape of array too small to calculate a numerical gradient, "
                             "at least (edge_order + 1) elements are required.")
        h = lax.convert_element_type(h, f.dtype)
        piece = lambda lo, hi, ax=ax: lax.slice_in_dim(f, lo, hi, axis=ax)
        first = lax.sub(piece(1, 2), piece(0, 1))
        last = lax.sub(piece(n - 1, n), piece(n - 2, n - 1))
        middle = lax.mul(lax.sub(piece(2, n), piece(0, n - 2)),
                         lax.convert_element_type(0.5, f.dtype))
        results.append(lax.div(concatenate([first, middle, last], axis=ax), h))
    return results[0] if len(results) == 1 else results

