"""Checks for chapter 06, jaxprs.

Every check builds its jaxprs with ``jax.make_jaxpr`` on small programs, twice: here, for the
expected values, and in the learner's process (a jaxpr is not plain data), where an instrument
of the check's hands them to the learner's function and reports what came back. Expected
values come from NumPy formulas, from counts worked out by hand, or from small reference walks
over the jaxpr written below (independent of the solution notebook); results of rewritten
jaxprs are also compared by running them with minijax's own ``eval_jaxpr``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import Any

import numpy as np

import minijax as jax
import minijax.numpy as jnp
from grader.checks import (
    CheckFailed,
    Returned,
    brief,
    exercise,
    expect_close,
    grouped,
    learner_function,
    part,
    probe,
    reported,
)
from grader.pieces import Program as Run
from grader.pieces import expect_same_with_pieces
from grader.plain import FunctionSource, Opaque
from minijax import lax, pieces
from minijax.jaxpr import ClosedJaxpr, Jaxpr, eval_jaxpr

#: The functions and constants the programs below use. They are source so that the learner's
#: process can build the same programs (and so the same jaxprs) as this one: a jaxpr is not
#: plain data, so the learner's functions receive jaxprs made there, by :data:`_OBSERVE`.
_PRELUDE = """
_TABLE = np.array([10.0, 20.0, 30.0], dtype=np.float32)
_W = np.array([[0.5, -1.0], [2.0, 0.25], [-0.5, 1.5]], dtype=np.float32)
_B = np.array([0.1, -0.2], dtype=np.float32)
_OFFSETS = jnp.array([1.0, -1.0, 0.5])


@jax.custom_jvp
def _log1pexp(x):
    return jnp.log1p(jnp.exp(x))


_log1pexp.defjvp(lambda primals, tangents: (_log1pexp(primals[0]),
                                            tangents[0] * lax.logistic(primals[0])))


@jax.jit
def _step(v):
    return jnp.sin(v) + 1.0


@jax.jit
def _shift(v):
    return jnp.exp(-v * v) + _TABLE


def _collatz_steps(n):
    def step(state):
        m, steps = state
        m = lax.cond(lax.rem(m, 2) == 0, lambda k: lax.div(k, 2), lambda k: 3 * k + 1, m)
        return m, steps + 1

    return lax.while_loop(lambda state: state[0] != 1, step, (n, 0))[1]


def _cond_in_scan(v):
    def body(total, x):
        return total + lax.cond(x > 0, lambda u: u * u, lambda u: -u, x), None

    return lax.scan(body, jnp.zeros((), jnp.float32), v)[0]
"""
_HELPERS: dict[str, Any] = {"np": np, "jnp": jnp, "lax": lax, "jax": jax}
exec(_PRELUDE, _HELPERS)
_TABLE, _W, _B = _HELPERS["_TABLE"], _HELPERS["_W"], _HELPERS["_B"]

#: Runs in the learner's process (the ``observe`` probe): builds each program's jaxpr there,
#: hands it (or the program) to the learner's function and reports, as plain data, what came
#: back and what the learner's result does -- never an expected value. Each call's report is
#: ``{"raised": ...}`` (the learner's error), ``{"failed": ...}`` (an instrument of the check's,
#: run inside the learner's code, objected) or the exercise's observations.
_OBSERVE = """def observe_jaxprs(ns, prelude, name, programs):
    from minijax import core, pieces
    checks = __import__("grader.checks", fromlist=["CheckFailed", "describe_exception"])
    scope = {"np": np, "jnp": jnp, "lax": lax, "jax": jax}
    exec(prelude, scope)
    learner = ns[name]

    class NoBinding(core.Trace):
        def process_primitive(self, primitive, args, params):
            raise checks.CheckFailed(
                f"evaluate bound the primitive {primitive.name} (through eval_jaxpr, jnp, lax "
                "or an operator on a minijax array); compute with the NumPy functions in "
                "NUMPY_RULES, on NumPy arrays (np.asarray(...) every value you read)")

    def attempt(work):
        try:
            return {"value": work()}
        except NotImplementedError:
            raise
        except checks.CheckFailed as exc:
            return {"failed": str(exc)}
        except Exception as exc:
            return {"raised": checks.describe_exception(exc),
                    "kinds": [kind.__name__ for kind in type(exc).__mro__]}

    def hoisted(fun, args):
        got = attempt(lambda: learner(fun, *args))
        pair = got.get("value")
        if not (isinstance(pair, tuple) and len(pair) == 2 and callable(pair[0])):
            return got
        g, consts = pair[0], list(pair[1])
        arrays = [np.asarray(a) for a in args]
        doubled = [np.asarray(c) * 2 for c in consts]
        traced = attempt(lambda: jax.make_jaxpr(g)(*consts, *arrays))
        if "value" in traced:
            traced["value"] = [str(traced["value"]), bool(traced["value"].jaxpr.constvars)]
        return {"value": "a pair", "consts": consts, "run": attempt(lambda: g(*consts, *arrays)),
                "doubled": attempt(lambda: g(*doubled, *arrays)), "traced": traced}

    def report(source, args):
        fun = eval(source, scope)
        closed = jax.make_jaxpr(fun)(*args)
        if name == "hoist_constants":
            return hoisted(fun, args)
        if name == "evaluate":
            consts = [np.asarray(c) for c in closed.consts]
            with core.set_current_trace(NoBinding()):
                return attempt(lambda: learner(closed.jaxpr, consts,
                                               *[np.asarray(a) for a in args]))
        return attempt(lambda: learner(closed.jaxpr))

    # the interpreter is graded, not the pieces of the engine the notebook installed
    with pieces.using({piece: pieces.reference(piece) for piece in pieces.installed()}):
        return [report(source, args) for source, args in programs]
"""


class Program:
    """A program of the checks: its text (for messages), its source (evaluated with the
    prelude's names, here and in the learner's process), example arguments."""

    def __init__(self, text: str, source: str, *args: Any) -> None:
        self.text, self.source, self.args = text, source, args
        self.fun = eval(source, _HELPERS)

    def closed(self) -> ClosedJaxpr:
        # minijax's own pieces: a notebook's check() runs where its pieces are installed
        with pieces.using({name: pieces.reference(name) for name in pieces.installed()}):
            return jax.make_jaxpr(self.fun)(*self.args)

    def describe(self) -> str:
        return f"the jaxpr of `{self.text}`"


def observed(ns: Any, name: str, programs: list[Program]) -> list[dict[str, Any]]:
    """What the learner's ``name`` did with each program's jaxpr (see :data:`_OBSERVE`)."""
    learner_function(ns, name)
    return probe(ns, "observe", FunctionSource(_OBSERVE), _PRELUDE, name,
                 [[program.source, list(program.args)] for program in programs])


def call_text(name: str, shown: str, where: str = "") -> str:
    """How messages show a call of the learner's ``name`` on ``shown``, followed by ``where``
    (what the names in ``shown`` stand for)."""
    return f"{name}({shown})" + (f" {where}" if where else "")


def returned(text: str, report: dict[str, Any]) -> Returned:
    """The learner's call ``text`` as reported, or the failure it raised (or an instrument of
    the check's raised inside it)."""
    if "failed" in report:
        raise CheckFailed(report["failed"])
    return reported(text, report)


def _nested(params: dict[str, Any]) -> Iterator[Jaxpr]:
    """The jaxprs held in an equation's params (a Jaxpr, a ClosedJaxpr, or tuples of them)."""
    for value in params.values():
        for item in value if isinstance(value, tuple) else (value,):
            if isinstance(item, ClosedJaxpr):
                yield item.jaxpr
            elif isinstance(item, Jaxpr):
                yield item


def _vector(*values: float) -> np.ndarray:
    return np.array(values, dtype=np.float32)


def _printed(source: str, args: str, shown: str = "") -> Run:
    """The program ``str(jax.make_jaxpr(f)(args))`` for ``f = source``."""
    return Run(f"str(jax.make_jaxpr(f)({args})) for f = {source}{shown}",
               f"lambda: str(jax.make_jaxpr({source})({args}))")


# ---------------------------------------------------------------------------------------
# Build it: each piece runs programs of the public API, a part of the exercise per group
# ---------------------------------------------------------------------------------------


def _run_parts(ns: Any, piece: str, parts: dict[str, list[Run]], hint: str) -> None:
    """Each group of ``parts`` gives what minijax's own pieces give, with the learner's
    ``piece`` (the notebook's object of the same name) installed."""
    for name, programs in parts.items():
        with part(name):
            expect_same_with_pieces(ns, {piece: piece}, programs, hint=hint)


# ---------------------------------------------------------------------------------------
# Build it: the trace that records equations
# ---------------------------------------------------------------------------------------

_ERROR = """def program(x):
    try:
        jax.make_jaxpr(lambda v: v if v > 0 else -v)(x)
    except Exception as error:
        return f"{type(error).__name__}: {error}"
"""

_TRACE_PROGRAMS = {
    "recording equations": [
        _printed("lambda x: jnp.sin(x) * 2.0 + x", "1.0"),
        _printed("lambda x, y: (jnp.sin(x) * y, jnp.cos(y), x)", "1.0, 2.0",
                 "  (several outputs, an input among them)"),
        _printed("lambda p: jnp.tanh(p['x'] @ p['w'])",
                 "{'x': np.ones((2, 3), np.float32), 'w': np.ones((3, 4), np.float32)}"),
        _printed("lambda k, v: lax.sort_key_val(k, v)[1]", "np.ones(3, np.float32), "
                 "np.ones(3, np.float32)", "  (a primitive with several results)"),
    ],
    "constants and literals": [
        _printed("lambda x: x * 2 + np.float32(0.5) * x", "1.0",
                 "  (host scalars are literals)"),
        _printed("lambda x: x * table + table", "np.ones(3, np.float32)",
                 "  (table = np.arange(3.0, dtype=np.float32): one constvar)")._replace(
            source="def program():\n    table = np.arange(3.0, dtype=np.float32)\n"
                   "    return str(jax.make_jaxpr(lambda x: x * table + table)"
                   "(np.ones(3, np.float32)))\n"),
        _printed("lambda x: x * two", "1.0",
                 "  (two = jnp.float32(2.0), made before: a jax Array is a constvar, even a "
                 "scalar one)")._replace(
            source="def program():\n    two = jnp.float32(2.0)\n"
                   "    return str(jax.make_jaxpr(lambda x: x * two)(1.0))\n"),
    ],
    "jit, grad and control flow on your trace": [
        Run("jax.jit(lambda x: jnp.sin(x) * x)(x)", "lambda x: jax.jit(lambda x: jnp.sin(x) "
            "* x)(x)", [_vector(0.5, 1.0, 2.0)]),
        Run("jax.grad(jax.jit(lambda x: jnp.sin(x) * x))(x)", "lambda x: jax.grad(jax.jit("
            "lambda x: jnp.sin(x) * x))(x)", [np.float32(0.5)]),
        _printed("lambda x: lax.cond(x > 0, lambda v: v * x, lambda v: -v, 2.0 * x)", "1.0",
                 "  (a branch closes over x: a tracer of the enclosing trace)"),
        _printed("jax.grad(lambda x: lax.fori_loop(0, 3, lambda i, v: jnp.sin(v) * x, x))",
                 "1.0"),
        Run("the error of jax.make_jaxpr(lambda v: v if v > 0 else -v)(x)", _ERROR,
            [np.float32(1.0)]),
    ],
}


@exercise("JaxprTrace", points=4, remote=True, parts={"recording equations": 2,
                                                      "constants and literals": 1,
                                                      "jit, grad and control flow on your "
                                                      "trace": 1})
def check_jaxpr_trace(ns):
    hint = ("new_arg appends a new Var to invars and returns JaxprTracer(self, aval, var); "
            "atom gives a tracer of this trace its var, else asks self.constant(x): a Literal "
            "stays, any other value gets one constvar per id(value), its value appended to "
            "consts; process_primitive appends JaxprEqn(primitive, invars, outvars, params, "
            "SourceInfo.capture()) with outvars from primitive.abstract_eval")
    _run_parts(ns, "JaxprTrace", _TRACE_PROGRAMS, hint)


# ---------------------------------------------------------------------------------------
# Build it: the printer, whose text must be JAX's
# ---------------------------------------------------------------------------------------


_PRINTER_PROGRAMS = {
    "one line": [
        _printed("lambda x: jnp.sin(x) * 2.0", "1.0"),
        _printed("lambda x, y: jnp.sin(x) * y", "1.0, 2.0"),
        _printed("lambda x: (x, 2.0 * x, 1.0)", "1.0", "  (an input and a literal as outputs)"),
        _printed("lambda x: jnp.sin(x) * 0.25", "np.ones(1, np.float32)",
                 "  (80 characters)"),
    ],
    "several lines": [
        _printed("lambda x: jnp.sin(x) * 2.0 + 1.0", "1.0"),
        _printed("lambda x, y: (jnp.sin(x) * y, jnp.cos(y))", "1.0, 2.0",
                 "  (two outputs)"),
        _printed("lambda x: jnp.sin(x) * 0.125", "np.ones(1, np.float32)",
                 "  (81 characters on one line)"),
        _printed("lambda x: jnp.sum(x ** 2, axis=1) / x.shape[1]",
                 "np.ones((2, 3), np.float32)", "  (parameters)"),
        _printed("lambda x: x.astype(jnp.int32) + 1", "1.0"),
        Run("str(jax.make_jaxpr(jax.grad(lambda x: jnp.sin(x) * x))(1.0))",
            "lambda: str(jax.make_jaxpr(jax.grad(lambda x: jnp.sin(x) * x))(1.0))"),
    ],
    "literals, constants and unused results": [
        _printed("lambda x: x * 0.1 + np.float32(0.1)", "1.0",
                 "  (a Python float as written, a float32 as its value)"),
        _printed("lambda x: x * table + 1.0", "np.ones(3, np.float32)",
                 "  (table = np.arange(3.0, dtype=np.float32), a constvar)")._replace(
            source="lambda: str(jax.make_jaxpr(lambda x: x * np.arange(3.0, dtype=np.float32) "
                   "+ 1.0)(np.ones(3, np.float32)))"),
        _printed("lambda x: (jnp.cos(x), jnp.sin(x))[1]", "1.0", "  (an unused result)"),
        _printed("lambda x: jnp.zeros(3) + x", "1.0"),
        Run("str(jax.make_jaxpr(f)(1.0)) for f, 30 times x = jnp.sin(x) * 2.0 (names past z: "
            "ba, bb, ...)",
            "def program():\n"
            "    def f(x):\n"
            "        for i in range(30):\n"
            "            x = jnp.sin(x) * 2.0\n"
            "        return x\n"
            "    return str(jax.make_jaxpr(f)(1.0))\n"),
    ],
}


@exercise("print_jaxpr", points=4, remote=True, parts={"one line": 1, "several lines": 2,
                                                       "literals, constants and unused results": 1})
def check_print_jaxpr(ns):
    hint = ("name the variables a, b, ..., z, ba, bb, ... as they first appear (constvars, "
            "invars, then each equation's results); a result nothing reads is _; a binder is "
            "name:aval.str_short(), a literal literal.text(); one line if it fits in 80 "
            "characters, else the equations on lines of their own, indented by 4, and '  in'")
    _run_parts(ns, "print_jaxpr", _PRINTER_PROGRAMS, hint)


# ---------------------------------------------------------------------------------------
# Build it: eval_jaxpr, the interpreter that binds
# ---------------------------------------------------------------------------------------


def _evaluated(source: str, then: str, args: list, shown: str) -> Run:
    """A program that traces ``source`` on its arguments into ``closed`` and returns
    ``then`` (an expression of ``closed``, ``run`` = jax.core.eval_jaxpr, and ``args``)."""
    return Run(shown, "def program(*args):\n"
                      f"    closed = jax.make_jaxpr({source})(*args)\n"
                      "    run = jax.core.eval_jaxpr\n"
                      f"    return {then}\n", args)


_RUN = "run(closed.jaxpr, closed.consts, *args)"

_EVAL_PROGRAMS = {
    "straight-line jaxprs": [
        _evaluated("lambda v: jnp.sin(v) * 2.0 + v", _RUN, [_vector(0.5, 1.0, 2.0)],
                   "eval_jaxpr(closed.jaxpr, closed.consts, x) for closed = "
                   "jax.make_jaxpr(lambda v: jnp.sin(v) * 2.0 + v)(x)"),
        _evaluated("lambda v: (v * np.arange(3.0, dtype=np.float32), 1.0, v)", _RUN,
                   [_vector(0.5, 1.0, 2.0)], "eval_jaxpr(closed.jaxpr, closed.consts, x) for "
                   "closed = jax.make_jaxpr(lambda v: (v * table, 1.0, v))(x)  (a constvar, a "
                   "literal and an input among the outputs)"),
        _evaluated("lax.sort_key_val", _RUN, [_vector(3.0, 1.0, 2.0), _vector(30.0, 10.0, 20.0)],
                   "eval_jaxpr(closed.jaxpr, closed.consts, k, v) for closed = "
                   "jax.make_jaxpr(lax.sort_key_val)(k, v)  (a primitive with two results)"),
    ],
    "under transformations": [
        _evaluated("lambda v: jnp.sin(v) * 2.0", "str(jax.make_jaxpr(lambda *a: run("
                   "closed.jaxpr, closed.consts, *a))(*args))", [np.float32(1.0)],
                   "str(jax.make_jaxpr(lambda x: eval_jaxpr(closed.jaxpr, closed.consts, x))(x)) "
                   "for closed = jax.make_jaxpr(lambda v: jnp.sin(v) * 2.0)(x)  (literals stay "
                   "literals)"),
        _evaluated("lambda v: jnp.sin(v) * v", "jax.grad(lambda *a: run(closed.jaxpr, "
                   "closed.consts, *a)[0])(*args)", [np.float32(0.5)],
                   "jax.grad(lambda x: eval_jaxpr(closed.jaxpr, closed.consts, x)[0])(x) for "
                   "closed = jax.make_jaxpr(lambda v: jnp.sin(v) * v)(x)"),
        _printed("lambda x: jax.jit(lambda v: jnp.sin(v) * 2.0, inline=True)(x) + 1.0", "1.0",
                 "  (an inlined jit is evaluated into the trace)"),
    ],
    "control flow runs on it": [
        *[Run(f"lax.cond(x > 0, lambda v: v * 2.0, lambda v: -v, x) for x = {x}",
              "lambda x: lax.cond(x > 0, lambda v: v * 2.0, lambda v: -v, x)", [np.float32(x)])
          for x in (3.0, -2.0)],
        Run("lax.while_loop(lambda v: v < 10.0, lambda v: v * 2.0, x)",
            "lambda x: lax.while_loop(lambda v: v < 10.0, lambda v: v * 2.0, x)",
            [np.float32(1.5)]),
        Run("lax.scan(lambda c, x: (c + x, c * x), 0.0, xs)",
            "lambda xs: lax.scan(lambda c, x: (c + x, c * x), 0.0, xs)",
            [_vector(1.0, 2.0, 3.0)]),
        Run("jax.grad(lambda x: lax.cond(x > 0, jnp.sin, jnp.cos, x))(x)",
            "lambda x: jax.grad(lambda x: lax.cond(x > 0, jnp.sin, jnp.cos, x))(x)",
            [np.float32(0.5)]),
    ],
}


@exercise("eval_jaxpr", points=3, remote=True, parts={"straight-line jaxprs": 1,
                                                      "under transformations": 1,
                                                      "control flow runs on it": 1})
def check_eval_jaxpr(ns):
    hint = ("an environment dict from Var to value, filled from constvars and consts, then "
            "invars and args; for each equation, read its inputs (a Literal's value is "
            "atom.val), bind: eqn.primitive.bind(*inputs, **eqn.params), store the results "
            "(a list if eqn.primitive.multiple_results) under eqn.outvars; return the outvars "
            "read the same way, as a list")
    _run_parts(ns, "eval_jaxpr", _EVAL_PROGRAMS, hint)


# ---------------------------------------------------------------------------------------
# Build it: dead-code elimination, the pass jit's lowering runs first
# ---------------------------------------------------------------------------------------

#: ``pe.dce_jaxpr`` in a program's source (programs see only jax, jnp, lax and np).
_DCE = '__import__("minijax.interpreters.partial_eval", fromlist=["pe"]).dce_jaxpr'


def _cut(source: str, args: str, used: str, instantiate: str = "False") -> str:
    """A program that cuts the jaxpr of ``source`` with ``dce_jaxpr`` and shows the result."""
    return (f"lambda: (lambda cut: (str(cut[0]), len(cut[0].consts), list(cut[1])))("
            f"{_DCE}(jax.make_jaxpr({source})({args}), {used}, {instantiate}))")


_PRINTED = """def printed(x):
    import contextlib, io
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        y = jax.jit(lambda v: (jax.debug.print("v = {}", v), jnp.exp(v), v + 1.0)[2])(x)
    return out.getvalue(), y
"""

_DCE_PROGRAMS = {
    "removing dead equations": [
        Run("jax.make_jaxpr(f)(1.0), cut by dce_jaxpr(closed, True), for f = lambda x: "
                "(jnp.cos(x), jnp.exp(x) * 2.0, jnp.sin(x))[2]",
                _cut("lambda x: (jnp.cos(x), jnp.exp(x) * 2.0, jnp.sin(x))[2]", "1.0", "True")),
        Run("dce_jaxpr(closed, [True, False]) for the two outputs of "
                "f = lambda x, y: (jnp.sin(x) * y, jnp.cos(y))",
                _cut("lambda x, y: (jnp.sin(x) * y, jnp.cos(y))", "1.0, 2.0", "[True, False]")),
        Run("jax.jit(f).lower(x).as_text() for f = lambda x: (jnp.log(jnp.exp(x) * 2.0), "
                "x + 1.0)[1]  (the lowering cuts dead code first)",
                "lambda x: jax.jit(lambda x: (jnp.log(jnp.exp(x) * 2.0), x + 1.0)[1])"
                ".lower(x).as_text()", [_vector(1.0, 2.0)]),
        Run("jax.jit(lambda k, v: lax.sort_key_val(k, v)[1])(k, v)  (an equation with one "
                "of its two results used)", "lambda k, v: jax.jit(lambda k, v: "
                "lax.sort_key_val(k, v)[1])(k, v)",
                [_vector(3.0, 1.0, 2.0), _vector(30.0, 10.0, 20.0)]),
        Run("jax.grad(jax.jit(lambda x: jnp.sin(x) * x))(x)",
                "lambda x: jax.grad(jax.jit(lambda x: jnp.sin(x) * x))(x)", [np.float32(0.5)]),
    ],
    "inputs, constants and instantiate": [
        *[Run(f"dce_jaxpr(closed, {used}) for f = lambda x, y: (x * table, jnp.sin(y))  "
              "(table a NumPy array, a constvar)",
              _cut("lambda x, y: (x * np.arange(3.0, dtype=np.float32), jnp.sin(y))",
                   "np.ones(3, np.float32), 1.0", used))
          for used in ("[True, False]", "[False, True]")],
        Run("dce_jaxpr(closed, True, instantiate=[False, True]) for f = lambda x, y: "
                "jnp.sin(x)", _cut("lambda x, y: jnp.sin(x)", "1.0, 2.0", "True",
                                   "[False, True]")),
        Run("dce_jaxpr(closed, False, instantiate=True) for f = lambda x: jnp.sin(x) + x",
                _cut("lambda x: jnp.sin(x) + x", "1.0", "False", "True")),
        Run("jax.jit(lambda x, y: x * 2.0)(x, y)  (an unused argument)",
                "lambda x, y: jax.jit(lambda x, y: x * 2.0)(x, y)",
                [_vector(1.0, 2.0), _vector(5.0, 6.0)]),
    ],
    "effects and nested jaxprs": [
        Run("the text printed by jax.jit(lambda v: (jax.debug.print('v = {}', v), "
                "jnp.exp(v), v + 1.0)[2])(x), and its result  (debug.print has an effect: "
                "it stays)", _PRINTED, [np.float32(1.5)]),
        Run("dce_jaxpr(closed, True) for f = lambda x: jax.jit(lambda v: (jnp.sin(v), "
                "jnp.cos(v)))(x)[0]  (a jit's body is cut by its rule in dce_rules)",
                _cut("lambda x: jax.jit(lambda v: (jnp.sin(v), jnp.cos(v)))(x)[0]", "1.0",
                     "True")),
        Run("jax.jit(lambda x: lax.cond(x > 0, lambda v: (v, jnp.exp(v)), "
                "lambda v: (-v, v), x)[0])(x)",
                "lambda x: jax.jit(lambda x: lax.cond(x > 0, lambda v: (v, jnp.exp(v)), "
                "lambda v: (-v, v), x)[0])(x)", [np.float32(-2.0)]),
    ],
}


@exercise("dce_jaxpr", points=4, remote=True, parts={"removing dead equations": 2,
                                                     "inputs, constants and instantiate": 1,
                                                     "effects and nested jaxprs": 1})
def check_dce_jaxpr(ns):
    hint = ("walk the equations backwards with a set of live Vars, starting with the used "
            "outputs; skip an equation none of whose results is live unless "
            "has_effects(Jaxpr([], [], [], [eqn])); let dce_rules[eqn.primitive] (if any) cut a "
            "kept equation, then add its Var inputs to the live set; an input is used if live "
            "or instantiated, a constvar (with its value) stays if live")
    _run_parts(ns, "dce_jaxpr", _DCE_PROGRAMS, hint)


# ---------------------------------------------------------------------------------------
# Exercise 1: count the primitives, nested jaxprs included
# ---------------------------------------------------------------------------------------


def _count(jaxpr: Jaxpr) -> Counter[str]:
    counts: Counter[str] = Counter()
    for eqn in jaxpr.eqns:
        counts[eqn.primitive.name] += 1
        for inner in _nested(eqn.params):
            counts.update(_count(inner))
    return counts


@exercise("count_primitives", points=2, remote=True)
def check_count_primitives(ns):
    hint = ("count every equation of the jaxpr by eqn.primitive.name, then recurse into every "
            "jaxpr in eqn.params: a value there may be a Jaxpr, a ClosedJaxpr (use its .jaxpr) "
            "or a tuple of them (a cond's branches); count a nested jaxpr once per equation that "
            "carries it")
    by_hand = Program("lambda x: lax.cond(x > 0.0, lax.sin, lax.cos, x)",
                      "lambda x: lax.cond(x > 0.0, lax.sin, lax.cos, x)", 1.0)
    fori = "lambda x: lax.fori_loop(0, 3, lambda i, v: jnp.sin(v) * v, x)"
    cases = [
        (Program("lambda x: jnp.sin(x) * 2.0", "lambda x: jnp.sin(x) * 2.0", 1.0),
         {"sin": 1, "mul": 1}),
        (by_hand, {"gt": 1, "convert_element_type": 1, "cond": 1, "sin": 1, "cos": 1}),
        (Program("lambda x: _step(_step(x))  (_step = jax.jit(lambda v: jnp.sin(v) + 1.0))",
                 "lambda x: _step(_step(x))", _vector(1.0, 2.0)),
         {"jit": 2, "sin": 2, "add": 2}),
        (Program("collatz_steps (a while_loop whose body holds a cond)", "_collatz_steps", 27),
         None),
        (Program(fori, fori, 2.0), None),
        (Program(f"jax.grad({fori})", f"jax.grad({fori})", 2.0), None),
        (Program("lambda v, i: v.at[i].add(1.0)", "lambda v, i: v.at[i].add(1.0)",
                 np.zeros(3, np.float32), 1), None),
        (Program("log1pexp (a custom_jvp)", "_log1pexp", 3.0), None),
    ]
    reports = observed(ns, "count_primitives", [program for program, _ in cases])
    for (program, expected), report in zip(cases, reports):
        jaxpr = program.closed().jaxpr
        reference = dict(_count(jaxpr))
        if expected is not None:
            assert reference == expected, (reference, expected)  # the checks' own sanity
        got = returned(call_text("count_primitives", program.describe()), report)
        try:
            counts = {name: n for name, n in dict(got.value).items() if n}
        except (TypeError, ValueError):
            raise CheckFailed(f"{got.call} returned {brief(got.value)}; expected a dict or "
                              f"Counter like {reference}") from None
        if counts != reference:
            wrong = sorted(name for name in set(counts) | set(reference)
                           if counts.get(name, 0) != reference.get(name, 0))
            details = ", ".join(f"{name}: {counts.get(name, 0)} instead of "
                                f"{reference.get(name, 0)}" for name in wrong)
            raise CheckFailed(f"{got.call} returned {counts}; expected {reference} ({details}). "
                              f"The jaxpr is:\n{jaxpr}\n-- hint: {hint}")


# ---------------------------------------------------------------------------------------
# Exercise 2: captured constants as arguments
# ---------------------------------------------------------------------------------------

@exercise("hoist_constants", points=2, remote=True)
def check_hoist_constants(ns):
    hint = ("closed = jax.make_jaxpr(f)(*args); return a function g(*values) that calls core."
            "eval_jaxpr(closed.jaxpr, values[:n], *values[n:]) with n = "
            "len(closed.jaxpr.constvars), and list(closed.consts)")
    cases = [
        Program("lambda x: x * scale + offsets  (scale a NumPy array, offsets a minijax array)",
                "lambda x: x * _TABLE + _OFFSETS", _vector(1.0, 2.0, 3.0)),
        Program("lambda x: jnp.tanh(x @ W + b) @ W.T  (W and b NumPy arrays)",
                "lambda x: jnp.tanh(x @ _W + _B) @ _W.T", np.ones((4, 3), np.float32)),
        Program("lambda x: jnp.sin(x) * 2.0  (no constants)", "lambda x: jnp.sin(x) * 2.0",
                _vector(0.5, 1.5)),
    ]
    for program, report in zip(cases, observed(ns, "hoist_constants", cases)):
        closed = program.closed()
        got = returned(call_text("hoist_constants", "f, *args", f"for f = `{program.text}`, "
                                 f"args = {brief(list(program.args))}"), report)
        if got.value != "a pair":
            raise CheckFailed(f"{got.call} returned {brief(got.value)}; expected a pair (g, "
                              f"consts) with a function g -- hint: {hint}")
        consts = report["consts"]
        if len(consts) != len(closed.consts):
            raise CheckFailed(f"{got.call} returned {len(consts)} constants; the jaxpr has "
                              f"{len(closed.consts)} constvars:\n{closed}\n-- hint: {hint}")
        for i, (mine, theirs) in enumerate(zip(consts, closed.consts)):
            if np.shape(mine) != np.shape(theirs) or not np.allclose(mine, theirs):
                raise CheckFailed(f"{got.call}: constant {i} is {brief(mine)}; expected "
                                  f"{brief(theirs)} (constvar order) -- hint: {hint}")
        args = [np.asarray(a) for a in program.args]
        expected = eval_jaxpr(closed.jaxpr, closed.consts, *args)
        origin = f"with g from {got.call}"
        _expect_outputs(returned(f"g(*consts, *args) {origin}", report["run"]), expected, hint)
        doubled = [np.asarray(c) * 2 for c in consts]
        _expect_outputs(returned(f"g(*[2 * c for c in consts], *args) {origin}",
                                 report["doubled"]),
                        eval_jaxpr(closed.jaxpr, doubled, *args),
                        "g must use the constants it is given, not the ones f captured")
        traced = report["traced"]
        if "value" not in traced:
            raise CheckFailed(f"jax.make_jaxpr(g)(*consts, *args) raised "
                              f"{traced.get('raised', traced.get('failed'))} for g from "
                              f"{got.call}")
        text, captures = traced["value"]
        if captures:
            raise CheckFailed(f"g from {got.call} still captures constants: its jaxpr is\n"
                              f"{text}\n-- hint: {hint}")


def _expect_outputs(got: Returned, expected: list, hint: str) -> None:
    """A list of outputs, each close to the expected one."""
    if not isinstance(got.value, (list, tuple)) or len(got.value) != len(expected):
        raise CheckFailed(f"{got.call} returned {brief(got.value)}; expected a list of "
                          f"{len(expected)} output(s), like eval_jaxpr returns -- hint: {hint}")
    for i, (value, want) in enumerate(zip(got.value, expected)):
        expect_close(Returned(call=f"output {i} of {got.call}", value=np.asarray(value)),
                     np.asarray(want, dtype=np.float64), rtol=1e-5, atol=1e-6, hint=hint)


# ---------------------------------------------------------------------------------------
# Exercise 3: evaluate a jaxpr with NumPy
# ---------------------------------------------------------------------------------------


#: The parts of the evaluate exercise: how many of its programs, in order, each holds.
_EVALUATE_PARTS = {"straight-line programs": 3, "cond, nested jit and literal outputs": 5}


@exercise("evaluate", points=3, remote=True, parts={"straight-line programs": 1,
                                                    "cond, nested jit and literal outputs": 2})
def check_evaluate(ns):
    if "NUMPY_RULES" not in ns:
        raise CheckFailed("NUMPY_RULES is not defined: run the cell that defines it first")
    hint = ("keep a dict from Var to NumPy array; fill it from constvars and invars; for each "
            "equation read its inputs (a Literal's value is np.asarray(atom.val)), then: for "
            "cond, evaluate params['branches'][index] on the other inputs; for jit, evaluate "
            "params['jaxpr'] (a ClosedJaxpr: its .jaxpr and .consts); otherwise call "
            "NUMPY_RULES[name](*inputs, **eqn.params), and wrap a single result in a list")
    x = _vector(-1.5, -0.5, 0.0, 0.5, 2.0)
    m = np.array([[1.0, -2.0, 0.5], [0.0, 3.0, -1.0]], dtype=np.float32)
    batch = np.array([[1.0, 0.0, -1.0], [0.5, 2.0, 1.0], [-1.0, 1.0, 0.0], [0.0, 0.0, 3.0]],
                     dtype=np.float32)
    once = np.exp(-_vector(0.5, -1.0, 2.0) ** 2) + _TABLE
    cases = [
        (Program("lambda x: jnp.sin(x) * 2.0 + 1.0", "lambda v: jnp.sin(v) * 2.0 + 1.0", x),
         [np.sin(x) * 2 + 1]),
        (Program("lambda x: jnp.tanh(x @ W + b)  (W and b NumPy arrays)",
                 "lambda v: jnp.tanh(v @ _W + _B)", batch), [np.tanh(batch @ _W + _B)]),
        (Program("lambda m: jnp.mean(m ** 2, axis=1)", "lambda v: jnp.mean(v**2, axis=1)", m),
         [np.mean(m**2, axis=1)]),
        (Program("lambda x: lax.cond(x > 0, lambda v: v * 2.0, lambda v: -v, x)",
                 "lambda v: lax.cond(v > 0, lambda u: u * 2.0, lambda u: -u, v)",
                 np.float32(3.0)), [6.0]),
        (Program("lambda x: lax.cond(x > 0, lambda v: v * 2.0, lambda v: -v, x)",
                 "lambda v: lax.cond(v > 0, lambda u: u * 2.0, lambda u: -u, v)",
                 np.float32(-2.0)), [2.0]),
        (Program("lambda x: jnp.where(x > 0, x, 0.1 * x)  (jnp.where is a nested jit)",
                 "lambda v: jnp.where(v > 0, v, 0.1 * v)", x), [np.where(x > 0, x, 0.1 * x)]),
        (Program("lambda x: shift(shift(x))  (shift = jax.jit(lambda v: jnp.exp(-v * v) + "
                 "table), table a NumPy array: a constant of the jit's jaxpr)",
                 "lambda v: _shift(_shift(v))", _vector(0.5, -1.0, 2.0)),
         [np.exp(-once * once) + _TABLE]),
        (Program("lambda x: (x, 2.0 * x, 1.0)", "lambda v: (v, 2.0 * v, 1.0)", x),
         [x, 2 * x, 1.0]),
    ]
    learner_function(ns, "evaluate")
    reports = observed(ns, "evaluate", [program for program, _ in cases])
    for (name, (program, expected)), report in zip(grouped(cases, _EVALUATE_PARTS), reports):
        with part(name):
            _check_evaluated(program, expected, report, hint)


def _check_evaluated(program: Program, expected: list, report: Any, hint: str) -> None:
    """What the learner's evaluate returned for one program (``report``) is ``expected``."""
    closed = program.closed()
    consts = [np.asarray(c) for c in closed.consts]
    args = [np.asarray(a) for a in program.args]
    shown = f"{program.describe()}, {brief(consts)}, *{brief(args)}"
    got = returned(call_text("evaluate", shown), report)
    if not isinstance(got.value, (list, tuple)) or len(got.value) != len(expected):
        raise CheckFailed(f"{got.call} returned {brief(got.value)}; expected a list of "
                          f"{len(expected)} NumPy array(s). The jaxpr is:\n{closed}\n"
                          f"-- hint: {hint}")
    for i, (value, want) in enumerate(zip(got.value, expected)):
        if not isinstance(value, (np.ndarray, np.generic)):
            kind = value.type_name if isinstance(value, Opaque) else type(value).__name__
            raise CheckFailed(f"output {i} of {got.call} is a {kind}; "
                              f"expected a NumPy array -- hint: {hint}")
        expect_close(Returned(call=f"output {i} of {got.call}", value=value), want, rtol=1e-5,
                     atol=1e-6, hint=f"the jaxpr is:\n{closed}\n{hint}")


# ---------------------------------------------------------------------------------------
# Exercise 5: flops of loops and branches
# ---------------------------------------------------------------------------------------


@exercise("flops", points=2, remote=True)
def check_flops(ns):
    if "eqn_flops" not in ns:
        raise CheckFailed("eqn_flops is not defined: run the cell that defines the cost model "
                          "first")
    hint = ("add up eqn_flops(eqn) over the equations, except: a scan costs params['length'] "
            "times its body (params['jaxpr'].jaxpr); a cond costs its most expensive branch "
            "(max over params['branches']); a jit costs its body (params['jaxpr'].jaxpr), a "
            "custom_jvp_call its params['call_jaxpr'].jaxpr; a while raises ValueError")
    x43 = np.ones((4, 3), np.float32)
    w32 = np.ones((3, 2), np.float32)
    cases = [
        # dot_general 2 * 8 * 3 = 48, tanh 8
        (Program("lambda x, w: jnp.tanh(x @ w)  (x: f32[4,3], w: f32[3,2])",
                 "lambda x, w: jnp.tanh(x @ w)", x43, w32), 56),
        # 5 steps of (mul 3 + add 3)
        (Program("lambda xs: lax.scan(lambda c, x: (c * 0.5 + x, c), jnp.zeros(3), xs)  "
                 "(xs: f32[5,3])",
                 "lambda xs: lax.scan(lambda c, x: (c * 0.5 + x, c), jnp.zeros(3), xs)",
                 np.ones((5, 3), np.float32)), 30),
        # 4 steps of (counter add 1 + sin 10 + mul 10)
        (Program("lambda x: lax.fori_loop(0, 4, lambda i, v: jnp.sin(v) * v, x)  (x: f32[10])",
                 "lambda x: lax.fori_loop(0, 4, lambda i, v: jnp.sin(v) * v, x)",
                 np.ones(10, np.float32)), 84),
        # max(mul 8 + reduce_sum 8, reduce_sum 8); the comparison is no flop in the model
        (Program("lambda p, v: lax.cond(p > 0, lambda u: jnp.sum(u * u), jnp.sum, v)  "
                 "(v: f32[8])",
                 "lambda p, v: lax.cond(p > 0, lambda u: jnp.sum(u * u), jnp.sum, v)", 1.0,
                 np.ones(8, np.float32)), 16),
        # two calls of a jit of (sin 5 + add 5)
        (Program("lambda x: _step(_step(x))  (_step = jax.jit(lambda v: jnp.sin(v) + 1.0), "
                 "x: f32[5])", "lambda x: _step(_step(x))", np.ones(5, np.float32)), 20),
        # exp 6 + log1p 6
        (Program("log1pexp (a custom_jvp), x: f32[6]", "_log1pexp", np.ones(6, np.float32)), 12),
        # 6 steps of (add 1 + max(mul 1, neg 1))
        (Program("a scan over f32[6] whose body adds lax.cond(x > 0, u * u, -u)",
                 "_cond_in_scan", np.ones(6, np.float32)), 12),
    ]
    loop = "lambda x: lax.while_loop(lambda v: v < 10.0, lambda v: v * 2.0, x)"
    programs = [program for program, _ in cases] + [Program(loop, loop, 1.0)]
    reports = observed(ns, "flops", programs)
    for (program, expected), report in zip(cases, reports):
        jaxpr = program.closed().jaxpr
        got = returned(call_text("flops", program.describe()), report)
        if not isinstance(got.value, (int, np.integer)) or isinstance(got.value, bool):
            raise CheckFailed(f"{got.call} returned {brief(got.value)}; expected the integer "
                              f"{expected} -- hint: {hint}")
        if got.value != expected:
            raise CheckFailed(f"{got.call} returned {got.value}; expected {expected}. The jaxpr "
                              f"is:\n{jaxpr}\n-- hint: {hint}")
    text, report = f"flops({programs[-1].describe()})", reports[-1]
    if "ValueError" in report.get("kinds", ()):
        return
    if "raised" in report:
        raise CheckFailed(f"{text} raised {report['raised']}; expected a ValueError "
                          "(a while loop's trip count is unknown)")
    raise CheckFailed(f"{text} returned {brief(report['value'])}; expected a ValueError: a while "
                      "loop's trip count is only known when it runs")
