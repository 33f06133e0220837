"""Transformations composed: higher-order derivatives, forward over reverse, reverse over
forward, and differentiation *inside* the bodies of control flow that is differentiated.

Conformance programs run against JAX; Hypothesis properties check identities that hold
for any correct AD (no oracle needed): JVPs are linear in the tangent, VJPs are their
adjoints (``<ct, J t> == <Jᵀ ct, t>``), and a loop primitive has the derivative of the
unrolled Python loop.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minijax
import minijax.numpy as jnp
from minijax import lax
from tests.oracle import check_program, jax_jitted

jax = pytest.importorskip("jax")

F32 = np.float32
X = np.array([0.3, -0.7, 1.1], F32)
XS = (np.arange(8, dtype=F32).reshape(4, 2) / 8).astype(F32)


def _nth_grad(n, f, order):
    for _ in range(order):
        f = n.jax.grad(f)
    return f


def _poly(n, x):
    return x ** 5 / 20. + n.jnp.sin(x) * x


def _scan_f(n, x):
    return n.lax.scan(lambda c, a: (n.jnp.sin(c) * a + c * c, None), x, XS[:, 0])[0]


def _cond_f(n, x):
    return n.lax.cond(x > 0, lambda x: n.jnp.exp(x) * x, lambda x: x ** 3, x)


def _fori_f(n, x):
    return n.lax.fori_loop(0, 3, lambda i, c: n.jnp.tanh(c) * 1.5 + c * 0.1, x)


def _vector_f(n, x):
    return n.jnp.sin(x) * x.sum() + n.jnp.cos(x[::-1]) ** 2


PROGRAMS = {
    # grad of grad ... to fourth order
    **{f"grad{k}_poly": (lambda n, k=k: _nth_grad(n, lambda x: _poly(n, x), k)(0.7))
       for k in range(1, 5)},
    # (a float32 start, not 0.4: with a weakly typed one JAX's third derivative, alone of
    # the four, is not weakly typed; minijax's is)
    **{f"grad{k}_scan": (lambda n, k=k: _nth_grad(n, lambda x: _scan_f(n, x), k)(F32(0.4)))
       for k in (2, 3, 4)},
    **{f"grad{k}_cond": (lambda n, k=k: _nth_grad(n, lambda x: _cond_f(n, x), k)(0.5))
       for k in (2, 4)},
    "grad4_cond_false_branch": lambda n: _nth_grad(n, lambda x: _cond_f(n, x), 4)(-0.5),
    "grad4_fori": lambda n: _nth_grad(n, lambda x: _fori_f(n, x), 4)(0.2),
    # forward over reverse, reverse over forward
    "jacfwd_of_jacrev": lambda n: n.jax.jacfwd(n.jax.jacrev(lambda x: _vector_f(n, x)))(X),
    "jacrev_of_jacfwd": lambda n: n.jax.jacrev(n.jax.jacfwd(lambda x: _vector_f(n, x)))(X),
    "jacrev_of_jacrev": lambda n: n.jax.jacrev(n.jax.jacrev(lambda x: _vector_f(n, x)))(X),
    "hessian_scan": lambda n: n.jax.hessian(lambda x: n.lax.scan(
        lambda c, a: (c * n.jnp.sin(a * x), None), 1., XS[:, 0])[0].sum())(X),
    "jvp_of_vjp": lambda n: n.jax.jvp(
        lambda x: n.jax.vjp(lambda x: _vector_f(n, x), x)[1](n.jnp.ones(3))[0], (X,), (X,)),
    "vjp_of_jvp": lambda n: n.jax.vjp(
        lambda x: n.jax.jvp(lambda x: _vector_f(n, x), (x,), (n.jnp.ones(3),))[1], X)[1](X),
    "hvp_forward_over_reverse": lambda n: n.jax.jvp(
        n.jax.grad(lambda x: (_vector_f(n, x) ** 2).sum()), (X,), (X[::-1],))[1],
    "grad_of_linearize": lambda n: n.jax.grad(
        lambda x: n.jax.linearize(lambda x: _vector_f(n, x), x)[1](X).sum())(X),
    "value_and_grad_of_grad": lambda n: n.jax.value_and_grad(
        n.jax.grad(lambda x: _scan_f(n, x)))(0.4),
    "jvp_of_grad_of_cond": lambda n: n.jax.jvp(n.jax.grad(lambda x: _cond_f(n, x)), (0.5,),
                                               (1.,)),
    "jacfwd_of_jacrev_while": lambda n: n.jax.jacfwd(n.jax.jacfwd(lambda x: n.lax.while_loop(
        lambda c: c[0] < 3, lambda c: (c[0] + 1, n.jnp.sin(c[1]) * x), (0, x))[1]))(X),
    # AD inside control-flow bodies that are differentiated
    "grad_in_scan_body": lambda n: n.jax.grad(lambda w: n.lax.scan(lambda c, a: (
        c + n.jax.grad(lambda v: n.jnp.sin(v * a) * v)(w), None), 0., XS[:, 0])[0])(0.3),
    "jvp_in_scan_body": lambda n: n.jax.grad(lambda w: n.lax.scan(lambda c, a: (
        c * n.jax.jvp(lambda v: n.jnp.exp(v * a), (w,), (1.,))[1], None), 1., XS[:, 0])[0])(0.3),
    "grad_in_cond_branch": lambda n: n.jax.grad(lambda w: n.lax.cond(
        w > 0, lambda w: n.jax.grad(lambda v: v ** 3)(w) * w, lambda w: w, w))(0.6),
    "vjp_in_fori_body": lambda n: n.jax.grad(lambda w: n.lax.fori_loop(0, 3, lambda i, c: (
        c + n.jax.vjp(lambda v: n.jnp.sin(v * c), w)[1](1.)[0]), 0.1))(0.3),
    "jacfwd_in_map": lambda n: n.jax.jacrev(lambda w: n.lax.map(
        lambda a: n.jax.jacfwd(lambda v: n.jnp.sin(v * a))(w), XS[:, 0]))(0.7),
    "hessian_in_scan_body": lambda n: n.jax.grad(lambda w: n.lax.scan(lambda c, a: (
        c + n.jax.hessian(lambda v: (n.jnp.sin(v) * a).sum())(w * c).sum(), None),
        0.5, XS[:, 1])[0])(X[:2].sum()),
    "custom_jvp_grad4": lambda n: _nth_grad(n, _softplus(n), 4)(0.3),
}


def _softplus(n):
    @n.jax.custom_jvp
    def softplus(x):
        return n.jnp.log1p(n.jnp.exp(x))

    softplus.defjvp(lambda p, t: (softplus(p[0]), t[0] * n.lax.logistic(p[0])))
    return softplus


@pytest.mark.parametrize("name", PROGRAMS)
def test_compositions_match_jax(name):
    check_program(jax_jitted(PROGRAMS[name]), rtol=5e-5, atol=5e-5)


# ---------------------------------------------------------------------------------------
# Properties every correct AD satisfies
# ---------------------------------------------------------------------------------------

FLOATS = st.floats(-1.5, 1.5, allow_nan=False, width=32)
VECTORS = st.lists(FLOATS, min_size=3, max_size=3).map(lambda v: np.array(v, F32))


def _loop(x):
    """cond inside a scan: differentiated in both modes below."""
    def body(c, a):
        c = lax.cond(a > 0.3, lambda c: jnp.sin(c) * a, lambda c: c * c * 0.5, c)
        return c, c.sum()
    return lax.scan(body, x, XS[:, 0])


def _loop_flat(x):
    carry, ys = _loop(x)
    return jnp.concatenate([carry, ys])


@settings(max_examples=20, deadline=None)
@given(VECTORS, VECTORS, VECTORS, st.floats(-2, 2, width=32))
def test_jvp_is_linear_in_the_tangent(x, t1, t2, a):
    _, j1 = minijax.jvp(_loop_flat, (x,), (t1,))
    _, j2 = minijax.jvp(_loop_flat, (x,), (t2,))
    _, j12 = minijax.jvp(_loop_flat, (x,), ((a * t1 + t2).astype(F32),))
    np.testing.assert_allclose(np.asarray(j12), a * np.asarray(j1) + np.asarray(j2),
                               rtol=1e-4, atol=1e-4)


@settings(max_examples=20, deadline=None)
@given(VECTORS, VECTORS, st.lists(FLOATS, min_size=7, max_size=7))
def test_vjp_is_the_adjoint_of_jvp(x, t, ct):
    ct = np.array(ct, F32)
    _, jt = minijax.jvp(_loop_flat, (x,), (t,))
    _, f_vjp = minijax.vjp(_loop_flat, x)
    (jct,) = f_vjp(ct)
    assert float(np.dot(ct, np.asarray(jt))) == pytest.approx(
        float(np.dot(np.asarray(jct), t)), rel=1e-4, abs=1e-4)


@settings(max_examples=15, deadline=None)
@given(FLOATS, st.integers(0, 4))
def test_fori_loop_has_the_derivatives_of_the_unrolled_loop(x, trips):
    def body(i, c):
        return jnp.sin(c) * (i + 1) + c * 0.5

    def unrolled(c):
        for i in range(trips):
            c = body(i, c)
        return c

    looped = lambda c: lax.fori_loop(0, trips, body, c)  # noqa: E731
    for order in (1, 2):
        f, g = looped, unrolled
        for _ in range(order):
            f, g = minijax.grad(f), minijax.grad(g)
        assert float(f(F32(x))) == pytest.approx(float(g(F32(x))), rel=1e-4, abs=1e-5)
