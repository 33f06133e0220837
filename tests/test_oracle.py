"""The oracle's own comparisons (tests/oracle.py): tolerances come from the dtype.

A float16 result may move by a few units in the last place from one CPU to another, so
the oracle accepts that much even when a test asks for less; it still rejects a real
difference, and compares integers (and results a test declares exact) bit for bit.
"""

from __future__ import annotations

import numpy as np
import pytest

import minijax.numpy as jnp
from tests.oracle import assert_same_leaf, tolerances


def ulps_apart(value: float, dtype: str, ulps: int) -> tuple[jnp.ndarray, jnp.ndarray]:
    """``value`` in ``dtype`` and the number ``ulps`` representable steps above it."""
    a = np.asarray(jnp.asarray(value, dtype))
    bits = a.view(np.uint16) + np.uint16(ulps)  # float16 and bfloat16 are 16 bits wide
    return jnp.asarray(a), jnp.asarray(bits.view(a.dtype))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("value", [4.055, -0.3, 1000.0])
def test_a_few_ulps_in_half_precision_pass_even_when_the_test_asks_for_less(dtype, value):
    ours, theirs = ulps_apart(value, dtype, 2)
    assert_same_leaf(ours, theirs, rtol=2e-5, atol=2e-5)
    assert_same_leaf(ours, theirs)


def test_the_float16_result_of_the_issue_passes():
    """4.055 vs 4.06: one float16 step, as a CPU with AVX512-FP16 computes it."""
    assert_same_leaf(jnp.float16(4.055), jnp.float16(4.06), rtol=2e-5, atol=2e-5)


@pytest.mark.parametrize("dtype, ours, theirs", [
    ("float16", 4.0, 4.1), ("bfloat16", 4.0, 4.5), ("float32", 1.0, 1.0001),
    ("float16", 0.0, 0.01),
])
def test_a_real_difference_fails(dtype, ours, theirs):
    with pytest.raises(AssertionError):
        assert_same_leaf(jnp.asarray(ours, dtype), jnp.asarray(theirs, dtype))


def test_a_test_may_loosen_the_tolerance():
    assert_same_leaf(jnp.float16(4.0), jnp.float16(4.1), rtol=5e-2)


def test_exact_results_and_integers_are_compared_bit_for_bit():
    one, next_one = jnp.float32(1.0), jnp.float32(np.nextafter(np.float32(1), np.float32(2)))
    assert_same_leaf(one, next_one)
    with pytest.raises(AssertionError):
        assert_same_leaf(one, next_one, exact=True)
    with pytest.raises(AssertionError):
        assert_same_leaf(jnp.int32(3), jnp.int32(4), rtol=1.0, atol=1.0)


def test_dtype_mismatch_fails_whatever_the_values():
    with pytest.raises(AssertionError, match="dtype"):
        assert_same_leaf(jnp.float16(1.0), jnp.float32(1.0))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64"])
def test_no_dtype_is_compared_tighter_than_its_own_precision(dtype):
    eps = float(jnp.finfo(dtype).eps)
    assert min(tolerances(dtype, rtol=0.0, atol=0.0)) >= eps
