"""Index arrays computed from shapes: ``tril_indices``, ``triu_indices`` (and their
``_from`` forms), ``diag_indices``, ``unravel_index``, ``ravel_multi_index`` and ``ix_``.

The triangle and diagonal indices depend only on static sizes, so NumPy computes them on
the host and they become constants. ``unravel_index`` and ``ravel_multi_index`` convert
between flat and multi-dimensional indices with the strides of C order, so they trace.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any

import numpy as np

from minijax import dtypes, lax
from minijax.numpy.creation import asarray
from minijax.numpy.promotion import check_arraylike

__all__ = ["diag_indices", "diag_indices_from", "ix_", "ravel_multi_index", "tril_indices",
           "tril_indices_from", "triu_indices", "triu_indices_from", "unravel_index"]


def _index_arrays(indices: tuple[np.ndarray, ...]) -> tuple[Any, ...]:
    int_dtype = dtypes.canonicalize_dtype(np.int64)
    return tuple(asarray(i.astype(int_dtype)) for i in indices)


def tril_indices(n: int, k: int = 0, m: int | None = None) -> tuple[Any, Any]:
    """(rows, columns) of the lower triangle of an n x m matrix, diagonal ``k`` included."""
    return _index_arrays(np.tril_indices(operator.index(n), operator.index(k), m))


def triu_indices(n: int, k: int = 0, m: int | None = None) -> tuple[Any, Any]:
    """(rows, columns) of the upper triangle of an n x m matrix, diagonal ``k`` included."""
    return _index_arrays(np.triu_indices(operator.index(n), operator.index(k), m))


def _matrix_shape(name: str, arr: Any) -> tuple[int, int]:
    shape = np.shape(arr) if not hasattr(arr, "shape") else arr.shape
    if len(shape) != 2:
        raise ValueError(f"{name} only supports 2-dimensional inputs; got shape {shape}")
    return shape


def tril_indices_from(arr: Any, k: int = 0) -> tuple[Any, Any]:
    n, m = _matrix_shape("tril_indices_from", arr)
    return tril_indices(n, k, m)


def triu_indices_from(arr: Any, k: int = 0) -> tuple[Any, Any]:
    n, m = _matrix_shape("triu_indices_from", arr)
    return triu_indices(n, k, m)


def diag_indices(n: int, ndim: int = 2) -> tuple[Any, ...]:
    """``ndim`` copies of 0, 1, ..., n-1: the main diagonal of an n x ... x n array."""
    n, ndim = operator.index(n), operator.index(ndim)
    if n < 0:
        raise ValueError(f"n argument to diag_indices must be nonnegative, got {n}")
    if ndim < 0:
        raise ValueError(f"ndim argument to diag_indices must be nonnegative, got {ndim}")
    return _index_arrays((np.arange(n),) * ndim)


def diag_indices_from(arr: Any) -> tuple[Any, ...]:
    shape = np.shape(arr) if not hasattr(arr, "shape") else arr.shape
    if len(shape) < 2:
        raise ValueError("input array must be at least 2-d")
    if len(set(shape)) != 1:
        raise ValueError("All dimensions of input must be of equal length")
    return diag_indices(shape[0], len(shape))


def unravel_index(indices: Any, shape: Sequence[int]) -> tuple[Any, ...]:
    """The multi-index of each flat index in an array of ``shape`` (C order); negative
    indices count from the end, out-of-range ones are clipped."""
    from minijax.numpy.ufuncs import clip, floor_divide, remainder, where

    check_arraylike("unravel_index", indices)
    indices = asarray(indices)
    if not dtypes.issubdtype(indices.dtype, np.integer):
        raise TypeError("Only integer indices are allowed in unravel_index")
    shape = tuple(operator.index(d) for d in shape)
    size = int(np.prod(shape, dtype=np.int64))
    indices = where(lax.lt(indices, lax.full_like(indices, 0)), indices + size, indices)
    indices = clip(indices, 0, max(size - 1, 0))
    strides = np.cumprod((1, *shape[:0:-1]))[::-1]
    return tuple(remainder(floor_divide(indices, stride), n) if i else
                 floor_divide(indices, stride) for i, (stride, n) in enumerate(zip(strides,
                                                                                   shape)))


def ravel_multi_index(multi_index: Sequence[Any], dims: Sequence[int], mode: str = "raise",
                      order: str = "C", *, dtype: Any = None) -> Any:
    """The flat index (C order) of each multi-index; ``mode`` says what to do with
    indices out of range: ``wrap`` them, ``clip`` them, or (``raise``) check them, which
    needs concrete values."""
    from minijax.numpy.ufuncs import add, clip, multiply, remainder

    if order != "C":
        raise NotImplementedError("minijax's ravel_multi_index supports order='C' only")
    dims = tuple(operator.index(d) for d in dims)
    if len(multi_index) != len(dims):
        raise ValueError(f"parameter multi_index must be a sequence of length {len(dims)}")
    check_arraylike("ravel_multi_index", *multi_index)
    index = [asarray(i) for i in multi_index]
    if mode == "raise":
        for i, n in zip(index, dims):
            values = np.asarray(i)
            if values.size and (values.min() < 0 or values.max() >= n):
                raise ValueError("invalid entry in coordinates array")
    elif mode == "wrap":
        index = [remainder(i, n) for i, n in zip(index, dims)]
    elif mode == "clip":
        index = [clip(i, 0, n - 1) for i, n in zip(index, dims)]
    else:
        raise ValueError(f"invalid mode={mode!r}. Expected 'raise', 'wrap', or 'clip'")
    strides = np.cumprod((1, *dims[:0:-1]))[::-1]
    flat = index[0] * 0
    for i, stride in zip(index, strides):
        flat = add(flat, multiply(i, int(stride)))
    return flat if dtype is None else lax.convert_element_type(flat, dtype)


def ix_(*args: Any) -> tuple[Any, ...]:
    """Open-mesh index arrays: the i-th 1-D sequence, shaped to vary along axis i only
    (``x[ix_(rows, cols)]`` picks the sub-matrix)."""
    check_arraylike("ix", *args)
    out = []
    for i, a in enumerate(args):
        a = asarray(a)
        if a.ndim != 1:
            raise ValueError(f"Arguments to jax.numpy.ix_ must be 1-dimensional, got shape "
                             f"{a.shape}")
        shape = [1] * len(args)
        shape[i] = a.shape[0]
        out.append(lax.reshape(a, shape))
    return tuple(out)
