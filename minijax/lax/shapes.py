"""Primitives that move data without computing on it: broadcasting, reshaping, transposing,
reversing, padding, joining and splitting arrays, and ``iota``.

These are the primitives ``jnp`` uses to make operands line up before an elementwise
operation: ``broadcast_in_dim`` says explicitly which operand dimension becomes which
result dimension, which is how ``lax`` avoids NumPy's implicit broadcasting rules. The
others are the building blocks of ``jnp``'s array manipulation functions.

Every shape rule checks its parameters and raises JAX's error (naming the shapes) at
bind time; the NumPy kernels can then assume well-formed parameters.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from typing import Any

import numpy as np

from minijax import dtypes, errors
from minijax.core import Primitive, ShapedArray, Tracer, is_concrete
from minijax.interpreters import batching
from minijax.jaxpr import pp_param_rules
from minijax.lax.elementwise import (
    NUMBER,
    check_dtype,
    convert_element_type,
    is_jax_value,
    operand,
    select,
)


def canonicalize_shape(shape: Any) -> tuple[int, ...]:
    """``3`` or ``[2, 3]`` or ``(2, 3)`` -> a tuple of Python ints."""
    if isinstance(shape, (tuple, list)):  # not np.ndim: it would convert a traced size
        dims = tuple(shape)
    else:
        dims = (shape,) if np.ndim(shape) == 0 else tuple(shape)
    if any(dtypes.issubdtype(getattr(d, "dtype", type(d)), np.inexact) for d in dims
           if type(d) is not int):
        # int() would truncate a size of 2.5 to 2: JAX refuses non-integer sizes
        raise TypeError(
            f"Shapes must be 1D sequences of concrete values of integer type, got {dims}.")
    try:
        return tuple(int(d) for d in dims)
    except errors.ConcretizationTypeError:  # a traced size: say so as JAX does (the
        # shape as it was written, then where each traced size came from)
        shown = shape if isinstance(shape, (tuple, list)) else dims
        where = "\n".join(d._context() for d in dims
                          if isinstance(d, Tracer) and not is_concrete(d))
        raise TypeError(
            f"Shapes must be 1D sequences of concrete values of integer type, got {shown}.\n"
            "If using `jit`, try using `static_argnums` or applying `jit` to smaller "
            f"subfunctions.\n{where}") from None


__all__ = [
    "broadcast",
    "broadcast_in_dim",
    "broadcast_in_dim_p",
    "broadcasted_iota",
    "collapse",
    "concatenate",
    "concatenate_p",
    "expand_dims",
    "full",
    "full_like",
    "iota",
    "iota_p",
    "pad",
    "pad_p",
    "reshape",
    "reshape_p",
    "rev",
    "rev_p",
    "split",
    "split_p",
    "squeeze",
    "squeeze_p",
    "stack",
    "stack_p",
    "tile",
    "tile_p",
    "transpose",
    "transpose_p",
    "unstack",
    "unstack_p",
]

# ---------------------------------------------------------------------------------------
# broadcast_in_dim
# ---------------------------------------------------------------------------------------


def _broadcast_in_dim_rule(x: ShapedArray, shape: tuple[int, ...],
                           broadcast_dimensions: tuple[int, ...], sharding: Any) -> ShapedArray:
    dims = broadcast_dimensions
    if any(d < 0 for d in shape):
        raise TypeError(
            f"broadcast_in_dim shape must have every element be nonnegative, got {shape}.")
    if len(dims) != x.ndim:
        raise TypeError(
            "broadcast_in_dim broadcast_dimensions must have length equal to operand ndim; "
            f"got broadcast_dimensions {dims} for operand ndim {x.ndim}."
        )
    if any(not 0 <= d < len(shape) for d in dims) or list(dims) != sorted(set(dims)):
        raise TypeError(
            "broadcast_in_dim broadcast_dimensions must be strictly increasing and in range; "
            f"got broadcast_dimensions {dims} for target shape {shape}."
        )
    if any(x.shape[i] not in (1, shape[d]) for i, d in enumerate(dims)):
        raise TypeError(
            "broadcast_in_dim operand dimension sizes must either be 1, or be equal to their "
            "corresponding dimensions in the target broadcast shape; got operand of shape "
            f"{x.shape}, target broadcast shape {shape}, broadcast_dimensions {dims} "
        )
    return ShapedArray(shape, x.dtype, x.weak_type)


def _broadcast_in_dim_kernel(x: np.ndarray, shape: tuple[int, ...],
                             broadcast_dimensions: tuple[int, ...], sharding: Any) -> np.ndarray:
    expanded = [1] * len(shape)
    for i, d in enumerate(broadcast_dimensions):
        expanded[d] = x.shape[i]
    return np.broadcast_to(x.reshape(expanded), shape)


broadcast_in_dim_p = Primitive("broadcast_in_dim")
broadcast_in_dim_p.def_impl(_broadcast_in_dim_kernel)
broadcast_in_dim_p.def_abstract_eval(_broadcast_in_dim_rule)
# JAX prints only the dimensions (and nothing when there are none): the shape is in the type.
pp_param_rules[broadcast_in_dim_p] = lambda params: (
    [("broadcast_dimensions", params["broadcast_dimensions"])]
    if params["broadcast_dimensions"] else []
)


def _jax_typed(x: Any) -> Any:
    """:func:`operand`, with the words JAX uses for a bad operand of these functions."""
    if not is_jax_value(x):
        raise TypeError(f"Argument '{x}' of type '{type(x)}' is not a valid JAX type")
    return operand(x)


def broadcast_in_dim(operand_: Any, shape: Sequence[int],
                     broadcast_dimensions: Sequence[int], *, out_sharding: Any = None) -> Any:
    """Broadcast to ``shape``, operand dimension ``i`` becoming result dimension
    ``broadcast_dimensions[i]``. A no-op when nothing would change."""
    x = _jax_typed(operand_)
    shape = tuple(int(d) for d in shape)
    # NumPy integers stay NumPy integers: JAX's jaxprs print them so (np.int64(0))
    dims = tuple(d if isinstance(d, np.integer) else int(d) for d in broadcast_dimensions)
    if x.shape == shape and dims == tuple(range(x.ndim)):
        return x
    return broadcast_in_dim_p.bind(x, shape=shape, broadcast_dimensions=dims, sharding=None)


def broadcast(operand_: Any, sizes: Sequence[int]) -> Any:
    """Add leading dimensions of the given ``sizes``."""
    x = operand(operand_)
    sizes = tuple(sizes)
    return broadcast_in_dim(x, sizes + x.shape, range(len(sizes), len(sizes) + x.ndim))


def full(shape: Sequence[int], fill_value: Any, dtype: Any = None) -> Any:
    """An array of ``shape`` filled with ``fill_value``: a scalar broadcast to the shape."""
    shape = canonicalize_shape(shape)
    if np.ndim(fill_value) != 0:
        raise TypeError(f"full must be called with scalar fill_value, got fill_value.shape "
                        f"{np.shape(fill_value)}.")
    weak = dtype is None and dtypes.is_weakly_typed(fill_value)
    dt = dtypes.dtype(fill_value) if dtype is None else dtypes.canonicalize_dtype(dtype)
    return broadcast_in_dim(convert_element_type(fill_value, dt, weak), shape, ())


def full_like(x: Any, fill_value: Any, dtype: Any = None, shape: Any = None) -> Any:
    """Like ``full``, taking the shape and dtype (and weak type) from ``x`` by default."""
    x = operand(x)
    weak = dtype is None and x.weak_type
    dt = x.dtype if dtype is None else dtypes.canonicalize_dtype(dtype)
    shape = x.shape if shape is None else canonicalize_shape(shape)
    return broadcast_in_dim(convert_element_type(fill_value, dt, weak), shape, ())


# ---------------------------------------------------------------------------------------
# reshape
# ---------------------------------------------------------------------------------------


def _reshape_rule(x: ShapedArray, new_sizes: tuple[int, ...], dimensions: Any,
                  sharding: Any) -> ShapedArray:
    if int(np.prod(new_sizes, dtype=np.int64)) != x.size:
        # JAX's class (its compiler rejects the program; minijax rejects it when traced).
        raise ValueError(
            f"reshape total size must be unchanged, got new_sizes {new_sizes} "
            f"(of total size {int(np.prod(new_sizes, dtype=np.int64))}) for shape {x.shape} "
            f"(of total size {x.size})."
        )
    if dimensions is not None and sorted(dimensions) != list(range(x.ndim)):
        raise TypeError(
            "reshape dimensions must be a permutation of operand dimensions, got dimensions "
            f"{dimensions} for shape {x.shape}."
        )
    return ShapedArray(new_sizes, x.dtype, x.weak_type)


def _reshape_kernel(x: np.ndarray, new_sizes: tuple[int, ...], dimensions: Any,
                    sharding: Any) -> np.ndarray:
    if dimensions is not None:
        x = np.transpose(x, dimensions)
    return np.reshape(x, new_sizes)


reshape_p = Primitive("reshape")
reshape_p.def_impl(_reshape_kernel)
reshape_p.def_abstract_eval(_reshape_rule)


def reshape(operand_: Any, new_sizes: Sequence[int], dimensions: Sequence[int] | None = None,
            *, out_sharding: Any = None) -> Any:
    """Reshape (after transposing by ``dimensions``, if given). A no-op if nothing changes."""
    x = operand(operand_, reshape_p)
    new_sizes = tuple(int(d) for d in new_sizes)
    dims = None if dimensions is None else tuple(int(d) for d in dimensions)
    if x.shape == new_sizes and (dims is None or dims == tuple(range(x.ndim))):
        return x
    return reshape_p.bind(x, new_sizes=new_sizes, dimensions=dims, sharding=None)


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
# transpose, squeeze, rev
# ---------------------------------------------------------------------------------------


def _transpose_rule(x: ShapedArray, permutation: tuple[int, ...]) -> ShapedArray:
    if sorted(permutation) != list(range(x.ndim)):
        raise TypeError(
            "transpose permutation isn't a permutation of operand dimensions, got "
            f"permutation {permutation} for operand shape {x.shape}."
        )
    return ShapedArray(tuple(x.shape[p] for p in permutation), x.dtype, x.weak_type)


transpose_p = Primitive("transpose")
transpose_p.def_impl(lambda x, permutation: np.transpose(x, permutation))
transpose_p.def_abstract_eval(_transpose_rule)


def transpose(operand_: Any, permutation: Sequence[int]) -> Any:
    """Permute dimensions: result dimension ``i`` is operand dimension ``permutation[i]``."""
    x = operand(operand_, transpose_p)
    permutation = tuple(int(p) for p in permutation)
    if permutation == tuple(range(x.ndim)):
        return x
    return transpose_p.bind(x, permutation=permutation)


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


# ---------------------------------------------------------------------------------------
# pad: low and high edge padding (negative crops) and interior padding
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
    where = [slice(None)] * x.ndim
    where[axis] = slice(max(lo, 0), max(lo, 0) + spread, interior + 1)
    out[tuple(where)] = x
    where[axis] = slice(max(-lo, 0), shape[axis] - max(-hi, 0))
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


# ---------------------------------------------------------------------------------------
# concatenate, stack, unstack, split, tile
# ---------------------------------------------------------------------------------------


def _same_dtypes(name: str, avals: Sequence[ShapedArray]) -> None:
    if any(a.dtype != avals[0].dtype for a in avals):
        names = ", ".join(a.dtype.name for a in avals)
        raise TypeError(
            f"lax.{name} requires arguments to have the same dtypes, got {names}. (Tip: "
            f"jnp.{name} is a similar function that does automatic type promotion on inputs)."
        )


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


def _split_rule(x: ShapedArray, sizes: tuple[int, ...], axis: int) -> list[ShapedArray]:
    if sum(sizes) != x.shape[axis]:
        raise ValueError(
            f"Sum of sizes {sum(sizes)} must be equal to dimension {axis} of the operand "
            f"shape {list(x.shape)}"
        )
    if any(s < 0 for s in sizes):
        raise ValueError(f"Sizes passed to split must be nonnegative, got {list(sizes)}")
    shapes = [x.shape[:axis] + (s,) + x.shape[axis + 1:] for s in sizes]
    return [ShapedArray(s, x.dtype, x.weak_type) for s in shapes]


split_p = Primitive("split", multiple_results=True)
split_p.def_impl(lambda x, sizes, axis: np.split(x, np.cumsum(sizes)[:-1], axis))
split_p.def_abstract_eval(_split_rule)


def split(operand_: Any, sizes: Sequence[int], axis: int = 0) -> list[Any]:
    """Cut ``operand_`` along ``axis`` into consecutive pieces of the given ``sizes``."""
    x = operand(operand_)
    (axis,) = canonicalize_axes((axis,), x.ndim)
    return split_p.bind(x, sizes=tuple(int(s) for s in sizes), axis=axis)


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


# ---------------------------------------------------------------------------------------
# copy: a new buffer with the same contents (what jnp.copy shows in a jaxpr)
# ---------------------------------------------------------------------------------------

copy_p = Primitive("copy")
copy_p.def_impl(lambda x: np.array(x, copy=True))
copy_p.def_abstract_eval(lambda x: x)


# ---------------------------------------------------------------------------------------
# vmap: batching rules
# ---------------------------------------------------------------------------------------

batching.register_structural_ops(transpose=transpose, broadcast_in_dim=broadcast_in_dim,
                                 expand_dims=expand_dims)


def _broadcast_in_dim_batching(axis_data: Any, vals: list, dims: list, *,
                               shape: tuple[int, ...], broadcast_dimensions: tuple[int, ...],
                               sharding: Any) -> tuple[Any, int]:
    (x,), (bdim,) = vals, dims
    new_dims = (0, *np.add(1, broadcast_dimensions))  # NumPy ints, printed as in JAX
    return broadcast_in_dim(batching.moveaxis(x, bdim, 0), (x.shape[bdim], *shape),
                            new_dims), 0


def _reshape_batching(axis_data: Any, vals: list, dims: list, *, new_sizes: tuple[int, ...],
                      dimensions: Any, sharding: Any) -> tuple[Any, int]:
    (x,), (bdim,) = vals, dims
    x = batching.moveaxis(x, bdim, 0)
    if dimensions is not None:
        dimensions = (0, *(d + 1 for d in dimensions))
    return reshape(x, (x.shape[0], *new_sizes), dimensions), 0


def _transpose_batching(axis_data: Any, vals: list, dims: list, *,
                        permutation: tuple[int, ...]) -> tuple[Any, int]:
    (x,), (bdim,) = vals, dims
    perm = (bdim, *(p if p < bdim else p + 1 for p in permutation))
    return transpose(x, perm), 0


def _squeeze_batching(axis_data: Any, vals: list, dims: list, *,
                      dimensions: tuple[int, ...]) -> tuple[Any, int]:
    (x,), (bdim,) = vals, dims
    return squeeze(batching.moveaxis(x, bdim, 0), [d + 1 for d in dimensions]), 0


def _rev_batching(axis_data: Any, vals: list, dims: list, *,
                  dimensions: tuple[int, ...]) -> tuple[Any, int]:
    (x,), (bdim,) = vals, dims
    return rev(x, [d + 1 if d >= bdim else d for d in dimensions]), bdim


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


def _split_batching(axis_data: Any, vals: list, dims: list, *, sizes: tuple[int, ...],
                    axis: int) -> tuple[list[Any], list[int]]:
    (x,), (bdim,) = vals, dims
    return split(x, sizes, axis + 1 if axis >= bdim else axis), [bdim] * len(sizes)


def _tile_batching(axis_data: Any, vals: list, dims: list, *,
                   reps: tuple[int, ...]) -> tuple[Any, int]:
    (x,), (bdim,) = vals, dims
    return tile(x, (*reps[:bdim], 1, *reps[bdim:])), bdim


batching.batching_rules[broadcast_in_dim_p] = _broadcast_in_dim_batching
batching.batching_rules[reshape_p] = _reshape_batching
batching.batching_rules[transpose_p] = _transpose_batching
batching.batching_rules[squeeze_p] = _squeeze_batching
batching.batching_rules[rev_p] = _rev_batching
batching.batching_rules[pad_p] = _pad_batching
batching.batching_rules[concatenate_p] = _concatenate_batching
batching.batching_rules[stack_p] = _stack_batching
batching.batching_rules[unstack_p] = _unstack_batching
batching.batching_rules[split_p] = _split_batching
batching.batching_rules[tile_p] = _tile_batching
batching.defvectorized(copy_p)
