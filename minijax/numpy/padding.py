"""``jnp.pad``: grow an array at its edges, with constants or with its own values.

The widths must be known when the program is traced (they decide the result's shape), so
they are normalised on the host first: one ``(before, after)`` pair per axis. Then each
mode is a small loop over the axes, each axis padded in turn (so corners are filled from
values padded along earlier axes, as in NumPy):

* ``constant`` (and ``empty``): one ``lax.pad``, the primitive made for it -- or one per
  side when each side has its own constant;
* ``edge``: the first and last slices, broadcast over the padding;
* ``wrap``: copies of the array side by side, then the window that is needed;
* ``reflect`` and ``symmetric``: mirror images of the slices next to each edge, one
  period at a time (``reflect`` leaves the edge out of the mirror, ``symmetric`` repeats
  it; ``reflect_type='odd'`` mirrors through the edge value instead: 2·edge - value);
* ``linear_ramp``: from ``end_values`` straight to the edge values;
* ``maximum``, ``minimum``, ``mean``, ``median``: a statistic of the ``stat_length``
  elements nearest each edge.
"""

from __future__ import annotations

import operator
from functools import partial
from typing import Any

import numpy as np

from minijax import dtypes, lax
from minijax.compiler.jit import jit
from minijax.numpy import reductions, ufuncs
from minijax.numpy.creation import asarray
from minijax.numpy.promotion import check_arraylike, to_inexact_dtype

__all__ = ["pad"]

_MODE_OPTIONS = {
    "constant": {"constant_values"}, "empty": set(), "edge": set(), "wrap": set(),
    "reflect": {"reflect_type"}, "symmetric": {"reflect_type"},
    "linear_ramp": {"end_values"},
    "maximum": {"stat_length"}, "minimum": {"stat_length"}, "mean": {"stat_length"},
    "median": {"stat_length"},
}


def pad(array: Any, pad_width: Any, mode: str = "constant", **kwargs: Any) -> Any:
    """``array`` with ``pad_width`` elements added before and after each axis.

    ``pad_width`` is an int (every side), a pair ``(before, after)`` (every axis) or one
    pair per axis. See the module docstring for the modes and their options.
    """
    check_arraylike("pad", array)
    array = asarray(array)
    if mode not in _MODE_OPTIONS:
        raise NotImplementedError(f"Unimplemented padding mode '{mode}' for np.pad.")
    unsupported = set(kwargs) - _MODE_OPTIONS[mode]
    if unsupported:
        raise ValueError(f"unsupported keyword arguments for mode '{mode}': {unsupported}")
    widths = _pad_widths(array.ndim, pad_width)
    options = (_static_pairs(array.ndim, kwargs.get("stat_length")),
               _static_pairs(array.ndim, kwargs.get("end_values", 0)),
               kwargs.get("reflect_type", "even"))
    return _pad(array, kwargs.get("constant_values", 0), pad_width=widths, mode=mode,
                options=options)


def _pad_widths(ndim: int, pad_width: Any) -> tuple[tuple[Any, Any], ...]:
    """One ``(before, after)`` pair per axis, as NumPy integers (JAX's jaxprs show them as
    ``np.int64(1)``)."""
    widths = np.asarray(pad_width)
    if not dtypes.issubdtype(widths.dtype, np.integer):
        raise TypeError("`pad_width` must be of integral type.")
    if widths.shape not in ((ndim, 2), (1, 2), (2,), (1,), ()):
        raise ValueError(
            f"jnp.pad: pad_width with nd={ndim} has unsupported shape {widths.shape}. Valid "
            f"shapes are ({ndim}, 2), (1, 2), (2,), (1,), or ().")
    if (widths < 0).any():
        raise ValueError("index can't contain negative values")
    return tuple((lo, hi) for lo, hi in np.broadcast_to(widths, (ndim, 2)).astype(np.int64))


def _static_pairs(ndim: int, values: Any) -> tuple[tuple[Any, Any], ...] | None:
    """``stat_length`` or ``end_values`` as one hashable pair per axis (static options)."""
    if values is None:
        return None
    pairs = np.broadcast_to(np.asarray(values), (ndim, 2))
    return tuple((lo.item(), hi.item()) for lo, hi in pairs)


@partial(jit, static_argnames=("pad_width", "mode", "options"))
def _pad(array: Any, constant_values: Any, *, pad_width: tuple, mode: str,
         options: tuple) -> Any:
    stat_length, end_values, reflect_type = options
    if mode in ("constant", "empty"):
        return _pad_constant(array, pad_width, 0 if mode == "empty" else constant_values)
    for axis, (lo, hi) in enumerate(pad_width):
        if not lo and not hi:
            continue
        if array.shape[axis] == 0:
            raise ValueError(f"Cannot apply '{mode}' padding to empty axis")
        if mode == "edge":
            array = _pad_edge(array, axis, lo, hi)
        elif mode == "wrap":
            array = _pad_wrap(array, axis, lo, hi)
        elif mode in ("reflect", "symmetric"):
            array = _pad_reflect(array, axis, lo, hi, mode == "symmetric", reflect_type)
        elif mode == "linear_ramp":
            array = _pad_linear_ramp(array, axis, lo, hi, end_values[axis])
        else:
            lengths = None if stat_length is None else stat_length[axis]
            array = _pad_statistic(array, axis, lo, hi, mode, lengths)
    return array


# ---------------------------------------------------------------------------------------
# The modes
# ---------------------------------------------------------------------------------------


def _pad_constant(array: Any, pad_width: tuple, constant_values: Any) -> Any:
    """One ``lax.pad`` if there is one constant; otherwise each side with its own."""
    values = lax.convert_element_type(asarray(constant_values), array.dtype)
    if values.ndim == 0:
        return lax.pad(array, values, [(lo, hi, 0) for lo, hi in pad_width])
    values = lax.broadcast_in_dim(values, (array.ndim, 2), range(2 - values.ndim, 2)) \
        if values.shape != (array.ndim, 2) else values
    for axis, widths in enumerate(pad_width):
        for side, width in enumerate(widths):
            if width:
                config = [(0, 0, 0)] * array.ndim
                config[axis] = (width, 0, 0) if side == 0 else (0, width, 0)
                array = lax.pad(array, values[axis, side], config)
    return array


def _side(array: Any, axis: int, start: int, stop: int) -> Any:
    return lax.slice_in_dim(array, start, stop, axis=axis)


def _repeat_slice(edge: Any, axis: int, count: int) -> Any:
    """A size-1 slice broadcast to ``count`` along ``axis``."""
    shape = list(edge.shape)
    shape[axis] = count
    return lax.broadcast_in_dim(edge, shape, range(edge.ndim))


def _pad_edge(array: Any, axis: int, lo: int, hi: int) -> Any:
    n = array.shape[axis]
    first, last = _side(array, axis, 0, 1), _side(array, axis, n - 1, n)
    return lax.concatenate([_repeat_slice(first, axis, lo), array,
                            _repeat_slice(last, axis, hi)], axis)


def _pad_wrap(array: Any, axis: int, lo: int, hi: int) -> Any:
    """Enough copies side by side to cover the padding, then the window that is needed."""
    n = array.shape[axis]
    copies_before, copies_after = -(-lo // n), -(-hi // n)
    tiled = lax.concatenate([array] * (copies_before + 1 + copies_after), axis)
    start = copies_before * n - lo
    return _side(tiled, axis, start, start + lo + n + hi)


def _pad_reflect(array: Any, axis: int, lo: int, hi: int, symmetric: bool,
                 reflect_type: str) -> Any:
    """Mirror at most one period at a time (the original length, less the edge for
    ``reflect``), so that wide padding reflects the reflections."""
    if reflect_type not in ("even", "odd"):
        raise ValueError(f"reflect_type must be 'even' or 'odd', got {reflect_type!r}")
    n = array.shape[axis]
    period = n if symmetric else n - 1
    if period == 0:  # nothing to mirror but the one element
        return _pad_edge(array, axis, lo, hi)
    skip = 0 if symmetric else 1  # reflect leaves the edge itself out of the mirror
    while lo:
        count = min(lo, period)
        mirrored = lax.rev(_side(array, axis, skip, skip + count), (axis,))
        edge = _side(array, axis, 0, 1)
        array = lax.concatenate([_odd(mirrored, edge, reflect_type), array], axis)
        lo -= count
    while hi:
        count = min(hi, period)
        n = array.shape[axis]
        mirrored = lax.rev(_side(array, axis, n - skip - count, n - skip), (axis,))
        edge = _side(array, axis, n - 1, n)
        array = lax.concatenate([array, _odd(mirrored, edge, reflect_type)], axis)
        hi -= count
    return array


def _odd(mirrored: Any, edge: Any, reflect_type: str) -> Any:
    """An odd reflection goes through the edge value: 2·edge - value."""
    if reflect_type == "even":
        return mirrored
    twice_edge = lax.mul(lax.convert_element_type(2, edge.dtype), edge)
    return lax.sub(lax.broadcast_in_dim(twice_edge, mirrored.shape, range(edge.ndim)),
                   mirrored)


def _ramp(edge: Any, end: Any, axis: int, count: int, toward_edge: bool) -> Any:
    """``count`` values going in equal steps between ``end`` and ``edge`` (not reaching
    the edge): computed in floating point, rounded down for integer arrays."""
    dtype = to_inexact_dtype(edge.dtype)
    shape = list(edge.shape)
    shape[axis] = count
    steps = lax.broadcasted_iota(dtype, shape, axis)
    if toward_edge:  # end, ..., next to the edge
        fraction = lax.div(steps, lax.convert_element_type(count, dtype))
    else:  # next to the edge, ..., end
        fraction = lax.div(lax.add(steps, lax.convert_element_type(1, dtype)),
                           lax.convert_element_type(count, dtype))
    start, stop = (end, edge) if toward_edge else (edge, end)
    start = lax.convert_element_type(start, dtype)
    stop = lax.convert_element_type(stop, dtype)
    start = lax.broadcast_in_dim(start, shape, range(len(shape))) if start.ndim else start
    stop = lax.broadcast_in_dim(stop, shape, range(len(shape))) if stop.ndim else stop
    values = lax.add(start, lax.mul(lax.sub(stop, start), fraction))
    if not dtypes.issubdtype(edge.dtype, np.inexact):
        values = lax.floor(values)
    return lax.convert_element_type(values, edge.dtype)


def _pad_linear_ramp(array: Any, axis: int, lo: int, hi: int, ends: tuple) -> Any:
    n = array.shape[axis]
    left = _ramp(_side(array, axis, 0, 1), ends[0], axis, lo, toward_edge=True)
    right = _ramp(_side(array, axis, n - 1, n), ends[1], axis, hi, toward_edge=False)
    return lax.concatenate([left, array, right], axis)


def _statistic(region: Any, axis: int, mode: str) -> Any:
    """The statistic of ``region`` along ``axis``, kept as a size-1 axis, in its dtype
    (means and medians of integers are rounded to the nearest, as in NumPy)."""
    reduce = {"maximum": reductions.max, "minimum": reductions.min, "mean": reductions.mean,
              "median": reductions.median}[mode]
    value = reduce(region, axis=axis, keepdims=True)
    if value.dtype != region.dtype:
        value = lax.convert_element_type(ufuncs.round(value), region.dtype)
    return value


def _pad_statistic(array: Any, axis: int, lo: int, hi: int, mode: str,
                   lengths: tuple | None) -> Any:
    n = array.shape[axis]
    lengths = (n, n) if lengths is None else lengths
    if 0 in lengths:
        raise ValueError("stat_length of 0 yields no value for padding")
    first, last = (min(operator.index(length), n) for length in lengths)
    before = _statistic(_side(array, axis, 0, first), axis, mode)
    after = _statistic(_side(array, axis, n - last, n), axis, mode)
    return lax.concatenate([_repeat_slice(before, axis, lo), array,
                            _repeat_slice(after, axis, hi)], axis)
