"""The dtype of real operations, against JAX: every pair of the 15 dtypes, both x64 modes.

``tests/test_dtypes.py`` checks the promotion *rules* (``promote_types``, ``result_type``);
this file checks that ``jnp`` operations actually produce what the rules say: the result
dtype and weak type of ``x + y`` and ``x * 2.0``, for arrays of every dtype and for weak
Python scalars, in the default mode and with ``jax_enable_x64``; and that ``strict``
promotion refuses what JAX refuses.
"""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest

import minijax
import minijax.numpy as jnp
from minijax import dtypes

jax = pytest.importorskip("jax")
jjnp = jax.numpy

DTYPES = [np.dtype(t) for t in dtypes.SUPPORTED_DTYPES]
SCALARS = [True, 3, 2.5, 1j]


@pytest.fixture(params=[False, True], ids=["x32", "x64"])
def x64(request):
    """Run the test in one x64 mode on both sides, restoring the default afterwards."""
    minijax.config.update("jax_enable_x64", request.param)
    jax.config.update("jax_enable_x64", request.param)
    yield request.param
    minijax.config.update("jax_enable_x64", False)
    jax.config.update("jax_enable_x64", False)


def make(np_module, dtype, x64):
    """A 2-element array of ``dtype`` (silently truncated to 32 bits when x64 is off)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return np_module.ones(2, dtype=dtype)


def outcome(fn):
    try:
        result = fn()
    except Exception as e:  # noqa: BLE001 - the error class is the outcome
        return type(e).__name__
    return result.dtype, result.weak_type


@pytest.mark.parametrize("a, b", list(itertools.product(DTYPES, DTYPES)),
                         ids=lambda d: d.name)
def test_binary_op_dtype_matches_jax(a, b, x64):
    ours = outcome(lambda: make(jnp, a, x64) + make(jnp, b, x64))
    theirs = outcome(lambda: make(jjnp, a, x64) + make(jjnp, b, x64))
    assert ours == theirs


@pytest.mark.parametrize("scalar", SCALARS, ids=repr)
@pytest.mark.parametrize("a", DTYPES, ids=lambda d: d.name)
def test_array_with_python_scalar_matches_jax(a, scalar, x64):
    ours = outcome(lambda: make(jnp, a, x64) * scalar)
    theirs = outcome(lambda: make(jjnp, a, x64) * scalar)
    assert ours == theirs
    assert outcome(lambda: scalar * make(jnp, a, x64)) == theirs


@pytest.mark.parametrize("a, b", list(itertools.product(SCALARS, SCALARS)), ids=repr)
def test_weak_values_combine_like_jax(a, b, x64):
    ours = outcome(lambda: jnp.asarray(a) + b)
    theirs = outcome(lambda: jjnp.asarray(a) + b)
    assert ours == theirs


@pytest.mark.parametrize("a, b", list(itertools.product(DTYPES, DTYPES)),
                         ids=lambda d: d.name)
def test_strict_promotion_refuses_what_jax_refuses(a, b):
    with minijax.numpy_dtype_promotion("strict"), jax.numpy_dtype_promotion("strict"):
        ours = outcome(lambda: make(jnp, a, False) + make(jnp, b, False))
        theirs = outcome(lambda: make(jjnp, a, False) + make(jjnp, b, False))
    assert ours == theirs


def test_python_int_too_large_for_the_dtype_is_an_error_like_jax():
    with pytest.raises(OverflowError):
        jnp.ones(3, jnp.int32) + 2**40
    with pytest.raises(OverflowError):
        jjnp.ones(3, jjnp.int32) + 2**40
    assert (jnp.int8(1) + 300).item() == (jjnp.int8(1) + 300).item() == 45


MIXED_RANKS = {
    "minus_its_mean": lambda jnp, x: x - jnp.mean(x),
    "mean_times_matrix": lambda jnp, x: jnp.mean(x) * x.reshape(2, 3),
    "times_weak_0d": lambda jnp, x: x * jnp.asarray(2.0),
    "weak_0d_pair": lambda jnp, x: jnp.asarray(2.0) + jnp.asarray(3.0),
    "weak_0d_and_scalar": lambda jnp, x: jnp.asarray(2.0) * 1.5,
    "int_0d_and_float": lambda jnp, x: jnp.asarray(3) * x,
    "matrix_plus_vector": lambda jnp, x: x.reshape(2, 3) + x[:3],
}


@pytest.mark.parametrize("name", MIXED_RANKS)
def test_operands_of_different_ranks_match_jax(name):
    """Rank-0 operands need no rank promotion (the fast path takes them); other rank
    differences, dtype or weak-type differences take the general rules."""
    program = MIXED_RANKS[name]
    host = np.arange(6.0, dtype=np.float32)
    ours = program(jnp, jnp.asarray(host))
    theirs = program(jjnp, jjnp.asarray(host))
    assert (ours.shape, ours.dtype, ours.weak_type) == (theirs.shape, theirs.dtype,
                                                          theirs.weak_type)
    np.testing.assert_array_equal(np.asarray(ours), np.asarray(theirs))
    ours_jaxpr = minijax.make_jaxpr(lambda x: program(jnp, x))(jnp.asarray(host))
    theirs_jaxpr = jax.make_jaxpr(lambda x: program(jjnp, x))(jjnp.asarray(host))
    assert str(ours_jaxpr) == str(theirs_jaxpr)
