"""``minijax.numpy``: NumPy's API on top of ``lax``, as ``jax.numpy``.

Promotion and broadcasting live here (``promotion.py``); every function ends in strict
``lax`` primitives, which is why every one of them can be traced, differentiated and
compiled.
"""

from minijax.numpy import array_methods as _array_methods
from minijax.numpy.creation import (
    array,
    asarray,
    empty,
    empty_like,
    full,
    full_like,
    ones,
    ones_like,
    zeros,
    zeros_like,
)
from minijax.numpy.promotion import broadcast_to
from minijax.numpy.ufuncs import *  # noqa: F403

_array_methods.attach()
