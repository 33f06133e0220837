"""``minijax.nn``: the activation functions and helpers of ``jax.nn``.

Each is written the way JAX 0.10.2 writes it, so values *and* printed jaxprs agree:
``relu`` and ``relu6`` are ``custom_jvp`` functions (their derivative at the kink is 0, a
choice, not something differentiating ``max`` would give), most others are small ``jit``
functions named after themselves, and ``sigmoid`` is the ``logistic`` primitive itself.
``logsumexp`` is :func:`minijax.scipy.special.logsumexp`. The weight initializers live in
:mod:`minijax.nn.initializers`.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import numpy as np

from minijax import dtypes, lax
from minijax import numpy as jnp
from minijax.compiler.jit import jit
from minijax.custom_derivatives import custom_jvp
from minijax.nn import initializers
from minijax.scipy.special import logsumexp

__all__ = [
    "elu",
    "gelu",
    "initializers",
    "leaky_relu",
    "log_sigmoid",
    "log_softmax",
    "logsumexp",
    "one_hot",
    "relu",
    "relu6",
    "sigmoid",
    "silu",
    "softmax",
    "softplus",
    "swish",
    "tanh",
]

tanh = jnp.tanh


@custom_jvp
@jit
def relu(x: Any) -> Any:
    """max(x, 0); its derivative at 0 is taken to be 0."""
    return jnp.maximum(x, 0)


relu.defjvps(lambda g, ans, x: lax.select(x > 0, g, lax.full_like(g, 0)))


@custom_jvp
@jit
def relu6(x: Any) -> Any:
    """min(max(x, 0), 6); derivative 0 at both kinks."""
    return jnp.minimum(jnp.maximum(x, 0), 6.0)


relu6.defjvps(lambda g, ans, x: lax.select((x > 0) & (x < 6), g, lax.full_like(g, 0)))


def sigmoid(x: Any) -> Any:
    """1 / (1 + exp(-x)), the ``logistic`` primitive."""
    return lax.logistic(x)


@jit
def softplus(x: Any) -> Any:
    """log(1 + exp(x)), computed as logaddexp(x, 0) so it neither overflows nor underflows."""
    return jnp.logaddexp(x, 0)


@jit
def log_sigmoid(x: Any) -> Any:
    """log(sigmoid(x)) = -softplus(-x)."""
    return -softplus(-x)


@jit
def silu(x: Any) -> Any:
    """x · sigmoid(x) (also called swish)."""
    return x * sigmoid(x)


swish = silu


def gelu(x: Any, approximate: bool = True) -> Any:
    """x · Φ(x), Φ the standard normal CDF; ``approximate=True`` uses the tanh formula."""
    x = jnp.asarray(x)
    if approximate:
        sqrt_2_over_pi = np.sqrt(2 / np.pi).astype(x.dtype)
        cdf = 0.5 * (1.0 + jnp.tanh(sqrt_2_over_pi * (x + 0.044715 * x ** 3)))
        return x * cdf
    sqrt_half = np.sqrt(0.5).astype(x.dtype)
    return jnp.array(0.5 * x * lax.erfc(-x * sqrt_half), dtype=x.dtype)


@jit
def leaky_relu(x: Any, negative_slope: Any = 0.01) -> Any:
    """x where x >= 0, else negative_slope · x."""
    return jnp.where(x >= 0, x, negative_slope * x)


@jit
def elu(x: Any, alpha: Any = 1.0) -> Any:
    """x where x > 0, else alpha · (exp(x) - 1) (computed on a safe input, so the
    unused branch cannot overflow)."""
    return jnp.where(x > 0, x, alpha * jnp.expm1(jnp.where(x > 0, 0.0, x)))


def _shifted(x: Any, axis: Any, where: Any) -> Any:
    """``x`` minus its maximum over ``axis`` (a constant to differentiation); masked-out
    entries become -inf."""
    x_max = jnp.max(x, axis, where=where, initial=-np.inf, keepdims=True)
    x_safe = x if where is None else jnp.where(where, x, -np.inf)
    return x_safe - lax.stop_gradient(x_max)


def softmax(x: Any, axis: Any = -1, where: Any = None) -> Any:
    """exp(x) / sum(exp(x)) over ``axis``; entries masked out by ``where`` get 0."""
    unnormalized = jnp.exp(_shifted(x, axis, where))
    result = unnormalized / jnp.sum(unnormalized, axis, where=where, keepdims=True)
    return result if where is None else jnp.where(where, result, 0)


@partial(jit, static_argnames=("axis",))
def log_softmax(x: Any, axis: Any = -1, where: Any = None) -> Any:
    """x - logsumexp(x) over ``axis``; entries masked out by ``where`` get -inf."""
    shifted = _shifted(x, axis, where)
    result = shifted - jnp.log(jnp.sum(jnp.exp(shifted), axis, where=where, keepdims=True))
    return result if where is None else jnp.where(where, result, -np.inf)


@partial(jit, static_argnames=("num_classes", "dtype", "axis"))
def _one_hot(x: Any, *, num_classes: int, dtype: Any, axis: int) -> Any:
    position = axis % (x.ndim + 1)
    lhs = lax.expand_dims(x, (position,))
    rhs_shape = [1] * x.ndim
    rhs_shape.insert(position, num_classes)
    rhs = lax.broadcasted_iota(x.dtype, rhs_shape, position)
    return (lhs == rhs).astype(dtype)


def one_hot(x: Any, num_classes: int, *, dtype: Any = None, axis: int = -1) -> Any:
    """``x[..., None] == arange(num_classes)`` as numbers (float by default)."""
    num_classes = int(num_classes)
    dt = dtypes.canonicalize_dtype(np.float64) if dtype is None else dtype  # astype checks
    return _one_hot(jnp.asarray(x), num_classes=num_classes, dtype=dt, axis=axis)
