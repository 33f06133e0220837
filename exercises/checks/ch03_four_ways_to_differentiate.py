"""Checks for chapter 03, four ways to differentiate.

Expected derivatives are written out as formulas here (derived by hand and confirmed with
SymPy), never taken from the solution notebook. Functions handed to the learner's code are
``grader.checks.Shown`` objects: they show as readable source in messages and count their
calls, so a check can tell "a central difference with a good step" (two calls, ~1e-11
relative error) from "a central difference with a poor step" (two calls, 1e-7) or
"something else" (more calls).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import sympy as sp

from grader.checks import (
    CheckFailed,
    Returned,
    Shown,
    brief,
    call,
    call_described,
    exercise,
    expect_calls,
    expect_close,
    expect_equal,
    learner_function,
    probe,
    reported,
    show,
)
from grader.plain import FunctionSource


def expect_accurate(got: Returned, expected: Any, *, rtol: float, hint: str) -> None:
    """Like ``expect_close``, but the message shows 15 digits and the relative error: the
    exercises here are about the 8th to 15th digit, which a 4-digit message would hide."""
    want = np.asarray(expected, dtype=float)
    try:
        actual = np.asarray(got.value, dtype=float)
    except (TypeError, ValueError):
        actual = None
    if actual is None or actual.shape != want.shape:
        expect_close(got, want, rtol=rtol, hint=hint)  # explains the type or shape
        return
    error = np.abs(actual - want) / np.maximum(np.abs(want), 1e-300)
    error = np.where(np.isnan(error), np.inf, error)
    worst = int(np.argmax(error))
    if error.flat[worst] > rtol:
        at = "" if want.ndim == 0 else f" at index {worst}"
        raise CheckFailed(
            f"{got.call} returned {actual.flat[worst]:.15g}{at}; expected "
            f"{want.flat[worst]:.15g}, a relative error of {error.flat[worst]:.1e} (more than "
            f"{rtol:g}) -- hint: {hint}"
        )


@exercise("dh", points=1, remote=True)
def check_dh(ns):
    def dh(x):  # h(x) = log(1 + x**2) * cos(2 x), by the product and chain rules
        return 2 * x / (1 + x**2) * np.cos(2 * x) - 2 * np.log(1 + x**2) * np.sin(2 * x)

    hint = ("product rule: (u v)' = u' v + u v' with u = log(1 + x**2), v = cos(2 x); "
            "chain rule: u' = 2x / (1 + x**2), v' = -2 sin(2 x)")
    expect_accurate(call(ns, "dh", 0.7), dh(0.7), rtol=1e-12, hint=hint)
    xs = np.array([-2.0, -0.5, 0.0, 0.3, 1.7, 4.0])
    expect_accurate(call(ns, "dh", xs), dh(xs), rtol=1e-12,
                    hint=hint + "; use numpy functions so that arrays work too")


def _built(value: Any) -> FunctionSource:
    """A SymPy expression (or list of them) as the source that builds it in the learner's
    process: SymPy objects are not plain data."""
    symbols = ", ".join(f"'{name}': sp.Symbol('{name}', real=True)" for name in "xyz")
    return FunctionSource(f"(lambda sp: sp.sympify({str(value)!r}, locals={{{symbols}}}))"
                          "(__import__('sympy'))")


@exercise("sympy_gradient", points=2, remote=True)
def check_sympy_gradient(ns):
    x, y, z = sp.symbols("x y z", real=True)
    cases = [
        (x**2 * y + sp.sin(x * y), [x, y],
         lambda x, y: [2 * x * y + y * np.cos(x * y), x**2 + x * np.cos(x * y)],
         [(1.0, 2.0), (-0.5, 3.0)]),
        (sp.exp(x) * sp.log(y) + z**3 / y, [x, y, z],
         lambda x, y, z: [np.exp(x) * np.log(y), np.exp(x) / y - z**3 / y**2, 3 * z**2 / y],
         [(0.5, 2.0, 1.5)]),
        (x**4, [x], lambda x: [4 * x**3], [(1.5,)]),
    ]
    hint = ("return sp.lambdify(variables, [sp.diff(expr, v) for v in variables], 'numpy') "
            "wrapped so that it returns np.array(..., dtype=float)")
    for expr, variables, gradient, points in cases:
        shown = f"sympy_gradient({expr}, {variables})"
        learner_function(ns, "sympy_gradient")
        made = call_described(
            lambda *a: probe(ns, "call_made", "sympy_gradient", *a),
            f"sympy_gradient({show(expr)}, {show(variables)})",
            [_built(expr), _built(variables)], [list(point) for point in points]).value
        if "made" in made:
            raise CheckFailed(f"{shown}: {brief(made['made'])} is not a function")
        for point, outcome in zip(points, made["calls"]):
            got = reported(f"{shown}({', '.join(show(x) for x in point)})", outcome)
            expect_accurate(got, gradient(*point), rtol=1e-12, hint=hint)


@exercise("central_difference_best", points=2, remote=True)
def check_central_difference_best(ns):
    cases = [
        ("np.exp", np.exp, 1.0, np.e),
        ("np.sin", np.sin, 0.5, np.cos(0.5)),
        ("lambda x: x**3", lambda x: x**3, 2.0, 12.0),
        ("np.exp", np.exp, -3.0, np.exp(-3.0)),
        ("np.log", np.log, 1000.0, 1e-3),
        ("np.sqrt", np.sqrt, 1e4, 0.005),
    ]
    for text, fun, x, derivative in cases:
        probe = Shown(text, fun)
        got = call(ns, "central_difference_best", probe, x)
        expect_calls(got, probe, 2, "evaluate f(x + h) and f(x - h), once each")
        expect_accurate(got, derivative, rtol=3e-10, hint=(
            "with h = eps**(1/3) * max(1, abs(x)), eps = np.finfo(float).eps, the error is "
            "near its minimum; a smaller h suffers rounding error, a larger one truncation "
            "error, and a step that ignores the scale of x fails for large x"))


@exercise("complex_step_derivative", points=1, remote=True)
def check_complex_step_derivative(ns):
    def f(z):
        return np.exp(z) * np.sin(z) / (1 + z**2)

    def df(x):
        return np.exp(x) * ((np.sin(x) + np.cos(x)) * (1 + x**2) - 2 * x * np.sin(x)) \
            / (1 + x**2) ** 2

    hint = ("evaluate f once at x + 1j * h with h = 1e-20 and divide the imaginary part "
            "by h: no subtraction, so no rounding error")
    for x in (0.5, -2.0, 3.0):
        probe = Shown("lambda z: np.exp(z) * np.sin(z) / (1 + z**2)", f)
        got = call(ns, "complex_step_derivative", probe, x)
        expect_calls(got, probe, 1, hint)
        expect_accurate(got, df(x), rtol=1e-14, hint=hint)
    xs = np.array([0.1, 1.0, 2.5])
    probe = Shown("np.tanh", np.tanh)
    got = call(ns, "complex_step_derivative", probe, xs)
    expect_accurate(got, 1 / np.cosh(xs) ** 2, rtol=1e-14,
                    hint=hint + "; it works on arrays too")


@exercise("richardson", points=2, remote=True)
def check_richardson(ns):
    def central(f, x, h):
        return (f(x + h) - f(x - h)) / (2 * h)

    hint = ("with D(h) = (f(x + h) - f(x - h)) / (2 h), Richardson's combination is "
            "(4 D(h/2) - D(h)) / 3: the h**2 error terms cancel")
    for text, fun, x, h in [("np.exp", np.exp, 0.0, 0.1), ("np.sin", np.sin, 1.0, 0.2),
                            ("lambda x: x**5", lambda x: x**5, 1.5, 0.05)]:
        expected = (4 * central(fun, x, h / 2) - central(fun, x, h)) / 3
        expect_accurate(call(ns, "richardson", Shown(text, fun), x, h), expected, rtol=1e-12,
                        hint=hint)
    # fourth order: halving h divides the error by about 2**4 = 16
    errors = [abs(float(call(ns, "richardson", Shown("np.exp", np.exp), 0.0, h).value) - 1.0)
              for h in (0.2, 0.1)]
    if not 12 < errors[0] / errors[1] < 20:
        raise CheckFailed(
            f"richardson(np.exp, 0.0, h) has errors {errors[0]:.2e} (h=0.2) and {errors[1]:.2e} "
            f"(h=0.1): halving h should divide the error by about 16 -- hint: {hint}")


def _vanishing_step(x: float) -> float:
    """The largest power of two h with float32(x) + float32(h) == float32(x), by search."""
    x32, k = np.float32(x), 0
    while x32 + np.float32(2.0**-k) != x32:
        k += 1
    return 2.0**-k


@exercise("float32_vanishing_step", points=2, remote=True)
def check_float32_vanishing_step(ns):
    hint = ("h must be below half the spacing of float32 numbers at x (np.spacing(np.float32(x))); "
            "at exactly half, round-half-to-even decides: it keeps x if x's last mantissa bit "
            "is 0 (compare np.float32(x) + np.float32(h) == np.float32(x) directly)")
    for x in (1.0, 3.0, 1000.0, 0.1, 1.0 + 2.0**-23, 0.75):
        got, want = call(ns, "float32_vanishing_step", x), _vanishing_step(x)
        if got.value is None or np.ndim(got.value) != 0:
            expect_equal(got, want, hint=hint)  # explains a None or an array
        if got.value != want:
            raise CheckFailed(
                f"{got.call} returned {_as_power_of_two(got.value)}; expected "
                f"{_as_power_of_two(want)} -- hint: {hint}")


def _as_power_of_two(value: Any) -> str:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return repr(value)
    if number > 0 and float(np.log2(number)).is_integer():
        return f"2**{int(np.log2(number))} = {number:.6g}"
    return repr(value)
