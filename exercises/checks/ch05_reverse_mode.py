"""Checks for chapter 05, reverse mode.

Expected values are derivatives worked out by hand and evaluated in float64 NumPy (or, for
``difference_transpose``, also minijax's own ``jax.vjp``, which the test suite checks against
JAX), never taken from the solution notebook. Functions handed to the learner's code are
:class:`Shown` objects: they print as readable source in messages and count their calls, so a
check can tell "one linearization" (one call) from "one evaluation per direction" (many).
"""

from __future__ import annotations

from typing import Any

import numpy as np

import minijax as jax
import minijax.numpy as jnp
from grader.checks import (
    CheckFailed,
    Returned,
    Shown,
    brief,
    call,
    call_transformed,
    exercise,
    expect_calls,
    expect_close,
    forbidding,
    probe,
    show,
)
from minijax import lax


def expect_float32_array(got: Returned, shape: tuple[int, ...], hint: str) -> None:
    value = got.value
    if not isinstance(value, jax.Array):
        raise CheckFailed(f"{got.call} returned a {type(value).__name__}; expected a jax.Array "
                          f"-- hint: {hint}")
    if value.shape != shape or value.dtype != np.float32:
        raise CheckFailed(f"{got.call} returned {value.dtype.name}{list(value.shape)}; expected "
                          f"float32{list(shape)} -- hint: {hint}")


# ---------------------------------------------------------------------------------------
# Exercise 1: the backward pass of a tape
# ---------------------------------------------------------------------------------------


@exercise("tape_gradient", points=2, remote=True)
def check_tape_gradient(ns):
    for needed in ("Tape", "sin", "exp", "log", "value_of"):
        if needed not in ns:
            raise CheckFailed(f"{needed} is not defined: run the cell with the tape toy first")
    sin, exp, log, value_of = ns["sin"], ns["exp"], ns["log"], ns["value_of"]
    cases = [
        ("lambda x: x * x", lambda x: x * x, (3.0,), [6.0]),
        ("lambda x, y: sin(x) * y", lambda x, y: sin(x) * y, (0.0, 2.0), [2.0, 0.0]),
        ("lambda x, y: sin(x) * y + x / y", lambda x, y: sin(x) * y + x / y, (0.5, 2.0),
         [np.cos(0.5) * 2 + 1 / 2, np.sin(0.5) - 0.5 / 4]),
        ("lambda x: x * x * x * x", lambda x: x * x * x * x, (1.5,), [4 * 1.5**3]),
        ("lambda x: exp(x) ** 2 - 3 * x", lambda x: exp(x) ** 2 - 3 * x, (0.3,),
         [2 * np.exp(0.6) - 3]),
        ("lambda x1, x2: log(x1) + x1 * x2 - sin(x2)",
         lambda x1, x2: log(x1) + x1 * x2 - sin(x2), (2.0, 5.0), [5.5, 2 - np.cos(5.0)]),
        ("lambda x, y, z: 2.0 * z", lambda x, y, z: 2.0 * z, (1.0, 2.0, 3.0), [0.0, 0.0, 2.0]),
        ("lambda x: x * x if value_of(x) > 0 else -x",
         lambda x: x * x if value_of(x) > 0 else -x, (-2.0,), [-1.0]),
    ]
    hint = ("start with adjoint[output] = 1.0; for each node in reversed(tape.entries), add "
            "adjoint[node] * partial to adjoint[parent] for each (parent, partial) in "
            "node.parents; a node used twice gets two contributions")
    for text, fun, point, expected in cases:
        f = Shown(text, fun)
        got = call(ns, "tape_gradient", f, *point)
        expect_calls(got, f, 1, "record f once, on one tape, then replay the tape",
                     at_most=True)
        if not isinstance(got.value, (list, tuple)):
            raise CheckFailed(f"{got.call} returned {brief(got.value)}; expected a list of "
                              f"{len(expected)} floats like {expected}")
        expect_close(got, expected, rtol=1e-12, atol=1e-12, hint=hint)


# ---------------------------------------------------------------------------------------
# Exercise 2: the transpose of a linear function
# ---------------------------------------------------------------------------------------


def _difference(t: Any) -> Any:
    """The notebook's ``difference`` (given, not an exercise), as the grader's own copy."""
    n = t.shape[0]
    return lax.sub(lax.slice(t, (1,), (n,)), lax.slice(t, (0,), (n - 1,)))


def _difference_transpose_formula(c: np.ndarray) -> np.ndarray:
    """(Dᵀc)_j = c_{j-1} - c_j, with c_{-1} = c_{n-1} = 0."""
    return np.concatenate([[0.0], c]) - np.concatenate([c, [0.0]])


@exercise("difference_transpose", points=2, remote=True)
def check_difference_transpose(ns):
    if "difference" not in ns:
        raise CheckFailed("difference is not defined: run the cell that defines it first")
    difference = _difference
    hint = ("t[i] appears in output i - 1 with sign +1 and in output i with sign -1, so "
            "(D^T c)[i] = c[i-1] - c[i] (with zeros beyond the ends): pad c with a zero "
            "before, and subtract c padded with a zero after")
    rng = np.random.default_rng(5)
    for n in (2, 3, 6):
        c = jnp.asarray(rng.standard_normal(n - 1), dtype=jnp.float32)
        got = call(ns, "difference_transpose", c, hint=hint)
        expect_float32_array(got, (n,), hint)
        expect_close(got, _difference_transpose_formula(np.asarray(c, np.float64)),
                     rtol=1e-6, atol=1e-6, hint=hint)
        t = jnp.asarray(rng.standard_normal(n), dtype=jnp.float32)
        (reference,) = jax.vjp(difference, t)[1](c)
        expect_close(got, np.asarray(reference), rtol=1e-6, atol=1e-6,
                     hint="minijax's jax.vjp(difference, t)[1](c) gives the expected values")
        left = float(np.dot(np.asarray(c, np.float64), np.asarray(difference(t), np.float64)))
        right = float(np.dot(np.asarray(got.value, np.float64), np.asarray(t, np.float64)))
        if not np.isclose(left, right, rtol=1e-5, atol=1e-5):
            raise CheckFailed(f"<c, difference(t)> = {left:.6f} but <{got.call}, t> = "
                              f"{right:.6f} for t = {show(t)}; they must be equal")
    c = jnp.asarray([1.0, -2.0, 0.5], dtype=jnp.float32)
    traced = probe(ns, "trace", "difference_transpose", [c])
    if "raised" in traced:
        raise CheckFailed(
            f"jax.make_jaxpr(difference_transpose)({show(c)}) raised "
            f"{traced['raised']} -- hint: write it with lax or jnp functions only, "
            "without NumPy or a Python loop over the values")


# ---------------------------------------------------------------------------------------
# Exercise 3: jacrev from vjp
# ---------------------------------------------------------------------------------------


@exercise("jacrev_from_vjp", points=2, remote=True)
def check_jacrev_from_vjp(ns):
    a = np.array([[1.0, 2.0, 0.0], [0.0, -1.0, 3.0]], dtype=np.float32)

    def polar_jacobian(p: np.ndarray) -> np.ndarray:
        r, theta = p
        return np.array([[np.cos(theta), -r * np.sin(theta)], [np.sin(theta), r * np.cos(theta)]])

    def sin_times_sum_jacobian(x: np.ndarray) -> np.ndarray:  # f_i = sin(x_i) * sum(x)
        return np.diag(np.cos(x) * x.sum()) + np.sin(x)[:, None]

    cases = [
        (Shown("lambda x: A @ x  (A = [[1, 2, 0], [0, -1, 3]])", lambda x: jnp.asarray(a) @ x,
               "lambda x: jnp.asarray([[1.0, 2.0, 0.0], [0.0, -1.0, 3.0]], jnp.float32) @ x"),
         np.array([0.5, -1.0, 2.0]), lambda x: a),
        ("lambda p: jnp.stack([p[0] * jnp.cos(p[1]), p[0] * jnp.sin(p[1])])",
         lambda p: jnp.stack([p[0] * jnp.cos(p[1]), p[0] * jnp.sin(p[1])]),
         np.array([2.0, 0.5]), polar_jacobian),
        ("lambda x: jnp.sin(x) * jnp.sum(x)", lambda x: jnp.sin(x) * jnp.sum(x),
         np.array([0.1, 0.7, -0.4, 1.2]), sin_times_sum_jacobian),
        ("lambda x: jnp.cumsum(x)[:2]", lambda x: jnp.cumsum(x)[:2],
         np.array([1.0, 2.0, 3.0, 4.0, 5.0]), lambda x: np.tri(2, 5)),
    ]
    hint = ("y, f_vjp = jax.vjp(f, x); row i is f_vjp(e_i)[0] for the i-th row e_i of "
            "jnp.eye(m); jnp.stack the rows")
    for *shown, point, jacobian in cases:
        f = shown[0] if len(shown) == 1 else Shown(*shown)
        x = jnp.asarray(point, dtype=jnp.float32)
        with forbidding(jax, "jacrev", "jacfwd", "hessian",
                        instead="build the Jacobian from jax.vjp"):
            got = call(ns, "jacrev_from_vjp", f, x, hint=hint)
        expected = jacobian(point)
        expect_float32_array(got, expected.shape, hint)
        expect_close(got, expected, rtol=1e-5, atol=1e-6, hint=hint)
        expect_calls(got, f, 1, "one jax.vjp linearizes f once; then call its VJP function "
                     "once per output, without calling f again", at_most=True)


# ---------------------------------------------------------------------------------------
# Exercise 4: Newton's method
# ---------------------------------------------------------------------------------------


@exercise("newton_minimize", points=2, remote=True)
def check_newton_minimize(ns):
    a = np.array([[3.0, 1.0], [1.0, 2.0]])
    b = np.array([1.0, -1.0])
    quadratic = Shown("lambda x: 0.5 * x @ A @ x - b @ x  (A = [[3, 1], [1, 2]], b = [1, -1])",
                      lambda x: 0.5 * x @ jnp.asarray(a, jnp.float32) @ x
                      - jnp.asarray(b, jnp.float32) @ x,
                      "lambda x: 0.5 * x @ jnp.asarray([[3.0, 1.0], [1.0, 2.0]], jnp.float32) @ x"
                      " - jnp.asarray([1.0, -1.0], jnp.float32) @ x")
    rosenbrock = Shown("lambda p: (1 - p[0]) ** 2 + 100 * (p[1] - p[0] ** 2) ** 2",
                       lambda p: (1 - p[0]) ** 2 + 100 * (p[1] - p[0] ** 2) ** 2)
    hint = "repeat `steps` times: x = x - jnp.linalg.solve(jax.hessian(f)(x), jax.grad(f)(x))"
    start = jnp.asarray([5.0, -3.0], dtype=jnp.float32)
    got = call(ns, "newton_minimize", quadratic, start, 1, hint=hint)
    expect_close(got, np.linalg.solve(a, b), rtol=1e-5, atol=1e-5,
                 hint="on a quadratic one Newton step lands on the minimum A^-1 b; " + hint)
    got = call(ns, "newton_minimize", quadratic, start, 0, hint=hint)
    expect_close(got, [5.0, -3.0], hint="zero steps leave x0 as it is")
    start = jnp.asarray([-1.2, 1.0], dtype=jnp.float32)
    got = call(ns, "newton_minimize", rosenbrock, start, 1, hint=hint)
    # one step by hand: g = (-215.6, -88), H = [[1330, 480], [480, 200]]
    step = np.linalg.solve([[1330.0, 480.0], [480.0, 200.0]], [-215.6, -88.0])
    expect_close(got, np.array([-1.2, 1.0]) - step, rtol=1e-4, hint=hint)
    got = call(ns, "newton_minimize", rosenbrock, start, 8, hint=hint)
    expect_close(got, [1.0, 1.0], rtol=1e-4, atol=1e-4,
                 hint="Rosenbrock's minimum is (1, 1); Newton reaches it in about 5 steps")


# ---------------------------------------------------------------------------------------
# Exercise 5: a Hessian-vector product
# ---------------------------------------------------------------------------------------


@exercise("hvp", points=2, remote=True)
def check_hvp(ns):
    hint = "jax.jvp(jax.grad(f), (x,), (v,))[1]: the derivative of the gradient along v"
    rng = np.random.default_rng(0)
    n = 200
    x = rng.uniform(-1.0, 1.0, n)
    v = rng.standard_normal(n)
    cases = [
        # f(x) = sum(x**4) / 4 + sum(sin(x)): H = diag(3 x**2 - sin(x))
        ("lambda x: jnp.sum(x ** 4) / 4 + jnp.sum(jnp.sin(x))",
         lambda x: jnp.sum(x**4) / 4 + jnp.sum(jnp.sin(x)),
         lambda x, v: (3 * x**2 - np.sin(x)) * v),
        # f(x) = (sum(x**2))**2: grad = 4 s x with s = sum(x**2); H = 4 s I + 8 x x^T
        ("lambda x: jnp.sum(x ** 2) ** 2", lambda x: jnp.sum(x**2) ** 2,
         lambda x, v: 4 * np.sum(x**2) * v + 8 * x * np.dot(x, v)),
        # f(x) = sum(x[:-1] * x[1:]): H has ones beside the diagonal
        ("lambda x: jnp.sum(x[:-1] * x[1:])", lambda x: jnp.sum(x[:-1] * x[1:]),
         lambda x, v: np.concatenate([v[1:], [0.0]]) + np.concatenate([[0.0], v[:-1]])),
    ]
    for text, fun, expected in cases:
        f = Shown(text, fun)
        got = call(ns, "hvp", f, jnp.asarray(x, jnp.float32), jnp.asarray(v, jnp.float32),
                         hint=hint)
        expect_close(got, expected(x, v), rtol=1e-4, atol=1e-4, hint=hint)
        expect_calls(got, f, 2, "the JVP of jax.grad(f) traces f once; a full Hessian "
                     f"(jax.hessian) would evaluate f {n} times", at_most=True)


# ---------------------------------------------------------------------------------------
# Exercise 6: a numerically stable softplus with custom_vjp
# ---------------------------------------------------------------------------------------


@exercise("softplus", points=2, remote=True)
def check_softplus(ns):
    xs = np.array([-100.0, -20.0, -1.0, 0.0, 0.5, 1.0, 20.0, 100.0], dtype=np.float32)
    x64 = xs.astype(np.float64)
    value = np.logaddexp(0.0, x64)  # log(1 + e^x), computed safely in float64
    sigmoid = 1 / (1 + np.exp(-x64))
    hint = ("the value: jnp.maximum(x, 0.0) + jnp.log1p(jnp.exp(-jnp.abs(x))); fwd returns "
            "(softplus(x), x); bwd(x, cotangent) returns (cotangent * lax.logistic(x),)")
    got = call(ns, "softplus", jnp.asarray(xs), hint=hint)
    expect_float32_array(got, xs.shape, hint)
    expect_close(got, value, rtol=2e-6, atol=1e-30, hint=hint)
    if not probe(ns, "is_instance", "softplus", "minijax", "custom_vjp"):
        raise CheckFailed(f"softplus is a {probe(ns, 'type_name', 'softplus')}; expected a "
                          "jax.custom_vjp "
                          "-- hint: decorate it with @jax.custom_vjp and call "
                          "softplus.defvjp(softplus_fwd, softplus_bwd)")
    for x, expected in zip(xs, sigmoid):
        got = call_transformed(ns, "jax.grad", "softplus", jnp.float32(x))
        expect_close(got, expected, rtol=2e-6, atol=1e-30, hint=hint)
    got = call_transformed(ns, "lambda softplus: jax.grad(lambda x: jnp.sum(softplus(x)))",
                           "softplus", jnp.asarray(xs),
                           shown="jax.grad(lambda x: jnp.sum(softplus(x)))")
    expect_close(got, sigmoid, rtol=2e-6, atol=1e-30,
                 hint="it must work elementwise on arrays; " + hint)
