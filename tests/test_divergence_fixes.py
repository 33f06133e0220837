"""Places where minijax behaved or printed differently from JAX, each checked against JAX.

Values, dtypes and error classes go through ``check_program``; error messages through
``assert_same_error`` (or an exact comparison where the whole text matters); printed
jaxprs through ``check_jaxpr``, which compares the text of ``make_jaxpr`` -- the same
primitives, parameters and ``jit``/``custom_jvp`` wrappers, in the same order.
"""

from __future__ import annotations

import numpy as np
import pytest
from oracle import (
    assert_same_error,
    check_jaxpr,
    check_program,
    run_both,
)

import minijax
import minijax.numpy as mjnp

jax = pytest.importorskip("jax")

F = np.array([1.5, -2.0, 3.25], np.float32)
I = np.array([7, -3, 0], np.int32)
B = np.array([True, False, True])
C = np.array([1 + 2j, -1.5j, 3], np.complex64)
M = np.arange(9, dtype=np.float32).reshape(3, 3) + 5 * np.eye(3, dtype=np.float32)
R = np.arange(6, dtype=np.float32).reshape(2, 3)
M4 = np.arange(16, dtype=np.float32).reshape(4, 4) + 5 * np.eye(4, dtype=np.float32)
SINGULAR = np.array([[1, 2, 3, 4], [2, 4, 6, 8], [1, 0, 0, 1], [0, 1, 1, 0]], np.float32)


def assert_same_message(program):
    """Both raise, errors of one class with the very same message."""
    (ours_kind, ours), (theirs_kind, theirs) = run_both(program)
    assert ours_kind == theirs_kind == "error", (ours, theirs)
    assert (type(ours).__name__, str(ours)) == (type(theirs).__name__, str(theirs))


# ---------------------------------------------------------------------------------------
# 1. jnp.array copies an array (a new Array, a ``copy`` in jaxprs); asarray does not
# ---------------------------------------------------------------------------------------


def test_array_of_an_array_is_a_new_array_and_asarray_is_not():
    x = mjnp.arange(3.0)
    assert mjnp.array(x) is not x
    assert mjnp.asarray(x) is x
    assert mjnp.array(x, copy=False) is x


@pytest.mark.parametrize("fun", [
    lambda n: lambda x: n.jnp.array(x),
    lambda n: lambda x: n.jnp.array(x, dtype=n.jnp.int32),
    lambda n: lambda x: n.jnp.array(x, ndmin=2),
    lambda n: lambda x: n.jnp.asarray(x),
    lambda n: lambda x: n.jnp.array(x, copy=False),
], ids=["array", "array_dtype", "array_ndmin", "asarray", "array_no_copy"])
def test_array_copy_jaxpr(fun):
    check_jaxpr(fun, F)


# ---------------------------------------------------------------------------------------
# 2. Python integers that do not fit the requested dtype
# ---------------------------------------------------------------------------------------

OVERFLOWS = {
    "uint8_scalar_type": (lambda n: n.jnp.uint8(300), "Python integer 300 out of bounds for uint8"),
    "uint8_negative": (lambda n: n.jnp.uint8(-1), "Python integer -1 out of bounds for uint8"),
    "asarray_int8": (lambda n: n.jnp.asarray(300, dtype=n.jnp.int8),
                     "Python integer 300 out of bounds for int8"),
    "array_list_uint8": (lambda n: n.jnp.array([300], dtype=n.jnp.uint8),
                         "Python integer 300 out of bounds for uint8"),
    "asarray_big_int8": (lambda n: n.jnp.asarray(2**40, dtype=n.jnp.int8),
                         "Python integer 1099511627776 out of bounds for int8"),
    "list_without_dtype": (lambda n: n.jnp.array([2**40]),
                           "Python integer 1099511627776 out of bounds for int32"),
    "promoted_list": (lambda n: n.jnp.array([n.np.uint8(1), -1]),
                      "Python integer -1 out of bounds for uint8"),
    "float_to_uint32": (lambda n: n.jnp.array(-3.7, dtype=n.jnp.uint32),
                        "Python integer -3 out of bounds for uint32"),
}


@pytest.mark.parametrize("name", OVERFLOWS)
def test_python_int_overflow_on_creation(name):
    program, words = OVERFLOWS[name]
    assert_same_error(program, OverflowError, [words])


@pytest.mark.parametrize("program", [
    lambda n: n.jnp.array([1, 2**40], dtype=n.jnp.float32),  # no int32 wrap on the way
    lambda n: n.jnp.array([n.np.int8(1), 2]),  # the leaves' promotion: int8
    lambda n: n.jnp.array([n.np.float16(1), 2.0]),
    lambda n: n.jnp.array(2**31, dtype=n.jnp.uint32),
    lambda n: n.jnp.int8(127),
    lambda n: n.jnp.array(n.np.array([300]), dtype=n.jnp.uint8),  # NumPy arrays wrap
    lambda n: n.jnp.array([[]]),
    lambda n: n.jnp.array(None),
    lambda n: n.jnp.array(float("nan"), dtype=n.jnp.int32),
], ids=["wide_list_to_float", "int8_leaf", "float16_leaf", "uint32", "int8_max",
        "numpy_wraps", "empty_nested", "none", "nan_to_int"])
def test_creation_from_host_values_matches_jax(program):
    check_program(program)


# ---------------------------------------------------------------------------------------
# 3, 10. The division family: booleans divide as int32; JAX's guards and jaxprs
# ---------------------------------------------------------------------------------------

DIVISIONS = ["floor_divide", "remainder", "fmod", "divmod", "true_divide"]


@pytest.mark.parametrize("name", DIVISIONS)
@pytest.mark.parametrize("x", [B, I, I.astype(np.uint8), F], ids=["bool", "int", "uint", "float"])
def test_division_family_values_and_jaxprs(name, x):
    y = x[::-1].copy()
    check_program(lambda n: getattr(n.jnp, name)(x, y))
    check_jaxpr(lambda n: getattr(n.jnp, name), x, y)


# ---------------------------------------------------------------------------------------
# 4. logical_*: only non-booleans are compared with zero
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("fun", [
    lambda n: lambda a: n.jnp.logical_and(a, True),
    lambda n: lambda a: n.jnp.logical_or(a, a),
    lambda n: lambda a: n.jnp.logical_xor(a, 1.0),
    lambda n: n.jnp.logical_not,
], ids=["and_true", "or", "xor_float", "not"])
@pytest.mark.parametrize("x", [B, I], ids=["bool", "int"])
def test_logical_jaxprs(fun, x):
    check_jaxpr(fun, x)


# ---------------------------------------------------------------------------------------
# 5. lax functions given lists (or None, or strings)
# ---------------------------------------------------------------------------------------

L = [1.0, 2.0]
NOT_VALUES = {
    "mul_list": lambda n: n.lax.mul(L, 2.0),
    "add_list_second": lambda n: n.lax.add(2.0, L),
    "sin_tuple": lambda n: n.lax.sin((1.0,)),
    "mul_none": lambda n: n.lax.mul(None, 1.0),
    "mul_str": lambda n: n.lax.mul(1.0, "a"),
    "reduce_sum": lambda n: n.lax.reduce_sum(L, (0,)),
    "cumsum": lambda n: n.lax.cumsum(L),
    "reshape": lambda n: n.lax.reshape(L, (2, 1)),
    "pad_value": lambda n: n.lax.pad(F, [0.0], [(0, 0, 0)]),
    "select": lambda n: n.lax.select([True], [1.0], [2.0]),
    "clamp": lambda n: n.lax.clamp(0.0, L, 2.0),
    "dot": lambda n: n.lax.dot(L, L),
    "concatenate": lambda n: n.lax.concatenate([L, L], 0),
    "integer_pow": lambda n: n.lax.integer_pow(L, 2),
    "broadcast_in_dim": lambda n: n.lax.broadcast_in_dim(L, (2, 2), (1,)),
    "lu": lambda n: n.lax.linalg.lu([[1.0]]),
    "convert_element_type": lambda n: n.lax.convert_element_type(L, np.int32),
}


@pytest.mark.parametrize("name", NOT_VALUES)
def test_lax_rejects_non_values_with_jax_message(name):
    assert_same_message(NOT_VALUES[name])


# ---------------------------------------------------------------------------------------
# 6. The dtype families each lax function accepts, as its error message lists them
# ---------------------------------------------------------------------------------------

UNARY = ["neg", "sign", "floor", "round", "is_finite", "exp", "log", "sin", "tanh", "sqrt",
         "abs", "real", "imag", "conj", "bitwise_not", "population_count", "reciprocal"]
BINARY = ["add", "div", "rem", "pow", "max", "atan2", "nextafter", "complex", "bitwise_and",
          "shift_left", "lt", "eq"]


@pytest.mark.parametrize("dtype", ["int32", "uint8", "bool", "float32", "complex64"])
@pytest.mark.parametrize("name", UNARY + BINARY)
def test_lax_dtype_families_match_jax(name, dtype):
    def program(n):
        x = n.jnp.ones(3, dtype)
        return getattr(n.lax, name)(*([x] if name in UNARY else [x, x]))

    (ours_kind, ours), (theirs_kind, theirs) = run_both(program)
    if theirs_kind == "error":
        assert_same_message(program)
    else:
        check_program(program)


@pytest.mark.parametrize("program", [
    lambda n: n.lax.atan2(C, C[::-1]),
    lambda n: n.lax.conj(2.0),
    lambda n: n.lax.conj(F),
    lambda n: n.lax.abs(-2),
    lambda n: n.lax.top_k(C, 1),
], ids=["atan2_complex", "conj_python_float", "conj_float32", "abs_weak_int", "top_k_complex"])
def test_newly_accepted_or_rejected_dtypes(program):
    check_program(program)


def test_conj_jaxprs_carry_the_input_dtype():
    check_jaxpr(lambda n: n.lax.conj, F)
    check_jaxpr(lambda n: n.jnp.conj, C)
    check_jaxpr(lambda n: n.jax.grad(lambda x: n.lax.conj(x).real), 2.0)


# ---------------------------------------------------------------------------------------
# 7. x.at[i].set(y) with y of higher rank than x[i]
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("program, words", [
    (lambda n: n.jnp.zeros(3).at[0].set(n.jnp.ones(2)), "arr_shape=(2,) shape=()"),
    (lambda n: n.jnp.zeros(3).at[0].add(n.jnp.ones((1, 1))), "arr_shape=(1, 1) shape=()"),
    (lambda n: n.jnp.zeros((2, 3)).at[0].set(n.jnp.ones((2, 3))), "arr_shape=(2, 3) shape=(3,)"),
], ids=["set", "add", "row"])
def test_update_of_higher_rank_is_jax_error(program, words):
    assert_same_error(program, ValueError,
                      ["Cannot broadcast to shape with fewer dimensions", words])


# ---------------------------------------------------------------------------------------
# 8. bincount
# ---------------------------------------------------------------------------------------

X = np.array([0, 1, 1, 3, -2, 7], np.int32)


@pytest.mark.parametrize("program", [
    lambda n: n.jnp.bincount(X),
    lambda n: n.jnp.bincount(X, length=4),
    lambda n: n.jnp.bincount(X, minlength=10),
    lambda n: n.jnp.bincount(X, weights=np.arange(6.0)),
    lambda n: n.jnp.bincount(X, np.arange(6), length=3),
    lambda n: n.jnp.bincount(B),
    lambda n: n.jnp.bincount(np.zeros(0, np.int32), minlength=2),
    lambda n: n.jax.jit(lambda x: n.jnp.bincount(x, length=3))(X),
    lambda n: n.jax.jit(n.jnp.bincount)(X),  # a traced x needs a static length
    lambda n: n.jnp.bincount(X.astype(np.float32)),
    lambda n: n.jnp.bincount(X.reshape(2, 3)),
    lambda n: n.jnp.bincount(X, weights=np.ones(3)),
    lambda n: n.jnp.bincount(X, length=-1),
], ids=["counts", "length", "minlength", "weights", "int_weights", "bool", "empty",
        "jit_length", "jit_no_length", "float", "2d", "weights_shape", "negative_length"])
def test_bincount_matches_jax(program):
    check_program(program)


def test_bincount_messages_and_jaxpr():
    assert_same_error(lambda n: n.jax.jit(n.jnp.bincount)(X), words=[
        "argument 'x' of jnp.bincount. To avoid this error, pass a static `length` argument."])
    assert_same_message(lambda n: n.jnp.bincount(X.astype(np.float32)))
    assert_same_message(lambda n: n.jnp.bincount(X, weights=np.ones(3)))
    check_jaxpr(lambda n: lambda x, w: n.jnp.bincount(x, w, length=4), X, F.repeat(2))
    check_jaxpr(lambda n: lambda x: n.jnp.bincount(x, length=2), B)


# ---------------------------------------------------------------------------------------
# 10. jnp functions whose jaxprs (inside the right jit wrapper) are JAX's
# ---------------------------------------------------------------------------------------

JAXPRS = {
    "isclose": (lambda n: lambda x: n.jnp.isclose(x, 1.0), F),
    "isclose_equal_nan": (lambda n: lambda x: n.jnp.isclose(x, 1.0, equal_nan=True), F),
    "isclose_int": (lambda n: lambda x: n.jnp.isclose(x, 1), I),
    "isclose_complex": (lambda n: lambda x: n.jnp.isclose(x, x), C),
    "allclose": (lambda n: lambda x: n.jnp.allclose(x, x), F),
    "signbit": (lambda n: n.jnp.signbit, F),
    "copysign": (lambda n: lambda x: n.jnp.copysign(x, -1.0), F),
    "hypot": (lambda n: lambda x: n.jnp.hypot(x, x[::-1]), F),
    "diagonal_offset": (lambda n: lambda x: n.jnp.diagonal(x, 1), M),
    "diagonal_below": (lambda n: lambda x: n.jnp.diagonal(x, -1), R),
    "diagonal_wide": (lambda n: n.jnp.diagonal, R),
    "diag_of_vector": (lambda n: n.jnp.diag, F),
    "diag_of_vector_below": (lambda n: lambda x: n.jnp.diag(x, -1), F),
    "diag_of_wide_matrix": (lambda n: n.jnp.diag, R),
    "kron": (lambda n: lambda x: n.jnp.kron(x, x), M),
    "kron_ranks": (lambda n: lambda x: n.jnp.kron(x, R), F),
    "lexsort_array": (lambda n: n.jnp.lexsort, M),
    "take": (lambda n: lambda x: n.jnp.take(x, np.array([0, -1])), F),
    "take_scalar": (lambda n: lambda x: n.jnp.take(x, 1), M),
    "take_axis_clip": (lambda n: lambda x: n.jnp.take(x, np.array([0, 5]), 1, mode="clip"), M),
    "take_wrap": (lambda n: lambda x: n.jnp.take(x, np.array([0, 5]), mode="wrap"), F),
    "median": (lambda n: n.jnp.median, F),
    "median_axis_keepdims": (lambda n: lambda x: n.jnp.median(x, axis=0, keepdims=True), M),
    "median_int": (lambda n: n.jnp.median, I),
    "quantile_linear": (lambda n: lambda x: n.jnp.quantile(x, 0.3, axis=1), M),
    "quantile_vector": (lambda n: lambda x: n.jnp.quantile(x, F / 4, method="nearest"), M),
    "nanmean": (lambda n: n.jnp.nanmean, F),
    "nanmean_axis_where": (lambda n: lambda x: n.jnp.nanmean(x, 1, keepdims=True,
                                                             where=x > 6), M),
    "nanmean_int": (lambda n: n.jnp.nanmean, I),
    "mean_where": (lambda n: lambda x: n.jnp.mean(x, 0, where=x > 6), M),
    "sum_bool_dtype": (lambda n: lambda x: n.jnp.sum(x, dtype=n.jnp.float16), B),
    "trace": (lambda n: n.jnp.trace, M),
    "trace_offset": (lambda n: lambda x: n.jnp.trace(x, 1), R),
    "trace_axes": (lambda n: lambda x: n.jnp.trace(x, axis1=1, axis2=0), M),
    "linalg_trace": (lambda n: n.jnp.linalg.trace, M),
    "log10": (lambda n: n.jnp.log10, F),
    "log10_int": (lambda n: n.jnp.log10, I),
    "log2_complex": (lambda n: n.jnp.log2, C),
    "logaddexp": (lambda n: lambda x: n.jnp.logaddexp(x, 1.0), F),
    "concatenate_array": (lambda n: lambda x: n.jnp.concatenate(x, axis=1), M[None]),
    "concatenate_array_dtype": (lambda n: lambda x: n.jnp.concatenate(x, dtype=int), M),
    "stack_array": (lambda n: lambda x: n.jnp.stack(x, axis=1), M),
    "iterate_tracer": (lambda n: lambda x: list(n.jnp.asarray(x) + 1), R),
    "conj": (lambda n: n.jnp.conj, C),
    "cholesky": (lambda n: n.jnp.linalg.cholesky, M @ M.T),
    "det_2x2": (lambda n: n.jnp.linalg.det, M[:2, :2]),
    "det_3x3": (lambda n: n.jnp.linalg.det, M),
}


@pytest.mark.parametrize("name", JAXPRS)
def test_jaxpr_matches_jax(name):
    fun, x = JAXPRS[name]
    check_jaxpr(fun, x)
    check_program(lambda n: fun(n)(x), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("program", [
    lambda n: n.jnp.isclose(np.array([np.inf, -np.inf, np.nan, 1.00001, 0]),
                            np.array([np.inf, np.inf, np.nan, 1.0, 1e-9]), equal_nan=True),
    lambda n: n.jnp.hypot(np.array([np.inf, np.nan, 0, 3e30]), np.array([np.nan, np.inf, 0, 4e30])),
    lambda n: n.jnp.divmod(np.array([7.0, -7, 1, np.inf]), np.array([2.0, 2, 0, 3])),
    lambda n: n.jnp.remainder(I, np.zeros(3, np.int32)),
    lambda n: n.jnp.signbit(np.array([-0.0, 0.0, -1, np.nan], np.float16)),
    lambda n: n.jnp.logaddexp(np.array([-np.inf, np.inf, 1e30]), np.array([-np.inf, np.inf, 0])),
    lambda n: n.jax.jacfwd(n.jnp.logaddexp, argnums=(0, 1))(np.float32(np.inf), np.float32(1)),
    lambda n: n.jnp.median(np.array([[1.0, np.nan], [3, 4]]), axis=0),
    lambda n: n.jnp.percentile(M, np.array([25.0, 50]), axis=0),
    lambda n: n.jnp.nanmean(np.array([[1.0, np.nan], [np.nan, np.nan]]), axis=1),
    lambda n: n.jnp.stack(n.jnp.zeros((0, 3))),
    lambda n: n.jnp.diagonal(n.jnp.zeros((0, 0))),
], ids=["isclose", "hypot", "divmod", "remainder_by_zero", "signbit", "logaddexp",
        "logaddexp_jvp_at_inf", "median_nan", "percentile", "nanmean_all_nan",
        "stack_empty", "diagonal_empty"])
def test_rewritten_functions_keep_their_values(program):
    check_program(program)


# ---------------------------------------------------------------------------------------
# 11. det and slogdet
# ---------------------------------------------------------------------------------------

RNG = np.random.RandomState(0)
MATRICES = {
    "2x2": np.array([[1, 2], [3, 4]], np.float32),
    "3x3": M,
    "4x4": M4,
    "batch_of_5x5": RNG.randn(2, 5, 5).astype(np.float32),
    "singular": SINGULAR,
    "1x1": np.array([[3.0]], np.float32),
    "complex": (RNG.randn(4, 4) + 1j * RNG.randn(4, 4)).astype(np.complex64),
    "int": np.arange(9).reshape(3, 3),
}


@pytest.mark.parametrize("name", MATRICES)
def test_det_and_slogdet_values(name):
    a = MATRICES[name]
    check_program(lambda n: n.jnp.linalg.det(a), rtol=1e-5, atol=1e-5)
    check_program(lambda n: n.jnp.linalg.slogdet(a), rtol=1e-5, atol=1e-5)


def test_det_of_small_matrices_is_exact():
    """Exact by construction: ``ad - bc`` (and the 3 x 3 Leibniz sum) of small integers."""
    check_program(lambda n: n.jnp.linalg.det(MATRICES["2x2"]), exact=True)
    check_program(lambda n: n.jnp.linalg.det(M), exact=True)


@pytest.mark.parametrize("name", ["singular", "4x4", "batch_of_5x5"])
def test_det_derivative_is_the_cofactor_rule(name):
    """Finite (the transposed adjugate) even where the matrix is singular."""
    a = MATRICES[name]
    check_program(lambda n: n.jax.jacfwd(lambda x: n.jnp.linalg.det(x).sum())(a),
                  rtol=1e-4, atol=1e-5)


def test_slogdet_derivative():
    check_program(lambda n: n.jax.jacfwd(lambda x: n.jnp.linalg.slogdet(x)[1])(M4),
                  rtol=1e-4, atol=1e-5)


def test_det_errors():
    assert_same_message(lambda n: n.jnp.linalg.det(np.ones((2, 3))))
    assert_same_message(lambda n: n.jnp.linalg.slogdet(np.ones((2, 3))))


def test_traced_det_matches_eager():
    for a in (MATRICES["2x2"], M4):
        jaxpr = minijax.make_jaxpr(mjnp.linalg.det)(a)
        np.testing.assert_array_equal(
            np.asarray(minijax.jaxpr.eval_closed_jaxpr(jaxpr, a)[0]),
            np.asarray(mjnp.linalg.det(a)))
