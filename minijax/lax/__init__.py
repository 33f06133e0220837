"""``minijax.lax``: the strict primitives everything else is built on.

``lax`` mirrors ``jax.lax``: no implicit dtype promotion, only trivial broadcasting
(equal ranks, size-1 dimensions, or scalars), and a ``TypeError`` naming both dtypes or
shapes when operands disagree. Each family of primitives lives in its own module.
"""

from minijax.lax import linalg  # noqa: F401  (lax.linalg: the matrix decompositions)
from minijax.lax.base import *  # noqa: F403
from minijax.lax.base import canonicalize_shape, operand  # noqa: F401  (jnp's; not jax.lax's)
from minijax.lax.control_flow import *  # noqa: F403
from minijax.lax.convolution import *  # noqa: F403
from minijax.lax.elementwise import *  # noqa: F403
from minijax.lax.parallel import *  # noqa: F403
from minijax.lax.reductions import *  # noqa: F403
from minijax.lax.shapes import *  # noqa: F403
from minijax.lax.shapes import canonicalize_axes, copy_p  # noqa: F401
from minijax.lax.slicing import *  # noqa: F403
from minijax.lax.sorting import *  # noqa: F403
from minijax.lax.special import *  # noqa: F403
