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

``reduce_sum`` is in the base set (:mod:`minijax.lax.base`), with the checks the other
reductions share.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from minijax import dtypes
from minijax.compiler.lowering import Builder, RuleContext, _region, lowering_rules
from minijax.compiler.stablehlo_ir import Dense, DenseArray, TensorType, Value
from minijax.core import Primitive, ShapedArray
from minijax.interpreters import batching
from minijax.interpreters.ad import deflinear, defzero, jvp_of, jvp_rules
from minijax.lax import base
from minijax.lax.base import (
    ORDERED,
    _linear_unary,
    accumulator,
    add,
    check_dtype,
    check_number,
    convert_element_type,
    div,
    eq,
    full,
    mul,
    operand,
    reduce_op,
    reduce_sum,
    reduced_shape,
    reduction_lowering,
    reshape,
    transpose,
)
from minijax.lax.shapes import rev
from minijax.lax.slicing import concatenate, pad, slice_in_dim

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
    "reduce_xor",
    "reduce_xor_p",
]

# ---------------------------------------------------------------------------------------
# Dtype checks
# ---------------------------------------------------------------------------------------


def _check_logical(name: str, dt: np.dtype) -> None:
    if dt != np.bool_ and dt.kind not in "iu":
        raise TypeError(f"logical reduction requires operand dtype bool or int, got {dt.name}.")


def _check_nothing(name: str, dt: np.dtype) -> None:
    """Maxima and minima exist for every dtype (complex numbers compare lexicographically)."""


# ---------------------------------------------------------------------------------------
# reduce_prod, reduce_max, reduce_min, reduce_and, reduce_or, reduce_xor
# ---------------------------------------------------------------------------------------


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
        acc = accumulator(dt) if accumulate_wide else dt
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
        shape = reduced_shape(x, axes)
        if not logical:
            check(name, x.dtype)
        return ShapedArray(shape, x.dtype, x.weak_type)

    prim = Primitive(name)
    prim.def_impl(kernel)
    prim.def_abstract_eval(rule)
    return prim


reduce_prod_p = _reduction("reduce_prod", np.multiply, check_number, lambda dt: 1, True)
reduce_max_p = _reduction("reduce_max", np.maximum, _check_nothing, _lowest)
reduce_min_p = _reduction("reduce_min", np.minimum, _check_nothing, _highest)
reduce_and_p = _reduction("reduce_and", np.bitwise_and, _check_logical, _all_ones)
reduce_or_p = _reduction("reduce_or", np.bitwise_or, _check_logical, lambda dt: 0)
reduce_xor_p = _reduction("reduce_xor", np.bitwise_xor, _check_logical, lambda dt: 0)


def _axes(axes: Sequence[int]) -> tuple[int, ...]:
    return tuple(map(int, axes))


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


def _reduce_extremum_jvp(primitive: Primitive) -> Callable[..., tuple[Any, Any]]:
    """reduce_max/min: the tangent at the location of the extremum, averaged over ties."""

    def rule(primals: list, tangents: list, *, axes: tuple[int, ...]) -> tuple[Any, Any]:
        (x,), (t,) = primals, tangents
        out = primitive.bind(x, axes=axes)
        # out with size-1 axes where x was reduced: ``eq`` broadcasts those
        kept_shape = tuple(1 if d in axes else n for d, n in enumerate(x.shape))
        at_extremum = eq(x, reshape(out, kept_shape))
        weights = convert_element_type(at_extremum, x.dtype)
        count = reduce_sum(weights, axes)
        return out, div(reduce_sum(mul(t, weights), axes), count)

    return rule


jvp_rules[reduce_max_p] = _reduce_extremum_jvp(reduce_max_p)
jvp_rules[reduce_min_p] = _reduce_extremum_jvp(reduce_min_p)


def _product_tree(x: Any, axes: tuple[int, ...]) -> Any:
    """The product over ``axes`` as a balanced tree of pairwise products (padding with 1
    when a level has an odd count). Its JVP is the product rule applied level by level,
    which stays right when some factors are 0 (unlike ``out / x``)."""
    kept = [d for d in range(x.ndim) if d not in axes]
    x = transpose(x, (*axes, *kept))
    out_shape = x.shape[len(axes):]
    count = int(np.prod(x.shape[:len(axes)], dtype=np.int64))
    x = reshape(x, (count, *out_shape))
    while x.shape[0] > 1:
        if x.shape[0] % 2:
            one = full((1, *out_shape), 1, x.dtype)
            x = concatenate([x, one], 0)
        x = mul(slice_in_dim(x, 0, None, 2), slice_in_dim(x, 1, None, 2))
    if x.shape[0] == 0:
        return full(out_shape, 1, x.dtype)
    return reshape(x, out_shape)


def _reduce_prod_jvp(primals: list, tangents: list, *, axes: tuple[int, ...]
                     ) -> tuple[Any, Any]:
    (x,), (t,) = primals, tangents
    out = reduce_prod_p.bind(x, axes=axes)
    return out, jvp_of(lambda x: _product_tree(x, axes), x, t)


jvp_rules[reduce_prod_p] = _reduce_prod_jvp


for _p in (reduce_and_p, reduce_or_p, reduce_xor_p):
    defzero(_p)


_REDUCTION_LOWERINGS = {
    reduce_prod_p: ("stablehlo.multiply", lambda dt: 1),
    reduce_max_p: ("stablehlo.maximum", _lowest),
    reduce_min_p: ("stablehlo.minimum", _highest),
    reduce_and_p: ("stablehlo.and", lambda dt: True if dt == np.bool_ else -1),
    reduce_or_p: ("stablehlo.or", lambda dt: 0),
    reduce_xor_p: ("stablehlo.xor", lambda dt: 0),
}


for _prim, (_name, _identity) in _REDUCTION_LOWERINGS.items():
    lowering_rules[_prim] = reduction_lowering(_name, _identity)


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
    return ShapedArray(reduced_shape(x, axes), index_dtype, False)


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


for _p in (argmax_p, argmin_p):
    defzero(_p)


def _argminmax_lowering(direction: str, identity: Callable[[np.dtype], Any]
                        ) -> Callable[..., Value]:
    """A private function: reduce (values, iota) pairs, keeping the first extremum (and
    the first NaN)."""

    def rule(ctx: RuleContext, x: Value, *, axes: tuple[int, ...], index_dtype: np.dtype
             ) -> Value:
        (axis,) = axes

        def build(b: Builder, args: list[Value]) -> list[Value]:
            (operand,) = args
            iota = b.op("stablehlo.iota", [], [TensorType(operand.type.shape, index_dtype)],
                        {"dim": axis}).result
            inits = [b.constant(np.array(identity(operand.type.dtype)).astype(
                operand.type.dtype)), b.constant(0, index_dtype)]

            def body(r: Builder, a: list[Value]) -> list[Value]:
                x_val, x_idx, y_val, y_idx = a
                pick_x = r.emit("stablehlo.or", r.compare(x_val, y_val, direction),
                                r.compare(x_val, x_val, "NE"))
                tie = r.emit("stablehlo.and", r.compare(x_val, y_val, "EQ"),
                             r.compare(x_idx, y_idx, "LT"))
                pick_x_idx = r.emit("stablehlo.or", pick_x, tie)
                return [r.select(pick_x, x_val, y_val), r.select(pick_x_idx, x_idx, y_idx)]

            return [reduce_op(b, [operand, iota], inits, None, axes, body)[1]]

        name = "argmax" if direction == "GT" else "argmin"
        key = (name, axes, index_dtype, x.type)
        return ctx.b.call(ctx.b.module.function(name, [x.type], build, key), [x])[0]

    return rule


lowering_rules[argmax_p] = _argminmax_lowering("GT", _lowest)
lowering_rules[argmin_p] = _argminmax_lowering("LT", _highest)


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
                check: Callable[[str, np.dtype], None] = check_number) -> Primitive:
    def kernel(x: np.ndarray, *, axis: int, reverse: bool) -> np.ndarray:
        acc = accumulator(x.dtype) if accumulate_wide else x.dtype
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


deflinear(cumsum_p)
# x[j] reaches every running sum out[i] with i >= j: the cotangent runs the other way.
_linear_unary(cumsum_p, lambda ct, x, *, axis, reverse: cumsum(ct, axis,
                                                                reverse=not reverse))


def _interleave(even: Any, odd: Any, axis: int) -> Any:
    """[e0, o0, e1, o1, ...] along ``axis`` (``even`` may be one longer than ``odd``):
    each spread out with gaps by ``pad``, then added."""
    extra = even.shape[axis] - odd.shape[axis]
    zero = convert_element_type(0, even.dtype)

    def spread(x: Any, low: int, high: int) -> Any:
        config = [(0, 0, 0)] * x.ndim
        config[axis] = (low, high, 1)
        return pad(x, zero, config)

    return add(spread(even, 0, 1 - extra), spread(odd, 1, extra))


def prefix_scan(combine: Callable[[Any, Any], Any], x: Any, axis: int) -> Any:
    """The inclusive scan ``out[i] = x[0] ∘ x[1] ∘ ... ∘ x[i]`` along ``axis`` for an
    associative ``combine``, in O(log n) array operations (the odd-even algorithm JAX's
    ``associative_scan`` uses): combine neighbours pairwise, scan that half-length array
    recursively -- which gives the odd positions -- then fill in the even positions."""
    n = x.shape[axis]
    if n < 2:
        return x
    pairs = combine(slice_in_dim(x, 0, n - 1, 2, axis), slice_in_dim(x, 1, n, 2, axis))
    odd = prefix_scan(combine, pairs, axis)
    n_even = (n + 1) // 2
    rest = combine(slice_in_dim(odd, 0, n_even - 1, 1, axis),
                   slice_in_dim(x, 2, n, 2, axis))
    even = concatenate([slice_in_dim(x, 0, 1, 1, axis), rest], axis)
    return _interleave(even, odd, axis)


def _cumulative_jvp(primitive: Primitive, combine: Callable[[Any, Any], Any]
                     ) -> Callable[..., tuple[Any, Any]]:
    """cumprod/cummax/cummin are differentiated as the scan that computes them."""

    def scan(x: Any, axis: int, reverse: bool) -> Any:
        if not reverse:
            return prefix_scan(combine, x, axis)
        return rev(prefix_scan(combine, rev(x, (axis,)), axis), (axis,))

    def rule(primals: list, tangents: list, *, axis: int, reverse: bool) -> tuple[Any, Any]:
        (x,), (t,) = primals, tangents
        out = primitive.bind(x, axis=axis, reverse=reverse)
        return out, jvp_of(lambda x: scan(x, axis, reverse), x, t)

    return rule


jvp_rules[cumprod_p] = _cumulative_jvp(cumprod_p, mul)
jvp_rules[cummax_p] = _cumulative_jvp(cummax_p, base.max)
jvp_rules[cummin_p] = _cumulative_jvp(cummin_p, base.min)
# (cumlogsumexp's JVP scans with jnp.logaddexp, whose custom JVP is JAX's choice at ties:
# jnp is built on lax, so that rule is registered from minijax.interpreters.jvp_rules.)


def _cumulative_lowering(name: str, op_name: str | None, identity: Callable[[np.dtype], Any],
                broadcast_init: bool = True, body: Callable | None = None
                ) -> Callable[..., Value]:
    """A private function holding a ``reduce_window`` whose window spans the whole axis,
    padded so that output ``i`` reduces elements ``0..i`` (or ``i..n-1`` if reversed).
    The window combines elements with ``op_name``, or with ``body(builder, [a, b])``."""
    if body is None:
        body = lambda r, a: [r.emit(op_name, *a)]

    def rule(ctx: RuleContext, x: Value, *, axis: int, reverse: bool) -> Value:
        def build(b: Builder, args: list[Value]) -> list[Value]:
            (operand,) = args
            shape, rank = operand.type.shape, len(operand.type.shape)
            n = shape[axis]
            if n == 0:
                return [operand]
            scalar = TensorType((), operand.type.dtype)
            init = b.constant(np.array(identity(scalar.dtype)).astype(scalar.dtype))
            if broadcast_init:
                init = b.broadcast(init, (), ())
            padding = np.zeros((rank, 2), np.int64)
            padding[axis] = (0, n - 1) if reverse else (n - 1, 0)
            window = [1] * rank
            window[axis] = n
            ones = DenseArray("i64", (1,) * rank)
            attrs = {"base_dilations": ones,
                     "padding": Dense(padding, f"tensor<{rank}x2xi64>"),
                     "window_dilations": ones,
                     "window_dimensions": DenseArray("i64", tuple(window)),
                     "window_strides": ones}
            region = _region(b, [scalar, scalar], body)
            return b.op("stablehlo.reduce_window", [operand, init], [operand.type], attrs,
                        [region]).results

        key = (name, axis, reverse, x.type)
        return ctx.b.call(ctx.b.module.function(name, [x.type], build, key), [x])[0]

    return rule


lowering_rules[cumsum_p] = _cumulative_lowering("cumsum", "stablehlo.add", lambda dt: 0)
lowering_rules[cumprod_p] = _cumulative_lowering("cumprod", "stablehlo.multiply", lambda dt: 1,
                                                 broadcast_init=False)
lowering_rules[cummax_p] = _cumulative_lowering("cummax", "stablehlo.maximum", _lowest)
lowering_rules[cummin_p] = _cumulative_lowering("cummin", "stablehlo.minimum", _highest)


def _logaddexp_body(r: Builder, args: list[Value]) -> list[Value]:
    """log(exp(a) + exp(b)) = max(a, b) + log1p(exp(-|a - b|)); a + b where a - b is NaN."""
    a, b = args
    big = r.emit("stablehlo.maximum", a, b)
    delta = r.emit("stablehlo.subtract", a, b)
    is_nan = r.compare(delta, delta, "NE")
    nan_case = r.emit("stablehlo.add", a, b)
    small = r.emit("stablehlo.exponential", r.emit("stablehlo.negate",
                                                   r.emit("stablehlo.abs", delta)))
    total = r.emit("stablehlo.add", big, r.emit("stablehlo.log_plus_one", small))
    return [r.select(is_nan, nan_case, total)]


lowering_rules[cumlogsumexp_p] = _cumulative_lowering("cumlogsumexp", None, _lowest,
                                                      broadcast_init=False,
                                                      body=_logaddexp_body)


# ---------------------------------------------------------------------------------------
# vmap: batching rules
# ---------------------------------------------------------------------------------------

for _prim in (reduce_prod_p, reduce_max_p, reduce_min_p, reduce_and_p, reduce_or_p,
              reduce_xor_p, argmax_p, argmin_p):
    batching.defreducer(_prim)


def _cumulative_batching(prim: Primitive) -> Callable[..., tuple[Any, int]]:
    def rule(axis_data: Any, vals: list, dims: list, *, axis: int, reverse: bool
             ) -> tuple[Any, int]:
        (x,), (bdim,) = vals, dims
        return prim.bind(x, axis=axis if axis < bdim else axis + 1, reverse=reverse), bdim
    return rule


for _prim in (cumsum_p, cumprod_p, cummax_p, cummin_p, cumlogsumexp_p):
    batching.batching_rules[_prim] = _cumulative_batching(_prim)
