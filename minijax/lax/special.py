"""Special functions: ``erf``, ``erfc``, ``erf_inv``, ``lgamma`` and ``digamma``.

These are primitives in JAX (XLA evaluates each with a polynomial or rational
approximation). NumPy has none of them, so the kernels here compute in float64 and
round back to the input's dtype:

* ``erf``, ``erfc`` and ``lgamma`` call Python's ``math`` module element by element:
  slow for big arrays, but exact to double precision, and simple;
* ``digamma`` shifts its argument up with the recurrence ψ(x) = ψ(x + 1) - 1/x, then
  sums the asymptotic series; negative arguments are reflected first;
* ``erf_inv`` starts from a cheap closed-form guess and polishes it with Newton steps
  on ``erf``.

Their rules follow them at the end of this module: erf's derivative is 2/√π·exp(-x²),
lgamma's is digamma. All five accept floating-point dtypes only, as in JAX.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from minijax.compiler import lowering
from minijax.compiler.stablehlo_ir import Value
from minijax.core import Primitive
from minijax.interpreters import ad, batching
from minijax.lax.base import FLOAT, _api, exp, full_like, unary_primitive
from minijax.lax.elementwise import mul, neg, square

__all__ = [
    "digamma",
    "digamma_p",
    "erf",
    "erf_inv",
    "erf_inv_p",
    "erf_p",
    "erfc",
    "erfc_p",
    "lgamma",
    "lgamma_p",
]


def _in_float64(fn: Callable[[np.ndarray], Any]) -> Callable[[np.ndarray], np.ndarray]:
    """A kernel that evaluates ``fn`` in float64 and rounds back to the input dtype."""

    def kernel(x: np.ndarray) -> np.ndarray:
        out = np.asarray(fn(np.asarray(x, np.float64)), dtype=np.float64)
        return out.astype(x.dtype, copy=False)

    return kernel


def _elementwise(scalar_fn: Callable[[float], float]) -> Callable[[np.ndarray], np.ndarray]:
    """A ``math`` function applied to every element of a float64 array."""
    ufunc = np.frompyfunc(scalar_fn, 1, 1)
    return lambda x: np.asarray(ufunc(x), dtype=np.float64)


def _lgamma_scalar(x: float) -> float:
    """``math.lgamma``, but +inf at the poles (0, -1, -2, ...) instead of an error."""
    try:
        return math.lgamma(x)
    except (ValueError, OverflowError):
        return math.inf


_erf64 = _elementwise(math.erf)
_erfc64 = _elementwise(math.erfc)

# The asymptotic series ψ(x) ~ log x - 1/(2x) - Σ B₂ₖ / (2k x²ᵏ), good to double precision
# once x >= 10 (the first term left out, B₁₆ / 16x¹⁶, is below 5e-17 there; at 6 it was
# 2e-13). The coefficients B₂ₖ / 2k for k = 1..7.
_DIGAMMA_SERIES = (1 / 12, -1 / 120, 1 / 252, -1 / 240, 1 / 132, -691 / 32760, 1 / 12)


def _digamma64(x: np.ndarray) -> np.ndarray:
    """ψ(x) = d/dx log Γ(x); NaN at the poles 0, -1, -2, ... (and at -inf), as XLA gives."""
    reflect = x < 0.5
    # ψ(x) = ψ(1 - x) - π / tan(πx), where tan(πx) = tan(π(x - n)) for the nearest integer
    # n: x - n is exact, π times it keeps its relative precision next to a pole (πx does not)
    y = np.where(reflect, 1 - x, x)
    shift = np.zeros_like(y)
    for _ in range(10):  # ψ(y) = ψ(y + 1) - 1/y, until y >= 10
        small = y < 10
        shift -= np.where(small, 1 / np.where(small, y, 1), 0)
        y = np.where(small, y + 1, y)
    inv_square = 1 / (y * y)
    series = np.zeros_like(y)
    for coefficient in reversed(_DIGAMMA_SERIES):
        series = (series + coefficient) * inv_square
    out = shift + np.log(y) - 0.5 / y - series
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(reflect, out - np.pi / np.tan(np.pi * (x - np.round(x))), out)
    pole = (x <= 0) & (x == np.floor(x))
    return np.where(pole | np.isneginf(x), np.nan, out)


def _erf_inv64(y: np.ndarray) -> np.ndarray:
    """The x with erf(x) = y: Winitzki's closed-form guess (good to ~1e-3), then Newton
    steps x -= (erf(x) - y) / erf'(x), each of which roughly doubles the correct digits.
    Of |y| >= 1/2 the steps solve erfc(x) = 1 - |y| instead: 1 - |y| is exact there, while
    erf(x) - y, both next to 1, would keep none of the digits of the tail."""
    t = np.abs(y)
    tail = 1 - t
    with np.errstate(divide="ignore", invalid="ignore"):
        log_term = np.log(tail * (1 + t))
        a = 0.147
        first = 2 / (np.pi * a) + log_term / 2
        x = np.sqrt(np.sqrt(first * first - log_term / a) - first)
        inside = t < 1
        for _ in range(6):
            safe = np.where(inside, x, 0)
            residual = np.where(t < 0.5, _erf64(safe) - t, tail - _erfc64(safe))
            x = np.where(inside, x - residual / (2 / np.sqrt(np.pi) * np.exp(-x * x)), x)
    x = np.sign(y) * np.where(t == 1, np.inf, x)
    return np.where(t > 1, np.nan, x)


erf_p = unary_primitive("erf", _in_float64(_erf64), FLOAT)
erfc_p = unary_primitive("erfc", _in_float64(_elementwise(math.erfc)), FLOAT)
erf_inv_p = unary_primitive("erf_inv", _in_float64(_erf_inv64), FLOAT)
lgamma_p = unary_primitive("lgamma", _in_float64(_elementwise(_lgamma_scalar)), FLOAT)
digamma_p = unary_primitive("digamma", _in_float64(_digamma64), FLOAT)

# vmap: batching rules
for _prim in (erf_p, erfc_p, erf_inv_p, lgamma_p, digamma_p):
    batching.defvectorized(_prim)

erf = _api(erf_p, "Elementwise error function 2/√π ∫₀ˣ exp(-t²) dt.")
erfc = _api(erfc_p, "Elementwise complementary error function 1 - erf(x).")
erf_inv = _api(erf_inv_p, "Elementwise inverse of erf (±inf at ±1, NaN beyond).")
lgamma = _api(lgamma_p, "Elementwise log |Γ(x)| (inf at the poles 0, -1, -2, ...).")
digamma = _api(digamma_p, "Elementwise ψ(x), the derivative of lgamma.")


# ---------------------------------------------------------------------------------------
# Rules: JVP (the derivative times the tangent; digamma has none, as polygamma is not a
# minijax primitive), lowering (each is one op of XLA's CHLO dialect)
# ---------------------------------------------------------------------------------------


def _defjvp(primitive: Primitive, derivative: Callable[[Any, Any, Any], Any]) -> None:
    """Register the rule "tangent = derivative(t, out, x)" of a one-input function
    (its tangent is a symbolic zero when ``t`` is)."""

    def rule(primals: list, tangents: list) -> tuple[Any, Any]:
        (x,), (t,) = primals, tangents
        out = primitive.bind(x)
        if type(t) is ad.Zero:
            return out, ad.Zero(ad.tangent_aval(out.aval))
        return out, derivative(t, out, x)

    ad.jvp_rules[primitive] = rule


def _gaussian_term(scale: float) -> Callable[[Any, Any, Any], Any]:
    """``scale`` · exp(-x²) dx: the derivatives of erf (2/√π) and erfc (-2/√π). (Constants
    are scalars of ``x``'s dtype and weak type: a formula never promotes.)"""
    return lambda t, out, x: mul(full_like(x, scale, shape=()), mul(t, exp(neg(square(x)))))


_defjvp(erf_p, _gaussian_term(2 / np.sqrt(np.pi)))
_defjvp(erfc_p, _gaussian_term(-2 / np.sqrt(np.pi)))
# erf_inv' = 1 / erf'(erf_inv x) = √π/2 · exp(out²).
_defjvp(erf_inv_p, lambda t, out, x: mul(full_like(x, np.sqrt(np.pi) / 2, shape=()),
                                         mul(t, exp(square(out)))))
_defjvp(lgamma_p, lambda t, out, x: mul(t, digamma(x)))


def _chlo(op_name: str) -> Callable[..., Value]:
    return lambda ctx, x: ctx.b.emit(op_name, x, type=ctx.type_out)


for _prim, _name in ((erf_p, "chlo.erf"), (erfc_p, "chlo.erfc"), (erf_inv_p, "chlo.erf_inv"),
                     (lgamma_p, "chlo.lgamma"), (digamma_p, "chlo.digamma")):
    lowering.lowering_rules[_prim] = _chlo(_name)
