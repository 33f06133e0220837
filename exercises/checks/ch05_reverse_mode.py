"""Checks for chapter 05, reverse mode.

The "Build it" exercises (``linearize``, ``transpose_rules``, ``backward_pass``,
``vjp_and_grad``) grade a piece of the engine the learner wrote by what it does to the
engine: each program below (a use of the public API that goes through the piece) runs in the
learner's process with the piece installed and here on minijax's own pieces, and the two
results must agree (:func:`grader.pieces.expect_same_with_pieces`).

For the other exercises, expected values are derivatives worked out by hand and evaluated in
float64 NumPy (or, for ``difference_transpose``, also minijax's own ``jax.vjp``, which the
test suite checks against JAX), never taken from the solution notebook. Functions handed to
the learner's code are :class:`Shown` objects: they print as readable source in messages and
count their calls, so a check can tell "one linearization" (one call) from "one evaluation
per direction" (many).
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
    part,
    probe,
    show,
)
from grader.pieces import Program, expect_same_with_pieces
from grader.plain import FunctionSource
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
# The backward pass of a tape
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
# Build it: the pieces of reverse mode, graded by running programs on them (grader.pieces)
# ---------------------------------------------------------------------------------------

# The points every program is evaluated at: float32, as the learner's notebook makes them.
_X = np.array([0.5, -1.0, 2.0], np.float32)
_Y = np.array([1.5, 2.0, -0.5], np.float32)
_W = np.array([[0.5, -1.0], [2.0, 0.25], [-0.5, 1.5]], np.float32)
_B = np.array([0.1, -0.2], np.float32)
_SHOWN = {"x": _X, "y": _Y, "w": _W, "b": _B}


def _program(text: str, *names: str) -> Program:
    """The program ``text``, a use of the public API, run on the points named in ``names``
    (``x``, ``y``, ``w``, ``b``); messages show their values after the program."""
    points = ", ".join(f"{name} = {show(jnp.asarray(_SHOWN[name]))}" for name in names)
    shown = f"{text}  (with {points})" if names else text
    return Program(shown, f"lambda {', '.join(names)}: {text}",
                   tuple(_SHOWN[name] for name in names))


def _run_parts(ns: Any, installs: dict[str, str], programs: list[tuple[str, Program]],
               hint: str) -> None:
    """Each part's programs on the learner's pieces, against minijax's own."""
    for name, program in programs:
        with part(name):
            expect_same_with_pieces(ns, installs, [program], hint=hint)


_SIN_X = "jnp.sum(jnp.sin(x) * x)"
_LOSS_BODY = "jnp.sum(jnp.tanh(x @ p['w'] + p['b']))"
_LOSS = f"lambda p: {_LOSS_BODY}"
_PARAMS = "{'w': w, 'b': b}"

LINEARIZE_PROGRAMS = [
    ("values and the linear function", _program(
        f"(lambda out: (out[0], out[1](y)))(jax.linearize(lambda x: {_SIN_X}, x))", "x", "y")),
    ("values and the linear function", _program("jax.grad(lambda x: x * x)(3.0)")),
    ("the linear jaxpr", _program(
        f"str(jax.make_jaxpr(jax.linearize(lambda x: {_SIN_X}, x)[1])(x))", "x")),
    ("the linear jaxpr", _program(  # x * 2.0's tangent is computed, but nothing needs it
        "str(jax.make_jaxpr(jax.linearize(lambda x: [x * 2.0, jnp.sin(x)][1], x)[1])(x))", "x")),
    ("inputs and outputs without tangents", _program(
        "jax.vjp(lambda x, y: (x * 2.0, jnp.float32(1.0)), x, y)[1]((x, jnp.float32(1.0)))",
        "x", "y")),
    ("inputs and outputs without tangents", _program(
        "jax.vjp(lambda x, n: x * n, x, 3)[1](y)[0]", "x", "y")),
    ("inside jit", _program(f"jax.jit(jax.grad(lambda x: {_SIN_X}))(x)", "x")),
]


@exercise("linearize", points=3, remote=True,
          parts={"values and the linear function": 1, "the linear jaxpr": 1,
                 "inputs and outputs without tangents": 0.5, "inside jit": 0.5})
def check_linearize(ns):
    hint = ("tangents are pe.new_arg(aval) for differentiable inputs and Zero(tangent_aval(aval)) "
            "for the others; run ad.jvp_flat(fun, primals, tangents, rule_trace=pe); keep the "
            "outputs whose tangent is not a Zero; instantiate them under the parent trace, and "
            "without_dead_code(pe.to_jaxpr(...)) is the linear jaxpr")
    _run_parts(ns, {"linearize_flat": "linearize_flat"}, LINEARIZE_PROGRAMS, hint)


# The primitives whose transpose rules the learner writes.
TRANSPOSED = ("add", "add_any", "sub", "neg", "mul", "reduce_sum", "broadcast_in_dim")

_OBSERVE_RULES = '''\
def rules_given(ns):
    table = ns.get("transpose_rules")
    if not isinstance(table, dict):
        return type(table).__name__
    return sorted(getattr(primitive, "name", repr(primitive)) for primitive in table)
'''

TRANSPOSE_PROGRAMS = [
    ("mul and add_any", _program("jax.grad(lambda x: x * x)(3.0)")),
    ("mul and add_any", _program("jax.grad(lambda x: jnp.sin(x) * x)(0.7)")),
    ("mul and add_any", _program("jax.grad(lambda s: jnp.sum(s * x))(2.0)", "x")),
    ("add, sub and neg", _program("jax.grad(lambda x: jnp.sum(x - 2.0 * x + (-x) * y))(x)",
                                  "x", "y")),
    ("add, sub and neg", _program("jax.grad(lambda x, y: jnp.sum(y - (x + 1.0)), argnums=1)(x, y)",
                                  "x", "y")),
    ("add, sub and neg", _program(
        "jax.grad(lambda p: jnp.sum(jnp.tanh(w @ p['v'] + p['c'])))({'v': b[:, None], 'c': b[:1]})",
        "w", "b")),
    ("reduce_sum and broadcast_in_dim", _program(f"jax.grad(lambda x: {_SIN_X})(x)", "x")),
    ("reduce_sum and broadcast_in_dim", _program(
        "jax.grad(lambda w: jnp.sum(jnp.broadcast_to(w, (3, 4)) ** 2))(w[:, :1])", "w")),
    ("reduce_sum and broadcast_in_dim", _program(
        "jax.grad(lambda w: jnp.sum(jnp.sum(w, axis=0) * b))(w)", "w", "b")),
    ("reduce_sum and broadcast_in_dim", _program(
        f"jax.jit(jax.grad(lambda x: {_SIN_X}))(x)", "x")),
]


@exercise("transpose_rules", points=4, remote=True,
          parts={"mul and add_any": 1.5, "add, sub and neg": 1,
                 "reduce_sum and broadcast_in_dim": 1.5})
def check_transpose_rules(ns):
    given = probe(ns, "observe", FunctionSource(_OBSERVE_RULES))
    if isinstance(given, str):
        raise CheckFailed(f"transpose_rules is a {given}; expected a dict {{primitive: rule}}")
    missing = [name for name in TRANSPOSED if name not in given]
    if missing:
        raise CheckFailed(f"transpose_rules has no rule for {', '.join(missing)}: the exercise "
                          f"asks for {', '.join(TRANSPOSED)}")
    hint = ("each rule returns one cotangent per input, None for an input that is not an "
            "UndefinedPrimal: mul passes ct times the other factor, add passes ct to both, "
            "sub and neg flip the sign; reduce_sum broadcasts ct back over the summed axes, "
            "broadcast_in_dim sums ct over the axes it created or stretched (then reshapes); "
            "where an elementwise operand was a scalar or had a size-1 axis, sum ct over the "
            "axes it was stretched along")
    _run_parts(ns, {"transpose_rules": "transpose_rules"}, TRANSPOSE_PROGRAMS, hint)


# ---------------------------------------------------------------------------------------
# The transpose of a linear function
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
# Build it: backward_pass, vjp, grad and value_and_grad
# ---------------------------------------------------------------------------------------

BACKWARD_PROGRAMS = [
    ("a variable used twice", _program("jax.grad(lambda x: x * x)(3.0)")),
    ("a variable used twice", _program(f"jax.grad(lambda x: {_SIN_X})(x)", "x")),
    ("a variable used twice", _program("jax.grad(lambda x: jnp.sum(x * x * x))(x)", "x")),
    ("several inputs and outputs", _program(
        "jax.grad(lambda x, y: jnp.dot(x, y) + jnp.sum(x), argnums=(0, 1))(x, y)", "x", "y")),
    ("several inputs and outputs", _program(
        "jax.vjp(lambda x: (x * x, jnp.cos(x)), x)[1]((y, x))", "x", "y")),
    ("several inputs and outputs", _program(f"jax.grad({_LOSS})({_PARAMS})", "x", "w", "b")),
    ("transformed again", _program(f"jax.jit(jax.grad(lambda x: {_SIN_X}))(x)", "x")),
    ("transformed again", _program("jax.grad(jax.grad(jnp.sin))(1.0)")),
    ("transformed again", _program("jax.hessian(lambda x: jnp.sum(x ** 3))(x)", "x")),
]


@exercise("backward_pass", points=4, remote=True,
          parts={"a variable used twice": 2, "several inputs and outputs": 1,
                 "transformed again": 1})
def check_backward_pass(ns):
    hint = ("evaluate the equations that no linear input reaches forwards first; then visit "
            "the others last to first: pop the cotangents of the outputs, call the rule with "
            "UndefinedPrimal(aval) for each linear input, and ADD each returned cotangent to "
            "what its variable already has (add_tangents), since a variable used twice "
            "receives two")
    _run_parts(ns, {"backward_pass": "backward_pass"}, BACKWARD_PROGRAMS, hint)


VJP_PROGRAMS = [
    ("vjp", _program("(lambda out: (out[0], out[1](y)))(jax.vjp(lambda x: jnp.sin(x) * x, x))",
                     "x", "y")),
    ("vjp", _program(
        "jax.vjp(lambda p: {'a': p[0] * p[1], 'b': jnp.sum(p[1])}, (x, y))[1]"
        "({'a': x, 'b': jnp.float32(1.0)})", "x", "y")),
    ("vjp", _program(
        "(lambda out: (out[0], out[1](y), out[2]))"
        "(jax.vjp(lambda x: (jnp.sin(x), jnp.cos(x)), x, has_aux=True))", "x", "y")),
    ("vjp", _program(f"jax.grad({_LOSS})({_PARAMS})", "x", "w", "b")),
    ("grad", _program("jax.grad(lambda x: x * x)(3.0)")),
    ("grad", _program(f"jax.grad({_LOSS})({_PARAMS})", "x", "w", "b")),
    ("grad", _program("jax.grad(lambda x, y: jnp.dot(x, y) * 2.0, argnums=1)(x, y)", "x", "y")),
    ("grad", _program("jax.grad(lambda x, y: jnp.dot(x, y), argnums=(0, 1))(x, y)", "x", "y")),
    ("grad", _program("jax.grad(lambda x: (jnp.sum(x * x), x + 1.0), has_aux=True)(x)", "x")),
    ("grad", _program(f"jax.jit(jax.grad(lambda x: {_SIN_X}))(x)", "x")),
    ("value_and_grad", _program(f"jax.value_and_grad(lambda x: {_SIN_X})(x)", "x")),
    ("value_and_grad", _program(
        f"jax.value_and_grad(lambda p, x: {_LOSS_BODY})({_PARAMS}, x)", "x", "w", "b")),
    ("value_and_grad", _program(
        "jax.value_and_grad(lambda x, y: jnp.sum(x * y), argnums=(0, 1))(x, y)", "x", "y")),
    ("value_and_grad", _program(
        "jax.value_and_grad(lambda x: (jnp.sum(x * x), x * 2.0), has_aux=True)(x)", "x")),
]


@exercise("vjp_and_grad", points=4, remote=True,
          parts={"vjp": 2, "grad": 1, "value_and_grad": 1})
def check_vjp_and_grad(ns):
    hints = {
        "vjp": "flatten the primals (tree_flatten), linearize _FlatFunction(fun, in_tree, "
               "has_aux) with autodiff.linearize_flat; vjp_fun flattens its cotangent, calls "
               "lin.transpose and unflattens with in_tree into a tuple",
        "grad": "call value_and_grad and keep the gradient (and the auxiliary output with "
                "has_aux)",
        "value_and_grad": "differentiate a function of the argnums arguments only (the others "
                          "fixed) with jax.vjp, and call its vjp_fun with a 1.0 shaped like the "
                          "value (lax.full_like); an int argnums gives one gradient, a tuple a "
                          "tuple",
    }
    for name, program in VJP_PROGRAMS:
        with part(name):
            expect_same_with_pieces(ns, {name: name}, [program], hint=hints[name])


# ---------------------------------------------------------------------------------------
# jacrev from vjp
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
# A Hessian-vector product
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
# A numerically stable softplus with custom_vjp
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
