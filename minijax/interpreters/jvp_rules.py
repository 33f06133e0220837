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

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from minijax import debug, dtypes, lax
from minijax.core import Primitive
from minijax.interpreters import ad
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
from minijax.lax import linalg, parallel, reductions, shapes, slicing, sorting, special
from minijax.lax.linalg import matrix_transpose
from minijax.runtime import _copy_p as device_put_p

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


def deflinear(primitive: Primitive, linear: Sequence[int] | None = None) -> None:
    """A primitive linear in its inputs (or jointly in the inputs at positions ``linear``;
    the others, such as indices, are passed as they are): the tangent is the primitive
    applied to the tangents."""

    def rule(primals: list, tangents: list, **params: Any) -> tuple[Any, Any]:
        out = primitive.bind(*primals, **params)
        args = [instantiate(t) if linear is None or i in linear else p
                for i, (p, t) in enumerate(zip(primals, tangents))]
        return out, primitive.bind(*args, **params)

    jvp_rules[primitive] = rule


def defzero(primitive: Primitive) -> None:
    """A primitive whose output does not change when its inputs change a little."""

    def rule(primals: list, tangents: list, **params: Any) -> tuple[Any, Any]:
        out = primitive.bind(*primals, **params)
        if primitive.multiple_results:
            return out, [Zero(tangent_aval(o.aval)) for o in out]
        return out, Zero(tangent_aval(out.aval))

    jvp_rules[primitive] = rule


def jvp_of(fun: Callable[[Any], Any], x: Any, t: Any) -> Any:
    """The tangent of ``fun(x)`` along ``t``, by running ``fun`` -- written with lax
    primitives that have rules -- through the JVP interpreter. For primitives defined by
    an algorithm (a tree of products, a scan) this is their derivative."""
    _, (tangent,) = ad.jvp_flat(lambda x: [fun(x)], [x], [t])
    return tangent


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


def _gaussian_term(scale: float) -> Term:
    """``scale`` · exp(-x²) dx: the derivatives of erf (2/√π) and erfc (-2/√π)."""
    return lambda t, out, x: lax.mul(_const(x, scale),
                                     lax.mul(t, lax.exp(lax.neg(lax.square(x)))))


defjvp(special.erf_p, _gaussian_term(2 / np.sqrt(np.pi)))
defjvp(special.erfc_p, _gaussian_term(-2 / np.sqrt(np.pi)))
# erf_inv' = 1 / erf'(erf_inv x) = √π/2 · exp(out²).
defjvp(special.erf_inv_p, lambda t, out, x: lax.mul(
    _const(x, np.sqrt(np.pi) / 2), lax.mul(t, lax.exp(lax.square(out)))))
defjvp(special.lgamma_p, lambda t, out, x: lax.mul(t, lax.digamma(x)))


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
           shapes.split_p, shapes.tile_p, shapes.copy_p, device_put_p,
           reductions.reduce_sum_p, reductions.cumsum_p, parallel.psum_p):
    deflinear(_p)
defzero(parallel.axis_index_p)  # an integer: no tangent


# ---------------------------------------------------------------------------------------
# Slicing, gather and scatter: linear in the operand (and updates), never in the indices
# ---------------------------------------------------------------------------------------

deflinear(slicing.slice_p)
deflinear(slicing.dynamic_slice_p, linear=(0,))
deflinear(slicing.dynamic_update_slice_p, linear=(0, 1))
deflinear(slicing.scatter_add_p, linear=(0, 2))
deflinear(slicing.scatter_sub_p, linear=(0, 2))


def _gather_rule(primals: list, tangents: list, **params: Any) -> tuple[Any, Any]:
    """Gather the tangent the same way; out-of-bounds windows read 0, not ``fill_value``."""
    (x, indices), (t, _) = primals, tangents
    out = slicing.gather_p.bind(x, indices, **params)
    fill = 0 if params["mode"] == slicing.GatherScatterMode.FILL_OR_DROP else None
    return out, slicing.gather_p.bind(t, indices, **{**params, "fill_value": fill})


jvp_rules[slicing.gather_p] = _gather_rule


def gather_of_scatter(x: Any, indices: Any, updates_shape: tuple[int, ...],
                      dimension_numbers: slicing.ScatterDimensionNumbers,
                      mode: slicing.GatherScatterMode) -> Any:
    """Read from ``x`` the windows a scatter with these parameters writes to: the result is
    shaped like the updates. (The transpose of scatter-add with respect to its updates.)"""
    dn = dimension_numbers
    gather_dn = slicing.GatherDimensionNumbers(
        offset_dims=dn.update_window_dims, collapsed_slice_dims=dn.inserted_window_dims,
        start_index_map=dn.scatter_dims_to_operand_dims,
        operand_batching_dims=dn.operand_batching_dims,
        start_indices_batching_dims=dn.scatter_indices_batching_dims)
    sizes = slicing._scatter_window(x.shape, updates_shape, dn)
    fill = 0 if mode == slicing.GatherScatterMode.FILL_OR_DROP else None
    return slicing.gather(x, indices, gather_dn, sizes, mode=mode, fill_value=fill)



def _rescatter(scatter_fn: Callable, x: Any, indices: Any, updates: Any, params: dict) -> Any:
    """``scatter_fn`` (a public lax scatter) with the layout and mode of ``params``."""
    return scatter_fn(x, indices, updates, params["dimension_numbers"],
                      indices_are_sorted=params["indices_are_sorted"],
                      unique_indices=params["unique_indices"], mode=params["mode"])


def _update_ids(shape: tuple[int, ...], window_dims: tuple[int, ...]) -> Any:
    """1, 2, 3, ... for the updates of a scatter: one id per update window."""
    ids_shape = tuple(1 if d in window_dims else n for d, n in enumerate(shape))
    count = int(np.prod(ids_shape, dtype=np.int64))
    ids = lax.add(lax.iota(np.uint32, count), lax.convert_element_type(1, np.uint32))
    return lax.broadcast_in_dim(lax.reshape(ids, ids_shape), shape, tuple(range(len(shape))))


def _scatter_rule(primals: list, tangents: list, **params: Any) -> tuple[Any, Any]:
    """scatter: each element of the result comes from the operand or from the one update
    that won its position. With unique indices that is one joint linear map. Otherwise
    the winners are found by scattering update *ids* and reading them back; the tangent
    is then a scatter-add of the winners' tangents into the operand's tangent, zeroed
    where it was overwritten (as JAX does it)."""
    (x, indices, updates), (t_x, _, t_u) = primals, tangents
    if params["update_jaxpr"] is not None:
        raise NotImplementedError("scatter_apply JVP not implemented")
    out = slicing.scatter_p.bind(x, indices, updates, **params)
    t_x, t_u = instantiate(t_x), instantiate(t_u)
    if params["unique_indices"]:
        return out, slicing.scatter_p.bind(t_x, indices, t_u, **params)
    dn = params["dimension_numbers"]
    ids = _update_ids(updates.shape, dn.update_window_dims)
    written = _rescatter(lax.scatter, lax.full(x.shape, 0, np.uint32), indices, ids, params)
    won = lax.eq(ids, gather_of_scatter(written, indices, updates.shape, dn, params["mode"]))
    kept = lax.eq(written, lax.full_like(written, 0))
    t_x = lax.select(kept, t_x, _zeros(t_x))
    t_u = lax.select(won, t_u, _zeros(t_u))
    return out, _rescatter(lax.scatter_add, t_x, indices, t_u, params)


jvp_rules[slicing.scatter_p] = _scatter_rule


def _scatter_mul_rule(primals: list, tangents: list, **params: Any) -> tuple[Any, Any]:
    """Linear in the operand. In the updates JAX differentiates only with unique indices
    (then each element is multiplied by at most one update)."""
    (x, indices, updates), (t_x, _, t_u) = primals, tangents
    out = slicing.scatter_mul_p.bind(x, indices, updates, **params)
    tangent: Any = Zero(tangent_aval(out.aval))
    if type(t_u) is not Zero:
        if not params["unique_indices"]:
            raise NotImplementedError(
                "scatter_mul gradients are only implemented if `unique_indices=True`")
        spread = _rescatter(lax.scatter_add, _zeros(x), indices, t_u, params)
        tangent = lax.mul(x, spread)
    if type(t_x) is not Zero:
        tangent = add_tangents(tangent, slicing.scatter_mul_p.bind(t_x, indices, updates,
                                                                   **params))
    return out, tangent


jvp_rules[slicing.scatter_mul_p] = _scatter_mul_rule


def _scatter_extremum_rule(primitive: Primitive) -> Callable[..., tuple[Any, Any]]:
    """scatter-max/min: every element's tangent is the average of the tangents of the
    values that tie for the result there (the operand's and the updates'), as for max."""

    def rule(primals: list, tangents: list, **params: Any) -> tuple[Any, Any]:
        (x, indices, updates), (t_x, _, t_u) = primals, tangents
        out = primitive.bind(x, indices, updates, **params)
        t_x, t_u = instantiate(t_x), instantiate(t_u)
        dn, mode = params["dimension_numbers"], params["mode"]
        from_x = lax.convert_element_type(lax.eq(x, out), x.dtype)
        from_u = lax.convert_element_type(
            lax.eq(updates, gather_of_scatter(out, indices, updates.shape, dn, mode)), x.dtype)
        count = lax.add(from_x, _rescatter(lax.scatter_add, _zeros(x), indices, from_u, params))
        total = lax.add(lax.mul(t_x, from_x), _rescatter(
            lax.scatter_add, _zeros(x), indices, lax.mul(t_u, from_u), params))
        return out, lax.div(total, count)

    return rule


jvp_rules[slicing.scatter_max_p] = _scatter_extremum_rule(slicing.scatter_max_p)
jvp_rules[slicing.scatter_min_p] = _scatter_extremum_rule(slicing.scatter_min_p)


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
# Matrix decompositions (on the last two axes, batched over the others)
# ---------------------------------------------------------------------------------------


def _matmul(a: Any, b: Any) -> Any:
    """Batched matrix product of ``(..., m, k)`` and ``(..., k, n)``."""
    batch = tuple(range(a.ndim - 2))
    return lax.dot_general(a, b, (((a.ndim - 1,), (b.ndim - 2,)), (batch, batch)))


def _H(x: Any) -> Any:
    return matrix_transpose(x, conjugate=True)


def _triangle(x: Any, lower: bool, k: int = 0) -> Any:
    """The lower (``j <= i + k``) or upper (``j >= i + k``) triangle of the last two axes;
    zeros elsewhere."""
    rows = lax.broadcasted_iota(np.int32, x.shape, x.ndim - 2)
    cols = lax.broadcasted_iota(np.int32, x.shape, x.ndim - 1)
    shifted = lax.add(rows, lax.convert_element_type(k, np.int32))
    keep = lax.le(cols, shifted) if lower else lax.ge(cols, shifted)
    return lax.select(keep, x, _zeros(x))


def _eye_like(x: Any) -> Any:
    """Identity matrices of ``x``'s (square) shape and dtype."""
    rows = lax.broadcasted_iota(np.int32, x.shape, x.ndim - 2)
    cols = lax.broadcasted_iota(np.int32, x.shape, x.ndim - 1)
    return lax.convert_element_type(lax.eq(rows, cols), x.dtype)


def _diagonal(x: Any) -> Any:
    """The diagonal of square matrices, as the last axis."""
    return lax.reduce_sum(lax.mul(x, _eye_like(x)), (x.ndim - 1,))


def _as_rows(v: Any, n: int) -> Any:
    """``v[..., None, :]`` stretched to ``n`` rows: matrices whose rows all equal ``v``."""
    batch = v.ndim - 1
    return lax.broadcast_in_dim(v, (*v.shape[:-1], n, v.shape[-1]),
                                (*range(batch), batch + 1))


def _as_columns(v: Any, n: int) -> Any:
    """``v[..., :, None]`` stretched to ``n`` columns."""
    batch = v.ndim - 1
    return lax.broadcast_in_dim(v, (*v.shape[:-1], v.shape[-1], n), (*range(batch), batch))


def _real_part(x: Any) -> Any:
    return lax.real(x) if _is_complex(x) else x


def _cholesky_rule(primals: list, tangents: list) -> tuple[Any, Any]:
    """A = L Lᴴ gives dA = dL Lᴴ + L dLᴴ, so L⁻¹ dA L⁻ᴴ = L⁻¹dL + (L⁻¹dL)ᴴ, whose lower
    triangle (with half the diagonal) is L⁻¹ dL, lower triangular."""
    (a,), (da,) = primals, tangents
    chol = linalg.cholesky_p.bind(a)
    solve = lambda b, **kw: linalg.triangular_solve(chol, b, lower=True, **kw)  # noqa: E731
    right = solve(instantiate(da), left_side=False, transpose_a=True, conjugate_a=True)
    middle = solve(right, left_side=True)
    halved = lax.div(_triangle(middle, lower=True), lax.add(_const(a, 1), _eye_like(a)))
    return chol, _matmul(chol, halved)


jvp_rules[linalg.cholesky_p] = _cholesky_rule


def _eigh_rule(primals: list, tangents: list, **params: Any) -> list[Any]:
    """For distinct eigenvalues: dw = diag(Vᴴ dA V), dV = V (F ∘ Vᴴ dA V) with
    F[i, j] = 1 / (w[j] - w[i]) off the diagonal and 0 on it."""
    (a,), (da,) = primals, tangents
    v, w = linalg.eigh_p.bind(a, **params)
    n = a.shape[-1]
    w_full = lax.convert_element_type(w, a.dtype)
    eye = _eye_like(a)
    differences = lax.sub(_as_rows(w_full, n), _as_columns(w_full, n))
    f = lax.sub(lax.integer_pow(lax.add(eye, differences), -1), eye)
    projected = _matmul(_matmul(_H(v), instantiate(da)), v)
    dv = _matmul(v, lax.mul(f, projected))
    dw = _diagonal(_real_part(projected))
    return [v, w], [dv, dw]


jvp_rules[linalg.eigh_p] = _eigh_rule


def _thin_qr_jvp(q: Any, r: Any, dx: Any) -> tuple[Any, Any]:
    """X = QR with Q m×n (m ≥ n): with C = Qᴴ dX R⁻¹, Qᴴ dQ is the skew-Hermitian matrix
    Ω built from the strictly lower triangle of C, and dR = (C - Ω) R."""
    dx_rinv = linalg.triangular_solve(r, dx)  # dX R⁻¹ (a right-side solve)
    c = _matmul(_H(q), dx_rinv)
    below = _triangle(c, lower=True, k=-1)
    omega = lax.sub(below, _H(below))
    if _is_complex(c):  # the imaginary part of the diagonal of C belongs to Ω
        omega = lax.add(omega, lax.mul(_eye_like(c), lax.sub(c, lax.complex(
            lax.real(c), _zeros(lax.real(c))))))
    dq = lax.add(_matmul(q, lax.sub(omega, c)), dx_rinv)
    dr = _matmul(lax.sub(c, omega), r)
    return dq, dr


def _qr_rule(primals: list, tangents: list, *, pivoting: bool, full_matrices: bool,
             use_magma: Any) -> tuple[list[Any], list[Any]]:
    (x,), (dx,) = primals, tangents
    q, r = linalg.qr_p.bind(x, pivoting=pivoting, full_matrices=full_matrices,
                            use_magma=use_magma)
    dx = instantiate(dx)
    m, n = x.shape[-2:]
    if m < n:  # X = Q [R1 R2]: R1 from the square QR of X1, and R2 = Qᴴ X2
        x2 = lax.slice_in_dim(x, m, n, 1, x.ndim - 1)
        dx1 = lax.slice_in_dim(dx, 0, m, 1, x.ndim - 1)
        dx2 = lax.slice_in_dim(dx, m, n, 1, x.ndim - 1)
        dq, dr1 = _thin_qr_jvp(q, lax.slice_in_dim(r, 0, m, 1, x.ndim - 1), dx1)
        dr2 = lax.add(_matmul(_H(dq), x2), _matmul(_H(q), dx2))
        return [q, r], [dq, lax.concatenate([dr1, dr2], x.ndim - 1)]
    if not full_matrices or m == n:
        dq, dr = _thin_qr_jvp(q, r, dx)
        return [q, r], [dq, dr]
    # Tall with full_matrices: the first n columns of Q as in the thin case; the other
    # m - n columns are LAPACK's (Householder) completion, whose derivative is given by
    # Roberts & Roberts (arXiv:2409.13374, eqs. 32-33).
    rows, cols = x.ndim - 2, x.ndim - 1
    q_mn, q_mp = lax.slice_in_dim(q, 0, n, 1, cols), lax.slice_in_dim(q, n, m, 1, cols)
    dq_mn, dr_nn = _thin_qr_jvp(q_mn, lax.slice_in_dim(r, 0, n, 1, rows), dx)
    q_nn, q_pn = lax.slice_in_dim(q_mn, 0, n, 1, rows), lax.slice_in_dim(q_mn, n, m, 1, rows)
    dq_nn, dq_pn = (lax.slice_in_dim(dq_mn, 0, n, 1, rows),
                    lax.slice_in_dim(dq_mn, n, m, 1, rows))
    from minijax.numpy.linalg import solve  # (jnp is built on lax: import it late)

    z_pn_h = solve(_H(lax.sub(q_nn, _eye_like(q_nn))), _H(q_pn))  # Z = Q_pn (Q_nn - I)⁻¹
    z_pn = _H(z_pn_h)
    dq_mp = lax.sub(_matmul(dq_mn, z_pn_h),
                    _matmul(lax.add(q_mn, _matmul(q_mp, z_pn)),
                            _H(lax.sub(dq_pn, _matmul(z_pn, dq_nn)))))
    zeros = lax.full((*x.shape[:-2], m - n, n), 0, x.dtype)
    return [q, r], [lax.concatenate([dq_mn, dq_mp], cols),
                    lax.concatenate([dr_nn, zeros], rows)]


jvp_rules[linalg.qr_p] = _qr_rule


def _svd_rule(primals: list, tangents: list, *, full_matrices: bool, compute_uv: bool,
              subset_by_index: Any, algorithm: Any) -> tuple[list[Any], list[Any]]:
    """With dS = Uᴴ dA V: ds = Re diag(dS); dU and dV mix dS with 1/(sⱼ² - sᵢ²) off the
    diagonal, plus, for non-square A, the parts of dA outside the span of U or V."""
    (a,), (da,) = primals, tangents
    s, u, vh = linalg.svd_p.bind(a, full_matrices=False, compute_uv=True,
                                 subset_by_index=subset_by_index, algorithm=algorithm)
    m, n = a.shape[-2:]
    if compute_uv and full_matrices and m != n:
        raise NotImplementedError(
            "Singular value decomposition JVP not implemented for full matrices")
    da = instantiate(da)
    v = _H(vh)
    ds_matrix = _matmul(_matmul(_H(u), da), v)
    ds = _diagonal(_real_part(ds_matrix))
    if not compute_uv:
        return [s], [ds]
    k = s.shape[-1]
    rows, columns = _as_rows(s, k), _as_columns(s, k)
    eye = _eye_like(rows)
    f = lax.sub(lax.div(lax.full_like(rows, 1),
                        lax.add(lax.mul(lax.add(rows, columns), lax.sub(rows, columns)), eye)),
                eye)
    f, s_rows, s_columns = (lax.convert_element_type(z, a.dtype) for z in (f, rows, columns))
    ds_s = lax.mul(s_rows, ds_matrix)  # dS diag(s)
    s_ds = lax.mul(s_columns, ds_matrix)  # diag(s) dS
    nonzero = lax.select(lax.eq(s, _zeros(s)), lax.full_like(s, 1), s)
    s_inv = lax.select(lax.eq(s, _zeros(s)), _zeros(s), lax.div(lax.full_like(s, 1), nonzero))
    s_inv = lax.convert_element_type(lax.mul(_as_rows(s_inv, k), eye), a.dtype)
    du_diagonal = lax.mul(lax.mul(_const(a, 0.5), lax.sub(ds_matrix, _H(ds_matrix))), s_inv)
    du = _matmul(u, lax.add(lax.mul(f, lax.add(ds_s, _H(ds_s))), du_diagonal))
    dv = _matmul(v, lax.mul(f, lax.add(s_ds, _H(s_ds))))
    s_by_row = _as_rows(lax.convert_element_type(s, a.dtype), m if m > n else n)
    if m > n:
        dav = _matmul(da, v)
        outside = lax.sub(dav, _matmul(u, _matmul(_H(u), dav)))
        du = lax.add(du, lax.div(outside, s_by_row))
    if n > m:
        dahu = _matmul(_H(da), u)
        outside = lax.sub(dahu, _matmul(v, _matmul(vh, dahu)))
        dv = lax.add(dv, lax.div(outside, s_by_row))
    return [s, u, vh], [ds, du, _H(dv)]


jvp_rules[linalg.svd_p] = _svd_rule


def _permute_rows(x: Any, permutation: Any) -> Any:
    """``x[..., permutation, :]``, as a product with a permutation matrix (linear in x)."""
    m = x.shape[-2]
    shape = (*permutation.shape, m)
    rows = lax.broadcast_in_dim(permutation, shape, tuple(range(permutation.ndim)))
    matrix = lax.eq(rows, lax.broadcasted_iota(permutation.dtype, shape, len(shape) - 1))
    return _matmul(lax.convert_element_type(matrix, x.dtype), x)


def _pad_last_two(x: Any, rows: tuple[int, int], columns: tuple[int, int]) -> Any:
    config = [(0, 0, 0)] * (x.ndim - 2) + [(*rows, 0), (*columns, 0)]
    return lax.pad(x, _const(x, 0), config)


def _lu_rule(primals: list, tangents: list) -> tuple[list[Any], list[Any]]:
    """P A = L U: with dA permuted, L⁻¹ P dA U⁻¹ = L⁻¹dL + dU U⁻¹ splits into a strictly
    lower part (giving dL) and an upper part (giving dU); ``lu`` stores both."""
    (a,), (da,) = primals, tangents
    lu, pivots, permutation = linalg.lu_p.bind(a)
    m, n = a.shape[-2:]
    k = min(m, n)
    last = a.ndim - 1
    ell = _pad_last_two(_triangle(lax.slice_in_dim(lu, 0, k, 1, last), True, -1),
                        (0, 0), (0, m - k))
    ell = lax.add(ell, _eye_like(ell))
    u = _pad_last_two(_triangle(lax.slice_in_dim(lu, 0, k, 1, last - 1), False),
                      (0, n - k), (0, 0))
    u = lax.add(u, _pad_last_two(_eye_like(lax.full((*a.shape[:-2], n - k, n - k), 0,
                                                     a.dtype)), (k, 0), (k, 0)))
    x = _permute_rows(instantiate(da), permutation)
    lx = linalg.triangular_solve(ell, x, left_side=True, lower=True, unit_diagonal=True)
    lxu = linalg.triangular_solve(u, lx, left_side=False, lower=False)
    dlu = lax.add(_matmul(ell, _triangle(lxu, True, -1)), _matmul(_triangle(lxu, False), u))
    zeros = [Zero(tangent_aval(p.aval)) for p in (pivots, permutation)]
    return [lu, pivots, permutation], [dlu, *zeros]


jvp_rules[linalg.lu_p] = _lu_rule


def _triangular_solve_a_term(t: Any, out: Any, a: Any, b: Any, *, left_side: bool,
                             lower: bool, transpose_a: bool, conjugate_a: bool,
                             unit_diagonal: bool) -> Any:
    """op(A) X = B gives op(A) dX = -op(dA) X: one more solve (in whichever order makes
    the product cheaper). Only the triangle of dA that the solve reads counts."""
    params = dict(left_side=left_side, lower=lower, transpose_a=transpose_a,
                  conjugate_a=conjugate_a, unit_diagonal=unit_diagonal)
    da = lax.neg(_triangle(t, lower, (-1 if lower else 1) if unit_diagonal else 0))
    if transpose_a:
        da = matrix_transpose(da)
    if conjugate_a and _is_complex(da):
        da = lax.conj(da)
    inverse = lambda rhs: linalg.triangular_solve_p.bind(a, rhs, **params)  # noqa: E731
    m, n = b.shape[-2:]
    if left_side:
        return inverse(_matmul(da, out)) if m > n else _matmul(inverse(da), out)
    return inverse(_matmul(out, da)) if m < n else _matmul(out, inverse(da))


defjvp(linalg.triangular_solve_p, _triangular_solve_a_term,
       lambda t, out, a, b, **params: linalg.triangular_solve_p.bind(a, t, **params))


# ---------------------------------------------------------------------------------------
# Sorting: the tangents follow the values
# ---------------------------------------------------------------------------------------


def take_along_axis(x: Any, indices: Any, axis: int) -> Any:
    """``x`` read at ``indices`` along ``axis`` (all other axes matched one to one), as a
    gather with batching dimensions: what carries tangents through a permutation."""
    batch = tuple(d for d in range(x.ndim) if d != axis)
    dn = slicing.GatherDimensionNumbers(
        offset_dims=(), collapsed_slice_dims=(axis,), start_index_map=(axis,),
        operand_batching_dims=batch, start_indices_batching_dims=batch)
    index_vectors = lax.broadcast_in_dim(indices, (*indices.shape, 1), tuple(range(x.ndim)))
    return slicing.gather(x, index_vectors, dn, (1,) * x.ndim,
                          mode=slicing.GatherScatterMode.PROMISE_IN_BOUNDS)


def _sort_rule(primals: list, tangents: list, *, dimension: int, is_stable: bool,
               num_keys: int) -> tuple[list[Any], list[Any]]:
    """Sort an ``iota`` along with the operands to learn the permutation, then apply it
    to every tangent."""
    position = lax.broadcasted_iota(np.int32, primals[0].shape, dimension)
    *outs, permutation = sorting.sort_p.bind(*primals, position, dimension=dimension,
                                             is_stable=is_stable, num_keys=num_keys)
    tangents_out = [Zero(tangent_aval(o.aval)) if type(t) is Zero
                    else take_along_axis(t, permutation, dimension)
                    for o, t in zip(outs, tangents)]
    return outs, tangents_out


jvp_rules[sorting.sort_p] = _sort_rule


def _top_k_rule(primals: list, tangents: list, *, k: int, axis: int
                ) -> tuple[list[Any], list[Any]]:
    (x,), (t,) = primals, tangents
    values, indices = sorting.top_k_p.bind(x, k=k, axis=axis)
    return [values, indices], [take_along_axis(t, indices, axis),
                               Zero(tangent_aval(indices.aval))]


jvp_rules[sorting.top_k_p] = _top_k_rule


# ---------------------------------------------------------------------------------------
# debug.print
# ---------------------------------------------------------------------------------------


def _debug_print_rule(primals: list, tangents: list, **params: Any) -> tuple[list, list]:
    """A print shows the primal values, as JAX's does; it has no results, so no tangents."""
    return debug.debug_print_p.bind(*primals, **params), []


jvp_rules[debug.debug_print_p] = _debug_print_rule
