"""Numerical differentiation: derivatives from function values alone.

Automatic differentiation is tested against these helpers (``check_grads`` will compare
JVPs with :func:`numerical_jvp`, as JAX's ``jax.test_util.check_grads`` does), and
chapter 03 studies their errors. They use nothing but arithmetic operators and ``.imag``
on the values they get, so they work on NumPy arrays and on minijax arrays alike (and on
Python floats); a minijax input gives a minijax result.

For a step ``h`` and a function evaluated with relative error about ``ε`` (the machine
epsilon of the dtype: ``2.2e-16`` in float64, ``1.2e-7`` in float32) near ``x``:

=============  ================  =================  ===============  ============================
method         formula           truncation error   rounding error   best step if f ~ 1 (f64/f32)
=============  ================  =================  ===============  ============================
forward        (f(x+h)-f(x))/h   h/2 |f''|          2ε |f| / h       √ε    (1.5e-8 / 3.5e-4)
backward       (f(x)-f(x-h))/h   h/2 |f''|          2ε |f| / h       √ε
central        (f(x+h)-f(x-h))   h²/6 |f'''|        ε |f| / h        ∛ε    (6.1e-6 / 4.9e-3)
               / 2h
complex step   Im f(x+ih) / h    h²/6 |f'''|        ε |f'|           any tiny h (1e-20)
=============  ================  =================  ===============  ============================

The truncation error is the first neglected term of the Taylor series (``|f''|`` and
``|f'''|`` are bounds near ``x``). The rounding error comes from subtracting two nearly
equal values, each wrong by up to ``ε|f|``, then dividing by a small ``h``: it *grows* as
``h`` shrinks. (Rounding ``x + h`` adds ``ε|x f'|/h`` more: the same size when ``|x| ~ 1``.)
The best step balances the two (the total error is then about ``√ε`` for one-sided and
``ε^(2/3)`` for central differences). The complex step subtracts nothing,
so ``h`` can be tiny and the result is accurate to about ``ε``; it needs an ``f`` written
with operations that extend to complex numbers (no ``abs``, comparisons or ``conj``).

A gradient of ``f: R^n -> R`` costs ``n + 1`` evaluations of ``f`` with one-sided
differences, ``2n`` with central differences and ``n`` (complex) with the complex step;
reverse-mode AD costs a small constant multiple of one evaluation, whatever ``n`` is.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from minijax import dtypes, tree_util

__all__ = [
    "EPS",
    "backward_difference",
    "central_difference",
    "complex_step",
    "default_step",
    "forward_difference",
    "numerical_grad",
    "numerical_jvp",
]

#: The step of :func:`numerical_jvp`, as in JAX's test utilities: large enough for float32.
EPS = 1e-4

#: The complex step: far below anything that could disturb the real part.
COMPLEX_STEP = 1e-20

_EXPONENTS = {"forward": 1 / 2, "backward": 1 / 2, "central": 1 / 3}


def _epsilon(x: Any) -> float:
    """The machine epsilon of ``x``'s floating-point dtype (float64 for Python numbers)."""
    dtype = np.dtype(getattr(x, "dtype", np.float64))
    if not dtypes.issubdtype(dtype, np.inexact):
        dtype = np.dtype(np.float64)
    return float(dtypes.finfo(dtype).eps)


def default_step(method: str, x: Any = 0.0) -> float:
    """The step that balances truncation and rounding error for ``method`` at ``x``.

    It assumes that ``f`` and its derivatives near ``x`` are of order one: ``√ε`` for
    one-sided differences, ``∛ε`` for central differences (ε of ``x``'s dtype), and
    ``1e-20`` for the complex step. For other scales pass ``h`` yourself, e.g.
    ``default_step("central", x) * max(1, abs(x))``.
    """
    if method == "complex_step":
        return COMPLEX_STEP
    if method not in _EXPONENTS:
        raise ValueError(
            f"unknown method {method!r}; choose forward, backward, central or complex_step"
        )
    return _epsilon(x) ** _EXPONENTS[method]


def forward_difference(f: Callable[[Any], Any], x: Any, h: Any = None) -> Any:
    """``(f(x + h) - f(x)) / h``: error ``h/2 |f''| + 2ε|f|/h``; 2 evaluations.

    ``x`` and ``h`` may be arrays: the formula broadcasts, so one call can try many steps.
    """
    h = default_step("forward", x) if h is None else h
    return (f(x + h) - f(x)) / h


def backward_difference(f: Callable[[Any], Any], x: Any, h: Any = None) -> Any:
    """``(f(x) - f(x - h)) / h``: error ``h/2 |f''| + 2ε|f|/h``; 2 evaluations."""
    h = default_step("backward", x) if h is None else h
    return (f(x) - f(x - h)) / h


def central_difference(f: Callable[[Any], Any], x: Any, h: Any = None) -> Any:
    """``(f(x + h) - f(x - h)) / 2h``: error ``h²/6 |f'''| + ε|f|/h``; 2 evaluations.

    The even terms of the two Taylor series cancel, so the error shrinks like ``h²``
    rather than ``h``, for the same number of evaluations as a one-sided difference.
    """
    h = default_step("central", x) if h is None else h
    return (f(x + h) - f(x - h)) / (2 * h)


def complex_step(f: Callable[[Any], Any], x: Any, h: Any = COMPLEX_STEP) -> Any:
    """``Im f(x + ih) / h``: error ``h²/6 |f'''|`` and no cancellation; 1 evaluation.

    ``f(x + ih) = f(x) + ih f'(x) - h²/2 f''(x) - ...``: the imaginary part is ``h f'(x)``
    up to ``O(h³)``, and no two close numbers are subtracted, so ``h = 1e-20`` gives
    ``f'(x)`` to machine precision. ``f`` must be analytic and computed with operations
    that extend to complex numbers.
    """
    return f(x + 1j * h).imag / h


def numerical_jvp(f: Callable[..., Any], primals: tuple, tangents: tuple,
                  eps: float = EPS) -> Any:
    """The directional derivative of ``f`` at ``primals`` along ``tangents``, by central
    differences: ``(f(x + eps t) - f(x - eps t)) / 2 eps``.

    ``primals`` and ``tangents`` are tuples of arguments (pytrees of the same structure);
    the result has the structure of ``f``'s output. This is what ``check_grads`` compares
    a JVP with; ``eps = 1e-4`` suits float32 (error ~ ``1e-8 |f'''| + 1e-3 |f|`` at worst).
    """
    step = lambda sign: tree_util.tree_map(lambda x, t: x + sign * eps * t, primals, tangents)
    f_plus, f_minus = f(*step(1)), f(*step(-1))
    return tree_util.tree_map(lambda a, b: (a - b) / (2 * eps), f_plus, f_minus)


def numerical_grad(f: Callable[[Any], Any], x: Any, h: float | None = None,
                   method: str = "central") -> np.ndarray:
    """The gradient of a scalar ``f`` at the array ``x``, one coordinate at a time.

    Evaluations of ``f``: ``n + 1`` for ``"forward"`` and ``"backward"`` (``f(x)`` is
    shared), ``2n`` for ``"central"``, ``n`` for ``"complex_step"``, where ``n = x.size``.
    Returns a NumPy array of ``x``'s shape.
    """
    h = default_step(method, x) if h is None else h
    dtype = np.dtype(getattr(x, "dtype", np.float64))
    shape = np.shape(x)
    basis = np.eye(int(np.prod(shape)), dtype=dtype).reshape((-1, *shape))
    if method == "central":
        partials = [(f(x + h * e) - f(x - h * e)) / (2 * h) for e in basis]
    elif method == "complex_step":
        partials = [f(x + (1j * h) * e).imag / h for e in basis]
    elif method in ("forward", "backward"):
        sign = 1 if method == "forward" else -1
        fx = f(x)
        partials = [sign * (f(x + sign * h * e) - fx) / h for e in basis]
    else:
        raise ValueError(f"unknown method {method!r}")
    return np.array([np.asarray(p) for p in partials], dtype=dtype).reshape(shape)
