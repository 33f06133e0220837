"""Sorting in ``jnp``: ``sort``, ``argsort``, ``lexsort`` and ``searchsorted``.

All of them are ``lax.sort``: ``argsort`` sorts the values together with an ``iota``
(0, 1, 2, ... along the axis) and returns the permuted iota; ``lexsort`` does the same
with several keys. Sorting is stable by default, NaNs go last, and ``descending=True``
reverses the array *before and after* an ascending sort, so that equal elements still
keep their original order.

``unique`` is in ``setops.py``: the size of its result depends on the values, which a
traced program cannot know (it takes a static ``size=`` argument under ``jit``).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import Any

import numpy as np

from minijax import dtypes, lax
from minijax.compiler.jit import jit
from minijax.lax.sorting import canonicalize_axis
from minijax.numpy.creation import asarray
from minijax.numpy.promotion import check_arraylike, promote_dtypes
from minijax.numpy.ufuncs import isnan

__all__ = ["argsort", "lexsort", "searchsorted", "sort"]


def _check_unsupported(name: str, kind: Any, order: Any) -> None:
    if kind is not None:
        raise TypeError(f"'kind' argument to {name} is not supported. Use stable=True or "
                        "stable=False to specify sort stability.")
    if order is not None:
        raise TypeError(f"'order' argument to {name} is not supported.")


def _along_axis(name: str, a: Any, axis: int | None) -> tuple[Any, int]:
    """The array (flattened if ``axis`` is None) and the axis to sort along."""
    check_arraylike(name, a)
    a = asarray(a)
    if axis is None:
        return lax.reshape(a, (a.size,)), 0
    return a, canonicalize_axis(int(axis), a.ndim)


@partial(jit, static_argnames=("axis", "kind", "order", "stable", "descending"))
def sort(a: Any, axis: int | None = -1, *, kind: Any = None, order: Any = None,
         stable: bool = True, descending: bool = False) -> Any:
    """A sorted copy of ``a`` along ``axis`` (flattened if None); NaNs last."""
    _check_unsupported("sort", kind, order)
    a, axis = _along_axis("sort", a, axis)
    result = lax.sort(a, dimension=axis, is_stable=stable)
    return lax.rev(result, (axis,)) if descending else result


@partial(jit, static_argnames=("axis", "kind", "order", "stable", "descending", "dtype"))
def argsort(a: Any, axis: int | None = -1, *, kind: Any = None, order: Any = None,
            stable: bool = True, descending: bool = False, dtype: Any = None) -> Any:
    """The indices that would sort ``a`` along ``axis``: sort ``a`` with an iota."""
    _check_unsupported("argsort", kind, order)
    a, axis = _along_axis("argsort", a, axis)
    index_dtype = dtypes.canonicalize_dtype(np.int64 if dtype is None else dtype)
    indices = lax.broadcasted_iota(index_dtype, a.shape, axis)
    if descending:
        a, indices = lax.rev(a, (axis,)), lax.rev(indices, (axis,))
    _, perm = lax.sort((a, indices), dimension=axis, is_stable=stable, num_keys=1)
    return lax.rev(perm, (axis,)) if descending else perm


@partial(jit, static_argnames=("axis",))
def lexsort(keys: Sequence[Any], axis: int = -1) -> Any:
    """Indices that sort by several keys: the *last* key is the primary one."""
    keys = list(keys)
    if not keys:
        raise TypeError("need sequence of keys with len > 0 in lexsort")
    check_arraylike("lexsort", *keys)
    keys = [asarray(k) for k in keys]
    if any(k.shape != keys[0].shape for k in keys):
        raise ValueError("all keys need to be the same shape")
    axis = canonicalize_axis(int(axis), keys[0].ndim)
    indices = lax.broadcasted_iota(dtypes.canonicalize_dtype(np.int64), keys[0].shape, axis)
    outs = lax.sort((*keys[::-1], indices), dimension=axis, num_keys=len(keys))
    return outs[-1]


def _less(x: Any, y: Any) -> Any:
    """``x < y`` in the sorting order, where NaN is larger than everything."""
    less = lax.lt(x, y)
    if x.dtype.kind not in "fV":
        return less
    return lax.bitwise_or(less, lax.bitwise_and(lax.bitwise_not(isnan(x)), isnan(y)))


@partial(jit, static_argnames=("side", "method"))
def searchsorted(a: Any, v: Any, side: str = "left", sorter: Any = None, *,
                 method: str = "scan") -> Any:
    """Where to insert ``v`` into the sorted 1-D ``a`` to keep it sorted: the number of
    elements of ``a`` that are less than (``side='left'``) or at most (``'right'``) each
    ``v``. Counting compares every pair, which is simple and fine for modest sizes."""
    if side not in ("left", "right"):
        raise ValueError(f"invalid argument side={side!r}, expected 'left' or 'right'")
    if sorter is not None:
        raise NotImplementedError("minijax's searchsorted has no sorter argument")
    check_arraylike("searchsorted", a, v)
    a, v = promote_dtypes(asarray(a), asarray(v))
    if a.ndim != 1:
        raise ValueError("a should be 1-dimensional")
    grid = v.shape + a.shape
    a_grid = lax.broadcast_in_dim(a, grid, (v.ndim,))
    v_grid = lax.broadcast_in_dim(v, grid, tuple(range(v.ndim)))
    below = _less(a_grid, v_grid) if side == "left" else lax.bitwise_not(_less(v_grid, a_grid))
    counts = lax.convert_element_type(below, np.int32)
    return lax.reduce_sum(counts, (v.ndim,))
