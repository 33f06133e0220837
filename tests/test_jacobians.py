"""``jacfwd``, ``jacrev``, ``jacobian`` and ``hessian`` against JAX: values, dtypes, weak
types and printed jaxprs. Both are built on ``vmap`` as JAX builds them: a JVP mapped over
the standard basis of the inputs, a VJP mapped over the standard basis of the outputs."""

from __future__ import annotations

import numpy as np
import pytest

from tests.oracle import check_jaxpr, check_program, run_both

jax = pytest.importorskip("jax")

F32 = np.float32
V = np.array([0.5, -1.5, 2.0], F32)
M = np.arange(6, dtype=F32).reshape(2, 3) / 4 - 0.5
S = F32(1.25)
C = np.array([1 + 2j, -0.5j], np.complex64)


def _sum_sin(n):
    return lambda v: n.jnp.sum(n.jnp.sin(v))


def _pytree_out(n):
    return lambda a, b: {"p": a * b, "s": n.jnp.sum(a), "m": (M @ a,)}


def _dict_in(n):
    return lambda p: n.jnp.tanh(p["w"] @ p["x"] + p["b"])


PARAMS = {"w": M, "x": V, "b": F32(0.5)}

# name: (function of the namespace, args); each is differentiated by every transform
FUNCTIONS = {
    "sin": (lambda n: n.jnp.sin, (V,)),
    "sin_scalar": (lambda n: n.jnp.sin, (S,)),
    "product": (lambda n: lambda v: v * v[::-1], (V,)),
    "matvec": (lambda n: lambda v: M @ v, (V,)),
    "matrix_input": (lambda n: lambda m: m @ m.T, (M,)),
    "sum": (lambda n: lambda v: v.sum(), (V,)),
    "sum_sin": (_sum_sin, (V,)),
    "quadratic_form": (lambda n: lambda v: v @ M.T @ M @ v, (V,)),
    "dict_input": (_dict_in, (PARAMS,)),
    "python_float_input": (lambda n: lambda x: x * x, (2.0,)),
    "constant_output": (lambda n: lambda v: n.jnp.ones(2), (V,)),
}

TRANSFORMS = {
    "jacfwd": lambda n, f: n.jax.jacfwd(f),
    "jacrev": lambda n, f: n.jax.jacrev(f),
    "jacobian": lambda n, f: n.jax.jacobian(f),
    "hessian": lambda n, f: n.jax.hessian(f),
}

CASES = [(t, f) for t in TRANSFORMS for f in FUNCTIONS]


@pytest.mark.parametrize("transform,name", CASES)
def test_values_match_jax(transform, name):
    fun, args = FUNCTIONS[name]
    check_program(lambda n: TRANSFORMS[transform](n, fun(n))(*args))


@pytest.mark.parametrize("transform,name", CASES)
def test_jaxprs_match_jax(transform, name):
    fun, args = FUNCTIONS[name]
    check_jaxpr(lambda n: TRANSFORMS[transform](n, fun(n)), *args)


# name: (function of the namespace giving the transformed function, args)
OPTIONS = {
    "jacfwd_argnums": (lambda n: n.jax.jacfwd(_pytree_out(n), argnums=(0, 1)), (V, S)),
    "jacrev_argnums": (lambda n: n.jax.jacrev(_pytree_out(n), argnums=(0, 1)), (V, S)),
    "jacfwd_argnum_1": (lambda n: n.jax.jacfwd(_pytree_out(n), argnums=1), (V, S)),
    "jacrev_argnum_negative": (lambda n: n.jax.jacrev(_pytree_out(n), argnums=-1), (V, S)),
    "hessian_argnums": (lambda n: n.jax.hessian(lambda a, b: n.jnp.sum(a * a) * b * b,
                                                argnums=(0, 1)), (V, S)),
    "jacfwd_has_aux": (lambda n: n.jax.jacfwd(lambda v: (n.jnp.sin(v), {"aux": v * 2}),
                                              has_aux=True), (V,)),
    "jacrev_has_aux": (lambda n: n.jax.jacrev(lambda v: (n.jnp.sin(v), v.sum()),
                                              has_aux=True), (V,)),
    "hessian_has_aux": (lambda n: n.jax.hessian(lambda v: ((v ** 3).sum(), v[0]),
                                                has_aux=True), (V,)),
    "jacfwd_holomorphic": (lambda n: n.jax.jacfwd(lambda z: z * z, holomorphic=True), (C,)),
    "jacrev_holomorphic": (lambda n: n.jax.jacrev(lambda z: n.jnp.sin(z), holomorphic=True),
                           (C,)),
    "jacfwd_mixed_dtypes": (lambda n: n.jax.jacfwd(lambda a, b: a * b.astype(F32).sum(),
                                                   argnums=(0, 1)),
                            (V, np.ones(2, np.float16))),
    "jacrev_mixed_dtypes": (lambda n: n.jax.jacrev(lambda a: (a, a.astype(np.float16))),
                            (V,)),
    "jacfwd_output_dtype": (lambda n: n.jax.jacfwd(lambda a: a.astype(np.float16)), (V,)),
    "jacrev_of_jacfwd": (lambda n: n.jax.jacrev(n.jax.jacfwd(n.jnp.sin)), (V,)),
    "jacfwd_of_jit": (lambda n: n.jax.jacfwd(n.jax.jit(_sum_sin(n))), (V,)),
    "jit_of_jacrev": (lambda n: n.jax.jit(n.jax.jacrev(n.jnp.sin)), (V,)),
    "vmap_of_jacrev": (lambda n: n.jax.vmap(n.jax.jacrev(n.jnp.sin)), (M,)),
    "jacfwd_kwargs": (lambda n: lambda v: n.jax.jacfwd(lambda v, *, s: v * s)(v, s=S), (V,)),
}


@pytest.mark.parametrize("name", OPTIONS)
def test_options_match_jax(name):
    fun, args = OPTIONS[name]
    check_program(lambda n: fun(n)(*args))


@pytest.mark.parametrize("name", OPTIONS)
def test_option_jaxprs_match_jax(name):
    fun, args = OPTIONS[name]
    check_jaxpr(fun, *args)


ERRORS = {
    "jacfwd_int_input": lambda n: n.jax.jacfwd(lambda k: k * 2)(np.int32(3)),
    "jacfwd_complex_input": lambda n: n.jax.jacfwd(lambda z: z * 2)(C),
    "jacfwd_holomorphic_real_input": lambda n: n.jax.jacfwd(n.jnp.sin, holomorphic=True)(V),
    "jacfwd_holomorphic_real_output": lambda n: n.jax.jacfwd(
        lambda z: n.jnp.abs(z), holomorphic=True)(C),
    "jacrev_int_input": lambda n: n.jax.jacrev(lambda k: k * 2.0)(np.int32(3)),
    "jacrev_int_output": lambda n: n.jax.jacrev(lambda v: (v > 0).astype(np.int32))(V),
    "jacrev_complex_output": lambda n: n.jax.jacrev(lambda v: v * 1j)(V),
    "jacrev_holomorphic_real_output": lambda n: n.jax.jacrev(
        lambda z: n.jnp.abs(z), holomorphic=True)(C),
    "jacrev_argnums_out_of_range": lambda n: n.jax.jacrev(n.jnp.sin, argnums=1)(V),
    "jacfwd_argnums_out_of_range": lambda n: n.jax.jacfwd(n.jnp.sin, argnums=-2)(V),
    "jacfwd_string_input": lambda n: n.jax.jacfwd(lambda s: s)("s"),
}


@pytest.mark.parametrize("name", ERRORS)
def test_errors_match_jax(name):
    (ours_kind, ours), (theirs_kind, theirs) = run_both(ERRORS[name])
    assert theirs_kind == "error", theirs
    assert ours_kind == "error", ours
    assert type(ours).__name__ == type(theirs).__name__, (ours, theirs)
    assert str(ours) == str(theirs)


def test_jacfwd_is_one_vmapped_jvp():
    """The function is traced once, whatever the number of input elements."""
    import minijax

    calls = []

    def f(v):
        calls.append(1)
        return minijax.numpy.sin(v)

    minijax.jacfwd(f)(np.ones(5, F32))
    minijax.jacrev(f)(np.ones(5, F32))
    assert len(calls) == 2
