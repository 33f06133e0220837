"""The dtype questions jnp answers: ``jnp.dtype``, ``promote_types``, ``finfo``, ...

They are thin: the rules live in ``minijax.dtypes``. What is added here is JAX's public
spelling, and NumPy's abstract type hierarchy (``jnp.floating``, ``jnp.integer``) so that
``jnp.issubdtype(x.dtype, jnp.floating)`` reads as it does in JAX.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from minijax import dtypes
from minijax.dtypes import finfo, iinfo, issubdtype, promote_types

generic, number, inexact, floating = np.generic, np.number, np.inexact, np.floating
complexfloating, integer = np.complexfloating, np.integer
signedinteger, unsignedinteger = np.signedinteger, np.unsignedinteger


dtype = np.dtype  # as in JAX: NumPy's own constructor, no canonicalisation


def result_type(*args: Any) -> np.dtype:
    """The dtype of ``args`` combined by JAX's promotion rules (weak Python scalars included)."""
    return dtypes.result_type(*args)


def can_cast(from_: Any, to: Any, casting: str = "safe") -> bool:
    return np.can_cast(np.dtype(from_), np.dtype(to), casting=casting)


__all__ = [
    "can_cast", "complexfloating", "dtype", "finfo", "floating", "generic", "iinfo",
    "inexact", "integer", "issubdtype", "number", "promote_types", "result_type",
    "signedinteger", "unsignedinteger",
]
