"""Array creation (arange, linspace, eye, tri, diag, meshgrid, array of arrays, ...) against JAX.

* values, shapes, dtypes and weak types (``oracle.check_program``);
* JAX's x64 warning for 64-bit ``dtype=`` requests, naming the function;
* the primitives of the jaxprs are JAX's; tracing then evaluating gives the eager result;
* bad input: JAX's error class and a message that names the problem;
* Hypothesis: ``arange`` and ``linspace`` agree with JAX on random arguments.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minijax
import minijax.numpy as mjnp
from tests.oracle import assert_same, assert_same_error, check_program, primitive_names, run_both

jax = pytest.importorskip("jax")

M = np.arange(12, dtype=np.float32).reshape(3, 4)
V = np.arange(1, 4, dtype=np.float32)

PROGRAMS = {
    "arange": lambda n: n.jnp.arange(5),
    "arange_start_stop": lambda n: n.jnp.arange(2, 5),
    "arange_negative_step": lambda n: n.jnp.arange(5, 0, -2),
    "arange_float": lambda n: n.jnp.arange(1.0, 2.0, 0.25),
    "arange_float_inexact": lambda n: n.jnp.arange(0.1, 1.0, 0.3),
    "arange_float_stop": lambda n: n.jnp.arange(3.0),
    "arange_float_negative": lambda n: n.jnp.arange(1.0, -1.0, -0.5),
    "arange_dtype": lambda n: n.jnp.arange(5, dtype=np.float32),
    "arange_int_dtype_float_step": lambda n: n.jnp.arange(0, 1, 0.3, dtype=np.int32),
    "arange_empty": lambda n: n.jnp.arange(5, 0),
    "arange_numpy_scalar": lambda n: n.jnp.arange(np.int64(4)),
    "arange_concrete_array": lambda n: n.jnp.arange(n.jnp.asarray(4)),
    "arange_uint8": lambda n: n.jnp.arange(3, dtype=np.uint8),
    "linspace": lambda n: n.jnp.linspace(0, 1, 5),
    "linspace_no_endpoint": lambda n: n.jnp.linspace(1.0, 2.0, 3, endpoint=False),
    "linspace_retstep": lambda n: n.jnp.linspace(0, 1, 5, endpoint=False, retstep=True),
    "linspace_int": lambda n: n.jnp.linspace(0, 10, 4, dtype=np.int32),
    "linspace_int_negative": lambda n: n.jnp.linspace(-5, 5, 7, dtype=np.int32),
    "linspace_arrays": lambda n: n.jnp.linspace(n.jnp.asarray(np.array([0.0, 1.0])), 2.0, 3),
    "linspace_axis": lambda n: n.jnp.linspace(n.jnp.zeros(2), n.jnp.ones(2), 3, axis=1),
    "linspace_one": lambda n: n.jnp.linspace(2.0, 3.0, 1),
    "linspace_zero": lambda n: n.jnp.linspace(0, 1, 0),
    "linspace_float16": lambda n: n.jnp.linspace(np.float16(0), 1, 3),
    "logspace": lambda n: n.jnp.logspace(0, 2, 3),
    "logspace_base": lambda n: n.jnp.logspace(0, 3, 4, base=2),
    "logspace_int": lambda n: n.jnp.logspace(0, 3, 4, dtype=np.int32),
    "geomspace": lambda n: n.jnp.geomspace(1, 100, 3),
    "geomspace_negative": lambda n: n.jnp.geomspace(-1, -1000, 4),
    "eye": lambda n: n.jnp.eye(3),
    "eye_rectangular_k": lambda n: n.jnp.eye(3, 4, k=1, dtype=np.int32),
    "eye_negative_k": lambda n: n.jnp.eye(4, 3, k=-2),
    "eye_k_outside": lambda n: n.jnp.eye(2, 3, k=5),
    "eye_bool": lambda n: n.jnp.eye(2, dtype=bool),
    "identity": lambda n: n.jnp.identity(2, dtype=np.int32),
    "tri": lambda n: n.jnp.tri(3),
    "tri_k": lambda n: n.jnp.tri(3, 2, k=-1, dtype=np.int32),
    "tril": lambda n: n.jnp.tril(n.jnp.asarray(M)),
    "tril_k": lambda n: n.jnp.tril(n.jnp.asarray(M), 1),
    "triu": lambda n: n.jnp.triu(n.jnp.asarray(M)),
    "triu_k_batched": lambda n: n.jnp.triu(n.jnp.ones((2, 3, 3)), -1),
    "diag_build": lambda n: n.jnp.diag(n.jnp.asarray(V)),
    "diag_build_k": lambda n: n.jnp.diag(n.jnp.asarray(V), k=1),
    "diag_build_negative_k": lambda n: n.jnp.diag(n.jnp.arange(3), k=-1),
    "diag_extract": lambda n: n.jnp.diag(n.jnp.asarray(M)),
    "diag_extract_k": lambda n: n.jnp.diag(n.jnp.asarray(M), -1),
    "diagonal": lambda n: n.jnp.diagonal(n.jnp.ones((2, 3, 4)) * n.jnp.arange(4.0), 0, 1, 2),
    "diagonal_offset": lambda n: n.jnp.diagonal(n.jnp.asarray(M), 2),
    "diagonal_too_far": lambda n: n.jnp.diagonal(n.jnp.asarray(M), 5),
    "diagonal_axes": lambda n: n.jnp.diagonal(n.jnp.asarray(np.arange(24.0).reshape(2, 3, 4)),
                                              1, 2, 0),
    "diagonal_method": lambda n: n.jnp.asarray(M).diagonal(),
    "meshgrid": lambda n: n.jnp.meshgrid(n.jnp.arange(3), n.jnp.arange(2.0)),
    "meshgrid_ij": lambda n: n.jnp.meshgrid(n.jnp.arange(3), n.jnp.arange(2), indexing="ij"),
    "meshgrid_three": lambda n: n.jnp.meshgrid(n.jnp.arange(2), n.jnp.arange(3), n.jnp.arange(4)),
    "meshgrid_sparse": lambda n: n.jnp.meshgrid(n.jnp.arange(2), n.jnp.arange(3), sparse=True),
    "meshgrid_one": lambda n: n.jnp.meshgrid(n.jnp.arange(3)),
    "indices": lambda n: n.jnp.indices((2, 3)),
    "indices_sparse": lambda n: n.jnp.indices((2, 3), sparse=True),
    "indices_dtype": lambda n: n.jnp.indices((2,), dtype=np.float32),
    "copy": lambda n: n.jnp.copy(n.jnp.asarray(1.0)),
    "copy_array": lambda n: n.jnp.copy(n.jnp.asarray(M)),
    "array_of_arrays": lambda n: n.jnp.array([n.jnp.asarray(V), n.jnp.asarray(V)]),
    "asarray_of_arrays": lambda n: n.jnp.asarray([n.jnp.asarray(V), V]),
    "array_ndmin": lambda n: n.jnp.array([n.jnp.asarray(1.0)], ndmin=3),
    "zeros_like_arange": lambda n: n.jnp.zeros_like(n.jnp.arange(3)),
}


@pytest.mark.parametrize("name", PROGRAMS)
def test_matches_jax(name):
    check_program(PROGRAMS[name])


X64_REQUESTS = {
    "zeros": lambda n: n.jnp.zeros(3, n.jnp.int64),
    "arange": lambda n: n.jnp.arange(3, dtype=n.jnp.int64),
    "linspace": lambda n: n.jnp.linspace(0, 1, 3, dtype=n.jnp.float64),
    "eye": lambda n: n.jnp.eye(2, dtype=n.jnp.float64),
    "tri": lambda n: n.jnp.tri(2, dtype=n.jnp.int64),
    "array": lambda n: n.jnp.array([1, 2], dtype=n.jnp.int64),
}


@pytest.mark.parametrize("name", X64_REQUESTS)
def test_64_bit_requests_warn_like_jax(name):
    program = X64_REQUESTS[name]
    with warnings.catch_warnings(record=True) as ours:
        warnings.simplefilter("always")
        ours_result = run_both(lambda n: program(n) if n.jax is minijax else None)[0]
    with warnings.catch_warnings(record=True) as theirs:
        warnings.simplefilter("always")
        theirs_result = run_both(lambda n: program(n) if n.jax is not minijax else None)[1]
    assert_same(ours_result, theirs_result)
    our_messages = [str(w.message) for w in ours if w.category is UserWarning]
    their_messages = [str(w.message) for w in theirs if w.category is UserWarning]
    assert our_messages and our_messages == their_messages


def test_x64_mode_gives_64_bit_results():
    minijax.config.update("jax_enable_x64", True)
    try:
        assert mjnp.arange(3).dtype == np.int64
        assert mjnp.arange(3.0).dtype == np.float64
        assert mjnp.linspace(0, 1, 3).dtype == np.float64
        assert mjnp.eye(2).dtype == np.float64
        assert mjnp.arange(3, dtype=mjnp.int64).dtype == np.int64
        x = mjnp.arange(6.0).reshape(2, 3)
        assert x[np.array([1, 0]), -1].tolist() == [5.0, 2.0]
        assert x.at[1, np.array([0, 0])].add(1.0).tolist() == [[0, 1, 2], [5, 4, 5]]
    finally:
        minijax.config.update("jax_enable_x64", False)


# ---------------------------------------------------------------------------------------
# jaxprs
# ---------------------------------------------------------------------------------------

JAXPRS = {
    "arange": lambda j: j.arange(5),
    "arange_start": lambda j: j.arange(2, 5),
    "arange_step": lambda j: j.arange(0, 6, 2),
    "arange_float": lambda j: j.arange(1.0, 2.0, 0.25),
    "eye": lambda j: j.eye(3),
    "eye_k": lambda j: j.eye(3, 4, k=1, dtype=j.int32),
    "tri": lambda j: j.tri(3),
    "meshgrid": lambda j: j.meshgrid(j.ones(3), j.ones(2)),
    "indices": lambda j: j.indices((2, 3)),
    "copy": lambda j: j.copy(j.ones(3)),
}


@pytest.mark.parametrize("name", JAXPRS)
def test_jaxpr_primitives_match_jax(name):
    import jax.numpy as jjnp

    fun = JAXPRS[name]
    ours = primitive_names(minijax.make_jaxpr(lambda: fun(mjnp))())
    theirs = primitive_names(jax.make_jaxpr(lambda: fun(jjnp))())
    assert ours == theirs


def test_array_of_tracers_is_traced_like_jax():
    import jax.numpy as jjnp

    ours = minijax.make_jaxpr(lambda x: mjnp.array([x, 1.0]))(1.0)
    theirs = jax.make_jaxpr(lambda x: jjnp.array([x, 1.0]))(1.0)
    assert primitive_names(ours) == primitive_names(theirs)
    assert ours.out_avals[0] == minijax.ShapedArray((2,), np.float32)


def test_traced_creation_matches_eager():
    def fun(x):
        return mjnp.tril(mjnp.diag(x) + mjnp.eye(3, k=1)), mjnp.linspace(x, 2 * x, 4, axis=1)

    x = mjnp.asarray(V)
    closed = minijax.make_jaxpr(fun)(x)
    for traced, eager in zip(minijax.jaxpr.eval_closed_jaxpr(closed, x), fun(x)):
        np.testing.assert_array_equal(np.asarray(traced), np.asarray(eager))


# ---------------------------------------------------------------------------------------
# Bad input
# ---------------------------------------------------------------------------------------

BAD = {
    "arange_zero_step": (lambda n: n.jnp.arange(0, 5, 0), ZeroDivisionError, []),
    "arange_complex": (lambda n: n.jnp.arange(3j), ValueError, ["complex"]),
    "arange_bool": (lambda n: n.jnp.arange(3, dtype=bool), TypeError, ["iota", "bool"]),
    "linspace_negative_num": (lambda n: n.jnp.linspace(0, 1, -1), ValueError,
                              ["Number of samples, -1, must be non-negative."]),
    "eye_negative": (lambda n: n.jnp.eye(-1), ValueError, ["negative dimensions"]),
    "diag_3d": (lambda n: n.jnp.diag(n.jnp.ones((2, 2, 2))), ValueError, ["1d or 2d"]),
    "diagonal_1d": (lambda n: n.jnp.diagonal(n.jnp.ones(3)), ValueError,
                    ["at least two dimensions"]),
    "tril_1d": (lambda n: n.jnp.tril(n.jnp.ones(3)), ValueError, ["tril", "2D"]),
    "meshgrid_2d": (lambda n: n.jnp.meshgrid(n.jnp.ones((2, 2)), n.jnp.ones(3)), ValueError,
                    ["must be 1D", "[(2, 2), (3,)]"]),
    "meshgrid_indexing": (lambda n: n.jnp.meshgrid(n.jnp.ones(2), indexing="foo"), ValueError,
                          ["'xy' and 'ij'", "foo"]),
    "copy_list": (lambda n: n.jnp.copy([1, 2]), TypeError, ["ndarray or scalar"]),
}


@pytest.mark.parametrize("name", BAD)
def test_bad_input_matches_jax(name):
    assert_same_error(*BAD[name])


def test_arange_of_a_tracer_is_a_concretization_error():
    with pytest.raises(minijax.errors.ConcretizationTypeError,
                       match="It arose in the jnp.arange argument 'stop'"):
        minijax.make_jaxpr(lambda n: mjnp.arange(n))(5)


# ---------------------------------------------------------------------------------------
# Properties
# ---------------------------------------------------------------------------------------

_BOUND = st.one_of(st.integers(-20, 20), st.floats(-20, 20).map(lambda f: round(f, 2)))


@settings(max_examples=40, deadline=None)
@given(_BOUND, _BOUND, st.one_of(st.integers(-4, 4), st.sampled_from([0.5, -0.75, 1.5]))
       .filter(bool))
def test_arange_matches_jax(start, stop, step):
    assert_same(*run_both(lambda n: n.jnp.arange(start, stop, step)))


@settings(max_examples=40, deadline=None)
@given(_BOUND, _BOUND, st.integers(0, 9), st.booleans(), st.sampled_from([None, np.float32]))
def test_linspace_matches_jax(start, stop, num, endpoint, dtype):
    """Floating point only: XLA fuses ``start * (1 - t) + stop * t`` into fused multiply-adds,
    so a value that is exactly an integer for NumPy may be a hair below it in JAX, and an
    integer ``dtype`` (which rounds down) can then differ by one."""
    ours, theirs = run_both(lambda n: n.jnp.linspace(start, stop, num, endpoint, dtype=dtype))
    assert_same(ours, theirs, rtol=1e-5, atol=1e-5)
