"""Sorting primitives: ``sort`` (of one or several arrays) and ``top_k``.

``sort`` takes any number of operands of one shape and sorts them *together* along one
dimension: the first ``num_keys`` operands are the keys (compared lexicographically), and
every operand is permuted the same way. That is how ``argsort`` works: sort the values
together with an ``iota`` (0, 1, 2, ...) and keep the permuted iota.

``sort`` orders floats as XLA's comparator does: NaNs after everything else (whatever
their sign), ``-0.0`` equal to ``0.0`` (so a stable sort keeps them in input order), and
complex numbers by real part, then imaginary part. ``top_k`` instead uses IEEE's total
order of the bits, where ``-0.0 < 0.0`` and a negative NaN is the smallest value.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from minijax import dtypes
from minijax.core import Primitive, ShapedArray
from minijax.interpreters import batching
from minijax.lax.elementwise import ORDERED, check_dtype, operand
from minijax.lax.shapes import broadcast_in_dim, canonicalize_axes

__all__ = ["sort", "sort_key_val", "sort_p", "top_k", "top_k_p"]


def canonicalize_axis(axis: int, ndim: int) -> int:
    """A possibly negative axis as an index in ``range(ndim)``, or NumPy's ValueError."""
    return canonicalize_axes((int(axis),), ndim)[0]


def _keys(x: np.ndarray) -> list[np.ndarray]:
    """Arrays that NumPy sorts in ``sort``'s order, most significant first. NumPy's own
    float order already puts NaNs last and ties -0.0 with 0.0; complex numbers become
    (real, imaginary) pairs, and bfloat16, which NumPy cannot sort NaN-aware, float32."""
    if x.dtype.kind == "c":
        return [x.real, x.imag]
    if x.dtype == dtypes.bfloat16:
        return [x.astype(np.float32)]
    return [x]


def _order(operands: Sequence[np.ndarray], dimension: int) -> np.ndarray:
    """The stable sorting permutation of the keys, as indices along ``dimension``."""
    keys = [k for x in operands for k in _keys(x)]
    return np.lexsort(keys[::-1], axis=dimension)  # lexsort's primary key comes last


# ---------------------------------------------------------------------------------------
# sort
# ---------------------------------------------------------------------------------------


def _sort_kernel(*operands: np.ndarray, dimension: int, is_stable: bool, num_keys: int
                 ) -> list[np.ndarray]:
    order = _order(operands[:num_keys], dimension)
    return [np.take_along_axis(x, order, axis=dimension) for x in operands]


def _sort_rule(*operands: ShapedArray, dimension: int, is_stable: bool, num_keys: int
               ) -> list[ShapedArray]:
    shapes = [x.shape for x in operands]
    if any(s != shapes[0] for s in shapes):
        raise TypeError(
            f"Arguments to sort must have equal shapes, got: {' '.join(map(str, shapes))}"
        )
    if not 1 <= num_keys <= len(operands):
        raise ValueError(
            f"num_keys={num_keys} must be between 1 and len(operand)={len(operands)}"
        )
    canonicalize_axis(dimension, len(shapes[0]))
    return list(operands)


sort_p = Primitive("sort", multiple_results=True)
sort_p.def_impl(_sort_kernel)
sort_p.def_abstract_eval(_sort_rule)


def sort(operand_: Any, dimension: int = -1, is_stable: bool = True, num_keys: int = 1
         ) -> Any:
    """Sort one array, or a sequence of arrays by their first ``num_keys`` (returning a
    tuple), along ``dimension``."""
    several = isinstance(operand_, (list, tuple))
    operands = [operand(x) for x in (operand_ if several else [operand_])]
    dimension = canonicalize_axis(int(dimension), operands[0].ndim)
    outs = sort_p.bind(*operands, dimension=dimension, is_stable=bool(is_stable),
                       num_keys=int(num_keys))
    return tuple(outs) if several else outs[0]


def sort_key_val(keys: Any, values: Any, dimension: int = -1, is_stable: bool = True
                 ) -> tuple[Any, Any]:
    """Sort ``keys`` along ``dimension`` and permute ``values`` the same way."""
    return sort((keys, values), dimension, is_stable, num_keys=1)


# ---------------------------------------------------------------------------------------
# top_k: the k largest entries along an axis, and where they were
# ---------------------------------------------------------------------------------------


def _total_order(x: np.ndarray) -> np.ndarray:
    """Floats as signed integers in IEEE 754's *total order*, which ``top_k`` uses (unlike
    ``sort``): -NaN < -inf < ... < -0.0 < 0.0 < ... < inf < NaN. Positive floats already
    compare like their bits; for negative ones, flipping all bits but the sign reverses
    the order, as it must."""
    bits = x.view(np.dtype(f"int{8 * x.dtype.itemsize}"))
    magnitude = np.iinfo(bits.dtype).max
    return np.where(bits < 0, bits ^ magnitude, bits)


def _descending_keys(x: np.ndarray) -> list[np.ndarray]:
    """Keys that sort ``x`` from largest to smallest (``np.invert`` reverses the order of
    signed, unsigned and boolean values alike)."""
    return [np.invert(x if x.dtype.kind in "biu" else _total_order(x))]


def _top_k_kernel(x: np.ndarray, *, k: int, axis: int) -> list[np.ndarray]:
    order = np.lexsort(_descending_keys(x)[::-1], axis=axis)
    first_k = np.take(order, np.arange(k), axis=axis)
    return [np.take_along_axis(x, first_k, axis=axis), first_k.astype(np.int32)]


def _top_k_rule(x: ShapedArray, *, k: int, axis: int) -> list[ShapedArray]:
    if x.dtype.kind == "c":
        raise ValueError("top_k is not compatible with complex inputs.")
    check_dtype("top_k", ORDERED, x.dtype)
    if k < 0:
        raise ValueError(f"k argument to top_k must be nonnegative, got {k}")
    if x.shape[axis] < k:
        raise ValueError(
            "k argument to top_k must be no larger than size along axis; got "
            f"k={k} with shape={list(x.shape)} and axis={axis}"
        )
    shape = x.shape[:axis] + (k,) + x.shape[axis + 1:]
    return [ShapedArray(shape, x.dtype, x.weak_type), ShapedArray(shape, np.dtype(np.int32))]


top_k_p = Primitive("top_k", multiple_results=True)
top_k_p.def_impl(_top_k_kernel)
top_k_p.def_abstract_eval(_top_k_rule)


def top_k(operand_: Any, k: int, *, axis: int = -1) -> tuple[Any, Any]:
    """The ``k`` largest entries along ``axis`` (largest first; ties keep their order) and
    their indices."""
    x = operand(operand_, top_k_p)
    values, indices = top_k_p.bind(x, k=int(k), axis=canonicalize_axis(int(axis), x.ndim))
    return values, indices


# ---------------------------------------------------------------------------------------
# vmap: batching rules
# ---------------------------------------------------------------------------------------


def _sort_batching(axis_data: Any, vals: list, dims: list, *, dimension: int,
                   is_stable: bool, num_keys: int) -> tuple[list[Any], list[int]]:
    """JAX's rule: every operand batched where the first batched one is (unbatched ones
    broadcast there), then one sort along the example's dimension."""
    prototype, bdim = next((x, d) for x, d in zip(vals, dims) if d is not None)
    others = tuple(np.delete(np.arange(prototype.ndim), bdim))
    xs = [broadcast_in_dim(x, prototype.shape, others) if d is None
          else batching.moveaxis(x, d, bdim) for x, d in zip(vals, dims)]
    outs = sort_p.bind(*xs, dimension=dimension + (bdim <= dimension), is_stable=is_stable,
                       num_keys=num_keys)
    return outs, [bdim] * len(outs)


def _top_k_batching(axis_data: Any, vals: list, dims: list, *, k: int, axis: int
                    ) -> tuple[list[Any], list[int]]:
    (x,), (bdim,) = vals, dims
    return top_k_p.bind(x, k=k, axis=axis + (bdim <= axis)), [bdim, bdim]


batching.batching_rules[sort_p] = _sort_batching
batching.batching_rules[top_k_p] = _top_k_batching
