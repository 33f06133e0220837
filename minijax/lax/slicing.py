"""Primitives that read or write parts of arrays: slices, dynamic slices, gather and scatter.

Three levels of generality, each a primitive:

* ``slice``: a box with static bounds (and strides). ``x[1:3]`` in a jaxpr.
* ``dynamic_slice`` / ``dynamic_update_slice``: a box of static *size* whose start is a
  traced value, e.g. ``x[i]`` inside ``jit``. XLA never reads or writes out of bounds:
  the start is *clamped* so that the whole box fits.
* ``gather`` / ``scatter``: many boxes at once, their starts read from an array of indices
  (``x[jnp.array([0, 2])]``, ``x.at[idx].add(y)``). ``dimension_numbers`` say which
  dimensions of the indices and of the boxes go where; ``mode`` says what happens out of
  bounds: clamp (``CLIP``, and ``PROMISE_IN_BOUNDS`` as XLA implements it for gather),
  or fill the result / drop the update (``FILL_OR_DROP``).

The kernels below describe each gather or scatter as a batch of *windows*: one start
index per operand dimension for every window, plus the window's size. From those, NumPy
fancy indexing reads the windows (gather) or ``np.add.at`` and friends combine updates
into them (scatter; duplicates accumulate, and for plain ``scatter`` the last one wins).
"""

from __future__ import annotations

import builtins
import enum
import functools
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np

from minijax import dtypes
from minijax.array import Array
from minijax.core import Primitive, ShapedArray, Tracer
from minijax.interpreters import batching
from minijax.jaxpr import Jaxpr, Literal
from minijax.lax import elementwise
from minijax.lax.elementwise import add, convert_element_type, lt, operand, select_n
from minijax.lax.shapes import broadcast, broadcast_in_dim, concatenate, squeeze

__all__ = [
    "GatherDimensionNumbers",
    "GatherScatterMode",
    "ScatterDimensionNumbers",
    "dynamic_index_in_dim",
    "dynamic_slice",
    "dynamic_slice_in_dim",
    "dynamic_slice_p",
    "dynamic_update_index_in_dim",
    "dynamic_update_slice",
    "dynamic_update_slice_in_dim",
    "dynamic_update_slice_p",
    "gather",
    "gather_p",
    "index_in_dim",
    "scatter",
    "scatter_add",
    "scatter_add_p",
    "scatter_apply",
    "scatter_max",
    "scatter_max_p",
    "scatter_min",
    "scatter_min_p",
    "scatter_mul",
    "scatter_mul_p",
    "scatter_p",
    "scatter_sub",
    "scatter_sub_p",
    "slice",
    "slice_in_dim",
    "slice_p",
]

# ---------------------------------------------------------------------------------------
# slice: static start, limit and stride per dimension
# ---------------------------------------------------------------------------------------


def _slice_rule(x: ShapedArray, start_indices: tuple[int, ...], limit_indices: tuple[int, ...],
                strides: tuple[int, ...] | None) -> ShapedArray:
    if len(start_indices) != x.ndim or len(limit_indices) != x.ndim:
        raise ValueError(
            "slice start_indices and limit_indices must have one entry per operand "
            f"dimension, got start_indices {start_indices} and limit_indices {limit_indices} "
            f"for operand shape {x.shape}."
        )
    if strides is not None and (len(strides) != x.ndim or any(s <= 0 for s in strides)):
        raise ValueError(
            f"slice strides must be positive, one per operand dimension, got {strides}."
        )
    if any(s < 0 for s in start_indices):
        raise TypeError(
            f"slice start_indices must be greater than or equal to zero, got {start_indices}."
        )
    if any(lim > n for lim, n in zip(limit_indices, x.shape)):
        raise TypeError(
            "slice limit_indices must be less than or equal to operand shape, got "
            f"limit_indices {limit_indices} for operand shape {x.shape}."
        )
    if any(lim < s for s, lim in zip(start_indices, limit_indices)):
        raise TypeError(
            "slice limit_indices must be greater than or equal to start_indices, got "
            f"start_indices {start_indices} and limit_indices {limit_indices}."
        )
    steps = strides or (1,) * x.ndim
    shape = tuple(-(-(lim - s) // st) for s, lim, st in zip(start_indices, limit_indices, steps))
    return ShapedArray(shape, x.dtype, x.weak_type)


def _slice_kernel(x: np.ndarray, start_indices: tuple[int, ...], limit_indices: tuple[int, ...],
                  strides: tuple[int, ...] | None) -> np.ndarray:
    steps = strides or (1,) * x.ndim
    return x[tuple(map(builtins.slice, start_indices, limit_indices, steps))]


slice_p = Primitive("slice")
slice_p.def_impl(_slice_kernel)
slice_p.def_abstract_eval(_slice_rule)


def slice(operand_: Any, start_indices: Sequence[int], limit_indices: Sequence[int],
          strides: Sequence[int] | None = None) -> Any:
    """The box ``start_indices <= i < limit_indices`` (every ``strides``-th element)."""
    return slice_p.bind(
        operand(operand_, slice_p),
        start_indices=tuple(map(int, start_indices)),
        limit_indices=tuple(map(int, limit_indices)),
        strides=None if strides is None else tuple(map(int, strides)),
    )


def slice_in_dim(operand_: Any, start_index: int | None, limit_index: int | None,
                 stride: int = 1, axis: int = 0) -> Any:
    """``slice`` along one ``axis`` only; negative or ``None`` bounds as in Python."""
    x = operand(operand_)
    n = x.shape[axis]
    start = 0 if start_index is None else int(start_index) + (n if start_index < 0 else 0)
    limit = n if limit_index is None else int(limit_index) + (n if limit_index < 0 else 0)
    starts, limits, strides = [0] * x.ndim, list(x.shape), [1] * x.ndim
    starts[axis], limits[axis], strides[axis] = start, limit, int(stride)
    return slice(x, starts, limits, strides)


def index_in_dim(operand_: Any, index: int, axis: int = 0, keepdims: bool = True) -> Any:
    """Element ``index`` along ``axis`` (kept as a size-1 dimension if ``keepdims``)."""
    x = operand(operand_)
    n = x.shape[axis]
    if not -n <= index < n:
        raise IndexError(f"index {index} is out of bounds for axis {axis} with size {n}")
    index = index % n
    out = slice_in_dim(x, index, index + 1, 1, axis)
    return out if keepdims else squeeze(out, (axis,))


# ---------------------------------------------------------------------------------------
# Start indices that are values: normalised here, clamped by the kernels
# ---------------------------------------------------------------------------------------


def _is_static_int(i: Any) -> bool:
    return isinstance(i, (int, np.integer)) and not isinstance(i, bool)


def _start_index_list(start_indices: Any) -> list[Any]:
    """A sequence of scalars from a sequence, or from a 1-D array of indices."""
    if isinstance(start_indices, (Array, Tracer, np.ndarray)):
        if np.ndim(start_indices) != 1:
            raise TypeError(
                "start_indices must be a sequence of scalars or a 1-D array, got shape "
                f"{np.shape(start_indices)}"
            )
        x = operand(start_indices)
        return [squeeze(slice(x, (i,), (i + 1,)), (0,)) for i in range(x.shape[0])]
    return list(start_indices)


def _index_dtype(indices: Sequence[Any]) -> np.dtype:
    """The integer dtype all start indices share: that of the first dynamic one."""
    for i in indices:
        if not _is_static_int(i):
            dt = dtypes.dtype(i)
            if not dtypes.issubdtype(dt, np.integer):
                raise TypeError(
                    "index arguments to dynamic_slice must be integers of the same type, "
                    f"got: {dt.name}"
                )
            return dt
    return dtypes.canonicalize_dtype(np.int32)


def _normalize_start(index: Any, size: int, dtype: np.dtype, allow_negative: bool) -> Any:
    """A start index counted from the front: Python ints now, traced ones with ``select_n``."""
    if _is_static_int(index):
        index = int(index) + (size if allow_negative and index < 0 else 0)
        return np.array(index, dtype=dtype)
    index = operand(index)
    if not allow_negative:
        return convert_element_type(index, dtype, False)
    negative = lt(index, np.array(0, dtype=index.dtype))
    as_dtype = convert_element_type(index, dtype, False)
    wrapped = add(as_dtype, np.array(size, dtype=dtype))
    return select_n(negative, index if index.aval.dtype == dtype else as_dtype, wrapped)


def _normalize_starts(start_indices: Any, shape: tuple[int, ...],
                      allow_negative_indices: bool) -> list[Any]:
    indices = _start_index_list(start_indices)
    if len(indices) != len(shape):
        raise ValueError(
            "Length of slice indices must match number of operand dimensions "
            f"({len(indices)} vs {shape})"
        )
    dtype = _index_dtype(indices)
    return [_normalize_start(i, n, dtype, allow_negative_indices)
            for i, n in zip(indices, shape)]


def _check_start_avals(name: str, indices: Sequence[ShapedArray], ndim: int) -> None:
    if len(indices) != ndim:
        raise ValueError(
            f"{name}: expected {ndim} start indices, one per operand dimension, got "
            f"{len(indices)}."
        )
    if any(i.shape != () or not dtypes.issubdtype(i.dtype, np.integer) for i in indices) or \
            len({i.dtype for i in indices}) > 1:
        kinds = ", ".join(i.str_long() for i in indices)
        raise TypeError(
            f"index arguments to {name} must be integers of the same type, got: {kinds}"
        )


def _clamped_box(shape: tuple[int, ...], starts: Sequence[np.ndarray],
                 sizes: Sequence[int]) -> tuple[builtins.slice, ...]:
    """XLA's rule: move each start into ``[0, dim - size]`` so the whole box fits."""
    clamped = [min(max(int(s), 0), n - size) for s, n, size in zip(starts, shape, sizes)]
    return tuple(builtins.slice(s, s + size) for s, size in zip(clamped, sizes))


# ---------------------------------------------------------------------------------------
# dynamic_slice and dynamic_update_slice
# ---------------------------------------------------------------------------------------


def _dynamic_slice_rule(x: ShapedArray, *indices: ShapedArray,
                        slice_sizes: tuple[int, ...]) -> ShapedArray:
    _check_start_avals("dynamic_slice", indices, x.ndim)
    if len(slice_sizes) != x.ndim:
        raise TypeError(
            "dynamic_slice slice_sizes must have the same length as operand dimensions, got "
            f"slice_sizes {slice_sizes} for operand shape {x.shape}."
        )
    if any(s > n for s, n in zip(slice_sizes, x.shape)):
        raise TypeError(
            "slice slice_sizes must be less than or equal to operand shape, got slice_sizes "
            f"{slice_sizes} for operand shape {x.shape}."
        )
    if any(s < 0 for s in slice_sizes):
        raise TypeError(
            f"slice slice_sizes must be greater than or equal to zero, got {slice_sizes}."
        )
    return ShapedArray(slice_sizes, x.dtype, x.weak_type)


dynamic_slice_p = Primitive("dynamic_slice")
dynamic_slice_p.def_impl(
    lambda x, *starts, slice_sizes: x[_clamped_box(x.shape, starts, slice_sizes)]
)
dynamic_slice_p.def_abstract_eval(_dynamic_slice_rule)


def dynamic_slice(operand_: Any, start_indices: Any, slice_sizes: Sequence[int], *,
                  allow_negative_indices: bool = True) -> Any:
    """The box of ``slice_sizes`` starting at (possibly traced) ``start_indices``.

    Negative starts count from the end; a start too large for the box is clamped (XLA
    never reads out of bounds), so ``dynamic_slice(arange(3), [5], [2])`` is ``[1, 2]``.
    """
    x = operand(operand_)
    starts = _normalize_starts(start_indices, x.shape, allow_negative_indices)
    return dynamic_slice_p.bind(x, *starts, slice_sizes=tuple(int(s) for s in slice_sizes))


def dynamic_slice_in_dim(operand_: Any, start_index: Any, slice_size: int, axis: int = 0, *,
                         allow_negative_indices: bool = True) -> Any:
    """``dynamic_slice`` along one ``axis``; the other dimensions are kept whole."""
    x = operand(operand_)
    starts, sizes = [0] * x.ndim, list(x.shape)
    starts[axis], sizes[axis] = start_index, int(slice_size)
    return dynamic_slice(x, starts, sizes, allow_negative_indices=allow_negative_indices)


def dynamic_index_in_dim(operand_: Any, index: Any, axis: int = 0, keepdims: bool = True, *,
                         allow_negative_indices: bool = True) -> Any:
    """Element ``index`` (possibly traced) along ``axis``."""
    out = dynamic_slice_in_dim(operand_, index, 1, axis,
                               allow_negative_indices=allow_negative_indices)
    return out if keepdims else squeeze(out, (axis,))


def _dynamic_update_slice_rule(x: ShapedArray, update: ShapedArray,
                               *indices: ShapedArray) -> ShapedArray:
    if update.ndim != x.ndim:
        raise TypeError(
            "dynamic_update_slice update must have the same rank as operand, got update "
            f"shape {update.shape} for operand shape {x.shape}."
        )
    if any(u > n for u, n in zip(update.shape, x.shape)):
        raise TypeError(
            "dynamic_update_slice update shape must be smaller than operand shape, got "
            f"update shape {update.shape} for operand shape {x.shape}."
        )
    if update.dtype != x.dtype:
        raise TypeError(
            "lax.dynamic_update_slice requires arguments to have the same dtypes, got "
            f"{x.dtype.name}, {update.dtype.name}."
        )
    _check_start_avals("dynamic_update_slice", indices, x.ndim)
    return x


def _dynamic_update_slice_kernel(x: np.ndarray, update: np.ndarray,
                                 *starts: np.ndarray) -> np.ndarray:
    out = x.copy()
    out[_clamped_box(x.shape, starts, update.shape)] = update
    return out


dynamic_update_slice_p = Primitive("dynamic_update_slice")
dynamic_update_slice_p.def_impl(_dynamic_update_slice_kernel)
dynamic_update_slice_p.def_abstract_eval(_dynamic_update_slice_rule)


def dynamic_update_slice(operand_: Any, update: Any, start_indices: Any, *,
                         allow_negative_indices: bool = True) -> Any:
    """A copy of ``operand_`` with the box at ``start_indices`` replaced by ``update``
    (the start clamped so that ``update`` fits, as in ``dynamic_slice``)."""
    x = operand(operand_)
    starts = _normalize_starts(start_indices, x.shape, allow_negative_indices)
    return dynamic_update_slice_p.bind(x, operand(update), *starts)


def dynamic_update_slice_in_dim(operand_: Any, update: Any, start_index: Any, axis: int, *,
                                allow_negative_indices: bool = True) -> Any:
    """``dynamic_update_slice`` at ``start_index`` along ``axis`` (0 along the others)."""
    x = operand(operand_)
    starts = [0] * x.ndim
    starts[axis] = start_index
    return dynamic_update_slice(x, update, starts,
                                allow_negative_indices=allow_negative_indices)


def dynamic_update_index_in_dim(operand_: Any, update: Any, index: Any, axis: int, *,
                                allow_negative_indices: bool = True) -> Any:
    """Replace element ``index`` along ``axis``; ``update`` may lack that dimension."""
    x, update = operand(operand_), operand(update)
    if update.ndim == x.ndim - 1:
        shape = list(update.shape)
        shape.insert(axis, 1)
        kept = [d for d in range(x.ndim) if d != axis]
        update = broadcast_in_dim(update, shape, kept)
    return dynamic_update_slice_in_dim(x, update, index, axis,
                                       allow_negative_indices=allow_negative_indices)


# ---------------------------------------------------------------------------------------
# Dimension numbers and out-of-bounds modes of gather and scatter
# ---------------------------------------------------------------------------------------


class GatherScatterMode(enum.Enum):
    """What gather and scatter do with indices whose window does not fit in the operand.

    ``CLIP`` clamps the window's start into range. ``FILL_OR_DROP`` fills such a gathered
    window with ``fill_value`` and drops such a scatter update. ``PROMISE_IN_BOUNDS``
    makes no promise about them; XLA clamps for gather and drops for scatter.
    """

    CLIP = 1
    FILL_OR_DROP = 2
    PROMISE_IN_BOUNDS = 3
    ONE_HOT = 4

    def __str__(self) -> str:
        return f"GatherScatterMode.{self.name}"

    @staticmethod
    def from_any(s: str | GatherScatterMode | None) -> GatherScatterMode:
        """``'clip'``, ``'fill'``/``'drop'``, ``'promise_in_bounds'`` or ``None`` (fill)."""
        if isinstance(s, GatherScatterMode):
            return s
        names = {"clip": GatherScatterMode.CLIP, None: GatherScatterMode.FILL_OR_DROP,
                 "fill": GatherScatterMode.FILL_OR_DROP, "drop": GatherScatterMode.FILL_OR_DROP,
                 "promise_in_bounds": GatherScatterMode.PROMISE_IN_BOUNDS,
                 "one_hot": GatherScatterMode.ONE_HOT}
        if s not in names:
            raise ValueError(f'Unknown gather mode "{s}"')
        return names[s]


class GatherDimensionNumbers(NamedTuple):
    """How a gather's windows are laid out.

    * ``offset_dims``: result dimensions that index *within* a window (the others index
      the batch of windows, in the order of the indices' leading dimensions);
    * ``collapsed_slice_dims``: operand dimensions whose window size is 1 and that are
      dropped from the result;
    * ``start_index_map``: for each entry of an index vector (the indices' last
      dimension), the operand dimension it starts;
    * ``operand_batching_dims`` / ``start_indices_batching_dims``: dimensions that pair up
      the operand and the indices one to one (as in ``take_along_axis``).
    """

    offset_dims: tuple[int, ...]
    collapsed_slice_dims: tuple[int, ...]
    start_index_map: tuple[int, ...]
    operand_batching_dims: tuple[int, ...] = ()
    start_indices_batching_dims: tuple[int, ...] = ()


class ScatterDimensionNumbers(NamedTuple):
    """How a scatter's updates map into the operand (the mirror image of gather's).

    ``update_window_dims`` are the dimensions of ``updates`` within a window;
    ``inserted_window_dims`` are operand dimensions where windows have size 1 (absent from
    ``updates``); ``scatter_dims_to_operand_dims`` maps each index-vector entry to the
    operand dimension it starts.
    """

    update_window_dims: tuple[int, ...]
    inserted_window_dims: tuple[int, ...]
    scatter_dims_to_operand_dims: tuple[int, ...]
    operand_batching_dims: tuple[int, ...] = ()
    scatter_indices_batching_dims: tuple[int, ...] = ()


def _tuples(numbers: NamedTuple) -> Any:
    """Dimension numbers with every field a tuple of ints (so they hash and print well)."""
    return type(numbers)(*(tuple(int(d) for d in field) for field in numbers))


def default_fill_value(dtype: np.dtype) -> Any:
    """What an out-of-bounds gather reads in ``FILL_OR_DROP`` mode: NaN for inexact
    dtypes, the most negative signed integer, the largest unsigned integer, ``True``."""
    if dtypes.issubdtype(dtype, np.inexact):
        return float("nan")
    if dtype == np.bool_:
        return True
    info = dtypes.iinfo(dtype)
    return int(info.min if dtypes.issubdtype(dtype, np.signedinteger) else info.max)


# ---------------------------------------------------------------------------------------
# Windows: the common core of the gather and scatter kernels
# ---------------------------------------------------------------------------------------


def _window_starts(shape: tuple[int, ...], indices: np.ndarray, index_map: tuple[int, ...],
                   operand_batching: tuple[int, ...],
                   indices_batching: tuple[int, ...]) -> np.ndarray:
    """The start of every window: an int64 array (number of windows, operand rank).

    The indices' last dimension holds index vectors; each entry ``k`` starts operand
    dimension ``index_map[k]``. A batching dimension starts at the window's own position
    along the paired dimension of the indices. Other dimensions start at 0.
    """
    batch_shape = indices.shape[:-1]
    count = int(np.prod(batch_shape, dtype=np.int64))
    vectors = indices.reshape(count, indices.shape[-1]).astype(np.int64)
    starts = np.zeros((count, len(shape)), dtype=np.int64)
    for k, d in enumerate(index_map):
        starts[:, d] = vectors[:, k]
    if operand_batching:
        positions = np.indices(batch_shape).reshape(len(batch_shape), count)
        for d, b in zip(operand_batching, indices_batching):
            starts[:, d] = positions[b]
    return starts


def _window_index(starts: np.ndarray, window: Sequence[int]) -> tuple[np.ndarray, ...]:
    """Fancy indices that pick every window out of ``operand[None]``: the result has shape
    (number of windows, 1, *window). The leading unit dimension keeps the indices a
    non-empty tuple even for a 0-d operand."""
    starts = np.concatenate([np.zeros((len(starts), 1), np.int64), starts], axis=1)
    window = (1, *window)
    rank = len(window)
    index = []
    for d, size in enumerate(window):
        start = starts[:, d].reshape((-1,) + (1,) * rank)
        offset = np.arange(size).reshape((1,) * (d + 1) + (size,) + (1,) * (rank - d - 1))
        index.append(start + offset)
    return tuple(index)


def _in_bounds(starts: np.ndarray, shape: tuple[int, ...], window: Sequence[int]) -> np.ndarray:
    upper = np.array(shape, dtype=np.int64) - np.array(window, dtype=np.int64)
    return np.all((starts >= 0) & (starts <= upper), axis=1)


def _clamp(starts: np.ndarray, shape: tuple[int, ...], window: Sequence[int]) -> np.ndarray:
    upper = np.array(shape, dtype=np.int64) - np.array(window, dtype=np.int64)
    return np.clip(starts, 0, upper)


# ---------------------------------------------------------------------------------------
# gather
# ---------------------------------------------------------------------------------------


def _check_indices(name: str, indices: ShapedArray, map_length: int) -> None:
    if not dtypes.issubdtype(indices.dtype, np.integer):
        raise TypeError(f"{name} indices must have an integer type, got {indices.dtype.name}")
    if indices.ndim == 0 or indices.shape[-1] != map_length:
        raise TypeError(
            f"{name}: the last dimension of the indices (shape {indices.shape}) must hold one "
            f"entry per mapped operand dimension ({map_length})."
        )


def _gather_rule(x: ShapedArray, indices: ShapedArray, *,
                 dimension_numbers: GatherDimensionNumbers, slice_sizes: tuple[int, ...],
                 unique_indices: bool, indices_are_sorted: bool, mode: GatherScatterMode,
                 fill_value: Any) -> ShapedArray:
    dn = dimension_numbers
    _check_indices("gather", indices, len(dn.start_index_map))
    if len(slice_sizes) != x.ndim:
        raise TypeError(
            "Gather op must have one slice size for every input dimension; got "
            f"len(slice_sizes)={len(slice_sizes)}, input_shape.rank={x.ndim}"
        )
    if any(not 0 <= s <= n for s, n in zip(slice_sizes, x.shape)):
        raise TypeError(
            f"Slice size must be between 0 and the input dimension size; got slice_sizes "
            f"{slice_sizes} for operand shape {x.shape}."
        )
    for i, d in enumerate((*dn.collapsed_slice_dims, *dn.operand_batching_dims)):
        if slice_sizes[d] != 1:
            raise TypeError(
                "Gather op can only collapse slice dims with bound 1, but bound is "
                f"{slice_sizes[d]} for index {d} at position {i}."
            )
    dropped = {*dn.collapsed_slice_dims, *dn.operand_batching_dims}
    window = [s for d, s in enumerate(slice_sizes) if d not in dropped]
    if len(window) != len(dn.offset_dims):
        raise TypeError(
            f"All components of the offset index in a gather op must either be a offset "
            f"dimension or explicitly collapsed/batching; got len(slice_sizes)="
            f"{len(slice_sizes)}, output_slice_sizes={tuple(window)}, "
            f"collapsed_slice_dims={dn.collapsed_slice_dims}, "
            f"operand_batching_dims={dn.operand_batching_dims}."
        )
    batch = list(indices.shape[:-1])
    rank = len(batch) + len(window)
    offsets = dict(zip(dn.offset_dims, window))
    shape = [offsets[p] if p in offsets else batch.pop(0) for p in range(rank)]
    return ShapedArray(shape, x.dtype, x.weak_type)


def _gather_kernel(x: np.ndarray, indices: np.ndarray, *,
                   dimension_numbers: GatherDimensionNumbers, slice_sizes: tuple[int, ...],
                   unique_indices: bool, indices_are_sorted: bool, mode: GatherScatterMode,
                   fill_value: Any) -> np.ndarray:
    dn = dimension_numbers
    starts = _window_starts(x.shape, indices, dn.start_index_map, dn.operand_batching_dims,
                            dn.start_indices_batching_dims)
    windows = x[None][_window_index(_clamp(starts, x.shape, slice_sizes), slice_sizes)]
    windows = windows.reshape(len(starts), *slice_sizes)
    if mode == GatherScatterMode.FILL_OR_DROP:
        fits = _in_bounds(starts, x.shape, slice_sizes).reshape((-1,) + (1,) * x.ndim)
        windows = np.where(fits, windows, np.asarray(fill_value).astype(x.dtype))
    dropped = {*dn.collapsed_slice_dims, *dn.operand_batching_dims}
    window = [s for d, s in enumerate(slice_sizes) if d not in dropped]
    batch_shape = indices.shape[:-1]
    out = windows.reshape((*batch_shape, *window))
    # ``out`` is (batch dims..., window dims...): move the window dims to offset_dims.
    rank = out.ndim
    batch_axes = iter(range(len(batch_shape)))
    order = [len(batch_shape) + dn.offset_dims.index(p) if p in dn.offset_dims
             else next(batch_axes) for p in range(rank)]
    return np.transpose(out, order)


gather_p = Primitive("gather")
gather_p.def_impl(_gather_kernel)
gather_p.def_abstract_eval(_gather_rule)


def gather(operand_: Any, start_indices: Any, dimension_numbers: GatherDimensionNumbers,
           slice_sizes: Sequence[int], *, unique_indices: bool = False,
           indices_are_sorted: bool = False, mode: str | GatherScatterMode | None = None,
           fill_value: Any = None) -> Any:
    """Read a batch of windows of ``slice_sizes`` whose starts are ``start_indices``.

    ``lax.gather``'s default mode is ``PROMISE_IN_BOUNDS`` (clamped, in practice); with
    ``mode='fill'`` out-of-bounds windows read ``fill_value`` (NaN etc. by default).
    """
    x = operand(operand_, gather_p)
    mode = GatherScatterMode.PROMISE_IN_BOUNDS if mode is None \
        else GatherScatterMode.from_any(mode)
    if mode == GatherScatterMode.FILL_OR_DROP:
        fill_value = default_fill_value(x.dtype) if fill_value is None else fill_value
    else:
        fill_value = None
    return gather_p.bind(
        x, operand(start_indices, gather_p, 1), dimension_numbers=_tuples(dimension_numbers),
        slice_sizes=tuple(int(s) for s in slice_sizes), unique_indices=bool(unique_indices),
        indices_are_sorted=bool(indices_are_sorted), mode=mode, fill_value=fill_value,
    )


# ---------------------------------------------------------------------------------------
# scatter and its combining variants
# ---------------------------------------------------------------------------------------


def _scatter_window(x_shape: tuple[int, ...], updates_shape: tuple[int, ...],
                    dn: ScatterDimensionNumbers) -> list[int]:
    """The window size in every operand dimension (1 where windows are inserted)."""
    sizes = iter(updates_shape[d] for d in dn.update_window_dims)
    inserted = {*dn.inserted_window_dims, *dn.operand_batching_dims}
    return [1 if d in inserted else next(sizes, 1) for d in range(len(x_shape))]


def _scatter_rule(name: str, x: ShapedArray, indices: ShapedArray, updates: ShapedArray, *,
                  dimension_numbers: ScatterDimensionNumbers, indices_are_sorted: bool,
                  unique_indices: bool, mode: GatherScatterMode, update_jaxpr: Any,
                  update_consts: tuple) -> ShapedArray:
    dn = dimension_numbers
    _check_indices(name, indices, len(dn.scatter_dims_to_operand_dims))
    if updates.dtype != x.dtype:
        raise TypeError(
            f"lax.{name.replace('-', '_')} requires arguments to have the same dtypes, got "
            f"{x.dtype.name}, {updates.dtype.name}."
        )
    expected_rank = len(dn.update_window_dims) + indices.ndim - 1
    if updates.ndim != expected_rank:
        raise TypeError(f"Updates tensor must be of rank {expected_rank}; got {updates.ndim}.")
    inserted = len(dn.inserted_window_dims) + len(dn.operand_batching_dims)
    if len(dn.update_window_dims) + inserted != x.ndim:
        raise TypeError(
            "Scatter op has window of size "
            f"{len(dn.update_window_dims)}; doesn't match operand of rank {x.ndim}."
        )
    scatter_dims = [d for d in range(updates.ndim) if d not in dn.update_window_dims]
    if tuple(updates.shape[d] for d in scatter_dims) != indices.shape[:-1]:
        raise TypeError(
            f"Bounds of the scatter dimensions of updates must be the same as the bounds of "
            f"the corresponding dimensions of scatter indices; got updates shape "
            f"{updates.shape} for indices shape {indices.shape}."
        )
    window = _scatter_window(x.shape, updates.shape, dn)
    inserted = {*dn.inserted_window_dims, *dn.operand_batching_dims}  # size 1 by definition
    if any(w > n for d, (w, n) in enumerate(zip(window, x.shape)) if d not in inserted):
        raise TypeError(
            f"Bounds of the window dimensions of updates must not exceed the bounds of the "
            f"operand; got updates shape {updates.shape} for operand shape {x.shape}."
        )
    return x


def _run_jaxpr_on_numpy(jaxpr: Jaxpr, consts: Sequence[Any], *args: np.ndarray) -> np.ndarray:
    """Evaluate a small elementwise jaxpr with the primitives' NumPy kernels directly.

    A kernel runs on the device's worker thread, where binding primitives would queue
    work behind itself; so ``scatter_apply``'s function is computed kernel by kernel.
    """
    env = dict(zip(jaxpr.constvars, map(np.asarray, consts)))
    env.update(zip(jaxpr.invars, args))
    read = lambda a: np.asarray(a.value) if type(a) is Literal else env[a]
    for eqn in jaxpr.eqns:
        outs = eqn.primitive.impl(*map(read, eqn.invars), **eqn.params)
        for var, value in zip(eqn.outvars, outs if eqn.primitive.multiple_results else [outs]):
            env[var] = value
    return read(jaxpr.outvars[0])


def _apply_update_jaxpr(out: np.ndarray, index: tuple[np.ndarray, ...], updates: np.ndarray,
                        jaxpr: Jaxpr, consts: tuple) -> None:
    """``out[i] = f(out[i], u)`` for every update, in order: an element hit twice gets ``f``
    twice. Each round handles at most one update per element, vectorised."""
    flat = np.ravel_multi_index(np.broadcast_arrays(*index), out.shape).ravel()
    values = updates.reshape(-1)  # updates are laid out as the windows: (count, *window)
    seen = np.zeros(len(flat), dtype=np.int64)  # how many earlier updates hit the same place
    order = np.argsort(flat, kind="stable")
    sorted_flat = flat[order]
    first = np.searchsorted(sorted_flat, sorted_flat, side="left")
    seen[order] = np.arange(len(flat)) - first
    target = out.reshape(-1)
    for round_ in range(int(seen.max(initial=-1)) + 1):
        hits = seen == round_
        where = flat[hits]
        result = _run_jaxpr_on_numpy(jaxpr, consts, target[where], values[hits])
        target[where] = np.asarray(result).astype(out.dtype, copy=False)


def _scatter_kernel(combine: Callable | None, x: np.ndarray, indices: np.ndarray,
                    updates: np.ndarray, *, dimension_numbers: ScatterDimensionNumbers,
                    indices_are_sorted: bool, unique_indices: bool, mode: GatherScatterMode,
                    update_jaxpr: Any, update_consts: tuple) -> np.ndarray:
    dn = dimension_numbers
    window = _scatter_window(x.shape, updates.shape, dn)
    scatter_dims = [d for d in range(updates.ndim) if d not in dn.update_window_dims]
    updates = np.transpose(updates, scatter_dims + list(dn.update_window_dims))
    updates = updates.reshape(int(np.prod(indices.shape[:-1])), *window)
    starts = _window_starts(x.shape, indices, dn.scatter_dims_to_operand_dims,
                            dn.operand_batching_dims, dn.scatter_indices_batching_dims)
    if mode == GatherScatterMode.CLIP and x.size:  # (into an empty x nothing fits: dropped)
        starts = _clamp(starts, x.shape, window)
    else:  # FILL_OR_DROP, and what XLA does with a broken PROMISE_IN_BOUNDS: drop
        fits = _in_bounds(starts, x.shape, window)
        starts, updates = starts[fits], updates[fits]
    index = _window_index(starts, window)
    updates = updates.reshape(len(starts), 1, *window)
    out = x.copy()
    target = out[None]  # a view: writing into it writes into ``out``
    if combine is not None:
        combine(target, index, updates)
    elif update_jaxpr is not None:
        _apply_update_jaxpr(target, index, updates, update_jaxpr, update_consts)
    else:
        target[index] = updates  # with duplicate indices, the last one wins (as XLA on CPU)
    return out


def _scatter_primitive(name: str, combine: Callable | None) -> Primitive:
    prim = Primitive(name)
    prim.def_impl(functools.partial(_scatter_kernel, combine))
    prim.def_abstract_eval(functools.partial(_scatter_rule, name))
    return prim


scatter_p = _scatter_primitive("scatter", None)
scatter_add_p = _scatter_primitive("scatter-add", np.add.at)
scatter_sub_p = _scatter_primitive("scatter-sub", np.subtract.at)
scatter_mul_p = _scatter_primitive("scatter-mul", np.multiply.at)
scatter_min_p = _scatter_primitive("scatter-min", np.minimum.at)
scatter_max_p = _scatter_primitive("scatter-max", np.maximum.at)


@functools.lru_cache(maxsize=256)
def _combiner_jaxpr(combine: Callable, dtype: np.dtype) -> Jaxpr:
    """``{ lambda ; a:f32[] b:f32[]. let c:f32[] = add a b in (c,) }``: how a scatter
    combines an old value with an update, recorded as JAX records it in the equation."""
    from minijax.tracing import trace_to_jaxpr

    scalar = ShapedArray((), dtype)
    return trace_to_jaxpr(lambda old, new: [combine(old, new)], [scalar, scalar]).jaxpr


def _bind_scatter(prim: Primitive, operand_: Any, scatter_indices: Any, updates: Any,
                  dimension_numbers: ScatterDimensionNumbers, indices_are_sorted: bool,
                  unique_indices: bool, mode: Any, update_jaxpr: Jaxpr | None,
                  update_consts: tuple = ()) -> Any:
    return prim.bind(
        operand(operand_), operand(scatter_indices), operand(updates),
        dimension_numbers=_tuples(dimension_numbers), indices_are_sorted=bool(indices_are_sorted),
        unique_indices=bool(unique_indices), mode=GatherScatterMode.from_any(mode),
        update_jaxpr=update_jaxpr, update_consts=update_consts,
    )


def _scatter_api(prim: Primitive, combine: Callable | None, doc: str) -> Callable[..., Any]:
    def scatter_fn(operand_: Any, scatter_indices: Any, updates: Any,
                   dimension_numbers: ScatterDimensionNumbers, *,
                   indices_are_sorted: bool = False, unique_indices: bool = False,
                   mode: str | GatherScatterMode | None = None) -> Any:
        x = operand(operand_)
        jaxpr = None if combine is None else _combiner_jaxpr(combine, x.dtype)
        return _bind_scatter(prim, x, scatter_indices, updates, dimension_numbers,
                             indices_are_sorted, unique_indices, mode, jaxpr)

    scatter_fn.__name__ = scatter_fn.__qualname__ = prim.name.replace("-", "_")
    scatter_fn.__doc__ = doc
    return scatter_fn


scatter = _scatter_api(scatter_p, None, "Write ``updates`` into windows of ``operand``; "
                       "out-of-bounds windows are dropped by default.")
scatter_add = _scatter_api(scatter_add_p, elementwise.add,
                           "Add ``updates`` into windows; duplicate indices accumulate.")
scatter_sub = _scatter_api(scatter_sub_p, elementwise.sub,
                           "Subtract ``updates`` from windows; duplicates accumulate.")
scatter_mul = _scatter_api(scatter_mul_p, elementwise.mul,
                           "Multiply windows by ``updates``; duplicates accumulate.")
scatter_min = _scatter_api(scatter_min_p, elementwise.min,
                           "Elementwise minimum of windows and ``updates``.")
scatter_max = _scatter_api(scatter_max_p, elementwise.max,
                           "Elementwise maximum of windows and ``updates``.")


def scatter_apply(operand_: Any, scatter_indices: Any, func: Callable[[Any], Any],
                  dimension_numbers: ScatterDimensionNumbers, *, update_shape: Sequence[int] = (),
                  indices_are_sorted: bool = False, unique_indices: bool = False,
                  mode: str | GatherScatterMode | None = None) -> Any:
    """Apply ``func`` to the elements of the windows (twice where windows overlap twice).

    It is a ``scatter`` whose ``update_jaxpr`` is ``func`` (ignoring the update value),
    with dummy zero updates of ``update_shape``.
    """
    from minijax.tracing import trace_to_jaxpr

    x = operand(operand_)
    scalar = ShapedArray((), x.dtype)
    closed = trace_to_jaxpr(lambda old, _: [func(old)], [scalar, scalar])
    zeros = broadcast_in_dim(convert_element_type(0, x.dtype), tuple(update_shape), ())
    return _bind_scatter(scatter_p, x, scatter_indices, zeros, dimension_numbers,
                         indices_are_sorted, unique_indices, mode, closed.jaxpr,
                         tuple(closed.consts))


# ---------------------------------------------------------------------------------------
# vmap: batching rules
# ---------------------------------------------------------------------------------------


def _slice_batching(axis_data: Any, vals: list, dims: list, *, start_indices: tuple[int, ...],
                    limit_indices: tuple[int, ...], strides: tuple[int, ...] | None
                    ) -> tuple[Any, int]:
    (x,), (bdim,) = vals, dims
    starts, limits = list(start_indices), list(limit_indices)
    starts.insert(bdim, 0)
    limits.insert(bdim, x.shape[bdim])
    steps = None if strides is None else [*strides[:bdim], 1, *strides[bdim:]]
    return slice(x, starts, limits, steps), bdim


def _batch_start_indices(starts: Sequence[Any], dims: Sequence[int | None]
                         ) -> tuple[Any, int | None]:
    """The scalar starts of a dynamic slice as one index vector (a batch of them, ``[B,
    n]``, if any start is batched), for the equivalent gather or scatter."""
    if not starts:
        return np.array([], "int32"), None
    size = next((x.shape[d] for x, d in zip(starts, dims) if d is not None), None)
    if size is None:
        return concatenate([broadcast(i, (1,)) for i in starts], 0), None
    return concatenate([broadcast_in_dim(x, (size, 1), (0,) if d is not None else ())
                        for x, d in zip(starts, dims)], 1), 0


def _dynamic_slice_batching(axis_data: Any, vals: list, dims: list, *,
                            slice_sizes: tuple[int, ...]) -> tuple[Any, int]:
    """JAX's rule: a dynamic slice is a gather of one window; batch that gather."""
    (x, *starts), (x_dim, *start_dims) = vals, dims
    every = tuple(range(len(starts)))
    index, index_dim = _batch_start_indices(starts, start_dims)
    return _gather_batching(
        axis_data, [x, index], [x_dim, index_dim],
        dimension_numbers=GatherDimensionNumbers(every, (), every), slice_sizes=slice_sizes,
        unique_indices=True, indices_are_sorted=True, mode=GatherScatterMode.CLIP,
        fill_value=None)


def _dynamic_update_slice_batching(axis_data: Any, vals: list, dims: list
                                   ) -> tuple[Any, int]:
    """JAX's rule: a dynamic update slice is a scatter of one window; vmap that scatter."""
    from minijax.vectorize import vmap  # noqa: PLC0415  (the API is built on lax)

    (x, update, *starts), (x_dim, update_dim, *start_dims) = vals, dims
    every = tuple(range(update.ndim - (update_dim is not None)))
    index, index_dim = _batch_start_indices(starts, start_dims)
    numbers = ScatterDimensionNumbers(every, (), every)
    scatter_window = functools.partial(scatter, dimension_numbers=numbers,
                                       indices_are_sorted=True, unique_indices=True,
                                       mode=GatherScatterMode.CLIP)
    return vmap(scatter_window, in_axes=(x_dim, index_dim, update_dim))(x, index, update), 0


def _shifted(dims: Sequence[int]) -> tuple[int, ...]:
    """Dimensions one further along, as NumPy ints (which JAX's jaxprs print so)."""
    return tuple(np.add(1, dims))


def _gather_batching(axis_data: Any, vals: list, dims: list, *,
                     dimension_numbers: GatherDimensionNumbers, slice_sizes: tuple[int, ...],
                     unique_indices: bool, indices_are_sorted: bool, mode: GatherScatterMode,
                     fill_value: Any) -> tuple[Any, int]:
    """JAX's rule: a batched operand gains a whole-size window dimension in front; batched
    indices gain a leading batch of windows; both batched pair up as batching dims."""
    (x, indices), (x_dim, indices_dim) = vals, dims
    dn = dimension_numbers
    if indices_dim is None:
        x = batching.moveaxis(x, x_dim, 0)
        slice_sizes = (x.shape[0], *slice_sizes)
        dn = GatherDimensionNumbers((0, *_shifted(dn.offset_dims)),
                                    _shifted(dn.collapsed_slice_dims),
                                    _shifted(dn.start_index_map),
                                    _shifted(dn.operand_batching_dims),
                                    dn.start_indices_batching_dims)
    elif x_dim is None:
        indices = batching.moveaxis(indices, indices_dim, 0)
        dn = GatherDimensionNumbers(tuple(d + 1 for d in dn.offset_dims),
                                    dn.collapsed_slice_dims,
                                    dn.start_index_map, dn.operand_batching_dims,
                                    _shifted(dn.start_indices_batching_dims))
        unique_indices = indices_are_sorted = False
    else:
        x = batching.moveaxis(x, x_dim, 0)
        indices = batching.moveaxis(indices, indices_dim, 0)
        slice_sizes = (0 if x.shape[0] == 0 else 1, *slice_sizes)
        dn = GatherDimensionNumbers(_shifted(dn.offset_dims), _shifted(dn.collapsed_slice_dims),
                                    _shifted(dn.start_index_map),
                                    (0, *_shifted(dn.operand_batching_dims)),
                                    (0, *_shifted(dn.start_indices_batching_dims)))
    return gather_p.bind(x, indices, dimension_numbers=dn, slice_sizes=slice_sizes,
                         unique_indices=unique_indices, indices_are_sorted=indices_are_sorted,
                         mode=mode, fill_value=fill_value), 0


def _scatter_batching(prim: Primitive) -> Callable[..., tuple[Any, int]]:
    """JAX's rule: operand and updates get the batch axis in front; unbatched indices
    write the same windows of every example, batched ones pair up as batching dims."""
    def rule(axis_data: Any, vals: list, dims: list, *,
             dimension_numbers: ScatterDimensionNumbers, **params: Any) -> tuple[Any, int]:
        (x, indices, updates), (x_dim, indices_dim, updates_dim) = vals, dims
        dn = dimension_numbers
        x = batching.bdim_at_front(x, x_dim, axis_data.size)
        updates = batching.bdim_at_front(updates, updates_dim, axis_data.size)
        if indices_dim is None:
            dn = ScatterDimensionNumbers((0, *_shifted(dn.update_window_dims)),
                                         _shifted(dn.inserted_window_dims),
                                         _shifted(dn.scatter_dims_to_operand_dims),
                                         _shifted(dn.operand_batching_dims),
                                         dn.scatter_indices_batching_dims)
        else:
            indices = batching.bdim_at_front(indices, indices_dim, axis_data.size)
            dn = ScatterDimensionNumbers(_shifted(dn.update_window_dims),
                                         _shifted(dn.inserted_window_dims),
                                         _shifted(dn.scatter_dims_to_operand_dims),
                                         (0, *_shifted(dn.operand_batching_dims)),
                                         (0, *_shifted(dn.scatter_indices_batching_dims)))
        return prim.bind(x, indices, updates, dimension_numbers=dn, **params), 0
    return rule


batching.batching_rules[slice_p] = _slice_batching
batching.batching_rules[dynamic_slice_p] = _dynamic_slice_batching
batching.batching_rules[dynamic_update_slice_p] = _dynamic_update_slice_batching
batching.batching_rules[gather_p] = _gather_batching
for _prim in (scatter_p, scatter_add_p, scatter_sub_p, scatter_mul_p, scatter_min_p,
              scatter_max_p):
    batching.batching_rules[_prim] = _scatter_batching(_prim)
