"""Primitives that move data without computing on it: broadcasting and reshaping.

These are the primitives ``jnp`` uses to make operands line up before an elementwise
operation: ``broadcast_in_dim`` says explicitly which operand dimension becomes which
result dimension, which is how ``lax`` avoids NumPy's implicit broadcasting rules.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from minijax import dtypes
from minijax.core import Primitive, ShapedArray
from minijax.jaxpr import pp_param_rules
from minijax.lax.elementwise import convert_element_type, operand


def canonicalize_shape(shape: Any) -> tuple[int, ...]:
    """``3`` or ``[2, 3]`` or ``(2, 3)`` -> a tuple of Python ints."""
    return (int(shape),) if np.ndim(shape) == 0 else tuple(int(d) for d in shape)



__all__ = [
    "broadcast",
    "broadcast_in_dim",
    "broadcast_in_dim_p",
    "full",
    "full_like",
    "reshape",
    "reshape_p",
]

# ---------------------------------------------------------------------------------------
# broadcast_in_dim
# ---------------------------------------------------------------------------------------


def _broadcast_in_dim_rule(x: ShapedArray, shape: tuple[int, ...],
                           broadcast_dimensions: tuple[int, ...], sharding: Any) -> ShapedArray:
    dims = broadcast_dimensions
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


def broadcast_in_dim(operand_: Any, shape: Sequence[int],
                     broadcast_dimensions: Sequence[int], *, out_sharding: Any = None) -> Any:
    """Broadcast to ``shape``, operand dimension ``i`` becoming result dimension
    ``broadcast_dimensions[i]``. A no-op when nothing would change."""
    x = operand(operand_)
    shape, dims = tuple(int(d) for d in shape), tuple(int(d) for d in broadcast_dimensions)
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
        raise TypeError(
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
    x = operand(operand_)
    new_sizes = tuple(int(d) for d in new_sizes)
    dims = None if dimensions is None else tuple(int(d) for d in dimensions)
    if x.shape == new_sizes and (dims is None or dims == tuple(range(x.ndim))):
        return x
    return reshape_p.bind(x, new_sizes=new_sizes, dimensions=dims, sharding=None)
