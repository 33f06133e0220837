"""Automatic differentiation, program by program, against JAX.

Each program is written once as a function of a namespace (``n.jax``, ``n.jnp``,
``n.lax``) and run with minijax and with JAX; values, shapes, dtypes and weak types of
every output leaf must agree, and bad uses must raise the same class of error. Covered:
elementwise math, ``jnp`` functions (reductions, matmul, indexing, ``where``, softmax and
logsumexp), linear algebra, control flow and custom rules; ``jvp``, ``vjp``, ``grad``,
``value_and_grad``, Jacobians and Hessians; the dtypes of tangents and cotangents
(float0 for integers, weak types from Python scalars, float16, float64 under x64).
"""

from __future__ import annotations

import numpy as np
import pytest

import minijax
from tests.oracle import check_program, jax_jitted, run_both, x64_mode

jax = pytest.importorskip("jax")

F32 = np.float32
X = np.array([0.4, -1.3, 2.1], F32)
Y = np.array([1.5, 0.2, -0.7], F32)
M = np.array([[2.0, 0.5, -0.3], [0.1, 1.5, 0.4], [-0.2, 0.3, 3.0]], F32)
SPD = (M @ M.T + np.eye(3, dtype=F32)).astype(F32)
IDX = np.array([2, 0, 2])


def _grad(n, f, *args, **kw):
    return n.jax.grad(f, **kw)(*args)


def _jvp(n, f, x, t=Y):
    return n.jax.jvp(f, (x,), (t,))


def _vjp(n, f, x, ct):
    out, f_vjp = n.jax.vjp(f, x)
    return out, f_vjp(ct)


def _softmax(n, x):
    z = x - n.lax.stop_gradient(x.max())
    e = n.jnp.exp(z)
    return e / e.sum()


def _logsumexp(n, x):
    m = n.lax.stop_gradient(x.max())
    return m + n.jnp.log(n.jnp.exp(x - m).sum())


def _describe_float0(grads):
    """(gradient, dtype name and shape of the float0 one): JAX's float0 arrays are a NumPy
    subclass, minijax's plain NumPy arrays."""
    return grads[0], str(grads[1].dtype), grads[1].shape


def _custom_softplus(n):
    @n.jax.custom_jvp
    def softplus(x):
        return n.jnp.log1p(n.jnp.exp(x))

    softplus.defjvp(lambda p, t: (softplus(p[0]), t[0] / (1. + n.jnp.exp(-p[0]))))
    return softplus


def _custom_clip(n):
    @n.jax.custom_vjp
    def clip(x):
        return x

    clip.defvjp(lambda x: (x, None), lambda _, ct: (n.jnp.clip(ct, -0.5, 0.5),))
    return clip


PROGRAMS = {
    # --- elementwise math -----------------------------------------------------------------
    "grad_sin_times_x": lambda n: _grad(n, lambda x: (n.jnp.sin(x) * x).sum(), X),
    "jvp_tanh": lambda n: _jvp(n, n.jnp.tanh, X),
    "jvp_exp_log": lambda n: _jvp(n, lambda x: n.jnp.log(n.jnp.exp(x) + 1.), X),
    "grad_sqrt": lambda n: _grad(n, lambda x: n.jnp.sqrt(x * x + 1.).sum(), X),
    "grad_rsqrt_cbrt": lambda n: _grad(n, lambda x: (n.lax.rsqrt(x * x + 1.) +
                                                     n.jnp.cbrt(x)).sum(), X),
    "grad_div": lambda n: _grad(n, lambda x, y: (x / (y * y + 1.)).sum(), X, Y, argnums=(0, 1)),
    "grad_pow": lambda n: _grad(n, lambda x, y: (n.jnp.abs(x) ** y).sum(), X, Y, argnums=(0, 1)),
    "grad_integer_pow": lambda n: _grad(n, lambda x: (x ** 3 - 2 * x ** 2).sum(), X),
    "grad_abs_sign": lambda n: _grad(n, lambda x: (n.jnp.abs(x) * n.jnp.sign(x)).sum(), X),
    "grad_maximum": lambda n: _grad(n, lambda x, y: n.jnp.maximum(x, y).sum(), X, Y,
                                    argnums=(0, 1)),
    "grad_maximum_ties": lambda n: _grad(n, lambda x: n.jnp.maximum(x, x).sum(), X),
    "grad_logistic": lambda n: _grad(n, lambda x: n.lax.logistic(x).sum(), X),
    "grad_atan2": lambda n: _grad(n, lambda x, y: n.jnp.arctan2(x, y).sum(), X, Y,
                                  argnums=(0, 1)),
    "grad_log1p_expm1": lambda n: _grad(n, lambda x: (n.jnp.log1p(x * x) *
                                                      n.jnp.expm1(x)).sum(), X),
    "grad_trig_inverse": lambda n: _grad(n, lambda x: (n.jnp.arcsin(x / 3.) +
                                                       n.jnp.arctan(x)).sum(), X),
    "grad_hyperbolic": lambda n: _grad(n, lambda x: (n.jnp.sinh(x) * n.jnp.cosh(x)).sum(), X),
    "grad_where": lambda n: _grad(n, lambda x: n.jnp.where(x > 0, x * x, -x).sum(), X),
    "grad_clip": lambda n: _grad(n, lambda x: n.jnp.clip(x, -1., 1.).sum(), X),
    "grad_stop_gradient": lambda n: _grad(n, lambda x: (x * n.lax.stop_gradient(x)).sum(), X),
    "jvp_square_exp2": lambda n: _jvp(n, lambda x: n.jnp.square(x) + n.jnp.exp2(x), X),
    # --- jnp functions ----------------------------------------------------------------------
    "grad_mean": lambda n: _grad(n, lambda x: n.jnp.mean(x * x), X),
    "grad_var": lambda n: _grad(n, lambda x: n.jnp.var(x), X),
    "grad_prod": lambda n: _grad(n, lambda x: n.jnp.prod(x), X),
    "grad_max_reduction": lambda n: _grad(n, lambda x: n.jnp.max(x * x), X),
    "grad_matmul": lambda n: _grad(n, lambda m, x: (m @ x).sum(), M, X, argnums=(0, 1)),
    "vjp_matmul_matrix": lambda n: _vjp(n, lambda m: m @ m.T, M, M),
    "grad_dot_einsum_like": lambda n: _grad(n, lambda x, y: n.jnp.dot(x, y) * n.jnp.vdot(x, x),
                                            X, Y, argnums=(0, 1)),
    "grad_indexing_scalar": lambda n: _grad(n, lambda x: x[1] * x[2], X),
    "grad_indexing_slice": lambda n: _grad(n, lambda m: (m[1:, ::2] ** 2).sum(), M),
    "grad_indexing_array": lambda n: _grad(n, lambda x: (x[IDX] * n.jnp.arange(3.)).sum(), X),
    "grad_at_set": lambda n: _grad(n, lambda x: (x.at[0].set(5.) * x).sum(), X),
    "grad_at_add": lambda n: _grad(n, lambda x: (x.at[IDX].add(x) ** 2).sum(), X),
    "grad_softmax": lambda n: _grad(n, lambda x: (_softmax(n, x) * Y).sum(), X),
    "jacrev_softmax": lambda n: n.jax.jacrev(lambda x: _softmax(n, x))(X),
    "grad_logsumexp": lambda n: _grad(n, lambda x: _logsumexp(n, x), X),
    "hessian_logsumexp": lambda n: n.jax.hessian(lambda x: _logsumexp(n, x))(X),
    "grad_reshape_transpose": lambda n: _grad(n, lambda m: (m.reshape(9)[::2].sum() +
                                                            (m.T * M).sum()), M),
    "grad_concatenate_stack": lambda n: _grad(n, lambda x: (n.jnp.concatenate([x, x * 2]) *
                                                            n.jnp.arange(6.)).sum(), X),
    "grad_cumsum": lambda n: _grad(n, lambda x: (n.jnp.cumsum(x) ** 2).sum(), X),
    "grad_sort": lambda n: _grad(n, lambda x: (n.jnp.sort(x) * n.jnp.arange(3.)).sum(), X),
    "grad_norm": lambda n: _grad(n, lambda x: n.jnp.linalg.norm(x), X),
    "grad_broadcasting": lambda n: _grad(n, lambda x: (x[:, None] * M).sum(), X),
    # --- linear algebra ---------------------------------------------------------------------
    "grad_inv": lambda n: _grad(n, lambda m: n.jnp.linalg.inv(m).sum(), M),
    "grad_solve": lambda n: _grad(n, lambda m, b: n.jnp.linalg.solve(m, b).sum(), M, X,
                                  argnums=(0, 1)),
    "grad_det": lambda n: _grad(n, lambda m: n.jnp.linalg.det(m), M),
    "grad_slogdet": lambda n: _grad(n, lambda m: n.jnp.linalg.slogdet(m)[1], M),
    "grad_cholesky": lambda n: _grad(n, lambda m: n.jnp.linalg.cholesky(m).sum(), SPD),
    "grad_eigh_values": lambda n: _grad(n, lambda m: n.jnp.linalg.eigh(m)[0][-1], SPD),
    # --- Jacobians, Hessians, the API --------------------------------------------------------
    "jacfwd_vector": lambda n: n.jax.jacfwd(lambda x: n.jnp.sin(x) * x.sum())(X),
    "jacrev_vector": lambda n: n.jax.jacrev(lambda x: n.jnp.sin(x) * x.sum())(X),
    "jacrev_pytree": lambda n: n.jax.jacrev(lambda p: {"s": p["a"] * p["b"][0]})(
        {"a": X, "b": (Y,)}),
    "hessian_quadratic": lambda n: n.jax.hessian(lambda x: x @ M @ x)(X),
    "hessian_two_args": lambda n: n.jax.hessian(lambda x, y: (x * y * y).sum(), (0, 1))(X, Y),
    "value_and_grad_has_aux": lambda n: n.jax.value_and_grad(
        lambda x: ((x ** 2).sum(), x * 3.), has_aux=True)(X),
    "vjp_pytree_out": lambda n: _vjp(n, lambda x: (x * 2., {"y": x.sum()}), X,
                                     (Y, {"y": F32(1)})),
    "linearize": lambda n: n.jax.linearize(lambda x: n.jnp.sin(x) * x, X)[1](Y),
    "grad_of_grad": lambda n: n.jax.grad(n.jax.grad(lambda x: n.jnp.sin(x) * x ** 3))(0.5),
    # --- dtypes and weak types of tangents and cotangents -----------------------------------
    "grad_python_float_is_weak": lambda n: _grad(n, lambda x: x * x, 3.),
    "jvp_python_scalars_weak": lambda n: n.jax.jvp(lambda x: x * 2., (3.,), (1.,)),
    "jvp_constant_output_zero_tangent": lambda n: n.jax.jvp(
        lambda x: (n.jnp.sin(x), n.jnp.asarray(2.)), (X,), (Y,)),
    "grad_unused_argument_zeros": lambda n: _grad(n, lambda x, y: x.sum(), X, Y,
                                                  argnums=(0, 1)),
    "grad_float16": lambda n: _grad(n, lambda x: (n.jnp.sin(x) * x).sum(), X.astype(np.float16)),
    "grad_float64_input_x64_off": lambda n: _grad(n, lambda x: (x * x).sum(),
                                                  X.astype(np.float64)),
    "jvp_int_input_float0_tangent": lambda n: n.jax.jvp(
        lambda x, k: x * k, (X, 3), (Y, np.zeros((), n.jax.dtypes.float0))),
    "grad_allow_int_float0": lambda n: _describe_float0(_grad(
        n, lambda x, k: x * k, 2., 3, argnums=(0, 1), allow_int=True)),
    "vjp_int_output": lambda n: _vjp(n, lambda x: (x * 2., n.jnp.argmax(x)), X,
                                     (Y, np.zeros((), n.jax.dtypes.float0))),
    "grad_convert_dtype": lambda n: _grad(n, lambda x: x.astype(n.jnp.float16).sum()
                                          .astype(n.jnp.float32), X),
    "vjp_complex": lambda n: _vjp(n, lambda x: (x * (1 + 2j)).real, X, Y),
    # --- control flow and custom rules ------------------------------------------------------
    "grad_cond": lambda n: _grad(n, lambda x: n.lax.cond(x.sum() > 0, n.jnp.sin, n.jnp.cos, x)
                                 .sum(), X),
    "jvp_switch": lambda n: _jvp(n, lambda x: n.lax.switch(1, [n.jnp.sin, n.jnp.exp], x), X),
    "jvp_while": lambda n: _jvp(n, lambda x: n.lax.while_loop(
        lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1] * 1.5 + n.jnp.sin(c[1])), (0, x))[1], X),
    "grad_fori": lambda n: _grad(n, lambda x: n.lax.fori_loop(
        0, 3, lambda i, c: c * n.jnp.cos(c), x).sum(), X),
    "grad_scan": lambda n: _grad(n, lambda x: n.lax.scan(
        lambda c, a: (c * a + n.jnp.sin(c), c), 0.5, x)[1].sum(), X),
    "grad_custom_jvp": lambda n: _grad(n, lambda x: _custom_softplus(n)(x).sum(), X),
    "grad_custom_vjp": lambda n: _grad(n, lambda x: (_custom_clip(n)(x) * 10.).sum(), X),
}

BAD_USES = {
    "grad_non_scalar": lambda n: _grad(n, lambda x: x * 2., X),
    "grad_integer_input": lambda n: _grad(n, lambda x: x * 2, 3),
    "grad_integer_output": lambda n: _grad(n, lambda x: n.jnp.argmax(x), X),
    "grad_complex_output": lambda n: _grad(n, lambda x: x * 1j, 1.),
    "grad_argnums_out_of_range": lambda n: _grad(n, lambda x: x, 1., argnums=2),
    "grad_has_aux_not_pair": lambda n: _grad(n, lambda x: x, 1., has_aux=True),
    "vjp_cotangent_wrong_shape": lambda n: _vjp(n, lambda x: x * 2., X, np.ones(2, F32)),
    "vjp_cotangent_wrong_dtype": lambda n: _vjp(n, lambda x: x * 2., X,
                                                np.ones(3, np.float16)),
    "vjp_cotangent_wrong_tree": lambda n: _vjp(n, lambda x: x * 2., X, (Y, Y)),
    "jvp_tangent_wrong_dtype": lambda n: n.jax.jvp(lambda x: x, (X,), (X.astype(np.float16),)),
    "jvp_tangent_wrong_shape": lambda n: n.jax.jvp(lambda x: x, (X,), (np.ones(2, F32),)),
    "jvp_not_tuples": lambda n: n.jax.jvp(lambda x: x, X, Y),
    "jacfwd_integer_input": lambda n: n.jax.jacfwd(lambda x: x)(np.arange(3)),
    "custom_jvp_wrong_shape": lambda n: n.jax.jvp(_bad_custom_jvp(n), (1.,), (1.,)),
    "jvp_of_custom_vjp": lambda n: n.jax.jvp(_custom_clip(n), (X,), (Y,)),
    "grad_of_while_loop": lambda n: _grad(n, lambda x: n.lax.while_loop(
        lambda c: c < 3., lambda c: c * 2., x), 1.),
}


def _bad_custom_jvp(n):
    @n.jax.custom_jvp
    def f(x):
        return n.jnp.sin(x)

    f.defjvp(lambda p, t: (f(p[0]), n.jnp.ones(3)))
    return f


# returns a str and a tuple, which jit cannot return: run eagerly by JAX too
NOT_JITTED = {"grad_allow_int_float0"}


@pytest.mark.parametrize("name", PROGRAMS)
def test_program_matches_jax(name):
    program = PROGRAMS[name] if name in NOT_JITTED else jax_jitted(PROGRAMS[name])
    check_program(program, rtol=3e-5, atol=3e-5)


@pytest.mark.parametrize("name", BAD_USES)
def test_bad_use_raises_jaxs_error(name):
    ours, theirs = run_both(BAD_USES[name])
    assert ours[0] == theirs[0] == "error", (ours, theirs)
    assert type(ours[1]) is not Exception
    assert type(ours[1]).__name__ == type(theirs[1]).__name__, (ours[1], theirs[1])


X64 = {
    "grad_float64": lambda n: _grad(n, lambda x: (n.jnp.sin(x) * x).sum(), X.astype(np.float64)),
    "jacrev_float64_scan": lambda n: n.jax.jacrev(lambda x: n.lax.scan(
        lambda c, a: (c * a, c), 1., x)[1])(X.astype(np.float64)),
    "jvp_python_scalar_x64": lambda n: n.jax.jvp(lambda x: x * 2., (3.,), (1.,)),
}


@pytest.mark.parametrize("name", X64)
def test_x64_program_matches_jax(name):
    with x64_mode():
        check_program(X64[name], rtol=1e-10, atol=1e-10)


def test_at_least_sixty_programs():
    assert len(PROGRAMS) + len(BAD_USES) + len(X64) >= 60
    assert minijax.grad is not None
