"""JVP rules: how each primitive carries a tangent forward. One table, all primitives.

A JVP rule gets the primals and tangents of a primitive's inputs and returns the primal
and tangent of its output. Most primitives follow one pattern: the output is the
primitive applied to the primals, and its tangent is a sum of one term per input,
``∂out/∂xᵢ · tᵢ``. :func:`defjvp` builds such a rule from those terms; it skips inputs
whose tangent is a symbolic ``Zero``.

Every term is written with ``lax`` functions, so the rules themselves can be traced,
transposed and differentiated again: that is what makes ``grad(grad(f))`` work.
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
    instantiate,
    is_differentiable,
    jvp_rules,
    tangent_aval,
)
from minijax.lax import elementwise as ew
from minijax.lax import reductions, shapes

Term = Callable[..., Any]  # (tangent, output, *primals, **params) -> tangent contribution


def defjvp(primitive: Primitive, *terms: Term | None) -> None:
    """Register the rule "tangent = Σᵢ terms[i](tᵢ, out, *primals)" (``None``: no term)."""

    def rule(primals: list, tangents: list, **params: Any) -> tuple[Any, Any]:
        out = primitive.bind(*primals, **params)
        if not is_differentiable(out.aval):
            return out, Zero(tangent_aval(out.aval))
        tangent: Any = Zero(tangent_aval(out.aval))
        for term, t in zip(terms, tangents):
            if term is not None and type(t) is not Zero:
                tangent = add_tangents(tangent, term(t, out, *primals, **params))
        return out, tangent

    jvp_rules[primitive] = rule


def deflinear(primitive: Primitive) -> None:
    """A primitive linear in all its inputs: the tangent is the primitive of the tangents."""

    def rule(primals: list, tangents: list, **params: Any) -> tuple[Any, Any]:
        out = primitive.bind(*primals, **params)
        return out, primitive.bind(*map(instantiate, tangents), **params)

    jvp_rules[primitive] = rule


def defzero(primitive: Primitive) -> None:
    """A primitive whose output does not change when its inputs change a little."""

    def rule(primals: list, tangents: list, **params: Any) -> tuple[Any, Any]:
        out = primitive.bind(*primals, **params)
        outs = out if primitive.multiple_results else [out]
        zeros = [Zero(tangent_aval(o.aval)) for o in outs]
        return out, zeros if primitive.multiple_results else zeros[0]

    jvp_rules[primitive] = rule


def _const(x: Any, value: float) -> Any:
    """``value`` as a scalar of ``x``'s dtype (so rules never promote)."""
    return lax.convert_element_type(value, x.dtype)


def _sq(x: Any) -> Any:
    return lax.mul(x, x)


# --- elementwise: one term per input ---------------------------------------------------------

defjvp(ew.neg_p, lambda t, out, x: lax.neg(t))
defjvp(ew.sin_p, lambda t, out, x: lax.mul(t, lax.cos(x)))
defjvp(ew.cos_p, lambda t, out, x: lax.neg(lax.mul(t, lax.sin(x))))
defjvp(ew.tan_p, lambda t, out, x: lax.mul(t, lax.add(_const(x, 1), _sq(out))))
defjvp(ew.asin_p, lambda t, out, x: lax.mul(t, lax.rsqrt(lax.sub(_const(x, 1), _sq(x)))))
defjvp(ew.acos_p,
       lambda t, out, x: lax.neg(lax.mul(t, lax.rsqrt(lax.sub(_const(x, 1), _sq(x))))))
defjvp(ew.atan_p, lambda t, out, x: lax.div(t, lax.add(_const(x, 1), _sq(x))))
defjvp(ew.sinh_p, lambda t, out, x: lax.mul(t, lax.cosh(x)))
defjvp(ew.cosh_p, lambda t, out, x: lax.mul(t, lax.sinh(x)))
defjvp(ew.tanh_p, lambda t, out, x: lax.mul(t, lax.sub(_const(x, 1), _sq(out))))
defjvp(ew.asinh_p, lambda t, out, x: lax.mul(t, lax.rsqrt(lax.add(_sq(x), _const(x, 1)))))
defjvp(ew.acosh_p, lambda t, out, x: lax.mul(
    t, lax.rsqrt(lax.mul(lax.sub(x, _const(x, 1)), lax.add(x, _const(x, 1))))))
defjvp(ew.atanh_p, lambda t, out, x: lax.div(t, lax.sub(_const(x, 1), _sq(x))))
defjvp(ew.exp_p, lambda t, out, x: lax.mul(t, out))
defjvp(ew.exp2_p, lambda t, out, x: lax.mul(t, lax.mul(out, _const(x, np.log(2)))))
defjvp(ew.log_p, lambda t, out, x: lax.div(t, x))
defjvp(ew.log1p_p, lambda t, out, x: lax.div(t, lax.add(x, _const(x, 1))))
defjvp(ew.expm1_p, lambda t, out, x: lax.mul(t, lax.add(out, _const(x, 1))))
defjvp(ew.sqrt_p, lambda t, out, x: lax.div(t, lax.mul(out, _const(x, 2))))
defjvp(ew.rsqrt_p, lambda t, out, x: lax.mul(t, lax.mul(lax.div(out, x), _const(x, -0.5))))
defjvp(ew.cbrt_p, lambda t, out, x: lax.mul(t, lax.div(out, lax.mul(x, _const(x, 3)))))
defjvp(ew.logistic_p,
       lambda t, out, x: lax.mul(t, lax.mul(out, lax.sub(_const(x, 1), out))))
defjvp(ew.square_p, lambda t, out, x: lax.mul(t, lax.mul(x, _const(x, 2))))
defjvp(ew.real_p, lambda t, out, x: lax.real(t))
defjvp(ew.imag_p, lambda t, out, x: lax.imag(t))
defjvp(ew.conj_p, lambda t, out, x: lax.conj(t))
defjvp(ew.complex_p, lambda t, out, x, y: lax.complex(t, lax.full_like(t, 0)),
       lambda t, out, x, y: lax.complex(lax.full_like(t, 0), t))


def _abs_term(t: Any, out: Any, x: Any) -> Any:
    if dtypes.issubdtype(x.dtype, np.complexfloating):  # d|x| = Re(conj(x) t) / |x|
        return lax.div(lax.real(lax.mul(lax.conj(x), t)), out)
    return lax.mul(t, lax.sign(x))


defjvp(ew.abs_p, _abs_term)


def _integer_pow_term(t: Any, out: Any, x: Any, *, y: int) -> Any:
    if y == 0:
        return lax.full_like(t, 0)
    scale = _const(x, y) if y == 1 else lax.mul(_const(x, y), lax.integer_pow(x, y - 1))
    return lax.mul(t, scale)


defjvp(ew.integer_pow_p, _integer_pow_term)

defjvp(ew.add_p, lambda t, out, x, y: t, lambda t, out, x, y: t)
defjvp(ew.sub_p, lambda t, out, x, y: t, lambda t, out, x, y: lax.neg(t))
defjvp(ew.mul_p, lambda t, out, x, y: lax.mul(t, y), lambda t, out, x, y: lax.mul(x, t))
defjvp(ew.div_p, lambda t, out, x, y: lax.div(t, y),
       lambda t, out, x, y: lax.mul(t, lax.neg(lax.div(out, y))))
defjvp(add_any_p, lambda t, out, x, y: t, lambda t, out, x, y: t)


def _pow_base_term(t: Any, out: Any, x: Any, y: Any) -> Any:
    """d(x**y)/dx = y * x**(y-1), written so that x = 0 with y >= 1 gives no NaN."""
    y = lax.convert_element_type(y, x.dtype) if y.dtype != x.dtype else y
    return lax.mul(t, lax.mul(y, lax.pow(x, lax.sub(y, _const(y, 1)))))


def _pow_exponent_term(t: Any, out: Any, x: Any, y: Any) -> Any:
    """d(x**y)/dy = log(x) * x**y, taken as 0 where x = 0 (the limit from above)."""
    zero = lax.eq(x, _const(x, 0))
    safe_x = lax.select(zero, lax.full_like(x, 1), x)
    return lax.mul(t, lax.select(zero, lax.full_like(out, 0), lax.mul(lax.log(safe_x), out)))


defjvp(ew.pow_p, _pow_base_term, _pow_exponent_term)


def _minmax_term(pick_first: Callable, ties: float) -> tuple[Term, Term]:
    """max/min: the tangent of the chosen input; at ties, half of each (as in JAX)."""

    def weight(x: Any, y: Any, first: bool) -> Any:
        chosen = pick_first(x, y) if first else pick_first(y, x)
        tie = lax.eq(x, y)
        one, half = lax.full_like(x, 1), lax.full_like(x, ties)
        return lax.select(tie, half, lax.select(chosen, one, lax.full_like(x, 0)))

    return (lambda t, out, x, y: lax.mul(t, weight(x, y, True)),
            lambda t, out, x, y: lax.mul(t, weight(x, y, False)))


defjvp(ew.max_p, *_minmax_term(lax.gt, 0.5))
defjvp(ew.min_p, *_minmax_term(lax.lt, 0.5))
defjvp(ew.atan2_p,
       lambda t, out, x, y: lax.mul(t, lax.div(y, lax.add(_sq(x), _sq(y)))),
       lambda t, out, x, y: lax.mul(t, lax.neg(lax.div(x, lax.add(_sq(x), _sq(y))))))
defjvp(ew.rem_p, lambda t, out, x, y: t,
       lambda t, out, x, y: lax.mul(t, lax.neg(_trunc(lax.div(x, y)))))


def _trunc(x: Any) -> Any:
    return lax.select(lax.lt(x, _const(x, 0)), lax.ceil(x), lax.floor(x))


for _p in (ew.sign_p, ew.floor_p, ew.ceil_p, ew.round_p, ew.is_finite_p, ew.nextafter_p,
           ew.stop_gradient_p, ew.eq_p, ew.ne_p, ew.lt_p, ew.le_p, ew.gt_p, ew.ge_p,
           ew.and_p, ew.or_p, ew.xor_p, ew.not_p, ew.shift_left_p,
           ew.shift_right_logical_p, ew.shift_right_arithmetic_p, ew.population_count_p,
           ew.bitcast_convert_type_p, shapes.iota_p):
    defzero(_p)


# --- conversion and selection -------------------------------------------------------------------


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
    lo, x, hi = primals
    out = ew.clamp_p.bind(lo, x, hi)
    tangent = Zero(tangent_aval(out.aval))
    for t, inside in ((tangents[1], lax.bitwise_and(lax.gt(x, lo), lax.lt(x, hi))),
                      (tangents[0], lax.ge(lo, x)), (tangents[2], lax.le(hi, x))):
        if type(t) is not Zero:
            t = lax.broadcast_in_dim(t, x.shape, ()) if t.shape != x.shape else t
            term = lax.select(inside, t, lax.full_like(t, 0))
            tangent = add_tangents(tangent, term)
    return out, tangent


jvp_rules[ew.clamp_p] = _clamp_rule


# --- shapes, reductions and products: linear in their array inputs ------------------------------

for _p in (shapes.broadcast_in_dim_p, shapes.reshape_p, reductions.reduce_sum_p):
    deflinear(_p)
