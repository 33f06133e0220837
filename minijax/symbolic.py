"""From programs to formulas: a jaxpr of scalar elementwise primitives as a SymPy expression.

Symbolic differentiation works on formulas, automatic differentiation on programs. This
module goes from one to the other: trace a Python function into a jaxpr (the program
minijax would run), then read each equation as a formula, with one rule per primitive
(:data:`sympy_rules`). SymPy can then differentiate, simplify and print *the same
program* that minijax evaluates::

    >>> to_sympy(lambda x, y: jnp.sin(x) * y + 1.0, "x", "y")
    y*sin(x) + 1

Only scalar programs on floating-point (and boolean) values are converted: a formula has
no shapes, and integer arithmetic (division rounding toward zero, overflow) has no SymPy
counterpart. A primitive without a rule raises :class:`UnsupportedPrimitiveError`
naming it.

``import minijax`` does not import this module, so SymPy is loaded only by
``import minijax.symbolic``: minijax itself starts fast and does not need SymPy.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import sympy as sp

from minijax import api, dtypes, lax, tree_util
from minijax.core import Primitive, ShapedArray
from minijax.jaxpr import Atom, ClosedJaxpr, Jaxpr, Literal, Var

__all__ = ["UnsupportedPrimitiveError", "jaxpr_to_sympy", "sympy_rules", "to_sympy"]


class UnsupportedPrimitiveError(NotImplementedError):
    """The jaxpr uses a primitive that has no rule in :data:`sympy_rules`."""


def _same(x: sp.Basic, **params: Any) -> sp.Basic:
    """Shape-only primitives (broadcast, reshape, copy) do nothing to a scalar."""
    return x


def _convert_element_type(x: sp.Basic, new_dtype: np.dtype, weak_type: bool) -> sp.Basic:
    """A change of float precision does not change the formula; True/False become 1/0."""
    if isinstance(x, sp.logic.boolalg.Boolean):
        return sp.Piecewise((sp.Integer(1), x), (sp.Integer(0), True))
    return x


def _select_n(which: sp.Basic, *cases: sp.Basic) -> sp.Basic:
    """``cases[which]``: with a boolean ``which``, False picks ``cases[0]``."""
    if len(cases) == 1:
        return cases[0]
    return sp.Piecewise((cases[1], which), (cases[0], True))


def _cbrt(x: sp.Basic) -> sp.Basic:
    """The real cube root (SymPy's ``cbrt`` of a negative number is complex)."""
    return sp.sign(x) * sp.Abs(x) ** sp.Rational(1, 3)


#: One rule per primitive: ``rule(*operand_expressions, **params) -> expression``.
sympy_rules: dict[Primitive, Callable[..., sp.Basic]] = {
    # arithmetic
    lax.add_p: operator.add,
    lax.sub_p: operator.sub,
    lax.mul_p: operator.mul,
    lax.div_p: operator.truediv,
    lax.neg_p: operator.neg,
    lax.pow_p: operator.pow,
    lax.integer_pow_p: lambda x, *, y: x**y,
    lax.square_p: lambda x: x**2,
    lax.sqrt_p: sp.sqrt,
    lax.rsqrt_p: lambda x: 1 / sp.sqrt(x),
    lax.cbrt_p: _cbrt,
    lax.abs_p: sp.Abs,
    lax.sign_p: sp.sign,
    lax.floor_p: sp.floor,
    lax.ceil_p: sp.ceiling,
    lax.max_p: sp.Max,
    lax.min_p: sp.Min,
    lax.clamp_p: lambda lo, x, hi: sp.Min(sp.Max(x, lo), hi),
    # exponentials and logarithms
    lax.exp_p: sp.exp,
    lax.exp2_p: lambda x: 2**x,
    lax.expm1_p: lambda x: sp.exp(x) - 1,
    lax.log_p: sp.log,
    lax.log1p_p: lambda x: sp.log(1 + x),
    lax.logistic_p: lambda x: 1 / (1 + sp.exp(-x)),
    # trigonometric and hyperbolic functions
    lax.sin_p: sp.sin,
    lax.cos_p: sp.cos,
    lax.tan_p: sp.tan,
    lax.asin_p: sp.asin,
    lax.acos_p: sp.acos,
    lax.atan_p: sp.atan,
    lax.atan2_p: sp.atan2,
    lax.sinh_p: sp.sinh,
    lax.cosh_p: sp.cosh,
    lax.tanh_p: sp.tanh,
    lax.asinh_p: sp.asinh,
    lax.acosh_p: sp.acosh,
    lax.atanh_p: sp.atanh,
    # comparisons and logic (on booleans: integer values are rejected before rules run)
    lax.eq_p: sp.Eq,
    lax.ne_p: sp.Ne,
    lax.lt_p: sp.Lt,
    lax.le_p: sp.Le,
    lax.gt_p: sp.Gt,
    lax.ge_p: sp.Ge,
    lax.and_p: sp.And,
    lax.or_p: sp.Or,
    lax.xor_p: sp.Xor,
    lax.not_p: sp.Not,
    # selection, conversion and shape-only primitives
    lax.select_n_p: _select_n,
    lax.convert_element_type_p: _convert_element_type,
    lax.broadcast_in_dim_p: _same,
    lax.reshape_p: _same,
    lax.squeeze_p: _same,
    lax.copy_p: _same,
}

#: Params that hold the jaxpr of a call-like primitive (``jit``, ``custom_jvp_call``):
#: such an equation is converted by converting the jaxpr it calls.
_CALLED_JAXPR_PARAMS = ("jaxpr", "call_jaxpr")


def jaxpr_to_sympy(closed_jaxpr: ClosedJaxpr, symbols: Sequence[sp.Symbol | str]
                   ) -> list[sp.Basic]:
    """The outputs of ``closed_jaxpr`` as SymPy expressions of ``symbols`` (its inputs).

    ``symbols`` are SymPy symbols or names (which become real symbols). Returns one
    expression per output of the jaxpr.
    """
    jaxpr = closed_jaxpr.jaxpr
    if len(symbols) != len(jaxpr.invars):
        raise TypeError(
            f"jaxpr_to_sympy got {len(symbols)} symbols for a jaxpr with "
            f"{len(jaxpr.invars)} inputs"
        )
    consts = [_number(value, var.aval) for var, value in zip(jaxpr.constvars,
                                                               closed_jaxpr.consts)]
    inputs = [_as_symbol(s) for s in symbols]
    for var in jaxpr.invars:
        _check_scalar_value(var.aval, "an input")
    return _convert(jaxpr, consts, inputs)


def _convert(jaxpr: Jaxpr, consts: list[sp.Basic], inputs: list[sp.Basic]) -> list[sp.Basic]:
    """Evaluate ``jaxpr`` with expressions for values: each equation applies its rule."""
    env: dict[Var, sp.Basic] = {}

    def read(atom: Atom) -> sp.Basic:
        return _number(atom.value, atom.aval) if type(atom) is Literal else env[atom]

    env.update(zip(jaxpr.constvars, consts))
    env.update(zip(jaxpr.invars, inputs))
    for eqn in jaxpr.eqns:
        name = eqn.primitive.name
        for var in eqn.outvars:
            _check_scalar_value(var.aval, f"the primitive {name!r}")
        args = [read(atom) for atom in eqn.invars]
        called = _called_jaxpr(eqn.params)
        if called is not None:
            outs = _convert(called.jaxpr, [_number(c, v.aval) for v, c in
                                           zip(called.jaxpr.constvars, called.consts)], args)
        elif eqn.primitive in sympy_rules:
            outs = [sympy_rules[eqn.primitive](*args, **eqn.params)]
        else:
            raise UnsupportedPrimitiveError(
                f"jaxpr_to_sympy has no rule for the primitive {name!r} (the primitives it "
                "converts are the keys of minijax.symbolic.sympy_rules)"
            )
        env.update(zip(eqn.outvars, outs))
    return [read(atom) for atom in jaxpr.outvars]


def _called_jaxpr(params: dict[str, Any]) -> ClosedJaxpr | None:
    for key in _CALLED_JAXPR_PARAMS:
        value = params.get(key)
        if isinstance(value, ClosedJaxpr):
            return value
        if isinstance(value, Jaxpr):
            return ClosedJaxpr(value, [])
    return None


def _check_scalar_value(aval: ShapedArray, what: str) -> None:
    floating = dtypes.issubdtype(aval.dtype, np.floating)
    if aval.shape != () or not (floating or aval.dtype == np.bool_):
        raise TypeError(
            f"jaxpr_to_sympy converts programs on scalar floats (and booleans), but {what} "
            f"has type {aval.str_short()}"
        )


def _as_symbol(symbol: sp.Symbol | str) -> sp.Basic:
    return sp.Symbol(symbol, real=True) if isinstance(symbol, str) else symbol


def _number(value: Any, aval: ShapedArray) -> sp.Basic:
    """A literal as a SymPy number.

    Short decimals (``0.5``, ``0.1``, ``2.0``) were almost surely typed by a person: they
    become exact rationals, so that ``x ** 0.5`` reads as ``sqrt(x)``. Long ones, such as
    float32's ``3.1415927``, stay floating-point numbers.
    """
    if aval.shape != ():
        _check_scalar_value(aval, "a constant")
    value = np.asarray(value).astype(aval.dtype)[()]
    if aval.dtype == np.bool_:
        return sp.true if value else sp.false
    if dtypes.issubdtype(aval.dtype, np.integer):
        return sp.Integer(int(value))
    if not np.isfinite(value):
        return sp.sympify(float(value))
    text = str(value)  # the shortest decimal that reads back as the same number
    digits = text.split("e")[0].replace("-", "").replace(".", "").strip("0")
    return sp.Rational(text) if len(digits) <= 6 else sp.Float(text)


def to_sympy(fun: Callable[..., Any], *arg_names: sp.Symbol | str) -> Any:
    """Trace ``fun`` on scalar float arguments (``make_jaxpr``) and return its output as SymPy.

    ``arg_names`` name ``fun``'s positional arguments (strings become real symbols).
    A function returning a tuple of scalars gives a tuple of expressions.
    """
    symbols = [_as_symbol(name) for name in arg_names]
    scalar = api.ShapeDtypeStruct((), dtypes.canonicalize_dtype(np.float64))
    closed, out_shape = api.make_jaxpr(fun, return_shape=True)(*[scalar] * len(symbols))
    out_tree = tree_util.tree_structure(out_shape)
    return tree_util.tree_unflatten(out_tree, jaxpr_to_sympy(closed, symbols))
