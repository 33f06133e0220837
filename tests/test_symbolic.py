"""``minijax.symbolic``: traced programs become SymPy expressions that mean the same thing.

Round trip: for each program, the SymPy expression of its jaxpr, evaluated at sample
points, equals minijax's eager evaluation of the program. Derivatives: SymPy's
derivative of that expression agrees with numerical derivatives (``minijax.test_util``)
of the eager program. Plus the errors, literals, and SymPy staying out of ``import minijax``.
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
import sympy as sp

import minijax
import minijax.numpy as jnp
from minijax import lax, test_util
from minijax.core import Primitive
from minijax.symbolic import UnsupportedPrimitiveError, jaxpr_to_sympy, to_sympy

# name: (program, sample points (one tuple of arguments each), differentiable there)
PROGRAMS = {
    "polynomial": (lambda x: 3.0 * x**3 - 2.0 * x + 1.0, [(0.5,), (-1.5,)], True),
    "sin_exp": (lambda x: jnp.sin(x) * jnp.exp(-0.5 * x**2), [(0.3,), (2.0,)], True),
    "two_inputs": (lambda x, y: jnp.log(x) + x * y - jnp.sin(y), [(2.0, 5.0), (0.5, -1.0)],
                   True),
    "quotient": (lambda x: jnp.exp(jnp.sin(x)) / (1.0 + x**2), [(1.0,), (-0.7,)], True),
    "sqrt_pow": (lambda x: jnp.sqrt(x) + x**0.5 + x**1.5, [(0.25,), (3.0,)], True),
    "reciprocal": (lambda x: 1 / x + lax.rsqrt(x), [(0.5,), (4.0,)], True),
    "tanh_logistic": (lambda x: jnp.tanh(x) + lax.logistic(2.0 * x), [(0.1,), (-1.2,)], True),
    "hyperbolic": (lambda x: jnp.sinh(x) * jnp.cosh(x) - jnp.arcsinh(x), [(0.4,), (-0.9,)],
                   True),
    "inverse_trig": (lambda x: jnp.arcsin(x) + jnp.arccos(x / 2) + jnp.arctan(x),
                     [(0.3,), (-0.6,)], True),
    "tan_cos": (lambda x: jnp.tan(x) * jnp.cos(3.0 * x), [(0.2,), (1.0,)], True),
    "log1p_expm1": (lambda x: jnp.log1p(x) + jnp.expm1(-x) + jnp.exp2(x), [(0.5,), (2.0,)],
                    True),
    "relu": (lambda x: jnp.maximum(x, 0.0), [(1.5,), (-2.0,)], True),
    "leaky_relu_where": (lambda x: jnp.where(x > 0, x, 0.125 * x), [(1.5,), (-2.0,)], True),
    "clip": (lambda x: jnp.clip(x, -1.0, 1.0), [(0.5,), (3.0,), (-4.0,)], True),
    "abs_sign": (lambda x: jnp.abs(x) * jnp.sign(x) + jnp.abs(x), [(1.5,), (-2.5,)], True),
    "cbrt": (lambda x: jnp.cbrt(x), [(8.0,), (-27.0,)], True),
    "floor_ceil": (lambda x: jnp.floor(x) + jnp.ceil(x), [(1.5,), (-2.25,)], False),
    "min_max_two": (lambda x, y: jnp.minimum(x, y) * jnp.maximum(x, y), [(1.0, 2.0),
                                                                          (3.0, -1.0)], True),
    "atan2": (lambda x, y: jnp.arctan2(x, y), [(1.0, 2.0), (-1.0, -3.0)], True),
    "logaddexp": (lambda x: jnp.logaddexp(x, 1.0), [(0.5,), (-3.0,)], True),
    "hypot": (lambda x: jnp.hypot(x, 2.0), [(0.5,), (-3.0,)], True),
    "logical_where": (lambda x: jnp.where((x > 0) & (x < 2), x**2, -x), [(1.0,), (3.0,),
                                                                         (-1.0,)], True),
    "boolean_to_float": (lambda x: (x > 1.0).astype(jnp.float32) * x, [(2.0,), (0.5,)], True),
    "pow_of_inputs": (lambda x, y: x**y, [(2.0, 3.0), (0.5, 1.5)], True),
    "square_clamp": (lambda x: lax.clamp(0.0, jnp.square(x), 4.0), [(1.5,), (3.0,)], True),
}


def arg_names(program):
    return [f"x{i}" for i in range(program.__code__.co_argcount)]


def evaluate(expr, names, point):
    value = expr.subs({sp.Symbol(n, real=True): v for n, v in zip(names, point, strict=True)})
    return float(sp.N(value, 30))


@pytest.mark.parametrize("name", PROGRAMS)
def test_round_trip_matches_eager_evaluation(name):
    program, points, _ = PROGRAMS[name]
    names = arg_names(program)
    expr = to_sympy(program, *names)
    for point in points:
        eager = program(*[jnp.float32(v) for v in point])
        assert isinstance(eager, minijax.Array) and eager.dtype == np.float32
        np.testing.assert_allclose(evaluate(expr, names, point), float(eager), rtol=2e-6,
                                   atol=1e-6, err_msg=f"{name} at {point}: {expr}")


@pytest.fixture
def x64():
    minijax.config.update("jax_enable_x64", True)
    try:
        yield
    finally:
        minijax.config.update("jax_enable_x64", False)


@pytest.mark.parametrize("name", [n for n, p in PROGRAMS.items() if p[2]])
def test_sympy_derivatives_agree_with_numerical_derivatives(name, x64):
    program, points, _ = PROGRAMS[name]
    names = arg_names(program)
    expr = to_sympy(program, *names)
    for point in points:
        args = [jnp.asarray(v, jnp.float64) for v in point]
        for i, n in enumerate(names):
            symbolic = evaluate(sp.diff(expr, sp.Symbol(n, real=True)), names, point)
            partial = lambda t, i=i, args=args: program(*args[:i], t, *args[i + 1:])
            numerical = float(test_util.central_difference(partial, args[i]))
            assert symbolic == pytest.approx(numerical, rel=1e-7, abs=1e-7), (name, point, n)


def test_float64_programs_round_trip_to_float64_precision(x64):
    program = PROGRAMS["quotient"][0]
    expr = to_sympy(program, "x")
    np.testing.assert_allclose(evaluate(expr, ["x"], (1.0,)), float(program(1.0)), rtol=1e-14)


def test_jaxpr_of_make_jaxpr_converts_with_given_symbols():
    x, y = sp.Symbol("x", positive=True), sp.Symbol("y", real=True)  # "y" becomes real
    closed = minijax.make_jaxpr(lambda a, b: (jnp.sin(a) * b, a + b))(1.0, 2.0)
    assert jaxpr_to_sympy(closed, [x, "y"]) == [y * sp.sin(x), x + y]


def test_outputs_keep_their_structure():
    x = sp.Symbol("x", real=True)
    assert to_sympy(lambda v: (v * 2.0, [v + 1.0]), "x") == (2 * x, [x + 1])


def test_short_decimal_literals_become_exact_rationals():
    x = sp.Symbol("x", real=True)
    assert to_sympy(lambda v: v**0.5, "x") == sp.sqrt(x)
    assert to_sympy(lambda v: jnp.exp(-0.5 * v**2), "x") == sp.exp(-(x**2) / 2)
    assert to_sympy(lambda v: 0.1 * v, "x") == x / 10
    long = to_sympy(lambda v: jnp.pi * v, "x")
    assert long.coeff(x) == sp.Float("3.1415927")


def test_infinite_literals_become_sympy_infinities():
    x = sp.Symbol("x", real=True)
    assert to_sympy(lambda v: jnp.maximum(v, -jnp.inf), "x") == sp.Max(x, -sp.oo)


def test_unsupported_primitive_is_named():
    with pytest.raises(UnsupportedPrimitiveError,
                       match="no rule for the primitive 'rem' .*minijax.symbolic.sympy_rules"):
        to_sympy(lambda x: lax.rem(x, 2.0), "x")
    assert issubclass(UnsupportedPrimitiveError, NotImplementedError)


def test_non_scalar_and_integer_programs_are_rejected():
    with pytest.raises(TypeError, match=r"'broadcast_in_dim' has type f32\[3\]"):
        to_sympy(lambda x: jnp.ones(3) * x, "x")
    with pytest.raises(TypeError, match=r"'convert_element_type' has type i32\[\]"):
        to_sympy(lambda x: x.astype(jnp.int32), "x")
    closed = minijax.make_jaxpr(lambda v: v * 2.0)(np.ones(2, np.float32))
    with pytest.raises(TypeError, match=r"an input has type f32\[2\]"):
        jaxpr_to_sympy(closed, ["v"])
    with pytest.raises(TypeError, match="got 2 symbols for a jaxpr with 1 inputs"):
        jaxpr_to_sympy(closed, ["v", "w"])


def test_call_like_primitives_are_converted_through_the_jaxpr_they_call():
    # Stands for jit / custom_jvp_call: a primitive whose params hold the jaxpr it runs.
    call_p = Primitive("test_call")
    call_p.def_abstract_eval(lambda *avals, jaxpr: jaxpr.out_avals[0])
    inner = minijax.make_jaxpr(lambda a, b: jnp.sin(a) * b)(1.0, 2.0)
    closed = minijax.make_jaxpr(lambda v: call_p.bind(v, 3.0, jaxpr=inner) + 1.0)(1.0)
    x = sp.Symbol("x", real=True)
    assert jaxpr_to_sympy(closed, ["x"]) == [3 * sp.sin(x) + 1]


def test_import_minijax_does_not_import_sympy():
    code = "import sys, minijax; print('sympy' in sys.modules, 'matplotlib' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.split() == ["False", "False"]
