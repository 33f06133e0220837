"""``minijax.lax``: the strict primitives everything else is built on.

``lax`` mirrors ``jax.lax``: no implicit dtype promotion, only trivial broadcasting
(equal ranks, size-1 dimensions, or scalars), and a ``TypeError`` naming both dtypes or
shapes when operands disagree. Each family of primitives lives in its own module.
"""

from minijax.lax.elementwise import *  # noqa: F403
from minijax.lax.elementwise import operand  # noqa: F401  (used by jnp; not in jax.lax)
from minijax.lax.shapes import *  # noqa: F403
from minijax.lax.shapes import canonicalize_shape  # noqa: F401
