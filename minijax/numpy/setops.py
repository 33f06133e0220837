"""Sets of values: ``unique`` (and its Array API forms), ``isin``, ``union1d``,
``intersect1d``, ``setdiff1d`` and ``setxor1d``.

Everything starts from a *sorted* copy, where equal values sit next to each other: an
element begins a new value exactly when it differs from its left neighbour. Keeping those
first elements (``searching.nonzero`` finds where they are) gives the unique values;
the running count of them says which unique value each sorted element is (the inverse),
and the sort's permutation maps everything back to the input's positions.

As for ``nonzero``, the number of results depends on the values: give ``size=`` (the
result is cut or padded with ``fill_value``, by default the smallest value) to use these
functions under ``jit``.
"""

from __future__ import annotations

import operator
from typing import Any, NamedTuple

import numpy as np

from minijax import lax
from minijax.numpy.creation import asarray, zeros
from minijax.numpy.promotion import check_arraylike, promote_dtypes
from minijax.numpy.searching import nonzero, static_size

__all__ = ["intersect1d", "isin", "setdiff1d", "setxor1d", "union1d", "unique", "unique_all",
           "unique_counts", "unique_inverse", "unique_values"]


class UniqueAllResult(NamedTuple):
    values: Any
    indices: Any
    inverse_indices: Any
    counts: Any


class UniqueCountsResult(NamedTuple):
    values: Any
    counts: Any


class UniqueInverseResult(NamedTuple):
    values: Any
    inverse_indices: Any


_SIZE_PROBLEM = (
    "The error arose for the first argument of jnp.{name}(). To make jnp.{name}() compatible "
    "with JIT and other transforms, you can specify a concrete value for the size argument, "
    "which will determine the output size.")


def _differs(a: Any, b: Any, equal_nan: bool) -> Any:
    """``a != b`` elementwise, where (with ``equal_nan``) two NaNs count as equal."""
    from minijax.numpy.ufuncs import isnan, logical_and, logical_not, not_equal

    differs = not_equal(a, b)
    if equal_nan and a.dtype.kind in "fcV":
        differs = logical_and(differs, logical_not(logical_and(isnan(a), isnan(b))))
    return differs


def _group_starts(sorted_values: Any, equal_nan: bool = True) -> Any:
    """True where a sorted (1-D, or rows along axis 0) array starts a new value."""
    from minijax.numpy.reductions import any as any_

    n = sorted_values.shape[0]
    first = lax.full((1,), True, np.bool_)
    if n < 2:
        return lax.full((n,), True, np.bool_)
    differs = _differs(sorted_values[1:], sorted_values[:-1], equal_nan)
    if differs.ndim > 1:  # rows: a new row if any of its entries differ
        differs = any_(differs, axis=tuple(range(1, differs.ndim)))
    return lax.concatenate([first, differs], 0)


def _select(values: Any, starts: Any, size: int | None, fill_value: Any, name: str) -> Any:
    """``values[starts]``, as ``size`` entries if given (the rest ``fill_value``, by
    default the first selected value)."""
    from minijax.numpy.reductions import sum
    from minijax.numpy.ufuncs import where

    if size is None:
        size = static_size(sum(starts), _SIZE_PROBLEM.format(name=name))
    size = operator.index(size)
    if values.shape[0] == 0:  # nothing to select from: all padding
        if size and fill_value is None:
            raise ValueError(f"jnp.{name}: for zero-sized input with nonzero size argument, "
                             "fill_value must be specified")
        return lax.full((size, *values.shape[1:]), fill_value or 0, values.dtype)
    (positions,) = nonzero(starts, size=size)
    selected = values[positions]
    if size == 0:
        return selected
    if fill_value is None:
        fill_value = selected[0]
    fill = lax.convert_element_type(asarray(fill_value), values.dtype)
    past_end = lax.ge(lax.iota(positions.dtype, size), sum(starts))
    past_end = lax.broadcast_in_dim(past_end, selected.shape, (0,))
    return where(past_end, fill, selected)


def unique(ar: Any, return_index: bool = False, return_inverse: bool = False,
           return_counts: bool = False, axis: int | None = None, *, equal_nan: bool = True,
           size: int | None = None, fill_value: Any = None, sorted: bool = True) -> Any:
    """The sorted distinct values of ``ar`` (flattened, or distinct slices along ``axis``),
    and optionally where each first occurs (``return_index``), which one each element is
    (``return_inverse``, in ``ar``'s shape) and how often each occurs (``return_counts``).
    """
    from minijax.numpy.manipulation import moveaxis, ravel, reshape
    from minijax.numpy.reductions import cumsum
    from minijax.numpy.sorting import argsort, lexsort

    check_arraylike("unique", ar)
    ar = asarray(ar)
    if axis is None:
        values, shape = ravel(ar), ar.shape
        perm = argsort(values)
    else:
        axis = lax.canonicalize_axes((operator.index(axis),), ar.ndim)[0]
        values = moveaxis(ar, axis, 0)
        rows = reshape(values, (values.shape[0], -1))
        perm = lexsort(rows.T[::-1]) if rows.shape[1] else lax.iota(np.int32, rows.shape[0])
        shape = (ar.shape[axis],)
    sorted_values = values[perm] if values.shape[0] else values
    starts = _group_starts(sorted_values, equal_nan)
    result = [_select(sorted_values, starts, size, fill_value, "unique")]
    if axis is not None:
        result[0] = moveaxis(result[0], 0, axis)
    out_size = result[0].shape[0 if axis is None else axis]
    if return_index:
        result.append(_select(perm, starts, out_size, None, "unique"))
    which = cumsum(starts) - 1  # the unique value of each sorted element
    if return_inverse:
        inverse = zeros(perm.shape, which.dtype).at[perm].set(which)
        result.append(reshape(inverse, shape) if axis is None else inverse)
    if return_counts:
        result.append(zeros(out_size, which.dtype).at[which].add(1, mode="drop"))
    return result[0] if len(result) == 1 else tuple(result)


def unique_values(x: Any, /, *, size: int | None = None, fill_value: Any = None) -> Any:
    """The Array API's ``unique``: the sorted distinct values."""
    return unique(x, size=size, fill_value=fill_value)


def unique_counts(x: Any, /, *, size: int | None = None,
                  fill_value: Any = None) -> UniqueCountsResult:
    return UniqueCountsResult(*unique(x, return_counts=True, size=size, fill_value=fill_value))


def unique_inverse(x: Any, /, *, size: int | None = None,
                   fill_value: Any = None) -> UniqueInverseResult:
    return UniqueInverseResult(*unique(x, return_inverse=True, size=size,
                                       fill_value=fill_value))


def unique_all(x: Any, /, *, size: int | None = None, fill_value: Any = None
               ) -> UniqueAllResult:
    return UniqueAllResult(*unique(x, return_index=True, return_inverse=True,
                                   return_counts=True, size=size, fill_value=fill_value))


def isin(element: Any, test_elements: Any, assume_unique: bool = False, invert: bool = False,
         *, method: str = "auto") -> Any:
    """Elementwise: does each element of ``element`` occur in ``test_elements``? Every
    element is compared with every test element (NaN is in nothing)."""
    from minijax.numpy.manipulation import ravel
    from minijax.numpy.reductions import any as any_
    from minijax.numpy.ufuncs import equal

    check_arraylike("isin", element, test_elements)
    element, tests = promote_dtypes(asarray(element), ravel(test_elements))
    grid = element.shape + tests.shape
    pairs = equal(lax.broadcast_in_dim(element, grid, range(element.ndim)),
                  lax.broadcast_in_dim(tests, grid, (element.ndim,)))
    found = any_(pairs, axis=-1)
    return lax.bitwise_not(found) if invert else found


def _sorted_flat(*arrays: Any) -> Any:
    from minijax.numpy.manipulation import concatenate, ravel
    from minijax.numpy.sorting import sort

    return sort(concatenate([ravel(a) for a in arrays]))


def union1d(ar1: Any, ar2: Any, *, size: int | None = None, fill_value: Any = None) -> Any:
    """The sorted values that are in either array."""
    check_arraylike("union1d", ar1, ar2)
    values = _sorted_flat(*promote_dtypes(asarray(ar1), asarray(ar2)))
    return _select(values, _group_starts(values), size, fill_value, "union1d")


def intersect1d(ar1: Any, ar2: Any, assume_unique: bool = False, return_indices: bool = False,
                *, size: int | None = None, fill_value: Any = None) -> Any:
    """The sorted values that are in both arrays."""
    if return_indices:
        raise NotImplementedError("minijax's intersect1d has no return_indices")
    check_arraylike("intersect1d", ar1, ar2)
    ar1, ar2 = promote_dtypes(asarray(ar1), asarray(ar2))
    values = _sorted_flat(ar1)
    keep = lax.bitwise_and(_group_starts(values), isin(values, ar2))
    return _select(values, keep, size, fill_value, "intersect1d")


def setdiff1d(ar1: Any, ar2: Any, assume_unique: bool = False, *, size: int | None = None,
              fill_value: Any = None) -> Any:
    """The sorted values of ``ar1`` that are not in ``ar2`` (padding: 0 by default)."""
    check_arraylike("setdiff1d", ar1, ar2)
    ar1, ar2 = promote_dtypes(asarray(ar1), asarray(ar2))
    values = _sorted_flat(ar1)
    keep = lax.bitwise_and(_group_starts(values), isin(values, ar2, invert=True))
    return _select(values, keep, size, 0 if fill_value is None else fill_value, "setdiff1d")


def setxor1d(ar1: Any, ar2: Any, assume_unique: bool = False, *, size: int | None = None,
             fill_value: Any = None) -> Any:
    """The sorted values that are in exactly one of the arrays."""
    check_arraylike("setxor1d", ar1, ar2)
    ar1, ar2 = promote_dtypes(asarray(ar1), asarray(ar2))
    values = _sorted_flat(ar1, ar2)
    in_one = lax.bitwise_xor(isin(values, ar1), isin(values, ar2))
    keep = lax.bitwise_and(_group_starts(values), in_one)
    return _select(values, keep, size, fill_value, "setxor1d")
