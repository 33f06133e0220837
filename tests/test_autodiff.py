"""The differentiation API against JAX: ``jvp``, ``vjp``, ``grad``, ``value_and_grad``,
``jacfwd``, ``jacrev``, ``hessian`` and ``linearize`` on pytrees, with ``argnums``,
``has_aux``, ``holomorphic`` and ``allow_int``; JAX's errors for bad uses (class and
message); composition to fourth order; and inputs left untouched.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import minijax
import minijax.numpy as mjnp
from tests.oracle import check_program, run_both

jax = pytest.importorskip("jax")

X = np.array([0.3, -1.2, 2.0], np.float32)
Y = np.array([[1.0, 2.0], [0.5, -1.0]], np.float32)


def show_float0(n: Any, tree: Any) -> Any:
    """float0 leaves as (name, shape), which the oracle can compare."""
    return n.jax.tree_util.tree_map(
        lambda x: ("float0", x.shape) if getattr(x, "dtype", None) == n.jax.dtypes.float0
        else x, tree)


def loss(n: Any, params: dict, x: Any) -> Any:
    """A small model: pytree parameters in, a scalar out."""
    hidden = n.jnp.tanh(x @ params["w"] + params["b"])
    return n.jnp.sum(hidden ** 2) + params["scale"] * n.jnp.sum(x)


PARAMS = {"w": np.array([[0.1, -0.2], [0.3, 0.4], [-0.5, 0.6]], np.float32),
          "b": np.array([0.1, -0.1], np.float32), "scale": np.float32(0.5)}

PROGRAMS = {
    "grad pytree": lambda n: n.jax.grad(lambda p: loss(n, p, X))(PARAMS),
    "grad argnums tuple": lambda n: n.jax.grad(lambda p, x: loss(n, p, x), (0, 1))(PARAMS, X),
    "grad argnums negative": lambda n: n.jax.grad(lambda p, x: loss(n, p, x), -1)(PARAMS, X),
    "grad list input": lambda n: n.jax.grad(lambda l: l[0] * l[1])([1.0, 2.0]),
    "grad weak scalar": lambda n: n.jax.grad(lambda x: x * 2.0)(1.0),
    "grad keyword argument": lambda n: n.jax.grad(lambda x, k: x * k)(2.0, k=3.0),
    "value_and_grad": lambda n: n.jax.value_and_grad(lambda p: loss(n, p, X))(PARAMS),
    "value_and_grad has_aux": lambda n: n.jax.value_and_grad(
        lambda x: (n.jnp.sum(x ** 2), {"mean": n.jnp.mean(x)}), has_aux=True)(X),
    "grad has_aux": lambda n: n.jax.grad(lambda x: (x * x, [x * 3, "label"]), has_aux=True)(2.0),
    "jvp pytree": lambda n: n.jax.jvp(lambda p: {"out": loss(n, p, X), "w": p["w"] * 2},
                                      (PARAMS,), (PARAMS,)),
    "jvp has_aux": lambda n: n.jax.jvp(lambda x: (n.jnp.sin(x), n.jnp.cos(x)), (X,), (X,),
                                       has_aux=True),
    "jvp list primals": lambda n: n.jax.jvp(lambda a, b: a * b, [X, X[::-1]], [X, X]),
    "vjp pytree": lambda n: n.jax.vjp(lambda p: (loss(n, p, X), p["b"] * p["scale"]),
                                      PARAMS)[1]((np.float32(1.0), np.ones(2, np.float32))),
    "vjp has_aux": lambda n: (lambda out: (out[0], out[1](X), out[2]))(
        n.jax.vjp(lambda x: (n.jnp.exp(x), x.sum()), X, has_aux=True)),
    "vjp several inputs": lambda n: n.jax.vjp(lambda a, b: a @ b, Y, Y.T)[1](Y),
    "vjp int output": lambda n: n.jax.vjp(lambda x: ((x * 2).astype(n.jnp.int32), x * 3),
                                          X)[1]((np.zeros(3, np.int32), X)),
    "vjp int input": lambda n: show_float0(n, n.jax.vjp(lambda x, i: x * i, X, 2)[1](X)),
    "allow_int": lambda n: show_float0(n, n.jax.grad(lambda x, i: x * i, (0, 1),
                                                     allow_int=True)(2.0, 3)),
    "jvp int input float0": lambda n: show_float0(n, n.jax.jvp(
        lambda x, i: x * i, (2.0, 3), (1.0, np.zeros((), n.jax.dtypes.float0)))),
    "holomorphic": lambda n: n.jax.grad(lambda z: z * z * 1j, holomorphic=True)(1.0 + 1.0j),
    "jacfwd": lambda n: n.jax.jacfwd(lambda x: n.jnp.sin(x) * x.sum())(X),
    "jacrev": lambda n: n.jax.jacrev(lambda x: n.jnp.sin(x) * x.sum())(X),
    "jacfwd pytree argnums": lambda n: n.jax.jacfwd(
        lambda a, b: {"p": a * b[0], "q": b}, (0, 1))(X, (np.float32(2.0), Y)),
    "jacrev pytree argnums": lambda n: n.jax.jacrev(
        lambda a, b: {"p": a * b[0], "q": b}, (0, 1))(X, (np.float32(2.0), Y)),
    "jacrev has_aux": lambda n: n.jax.jacrev(lambda x: (x ** 2, x.sum()), has_aux=True)(X),
    "jacfwd scalar": lambda n: n.jax.jacfwd(lambda x: x ** 3)(2.0),
    "hessian multivariate": lambda n: n.jax.hessian(
        lambda x, y: n.jnp.sum(n.jnp.sin(x) * y ** 2) + x[0] * x[1] * y[1], (0, 1))(
        X[:2], X[1:]),
    "hessian pytree": lambda n: n.jax.hessian(lambda p: loss(n, p, X))(
        {"w": PARAMS["w"], "b": PARAMS["b"], "scale": PARAMS["scale"]}),
    "linearize": lambda n: (lambda out: (out[0], out[1](X), out[1](X * 2)))(
        n.jax.linearize(lambda x: n.jnp.sin(x) * x, X)),
    "linearize pytree": lambda n: (lambda out: out[1](PARAMS))(
        n.jax.linearize(lambda p: loss(n, p, X), PARAMS)),
    "stop_gradient": lambda n: n.jax.grad(lambda x: x * n.lax.stop_gradient(x * x))(3.0),
    "closure over traced value": lambda n: n.jax.grad(
        lambda x: n.jax.grad(lambda y: x * y * y)(x))(1.5),
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_api(name: str) -> None:
    check_program(PROGRAMS[name], rtol=1e-5, atol=1e-6)


COMPOSITION = {
    "grad^4 sin": lambda n: n.jax.grad(n.jax.grad(n.jax.grad(n.jax.grad(n.jnp.sin))))(0.7),
    "grad^4 tanh": lambda n: n.jax.grad(n.jax.grad(n.jax.grad(n.jax.grad(n.jnp.tanh))))(0.3),
    "grad^4 x exp x": lambda n: n.jax.grad(n.jax.grad(n.jax.grad(n.jax.grad(
        lambda x: x * n.jnp.exp(x)))))(0.5),
    "grad^3 of a vector function": lambda n: n.jax.grad(n.jax.grad(n.jax.grad(
        lambda x: n.jnp.sum(n.jnp.log1p(x * x) * n.jnp.arange(1.0, 4.0) * x))))(0.4),
    "jacfwd of jacrev": lambda n: n.jax.jacfwd(n.jax.jacrev(
        lambda x: n.jnp.sin(x) * n.jnp.cumsum(x)))(X),
    "jacrev of jacfwd": lambda n: n.jax.jacrev(n.jax.jacfwd(
        lambda x: n.jnp.max(x) * x))(X),
    "jvp of vjp": lambda n: n.jax.jvp(
        lambda x: n.jax.vjp(lambda y: n.jnp.sin(y) * y, x)[1](n.jnp.cos(x)), (X,), (X,)),
    "vjp of jvp": lambda n: n.jax.vjp(
        lambda x: n.jax.jvp(lambda y: n.jnp.exp(y) / y, (x,), (x,))[1], X + 3)[1](X),
    "hessian-vector product": lambda n: n.jax.jvp(n.jax.grad(
        lambda x: n.jnp.sum(n.jnp.tanh(x) ** 3)), (X,), (X[::-1],)),
    "grad of value_and_grad": lambda n: n.jax.grad(lambda x: n.jax.value_and_grad(
        lambda y: n.jnp.sin(y) * y)(x)[1])(0.8),
    "grad through linearize": lambda n: n.jax.grad(lambda x: n.jax.linearize(
        n.jnp.sin, x)[1](x * 2))(0.3),
}


@pytest.mark.parametrize("name", sorted(COMPOSITION))
def test_composition(name: str) -> None:
    check_program(COMPOSITION[name], rtol=1e-5, atol=1e-6)


ERRORS = {
    "grad of a non-scalar": lambda n: n.jax.grad(lambda x: x * 2)(X),
    "value_and_grad of a non-scalar": lambda n: n.jax.value_and_grad(lambda x: x)(X),
    "grad w.r.t. an integer": lambda n: n.jax.grad(lambda x: x * 2)(3),
    "grad of an integer output": lambda n: n.jax.grad(lambda x: (x * 2).astype(int).sum())(1.0),
    "grad of a complex output": lambda n: n.jax.grad(lambda x: x * 1j)(1.0),
    "grad holomorphic real input": lambda n: n.jax.grad(lambda z: z * z, holomorphic=True)(1.0),
    "grad argnums out of range": lambda n: n.jax.grad(lambda x: x, 1)(2.0),
    "grad has_aux without pair": lambda n: n.jax.grad(lambda x: x, has_aux=True)(2.0),
    "vjp cotangent shape": lambda n: n.jax.vjp(lambda x: x * 2, X)[1](np.ones(2, np.float32)),
    "vjp cotangent dtype": lambda n: n.jax.vjp(lambda x: x * 2, X)[1](np.ones(3, np.int32)),
    "vjp cotangent float16": lambda n: n.jax.vjp(lambda x: x * 2, X)[1](
        np.ones(3, np.float16)),
    "jvp tangent dtype": lambda n: n.jax.jvp(lambda x: x * 2, (X,), (np.ones(3, np.int32),)),
    "jvp tangent float16": lambda n: n.jax.jvp(lambda x: x * 2, (X,),
                                               (np.ones(3, np.float16),)),
    "jvp tangent shape": lambda n: n.jax.jvp(lambda x: x * 2, (X,), (np.ones(2, np.float32),)),
    "jvp int primal float tangent": lambda n: n.jax.jvp(lambda i: i * 2, (3,), (1.0,)),
    "jvp primals not a tuple": lambda n: n.jax.jvp(lambda x: x * 2, X, X),
    "jvp tree mismatch": lambda n: n.jax.jvp(lambda x: x * 2, (X,), ((X,),)),
    "jacfwd integer input": lambda n: n.jax.jacfwd(lambda x: x)(3),
    "jacrev integer input": lambda n: n.jax.jacrev(lambda x: x)(3),
    "linearize tangent shape": lambda n: n.jax.linearize(n.jnp.sin, X)[1](
        np.ones(2, np.float32)),
}
# Errors whose message is JAX's word for word (the others name the problem in their own
# words but raise JAX's exception class).
SAME_MESSAGE = set(ERRORS) - {"grad has_aux without pair", "jvp primals not a tuple",
                              "jvp tree mismatch"}


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_errors(name: str) -> None:
    (our_kind, ours), (their_kind, theirs) = run_both(ERRORS[name])
    assert their_kind == "error", theirs
    assert our_kind == "error", f"minijax returned {ours!r}; JAX raised {theirs!r}"
    assert type(ours).__name__ == type(theirs).__name__, (ours, theirs)
    if name in SAME_MESSAGE:
        assert str(ours) == str(theirs)


def test_vjp_tree_mismatch_is_a_value_error() -> None:
    check_program(lambda n: n.jax.vjp(lambda x: (x * 2, x), X)[1](X))


def test_inputs_are_not_mutated() -> None:
    x_np = X.copy()
    params = {k: np.array(v, copy=True) for k, v in PARAMS.items()}
    x_mj = mjnp.asarray(X)
    before = np.asarray(x_mj).copy()
    ns = type("ns", (), {"jnp": mjnp, "jax": minijax})
    minijax.grad(lambda p, x: loss(ns, p, x), (0, 1))(params, x_np)
    minijax.hessian(lambda x: mjnp.sum(mjnp.sin(x) * x))(x_mj)
    minijax.vjp(lambda x: x.at[0].set(5.0), x_mj)[1](x_mj)
    np.testing.assert_array_equal(x_np, X)
    np.testing.assert_array_equal(np.asarray(x_mj), before)
    for k in PARAMS:
        np.testing.assert_array_equal(params[k], PARAMS[k])


def test_vjp_function_is_reusable_and_linear() -> None:
    out, f_vjp = minijax.vjp(lambda x: mjnp.sin(x) * x, X)
    (once,) = f_vjp(np.ones(3, np.float32))
    (twice,) = f_vjp(2 * np.ones(3, np.float32))
    np.testing.assert_allclose(np.asarray(twice), 2 * np.asarray(once), rtol=1e-6)


def test_grad_does_not_rerun_python_for_the_backward_pass() -> None:
    """``vjp`` linearizes once: calling its function does not run ``f`` again."""
    calls = []

    def f(x: Any) -> Any:
        calls.append(1)
        return mjnp.sum(mjnp.sin(x))

    _, f_vjp = minijax.vjp(f, X)
    f_vjp(np.float32(1.0))
    f_vjp(np.float32(2.0))
    assert len(calls) == 1


def test_grad_of_small_function_is_cheap() -> None:
    """No timing assertion: count the primitives the backward pass runs (a check that
    the linearization is not bloated)."""
    closed = minijax.make_jaxpr(minijax.grad(lambda x: mjnp.sin(x) * x))(1.0)
    assert len(closed.eqns) <= 8
