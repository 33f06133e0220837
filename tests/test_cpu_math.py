"""minijax.lax.cpu_math repeats XLA's CPU arithmetic: the fused multiply-add exactly, and
XLA's float32 log and the C library's float32 atan2 bit for bit (JAX's results, where JAX
is installed), on many random normal numbers (XLA flushes denormals; minijax keeps them).
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from minijax.lax import cpu_math

RNG = np.random.default_rng(19)


def _floats(n: int, dtype: type, spread: float) -> np.ndarray:
    """Random numbers of both signs over many binades."""
    return (RNG.standard_normal(n) * np.exp(RNG.uniform(-spread, spread, n))).astype(dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_fma_rounds_once(dtype: type) -> None:
    """a * b + c as the exact rational rounded to the nearest float, also where the
    product cancels the sum (c = -a * b rounded: the result is the product's error)."""
    a, b = _floats(3000, dtype, 20), _floats(3000, dtype, 20)
    c = np.concatenate([_floats(1500, dtype, 20), -(a[1500:] * b[1500:])])
    exact = [dtype(float(Fraction(float(x)) * Fraction(float(y)) + Fraction(float(z))))
             for x, y, z in zip(a, b, c)]
    assert (cpu_math.fma(a, b, c) == np.array(exact, dtype)).all()
    assert (cpu_math.fma(a, b, c)[1500:] != 0).any()  # errors NumPy's a * b + c loses


def test_fma_keeps_the_sign_of_an_exact_zero_and_infinities() -> None:
    zero, one, inf = np.float64(0), np.float64(1), np.float64(np.inf)
    assert np.signbit(cpu_math.fma(-zero, one, -zero))
    assert not np.signbit(cpu_math.fma(one, one, -one))
    assert cpu_math.fma(np.float64(1e300), np.float64(1e300), one) == inf
    assert np.isnan(cpu_math.fma(inf, zero, one))


def _jax():
    jax = pytest.importorskip("jax")
    return jax, jax.numpy


def test_float32_log_is_xlas() -> None:
    jax, jjnp = _jax()
    x = np.abs(_floats(200_000, np.float32, 80))
    x = np.concatenate([x[x > np.finfo(np.float32).tiny],
                        np.array([1, 0.5, 2, np.inf, 0, np.finfo(np.float32).max], np.float32)])
    theirs = np.asarray(jax.jit(jjnp.log)(x))
    assert (cpu_math.log(x).view(np.uint32) == theirs.view(np.uint32)).all()
    assert (np.log(x[:-6]) != theirs[:-6]).any()  # NumPy's is not XLA's


def test_float32_atan2_is_the_c_librarys() -> None:
    jax, jjnp = _jax()
    y, x = _floats(200_000, np.float32, 30), _floats(200_000, np.float32, 30)
    y[:4], x[:4] = [0.0, -0.0, np.inf, 1.0], [-1.0, -1.0, -np.inf, 0.0]
    theirs = np.asarray(jax.jit(jjnp.arctan2)(y, x))
    assert (cpu_math.atan2(y, x).view(np.uint32) == theirs.view(np.uint32)).all()
    assert (np.arctan2(y, x) != theirs).mean() > 0.1  # NumPy's float32 loop is its own


def test_float64_atan2_is_nearly_always_correctly_rounded() -> None:
    """Of 100,000 random pairs, the C library's (correctly rounded) atan2 differs from
    NumPy's float64 one about 900 times, and from cpu_math's only in a few."""
    import math

    y, x = _floats(100_000, np.float64, 30), _floats(100_000, np.float64, 30)
    theirs = np.array([math.atan2(a, b) for a, b in zip(y, x)])
    assert (cpu_math.atan2(y, x) != theirs).sum() < 100 < (np.arctan2(y, x) != theirs).sum()


def test_hypot_of_zeros_and_infinities() -> None:
    zero, inf = np.zeros(2, np.float32), np.full(2, np.inf, np.float32)
    assert cpu_math.hypot(zero, zero).tolist() == [0, 0]
    assert cpu_math.hypot(inf, -inf).tolist() == [np.inf, np.inf]
    assert cpu_math.hypot(np.float32([2e38]), np.float32([3e38])).tolist() == [np.inf]
    assert cpu_math.hypot(np.float32([3e30, 3]), np.float32([4e30, -4])).tolist() == [
        pytest.approx(5e30, rel=1e-7), 5]  # no overflow in the squares
