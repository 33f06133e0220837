"""Covariance and correlation matrices: ``cov`` and ``corrcoef``.

``cov`` centres each variable (a row, unless ``rowvar=False``) on its (weighted) mean and
takes the matrix of averaged products, X Xᴴ / (N - ddof). ``corrcoef`` divides that by
the standard deviations: C[i, j] / sqrt(C[i, i] C[j, j]).
"""

from __future__ import annotations

from typing import Any

from minijax import lax
from minijax.numpy import reductions
from minijax.numpy.creation import array, asarray
from minijax.numpy.logic import iscomplexobj
from minijax.numpy.manipulation import atleast_2d, concatenate, squeeze
from minijax.numpy.products import matmul
from minijax.numpy.promotion import check_arraylike, promote_dtypes_inexact
from minijax.numpy.rearranging import diag
from minijax.numpy.ufuncs import clip, conj, imag, real, sqrt

__all__ = ["corrcoef", "cov"]


def cov(m: Any, y: Any = None, rowvar: bool = True, bias: bool = False, ddof: int | None = None,
        fweights: Any = None, aweights: Any = None, dtype: Any = None) -> Any:
    """The covariance matrix of the variables in the rows of ``m`` (and of ``y``)."""
    check_arraylike("cov", m)
    (x,) = promote_dtypes_inexact(atleast_2d(asarray(m)))
    if dtype is not None:
        x = x.astype(dtype)
    if not rowvar and x.shape[0] != 1:
        x = x.T
    if y is not None:
        (other,) = promote_dtypes_inexact(atleast_2d(asarray(y)))
        if not rowvar and other.shape[0] != 1:
            other = other.T
        x = concatenate(promote_dtypes_inexact(x, other), axis=0)
    if x.shape[0] == 0:
        return array([]).reshape(0, 0)
    ddof = (0 if bias else 1) if ddof is None else ddof
    weights = None
    if fweights is not None:
        weights = asarray(fweights)
    if aweights is not None:
        weights = asarray(aweights) if weights is None else weights * asarray(aweights)
    if weights is None:
        mean = reductions.mean(x, axis=1, keepdims=True)
        count = x.shape[1] - ddof
    else:
        weights = weights.astype(x.dtype)
        total = reductions.sum(weights)
        mean = reductions.sum(x * weights, axis=1, keepdims=True) / total
        if aweights is None:
            count = total - ddof
        else:
            count = total - ddof * reductions.sum(weights * asarray(aweights)) / total
    centred = x - mean
    scaled = centred if weights is None else centred * weights
    product = matmul(scaled, conj(centred).T)
    return squeeze(lax.div(product, lax.convert_element_type(count, product.dtype)))


def corrcoef(x: Any, y: Any = None, rowvar: bool = True, dtype: Any = None) -> Any:
    """Pearson correlation coefficients: the covariance matrix, normalised."""
    c = cov(x, y, rowvar, dtype=dtype)
    if c.ndim == 0:
        return lax.div(c, c)
    d = diag(c)
    stddev = sqrt(real(d)).astype(c.dtype)
    c = c / stddev[:, None] / stddev[None, :]
    if iscomplexobj(c):
        return lax.complex(clip(real(c), -1, 1), clip(imag(c), -1, 1))
    return clip(c, -1, 1)
