"""Checks for chapter 04, forward-mode automatic differentiation.

Every check feeds the learner's code minijax arrays (or Python floats where the exercise is
about plain numbers). Expected values are derivatives written out by hand as NumPy formulas
in float64, never taken from the solution notebook; where an exercise rebuilds part of
minijax (``jacfwd``), minijax's own function is a second reference.

The exercises are about *forward* mode, so while a learner's function runs, the
transformations that would do the exercise for it (``jax.jacfwd`` where the point is to build
it, and reverse mode, ``jax.grad`` and friends, everywhere) are replaced by stubs that raise
``grader.checks.ForbiddenTransformation`` with a message naming what to use instead.
Functions handed to the learner's code are ``grader.checks.Shown``: they show as readable
text in messages and count their calls, so a check can tell "one forward pass" from "one
pass per input".
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

import minijax
import minijax.numpy as jnp
from grader.checks import (
    CheckFailed,
    Returned,
    Shown,
    call,
    exercise,
    expect_calls,
    expect_close,
    expect_dtype,
    forbidding,
    learner_function,
    part,
    probe,
    show,
)
from minijax import lax

REVERSE_MODE = ("grad", "value_and_grad", "vjp", "jacrev", "hessian", "linearize")


def expect_pair(got: Returned, hint: str) -> tuple[Returned, Returned]:
    """The two parts of a returned ``(primal_out, tangent_out)`` pair, as results to check."""
    value = got.value
    if not (isinstance(value, (tuple, list)) and len(value) == 2):
        raise CheckFailed(f"{got.call} returned {value!r}; expected a pair "
                          f"(primal_out, tangent_out) -- hint: {hint}")
    return (Returned(f"the primal output of {got.call}", value[0]),
            Returned(f"the tangent output of {got.call}", value[1]))


def f64(x: Any) -> np.ndarray:
    return np.asarray(x, dtype=np.float64)


# ---------------------------------------------------------------------------------------
# 1. JVP rules for tanh, log and div
# ---------------------------------------------------------------------------------------


RULE_HINTS = {
    "tanh_jvp": "d tanh(x) = (1 - tanh(x)**2) dx: reuse the output y = jnp.tanh(x)",
    "log_jvp": "d log(x) = dx / x",
    "div_jvp": "the quotient rule: d(x / y) = dx / y - x dy / y**2",
}


def _check_rule(ns: Any, name: str, args: tuple, value: np.ndarray, tangent: np.ndarray,
                reference: tuple) -> None:
    """Rule ``name`` is one part of the exercise: a wrong rule costs its own points only."""
    hint = RULE_HINTS[name]
    instead = "write the derivative formula with jnp (or lax) functions"
    with part(name):
        with forbidding(minijax, "jvp", "jacfwd", *REVERSE_MODE, instead=instead):
            got = call(ns, name, *args)
        primal_out, tangent_out = expect_pair(got, hint)
        expect_close(primal_out, value, rtol=1e-5,
                     hint="the primal output is the function's value")
        expect_close(tangent_out, tangent, rtol=1e-5, atol=1e-6, hint=hint)
        expect_dtype(tangent_out, np.float32,
                     hint="float32 in, float32 out: use jnp functions, not float64 NumPy")
        expect_close(tangent_out, reference[1], rtol=1e-5, atol=1e-6,
                     hint=f"{hint}; minijax.jvp gives this tangent")


@exercise("jvp_rules", points=2, remote=True,
          parts={"tanh_jvp": 0.5, "log_jvp": 0.5, "div_jvp": 1})
def check_jvp_rules(ns):
    x = np.array([-2.0, -0.5, 0.0, 0.3, 1.5], np.float32)
    t = np.array([1.0, 2.0, -1.0, 0.5, 3.0], np.float32)
    xa, ta = jnp.asarray(x), jnp.asarray(t)
    reference = minijax.jvp(jnp.tanh, (xa,), (ta,))
    y = np.tanh(f64(x))
    _check_rule(ns, "tanh_jvp", (xa, ta), y, (1 - y**2) * f64(t), reference)

    x = np.array([0.25, 1.0, 2.0, 10.0], np.float32)
    t = np.array([1.0, -1.0, 0.5, 2.0], np.float32)
    xa, ta = jnp.asarray(x), jnp.asarray(t)
    reference = minijax.jvp(jnp.log, (xa,), (ta,))
    _check_rule(ns, "log_jvp", (xa, ta), np.log(f64(x)), f64(t) / f64(x), reference)

    x = np.array([1.0, -2.0, 3.0, 0.5], np.float32)
    y = np.array([2.0, 4.0, -1.5, 0.25], np.float32)
    tx = np.array([1.0, 0.0, 2.0, -1.0], np.float32)
    ty = np.array([0.0, 1.0, 1.0, 0.5], np.float32)
    args = tuple(jnp.asarray(a) for a in (x, y, tx, ty))
    reference = minijax.jvp(jnp.divide, args[:2], args[2:])
    x, y, tx, ty = map(f64, (x, y, tx, ty))
    _check_rule(ns, "div_jvp", args, x / y, tx / y - x * ty / y**2, reference)


# ---------------------------------------------------------------------------------------
# 2. Dual numbers of second order
# ---------------------------------------------------------------------------------------


_PARTS = ("value", "d1", "d2")


def _dual2_parts(ns: Any, text: str, fun: Callable[[Any], Any], seed: tuple,
                 hint: str = "Dual2 needs __add__, __radd__, __mul__, __rmul__, sin() and exp()"
                 ) -> tuple[Returned, Returned, Returned]:
    """The parts of ``fun(Dual2(*seed))``, computed where the learner's class lives, with errors
    in the class turned into messages."""
    shown = f"({text})(Dual2{seed!r})"
    learner_function(ns, "Dual2")
    got = probe(ns, "attributes_of_result", "Dual2", list(seed), Shown(text, fun), list(_PARTS))
    if got.get("stage") == "construct":
        raise CheckFailed(f"Dual2({', '.join(show(piece) for piece in seed)}) raised "
                          f"{got['raised']}")
    if "raised" in got:
        raise CheckFailed(f"{shown} raised {got['raised']} -- hint: {hint}")
    if got["missing"]:
        raise CheckFailed(f"{shown} gave {got['value']!r}, which has no attribute "
                          f"{', '.join(got['missing'])} -- hint: results of Dual2 arithmetic "
                          "must be Dual2 objects with .value, .d1 and .d2")
    return tuple(Returned(f"{shown}.{a}", piece) for a, piece in zip(_PARTS, got["parts"]))


@exercise("Dual2", points=3, remote=True)
def check_dual2(ns):
    product_rule = "second order product rule: (uv)'' = u'' v + 2 u' v' + u v''"
    chain_rule = ("second order chain rule: (f(u))'' = f''(u) u'**2 + f'(u) u''; "
                  "for sin, f'' = -sin; for exp, f'' = exp")
    cases = [
        # text, function of a Dual2, seed (value, d1, d2), expected (value, d1, d2), hint
        ("lambda x: x * x * x + 2 * x", lambda x: x * x * x + 2 * x, (1.5, 1.0, 0.0),
         (1.5**3 + 3.0, 3 * 1.5**2 + 2, 6 * 1.5), product_rule),
        ("lambda x: 3 * x + 1", lambda x: 3 * x + 1, (2.0, 1.0, 0.0), (7.0, 3.0, 0.0),
         "a number on the left needs __radd__ and __rmul__; a constant has d1 = d2 = 0"),
        ("lambda x: 1 + x * 2", lambda x: 1 + x * 2, (2.0, 1.0, 0.0), (5.0, 2.0, 0.0),
         "a number on the right of * or + is a constant: d1 = d2 = 0"),
        ("lambda x: x * x", lambda x: x * x, (3.0, 2.0, 0.0), (9.0, 12.0, 8.0),
         "d1 and d2 scale with the seed: with x = 3 + 2s, x*x = 9 + 12 s + 4 s**2"),
        ("lambda x: x.sin()", lambda x: x.sin(), (0.5, 1.0, 0.0),
         (np.sin(0.5), np.cos(0.5), -np.sin(0.5)), chain_rule),
        ("lambda x: x.sin()", lambda x: x.sin(), (0.5, 2.0, 3.0),
         (np.sin(0.5), 2 * np.cos(0.5), -np.sin(0.5) * 4 + np.cos(0.5) * 3), chain_rule),
        ("lambda x: x.exp()", lambda x: x.exp(), (0.3, 1.0, 0.5),
         (np.exp(0.3), np.exp(0.3), np.exp(0.3) * 1.5), chain_rule),
    ]
    u = 0.7  # exp(sin(x * x)) at x = 0.7
    s, c = np.sin(u * u), np.cos(u * u)
    cases.append(("lambda x: (x * x).sin().exp()", lambda x: (x * x).sin().exp(),
                  (u, 1.0, 0.0),
                  (np.exp(s), np.exp(s) * c * 2 * u,
                   np.exp(s) * ((2 * u * c) ** 2 - s * (2 * u) ** 2 + 2 * c)),
                  f"{chain_rule}; {product_rule}"))
    for text, fun, seed, expected, hint in cases:
        for piece, want in zip(_dual2_parts(ns, text, fun, seed), expected):
            expect_close(piece, want, rtol=1e-5, atol=1e-6, hint=hint)

    xs = jnp.array([0.0, 0.5, 1.0])
    arrays = "values may be minijax arrays: use jnp.sin, jnp.cos and jnp.exp, not math"
    parts = _dual2_parts(ns, "lambda x: x.sin() * x", lambda x: x.sin() * x, (xs, 1.0, 0.0),
                         hint=arrays)
    x = f64(xs)
    want = (np.sin(x) * x, np.cos(x) * x + np.sin(x), -np.sin(x) * x + 2 * np.cos(x))
    for piece, value in zip(parts, want):
        expect_close(piece, value, rtol=1e-5, atol=1e-6, hint=arrays)


# ---------------------------------------------------------------------------------------
# 3. Directional derivative
# ---------------------------------------------------------------------------------------


@exercise("directional_derivative", points=1, remote=True)
def check_directional_derivative(ns):
    hint = "one jax.jvp(f, (x,), (v / jnp.linalg.norm(v),)) gives the derivative along v"
    cases = [
        ("lambda x: jnp.sum(x ** 2)", lambda x: jnp.sum(x**2), [1.0, 2.0, 3.0], [1.0, 1.0, 1.0],
         12 / np.sqrt(3)),
        ("lambda x: x[0] * jnp.sin(x[1])", lambda x: x[0] * jnp.sin(x[1]), [1.0, 0.5],
         [3.0, 4.0], (3 * np.sin(0.5) + 4 * np.cos(0.5)) / 5),
        ("lambda x: jnp.exp(x[0] - x[1])", lambda x: jnp.exp(x[0] - x[1]), [0.5, 0.5],
         [-2.0, 2.0], -2 / np.sqrt(2)),
    ]
    for text, fun, x, v, expected in cases:
        f = Shown(text, fun)
        with forbidding(minijax, "jacfwd", *REVERSE_MODE, instead="use jax.jvp"):
            got = call(ns, "directional_derivative", f, jnp.array(x), jnp.array(v))
        expect_close(got, expected, rtol=1e-5,
                     hint=f"{hint}; the direction is the unit vector v / |v|")
        expect_calls(got, f, 1, "one forward pass, with the direction as the tangent")


# ---------------------------------------------------------------------------------------
# 4. jacfwd from jvp
# ---------------------------------------------------------------------------------------


@exercise("jacfwd_from_jvp", points=2, remote=True)
def check_jacfwd_from_jvp(ns):
    hint = ("column j of the Jacobian is jax.jvp(f, (x,), (e_j,))[1], e_j the j-th row of "
            "jnp.eye(n); stack the columns along a new last axis (jnp.stack(..., axis=-1))")
    x3 = np.array([1.0, 2.0, 3.0])
    x4 = np.array([0.5, -1.0, 2.0, 0.25])
    cases = [
        ("lambda x: jnp.stack([x[0] * x[1] + x[2], x[0] ** 2 * x[2]])",
         lambda x: jnp.stack([x[0] * x[1] + x[2], x[0] ** 2 * x[2]]), x3,
         np.array([[x3[1], x3[0], 1.0], [2 * x3[0] * x3[2], 0.0, x3[0] ** 2]])),
        ("lambda x: jnp.sin(x) * x[0]", lambda x: jnp.sin(x) * x[0], x4,
         np.diag(np.cos(x4) * x4[0]) + np.outer(np.sin(x4), np.eye(4)[0])),
        ("lambda x: jnp.sum(jnp.exp(x))  # a scalar output", lambda x: jnp.sum(jnp.exp(x)), x4,
         np.exp(x4)),
        ("lambda x: jnp.outer(x, x)  # a matrix output", lambda x: jnp.outer(x, x), x3,
         np.einsum("ik,j->ijk", np.eye(3), x3) + np.einsum("i,jk->ijk", x3, np.eye(3))),
    ]
    for text, fun, x, expected in cases:
        f = Shown(text, fun)
        xa = jnp.asarray(x, jnp.float32)
        reference = minijax.jacfwd(fun)(xa)
        with forbidding(minijax, "jacfwd", *REVERSE_MODE,
                        instead="build the Jacobian from jax.jvp"):
            got = call(ns, "jacfwd_from_jvp", f, xa)
        shape = "output.shape + (n,)"
        expect_close(got, expected, rtol=1e-5, atol=1e-6, hint=f"{hint}; the shape is {shape}")
        expect_close(got, reference, rtol=1e-5, atol=1e-6,
                     hint="minijax.jacfwd gives this Jacobian")
        expect_calls(got, f, len(x), "one jvp, so one call of f, per input")


# ---------------------------------------------------------------------------------------
# 5. Newton's method with jvp
# ---------------------------------------------------------------------------------------


@exercise("newton_root", points=2, remote=True)
def check_newton_root(ns):
    hint = ("each step: value, slope = jax.jvp(f, (x,), (jnp.ones_like(x),)); "
            "x = x - value / slope")
    roots = jnp.array([2.0, 3.0, 5.0])
    cases = [
        # Wallis's cubic, whose root Newton computed himself
        ("lambda x: x ** 3 - 2 * x - 5", lambda x: x**3 - 2 * x - 5, 2.0, 5,
         2.0945514815423265),
        ("lambda x: jnp.cos(x) - x", lambda x: jnp.cos(x) - x, 1.0, 5, 0.7390851332151607),
        ("lambda x: x * x - jnp.array([2.0, 3.0, 5.0])  # elementwise: three roots at once",
         lambda x: x * x - roots, jnp.ones(3), 6, np.sqrt([2.0, 3.0, 5.0])),
    ]
    for text, fun, x0, steps, root in cases:
        f = Shown(text, fun)
        with forbidding(minijax, "jacfwd", *REVERSE_MODE, instead="use jax.jvp"):
            got = call(ns, "newton_root", f, x0, steps)
        expect_close(got, root, rtol=2e-6, hint=hint)
        expect_calls(got, f, steps, "jax.jvp returns f(x) together with the derivative: one "
                                    "call of f per step")

    f = Shown("lambda x: x ** 3 - 2 * x - 5", lambda x: x**3 - 2 * x - 5)
    got = call(ns, "newton_root", f, 2.0, 1)
    expect_close(got, 2.1, rtol=1e-6, hint=f"one step from 2: 2 - f(2) / f'(2) = 2 - (-1) / 10; "
                                           f"{hint}")


# ---------------------------------------------------------------------------------------
# 6. Forward-mode Hessian-vector product
# ---------------------------------------------------------------------------------------


_CUBE_BY_WHILE = """def sum_of_cubes_by_while_loop(x):
    def body(carry):
        k, y = carry
        return k + 1, y * x

    _, cube = lax.while_loop(lambda carry: carry[0] < 3, body, (0, jnp.ones_like(x)))
    return jnp.sum(cube)
"""


def _cube_by_while(x: Any) -> Any:
    """sum(x**3), with the cube computed by a while_loop (which reverse mode refuses)."""
    def body(carry: Any) -> Any:
        k, y = carry
        return k + 1, y * x

    _, cube = lax.while_loop(lambda carry: carry[0] < 3, body, (0, jnp.ones_like(x)))
    return jnp.sum(cube)


@exercise("hvp_forward", points=2, remote=True)
def check_hvp_forward(ns):
    hint = ("the gradient by forward mode is jax.jacfwd(f); its derivative along v is "
            "jax.jvp(jax.jacfwd(f), (x,), (v,))[1]")
    x = np.array([1.0, -2.0, 0.5])
    v = np.array([0.5, 1.0, -2.0])
    cases = [
        ("lambda x: jnp.sum(x ** 4) / 4", lambda x: jnp.sum(x**4) / 4, 3 * x**2 * v),
        ("lambda x: jnp.dot(x, x) ** 2", lambda x: jnp.dot(x, x) ** 2,
         4 * np.dot(x, x) * v + 8 * x * np.dot(x, v)),
        ("sum_of_cubes_by_while_loop", _cube_by_while, 6 * x * v, _CUBE_BY_WHILE),
    ]
    instead = ("forward mode only (one test function has a while_loop, which reverse mode "
               "cannot differentiate): compute the gradient with jax.jacfwd")
    for text, fun, expected, *source in cases:
        f = Shown(text, fun, *source)
        with forbidding(minijax, *REVERSE_MODE, instead=instead):
            got = call(ns, "hvp_forward", f, jnp.asarray(x, jnp.float32),
                       jnp.asarray(v, jnp.float32))
        expect_close(got, expected, rtol=1e-5, atol=1e-5, hint=hint)
        expect_calls(got, f, len(x), "do not build the whole Hessian (n * n calls): one jvp "
                                     "of the forward-mode gradient (jacfwd vmaps, as in JAX) "
                                     "calls f at most once per input", at_most=True)
