"""Reductions in ``jnp``: ``sum``, ``mean``, ``max``, ``argmax``, ``cumsum``, ``median``, ...

Each is a ``lax`` reduction wrapped in NumPy's conventions:

* ``axis`` may be ``None`` (everything), an int or a tuple, negative counting from the end;
  ``keepdims`` puts the reduced dimensions back with size 1;
* dtypes follow NumPy as JAX adapts it: ``sum`` and ``prod`` widen booleans and small
  integers to the default integer (int8 -> int32), ``mean``/``var``/``std`` of integers
  are floats, and half-precision floats are accumulated in float32 and rounded back at the
  end. Results are never weakly typed;
* ``initial`` joins the reduction as one more element, and ``where`` masks elements out
  (replacing them by the operation's identity, which max and min only have if
  ``initial`` is given).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import partial, wraps
from typing import Any

import numpy as np

from minijax import core, dtypes, lax
from minijax.array import Array
from minijax.compiler.jit import jit
from minijax.core import Tracer
from minijax.lax.base import bind_reduce_sum
from minijax.numpy.creation import asarray
from minijax.numpy.promotion import (
    broadcast_to,
    check_arraylike,
    promote_dtypes_inexact,
    to_inexact_dtype,
)
from minijax.numpy.ufuncs import isnan
from minijax.numpy.ufuncs import where as _where

__all__ = [
    "all", "amax", "amin", "any", "argmax", "argmin", "average", "count_nonzero",
    "cumprod", "cumsum", "max", "mean", "median", "min", "nanmax", "nanmean", "nanmin",
    "nanprod", "nansum", "percentile", "prod", "ptp", "quantile", "std", "sum", "var",
]

# ---------------------------------------------------------------------------------------
# Axes and dtypes
# ---------------------------------------------------------------------------------------


def _as_tuple(axis: Any) -> tuple[Any, ...]:
    return (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)


def reduction_axes(axis: Any, ndim: int) -> tuple[int, ...]:
    """``None`` (all axes), an int or a sequence of ints -> distinct axes in ``range(ndim)``."""
    if axis is None:
        return _ALL_AXES[ndim]
    canonical = lax.canonicalize_axes([int(a) for a in _as_tuple(axis)], ndim)
    if len(set(canonical)) != len(canonical):
        raise ValueError(f"duplicate value in 'axis': {axis}")
    return canonical


_ALL_AXES = [tuple(range(ndim)) for ndim in range(65)]  # every rank NumPy allows


def _statistic_axes(axis: Any, ndim: int) -> tuple[int, ...]:
    """Axes for ``mean``, ``var`` and ``std``, which in JAX look an axis up in the shape
    before checking it: out of range is an IndexError there (a ValueError elsewhere)."""
    for a in () if axis is None else _as_tuple(axis):
        if not -ndim <= a < ndim:
            raise IndexError(f"axis {a} is out of bounds for array of dimension {ndim}")
    return reduction_axes(axis, ndim)


def _operand(name: str, a: Any, out: Any = None) -> Any:
    if out is not None:
        raise NotImplementedError(f"The 'out' argument to jnp.{name} is not supported.")
    if type(a) is Array or isinstance(a, Tracer):
        return a
    check_arraylike(name, a)
    return asarray(a)


def _default_int(unsigned: bool = False) -> np.dtype:
    return dtypes.canonicalize_dtype(np.uint64 if unsigned else np.int64)


def _summation_dtype(dt: np.dtype, promote_integers: bool = True) -> np.dtype:
    """NumPy's rule for sums and products: booleans and small integers widen to the
    default integer of their signedness, so that adding up int8s does not overflow."""
    if dt.kind not in "biu":
        return dt
    if dt.kind == "b":
        return _default_int()
    if promote_integers and dt.itemsize < _default_int().itemsize:
        return _default_int(unsigned=dt.kind == "u")
    return dt


def _upcast_half(dt: np.dtype) -> np.dtype:
    """The dtype to accumulate in: float16 and bfloat16 sums are done in float32."""
    return np.dtype(np.float32) if dt in _HALVES else dt


_HALVES = frozenset([np.dtype(np.float16), np.dtype(dtypes.bfloat16)])
# Dtypes that sums and products keep whatever the configuration: no widening, no upcast.
_SUMMED_AS_IS = frozenset(map(np.dtype, [np.float32, np.float64, np.complex64, np.complex128]))


def _user_dtype(dtype: Any, name: str) -> np.dtype | None:
    return None if dtype is None else dtypes.check_and_canonicalize_user_dtype(dtype, name)


def _accumulation_operand(a: Any, dtype: np.dtype) -> Any:
    """``a`` in the dtype a sum accumulates in. Halves are accumulated in float32 unless a
    dtype was asked for; booleans count as the default integer first (as JAX records)."""
    if a.dtype.kind == "b":
        a = lax.convert_element_type(a, _default_int())
    return lax.convert_element_type(a, dtype)


def _reduced_size(shape: tuple[int, ...], axes: tuple[int, ...]) -> int:
    return math.prod(shape[a] for a in axes)


# ---------------------------------------------------------------------------------------
# The shape of every reduction
# ---------------------------------------------------------------------------------------


def _reduce(a: Any, axes: tuple[int, ...], keepdims: bool, *, reduce: Callable,
            combine: Callable, fill: Any, initial: Any = None, where: Any = None,
            result_dtype: np.dtype | None = None) -> Any:
    """``reduce`` over ``axes`` after masking with ``where`` (masked elements become
    ``fill``), then ``combine`` with ``initial``, keep dimensions, and cast the result to
    ``result_dtype`` (dropping any weak type, as JAX's reductions do)."""
    if where is not None:
        a = _where(where, a, lax.convert_element_type(fill, a.dtype))
    result = reduce(a, axes)
    if initial is not None:
        result = combine(lax.convert_element_type(initial, a.dtype), result)
    if keepdims:
        result = lax.expand_dims(result, axes)
    return lax.convert_element_type(result, result_dtype or a.dtype, False)


def _summation(name: str, reduce: Callable, combine: Callable, identity: int) -> Callable:
    """``sum`` and ``prod``: widen small integers, accumulate halves in float32."""

    def reduction(a: Any, axis: Any = None, dtype: Any = None, out: Any = None,
                  keepdims: bool = False, initial: Any = None, where: Any = None,
                  promote_integers: bool = True) -> Any:
        a = _operand(name, a, out)
        if (axis is None and dtype is None and not keepdims and initial is None
                and where is None and a.aval.dtype in _SUMMED_AS_IS and not a.aval.weak_type):
            # The commonest calls, ``jnp.sum(x)`` or ``jnp.prod(x)`` of floats, made
            # cheap: there is nothing to widen, mask or cast, only the lax reduction.
            return reduce(a, _ALL_AXES[len(a.aval.shape)])
        user_dtype = _user_dtype(dtype, name)
        result_dtype = user_dtype or _summation_dtype(a.dtype, promote_integers)
        a = _accumulation_operand(a, user_dtype or _upcast_half(result_dtype))
        return _reduce(a, reduction_axes(axis, a.ndim), keepdims, reduce=reduce,
                       combine=combine, fill=identity, initial=initial, where=where,
                       result_dtype=result_dtype)

    reduction.__name__ = reduction.__qualname__ = name
    reduction.__doc__ = f"The {name} of the elements over ``axis``, like ``numpy.{name}``."
    return reduction


sum = _summation("sum", bind_reduce_sum, lax.add, 0)
prod = _summation("prod", lax.reduce_prod, lax.mul, 1)


def _extremum(name: str, reduce: Callable, combine: Callable) -> Callable:
    """``max`` and ``min``: no identity of their own, so empty or masked reductions need
    ``initial``."""

    def reduction(a: Any, axis: Any = None, out: Any = None, keepdims: bool = False,
                  initial: Any = None, where: Any = None) -> Any:
        a = _operand(name, a, out)
        axes = reduction_axes(axis, a.ndim)
        if initial is None:
            if where is not None:
                raise ValueError(
                    f"reduction operation {name} does not have an identity, so to use a "
                    "where mask one has to specify 'initial'"
                )
            if _reduced_size(a.shape, axes) == 0:
                raise ValueError(
                    f"zero-size array to reduction operation {name} which has no identity"
                )
        # Masked-out elements may as well be ``initial``: it takes part anyway.
        return _reduce(a, axes, keepdims, reduce=reduce, combine=combine, fill=initial,
                       initial=initial, where=where)

    reduction.__name__ = reduction.__qualname__ = name
    reduction.__doc__ = f"The {name}imum over ``axis`` (NaN if any element is NaN)."
    return reduction


max = amax = _extremum("max", lax.reduce_max, lax.max)
min = amin = _extremum("min", lax.reduce_min, lax.min)


def _logical(name: str, reduce: Callable, identity: bool) -> Callable:
    def reduction(a: Any, axis: Any = None, out: Any = None, keepdims: bool = False, *,
                  where: Any = None) -> Any:
        a = lax.convert_element_type(_operand(name, a, out), np.bool_)
        return _reduce(a, reduction_axes(axis, a.ndim), keepdims, reduce=reduce,
                       combine=None, fill=identity, where=where)

    reduction.__name__ = reduction.__qualname__ = name
    reduction.__doc__ = f"Whether {name} element(s) over ``axis`` are true (nonzero)."
    return reduction


all = _logical("all", lax.reduce_and, True)
any = _logical("any", lax.reduce_or, False)


# ---------------------------------------------------------------------------------------
# Statistics: mean, var, std, average, median, ptp, count_nonzero
# ---------------------------------------------------------------------------------------


def _count(a: Any, axes: tuple[int, ...], where: Any, dtype: np.dtype) -> Any:
    """How many elements each reduction sees: a constant, or a sum of the mask."""
    if where is None:
        return lax.convert_element_type(_reduced_size(a.shape, axes), dtype)
    mask = lax.convert_element_type(broadcast_to(asarray(where), a.shape), dtype)
    return lax.reduce_sum(mask, axes)


def _one_program_when_eager(fun: Callable) -> Callable:
    """``fun(a, axis, dtype, out, keepdims, where=None)`` on an array, outside any trace,
    as one compiled program per type of ``a`` and options; traced, ``fun`` itself.

    Why: a statistic is several primitives (``mean`` is a sum and a division), and each
    eager primitive is one job for the device; JAX runs its ``jnp.mean`` as one compiled
    program (a ``jit``), so one job. The program computes what the primitives would."""
    programs: dict[tuple, Callable] = {}

    def eager_or_traced(a: Any, axis: Any = None, dtype: Any = None, out: Any = None,
                        keepdims: bool = False, *, where: Any = None) -> Any:
        if type(a) is not Array or out is not None or where is not None \
                or core.current_trace() is not core.eval_trace:
            return fun(a, axis, dtype, out, keepdims, where=where)
        try:
            key = (a.aval, axis, dtype, keepdims)
            program = programs.get(key)
        except TypeError:  # an axis given as a list
            return fun(a, axis, dtype, out, keepdims)
        if program is None:
            if len(programs) > 256:  # many shapes: forget the old programs
                programs.clear()
            program = programs[key] = jit(lambda a: fun(a, axis, dtype, None, keepdims))
        return program(a)

    return wraps(fun)(eager_or_traced)


@_one_program_when_eager
def mean(a: Any, axis: Any = None, dtype: Any = None, out: Any = None,
         keepdims: bool = False, *, where: Any = None) -> Any:
    """The arithmetic mean over ``axis`` (a float, even for integer input)."""
    a = _operand("mean", a, out)
    user_dtype = _user_dtype(dtype, "mean")
    result_dtype = user_dtype or to_inexact_dtype(a.dtype)
    compute_dtype = user_dtype or _upcast_half(result_dtype)
    axes = _statistic_axes(axis, a.ndim)
    if where is None:
        count = lax.convert_element_type(_reduced_size(a.shape, axes), compute_dtype)
    else:  # the count of the elements ``where`` lets in, first (as JAX records it)
        count = sum(broadcast_to(asarray(where), a.shape), axes, compute_dtype,
                    keepdims=keepdims)
    a = _accumulation_operand(a, compute_dtype)
    total = _reduce(a, axes, keepdims, reduce=bind_reduce_sum, combine=None, fill=0,
                    where=where)
    return lax.convert_element_type(lax.div(total, count), result_dtype, False)


_mean = mean  # ``var`` has a parameter called ``mean``


def _real_dtype(dt: np.dtype) -> np.dtype:
    return np.dtype(np.float64 if dt == np.complex128 else np.float32) if dt.kind == "c" else dt


def var(a: Any, axis: Any = None, dtype: Any = None, out: Any = None, ddof: int = 0,
        keepdims: bool = False, *, where: Any = None, mean: Any = None,
        correction: int | float | None = None) -> Any:
    """The variance: the mean squared distance from the mean, divided by ``N - ddof``
    (NaN where that is not positive). Complex input gives a real variance."""
    return _var(a, axis=axis, dtype=dtype, out=out, correction=ddof if correction is None
                else correction, keepdims=keepdims, where=where, mean=mean)


@partial(jit, static_argnames=("axis", "dtype", "keepdims"))
def _var(a: Any, *, axis: Any, dtype: Any, out: Any, correction: Any, keepdims: bool,
         where: Any, mean: Any) -> Any:
    a = _operand("var", a, out)
    inexact = to_inexact_dtype(a.dtype)
    result_dtype = _user_dtype(dtype, "var") or _real_dtype(inexact)
    a = lax.convert_element_type(a, _upcast_half(inexact))
    axes = _statistic_axes(axis, a.ndim)
    if mean is None:  # keepdims keeps the ranks equal, so lax.sub can broadcast
        centered = lax.sub(a, _mean(a, axes, keepdims=True, where=where))
    else:
        centered = lax.sub(a, broadcast_to(lax.convert_element_type(mean, a.dtype), a.shape))
    squares = lax.real(lax.mul(centered, lax.conj(centered))) if a.dtype.kind == "c" \
        else lax.square(centered)
    count = _count(a, axes, where, squares.dtype)
    if keepdims and where is not None:
        count = lax.expand_dims(count, axes)
    normalizer = lax.sub(count, lax.convert_element_type(correction, squares.dtype))
    total = _reduce(squares, axes, keepdims, reduce=bind_reduce_sum, combine=None, fill=0,
                    where=where)
    quotient = lax.div(total, normalizer)
    positive = lax.gt(normalizer, lax.convert_element_type(0, normalizer.dtype))
    result = _where(positive, quotient, np.nan)
    return lax.convert_element_type(result, result_dtype, False)


def std(a: Any, axis: Any = None, dtype: Any = None, out: Any = None, ddof: int = 0,
        keepdims: bool = False, *, where: Any = None, mean: Any = None,
        correction: int | float | None = None) -> Any:
    """The standard deviation: the square root of :func:`var`."""
    return _std(a, axis=axis, dtype=dtype, out=out, correction=ddof if correction is None
                else correction, keepdims=keepdims, where=where, mean=mean)


@partial(jit, static_argnames=("axis", "dtype", "keepdims"))
def _std(a: Any, *, axis: Any, dtype: Any, out: Any, correction: Any, keepdims: bool,
         where: Any, mean: Any) -> Any:
    return lax.sqrt(_var(a, axis=axis, dtype=dtype, out=out, correction=correction,
                         keepdims=keepdims, where=where, mean=mean))


def average(a: Any, axis: Any = None, weights: Any = None, returned: bool = False,
            keepdims: bool = False) -> Any:
    """The weighted mean ``sum(a * w) / sum(w)``; 1-D ``weights`` may apply along one axis."""
    if weights is None:
        a = _operand("average", a)
        result = mean(a, axis, keepdims=keepdims)
        axes = reduction_axes(axis, a.ndim)
        total_weight = lax.full_like(result, _reduced_size(a.shape, axes))
        return (result, total_weight) if returned else result
    check_arraylike("average", a, weights)
    a, weights = promote_dtypes_inexact(asarray(a), asarray(weights))
    axes = reduction_axes(axis, a.ndim)
    if weights.shape != a.shape:
        if len(axes) != 1 or weights.shape != (a.shape[axes[0]],):
            raise ValueError("Length of weights not compatible with specified axis.")
        weights = lax.broadcast_in_dim(weights, a.shape, axes)
    total_weight = sum(weights, axes, keepdims=keepdims)
    result = lax.div(sum(lax.mul(a, weights), axes, keepdims=keepdims), total_weight)
    return (result, total_weight) if returned else result


def _single_axis(name: str, a: Any, axis: Any) -> tuple[Any, int]:
    """``axis=None`` means the flattened array; otherwise one int axis."""
    if axis is None:
        return lax.reshape(a, (a.size,)), 0
    if not isinstance(axis, (int, np.integer)):
        raise TypeError(f"'{type(axis).__name__}' object cannot be interpreted as an integer")
    return a, reduction_axes(axis, a.ndim)[0]


_QUANTILE_METHODS = ("linear", "lower", "higher", "midpoint", "nearest")


@partial(jit, static_argnames=("axis", "overwrite_input", "method", "keepdims"))
def quantile(a: Any, q: Any, axis: Any = None, out: Any = None, overwrite_input: bool = False,
             method: str = "linear", keepdims: bool = False) -> Any:
    """The ``q``-th quantiles (0 <= q <= 1) of ``a`` along ``axis``; NaN if any element
    is NaN. ``q`` may be an array: its dimensions come first in the result.

    Sorted, the quantile sits at position ``q * (n - 1)``, between the elements at its
    floor and its ceiling; ``method`` says what to make of the two (``linear``: weigh them
    by nearness).
    """
    if method not in _QUANTILE_METHODS:
        raise ValueError(f"method can only be one of {list(_QUANTILE_METHODS)}. "
                         f"Got method={method}.")
    original = _operand("quantile", a, out)
    if dtypes.issubdtype(original.dtype, np.complexfloating):
        raise ValueError("quantile does not support complex input, as the operation is "
                         "poorly defined.")
    (x,) = promote_dtypes_inexact(original)
    q = lax.convert_element_type(q, x.dtype, getattr(q, "weak_type", True))
    reduced = _ALL_AXES[x.ndim] if axis is None else None
    if isinstance(axis, tuple):
        x, axis, reduced = _merge_axes(x, axis)
    else:
        x, axis = _single_axis("quantile", x, axis)
    any_nan = lax.expand_dims(lax.reduce_or(lax.ne(x, x), (axis,)), (axis,))
    x = lax.sort(_where(any_nan, np.nan, x), dimension=axis)
    position = lax.mul(q, _last_index(x, axis))
    low, high = lax.floor(position), lax.ceil(position)
    high_weight = lax.sub(position, low)
    low_weight = lax.sub(lax.convert_element_type(1, x.dtype), high_weight)
    zero = lax.convert_element_type(0, x.dtype)
    low = lax.clamp(zero, low, _last_index(x, axis))
    high = lax.clamp(zero, high, _last_index(x, axis))
    low, high = (lax.convert_element_type(i, np.int32) for i in (low, high))
    low_value, high_value = (_take_slices(x, i, axis, keepdims) for i in (low, high))
    if q.ndim:  # one weight per quantile, for all the slices of that quantile
        low_weight, high_weight = (lax.broadcast_in_dim(w, low_value.shape, range(q.ndim))
                                   for w in (low_weight, high_weight))
    if method == "linear":
        out = lax.add(lax.mul(low_value, low_weight), lax.mul(high_value, high_weight))
    elif method == "midpoint":
        out = lax.mul(lax.add(low_value, high_value), lax.convert_element_type(0.5, x.dtype))
    elif method == "nearest":
        out = lax.select(lax.le(high_weight, lax.convert_element_type(0.5, x.dtype)),
                         low_value, high_value)
    else:
        out = low_value if method == "lower" else high_value
    if keepdims and reduced is not None:  # several axes (or all): each becomes size 1
        out = lax.reshape(out, q.shape + tuple(1 if d in reduced else n
                                               for d, n in enumerate(original.shape)))
    return out


def _merge_axes(x: Any, axis: tuple) -> tuple[Any, int, tuple[int, ...]]:
    """A quantile over several axes is one over a single axis: the kept dimensions first,
    then the reduced ones merged into the last (one reshape, as JAX does)."""
    reduced = tuple(sorted(lax.canonicalize_axes(axis, x.ndim)))
    if len(set(reduced)) != len(reduced):
        raise ValueError("repeated axis")
    kept = tuple(d for d in range(x.ndim) if d not in reduced)
    order = kept + reduced
    shape = tuple(x.shape[d] for d in kept) + (math.prod(x.shape[d] for d in reduced),)
    x = lax.reshape(x, shape, None if order == tuple(range(x.ndim)) else order)
    return x, len(kept), reduced


def _last_index(x: Any, axis: int) -> Any:
    """``n - 1`` for the length ``n`` of ``axis``, as a float (JAX computes it each time)."""
    return lax.sub(lax.convert_element_type(x.shape[axis], x.dtype),
                   lax.convert_element_type(1, x.dtype))


def _take_slices(x: Any, index: Any, axis: int, keepdims: bool) -> Any:
    """The slices ``x[..., index, ...]`` along ``axis``, for each element of ``index``
    (whose dimensions come first); with ``keepdims`` the axis stays, with size 1."""
    starts = lax.broadcast_in_dim(index, (*index.shape, 1), range(index.ndim))
    collapsed = () if keepdims else (axis,)
    dnums = lax.GatherDimensionNumbers(
        offset_dims=tuple(range(index.ndim, index.ndim + x.ndim - len(collapsed))),
        collapsed_slice_dims=collapsed, start_index_map=(axis,))
    slice_sizes = x.shape[:axis] + (1,) + x.shape[axis + 1:]
    return lax.gather(x, starts, dnums, slice_sizes)


@partial(jit, static_argnames=("axis", "overwrite_input", "method", "keepdims"))
def percentile(a: Any, q: Any, axis: Any = None, out: Any = None,
               overwrite_input: bool = False, method: str = "linear",
               keepdims: bool = False) -> Any:
    """:func:`quantile` with ``q`` in percent."""
    from minijax.numpy.ufuncs import true_divide

    return quantile(a, true_divide(q, 100.0), axis, out, overwrite_input, method, keepdims)


@partial(jit, static_argnames=("axis", "overwrite_input", "keepdims"))
def median(a: Any, axis: Any = None, out: Any = None, overwrite_input: bool = False,
           keepdims: bool = False) -> Any:
    """The middle value after sorting along ``axis`` (the mean of the two middle values
    for an even count); NaN if any element is NaN."""
    return quantile(a, 0.5, axis=axis, out=out, overwrite_input=overwrite_input,
                    method="midpoint", keepdims=keepdims)


def ptp(a: Any, axis: Any = None, out: Any = None, keepdims: bool = False) -> Any:
    """Peak to peak: ``max - min`` over ``axis``."""
    return _ptp(a, axis, out, keepdims)


@partial(jit, static_argnames=("axis", "keepdims"))
def _ptp(a: Any, axis: Any, out: Any, keepdims: bool) -> Any:
    a = _operand("ptp", a, out)
    return lax.sub(max(a, axis, keepdims=keepdims), min(a, axis, keepdims=keepdims))


@partial(jit, static_argnames=("axis", "keepdims"))
def count_nonzero(a: Any, axis: Any = None, keepdims: bool = False) -> Any:
    """How many elements over ``axis`` are nonzero (an integer count)."""
    a = _operand("count_nonzero", a)
    nonzero = lax.ne(a, lax.convert_element_type(0, a.dtype))
    return sum(lax.convert_element_type(nonzero, _default_int()), axis, keepdims=keepdims)


# ---------------------------------------------------------------------------------------
# argmax and argmin
# ---------------------------------------------------------------------------------------


def _arg_extremum(name: str, lax_fn: Callable) -> Callable:
    def reduction(a: Any, axis: int | None = None, out: Any = None,
                  keepdims: bool | None = None) -> Any:
        a = _operand(name, a, out)
        if axis is None:
            if a.size == 0:
                raise ValueError(f"attempt to get {name} of an empty sequence")
            result = lax_fn(lax.reshape(a, (a.size,)), 0, _default_int())
            return lax.reshape(result, (1,) * a.ndim) if keepdims else result
        if not isinstance(axis, (int, np.integer)):
            raise TypeError(f"'{type(axis).__name__}' object cannot be interpreted as an "
                            "integer")
        if not -a.ndim <= axis < a.ndim:  # JAX raises IndexError here, not ValueError
            raise IndexError(f"axis {axis} is out of bounds for array of dimension {a.ndim}")
        axis = int(axis) % a.ndim
        if a.shape[axis] == 0:  # before lax looks at the dtype (complex), as in JAX
            raise ValueError(f"attempt to get {name} of an empty sequence")
        result = lax_fn(a, axis, _default_int())
        return lax.expand_dims(result, (axis,)) if keepdims else result

    reduction.__name__ = reduction.__qualname__ = name
    reduction.__doc__ = (f"Index of the first {name[3:]}imum along ``axis`` (of the flattened "
                         "array if None); a NaN counts as the extremum.")
    return reduction


argmax = _arg_extremum("argmax", lax.argmax)
argmin = _arg_extremum("argmin", lax.argmin)


# ---------------------------------------------------------------------------------------
# Cumulative sums and products
# ---------------------------------------------------------------------------------------


def _cumulative(name: str, lax_fn: Callable) -> Callable:
    def accumulate(a: Any, axis: int | None = None, dtype: Any = None, out: Any = None
                   ) -> Any:
        a = _operand(name, a, out)
        a, ax = _single_axis(name, a, axis)
        result_dtype = _user_dtype(dtype, name) or (
            _default_int() if a.dtype == np.bool_ else a.dtype)
        return lax_fn(lax.convert_element_type(a, result_dtype, False), ax)

    accumulate.__name__ = accumulate.__qualname__ = name
    accumulate.__doc__ = (f"Running {name[3:]} along ``axis`` (of the flattened array if None); "
                          "booleans count as integers.")
    return accumulate


cumsum = jit(_cumulative("cumsum", lax.cumsum), static_argnames=("axis", "dtype"))
cumprod = jit(_cumulative("cumprod", lax.cumprod), static_argnames=("axis", "dtype"))


# ---------------------------------------------------------------------------------------
# NaN-ignoring reductions: replace NaNs by the identity first
# ---------------------------------------------------------------------------------------


def _without_nans(a: Any, fill: Any) -> Any:
    return _where(isnan(a), lax.convert_element_type(fill, a.dtype), a) \
        if a.dtype.kind in "fcV" else a


@partial(jit, static_argnames=("axis", "dtype", "keepdims"))
def nansum(a: Any, axis: Any = None, dtype: Any = None, out: Any = None,
           keepdims: bool = False, initial: Any = None, where: Any = None) -> Any:
    """:func:`sum`, treating NaNs as zero."""
    a = _operand("nansum", a, out)
    return sum(_without_nans(a, 0), axis, dtype, keepdims=keepdims, initial=initial,
               where=where)


@partial(jit, static_argnames=("axis", "dtype", "keepdims"))
def nanprod(a: Any, axis: Any = None, dtype: Any = None, out: Any = None,
            keepdims: bool = False, initial: Any = None, where: Any = None) -> Any:
    """:func:`prod`, treating NaNs as one."""
    a = _operand("nanprod", a, out)
    return prod(_without_nans(a, 1), axis, dtype, keepdims=keepdims, initial=initial,
                where=where)


@partial(jit, static_argnames=("axis", "dtype", "keepdims"))
def nanmean(a: Any, axis: Any = None, dtype: Any = None, out: Any = None,
            keepdims: bool = False, where: Any = None) -> Any:
    """:func:`mean` of the elements that are not NaN."""
    a = _operand("nanmean", a, out)
    if a.dtype.kind not in "fcV":  # integers have no NaNs
        return mean(a, axis, dtype, keepdims=keepdims, where=where)
    if dtype is None:
        dtype = a.dtype
    present = lax.convert_element_type(lax.bitwise_not(isnan(a)), _default_int())
    count = sum(present, axis, dtype, keepdims=keepdims, where=where)
    return lax.div(nansum(a, axis, dtype, keepdims=keepdims, where=where), count)


def _nan_extremum(name: str, reduce: Callable, fill: float) -> Callable:
    def reduction(a: Any, axis: Any = None, out: Any = None, keepdims: bool = False,
                  initial: Any = None, where: Any = None) -> Any:
        a = _operand(name, a, out)
        result = reduce(_without_nans(a, fill), axis, keepdims=keepdims, initial=initial,
                        where=where)
        if a.dtype.kind not in "fcV":
            return result
        all_nan = all(isnan(a), axis, keepdims=keepdims)
        return _where(all_nan, lax.convert_element_type(np.nan, result.dtype), result)

    reduction.__name__ = reduction.__qualname__ = name
    reduction.__doc__ = f"The {name[3:]}imum ignoring NaNs (NaN only if all are NaN)."
    return reduction


nanmax = jit(_nan_extremum("nanmax", max, -np.inf), static_argnames=("axis", "keepdims"))
nanmin = jit(_nan_extremum("nanmin", min, np.inf), static_argnames=("axis", "keepdims"))

