"""Printed jaxprs equal JAX's, character for character: nested ``jit`` (with its caller's
variable names), shared and long nested jaxprs printed once as ``let name = ... in``,
literals of every dtype, constvars, unused results, line breaking, control flow, the
``jnp`` functions JAX wraps in ``jit``, and ``debug.print``. Also ``eval_jaxpr`` and the
jaxpr type checker."""

from __future__ import annotations

import functools
import math

import numpy as np
import pytest

import minijax
from minijax import jaxpr as jaxpr_module
from tests.oracle import namespaces, x64_mode

jax = pytest.importorskip("jax")

F32 = np.float32
X = np.arange(6, dtype=F32).reshape(2, 3) / 7
W = np.arange(3, dtype=F32)


_JITTED: dict[tuple[str, str], object] = {}


def _jitted(n, name):
    """Jitted helpers, made once per library (so that their jaxprs are shared)."""
    key = (n.jax.__name__, name)
    if key in _JITTED:
        return _JITTED[key]
    helpers = {
        "g": lambda y: n.jnp.sin(y) + 1,
        "pair": lambda a, b: (a, a * b, 2.0, b, a * b),
        "two": lambda a: (a * 2, a * 3),
        "long": lambda y: functools.reduce(lambda acc, k: acc * k + 1.0, range(12), y),
    }
    fun = helpers[name]
    fun.__name__ = name
    _JITTED[key] = n.jax.jit(fun)
    return _JITTED[key]


def _long_scan(n, x):
    def body(c, _):
        for k in range(6):
            c = n.jnp.sin(c) * k + 1.0
        return c, None
    return n.lax.scan(body, x, None, length=3)[0]


def _many_outputs(n, x):
    return tuple(x + i for i in range(30))


def _debug_print(n, x):
    n.jax.debug.print("x = {x}, y={}", x * 2, x=x)
    return x + 1


PROGRAMS = {
    # nested jit
    "nested_jit": lambda n, x: _jitted(n, "g")(x) * 2,
    "nested_jit_twice_is_shared": lambda n, x: _jitted(n, "g")(_jitted(n, "g")(x)),
    "nested_jit_forwarding_and_literals": lambda n, x: _jitted(n, "pair")(x, 3.0),
    "nested_jit_unused_results": lambda n, x: _jitted(n, "pair")(x, x * 2)[1],
    "nested_jit_same_input_twice": lambda n, x: _jitted(n, "pair")(x, x),
    "nested_jit_shared_with_unused": lambda n, x: (_jitted(n, "two")(x + 1)[0]
                                                   + _jitted(n, "two")(x)[1]),
    "nested_jit_long_body": lambda n, x: _jitted(n, "long")(x) - 1,
    "nested_jit_captures_tracer": lambda n, x: n.jax.jit(lambda y: y + x)(1.0),
    "nested_jit_captures_constant": lambda n, x: n.jax.jit(lambda y: y * W)(x) + W,
    "nested_jit_donated": lambda n, x: n.jax.jit(lambda y: y + 1, donate_argnums=0)(x),
    "nested_jit_keep_unused": lambda n, x: n.jax.jit(lambda a, b: a + 1,
                                                     keep_unused=True)(x, x),
    "nested_jit_unused_argument": lambda n, x: n.jax.jit(lambda a, b: a + 1)(x, x),
    "nested_jit_inline": lambda n, x: n.jax.jit(lambda y: y * 2, inline=True)(x),
    "nested_jit_pytrees": lambda n, x: n.jax.jit(lambda d: {"s": d["a"] + d["b"][0]})(
        {"a": x, "b": (x * 2, 1.0)}),
    "nested_jit_static_argument": lambda n, x: n.jax.jit(lambda a, k: a ** k,
                                                         static_argnums=1)(x, 3),
    "nested_jit_in_cond": lambda n, x: n.lax.cond(
        x > 0, lambda v: n.jax.jit(lambda y: y * W)(v), lambda v: v * W, x),
    "cond_in_nested_jit": lambda n, x: n.jax.jit(lambda v: n.lax.cond(
        v > 0, lambda u: u * 2, lambda u: -u, v))(x),
    # shared and long nested jaxprs
    "two_scatter_adds_share_the_combiner": lambda n, x: (
        n.jnp.zeros(3).at[0].add(x).at[1].add(2.0)),
    "long_scan_body": _long_scan,
    # literals
    "weak_float_literal": lambda n, x: x * 0.1,
    "float32_literal": lambda n, x: x * np.float32(0.1),
    "pi_and_a_third": lambda n, x: x * math.pi + 1 / 3,
    "array_of_python_scalar": lambda n, x: x * n.jnp.array(0.1),
    "big_and_small_literals": lambda n, x: (x + 1e20) * 1e-8,
    "inf_and_nan": lambda n, x: (x + float("inf"), x * float("nan")),
    "bool_literal": lambda n, x: n.lax.bitwise_and(x > 0, True),
    "complex_literal": lambda n, x: x * (1 + 2j),
    "int_literals": lambda n, x: x.astype(n.jnp.int8) * 2 + np.uint8(3),
    "literal_outputs": lambda n, x: (x, 1, 2.0, True),
    "captured_scalars": lambda n, x: (x * n.jnp.asarray(3.0) + np.float32(4.0)
                                      + np.array(5.0, F32)),
    "scalar_made_while_tracing": lambda n, x: x * n.jnp.float32(2.0),
    # structure
    "constvars": lambda n, x: x * W + np.ones(3, F32),
    "unused_results": lambda n, x: (x * 3, x)[1],
    "equation_without_inputs": lambda n, x: (n.jnp.arange(3), x),
    "arange_with_start_and_step": lambda n, x: (n.jnp.arange(1.0, 4.0, 0.5) * x,
                                                n.jnp.arange(2, 9, 3)),
    "many_outputs_wrap": _many_outputs,
    "cond": lambda n, x: n.lax.cond(x > 0, lambda v: v * 2, lambda v: -v, x),
    "while": lambda n, x: n.lax.while_loop(lambda c: c < 10.0, lambda c: c * 2, x),
    "fori_loop": lambda n, x: n.lax.fori_loop(0, 3, lambda i, c: c + i, x),
    "scan": lambda n, x: n.lax.scan(lambda c, y: (c + y, c * y), x, W),
    "debug_print": _debug_print,
    "cond_capturing_one_array_twice": lambda n, x: n.lax.cond(
        x > 0, lambda v: v * W, lambda v: v + W, x),
    # transformations
    "grad_of_relu": lambda n, x: n.jax.grad(lambda v: n.jnp.maximum(v, 0.0))(x),
    "grad_of_a_sum": lambda n, x: n.jax.grad(lambda v: n.jnp.sum(v * W))(x),
    "grad_of_max": lambda n, x: n.jax.grad(lambda v: n.jnp.max(v * X))(x),
    "grad_through_jit": lambda n, x: n.jax.grad(n.jax.jit(lambda v: n.jnp.sin(v) * 2))(x),
    # cond's residual slots: placeholders (empty2) where another branch has residuals
    "grad_through_cond": lambda n, x: n.jax.grad(lambda v: n.lax.cond(
        v > 0, lambda u: n.jnp.sin(u) * n.jnp.exp(u), lambda u: n.jnp.cos(u) * 3.0, v))(x),
    "grad_through_cond_array_residuals": lambda n, x: n.jax.grad(lambda v: n.lax.cond(
        v > 0, lambda u: n.jnp.sum(n.jnp.sin(u * W) * W), lambda u: n.jnp.sum(u * W), v))(x),
    "grad_through_cond_unshared_slots": lambda n, x: n.jax.grad(lambda v: n.lax.cond(
        v > 0, lambda u: n.jnp.sin(u) * n.jnp.asarray(2), lambda u: u * u, v))(x),
    # jnp functions that JAX wraps in jit
    "jnp_where": lambda n, x: n.jnp.where(x > 0, x, 0.0),
    "jnp_clip": lambda n, x: n.jnp.clip(x, 0.0, 1.0),
    "jnp_fmod": lambda n, x: n.jnp.fmod(x, 2.0),
    "jnp_remainder": lambda n, x: n.jnp.remainder(x, 2.0),
    "jnp_cumsum": lambda n, x: n.jnp.cumsum(x * W, axis=0),
    "jnp_sort_argsort": lambda n, x: (n.jnp.sort(x * W), n.jnp.argsort(x * W)),
    "jnp_roll_flip": lambda n, x: n.jnp.flip(n.jnp.roll(x * W, 1), 0),
    "jnp_tril_triu": lambda n, x: n.jnp.tril(n.jnp.outer(W, W) * x) + n.jnp.triu(
        n.jnp.outer(W, W), 1),
    "jnp_nan_reductions": lambda n, x: (n.jnp.nanmax(x * W), n.jnp.nansum(x * W)),
    "jnp_var_ptp": lambda n, x: (n.jnp.var(x * W), n.jnp.ptp(x * W)),
    "jnp_rounding": lambda n, x: (n.jnp.round(x, 2), n.jnp.trunc(x), n.jnp.rint(x)),
    "jnp_arccosh_isinf": lambda n, x: (n.jnp.acosh(x), n.jnp.isinf(x)),
}


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_printed_jaxpr_matches_jax(name):
    program = PROGRAMS[name]
    ours, theirs = namespaces()
    expected = str(jax.make_jaxpr(functools.partial(program, theirs))(F32(0.5)))
    got = str(minijax.make_jaxpr(functools.partial(program, ours))(F32(0.5)))
    assert got == expected


@pytest.mark.parametrize("args", [(np.zeros(2, np.float64), 0.1), (np.float32(1), 0.1),
                                  (np.zeros(2, np.float64), np.float32(0.1))])
def test_x64_literals_match_jax(args):
    with x64_mode():
        f = lambda x, y: x * y + 0.1  # noqa: E731
        g = lambda x, y: x * 0.1  # noqa: E731
        for fun in (f, g):
            assert str(minijax.make_jaxpr(fun)(*args)) == str(jax.make_jaxpr(fun)(*args))


def test_narrow_float_literals_match_jax():
    for dtype in ("bfloat16", "float16"):
        x = getattr(minijax.numpy, dtype)(1.0)
        y = getattr(jax.numpy, dtype)(1.0)
        f = lambda x: x * 0.1 + 2.5  # noqa: E731
        assert str(minijax.make_jaxpr(f)(x)) == str(jax.make_jaxpr(f)(y))


def test_many_inputs_wrap_like_jax():
    def f(*a):
        return sum(a[1:], a[0])
    args = [1.0] * 30
    assert str(minijax.make_jaxpr(f)(*args)) == str(jax.make_jaxpr(f)(*args))


def test_make_jaxpr_of_a_jitted_function_matches_jax():
    ours, theirs = namespaces()
    got = minijax.make_jaxpr(_jitted(ours, "pair"))(1.0, 2.0)
    expected = jax.make_jaxpr(_jitted(theirs, "pair"))(1.0, 2.0)
    assert str(got) == str(expected)


def test_jit_equation_params_match_jax():
    ours, theirs = namespaces()
    got = minijax.make_jaxpr(lambda x: _jitted(ours, "g")(x))(1.0).eqns[0]
    expected = jax.make_jaxpr(lambda x: _jitted(theirs, "g")(x))(1.0).eqns[0]
    assert got.primitive.name == expected.primitive.name == "jit"
    assert got.params["name"] == expected.params["name"]
    assert type(got.params["jaxpr"]).__name__ == "ClosedJaxpr"
    assert got.params["donated_invars"] == expected.params["donated_invars"]
    assert got.params["keep_unused"] == expected.params["keep_unused"]


# ---------------------------------------------------------------------------------------
# eval_jaxpr and the type checker
# ---------------------------------------------------------------------------------------


def test_eval_jaxpr_is_exported_where_jax_has_it():
    f = lambda x: minijax.numpy.sin(x) * W + _jitted(namespaces()[0], "g")(x)  # noqa: E731
    closed = minijax.make_jaxpr(f)(F32(0.5))
    (out,) = minijax.core.eval_jaxpr(closed.jaxpr, closed.consts, F32(0.5))
    np.testing.assert_allclose(out, np.sin(F32(0.5)) * W + np.sin(F32(0.5)) + 1, rtol=1e-6)
    assert minijax.core.eval_jaxpr.__doc__


def test_check_jaxpr_accepts_traced_jaxprs():
    ours, _ = namespaces()
    for program in PROGRAMS.values():
        minijax.jaxpr.check_jaxpr(minijax.make_jaxpr(functools.partial(program, ours))(F32(1)))


def _swapped(closed):
    j = closed.jaxpr
    return jaxpr_module.Jaxpr(j.constvars, j.invars, j.outvars, j.eqns[::-1])


def test_check_jaxpr_reports_an_undefined_variable_like_jax():
    def f(x, y):
        return minijax.numpy.sin(x) * y

    def g(x, y):
        return jax.numpy.sin(x) * y

    closed = minijax.make_jaxpr(f)(1.0, 2.0)
    with pytest.raises(minijax.errors.JaxprTypeError) as got:
        minijax.jaxpr.check_jaxpr(_swapped(closed))
    expected_jaxpr = jax.make_jaxpr(g)(1.0, 2.0).jaxpr
    check_jaxpr = pytest.importorskip("jax.extend.core").check_jaxpr
    with pytest.raises(jax.errors.JaxprTypeError) as expected:
        check_jaxpr(expected_jaxpr.replace(eqns=expected_jaxpr.eqns[::-1]))
    # The same text, but for the source line JAX adds (minijax names the test's lines).
    assert str(got.value).split("\n\nfrom source")[0] == \
        str(expected.value).split("\n\nfrom source")[0]
    assert str(got.value).split("while checking jaxpr:")[1] == \
        str(expected.value).split("while checking jaxpr:")[1]


def test_check_jaxpr_reports_a_wrong_result_type():
    closed = minijax.make_jaxpr(lambda x, y: x * y)(1.0, 2.0)
    j = closed.jaxpr
    wrong = jaxpr_module.Var(minijax.core.ShapedArray((3,), F32))
    eqn = j.eqns[0]
    bad = jaxpr_module.Jaxpr(j.constvars, j.invars, [wrong], [
        jaxpr_module.JaxprEqn(eqn.primitive, eqn.invars, [wrong], eqn.params)])
    with pytest.raises(minijax.errors.JaxprTypeError,
                       match=r"Value for variable 'c' inconsistently typed as f32\[\] for "
                             r"let-binder of type f32\[3\]\n\nin equation:\n\nc:f32\[3\] = mul"):
        minijax.jaxpr.typecheck(bad)


def test_check_jaxpr_reports_inputs_the_shape_rule_rejects():
    closed = minijax.make_jaxpr(lambda x, y: x * y)(1.0, 2.0)
    j = closed.jaxpr
    wrong = jaxpr_module.Var(minijax.core.ShapedArray((), np.int32))
    eqn = j.eqns[0]
    bad = jaxpr_module.Jaxpr(j.constvars, [j.invars[0], wrong], j.outvars, [
        jaxpr_module.JaxprEqn(eqn.primitive, [eqn.invars[0], wrong], eqn.outvars, eqn.params)])
    with pytest.raises(minijax.errors.JaxprTypeError,
                       match="(?s)mul requires arguments to have the same dtypes.*in equation"):
        minijax.jaxpr.check_jaxpr(bad)


def test_check_jaxpr_checks_nested_jaxprs():
    closed = minijax.make_jaxpr(lambda x: _jitted(namespaces()[0], "g")(x))(1.0)
    inner = closed.eqns[0].params["jaxpr"].jaxpr
    broken = jaxpr_module.ClosedJaxpr(_swapped(jaxpr_module.ClosedJaxpr(inner, [])), [])
    bad_eqn = jaxpr_module.JaxprEqn(closed.eqns[0].primitive, closed.eqns[0].invars,
                                    closed.eqns[0].outvars,
                                    dict(closed.eqns[0].params, jaxpr=broken))
    bad = jaxpr_module.Jaxpr([], closed.jaxpr.invars, closed.jaxpr.outvars, [bad_eqn])
    with pytest.raises(minijax.errors.JaxprTypeError, match="not defined"):
        minijax.jaxpr.check_jaxpr(bad)
