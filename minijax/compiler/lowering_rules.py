"""The lowering rules of minijax's primitives: how each becomes StableHLO ops.

Each rule is registered in :data:`minijax.compiler.lowering.lowering_rules`, keyed by
its primitive; ``lower_jaxpr_into`` looks it up at call time. (This module is a stop on
the way: each family of primitives is taking its rules to its own module.)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from minijax import dtypes
from minijax.compiler.lowering import (
    Builder,
    RuleContext,
    _region,
    lowering_rules,
    register,
    tensor_type,
)
from minijax.compiler.stablehlo import (
    Dense,
    DenseArray,
    TensorType,
    Value,
)
from minijax.interpreters.ad import add_any_p
from minijax.lax import shapes as lax_shapes
from minijax.lax.elementwise import (
    RoundingMethod,
    abs_p,
    acos_p,
    acosh_p,
    add_p,
    and_p,
    asin_p,
    asinh_p,
    atan2_p,
    atan_p,
    atanh_p,
    bitcast_convert_type_p,
    cbrt_p,
    ceil_p,
    clamp_p,
    clz_p,
    complex_p,
    conj_p,
    convert_element_type_p,
    cos_p,
    cosh_p,
    div_p,
    eq_p,
    exp2_p,
    exp_p,
    expm1_p,
    floor_p,
    ge_p,
    gt_p,
    imag_p,
    integer_pow_p,
    is_finite_p,
    le_p,
    log1p_p,
    log_p,
    logistic_p,
    lt_p,
    max_p,
    min_p,
    mul_p,
    ne_p,
    neg_p,
    nextafter_p,
    not_p,
    or_p,
    population_count_p,
    pow_p,
    real_p,
    reduce_precision_p,
    rem_p,
    round_p,
    rsqrt_p,
    select_n_p,
    shift_left_p,
    shift_right_arithmetic_p,
    shift_right_logical_p,
    sign_p,
    sin_p,
    sinh_p,
    sqrt_p,
    square_p,
    stop_gradient_p,
    sub_p,
    tan_p,
    tanh_p,
    xor_p,
)
from minijax.lax.linalg import dot_general_p
from minijax.lax.reductions import (
    argmax_p,
    argmin_p,
    cumlogsumexp_p,
    cummax_p,
    cummin_p,
    cumprod_p,
    cumsum_p,
    reduce_and_p,
    reduce_max_p,
    reduce_min_p,
    reduce_or_p,
    reduce_prod_p,
    reduce_sum_p,
    reduce_xor_p,
)
from minijax.lax.shapes import (
    broadcast_in_dim_p,
    concatenate_p,
    iota_p,
    pad_p,
    reshape_p,
    rev_p,
    split_p,
    squeeze_p,
    stack_p,
    tile_p,
    transpose_p,
    unstack_p,
)

# ---------------------------------------------------------------------------------------
# Elementwise primitives
# ---------------------------------------------------------------------------------------


def _nary(op_name: str) -> Callable[..., Value]:
    """An elementwise op: operands of a smaller shape are broadcast first."""

    def rule(ctx: RuleContext, *args: Value, **params: Any) -> Value:
        shape = tuple(ctx.avals_out[0].shape)
        args = [ctx.b.broadcast_to(a, shape) for a in args]
        return ctx.b.emit(op_name, *args, type=ctx.type_out)

    return rule


_ELEMENTWISE = {
    neg_p: "stablehlo.negate", floor_p: "stablehlo.floor", ceil_p: "stablehlo.ceil",
    is_finite_p: "stablehlo.is_finite", exp_p: "stablehlo.exponential",
    log_p: "stablehlo.log", log1p_p: "stablehlo.log_plus_one",
    expm1_p: "stablehlo.exponential_minus_one", sqrt_p: "stablehlo.sqrt",
    rsqrt_p: "stablehlo.rsqrt", cbrt_p: "stablehlo.cbrt", sin_p: "stablehlo.sine",
    cos_p: "stablehlo.cosine", tan_p: "stablehlo.tan", tanh_p: "stablehlo.tanh",
    asin_p: "chlo.asin", acos_p: "chlo.acos", atan_p: "chlo.atan",
    sinh_p: "chlo.sinh", cosh_p: "chlo.cosh", asinh_p: "chlo.asinh",
    acosh_p: "chlo.acosh", atanh_p: "chlo.atanh", real_p: "stablehlo.real",
    imag_p: "stablehlo.imag", not_p: "stablehlo.not",
    population_count_p: "stablehlo.popcnt", abs_p: "stablehlo.abs",
    add_p: "stablehlo.add", sub_p: "stablehlo.subtract",
    mul_p: "stablehlo.multiply", div_p: "stablehlo.divide",
    rem_p: "stablehlo.remainder",
    atan2_p: "stablehlo.atan2", nextafter_p: "chlo.next_after",
    complex_p: "stablehlo.complex", and_p: "stablehlo.and", or_p: "stablehlo.or",
    xor_p: "stablehlo.xor", shift_left_p: "stablehlo.shift_left",
    shift_right_logical_p: "stablehlo.shift_right_logical",
    shift_right_arithmetic_p: "stablehlo.shift_right_arithmetic",
    clamp_p: "stablehlo.clamp", bitcast_convert_type_p: "stablehlo.bitcast_convert",
    clz_p: "stablehlo.count_leading_zeros",
}
for _prim, _name in _ELEMENTWISE.items():
    lowering_rules[_prim] = _nary(_name)


@register(pow_p)
def _pow(ctx: RuleContext, x: Value, y: Value) -> Value:
    """An integer exponent is converted to the base's dtype first."""
    if y.type.dtype != x.type.dtype:
        y = ctx.b.convert(y, x.type.dtype)
    return _nary("stablehlo.power")(ctx, x, y)


@register(reduce_precision_p)
def _reduce_precision(ctx: RuleContext, x: Value, *, exponent_bits: int, mantissa_bits: int
                      ) -> Value:
    return ctx.b.emit("stablehlo.reduce_precision", x,
                      format=f"e{exponent_bits}m{mantissa_bits}")


@register(sign_p)
def _sign(ctx: RuleContext, x: Value) -> Value:
    """Unsigned integers have no ``sign`` op: 0 where x == 0, else 1."""
    b = ctx.b
    if x.type.dtype.kind != "u":
        return b.emit("stablehlo.sign", x)
    is_zero = b.compare(x, b.full(0, x.type), "EQ")
    return b.select(is_zero, b.full(0, x.type), b.full(1, x.type))


@register(square_p)
def _square(ctx: RuleContext, x: Value) -> Value:
    if x.type.dtype.kind in "iu":
        return ctx.b.emit("stablehlo.multiply", x, x)
    return ctx.b.emit("chlo.square", x)


@register(exp2_p)
def _exp2(ctx: RuleContext, x: Value) -> Value:
    """2**x = exp(log(2) * x)."""
    b = ctx.b
    log2 = b.full(np.log(2), x.type)
    return b.emit("stablehlo.exponential", b.emit("stablehlo.multiply", log2, x))


@register(logistic_p)
def _logistic(ctx: RuleContext, x: Value) -> Value:
    """1 / (1 + exp(-x))."""
    b = ctx.b
    e = b.emit("stablehlo.exponential", b.emit("stablehlo.negate", x))
    one_plus = b.emit("stablehlo.add", b.full_if_needed(1, x.type), e)
    return b.emit("stablehlo.divide", b.full_if_needed(1, x.type), one_plus)


@register(conj_p)
def _conj(ctx: RuleContext, x: Value, **params: Any) -> Value:
    b = ctx.b
    if x.type.dtype.kind != "c":  # conj of a real array: the same numbers, as complex
        out = TensorType(x.type.shape, ctx.avals_out[0].dtype)
        return b.emit("stablehlo.complex", x, b.full_if_needed(0, x.type), type=out)
    part = TensorType(x.type.shape, ctx.avals_out[0].dtype.type(0).real.dtype)
    real = b.emit("stablehlo.real", x, type=part)
    imag = b.emit("stablehlo.negate", b.emit("stablehlo.imag", x, type=part))
    return b.emit("stablehlo.complex", real, imag, type=x.type)


@register(round_p)
def _round(ctx: RuleContext, x: Value, rounding_method: int = 0) -> Value:
    even = rounding_method == RoundingMethod.TO_NEAREST_EVEN
    return ctx.b.emit("stablehlo.round_nearest_even" if even else "stablehlo.round_nearest_afz",
                      x)


def _minmax(op_name: str, direction: str) -> Callable[..., Value]:
    """max/min; complex numbers compare by real part, then imaginary part."""
    elementwise = _nary(op_name)

    def rule(ctx: RuleContext, x: Value, y: Value) -> Value:
        if x.type.dtype.kind != "c":
            return elementwise(ctx, x, y)
        b = ctx.b
        x, y = (b.broadcast_to(v, ctx.type_out.shape) for v in (x, y))
        part = TensorType(x.type.shape, x.type.dtype.type(0).real.dtype)
        rx, ry = b.emit("stablehlo.real", x, type=part), b.emit("stablehlo.real", y, type=part)
        real_eq, real_cmp = b.compare(rx, ry, "EQ"), b.compare(rx, ry, direction)
        ix, iy = b.emit("stablehlo.imag", x, type=part), b.emit("stablehlo.imag", y, type=part)
        pick_x = b.select(real_eq, b.compare(ix, iy, direction), real_cmp)
        return b.select(pick_x, x, y)

    return rule


lowering_rules[max_p] = _minmax("stablehlo.maximum", "GT")
lowering_rules[min_p] = _minmax("stablehlo.minimum", "LT")


def _comparison(direction: str) -> Callable[..., Value]:
    def rule(ctx: RuleContext, x: Value, y: Value) -> Value:
        shape = tuple(ctx.avals_out[0].shape)
        x, y = ctx.b.broadcast_to(x, shape), ctx.b.broadcast_to(y, shape)
        return ctx.b.compare(x, y, direction)
    return rule


for _prim, _direction in ((eq_p, "EQ"), (ne_p, "NE"), (lt_p, "LT"),
                          (le_p, "LE"), (gt_p, "GT"), (ge_p, "GE")):
    lowering_rules[_prim] = _comparison(_direction)


@register(integer_pow_p)
def _integer_pow(ctx: RuleContext, x: Value, y: int) -> Value:
    """Repeated squaring (x**5 = x * (x*x)*(x*x)); 1, 2, 3 and -1 directly."""
    b = ctx.b
    mul = lambda u, v: b.emit("stablehlo.multiply", u, v)
    if y == 1:
        return x
    if y == 2:
        return mul(x, x)
    if y == 3:
        return mul(mul(x, x), x)
    if y == -1:
        return b.emit("stablehlo.divide", b.full(1, x.type), x)
    if y == 0:
        return b.full_if_needed(1, x.type)
    n, acc = abs(y), None
    while n > 0:
        if n & 1:
            acc = x if acc is None else mul(acc, x)
        n >>= 1
        if n > 0:
            x = mul(x, x)
    if y < 0:
        return b.emit("stablehlo.divide", b.full_if_needed(1, acc.type), acc)
    return acc


@register(convert_element_type_p)
def _convert_element_type(ctx: RuleContext, x: Value, new_dtype: np.dtype,
                          weak_type: bool, **params: Any) -> Value:
    """A convert even when only the weak type changes; complex -> real keeps the real part."""
    if x.type.dtype.kind == "c" and np.dtype(new_dtype).kind != "c":
        part = TensorType(x.type.shape, x.type.dtype.type(0).real.dtype)
        x = ctx.b.emit("stablehlo.real", x, type=part)
    return ctx.b.convert(x, new_dtype)


@register(select_n_p)
def _select_n(ctx: RuleContext, which: Value, *cases: Value) -> Value:
    """Two cases: one ``select``; more: a binary tree of selects on ``which < mid``."""
    b = ctx.b
    if which.type.dtype == np.bool_:
        return cases[0] if len(cases) == 1 else b.select(which, cases[1], cases[0])

    def pick(offset: int, cases: Sequence[Value]) -> Value:
        if len(cases) == 1:
            return cases[0]
        mid = len(cases) // 2
        pred = b.compare(which, b.full(offset + mid, which.type), "LT")
        return b.select(pred, pick(offset, cases[:mid]), pick(offset + mid, cases[mid:]))

    return pick(0, cases)


# ---------------------------------------------------------------------------------------
# Shapes
# ---------------------------------------------------------------------------------------


@register(broadcast_in_dim_p)
def _broadcast_in_dim(ctx: RuleContext, x: Value, shape: tuple[int, ...],
                      broadcast_dimensions: tuple[int, ...], sharding: Any) -> Value:
    return ctx.b.broadcast(x, shape, broadcast_dimensions)


@register(reshape_p)
def _reshape(ctx: RuleContext, x: Value, new_sizes: tuple[int, ...], dimensions: Any,
             sharding: Any) -> Value:
    if dimensions is not None:
        x = _transpose(ctx, x, permutation=dimensions)
    return ctx.b.emit("stablehlo.reshape", x, type=ctx.type_out)


@register(squeeze_p)
def _squeeze(ctx: RuleContext, x: Value, dimensions: tuple[int, ...]) -> Value:
    return ctx.b.emit("stablehlo.reshape", x, type=ctx.type_out)


@register(transpose_p)
def _transpose(ctx: RuleContext, x: Value, permutation: tuple[int, ...]) -> Value:
    shape = tuple(x.type.shape[p] for p in permutation)
    return ctx.b.emit("stablehlo.transpose", x, type=TensorType(shape, x.type.dtype),
                      dims=tuple(permutation))


@register(rev_p)
def _rev(ctx: RuleContext, x: Value, dimensions: tuple[int, ...]) -> Value:
    return ctx.b.emit("stablehlo.reverse", x, dims=tuple(dimensions))


@register(pad_p)
def _pad(ctx: RuleContext, x: Value, value: Value,
         padding_config: tuple[tuple[int, int, int], ...]) -> Value:
    low, high, interior = (tuple(c[i] for c in padding_config) for i in range(3))
    return ctx.b.emit("stablehlo.pad", x, value, type=ctx.type_out, low=low, high=high,
                      interior=interior)


@register(concatenate_p)
def _concatenate(ctx: RuleContext, *xs: Value, dimension: int) -> Value:
    return ctx.b.emit("stablehlo.concatenate", *xs, type=ctx.type_out, dim=dimension)


@register(iota_p)
def _iota(ctx: RuleContext, *, dtype: np.dtype, shape: tuple[int, ...], dimension: int,
          sharding: Any) -> Value:
    return ctx.b.op("stablehlo.iota", [], [ctx.type_out], {"dim": dimension}).result


@register(lax_shapes.empty2_p)
def _empty2(ctx: RuleContext, *, dtype: np.dtype, memory_space: Any) -> Value:
    """Any value will do: zero, as XLA's lowering of JAX's ``empty2`` gives."""
    return ctx.b.constant(0, dtype)


@register(stop_gradient_p)
def _stop_gradient(ctx: RuleContext, x: Value) -> Value:
    """The value itself: gradients are not a concern of the compiled program."""
    return x


def _slice(b: Builder, x: Value, start: Sequence[int], limit: Sequence[int],
           strides: Sequence[int] | None = None) -> Value:
    strides = tuple(strides) if strides else (1,) * len(start)
    shape = tuple(-(-(hi - lo) // st) for lo, hi, st in zip(start, limit, strides))
    return b.emit("stablehlo.slice", x, type=TensorType(shape, x.type.dtype),
                  start=tuple(start), limit=tuple(limit), strides=strides)


@register(split_p)
def _split(ctx: RuleContext, x: Value, sizes: tuple[int, ...], axis: int) -> list[Value]:
    outs, offset = [], 0
    for size in sizes:
        start, limit = [0] * len(x.type.shape), list(x.type.shape)
        start[axis], limit[axis] = offset, offset + size
        outs.append(_slice(ctx.b, x, start, limit))
        offset += size
    return outs


@register(stack_p)
def _stack(ctx: RuleContext, *xs: Value, axis: int) -> Value:
    """As ``jnp.stack`` lowers: each operand gets a size-1 axis, then one concatenate."""
    expanded = []
    for x in xs:
        shape = list(x.type.shape)
        shape.insert(axis, 1)
        kept = [d for d in range(len(shape)) if d != axis]
        expanded.append(ctx.b.broadcast(x, shape, kept))
    return ctx.b.emit("stablehlo.concatenate", *expanded, type=ctx.type_out, dim=axis)


@register(unstack_p)
def _unstack(ctx: RuleContext, x: Value, axis: int) -> list[Value]:
    outs = []
    for i, aval in enumerate(ctx.avals_out):
        start, limit = [0] * len(x.type.shape), list(x.type.shape)
        start[axis], limit[axis] = i, i + 1
        piece = _slice(ctx.b, x, start, limit)
        outs.append(ctx.b.emit("stablehlo.reshape", piece, type=tensor_type(aval)))
    return outs


@register(tile_p)
def _tile(ctx: RuleContext, x: Value, reps: tuple[int, ...]) -> Value:
    """As ``jnp.tile`` lowers: reshape to (1, n0, 1, n1, ...), broadcast the ones to the
    repetitions, reshape back."""
    b, shape = ctx.b, x.type.shape
    spread = [d for n in shape for d in (1, n)]
    repeated = [d for r, n in zip(reps, shape) for d in (r, n)]
    x = b.emit("stablehlo.reshape", x, type=TensorType(tuple(spread), x.type.dtype))
    x = b.broadcast(x, repeated, range(len(repeated)))
    return b.emit("stablehlo.reshape", x, type=ctx.type_out)


# ---------------------------------------------------------------------------------------
# Reductions
# ---------------------------------------------------------------------------------------


def _reduce(b: Builder, inputs: Sequence[Value], inits: Sequence[Value], op_name: str | None,
            dims: Sequence[int], body: Callable | None = None) -> list[Value]:
    """``stablehlo.reduce`` over ``dims``; the body is one binary op or ``body``."""
    scalars = [TensorType((), x.type.dtype) for x in inputs]
    if body is None:
        body = lambda inner, args: [inner.emit(op_name, *args)]
    region = _region(b, scalars + scalars, body)
    out_types = [TensorType(tuple(n for d, n in enumerate(x.type.shape) if d not in dims),
                            x.type.dtype) for x in inputs]
    return b.op("stablehlo.reduce", [*inputs, *inits], out_types,
                {"dimensions": tuple(dims)}, [region]).results


def _lowest(dtype: np.dtype) -> Any:
    """The identity of max: -inf, the smallest integer, False."""
    if dtype == np.bool_:
        return False
    return dtypes.iinfo(dtype).min if dtype.kind in "iu" else -np.inf


def _highest(dtype: np.dtype) -> Any:
    if dtype == np.bool_:
        return True
    return dtypes.iinfo(dtype).max if dtype.kind in "iu" else np.inf


_REDUCTIONS = {
    reduce_sum_p: ("stablehlo.add", lambda dt: 0),
    reduce_prod_p: ("stablehlo.multiply", lambda dt: 1),
    reduce_max_p: ("stablehlo.maximum", _lowest),
    reduce_min_p: ("stablehlo.minimum", _highest),
    reduce_and_p: ("stablehlo.and", lambda dt: True if dt == np.bool_ else -1),
    reduce_or_p: ("stablehlo.or", lambda dt: 0),
    reduce_xor_p: ("stablehlo.xor", lambda dt: 0),
}


def _reduction(op_name: str, identity: Callable[[np.dtype], Any]) -> Callable[..., Value]:
    def rule(ctx: RuleContext, x: Value, *, axes: tuple[int, ...], **params: Any) -> Value:
        init = ctx.b.constant(np.array(identity(x.type.dtype)).astype(x.type.dtype))
        return _reduce(ctx.b, [x], [init], op_name, axes)[0]
    return rule


for _prim, (_name, _identity) in _REDUCTIONS.items():
    lowering_rules[_prim] = _reduction(_name, _identity)


def _argminmax(direction: str, identity: Callable[[np.dtype], Any]) -> Callable[..., Value]:
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

            return [_reduce(b, [operand, iota], inits, None, axes, body)[1]]

        name = "argmax" if direction == "GT" else "argmin"
        key = (name, axes, index_dtype, x.type)
        return ctx.b.call(ctx.b.module.function(name, [x.type], build, key), [x])[0]

    return rule


lowering_rules[argmax_p] = _argminmax("GT", _lowest)
lowering_rules[argmin_p] = _argminmax("LT", _highest)


def _cumulative(name: str, op_name: str | None, identity: Callable[[np.dtype], Any],
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


lowering_rules[cumsum_p] = _cumulative("cumsum", "stablehlo.add", lambda dt: 0)
lowering_rules[cumprod_p] = _cumulative("cumprod", "stablehlo.multiply", lambda dt: 1,
                                            broadcast_init=False)
lowering_rules[cummax_p] = _cumulative("cummax", "stablehlo.maximum", _lowest)
lowering_rules[cummin_p] = _cumulative("cummin", "stablehlo.minimum", _highest)


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


lowering_rules[cumlogsumexp_p] = _cumulative("cumlogsumexp", None, _lowest,
                                                 broadcast_init=False, body=_logaddexp_body)


# ---------------------------------------------------------------------------------------
# dot_general
# ---------------------------------------------------------------------------------------


@register(dot_general_p)
def _dot_general(ctx: RuleContext, lhs: Value, rhs: Value, *, dimension_numbers: Any,
                 precision: Any, preferred_element_type: Any, out_sharding: Any) -> Value:
    """Operands of different dtypes are first converted to the result's dtype."""
    b, out = ctx.b, ctx.type_out
    if lhs.type.dtype != rhs.type.dtype:
        lhs, rhs = b.convert(lhs, out.dtype), b.convert(rhs, out.dtype)
    (lhs_contract, rhs_contract), (lhs_batch, rhs_batch) = dimension_numbers
    names = ("DEFAULT", "DEFAULT") if precision is None else tuple(str(p) for p in precision)
    attrs = {"contracting_dims": (tuple(lhs_contract), tuple(rhs_contract)),
             "precision": names}
    if lhs_batch:
        attrs = {"batching_dims": (tuple(lhs_batch), tuple(rhs_batch)), **attrs}
    return b.emit("stablehlo.dot_general", lhs, rhs, type=out, **attrs)




def _int() -> np.dtype:
    """The default integer: int32, or int64 with ``jax_enable_x64``."""
    return dtypes.canonicalize_dtype(np.int64)


# reverse mode's sum of two cotangents
lowering_rules[add_any_p] = _nary("stablehlo.add")
