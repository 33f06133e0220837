"""The type of an argument without its value: ``ShapeDtypeStruct`` and ``abstractify``.

Tracing (``make_jaxpr``, ``jit``, ``jit(f).lower``) needs only each argument's *type*:
its shape, dtype and weak type. :func:`abstractify` reads that type off a value, and
:class:`ShapeDtypeStruct` lets a user state it directly, without making any data.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from minijax.core import ShapedArray, get_aval


class ShapeDtypeStruct:
    """The type of an array without its values: a ``shape`` and a ``dtype`` (and weak type).

    Pass one to ``make_jaxpr`` or ``jit(f).lower`` instead of an array to trace without
    making data.
    """

    __slots__ = ("shape", "dtype", "weak_type")

    def __init__(self, shape: Sequence[int], dtype: Any, *, weak_type: bool = False) -> None:
        if dtype is None:
            raise ValueError("ShapeDtypeStruct: dtype must be specified.")
        self.shape = tuple(int(d) for d in shape)
        self.dtype = np.dtype(dtype)
        self.weak_type = bool(weak_type)

    ndim = property(lambda self: len(self.shape))
    size = property(lambda self: int(np.prod(self.shape, dtype=np.int64)))
    sharding = None

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, ShapeDtypeStruct) and self.shape == other.shape
                and self.dtype == other.dtype and self.weak_type == other.weak_type)

    def __hash__(self) -> int:
        return hash((self.shape, self.dtype, self.weak_type))

    def __repr__(self) -> str:
        weak = ", weak_type=True" if self.weak_type else ""
        return f"ShapeDtypeStruct(shape={self.shape}, dtype={self.dtype.name}{weak})"


def abstractify(x: Any, fun: Callable, name: str) -> ShapedArray:
    """The type a traced argument gets: an array's own; a Python scalar's is weak; NumPy
    values and ``ShapeDtypeStruct`` s get their dtype, canonicalised (float64 -> float32).

    ``fun`` and ``name`` (the argument's path, like ``params['w']``) are for the error
    raised when ``x`` is not an array at all (a string, say).
    """
    try:
        if isinstance(x, str):  # "float32" names a dtype, but is no array
            raise TypeError
        return get_aval(x)
    except (TypeError, ValueError):
        raise TypeError(
            f"Error interpreting argument to {fun} as an abstract array. The problematic "
            f"value is of type {type(x)} and was passed to the function at path {name}.\n"
            "This typically means that a jit-wrapped function was called with a non-array "
            "argument, and this argument was not marked as static using the static_argnums "
            "or static_argnames parameters of jax.jit.") from None
