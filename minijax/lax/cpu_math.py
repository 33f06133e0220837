"""Real arithmetic the way XLA's CPU code does it, for the kernels that must repeat it.

XLA computes complex ``pow`` and ``atan2`` by long chains of real operations in the
parts' precision. Where the result is ill-conditioned (``(1+1j) ** 100`` in complex64,
whose imaginary part is 0 in exact arithmetic, or the sign of ``atan2(0, -1-1.5j)`` on
the branch cut) the last bit of every step shows, so minijax repeats the steps -- and
three details where XLA's CPU code differs from NumPy's arithmetic element by element:

* **fused multiply-add**: the compiler fuses a product into the sum that uses it, with
  one rounding (an FMA instruction) where NumPy rounds twice;
* **its own float32 logarithm**, a polynomial (Cephes') written out in the generated code;
* **the C library** for atan2, pow, sin, cos and exp, whose float32 functions are
  computed here in float64 and rounded (NumPy's own float32 loops differ in the last
  bit more often), except float32 atan2, by the C library's algorithm itself (fdlibm's,
  in float32 arithmetic), and float64 atan2, in long double and rounded.

The functions take and give real arrays of one dtype (``a, b`` are the parts of a
complex number).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

Real = np.ndarray
Parts = tuple[np.ndarray, np.ndarray]  # the real and imaginary parts of complex numbers


def fma(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """a * b + c rounded once. A float32 product is exact in float64; a float64 one is
    split into a rounded product and its exact error (Dekker's product, Knuth's sum)."""
    dt = np.result_type(a, b, c)
    if dt != np.float64:
        return (np.asarray(a, np.float64) * b + c).astype(dt)
    with np.errstate(all="ignore"):
        product, error = _exact_product(np.asarray(a, dt), np.asarray(b, dt))
        total = product + c
        rest = (product - (total - (total - product))) + (c - (total - product))
        out = total + (rest + error)
        out = np.where(out == 0, total, out)  # an exact zero keeps the sign of the sum
        return np.where(np.isfinite(out) & np.isfinite(error), out, a * b + c)


def _exact_product(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(p, e) with p = fl(a * b) and p + e = a * b exactly (halves of 26 bits)."""
    a_hi, a_lo = _halves(a)
    b_hi, b_lo = _halves(b)
    product = a * b
    error = ((a_hi * b_hi - product) + a_hi * b_lo + a_lo * b_hi) + a_lo * b_lo
    return product, error


def _halves(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    scaled = 134217729.0 * x  # 2**27 + 1
    high = scaled - (scaled - x)
    return high, x - high


def in_float64(function: Callable[..., np.ndarray], *xs: np.ndarray) -> np.ndarray:
    """``function`` of float32 operands computed in float64 and rounded once, as the C
    library's float32 functions nearly always round; other dtypes as they are."""
    if xs[0].dtype != np.float32:
        return function(*xs)
    return function(*(x.astype(np.float64) for x in xs)).astype(np.float32)


def log(x: np.ndarray) -> np.ndarray:
    """XLA's float32 logarithm: x = m 2^e with m in [sqrt(1/2), sqrt(2)), then
    log(m) = f - f²/2 + f³ P(f) with f = m - 1, plus e log 2 in two parts. Other dtypes
    (and the denormals XLA flushes to zero, which minijax keeps) by NumPy."""
    if x.dtype != np.float32:
        return np.log(x)
    tiny = np.finfo(np.float32).tiny
    bits = np.maximum(x, tiny).view(np.uint32)
    mantissa = ((bits & np.uint32(0x807FFFFF)) | np.uint32(0x3F000000)).view(np.float32)
    low = mantissa < np.float32(0.70710677)  # m in [1/2, sqrt(1/2)) is doubled
    exponent = ((bits >> 23).astype(np.int32) - 126 - low).astype(np.float32)
    f = (mantissa - 1) + np.where(low, mantissa, 0).astype(np.float32)
    f2 = f * f
    f3 = f2 * f
    p = [_poly(f, *coefficients) for coefficients in _LOG_P]
    poly = fma(fma(p[0], f3, p[1]), f3, p[2])
    out = fma(np.float32(0.693359375), exponent,
              (f - np.float32(0.5) * f2) + fma(poly, f3, np.float32(-2.12194440e-4) * exponent))
    with np.errstate(all="ignore"):
        return np.where((x < tiny) | ~np.isfinite(x), np.log(x), out).astype(np.float32)


def _poly(f: np.ndarray, c0: float, c1: float, c2: float) -> np.ndarray:
    return fma(fma(f, np.float32(c0), np.float32(c1)), f, np.float32(c2))


# log's P(f), in three pieces of three coefficients (Estrin's scheme, as XLA evaluates it)
_LOG_P = ((7.0376836292e-2, -1.1514610310e-1, 1.1676998740e-1),
          (-1.2420140846e-1, 1.4249322787e-1, -1.6668057665e-1),
          (2.0000714765e-1, -2.4999993993e-1, 3.3333331174e-1))


def atan2(y: np.ndarray, x: np.ndarray) -> np.ndarray:
    """The angle of (x, y), as the C library computes it. In float32 by its algorithm:
    atan(|y / x|) by fdlibm's reduction and polynomial, moved into x's half plane with pi
    in two parts (zeros and infinities as C99 has them). In float64 it is correctly
    rounded, as the same computed in long double (where there is one) and rounded nearly
    always is; NumPy's own float64 loop is a bit off about once in a hundred."""
    if y.dtype == np.float64:
        return np.arctan2(y.astype(np.longdouble), x).astype(np.float64)
    if y.dtype != np.float32:
        return np.arctan2(y, x)
    with np.errstate(all="ignore"):
        z = _atan(np.abs(y / x))
        pi, pi_lo = np.float32(3.1415927410e+00), np.float32(-8.7422776573e-08)
        z = np.where(x < 0, pi - (z - pi_lo), z)
        special = (y == 0) | (x == 0) | np.isinf(x) | np.isinf(y) | np.isnan(z)
        return np.where(special, np.arctan2(y, x), np.copysign(z, y)).astype(np.float32)


def _atan(t: np.ndarray) -> np.ndarray:
    """atan(t) of t >= 0, fdlibm's way: t is moved near 0, 1/2, 1, 3/2 or infinity,
    where atan is known (in two parts), and the rest is an odd polynomial."""
    one, f32 = np.float32(1), np.float32
    near = np.searchsorted(np.array([0.4375, 0.6875, 1.1875, 2.4375], f32), t, "right")
    with np.errstate(all="ignore"):
        reduced = np.choose(near, [t, (2 * t - one) / (2 + t), (t - one) / (t + one),
                                   (t - f32(1.5)) / (one + f32(1.5) * t), -one / t])
    reduced = reduced.astype(f32)
    z = reduced * reduced
    w = z * z
    odd = z * _horner(w, _ATAN[0::2])
    even = w * _horner(w, _ATAN[1::2])
    small = reduced - reduced * (odd + even)
    hi, lo = _ATAN_HI[near - 1], _ATAN_LO[near - 1]
    out = np.where(near == 0, small, hi - ((reduced * (odd + even) - lo) - reduced))
    return np.where(t >= f32(2.0 ** 25), _ATAN_HI[3] + _ATAN_LO[3], out).astype(f32)


def _horner(w: np.ndarray, coefficients: np.ndarray) -> np.ndarray:
    out = coefficients[-1] * np.ones_like(w)
    for c in coefficients[-2::-1]:
        out = c + w * out
    return out


_ATAN = np.array([3.3333334327e-01, -2.0000000298e-01, 1.4285714924e-01, -1.1111110449e-01,
                  9.0908870101e-02, -7.6918758452e-02, 6.6610731184e-02, -5.8335702866e-02,
                  4.9768779427e-02, -3.6531571299e-02, 1.6285819933e-02], np.float32)
_ATAN_HI = np.array([4.6364760399e-01, 7.8539812565e-01, 9.8279368877e-01, 1.5707962513e+00],
                    np.float32)
_ATAN_LO = np.array([5.0121582440e-09, 3.7748947079e-08, 3.4473217170e-08, 7.5497894159e-08],
                    np.float32)


def hypot(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """|a + bi| = max sqrt(1 + (min / max)²), without overflow; 0/0 and inf/inf give the
    smaller part (0, or inf) instead of NaN."""
    big, small = np.maximum(np.abs(a), np.abs(b)), np.minimum(np.abs(a), np.abs(b))
    with np.errstate(all="ignore"):
        ratio = small / big
        out = big * np.sqrt(fma(ratio, ratio, np.ones((), a.dtype)))
    return np.where(np.isnan(out), small, out).astype(a.dtype)


# ---------------------------------------------------------------------------------------
# XLA's complex steps, on the parts
# ---------------------------------------------------------------------------------------


def complex_sqrt(a: Real, b: Real) -> Parts:
    """sqrt(a + bi) = sqrt(r) (cos(t/2) + i sin(t/2)), r = |a + bi|, t = atan2(b, a),
    with sqrt(r) as sqrt(max) (1 + (min/max)²)^(1/4); infinite parts as C99 has them."""
    big, small = np.maximum(np.abs(a), np.abs(b)), np.minimum(np.abs(a), np.abs(b))
    inf, one = np.inf, np.ones((), a.dtype)
    with np.errstate(all="ignore"):
        ratio = small / big
        root = np.sqrt(big) * in_float64(np.power, fma(ratio, ratio, one), 0.25 * one)
        root = np.where(np.isnan(root), small, root)
        half = atan2(b, a) * a.dtype.type(0.5)
        cos, sin = in_float64(np.cos, half), in_float64(np.sin, half)
        real = np.where((a == -inf) & (np.abs(b) != inf), 0, root * cos)
        imag = np.where(np.isnan(root), np.nan, np.where(sin == 0, 0, root * sin))
    real = np.where((np.abs(b) == inf) | (a == inf), inf, real)
    imag = np.where((np.abs(b) == inf) | (a == -inf), np.copysign(inf, b), imag)
    return (np.where(root == 0, 0, real).astype(a.dtype),
            np.where(root == 0, 0, imag).astype(a.dtype))


def complex_divide(a: Real, b: Real, c: Real, d: Real) -> Parts:
    """(a + bi) / (c + di) by Smith's method (divide through by the larger part of the
    divisor); where both parts come out NaN, a zero divisor gives infinities (signed by
    c), an infinite dividend over a finite divisor infinities, the converse zeros."""
    with np.errstate(all="ignore"):
        k = np.where(np.abs(c) < np.abs(d), c / d, d / c)
        by_imag = np.abs(c) < np.abs(d)
        den = np.where(by_imag, fma(k, c, d), fma(k, d, c))
        real = np.where(by_imag, fma(a, k, b), fma(b, k, a)) / den
        imag = np.where(by_imag, fma(b, k, -a), fma(-a, k, b)) / den
        special = [_by_zero(a, b, c, d), _infinite_by_finite(a, b, c, d),
                   _finite_by_infinite(a, b, c, d)]
    nan = np.isnan(real) & np.isnan(imag)
    for where, (re, im) in reversed(special):
        real, imag = np.where(nan & where, re, real), np.where(nan & where, im, imag)
    return real.astype(a.dtype), imag.astype(a.dtype)


def _by_zero(a: Real, b: Real, c: Real, d: Real) -> tuple[Real, Parts]:
    where = (c == 0) & (d == 0) & ~(np.isnan(a) & np.isnan(b))
    sign = np.copysign(np.inf, c)
    return where, (sign * a, sign * b)


def _infinite_by_finite(a: Real, b: Real, c: Real, d: Real) -> tuple[Real, Parts]:
    where = (np.isinf(a) | np.isinf(b)) & np.isfinite(c) & np.isfinite(d)
    ua, ub = np.copysign(np.isinf(a), a), np.copysign(np.isinf(b), b)
    return where, (np.inf * (ua * c + ub * d), np.inf * (ub * c - ua * d))


def _finite_by_infinite(a: Real, b: Real, c: Real, d: Real) -> tuple[Real, Parts]:
    where = (np.isinf(c) | np.isinf(d)) & np.isfinite(a) & np.isfinite(b)
    uc, ud = np.copysign(np.isinf(c), c), np.copysign(np.isinf(d), d)
    return where, (0 * (a * uc + b * ud), 0 * (b * uc - a * ud))
