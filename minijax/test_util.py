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

:func:`check_grads` (JAX's ``jax.test_util.check_grads``) turns this into a test of
automatic differentiation: a JVP must agree with a central difference along a random
direction, and a VJP must be the JVP's transpose, ``<t, vjp(c)> = <jvp(t), c>``, which
needs no derivative of its own -- recursively, for higher orders.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from minijax import dtypes, tree_util

__all__ = [
    "EPS",
    "backward_difference",
    "central_difference",
    "check_grads",
    "check_jvp",
    "check_vjp",
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


# ---------------------------------------------------------------------------------------
# check_grads: automatic derivatives against central differences
# ---------------------------------------------------------------------------------------

#: Default ``atol`` and ``rtol`` of the gradient checks, by dtype: a central difference with
#: ``eps = 1e-4`` is good to about this much (JAX's values).
GRADIENT_TOLERANCE = {
    "float16": 1e-2, "bfloat16": 1e-1, "float32": 2e-3, "float64": 1e-5,
    "complex64": 1e-3, "complex128": 1e-5,
}


def _leaf_dtype(x: Any) -> np.dtype:
    return dtypes.dtype(x)


def _tolerance(given: float | None, *trees: Any) -> float:
    """``given``, or the loosest default tolerance among the dtypes of the leaves."""
    if given is not None:
        return given
    found = [GRADIENT_TOLERANCE.get(_leaf_dtype(leaf).name, 0.0)
             for tree in trees for leaf in tree_util.tree_leaves(tree)]
    return max(found, default=GRADIENT_TOLERANCE["float32"])


def _random_like(rng: np.random.RandomState, x: Any) -> np.ndarray:
    """Standard normal values shaped like ``x``, of its dtype (complex: both parts)."""
    dtype, shape = _leaf_dtype(x), np.shape(x)
    values = rng.randn(*shape)
    if dtypes.issubdtype(dtype, np.complexfloating):
        values = values + 1j * rng.randn(*shape)
    return np.asarray(values).astype(dtype)


def _inner_product(xs: Any, ys: Any) -> np.ndarray:
    """The real inner product ``Re Σ conj(x)·y`` over all leaves of two pytrees, in the
    leaves' precision (so that it is compared with their dtype's tolerance)."""
    pairs = zip(tree_util.tree_leaves(xs), tree_util.tree_leaves(ys))
    terms = [np.real(np.vdot(np.asarray(x).ravel(), np.asarray(y).ravel())) for x, y in pairs]
    return np.sum(terms, dtype=np.result_type(*terms)) if terms else np.float32(0)


def _check_close(actual: Any, expected: Any, atol: float | None, rtol: float | None,
                 what: str) -> None:
    """Leaf by leaf, ``|actual - expected| <= atol + rtol |expected|``; an AssertionError
    saying ``what`` was compared, with the numbers, otherwise."""
    actual_leaves = tree_util.tree_leaves(actual)
    expected_leaves = tree_util.tree_leaves(expected)
    if len(actual_leaves) != len(expected_leaves):
        raise AssertionError(f"{what}: {len(actual_leaves)} values, expected "
                             f"{len(expected_leaves)}")
    for a, e in zip(actual_leaves, expected_leaves):
        a_tol = _tolerance(atol, a, e)
        r_tol = _tolerance(rtol, a, e)
        a, e = np.asarray(a), np.asarray(e)
        if a.dtype.kind == "V":  # bfloat16: compare in float32
            a, e = a.astype(np.float32), e.astype(np.float32)
        np.testing.assert_allclose(a, e, rtol=r_tol, atol=a_tol, err_msg=what)


def check_jvp(f: Callable[..., Any], f_jvp: Callable[..., Any], args: tuple,
              atol: float | None = None, rtol: float | None = None, eps: float = EPS,
              err_msg: str = "") -> None:
    """``f_jvp(args, tangents)`` (e.g. ``partial(jax.jvp, f)``) must give ``f(*args)`` and a
    tangent equal to the central difference along a random (seeded) direction."""
    rng = np.random.RandomState(0)
    tangents = tree_util.tree_map(lambda x: _random_like(rng, x), args)
    out, tangent_out = f_jvp(args, tangents)
    prefix = f"{err_msg} " if err_msg else ""
    _check_close(out, f(*args), atol, rtol, f"{prefix}primal")
    expected = numerical_jvp(f, args, tangents, eps=eps)
    _check_close(tangent_out, expected, atol, rtol, f"{prefix}tangent")


def check_vjp(f: Callable[..., Any], f_vjp: Callable[..., Any], args: tuple,
              atol: float | None = None, rtol: float | None = None, eps: float = EPS,
              err_msg: str = "") -> None:
    """``f_vjp(*args)`` (e.g. ``partial(jax.vjp, f)``) must give ``f(*args)`` and a function
    that is the transpose of the JVP: ``<t, vjp(c)> = <jvp(t), c>`` for random ``t`` and
    ``c``, with the JVP by central differences."""
    rng = np.random.RandomState(0)
    out, vjp_fun = f_vjp(*args)
    prefix = f"{err_msg} " if err_msg else ""
    _check_close(out, f(*args), atol, rtol, f"{prefix}primal")
    tangents = tree_util.tree_map(lambda x: _random_like(rng, x), args)
    tangent_out = numerical_jvp(f, args, tangents, eps=eps)
    cotangent = tree_util.tree_map(lambda x: _random_like(rng, x), out)
    conj = lambda tree: tree_util.tree_map(lambda x: np.conj(np.asarray(x)), tree)  # noqa: E731
    cotangent_in = conj(vjp_fun(conj(cotangent)))
    _check_close(_inner_product(tangents, cotangent_in),
                 _inner_product(tangent_out, cotangent), atol, rtol,
                 f"{prefix}cotangent projection")


def check_grads(f: Callable[..., Any], args: Sequence[Any], order: int,
                modes: Sequence[str] = ("fwd", "rev"), atol: float | None = None,
                rtol: float | None = None, eps: float | None = None) -> None:
    """Check the derivatives of ``f`` at ``args`` up to ``order``, as JAX's does.

    ``"fwd"`` checks ``jvp`` against central differences, ``"rev"`` checks that ``vjp`` is
    its transpose; for ``order > 1`` the same checks are applied to the function
    ``(args, tangents) -> jvp(f, args, tangents)`` and to ``args -> vjp_f(f(args))``.
    Tolerances default by dtype (``float32``: 2e-3, ``float64``: 1e-5). A failure is an
    AssertionError naming the chain of modes and the order, e.g.
    ``"JVP of VJP (derivative order 2) tangent"``, with the numbers.
    """
    from minijax import autodiff  # test_util is imported by minijax itself: import late

    args = tuple(args)
    eps = eps or EPS

    def check(f: Callable[..., Any], args: tuple, order: int, context: str, depth: int
              ) -> None:
        of = f" of {context}" if context else ""
        if "fwd" in modes:
            name = f"JVP{of}"
            check_jvp(f, lambda a, t: autodiff.jvp(f, a, t), args, atol, rtol, eps,
                      f"{name} (derivative order {depth})")
            if order > 1:
                check(lambda a, t: autodiff.jvp(f, a, t), (args, args), order - 1, name,
                      depth + 1)
        if "rev" in modes:
            name = f"VJP{of}"
            check_vjp(f, lambda *a: autodiff.vjp(f, *a), args, atol, rtol, eps,
                      f"{name} (derivative order {depth})")
            if order > 1:
                def f_vjp(*a: Any) -> Any:
                    out, vjp_fun = autodiff.vjp(f, *a)
                    return vjp_fun(out)

                check(f_vjp, args, order - 1, name, depth + 1)

    check(f, args, order, "", 1)
