"""Checks for chapter 02, ``jax.numpy`` and ``jax.lax``.

Five exercises are pieces of the engine ("Build it": the broadcasting shape rule, ``bind``, the
evaluation trace, the join on the promotion lattice, ``fori_loop``). Each is graded by running
programs of the public API that go through it -- ``jnp`` arithmetic, ``make_jaxpr``, ``grad``,
``jit`` -- with the learner's piece installed (:mod:`grader.pieces`), against minijax's own
pieces; a program's ``repr`` carries values, dtypes and weak types, and an error's type and
message are compared as text.

The other checks feed the learner's function minijax arrays and, where it matters, run it
under ``minijax.make_jaxpr`` as well: code that only works on concrete values (a Python ``if``
or ``for`` on an array, NumPy functions) fails there, exactly as it would under ``jit``.
Their expected values are textbook formulas evaluated in float64 NumPy on safe inputs, or
numbers known by hand; never the solution notebook.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import minijax.numpy as jnp
from grader.checks import (
    CheckFailed,
    Namespace,
    Returned,
    call,
    exercise,
    expect_close,
    expect_dtype,
    expect_equal,
    part,
    probe,
)
from grader.pieces import Program, expect_same_with_pieces


def traced(ns: Namespace, name: str, shown: str, *args: Any,
           static_argnums: tuple[int, ...] = (), evaluate: list[Any] | None = None
           ) -> dict[str, Any]:
    """What the ``trace`` probe reports of ``minijax.make_jaxpr(ns[name], static_argnums)(*args)``
    (the jaxpr's text, its primitives and, with ``evaluate``, its value on those arguments),
    turning an error into a message that says the learner's code does not survive tracing
    (the same failure ``jit`` gives)."""
    report = probe(ns, "trace", name, list(args), static_argnums, evaluate)
    if "raised" in report:
        raise CheckFailed(
            f"{name} fails under tracing: {shown} raised "
            f"{report['raised']} -- hint: under jit/make_jaxpr arrays are tracers without "
            "values, so Python `if`/`for` on them and NumPy functions cannot work; use lax"
        )
    return report


# ---------------------------------------------------------------------------------------
# 1. logsumexp in lax
# ---------------------------------------------------------------------------------------


def textbook_logsumexp(x: np.ndarray) -> float:
    """log(sum(exp(x))) in float64, on inputs where exp cannot overflow."""
    return float(np.log(np.sum(np.exp(np.asarray(x, dtype=np.float64)))))


@exercise("logsumexp_lax", points=3, remote=True)
def check_logsumexp_lax(ns):
    stable = "compute m = lax.reduce_max(x, axes=(0,)) and return m + log(sum(exp(x - m)))"
    x = jnp.array([1.0, 2.0, 3.0])
    expect_close(call(ns, "logsumexp_lax", x), textbook_logsumexp(np.array([1.0, 2.0, 3.0])),
                 rtol=1e-5, hint="logsumexp(x) = log(sum(exp(x))), a single number")
    used = probe(ns, "jnp_functions_used", "logsumexp_lax")
    if used:
        raise CheckFailed(f"logsumexp_lax uses {', '.join(used)}; write it with lax functions "
                          "only -- hint: lax.reduce_max, lax.exp, lax.sub, lax.reduce_sum, "
                          "lax.log, lax.add")
    expect_close(call(ns, "logsumexp_lax", jnp.array([1000.0, 1000.0])), 1000.0 + np.log(2.0),
                 rtol=1e-6, hint=f"exp(1000) overflows float32; {stable}")
    expect_close(call(ns, "logsumexp_lax", jnp.array([-1000.0, -1000.0])),
                 -1000.0 + np.log(2.0), rtol=1e-6, hint=f"exp(-1000) is 0 in float32; {stable}")
    expect_close(call(ns, "logsumexp_lax", jnp.array([0.0, -np.inf])), 0.0, atol=1e-6,
                 hint="exp(-inf) is 0, so an entry of -inf contributes nothing")
    expect_close(call(ns, "logsumexp_lax", jnp.array([-np.inf, -np.inf])), -np.inf,
                 hint="log(0) is -inf; but m = -inf makes x - m = -inf - (-inf) = nan: where "
                      "the maximum is not finite (lax.is_finite), subtract 0 instead")

    for dtype, values, rtol in [(jnp.float16, [10.0, 11.0, 12.0], 2e-3),
                                (jnp.bfloat16, [100.0, 101.0, 100.5], 1e-2)]:
        x = jnp.array(values, dtype=dtype)
        got = call(ns, "logsumexp_lax", x)
        no_promotion = (f"lax does not promote: a Python scalar is float32, so make constants "
                        f"of x's dtype (e.g. lax.full_like(x, 0) or "
                        f"lax.convert_element_type(0, x.dtype)); keep {np.dtype(dtype)}")
        expect_dtype(got, dtype, hint=no_promotion)
        expect_close(got, textbook_logsumexp(np.array(values)), rtol=rtol, hint=stable)

    x = jnp.array([0.5, -1.0, 2.0, 1e3])
    jaxpr = traced(ns, "logsumexp_lax", f"minijax.make_jaxpr(logsumexp_lax)({x!r})", x,
                   evaluate=[x])
    again = Returned(f"the jaxpr of logsumexp_lax evaluated on {x!r}", jaxpr["value"])
    expect_close(again, 1e3, rtol=1e-6, hint="the traced program should compute the same value")


# ---------------------------------------------------------------------------------------
# Build it: programs that go through a piece
# ---------------------------------------------------------------------------------------


def outcome(expression: str, within: str | None = None) -> Program:
    """A program that evaluates ``expression`` (inside ``with within:``, if given) and returns
    its ``repr`` -- for an array its values, dtype and weak type at once -- or the error it
    raised, as text: an error's type and message are compared with the reference's too.
    A stub's bare ``NotImplementedError`` goes through (the piece is not attempted); one with
    a message is minijax's (``primitive cond has no eager implementation``), an error."""
    body = f"return repr({expression})"
    if within is not None:
        body = f"with {within}:\n            {body}"
    source = ("def program():\n"
              "    try:\n"
              f"        {body}\n"
              "    except Exception as error:\n"
              "        if type(error) is NotImplementedError and not error.args:\n"
              "            raise\n"
              "        return f'{type(error).__name__}: {error}'\n")
    return Program(expression if within is None else f"with {within}: {expression}", source)


def program(expression: str) -> Program:
    """A program that returns ``expression``'s value (arrays are compared within tolerance)."""
    return Program(expression, f"lambda: {expression}")


def primitives_of(expression: str) -> Program:
    """A program returning the primitives of the jaxpr that ``expression`` makes."""
    return Program(f"the equations of {expression}",
                   f"lambda: [e.primitive.name for e in ({expression}).jaxpr.eqns]")


SIN_TIMES_X = "lambda x: jnp.sin(x) * x + 2"
# Eager jnp, make_jaxpr, grad and jit: what each of this chapter's pieces carries.
ENGINE = [
    outcome(f"({SIN_TIMES_X})(jnp.arange(3.0))"),
    program(f"str(jax.make_jaxpr({SIN_TIMES_X})(1.0))"),
    program("jax.grad(lambda x: jnp.sin(x) * x)(1.0)"),
    outcome(f"jax.jit({SIN_TIMES_X})(jnp.arange(3.0))"),
]


# ---------------------------------------------------------------------------------------
# 2. The broadcasting shape rule of lax's elementwise primitives
# ---------------------------------------------------------------------------------------


@exercise("broadcast_shapes_trivially", points=3, remote=True,
          replaces=("minijax.lax.base.broadcast_shapes_trivially",),
          parts={"shapes that broadcast": 2, "shapes that do not": 1})
def check_broadcast_shapes_trivially(ns):
    installs = {"broadcast_shapes_trivially": "broadcast_shapes_trivially"}
    with part("shapes that broadcast"):
        expect_same_with_pieces(ns, installs, [
            program("lax.mul(jnp.ones((2, 1)), jnp.ones((1, 3))).shape"),
            program("lax.add(jnp.ones((2, 3)), jnp.ones((2, 3))).shape"),
            program("lax.add(jnp.ones((2, 3)), 1.0).shape"),
            program("lax.max(jnp.float32(1), jnp.float32(2)).shape"),
            program("lax.add(jnp.ones((0, 3)), jnp.ones((1, 3))).shape"),
            program("(jnp.ones((4, 1, 3)) + jnp.ones((5, 1))).shape"),
            program("str(jax.make_jaxpr(lambda x, y: x * y)(jnp.ones((2, 3)), jnp.ones(3)))"),
            program("jax.grad(lambda v: (v * jnp.ones((2, 3))).sum())(jnp.ones((1, 3)))"),
            *ENGINE,
        ], hint="scalars (shape ()) fit anything; the other shapes must have one length, and "
                "in each position the sizes other than 1 must agree (all 1: the result is 1)")
    with part("shapes that do not"):
        expect_same_with_pieces(ns, installs, [
            outcome("lax.add(jnp.ones((2, 3)), jnp.ones(3))"),
            outcome("lax.add(jnp.ones((2, 3)), jnp.ones((3, 2)))"),
            outcome("jnp.ones((2, 3)) * jnp.ones(4)"),
            outcome("lax.pow(jnp.ones(2), jnp.ones(3))"),
        ], hint="raise a TypeError with the message of section 1's errors: the rank message "
                "names the set of ranks, the broadcasting one lists every shape")


# ---------------------------------------------------------------------------------------
# 3. bind
# ---------------------------------------------------------------------------------------


@exercise("bind", points=2, remote=True)
def check_bind(ns):
    expect_same_with_pieces(ns, {"bind": "bind"}, [
        *ENGINE,
        outcome("lax.cond(jnp.float32(2.0) > 0, lambda u: u + 1, lambda u: u - 1, 2.0)"),
        program("str(jax.make_jaxpr(lambda v: lax.fori_loop(0, v, lambda i, x: 2 * x, 1.0))(3))"),
    ], hint="bind does not compute: it hands (self, args, params) to "
            "core.current_trace().process_primitive and returns what that returns")


# ---------------------------------------------------------------------------------------
# 4. The evaluation trace
# ---------------------------------------------------------------------------------------


@exercise("EvalTrace", points=4, remote=True,
          parts={"values, dtypes and weak types": 2, "errors on the line that caused them": 1,
                 "control flow, grad and jit on top": 1})
def check_eval_trace(ns):
    installs = {"EvalTrace": "EvalTrace"}
    with part("values, dtypes and weak types"):
        expect_same_with_pieces(ns, installs, [
            outcome("jnp.sin(jnp.arange(3.0)) * 2 + jnp.arange(3)"),
            outcome("jnp.arange(3) + 1.5"),
            outcome("jnp.asarray(1.0) * 2"),
            outcome("jnp.int8(1) + 300"),
            outcome("lax.div(-7, 2)"),
            outcome("jnp.mean(jnp.ones((2, 3)), axis=0)"),
            outcome("lax.sort((jnp.array([3, 1, 2]), jnp.array([1.0, 2.0, 3.0])), num_keys=1)"),
        ], hint="compute out_avals = primitive.abstract_eval(*input avals, **params) and the "
                "values with primitive.impl(*NumPy arrays, **params); each result becomes an "
                "Array with its aval's weak type (runtime.put_numpy(value, weak_type))")
    with part("errors on the line that caused them"):
        expect_same_with_pieces(ns, installs, [
            outcome("lax.add(jnp.ones(3), jnp.arange(3))"),
            outcome("lax.add(jnp.ones((2, 3)), jnp.ones(3))"),
            outcome("lax.mul(jnp.ones((2, 3)), 2)"),
        ], hint="the shape rule raises these: run primitive.abstract_eval before the kernel")
    with part("control flow, grad and jit on top"):
        expect_same_with_pieces(ns, installs, [
            outcome("lax.cond(jnp.float32(2.0) > 0, lambda u: u + 1, lambda u: u - 1, 2.0)"),
            outcome("lax.while_loop(lambda c: c < 10, lambda c: c * 2, 1)"),
            outcome("lax.fori_loop(0, 5, lambda i, x: x + i, 0.0)"),
            *ENGINE,
        ], hint="a primitive with an eager_rule (cond, while, scan, jit) is evaluated by "
                "calling primitive.eager_rule(*args, **params), which binds other primitives")


# ---------------------------------------------------------------------------------------
# 5. The join on the promotion lattice
# ---------------------------------------------------------------------------------------

_TABLE = ("[f'{a.__name__} + {b.__name__} -> {jnp.promote_types(a, b)}' "
          "for a in {dtypes} for b in {dtypes}]"
          .replace("{dtypes}", "(np.bool_, np.uint8, np.uint32, np.uint64, np.int8, np.int32, "
                   "np.int64, jnp.bfloat16, np.float16, np.float32, np.float64, np.complex64, "
                   "int, float, complex)"))
_X64 = 'jax.config.override("jax_enable_x64", True)'
_STRICT = 'jax.numpy_dtype_promotion("strict")'


@exercise("least_upper_bound", points=3, remote=True,
          replaces=("minijax.dtypes._least_upper_bound",),
          parts={"jnp's promotion": 1, "with 64-bit types on": 1,
                 "strict mode: no promotion path": 1})
def check_least_upper_bound(ns):
    installs = {"least_upper_bound": "least_upper_bound"}
    hint = ("the upper bounds of a node are the node and everything reachable from it along the "
            "lattice's edges; the join is the common upper bound of all the nodes whose own "
            "upper bounds contain all the common ones")
    with part("jnp's promotion"):
        expect_same_with_pieces(ns, installs, [
            outcome("jnp.uint8(1) + jnp.int8(1)"),
            outcome("jnp.float16(1) + jnp.bfloat16(1)"),
            outcome("jnp.int32(1) + jnp.float16(1)"),
            outcome("jnp.int8(1) + 1"),
            outcome("jnp.arange(3) + 1.5"),
            outcome("jnp.asarray(1.0) + jnp.asarray(2)"),
            outcome("jnp.uint32(1) + jnp.int32(1)"),
            Program("jnp.promote_types(a, b) for every pair of 15 dtypes", f"lambda: {_TABLE}"),
        ], hint=hint)
    with part("with 64-bit types on"):
        expect_same_with_pieces(ns, installs, [
            outcome("jnp.uint32(1) + jnp.int32(1)", within=_X64),
            outcome("jnp.uint64(1) + jnp.int64(1)", within=_X64),
            outcome("jnp.int64(1) + jnp.float32(1)", within=_X64),
        ], hint=hint + "; with x64 on use the lattice without the 32-bit changes")
    with part("strict mode: no promotion path"):
        expect_same_with_pieces(ns, installs, [
            outcome("jnp.ones(3) + jnp.arange(3)", within=_STRICT),
            outcome("jnp.ones(3) + 1.0", within=_STRICT),
            outcome("jnp.arange(3) + 1.0", within=_STRICT),
            outcome("jnp.promote_types(jnp.int8, jnp.uint8)", within=_STRICT),
        ], hint="when the nodes have no least upper bound, raise "
                "dtypes.no_promotion_path(nodes), the TypePromotionError JAX raises")


# ---------------------------------------------------------------------------------------
# 6. A piecewise function that survives tracing
# ---------------------------------------------------------------------------------------


def textbook_huber(x: Any, delta: float) -> np.ndarray:
    x = np.abs(np.asarray(x, dtype=np.float64))
    return np.where(x <= delta, 0.5 * x**2, delta * (x - 0.5 * delta))


@exercise("huber", points=2, remote=True)
def check_huber(ns):
    hint = "0.5 * x**2 where |x| <= delta, delta * (|x| - delta / 2) elsewhere"
    values = [-3.0, -1.0, -0.5, 0.0, 0.25, 1.0, 2.5]
    x = jnp.array(values)
    expect_close(call(ns, "huber", x, 1.0), textbook_huber(values, 1.0), hint=hint)
    expect_close(call(ns, "huber", x, 2.0), textbook_huber(values, 2.0), hint=hint)
    expect_close(call(ns, "huber", jnp.float32(-4.0), 1.5), textbook_huber(-4.0, 1.5),
                 hint=hint + "; a scalar input gives a scalar")
    got = call(ns, "huber", x, 1.0)
    expect_dtype(got, jnp.float32, hint="keep x's dtype")
    x16 = jnp.array(values, dtype=jnp.float16)
    expect_dtype(call(ns, "huber", x16, 1.0), jnp.float16,
                 hint="keep x's dtype: Python scalars adapt to it, float32 arrays would not")

    jaxpr = traced(ns, "huber", f"minijax.make_jaxpr(huber, static_argnums=1)({x!r}, 1.0)",
                   x, 1.0, static_argnums=(1,), evaluate=[x])
    again = Returned(f"the jaxpr of huber(v, 1.0) evaluated on {x!r}", jaxpr["value"])
    expect_close(again, textbook_huber(values, 1.0),
                 hint="choose elementwise with jnp.where (or lax.select)")


# ---------------------------------------------------------------------------------------
# 7. fori_loop, written with scan and while_loop
# ---------------------------------------------------------------------------------------

_SQUARES = "lambda i, acc: acc + i * i"


@exercise("fori_loop", points=3, remote=True, replaces=("minijax.lax.fori_loop",),
          parts={"values, eagerly and under jit": 1,
                 "a scan for bounds known while tracing, a while otherwise": 1,
                 "grad through the loop": 1})
def check_fori_loop(ns):
    installs = {"fori_loop": "fori_loop"}
    hint = ("with both bounds concrete (core.is_concrete), a lax.scan of upper - lower steps "
            "carrying (i, val); otherwise a lax.while_loop carrying (i, upper, val)")
    with part("values, eagerly and under jit"):
        expect_same_with_pieces(ns, installs, [
            outcome("lax.fori_loop(1, 6, lambda i, acc: acc * i, 1)"),
            outcome(f"lax.fori_loop(3, 7, {_SQUARES}, 0.0)"),
            outcome("lax.fori_loop(0, 10, lambda i, ab: (ab[1], ab[0] + ab[1]), (0, 1))"),
            outcome("lax.fori_loop(5, 2, lambda i, x: x * 2, 1.5)"),
            outcome(f"jax.jit(lambda n: lax.fori_loop(0, n, {_SQUARES}, 0))(6)"),
            outcome("jax.jit(lambda x: lax.fori_loop(0, 3, lambda i, x: x / 2, x))(1.0)"),
        ], hint=hint)
    with part("a scan for bounds known while tracing, a while otherwise"):
        expect_same_with_pieces(ns, installs, [
            primitives_of(f"jax.make_jaxpr(lambda x: lax.fori_loop(0, 5, {_SQUARES}, x))(0)"),
            primitives_of(f"jax.make_jaxpr(lambda n: lax.fori_loop(0, n, {_SQUARES}, 0))(5)"),
            primitives_of(f"jax.make_jaxpr(lambda n: lax.fori_loop(n, 5, {_SQUARES}, 0))(0)"),
        ], hint=hint)
    with part("grad through the loop"):
        expect_same_with_pieces(ns, installs, [
            program("jax.grad(lambda a: lax.fori_loop(0, 5, lambda i, x: 0.5 * (x + a / x), "
                    "a))(2.0)"),
            program("jax.grad(lambda x: lax.fori_loop(1, 4, lambda i, x: jnp.sin(x) * i, x))"
                    "(1.0)"),
        ], hint="reverse mode needs a loop of known length: a scan, when the bounds are "
                "concrete")


# ---------------------------------------------------------------------------------------
# 8. cumsum with scan
# ---------------------------------------------------------------------------------------


@exercise("cumsum_scan", points=2, remote=True, replaces=("minijax.numpy.cumsum",))
def check_cumsum_scan(ns):
    hint = ("lax.scan(step, init, x) with step(total, row) = (total + row, total + row); "
            "return the stacked outputs (the second result of scan)")
    x = jnp.array([1.0, 2.0, 3.0, 4.0])
    got = call(ns, "cumsum_scan", x)
    expect_close(got, np.cumsum([1.0, 2.0, 3.0, 4.0]), hint=hint)
    expect_dtype(got, jnp.float32, hint="keep x's dtype")
    x = jnp.array([3, -1, 4, 1, -5], dtype=jnp.int32)
    got = call(ns, "cumsum_scan", x)
    expect_equal(got, np.cumsum([3, -1, 4, 1, -5]), hint=hint)
    expect_dtype(got, jnp.int32, hint="start from a zero of x's dtype: jnp.zeros_like(x[0])")
    rows = np.arange(6.0).reshape(3, 2)
    expect_close(call(ns, "cumsum_scan", jnp.array(rows)), np.cumsum(rows, axis=0),
                 hint="scan walks along axis 0, so the running total has the shape of one "
                      "row, x[0]")

    jaxpr = traced(ns, "cumsum_scan",
                   "minijax.make_jaxpr(cumsum_scan)(jnp.arange(6.0).reshape(3, 2))",
                   jnp.array(rows))
    names = jaxpr["primitives"]
    if "scan" not in names or "cumsum" in names:
        raise CheckFailed(f"the jaxpr of cumsum_scan has the equations {names}; expected a "
                          "`scan` (and no `cumsum`) -- hint: use lax.scan, not jnp.cumsum")
