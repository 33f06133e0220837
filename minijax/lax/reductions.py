"""Reductions and cumulative reductions: sums, products, extrema, logic, argmax, cumsum.

A reduction collapses the dimensions listed in ``axes`` with one associative operation
(``reduce_sum`` with +, ``reduce_max`` with max, ...). Reducing over no element gives the
operation's identity: 0 for a sum, 1 for a product, the lowest value for a maximum --
which is why ``reduce_max`` of an empty array is ``-inf`` rather than an error (``jnp``
adds NumPy's error on top). A cumulative reduction (``cumsum``, ...) keeps every partial
result along one ``axis`` instead, from the start or, with ``reverse=True``, from the end.

``lax`` is strict here too: axes must be non-negative and in range, and nothing is
promoted. ``reduce_sum`` of int8 is int8 (it wraps around); it is ``jnp.sum`` that first
widens small integers to int32, as NumPy does.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from minijax import dtypes
from minijax.core import Primitive, ShapedArray
from minijax.interpreters import batching
from minijax.lax.elementwise import ORDERED, check_dtype, operand

__all__ = [
    "argmax",
    "argmax_p",
    "argmin",
    "argmin_p",
    "cumlogsumexp",
    "cumlogsumexp_p",
    "cummax",
    "cummax_p",
    "cummin",
    "cummin_p",
    "cumprod",
    "cumprod_p",
    "cumsum",
    "cumsum_p",
    "reduce_and",
    "reduce_and_p",
    "reduce_max",
    "reduce_max_p",
    "reduce_min",
    "reduce_min_p",
    "reduce_or",
    "reduce_or_p",
    "reduce_prod",
    "reduce_prod_p",
    "reduce_sum",
    "reduce_sum_p",
    "reduce_xor",
    "reduce_xor_p",
]

# ---------------------------------------------------------------------------------------
# Dtype checks
# ---------------------------------------------------------------------------------------


def _check_number(name: str, dt: np.dtype) -> None:
    """Arithmetic reductions take numbers; booleans must be converted first."""
    if dt == np.bool_:
        raise TypeError(
            f"{name} does not accept dtype bool. Accepted dtypes are subtypes of number."
        )


def _check_logical(name: str, dt: np.dtype) -> None:
    if dt != np.bool_ and dt.kind not in "iu":
        raise TypeError(f"logical reduction requires operand dtype bool or int, got {dt.name}.")


def _check_nothing(name: str, dt: np.dtype) -> None:
    """Maxima and minima exist for every dtype (complex numbers compare lexicographically)."""


def _accumulator(dt: np.dtype) -> np.dtype:
    """The dtype a kernel adds in: half-precision floats lose too much if summed as is."""
    return _FLOAT32 if dt in _HALVES else dt


_FLOAT32 = np.dtype(np.float32)
_HALVES = frozenset([np.dtype(np.float16), np.dtype(dtypes.bfloat16)])


# ---------------------------------------------------------------------------------------
# reduce_sum, reduce_prod, reduce_max, reduce_min, reduce_and, reduce_or, reduce_xor
# ---------------------------------------------------------------------------------------


def _reduced_shape(x: ShapedArray, axes: tuple[int, ...]) -> tuple[int, ...]:
    if any(not 0 <= a < x.ndim for a in axes):
        raise ValueError(
            f"reduction axes {axes} contains out-of-bounds indices for {x.str_long()}."
        )
    if len(set(axes)) != len(axes):
        raise ValueError(f"duplicate value in 'axes' of reduction: {axes}")
    return tuple(d for i, d in enumerate(x.shape) if i not in axes)


def _lowest(dt: np.dtype) -> Any:
    """The identity of max: -inf, or the smallest integer, or False."""
    if dt == np.bool_:
        return False
    if dt.kind in "iu":
        return dtypes.iinfo(dt).min
    return -np.inf


def _highest(dt: np.dtype) -> Any:
    """The identity of min: +inf, or the largest integer, or True."""
    if dt == np.bool_:
        return True
    if dt.kind in "iu":
        return dtypes.iinfo(dt).max
    return np.inf


def _all_ones(dt: np.dtype) -> Any:
    """The identity of bitwise AND: every bit set."""
    return True if dt == np.bool_ else np.array(-1).astype(dt)


def reduce_extreme(ufunc: np.ufunc, x: np.ndarray, axes: tuple[int, ...], initial: Any
                   ) -> Any:
    """``np.maximum.reduce`` or ``np.minimum.reduce``, ordering zeros as XLA does: +0.0
    above -0.0 (NumPy keeps whichever zero it met first). Only a result that is zero
    needs a second look, so the common case costs nothing extra."""
    out = ufunc.reduce(x, axis=axes, initial=initial)
    if not _needs_zeros_ordered(x, out):
        return out
    decisive, zero = _decisive_zeros(ufunc, x)
    return np.where((out == 0) & np.any(decisive, axis=axes), zero, out).astype(x.dtype)


def accumulate_extreme(ufunc: np.ufunc, x: np.ndarray, axis: int) -> np.ndarray:
    """``np.maximum.accumulate`` or ``np.minimum.accumulate`` (cummax, cummin), ordering
    zeros as XLA does (see :func:`reduce_extreme`)."""
    out = ufunc.accumulate(x, axis=axis)
    if not _needs_zeros_ordered(x, out):
        return out
    decisive, zero = _decisive_zeros(ufunc, x)
    seen = np.logical_or.accumulate(decisive, axis=axis)
    return np.where((out == 0) & seen, zero, out).astype(x.dtype)


def _needs_zeros_ordered(x: np.ndarray, out: Any) -> bool:
    """Floats whose extremum came out zero: NumPy may have kept the wrong zero."""
    return (x.dtype.kind == "f" or x.dtype == dtypes.bfloat16) and bool(np.any(out == 0))


def _decisive_zeros(ufunc: np.ufunc, x: np.ndarray) -> tuple[np.ndarray, Any]:
    """Where the zeros are that decide a zero extremum (a maximum is +0.0 if any zero is
    +0.0; a minimum, -0.0 if any is -0.0), and that zero."""
    negative = ufunc is np.minimum
    return (x == 0) & (np.signbit(x) == negative), x.dtype.type(-0.0 if negative else 0.0)


def _reduction(name: str, ufunc: np.ufunc, check: Callable[[str, np.dtype], None],
               identity: Callable[[np.dtype], Any], accumulate_wide: bool = False
               ) -> Primitive:
    """A reduction primitive: ``ufunc.reduce`` over ``axes``, starting from ``identity``."""

    def kernel(x: np.ndarray, *, axes: tuple[int, ...], **_: Any) -> Any:
        dt = x.dtype
        acc = _accumulator(dt) if accumulate_wide else dt
        if ufunc in (np.maximum, np.minimum):
            return reduce_extreme(ufunc, x, axes, identity(dt))
        out = ufunc.reduce(x, axis=axes, dtype=acc, initial=identity(dt))
        return out if acc is dt else np.asarray(out, dtype=dt)

    logical = check is _check_logical

    def rule(x: ShapedArray, *, axes: tuple[int, ...], **_: Any) -> ShapedArray:
        # JAX's order: a logical reduction checks its dtype first, the others their axes
        if logical:
            check(name, x.dtype)
            for a in axes:  # JAX looks the axis up in the shape: an IndexError
                if not -x.ndim <= a < x.ndim:
                    raise IndexError(f"index {a} is out of bounds for axis 0 with size "
                                     f"{x.ndim} (reduction axes {axes} of {x.str_long()})")
        shape = _reduced_shape(x, axes)
        if not logical:
            check(name, x.dtype)
        return ShapedArray(shape, x.dtype, x.weak_type)

    prim = Primitive(name)
    prim.def_impl(kernel)
    prim.def_abstract_eval(rule)
    return prim


reduce_sum_p = _reduction("reduce_sum", np.add, _check_number, lambda dt: 0, True)
reduce_prod_p = _reduction("reduce_prod", np.multiply, _check_number, lambda dt: 1, True)
reduce_max_p = _reduction("reduce_max", np.maximum, _check_nothing, _lowest)
reduce_min_p = _reduction("reduce_min", np.minimum, _check_nothing, _highest)
reduce_and_p = _reduction("reduce_and", np.bitwise_and, _check_logical, _all_ones)
reduce_or_p = _reduction("reduce_or", np.bitwise_or, _check_logical, lambda dt: 0)
reduce_xor_p = _reduction("reduce_xor", np.bitwise_xor, _check_logical, lambda dt: 0)


def _axes(axes: Sequence[int]) -> tuple[int, ...]:
    return tuple(map(int, axes))


def reduce_sum(operand_: Any, axes: Sequence[int], *, out_sharding: Any = None) -> Any:
    """Sum over ``axes`` (in the operand's own dtype: int8 sums wrap around)."""
    return bind_reduce_sum(operand(operand_, reduce_sum_p), _axes(axes))


def bind_reduce_sum(x: Any, axes: tuple[int, ...]) -> Any:
    """``reduce_sum`` of an array or tracer over axes that are already a tuple of Python
    ints, without converting them again: ``jnp.sum`` has made them so, and this keeps it
    cheap."""
    return reduce_sum_p.bind(x, axes=axes, out_sharding=None)


def reduce_prod(operand_: Any, axes: Sequence[int]) -> Any:
    """Product over ``axes``."""
    return reduce_prod_p.bind(operand(operand_, reduce_prod_p), axes=_axes(axes))


def reduce_max(operand_: Any, axes: Sequence[int]) -> Any:
    """Maximum over ``axes`` (NaN wins; an empty reduction gives the lowest value)."""
    return reduce_max_p.bind(operand(operand_, reduce_max_p), axes=_axes(axes))


def reduce_min(operand_: Any, axes: Sequence[int]) -> Any:
    """Minimum over ``axes`` (NaN wins; an empty reduction gives the highest value)."""
    return reduce_min_p.bind(operand(operand_, reduce_min_p), axes=_axes(axes))


def reduce_and(operand_: Any, axes: Sequence[int]) -> Any:
    """Logical (booleans) or bitwise (integers) AND over ``axes``."""
    return reduce_and_p.bind(operand(operand_, reduce_and_p), axes=_axes(axes))


def reduce_or(operand_: Any, axes: Sequence[int]) -> Any:
    """Logical or bitwise OR over ``axes``."""
    return reduce_or_p.bind(operand(operand_, reduce_or_p), axes=_axes(axes))


def reduce_xor(operand_: Any, axes: Sequence[int]) -> Any:
    """Logical or bitwise XOR over ``axes``."""
    return reduce_xor_p.bind(operand(operand_, reduce_xor_p), axes=_axes(axes))


# ---------------------------------------------------------------------------------------
# argmax and argmin
# ---------------------------------------------------------------------------------------


def _arg_rule(compare: str, x: ShapedArray, *, axes: tuple[int, ...],
              index_dtype: np.dtype) -> ShapedArray:
    (axis,) = axes
    if not 0 <= axis < x.ndim:
        raise ValueError(f"Invalid axis {axis} for operand shape {x.shape}")
    if x.shape[axis] == 0:
        raise ValueError(
            "argmin and argmax require non-empty reduced dimension. "
            f"operand.shape={x.shape} axis={axis}"
        )
    # Finding an extremum compares elements, so the comparison's dtype rule applies.
    check_dtype(compare, ORDERED, x.dtype, 0)
    if index_dtype.kind not in "iu":
        raise TypeError(f"index_dtype must be an integer type, but got {index_dtype.name}")
    return ShapedArray(_reduced_shape(x, axes), index_dtype, False)


def _arg_primitive(name: str, compare: str, np_fn: Callable) -> Primitive:
    """``np.argmax`` already has XLA's semantics: the first extremum, and a NaN counts
    as the extremum (the first NaN's index is returned)."""
    prim = Primitive(name)
    prim.def_impl(lambda x, *, axes, index_dtype: np_fn(x, axis=axes[0]).astype(index_dtype))
    prim.def_abstract_eval(lambda x, *, axes, index_dtype: _arg_rule(
        compare, x, axes=axes, index_dtype=index_dtype))
    return prim


argmax_p = _arg_primitive("argmax", "gt", np.argmax)
argmin_p = _arg_primitive("argmin", "lt", np.argmin)


def argmax(operand_: Any, axis: int, index_dtype: Any) -> Any:
    """Index of the largest element along ``axis`` (the first one, or the first NaN)."""
    return argmax_p.bind(operand(operand_, argmax_p), axes=(int(axis),),
                         index_dtype=dtypes.canonicalize_dtype(index_dtype))


def argmin(operand_: Any, axis: int, index_dtype: Any) -> Any:
    """Index of the smallest element along ``axis`` (the first one, or the first NaN)."""
    return argmin_p.bind(operand(operand_, argmin_p), axes=(int(axis),),
                         index_dtype=dtypes.canonicalize_dtype(index_dtype))


# ---------------------------------------------------------------------------------------
# Cumulative reductions: cumsum, cumprod, cummax, cummin, cumlogsumexp
# ---------------------------------------------------------------------------------------


def _check_floating(name: str, dt: np.dtype) -> None:
    check_dtype(name, ("floating",), dt)


def _cumulative_rule(name: str, check: Callable[[str, np.dtype], None], x: ShapedArray, *,
                     axis: int, reverse: bool) -> ShapedArray:
    if axis < 0:
        raise ValueError("XLA operations do not allow negative axes")
    if axis >= x.ndim:
        raise ValueError(f"axis {axis} is out of bounds for array of shape {x.shape}")
    check(name, x.dtype)  # after the axis, as in JAX
    return x


def _cumulative(name: str, ufunc: np.ufunc, accumulate_wide: bool = False,
                check: Callable[[str, np.dtype], None] = _check_number) -> Primitive:
    def kernel(x: np.ndarray, *, axis: int, reverse: bool) -> np.ndarray:
        acc = _accumulator(x.dtype) if accumulate_wide else x.dtype
        if reverse:
            x = np.flip(x, axis)
        if ufunc in (np.maximum, np.minimum):
            out = accumulate_extreme(ufunc, x, axis)
        else:
            out = ufunc.accumulate(x, axis=axis, dtype=acc).astype(x.dtype, copy=False)
        return np.flip(out, axis) if reverse else out

    prim = Primitive(name)
    prim.def_impl(kernel)
    prim.def_abstract_eval(lambda x, *, axis, reverse: _cumulative_rule(
        name, check, x, axis=axis, reverse=reverse))
    return prim


cumsum_p = _cumulative("cumsum", np.add, accumulate_wide=True)
cumprod_p = _cumulative("cumprod", np.multiply, accumulate_wide=True)
cummax_p = _cumulative("cummax", np.maximum)
cummin_p = _cumulative("cummin", np.minimum)
cumlogsumexp_p = _cumulative("cumlogsumexp", np.logaddexp, check=_check_floating)


def cumsum(operand_: Any, axis: int = 0, reverse: bool = False) -> Any:
    """Running sums along ``axis`` (from the end if ``reverse``)."""
    return cumsum_p.bind(operand(operand_, cumsum_p), axis=int(axis), reverse=bool(reverse))


def cumprod(operand_: Any, axis: int = 0, reverse: bool = False) -> Any:
    """Running products along ``axis``."""
    return cumprod_p.bind(operand(operand_, cumprod_p), axis=int(axis), reverse=bool(reverse))


def cummax(operand_: Any, axis: int = 0, reverse: bool = False) -> Any:
    """Running maxima along ``axis`` (a NaN, once met, stays)."""
    return cummax_p.bind(operand(operand_, cummax_p), axis=int(axis), reverse=bool(reverse))


def cumlogsumexp(operand_: Any, axis: int = 0, reverse: bool = False) -> Any:
    """Running log-sum-exp along ``axis``: log(exp(x[0]) + ... + exp(x[i])), without
    overflow. Floating-point operands only."""
    return cumlogsumexp_p.bind(operand(operand_, cumlogsumexp_p), axis=int(axis),
                               reverse=bool(reverse))


def cummin(operand_: Any, axis: int = 0, reverse: bool = False) -> Any:
    """Running minima along ``axis``."""
    return cummin_p.bind(operand(operand_, cummin_p), axis=int(axis), reverse=bool(reverse))


# ---------------------------------------------------------------------------------------
# vmap: batching rules
# ---------------------------------------------------------------------------------------

for _prim in (reduce_sum_p, reduce_prod_p, reduce_max_p, reduce_min_p, reduce_and_p,
              reduce_or_p, reduce_xor_p, argmax_p, argmin_p):
    batching.defreducer(_prim)


def _cumulative_batching(prim: Primitive) -> Callable[..., tuple[Any, int]]:
    def rule(axis_data: Any, vals: list, dims: list, *, axis: int, reverse: bool
             ) -> tuple[Any, int]:
        (x,), (bdim,) = vals, dims
        return prim.bind(x, axis=axis if axis < bdim else axis + 1, reverse=reverse), bdim
    return rule


for _prim in (cumsum_p, cumprod_p, cummax_p, cummin_p, cumlogsumexp_p):
    batching.batching_rules[_prim] = _cumulative_batching(_prim)
