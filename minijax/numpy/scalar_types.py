"""``jnp.float32`` and friends: dtypes you can also call to make arrays.

In NumPy, ``np.float32(1.0)`` makes a NumPy scalar. In JAX there are no scalars, only
arrays, so ``jnp.float32(1.0)`` makes a 0-d ``Array`` of dtype float32 -- *strongly*
typed, unlike ``jnp.asarray(1.0)``. At the same time ``jnp.float32`` must work wherever a
dtype is expected (``jnp.zeros(3, jnp.float32)``, ``np.dtype(jnp.float32)``): it carries
a ``dtype`` attribute, which is all NumPy needs.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from minijax import dtypes


class _ScalarMeta(type):
    """The metaclass that makes ``jnp.float32(x)`` an array constructor."""

    dtype: np.dtype

    def __call__(cls, x: Any) -> Any:
        from minijax.numpy.creation import asarray

        return asarray(x, dtype=cls.dtype)

    def __eq__(cls, other: Any) -> bool:
        return other is cls or other is cls.dtype.type

    def __ne__(cls, other: Any) -> bool:
        return not cls == other

    def __hash__(cls) -> int:
        return hash(cls.dtype.type)

    def __instancecheck__(cls, instance: Any) -> bool:
        return isinstance(instance, cls.dtype.type)


def _make_scalar_type(name: str, numpy_type: type) -> _ScalarMeta:
    return _ScalarMeta(name, (object,), {"dtype": np.dtype(numpy_type),
                                         "__module__": "minijax.numpy"})


bool_ = _make_scalar_type("bool", np.bool_)
int8 = _make_scalar_type("int8", np.int8)
int16 = _make_scalar_type("int16", np.int16)
int32 = _make_scalar_type("int32", np.int32)
int64 = _make_scalar_type("int64", np.int64)
uint8 = _make_scalar_type("uint8", np.uint8)
uint16 = _make_scalar_type("uint16", np.uint16)
uint32 = _make_scalar_type("uint32", np.uint32)
uint64 = _make_scalar_type("uint64", np.uint64)
float16 = _make_scalar_type("float16", np.float16)
bfloat16 = _make_scalar_type("bfloat16", dtypes.bfloat16)
float32 = _make_scalar_type("float32", np.float32)
float64 = _make_scalar_type("float64", np.float64)
complex64 = _make_scalar_type("complex64", np.complex64)
complex128 = _make_scalar_type("complex128", np.complex128)

# NumPy's aliases, as jnp has them: the "default" types are the 64-bit ones, which
# canonicalise to 32 bits unless x64 is on.
bool = bool_
int_ = int64
uint = uint64
float_ = double = float64
complex_ = cdouble = complex128
single = float32
half = float16
csingle = complex64

__all__ = [
    "bfloat16", "bool", "bool_", "cdouble", "complex128", "complex64", "complex_", "csingle",
    "double", "float16", "float32", "float64", "float_", "half", "int16", "int32", "int64",
    "int8", "int_", "single", "uint", "uint16", "uint32", "uint64", "uint8",
]
