"""``minijax.nn.initializers``: functions ``init(key, shape, dtype) -> array`` for weights.

Most are *variance scaling* initializers: draw from a distribution of unit variance and
scale it so that a layer's outputs keep the variance of its inputs. The variance is
``scale / n``, where ``n`` counts the inputs of a unit (``fan_in``), its outputs
(``fan_out``) or their mean (``fan_avg``). Glorot (Xavier) uses scale 1 and fan_avg, He
(Kaiming) scale 2 and fan_in, LeCun scale 1 and fan_in. The random draws are those of
:mod:`minijax.random`, so with the same key they equal JAX's.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from minijax import dtypes, random
from minijax import numpy as jnp

__all__ = [
    "constant",
    "glorot_normal",
    "glorot_uniform",
    "he_normal",
    "he_uniform",
    "kaiming_normal",
    "kaiming_uniform",
    "lecun_normal",
    "lecun_uniform",
    "normal",
    "ones",
    "truncated_normal",
    "uniform",
    "variance_scaling",
    "xavier_normal",
    "xavier_uniform",
    "zeros",
]

Initializer = Callable[..., Any]

# The standard deviation of a unit normal truncated to [-2, 2].
_TRUNCATED_STDDEV = .87962566103423978


def _dtype(dtype: Any) -> np.dtype:
    return dtypes.canonicalize_dtype(dtype)


def zeros(key: Any, shape: Sequence[int], dtype: Any = float) -> Any:
    return jnp.zeros(shape, _dtype(dtype))


def ones(key: Any, shape: Sequence[int], dtype: Any = float) -> Any:
    return jnp.ones(shape, _dtype(dtype))


def constant(value: Any, dtype: Any = float) -> Initializer:
    def init(key: Any, shape: Sequence[int], dtype: Any = dtype) -> Any:
        return jnp.full(shape, value, dtype=_dtype(dtype))
    return init


def uniform(scale: Any = 1e-2, dtype: Any = float) -> Initializer:
    """Uniform on [0, scale)."""
    def init(key: Any, shape: Sequence[int], dtype: Any = dtype) -> Any:
        dtype = _dtype(dtype)
        return random.uniform(key, shape, dtype) * jnp.array(scale, dtype)
    return init


def normal(stddev: Any = 1e-2, dtype: Any = float) -> Initializer:
    """Normal with mean 0 and standard deviation ``stddev``."""
    def init(key: Any, shape: Sequence[int], dtype: Any = dtype) -> Any:
        dtype = _dtype(dtype)
        return random.normal(key, shape, dtype) * jnp.array(stddev, dtype)
    return init


def truncated_normal(stddev: Any = 1e-2, dtype: Any = float, lower: Any = -2.0,
                     upper: Any = 2.0) -> Initializer:
    """A unit normal truncated to [lower, upper], times ``stddev``."""
    def init(key: Any, shape: Sequence[int], dtype: Any = dtype) -> Any:
        dtype = _dtype(dtype)
        return random.truncated_normal(key, lower, upper, shape, dtype) * jnp.array(
            stddev, dtype)
    return init


def _fans(shape: Sequence[int], in_axis: int | Sequence[int], out_axis: int | Sequence[int],
          batch_axis: int | Sequence[int]) -> tuple[float, float]:
    """(inputs, outputs) of one unit: the in/out dimensions times the receptive field (all
    the dimensions that are neither in, out nor batch, e.g. a convolution's window)."""
    if len(shape) <= 1 and in_axis == -2:
        raise ValueError(f"Can't compute input and output sizes of a {len(shape)}-dimensional "
                         "weights tensor with default in_axis. Must be at least 2D or specify "
                         "in_axis explicitly.")

    def axes(a: int | Sequence[int]) -> tuple[int, ...]:
        return tuple(i % len(shape) for i in ((a,) if isinstance(a, int) else a))

    ins, outs, batch = axes(in_axis), axes(out_axis), axes(batch_axis)
    receptive = math.prod(d for i, d in enumerate(shape) if i not in ins + outs + batch)
    return (math.prod(shape[i] for i in ins) * receptive,
            math.prod(shape[i] for i in outs) * receptive)


def variance_scaling(scale: float, mode: str, distribution: str,
                     in_axis: int | Sequence[int] = -2, out_axis: int | Sequence[int] = -1,
                     batch_axis: int | Sequence[int] = (), dtype: Any = float) -> Initializer:
    """Samples of variance ``scale / n`` (``n`` from ``mode``) from ``distribution``:
    ``"truncated_normal"``, ``"normal"`` or ``"uniform"``."""

    def init(key: Any, shape: Sequence[int], dtype: Any = dtype) -> Any:
        # Checked when called, as in JAX.
        if mode not in ("fan_in", "fan_out", "fan_avg"):
            raise ValueError(f"invalid mode for variance scaling initializer: {mode}")
        if distribution not in ("truncated_normal", "normal", "uniform"):
            raise ValueError("invalid distribution for variance scaling initializer: "
                             f"{distribution}")
        shape, dtype = tuple(shape), _dtype(dtype)
        if dtypes.issubdtype(dtype, np.complexfloating):
            raise NotImplementedError("minijax's variance_scaling supports real dtypes only")
        fan_in, fan_out = _fans(shape, in_axis, out_axis, batch_axis)
        denominator = {"fan_in": fan_in, "fan_out": fan_out,
                       "fan_avg": (fan_in + fan_out) / 2}[mode]
        variance = jnp.array(scale / denominator, dtype=dtype)
        if distribution == "truncated_normal":
            stddev = jnp.sqrt(variance) / jnp.array(_TRUNCATED_STDDEV, dtype)
            return random.truncated_normal(key, -2, 2, shape, dtype) * stddev
        if distribution == "normal":
            return random.normal(key, shape, dtype) * jnp.sqrt(variance)
        return random.uniform(key, shape, dtype, -1) * jnp.sqrt(3 * variance)

    return init


def _preset(name: str, scale: float, mode: str, distribution: str) -> Callable[..., Any]:
    """A named variance scaling initializer maker, e.g. ``glorot_uniform()``."""
    def make(in_axis: Any = -2, out_axis: Any = -1, batch_axis: Any = (),
             dtype: Any = float) -> Initializer:
        return variance_scaling(scale, mode, distribution, in_axis, out_axis, batch_axis,
                                dtype)

    make.__name__ = make.__qualname__ = name
    make.__doc__ = f"variance_scaling({scale}, {mode!r}, {distribution!r})."
    return make


glorot_uniform = _preset("glorot_uniform", 1.0, "fan_avg", "uniform")
glorot_normal = _preset("glorot_normal", 1.0, "fan_avg", "truncated_normal")
lecun_uniform = _preset("lecun_uniform", 1.0, "fan_in", "uniform")
lecun_normal = _preset("lecun_normal", 1.0, "fan_in", "truncated_normal")
he_uniform = _preset("he_uniform", 2.0, "fan_in", "uniform")
he_normal = _preset("he_normal", 2.0, "fan_in", "truncated_normal")
xavier_uniform, xavier_normal = glorot_uniform, glorot_normal
kaiming_uniform, kaiming_normal = he_uniform, he_normal
