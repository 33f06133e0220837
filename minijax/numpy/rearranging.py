"""More ways to rearrange arrays: ``append``, ``rot90``, ``rollaxis``, ``hsplit``/``vsplit``/
``dsplit``, ``unstack``, ``resize``, ``diagonal``, ``diag``, ``diagflat``, ``select`` and
``choose``.

Each is a few calls to the functions of ``manipulation.py``: NumPy's conveniences on top
of concatenation, transposition, splitting and reshaping.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Sequence
from functools import partial
from typing import Any

import numpy as np

from minijax import lax
from minijax.compiler.jit import jit
from minijax.numpy.creation import asarray, diagonal_mask
from minijax.numpy.manipulation import (
    concatenate,
    flip,
    moveaxis,
    ravel,
    reshape,
    split,
    transpose,
)
from minijax.numpy.promotion import check_arraylike, promote_dtypes

__all__ = ["append", "choose", "diag", "diagflat", "diagonal", "dsplit", "hsplit", "resize",
           "rollaxis", "rot90", "select", "unstack", "vsplit"]


def append(arr: Any, values: Any, axis: int | None = None) -> Any:
    """``values`` joined after ``arr`` along ``axis`` (both flattened if None)."""
    check_arraylike("append", arr, values)
    if axis is None:
        return concatenate([ravel(arr), ravel(values)], 0)
    return concatenate([arr, values], axis)


def rot90(m: Any, k: int = 1, axes: tuple[int, int] = (0, 1)) -> Any:
    """Rotate by 90° ``k`` times, from the first of ``axes`` towards the second."""
    check_arraylike("rot90", m)
    m = asarray(m)
    if np.ndim(axes) != 1 or len(axes) != 2:
        raise ValueError("len(axes) must be 2.")
    ax1, ax2 = lax.canonicalize_axes(tuple(operator.index(a) for a in axes), m.ndim)
    if ax1 == ax2:
        raise ValueError(f"Axes must be different, got {axes}")
    k = operator.index(k) % 4
    if k == 0:
        return m
    if k == 2:
        return flip(flip(m, ax1), ax2)
    perm = list(range(m.ndim))
    perm[ax1], perm[ax2] = perm[ax2], perm[ax1]
    return transpose(flip(m, ax2), perm) if k == 1 else flip(transpose(m, perm), ax2)


def rollaxis(a: Any, axis: int, start: int = 0) -> Any:
    """Move ``axis`` to just before position ``start`` (NumPy's older ``moveaxis``)."""
    a = asarray(a)
    axis = lax.canonicalize_axes((operator.index(axis),), a.ndim)[0]
    start = operator.index(start)
    if not -a.ndim <= start <= a.ndim:
        raise ValueError(f"start={start} must satisfy {-a.ndim}<=start<={a.ndim}")
    start = start + a.ndim if start < 0 else start
    if start > axis:
        start -= 1
    return moveaxis(a, axis, start)


def _split_along(name: str, axis_of: Any) -> Any:
    def splitter(ary: Any, indices_or_sections: Any) -> list[Any]:
        ary = asarray(ary)
        return split(ary, indices_or_sections, axis_of(ary))

    splitter.__name__ = splitter.__qualname__ = name
    splitter.__doc__ = f"``split`` along the axis NumPy's ``{name}`` names."
    return splitter


hsplit = _split_along("hsplit", lambda a: 0 if a.ndim == 1 else 1)
vsplit = _split_along("vsplit", lambda a: 0)
dsplit = _split_along("dsplit", lambda a: 2)


def unstack(x: Any, /, *, axis: int = 0) -> tuple[Any, ...]:
    """The slices of ``x`` along ``axis``, as a tuple."""
    x = asarray(x)
    if x.ndim == 0:
        raise ValueError("Unstack requires arrays with rank > 0, however a scalar array was "
                         "passed.")
    return tuple(lax.unstack(x, lax.canonicalize_axes((operator.index(axis),), x.ndim)[0]))


def resize(a: Any, new_shape: Any) -> Any:
    """``a`` flattened, repeated as often as needed, cut to fill ``new_shape``."""
    a = ravel(a)
    shape = (new_shape,) if np.ndim(new_shape) == 0 else tuple(new_shape)
    shape = tuple(operator.index(d) for d in shape)
    size = math.prod(shape)
    if any(d < 0 for d in shape):
        raise ValueError("All elements of `new_shape` must be non-negative")
    if a.size == 0 or size == 0:
        return lax.full(shape, 0, a.dtype)
    copies = -(-size // a.size)
    return reshape(lax.slice_in_dim(concatenate([a] * copies), 0, size), shape)


@partial(jit, static_argnames=("offset", "axis1", "axis2"))
def diagonal(a: Any, offset: int = 0, axis1: int = 0, axis2: int = 1) -> Any:
    """The ``offset``-th diagonal of the matrices in dimensions ``axis1``, ``axis2``,
    as the last dimension of the result."""
    from minijax.numpy.manipulation import moveaxis

    a = asarray(a)
    if a.ndim < 2:
        raise ValueError("diagonal requires an array of at least two dimensions.")
    a = moveaxis(a, (axis1, axis2), (-2, -1))
    rows, columns = a.shape[-2:]
    offset = operator.index(offset)
    length = max(min(rows + min(offset, 0), columns - max(offset, 0)), 0)
    if length == 0:  # nothing to gather (from a matrix that may have no elements)
        return lax.full((*a.shape[:-2], 0), 0, a.dtype)
    # Two index vectors 0, 1, ...; the second one shifted by |offset| goes with the axis
    # the diagonal starts late in: columns above the main diagonal, rows below it.
    first, second = lax.iota(np.int32, length), lax.iota(np.int32, length)
    if offset == 0:
        return a[..., first, second]
    shifted = lax.add(np.int32(abs(offset)), second)
    return a[..., first, shifted] if offset > 0 else a[..., shifted, first]


def diag(v: Any, k: int = 0) -> Any:
    """The ``k``-th diagonal of a matrix, or a matrix with vector ``v`` on that diagonal."""
    return _diag(asarray(v), operator.index(k))


@partial(jit, static_argnames=("k",))
def _diag(v: Any, k: int) -> Any:
    if v.ndim == 2:
        return diagonal(v, k)
    if v.ndim != 1:
        raise ValueError("diag input must be 1d or 2d")
    from minijax.numpy.ufuncs import where

    n = v.shape[0] + abs(k)
    # Row i holds padded[i]: v[i] at (i, i + k) above the diagonal, v[i - |k|] below it.
    zero = lax.convert_element_type(0, v.dtype)
    padded = lax.pad(v, zero, [(0, k, 0)] if k >= 0 else [(-k, 0, 0)])
    mask = diagonal_mask((n, n), 0, 1, k)
    return where(mask, lax.broadcast_in_dim(padded, (n, 1), (0,)), zero)



def diagflat(v: Any, k: int = 0) -> Any:
    """A 2-D array with ``v`` flattened on its ``k``-th diagonal."""
    return diag(ravel(v), k)


def select(condlist: Sequence[Any], choicelist: Sequence[Any], default: Any = 0) -> Any:
    """Elementwise, the choice of the first condition that holds (``default`` if none)."""
    from minijax.numpy.ufuncs import where

    if len(condlist) != len(choicelist):
        raise ValueError(f"condlist must have length equal to choicelist ({len(condlist)} vs "
                         f"{len(choicelist)})")
    if not condlist:
        raise ValueError("condlist must be non-empty")
    out = default
    for condition, choice in reversed(list(zip(condlist, choicelist))):
        out = where(condition, choice, out)
    return out


def choose(a: Any, choices: Any, out: None = None, mode: str = "raise") -> Any:
    """Elementwise ``choices[a]``: the integer array ``a`` picks one of the (broadcast)
    choices at each position; ``mode`` is ``raise`` (concrete ``a`` only), ``wrap`` or
    ``clip`` for out-of-range picks."""
    from minijax.numpy.indexing import take_along_axis
    from minijax.numpy.manipulation import broadcast_arrays
    from minijax.numpy.ufuncs import clip, remainder

    check_arraylike("choose", a)
    a = asarray(a)
    choices = [asarray(c) for c in choices] if not hasattr(choices, "ndim") \
        else [choices[i] for i in range(choices.shape[0])]
    n = len(choices)
    if mode == "raise":
        values = np.asarray(a)
        if values.size and (values.min() < 0 or values.max() >= n):
            raise ValueError("invalid entry in choice array")
    elif mode == "wrap":
        a = remainder(a, n)
    elif mode == "clip":
        a = clip(a, 0, n - 1)
    else:
        raise ValueError(f"mode={mode!r} not understood. Must be 'raise', 'wrap', or 'clip'")
    a, *choices = broadcast_arrays(a, *promote_dtypes(*choices))
    stacked = lax.stack([asarray(c) for c in choices], 0)
    return take_along_axis(stacked, lax.expand_dims(a, [0]), axis=0)[0]
