"""Putting values into bins: ``digitize``, ``histogram``, ``histogram_bin_edges``, and
piecewise-linear ``interp`` (which finds each point's bin, then interpolates in it).

All of them start with ``searchsorted``: for sorted edges, the number of edges at or
below a value is the index of its bin (plus one).
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from minijax import lax
from minijax.numpy.creation import asarray
from minijax.numpy.promotion import check_arraylike, promote_dtypes_inexact

__all__ = ["digitize", "histogram", "histogram_bin_edges", "interp"]


def digitize(x: Any, bins: Any, right: bool = False, *, method: str | None = None) -> Any:
    """For each x, the index i of its bin: bins[i-1] <= x < bins[i] (``<`` and ``<=``
    swapped with ``right``); bins may be increasing or decreasing."""
    from minijax.numpy.sorting import searchsorted
    from minijax.numpy.ufuncs import where

    check_arraylike("digitize", x, bins)
    x, bins = asarray(x), asarray(bins)
    if bins.ndim != 1:
        raise ValueError(f"digitize: bins must be a 1-dimensional array; got bins={bins}")
    if bins.shape[0] == 0:
        return lax.full(x.shape, 0, np.int32)
    # Rising bins: i counts the edges at or below x (below, with ``right``); falling
    # bins: the edges above x (at or above), i.e. all but those at or below x (below).
    side = "left" if right else "right"
    rising = searchsorted(bins, x, side=side)
    falling = bins.shape[0] - searchsorted(lax.rev(bins, (0,)), x, side=side)
    return where(lax.ge(bins[-1], bins[0]), rising, falling)


def histogram_bin_edges(a: Any, bins: Any = 10, range: Any = None,
                        weights: Any = None) -> Any:
    """``bins`` itself if it is an array of edges; otherwise ``bins + 1`` evenly spaced
    edges from the smallest to the largest value (or over ``range``)."""
    from minijax.numpy.creation import linspace
    from minijax.numpy.reductions import max, min

    check_arraylike("histogram_bin_edges", a)
    (a,) = promote_dtypes_inexact(asarray(a))
    if np.ndim(bins) == 1:
        return lax.convert_element_type(asarray(bins), a.dtype)
    bins = operator.index(bins)
    if range is not None:
        low, high = (lax.convert_element_type(r, a.dtype) for r in range)
    elif a.size == 0:
        low, high = (lax.convert_element_type(r, a.dtype) for r in (0.0, 1.0))
    else:
        low, high = min(a), max(a)
    same = lax.eq(low, high)
    half = lax.convert_element_type(0.5, a.dtype)
    low = lax.select(same, lax.sub(low, half), low)
    high = lax.select(same, lax.add(high, half), high)
    return linspace(low, high, bins + 1, dtype=a.dtype)


def histogram(a: Any, bins: Any = 10, range: Any = None, weights: Any = None,
              density: bool | None = None) -> tuple[Any, Any]:
    """(counts, edges): how many values (or how much weight) fall in each bin; the last
    bin includes its right edge. ``density`` divides by total and bin width."""
    from minijax.numpy.calculus import diff
    from minijax.numpy.creation import zeros
    from minijax.numpy.manipulation import ravel
    from minijax.numpy.reductions import sum
    from minijax.numpy.sorting import searchsorted
    from minijax.numpy.ufuncs import where

    edges = histogram_bin_edges(a, bins, range, weights)
    a = ravel(promote_dtypes_inexact(asarray(a))[0])
    n_bins = edges.shape[0] - 1
    index = lax.sub(searchsorted(edges, a, side="right"), lax.full((), 1, np.int32))
    index = where(lax.eq(a, edges[-1]), n_bins - 1, index)
    outside = lax.bitwise_or(lax.lt(index, lax.full((), 0, np.int32)),
                             lax.ge(index, lax.full((), n_bins, np.int32)))
    index = where(outside, n_bins, index)  # dropped by the scatter below
    amounts = lax.full_like(a, 1) if weights is None else \
        ravel(lax.convert_element_type(asarray(weights), a.dtype))
    counts = zeros(n_bins, a.dtype).at[index].add(amounts, mode="drop")
    if density:
        counts = lax.div(counts, lax.mul(sum(counts), diff(edges)))
    return counts, edges


def interp(x: Any, xp: Any, fp: Any, left: Any = None, right: Any = None,
           period: Any = None) -> Any:
    """The piecewise-linear function through the points (xp, fp) at ``x``; ``left`` and
    ``right`` (default: fp's end values) outside [xp[0], xp[-1]]. With ``period``, the
    points repeat with that period."""
    from minijax.numpy.manipulation import concatenate
    from minijax.numpy.sorting import argsort, searchsorted
    from minijax.numpy.ufuncs import clip, remainder, where

    check_arraylike("interp", x, xp, fp)
    x, xp, fp = promote_dtypes_inexact(asarray(x), asarray(xp), asarray(fp))
    if xp.ndim != 1 or fp.ndim != 1 or xp.shape != fp.shape:
        raise ValueError("xp and fp must be one-dimensional arrays of equal size")
    if period is not None:
        period = lax.convert_element_type(period, x.dtype)
        x, xp = remainder(x, period), remainder(xp, period)
        order = argsort(xp)
        xp, fp = xp[order], fp[order]
        xp = concatenate([lax.sub(xp[-1:], period), xp, lax.add(xp[:1], period)])
        fp = concatenate([fp[-1:], fp, fp[:1]])
    i = clip(searchsorted(xp, x, side="right"), 1, xp.shape[0] - 1)
    x0, x1, f0, f1 = xp[i - 1], xp[i], fp[i - 1], fp[i]
    dx = lax.sub(x1, x0)
    safe_dx = where(lax.eq(dx, lax.full_like(dx, 0)), lax.full_like(dx, 1), dx)
    out = lax.add(f0, lax.mul(lax.div(lax.sub(x, x0), safe_dx), lax.sub(f1, f0)))
    out = where(lax.eq(dx, lax.full_like(dx, 0)), f0, out)
    if period is None:
        out = where(lax.lt(x, xp[0]), fp[0] if left is None else left, out)
        out = where(lax.gt(x, xp[-1]), fp[-1] if right is None else right, out)
    return out
