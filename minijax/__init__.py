"""minijax: a small, readable re-creation of JAX's core, built chapter by chapter.

Use it the way you would use JAX::

    import minijax as jax
    import minijax.numpy as jnp
"""

from minijax.config import config, numpy_dtype_promotion

__version__ = "0.1.0"

__all__ = ["config", "numpy_dtype_promotion"]
