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

Each primitive's rules follow it (JVP, transpose, lowering). Reading and writing are
each other's transposes: a slice's cotangent is padded back into place, a gather's is
scatter-added back, and the updates of a scatter get the gather of the cotangent.
"""

from __future__ import annotations

import builtins
import enum
import functools
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np

from minijax import dtypes, flags
from minijax.array import Array
from minijax.compiler import lowering
from minijax.compiler.lowering import RuleContext, register
from minijax.compiler.stablehlo_ir import DenseArray, Struct, TensorType, Value
from minijax.core import Primitive, ShapedArray, Tracer
from minijax.interpreters import ad, batching
from minijax.interpreters.ad import deflinear, instantiate
from minijax.interpreters.transpose import deftranspose, is_undefined, transpose_rules
from minijax.jaxpr import Jaxpr, Literal
from minijax.lax import base
from minijax.lax.base import (
    add,
    broadcast,
    broadcast_in_dim,
    canonicalize_shape,
    convert_element_type,
    full,
    full_like,
    lt,
    operand,
    reduce_op,
    reduce_sum,
    select_n,
    sub,
)
from minijax.lax.elementwise import div, eq, mul, neg, select
from minijax.lax.shapes import _same_dtypes, canonicalize_axes, iota, reshape, slice_op, squeeze

__all__ = [
    "GatherDimensionNumbers",
    "GatherScatterMode",
    "ScatterDimensionNumbers",
    "concatenate",
    "concatenate_p",
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
    "pad",
    "pad_p",
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
    "split",
    "split_p",
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


# The rules of slice: linear in the operand; the cotangent is padded back into place.
ad.deflinear(slice_p)


def _slice_transpose(ct: Any, x: Any, *, start_indices: tuple[int, ...],
                     limit_indices: tuple[int, ...], strides: tuple[int, ...] | None
                     ) -> list[Any]:
    """Put ``ct`` back where the slice came from: pad with zeros before, after and (for
    strides) between the elements."""
    steps = strides or (1,) * ct.ndim
    config = []
    for start, n, step, size in zip(start_indices, x.aval.shape, steps, ct.shape):
        end = start + (size - 1) * step + 1 if size else start  # one past the last element
        config.append((start, n - end, step - 1))
    return [pad(ct, convert_element_type(0, ct.dtype), config)]


deftranspose(slice_p, _slice_transpose)


@lowering.register(slice_p)
def _slice_lowering(ctx: lowering.RuleContext, x: Value, start_indices: Sequence[int],
                    limit_indices: Sequence[int], strides: Sequence[int] | None) -> Value:
    strides = tuple(strides) if strides else (1,) * len(start_indices)
    shape = tuple(-(-(hi - lo) // st) for lo, hi, st in zip(start_indices, limit_indices,
                                                             strides))
    return ctx.b.emit("stablehlo.slice", x, type=TensorType(shape, x.type.dtype),
                      start=tuple(start_indices), limit=tuple(limit_indices), strides=strides)


# ---------------------------------------------------------------------------------------
# pad, concatenate and split: in this module, not in shapes.py, because their
# transposes are slices (and the transpose of a slice is a pad)
# ---------------------------------------------------------------------------------------


def _pad_rule(x: ShapedArray, padding_value: ShapedArray,
              padding_config: tuple[tuple[int, int, int], ...]) -> ShapedArray:
    if x.dtype != padding_value.dtype:
        raise TypeError(
            "pad operand and padding_value must be same dtype: got "
            f"{x.dtype.name} and {padding_value.dtype.name}."
        )
    if len(padding_config) != x.ndim:
        raise ValueError(
            "length of padding_config must equal the number of axes of operand, got "
            f"padding_config {padding_config} for operand shape {x.shape}"
        )
    if any(interior < 0 for _, _, interior in padding_config):
        raise ValueError(
            f"interior padding in padding_config must be nonnegative, got padding_config "
            f"{padding_config}"
        )
    shape = tuple(lo + hi + n + max(n - 1, 0) * interior
                  for n, (lo, hi, interior) in zip(x.shape, padding_config))
    if any(s < 0 for s in shape):
        raise ValueError(
            f"Dimension size after padding is not at least 0, got result shape {shape}, for "
            f"padding_config {padding_config} and operand shape {x.shape}"
        )
    return ShapedArray(shape, x.dtype, x.weak_type and padding_value.weak_type)


def _pad_axis(x: np.ndarray, value: np.ndarray, axis: int, lo: int, hi: int,
              interior: int) -> np.ndarray:
    """Spread the elements ``interior`` apart, pad both edges, then crop negative edges."""
    n = x.shape[axis]
    spread = n + max(n - 1, 0) * interior
    shape = list(x.shape)
    shape[axis] = max(lo, 0) + spread + max(hi, 0)
    out = np.full(shape, value, dtype=x.dtype)
    where = [builtins.slice(None)] * x.ndim
    where[axis] = builtins.slice(max(lo, 0), max(lo, 0) + spread, interior + 1)
    out[tuple(where)] = x
    where[axis] = builtins.slice(max(-lo, 0), shape[axis] - max(-hi, 0))
    return out[tuple(where)]


def _pad_kernel(x: np.ndarray, padding_value: np.ndarray,
                padding_config: tuple[tuple[int, int, int], ...]) -> np.ndarray:
    for axis, (lo, hi, interior) in enumerate(padding_config):
        x = _pad_axis(x, padding_value, axis, lo, hi, interior)
    return x


pad_p = Primitive("pad")
pad_p.def_impl(_pad_kernel)
pad_p.def_abstract_eval(_pad_rule)


def pad(operand_: Any, padding_value: Any, padding_config: Sequence[Sequence[int]]) -> Any:
    """Pad each dimension with ``(low, high, interior)`` copies of ``padding_value``.

    Negative ``low``/``high`` remove elements from that edge instead.
    """
    x, padding_value = operand(operand_, pad_p), operand(padding_value, pad_p, 1)
    if padding_value.ndim != 0:
        raise ValueError(
            f"padding_value must be a scalar; got np.shape(padding_value)={padding_value.shape}"
        )
    # NumPy integers stay as they are: JAX's jaxprs print them so (``np.int64(1)``).
    config = tuple(tuple(p if isinstance(p, np.integer) else int(p) for p in dim)
                   for dim in padding_config)
    return pad_p.bind(x, padding_value, padding_config=config)


deflinear(pad_p)


def _pad_transpose(ct: Any, x: Any, padding_value: Any, *,
                   padding_config: tuple[tuple[int, int, int], ...]) -> list[Any]:
    """The operand gets the elements of ``ct`` it became: undo the edges (a pad by the
    negated amounts), then take every ``interior + 1``-th element. The padding value was
    copied into every other element, so it gets the sum of the rest of ``ct``."""
    unpad = tuple((-lo, -hi, 0) for lo, hi, _ in padding_config)
    edges_removed = pad(ct, convert_element_type(0, ct.dtype), unpad)
    strides = tuple(interior + 1 for _, _, interior in padding_config)
    ct_x = slice(edges_removed, (0,) * ct.ndim, edges_removed.shape, strides)
    ct_value = None
    if is_undefined(padding_value):
        everything = tuple(range(ct.ndim))
        ct_value = sub(reduce_sum(ct, everything), reduce_sum(ct_x, everything))
    return [ct_x if is_undefined(x) else None, ct_value]


deftranspose(pad_p, _pad_transpose)


@register(pad_p)
def _pad_lowering(ctx: RuleContext, x: Value, value: Value,
                  padding_config: tuple[tuple[int, int, int], ...]) -> Value:
    low, high, interior = (tuple(c[i] for c in padding_config) for i in range(3))
    return ctx.b.emit("stablehlo.pad", x, value, type=ctx.type_out, low=low, high=high,
                      interior=interior)


def _concatenate_rule(*avals: ShapedArray, dimension: int) -> ShapedArray:
    shapes = ", ".join(str(a.shape) for a in avals)
    if len({a.ndim for a in avals}) != 1:
        raise TypeError(
            f"Cannot concatenate arrays with different numbers of dimensions: got {shapes}."
        )
    if not 0 <= dimension < avals[0].ndim:
        raise TypeError(
            f"concatenate dimension out of bounds: dimension {dimension} for shapes {shapes}."
        )
    others = {a.shape[:dimension] + a.shape[dimension + 1:] for a in avals}
    if len(others) != 1:
        raise TypeError(
            "Cannot concatenate arrays with shapes that differ in dimensions other than the "
            f"one being concatenated: concatenating along dimension {dimension} for shapes "
            f"{shapes}."
        )
    _same_dtypes("concatenate", avals)
    shape = list(avals[0].shape)
    shape[dimension] = sum(a.shape[dimension] for a in avals)
    return ShapedArray(shape, avals[0].dtype, all(a.weak_type for a in avals))


concatenate_p = Primitive("concatenate")
concatenate_p.def_impl(lambda *xs, dimension: np.concatenate(xs, axis=dimension))
concatenate_p.def_abstract_eval(_concatenate_rule)


def concatenate(operands: Sequence[Any], dimension: int) -> Any:
    """Join arrays of one rank and dtype along an existing ``dimension``."""
    if len(operands) == 0:
        raise ValueError("concatenate requires a non-empty sequences of arrays")
    if len(operands) == 1:
        return operand(operands[0], concatenate_p)
    arrays = [operand(x, concatenate_p, i) for i, x in enumerate(operands)]
    return concatenate_p.bind(*arrays, dimension=int(dimension))


deflinear(concatenate_p)


def _concatenate_transpose(ct: Any, *operands: Any, dimension: int) -> list[Any]:
    """Each operand gets its own stretch of ``ct``."""
    out, start = [], 0
    for x in operands:
        size = (x.aval if is_undefined(x) else x).shape[dimension]
        piece = slice_in_dim(ct, start, start + size, 1, dimension)
        out.append(piece if is_undefined(x) else None)
        start += size
    return out


deftranspose(concatenate_p, _concatenate_transpose)


@register(concatenate_p)
def _concatenate_lowering(ctx: RuleContext, *xs: Value, dimension: int) -> Value:
    return ctx.b.emit("stablehlo.concatenate", *xs, type=ctx.type_out, dim=dimension)


def _split_rule(x: ShapedArray, sizes: tuple[int, ...], axis: int) -> list[ShapedArray]:
    if sum(sizes) != x.shape[axis]:
        raise ValueError(
            f"Sum of sizes {sum(sizes)} must be equal to dimension {axis} of the operand "
            f"shape {list(x.shape)}"
        )
    if any(s < 0 for s in sizes):
        raise ValueError(f"Sizes passed to split must be nonnegative, got {list(sizes)}")
    shapes = [x.shape[:axis] + (int(s),) + x.shape[axis + 1:] for s in sizes]
    return [ShapedArray(s, x.dtype, x.weak_type) for s in shapes]


split_p = Primitive("split", multiple_results=True)
split_p.def_impl(lambda x, sizes, axis: np.split(x, np.cumsum(sizes)[:-1], axis))
split_p.def_abstract_eval(_split_rule)


def split(operand_: Any, sizes: Sequence[int], axis: int = 0) -> list[Any]:
    """Cut ``operand_`` along ``axis`` into consecutive pieces of the given ``sizes``."""
    x = operand(operand_)
    (axis,) = canonicalize_axes((axis,), x.ndim)
    canonicalize_shape(sizes)  # integers; kept as given (JAX prints np.int64(3) as such)
    return split_p.bind(x, sizes=tuple(sizes), axis=axis)


deflinear(split_p)
transpose_rules[split_p] = lambda cts, x, *, sizes, axis: [
    concatenate([instantiate(c) for c in cts], axis)]


@register(split_p)
def _split_lowering(ctx: RuleContext, x: Value, sizes: tuple[int, ...], axis: int
                    ) -> list[Value]:
    outs, offset = [], 0
    for size in sizes:
        start, limit = [0] * len(x.type.shape), list(x.type.shape)
        start[axis], limit[axis] = offset, offset + size
        outs.append(slice_op(ctx.b, x, start, limit))
        offset += size
    return outs


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


# The rules of dynamic_slice and dynamic_update_slice: linear in the operand (and the
# update), never in the start indices.
ad.deflinear(dynamic_slice_p, linear=(0,))
ad.deflinear(dynamic_update_slice_p, linear=(0, 1))


def _dynamic_slice_transpose(ct: Any, x: Any, *starts: Any, slice_sizes: tuple) -> list[Any]:
    zeros = full(x.aval.shape, 0, x.aval.dtype)
    return [dynamic_update_slice_p.bind(zeros, ct, *starts), *[None] * len(starts)]


def _dynamic_update_slice_transpose(ct: Any, x: Any, update: Any, *starts: Any) -> list[Any]:
    """The operand gets ``ct`` except in the box (zeroed); the update gets the box."""
    shape = (update.aval if is_undefined(update) else update).shape
    ct_x = ct_update = None
    if is_undefined(x):
        zeros = full(shape, 0, ct.dtype)
        ct_x = dynamic_update_slice_p.bind(ct, zeros, *starts)
    if is_undefined(update):
        ct_update = dynamic_slice_p.bind(ct, *starts, slice_sizes=shape)
    return [ct_x, ct_update, *[None] * len(starts)]


deftranspose(dynamic_slice_p, _dynamic_slice_transpose)
deftranspose(dynamic_update_slice_p, _dynamic_update_slice_transpose)


@lowering.register(dynamic_slice_p)
def _dynamic_slice_lowering(ctx: lowering.RuleContext, x: Value, *starts: Value,
                            slice_sizes: tuple[int, ...]) -> Value:
    return ctx.b.emit("stablehlo.dynamic_slice", x, *starts, type=ctx.type_out,
                      sizes=tuple(slice_sizes))


@lowering.register(dynamic_update_slice_p)
def _dynamic_update_slice_lowering(ctx: lowering.RuleContext, x: Value, update: Value,
                                   *starts: Value) -> Value:
    return ctx.b.emit("stablehlo.dynamic_update_slice", x, update, *starts)


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

# The rules of gather: linear in the operand; the transpose adds the cotangent back.


def _gather_jvp(primals: list, tangents: list, **params: Any) -> tuple[Any, Any]:
    """Gather the tangent the same way; out-of-bounds windows read 0, not ``fill_value``."""
    (x, indices), (t, _) = primals, tangents
    out = gather_p.bind(x, indices, **params)
    fill = 0 if params["mode"] == GatherScatterMode.FILL_OR_DROP else None
    return out, gather_p.bind(t, indices, **{**params, "fill_value": fill})


ad.jvp_rules[gather_p] = _gather_jvp


def _gather_transpose(ct: Any, x: Any, indices: Any, *,
                      dimension_numbers: GatherDimensionNumbers,
                      slice_sizes: tuple, unique_indices: bool, indices_are_sorted: bool,
                      mode: GatherScatterMode, fill_value: Any) -> list[Any]:
    """Add every gathered window's cotangent back into the place it was read from."""
    dn = dimension_numbers
    scatter_dn = ScatterDimensionNumbers(
        update_window_dims=dn.offset_dims, inserted_window_dims=dn.collapsed_slice_dims,
        scatter_dims_to_operand_dims=dn.start_index_map,
        operand_batching_dims=dn.operand_batching_dims,
        scatter_indices_batching_dims=dn.start_indices_batching_dims)
    zeros = full(x.aval.shape, 0, x.aval.dtype)
    return [scatter_add(zeros, indices, ct, scatter_dn, indices_are_sorted=indices_are_sorted,
                        unique_indices=unique_indices, mode=mode), None]


deftranspose(gather_p, _gather_transpose)


def _struct(name: str, fields: Sequence[tuple[str, Any]]) -> Struct:
    """``#stablehlo.gather<...>``: empty lists and a zero index_vector_dim are omitted."""
    return Struct(name, {k: list(v) if isinstance(v, tuple) else v for k, v in fields
                         if v != () and v != 0})


def _emit_gather(b: lowering.Builder, x: Value, indices: Value, dn: Any,
                 slice_sizes: Sequence[int], indices_are_sorted: bool,
                 out_type: TensorType) -> Value:
    dims = _struct("#stablehlo.gather", [
        ("offset_dims", dn.offset_dims), ("collapsed_slice_dims", dn.collapsed_slice_dims),
        ("operand_batching_dims", dn.operand_batching_dims),
        ("start_indices_batching_dims", dn.start_indices_batching_dims),
        ("start_index_map", dn.start_index_map),
        ("index_vector_dim", len(indices.type.shape) - 1)])
    attrs = {"dimension_numbers": dims, "indices_are_sorted": bool(indices_are_sorted),
             "slice_sizes": DenseArray("i64", tuple(slice_sizes))}
    return b.op("stablehlo.gather", [x, indices], [out_type], attrs).result


@lowering.register(gather_p)
def _gather_lowering(ctx: lowering.RuleContext, x: Value, indices: Value, *,
                     dimension_numbers: Any, slice_sizes: tuple[int, ...],
                     unique_indices: bool, indices_are_sorted: bool, mode: GatherScatterMode,
                     fill_value: Any) -> Value:
    """XLA's gather clamps windows into bounds; ``mode='fill'`` masks the windows that did
    not fit and fills them with ``fill_value``. (The mask is a ``reduce_and`` over each
    index vector, lowered by that primitive's rule.)"""
    b, dn, out = ctx.b, dimension_numbers, ctx.type_out
    if mode != GatherScatterMode.FILL_OR_DROP:
        if out.size == 0:
            return b.full(0, out)
        return _emit_gather(b, x, indices, dn, slice_sizes, indices_are_sorted, out)
    index_type = indices.type
    batch_rank = len(index_type.shape) - 1
    upper = np.array([x.type.shape[d] - slice_sizes[d] for d in dn.start_index_map], np.int32)
    upper = b.constant(upper.astype(index_type.dtype))
    non_negative = b.compare(indices, b.broadcast_to(b.constant(0, index_type.dtype),
                                                     index_type.shape), "GE")
    upper = b.broadcast(upper, (1,) * batch_rank + upper.type.shape, (batch_rank,))
    in_bounds = b.compare(indices, b.broadcast_to(upper, index_type.shape), "LE")
    both = b.emit("stablehlo.and", non_negative, in_bounds)
    (mask,) = reduce_op(b, [both], [b.constant(np.bool_(True))], "stablehlo.and", (batch_rank,))
    gathered = _emit_gather(b, x, indices, dn, slice_sizes, indices_are_sorted, out)
    batch_dims = [d for d in range(len(out.shape)) if d not in dn.offset_dims]
    if mask.type.shape != out.shape:
        mask = b.broadcast(mask, out.shape, batch_dims)
    return b.select(mask, gathered, b.full_if_needed(fill_value, out))


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

    This runs inside a kernel: binding the primitives would dispatch each one as a job
    (run at once, see ``Device.enqueue``), for nothing; so ``scatter_apply``'s function is
    computed kernel by kernel.
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
    """``out[i] = f(out[i], u)`` for every update, with ``f`` the jaxpr's function."""
    _apply_in_order(out, index, updates,
                    lambda old, new: _run_jaxpr_on_numpy(jaxpr, consts, old, new))


def _apply_in_order(out: np.ndarray, index: tuple[np.ndarray, ...], updates: np.ndarray,
                    f: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> None:
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
        result = f(target[where], values[hits])
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
    combine = _ZEROS_ORDERED.get(combine, combine)
    if combine is not None:
        combine(target, index, updates)
    elif update_jaxpr is not None:
        _apply_update_jaxpr(target, index, updates, update_jaxpr, update_consts)
    else:
        target[index] = updates  # with duplicate indices, the last one wins (as XLA on CPU)
    return out


def _extremum_at(ufunc: np.ufunc, negative_zero_wins: bool,
                 kernel: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> Callable[..., None]:
    """``ufunc.at`` for ``np.maximum`` or ``np.minimum`` with XLA's order of zeros, +0.0
    above -0.0 (NumPy's returns either zero): an element that ends up zero is the zero
    that wins if it or any update to it was that zero. Complex numbers are compared as
    ``kernel`` (lax.max's or lax.min's) compares them, one update after the other: of
    equal ones the later wins."""

    def at(target: np.ndarray, index: tuple, updates: np.ndarray) -> None:
        if target.dtype.kind == "c":
            _apply_in_order(target, index, updates, kernel)
            return
        if not base._is_float(target):
            ufunc.at(target, index, updates)
            return
        winner = lambda v: (v == 0) & (np.signbit(v) == negative_zero_wins)
        wins = winner(target)
        np.logical_or.at(wins, index, winner(updates))
        ufunc.at(target, index, updates)
        target[wins & (target == 0)] = -0.0 if negative_zero_wins else 0.0

    return at


# The combiners of scatter-max and scatter-min, also where the mini-XLA's generated code
# passes NumPy's own (``np.maximum.at``) to this kernel.
_ZEROS_ORDERED = {np.maximum.at: _extremum_at(np.maximum, False, base.max_p.impl),
                  np.minimum.at: _extremum_at(np.minimum, True, base.min_p.impl)}


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


flags.on_pieces_change(_combiner_jaxpr.cache_clear)  # traced with the JaxprTrace in force


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
scatter_add = _scatter_api(scatter_add_p, base.add,
                           "Add ``updates`` into windows; duplicate indices accumulate.")
scatter_sub = _scatter_api(scatter_sub_p, base.sub,
                           "Subtract ``updates`` from windows; duplicates accumulate.")
scatter_mul = _scatter_api(scatter_mul_p, base.mul,
                           "Multiply windows by ``updates``; duplicates accumulate.")
scatter_min = _scatter_api(scatter_min_p, base.min,
                           "Elementwise minimum of windows and ``updates``.")
scatter_max = _scatter_api(scatter_max_p, base.max,
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
# The rules of the scatters: scatter-add and scatter-sub are linear in the operand and the
# updates; the others are differentiated by finding which value won each element
# ---------------------------------------------------------------------------------------

ad.deflinear(scatter_add_p, linear=(0, 2))
ad.deflinear(scatter_sub_p, linear=(0, 2))


def gather_of_scatter(x: Any, indices: Any, updates_shape: tuple[int, ...],
                      dimension_numbers: ScatterDimensionNumbers,
                      mode: GatherScatterMode) -> Any:
    """Read from ``x`` the windows a scatter with these parameters writes to: the result is
    shaped like the updates. (The transpose of scatter-add with respect to its updates.)"""
    dn = dimension_numbers
    gather_dn = GatherDimensionNumbers(
        offset_dims=dn.update_window_dims, collapsed_slice_dims=dn.inserted_window_dims,
        start_index_map=dn.scatter_dims_to_operand_dims,
        operand_batching_dims=dn.operand_batching_dims,
        start_indices_batching_dims=dn.scatter_indices_batching_dims)
    sizes = _scatter_window(x.shape, updates_shape, dn)
    fill = 0 if mode == GatherScatterMode.FILL_OR_DROP else None
    return gather(x, indices, gather_dn, sizes, mode=mode, fill_value=fill)


def _rescatter(scatter_fn: Callable, x: Any, indices: Any, updates: Any, params: dict) -> Any:
    """``scatter_fn`` (a public lax scatter) with the layout and mode of ``params``."""
    return scatter_fn(x, indices, updates, params["dimension_numbers"],
                      indices_are_sorted=params["indices_are_sorted"],
                      unique_indices=params["unique_indices"], mode=params["mode"])


def _update_ids(shape: tuple[int, ...], window_dims: tuple[int, ...]) -> Any:
    """1, 2, 3, ... for the updates of a scatter: one id per update window."""
    ids_shape = tuple(1 if d in window_dims else n for d, n in enumerate(shape))
    count = int(np.prod(ids_shape, dtype=np.int64))
    ids = add(iota(np.uint32, count), convert_element_type(1, np.uint32))
    return broadcast_in_dim(reshape(ids, ids_shape), shape, tuple(range(len(shape))))


def _scatter_jvp(primals: list, tangents: list, **params: Any) -> tuple[Any, Any]:
    """scatter: each element of the result comes from the operand or from the one update
    that won its position. With unique indices that is one joint linear map. Otherwise
    the winners are found by scattering update *ids* and reading them back; the tangent
    is then a scatter-add of the winners' tangents into the operand's tangent, zeroed
    where it was overwritten (as JAX does it)."""
    (x, indices, updates), (t_x, _, t_u) = primals, tangents
    if params["update_jaxpr"] is not None:
        raise NotImplementedError("scatter_apply JVP not implemented")
    out = scatter_p.bind(x, indices, updates, **params)
    t_x, t_u = ad.instantiate(t_x), ad.instantiate(t_u)
    if params["unique_indices"]:
        return out, scatter_p.bind(t_x, indices, t_u, **params)
    dn = params["dimension_numbers"]
    ids = _update_ids(updates.shape, dn.update_window_dims)
    written = _rescatter(scatter, full(x.shape, 0, np.uint32), indices, ids, params)
    won = eq(ids, gather_of_scatter(written, indices, updates.shape, dn, params["mode"]))
    kept = eq(written, full_like(written, 0))
    t_x = select(kept, t_x, full_like(t_x, 0))
    t_u = select(won, t_u, full_like(t_u, 0))
    return out, _rescatter(scatter_add, t_x, indices, t_u, params)


ad.jvp_rules[scatter_p] = _scatter_jvp


def _scatter_mul_jvp(primals: list, tangents: list, **params: Any) -> tuple[Any, Any]:
    """Linear in the operand. In the updates JAX differentiates only with unique indices
    (then each element is multiplied by at most one update)."""
    (x, indices, updates), (t_x, _, t_u) = primals, tangents
    out = scatter_mul_p.bind(x, indices, updates, **params)
    tangent: Any = ad.Zero(ad.tangent_aval(out.aval))
    if type(t_u) is not ad.Zero:
        if not params["unique_indices"]:
            raise NotImplementedError(
                "scatter_mul gradients are only implemented if `unique_indices=True`")
        spread = _rescatter(scatter_add, full_like(x, 0), indices, t_u, params)
        tangent = mul(x, spread)
    if type(t_x) is not ad.Zero:
        tangent = ad.add_tangents(tangent, scatter_mul_p.bind(t_x, indices, updates, **params))
    return out, tangent


ad.jvp_rules[scatter_mul_p] = _scatter_mul_jvp


def _scatter_extremum_jvp(primitive: Primitive) -> Callable[..., tuple[Any, Any]]:
    """scatter-max/min: every element's tangent is the average of the tangents of the
    values that tie for the result there (the operand's and the updates'), as for max."""

    def rule(primals: list, tangents: list, **params: Any) -> tuple[Any, Any]:
        (x, indices, updates), (t_x, _, t_u) = primals, tangents
        out = primitive.bind(x, indices, updates, **params)
        t_x, t_u = ad.instantiate(t_x), ad.instantiate(t_u)
        dn, mode = params["dimension_numbers"], params["mode"]
        from_x = convert_element_type(eq(x, out), x.dtype)
        from_u = convert_element_type(
            eq(updates, gather_of_scatter(out, indices, updates.shape, dn, mode)), x.dtype)
        count = add(from_x, _rescatter(scatter_add, full_like(x, 0), indices, from_u, params))
        total = add(mul(t_x, from_x), _rescatter(
            scatter_add, full_like(x, 0), indices, mul(t_u, from_u), params))
        return out, div(total, count)

    return rule


ad.jvp_rules[scatter_max_p] = _scatter_extremum_jvp(scatter_max_p)
ad.jvp_rules[scatter_min_p] = _scatter_extremum_jvp(scatter_min_p)


def _read_updates(ct: Any, indices: Any, updates: Any, params: dict) -> Any:
    shape = (updates.aval if is_undefined(updates) else updates).shape
    return gather_of_scatter(ct, indices, shape, params["dimension_numbers"], params["mode"])


def _scatter_add_transpose(sign: Callable[[Any], Any]) -> Callable[..., list[Any]]:
    """scatter-add (``sign`` = identity) and scatter-sub (``sign`` = neg): the operand
    passes straight through; each update gets (±) the cotangent where it was added."""

    def rule(ct: Any, x: Any, indices: Any, updates: Any, **params: Any) -> list[Any]:
        ct_updates = sign(_read_updates(ct, indices, updates, params)) \
            if is_undefined(updates) else None
        return [ct if is_undefined(x) else None, None, ct_updates]

    return rule


deftranspose(scatter_add_p, _scatter_add_transpose(lambda ct: ct))
deftranspose(scatter_sub_p, _scatter_add_transpose(neg))


def _scatter_transpose(ct: Any, x: Any, indices: Any, updates: Any, **params: Any
                       ) -> list[Any]:
    """With unique indices, scatter is ``x`` with some elements replaced by updates: the
    operand gets ``ct`` with those elements zeroed, the updates get what they became."""
    if not params["unique_indices"]:
        raise NotImplementedError(
            "scatter transpose is only implemented where unique_indices=True")
    ct_x = ct_updates = None
    if is_undefined(x):
        shape = (updates.aval if is_undefined(updates) else updates).shape
        ct_x = scatter_p.bind(ct, indices, full(shape, 0, ct.dtype), **params)
    if is_undefined(updates):
        ct_updates = _read_updates(ct, indices, updates, params)
    return [ct_x, None, ct_updates]


deftranspose(scatter_p, _scatter_transpose)


def _scatter_mul_transpose(ct: Any, x: Any, indices: Any, updates: Any, **params: Any
                           ) -> list[Any]:
    """Linear in the operand only: each element was multiplied by the product of the
    updates that hit it, so its cotangent is ``ct`` times that product."""
    if is_undefined(updates):
        raise NotImplementedError(
            "scatter_mul gradients are only implemented if `unique_indices=True`")
    factors = scatter_mul_p.bind(full_like(ct, 1), indices, updates, **params)
    return [mul(ct, factors), None, None]


deftranspose(scatter_mul_p, _scatter_mul_transpose)


def _clamp_scatter_indices(b: lowering.Builder, x: Value, indices: Value, updates: Value,
                           dn: Any) -> Value:
    """``mode='clip'``: clamp each start index into [0, dim - window]."""
    window, sizes = [], iter(updates.type.shape[d] for d in dn.update_window_dims)
    for d in range(len(x.type.shape)):
        inserted = d in dn.inserted_window_dims or d in dn.operand_batching_dims
        window.append(1 if inserted else next(sizes))
    upper = np.array([x.type.shape[d] - window[d] for d in dn.scatter_dims_to_operand_dims],
                     np.int32)
    dtype = indices.type.dtype
    largest = min(np.iinfo(np.int32).max, np.iinfo(dtype).max)
    upper_c = b.constant(upper)
    limit = b.broadcast_to(b.constant(largest, np.int32), upper_c.type.shape)
    upper_v = b.emit("stablehlo.minimum", upper_c, limit)
    if dtype != np.int32:
        upper_v = b.convert(upper_v, dtype)
    upper_v = b.broadcast(upper_v, indices.type.shape, (len(indices.type.shape) - 1,))
    zero = b.broadcast_to(b.constant(0, dtype), indices.type.shape)
    return b.emit("stablehlo.clamp", zero, indices, upper_v)


@lowering.register(scatter_p, scatter_add_p, scatter_sub_p, scatter_mul_p, scatter_min_p,
                   scatter_max_p)
def _scatter_lowering(ctx: lowering.RuleContext, x: Value, indices: Value, updates: Value, *,
                      dimension_numbers: Any, indices_are_sorted: bool, unique_indices: bool,
                      mode: GatherScatterMode, update_jaxpr: Any, update_consts: tuple
                      ) -> Value:
    """XLA's scatter drops updates whose window does not fit; ``mode='clip'`` clamps the
    indices first. The region combines an old value with an update."""
    b, dn = ctx.b, dimension_numbers
    if mode == GatherScatterMode.CLIP:
        indices = _clamp_scatter_indices(b, x, indices, updates, dn)
    dims = _struct("#stablehlo.scatter", [
        ("update_window_dims", dn.update_window_dims),
        ("inserted_window_dims", dn.inserted_window_dims),
        ("input_batching_dims", dn.operand_batching_dims),
        ("scatter_indices_batching_dims", dn.scatter_indices_batching_dims),
        ("scatter_dims_to_operand_dims", dn.scatter_dims_to_operand_dims),
        ("index_vector_dim", len(indices.type.shape) - 1)])
    scalar = TensorType((), x.type.dtype)

    def combine(inner: lowering.Builder, args: list[Value]) -> list[Value]:
        if update_jaxpr is None:
            return [args[1]]
        consts = [inner.constant(np.asarray(c)) for c in update_consts]
        return lowering.lower_jaxpr_into(inner, update_jaxpr, consts, args)

    attrs = {"indices_are_sorted": bool(indices_are_sorted), "scatter_dimension_numbers": dims,
             "unique_indices": bool(unique_indices)}
    region = lowering._region(b, [scalar, scalar], combine)
    return b.op("stablehlo.scatter", [x, indices, updates], [x.type], attrs, [region]).result


# ---------------------------------------------------------------------------------------
# vmap: batching rules
# ---------------------------------------------------------------------------------------


def _pad_batching(axis_data: Any, vals: list, dims: list, *,
                  padding_config: tuple[tuple[int, int, int], ...]) -> tuple[Any, int]:
    """JAX's rule: pad each example alike; a batched padding value is a select between
    the padded operand and that value, through a mask of where the operand was."""
    (x, value), (x_dim, value_dim) = vals, dims
    if x_dim is None:
        x, x_dim = broadcast(x, (value.shape[value_dim],)), 0
    config = list(padding_config)
    config.insert(x_dim, (0, 0, 0))
    if value_dim is None:
        return pad(x, value, config), x_dim
    padded = pad(x, convert_element_type(0, x.dtype), config)
    mask = pad(full_like(x, True, np.bool_), False, config)
    return select(mask, padded, broadcast_in_dim(value, padded.shape, (x_dim,))), x_dim


def _concatenate_batching(axis_data: Any, vals: list, dims: list, *,
                          dimension: int) -> tuple[Any, int]:
    size = next(x.shape[d] for x, d in zip(vals, dims) if d is not None)
    xs = [broadcast(x, (size,)) if d is None else batching.moveaxis(x, d, 0)
          for x, d in zip(vals, dims)]
    return concatenate(xs, dimension + 1), 0


def _split_batching(axis_data: Any, vals: list, dims: list, *, sizes: tuple[int, ...],
                    axis: int) -> tuple[list[Any], list[int]]:
    (x,), (bdim,) = vals, dims
    return split(x, sizes, axis + 1 if axis >= bdim else axis), [bdim] * len(sizes)


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
    """JAX's rule: a dynamic update slice is a scatter of one window; batch that scatter."""
    (x, update, *starts), (x_dim, update_dim, *start_dims) = vals, dims
    every = tuple(range(update.ndim - (update_dim is not None)))
    index, index_dim = _batch_start_indices(starts, start_dims)
    numbers = ScatterDimensionNumbers(every, (), every)
    scatter_window = functools.partial(scatter, dimension_numbers=numbers,
                                       indices_are_sorted=True, unique_indices=True,
                                       mode=GatherScatterMode.CLIP)
    outs, _ = batching.batch_flat(lambda *args: [scatter_window(*args)], axis_data,
                                  [x, index, update], [x_dim, index_dim, update_dim],
                                  lambda: [0])
    return outs[0], 0


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


batching.batching_rules[pad_p] = _pad_batching
batching.batching_rules[concatenate_p] = _concatenate_batching
batching.batching_rules[split_p] = _split_batching
batching.batching_rules[slice_p] = _slice_batching
batching.batching_rules[dynamic_slice_p] = _dynamic_slice_batching
batching.batching_rules[dynamic_update_slice_p] = _dynamic_update_slice_batching
batching.batching_rules[gather_p] = _gather_batching
for _prim in (scatter_p, scatter_add_p, scatter_sub_p, scatter_mul_p, scatter_min_p,
              scatter_max_p):
    batching.batching_rules[_prim] = _scatter_batching(_prim)
