"""More NaN-ignoring functions: ``nanargmax``, ``nanargmin``, ``nanvar``, ``nanstd``,
``nancumsum`` and ``nancumprod`` (``nansum``, ``nanmean``, ``nanmax``... are with the other
reductions).

Each one masks the NaNs and calls the ordinary function: a NaN becomes the identity of a
running sum or product, the loser of an argmax, or is left out by ``where=`` of a
variance.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from minijax import lax
from minijax.numpy import reductions
from minijax.numpy.creation import asarray
from minijax.numpy.promotion import check_arraylike
from minijax.numpy.ufuncs import isnan, logical_and, logical_not, where

__all__ = ["nanargmax", "nanargmin", "nancumprod", "nancumsum", "nanstd", "nanvar"]


def _operand(name: str, a: Any) -> Any:
    check_arraylike(name, a)
    return asarray(a)


def _has_nans(a: Any) -> bool:
    return a.dtype.kind in "fcV"


def _nan_arg_extremum(name: str, fill: float) -> Any:
    def reduction(a: Any, axis: int | None = None, out: None = None,
                  keepdims: bool | None = None) -> Any:
        a = _operand(name, a)
        arg = getattr(reductions, name[3:])
        if not _has_nans(a):
            return arg(a, axis=axis, keepdims=keepdims)
        nans = isnan(a)
        index = arg(where(nans, fill, a), axis=axis, keepdims=keepdims)
        all_nan = reductions.all(nans, axis=axis, keepdims=bool(keepdims))
        return where(all_nan, lax.full_like(index, -1), index)

    reduction.__name__ = reduction.__qualname__ = name
    reduction.__doc__ = (f"Index of the {name[6:]}imum ignoring NaNs (-1 where every element "
                         "is NaN).")
    return reduction


nanargmax = _nan_arg_extremum("nanargmax", -np.inf)
nanargmin = _nan_arg_extremum("nanargmin", np.inf)


def nanvar(a: Any, axis: Any = None, dtype: Any = None, out: None = None, ddof: int = 0,
           keepdims: bool = False, where: Any = None, mean: Any = None) -> Any:
    """The variance of the elements that are not NaN."""
    a = _operand("nanvar", a)
    if _has_nans(a):
        present = logical_not(isnan(a))
        where = present if where is None else logical_and(present, where)
    return reductions.var(a, axis, dtype, ddof=ddof, keepdims=keepdims, where=where, mean=mean)


def nanstd(a: Any, axis: Any = None, dtype: Any = None, out: None = None, ddof: int = 0,
           keepdims: bool = False, where: Any = None, mean: Any = None) -> Any:
    """The standard deviation of the elements that are not NaN."""
    return lax.sqrt(nanvar(a, axis, dtype, out, ddof, keepdims, where, mean))


def nancumsum(a: Any, axis: int | None = None, dtype: Any = None, out: None = None) -> Any:
    """Running sums, with NaNs counted as 0."""
    from minijax.numpy.reductions import cumsum

    a = _operand("nancumsum", a)
    return cumsum(where(isnan(a), 0, a) if _has_nans(a) else a, axis, dtype)


def nancumprod(a: Any, axis: int | None = None, dtype: Any = None, out: None = None) -> Any:
    """Running products, with NaNs counted as 1."""
    from minijax.numpy.reductions import cumprod

    a = _operand("nancumprod", a)
    return cumprod(where(isnan(a), 1, a) if _has_nans(a) else a, axis, dtype)
