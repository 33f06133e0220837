"""Changing the shape of arrays: reshaping, transposing, joining, splitting, repeating.

Each function is NumPy's, computed with the data-movement primitives of ``lax``
(``reshape``, ``transpose``, ``broadcast_in_dim``, ``concatenate``, ``split``, ``rev``,
``tile``, ...). The work done here is NumPy's bookkeeping: normalising axes (negative
axes count from the end), inferring a ``-1`` in a shape, promoting the dtypes of arrays
that are joined, and raising NumPy's (or JAX's) errors for impossible requests.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Sequence
from functools import partial
from typing import Any

import numpy as np

from minijax import dtypes, errors, lax
from minijax.array import Array
from minijax.compiler.jit import jit
from minijax.core import Tracer, is_concrete
from minijax.numpy.creation import asarray
from minijax.numpy.indexing import take
from minijax.numpy.promotion import broadcast_to, check_arraylike, promote_dtypes

__all__ = [
    "astype",
    "atleast_1d",
    "atleast_2d",
    "atleast_3d",
    "array_split",
    "broadcast_arrays",
    "broadcast_shapes",
    "broadcast_to",
    "column_stack",
    "concat",
    "concatenate",
    "dstack",
    "expand_dims",
    "flip",
    "fliplr",
    "flipud",
    "hstack",
    "moveaxis",
    "permute_dims",
    "ravel",
    "repeat",
    "reshape",
    "roll",
    "split",
    "squeeze",
    "stack",
    "swapaxes",
    "tile",
    "transpose",
    "vstack",
]


def _axis(axis: int, ndim: int) -> int:
    return lax.canonicalize_axes((operator.index(axis),), ndim)[0]


def _axes(axis: int | Sequence[int], ndim: int) -> tuple[int, ...]:
    axes = (axis,) if np.ndim(axis) == 0 else tuple(axis)
    return lax.canonicalize_axes([operator.index(a) for a in axes], ndim)


# ---------------------------------------------------------------------------------------
# Reshaping
# ---------------------------------------------------------------------------------------


def _shape_text(shape: Any) -> str:
    """JAX prints the requested shape as the user gave it: ``4`` or ``(2, 2)``."""
    return str(shape if np.ndim(shape) == 0 else tuple(int(d) for d in shape))


def _infer_shape(old: tuple[int, ...], shape: Any) -> tuple[int, ...]:
    """The new shape with a ``-1`` (at most one) replaced by what makes the sizes agree."""
    new = lax.canonicalize_shape(shape)
    size = math.prod(old)
    if -1 not in new and math.prod(new) == size and min(new, default=0) >= 0:
        return new  # the common case, made fast
    unknown = [i for i, d in enumerate(new) if d == -1]
    if len(unknown) > 1:
        raise TypeError(f"can only specify one unknown axis size with a `-1` value, got {new}")
    known = math.prod(d for d in new if d != -1)
    if unknown:
        if known == 0:
            # JAX divides by the 0 here (arguably its bug: NumPy says "cannot reshape");
            # we keep its exception class, with a message that says what was asked.
            raise ZeroDivisionError(
                f"integer modulo by zero: cannot reshape array of shape {old} into shape "
                f"{new}, the -1 is undetermined because the other axis sizes multiply to 0")
        if size % known:
            raise TypeError(
                f"cannot reshape array of shape {old} (size {size}) into shape {new} because "
                f"the product of specified axis sizes ({known}) does not evenly divide {size}"
            )
        new = new[:unknown[0]] + (size // known,) + new[unknown[0] + 1:]
    if math.prod(new) != size or any(d < 0 for d in new):
        raise TypeError(f"cannot reshape array of shape {old} (size {size}) into shape "
                        f"{_shape_text(shape)} (size {math.prod(new)})")
    return new


def _check_order(order: str) -> None:
    """``C`` and ``F`` are implemented; ``A`` is NumPy's but not ours; others are errors."""
    if order == "A":
        raise NotImplementedError(f"np.reshape order={order} is not implemented.")
    if order not in ("C", "F"):
        raise ValueError(f"Unexpected value for 'order' argument: {order}.")


def reshape(a: Any, shape: Any = None, order: str = "C", *, newshape: Any = None,
            copy: bool | None = None, out_sharding: Any = None) -> Any:
    """``a`` with a new ``shape`` (one entry may be ``-1``); elements in C (row-major)
    order, or Fortran (column-major) order with ``order='F'``."""
    if shape is None:
        shape = newshape
    if shape is None:
        raise TypeError("reshape() missing 1 required positional argument: 'shape'")
    _check_order(order)
    a = asarray(a)
    new = _infer_shape(a.shape, shape)
    if order == "F":
        reversed_dims = tuple(range(a.ndim))[::-1]
        flat = lax.reshape(lax.transpose(a, reversed_dims), new[::-1])
        return lax.transpose(flat, tuple(range(len(new)))[::-1])
    return lax.reshape(a, new)


def ravel(a: Any, order: str = "C") -> Any:
    """``a`` as a vector (a no-op for vectors)."""
    a = asarray(a)
    if order == "K":
        raise NotImplementedError("Ravel not implemented for order='K'.")
    return reshape(a, (a.size,), order)


def expand_dims(a: Any, axis: int | Sequence[int]) -> Any:
    """Insert size-1 dimensions at the positions ``axis`` of the result."""
    a = asarray(a)
    axes = (axis,) if np.ndim(axis) == 0 else tuple(axis)
    return lax.expand_dims(a, [operator.index(ax) for ax in axes])


def squeeze(a: Any, axis: int | Sequence[int] | None = None) -> Any:
    """Remove size-1 dimensions: all of them, or those in ``axis`` (which must be 1)."""
    a = asarray(a)
    if axis is None:
        axes = tuple(d for d, n in enumerate(a.shape) if n == 1)
    else:
        axes = _axes(axis, a.ndim)
    return lax.squeeze(a, axes)


# ---------------------------------------------------------------------------------------
# Permuting dimensions
# ---------------------------------------------------------------------------------------


def transpose(a: Any, axes: Sequence[int] | None = None) -> Any:
    """Permute the dimensions (reverse them by default)."""
    a = asarray(a)
    if axes is None:
        return lax.transpose(a, tuple(range(a.ndim))[::-1])
    return lax.transpose(a, _axes_list(axes, a.ndim))


def _axes_list(axes: Sequence[int], ndim: int) -> tuple[int, ...]:
    """Normalise each axis (ValueError if out of range); lax checks the permutation."""
    return tuple(_axis(ax, ndim) for ax in axes)


def permute_dims(a: Any, /, axes: Sequence[int]) -> Any:
    """The Array API name of ``transpose`` (axes required)."""
    return transpose(a, axes)


def swapaxes(a: Any, axis1: int, axis2: int) -> Any:
    """Exchange two dimensions."""
    a = asarray(a)
    perm = list(range(a.ndim))
    i, j = operator.index(axis1), operator.index(axis2)
    for ax in (i, j):
        if not -a.ndim <= ax < a.ndim:
            raise IndexError(f"index {ax} is out of bounds for axis 0 with size {a.ndim}")
    perm[i], perm[j] = perm[j], perm[i]
    return lax.transpose(a, perm)


def moveaxis(a: Any, source: int | Sequence[int], destination: int | Sequence[int]) -> Any:
    """Move dimensions ``source`` to positions ``destination``; the others keep their order."""
    a = asarray(a)
    src = _axes(source, a.ndim)
    dst = _axes(destination, a.ndim)
    if len(src) != len(dst):
        raise ValueError(f"Inconsistent number of elements: {len(src)} vs {len(dst)}")
    perm = [d for d in range(a.ndim) if d not in src]
    for d, s in sorted(zip(dst, src)):
        perm.insert(d, s)
    return lax.transpose(a, perm)


# ---------------------------------------------------------------------------------------
# Broadcasting
# ---------------------------------------------------------------------------------------


def broadcast_shapes(*shapes: Sequence[int]) -> tuple[int, ...]:
    """The shape NumPy's broadcasting rules give arrays of these shapes."""
    shapes = [lax.canonicalize_shape(s) for s in shapes]
    try:
        return tuple(int(d) for d in np.broadcast_shapes(*shapes))
    except ValueError:
        raise ValueError(f"Incompatible shapes for broadcasting: shapes={shapes}") from None


def broadcast_arrays(*args: Any) -> list[Any]:
    """All arguments broadcast to their common shape (dtypes unchanged)."""
    arrays = [asarray(a) for a in args]
    shape = broadcast_shapes(*(a.shape for a in arrays))
    return [broadcast_to(a, shape) for a in arrays]


# ---------------------------------------------------------------------------------------
# Joining
# ---------------------------------------------------------------------------------------


def _as_sequence(fun_name: str, arrays: Any) -> list[Any]:
    """The arrays to join: a sequence of arrays, or the rows of one array."""
    if isinstance(arrays, (Array, Tracer, np.ndarray)):
        return [arrays[i] for i in range(arrays.shape[0])] if arrays.ndim else [arrays]
    arrays = list(arrays)
    check_arraylike(fun_name, *arrays)
    return arrays


def _promoted(arrays: list[Any], dtype: Any, fun_name: str) -> list[Any]:
    arrays = promote_dtypes(*arrays)
    if dtype is not None:
        dt = dtypes.check_and_canonicalize_user_dtype(dtype, fun_name)
        arrays = [lax.convert_element_type(a, dt, False) for a in arrays]
    return [lax.operand(a) for a in arrays]


def concatenate(arrays: Any, axis: int | None = 0, dtype: Any = None) -> Any:
    """Join arrays along an existing ``axis`` (of the flattened arrays if ``None``)."""
    if isinstance(arrays, (Array, Tracer, np.ndarray)):
        return _join_rows(asarray(arrays), axis, dtype, "concatenate")
    return _concatenate(_as_sequence("concatenate", arrays), axis, dtype)


def _join_rows(arr: Any, axis: int | None, dtype: Any, fun_name: str) -> Any:
    """``concatenate`` of the rows of one array: a ``reshape`` that merges the first axis
    into ``axis`` (moving it there first, with the reshape's ``dimensions``)."""
    if arr.ndim == 0 or arr.shape[0] == 0:
        raise ValueError(f"Need at least one array to {fun_name}.")
    if dtype is not None:
        arr = lax.convert_element_type(
            arr, dtypes.check_and_canonicalize_user_dtype(dtype, fun_name), False)
    if axis is None:
        return lax.reshape(arr, (arr.size,))
    if arr.ndim == 1:
        raise ValueError("Zero-dimensional arrays cannot be concatenated.")
    axis = _axis(axis, arr.ndim - 1)
    rows, *row_shape = arr.shape
    order = (*range(1, axis + 1), 0, *range(axis + 1, arr.ndim))
    row_shape[axis] *= rows
    return lax.reshape(arr, row_shape, None if axis == 0 else order)


def _concatenate(arrays: list[Any], axis: int | None, dtype: Any) -> Any:
    if not arrays:
        raise ValueError("Need at least one array to concatenate.")
    arrays = _promoted(arrays, dtype, "concatenate")
    if axis is None:
        arrays, axis = [ravel(a) for a in arrays], 0
    if any(a.ndim == 0 for a in arrays):
        raise ValueError("Zero-dimensional arrays cannot be concatenated.")
    return lax.concatenate(arrays, _axis(axis, arrays[0].ndim))


def concat(arrays: Sequence[Any], /, *, axis: int | None = 0) -> Any:
    """The Array API name of ``concatenate``."""
    return concatenate(arrays, axis)


def stack(arrays: Any, axis: int = 0, out: None = None, dtype: Any = None) -> Any:
    """Join arrays of one shape along a new dimension ``axis``."""
    if isinstance(arrays, (Array, Tracer, np.ndarray)):
        arr = asarray(arrays)
        if arr.ndim == 0:
            raise TypeError("len() of unsized object")
        axis = _axis(axis, arr.ndim)  # the rows get a new axis there, then are joined
        arr = lax.broadcast_in_dim(arr, (*arr.shape[:axis + 1], 1, *arr.shape[axis + 1:]),
                                   [d for d in range(arr.ndim + 1) if d != axis + 1])
        return _join_rows(arr, axis, dtype, "stack")
    arrays = _as_sequence("stack", arrays)
    if not arrays:
        raise ValueError("Need at least one array to stack.")
    arrays = _promoted(arrays, dtype, "stack")
    shapes = {a.shape for a in arrays}
    if len(shapes) > 1:
        listed = ", ".join(str(a.shape) for a in arrays)
        raise ValueError(f"All input arrays must have the same shape. Got {listed}.")
    return lax.stack(arrays, _axis(axis, arrays[0].ndim + 1))


@jit
def atleast_1d(*arys: Any) -> Any:
    """Arrays with at least one dimension (scalars become shape (1,))."""
    return _atleast(arys, lambda a: lax.expand_dims(a, [0]) if a.ndim == 0 else a)


@jit
def atleast_2d(*arys: Any) -> Any:
    """Arrays with at least two dimensions: (n,) becomes (1, n)."""
    return _atleast(arys, lambda a: lax.expand_dims(a, range(2 - a.ndim)) if a.ndim < 2 else a)


@jit
def atleast_3d(*arys: Any) -> Any:
    """Arrays with at least three dimensions: (n,) becomes (1, n, 1), (m, n) (m, n, 1)."""
    new_axes = {0: (0, 1, 2), 1: (0, 2), 2: (2,)}
    return _atleast(arys, lambda a: lax.expand_dims(a, new_axes[a.ndim]) if a.ndim < 3 else a)


def _atleast(arys: tuple, fix: Any) -> Any:
    out = [fix(asarray(a)) for a in arys]
    return out[0] if len(out) == 1 else out


def hstack(tup: Sequence[Any], dtype: Any = None) -> Any:
    """Join along the second dimension (the first for vectors)."""
    arrays = atleast_1d(*tup) if tup else []
    arrays = arrays if isinstance(arrays, list) else [arrays]
    axis = 0 if arrays and arrays[0].ndim == 1 else 1
    return concatenate(arrays, axis, dtype)


def vstack(tup: Sequence[Any], dtype: Any = None) -> Any:
    """Join along the first dimension, vectors as rows."""
    return concatenate(_as_list(atleast_2d(*tup)), 0, dtype)


def dstack(tup: Sequence[Any], dtype: Any = None) -> Any:
    """Join along the third dimension."""
    return concatenate(_as_list(atleast_3d(*tup)), 2, dtype)


def column_stack(tup: Sequence[Any]) -> Any:
    """Join along the second dimension, vectors as columns."""
    columns = [transpose(atleast_2d(a)) if asarray(a).ndim < 2 else asarray(a) for a in tup]
    return concatenate(columns, 1)


def _as_list(arrays: Any) -> list[Any]:
    return arrays if isinstance(arrays, list) else [arrays]


# ---------------------------------------------------------------------------------------
# Splitting
# ---------------------------------------------------------------------------------------


def _split(name: str, ary: Any, indices_or_sections: Any, axis: int) -> list[Any]:
    ary = asarray(ary)
    axis = _axis(axis, ary.ndim)
    n = ary.shape[axis]
    if np.ndim(indices_or_sections) == 0:
        sections = operator.index(indices_or_sections)
        if name == "split" and n % sections:
            raise ValueError(
                f"array split does not result in an equal division: rest is {n % sections}"
            )
        small, extra = divmod(n, sections)
        sizes = [np.int64(small + 1)] * extra + [np.int64(small)] * (sections - extra)
    else:
        edges = [0, *(operator.index(i) for i in np.asarray(indices_or_sections)), n]
        sizes = [np.int64(b - a) for a, b in zip(edges, edges[1:])]
    return lax.split(ary, sizes, axis)


def split(ary: Any, indices_or_sections: Any, axis: int = 0) -> list[Any]:
    """Cut into ``indices_or_sections`` equal parts, or at the given indices."""
    return _split("split", ary, indices_or_sections, axis)


def array_split(ary: Any, indices_or_sections: Any, axis: int = 0) -> list[Any]:
    """Like ``split``, but the parts may differ in size by one (the first are larger)."""
    return _split("array_split", ary, indices_or_sections, axis)


# ---------------------------------------------------------------------------------------
# Repeating, reversing, rolling
# ---------------------------------------------------------------------------------------


def tile(A: Any, reps: int | Sequence[int]) -> Any:
    """Repeat the whole array ``reps`` times (per dimension; missing leading ones are 1)."""
    a = asarray(A)
    reps = (operator.index(reps),) if np.ndim(reps) == 0 else tuple(map(operator.index, reps))
    if len(reps) > a.ndim:
        a = lax.expand_dims(a, range(len(reps) - a.ndim))
    reps = (1,) * (a.ndim - len(reps)) + reps
    return lax.tile(a, reps)


def repeat(a: Any, repeats: Any, axis: int | None = None, *,
           total_repeat_length: int | None = None) -> Any:
    """Repeat each element ``repeats`` times (a number, or one count per element)."""
    a = asarray(a)
    if axis is None:
        a, axis = ravel(a), 0
    axis = _axis(axis, a.ndim)
    if np.ndim(repeats) == 0 and is_concrete(repeats):
        return _repeat_scalar(a, operator.index(repeats), axis, total_repeat_length)
    if total_repeat_length is None:
        if not is_concrete(repeats):
            raise errors.ConcretizationTypeError(
                repeats.aval.str_long(),
                "When jit-compiling jnp.repeat, the total number of repeats must be static. To "
                "fix this, either specify a static value for `repeats`, or pass a static value "
                "to `total_repeat_length`.",
            )
        counts = np.broadcast_to(np.asarray(repeats), (a.shape[axis],))
        return take(a, np.repeat(np.arange(a.shape[axis]), counts), axis=axis)
    return _repeat_traced(a, repeats, axis, total_repeat_length)


def _repeat_scalar(a: Any, repeats: int, axis: int, total: int | None) -> Any:
    """Each element ``repeats`` times: a new dimension broadcast, then merged."""
    shape = list(a.shape)
    shape.insert(axis + 1, repeats)
    dims = [d for d in range(a.ndim + 1) if d != axis + 1]
    out = lax.broadcast_in_dim(a, shape, dims)
    merged = a.shape[:axis] + (a.shape[axis] * repeats,) + a.shape[axis + 1:]
    out = lax.reshape(out, merged)
    if total is None or total == merged[axis]:
        return out
    if total < merged[axis]:
        return lax.slice_in_dim(out, 0, total, axis=axis)
    return repeat(out, np.array([1] * (merged[axis] - 1) + [total - merged[axis] + 1]), axis)


def _repeat_traced(a: Any, repeats: Any, axis: int, total: int) -> Any:
    """Counts known only at run time: mark where each element's run starts, and a
    running sum of the marks gives the element to read at every output position."""
    from minijax.numpy.creation import zeros
    from minijax.numpy.reductions import cumsum

    repeats = broadcast_to(asarray(repeats), (a.shape[axis],))
    starts = cumsum(repeats) - repeats
    marks = zeros(total, np.int32).at[starts].add(1, mode="drop")
    return take(a, cumsum(marks) - 1, axis=axis, mode="clip")


def flip(m: Any, axis: int | Sequence[int] | None = None) -> Any:
    """Reverse the order of elements along ``axis`` (all axes by default)."""
    m = asarray(m)
    return _flip(m, tuple(range(m.ndim)) if axis is None else _axes(axis, m.ndim))


@partial(jit, static_argnames=("axis",))
def _flip(m: Any, axis: tuple[int, ...]) -> Any:
    return lax.rev(m, axis)


def fliplr(m: Any) -> Any:
    """Reverse the columns (the second dimension)."""
    return flip(m, 1)


def flipud(m: Any) -> Any:
    """Reverse the rows (the first dimension)."""
    return flip(m, 0)


def roll(a: Any, shift: Any, axis: int | Sequence[int] | None = None) -> Any:
    """Shift elements cyclically by ``shift`` along ``axis`` (of the flattened array if
    ``None``). Shifts and axes broadcast against each other."""
    a = asarray(a)
    if axis is None:
        return reshape(roll(ravel(a), shift, 0), a.shape)
    if not is_concrete(shift):
        if np.ndim(shift) or np.ndim(axis):
            raise NotImplementedError("roll with several traced shifts is not supported")
        return _roll_dynamic(a, shift, _axis(axis, a.ndim))
    shifts, axes = np.broadcast_arrays(np.asarray(shift), np.asarray(axis))
    return _roll_static(a, tuple(int(s) for s in shifts.ravel()),
                        tuple(_axis(int(ax), a.ndim) for ax in axes.ravel()))


@partial(jit, static_argnums=(1, 2))
def _roll_static(a: Any, shifts: tuple[int, ...], axes: tuple[int, ...]) -> Any:
    for shift, axis in zip(shifts, axes):
        n = a.shape[axis]
        if n == 0:
            continue
        shift %= n
        tail = lax.slice_in_dim(a, n - shift, n, axis=axis)
        head = lax.slice_in_dim(a, 0, n - shift, axis=axis)
        a = lax.concatenate([tail, head], axis)
    return a


@partial(jit, static_argnums=(2,))
def _roll_dynamic(a: Any, shift: Any, axis: int) -> Any:
    """A traced shift: read a window of ``a`` joined to itself."""
    from minijax.numpy.ufuncs import remainder

    n = a.shape[axis]
    start = remainder(n - remainder(shift, n), n)
    doubled = lax.concatenate([a, a], axis)
    return lax.dynamic_slice_in_dim(doubled, start, n, axis, allow_negative_indices=False)


# ---------------------------------------------------------------------------------------
# Changing the dtype
# ---------------------------------------------------------------------------------------


def astype(x: Any, dtype: Any, /, *, copy: bool = False, device: Any = None) -> Any:
    """``x`` converted to ``dtype`` (a requested 64-bit dtype warns when x64 is off)."""
    dt = dtypes.check_and_canonicalize_user_dtype(dtype, "astype")
    return lax.convert_element_type(asarray(x), dt, False)
