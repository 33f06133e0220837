"""Checks for chapter 02, ``jax.numpy`` and ``jax.lax``.

Every check feeds the learner's function minijax arrays and, where it matters, runs it under
``minijax.make_jaxpr`` as well: code that only works on concrete values (a Python ``if`` or
``for`` on an array, NumPy functions) fails there, exactly as it would under ``jit``.

Expected values never come from the solution notebook: they are textbook formulas evaluated in
float64 NumPy on safe inputs, numbers known by hand, or minijax's own reference functions
(``lax.fori_loop``, ``dtypes.least_upper_bound``) that the test suite checks against JAX.
Functions and lattices handed to the learner's code are wrapped so that messages show them as
readable text.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

import minijax
import minijax.numpy as jnp
from grader.checks import (
    CheckFailed,
    Namespace,
    Returned,
    Shown,
    brief,
    call,
    call_each,
    call_returned,
    exercise,
    expect_close,
    expect_dtype,
    expect_equal,
    learner_function,
    part,
    probe,
    reported,
)
from minijax import dtypes, lax


class NamedLattice(dict):
    """A lattice (a plain dict for the learner's code) that messages show by its name."""

    def __init__(self, name: str, edges: dict[str, tuple[str, ...]]) -> None:
        super().__init__(edges)
        self.name = name

    def __repr__(self) -> str:
        return self.name


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
# 2. A trace that counts primitives
# ---------------------------------------------------------------------------------------


_THREE_STEPS = "def three_steps(v):\n    for _ in range(3):\n        v = 2 * v + 1\n    return v\n"


def _three_steps(v: Any) -> Any:
    for _ in range(3):
        v = 2 * v + 1
    return v


@exercise("count_primitives", points=2, remote=True)
def check_count_primitives(ns):
    hint = ("subclass core.Trace with process_primitive(self, primitive, args, params) that "
            "counts primitive.name, then computes with `with core.set_current_trace(None): "
            "return primitive.bind(*args, **params)`; run f inside "
            "`with core.set_current_trace(your_trace):`")
    cases = [
        ("lambda v: jnp.sin(v) * 2 + v", lambda v: jnp.sin(v) * 2 + v, None,
         (jnp.arange(3.0),), np.sin(np.arange(3.0)) * 2 + np.arange(3.0),
         {"sin": 1, "mul": 1, "add": 1}),
        ("three_steps  # v = 2 * v + 1, three times", _three_steps, _THREE_STEPS,
         (jnp.float32(1.0),), 15.0, {"mul": 3, "add": 3}),
        ("lambda a, b: a @ b + a.sum()", lambda a, b: a @ b + a.sum(), None,
         (jnp.ones((2, 3)), jnp.ones(3)), [9.0, 9.0],
         {"dot_general": 1, "reduce_sum": 1, "add": 1}),
    ]
    learner_function(ns, "count_primitives")
    for text, fun, source, args, value, counts in cases:
        f = Shown(text, fun, source)
        # called from the evaluation trace, which is restored whatever happens
        got = call_returned(
            lambda *a: probe(ns, "call_from_eval_trace", "count_primitives", *a),
            "count_primitives", f, *args)
        observed = got.value
        got = Returned(got.call, observed["value"])
        result = got.value
        if not (isinstance(result, tuple) and len(result) == 2):
            raise CheckFailed(f"{got.call} returned {brief(result)}; expected a pair "
                              "(result of f, dict of counts)")
        if f.calls != 1:
            raise CheckFailed(f"{got.call} called f {f.calls} times; expected once -- hint: "
                              "count while f really runs, under your trace")
        expect_close(Returned(f"{got.call}[0]", result[0]), value,
                     hint="the first element is what f returns")
        found = dict(result[1]) if isinstance(result[1], dict) else result[1]
        if found != counts:
            raise CheckFailed(f"{got.call}[1] is {found!r}; expected {counts!r} -- hint: {hint}")
        if not observed["restored"]:
            raise CheckFailed(f"after {got.call} the current trace is still "
                              f"{observed['trace_type']} -- hint: use "
                              "`with core.set_current_trace(...)`, which restores the old one")


# ---------------------------------------------------------------------------------------
# 3. The least upper bound on a lattice given as data
# ---------------------------------------------------------------------------------------

DIAMOND = NamedLattice("DIAMOND", {"a": ("b", "c"), "b": ("d",), "c": ("d",), "d": ()})
TWO_TOPS = NamedLattice("TWO_TOPS", {"a": ("c", "d"), "b": ("c", "d"), "c": (), "d": ()})


def _expect_no_bound(shown: str, outcome: dict[str, Any], why: str) -> None:
    """``shown``, a call of the learner's least_upper_bound reported by ``call_each``, must have
    raised a ValueError."""
    if "ValueError" in outcome.get("kinds", ()):
        return
    if "raised" in outcome:
        raise CheckFailed(f"{shown} raised {outcome['raised']}; expected a ValueError ({why})")
    raise CheckFailed(f"{shown} returned {outcome['value']!r}; expected a ValueError ({why}) -- "
                      "hint: collect the common upper bounds, and raise ValueError unless "
                      "exactly one of them lies below all the others")


@exercise("least_upper_bound", points=3, remote=True,
          parts={"the dtype lattice, with and without x64": 1, "a lattice given as data": 1,
                 "pairs without a least upper bound": 1})
def check_least_upper_bound(ns):
    hint = ("the upper bounds of a node are the node and everything reachable from it along "
            "the lattice's edges; the join is the common upper bound whose own upper bounds "
            "contain all the common ones")
    learner_function(ns, "least_upper_bound")
    with part("the dtype lattice, with and without x64"):
        _expect_dtype_joins(ns, hint)
    with part("a lattice given as data"):
        expect_equal(call(ns, "least_upper_bound", "b", "c", DIAMOND), "d",
                     hint="use the lattice you are given, not the dtype lattice")
        expect_equal(call(ns, "least_upper_bound", "a", "d", DIAMOND), "d", hint=hint)
        expect_equal(call(ns, "least_upper_bound", "c", "c", DIAMOND), "c",
                     hint="a node is an upper bound of itself")
    with part("pairs without a least upper bound"):
        _expect_strict_joins(ns, hint)


def _expect_dtype_joins(ns: Any, hint: str) -> None:
    """Every pair of dtypes joins as minijax's promotion does, with x64 and without."""
    x64 = NamedLattice("dtypes.LATTICE", dtypes.LATTICE)
    x32 = NamedLattice("{**dtypes.LATTICE, **dtypes.X32_LATTICE_CHANGES}",
                       {**dtypes.LATTICE, **dtypes.X32_LATTICE_CHANGES})
    expect_equal(call(ns, "least_upper_bound", "u8", "i8", x64), "i16", hint=hint)
    if dict(x64) != dtypes.LATTICE:
        raise CheckFailed("least_upper_bound('u8', 'i8', dtypes.LATTICE) modified the lattice "
                          "it was given; leave it alone")
    pairs = list(itertools.product(dtypes.LATTICE, repeat=2))
    for lattice, flags in [(x64, {"x64": True}), (x32, {"x64": False})]:
        got = call_each(ns, "least_upper_bound", [(a, b, lattice) for a, b in pairs])
        for (a, b), (shown, outcome) in zip(pairs, got):
            want = dtypes.least_upper_bound(a, b, strict=False, **flags)
            expect_equal(reported(shown, outcome, hint), want, hint=hint)


def _expect_strict_joins(ns: Any, hint: str) -> None:
    """On the strict lattice, and on one with two tops, a pair without a least upper bound
    raises a ValueError; the other pairs join."""
    strict = NamedLattice("dtypes.STRICT_LATTICE", dtypes.STRICT_LATTICE)
    cases = []
    for a, b in itertools.product(dtypes.LATTICE, repeat=2):
        try:
            cases.append((a, b, dtypes.least_upper_bound(a, b, strict=True, x64=True)))
        except ValueError:
            cases.append((a, b, None))  # no bound: a ValueError is expected
    got = call_each(ns, "least_upper_bound", [(a, b, strict) for a, b, _ in cases]
                    + [("a", "b", TWO_TOPS)])
    for (_, _, want), (shown, outcome) in zip(cases, got):
        if want is None:
            _expect_no_bound(shown, outcome, "in strict mode they have no common upper bound")
        else:
            expect_equal(reported(shown, outcome, hint), want, hint=hint)
    _expect_no_bound(*got[-1], "c and d are both upper bounds of a and b, and neither is "
                     "below the other")


# ---------------------------------------------------------------------------------------
# 4. A piecewise function that survives tracing
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
# 5. fori_loop with while_loop
# ---------------------------------------------------------------------------------------

FACTORIAL = Shown("lambda i, acc: acc * i", lambda i, acc: acc * i)
SQUARES = Shown("lambda i, acc: acc + i * i", lambda i, acc: acc + i * i)
FIBONACCI = Shown("lambda i, ab: (ab[1], ab[0] + ab[1])", lambda i, ab: (ab[1], ab[0] + ab[1]))
HALVE = Shown("lambda i, x: x / 2", lambda i, x: x / 2)


@exercise("fori_loop_via_while", points=3, remote=True, replaces=("minijax.lax.fori_loop",))
def check_fori_loop_via_while(ns):
    hint = ("carry (i, upper, val); cond_fun: i < upper; body_fun: (i + 1, upper, "
            "body_fun(i, val)); return the val of the final carry")
    cases = [(1, 6, FACTORIAL, 1), (0, 4, SQUARES, 0.0), (3, 7, SQUARES, 0),
             (0, 10, FIBONACCI, (0, 1)), (0, 3, HALVE, jnp.float32(1.0)),
             (5, 5, FACTORIAL, 7), (5, 2, SQUARES, 1.5)]
    for lower, upper, body, init in cases:
        got = call(ns, "fori_loop_via_while", lower, upper, body, init)
        want = lax.fori_loop(lower, upper, body, init)
        wanted = minijax.tree_util.tree_leaves(want)
        leaves = minijax.tree_util.tree_leaves(got.value)
        if len(leaves) != len(wanted):
            raise CheckFailed(f"{got.call} returned {brief(got.value)}; expected {brief(want)}")
        for leaf, expected in zip(leaves, wanted):
            expect_equal(Returned(got.call, leaf), np.asarray(expected), hint=hint)
            expect_dtype(Returned(got.call, leaf), expected.dtype, hint=hint)

    jaxpr = traced(ns, "fori_loop_via_while",
                   "minijax.make_jaxpr(fori_loop_via_while, static_argnums=(0, 2, 3))"
                   f"(0, 5, {SQUARES!r}, 0)", 0, 5, SQUARES, 0, static_argnums=(0, 2, 3),
                   evaluate=[jnp.int32(6)])
    if "while" not in jaxpr["primitives"]:
        raise CheckFailed(f"the jaxpr of fori_loop_via_while has no `while` equation:\n"
                          f"{jaxpr['text']}\n-- hint: use lax.while_loop")
    again = Returned("the jaxpr of fori_loop_via_while(0, n, ...) evaluated at n = 6",
                     jaxpr["value"])
    expect_equal(again, 55, hint=hint)

    jaxpr = traced(ns, "fori_loop_via_while",
                   "minijax.make_jaxpr(fori_loop_via_while, static_argnums=(0, 1, 2))"
                   f"(0, 3, {HALVE!r}, 1.0)", 0, 3, HALVE, 1.0, static_argnums=(0, 1, 2))
    names = jaxpr["primitives"]
    if "while" not in names or "scan" in names:
        raise CheckFailed(f"with bounds 0 and 3, the jaxpr of fori_loop_via_while has the "
                          f"equations {names}; expected a `while` (and no `scan`) -- hint: use "
                          "lax.while_loop, not lax.fori_loop")


# ---------------------------------------------------------------------------------------
# 6. cumsum with scan
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
