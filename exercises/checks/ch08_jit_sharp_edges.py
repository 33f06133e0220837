"""Checks for chapter 08, JIT's sharp edges.

Every check runs the learner's code under ``jax.jit``, because that is where the sharp edges
cut: a function that works eagerly may still read global state, branch on a traced value or
retrace on every call. The learner's function is wrapped in a :class:`Counted` before it is
jitted, so that the check can tell how many times its Python code ran, that is, how many
traces there were. Expected values come from NumPy formulas (in float64, or in float32 where
the exercise is about float32 arithmetic), never from the solution notebook.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

import minijax as jax
import minijax.numpy as jnp
from grader.checks import (
    CheckFailed,
    Returned,
    brief,
    call,
    call_returned,
    describe_exception,
    exercise,
    expect_close,
    learner_function,
)


class Counted:
    """A learner's function that counts how often its Python code runs (under ``jit``: how
    often it is traced). ``functools.update_wrapper`` keeps its signature, so that
    ``static_argnames`` still resolve."""

    def __init__(self, fun: Callable[..., Any]) -> None:
        functools.update_wrapper(self, fun)
        self.fun, self.calls = fun, 0

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.calls += 1
        return self.fun(*args, **kwargs)


def expect_pair(got: Returned, hint: str) -> tuple[Any, Any]:
    if not isinstance(got.value, (tuple, list)) or len(got.value) != 2:
        raise CheckFailed(f"{got.call} returned {brief(got.value)}; expected a pair -- "
                          f"hint: {hint}")
    return tuple(got.value)


def expect_traces(fun: Counted, expected: int, what: str, hint: str) -> None:
    if fun.calls != expected:
        times = "once" if expected == 1 else f"{expected} times"
        raise CheckFailed(f"the Python code of {fun.__name__} ran {fun.calls} times for {what}; "
                          f"expected {times} (one trace per signature) -- hint: {hint}")


def primitive_names(closed_jaxpr: Any) -> set[str]:
    """The primitives of a jaxpr and of every jaxpr nested in its equations' parameters."""
    names: set[str] = set()

    def visit(jaxpr: Any) -> None:
        for eqn in jaxpr.eqns:
            names.add(str(eqn.primitive))
            for param in eqn.params.values():
                for inner in param if isinstance(param, (tuple, list)) else (param,):
                    if hasattr(inner, "jaxpr") and hasattr(inner.jaxpr, "eqns"):
                        visit(inner.jaxpr)
                    elif hasattr(inner, "eqns"):
                        visit(inner)

    visit(closed_jaxpr.jaxpr)
    return names


# ---------------------------------------------------------------------------------------
# Exercise 1: a counter as explicit state
# ---------------------------------------------------------------------------------------


@exercise("scale_by_calls_pure", points=2)
def check_scale_by_calls_pure(ns):
    hint = ("new_calls = calls + 1; return new_calls, x * new_calls -- use the argument "
            "calls, not the global")
    got = call(ns, "scale_by_calls_pure", 0, 2.0)
    state, y = expect_pair(got, hint)
    if np.asarray(state) != 1 or not np.allclose(np.asarray(y), 2.0):
        raise CheckFailed(f"{got.call} returned {brief(got.value)}; expected (1, 2.0) -- "
                          f"hint: {hint}")
    global_before = ns.get("calls")
    pure = Counted(learner_function(ns, "scale_by_calls_pure"))
    fast = jax.jit(pure)
    x = jnp.array([1.0, -2.0, 0.5])
    state = jnp.int32(0)
    for k in range(1, 5):
        got = call_returned(fast, "jax.jit(scale_by_calls_pure)", state, x,
                            hint="no Python control flow on calls is needed")
        state, y = expect_pair(got, hint)
        expect_close(Returned(got.call + " (the new count)", state), k, hint=hint)
        expect_close(Returned(got.call + " (the product)", y), k * np.asarray(x), hint=hint)
    expect_traces(pure, 1, "4 calls with the same types",
                  "return the new count as an array (calls + 1), so its type does not change")
    if ns.get("calls") != global_before:
        raise CheckFailed(f"scale_by_calls_pure changed the global calls (from {global_before}"
                          f" to {ns.get('calls')}) -- hint: a pure function reads only its "
                          "arguments and changes nothing outside; drop `global calls`")


# ---------------------------------------------------------------------------------------
# Exercise 2: the Huber loss without `if`
# ---------------------------------------------------------------------------------------


def _huber(x: np.ndarray, delta: float) -> np.ndarray:
    x = x.astype(np.float64)
    return np.where(np.abs(x) <= delta, 0.5 * x**2, delta * (np.abs(x) - 0.5 * delta))


@exercise("huber", points=2)
def check_huber(ns):
    hint = ("compute both pieces and choose with jnp.where(jnp.abs(x) <= delta, quadratic, "
            "linear); Python's `if` cannot branch on traced values")
    xs = np.array([-3.0, -1.0, -0.5, 0.0, 0.25, 1.0, 2.0], np.float32)
    got = call_returned(learner_function(ns, "huber"), "huber", jnp.asarray(xs), 1.0, hint=hint)
    expect_close(got, _huber(xs, 1.0), rtol=1e-6, atol=1e-7, hint=hint)
    counted = Counted(learner_function(ns, "huber"))
    fast = jax.jit(counted)
    for delta in (1.0, 0.5, 2.5):
        got = call_returned(fast, "jax.jit(huber)", jnp.asarray(xs), jnp.float32(delta),
                            hint=hint)
        expect_close(got, _huber(xs, delta), rtol=1e-6, atol=1e-7, hint=hint)
    expect_traces(counted, 1, "3 calls with different values of delta",
                  "delta must stay traced: no static arguments, no Python `if` on it")
    matrix = np.linspace(-2.0, 2.0, 6, dtype=np.float32).reshape(2, 3)
    got = call_returned(fast, "jax.jit(huber)", jnp.asarray(matrix), jnp.float32(0.75),
                        hint="it must work elementwise on arrays of any shape")
    expect_close(got, _huber(matrix, 0.75), rtol=1e-6, atol=1e-7,
                 hint="it must work elementwise on arrays of any shape")
    huber = ns["huber"]
    gradient = jax.grad(lambda x: jnp.sum(huber(x, 1.0)))
    got = call_returned(gradient, "jax.grad(lambda x: jnp.sum(huber(x, 1.0)))",
                        jnp.asarray(xs), hint=hint)
    expect_close(got, np.clip(xs, -1.0, 1.0), rtol=1e-6, atol=1e-7,
                 hint="the derivative is x inside [-delta, delta] and delta * sign(x) outside")


# ---------------------------------------------------------------------------------------
# Exercise 3: Newton's square root with lax.while_loop
# ---------------------------------------------------------------------------------------


def _sqrt_newton_float32(a: float) -> tuple[float, int]:
    """The exercise's loop in float32 NumPy arithmetic."""
    a32 = np.float32(a)
    x, steps = max(a32, np.float32(1.0)), 0
    while abs(x * x - a32) > np.float32(1e-5) * a32:
        x = np.float32(0.5) * (x + a32 / x)
        steps += 1
    return float(x), steps


@exercise("sqrt_newton", points=2)
def check_sqrt_newton(ns):
    hint = ("lax.while_loop(cond_fun, body_fun, (jnp.maximum(a, 1.0), 0)): cond_fun(state) "
            "says whether |x*x - a| > 1e-5 * a, body_fun(state) returns "
            "(0.5 * (x + a / x), steps + 1)")
    counted = Counted(learner_function(ns, "sqrt_newton"))
    fast = jax.jit(counted)
    values = (2.0, 9.0, 0.25, 1e-4, 1e4, 1.0, 12345.678)
    for a in values:
        got = call_returned(fast, "jax.jit(sqrt_newton)", jnp.float32(a), hint=hint)
        root, steps = expect_pair(got, hint)
        expected_root, expected_steps = _sqrt_newton_float32(a)
        expect_close(Returned(got.call + " (the root)", root), np.sqrt(a), rtol=1e-5,
                     hint=hint)
        steps_dtype = getattr(steps, "dtype", None)
        if steps_dtype is None or np.dtype(steps_dtype).kind not in "iu":
            kind = f"dtype {steps_dtype}" if steps_dtype is not None else type(steps).__name__
            raise CheckFailed(f"{got.call} returned steps = {brief(steps)} ({kind}); expected "
                              "an integer array -- hint: start steps from 0 or jnp.int32(0) "
                              "and add 1 per step")
        if abs(int(np.asarray(steps)) - expected_steps) > 1:
            raise CheckFailed(f"{got.call} took {int(np.asarray(steps))} steps; the loop of "
                              f"sqrt_newton_python in float32 takes {expected_steps} -- hint: "
                              f"count one step per update of x, and stop as soon as "
                              f"|x*x - a| <= 1e-5 * a")
    expect_traces(counted, 1, f"{len(values)} calls with float32 scalars",
                  "the number of steps must be decided by lax.while_loop at run time, not by "
                  "Python at trace time")
    try:
        jaxpr = jax.make_jaxpr(ns["sqrt_newton"])(jnp.float32(2.0))
    except NotImplementedError:
        raise
    except Exception as exc:
        raise CheckFailed(f"jax.make_jaxpr(sqrt_newton)(jnp.float32(2.0)) raised "
                          f"{describe_exception(exc)}") from exc
    if "while" not in primitive_names(jaxpr):
        raise CheckFailed("the jaxpr of sqrt_newton has no `while` equation -- hint: the loop "
                          "must be a lax.while_loop, whose trip count is decided at run time")


# ---------------------------------------------------------------------------------------
# Exercise 4: static or traced
# ---------------------------------------------------------------------------------------


def _poly_features(x: np.ndarray, degree: int, scale: float) -> np.ndarray:
    z = x.astype(np.float64) / scale
    return np.stack([z**k for k in range(degree + 1)], axis=-1)


@exercise("make_fast_poly_features", points=2)
def check_make_fast_poly_features(ns):
    hint = ("degree decides the shape of the result (range(degree + 1)), so it must be "
            "static: jax.jit(poly_features, static_argnums=1); scale is data and stays traced")
    original = learner_function(ns, "poly_features")
    counted = Counted(original)
    ns["poly_features"] = counted  # the function the learner jits: it counts its traces
    try:
        fast = call(ns, "make_fast_poly_features").value
    finally:
        ns["poly_features"] = original
    if not callable(fast):
        raise CheckFailed(f"make_fast_poly_features() returned {brief(fast)}; expected a "
                          f"jitted function -- hint: {hint}")
    x = jnp.array([1.0, 2.0, -3.0])
    for scale in (2.0, 4.0, 0.5):
        got = call_returned(fast, "make_fast_poly_features()", x, 3, scale, hint=hint)
        expect_close(got, _poly_features(np.asarray(x), 3, scale), rtol=1e-6, hint=hint)
    if counted.calls == 0:
        raise CheckFailed("make_fast_poly_features() returned a function that never ran "
                          "poly_features -- hint: return jax.jit(poly_features, ...)")
    if counted.calls == 3:
        raise CheckFailed("poly_features ran 3 times for 3 calls with degree 3: either it is "
                          "not jitted or scale is static, so each new scale is a new trace -- "
                          f"hint: {hint}")
    expect_traces(counted, 1, "3 calls with degree 3 and different scales", hint)
    got = call_returned(fast, "make_fast_poly_features()", x, 2, 2.0, hint=hint)
    expect_close(got, _poly_features(np.asarray(x), 2, 2.0), rtol=1e-6, hint=hint)
    expect_traces(counted, 2, "degree 3 and then degree 2", hint)


# ---------------------------------------------------------------------------------------
# Exercise 5: a pytree class with a jitted method
# ---------------------------------------------------------------------------------------


def _polynomial(coefficients: Sequence[float], x: np.ndarray) -> np.ndarray:
    x = x.astype(np.float64)
    return sum(c * x**k for k, c in enumerate(coefficients))


@exercise("Polynomial", points=2)
def check_polynomial(ns):
    if "Polynomial" not in ns:
        raise CheckFailed("Polynomial is not defined: did you run its cell?")
    polynomial = ns["Polynomial"]
    hint = ("tree_flatten returns ((self.coefficients,), self.name); tree_unflatten(cls, name, "
            "children) returns cls(*children, name)")
    p = polynomial(jnp.array([1.0, -2.0, 3.0]), "q")
    try:
        leaves = jax.tree_util.tree_leaves(p)
        treedef = jax.tree_util.tree_structure(p)
    except NotImplementedError:
        raise
    except Exception as exc:
        raise CheckFailed(f"flattening Polynomial(jnp.array([1.0, -2.0, 3.0]), 'q') raised "
                          f"{describe_exception(exc)} -- hint: {hint}") from exc
    if len(leaves) != 1 or not np.array_equal(np.asarray(leaves[0]), [1.0, -2.0, 3.0]):
        raise CheckFailed(f"the leaves of Polynomial(jnp.array([1.0, -2.0, 3.0]), 'q') are "
                          f"{brief(leaves)}; expected one leaf, the coefficient array -- "
                          f"hint: {hint}")
    same = jax.tree_util.tree_structure(polynomial(jnp.array([4.0, 5.0, 6.0]), "q"))
    renamed = jax.tree_util.tree_structure(polynomial(jnp.array([1.0, -2.0, 3.0]), "r"))
    if same != treedef or renamed == treedef:
        raise CheckFailed("the tree structure of a Polynomial should depend on its name and not "
                          "on its coefficients -- hint: the name is the auxiliary data, the "
                          "coefficients are the children")
    try:
        rebuilt = jax.tree_util.tree_unflatten(treedef, [jnp.array([7.0, 8.0, 9.0])])
    except NotImplementedError:
        raise
    except Exception as exc:
        raise CheckFailed(f"tree_unflatten of a Polynomial raised {describe_exception(exc)} "
                          f"-- hint: {hint}") from exc
    if (not isinstance(rebuilt, polynomial) or getattr(rebuilt, "name", None) != "q"
            or not np.array_equal(np.asarray(rebuilt.coefficients), [7.0, 8.0, 9.0])):
        raise CheckFailed("tree_unflatten(structure of Polynomial(..., 'q'), [jnp.array([7.0, "
                          "8.0, 9.0])]) did not give Polynomial(jnp.array([7.0, 8.0, 9.0]), "
                          f"'q') -- hint: {hint}")
    check_polynomial_calls(polynomial)


def check_polynomial_calls(polynomial: type) -> None:
    """Values, traces and gradients of the learner's jitted ``__call__``."""
    hint = ("Horner's rule: result = zeros_like(x); for c in reversed coefficients: "
            "result = result * x + c")
    x = jnp.array([0.0, 1.0, 2.0, -1.5])
    for coefficients in ([1.0, -2.0, 3.0], [0.5], [1.0, 0.0, 0.0, -1.0], [2.0, 1.0]):
        p = polynomial(jnp.array(coefficients), "q")
        got = call_returned(p, f"Polynomial(jnp.array({coefficients}), 'q')", x, hint=hint)
        expect_close(got, _polynomial(coefficients, np.asarray(x)), rtol=1e-6, atol=1e-6,
                     hint=hint)
    jitted = polynomial.__dict__.get("__call__")
    if not hasattr(jitted, "clear_cache") or not hasattr(jitted, "_cache_size"):
        raise CheckFailed("Polynomial.__call__ is not jitted -- hint: keep the @jax.jit "
                          "decorator on __call__")
    jitted.clear_cache()
    for coefficients in ([1.0, -2.0, 3.0], [4.0, 5.0, 6.0], [0.0, 0.0, 1.0]):
        polynomial(jnp.array(coefficients), "q")(x)
    if jitted._cache_size() != 1:
        raise CheckFailed(f"three Polynomials named 'q' with 3 coefficients each made "
                          f"{jitted._cache_size()} traces of __call__; expected 1 -- hint: the "
                          "coefficients are children (traced), so new values need no new trace")
    polynomial(jnp.array([1.0, -2.0, 3.0]), "r")(x)
    if jitted._cache_size() != 2:
        raise CheckFailed("a Polynomial with another name did not make a new trace of __call__ "
                          "-- hint: the name is auxiliary data, part of the tree structure")
    loss = jax.grad(lambda p, x: p(x))
    shown = "jax.grad(lambda p, x: p(x))"
    got = call_returned(loss, shown, polynomial(jnp.array([1.0, -2.0, 3.0]), "q"),
                        jnp.float32(2.0), hint=hint)
    gradient = got.value
    if not isinstance(gradient, polynomial) or getattr(gradient, "name", None) != "q":
        raise CheckFailed(f"{got.call} returned {brief(gradient)}; expected a Polynomial "
                          "named 'q' holding the gradient -- hint: grad returns the same pytree "
                          "structure as its argument")
    expect_close(Returned(got.call + ".coefficients", gradient.coefficients), [1.0, 2.0, 4.0],
                 rtol=1e-6, hint="d p(x) / d c_k = x**k")
