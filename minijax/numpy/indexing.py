"""NumPy indexing on immutable arrays: ``x[idx]``, ``x.at[idx].set(y)``, ``take``.

An index is first *parsed* into one entry per part of the index (:class:`_Entry`):
a new axis, a static int, a dynamic (traced) int, a slice, or an integer array (boolean
masks become integer arrays here, which is why they must be concrete). Then one of three
translations into ``lax`` is chosen, the same ones JAX chooses, so jaxprs look alike:

1. only static ints and slices: ``slice`` (+ ``rev`` for negative steps, ``squeeze`` for
   ints, ``broadcast_in_dim`` for new axes);
2. traced ints and step-1 slices: ``dynamic_slice`` (+ ``squeeze``); the start is
   clamped, so ``x[i]`` never reads out of bounds;
3. anything else: ``gather``. :func:`_to_gather` describes the index as windows: every
   integer (array) index starts a size-1 window in its dimension, every slice is a
   window (or, with a step, an ``iota`` of starts). NumPy's rule for where the
   dimensions of integer arrays go decides the layout of the result.

Updates (``x.at[idx].add(y)``) always use the third translation with ``scatter``: the
windows are the same, ``y`` is broadcast to the shape ``x[idx]`` would have.
"""

from __future__ import annotations

import operator
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np

from minijax import core, dtypes, errors, lax
from minijax.array import Array
from minijax.compiler.jit import jit
from minijax.core import Tracer
from minijax.flags import config
from minijax.lax.shapes import squeeze_p
from minijax.lax.slicing import (
    GatherDimensionNumbers,
    GatherScatterMode,
    ScatterDimensionNumbers,
    slice_p,
)
from minijax.numpy.promotion import broadcast_to, result_type

# ---------------------------------------------------------------------------------------
# Parsing an index
# ---------------------------------------------------------------------------------------

_NON_TUPLE_SEQUENCE = (
    "Using a non-tuple sequence for multidimensional indexing is not allowed; use "
    "`arr[array(seq)]` instead of `arr[seq]`. See https://github.com/jax-ml/jax/issues/4564 "
    "for more information."
)


@dataclass(eq=False)  # entries are compared by identity: their values may be tracers
class _Entry:
    """One part of an index. ``kind`` is ``new``, ``int``, ``dyn``, ``slice`` or ``array``.

    ``dim`` is the operand dimension it indexes (``None`` for a new axis); ``value`` is the
    int, the traced scalar, the ``(start, stop, step)`` triple, the index array, or (for a
    new axis) its size: 1, or 0 for ``x[False]``.
    """

    kind: str
    dim: int | None
    value: Any


def _is_array(x: Any) -> bool:
    return isinstance(x, (Array, Tracer, np.ndarray))


def _index_dtype_error(dtype: Any) -> TypeError:
    return TypeError(f"Indexer must have integer or boolean type, got indexer with type {dtype}")


def _classify(item: Any, position: int) -> tuple[str, Any]:
    """(kind, value) of one index item, before dimensions are assigned."""
    if item is None:
        return "new", 1
    if item is Ellipsis:
        return "ellipsis", None
    if isinstance(item, slice):
        return "slice", _static_slice(item, position)
    if isinstance(item, (bool, np.bool_)):
        return "bool", bool(item)
    if isinstance(item, (int, np.integer)):
        return "int", int(item)
    if isinstance(item, str):
        raise TypeError(f"JAX does not support string indexing; got idx={item!r}")
    if isinstance(item, (list, tuple)):
        item = np.asarray(item)
    if not _is_array(item):
        if isinstance(item, (float, complex, np.inexact)):
            raise _index_dtype_error(np.dtype(type(item)).name)
        raise TypeError(f"Indexing mode not yet supported. Got unsupported indexer at "
                        f"position {position}: {item!r}")
    dt = item.dtype
    if dt == np.bool_:
        return ("bool", item) if item.ndim else ("bool", _concrete_mask(item))
    if not dtypes.issubdtype(dt, np.integer):
        raise _index_dtype_error(dt.name)
    return ("dyn", item) if item.ndim == 0 else ("array", item)


def _static_slice(s: slice, position: int) -> slice:
    """Slice bounds must be known now (a traced bound would make the shape unknown)."""
    bounds = (s.start, s.stop, s.step)
    if all(b is None or type(b) is int for b in bounds):
        return s
    for bound in bounds:
        if isinstance(bound, Tracer) and bound.to_concrete_value() is None:
            raise IndexError(f"Slice entries must be static integers. Got {s} at position "
                             f"{position}")
    as_int = lambda b: None if b is None else operator.index(b)
    return slice(as_int(s.start), as_int(s.stop), as_int(s.step))


def _concrete_mask_value(mask: Tracer) -> np.ndarray:
    """A traced mask's value, which must be known (a JVP tracer's primal, say)."""
    value = mask.to_concrete_value()
    if value is None:
        raise errors.NonConcreteBooleanIndexError(mask.aval.str_long())
    return value


def _concrete_mask(mask: Any) -> Any:
    """A 0-d boolean index: ``x[True]`` adds an axis of size 1, ``x[False]`` of size 0."""
    return bool(np.asarray(_concrete_mask_value(mask) if isinstance(mask, Tracer) else mask))


def _mask_indices(mask: Any, shape: tuple[int, ...], position: int) -> tuple[np.ndarray, ...]:
    """The integer arrays equivalent to a boolean mask: its ``nonzero()``."""
    if isinstance(mask, Tracer):  # concrete (a JVP tracer's primal), or an error
        mask = _concrete_mask_value(mask)
    mask = np.asarray(mask)
    if mask.shape != shape:
        raise IndexError(
            f"boolean index did not match shape of indexed array in index {position}: got "
            f"{mask.shape}, expected {list(shape)}"
        )
    return tuple(i.astype(dtypes.canonicalize_dtype(np.int64)) for i in np.nonzero(mask))


def _consumed(kind: str, value: Any) -> int:
    """How many operand dimensions an index item indexes."""
    if kind in ("new", "ellipsis") or (kind == "bool" and np.ndim(value) == 0):
        return 0
    return np.ndim(value) if kind == "bool" else 1


def _parse(shape: tuple[int, ...], index: Any) -> list[_Entry]:
    """The index as entries with operand dimensions; ellipsis expanded, masks converted."""
    if (type(index) is int or type(index) is slice) and shape:  # x[i], x[a:b]: fast path
        first = _entry("int" if type(index) is int else "slice", 0,
                       _static_slice(index, 0) if type(index) is slice else index, shape[0])
        return [first] + [_Entry("slice", d, (0, shape[d], 1)) for d in range(1, len(shape))]
    if isinstance(index, list):
        raise TypeError(_NON_TUPLE_SEQUENCE)
    items = index if isinstance(index, tuple) else (index,)
    classified = [_classify(item, i) for i, item in enumerate(items)]
    if sum(kind == "ellipsis" for kind, _ in classified) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    used = sum(_consumed(kind, value) for kind, value in classified)
    if used > len(shape):
        raise IndexError(f"Too many indices: array is {len(shape)}-dimensional, but {used} "
                         "were indexed")
    entries: list[_Entry] = []
    dim = 0
    for position, (kind, value) in enumerate(classified):
        if kind == "ellipsis":
            for _ in range(len(shape) - used):
                entries.append(_Entry("slice", dim, (0, shape[dim], 1)))
                dim += 1
        elif kind == "new" or (kind == "bool" and np.ndim(value) == 0):
            entries.append(_Entry("new", None, int(value)))
        elif kind == "bool":
            ndim = np.ndim(value)
            for arr in _mask_indices(value, shape[dim:dim + ndim], position):
                entries.append(_Entry("array", dim, arr))
                dim += 1
        else:
            entries.append(_entry(kind, dim, value, shape[dim]))
            dim += 1
    entries += [_Entry("slice", d, (0, shape[d], 1)) for d in range(dim, len(shape))]
    return entries


def _entry(kind: str, dim: int, value: Any, size: int) -> _Entry:
    if kind == "slice":
        return _Entry("slice", dim, value.indices(size))
    if kind == "int":
        if -size <= value < size:
            return _Entry("int", dim, value % size)
        # Out of range: JAX does not raise, it clamps like a traced index would.
        return _Entry("dyn", dim, np.array(value, dtype=np.int32))
    return _Entry(kind, dim, value)


def _check_empty_axes(entries: list[_Entry], shape: tuple[int, ...]) -> None:
    """An int (static or traced) has nothing to read in an axis of size 0: out-of-range
    ints are clamped elsewhere, but there is no element to clamp to. (Among integer arrays
    an int becomes one of them, and the gather's slice sizes are what is wrong then.)"""
    if any(e.kind == "array" for e in entries):
        return
    for e in entries:
        if e.kind in ("int", "dyn") and shape[e.dim] == 0:
            raise IndexError(f"index is out of bounds for axis {e.dim} with size 0")


def _slice_length(start: int, stop: int, step: int) -> int:
    return len(range(start, stop, step))


# ---------------------------------------------------------------------------------------
# Index values: normalising negative indices, choosing the index dtype
# ---------------------------------------------------------------------------------------


def _to_index_dtype(i: Any) -> Any:
    """Gather and scatter indices are int32, whatever integer type the index had."""
    return lax.convert_element_type(i, np.int32, False)


def _normalize(i: Any, size: int) -> Any:
    """``i + size`` where ``i < 0``. NumPy index arrays are tested on the host, as JAX does."""
    dt = dtypes.dtype(i)
    if dtypes.issubdtype(dt, np.unsignedinteger):
        return i
    if isinstance(i, np.ndarray):
        negative = i < 0
        i = lax.operand(i.astype(dtypes.canonicalize_dtype(dt)))
        return lax.select_n(negative, i, lax.add(i, np.array(size, i.dtype)))
    negative = lax.lt(i, np.array(0, dt))
    return lax.select_n(negative, i, lax.add(i, lax.convert_element_type(size, dt, True)))


# ---------------------------------------------------------------------------------------
# Translations 1 and 2: slice, and dynamic_slice
# ---------------------------------------------------------------------------------------


def _new_axes(out: Any, entries: list[_Entry], indexed: set[int]) -> Any:
    """Insert the new axes (``None``, ``True``, ``False``) where the index put them.

    ``indexed`` holds the positions of the other entries that leave a dimension in the
    result; an ``x[False]`` axis is then cut to size 0.
    """
    positions, empty = [], []
    for position, entry in enumerate(entries):
        if entry.kind == "new":
            at = sum(1 for p in indexed if p < position) + len(positions)
            positions.append(at)
            if entry.value == 0:
                empty.append(at)
    if positions:
        out = lax.expand_dims(out, positions)
    for axis in empty:
        out = lax.slice_in_dim(out, 0, 0, axis=axis)
    return out


def _static_getitem(x: Any, entries: list[_Entry]) -> Any:
    """Static ints and slices: one ``slice``, then ``rev``, ``squeeze`` and new axes."""
    shape = x.aval.shape
    starts, limits, strides = [0] * len(shape), list(shape), [1] * len(shape)
    reversed_dims, int_dims, kept = [], [], set()
    for position, e in enumerate(entries):
        d = e.dim
        if e.kind == "int":
            starts[d], limits[d] = e.value, e.value + 1
            int_dims.append(d)
        elif e.kind == "slice":
            kept.add(position)
            start, stop, step = e.value
            if step == 1:
                starts[d], limits[d] = start, max(start, stop)
                continue
            length = _slice_length(start, stop, step)
            if step < 0 and length:
                start, stop, step = start + (length - 1) * step, start + 1, -step
                reversed_dims.append(d)
            elif not length:
                start = stop = min(max(start, 0), shape[d])
                step = 1
            starts[d], limits[d], strides[d] = start, max(start, stop), step
    out = x
    unit = [1] * len(shape)
    if any(starts) or limits != list(shape) or strides != unit:
        out = lax.slice(out, starts, limits, None if strides == unit else strides)
    if reversed_dims:
        out = lax.rev(out, reversed_dims)
    if int_dims:
        out = lax.squeeze(out, int_dims)
    return _new_axes(out, entries, kept) if len(kept) + len(int_dims) < len(entries) else out


def _dynamic_getitem(x: Any, entries: list[_Entry]) -> Any:
    """Traced ints (and step-1 slices): ``dynamic_slice`` of size 1 in the int dimensions."""
    by_dim = {e.dim: e for e in entries if e.kind != "new"}
    if x.ndim == 1:
        # One traced int into a vector: lax.dynamic_slice normalises it itself.
        out = lax.dynamic_slice(x, [by_dim[0].value], [1])
    else:
        converted = {d: _to_index_dtype(e.value) for d, e in by_dim.items() if e.kind == "dyn"}
        starts, sizes = [], []
        for d in range(x.ndim):
            e = by_dim[d]
            if e.kind == "slice":
                start, stop, _ = e.value
                starts.append(lax.operand(np.array(start, np.int32)))
                sizes.append(_slice_length(start, stop, 1))
            elif e.kind == "dyn":
                starts.append(converted[d])
                sizes.append(1)
            else:
                starts.append(lax.operand(np.array(e.value, np.int32)))
                sizes.append(1)
        starts = [_normalize(s, n) for s, n in zip(starts, x.shape)]
        out = lax.dynamic_slice(x, starts, sizes, allow_negative_indices=False)
    out = lax.squeeze(out, [e.dim for e in entries if e.kind in ("int", "dyn")])
    kept = {p for p, e in enumerate(entries) if e.kind == "slice"}
    return _new_axes(out, entries, kept)


# ---------------------------------------------------------------------------------------
# Translation 3: the index as a batch of windows, for gather and scatter
# ---------------------------------------------------------------------------------------


@dataclass
class _Windows:
    """An index as gather/scatter sees it (see ``GatherDimensionNumbers``)."""

    indices: Any  # int array: batch shape + (len(start_index_map),)
    offset_dims: tuple[int, ...]
    collapsed_dims: tuple[int, ...]
    start_index_map: tuple[int, ...]
    slice_sizes: tuple[int, ...]
    has_arrays: bool  # integer arrays in the index (else the indices are sorted and unique)
    result_entries: list[_Entry]  # one per result dimension or new axis, in result order
    result_kept: set[int]  # positions in ``result_entries`` that are not new axes


def _advanced_shape(arrays: list[Any]) -> tuple[int, ...]:
    shapes = [tuple(np.shape(a)) for a in arrays]
    try:
        return tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        raise ValueError(f"Incompatible shapes for broadcasting: shapes={shapes}") from None


def _layout(entries: list[_Entry], advanced: list[_Entry]) -> list[tuple[str, Any]]:
    """The result's dimensions in order, by NumPy's rule: the dimensions of the integer
    arrays replace the first of them if they are all adjacent, else they come first."""
    positions = [entries.index(e) for e in advanced]
    adjacent = positions == list(range(positions[0], positions[0] + len(positions))) \
        if positions else True
    layout: list[tuple[str, Any]] = [] if adjacent or not advanced else [("advanced", None)]
    for e in entries:
        if e.kind == "new":
            layout.append(("new", e))
        elif advanced and e is advanced[0] and adjacent:
            layout.append(("advanced", None))
        elif e.kind == "slice" and e not in advanced:
            layout.append(("window" if e.value[2] == 1 else "strided", e))
    return layout


def _batch_dims(layout: list[tuple[str, Any]], adv_shape: tuple[int, ...]
                ) -> tuple[tuple[int, ...], int, dict[int, int], list[int]]:
    """The batch of windows: the advanced block, and one dimension per strided slice, in
    result order. Returns the batch shape, the first axis of the advanced block, the batch
    axis of each strided slice (by entry id), and the result positions of window dims
    (step-1 slices: the gather's ``offset_dims``)."""
    batch_shape: list[int] = []
    adv_axis, strided_axis, offset_dims, position = 0, {}, [], 0
    for kind, e in layout:
        if kind == "advanced":
            adv_axis = len(batch_shape)
            batch_shape += adv_shape
            position += len(adv_shape)
        elif kind == "strided":
            strided_axis[id(e)] = len(batch_shape)
            batch_shape.append(_slice_length(*e.value))
            position += 1
        elif kind == "window":
            offset_dims.append(position)
            position += 1
    return tuple(batch_shape), adv_axis, strided_axis, offset_dims


def _result_entries(layout: list[tuple[str, Any]], adv_shape: tuple[int, ...]
                    ) -> tuple[list[_Entry], set[int]]:
    """One entry per result dimension or new axis, in order, and the positions of those
    that are not new axes (what :func:`_new_axes` needs)."""
    expanded, kept = [], set()
    for kind, e in layout:
        for _ in (adv_shape if kind == "advanced" else (None,)):
            if kind != "new":
                kept.add(len(expanded))
            expanded.append(e if kind != "advanced" else _Entry("advanced", None, adv_shape))
    return expanded, kept


def _to_gather(x: Any, entries: list[_Entry]) -> _Windows:
    """The windows that an index selects: their starts (one column per indexed operand
    dimension, broadcast over the batch), and the gather dimension numbers."""
    has_arrays = any(e.kind == "array" for e in entries)
    advanced = [e for e in entries if e.kind == "array" or
                (has_arrays and e.kind in ("int", "dyn"))]
    normalized = {id(e): _to_index_dtype(_normalize(e.value, x.shape[e.dim]))
                  for e in entries if e.kind in ("array", "dyn")}
    adv_shape = _advanced_shape([normalized.get(id(e), e.value) for e in advanced])
    layout = _layout(entries, advanced)
    batch_shape, adv_axis, strided_axis, offset_dims = _batch_dims(layout, adv_shape)

    # One start column per operand dimension that is indexed or sliced from a non-zero start.
    columns, start_index_map, collapsed, slice_sizes = [], [], [], []
    for e in sorted((e for e in entries if e.kind != "new"), key=lambda e: e.dim):
        start, stop, step = e.value if e.kind == "slice" else (None, None, None)
        if e.kind == "slice" and step == 1:  # a window
            slice_sizes.append(_slice_length(start, stop, step))
            if start != 0:
                start_index_map.append(e.dim)
                columns.append((np.array(start, np.int32), ()))
            continue
        slice_sizes.append(1)
        collapsed.append(e.dim)
        start_index_map.append(e.dim)
        if e.kind == "slice":  # strided: the starts start, start + step, ...
            counts = lax.iota(np.int32, _slice_length(start, stop, step))
            starts = lax.add(np.array(start, np.int32), lax.mul(np.array(step, np.int32), counts))
            columns.append((starts, (strided_axis[id(e)],)))
            continue
        value = normalized[id(e)] if id(e) in normalized else np.array(e.value, np.int32)
        if e in advanced and np.ndim(value) == 0:  # a scalar among arrays joins them
            value = lax.convert_element_type(lax.broadcast_in_dim(
                e.value if e.kind == "int" else value, adv_shape, ()), np.int32, False)
        lead = adv_axis + len(adv_shape) - np.ndim(value)  # NumPy aligns shapes at the right
        columns.append((value, tuple(range(lead, lead + np.ndim(value)))))

    full = batch_shape + (1,)
    columns = [lax.broadcast_in_dim(v, full, dims) for v, dims in columns]
    indices = lax.concatenate(columns, len(batch_shape)) if columns \
        else np.zeros(batch_shape + (0,), np.int32)
    result_entries, result_kept = _result_entries(layout, adv_shape)
    return _Windows(indices, tuple(offset_dims), tuple(collapsed), tuple(start_index_map),
                    tuple(slice_sizes), has_arrays, result_entries, result_kept)


def _gather(x: Any, entries: list[_Entry], mode: GatherScatterMode | None, fill_value: Any,
            indices_are_sorted: bool, unique_indices: bool) -> Any:
    w = _to_gather(x, entries)
    shape = _gathered_shape(x, w)
    if 0 in shape:  # nothing to read (even where the windows would not fit): JAX's zeros
        return _new_axes(lax.full(shape, 0, x.dtype), w.result_entries, w.result_kept)
    dnums = GatherDimensionNumbers(w.offset_dims, w.collapsed_dims, w.start_index_map)
    out = lax.gather(
        x, w.indices, dnums, w.slice_sizes, mode=mode, fill_value=fill_value,
        indices_are_sorted=indices_are_sorted or not w.has_arrays,
        unique_indices=unique_indices or not w.has_arrays,
    )
    return _new_axes(out, w.result_entries, w.result_kept)


# ---------------------------------------------------------------------------------------
# x[idx]
# ---------------------------------------------------------------------------------------


def _rewriting_take(x: Any, index: Any, mode: GatherScatterMode | None = None,
                    fill_value: Any = None, indices_are_sorted: bool = False,
                    unique_indices: bool = False) -> Any:
    """``x[index]``, by the cheapest of the three translations that applies."""
    entries = _parse(x.shape, index)
    _check_empty_axes(entries, x.shape)
    kinds = {e.kind for e in entries}
    fill = mode == GatherScatterMode.FILL_OR_DROP
    if not fill and kinds <= {"new", "int", "slice"}:
        return _static_getitem(x, entries)
    if not fill and "array" not in kinds and all(
            e.value[2] == 1 for e in entries if e.kind == "slice"):
        return _dynamic_getitem(x, entries)
    return _gather(x, entries, mode, fill_value, indices_are_sorted, unique_indices)


def _getitem(x: Any, index: Any) -> Any:
    """``x[index]`` for minijax arrays and tracers: NumPy's indexing, JAX's primitives."""
    shape = x.aval.shape
    if type(index) is int and shape and -shape[0] <= index < shape[0]:
        return _row(x, index % shape[0])
    return _rewriting_take(x, index)


def _row(x: Any, i: int) -> Any:
    """``x[i]`` for an int in range, the commonest index, without parsing it.

    Under a transformation it is a one-row ``slice``, then ``squeeze``: what
    :func:`_static_getitem` records for it too, and what JAX records. Eagerly nothing
    records it, so it is one job instead of two: NumPy's own ``x[i]`` (:data:`_row_p`),
    which halves the cost of the commonest index.
    """
    if core.current_trace() is core.eval_trace and not dtypes.is_extended(x.aval.dtype):
        return _row_p.bind(x, index=i)  # (a row of keys is compiled, as keys always are)
    shape = x.aval.shape
    row = slice_p.bind(x, start_indices=(i,) + (0,) * (len(shape) - 1),
                       limit_indices=(i + 1, *shape[1:]), strides=None)
    return squeeze_p.bind(row, dimensions=(0,))


# Eager only (see ``_row``): no transformation ever sees this primitive, so it needs no
# differentiation, batching or lowering rule.
_row_p = core.Primitive("row")
_row_p.def_impl(lambda x, *, index: x[index])
_row_p.def_abstract_eval(lambda x, *, index: x.update(shape=x.shape[1:]))


# ---------------------------------------------------------------------------------------
# x.at[idx].set(y) and friends
# ---------------------------------------------------------------------------------------


def _check_update_dtype(x: Any, y: Any) -> None:
    """JAX casts updates to ``x``'s dtype, warning when that may lose information."""
    dt, _ = result_type(x, y)
    if dt != x.dtype:
        warnings.warn(
            "scatter inputs have incompatible types: cannot safely cast value from "
            f"dtype={dtypes.dtype(y).name} to dtype={x.dtype.name} with "
            f"jax_numpy_dtype_promotion={config.jax_numpy_dtype_promotion}. In future JAX "
            "releases this will result in an error.", FutureWarning, stacklevel=4,
        )


def _broadcast_updates(y: Any, shape: tuple[int, ...]) -> Any:
    lead = len(shape) - y.ndim
    if lead < 0:
        raise ValueError("Cannot broadcast to shape with fewer dimensions: "
                         f"arr_shape={y.shape} shape={shape}")
    if any(d not in (1, s) for d, s in zip(y.shape, shape[lead:])):
        raise ValueError(
            f"Incompatible types for broadcasting: input type={y.aval.str_long()} and "
            f"requested type={y.aval.update(shape=shape).str_long()}"
        )
    return lax.broadcast_in_dim(y, shape, range(lead, len(shape)))


def _scatter(x: Any, index: Any, y: Any, scatter_fn: Callable | None, indices_are_sorted: bool,
             unique_indices: bool, mode: Any, func: Callable | None = None) -> Any:
    """``x`` with ``scatter_fn`` combining ``y`` into ``x[index]`` (or, without
    ``scatter_fn``, with ``func`` applied to the elements of ``x[index]``)."""
    x = lax.operand(x)
    entries = _parse(x.shape, index)
    _check_empty_axes(entries, x.shape)
    if any(e.kind == "new" and e.value == 0 for e in entries):
        return x  # x[False] selects nothing
    w = _to_gather(x, entries)
    flags = dict(indices_are_sorted=indices_are_sorted or not w.has_arrays,
                 unique_indices=unique_indices or not w.has_arrays, mode=mode)
    dnums = ScatterDimensionNumbers(w.offset_dims, w.collapsed_dims, w.start_index_map)
    shape = tuple(_gathered_shape(x, w))
    if scatter_fn is None:
        return lax.scatter_apply(x, w.indices, func, dnums, update_shape=shape, **flags)
    if isinstance(y, (list, tuple)):
        y = np.asarray(y)
    _check_update_dtype(x, y)
    y = lax.operand(lax.convert_element_type(y, x.dtype, False))
    y = _broadcast_updates(y, _with_new_axes(shape, w))
    y = lax.squeeze(y, [p for p, e in enumerate(w.result_entries) if e.kind == "new"])
    return scatter_fn(x, w.indices, y, dnums, **flags)


def _gathered_shape(x: Any, w: _Windows) -> list[int]:
    """The shape ``gather`` would give for these windows (before new axes)."""
    batch = list(np.shape(w.indices)[:-1])
    window = [s for d, s in enumerate(w.slice_sizes) if d not in w.collapsed_dims]
    offsets = dict(zip(w.offset_dims, window))
    return [offsets[p] if p in offsets else batch.pop(0)
            for p in range(len(batch) + len(window))]


def _with_new_axes(shape: tuple[int, ...], w: _Windows) -> tuple[int, ...]:
    out, sizes = [], iter(shape)
    for e in w.result_entries:
        out.append(1 if e.kind == "new" else next(sizes))
    return tuple(out)


class _IndexUpdateHelper:
    """``x.at``: indexing it gives an :class:`_IndexUpdateRef` for that index."""

    __slots__ = ("array",)

    def __init__(self, array: Any) -> None:
        self.array = array

    def __getitem__(self, index: Any) -> _IndexUpdateRef:
        return _IndexUpdateRef(self.array, index)

    def __repr__(self) -> str:
        return f"_IndexUpdateHelper({self.array!r})"


class _IndexUpdateRef:
    """``x.at[idx]``: functional updates of the elements ``x[idx]``; ``x`` is never changed.

    Every method takes ``indices_are_sorted``, ``unique_indices`` (promises that allow
    faster code) and ``mode``: out-of-bounds updates are dropped by default
    (``'drop'``/``'fill'``), or clamped into range with ``'clip'``.
    """

    __slots__ = ("array", "index")

    def __init__(self, array: Any, index: Any) -> None:
        self.array = array
        self.index = index

    def __repr__(self) -> str:
        return f"_IndexUpdateRef({self.array!r}, {self.index!r})"

    def get(self, *, indices_are_sorted: bool = False, unique_indices: bool = False,
            mode: Any = None, fill_value: Any = None, out_sharding: Any = None) -> Any:
        """``x[idx]``; with ``mode='fill'`` out-of-bounds elements read ``fill_value``."""
        mode = None if mode is None else GatherScatterMode.from_any(mode)
        return _rewriting_take(lax.operand(self.array), self.index, mode, fill_value,
                               indices_are_sorted, unique_indices)

    def _scatter(self, values: Any, fn: Callable, indices_are_sorted: bool,
                 unique_indices: bool, mode: Any) -> Any:
        return _scatter(self.array, self.index, values, fn, indices_are_sorted,
                        unique_indices, mode)

    def set(self, values: Any, *, indices_are_sorted: bool = False,
            unique_indices: bool = False, mode: Any = None) -> Any:
        """``x[idx] = values``, as a new array (with duplicate indices, the last wins)."""
        return self._scatter(values, lax.scatter, indices_are_sorted, unique_indices, mode)

    def add(self, values: Any, *, indices_are_sorted: bool = False,
            unique_indices: bool = False, mode: Any = None) -> Any:
        """``x[idx] += values``; duplicate indices add up."""
        return self._scatter(values, lax.scatter_add, indices_are_sorted, unique_indices, mode)

    def subtract(self, values: Any, *, indices_are_sorted: bool = False,
                 unique_indices: bool = False, mode: Any = None) -> Any:
        """``x[idx] -= values``."""
        return self._scatter(values, lax.scatter_sub, indices_are_sorted, unique_indices, mode)

    def multiply(self, values: Any, *, indices_are_sorted: bool = False,
                 unique_indices: bool = False, mode: Any = None) -> Any:
        """``x[idx] *= values``."""
        return self._scatter(values, lax.scatter_mul, indices_are_sorted, unique_indices, mode)

    mul = multiply

    def min(self, values: Any, *, indices_are_sorted: bool = False,
            unique_indices: bool = False, mode: Any = None) -> Any:
        """``x[idx] = minimum(x[idx], values)``."""
        return self._scatter(values, lax.scatter_min, indices_are_sorted, unique_indices, mode)

    def max(self, values: Any, *, indices_are_sorted: bool = False,
            unique_indices: bool = False, mode: Any = None) -> Any:
        """``x[idx] = maximum(x[idx], values)``."""
        return self._scatter(values, lax.scatter_max, indices_are_sorted, unique_indices, mode)

    def divide(self, values: Any, *, indices_are_sorted: bool = False,
               unique_indices: bool = False, mode: Any = None) -> Any:
        """``x[idx] /= values``, as JAX computes it: ``x / ones.at[idx].multiply(values)``."""
        from minijax.numpy.creation import ones_like
        from minijax.numpy.ufuncs import divide

        divisor = _IndexUpdateRef(ones_like(self.array), self.index).multiply(
            values, indices_are_sorted=indices_are_sorted, unique_indices=unique_indices,
            mode=mode)
        return divide(self.array, divisor)

    def power(self, values: Any, *, indices_are_sorted: bool = False,
              unique_indices: bool = False, mode: Any = None) -> Any:
        """``x[idx] **= values``, as ``x ** ones.at[idx].multiply(values)``."""
        from minijax.numpy.creation import ones_like
        from minijax.numpy.ufuncs import power

        exponent = _IndexUpdateRef(ones_like(self.array), self.index).multiply(
            values, indices_are_sorted=indices_are_sorted, unique_indices=unique_indices,
            mode=mode)
        return power(self.array, exponent)

    def apply(self, func: Callable[[Any], Any], *, indices_are_sorted: bool = False,
              unique_indices: bool = False, mode: Any = None) -> Any:
        """``x[idx] = func(x[idx])``, elementwise (twice for an index given twice)."""
        return _scatter(self.array, self.index, None, None, indices_are_sorted,
                        unique_indices, mode, func)


def _index_update_helper(x: Any) -> _IndexUpdateHelper:
    """``x.at``."""
    return _IndexUpdateHelper(x)


# ---------------------------------------------------------------------------------------
# take and take_along_axis
# ---------------------------------------------------------------------------------------


def _take_mode(mode: str | None) -> GatherScatterMode:
    """``take``'s modes: ``fill`` (the default: out of bounds reads NaN etc.), ``clip``;
    ``wrap`` is handled by the caller."""
    if mode == "raise":
        raise NotImplementedError("The 'raise' mode to jnp.take is not supported.")
    return GatherScatterMode.from_any("fill" if mode is None else mode)


def take(a: Any, indices: Any, axis: int | None = None, out: None = None,
         mode: str | None = None, unique_indices: bool = False,
         indices_are_sorted: bool = False, fill_value: Any = None) -> Any:
    """Elements of ``a`` at ``indices`` along ``axis`` (of the flattened ``a`` if None)."""
    return _take(a, indices, axis, out, mode, unique_indices, indices_are_sorted, fill_value)


@partial(jit, static_argnames=("axis", "mode", "unique_indices", "indices_are_sorted",
                               "fill_value"))
def _take(a: Any, indices: Any, axis: int | None, out: None, mode: str | None,
          unique_indices: bool, indices_are_sorted: bool, fill_value: Any) -> Any:
    a = lax.operand(a)
    indices = lax.operand(indices)
    if not dtypes.issubdtype(indices.dtype, np.integer):
        raise ValueError("indices must have an integer type")
    if axis is None:
        a, axis = lax.reshape(a, (a.size,)), 0
    (axis,) = lax.canonicalize_axes((axis,), a.ndim)
    size = a.shape[axis]
    if size == 0 and indices.size:
        raise IndexError("Cannot do a non-empty jnp.take() from an empty axis.")
    if mode == "wrap":
        from minijax.numpy.ufuncs import remainder

        size = np.array(size, indices.dtype)
        indices, gather_mode = remainder(indices, size), GatherScatterMode.PROMISE_IN_BOUNDS
    else:
        gather_mode = _take_mode(mode)
        if gather_mode == GatherScatterMode.FILL_OR_DROP:  # negative indices count from the end
            from minijax.numpy.ufuncs import where

            size = lax.convert_element_type(size, indices.dtype, weak_type=True)
            indices = where(lax.lt(indices, _zero(indices)), lax.add(indices, size), indices)
    if not indices.size:  # no index, nothing to read (and no gather, as in JAX)
        return lax.full((*a.shape[:axis], *indices.shape, *a.shape[axis + 1:]), 0, a.dtype)
    # One gather: a window of ``a`` without dimension ``axis`` at each index, the windows'
    # dimensions going around the dimensions of ``indices`` in the result.
    starts = lax.broadcast_in_dim(indices, (*indices.shape, 1), range(indices.ndim))
    out_ndim = a.ndim - 1 + indices.ndim
    dnums = GatherDimensionNumbers(
        offset_dims=(*range(axis), *range(axis + indices.ndim, out_ndim)),
        collapsed_slice_dims=(axis,), start_index_map=(axis,))
    slice_sizes = a.shape[:axis] + (1,) + a.shape[axis + 1:]
    return lax.gather(a, starts, dnums, slice_sizes, mode=gather_mode, fill_value=fill_value,
                      indices_are_sorted=indices_are_sorted, unique_indices=unique_indices)


def _zero(x: Any) -> Any:
    return lax.convert_element_type(0, x.dtype)


@partial(jit, static_argnames=("axis", "mode", "fill_value"))
def take_along_axis(arr: Any, indices: Any, axis: int | None, mode: str | None = None,
                    fill_value: Any = None) -> Any:
    """``out[..., j, ...] = arr[..., indices[..., j, ...], ...]`` along ``axis``: a gather
    whose other dimensions pair ``arr`` with ``indices`` one to one (batching dims)."""
    arr, indices = lax.operand(arr), lax.operand(indices)
    if not dtypes.issubdtype(indices.dtype, np.integer):
        raise TypeError(
            f"take_along_axis indices must be of integer type, got {indices.dtype.name}"
        )
    if axis is None:
        arr, indices, axis = lax.reshape(arr, (arr.size,)), lax.reshape(indices, (indices.size,)), 0
    if arr.ndim != indices.ndim:
        raise ValueError("indices and arr must have the same number of dimensions; "
                         f"{indices.ndim} vs. {arr.ndim}")
    (axis,) = lax.canonicalize_axes((axis,), arr.ndim)
    others = [d for d in range(arr.ndim) if d != axis]
    shape = np.broadcast_shapes(*(tuple(1 if d == axis else s for d, s in enumerate(a.shape))
                                  for a in (arr, indices)))
    arr = broadcast_to(arr, shape[:axis] + (arr.shape[axis],) + shape[axis + 1:])
    indices = broadcast_to(indices, shape[:axis] + (indices.shape[axis],) + shape[axis + 1:])
    if arr.shape[axis] == 0:  # nothing to read, whatever the mode: JAX gives zeros
        return lax.full(indices.shape, 0, arr.dtype)
    indices = _to_index_dtype(_normalize(indices, arr.shape[axis]))
    indices = lax.reshape(indices, (*indices.shape, 1))
    dnums = GatherDimensionNumbers(
        offset_dims=(), collapsed_slice_dims=(axis,), start_index_map=(axis,),
        operand_batching_dims=tuple(others), start_indices_batching_dims=tuple(others))
    return lax.gather(arr, indices, dnums, (1,) * arr.ndim, mode=_take_mode(mode),
                      fill_value=fill_value)
