"""Checks for chapter 04, forward-mode automatic differentiation.

Exercises 1 to 4 build the engine's forward mode: the JVP trace, JVP rules, ``jvp`` and
``jacfwd``. Each is graded by what it does to minijax: programs that use the public API
(``jax.jvp``, ``jax.grad``, ``jax.hessian``, ``make_jaxpr``) run with the learner's piece
installed and with minijax's own, and must agree (:mod:`grader.pieces`).

The other exercises use forward mode. Every check feeds the learner's code minijax arrays (or
Python floats where the exercise is about plain numbers). Expected values are derivatives
written out by hand as NumPy formulas in float64, never taken from the solution notebook.

Those exercises are about *forward* mode, so while a learner's function runs, the
transformations that would do the exercise for it (reverse mode, ``jax.grad`` and friends)
are replaced by stubs that raise ``grader.checks.ForbiddenTransformation`` with a message
naming what to use instead. Functions handed to the learner's code are ``grader.checks.Shown``:
they show as readable text in messages and count their calls, so a check can tell "one forward
pass" from "one pass per input".
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
    forbidding,
    learner_function,
    part,
    probe,
    show,
)
from grader.pieces import Program, expect_same_with_pieces
from grader.plain import FunctionSource
from minijax import lax

REVERSE_MODE = ("grad", "value_and_grad", "vjp", "jacrev", "hessian", "linearize")


def f64(x: Any) -> np.ndarray:
    return np.asarray(x, dtype=np.float64)


# ---------------------------------------------------------------------------------------
# Build it: the JVP trace, JVP rules, jvp and jacfwd, graded by running the engine on them
# ---------------------------------------------------------------------------------------


def _program(call: str, **args: Any) -> Program:
    """The public-API use ``call`` of the named arguments, shown with their values."""
    values = ", ".join(f"{name} = {show(value)}" for name, value in args.items())
    return Program(f"{call} with {values}" if args else call, f"lambda {', '.join(args)}: {call}",
                   tuple(args.values()))


X3 = np.array([1.0, 2.0, 3.0], np.float32)
T3 = np.array([0.5, -1.0, 2.0], np.float32)
G = "lambda x1, x2: jnp.log(x1) + x1 * x2 - jnp.sin(x2)"  # chapter 03's g


def _check_piece(ns: Any, piece: str, parts: dict[str, tuple[str, list[Program]]],
                 first: Callable[[str], None] = lambda part_name: None) -> None:
    """Each part's programs give the same results with the notebook's ``piece`` (the name it
    has in minijax) installed as with minijax's own; ``parts`` holds, by part, the hint and
    the programs; ``first(part)`` may check more first."""
    for name, (hint, programs) in parts.items():
        with part(name):
            first(name)
            expect_same_with_pieces(ns, {piece: piece}, programs, hint=hint)


TRACE_PARTS = {
    "jvp": (
        "split each argument with to_primal_tangent, run jvp_rules[primitive] under "
        "self.rule_trace, and wrap the primal and tangent it returns with self.lift",
        [
            _program("jax.jvp(lambda x: jnp.sum(jnp.sin(x) * x), (x,), (t,))", x=X3, t=T3),
            _program(f"jax.jvp({G}, (x1, x2), (t1, t2))", x1=np.float32(2), x2=np.float32(5),
                     t1=np.float32(2), t2=np.float32(-1)),
            _program("jax.jvp(lambda x: jnp.sin(x) * x if x > 0 else -x, (x,), (t,))",
                     x=np.float32(-2), t=np.float32(1)),
            _program("jax.jvp(lambda x: jnp.exp(x) * jnp.cos(x[::-1]), (x,), (t,))", x=X3, t=T3),
        ],
    ),
    "symbolic_zeros": (
        "a value that is not one of this trace's tracers is a constant: its tangent "
        "is Zero.like(x); when every tangent is a Zero, bind the primitive on the "
        "primals under self.parent and return that",
        [
            _program(f"str(jax.make_jaxpr(lambda x1, t1: jax.jvp(lambda a: ({G})(a, x2), (x1,), "
                     "(t1,)))(x1, t1))", x1=np.float32(2), t1=np.float32(1), x2=np.float32(5)),
            _program("jax.jvp(lambda x, y: (x * 2.0, jnp.cos(y)), (x, y), (t, t))", x=X3, y=X3,
                     t=T3),
        ],
    ),
    "grad_and_nesting": (
        "grad runs your trace with a rule_trace that records tangents: run the rule "
        "under self.rule_trace and the all-zero case under self.parent; a tracer of "
        "another trace is a constant here",
        [
            _program("jax.grad(lambda x: jnp.sum(jnp.sin(x) * x))(x)", x=X3),
            _program("jax.jit(jax.grad(lambda x: jnp.sum(jnp.log(x) / x * jnp.cos(x))))(x)",
                     x=X3),
            _program("jax.jvp(lambda x: jax.jvp(jnp.sin, (x,), (1.0,))[1], (x,), (1.0,))",
                     x=np.float32(1)),
            _program("jax.hessian(lambda x: jnp.sum(jnp.exp(x) * x[0]))(x)", x=X3),
        ],
    ),
}


@exercise("JVPTrace", points=4, remote=True,
          parts={"jvp": 1.5, "symbolic_zeros": 1, "grad_and_nesting": 1.5})
def check_jvp_trace(ns):
    _check_piece(ns, "JVPTrace", TRACE_PARTS)


RULE_PARTS = {
    "sin_cos_exp": (
        "d sin x = cos x dx, d cos x = -sin x dx, d exp x = exp x dx: multiply the "
        "tangent by the derivative, with lax functions",
        [
            _program("jax.jvp(jnp.sin, (x,), (t,))", x=X3, t=T3),
            _program("jax.jvp(jnp.cos, (x,), (t,))", x=X3, t=T3),
            _program("jax.jvp(jnp.exp, (x,), (t,))", x=X3, t=T3),
            _program("jax.grad(lambda x: jnp.sum(jnp.exp(jnp.sin(x)) + jnp.cos(x)))(x)", x=X3),
        ],
    ),
    "log_tanh": (
        "d log x = dx / x; d tanh x = (1 - tanh(x)**2) dx",
        [
            _program("jax.jvp(jnp.log, (x,), (t,))", x=X3, t=T3),
            _program("jax.jvp(jnp.tanh, (x,), (t,))", x=X3, t=T3),
            _program("jax.grad(lambda x: jnp.sum(jnp.tanh(jnp.log(x))))(x)", x=X3),
        ],
    ),
    "mul_div": (
        "the product rule d(xy) = dx y + x dy and the quotient rule d(x/y) = dx / y -"
        " x dy / y**2; an input whose tangent is a Zero adds no term (add_tangents "
        "skips Zeros)",
        [
            _program("jax.jvp(lambda x, y: x * y / (x + y), (x, y), (t, t))", x=X3, y=X3[::-1],
                     t=T3),
            _program("jax.jvp(lambda x: (x * 3.0, 3.0 / x, x / 3.0), (x,), (t,))", x=X3, t=T3),
            _program("jax.grad(lambda x, y: jnp.sum(x * y / (1.0 + y)), argnums=(0, 1))(x, y)",
                     x=X3, y=T3),
            _program("jax.grad(jax.grad(lambda x: x * x * x / (1.0 + x)))(x)", x=np.float32(2)),
        ],
    ),
}


@exercise("jvp_rules", points=3, remote=True,
          parts={"sin_cos_exp": 1, "log_tanh": 1, "mul_div": 1})
def check_jvp_rules(ns):
    if "jvp_rules" not in ns:
        raise CheckFailed("jvp_rules is not defined: did you run the cell that defines it?")
    written = set(probe(ns, "observe", FunctionSource(_RULES_WRITTEN)))
    _check_piece(ns, "jvp_rules", RULE_PARTS,
                 lambda part_name: _expect_rules(written, part_name.split("_")))


_RULES_WRITTEN = """def rules_written(ns):
    return sorted(primitive.name for primitive in ns["jvp_rules"]
                  if hasattr(primitive, "name"))
"""


def _expect_rules(written: set[str], names: list[str]) -> None:
    """The part's primitives are all in the learner's table (none of them: not attempted)."""
    missing = [name for name in names if name not in written]
    if len(missing) == len(names):
        raise NotImplementedError(f"jvp_rules has no rule for {', '.join(names)} yet")
    if missing:
        raise CheckFailed(f"jvp_rules has no rule for {', '.join(missing)}: add "
                          f"{', '.join(f'lax.{name}_p' for name in missing)}")


PARAMS = {"w": np.array([1.0, 2.0], np.float32), "b": np.float32(0.5)}
DIRECTION = {"w": np.array([1.0, 0.0], np.float32), "b": np.float32(0.0)}
JVP_PARTS = {
    "arrays": (
        "make the tangents arrays (jnp.asarray), run ad.jvp_flat, and turn the output"
        " tangents that are Zero into arrays (ad.instantiate)",
        [
            _program("jax.jvp(lambda x: jnp.sum(jnp.sin(x) * x), (x,), (t,))", x=X3, t=T3),
            _program("jax.jvp(lambda x: x ** 2, (3.0,), (1.0,))"),
            _program("jax.jvp(lambda x: jnp.ones(3), (x,), (t,))  # a constant output", x=X3,
                     t=T3),
        ],
    ),
    "pytrees": (
        "flatten primals and tangents with tree_flatten, unflatten the flat arguments"
        " before calling fun, flatten its output (keeping its tree) and unflatten "
        "both results with that tree",
        [
            _program("jax.jvp(lambda p: jnp.tanh(jnp.array([0.5, -1.0]) @ p['w'] + p['b']), "
                     "(params,), (direction,))", params=PARAMS, direction=DIRECTION),
            _program("jax.jvp(lambda a, b: {'sum': a[0] + b, 'pair': (a[1] * b, b)}, "
                     "([x, x], y), ([t, t], t))", x=X3, y=X3[::-1], t=T3),
            _program("jax.jacfwd(lambda x: jnp.sin(x) * x[0])(x)", x=X3),
        ],
    ),
}


@exercise("jvp", points=2, remote=True, parts={"arrays": 1, "pytrees": 1})
def check_jvp(ns):
    _check_piece(ns, "jvp", JVP_PARTS)


H = "lambda x: jnp.stack([x[0] * x[1] + x[2], x[0] ** 2 * x[2]])"  # section 4's h
JACFWD_PARTS = {
    "jacobians": (
        "one jvp per input direction, all at once: vmap a jvp over the rows of an "
        "identity (shaped like x), with out_axes=-1, then reshape the last axis to "
        "x.shape",
        [
            _program(f"jax.jacfwd({H})(x)", x=X3),
            _program("jax.jacfwd(lambda x: jnp.outer(x, x))(x)  # a matrix output", x=X3),
            _program("jax.jacfwd(lambda t: jnp.sin(jnp.arange(1.0, 5.0) * t))(t)  # a scalar input",
                     t=np.float32(0.5)),
            _program("jax.jacfwd(lambda m: jnp.sum(m @ m))(m)  # a matrix input",
                     m=np.arange(4, dtype=np.float32).reshape(2, 2)),
            Program("the number of calls of f = lambda x: jnp.sin(x) * x by jax.jacfwd(f)(x), "
                    f"with x = {show(X3)} (vmap traces f once)",
                    "lambda x: (lambda calls: [jax.jacfwd(lambda x: calls.append(x) or "
                    "jnp.sin(x) * x)(x), len(calls)][1])([])", (X3,)),
        ],
    ),
    "argnums_and_hessian": (
        "differentiate the argument args[argnums] only, the others held fixed; "
        "jax.hessian calls jacfwd(g, argnums, has_aux=..., holomorphic=...)",
        [
            _program("jax.jacfwd(lambda a, b: a * jnp.sin(b), argnums=1)(a, b)", a=X3, b=T3),
            _program("jax.hessian(lambda x: jnp.sum(x ** 3) * x[0])(x)", x=X3),
            _program("jax.jacfwd(jax.jacfwd(lambda x: jnp.prod(jnp.sin(x))))(x)", x=X3),
        ],
    ),
}


@exercise("jacfwd", points=2, remote=True, parts={"jacobians": 1, "argnums_and_hessian": 1})
def check_jacfwd(ns):
    _check_piece(ns, "jacfwd", JACFWD_PARTS)


# ---------------------------------------------------------------------------------------
# 5. Dual numbers of second order
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
# 6. Directional derivative
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
# 7. Newton's method with jvp
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
# 8. Forward-mode Hessian-vector product
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
