"""minijax: a small, readable re-creation of JAX's core, built chapter by chapter.

Use it the way you would use JAX::

    import minijax as jax
    import minijax.numpy as jnp
    from minijax import lax
"""

from minijax import debug, errors, lax, numpy, test_util, tree, tree_util
from minijax.api import ShapeDtypeStruct, device_get, effects_barrier, make_jaxpr
from minijax.array import Array
from minijax.autodiff import (
    grad,
    hessian,
    jacfwd,
    jacrev,
    jvp,
    linearize,
    value_and_grad,
    vjp,
)
from minijax.compiler import (
    eager_loops,  # noqa: F401  (eager loops run compiled)
    numpy_backend,  # noqa: F401  (installs itself as jit's backend)
)
from minijax.compiler.jit import jit
from minijax.core import ShapedArray
from minijax.custom_derivatives import custom_jvp, custom_vjp
from minijax.flags import config, numpy_dtype_promotion
from minijax.runtime import (
    block_until_ready,
    default_backend,
    device_count,
    device_put,
    devices,
    local_device_count,
    local_devices,
)
from minijax.vectorize import vmap

jacobian = jacrev  # JAX's alias

# Loaded when first used (``minijax.random.key(0)``, ``from minijax import nn``): they are
# not needed to import the rest, and a first ``import minijax`` stays quick.
_ON_FIRST_USE = ("nn", "random", "scipy")


def __getattr__(name: str):
    if name in _ON_FIRST_USE:
        import importlib

        return importlib.import_module(f"minijax.{name}")
    raise AttributeError(f"module 'minijax' has no attribute {name!r}")

# The JAX release whose API, semantics and printed output minijax mirrors: code that checks
# jax.__version__ to choose an API then takes the branch that minijax implements. (The
# course package's own version is in pyproject.toml.)
__version__ = "0.10.2"

__all__ = [
    "Array",
    "ShapeDtypeStruct",
    "ShapedArray",
    "block_until_ready",
    "config",
    "custom_jvp",
    "custom_vjp",
    "debug",
    "default_backend",
    "device_count",
    "device_get",
    "device_put",
    "devices",
    "effects_barrier",
    "errors",
    "grad",
    "hessian",
    "jacfwd",
    "jacobian",
    "jacrev",
    "jit",
    "jvp",
    "linearize",
    "value_and_grad",
    "vjp",
    "vmap",
    "lax",
    "local_device_count",
    "local_devices",
    "make_jaxpr",
    "nn",
    "numpy",
    "numpy_dtype_promotion",
    "random",
    "scipy",
    "tree",
    "tree_util",
]
