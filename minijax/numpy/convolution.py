"""1-D convolution and correlation: ``convolve`` and ``correlate``.

Sliding a kernel ``v`` over ``a`` is a matrix-vector product: pad ``a`` with zeros, gather
every window of ``len(v)`` consecutive elements as one row of a matrix (the gather's
indices are known statically), and multiply by the kernel -- flipped for a convolution,
conjugated for a correlation. That gives the ``full`` result, of which ``same`` and
``valid`` are the middle parts. (JAX calls XLA's convolution primitive instead; the
numbers are the same.)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from minijax import lax
from minijax.numpy.creation import asarray
from minijax.numpy.promotion import check_arraylike, promote_dtypes_inexact

__all__ = ["convolve", "correlate"]

_MODES = ["full", "same", "valid"]


def _slide(name: str, a: Any, v: Any, mode: str, flip: bool, precision: Any,
           preferred_element_type: Any) -> Any:
    from minijax.numpy.products import matmul
    from minijax.numpy.ufuncs import conj

    check_arraylike(name, a, v)
    a, v = promote_dtypes_inexact(asarray(a), asarray(v))
    if a.ndim != 1 or v.ndim != 1:
        raise ValueError(f"{name}() only support 1-dimensional inputs.")
    if a.size == 0 or v.size == 0:
        raise ValueError(f"{name}: inputs cannot be empty, got shapes {a.shape} and "
                         f"{v.shape}.")
    if mode not in _MODES:
        raise ValueError(f"mode must be one of {_MODES}")
    n, m = a.shape[0], v.shape[0]
    kernel = lax.rev(v, (0,)) if flip else conj(v)
    padded = lax.pad(a, lax.convert_element_type(0, a.dtype), [(m - 1, m - 1, 0)])
    windows = padded[np.arange(n + m - 1)[:, None] + np.arange(m)[None, :]]
    full = matmul(windows, kernel, precision=precision,
                  preferred_element_type=preferred_element_type)
    if mode == "full":
        return full
    short, long = min(n, m), max(n, m)
    start, length = ((short - 1) // 2, long) if mode == "same" else (short - 1, long - short + 1)
    return lax.slice_in_dim(full, start, start + length)


def convolve(a: Any, v: Any, mode: str = "full", *, precision: Any = None,
             preferred_element_type: Any = None) -> Any:
    """(a * v)[k] = Σⱼ a[j] v[k - j]: ``full`` (every overlap), ``same`` (as long as the
    longer input, centred) or ``valid`` (only complete overlaps)."""
    return _slide("convolve", a, v, mode, True, precision, preferred_element_type)


def correlate(a: Any, v: Any, mode: str = "valid", *, precision: Any = None,
              preferred_element_type: Any = None) -> Any:
    """c[k] = Σⱼ a[j + k] conj(v[j]): ``convolve`` with ``v`` reversed and conjugated."""
    return _slide("correlate", a, v, mode, False, precision, preferred_element_type)
