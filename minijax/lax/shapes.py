"""Primitives that move data without computing on it: squeezing, reversing, stacking
and tiling arrays, and ``iota``.

``broadcast_in_dim``, ``reshape`` and ``transpose`` are in the base set
(:mod:`minijax.lax.base`); with these, they are the building blocks of ``jnp``'s array
manipulation functions. (``pad``, ``concatenate`` and ``split`` live in
:mod:`minijax.lax.slicing`: their transposes are slices, and a slice's is a pad.)

Every shape rule checks its parameters and raises JAX's error (naming the shapes) at
bind time; the NumPy kernels can then assume well-formed parameters.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from typing import Any

import numpy as np

from minijax import dtypes
from minijax.compiler.lowering import Builder, RuleContext, register, tensor_type
from minijax.compiler.stablehlo_ir import TensorType, Value
from minijax.core import Primitive, ShapedArray
from minijax.interpreters import batching
from minijax.interpreters.ad import deflinear, defzero, instantiate
from minijax.interpreters.transpose import deftranspose, is_undefined, transpose_rules
from minijax.lax.base import (
    NUMBER,
    _jax_typed,
    _linear_unary,
    broadcast,
    broadcast_in_dim,
    canonicalize_shape,
    check_dtype,
    operand,
    reduce_sum,
    reshape,
    transpose,
)

__all__ = [
    "broadcasted_iota",
    "collapse",
    "expand_dims",
    "iota",
    "iota_p",
    "rev",
    "rev_p",
    "squeeze",
    "squeeze_p",
    "stack",
    "stack_p",
    "tile",
    "tile_p",
    "unstack",
    "unstack_p",
]

# ---------------------------------------------------------------------------------------
# collapse, expand_dims: a reshape and a broadcast_in_dim, spelled differently
# ---------------------------------------------------------------------------------------


def collapse(operand_: Any, start_dimension: int, stop_dimension: int | None = None) -> Any:
    """Merge dimensions ``start_dimension:stop_dimension`` into one (a ``reshape``)."""
    x = operand(operand_)
    stop = x.ndim if stop_dimension is None else stop_dimension
    merged = int(np.prod(x.shape[start_dimension:stop], dtype=np.int64))
    return reshape(x, (*x.shape[:start_dimension], merged, *x.shape[stop:]))


def canonicalize_axes(axes: Sequence[int], ndim: int) -> tuple[int, ...]:
    """Axes as non-negative ints: negative axes count from the end; out of range is a
    ValueError (NumPy's words)."""
    out = []
    for axis in axes:
        if not -ndim <= axis < ndim:
            raise ValueError(f"axis {axis} is out of bounds for array of dimension {ndim}")
        out.append(axis % ndim)
    return tuple(out)


def expand_dims(array: Any, dimensions: Sequence[int]) -> Any:
    """Insert size-1 dimensions at ``dimensions`` (positions in the result).

    Like JAX, this is a ``broadcast_in_dim`` to the shape with the new ones: there is no
    separate primitive, which is what a jaxpr of ``x[None]`` shows.
    """
    x = _jax_typed(array)
    ndim_out = x.ndim + len(dimensions)
    dims = canonicalize_axes(dimensions, ndim_out)
    if len(set(dims)) != len(dims):
        raise ValueError(f"repeated axis in lax.expand_dims: {tuple(dimensions)}")
    kept = [d for d in range(ndim_out) if d not in dims]
    shape = [1] * ndim_out
    for d, size in zip(kept, x.shape):
        shape[d] = size
    return broadcast_in_dim(x, shape, kept)


# ---------------------------------------------------------------------------------------
# squeeze, rev
# ---------------------------------------------------------------------------------------


def _squeeze_rule(x: ShapedArray, dimensions: tuple[int, ...]) -> ShapedArray:
    if any(x.shape[d] != 1 for d in dimensions):
        raise ValueError(
            "cannot select an axis to squeeze out which has size not equal to one, got "
            f"shape={x.shape} and dimensions={dimensions}"
        )
    shape = tuple(s for d, s in enumerate(x.shape) if d not in dimensions)
    return ShapedArray(shape, x.dtype, x.weak_type)


squeeze_p = Primitive("squeeze")
squeeze_p.def_impl(lambda x, dimensions: x.squeeze(dimensions))
squeeze_p.def_abstract_eval(_squeeze_rule)


def squeeze(array: Any, dimensions: Sequence[int]) -> Any:
    """Remove the given size-1 dimensions."""
    x = operand(array, squeeze_p)
    dims = tuple(sorted(set(canonicalize_axes(dimensions, x.ndim))))
    if not dims:
        return x
    return squeeze_p.bind(x, dimensions=dims)


def _rev_rule(x: ShapedArray, dimensions: tuple[int, ...]) -> ShapedArray:
    if any(d < 0 for d in dimensions):
        raise TypeError(
            f"rev dimensions must have every element be nonnegative, got {dimensions}."
        )
    if len(set(dimensions)) != len(dimensions):
        raise TypeError(f"rev dimensions must be unique, got {dimensions}.")
    if any(d >= x.ndim for d in dimensions):
        raise TypeError(
            "rev dimensions must all be less than operand ndim, got dimensions "
            f"{dimensions} for operand ndim {x.ndim}."
        )
    return x


rev_p = Primitive("rev")
rev_p.def_impl(lambda x, dimensions: np.flip(x, dimensions) if dimensions else x)
rev_p.def_abstract_eval(_rev_rule)


def rev(operand_: Any, dimensions: Sequence[int]) -> Any:
    """Reverse the order of elements along each of ``dimensions``."""
    return rev_p.bind(operand(operand_, rev_p), dimensions=tuple(int(d) for d in dimensions))


for _p in (squeeze_p, rev_p):
    deflinear(_p)
_linear_unary(squeeze_p, lambda ct, x, *, dimensions: reshape(ct, x.aval.shape))
_linear_unary(rev_p, lambda ct, x, *, dimensions: rev(ct, dimensions))


@register(squeeze_p)
def _squeeze_lowering(ctx: RuleContext, x: Value, dimensions: tuple[int, ...]) -> Value:
    return ctx.b.emit("stablehlo.reshape", x, type=ctx.type_out)


@register(rev_p)
def _rev_lowering(ctx: RuleContext, x: Value, dimensions: tuple[int, ...]) -> Value:
    return ctx.b.emit("stablehlo.reverse", x, dims=tuple(dimensions))


# ---------------------------------------------------------------------------------------
# stack, unstack, tile
# ---------------------------------------------------------------------------------------


def _same_dtypes(name: str, avals: Sequence[ShapedArray]) -> None:
    if any(a.dtype != avals[0].dtype for a in avals):
        names = ", ".join(a.dtype.name for a in avals)
        raise TypeError(
            f"lax.{name} requires arguments to have the same dtypes, got {names}. (Tip: "
            f"jnp.{name} is a similar function that does automatic type promotion on inputs)."
        )


def _stack_rule(*avals: ShapedArray, axis: int) -> ShapedArray:
    if len({a.shape for a in avals}) != 1:
        shapes = ", ".join(str(a.shape) for a in avals)
        if len({a.ndim for a in avals}) != 1:
            raise ValueError(
                f"Cannot stack arrays with different numbers of dimensions: got {shapes}."
            )
        raise ValueError(f"All input arrays must have the same shape: got {shapes}.")
    _same_dtypes("stack", avals)
    shape = list(avals[0].shape)
    shape.insert(axis, len(avals))
    return ShapedArray(shape, avals[0].dtype, all(a.weak_type for a in avals))


stack_p = Primitive("stack")
stack_p.def_impl(lambda *xs, axis: np.stack(xs, axis=axis))
stack_p.def_abstract_eval(_stack_rule)


def stack(operands: Sequence[Any], axis: int = 0) -> Any:
    """Join arrays of one shape and dtype along a new dimension ``axis``."""
    if len(operands) == 0:
        raise ValueError("stack requires a non-empty sequences of arrays")
    xs = list(map(operand, operands))
    (axis,) = canonicalize_axes((axis,), xs[0].ndim + 1)
    return stack_p.bind(*xs, axis=axis)


unstack_p = Primitive("unstack", multiple_results=True)
unstack_p.def_impl(lambda x, axis: [np.take(x, i, axis) for i in range(x.shape[axis])])
unstack_p.def_abstract_eval(lambda x, axis: [
    ShapedArray(x.shape[:axis] + x.shape[axis + 1:], x.dtype, x.weak_type)
] * x.shape[axis])


def unstack(operand_: Any, axis: int = 0) -> list[Any]:
    """The slices of ``operand_`` along ``axis``, as a list of arrays."""
    x = operand(operand_)
    (axis,) = canonicalize_axes((axis,), x.ndim)
    return unstack_p.bind(x, axis=axis)


def _tile_rule(x: ShapedArray, reps: tuple[int, ...]) -> ShapedArray:
    if len(reps) != x.ndim:
        raise TypeError(
            "reps length must be equal to the ndim of x, got "
            f"len(reps)={len(reps)} and x.ndim={x.ndim}."
        )
    if any(r < 0 for r in reps):
        raise ValueError(f"reps must be nonnegative, got {reps}.")
    shape = tuple(n * r for n, r in zip(x.shape, reps))
    return ShapedArray(shape, x.dtype, x.weak_type)


tile_p = Primitive("tile")
tile_p.def_impl(lambda x, reps: np.tile(x, reps))
tile_p.def_abstract_eval(_tile_rule)


def tile(operand_: Any, reps: Sequence[int]) -> Any:
    """Repeat the whole array ``reps[d]`` times along each dimension ``d``."""
    return tile_p.bind(operand(operand_, tile_p), reps=tuple(int(r) for r in reps))


for _p in (stack_p, unstack_p, tile_p):
    deflinear(_p)
deftranspose(stack_p, lambda ct, *operands, axis: [
    piece if is_undefined(x) else None for piece, x in zip(unstack(ct, axis), operands)])
transpose_rules[unstack_p] = lambda cts, x, *, axis: [
    stack([instantiate(c) for c in cts], axis)]


def _tile_transpose(ct: Any, x: Any, *, reps: tuple[int, ...]) -> Any:
    """Tile copies ``x`` ``reps[d]`` times along each axis ``d``: split each axis of ``ct``
    into (copy, position) and sum over the copies."""
    split_shape = tuple(size for r, n in zip(reps, x.aval.shape) for size in (r, n))
    copies = tuple(range(0, 2 * x.aval.ndim, 2))
    return reduce_sum(reshape(ct, split_shape), copies)


_linear_unary(tile_p, _tile_transpose)


def slice_op(b: Builder, x: Value, start: Sequence[int], limit: Sequence[int],
             strides: Sequence[int] | None = None) -> Value:
    """``stablehlo.slice`` (what ``unstack``, ``split`` and ``slice`` lower to)."""
    strides = tuple(strides) if strides else (1,) * len(start)
    shape = tuple(-(-(hi - lo) // st) for lo, hi, st in zip(start, limit, strides))
    return b.emit("stablehlo.slice", x, type=TensorType(shape, x.type.dtype),
                  start=tuple(start), limit=tuple(limit), strides=strides)


@register(stack_p)
def _stack_lowering(ctx: RuleContext, *xs: Value, axis: int) -> Value:
    """As ``jnp.stack`` lowers: each operand gets a size-1 axis, then one concatenate."""
    expanded = []
    for x in xs:
        shape = list(x.type.shape)
        shape.insert(axis, 1)
        kept = [d for d in range(len(shape)) if d != axis]
        expanded.append(ctx.b.broadcast(x, shape, kept))
    return ctx.b.emit("stablehlo.concatenate", *expanded, type=ctx.type_out, dim=axis)


@register(unstack_p)
def _unstack_lowering(ctx: RuleContext, x: Value, axis: int) -> list[Value]:
    outs = []
    for i, aval in enumerate(ctx.avals_out):
        start, limit = [0] * len(x.type.shape), list(x.type.shape)
        start[axis], limit[axis] = i, i + 1
        piece = slice_op(ctx.b, x, start, limit)
        outs.append(ctx.b.emit("stablehlo.reshape", piece, type=tensor_type(aval)))
    return outs


@register(tile_p)
def _tile_lowering(ctx: RuleContext, x: Value, reps: tuple[int, ...]) -> Value:
    """As ``jnp.tile`` lowers: reshape to (1, n0, 1, n1, ...), broadcast the ones to the
    repetitions, reshape back."""
    b, shape = ctx.b, x.type.shape
    spread = [d for n in shape for d in (1, n)]
    repeated = [d for r, n in zip(reps, shape) for d in (r, n)]
    x = b.emit("stablehlo.reshape", x, type=TensorType(tuple(spread), x.type.dtype))
    x = b.broadcast(x, repeated, range(len(repeated)))
    return b.emit("stablehlo.reshape", x, type=ctx.type_out)


# ---------------------------------------------------------------------------------------
# iota: 0, 1, 2, ... along one dimension (the primitive with no operands)
# ---------------------------------------------------------------------------------------


def _iota_rule(*, dtype: np.dtype, shape: tuple[int, ...], dimension: int,
               sharding: Any) -> ShapedArray:
    check_dtype("iota", NUMBER, dtype)
    if any(d < 0 for d in shape):
        raise TypeError(f"iota shape must have every element be nonnegative, got {shape}.")
    if not 0 <= dimension < len(shape):
        raise ValueError(
            "iota dimension must be between 0 and len(shape), got "
            f"dimension={dimension} for shape={shape}"
        )
    return ShapedArray(shape, dtype)


def _iota_kernel(*, dtype: np.dtype, shape: tuple[int, ...], dimension: int,
                 sharding: Any) -> np.ndarray:
    counts = np.arange(shape[dimension]).astype(dtype)
    expanded = [1] * len(shape)
    expanded[dimension] = shape[dimension]
    return np.broadcast_to(counts.reshape(expanded), shape)


iota_p = Primitive("iota")
iota_p.def_impl(_iota_kernel)
iota_p.def_abstract_eval(_iota_rule)


def broadcasted_iota(dtype: Any, shape: Sequence[int], dimension: int, *,
                     out_sharding: Any = None) -> Any:
    """An array of ``shape`` whose values count 0, 1, 2, ... along ``dimension``."""
    shape = canonicalize_shape(shape)
    return iota_p.bind(dtype=dtypes.canonicalize_dtype(dtype), shape=shape,
                       dimension=int(dimension), sharding=None)


def iota(dtype: Any, size: int) -> Any:
    """``[0, 1, ..., size - 1]`` as an array of ``dtype``."""
    return broadcasted_iota(dtype, (size,), 0)


defzero(iota_p)


@register(iota_p)
def _iota_lowering(ctx: RuleContext, *, dtype: np.dtype, shape: tuple[int, ...],
                   dimension: int, sharding: Any) -> Value:
    return ctx.b.op("stablehlo.iota", [], [ctx.type_out], {"dim": dimension}).result


# ---------------------------------------------------------------------------------------
# empty2: a scalar whose value does not matter (a placeholder)
# ---------------------------------------------------------------------------------------


class MemorySpace(enum.Enum):
    """Where a buffer lives. Only device memory exists here: this enum is a parameter of
    ``empty2`` so that jaxprs print it as JAX's do (``memory_space=MemorySpace.Device``)."""

    Device = "device"


empty2_p = Primitive("empty2")
empty2_p.def_impl(lambda *, dtype, memory_space: np.zeros((), dtype))
empty2_p.def_abstract_eval(lambda *, dtype, memory_space: ShapedArray((), dtype))

defzero(empty2_p)


@register(empty2_p)
def _empty2_lowering(ctx: RuleContext, *, dtype: np.dtype, memory_space: Any) -> Value:
    """Any value will do: zero, as XLA's lowering of JAX's ``empty2`` gives."""
    return ctx.b.constant(0, dtype)


# ---------------------------------------------------------------------------------------
# copy: a new buffer with the same contents (what jnp.copy shows in a jaxpr)
# ---------------------------------------------------------------------------------------

copy_p = Primitive("copy")
copy_p.def_impl(lambda x: np.array(x, copy=True))
copy_p.def_abstract_eval(lambda x: x)

deflinear(copy_p)
_linear_unary(copy_p, lambda ct, x: copy_p.bind(ct))


@register(copy_p)
def _copy_lowering(ctx: RuleContext, x: Value) -> Value:
    """Arrays are immutable: a copy is the value itself."""
    return x

# ---------------------------------------------------------------------------------------
# vmap: batching rules
# ---------------------------------------------------------------------------------------

batching.register_structural_ops(transpose=transpose, broadcast_in_dim=broadcast_in_dim,
                                 expand_dims=expand_dims)


def _squeeze_batching(axis_data: Any, vals: list, dims: list, *,
                      dimensions: tuple[int, ...]) -> tuple[Any, int]:
    (x,), (bdim,) = vals, dims
    return squeeze(batching.moveaxis(x, bdim, 0), [d + 1 for d in dimensions]), 0


def _rev_batching(axis_data: Any, vals: list, dims: list, *,
                  dimensions: tuple[int, ...]) -> tuple[Any, int]:
    (x,), (bdim,) = vals, dims
    return rev(x, [d + 1 if d >= bdim else d for d in dimensions]), bdim


def _stack_batching(axis_data: Any, vals: list, dims: list, *, axis: int) -> tuple[Any, int]:
    """Operands batched alike are stacked as they are (the batch axis moves past the new
    one if that comes first); otherwise batch axes go to the front."""
    bdim = dims[0]
    if bdim is not None and all(d == bdim for d in dims):
        if axis <= bdim:
            return stack_p.bind(*vals, axis=axis), bdim + 1
        return stack_p.bind(*vals, axis=axis + 1), bdim
    size = next(x.shape[d] for x, d in zip(vals, dims) if d is not None)
    xs = [broadcast(x, (size,)) if d is None else batching.moveaxis(x, d, 0)
          for x, d in zip(vals, dims)]
    return stack_p.bind(*xs, axis=axis + 1), 0


def _unstack_batching(axis_data: Any, vals: list, dims: list, *,
                      axis: int) -> tuple[list[Any], list[int]]:
    (x,), (bdim,) = vals, dims
    outs = unstack(x, axis + 1 if axis >= bdim else axis)
    return outs, [bdim - (bdim > axis)] * len(outs)


def _tile_batching(axis_data: Any, vals: list, dims: list, *,
                   reps: tuple[int, ...]) -> tuple[Any, int]:
    (x,), (bdim,) = vals, dims
    return tile(x, (*reps[:bdim], 1, *reps[bdim:])), bdim


batching.batching_rules[squeeze_p] = _squeeze_batching
batching.batching_rules[rev_p] = _rev_batching
batching.batching_rules[stack_p] = _stack_batching
batching.batching_rules[unstack_p] = _unstack_batching
batching.batching_rules[tile_p] = _tile_batching
batching.defvectorized(copy_p)
