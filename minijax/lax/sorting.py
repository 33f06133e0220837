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
from minijax.compiler import lowering
from minijax.compiler.stablehlo_ir import TensorType, Typed, Value
from minijax.core import Primitive, ShapedArray
from minijax.interpreters import ad, batching
from minijax.lax.base import ORDERED, check_dtype, operand, transpose_p
from minijax.lax.shapes import broadcast_in_dim, broadcasted_iota, canonicalize_axes
from minijax.lax.slicing import GatherDimensionNumbers, GatherScatterMode, gather

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


# The rules of sort: the tangents follow the values.


def take_along_axis(x: Any, indices: Any, axis: int) -> Any:
    """``x`` read at ``indices`` along ``axis`` (all other axes matched one to one), as a
    gather with batching dimensions: what carries tangents through a permutation."""
    batch = tuple(d for d in range(x.ndim) if d != axis)
    dn = GatherDimensionNumbers(
        offset_dims=(), collapsed_slice_dims=(axis,), start_index_map=(axis,),
        operand_batching_dims=batch, start_indices_batching_dims=batch)
    index_vectors = broadcast_in_dim(indices, (*indices.shape, 1), tuple(range(x.ndim)))
    return gather(x, index_vectors, dn, (1,) * x.ndim,
                  mode=GatherScatterMode.PROMISE_IN_BOUNDS)


def _sort_jvp(primals: list, tangents: list, *, dimension: int, is_stable: bool,
              num_keys: int) -> tuple[list[Any], list[Any]]:
    """Sort an ``iota`` along with the operands to learn the permutation, then apply it
    to every tangent."""
    position = broadcasted_iota(np.int32, primals[0].shape, dimension)
    *outs, permutation = sort_p.bind(*primals, position, dimension=dimension,
                                     is_stable=is_stable, num_keys=num_keys)
    tangents_out = [ad.Zero(ad.tangent_aval(o.aval)) if type(t) is ad.Zero
                    else take_along_axis(t, permutation, dimension)
                    for o, t in zip(outs, tangents)]
    return outs, tangents_out


ad.jvp_rules[sort_p] = _sort_jvp


def _sort_keys(b: lowering.Builder, args: list[Value], num_keys: int
               ) -> tuple[list[Value], list[Value]]:
    """The comparator's keys: floats with -0.0 made 0.0 and every NaN the same NaN (then
    compared in total order, so NaNs sort last); complex numbers as (real, imag)."""

    def canonical(x: Value) -> Value:
        zero = b.select(b.compare(x, b.constant(0, x.type.dtype), "EQ"),
                        b.constant(0, x.type.dtype), x)
        return b.select(b.compare(x, x, "NE"), b.constant(np.nan, x.type.dtype), zero)

    x_keys, y_keys = [], []
    for x, y in zip(args[:2 * num_keys:2], args[1:2 * num_keys:2]):
        dtype = x.type.dtype
        if dtype.kind == "c":
            part = TensorType((), dtype.type(0).real.dtype)
            for keys, v in ((x_keys, x), (y_keys, y)):
                keys.append(canonical(b.emit("stablehlo.real", v, type=part)))
                keys.append(canonical(b.emit("stablehlo.imag", v, type=part)))
        elif dtypes.issubdtype(dtype, np.floating):
            x_keys.append(canonical(x))
            y_keys.append(canonical(y))
        else:
            x_keys.append(x)
            y_keys.append(y)
    return x_keys, y_keys


def _sort_comparator(b: lowering.Builder, args: list[Value], num_keys: int) -> list[Value]:
    """Lexicographic ``x < y`` on the keys, built from the last key to the first."""
    x_keys, y_keys = _sort_keys(b, args, num_keys)
    less = None
    for xk, yk in zip(x_keys[::-1], y_keys[::-1]):
        kind = "TOTALORDER" if dtypes.issubdtype(xk.type.dtype, np.floating) else None
        lt = b.compare(xk, yk, "LT", kind)
        if less is None:
            less = lt
        else:
            less = b.emit("stablehlo.or", lt,
                          b.emit("stablehlo.and", b.compare(xk, yk, "EQ", kind), less))
    return [less]


@lowering.register(sort_p)
def _sort_lowering(ctx: lowering.RuleContext, *operands: Value, dimension: int,
                   is_stable: bool, num_keys: int) -> list[Value]:
    b = ctx.b
    scalars = [TensorType((), x.type.dtype) for x in operands for _ in range(2)]
    region = lowering._region(b, scalars, lambda r, args: _sort_comparator(r, args, num_keys))
    attrs = {"dimension": Typed(dimension, "i64"), "is_stable": bool(is_stable)}
    return b.op("stablehlo.sort", operands, [x.type for x in operands], attrs,
                [region]).results


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


# The rules of top_k: the values' tangents are read where the values were.


def _top_k_jvp(primals: list, tangents: list, *, k: int, axis: int
               ) -> tuple[list[Any], list[Any]]:
    (x,), (t,) = primals, tangents
    values, indices = top_k_p.bind(x, k=k, axis=axis)
    return [values, indices], [take_along_axis(t, indices, axis),
                               ad.Zero(ad.tangent_aval(indices.aval))]


ad.jvp_rules[top_k_p] = _top_k_jvp


@lowering.register(top_k_p)
def _top_k_lowering(ctx: lowering.RuleContext, x: Value, *, k: int, axis: int
                    ) -> list[Value]:
    """``chlo.top_k`` works on the last axis: transpose another axis there and back (by
    ``transpose``'s lowering rule)."""
    b, rank = ctx.b, len(x.type.shape)
    swap = lowering.lowering_rules[transpose_p]
    perm = None
    if axis != rank - 1:
        perm = list(range(rank))
        perm[axis], perm[-1] = perm[-1], perm[axis]
        x = swap(ctx, x, permutation=tuple(perm))
    shape = x.type.shape[:-1] + (k,)
    outs = b.op("chlo.top_k", [x], [TensorType(shape, x.type.dtype),
                                    TensorType(shape, np.dtype(np.int32))], {"k": k}).results
    if perm is not None:
        outs = [swap(ctx, o, permutation=tuple(perm)) for o in outs]
    return outs


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
