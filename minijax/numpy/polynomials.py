"""Polynomials as coefficient vectors, highest power first (NumPy's ``poly*`` convention):
``polyval``, ``polyadd``, ``polysub``, ``polymul``, ``polyder``, ``polyint``, and the
Vandermonde matrix ``vander``.

``polyval`` is Horner's rule, p(x) = (...((p₀ x + p₁) x + p₂) ...), unrolled over the
(static) number of coefficients. ``polymul`` is a convolution of the coefficients.
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from minijax import lax
from minijax.numpy.creation import asarray
from minijax.numpy.promotion import check_arraylike, promote_dtypes, promote_dtypes_inexact

__all__ = ["polyadd", "polyder", "polyint", "polymul", "polysub", "polyval", "vander"]


def _coefficients(name: str, *ps: Any) -> list[Any]:
    check_arraylike(name, *ps)
    ps = [asarray(p) for p in ps]
    if any(p.ndim != 1 for p in ps):
        raise ValueError(f"{name} arguments must be one-dimensional")
    return promote_dtypes(*ps)


def polyval(p: Any, x: Any, *, unroll: int = 16) -> Any:
    """The polynomial with coefficients ``p`` at the points ``x`` (Horner's rule)."""
    from minijax.numpy.creation import zeros_like
    from minijax.numpy.ufuncs import add, multiply

    check_arraylike("polyval", p, x)
    p, x = promote_dtypes(asarray(p), asarray(x))
    result = zeros_like(x)
    for i in range(p.shape[0]):
        result = add(multiply(result, x), p[i])
    return result


def _pad_front(p: Any, length: int) -> Any:
    return lax.pad(p, lax.convert_element_type(0, p.dtype), [(length - p.shape[0], 0, 0)])


def polyadd(a1: Any, a2: Any) -> Any:
    """The sum of two polynomials (the shorter padded with leading zeros)."""
    a1, a2 = _coefficients("polyadd", a1, a2)
    length = max(a1.shape[0], a2.shape[0])
    return lax.add(_pad_front(a1, length), _pad_front(a2, length))


def polysub(a1: Any, a2: Any) -> Any:
    """The difference of two polynomials."""
    a1, a2 = _coefficients("polysub", a1, a2)
    length = max(a1.shape[0], a2.shape[0])
    return lax.sub(_pad_front(a1, length), _pad_front(a2, length))


def polymul(a1: Any, a2: Any, *, trim_leading_zeros: bool = False) -> Any:
    """The product of two polynomials: the full convolution of their coefficients."""
    from minijax.numpy.convolution import convolve

    a1, a2 = _coefficients("polymul", a1, a2)
    if trim_leading_zeros:
        raise NotImplementedError("minijax's polymul has no trim_leading_zeros")
    if a1.shape[0] == 0 or a2.shape[0] == 0:
        return lax.full((0,), 0, a1.dtype)
    return convolve(a1, a2)


def polyder(p: Any, m: int = 1) -> Any:
    """The ``m``-th derivative: each coefficient times its power, the constant dropped."""
    (p,) = _coefficients("polyder", p)
    m = operator.index(m)
    if m < 0:
        raise ValueError("Order of derivative must be positive")
    for _ in range(m):
        n = p.shape[0]
        powers = lax.convert_element_type(np.arange(n - 1, 0, -1), p.dtype)
        p = lax.mul(lax.slice_in_dim(p, 0, max(n - 1, 0)), powers)
    return p


def polyint(p: Any, m: int = 1, k: Any = None) -> Any:
    """The ``m``-th antiderivative, with integration constants ``k`` (zeros by default)."""
    from minijax.numpy.creation import zeros
    from minijax.numpy.manipulation import concatenate

    (p,) = promote_dtypes_inexact(*_coefficients("polyint", p))
    if k is not None:
        check_arraylike("polyint", p, k)
    m = operator.index(m)
    if m < 0:
        raise ValueError("Order of integral must be positive (see polyder)")
    constants = zeros(m, p.dtype) if k is None else \
        lax.convert_element_type(lax.broadcast_in_dim(asarray(k), (m,), ()) if np.ndim(k) == 0
                                 else asarray(k), p.dtype)
    for i in range(m):
        n = p.shape[0]
        powers = lax.convert_element_type(np.arange(n, 0, -1), p.dtype)
        p = concatenate([lax.div(p, powers), constants[i:i + 1]])
    return p


def vander(x: Any, N: int | None = None, increasing: bool = False) -> Any:
    """The matrix of powers of ``x``: column j is x**(N-1-j) (x**j if ``increasing``)."""
    from minijax.numpy.ufuncs import power

    check_arraylike("vander", x)
    x = asarray(x)
    if x.ndim != 1:
        raise ValueError("x must be a one-dimensional array")
    n = x.shape[0] if N is None else operator.index(N)
    if n < 0:
        raise ValueError("N must be nonnegative")
    exponents = np.arange(n) if increasing else np.arange(n - 1, -1, -1)
    columns = lax.broadcast_in_dim(x, (x.shape[0], n), (0,))
    return power(columns, lax.broadcast_in_dim(asarray(exponents.astype(np.int32)),
                                               (x.shape[0], n), (1,)))
