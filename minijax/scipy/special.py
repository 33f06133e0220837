"""``jax.scipy.special``: special functions, as ``jnp`` functions of ``lax`` primitives.

The error function, the log-gamma function and friends are primitives of their own
(``minijax.lax.special``); the functions here promote their argument to floating point
and call them. The rest are formulas, written to stay finite where a naive one overflows:

* ``logsumexp`` subtracts the maximum before exponentiating, and adds it back after the
  log; the maximum is a ``stop_gradient`` constant to differentiation (its derivative
  cancels out anyway), as in JAX;
* ``xlogy`` and ``xlog1py`` are 0 where x is 0, whatever y (so 0 log 0 = 0, as entropy
  formulas want), with JVP rules of their own that keep that promise.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import numpy as np

from minijax import lax
from minijax import numpy as jnp
from minijax.compiler.jit import jit
from minijax.custom_derivatives import custom_jvp
from minijax.numpy.promotion import promote_args_inexact
from minijax.numpy.reductions import reduction_axes

__all__ = ["digamma", "erf", "erfc", "erfinv", "expit", "gammaln", "log_softmax", "logit",
           "logsumexp", "softmax", "xlog1py", "xlogy"]


def _inexact(name: str, x: Any) -> Any:
    return promote_args_inexact(name, x)[0]


def erf(x: Any) -> Any:
    """The error function 2/√π ∫₀ˣ exp(-t²) dt."""
    return lax.erf(_inexact("erf", x))


def erfc(x: Any) -> Any:
    """1 - erf(x), accurate where erf(x) is close to 1."""
    return lax.erfc(_inexact("erfc", x))


def erfinv(x: Any) -> Any:
    """The inverse of erf on (-1, 1)."""
    return lax.erf_inv(_inexact("erfinv", x))


def gammaln(x: Any) -> Any:
    """log |Γ(x)|."""
    return lax.lgamma(_inexact("gammaln", x))


def digamma(x: Any) -> Any:
    """ψ(x), the derivative of gammaln."""
    return lax.digamma(_inexact("digamma", x))


def expit(x: Any) -> Any:
    """The logistic sigmoid 1 / (1 + exp(-x))."""
    return lax.logistic(_inexact("expit", x))


def _logit_value(x: Any) -> Any:
    return lax.log(lax.div(x, lax.sub(lax.full_like(x, 1, shape=()), x)))


_logit_value.__name__ = "logit"  # the name jaxprs show, as in JAX
_logit = custom_jvp(_logit_value)


@_logit.defjvp
def jvp(primals: tuple, tangents: tuple) -> tuple[Any, Any]:  # (JAX names this rule "jvp")
    """logit'(x) = 1 / (x (1 - x))."""
    (x,), (t,) = primals, tangents
    return _logit(x), lax.div(t, lax.mul(x, lax.sub(lax.full_like(x, 1, shape=()), x)))


def logit(x: Any) -> Any:
    """log(x / (1 - x)), the inverse of expit."""
    return _logit(_inexact("logit", x))


def _x_times(log_fn: Any, x: Any, y: Any) -> Any:
    """x · log_fn(y), but 0 where x is 0 (unless y is NaN)."""
    use_formula = jnp.logical_or(lax.ne(x, lax.full_like(x, 0, shape=())), lax.ne(y, y))
    return jnp.where(use_formula, lax.mul(x, log_fn(y)), lax.full_like(x, 0))


def _xlogy_value(x: Any, y: Any) -> Any:
    return _x_times(lax.log, x, y)


def _xlog1py_value(x: Any, y: Any) -> Any:
    return _x_times(lax.log1p, x, y)


_xlogy_value.__name__, _xlog1py_value.__name__ = "xlogy", "xlog1py"
_xlogy, _xlog1py = custom_jvp(_xlogy_value), custom_jvp(_xlog1py_value)


@_xlogy.defjvp
def _xlogy_jvp(primals: tuple, tangents: tuple) -> tuple[Any, Any]:
    (x, y), (tx, ty) = primals, tangents
    return _xlogy(x, y), lax.add(lax.mul(tx, lax.log(y)), lax.mul(ty, lax.div(x, y)))


@_xlog1py.defjvp
def _xlog1py_jvp(primals: tuple, tangents: tuple) -> tuple[Any, Any]:
    (x, y), (tx, ty) = primals, tangents
    one = lax.full_like(y, 1, shape=())
    return _xlog1py(x, y), lax.add(lax.mul(tx, lax.log1p(y)),
                                   lax.mul(ty, lax.div(x, lax.add(y, one))))


def xlogy(x: Any, y: Any) -> Any:
    """x · log(y), and 0 where x is 0."""
    return _xlogy(*promote_args_inexact("xlogy", x, y))


def xlog1py(x: Any, y: Any) -> Any:
    """x · log(1 + y), and 0 where x is 0."""
    return _xlog1py(*promote_args_inexact("xlog1py", x, y))


def _shift(a: Any, axis: Any) -> tuple[Any, Any]:
    """(``a`` minus its maximum over ``axis``, that maximum kept as size-1 dimensions);
    the maximum is a constant to differentiation."""
    amax = lax.stop_gradient(jnp.max(a, axis, keepdims=True, initial=-np.inf))
    return lax.sub(a, amax), amax


def softmax(x: Any, /, *, axis: Any = None) -> Any:
    """exp(x) / sum(exp(x)) over ``axis`` (every axis if None)."""
    unnormalized = lax.exp(_shift(_inexact("softmax", x), axis)[0])
    return lax.div(unnormalized, jnp.sum(unnormalized, axis, keepdims=True))


@partial(jit, static_argnames=("axis",))
def log_softmax(x: Any, /, *, axis: Any = None) -> Any:
    """x - logsumexp(x) over ``axis``: log-probabilities that sum (as probabilities) to 1."""
    shifted, _ = _shift(_inexact("log_softmax", x), axis)
    return lax.sub(shifted, lax.log(jnp.sum(lax.exp(shifted), axis, keepdims=True)))


def logsumexp(a: Any, axis: Any = None, b: Any = None, keepdims: bool = False,
              return_sign: bool = False, where: Any = None) -> Any:
    """log(Σ b·exp(a)) over ``axis``, without overflow. With ``return_sign``, the pair
    (log |Σ|, sign of Σ); otherwise a negative sum gives NaN."""
    if b is None:
        (a,) = promote_args_inexact("logsumexp", a)
    else:
        a, b = promote_args_inexact("logsumexp", a, b)
        a = jnp.where(lax.ne(b, lax.full_like(b, 0, shape=())), a, -np.inf)
    if where is not None:
        a = jnp.where(where, a, -np.inf)
    axes = reduction_axes(axis, a.ndim)
    real = lax.real(a) if a.dtype.kind == "c" else a
    amax = jnp.max(real, axes, keepdims=keepdims, initial=-np.inf, where=where)
    amax = lax.stop_gradient(lax.select(lax.is_finite(amax), amax, lax.full_like(amax, 0)))
    amax_kept = amax if keepdims else lax.expand_dims(amax, axes)
    exp_a = lax.exp(lax.sub(a, lax.convert_element_type(amax_kept, a.dtype)))
    if b is not None:
        exp_a = lax.mul(exp_a, b)
    total = jnp.sum(exp_a, axes, keepdims=keepdims, where=where)
    sign = lax.sign(total)
    if a.dtype.kind != "c":
        total = lax.abs(total)
    out = lax.add(lax.log(total), lax.convert_element_type(amax, total.dtype))
    if return_sign:
        return out, sign
    if b is not None and a.dtype.kind != "c":
        nan = lax.full_like(out, np.nan, shape=())
        out = jnp.where(lax.lt(sign, lax.full_like(sign, 0, shape=())), nan, out)
    return out
