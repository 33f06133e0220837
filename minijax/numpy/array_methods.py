"""Operators and methods of ``Array`` and ``Tracer``, written with ``jnp``.

``x + y`` on a minijax array calls ``jnp.add(x, y)``; ``x.sum()`` calls ``jnp.sum(x)``.
The same table is attached to ``Array`` (concrete values) and ``Tracer`` (values under a
transformation), so that user code behaves identically in both worlds -- which is what
lets a transformation run ordinary Python functions.

A binary operator with an operand that is not array-like (a list, a string) returns
``NotImplemented``, so Python raises its usual ``TypeError``, as in JAX.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from minijax import lax
from minijax.array import Array
from minijax.core import Tracer
from minijax.numpy.promotion import is_arraylike

_jnp_module: Any = None  # minijax.numpy, set by attach() (jnp imports this module)


def _jnp(name: str) -> Callable[..., Any]:
    """The ``jnp`` function ``name`` (``attach()`` runs once ``jnp`` is complete)."""
    return getattr(_jnp_module, name)


def _binary(name: str, reflected: bool = False) -> Callable[[Any, Any], Any]:
    fn = _jnp(name)  # looked up once: operators are the hottest path of eager code

    def method(self: Any, other: Any) -> Any:
        if type(other) is not Array and not is_arraylike(other):
            return NotImplemented
        return fn(other, self) if reflected else fn(self, other)

    return method


def _unary(name: str) -> Callable[[Any], Any]:
    fn = _jnp(name)
    return lambda self: fn(self)


def _method(name: str) -> Callable[..., Any]:
    fn = _jnp(name)

    def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        return fn(self, *args, **kwargs)

    method.__name__ = name
    return method


_BINARY_OPERATORS = {
    "add": "add", "sub": "subtract", "mul": "multiply", "truediv": "true_divide",
    "floordiv": "floor_divide", "mod": "remainder", "pow": "power", "matmul": "matmul",
    "and": "bitwise_and", "or": "bitwise_or", "xor": "bitwise_xor",
    "lshift": "left_shift", "rshift": "right_shift", "divmod": "divmod",
}
_COMPARISONS = {"eq": "equal", "ne": "not_equal", "lt": "less", "le": "less_equal",
                "gt": "greater", "ge": "greater_equal"}
_UNARY_OPERATORS = {"neg": "negative", "pos": "positive", "abs": "absolute",
                    "invert": "invert"}
_METHODS = [
    "all", "any", "argmax", "argmin", "argsort", "astype", "clip", "conj", "conjugate",
    "cumprod", "cumsum", "diagonal", "dot", "max", "mean", "min", "nonzero",
    "prod", "ravel", "repeat", "reshape", "round", "sort", "squeeze", "std", "sum",
    "swapaxes", "take", "trace", "transpose", "var",
]


def _reshape(self: Any, *shape: Any, order: str = "C") -> Any:
    """``x.reshape(2, 3)`` and ``x.reshape((2, 3))`` both work, as in NumPy (and
    ``x.reshape(4)`` is ``jnp.reshape(x, 4)``, whose errors print the ``4`` as given)."""
    if len(shape) == 1:
        shape = shape[0]
    return _jnp("reshape")(self, shape, order=order)


def _transpose(self: Any, *axes: Any) -> Any:
    if len(axes) == 1 and not isinstance(axes[0], int):
        axes = axes[0]
    return _jnp("transpose")(self, axes or None)


def _no_flat(self: Any) -> Any:
    raise NotImplementedError("JAX Arrays do not implement the arr.flat property: consider "
                              "arr.flatten() instead.")


def _astype(self: Any, dtype: Any, copy: bool = False, device: Any = None) -> Any:
    return _jnp("astype")(self, dtype)


def _properties() -> dict[str, Any]:
    return {
        "T": property(lambda self: _jnp("transpose")(self)),
        "mT": property(lambda self: _jnp("swapaxes")(self, -1, -2)),
        "real": property(lambda self: _jnp("real")(self)),
        "imag": property(lambda self: _jnp("imag")(self)),
        "at": property(lambda self: _jnp("_index_update_helper")(self)),
        "flat": property(_no_flat),
    }


def _iterate_tracer(self: Any) -> Any:
    """``for row in x`` on a traced array: one ``lax.index_in_dim`` (a slice with unit
    strides, then a squeeze) per row, as JAX records it."""
    if not self.shape:
        raise TypeError("iteration over a 0-d array")
    return (lax.index_in_dim(self, i, keepdims=False) for i in range(self.shape[0]))


def _table() -> dict[str, Any]:
    table: dict[str, Any] = {}
    for op, name in _BINARY_OPERATORS.items():
        table[f"__{op}__"] = _binary(name)
        table[f"__r{op}__"] = _binary(name, reflected=True)
    for op, name in _COMPARISONS.items():
        table[f"__{op}__"] = _binary(name)
    for op, name in _UNARY_OPERATORS.items():
        table[f"__{op}__"] = _unary(name)
    table["__getitem__"] = _jnp("_getitem")
    table["__round__"] = lambda self, ndigits=None: _jnp("round")(self, ndigits or 0)
    for name in _METHODS:
        table[name] = _method(name)
    table.update(reshape=_reshape, transpose=_transpose, astype=_astype,
                 flatten=_method("ravel"))
    table.update(_properties())
    return table


def attach() -> None:
    """Give ``Array`` and ``Tracer`` their operators and methods."""
    global _jnp_module
    _jnp_module = sys.modules["minijax.numpy"]
    for name, value in _table().items():
        setattr(Array, name, value)
        setattr(Tracer, name, value)
    Tracer.__iter__ = _iterate_tracer  # type: ignore[method-assign]
    # Python asks __eq__ for ``==``; arrays stay unhashable even so.
    Array.__hash__ = None  # type: ignore[assignment]
    Tracer.__hash__ = None  # type: ignore[assignment]


__all__ = ["attach"]
