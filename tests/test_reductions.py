"""Reductions and cumulative reductions, in ``lax`` and ``jnp``, against JAX and NumPy.

Conformance programs run on minijax and JAX (``tests/oracle.py``) and compare values,
shapes, dtypes, weak types and error classes; jaxpr tests compare the primitives that
common calls trace to; Hypothesis compares ``jnp`` reductions with NumPy over random
shapes, axes and dtypes; and every function must give the same result traced and eager.
"""

from __future__ import annotations

import warnings

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from oracle import (
    assert_same_error,
    assert_traced_matches_eager,
    check_program,
    primitive_names,
    x64_mode,
)

import minijax.numpy as jnp
from minijax import lax

jax = pytest.importorskip("jax")

rng = np.random.RandomState(0)
F = rng.randn(3, 4).astype(np.float32)
F3 = rng.randn(2, 3, 4).astype(np.float32)
I8 = rng.randint(-100, 100, (3, 4)).astype(np.int8)
U8 = rng.randint(0, 250, (3, 4)).astype(np.uint8)
I32 = rng.randint(-5, 5, (3, 4)).astype(np.int32)
B = F > 0
H = F.astype(np.float16)
BF = F.astype(ml_dtypes.bfloat16)
C = (F + 1j * rng.randn(3, 4)).astype(np.complex64)
N = F.copy()
N[1, 2] = N[2, 0] = np.nan
E = np.zeros((0, 3), np.float32)
W = np.array([1.0, 2.0, 0.5], np.float32)
TIES = np.array([[1.0, 3.0, 3.0, -1.0], [2.0, 2.0, 0.0, 0.0], [-0.0, 0.0, 5.0, 5.0]],
                np.float32)


def program(fn, *inputs):
    """A conformance program: ``fn(jnp, lax, *arrays)`` on each side's arrays."""
    return lambda n: fn(n.jnp, n.lax, *[n.jnp.asarray(x) for x in inputs])


CASES = {
    # jnp.sum / prod: axes, keepdims, dtypes, initial, where
    "sum": (lambda jnp, lax, x: jnp.sum(x), F),
    "sum_axis0": (lambda jnp, lax, x: jnp.sum(x, axis=0), F),
    "sum_axis_neg": (lambda jnp, lax, x: jnp.sum(x, axis=-1), F3),
    "sum_axis_tuple": (lambda jnp, lax, x: jnp.sum(x, axis=(0, 2)), F3),
    "sum_axis_empty_tuple": (lambda jnp, lax, x: jnp.sum(x, axis=()), F),
    "sum_keepdims": (lambda jnp, lax, x: jnp.sum(x, axis=(0, -1), keepdims=True), F3),
    "sum_int8_widens": (lambda jnp, lax, x: jnp.sum(x, axis=1), I8),
    "sum_uint8_widens": (lambda jnp, lax, x: jnp.sum(x), U8),
    "sum_bool_counts": (lambda jnp, lax, x: jnp.sum(x, axis=0), B),
    "sum_int8_no_promote": (lambda jnp, lax, x: jnp.sum(x, promote_integers=False), I8),
    "sum_float16": (lambda jnp, lax, x: jnp.sum(x, axis=0), H),
    "sum_bfloat16": (lambda jnp, lax, x: jnp.sum(x), BF),
    "sum_complex": (lambda jnp, lax, x: jnp.sum(x, axis=1), C),
    "sum_dtype": (lambda jnp, lax, x: jnp.sum(x, dtype=jnp.int32), F),
    "sum_initial": (lambda jnp, lax, x: jnp.sum(x, axis=0, initial=10), F),
    "sum_where": (lambda jnp, lax, x: jnp.sum(x, axis=1, where=x > 0), F),
    "sum_empty": (lambda jnp, lax, x: jnp.sum(x, axis=0), E),
    "sum_python_scalar": (lambda jnp, lax: jnp.sum(3.0),),
    "sum_weak_array": (lambda jnp, lax: jnp.sum(jnp.asarray(2.0)),),
    "prod": (lambda jnp, lax, x: jnp.prod(x, axis=0), F),
    "prod_int8_widens": (lambda jnp, lax, x: jnp.prod(x, axis=0), I8),
    "prod_bool": (lambda jnp, lax, x: jnp.prod(x), B),
    "prod_where_initial": (lambda jnp, lax, x: jnp.prod(x, axis=1, where=x > 0, initial=2.0),
                           F),
    # max / min
    "max": (lambda jnp, lax, x: jnp.max(x), F),
    "max_axis": (lambda jnp, lax, x: jnp.max(x, axis=1, keepdims=True), F),
    "min_int8": (lambda jnp, lax, x: jnp.min(x, axis=0), I8),
    "max_bool": (lambda jnp, lax, x: jnp.max(x, axis=0), B),
    "max_nan": (lambda jnp, lax, x: jnp.max(x, axis=0), N),
    "max_initial": (lambda jnp, lax, x: jnp.max(x, axis=0, initial=0.5), F),
    "max_initial_int": (lambda jnp, lax, x: jnp.max(x, initial=3.5), I8),
    "max_where_initial": (lambda jnp, lax, x: jnp.max(x, axis=0, where=x < 0, initial=-9.0),
                          F),
    "max_empty_initial": (lambda jnp, lax, x: jnp.max(x, axis=0, initial=1.0), E),
    "min_empty_other_axis": (lambda jnp, lax, x: jnp.min(x, axis=1), E),
    "amax_amin": (lambda jnp, lax, x: (jnp.amax(x, 0), jnp.amin(x, 1)), F),
    "max_complex": (lambda jnp, lax, x: jnp.max(x, axis=1), C),
    # all / any
    "all_float": (lambda jnp, lax, x: jnp.all(x), F),
    "any_axis": (lambda jnp, lax, x: jnp.any(x, axis=1), B),
    "all_int_keepdims": (lambda jnp, lax, x: jnp.all(x, axis=0, keepdims=True), I32),
    "any_where": (lambda jnp, lax, x: jnp.any(x, axis=0, where=x < 0), B),
    # statistics
    "mean": (lambda jnp, lax, x: jnp.mean(x, axis=0), F),
    "mean_int": (lambda jnp, lax, x: jnp.mean(x), I8),
    "mean_bool": (lambda jnp, lax, x: jnp.mean(x, axis=1), B),
    "mean_float16": (lambda jnp, lax, x: jnp.mean(x, axis=1), H),
    "mean_dtype": (lambda jnp, lax, x: jnp.mean(x, dtype=jnp.float16), I32),
    "mean_where": (lambda jnp, lax, x: jnp.mean(x, axis=0, where=x > 0), F),
    "mean_keepdims_where": (lambda jnp, lax, x: jnp.mean(x, 1, keepdims=True, where=x > 0),
                            F),
    "mean_empty_is_nan": (lambda jnp, lax, x: jnp.mean(x, axis=0), E),
    "var": (lambda jnp, lax, x: jnp.var(x), F),
    "var_axis_ddof": (lambda jnp, lax, x: jnp.var(x, axis=1, ddof=1), F),
    "var_ddof_too_big": (lambda jnp, lax, x: jnp.var(x, axis=0, ddof=5), F),
    "var_int": (lambda jnp, lax, x: jnp.var(x, axis=0), I8),
    "var_complex_is_real": (lambda jnp, lax, x: jnp.var(x, axis=0), C),
    "var_float16": (lambda jnp, lax, x: jnp.var(x), H),
    "var_keepdims": (lambda jnp, lax, x: jnp.var(x, axis=(0, 2), keepdims=True), F3),
    "var_where": (lambda jnp, lax, x: jnp.var(x, axis=1, where=x > -1), F),
    "std": (lambda jnp, lax, x: jnp.std(x, axis=0), F),
    "std_correction": (lambda jnp, lax, x: jnp.std(x, correction=1), F3),
    "average": (lambda jnp, lax, x: jnp.average(x), F),
    "average_weights_axis": (lambda jnp, lax, x, w: jnp.average(x, axis=0, weights=w), F, W),
    "average_returned": (lambda jnp, lax, x, w: jnp.average(x, 0, weights=w, returned=True),
                         F, W),
    "average_int": (lambda jnp, lax, x: jnp.average(x, axis=1), I8),
    "median_even": (lambda jnp, lax, x: jnp.median(x), F),
    "median_axis_odd": (lambda jnp, lax, x: jnp.median(x, axis=0), F),
    "median_axis_even_keepdims": (lambda jnp, lax, x: jnp.median(x, 1, keepdims=True), F),
    "median_nan": (lambda jnp, lax, x: jnp.median(x, axis=0), N),
    "median_int": (lambda jnp, lax, x: jnp.median(x), I8),
    "ptp": (lambda jnp, lax, x: jnp.ptp(x, axis=1), F),
    "count_nonzero": (lambda jnp, lax, x: jnp.count_nonzero(x, axis=0), I32),
    "count_nonzero_all": (lambda jnp, lax, x: jnp.count_nonzero(x), F),
    # NaN-ignoring reductions
    "nansum": (lambda jnp, lax, x: jnp.nansum(x, axis=0), N),
    "nanprod": (lambda jnp, lax, x: jnp.nanprod(x), N),
    "nanmean": (lambda jnp, lax, x: jnp.nanmean(x, axis=1), N),
    "nanmax": (lambda jnp, lax, x: jnp.nanmax(x, axis=0), N),
    "nanmin": (lambda jnp, lax, x: jnp.nanmin(x), N),
    "nanmax_all_nan": (lambda jnp, lax, x: jnp.nanmax(x * jnp.nan, axis=0), F),
    "nansum_int": (lambda jnp, lax, x: jnp.nansum(x), I8),
    # argmax / argmin
    "argmax": (lambda jnp, lax, x: jnp.argmax(x), F),
    "argmax_axis": (lambda jnp, lax, x: jnp.argmax(x, axis=0), F),
    "argmin_axis_neg_keepdims": (lambda jnp, lax, x: jnp.argmin(x, -1, keepdims=True), F3),
    "argmax_none_keepdims": (lambda jnp, lax, x: jnp.argmax(x, keepdims=True), F),
    "argmax_nan_first": (lambda jnp, lax, x: jnp.argmax(x, axis=0), N),
    "argmin_nan": (lambda jnp, lax, x: jnp.argmin(x, axis=1), N),
    "argmax_ties_first": (lambda jnp, lax, x: (jnp.argmax(x, 1), jnp.argmin(x, 1)), TIES),
    "argmax_bool": (lambda jnp, lax, x: jnp.argmax(x, axis=1), B),
    "argmin_uint8": (lambda jnp, lax, x: jnp.argmin(x), U8),
    # cumulative
    "cumsum": (lambda jnp, lax, x: jnp.cumsum(x), F),
    "cumsum_axis": (lambda jnp, lax, x: jnp.cumsum(x, axis=1), F3),
    "cumsum_bool": (lambda jnp, lax, x: jnp.cumsum(x, axis=0), B),
    "cumsum_int8_stays": (lambda jnp, lax, x: jnp.cumsum(x, axis=0), I8),
    "cumsum_dtype": (lambda jnp, lax, x: jnp.cumsum(x, axis=1, dtype=jnp.int32), I8),
    "cumsum_float16": (lambda jnp, lax, x: jnp.cumsum(x, axis=1), H),
    "cumprod": (lambda jnp, lax, x: jnp.cumprod(x, axis=-1), F),
    "cumprod_bool": (lambda jnp, lax, x: jnp.cumprod(x), B),
    "cumsum_weak": (lambda jnp, lax: jnp.cumsum(jnp.asarray(2.0)),),
    # lax
    "lax_reduce_sum": (lambda jnp, lax, x: lax.reduce_sum(x, (0, 2)), F3),
    "lax_reduce_sum_int8_wraps": (lambda jnp, lax, x: lax.reduce_sum(x, (1,)), I8),
    "lax_reduce_sum_weak": (lambda jnp, lax: lax.reduce_sum(2.0, ()),),
    "lax_reduce_prod": (lambda jnp, lax, x: lax.reduce_prod(x, [1]), F),
    "lax_reduce_max_min": (lambda jnp, lax, x: (lax.reduce_max(x, (1,)),
                                                lax.reduce_min(x, (0,))), N),
    "lax_reduce_max_empty_is_identity": (lambda jnp, lax, x: lax.reduce_max(x, (0,)), E),
    "lax_reduce_min_empty_int": (lambda jnp, lax: lax.reduce_min(
        jnp.zeros((0, 2), jnp.int8), (0,)),),
    "lax_reduce_and_or_xor_bool": (lambda jnp, lax, x: (lax.reduce_and(x, (0,)),
                                                       lax.reduce_or(x, (1,)),
                                                       lax.reduce_xor(x, (0, 1))), B),
    "lax_reduce_and_or_xor_int": (lambda jnp, lax, x: (lax.reduce_and(x, (0,)),
                                                      lax.reduce_or(x, (1,)),
                                                      lax.reduce_xor(x, (1,))), U8),
    "lax_reduce_and_empty": (lambda jnp, lax: lax.reduce_and(
        jnp.zeros((0,), jnp.uint8), (0,)),),
    "lax_argmax": (lambda jnp, lax, x: lax.argmax(x, 1, jnp.int32), F),
    "lax_argmin_int8_index": (lambda jnp, lax, x: lax.argmin(x, 0, jnp.int8), N),
    "lax_cumsum_reverse": (lambda jnp, lax, x: lax.cumsum(x, 1, reverse=True), F),
    "lax_cumprod": (lambda jnp, lax, x: lax.cumprod(x, 0), I32),
    "lax_cummax_nan": (lambda jnp, lax, x: lax.cummax(x, axis=0), N),
    "lax_cummin_reverse": (lambda jnp, lax, x: lax.cummin(x, axis=1, reverse=True), F),
    "lax_cumsum_int8_wraps": (lambda jnp, lax, x: lax.cumsum(x, 0), I8),
    # methods
    "methods": (lambda jnp, lax, x: (x.sum(0), x.mean(), x.max(1), x.argmin(), x.std(),
                                     x.cumsum(1), x.prod(), x.all(), x.any(0)), F),
}

# Half-precision sums may round differently; float32 sums of a dozen terms agree closely.
LOOSE = {"sum_float16": 1e-2, "sum_bfloat16": 5e-2, "cumsum_float16": 1e-2,
         "mean_float16": 1e-2, "var_float16": 1e-2}


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_jax(name):
    fn, *inputs = CASES[name]
    tol = LOOSE.get(name)
    check_program(program(fn, *inputs), rtol=tol, atol=tol)


@pytest.mark.parametrize("name", sorted(CASES))
def test_traced_matches_eager(name):
    fn, *inputs = CASES[name]
    arrays = [jnp.asarray(x) for x in inputs]
    assert_traced_matches_eager(lambda *xs: fn(jnp, lax, *xs), *arrays)


# ---------------------------------------------------------------------------------------
# 64-bit mode: the default integer and float change
# ---------------------------------------------------------------------------------------


X64_CASES = {
    "sum_int8": (lambda jnp, lax, x: jnp.sum(x), I8),
    "mean_int": (lambda jnp, lax, x: jnp.mean(x, axis=0), I32),
    "argmax": (lambda jnp, lax, x: jnp.argmax(x, axis=1), F),
    "cumsum_bool": (lambda jnp, lax, x: jnp.cumsum(x), B),
    "count_nonzero": (lambda jnp, lax, x: jnp.count_nonzero(x, 0), F),
    "var_float64": (lambda jnp, lax, x: jnp.var(lax.convert_element_type(x, jnp.float64),
                                                axis=1), F),
}


@pytest.mark.parametrize("name", sorted(X64_CASES))
def test_x64_matches_jax(name):
    fn, *inputs = X64_CASES[name]
    with x64_mode():
        check_program(program(fn, *inputs))


# ---------------------------------------------------------------------------------------
# Jaxprs: the primitives that common calls trace to
# ---------------------------------------------------------------------------------------

JAXPRS = {
    "sum": (lambda jnp, x: jnp.sum(x), F),
    "sum_keepdims": (lambda jnp, x: jnp.sum(x, axis=1, keepdims=True), F),
    "sum_bool": (lambda jnp, x: jnp.sum(x), B),
    "mean_int": (lambda jnp, x: jnp.mean(x, axis=0), I32),
    "max": (lambda jnp, x: jnp.max(x, axis=0), F),
    "argmax": (lambda jnp, x: jnp.argmax(x, axis=0), F),
    "argmax_flat": (lambda jnp, x: jnp.argmax(x), F),
    "all": (lambda jnp, x: jnp.all(x), F),
    "any": (lambda jnp, x: jnp.any(x, axis=0), B),
    "cumsum": (lambda jnp, x: jnp.cumsum(x, axis=0), F),
    "cumsum_flat": (lambda jnp, x: jnp.cumsum(x), F),
    "cumprod": (lambda jnp, x: jnp.cumprod(x, axis=1), I8),
}


@pytest.mark.parametrize("name", sorted(JAXPRS))
def test_jaxpr_primitives_match_jax(name):
    fn, x = JAXPRS[name]
    check_program(lambda n: primitive_names(n.jax.make_jaxpr(lambda a: fn(n.jnp, a))(x)))


@pytest.mark.parametrize("fn", [
    lambda jnp, lax, x: jnp.sum(x),
    lambda jnp, lax, x: jnp.max(x, axis=0),
    lambda jnp, lax, x: jnp.argmax(x, axis=0),
    lambda jnp, lax, x: lax.reduce_sum(x, (0, 1)),
    lambda jnp, lax, x: lax.cummax(x, axis=1, reverse=True),
])
def test_printed_jaxpr_matches_jax(fn):
    """Parameter names and values print exactly as in JAX."""
    check_program(lambda n: str(n.jax.make_jaxpr(lambda a: fn(n.jnp, n.lax, a))(F)))


# ---------------------------------------------------------------------------------------
# Bad input: JAX's error class, and a message that names the problem
# ---------------------------------------------------------------------------------------

ERRORS = {
    "sum_axis_out_of_range": (lambda jnp, lax, x: jnp.sum(x, axis=2),
                              "axis 2 is out of bounds for array of dimension 2"),
    "sum_negative_axis_out_of_range": (lambda jnp, lax, x: jnp.sum(x, axis=-3),
                                       "axis -3 is out of bounds"),
    "mean_axis_out_of_range_is_index_error": (lambda jnp, lax, x: jnp.mean(x, axis=2),
                                              "axis 2 is out of bounds"),
    "std_axis_out_of_range_is_index_error": (lambda jnp, lax, x: jnp.std(x, axis=(0, -3)),
                                             "axis -3 is out of bounds"),
    "sum_duplicate_axis": (lambda jnp, lax, x: jnp.sum(x, axis=(0, -2)),
                           "duplicate value in 'axis'"),
    "sum_of_list": (lambda jnp, lax, x: jnp.sum([1, 2]), "requires ndarray or scalar"),
    "sum_out": (lambda jnp, lax, x: jnp.sum(x, out=x), "'out' argument"),
    "max_empty": (lambda jnp, lax, x: jnp.max(jnp.zeros((0, 3)), axis=0),
                  "zero-size array to reduction operation max"),
    "min_where_without_initial": (lambda jnp, lax, x: jnp.min(x, where=x > 0),
                                  "to use a where mask one has to specify 'initial'"),
    "argmax_empty": (lambda jnp, lax, x: jnp.argmax(jnp.zeros((0,))), "empty sequence"),
    "argmax_axis_out_of_range": (lambda jnp, lax, x: jnp.argmax(x, axis=2), "axis 2"),
    "argmax_axis_tuple": (lambda jnp, lax, x: jnp.argmax(x, axis=(0, 1)), "tuple"),
    "cumsum_axis_out_of_range": (lambda jnp, lax, x: jnp.cumsum(x, axis=2),
                                 "axis 2 is out of bounds"),
    "lax_reduce_axis_out_of_range": (lambda jnp, lax, x: lax.reduce_sum(x, (2,)),
                                     "reduction axes (2,) contains out-of-bounds indices "
                                     "for float32[3,4]"),
    "lax_reduce_negative_axis": (lambda jnp, lax, x: lax.reduce_max(x, (-1,)),
                                 "out-of-bounds"),
    "lax_reduce_duplicate_axes": (lambda jnp, lax, x: lax.reduce_sum(x, (0, 0)),
                                  "duplicate value in 'axes' of reduction: (0, 0)"),
    "lax_reduce_sum_bool": (lambda jnp, lax, x: lax.reduce_sum(x > 0, (0,)),
                            "reduce_sum does not accept dtype bool"),
    "lax_reduce_and_float": (lambda jnp, lax, x: lax.reduce_and(x, (0,)),
                             "logical reduction requires operand dtype bool or int, got "
                             "float32"),
    "lax_argmax_float_index": (lambda jnp, lax, x: lax.argmax(x, 0, jnp.float32),
                               "index_dtype must be an integer type, but got float32"),
    "lax_argmax_bad_axis": (lambda jnp, lax, x: lax.argmax(x, 2, jnp.int32),
                            "Invalid axis 2 for operand shape (3, 4)"),
    "lax_argmax_complex": (lambda jnp, lax, x: lax.argmax(
        lax.convert_element_type(x, jnp.complex64), 0, jnp.int32), "complex64"),
    "lax_argmax_empty": (lambda jnp, lax, x: lax.argmax(jnp.zeros((0, 3)), 0, jnp.int32),
                         "non-empty reduced dimension"),
    "lax_cumsum_negative_axis": (lambda jnp, lax, x: lax.cumsum(x, -1),
                                 "do not allow negative axes"),
    "lax_cumsum_bool": (lambda jnp, lax, x: lax.cumsum(x > 0, 0),
                        "cumsum does not accept dtype bool"),
    "lax_cumsum_axis_out_of_range": (lambda jnp, lax, x: lax.cummax(x, 2),
                                     "axis 2 is out of bounds for array of shape (3, 4)"),
}


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_bad_input_raises_like_jax(name):
    fn, message = ERRORS[name]
    assert_same_error(program(lambda jnp, lax, x: fn(jnp, lax, x), F), words=[message])


# ---------------------------------------------------------------------------------------
# Hypothesis: jnp reductions agree with NumPy on random shapes, axes and dtypes
# ---------------------------------------------------------------------------------------

REDUCTIONS = ["sum", "prod", "max", "min", "mean", "all", "any", "var"]
HYPOTHESIS_DTYPES = [np.float32, np.int32, np.int8, np.bool_]


@st.composite
def reduction_inputs(draw):
    shape = tuple(draw(st.lists(st.integers(1, 4), min_size=0, max_size=3)))
    dtype = draw(st.sampled_from(HYPOTHESIS_DTYPES))
    seed = draw(st.integers(0, 2**16))
    values = np.random.RandomState(seed).uniform(-3, 3, shape)
    x = (values > 0) if dtype == np.bool_ else values.astype(dtype)
    ndim = len(shape)
    axis = draw(st.one_of(
        st.none(),
        st.integers(-ndim, ndim - 1) if ndim else st.none(),
        st.lists(st.integers(0, ndim - 1), unique=True, max_size=ndim).map(tuple)
        if ndim else st.none(),
    ))
    return x, axis, draw(st.booleans())


@settings(max_examples=60, deadline=None)
@given(reduction_inputs(), st.sampled_from(REDUCTIONS))
def test_reductions_agree_with_numpy(inputs, name):
    x, axis, keepdims = inputs
    before = x.copy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        expected = getattr(np, name)(x, axis=axis, keepdims=keepdims)
    array = jnp.asarray(x)
    result = getattr(jnp, name)(array, axis=axis, keepdims=keepdims)
    assert result.shape == np.shape(expected)
    np.testing.assert_allclose(np.asarray(result, np.float64),
                               np.asarray(expected, np.float64), rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(x, before)  # the input was not mutated
    np.testing.assert_array_equal(np.asarray(array), before)


@settings(max_examples=40, deadline=None)
@given(reduction_inputs(), st.sampled_from(["argmax", "argmin", "cumsum", "cumprod"]))
def test_single_axis_functions_agree_with_numpy(inputs, name):
    x, axis, _ = inputs
    if isinstance(axis, tuple) or x.size == 0 or (axis is not None and x.ndim == 0):
        axis = None
    expected = getattr(np, name)(x, axis=axis)
    result = getattr(jnp, name)(jnp.asarray(x), axis=axis)
    if name.startswith("cum") and x.dtype != np.bool_:
        expected = expected.astype(x.dtype)  # NumPy widens small integers; JAX does not
    np.testing.assert_allclose(np.asarray(result, np.float64),
                               np.asarray(expected, np.float64), rtol=1e-5, atol=1e-5)


# ---------------------------------------------------------------------------------------
# Signed zeros: a sum of one element is that element
# ---------------------------------------------------------------------------------------

NEGATIVE_ZEROS = np.full((1, 2), -0.0, np.float32)
SIGNED_ZERO_SUMS = {
    "over a size-1 axis": lambda jnp, x: jnp.sum(x, axis=0),
    "over no axis": lambda jnp, x: jnp.sum(x, axis=()),
    "of a scalar": lambda jnp, x: jnp.sum(x[0, 0]),
    "mean over a size-1 axis": lambda jnp, x: jnp.mean(x, axis=0),
    "over two elements": lambda jnp, x: jnp.sum(x, axis=1),
    "complex, over a size-1 axis": lambda jnp, x: jnp.sum(x.astype(jnp.complex64) * -1j - 0.0,
                                                          axis=0),
}


@pytest.mark.parametrize("name", sorted(SIGNED_ZERO_SUMS))
def test_sums_keep_the_sign_of_a_zero_as_jax_does(name):
    """XLA's simplifier makes a reduction of one element per output a reshape: JAX's sum
    of one -0.0 is -0.0 (eager and jitted), while a real sum starts from +0.0."""
    import jax.numpy as jjnp

    import minijax

    fn = SIGNED_ZERO_SUMS[name]
    expected = np.asarray(fn(jjnp, jjnp.asarray(NEGATIVE_ZEROS)))
    for ours in (fn(jnp, jnp.asarray(NEGATIVE_ZEROS)),
                 minijax.jit(lambda x: fn(jnp, x))(jnp.asarray(NEGATIVE_ZEROS))):
        ours = np.asarray(ours)
        assert ours.dtype == expected.dtype and ours.shape == expected.shape
        assert np.array_equal(np.signbit(ours.real), np.signbit(expected.real))
        assert np.array_equal(np.signbit(ours.imag), np.signbit(expected.imag))
