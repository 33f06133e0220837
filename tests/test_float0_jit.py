"""float0 under ``jit`` and ``make_jaxpr``, compared with JAX (issue 13).

The cotangent of an integer input (``grad(f, allow_int=True)``, ``vjp``) has dtype
float0: NumPy zeros that hold no bytes. Eagerly minijax already gave them; traced, the
value has to enter a jaxpr, a StableHLO module and come back out of a compiled program.
JAX writes it as the literal ``(b'',):float0[]`` (a ``broadcast_in_dim`` of it for other
shapes), lowers it as ``i1`` false, and hands back float0 zeros of the output's shape;
a float0 argument of ``jit`` (a cotangent passed back in) goes in as ``i1``.
"""

from __future__ import annotations

import numpy as np
import pytest

from minijax.compiler import xla_backend
from tests.oracle import check_jaxpr, check_program, namespaces

jax = pytest.importorskip("jax")

I3 = np.arange(3, dtype=np.int32)
F3 = np.ones(3, np.float32)
I23 = np.arange(6, dtype=np.int32).reshape(2, 3)
F23 = np.ones((2, 3), np.float32)


def _mul(x, y):
    return x * y


def _dot(x, y):
    return (x * y).sum()


def _tree(p):
    return p["a"] * p["b"].astype(np.float32).sum()


def _named(vjp_fun):
    """``vjp_fun`` in a lambda: the lowered module is named after the function, and JAX's
    vjp function has no name (``jit__unnamed_function``) where minijax's is ``vjp_fun``."""
    return lambda ct: vjp_fun(ct)


TREE = {"a": 2.0, "b": np.arange(2, dtype=np.int32)}

# name -> (function of a namespace giving the function to trace, its arguments)
PROGRAMS = {
    "grad_int_scalar": (lambda n: n.jax.grad(_mul, allow_int=True), (2, 3.0)),
    "grad_int_array": (lambda n: n.jax.grad(_dot, allow_int=True), (I3, F3)),
    "grad_argnums_int_float": (
        lambda n: n.jax.grad(_mul, argnums=(0, 1), allow_int=True), (2, 3.0)),
    "grad_pytree_int_leaf": (lambda n: n.jax.grad(_tree, allow_int=True), (TREE,)),
    "vmap_grad_int": (lambda n: n.jax.vmap(n.jax.grad(_mul, allow_int=True)), (I3, F3)),
    "vjp_int_input": (lambda n: lambda x: n.jax.vjp(_mul, x, 1.0)[1](1.0), (3,)),
    "vmap_of_jit_grad_int": (
        lambda n: n.jax.vmap(n.jax.jit(n.jax.grad(_dot, allow_int=True))), (I23, F23)),
    "jvp_of_jit_grad_int": (lambda n: lambda y, t: n.jax.jvp(
        lambda y: n.jax.jit(n.jax.grad(_dot, allow_int=True))(I3, y), (y,), (t,)), (F3, F3)),
    "float0_inputs": (lambda n: lambda x, y, z: (x, y * 2, z),
                      (np.zeros(2, jax.dtypes.float0), 1.0, np.zeros((), jax.dtypes.float0))),
    "vjp_fn_of_a_float0_cotangent": (
        lambda n: _named(n.jax.vjp(lambda a: a * 2, I3)[1]), (np.zeros(3, jax.dtypes.float0),)),
    "jacrev_int": (lambda n: n.jax.jacrev(_mul, allow_int=True), (I3, F3)),
    "jacrev_int_and_float": (
        lambda n: n.jax.jacrev(_mul, argnums=(0, 1), allow_int=True), (I3, F3)),
    "nested_jit_grad_int": (
        lambda n: lambda x, y: n.jax.jit(n.jax.grad(_mul, allow_int=True))(x, y), (2, 3.0)),
}


def _described(tree):
    """The leaves of ``tree``, a float0 one as (its class is a NumPy array, dtype, shape):
    JAX's float0 results are a NumPy subclass of its own, minijax's plain NumPy arrays,
    and NumPy cannot compare values that hold no bytes."""
    leaves = jax.tree_util.tree_leaves(tree)
    return [(isinstance(x, np.ndarray), str(x.dtype), x.shape)
            if x.dtype == jax.dtypes.float0 else x for x in leaves]


@pytest.mark.parametrize("name", PROGRAMS)
def test_jaxpr_prints_as_jaxs(name):
    fun, args = PROGRAMS[name]
    check_jaxpr(fun, *args)


@pytest.mark.parametrize("name", PROGRAMS)
def test_jitted_values_match_jax(name):
    fun, args = PROGRAMS[name]
    check_program(lambda n: _described(n.jax.jit(fun(n))(*args)))


@pytest.mark.parametrize("name", PROGRAMS)
def test_lowered_text_matches_jax(name):
    fun, args = PROGRAMS[name]
    ours, theirs = namespaces()
    got = ours.jax.jit(fun(ours)).lower(*args).as_text()
    assert got == theirs.jax.jit(fun(theirs)).lower(*args).as_text(), got


# name -> program of a namespace: a float0 result through other transformations
COMPOSITIONS = {
    "vmap_of_jit": lambda n: n.jax.vmap(n.jax.jit(n.jax.grad(_dot, allow_int=True)))(I23, F23),
    "jvp_of_jit_grad": lambda n: n.jax.jvp(
        lambda y: n.jax.jit(n.jax.grad(_dot, allow_int=True))(I3, y), (F3,), (F3,)),
    "jit_grad_of_jit": lambda n: n.jax.jit(n.jax.grad(
        lambda x, y: n.jax.jit(_dot)(x, y), allow_int=True))(I3, F3),
    "jit_vjp_float0_cotangent": lambda n: n.jax.jit(lambda x: n.jax.vjp(
        lambda a: a * 2, x)[1](np.zeros(3, n.jax.dtypes.float0)))(I3),
    "jacrev_int_eager": lambda n: n.jax.jacrev(_mul, argnums=(0, 1), allow_int=True)(I3, F3),
    "vmap_grad_int_eager": lambda n: n.jax.vmap(n.jax.grad(_mul, allow_int=True))(I3, F3),
    "jit_cond": lambda n: n.jax.jit(lambda p, x, y: n.lax.cond(
        p, lambda: n.jax.grad(_dot, allow_int=True)(x, y),
        lambda: n.jax.grad(_dot, allow_int=True)(x, y)))(True, I3, F3),
}


@pytest.mark.parametrize("name", COMPOSITIONS)
def test_float0_through_compositions_matches_jax(name):
    check_program(lambda n: _described(COMPOSITIONS[name](n)))


def test_a_jaxpr_with_a_float0_broadcast_evaluates_eagerly():
    """The broadcast of the float0 literal runs in NumPy: there is nothing to compute."""
    import minijax
    from minijax.jaxpr import eval_closed_jaxpr

    closed = minijax.make_jaxpr(minijax.grad(_dot, allow_int=True))(I3, F3)
    (out,) = eval_closed_jaxpr(closed, I3, F3)
    assert out.dtype == minijax.dtypes.float0 and out.shape == (3,)


@pytest.mark.skipif(not xla_backend.available(), reason="no usable jax.extend")
def test_real_xla_runs_the_lowered_float0_as_false():
    import minijax

    text = minijax.jit(minijax.grad(_mul, argnums=(0, 1), allow_int=True)).lower(
        2, 3.0).as_text()
    zero, grad_y = xla_backend.compile(text)(np.int32(2))
    assert zero.dtype == np.bool_ and not zero and grad_y == 2.0


def test_jitted_float0_is_numpy_zeros_of_the_output_shape():
    import minijax

    out = minijax.jit(minijax.grad(_dot, allow_int=True))(I3, F3)
    assert type(out) is np.ndarray
    assert out.dtype == minijax.dtypes.float0 and out.shape == (3,)


def test_eager_grad_is_unchanged():
    check_program(lambda n: _described(n.jax.grad(_dot, allow_int=True)(I3, F3)))
