"""Functions learners reach for that minijax lacked, and behaviours that differed from JAX.

Every test runs one program against minijax and against JAX (``tests/oracle.py``):
``jnp.pad``; ``nonzero``/``argwhere``/``where``/``unique`` and the set functions, eager
and under ``jit`` with ``size=``; ``lax.pow`` with integer exponents; the special-function
primitives (``erf``, ``lgamma``, ``digamma``, ...) and ``jax.scipy.special``; integer input
to ``cholesky``/``eigh``; complex ``atan2`` under ``jit``; and a sweep of further ``jnp``
functions (``diff``, ``convolve``, ``interp``, ``histogram``, ``cov``, ...).
"""

from __future__ import annotations

import numpy as np
import pytest
from oracle import (
    assert_same_error,
    assert_traced_matches_eager,
    check_jaxpr,
    check_program,
    jax_jitted,
    run_both,
)

jax = pytest.importorskip("jax")

import minijax  # noqa: E402
import minijax.numpy as mjnp  # noqa: E402
from minijax import lax as mlax  # noqa: E402

F = np.array([[1.5, 2.0, 3.0], [0.0, 1.0, -1.0]], np.float32)
I = np.array([[3, 1, 4], [1, 5, 9]], np.int32)
NANS = np.array([[1.0, np.nan, 3.0], [np.nan, np.nan, np.nan]], np.float32)


def special(ns):
    return ns.jax.scipy.special


# ---------------------------------------------------------------------------------------
# jnp.pad
# ---------------------------------------------------------------------------------------

PAD_MODES = ["constant", "edge", "reflect", "symmetric", "wrap", "linear_ramp", "maximum",
             "minimum", "mean", "median", "empty"]


@pytest.mark.parametrize("mode", PAD_MODES)
@pytest.mark.parametrize("pad_width", [1, (5, 4), ((0, 3), (2, 7))])
def test_pad_modes(mode, pad_width):
    for array in (np.arange(6.0).reshape(2, 3), I):
        check_program(jax_jitted(lambda ns, a=array: ns.jnp.pad(a, pad_width, mode=mode)))


@pytest.mark.parametrize("kwargs", [
    dict(constant_values=3), dict(constant_values=((1, 2), (3, 4))),
    dict(constant_values=(7, 8)), dict(constant_values=1.7),
    dict(mode="reflect", reflect_type="odd"), dict(mode="symmetric", reflect_type="odd"),
    dict(mode="linear_ramp", end_values=(5, -5)), dict(mode="maximum", stat_length=1),
    dict(mode="minimum", stat_length=((1, 2), (2, 1))), dict(mode="mean", stat_length=2),
])
def test_pad_options(kwargs):
    check_program(jax_jitted(lambda ns: ns.jnp.pad(I, ((2, 3), (1, 4)), **kwargs)))


def test_pad_one_element_reflects_as_edge():
    check_program(lambda ns: ns.jnp.pad(np.array([7]), (2, 3), mode="reflect"))


@pytest.mark.parametrize("fun", [
    lambda x: lambda ns: ns.jnp.pad(x, 1),
    lambda x: lambda ns: ns.jnp.pad(x, ((1, 2), (0, 1)), constant_values=3),
    lambda x: lambda ns: ns.jnp.pad(x, ((1, 2), (0, 1)), constant_values=((1, 2), (3, 4))),
    lambda x: lambda ns: ns.jnp.pad(x, 1, constant_values=(7, 8)),
])
def test_pad_constant_jaxprs_match(fun):
    check_jaxpr(lambda ns: lambda x: fun(x)(ns), F)


def test_pad_traced_constant_jaxpr_matches():
    check_jaxpr(lambda ns: lambda x, c: ns.jnp.pad(x, 1, constant_values=c), F, np.float32(2))


@pytest.mark.parametrize("program, error, words", [
    (lambda ns: ns.jnp.pad(F, 1, mode="foo"), NotImplementedError, ["foo"]),
    (lambda ns: ns.jnp.pad(F, -1), ValueError, ["negative"]),
    (lambda ns: ns.jnp.pad(F, 1.5), TypeError, ["integral"]),
    (lambda ns: ns.jnp.pad(F, (1, 2, 3)), ValueError, ["unsupported shape (3,)"]),
    (lambda ns: ns.jnp.pad(F, 1, mode="edge", constant_values=1), ValueError,
     ["constant_values"]),
    (lambda ns: ns.jnp.pad(np.zeros((0, 3)), 1, mode="reflect"), ValueError, ["empty axis"]),
    (lambda ns: ns.jnp.pad(np.arange(3), 1, mode="maximum", stat_length=0), ValueError,
     ["stat_length"]),
])
def test_pad_bad_input(program, error, words):
    assert_same_error(program, error, words)


def test_pad_under_jit_and_grad():
    check_program(lambda ns: ns.jax.jit(lambda x: ns.jnp.pad(x, 2, mode="reflect"))(F))
    check_program(lambda ns: ns.jax.grad(lambda x: (ns.jnp.pad(x, 1, mode="edge") ** 2).sum())(F))
    assert_traced_matches_eager(lambda x: mjnp.pad(x, ((1, 0), (2, 1)), mode="symmetric"), F)


# ---------------------------------------------------------------------------------------
# nonzero, argwhere, flatnonzero, one-argument where, compress, extract
# ---------------------------------------------------------------------------------------

A = np.array([[3, 1, 3], [2, 0, 0]], np.int32)


@pytest.mark.parametrize("program", [
    lambda ns: ns.jnp.nonzero(A),
    lambda ns: ns.jnp.nonzero(A, size=6, fill_value=(7, 8)),
    lambda ns: ns.jnp.nonzero(A, size=2),
    lambda ns: ns.jnp.nonzero(np.array([True, False, True]), size=4, fill_value=-1),
    lambda ns: ns.jnp.nonzero(np.zeros((0, 3))),
    lambda ns: ns.jnp.nonzero(np.zeros((2, 3))),
    lambda ns: ns.jnp.argwhere(A),
    lambda ns: ns.jnp.argwhere(5),
    lambda ns: ns.jnp.argwhere(0),
    lambda ns: ns.jnp.argwhere(A, size=6, fill_value=-1),
    lambda ns: ns.jnp.flatnonzero(A),
    lambda ns: ns.jnp.where(A),
    lambda ns: ns.jnp.where(A > 1, size=5),
    lambda ns: ns.jnp.extract(np.array([1, 0, 1]), np.array([4, 5, 6])),
    lambda ns: ns.jnp.extract(np.array([1, 0, 1]), np.array([4, 5, 6]), size=3, fill_value=9),
    lambda ns: ns.jnp.compress(np.array([1, 0, 1]), A, axis=1),
    lambda ns: ns.jnp.compress(np.array([0, 1]), A, axis=0, size=2, fill_value=-3),
    lambda ns: ns.jax.jit(lambda a: ns.jnp.nonzero(a, size=4))(A),
    lambda ns: ns.jax.jit(lambda a: ns.jnp.argwhere(a, size=3))(A),
])
def test_nonzero_family(program):
    check_program(program)


@pytest.mark.parametrize("fun", ["nonzero", "argwhere", "flatnonzero", "where"])
def test_nonzero_under_jit_needs_size(fun):
    assert_same_error(lambda ns: ns.jax.jit(getattr(ns.jnp, fun))(A),
                      jax.errors.ConcretizationTypeError,
                      ["The size argument of jnp.nonzero must be statically specified"])


def test_nonzero_of_a_scalar_is_an_error():
    assert_same_error(lambda ns: ns.jnp.nonzero(3), ValueError, ["0d arrays"])


@pytest.mark.parametrize("shape", [(4,), (2, 2)])
def test_nonzero_jaxpr_matches(shape):
    x = np.array([0, 3, 0, 4], np.int32).reshape(shape)
    check_jaxpr(lambda ns: lambda x: ns.jnp.nonzero(x, size=3), x)
    check_jaxpr(lambda ns: lambda x: ns.jnp.nonzero(x, size=3, fill_value=-1), x)


# ---------------------------------------------------------------------------------------
# unique and the set functions
# ---------------------------------------------------------------------------------------

WITH_NANS = np.array([1.0, np.nan, np.nan, 2, -1, 2], np.float32)


@pytest.mark.parametrize("program", [
    lambda ns: ns.jnp.unique(A),
    lambda ns: ns.jnp.unique(A, return_index=True, return_inverse=True, return_counts=True),
    lambda ns: ns.jnp.unique(A, size=6),
    lambda ns: ns.jnp.unique(A, size=6, fill_value=-1),
    lambda ns: ns.jnp.unique(A, size=2),
    lambda ns: ns.jnp.unique(A, axis=1, return_index=True, return_inverse=True,
                             return_counts=True),
    lambda ns: ns.jnp.unique(np.array([[1, 2], [1, 2], [0, 5]]), axis=0, return_counts=True),
    lambda ns: ns.jnp.unique(WITH_NANS),
    lambda ns: ns.jnp.unique(WITH_NANS, equal_nan=False),
    lambda ns: ns.jnp.unique(WITH_NANS, return_counts=True, return_inverse=True),
    lambda ns: ns.jnp.unique(np.array(3)),
    lambda ns: ns.jnp.unique(np.array([], np.int32)),
    lambda ns: tuple(ns.jnp.unique_counts(A)),
    lambda ns: tuple(ns.jnp.unique_inverse(A)),
    lambda ns: tuple(ns.jnp.unique_all(A)),
    lambda ns: ns.jnp.unique_values(A),
    lambda ns: ns.jax.jit(lambda a: ns.jnp.unique(a, size=3, return_counts=True))(A),
    lambda ns: ns.jax.jit(lambda a: ns.jnp.unique(a, size=5, return_index=True,
                                                  return_inverse=True))(A),
])
def test_unique(program):
    check_program(program)


def test_unique_under_jit_needs_size():
    assert_same_error(lambda ns: ns.jax.jit(ns.jnp.unique)(A),
                      jax.errors.ConcretizationTypeError,
                      ["jnp.unique()", "specify a concrete value for the size argument"])


def test_unique_of_empty_input_with_size_needs_fill_value():
    assert_same_error(lambda ns: ns.jnp.unique(np.array([], np.int32), size=2), ValueError,
                      ["fill_value must be specified"])


X1, X2 = np.array([1, 2, 3, 2]), np.array([2, 5, 3])


@pytest.mark.parametrize("program", [
    lambda ns: ns.jnp.isin(A, np.array([1, 3])),
    lambda ns: ns.jnp.isin(A, 3),
    lambda ns: ns.jnp.isin(A, np.array([1, 3]), invert=True),
    lambda ns: ns.jnp.isin(WITH_NANS, WITH_NANS),
    lambda ns: ns.jnp.union1d(X1, X2),
    lambda ns: ns.jnp.union1d(X1, X2, size=6),
    lambda ns: ns.jnp.intersect1d(X1, X2),
    lambda ns: ns.jnp.intersect1d(X1, X2.astype(np.float32), size=4),
    lambda ns: ns.jnp.setdiff1d(X1, X2),
    lambda ns: ns.jnp.setdiff1d(X1, X2, size=4),
    lambda ns: ns.jnp.setxor1d(X1, X2),
    lambda ns: ns.jnp.setxor1d(X1, X2, size=5),
    lambda ns: ns.jax.jit(lambda a, b: ns.jnp.setdiff1d(a, b, size=3, fill_value=-1))(X1, X2),
])
def test_set_functions(program):
    check_program(program)


# ---------------------------------------------------------------------------------------
# lax.pow with an integer exponent
# ---------------------------------------------------------------------------------------

BASES = np.array([1.5, 2.0, 3.0], np.float32)
EXPONENTS = np.array([2, -1, 0], np.int32)


@pytest.mark.parametrize("program", [
    lambda ns: ns.lax.pow(BASES, EXPONENTS),
    lambda ns: ns.lax.pow(BASES, np.int8(3)),
    lambda ns: ns.lax.pow(2.0, 3),
    lambda ns: ns.lax.pow(BASES.astype(np.complex64), EXPONENTS),
    lambda ns: ns.lax.pow(BASES, np.array([1, 2, 3], np.uint8)),
    lambda ns: ns.lax.pow(np.float32(0), np.int32(-1)),
    lambda ns: ns.jax.jit(ns.lax.pow)(BASES, EXPONENTS),
    lambda ns: ns.jnp.power(BASES, EXPONENTS),
    lambda ns: ns.jax.grad(lambda x: ns.lax.pow(x, EXPONENTS).sum())(BASES),
    lambda ns: ns.jax.grad(lambda x: ns.lax.pow(x, 0))(0.0),
    lambda ns: ns.jax.jvp(lambda x: ns.lax.pow(x, EXPONENTS[0]), (BASES,), (BASES,)),
])
def test_pow_integer_exponent(program):
    check_program(program)


@pytest.mark.parametrize("program, words", [
    (lambda ns: ns.lax.pow(BASES, BASES.astype(np.float16)), ["float32 and float16"]),
    (lambda ns: ns.lax.pow(EXPONENTS, EXPONENTS), ["pow does not accept dtype int32"]),
    (lambda ns: ns.lax.pow(BASES, np.array([True] * 3)), ["bool at position 1"]),
    (lambda ns: ns.lax.pow(np.ones((2, 3), np.float32), EXPONENTS), ["number of dimensions"]),
])
def test_pow_bad_input(program, words):
    assert_same_error(program, TypeError, words)


@pytest.mark.parametrize("fun", [
    lambda ns: ns.lax.pow,
    lambda ns: ns.jnp.power,
    lambda ns: lambda x, y: ns.jax.grad(lambda x: ns.lax.pow(x, y).sum())(x),
    lambda ns: lambda x, y: ns.jax.jvp(lambda x: ns.lax.pow(x, y), (x,), (x,)),
])
def test_pow_integer_exponent_jaxprs_match(fun):
    check_jaxpr(fun, BASES, EXPONENTS)


def test_pow_integer_exponent_lowers_like_jax():
    ours = minijax.jit(mlax.pow).lower(BASES, EXPONENTS).as_text()
    theirs = jax.jit(jax.lax.pow).lower(BASES, EXPONENTS).as_text()
    assert ours == theirs


# ---------------------------------------------------------------------------------------
# Special-function primitives, clz, reduce_precision, cumlogsumexp
# ---------------------------------------------------------------------------------------

RNG = np.random.default_rng(0)
SPECIAL_INPUTS = {
    "erf": RNG.normal(size=200) * 3,
    "erfc": RNG.normal(size=200) * 4,
    "erf_inv": np.concatenate([RNG.uniform(-1, 1, 200), [-1, 1, 0, 1.5, -0.9999, np.nan]]),
    "lgamma": np.concatenate([RNG.uniform(-10, 10, 100), RNG.uniform(0, 100, 100),
                              [0, -1, -2.5, np.inf, -np.inf, np.nan, 1e-30]]),
    "digamma": np.concatenate([RNG.uniform(-10, 10, 100), RNG.uniform(0, 100, 100),
                               [0, -1, -2.5, np.inf, -np.inf, np.nan, 1e-30, -0.0]]),
}
# XLA evaluates these with float32 polynomial approximations; minijax computes in float64.
SPECIAL_TOLERANCES = {"erf": (1e-6, 1e-6), "erfc": (2e-6, 1e-6), "erf_inv": (2e-5, 1e-6),
                      "lgamma": (1e-5, 2e-5), "digamma": (1e-3, 1e-4)}


@pytest.mark.parametrize("name", sorted(SPECIAL_INPUTS))
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_special_primitives(name, dtype):
    x = SPECIAL_INPUTS[name].astype(dtype)
    rtol, atol = SPECIAL_TOLERANCES[name] if dtype == np.float32 else (2e-3, 2e-3)
    check_program(lambda ns: getattr(ns.lax, name)(x), rtol=rtol, atol=atol)


@pytest.mark.parametrize("name", sorted(SPECIAL_INPUTS))
def test_special_primitives_jit_and_lowering(name):
    x = np.array([0.25, 0.5, -0.75], np.float32)
    check_program(lambda ns: ns.jax.jit(getattr(ns.lax, name))(x), rtol=1e-4, atol=1e-5)
    ours = minijax.jit(getattr(mlax, name)).lower(x).as_text()
    assert ours == jax.jit(getattr(jax.lax, name)).lower(x).as_text()


@pytest.mark.parametrize("name", ["erf", "erfc", "erf_inv", "lgamma"])
def test_special_primitive_jvps(name):
    x = np.array([0.25, 0.5, -0.75, 0.9], np.float32) + (1.5 if name == "lgamma" else 0)
    check_jaxpr(lambda ns: lambda x: ns.jax.jvp(getattr(ns.lax, name), (x,), (x,)), x)
    check_program(lambda ns: ns.jax.grad(lambda x: getattr(ns.lax, name)(x).sum())(x),
                  rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("name", ["erf", "lgamma", "digamma", "erf_inv", "clz",
                                  "reduce_precision"])
@pytest.mark.parametrize("value", [np.int32(1), np.complex64(1), True, np.float32(1)])
def test_new_primitives_dtype_errors(name, value):
    fun = (lambda ns: lambda x: ns.lax.reduce_precision(x, 5, 10)) if name == \
        "reduce_precision" else (lambda ns: getattr(ns.lax, name))
    check_program(lambda ns: fun(ns)(value))


def test_clz():
    check_program(lambda ns: ns.lax.clz(np.array([0, 1, -1, 255, 2**30], np.int32)))
    check_program(lambda ns: ns.lax.clz(np.array([0, 1, 255], np.uint8)))
    check_program(lambda ns: ns.jax.jit(ns.lax.clz)(np.array([0, 7, -5], np.int16)))


PRECISION_INPUT = np.array([1.0001, 70000.0, 1e-8, np.nan, 3.14159, 1e-6, -2.5e38, np.inf,
                            -0.0, 65519.0, 65520.0, 1.00048828125], np.float32)


@pytest.mark.parametrize("bits", [(5, 10), (8, 7), (8, 23), (4, 3), (11, 52)])
def test_reduce_precision(bits):
    values = np.concatenate([PRECISION_INPUT, RNG.normal(size=100).astype(np.float32) * 100])
    check_program(lambda ns: ns.lax.reduce_precision(values, *bits))
    check_program(lambda ns: ns.jax.jit(lambda x: ns.lax.reduce_precision(x, *bits))(values))
    check_jaxpr(lambda ns: lambda x: ns.lax.reduce_precision(x, *bits), values)


def test_reduce_precision_is_linear():
    check_jaxpr(lambda ns: lambda x: ns.jax.jvp(
        lambda x: ns.lax.reduce_precision(x, 5, 10), (x,), (x,)), BASES)
    check_program(lambda ns: ns.jax.grad(
        lambda x: ns.lax.reduce_precision(x, 5, 10).sum())(BASES))


@pytest.mark.parametrize("program", [
    lambda ns: ns.lax.cumlogsumexp(np.array([1.0, -np.inf, 2.0, np.inf, np.nan, 3.0],
                                            np.float32)),
    lambda ns: ns.lax.cumlogsumexp(F, axis=1, reverse=True),
    lambda ns: ns.jax.jit(lambda x: ns.lax.cumlogsumexp(x, axis=0))(F),
    lambda ns: ns.jax.grad(lambda x: ns.lax.cumlogsumexp(x, axis=1).sum())(F),
])
def test_cumlogsumexp(program):
    check_program(program)


def test_cumlogsumexp_lowers_like_jax():
    fun = lambda lax: lambda x: lax.cumlogsumexp(x, axis=1, reverse=True)  # noqa: E731
    assert minijax.jit(fun(mlax)).lower(F).as_text() == jax.jit(fun(jax.lax)).lower(F).as_text()


# ---------------------------------------------------------------------------------------
# jax.scipy.special
# ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["erf", "erfc", "gammaln", "digamma", "expit", "logit",
                                  "softmax", "log_softmax", "logsumexp"])
def test_scipy_special_jaxprs_match(name):
    x = F / 4 + 0.3 if name == "logit" else F
    check_jaxpr(lambda ns: getattr(special(ns), name), x)


@pytest.mark.parametrize("program", [
    lambda ns: special(ns).logsumexp(F, axis=0, b=F),
    lambda ns: special(ns).logsumexp(F, axis=(0, 1), keepdims=True, return_sign=True),
    lambda ns: special(ns).logsumexp(np.array([-np.inf, -np.inf], np.float32)),
    lambda ns: special(ns).logsumexp(np.array([np.inf, 1], np.float32)),
    lambda ns: special(ns).logsumexp(F, axis=1, where=F > 0.5),
    lambda ns: special(ns).logsumexp(np.array([1, 2, 3])),
    lambda ns: special(ns).logsumexp(F.astype(np.complex64)),
    lambda ns: special(ns).erf(np.array([1, 2])),
    lambda ns: special(ns).erfinv(F / 4),
    lambda ns: special(ns).xlogy(np.array([0.0, 1, 2]), np.array([0.0, 2, 3])),
    lambda ns: special(ns).xlog1py(np.array([0.0, 1, 2]), np.array([-1.0, 2, 3])),
    lambda ns: special(ns).softmax(F, axis=1),
    lambda ns: ns.jax.grad(lambda x: special(ns).logsumexp(x))(F),
    lambda ns: ns.jax.grad(lambda x: special(ns).xlogy(x, x).sum())(F + 0.5),
    lambda ns: ns.jax.grad(lambda x: special(ns).logit(x).sum())(F / 4 + 0.3),
    lambda ns: ns.jax.grad(lambda x: special(ns).gammaln(x).sum())(F + 3),
    lambda ns: ns.jax.grad(lambda x: special(ns).log_softmax(x, axis=1).sum())(F),
    lambda ns: ns.jax.jit(special(ns).logsumexp)(F),
])
def test_scipy_special_values(program):
    check_program(program, rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------------------------------
# Integer input to cholesky and eigh; complex atan2 under jit; jnp.array of text
# ---------------------------------------------------------------------------------------

SPD = np.array([[4, 2], [2, 3]], np.int32)


@pytest.mark.parametrize("matrix", [SPD, SPD.astype(np.complex64), np.array([[True]]),
                                    SPD.astype(np.float16)])
@pytest.mark.parametrize("fun", ["cholesky", "eigh"])
def test_linalg_symmetrizes_as_jax_does(matrix, fun):
    check_jaxpr(lambda ns: getattr(ns.lax.linalg, fun), matrix)


@pytest.mark.parametrize("matrix", [SPD, SPD.astype(np.complex64)])
@pytest.mark.parametrize("fun", ["cholesky", "eigh"])
def test_linalg_accepts_integer_input(matrix, fun):
    check_program(lambda ns: getattr(ns.lax.linalg, fun)(matrix)[0], rtol=1e-5, atol=1e-5)
    check_program(lambda ns: getattr(ns.jnp.linalg, fun)(matrix)[0], rtol=1e-5, atol=1e-5)


def test_cholesky_of_integers_without_symmetrizing_is_an_error():
    assert_same_error(lambda ns: ns.lax.linalg.cholesky(SPD, symmetrize_input=False),
                      TypeError, ["cholesky does not accept dtype int32"])


def test_complex_atan2_under_jit():
    z = np.array([1 + 2j, 3 - 1j, -0.5j], np.complex64)
    check_program(lambda ns: ns.jax.jit(ns.lax.atan2)(z, z[::-1].copy()), rtol=1e-5, atol=1e-6)
    check_program(lambda ns: ns.jax.jit(ns.jnp.arctan2)(z, 2 * z), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("value, words", [
    ("a", ["'a' with dtype <U1"]), (["a", "b"], ["<U1"]), (b"x", ["|S1"]), ([1, "a"], ["<U1"]),
])
def test_array_of_text_names_numpy_dtype(value, words):
    assert_same_error(lambda ns: ns.jnp.array(value), TypeError, words)


# ---------------------------------------------------------------------------------------
# A sweep of further jnp functions
# ---------------------------------------------------------------------------------------

MORE = {
    "diff": lambda ns: ns.jnp.diff(F),
    "diff_n2": lambda ns: ns.jnp.diff(I, n=2, axis=1),
    "diff_pre_app": lambda ns: ns.jnp.diff(F, axis=0, prepend=0, append=F[:1]),
    "diff_bool": lambda ns: ns.jnp.diff(np.array([True, False, False])),
    "ediff1d": lambda ns: ns.jnp.ediff1d(I, to_begin=-1, to_end=np.array([7, 8])),
    "cumulative_sum": lambda ns: ns.jnp.cumulative_sum(I, axis=1, include_initial=True),
    "cumulative_prod": lambda ns: ns.jnp.cumulative_prod(np.arange(1, 5)),
    "trapezoid": lambda ns: ns.jnp.trapezoid(F),
    "trapezoid_x": lambda ns: ns.jnp.trapezoid(F, x=np.array([0, 1, 3.0]), axis=1),
    "trapezoid_dx": lambda ns: ns.jnp.trapezoid(F, dx=0.5, axis=0),
    "gradient": lambda ns: ns.jnp.gradient(np.array([1.0, 4, 9, 16])),
    "gradient_2d": lambda ns: ns.jnp.gradient(F),
    "gradient_axis": lambda ns: ns.jnp.gradient(F, 2.0, axis=1),
    "nanargmax": lambda ns: ns.jnp.nanargmax(NANS, axis=1),
    "nanargmin": lambda ns: ns.jnp.nanargmin(np.array([np.nan, 2, 1])),
    "nanvar": lambda ns: ns.jnp.nanvar(NANS, axis=1),
    "nanstd": lambda ns: ns.jnp.nanstd(NANS, ddof=1),
    "nanvar_int": lambda ns: ns.jnp.nanvar(I),
    "nancumsum": lambda ns: ns.jnp.nancumsum(NANS, axis=1),
    "nancumprod": lambda ns: ns.jnp.nancumprod(NANS),
    "polyval": lambda ns: ns.jnp.polyval(np.array([1, 2, 3.0]), F),
    "polyval_int": lambda ns: ns.jnp.polyval(np.array([1, 2, 3]), I),
    "polyadd": lambda ns: ns.jnp.polyadd(np.array([1, 2, 3.0]), np.array([4, 5.0])),
    "polysub": lambda ns: ns.jnp.polysub(np.array([1, 2]), np.array([4, 5, 6])),
    "polymul": lambda ns: ns.jnp.polymul(np.array([1, 2, 3.0]), np.array([4, 5.0])),
    "polyder": lambda ns: ns.jnp.polyder(np.array([1, 2, 3, 4.0]), 2),
    "polyint": lambda ns: ns.jnp.polyint(np.array([1, 2, 3.0]), 2, k=np.array([1, 2])),
    "vander": lambda ns: ns.jnp.vander(np.array([1, 2, 3])),
    "vander_increasing": lambda ns: ns.jnp.vander(np.array([1.0, 2, 3]), 4, increasing=True),
    "convolve": lambda ns: ns.jnp.convolve(np.array([1, 2, 3]), np.array([0, 1, 0.5])),
    "convolve_same": lambda ns: ns.jnp.convolve(np.array([1, 2, 3.0]), np.array([0, 1, 0.5, 2]),
                                                mode="same"),
    "convolve_valid": lambda ns: ns.jnp.convolve(np.arange(6.0), np.array([1, -1.0]),
                                                 mode="valid"),
    "convolve_int": lambda ns: ns.jnp.convolve(np.array([1, 2, 3]), np.array([4, 5])),
    "correlate": lambda ns: ns.jnp.correlate(np.arange(6.0), np.array([1, 2.0])),
    "correlate_full": lambda ns: ns.jnp.correlate(np.array([1, 2, 3.0]),
                                                  np.array([0, 1, 0.5, 2]), mode="full"),
    "correlate_complex": lambda ns: ns.jnp.correlate(np.array([1 + 1j, 2, 3]),
                                                     np.array([1j, 2]), mode="full"),
    "histogram": lambda ns: ns.jnp.histogram(np.array([1, 2, 2, 3, 5.0]), bins=4),
    "histogram_int": lambda ns: ns.jnp.histogram(np.array([1, 2, 2, 3, 5]), bins=3),
    "histogram_density": lambda ns: ns.jnp.histogram(np.array([1, 2, 2, 3, 5.0]),
                                                     bins=np.array([0, 2, 4.0]), density=True),
    "histogram_weights": lambda ns: ns.jnp.histogram(np.array([1, 2, 2, 3, 5.0]), bins=3,
                                                     weights=np.array([1, 2, 3, 4, 5])),
    "histogram_range": lambda ns: ns.jnp.histogram(np.array([1, 2, 2, 3, 5.0]), bins=3,
                                                   range=(0, 4)),
    "digitize": lambda ns: ns.jnp.digitize(np.array([0.5, 1, 2.5, 7]), np.array([1, 2, 3])),
    "digitize_falling": lambda ns: ns.jnp.digitize(np.array([0.5, 1, 2.5, 3]),
                                                   np.array([3, 2, 1.0])),
    "digitize_right": lambda ns: ns.jnp.digitize(np.array([0.5, 1, 2.5, 3]),
                                                 np.array([1, 2, 3.0]), right=True),
    "interp": lambda ns: ns.jnp.interp(np.array([0.5, 1, 2.5, 7]), np.array([1, 2, 3]),
                                       np.array([10, 20, 5])),
    "interp_left_right": lambda ns: ns.jnp.interp(np.array([0.5, 1, 2.5, 7]),
                                                  np.array([1, 2, 3.0]),
                                                  np.array([10, 20, 5.0]), left=-1, right=99),
    "interp_period": lambda ns: ns.jnp.interp(np.array([-0.5, 1, 2.5, 7]), np.array([0, 1, 2.0]),
                                              np.array([10, 20, 5.0]), period=3),
    "fmax": lambda ns: ns.jnp.fmax(NANS, F),
    "fmin": lambda ns: ns.jnp.fmin(np.array([np.nan, 1, np.nan]), np.array([2, np.nan, np.nan])),
    "fmax_int": lambda ns: ns.jnp.fmax(I, 2),
    "heaviside": lambda ns: ns.jnp.heaviside(np.array([-1.0, 0, 2]), 0.5),
    "sinc": lambda ns: ns.jnp.sinc(np.array([0.0, 0.5, 1, -2.5])),
    "sinc_int": lambda ns: ns.jnp.sinc(I),
    "fabs": lambda ns: ns.jnp.fabs(I),
    "logaddexp2": lambda ns: ns.jnp.logaddexp2(F, 1.0),
    "gcd": lambda ns: ns.jnp.gcd(np.array([12, -18, 0, 7, 0]), np.array([8, 12, 5, 0, 0])),
    "lcm": lambda ns: ns.jnp.lcm(np.array([4, -6, 0, 7]), np.array([6, 4, 5, 3])),
    "ldexp": lambda ns: ns.jnp.ldexp(F, np.array([1, 2, -1])),
    "modf": lambda ns: ns.jnp.modf(np.array([1.5, -2.25, 3])),
    "isposinf": lambda ns: ns.jnp.isposinf(np.array([np.inf, -np.inf, 1])),
    "isneginf": lambda ns: ns.jnp.isneginf(np.array([np.inf, -np.inf, 1])),
    "nan_to_num": lambda ns: ns.jnp.nan_to_num(np.array([np.nan, np.inf, -np.inf, 1],
                                                        np.float32)),
    "nan_to_num_values": lambda ns: ns.jnp.nan_to_num(np.array([np.nan, np.inf, -np.inf, 1]),
                                                      nan=5, posinf=7),
    "nan_to_num_complex": lambda ns: ns.jnp.nan_to_num(np.array([complex(np.nan, np.inf)],
                                                                np.complex64)),
    "bitwise_count": lambda ns: ns.jnp.bitwise_count(np.array([0, 7, -1, 255])),
    "angle": lambda ns: ns.jnp.angle(np.array([1 + 1j, -1, 2j]), deg=True),
    "angle_real": lambda ns: ns.jnp.angle(F),
    "isreal": lambda ns: ns.jnp.isreal(np.array([1 + 1j, 2])),
    "iscomplex": lambda ns: ns.jnp.iscomplex(np.array([1 + 1j, 2])),
    "pow": lambda ns: ns.jnp.pow(F, 2),
    "tril_indices": lambda ns: ns.jnp.tril_indices(3),
    "triu_indices": lambda ns: ns.jnp.triu_indices(3, 1, 4),
    "tril_indices_from": lambda ns: ns.jnp.tril_indices_from(F),
    "triu_indices_from": lambda ns: ns.jnp.triu_indices_from(I, -1),
    "diag_indices": lambda ns: ns.jnp.diag_indices(2, 3),
    "diag_indices_from": lambda ns: ns.jnp.diag_indices_from(np.ones((3, 3))),
    "unravel_index": lambda ns: ns.jnp.unravel_index(np.array([0, 5, 7, -1]), (2, 4)),
    "ravel_multi_index": lambda ns: ns.jnp.ravel_multi_index((np.array([0, 1]),
                                                              np.array([2, 3])), (2, 4)),
    "ravel_multi_index_wrap": lambda ns: ns.jnp.ravel_multi_index(
        (np.array([0, 5]), np.array([2, -1])), (2, 4), mode="wrap"),
    "ravel_multi_index_clip": lambda ns: ns.jnp.ravel_multi_index(
        (np.array([0, 5]), np.array([2, -1])), (2, 4), mode="clip"),
    "ix_": lambda ns: ns.jnp.asarray(I)[ns.jnp.ix_(np.array([1, 0]), np.array([2, 0]))],
    "append": lambda ns: ns.jnp.append(I, np.array([[7, 8, 9]]), axis=0),
    "append_flat": lambda ns: ns.jnp.append(I, 2.5),
    "rot90": lambda ns: ns.jnp.rot90(I),
    "rot90_k2": lambda ns: ns.jnp.rot90(I, 2),
    "rot90_k-1": lambda ns: ns.jnp.rot90(I, -1),
    "rot90_axes": lambda ns: ns.jnp.rot90(np.arange(24).reshape(2, 3, 4), 1, (2, 0)),
    "rollaxis": lambda ns: ns.jnp.rollaxis(np.ones((2, 3, 4, 5)), 3, 1),
    "rollaxis_forward": lambda ns: ns.jnp.rollaxis(np.ones((2, 3, 4, 5)), 1, 4),
    "hsplit": lambda ns: ns.jnp.hsplit(np.arange(12).reshape(2, 6), 3),
    "vsplit": lambda ns: ns.jnp.vsplit(np.arange(12).reshape(4, 3), [1, 3]),
    "dsplit": lambda ns: ns.jnp.dsplit(np.ones((2, 2, 4)), 2),
    "unstack": lambda ns: ns.jnp.unstack(I, axis=1),
    "resize": lambda ns: ns.jnp.resize(I, (4, 4)),
    "resize_int": lambda ns: ns.jnp.resize(np.arange(3), 7),
    "diagflat": lambda ns: ns.jnp.diagflat(I, 1),
    "select": lambda ns: ns.jnp.select([F > 1, F < 0.5], [F, -F], 7.0),
    "choose": lambda ns: ns.jnp.choose(np.array([0, 2, 1]), [np.arange(3), np.arange(3) * 10,
                                                             np.arange(3) * 100]),
    "choose_clip": lambda ns: ns.jnp.choose(np.array([0, 5, -1]), [np.arange(3), np.ones(3)],
                                            mode="clip"),
    "matrix_transpose": lambda ns: ns.jnp.matrix_transpose(np.ones((2, 3, 4))),
    "vecdot": lambda ns: ns.jnp.vecdot(F, F + 1),
    "vecdot_complex": lambda ns: ns.jnp.vecdot(np.array([1 + 2j, 3]), np.array([1j, 2])),
    "matvec": lambda ns: ns.jnp.matvec(np.ones((2, 3, 4)), np.arange(4.0)),
    "vecmat": lambda ns: ns.jnp.vecmat(np.arange(3.0), np.ones((2, 3, 4))),
    "cross": lambda ns: ns.jnp.cross(np.array([1, 2, 3.0]), np.array([4, 5, 6.0])),
    "cross_2d": lambda ns: ns.jnp.cross(np.array([[1, 2.0], [3, 4]]), np.array([5, 6.0])),
    "cross_2_3": lambda ns: ns.jnp.cross(np.array([1, 2.0]), np.array([4, 5, 6.0])),
    "cross_axes": lambda ns: ns.jnp.cross(np.arange(6.0).reshape(3, 2), np.ones((3, 2)),
                                          axisa=0, axisb=0),
    "cov": lambda ns: ns.jnp.cov(F),
    "cov_bias": lambda ns: ns.jnp.cov(F, bias=True),
    "cov_columns": lambda ns: ns.jnp.cov(F, rowvar=False),
    "cov_y": lambda ns: ns.jnp.cov(F[0], F[1]),
    "cov_weights": lambda ns: ns.jnp.cov(F, fweights=np.array([1, 2, 1]),
                                         aweights=np.array([0.5, 1, 2])),
    "corrcoef": lambda ns: ns.jnp.corrcoef(F),
    "corrcoef_y": lambda ns: ns.jnp.corrcoef(F[0], F[1] * 2),
    "array_equiv": lambda ns: ns.jnp.array_equiv(I, I[0:1]),
    "array_equiv_shapes": lambda ns: ns.jnp.array_equiv(I, np.ones(2)),
}


@pytest.mark.parametrize("name", sorted(MORE))
def test_more_jnp_functions(name):
    # JAX runs most programs under jit (faster); mode="raise" needs concrete indices.
    program = MORE[name] if name in ("choose", "ravel_multi_index") else jax_jitted(MORE[name])
    check_program(program, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("fun, args", [
    (lambda x: mjnp.diff(x, n=2), (F,)),
    (lambda x: mjnp.convolve(x[0], x[1]), (F,)),
    (lambda x: mjnp.interp(x[1], mjnp.arange(3.0), x[0]), (F,)),
    (lambda x: mjnp.histogram(x, bins=3), (F,)),
    (lambda x: mjnp.nanvar(x, axis=0), (NANS,)),
    (lambda x: mjnp.cov(x), (F,)),
    (lambda x: mjnp.gcd(x, 6), (I,)),
    (lambda x: minijax.scipy.special.logsumexp(x, axis=1), (F,)),
])
def test_new_functions_trace(fun, args):
    assert_traced_matches_eager(fun, *args)


def test_more_functions_under_jit():
    for name in ["convolve", "interp", "histogram", "gcd", "cov", "polyval", "nanargmax"]:
        program = MORE[name]
        check_program(lambda ns, p=program: ns.jax.jit(lambda: p(ns))(), rtol=1e-5, atol=1e-5)


def test_x64_mode():
    from oracle import x64_mode

    with x64_mode():
        check_program(lambda ns: ns.jnp.pad(np.arange(3.0), 2, mode="reflect"))
        check_program(lambda ns: ns.jnp.nonzero(A, size=4))
        check_program(lambda ns: ns.lax.erf(np.array([0.5, -1.0])), rtol=1e-12, atol=1e-12)
        check_program(lambda ns: ns.lax.reduce_precision(np.array([1.0001, 3.14159]), 8, 23))
        check_program(lambda ns: ns.jnp.unique(np.array([3, 1, 3])))


def test_results_are_arrays():
    (kind, value), _ = run_both(lambda ns: ns.jnp.unique(A))
    assert kind == "ok" and isinstance(value, minijax.Array)
