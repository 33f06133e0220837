"""``custom_jvp`` and ``custom_vjp`` against JAX: values, printed jaxprs and errors.

Each program builds its custom functions inside the namespace it is given, so the same
code runs with minijax and with JAX.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest

import minijax
import minijax.numpy as jnp
from minijax import lax
from tests.oracle import check_program, namespaces, run_both

jax = pytest.importorskip("jax")

F32 = np.float32
X = np.array([0.5, -1.2, 2.0], F32)


# ---------------------------------------------------------------------------------------
# Custom functions, built for either namespace
# ---------------------------------------------------------------------------------------


def softplus_jvp(n):
    """log1p(exp(x)) with the stable derivative sigmoid(x)."""
    @n.jax.custom_jvp
    def softplus(x):
        return n.jnp.log1p(n.jnp.exp(x))

    @softplus.defjvp
    def softplus_jvp_rule(primals, tangents):
        (x,), (t,) = primals, tangents
        return softplus(x), t / (1. + n.jnp.exp(-x))

    return softplus


def softplus_vjp(n):
    @n.jax.custom_vjp
    def softplus(x):
        return n.jnp.log1p(n.jnp.exp(x))

    def fwd(x):
        return softplus(x), x

    def bwd(x, ct):
        return (ct / (1. + n.jnp.exp(-x)),)

    softplus.defvjp(fwd, bwd)
    return softplus


def clip_gradient(n):
    """Identity forward; the gradient is clipped to [-1, 1] on the way back."""
    @n.jax.custom_vjp
    def clip(x):
        return x

    clip.defvjp(lambda x: (x, None), lambda _, ct: (n.jnp.clip(ct, -1., 1.),))
    return clip


def power_nondiff(n, kind):
    """x ** k with the static exponent k as ``nondiff_argnums=(0,)``."""
    if kind == "jvp":
        @functools.partial(n.jax.custom_jvp, nondiff_argnums=(0,))
        def power(k, x):
            return x ** k

        @power.defjvp
        def power_jvp(k, primals, tangents):
            return power(k, primals[0]), k * primals[0] ** (k - 1) * tangents[0]
        return power

    @functools.partial(n.jax.custom_vjp, nondiff_argnums=(0,))
    def power(k, x):
        return x ** k

    power.defvjp(lambda k, x: (x ** k, x), lambda k, x, ct: (k * x ** (k - 1) * ct,))
    return power


def pytree_jvp(n):
    """Pytrees in and out: a dict argument, a (tuple) result."""
    @n.jax.custom_jvp
    def f(p):
        return p["a"] * p["b"], n.jnp.sin(p["a"])

    @f.defjvp
    def f_jvp(primals, tangents):
        (p,), (t,) = primals, tangents
        out = f(p)
        return out, (t["a"] * p["b"] + p["a"] * t["b"], n.jnp.cos(p["a"]) * t["a"])

    return f


def pytree_vjp(n):
    @n.jax.custom_vjp
    def f(p, y):
        return {"s": p[0] * y, "t": p[1] + y}

    def fwd(p, y):
        return f(p, y), (p, y)

    def bwd(res, ct):
        (a, b), y = res
        return (ct["s"] * y, ct["t"]), ct["s"] * a + ct["t"]

    f.defvjp(fwd, bwd)
    return f


def abs_with_python_if(n):
    """The rule looks at the primal with Python's ``if``: it is concrete under grad."""
    @n.jax.custom_jvp
    def f(x):
        return n.jnp.abs(x)

    @f.defjvp
    def f_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        return f(x), t if x > 0 else -t

    return f


def sin_times_x_vjp(n):
    """fwd and bwd written with ordinary operations: reverse mode over them can be
    differentiated again, in either mode (a Hessian is forward over reverse)."""
    @n.jax.custom_vjp
    def f(x):
        return n.jnp.sin(x) * x

    def fwd(x):
        return n.jnp.sin(x) * x, (n.jnp.sin(x), n.jnp.cos(x), x)

    def bwd(res, ct):
        s, c, x = res
        return ((s + x * c) * ct,)

    f.defvjp(fwd, bwd)
    return f


def relu_defjvps(n):
    @n.jax.custom_jvp
    def f(x, y):
        return x * y

    f.defjvps(lambda t, ans, x, y: t * y, lambda t, ans, x, y: x * t)
    return f


def _a(n, value):
    """An array (JAX's jvp hands Python and NumPy scalars to custom rules unconverted)."""
    return n.jnp.asarray(value, dtype=F32)


def _sum_of(f):
    return lambda x: f(x).sum()


PROGRAMS = {
    # custom_jvp
    "jvp_eager_value": lambda n: softplus_jvp(n)(X),
    "jvp_jvp": lambda n: n.jax.jvp(softplus_jvp(n), (X,), (n.jnp.ones(3),)),
    "jvp_grad": lambda n: n.jax.grad(_sum_of(softplus_jvp(n)))(X),
    "jvp_stable_at_large_x": lambda n: n.jax.grad(softplus_jvp(n))(100.),
    "jvp_vjp": lambda n: n.jax.vjp(softplus_jvp(n), X)[1](X),
    "jvp_hessian": lambda n: n.jax.hessian(_sum_of(softplus_jvp(n)))(X),
    "jvp_grad_of_grad": lambda n: n.jax.grad(n.jax.grad(softplus_jvp(n)))(0.3),
    "jvp_nondiff_argnums": lambda n: n.jax.grad(power_nondiff(n, "jvp"), 1)(3, 2.),
    "jvp_nondiff_jvp": lambda n: n.jax.jvp(lambda x: power_nondiff(n, "jvp")(3, x),
                                           (_a(n, 2),), (_a(n, 1),)),
    "jvp_pytrees": lambda n: n.jax.jvp(pytree_jvp(n), ({"a": _a(n, 2), "b": _a(n, 3)},),
                                       ({"a": _a(n, 1), "b": _a(n, 0.5)},)),
    "jvp_pytrees_grad": lambda n: n.jax.grad(lambda p: pytree_jvp(n)(p)[0])({"a": 2., "b": 3.}),
    "jvp_python_if_in_rule": lambda n: n.jax.grad(abs_with_python_if(n))(-2.),
    "jvp_defjvps": lambda n: n.jax.jvp(relu_defjvps(n), (_a(n, 2), _a(n, 3)),
                                       (_a(n, 1), _a(n, 1))),
    "jvp_defjvps_grad": lambda n: n.jax.grad(relu_defjvps(n), (0, 1))(2., 3.),
    "jvp_keyword_argument": lambda n: n.jax.grad(lambda x: power_nondiff(n, "jvp")(3, x=x))(2.),
    "jvp_in_scan": lambda n: n.jax.grad(lambda x: n.lax.scan(
        lambda c, _: (softplus_jvp(n)(c), None), x, None, length=3)[0])(0.5),
    "jvp_in_cond": lambda n: n.jax.grad(lambda x: n.lax.cond(
        x > 0, softplus_jvp(n), n.jnp.sin, x))(0.5),
    "jvp_jacfwd_in_scan": lambda n: n.jax.jacfwd(lambda x: n.lax.scan(
        lambda c, _: (softplus_jvp(n)(c), c), x, None, length=3)[1])(0.5),
    # custom_vjp
    "vjp_eager_value": lambda n: softplus_vjp(n)(X),
    "vjp_grad": lambda n: n.jax.grad(_sum_of(softplus_vjp(n)))(X),
    "vjp_vjp": lambda n: n.jax.vjp(softplus_vjp(n), X)[1](X),
    "vjp_jacrev": lambda n: n.jax.jacrev(softplus_vjp(n))(X),
    "vjp_clip_gradient": lambda n: n.jax.grad(lambda x: clip_gradient(n)(x * 10.).sum())(X),
    "vjp_nondiff_argnums": lambda n: n.jax.grad(power_nondiff(n, "vjp"), 1)(3, 2.),
    "vjp_pytrees": lambda n: n.jax.grad(
        lambda p, y: pytree_vjp(n)(p, y)["s"] + pytree_vjp(n)(p, y)["t"], (0, 1))((2., 3.), 4.),
    "vjp_in_scan": lambda n: n.jax.grad(lambda x: n.lax.scan(
        lambda c, _: (softplus_vjp(n)(c), None), x, None, length=3)[0])(0.5),
    "vjp_value_and_grad": lambda n: n.jax.value_and_grad(_sum_of(softplus_vjp(n)))(X),
    "vjp_hessian": lambda n: n.jax.hessian(_sum_of(sin_times_x_vjp(n)))(X),
    "vjp_jvp_of_grad": lambda n: n.jax.jvp(n.jax.grad(_sum_of(sin_times_x_vjp(n))), (X,), (X,)),
    "vjp_grad_of_grad": lambda n: n.jax.grad(n.jax.grad(sin_times_x_vjp(n)))(0.7),
    "vjp_int_argument": lambda n: n.jax.grad(power_nondiff(n, "vjp"), 1)(2, 3.),
    # bad uses
    "jvp_of_custom_vjp": lambda n: n.jax.jvp(softplus_vjp(n), (X,), (X,)),
    "jacfwd_of_custom_vjp": lambda n: n.jax.jacfwd(softplus_vjp(n))(X),
    "linearize_then_evaluate_custom_vjp": lambda n: n.jax.linearize(softplus_vjp(n), X)[1](X),
}


@pytest.mark.parametrize("name", PROGRAMS)
def test_custom_rules_match_jax(name):
    check_program(PROGRAMS[name], rtol=2e-5, atol=2e-5)


def test_custom_jvp_is_used_not_the_derivative_of_the_function():
    f = softplus_jvp(namespaces()[0])
    assert np.isfinite(float(minijax.grad(f)(100.)))

    @minijax.custom_jvp
    def g(x):
        return jnp.sin(x)

    g.defjvp(lambda p, t: (g(p[0]), t[0] * 100.))
    assert float(minijax.grad(g)(1.)) == 100.


# ---------------------------------------------------------------------------------------
# Bad rules and bad uses: JAX's error class and message
# ---------------------------------------------------------------------------------------


def _bad_jvp(n, rule):
    @n.jax.custom_jvp
    def f(x):
        return n.jnp.sin(x)

    f.defjvp(rule)
    return f


def _bad_vjp(n, fwd, bwd):
    @n.jax.custom_vjp
    def g(x):
        return n.jnp.sin(x)

    g.defvjp(fwd, bwd)
    return g


def _no_rule(n, kind):
    @getattr(n.jax, kind)
    def f(x):
        return x

    return f


BAD = {
    "jvp_rule_wrong_shape": lambda n: n.jax.jvp(
        _bad_jvp(n, lambda p, t: (p[0], n.jnp.ones(3))), (1.,), (1.,)),
    "jvp_rule_wrong_dtype": lambda n: n.jax.jvp(_bad_jvp(n, lambda p, t: (p[0], 1)), (1.,),
                                                (1.,)),
    "jvp_rule_wrong_shape_under_grad": lambda n: n.jax.grad(
        _bad_jvp(n, lambda p, t: (p[0], n.jnp.ones(3))))(1.),
    "jvp_rule_int_primal_out": lambda n: n.jax.jvp(_bad_jvp(n, lambda p, t: (1, 1.)), (1.,),
                                                   (1.,)),
    "jvp_rule_not_a_pair": lambda n: n.jax.jvp(_bad_jvp(n, lambda p, t: 5), (1.,), (1.,)),
    "jvp_rule_three_outputs": lambda n: n.jax.jvp(
        _bad_jvp(n, lambda p, t: (p[0], t[0], 3)), (_a(n, 1),), (_a(n, 1),)),
    "jvp_rule_trees_differ": lambda n: n.jax.jvp(
        _bad_jvp(n, lambda p, t: ((p[0],), t[0])), (1.,), (1.,)),
    "jvp_not_defined": lambda n: _no_rule(n, "custom_jvp")(1.),
    "vjp_not_defined": lambda n: _no_rule(n, "custom_vjp")(1.),
    "vjp_forward_mode": lambda n: n.jax.jvp(softplus_vjp(n), (1.,), (1.,)),
    "vjp_fwd_not_a_pair": lambda n: n.jax.grad(
        _bad_vjp(n, lambda x: n.jnp.sin(x), lambda r, ct: (ct,)))(0.),
    "vjp_bwd_not_a_tuple": lambda n: n.jax.grad(
        _bad_vjp(n, lambda x: (n.jnp.sin(x), None), lambda r, ct: ct))(1.),
    "vjp_bwd_too_many": lambda n: n.jax.grad(
        _bad_vjp(n, lambda x: (n.jnp.sin(x), None), lambda r, ct: (ct, ct)))(1.),
    "vjp_bwd_wrong_shape": lambda n: n.jax.grad(
        _bad_vjp(n, lambda x: (n.jnp.sin(x), None), lambda r, ct: (n.jnp.ones(3),)))(1.),
    "defjvps_with_nondiff_argnums": lambda n: functools.partial(
        n.jax.custom_jvp, nondiff_argnums=(0,))(lambda k, x: x).defjvps(lambda t, a, x: t),
}


@pytest.mark.parametrize("name", BAD)
def test_bad_custom_rules_raise_jaxs_error(name):
    ours, theirs = run_both(BAD[name])
    assert ours[0] == theirs[0] == "error", (ours, theirs)
    assert type(ours[1]).__name__ == type(theirs[1]).__name__
    assert str(ours[1]) == str(theirs[1])


# ---------------------------------------------------------------------------------------
# Printed jaxprs
# ---------------------------------------------------------------------------------------

JAXPRS = {
    "custom_jvp_call": lambda n: softplus_jvp(n),
    "custom_jvp_under_grad": lambda n: n.jax.grad(softplus_jvp(n)),
    "custom_jvp_under_jvp": lambda n: lambda x: n.jax.jvp(softplus_jvp(n), (x,), (x,)),
    "custom_jvp_nondiff": lambda n: lambda x: power_nondiff(n, "jvp")(3, x),
    "custom_vjp_call": lambda n: softplus_vjp(n),
    "custom_vjp_under_grad": lambda n: n.jax.grad(softplus_vjp(n)),
    "custom_vjp_nondiff": lambda n: lambda x: power_nondiff(n, "vjp")(3, x),
    "custom_lin_under_jvp": lambda n: lambda x: n.jax.jvp(softplus_vjp(n), (x,), (x,)),
}
# Not listed: grad of a scan whose body calls a custom_vjp function. JAX's jaxpr then has
# a stray `custom_vjp_call` equation with an empty call_jaxpr and no outputs; minijax's
# is otherwise the same.


@pytest.mark.parametrize("name", JAXPRS)
def test_jaxpr_prints_like_jax(name):
    ours, theirs = namespaces()
    assert str(minijax.make_jaxpr(JAXPRS[name](ours))(1.)) == \
        str(jax.make_jaxpr(JAXPRS[name](theirs))(1.))


# ---------------------------------------------------------------------------------------
# Behaviour that needs no oracle
# ---------------------------------------------------------------------------------------


def test_eager_call_runs_the_function_and_not_the_rules():
    calls = []

    @minijax.custom_jvp
    def f(x):
        calls.append("f")
        return x * 2.

    @f.defjvp
    def f_jvp(primals, tangents):
        calls.append("jvp")
        return f(primals[0]), tangents[0] * 2.

    assert float(f(3.)) == 6.
    assert calls == ["f"]
    minijax.jvp(f, (3.,), (1.,))
    assert calls == ["f", "jvp", "f"]


def test_custom_vjp_fwd_runs_once_and_bwd_once_per_cotangent():
    calls = []

    @minijax.custom_vjp
    def f(x):
        return x * 2.

    def fwd(x):
        calls.append("fwd")
        return x * 2., None

    def bwd(_, ct):
        calls.append("bwd")
        return (ct * 2.,)

    f.defvjp(fwd, bwd)
    _, f_vjp = minijax.vjp(f, 3.)
    assert calls == ["fwd"]
    f_vjp(1.)
    f_vjp(2.)
    assert calls == ["fwd", "bwd", "bwd"]


def test_decorated_function_keeps_its_name_and_docstring():
    @minijax.custom_jvp
    def my_function(x):
        """Docs."""
        return x

    assert my_function.__name__ == "my_function"
    assert my_function.__doc__ == "Docs."


def test_default_arguments_are_passed_to_the_rule():
    @minijax.custom_jvp
    def scale(x, k=3.):
        return x * k

    scale.defjvp(lambda p, t: (scale(*p), t[0] * p[1] + t[1] * p[0]))
    assert minijax.jvp(lambda x: scale(x), (1.,), (1.,))[1] == 3.


def test_symbolic_zeros_is_a_documented_gap():
    f = minijax.custom_jvp(lambda x: x)
    with pytest.raises(NotImplementedError, match="symbolic_zeros"):
        f.defjvp(lambda p, t: (p[0], t[0]), symbolic_zeros=True)


def test_custom_jvp_call_evaluates_from_its_jaxpr():
    from minijax.jaxpr import eval_closed_jaxpr

    f = softplus_jvp(namespaces()[0])
    closed = minijax.make_jaxpr(f)(X)
    np.testing.assert_allclose(np.asarray(eval_closed_jaxpr(closed, X)[0]),
                               np.asarray(f(X)), rtol=1e-6)
    assert lax.scan(lambda c, _: (f(c), None), 0.5, None, length=2)[0] == f(f(0.5))
