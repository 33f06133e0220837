"""Checks for chapter 08, JIT's sharp edges.

Every check runs the learner's code under ``jax.jit``, because that is where the sharp edges
cut: a function that works eagerly may still read global state, branch on a traced value or
retrace on every call. The learner's function is wrapped, in the learner's process, in a
function that counts its runs before it is jitted (the ``counted_calls`` probe), so that the
check can tell how many times its Python code ran, that is, how many traces there were.
Expected values come from NumPy formulas (in float64, or in float32 where the exercise is
about float32 arithmetic), never from the solution notebook.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

import minijax.numpy as jnp
from grader.checks import (
    CheckFailed,
    Namespace,
    Returned,
    brief,
    call,
    call_described,
    call_returned,
    call_transformed,
    exercise,
    expect_close,
    learner_function,
    part,
    probe,
    reported,
    show,
)
from grader.pieces import Program, expect_same_with_pieces
from grader.plain import FunctionSource


def expect_pair(got: Returned, hint: str) -> tuple[Any, Any]:
    if not isinstance(got.value, (tuple, list)) or len(got.value) != 2:
        raise CheckFailed(f"{got.call} returned {brief(got.value)}; expected a pair -- "
                          f"hint: {hint}")
    return tuple(got.value)


def expect_traces(name: str, runs: int, expected: int, what: str, hint: str) -> None:
    if runs != expected:
        times = "once" if expected == 1 else f"{expected} times"
        raise CheckFailed(f"the Python code of {name} ran {runs} times for {what}; "
                          f"expected {times} (one trace per signature) -- hint: {hint}")


JIT = FunctionSource("jax.jit")


class JittedCall:
    """One call of ``jax.jit(name)`` made by the ``counted_calls`` probe, in the learner's
    process: ``result(hint)`` is what it returned (or the failure it raised), ``runs`` how
    often the learner's Python code had run by then."""

    def __init__(self, text: str, report: dict[str, Any]) -> None:
        self.text, self.report, self.runs = text, report, report["runs"]

    def result(self, hint: str) -> Returned:
        return reported(self.text, self.report, hint)


def jitted_calls(ns: Namespace, name: str, calls: list[list[Any]],
                 thread: bool = False) -> list[JittedCall]:
    """``jax.jit(name)`` called on each argument list (with ``thread``: each call's first
    argument the state the call before returned); the calls stop after one that raised."""
    learner_function(ns, name)
    reports = probe(ns, "counted_calls", name, JIT, calls, thread)
    return [JittedCall(f"jax.jit({name})({', '.join(show(arg) for arg in args)})", report)
            for args, report in zip(calls, reports)]


def _same(before: Any, after: Any) -> bool:
    """Whether a global holds the same value before and after (as plain data)."""
    if hasattr(before, "shape") or hasattr(after, "shape"):
        return type(before) is type(after) and np.array_equal(np.asarray(before),
                                                              np.asarray(after))
    return type(before) is type(after) and before == after


# ---------------------------------------------------------------------------------------
# Exercise 1: a counter as explicit state
# ---------------------------------------------------------------------------------------


@exercise("scale_by_calls_pure", points=2, remote=True)
def check_scale_by_calls_pure(ns):
    hint = ("new_calls = calls + 1; return new_calls, x * new_calls -- use the argument "
            "calls, not the global")
    got = call(ns, "scale_by_calls_pure", 0, 2.0)
    state, y = expect_pair(got, hint)
    if np.asarray(state) != 1 or not np.allclose(np.asarray(y), 2.0):
        raise CheckFailed(f"{got.call} returned {brief(got.value)}; expected (1, 2.0) -- "
                          f"hint: {hint}")
    global_before = probe(ns, "value_of", "calls")
    x = jnp.array([1.0, -2.0, 0.5])
    calls = jitted_calls(ns, "scale_by_calls_pure", [[jnp.int32(0), x]] * 4, thread=True)
    for k, jitted in enumerate(calls, start=1):
        got = jitted.result("no Python control flow on calls is needed")
        state, y = expect_pair(got, hint)
        expect_close(Returned(got.call + " (the new count)", state), k, hint=hint)
        expect_close(Returned(got.call + " (the product)", y), k * np.asarray(x), hint=hint)
    expect_traces("scale_by_calls_pure", calls[-1].runs, 1, "4 calls with the same types",
                  "return the new count as an array (calls + 1), so its type does not change")
    global_after = probe(ns, "value_of", "calls")
    if not _same(global_after, global_before):
        raise CheckFailed(f"scale_by_calls_pure changed the global calls (from {global_before}"
                          f" to {global_after}) -- hint: a pure function reads only its "
                          "arguments and changes nothing outside; drop `global calls`")


# ---------------------------------------------------------------------------------------
# Exercise 2: the Huber loss without `if`
# ---------------------------------------------------------------------------------------


def _huber(x: np.ndarray, delta: float) -> np.ndarray:
    x = x.astype(np.float64)
    return np.where(np.abs(x) <= delta, 0.5 * x**2, delta * (np.abs(x) - 0.5 * delta))


@exercise("huber", points=2, remote=True)
def check_huber(ns):
    hint = ("compute both pieces and choose with jnp.where(jnp.abs(x) <= delta, quadratic, "
            "linear); Python's `if` cannot branch on traced values")
    xs = np.array([-3.0, -1.0, -0.5, 0.0, 0.25, 1.0, 2.0], np.float32)
    got = call_returned(learner_function(ns, "huber"), "huber", jnp.asarray(xs), 1.0, hint=hint)
    expect_close(got, _huber(xs, 1.0), rtol=1e-6, atol=1e-7, hint=hint)
    deltas = (1.0, 0.5, 2.5)
    matrix = np.linspace(-2.0, 2.0, 6, dtype=np.float32).reshape(2, 3)
    calls = jitted_calls(ns, "huber", [[jnp.asarray(xs), jnp.float32(delta)] for delta in deltas]
                         + [[jnp.asarray(matrix), jnp.float32(0.75)]])
    for delta, jitted in zip(deltas, calls):
        expect_close(jitted.result(hint), _huber(xs, delta), rtol=1e-6, atol=1e-7, hint=hint)
    expect_traces("huber", calls[len(deltas) - 1].runs, 1,
                  "3 calls with different values of delta",
                  "delta must stay traced: no static arguments, no Python `if` on it")
    arrays = "it must work elementwise on arrays of any shape"
    expect_close(calls[-1].result(arrays), _huber(matrix, 0.75), rtol=1e-6, atol=1e-7,
                 hint=arrays)
    got = call_transformed(ns, "lambda huber: jax.grad(lambda x: jnp.sum(huber(x, 1.0)))",
                           "huber", jnp.asarray(xs),
                           shown="jax.grad(lambda x: jnp.sum(huber(x, 1.0)))", hint=hint)
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


@exercise("sqrt_newton", points=2, remote=True)
def check_sqrt_newton(ns):
    hint = ("lax.while_loop(cond_fun, body_fun, (jnp.maximum(a, 1.0), 0)): cond_fun(state) "
            "says whether |x*x - a| > 1e-5 * a, body_fun(state) returns "
            "(0.5 * (x + a / x), steps + 1)")
    values = (2.0, 9.0, 0.25, 1e-4, 1e4, 1.0, 12345.678)
    calls = jitted_calls(ns, "sqrt_newton", [[jnp.float32(a)] for a in values])
    for a, jitted in zip(values, calls):
        got = jitted.result(hint)
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
    expect_traces("sqrt_newton", calls[-1].runs, 1, f"{len(values)} calls with float32 scalars",
                  "the number of steps must be decided by lax.while_loop at run time, not by "
                  "Python at trace time")
    jaxpr = probe(ns, "trace", "sqrt_newton", [jnp.float32(2.0)])
    if "raised" in jaxpr:
        raise CheckFailed(f"jax.make_jaxpr(sqrt_newton)(jnp.float32(2.0)) raised "
                          f"{jaxpr['raised']}")
    if "while" not in jaxpr["nested"]:
        raise CheckFailed("the jaxpr of sqrt_newton has no `while` equation -- hint: the loop "
                          "must be a lax.while_loop, whose trip count is decided at run time")


# ---------------------------------------------------------------------------------------
# Exercise 4: static or traced
# ---------------------------------------------------------------------------------------


def _poly_features(x: np.ndarray, degree: int, scale: float) -> np.ndarray:
    z = x.astype(np.float64) / scale
    return np.stack([z**k for k in range(degree + 1)], axis=-1)


@exercise("make_fast_poly_features", points=2, remote=True)
def check_make_fast_poly_features(ns):
    hint = ("degree decides the shape of the result (range(degree + 1)), so it must be "
            "static: jax.jit(poly_features, static_argnums=1); scale is data and stays traced")
    learner_function(ns, "poly_features")
    learner_function(ns, "make_fast_poly_features")
    x = jnp.array([1.0, 2.0, -3.0])
    calls = [[x, 3, scale] for scale in (2.0, 4.0, 0.5)] + [[x, 2, 2.0]]
    # poly_features, the function the learner jits, counts its traces meanwhile
    made = call_described(lambda: probe(ns, "call_made", "make_fast_poly_features", [], calls,
                                        "poly_features"), "make_fast_poly_features()")
    if "made" in made.value:
        raise CheckFailed(f"make_fast_poly_features() returned {brief(made.value['made'])}; "
                          f"expected a jitted function -- hint: {hint}")
    results = [JittedCall(f"make_fast_poly_features()({', '.join(show(a) for a in args)})",
                          report) for args, report in zip(calls, made.value["calls"])]
    for scale, jitted in zip((2.0, 4.0, 0.5), results):
        expect_close(jitted.result(hint), _poly_features(np.asarray(x), 3, scale), rtol=1e-6,
                     hint=hint)
    runs = results[2].runs
    if runs == 0:
        raise CheckFailed("make_fast_poly_features() returned a function that never ran "
                          "poly_features -- hint: return jax.jit(poly_features, ...)")
    if runs == 3:
        raise CheckFailed("poly_features ran 3 times for 3 calls with degree 3: either it is "
                          "not jitted or scale is static, so each new scale is a new trace -- "
                          f"hint: {hint}")
    expect_traces("poly_features", runs, 1, "3 calls with degree 3 and different scales", hint)
    expect_close(results[3].result(hint), _poly_features(np.asarray(x), 2, 2.0), rtol=1e-6,
                 hint=hint)
    expect_traces("poly_features", results[3].runs, 2, "degree 3 and then degree 2", hint)


# ---------------------------------------------------------------------------------------
# Exercise 5: a pytree class with a jitted method
# ---------------------------------------------------------------------------------------


def _polynomial(coefficients: Sequence[float], x: np.ndarray) -> np.ndarray:
    x = x.astype(np.float64)
    return sum(c * x**k for k, c in enumerate(coefficients))


#: Runs in the learner's process (the ``observe`` probe): what the learner's Polynomial class
#: does with the check's inputs -- its leaves and tree structures, what tree_unflatten and its
#: jitted ``__call__`` give, its trace counts and its gradient -- as plain data. Each step that
#: raises ends the observation with the step's name and the error.
_OBSERVE_POLYNOMIAL = """def observe_polynomial(ns, coefficient_lists, x):
    describe = __import__("grader.checks", fromlist=["describe_exception"]).describe_exception
    polynomial, tree, seen = ns["Polynomial"], jax.tree_util, {}

    def step(name, work):
        try:
            seen[name] = work()
        except NotImplementedError:
            raise
        except Exception as exc:
            seen["raised"] = [name, describe(exc)]
            return False
        return True

    def parts(value):
        return {"is_polynomial": isinstance(value, polynomial), "value": value,
                "name": getattr(value, "name", None),
                "coefficients": getattr(value, "coefficients", None)}

    def traces():
        jitted.clear_cache()
        for coefficients in ([1.0, -2.0, 3.0], [4.0, 5.0, 6.0], [0.0, 0.0, 1.0]):
            polynomial(jnp.array(coefficients), "q")(x)
        same_name = jitted._cache_size()
        polynomial(jnp.array([1.0, -2.0, 3.0]), "r")(x)
        return [same_name, jitted._cache_size()]

    if not (step("make", lambda: polynomial(jnp.array([1.0, -2.0, 3.0]), "q"))
            and step("flatten", lambda: (tree.tree_leaves(seen["make"]),
                                         tree.tree_structure(seen["make"])))):
        return seen
    leaves, treedef = seen.pop("flatten")
    seen["leaves"] = leaves
    del seen["make"]
    if not step("structures", lambda: [
            tree.tree_structure(polynomial(jnp.array([4.0, 5.0, 6.0]), "q")) == treedef,
            tree.tree_structure(polynomial(jnp.array([1.0, -2.0, 3.0]), "r")) == treedef]) \
            or not step("rebuilt", lambda: parts(tree.tree_unflatten(
                treedef, [jnp.array([7.0, 8.0, 9.0])]))):
        return seen
    seen["values"] = []
    for coefficients in coefficient_lists:
        if not step("value", lambda: polynomial(jnp.array(coefficients), "q")(x)):
            return seen
        seen["values"].append(seen.pop("value"))
    jitted = polynomial.__dict__.get("__call__")
    seen["jitted"] = hasattr(jitted, "clear_cache") and hasattr(jitted, "_cache_size")
    if seen["jitted"] and step("traces", traces):
        step("gradient", lambda: parts(jax.grad(lambda p, x: p(x))(
            polynomial(jnp.array([1.0, -2.0, 3.0]), "q"), jnp.float32(2.0))))
    return seen
"""


def _stopped_at(seen: dict[str, Any], step: str, message: str) -> None:
    """Fail with ``message`` (given the learner's error) if the observation stopped at
    ``step``."""
    if seen.get("raised", [None])[0] == step:
        raise CheckFailed(message.format(seen["raised"][1]))


@exercise("Polynomial", points=2, remote=True)
def check_polynomial(ns):
    if "Polynomial" not in ns:
        raise CheckFailed("Polynomial is not defined: did you run its cell?")
    hint = ("tree_flatten returns ((self.coefficients,), self.name); tree_unflatten(cls, name, "
            "children) returns cls(*children, name)")
    values_hint = ("Horner's rule: result = zeros_like(x); for c in reversed coefficients: "
                   "result = result * x + c")
    x = jnp.array([0.0, 1.0, 2.0, -1.5])
    coefficient_lists = ([1.0, -2.0, 3.0], [0.5], [1.0, 0.0, 0.0, -1.0], [2.0, 1.0])
    seen = probe(ns, "observe", FunctionSource(_OBSERVE_POLYNOMIAL),
                 list(coefficient_lists), x)
    _stopped_at(seen, "make", "the check stopped with {}")
    _stopped_at(seen, "flatten", "flattening Polynomial(jnp.array([1.0, -2.0, 3.0]), 'q') "
                f"raised {{}} -- hint: {hint}")
    leaves = seen["leaves"]
    if len(leaves) != 1 or not np.array_equal(np.asarray(leaves[0]), [1.0, -2.0, 3.0]):
        raise CheckFailed(f"the leaves of Polynomial(jnp.array([1.0, -2.0, 3.0]), 'q') are "
                          f"{brief(leaves)}; expected one leaf, the coefficient array -- "
                          f"hint: {hint}")
    _stopped_at(seen, "structures", "the check stopped with {}")
    same, renamed = seen["structures"]
    if not same or renamed:
        raise CheckFailed("the tree structure of a Polynomial should depend on its name and not "
                          "on its coefficients -- hint: the name is the auxiliary data, the "
                          "coefficients are the children")
    _stopped_at(seen, "rebuilt", f"tree_unflatten of a Polynomial raised {{}} -- hint: {hint}")
    rebuilt = seen["rebuilt"]
    if (not rebuilt["is_polynomial"] or rebuilt["name"] != "q"
            or not np.array_equal(np.asarray(rebuilt["coefficients"]), [7.0, 8.0, 9.0])):
        raise CheckFailed("tree_unflatten(structure of Polynomial(..., 'q'), [jnp.array([7.0, "
                          "8.0, 9.0])]) did not give Polynomial(jnp.array([7.0, 8.0, 9.0]), "
                          f"'q') -- hint: {hint}")
    for coefficients, value in zip(coefficient_lists, seen["values"]):
        got = Returned(f"Polynomial(jnp.array({coefficients}), 'q')({show(x)})", value)
        expect_close(got, _polynomial(coefficients, np.asarray(x)), rtol=1e-6, atol=1e-6,
                     hint=values_hint)
    shown = len(seen["values"])
    if shown < len(coefficient_lists):
        coefficients = coefficient_lists[shown]
        raise CheckFailed(f"Polynomial(jnp.array({coefficients}), 'q')({show(x)}) raised "
                          f"{seen['raised'][1]} -- hint: {values_hint}")
    check_polynomial_traces(seen, values_hint)


def check_polynomial_traces(seen: dict[str, Any], hint: str) -> None:
    """Trace counts and the gradient of the learner's jitted ``__call__``, as observed."""
    if not seen["jitted"]:
        raise CheckFailed("Polynomial.__call__ is not jitted -- hint: keep the @jax.jit "
                          "decorator on __call__")
    _stopped_at(seen, "traces", "the check stopped with {}")
    same_name, renamed = seen["traces"]
    if same_name != 1:
        raise CheckFailed(f"three Polynomials named 'q' with 3 coefficients each made "
                          f"{same_name} traces of __call__; expected 1 -- hint: the "
                          "coefficients are children (traced), so new values need no new trace")
    if renamed != 2:
        raise CheckFailed("a Polynomial with another name did not make a new trace of __call__ "
                          "-- hint: the name is auxiliary data, part of the tree structure")
    shown = "jax.grad(lambda p, x: p(x))(Polynomial(jnp.array([1.0, -2.0, 3.0]), 'q'), " \
        "jnp.float32(2.0))"
    _stopped_at(seen, "gradient", f"{shown} raised {{}} -- hint: {hint}")
    gradient = seen["gradient"]
    if not gradient["is_polynomial"] or gradient["name"] != "q":
        raise CheckFailed(f"{shown} returned {brief(gradient['value'])}; expected a Polynomial "
                          "named 'q' holding the gradient -- hint: grad returns the same pytree "
                          "structure as its argument")
    expect_close(Returned(shown + ".coefficients", gradient["coefficients"]), [1.0, 2.0, 4.0],
                 rtol=1e-6, hint="d p(x) / d c_k = x**k")


# ---------------------------------------------------------------------------------------
# Build it. Exercise 6: the conversion checks, concrete_or_error
# ---------------------------------------------------------------------------------------


def _outcome(expression: str) -> str:
    """A program (``def``) that calls ``expression`` on its arguments and returns the value,
    or the error it raised as ``"ErrorClass: message"``: the error is the result compared
    (a stub's ``NotImplementedError`` goes through: the part is not attempted)."""
    return ("def program(*args):\n"
            "    try:\n"
            f"        return ({expression})(*args)\n"
            "    except NotImplementedError:\n"
            "        raise\n"
            "    except Exception as exc:\n"
            "        return f'{type(exc).__name__}: {exc}'\n")


def _programs(cases: list[tuple[str, tuple[Any, ...]]]) -> list[Program]:
    return [Program(f"{expression}({', '.join(show(a) for a in args)})", _outcome(expression),
                    args) for expression, args in cases]


_X = np.float32(1.5)
#: The parts of exercise 6: (part, points, [(expression, arguments)]).
_CONVERSIONS = [
    ("if on a traced value", 1, [
        ("jax.jit(lambda x: x if x > 0 else -x)", (_X,)),
        ("jax.jit(lambda x, y: jnp.where(x > y, x, y) if bool(x) else y)", (_X, _X))]),
    ("indices", 1, [
        ("jax.jit(lambda i: [1.0, 2.0, 3.0][i])", (np.int32(1),)),
        ("jax.jit(lambda x, n: x * len(range(n)))", (_X, np.int32(3)))]),
    ("NumPy arrays", 1, [
        ("jax.jit(lambda x: np.sin(x))", (_X,)),
        ("jax.jit(lambda x: np.asarray(x) + 1)", (np.arange(3, dtype=np.float32),))]),
    ("int, float, complex and item", 2, [
        ("jax.jit(lambda x: int(x))", (_X,)),
        ("jax.jit(lambda x: float(x) * 2)", (_X,)),
        ("jax.jit(lambda x: complex(x))", (_X,)),
        ("jax.jit(lambda x: x.item())", (_X,))]),
    ("known values go through", 1, [
        ("jax.grad(lambda x: x * 2.0 if x > 0 else -x)", (_X,)),
        ("jax.grad(lambda x: x * int(x))", (np.float32(2.5),)),
        ("lambda x: jax.jvp(lambda x: x ** len(range(int(x))), (x,), (1.0,))",
         (np.float32(3.0),))]),
    ("a JVP tracer's refusals", 1, [
        ("jax.grad(lambda x: float(x) * x)", (_X,)),
        ("jax.grad(lambda x: jnp.sum(np.asarray(x) * x))", (_X,))]),
]


@exercise("concrete_or_error", points=7, remote=True,
          parts={name: points for name, points, _ in _CONVERSIONS})
def check_concrete_or_error(ns):
    hint = ("a conversion not in tracer.refused_conversions returns tracer.to_concrete_value() "
            "when it is not None; otherwise raise the class for the conversion with "
            "tracer.aval.str_long() and tracer._context() (and, for ConcretizationTypeError, "
            "the problem text the prompt gives)")
    for name, _, cases in _CONVERSIONS:
        with part(name):
            expect_same_with_pieces(ns, {"concrete_or_error": "concrete_or_error"},
                                    _programs(cases), hint=hint)


# ---------------------------------------------------------------------------------------
# Build it. Exercise 7: leaked tracers, check_valid_tracer
# ---------------------------------------------------------------------------------------

#: A program that leaks a tracer out of ``transform`` and uses it afterwards (``use``); the
#: result is the error's class, its first line and the line naming the traced function (the
#: lines after those show the learner's stack, which differs between two processes).
_LEAK = """def program(x):
    saved = []

    def f(y):
        saved.append(y * 2.0)
        return y

    {transform}(f)(x)
    try:
        {use}
    except NotImplementedError:
        raise
    except Exception as exc:
        lines = str(exc).splitlines()
        return [type(exc).__name__, lines[0],
                [line for line in lines if line.startswith("The function being traced")]]
    return "no error"
"""

#: (transform, use of the leaked value, how the program is shown): a tracer leaked from a
#: jit trace, whose error names the function. (A leak from grad or vmap, whose traces have no
#: function's name, ends in the same message even without check_valid_tracer: the eager
#: evaluation refuses any tracer.)
_LEAKS = [
    ("jax.jit", "jnp.sin(saved[0])", "jax.jit(f)(x) with f saving y * 2.0 in a list, then "
     "jnp.sin of it"),
    ("jax.jit", "jax.grad(lambda z: z * saved[0])(1.0)", "jax.jit(f)(x) with f saving "
     "y * 2.0 in a list, then jax.grad(lambda z: z * saved[0])(1.0)"),
    ("jax.jit", "jax.vmap(lambda z: z * saved[0])(jnp.ones(2))", "jax.jit(f)(x) with f "
     "saving y * 2.0 in a list, then jax.vmap(lambda z: z * saved[0])(jnp.ones(2))"),
]

_LIVE = [("jax.jit(lambda x: jax.grad(lambda y: y * x)(x))", (_X,)),
         ("jax.vmap(lambda x: jax.jit(lambda y: y * x)(x))", (np.arange(3, dtype=np.float32),)),
         ("jax.grad(lambda x: jax.vmap(lambda y: y * x)(jnp.ones(3)).sum())", (_X,)),
         ("jax.jit(lambda x: jax.vmap(lambda y: jax.grad(lambda z: z * y * x.sum())(y))(x))",
          (np.arange(3, dtype=np.float32),))]


@exercise("check_valid_tracer", points=4, remote=True,
          parts={"a leaked tracer, with the function that leaked it": 2,
                 "live tracers pass": 2})
def check_check_valid_tracer(ns):
    hint = ("nothing happens while tracer._trace.is_valid; otherwise raise "
            "UnexpectedTracerError(aval, tracer.kind_name), with the trace's tracing_context, "
            "when there is one, named in `where` and the tracer's _creation_site()")
    installs = {"check_valid_tracer": "check_valid_tracer"}
    with part("a leaked tracer, with the function that leaked it"):
        programs = [Program(shown, _LEAK.format(transform=transform, use=use), (_X,))
                    for transform, use, shown in _LEAKS]
        expect_same_with_pieces(ns, installs, programs, hint=hint)
    with part("live tracers pass"):
        expect_same_with_pieces(ns, installs, _programs(_LIVE), hint=hint)
