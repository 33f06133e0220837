"""Sorting: ``lax.sort`` (one or several operands), ``lax.top_k``, and ``jnp.sort``,
``argsort``, ``lexsort``, ``searchsorted``, against JAX (values, dtypes, NaN placement,
stability, jaxprs, errors) and NumPy (Hypothesis)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from oracle import assert_traced_matches_eager, check_program, primitive_names, run_both

import minijax.numpy as jnp
from minijax import lax

jax = pytest.importorskip("jax")

rng = np.random.RandomState(1)
F = rng.randn(3, 5).astype(np.float32)
I = rng.randint(-3, 3, (3, 5)).astype(np.int32)
U8 = rng.randint(0, 255, (4, 3)).astype(np.uint8)
B = rng.rand(6) > 0.5
SPECIAL = np.array([0.0, -0.0, np.nan, -np.nan, 1.0, -np.inf, np.inf, -1.0, 0.0, -0.0],
                   np.float32)
C = np.array([1 + 2j, 1 + 1j, np.nan + 0j, complex(0, np.nan), -1 + 5j, complex(np.nan, 1),
              1 + 1j], np.complex64)
DUPS = np.array([3, 1, 2, 3, 1, 2, 2], np.int32)
H = F.astype(np.float16)
BF = SPECIAL.astype(ml_dtypes.bfloat16)
SORTED = np.array([-1.0, 0.0, 0.0, 2.5, 3.0, np.nan], np.float32)
QUERIES = np.array([[-2.0, 0.0, 0.1], [3.0, 9.0, np.nan]], np.float32)


def program(fn, *inputs):
    return lambda n: fn(n.jnp, n.lax, *[n.jnp.asarray(x) for x in inputs])


CASES = {
    "sort": (lambda jnp, lax, x: jnp.sort(x), F),
    "sort_axis0": (lambda jnp, lax, x: jnp.sort(x, axis=0), F),
    "sort_none": (lambda jnp, lax, x: jnp.sort(x, axis=None), F),
    "sort_descending": (lambda jnp, lax, x: jnp.sort(x, descending=True), I),
    "sort_nan_and_zeros": (lambda jnp, lax, x: jnp.sort(x), SPECIAL),
    "sort_descending_nan": (lambda jnp, lax, x: jnp.sort(x, descending=True), SPECIAL),
    "sort_bool": (lambda jnp, lax, x: jnp.sort(x), B),
    "sort_uint8": (lambda jnp, lax, x: jnp.sort(x, axis=0), U8),
    "sort_float16": (lambda jnp, lax, x: jnp.sort(x, axis=-1), H),
    "sort_bfloat16": (lambda jnp, lax, x: jnp.sort(x), BF),
    "sort_complex": (lambda jnp, lax, x: jnp.sort(x), C),
    "sort_unstable_distinct": (lambda jnp, lax, x: jnp.sort(x, stable=False), F),
    "argsort": (lambda jnp, lax, x: jnp.argsort(x), F),
    "argsort_axis0": (lambda jnp, lax, x: jnp.argsort(x, axis=0), I),
    "argsort_stable_ties": (lambda jnp, lax, x: jnp.argsort(x), DUPS),
    "argsort_descending_ties": (lambda jnp, lax, x: jnp.argsort(x, descending=True), DUPS),
    "argsort_nan_and_zeros": (lambda jnp, lax, x: jnp.argsort(x), SPECIAL),
    "argsort_descending_nan": (lambda jnp, lax, x: jnp.argsort(x, descending=True), SPECIAL),
    "argsort_none": (lambda jnp, lax, x: jnp.argsort(x, axis=None), I),
    "argsort_dtype": (lambda jnp, lax, x: jnp.argsort(x, dtype=jnp.int16), F),
    "argsort_complex": (lambda jnp, lax, x: jnp.argsort(x), C),
    "lexsort": (lambda jnp, lax, x, y: jnp.lexsort((x, y)), F[0], DUPS[:5]),
    "lexsort_2d_axis0": (lambda jnp, lax, x, y: jnp.lexsort([x, y], axis=0), F, I),
    "searchsorted_left": (lambda jnp, lax, a, v: jnp.searchsorted(a, v), SORTED, QUERIES),
    "searchsorted_right": (lambda jnp, lax, a, v: jnp.searchsorted(a, v, side="right"),
                           SORTED, QUERIES),
    "searchsorted_scalar": (lambda jnp, lax, a: jnp.searchsorted(a, 0.0), SORTED),
    "searchsorted_int": (lambda jnp, lax, a, v: jnp.searchsorted(a, v),
                         np.sort(DUPS), np.arange(5, dtype=np.int32)),
    "lax_sort": (lambda jnp, lax, x: lax.sort(x), F),
    "lax_sort_dimension0": (lambda jnp, lax, x: lax.sort(x, dimension=0), I),
    "lax_sort_tuple_of_one": (lambda jnp, lax, x: lax.sort((x,)), F),
    "lax_sort_two_operands": (lambda jnp, lax, k, v: lax.sort((k, v), num_keys=1), I, F),
    "lax_sort_two_keys": (lambda jnp, lax, k, v: lax.sort([k, v, v * 2], num_keys=2), I, F),
    "lax_sort_key_val": (lambda jnp, lax, k, v: lax.sort_key_val(k, v), DUPS, DUPS * 10),
    "lax_sort_nan": (lambda jnp, lax, x: lax.sort(x), SPECIAL),
    "lax_top_k": (lambda jnp, lax, x: lax.top_k(x, 2), F),
    "lax_top_k_ties_and_nan": (lambda jnp, lax, x: lax.top_k(x, 10), SPECIAL),
    "lax_top_k_float16": (lambda jnp, lax, x: lax.top_k(x, 3), H),
    "lax_top_k_int_ties": (lambda jnp, lax, x: lax.top_k(x, 4), DUPS),
    "lax_top_k_axis0": (lambda jnp, lax, x: lax.top_k(x, 2, axis=0), U8),
    "lax_top_k_zero": (lambda jnp, lax, x: lax.top_k(x, 0), F),
    "methods": (lambda jnp, lax, x: (x.sort(), x.argsort(axis=0)), F),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_jax(name):
    fn, *inputs = CASES[name]
    check_program(program(fn, *inputs))


@pytest.mark.parametrize("name", sorted(CASES))
def test_traced_matches_eager(name):
    fn, *inputs = CASES[name]
    assert_traced_matches_eager(lambda *xs: fn(jnp, lax, *xs), *map(jnp.asarray, inputs))


JAXPRS = {
    "sort": lambda jnp, x: jnp.sort(x),
    "sort_axis0": lambda jnp, x: jnp.sort(x, axis=0),
    "sort_none": lambda jnp, x: jnp.sort(x, axis=None),
    "sort_descending": lambda jnp, x: jnp.sort(x, descending=True),
    "argsort": lambda jnp, x: jnp.argsort(x),
    "argsort_descending": lambda jnp, x: jnp.argsort(x, descending=True),
}


@pytest.mark.parametrize("name", sorted(JAXPRS))
def test_jaxpr_primitives_match_jax(name):
    fn = JAXPRS[name]
    check_program(lambda n: primitive_names(n.jax.make_jaxpr(lambda a: fn(n.jnp, a))(F)))


@pytest.mark.parametrize("fn", [
    lambda jnp, lax, x: lax.sort(x, dimension=0),
    lambda jnp, lax, x: lax.sort((x, x), num_keys=2, is_stable=False),
    lambda jnp, lax, x: lax.top_k(x, 3),
])
def test_printed_jaxpr_matches_jax(fn):
    check_program(lambda n: str(n.jax.make_jaxpr(lambda a: fn(n.jnp, n.lax, a))(F)))


ERRORS = {
    "sort_axis_out_of_range": (lambda jnp, lax, x: jnp.sort(x, axis=2),
                               "axis 2 is out of bounds for array of dimension 2"),
    "sort_scalar": (lambda jnp, lax, x: jnp.sort(jnp.float32(1.0)),
                    "axis -1 is out of bounds for array of dimension 0"),
    "sort_list": (lambda jnp, lax, x: jnp.sort([3, 1, 2]), "requires ndarray or scalar"),
    "sort_kind": (lambda jnp, lax, x: jnp.sort(x, kind="quicksort"), "'kind' argument"),
    "argsort_order": (lambda jnp, lax, x: jnp.argsort(x, order="f"), "'order' argument"),
    "lexsort_no_keys": (lambda jnp, lax, x: jnp.lexsort(()), "len > 0"),
    "lexsort_shapes": (lambda jnp, lax, x: jnp.lexsort((x, x[0])), "same shape"),
    "searchsorted_side": (lambda jnp, lax, x: jnp.searchsorted(x[0], 1.0, side="middle"),
                          "invalid argument side='middle'"),
    "searchsorted_2d": (lambda jnp, lax, x: jnp.searchsorted(x, 1.0),
                        "a should be 1-dimensional"),
    "lax_sort_shapes": (lambda jnp, lax, x: lax.sort((x, x[0])),
                        "Arguments to sort must have equal shapes, got: (3, 5) (5,)"),
    "lax_sort_num_keys": (lambda jnp, lax, x: lax.sort((x, x), num_keys=3),
                          "num_keys=3 must be between 1 and len(operand)=2"),
    "lax_sort_dimension": (lambda jnp, lax, x: lax.sort(x, dimension=-3),
                           "axis -3 is out of bounds"),
    "lax_top_k_too_big": (lambda jnp, lax, x: lax.top_k(x, 6),
                          "k argument to top_k must be no larger than size along axis"),
    "lax_top_k_negative": (lambda jnp, lax, x: lax.top_k(x, -1),
                           "k argument to top_k must be nonnegative, got -1"),
}


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_bad_input_raises_like_jax(name):
    fn, message = ERRORS[name]
    ours, theirs = run_both(program(fn, F))
    assert ours[0] == theirs[0] == "error", (ours, theirs)
    assert type(ours[1]).__name__ == type(theirs[1]).__name__, (ours[1], theirs[1])
    assert message in str(ours[1])


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(1, 5), min_size=1, max_size=3),
       st.sampled_from([np.float32, np.int32, np.int8]), st.integers(0, 2**16), st.data())
def test_sort_and_argsort_agree_with_numpy(shape, dtype, seed, data):
    x = np.random.RandomState(seed).randint(-4, 4, shape).astype(dtype)  # many ties
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    before = x.copy()
    array = jnp.asarray(x)
    np.testing.assert_array_equal(np.asarray(jnp.sort(array, axis=axis)),
                                  np.sort(x, axis=axis))
    np.testing.assert_array_equal(np.asarray(jnp.argsort(array, axis=axis)),
                                  np.argsort(x, axis=axis, kind="stable"))
    np.testing.assert_array_equal(x, before)
    np.testing.assert_array_equal(np.asarray(array), before)
