"""JVP rules: how each primitive carries a tangent forward. One table, all primitives.

A JVP rule gets the primals and tangents of a primitive's inputs and returns the primal
and tangent of its output. Most primitives follow one pattern: the output is the
primitive applied to the primals, and its tangent is a sum of one term per input,
``∂out/∂xᵢ · tᵢ``. :func:`defjvp` builds such a rule from those terms; it skips inputs
whose tangent is a symbolic ``Zero``. Primitives that are linear in some inputs (shapes,
slicing, sums) just apply themselves to the tangents (:func:`deflinear`); primitives with
integer or boolean results, or that are piecewise constant, have zero tangents
(:func:`defzero`).

Every term is written with ``lax`` functions, so the rules themselves can be traced,
transposed and differentiated again: that is what makes ``grad(grad(f))`` work. Under
``linearize`` (and so ``grad``) a rule runs with unknown tangents, so the tangent must be
computed by operations that are *linear* in the tangents -- multiplying a tangent by
something computed from primals is fine -- and each such operation needs a transpose rule
(``transpose_rules.py``).

Where a mathematical derivative has a choice to make (``max`` at a tie, ``abs`` at 0,
``x ** y`` at ``x = 0``) the rules make JAX's choice, so that gradients agree with JAX's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from minijax import dtypes, lax
from minijax.core import Primitive
from minijax.interpreters.ad import (
    Zero,
    add_any_p,
    add_tangents,
    deflinear,
    defzero,
    instantiate,
    is_differentiable,
    jvp_of,
    jvp_rules,
    tangent_aval,
)
from minijax.lax import elementwise as ew
from minijax.lax import linalg, reductions, shapes

Term = Callable[..., Any]  # (tangent, output, *primals, **params) -> tangent contribution


def _broadcast_like(t: Any, out: Any) -> Any:
    """``lax`` lets a scalar or a size-1 dimension meet a full one; the tangent of such an
    input must be stretched to the output's shape like the input itself was."""
    if t.shape == out.shape:
        return t
    dims = () if t.ndim == 0 else tuple(range(t.ndim))
    return lax.broadcast_in_dim(t, out.shape, dims)


def defjvp(primitive: Primitive, *terms: Term | None) -> None:
    """Register the rule "tangent = Σᵢ terms[i](tᵢ, out, *primals)" (``None``: no term)."""

    def rule(primals: list, tangents: list, **params: Any) -> tuple[Any, Any]:
        out = primitive.bind(*primals, **params)
        tangent: Any = Zero(tangent_aval(out.aval))
        if not is_differentiable(out.aval):
            return out, tangent
        for term, t in zip(terms, tangents):
            if term is not None and type(t) is not Zero:
                contribution = _broadcast_like(term(t, out, *primals, **params), out)
                tangent = add_tangents(tangent, contribution)
        return out, tangent

    jvp_rules[primitive] = rule


def _const(x: Any, value: float) -> Any:
    """``value`` as a scalar of ``x``'s dtype and weak type: a constant in a formula
    adopts the type of the value it meets, like a Python scalar (so rules never promote,
    and the tangent of a weakly typed value stays weak, as in JAX)."""
    return lax.full_like(x, value, shape=())


def _zeros(x: Any) -> Any:
    return lax.full_like(x, 0)


def _replace_zero(x: Any) -> Any:
    """``x`` with zeros replaced by ones: for formulas whose value at 0 is a limit."""
    return lax.select(lax.eq(x, _const(x, 0)), lax.full_like(x, 1), x)


def _is_complex(x: Any) -> bool:
    return dtypes.issubdtype(x.dtype, np.complexfloating)


# ---------------------------------------------------------------------------------------
# Elementwise: one term per input
# ---------------------------------------------------------------------------------------

defjvp(ew.neg_p, lambda t, out, x: lax.neg(t))
defjvp(ew.sin_p, lambda t, out, x: lax.mul(t, lax.cos(x)))
defjvp(ew.cos_p, lambda t, out, x: lax.neg(lax.mul(t, lax.sin(x))))
defjvp(ew.tan_p, lambda t, out, x: lax.mul(t, lax.add(_const(x, 1), lax.square(out))))
defjvp(ew.asin_p, lambda t, out, x: lax.mul(t, lax.rsqrt(lax.sub(_const(x, 1), lax.square(x)))))
defjvp(ew.acos_p,
       lambda t, out, x: lax.mul(t, lax.neg(lax.rsqrt(lax.sub(_const(x, 1), lax.square(x))))))
defjvp(ew.atan_p, lambda t, out, x: lax.div(t, lax.add(_const(x, 1), lax.square(x))))
defjvp(ew.sinh_p, lambda t, out, x: lax.mul(t, lax.cosh(x)))
defjvp(ew.cosh_p, lambda t, out, x: lax.mul(t, lax.sinh(x)))
# (1 + tanh)(1 - tanh) rather than 1 - tanh², as JAX writes it (same rounding).
defjvp(ew.tanh_p, lambda t, out, x: lax.mul(lax.add(t, lax.mul(t, out)),
                                            lax.sub(_const(x, 1), out)))
defjvp(ew.asinh_p, lambda t, out, x: lax.mul(t, lax.rsqrt(lax.add(lax.square(x), _const(x, 1)))))
defjvp(ew.acosh_p, lambda t, out, x: lax.mul(
    t, lax.rsqrt(lax.mul(lax.sub(x, _const(x, 1)), lax.add(x, _const(x, 1))))))
defjvp(ew.atanh_p, lambda t, out, x: lax.mul(lax.integer_pow(lax.add(_const(x, 1), x), -1),
                                             lax.div(t, lax.sub(_const(x, 1), x))))
defjvp(ew.exp_p, lambda t, out, x: lax.mul(t, out))
defjvp(ew.exp2_p, lambda t, out, x: lax.mul(_const(x, np.log(2)), lax.mul(t, out)))
defjvp(ew.log_p, lambda t, out, x: lax.div(t, x))
defjvp(ew.log1p_p, lambda t, out, x: lax.div(t, lax.add(x, _const(x, 1))))
defjvp(ew.expm1_p, lambda t, out, x: lax.mul(t, lax.add(out, _const(x, 1))))
defjvp(ew.sqrt_p, lambda t, out, x: lax.mul(t, lax.div(_const(x, 0.5), out)))
defjvp(ew.rsqrt_p, lambda t, out, x: lax.mul(t, lax.mul(_const(x, -0.5), lax.div(out, x))))
defjvp(ew.cbrt_p,
       lambda t, out, x: lax.mul(t, lax.mul(_const(x, 1 / 3), lax.integer_pow(out, -2))))
defjvp(ew.logistic_p,
       lambda t, out, x: lax.mul(t, lax.mul(out, lax.sub(_const(x, 1), out))))
defjvp(ew.square_p, lambda t, out, x: lax.mul(t, lax.mul(_const(x, 2), x)))
for _p in (ew.real_p, ew.imag_p, ew.conj_p, ew.complex_p, ew.reduce_precision_p):
    deflinear(_p)


def _abs_term(t: Any, out: Any, x: Any) -> Any:
    """d|x| = sign(x) dx, with JAX's choice of +dx at 0; for complex x, Re(conj(x) dx)/|x|."""
    if _is_complex(x):
        scale = lax.div(lax.conj(x), _replace_zero(lax.convert_element_type(out, x.dtype)))
        return lax.real(lax.mul(t, scale))
    return lax.select(lax.ge(x, _const(x, 0)), t, lax.neg(t))


defjvp(ew.abs_p, _abs_term)


def _integer_pow_term(t: Any, out: Any, x: Any, *, y: int) -> Any:
    if y == 0:
        return _zeros(t)
    power = x if y == 2 else lax.integer_pow(x, y - 1)
    return lax.mul(t, lax.mul(_const(x, y), power))


defjvp(ew.integer_pow_p, _integer_pow_term)



def _defjvp_add_or_sub(primitive: Primitive) -> None:
    """``add`` and ``sub`` are linear: when both tangents are nonzero, the output's tangent
    is the same operation on the tangents (``add``/``sub``, as JAX writes it, not a sum of
    terms with ``add_any``), so a jvp's jaxpr reads like the function it differentiates."""
    negate_y = primitive is ew.sub_p

    def rule(primals: list, tangents: list, **params: Any) -> tuple[Any, Any]:
        out = primitive.bind(*primals, **params)
        tx, ty = tangents
        if type(tx) is Zero and type(ty) is Zero:
            return out, Zero(tangent_aval(out.aval))
        if type(ty) is Zero:
            return out, _broadcast_like(tx, out)
        if type(tx) is Zero:
            return out, _broadcast_like(lax.neg(ty) if negate_y else ty, out)
        return out, primitive.bind(tx, ty, **params)

    jvp_rules[primitive] = rule


_defjvp_add_or_sub(ew.add_p)
_defjvp_add_or_sub(ew.sub_p)
defjvp(ew.mul_p, lambda t, out, x, y: lax.mul(t, y), lambda t, out, x, y: lax.mul(x, t))
defjvp(ew.div_p, lambda t, out, x, y: lax.div(t, y),
       lambda t, out, x, y: lax.mul(lax.mul(lax.neg(t), x), lax.integer_pow(y, -2)))
defjvp(add_any_p, lambda t, out, x, y: t, lambda t, out, x, y: t)



def _strong(x: Any) -> Any:
    """``x`` without its weak type (JAX's pow rule converts its operands so)."""
    return lax.convert_element_type(x, x.dtype)


def _pow_base_term(t: Any, out: Any, x: Any, y: Any) -> Any:
    """y x**(y-1) dx. For a float y at x = 0 this is whatever the formula gives (NaN for
    y = 0), as in JAX; an integer y is converted to x's dtype, and where it is 0 the
    derivative is 0 (x**0 is 1 everywhere, even at x = 0)."""
    if y.dtype.kind not in "iu":
        return lax.mul(t, _strong(lax.mul(y, lax.pow(x, lax.sub(y, _const(y, 1))))))
    x, y = _strong(x), lax.convert_element_type(y, x.dtype)
    if x.shape != y.shape:
        shape = np.broadcast_shapes(x.shape, y.shape)
        x, y = (v if v.shape == shape else lax.broadcast_in_dim(v, shape, range(v.ndim))
                for v in (x, y))
    y_is_zero = lax.eq(y, _const(y, 0))
    zeros = lax.full_like(y, 0)
    safe_y = lax.select(lax.eq(y, _const(y, 0)), lax.full_like(y, 1), y)
    slope = lax.mul(safe_y, lax.pow(x, lax.sub(y, lax.full_like(y, 1))))
    return lax.mul(t, lax.select(y_is_zero, zeros, slope))


# d(x**y) = y x**(y-1) dx + log(x) x**y dy. At x = 0 the second term is taken as 0 (log is
# replaced by log 1). An integer y has no tangent, so only the first term is ever used then.
defjvp(ew.pow_p, _pow_base_term,
       lambda t, out, x, y: _strong(lax.mul(t, lax.mul(lax.log(_replace_zero(x)), out))))


def _chosen_weight(x: Any, out: Any, other: Any) -> Any:
    """1 where ``x`` is the result of max/min, ½ where both inputs are (a tie), else 0:
    (x == out) / (1 + (other == out))."""
    chosen = lax.select(lax.eq(x, out), lax.full_like(out, 1), _zeros(out))
    return lax.div(chosen, lax.select(lax.eq(other, out), lax.full_like(out, 2),
                                      lax.full_like(out, 1)))


for _p in (ew.max_p, ew.min_p):
    defjvp(_p, lambda t, out, x, y: lax.mul(t, _chosen_weight(x, out, y)),
           lambda t, out, x, y: lax.mul(t, _chosen_weight(y, out, x)))

defjvp(ew.atan2_p,
       lambda t, out, x, y: lax.mul(t, lax.div(y, lax.add(lax.square(x), lax.square(y)))),
       lambda t, out, x, y: lax.mul(t, lax.div(lax.neg(x), lax.add(lax.square(x),
                                                                   lax.square(y)))))
# rem(x, y) = x - y * trunc(x / y): the quotient is piecewise constant.
defjvp(ew.rem_p, lambda t, out, x, y: t,
       lambda t, out, x, y: lax.mul(lax.neg(t), lax.mul(lax.sign(lax.div(x, y)),
                                                        lax.floor(lax.abs(lax.div(x, y))))))

# Piecewise constant, or with integer or boolean results: zero tangents. (``nextafter``
# has no rule, as in JAX: differentiating it raises NotImplementedError.)
for _p in (ew.sign_p, ew.floor_p, ew.ceil_p, ew.round_p, ew.is_finite_p, ew.stop_gradient_p,
           ew.eq_p, ew.ne_p, ew.lt_p, ew.le_p, ew.gt_p, ew.ge_p, ew.and_p, ew.or_p, ew.xor_p,
           ew.not_p, ew.shift_left_p, ew.shift_right_logical_p, ew.shift_right_arithmetic_p,
           ew.population_count_p, ew.clz_p, ew.bitcast_convert_type_p, shapes.iota_p,
           shapes.empty2_p, reductions.argmax_p, reductions.argmin_p, reductions.reduce_and_p,
           reductions.reduce_or_p, reductions.reduce_xor_p):
    defzero(_p)


# ---------------------------------------------------------------------------------------
# Conversion and selection
# ---------------------------------------------------------------------------------------


def _convert_rule(primals: list, tangents: list, *, new_dtype: np.dtype, weak_type: bool
                  ) -> tuple[Any, Any]:
    (x,), (t,) = primals, tangents
    out = ew.convert_element_type_p.bind(x, new_dtype=new_dtype, weak_type=weak_type)
    if type(t) is Zero or not is_differentiable(out.aval):
        return out, Zero(tangent_aval(out.aval))
    return out, ew.convert_element_type_p.bind(t, new_dtype=new_dtype, weak_type=weak_type)


jvp_rules[ew.convert_element_type_p] = _convert_rule


def _select_n_rule(primals: list, tangents: list) -> tuple[Any, Any]:
    which, *cases = primals
    out = ew.select_n_p.bind(which, *cases)
    case_tangents = tangents[1:]
    if all(type(t) is Zero for t in case_tangents):
        return out, Zero(tangent_aval(out.aval))
    return out, ew.select_n_p.bind(which, *map(instantiate, case_tangents))


jvp_rules[ew.select_n_p] = _select_n_rule


def _clamp_rule(primals: list, tangents: list) -> tuple[Any, Any]:
    """clamp(lo, x, hi): the tangent of whichever input is the result; at a tie, none
    (as in JAX: ``x`` must be strictly inside, a bound strictly outside)."""
    lo, x, hi = primals
    out = ew.clamp_p.bind(lo, x, hi)
    chosen = (lax.bitwise_and(lax.gt(lo, x), lax.lt(lo, hi)),
              lax.bitwise_and(lax.gt(x, lo), lax.lt(x, hi)),
              lax.lt(hi, x))
    tangent = Zero(tangent_aval(out.aval))
    for t, where in zip(tangents, chosen):
        if type(t) is not Zero:
            t = _broadcast_like(t, out)
            tangent = add_tangents(tangent, lax.select(where, t, _zeros(t)))
    return out, tangent


jvp_rules[ew.clamp_p] = _clamp_rule


# ---------------------------------------------------------------------------------------
# Shapes: linear in their array inputs
# ---------------------------------------------------------------------------------------

for _p in (shapes.broadcast_in_dim_p, shapes.reshape_p, shapes.transpose_p, shapes.squeeze_p,
           shapes.rev_p, shapes.pad_p, shapes.concatenate_p, shapes.stack_p, shapes.unstack_p,
           shapes.split_p, shapes.tile_p, reductions.reduce_sum_p, reductions.cumsum_p):
    deflinear(_p)


# ---------------------------------------------------------------------------------------
# Reductions and cumulative reductions
# ---------------------------------------------------------------------------------------


def _reduce_extremum_rule(primitive: Primitive) -> Callable[..., tuple[Any, Any]]:
    """reduce_max/min: the tangent at the location of the extremum, averaged over ties."""

    def rule(primals: list, tangents: list, *, axes: tuple[int, ...]) -> tuple[Any, Any]:
        (x,), (t,) = primals, tangents
        out = primitive.bind(x, axes=axes)
        # out with size-1 axes where x was reduced: ``eq`` broadcasts those
        kept_shape = tuple(1 if d in axes else n for d, n in enumerate(x.shape))
        at_extremum = lax.eq(x, lax.reshape(out, kept_shape))
        weights = lax.convert_element_type(at_extremum, x.dtype)
        count = lax.reduce_sum(weights, axes)
        return out, lax.div(lax.reduce_sum(lax.mul(t, weights), axes), count)

    return rule


jvp_rules[reductions.reduce_max_p] = _reduce_extremum_rule(reductions.reduce_max_p)
jvp_rules[reductions.reduce_min_p] = _reduce_extremum_rule(reductions.reduce_min_p)


def _product_tree(x: Any, axes: tuple[int, ...]) -> Any:
    """The product over ``axes`` as a balanced tree of pairwise products (padding with 1
    when a level has an odd count). Its JVP is the product rule applied level by level,
    which stays right when some factors are 0 (unlike ``out / x``)."""
    kept = [d for d in range(x.ndim) if d not in axes]
    x = lax.transpose(x, (*axes, *kept))
    out_shape = x.shape[len(axes):]
    count = int(np.prod(x.shape[:len(axes)], dtype=np.int64))
    x = lax.reshape(x, (count, *out_shape))
    while x.shape[0] > 1:
        if x.shape[0] % 2:
            one = lax.full((1, *out_shape), 1, x.dtype)
            x = lax.concatenate([x, one], 0)
        x = lax.mul(lax.slice_in_dim(x, 0, None, 2), lax.slice_in_dim(x, 1, None, 2))
    if x.shape[0] == 0:
        return lax.full(out_shape, 1, x.dtype)
    return lax.reshape(x, out_shape)


def _reduce_prod_rule(primals: list, tangents: list, *, axes: tuple[int, ...]
                      ) -> tuple[Any, Any]:
    (x,), (t,) = primals, tangents
    out = reductions.reduce_prod_p.bind(x, axes=axes)
    return out, jvp_of(lambda x: _product_tree(x, axes), x, t)


jvp_rules[reductions.reduce_prod_p] = _reduce_prod_rule


def _interleave(even: Any, odd: Any, axis: int) -> Any:
    """[e0, o0, e1, o1, ...] along ``axis`` (``even`` may be one longer than ``odd``):
    each spread out with gaps by ``pad``, then added."""
    extra = even.shape[axis] - odd.shape[axis]
    zero = lax.convert_element_type(0, even.dtype)

    def spread(x: Any, low: int, high: int) -> Any:
        config = [(0, 0, 0)] * x.ndim
        config[axis] = (low, high, 1)
        return lax.pad(x, zero, config)

    return lax.add(spread(even, 0, 1 - extra), spread(odd, 1, extra))


def prefix_scan(combine: Callable[[Any, Any], Any], x: Any, axis: int) -> Any:
    """The inclusive scan ``out[i] = x[0] ∘ x[1] ∘ ... ∘ x[i]`` along ``axis`` for an
    associative ``combine``, in O(log n) array operations (the odd-even algorithm JAX's
    ``associative_scan`` uses): combine neighbours pairwise, scan that half-length array
    recursively -- which gives the odd positions -- then fill in the even positions."""
    n = x.shape[axis]
    if n < 2:
        return x
    pairs = combine(lax.slice_in_dim(x, 0, n - 1, 2, axis), lax.slice_in_dim(x, 1, n, 2, axis))
    odd = prefix_scan(combine, pairs, axis)
    n_even = (n + 1) // 2
    rest = combine(lax.slice_in_dim(odd, 0, n_even - 1, 1, axis),
                   lax.slice_in_dim(x, 2, n, 2, axis))
    even = lax.concatenate([lax.slice_in_dim(x, 0, 1, 1, axis), rest], axis)
    return _interleave(even, odd, axis)


def _cumulative_rule(primitive: Primitive, combine: Callable[[Any, Any], Any]
                     ) -> Callable[..., tuple[Any, Any]]:
    """cumprod/cummax/cummin are differentiated as the scan that computes them."""

    def scan(x: Any, axis: int, reverse: bool) -> Any:
        if not reverse:
            return prefix_scan(combine, x, axis)
        return lax.rev(prefix_scan(combine, lax.rev(x, (axis,)), axis), (axis,))

    def rule(primals: list, tangents: list, *, axis: int, reverse: bool) -> tuple[Any, Any]:
        (x,), (t,) = primals, tangents
        out = primitive.bind(x, axis=axis, reverse=reverse)
        return out, jvp_of(lambda x: scan(x, axis, reverse), x, t)

    return rule


jvp_rules[reductions.cumprod_p] = _cumulative_rule(reductions.cumprod_p, lax.mul)
jvp_rules[reductions.cummax_p] = _cumulative_rule(reductions.cummax_p, lax.max)
jvp_rules[reductions.cummin_p] = _cumulative_rule(reductions.cummin_p, lax.min)


def _logaddexp(x: Any, y: Any) -> Any:
    from minijax.numpy import logaddexp  # jnp's, with its custom JVP (as JAX's rule uses)

    return logaddexp(x, y)


jvp_rules[reductions.cumlogsumexp_p] = _cumulative_rule(reductions.cumlogsumexp_p, _logaddexp)


# ---------------------------------------------------------------------------------------
# dot_general: bilinear
# ---------------------------------------------------------------------------------------

defjvp(linalg.dot_general_p,
       lambda t, out, x, y, **params: linalg.dot_general_p.bind(t, y, **params),
       lambda t, out, x, y, **params: linalg.dot_general_p.bind(x, t, **params))


# ---------------------------------------------------------------------------------------
