"""Checks for chapter 07, jit and XLA.

Expected values come from minijax itself, never from the solution notebook: programs are run
eagerly (minijax's eager results are checked against JAX by the test suite), a lowering rule's
module is compiled by minijax's NumPy backend and run, and its operations compared, as a multiset
(several orders are equally right), with those minijax lowers for an equivalent ``lax`` program
(equal to JAX's text, also tested), a CSE pass with the number of operations minijax's own pass
keeps, and predicted cache keys with what ``jit`` really does. The Build-it pieces run the
engine: the base primitives' lowering rules lower ``jit`` programs whose operations are
compared with minijax's (JAX's) the same way, and whose text minijax's NumPy backend and, where
JAX is installed, real XLA compile and run; jit's cache key and cache run jitted functions
called twice, and their results and trace counts are compared with minijax's own cache's.

The learner's functions receive jaxprs, modules and arguments that are not plain data, so an
instrument of the check's (:data:`_OBSERVE`) builds them in the learner's process from the
same source (:data:`_PRELUDE`, the programs' text) and reports what came back; the
comparisons are made here.
"""

from __future__ import annotations

import ast
import collections
from typing import Any

import numpy as np

import minijax as jax
import minijax.numpy as jnp
from grader.checks import (
    CheckFailed,
    brief,
    exercise,
    grouped,
    learner_function,
    part,
    probe,
    reported,
    show,
)
from grader.pieces import Program, difference, expect_same_with_pieces
from grader.plain import FunctionSource
from minijax import lax, pieces
from minijax.compiler import passes, stablehlo

f32 = np.float32

#: What the programs and cases below use, as source, so that the learner's process builds the
#: same values as this one (jaxprs, modules and weakly typed scalars are not plain data).
_PRELUDE = """
from minijax import core
from minijax.lax.base import FLOAT, operand, unary_rule

f32 = np.float32
c = jnp.array([1.0, 2.0, 3.0])
double = jax.jit(lambda y: y * 2.0)
big = np.zeros(2000, f32)
big_other = big.copy()
big_other[1000] = 1.0  # differs from big in the middle only: their reprs are equal


@jax.jit
def _tanh_twice(x):
    return jnp.tanh(x) * 2.0 + jnp.tanh(x) * 2.0


_leaky_relu_p = core.Primitive("leaky_relu")


@_leaky_relu_p.def_impl
def _leaky_relu_impl(x, *, negative_slope):
    return np.where(x > 0, x, x * np.asarray(negative_slope, x.dtype))


_leaky_relu_p.def_abstract_eval(
    lambda x, negative_slope: unary_rule("leaky_relu", FLOAT, None, x))


def _leaky_relu(x, negative_slope):
    return _leaky_relu_p.bind(operand(x), negative_slope=float(negative_slope))


_LEAKY_CASES = [((3,), np.float32, 0.1), ((), np.float32, 0.2), ((2, 2), np.float16, 0.01),
                ((4,), jnp.bfloat16, 0.3)]


# The inputs the compiled lowering runs on: negative, zero and positive elements.
def _leaky_inputs(shape, dtype):
    base = np.array([-2.0, -0.5, 0.0, 1.5, 3.0, -7.0, 0.25, 1.0][:max(1, int(np.prod(shape)))],
                    dtype=dtype).reshape(shape)
    return [base, -base]


# The operations of a StableHLO module's text, each as its name and result types, sorted:
# a multiset that does not depend on the order they come in.
def _op_kinds(text):
    from minijax.compiler import stablehlo

    module = stablehlo.parse_module(text)
    return sorted(f"{op.name} -> {', '.join(str(r.type) for r in op.results)}"
                  for func in module.funcs for op in stablehlo.walk_ops(func.body))
"""
_HELPERS: dict[str, Any] = {"np": np, "jnp": jnp, "lax": lax, "jax": jax}
exec(_PRELUDE, _HELPERS)
_LEAKY_CASES, _leaky_inputs, _op_kinds = (
    _HELPERS[name] for name in ("_LEAKY_CASES", "_leaky_inputs", "_op_kinds"))

#: Runs in the learner's process (the ``observe`` probe): for each case, builds its inputs from
#: their source, calls the learner's function and reports, as plain data, what came back and
#: what it does -- never an expected value. A call that raised reports ``{"raised": ...}``.
_OBSERVE = """def observe_xla(ns, prelude, name, cases):
    import contextlib
    from minijax import core
    from minijax.compiler import lowering, numpy_backend, stablehlo
    describe = __import__("grader.checks", fromlist=["x"]).describe_exception
    scope = {"np": np, "jnp": jnp, "lax": lax, "jax": jax}
    exec(prelude, scope)

    def attempt(work):
        try:
            return {"value": work()}
        except NotImplementedError:
            raise
        except Exception as exc:
            return {"raised": describe(exc)}

    class Bound(Exception):
        pass

    @contextlib.contextmanager
    def no_binding():
        original = core.Primitive.bind

        def refuse(self, *args, **params):
            raise Bound(self.name)

        core.Primitive.bind = refuse
        try:
            yield
        finally:
            core.Primitive.bind = original

    def compiled(source, args):
        closed = jax.make_jaxpr(eval(source, scope))(*args)
        got = attempt(lambda: ns[name](closed))
        if "value" not in got:
            return got
        run = got["value"]
        report = {"value": "", "callable": callable(run), "type": type(run).__name__}
        text = getattr(run, "source", None)
        report["source"] = text if isinstance(text, str) else None
        if not report["callable"] or report["source"] is None:
            return report
        try:
            with no_binding():
                report["outs"] = {"value": run(*args)}
        except Bound as bound:
            report["outs"] = {"bound": str(bound)}
        except NotImplementedError as exc:
            report["outs"] = {"not_implemented": str(exc)}
        except Exception as exc:
            report["outs"] = {"raised": describe(exc)}
        return report

    def lowered(case):
        shape, dtype, slope = case
        spec = jax.ShapeDtypeStruct(shape, dtype)
        lowering.lowering_rules[scope["_leaky_relu_p"]] = ns[name]
        try:
            got = attempt(lambda: jax.jit(lambda x: scope["_leaky_relu"](x, slope))
                          .lower(spec).as_text())
        finally:
            del lowering.lowering_rules[scope["_leaky_relu_p"]]
        if "value" not in got or not isinstance(got["value"], str):
            return got
        text = got["value"]
        got["ops"] = attempt(lambda: scope["_op_kinds"](text))
        got["outs"] = attempt(lambda: [np.asarray(numpy_backend.compile(text)(x)[0])
                                       for x in scope["_leaky_inputs"](shape, dtype)])
        return got

    def eliminated(source, args):
        module = stablehlo.parse_module(jax.jit(eval(source, scope)).lower(*args).as_text())
        got = attempt(lambda: ns[name](module))
        if "value" not in got:
            return got
        report = {"value": "", "same": got["value"] is module,
                  "type": type(got["value"]).__name__}
        if not report["same"]:
            return report

        def run():
            code, namespace = numpy_backend.generate(module)
            exec(compile(code, "<cse check>", "exec"), namespace)
            main = next(f for f in module.funcs if f.visibility == "public")
            with np.errstate(all="ignore"):
                return namespace[main.name](*args)

        report["results"] = attempt(run)
        report["plain_ops"] = [[f.name, sum(not op.regions for op in f.body.ops)]
                               for f in module.funcs]
        text = str(module)
        report["listing"] = f"\\nThe module after your pass:\\n{text}" if len(text) < 4000 else ""
        return report

    def keyed(first, second, static):
        function = ns.get(name)
        if not callable(function):
            yield {"missing": True}
            return
        keys = []
        for text in (first, second):
            got = attempt(lambda: function(eval(text, scope), static))
            if "value" in got:
                key = got["value"]
                got = {"value": "", "repr": repr(key)}
                try:
                    hash(key)
                except TypeError as exc:
                    got["unhashable"] = str(exc)
                keys.append(key)
            yield got
            if "raised" in got or "unhashable" in got:
                return
        yield {"equal": bool(keys[0] == keys[1])}

    if name == "compile_jaxpr":
        return [compiled(source, args) for source, args in cases]
    if name == "leaky_relu_lowering":
        return [lowered(case) for case in scope["_LEAKY_CASES"]]
    if name == "cse":
        return [eliminated(source, args) for source, args in cases]
    return [list(keyed(*case)) for case in cases]
"""


def observed(ns: Any, name: str, cases: list[list[Any]]) -> list[Any]:
    """What the learner's ``name`` did with each case (see :data:`_OBSERVE`)."""
    return probe(ns, "observe", FunctionSource(_OBSERVE), _PRELUDE, name, cases)


def _program(text: str) -> Any:
    """The function a program's text (before its ``#`` note) defines, with the prelude's
    names."""
    return eval(text.partition("   # ")[0], _HELPERS)


# ---------------------------------------------------------------------------------------
# Exercise 1: compile a jaxpr into Python source (the seed's exercise 5.1)
# ---------------------------------------------------------------------------------------

# (program text, arguments, Python statements its source must contain)
_IF = ("an `if` (or a conditional expression)", (ast.If, ast.IfExp))
_WHILE = ("a `while` loop", (ast.While,))
_LOOP = ("a `for` or `while` loop", (ast.For, ast.While))
_PROGRAMS = [
    ("lambda x: jnp.sin(x) * 2.0 + x * c   # c = jnp.array([1.0, 2.0, 3.0])",
     (np.array([0.0, 1.0, 2.0], f32),), None),
    ("lambda x: (jnp.sum(x), jnp.max(x, axis=0), x.T @ x)",
     (np.arange(6, dtype=f32).reshape(2, 3),), None),
    ("lambda x: lax.cond(jnp.sum(x) > 0, lambda x: x * 2.0, lambda x: -x, x)",
     (np.array([1.0, -0.5], f32),), _IF),
    ("lambda x: lax.cond(jnp.sum(x) > 0, lambda x: x * 2.0, lambda x: -x, x)",
     (np.array([-1.0, 0.5], f32),), _IF),
    *[("lambda i, x: lax.switch(i, [jnp.sin, jnp.cos, jnp.tanh], x)",
       (np.int32(i), np.array([0.5, 1.0], f32)), _IF) for i in (0, 1, 2, 7)],
    ("lambda x: lax.while_loop(lambda c: c[0] > 1.0, lambda c: (c[0] / 2, c[1] + 1), (x, 0))",
     (f32(10.0),), _WHILE),
    ("lambda x, limit: lax.while_loop(lambda c: jnp.sum(c) < limit, lambda c: c * 2.0 + x, x)",
     (np.array([0.5, 0.25], f32), f32(40.0)), _WHILE),
    ("lambda n, x: lax.fori_loop(0, n, lambda i, c: c * 2.0 + i, x)",
     (np.int32(4), np.array([1.0, -1.0], f32)), _WHILE),
    ("lambda xs: lax.scan(lambda c, x: (c + x, c * x), 0.0, xs)",
     (np.array([1.0, 2.0, 3.0, 4.0], f32),), _LOOP),
    ("lambda xs: lax.scan(lambda c, x: (c * 0.5 + x, jnp.sin(c)), jnp.zeros(2), xs, "
     "reverse=True)",
     (np.arange(8, dtype=f32).reshape(4, 2),), _LOOP),
    ("lambda w, xs: lax.scan(lambda c, x: (jnp.tanh(w @ c + x), jnp.sum(c)), jnp.ones(2), xs)",
     (np.array([[0.5, -1.0], [2.0, 0.25]], f32), np.arange(6, dtype=f32).reshape(3, 2)), _LOOP),
    ("lambda x: lax.fori_loop(0, 3, lambda i, c: c * 2.0 + i, x)",
     (np.array([1.0, 2.0], f32),), _LOOP),
    ("lambda xs: lax.scan(lambda c, x: (c + lax.cond(x > 1.0, jnp.sin, jnp.cos, x), c), 0.0, xs)",
     (np.array([0.5, 1.5, 2.5], f32),), _LOOP),
    ("lambda p, x: lax.cond(p, lambda x: lax.while_loop(lambda c: c < 100.0, lambda c: c * 3.0, "
     "x), jnp.negative, x)",
     (np.bool_(True), f32(2.0)), _IF),
    ("lambda x: double(x) + 1.0   # double = jax.jit(lambda y: y * 2.0)",
     (np.array([1.0, 2.0], f32),), None),
]

_COMPILE_HINT = (
    "compile each nested jaxpr (the `branches` of a cond, the `cond_jaxpr` and `body_jaxpr` of "
    "a while, the `jaxpr` of a scan) with compile_jaxpr itself, put the compiled functions in "
    "the namespace of the generated code, and call them from an if/elif/else, a while loop or "
    "a for loop that you generate")


def _statements(source: str) -> set[type]:
    return {type(node) for node in ast.walk(ast.parse(source))}


def _compiled_outputs(report: dict[str, Any], shown: str) -> Any:
    """What the compiled function returned, or the failure of running it."""
    outs = report["outs"]
    if "bound" in outs:
        raise CheckFailed(
            f"{shown} bound the primitive `{outs['bound']}` while running (that is what "
            "eval_jaxpr and minijax operations do): compiled code must call NumPy kernels such "
            "as `eqn.primitive.impl`, not interpret the jaxpr")
    if "not_implemented" in outs:
        raise CheckFailed(f"{shown} raised NotImplementedError: {outs['not_implemented']} -- "
                          f"hint: {_COMPILE_HINT}")
    return reported(shown, outs).value


#: The part of the exercise each program belongs to, by the statement its code must contain.
_COMPILE_PARTS = {None: "straight-line programs", _IF: "cond and switch", _WHILE: "loops",
                  _LOOP: "loops"}


_XJ = np.array([0.5, -1.0, 2.0], np.float32)
#: Programs jit runs with the learner's compiler installed as minijax's (the piece
#: ``compile_jaxpr``): every jit, nested ones and those of grad and vmap included.
_JIT_PROGRAMS = [
    Program("jax.jit(lambda x: jnp.sin(x) * 2.0 + 1.0)(x)",
            "lambda x: jax.jit(lambda x: jnp.sin(x) * 2.0 + 1.0)(x)", (_XJ,)),
    Program("jax.jit(jax.grad(lambda x: jnp.sum(jnp.tanh(x) ** 2)))(x)",
            "lambda x: jax.jit(jax.grad(lambda x: jnp.sum(jnp.tanh(x) ** 2)))(x)", (_XJ,)),
    Program("jax.jit(lambda x: lax.fori_loop(0, 5, lambda i, c: c * 2.0 + i, x))(x)",
            "lambda x: jax.jit(lambda x: lax.fori_loop(0, 5, lambda i, c: c * 2.0 + i, x))(x)",
            (_XJ,)),
    Program("jax.jit(jax.vmap(lambda x: lax.cond(x > 1.0, jnp.sin, jnp.cos, x)))(x)",
            "lambda x: jax.jit(jax.vmap(lambda x: lax.cond(x > 1.0, jnp.sin, jnp.cos, x)))(x)",
            (_XJ,)),
    Program("jax.jit(lambda x: lax.scan(lambda c, y: (c + y, c * y), 0.0, x))(x)",
            "lambda x: jax.jit(lambda x: lax.scan(lambda c, y: (c + y, c * y), 0.0, x))(x)",
            (_XJ,)),
    Program("jax.jit(lambda x: jax.jit(jnp.cos)(x) @ x)(x)  # a jit inside a jit",
            "lambda x: jax.jit(lambda x: jax.jit(jnp.cos)(x) @ x)(x)", (_XJ,)),
]


@exercise("compile_jaxpr", points=5, remote=True,
          parts={"straight-line programs": 1, "cond and switch": 1, "loops": 2,
                 "installed as jit's compiler": 1})
def check_compile_jaxpr(ns):
    learner_function(ns, "compile_jaxpr")
    reports = observed(ns, "compile_jaxpr", [[text.partition("   # ")[0], list(args)]
                                             for text, args, _ in _PROGRAMS])
    for (text, args, statement), report in zip(_PROGRAMS, reports):
        with part(_COMPILE_PARTS[statement]):
            _check_compiled(text, args, statement, report)
    with part("installed as jit's compiler"):
        expect_same_with_pieces(ns, {"compile_jaxpr": "compile_jaxpr"}, _JIT_PROGRAMS,
                                hint="jit calls compile_jaxpr(closed, name, keep_unused) and "
                                     "runs what it returns on NumPy arrays, one per input")


def _check_compiled(text: str, args: tuple, statement: Any, report: dict[str, Any]) -> None:
    """The function compile_jaxpr made of one program (``report``) computes what the program
    does, with the statement its control flow needs."""
    fun = _program(text)
    expected = [np.asarray(v) for v in jax.tree_util.tree_leaves(fun(*args))]
    program, _, note = text.partition("   # ")
    arguments = ", ".join(show(a) for a in args)
    where = f"with closed = jax.make_jaxpr({program})({arguments})"
    if note:
        where += f" (where {note})"
    reported(f"compile_jaxpr({show(jax.make_jaxpr(fun)(*args))})", report)
    if not report["callable"]:
        raise CheckFailed(f"{where}, compile_jaxpr(closed) returned "
                          f"{report['type']}, not a function")
    source = report["source"]
    if source is None:
        raise CheckFailed(f"{where}, the function compile_jaxpr(closed) returned has no "
                          "attribute `source` holding the generated Python code (a str)")
    try:
        found = _statements(source)
    except SyntaxError as exc:
        raise CheckFailed(f"{where}, compile_jaxpr(closed).source is not valid Python: "
                          f"{exc}\n{source}") from exc
    shown = f"{where}, compile_jaxpr(closed)({arguments})"
    outs = _compiled_outputs(report, shown)
    if not isinstance(outs, (list, tuple)) or len(outs) != len(expected):
        raise CheckFailed(f"{shown} returned {brief(outs)}; expected a list of "
                          f"{len(expected)} arrays, one per output of the jaxpr")
    for i, (out, want) in enumerate(zip(outs, expected)):
        out = np.asarray(out)
        if out.shape != want.shape or out.dtype != want.dtype:
            raise CheckFailed(f"{shown}: output {i} is {out.dtype}{list(out.shape)}; "
                              f"expected {want.dtype}{list(want.shape)}")
        if not np.allclose(out, want, rtol=1e-5, atol=1e-6):
            raise CheckFailed(f"{shown}: output {i} is {brief(out)}; expected {brief(want)}")
    if statement is not None and not found & set(statement[1]):
        raise CheckFailed(
            f"{where}, the generated source has no {statement[0]}: compile the control "
            f"flow into Python statements -- hint: {_COMPILE_HINT}\n"
            f"The source was:\n{source}")


# ---------------------------------------------------------------------------------------
# Exercise 2: a lowering rule
# ---------------------------------------------------------------------------------------


def _counted(kinds: list[str]) -> str:
    """``2 x stablehlo.constant -> tensor<f32>, ...``: a multiset of operations, in words."""
    counts = collections.Counter(kinds)
    return ", ".join(f"{n} x {kind}" if n > 1 else kind for kind, n in sorted(counts.items()))


def _same_operations(shown: str, want: str, report: dict[str, Any], slope: float) -> None:
    """The learner's module (text ``report["value"]``) has the operations of ``want``, in any
    order; a difference is named, not the whole expected module."""
    ops = report["ops"]
    if "raised" in ops:
        raise CheckFailed(f"{shown} gave text that minijax cannot parse ({ops['raised']}):\n"
                          f"{report['value'].rstrip()}")
    mine, theirs = collections.Counter(ops["value"]), collections.Counter(_op_kinds(want))
    if mine != theirs:
        extra, missing = _counted(list((mine - theirs).elements())), _counted(
            list((theirs - mine).elements()))
        raise CheckFailed(
            f"{shown} gave other operations than `lax.select(x > 0, x, x * {slope})` lowers to "
            f"(in whatever order): yours have {extra or 'nothing'} too many, and lack "
            f"{missing or 'nothing'}. Your module:\n{report['value'].rstrip()}\n-- hint: the "
            "constants 0 and the slope take x's dtype (`x.type.dtype`) and are broadcast to x's "
            "shape (`ctx.b.broadcast_to`) before the comparison and the product; a scalar x "
            "needs no broadcast")


@exercise("leaky_relu_lowering", points=2, remote=True,
          parts={"float32 operands": 1, "float16 and bfloat16 operands": 1})
def check_leaky_relu_lowering(ns):
    if "leaky_relu_lowering" not in ns:
        raise CheckFailed("leaky_relu_lowering is not defined: did you run its cell?")
    reports = observed(ns, "leaky_relu_lowering", [])
    for (shape, dtype, slope), report in zip(_LEAKY_CASES, reports):
        spec = jax.ShapeDtypeStruct(shape, dtype)
        type_name = f"{np.dtype(dtype).name}{list(shape)}"
        shown = f"lowering leaky_relu(x, negative_slope={slope}) for x of type {type_name}"
        with part("float32 operands" if dtype is np.float32 else "float16 and bfloat16 operands"):
            got = reported(shown, report)
            if not isinstance(got.value, str):
                raise CheckFailed(f"{shown} returned {brief(got.value)}, not StableHLO text")
            want = jax.jit(lambda x, s=slope: lax.select(x > 0, x, x * s)).lower(spec).as_text()
            _same_operations(shown, want, report, slope)
            program = f"the program {shown}, compiled by minijax's NumPy backend,"
            outs = reported(program, report["outs"]).value
            for values, out in zip(_leaky_inputs(shape, dtype), outs):
                out = np.asarray(out)
                expected = np.where(values > 0, values, values * np.asarray(slope, dtype))
                if out.dtype != expected.dtype or not np.array_equal(out, expected):
                    raise CheckFailed(
                        f"{program} computes {brief(out)} ({out.dtype}) for x = "
                        f"{brief(values)}; expected {brief(expected)} ({expected.dtype})")


# ---------------------------------------------------------------------------------------
# Exercise 3: common-subexpression elimination
# ---------------------------------------------------------------------------------------

_X3 = np.array([0.5, -1.0, 2.0], f32)
_CSE_PROGRAMS = [
    ("lambda x: jnp.sin(x) * 2.0 + jnp.sin(x) * 2.0", (_X3,)),
    ("lambda x: x * 2.0 + x * 3.0", (_X3,)),
    ("lambda x: ((x > 1.0) & (x < 1.0)) | (x > 1.0)", (_X3,)),
    ("lambda a: a @ a + a @ a.T + a @ a", (np.array([[1.0, 2.0], [3.0, 4.0]], f32),)),
    ("lambda x: _tanh_twice(x) + _tanh_twice(x)   # _tanh_twice = jax.jit(lambda x: "
     "jnp.tanh(x) * 2.0 + jnp.tanh(x) * 2.0)", (_X3,)),
    ("lambda x: (lambda s1, s2: lax.cond(jnp.sum(x) > 0, lambda: s2 * 2.0, lambda: s1))"
     "(jnp.sin(x), jnp.sin(x))", (_X3,)),
    ("lambda p, x: lax.cond(p, jnp.sin, jnp.cos, x) + lax.cond(p, jnp.sin, jnp.cos, x)",
     (np.bool_(True), _X3)),
    ("lambda x: jnp.sum(x + big) + jnp.sum(x + big_other) + jnp.sum(x + big)   # big and "
     "big_other are constant arrays of 2000 elements that differ in one element",
     (np.linspace(0, 1, 2000, dtype=f32),)),
]


def _plain_ops(func: stablehlo.Func) -> int:
    """How many top-level ops of ``func`` hold no region."""
    return sum(not op.regions for op in func.body.ops)


#: The parts of the CSE exercise: how many of the programs above, in order, each holds.
_CSE_PARTS = {"programs of one function": 4, "nested functions and regions": 3,
              "large constants": 1}


@exercise("cse", points=4, remote=True,
          parts={**dict.fromkeys(_CSE_PARTS, 1), "installed as the mini-XLA's pass": 1})
def check_cse(ns):
    learner_function(ns, "cse")
    reports = observed(ns, "cse", [[text.partition("   # ")[0], list(args)]
                                   for text, args in _CSE_PROGRAMS])
    for (part_name, (text, args)), report in zip(grouped(_CSE_PROGRAMS, _CSE_PARTS), reports):
        with part(part_name):
            _check_eliminated(text, args, report)
    with part("installed as the mini-XLA's pass"):
        programs = [Program(f"jax.jit({text.partition('   # ')[0]})(...)",
                            f"lambda *args: jax.jit({text.partition('   # ')[0]})(*args)", args)
                    for text, args in _CSE_PROGRAMS[:4]]
        expect_same_with_pieces(ns, {"common_subexpression_elimination": "cse"}, programs,
                                hint="the NumPy backend runs your pass on every module jit "
                                     "compiles: the programs must still compute the same")


def _check_eliminated(text: str, args: tuple, report: dict[str, Any]) -> None:
    """The module of one program after the learner's pass (``report``) still computes what the
    program does, with as many ops as minijax's pass leaves."""
    fun = _program(text)
    lowered_text = jax.jit(fun).lower(*args).as_text()
    program, _, note = text.partition("   # ")
    shown = f"cse(stablehlo.parse_module(jax.jit({program}).lower(...).as_text()))"
    if note:
        shown += f" (where {note})"
    reported(shown, report)
    if not report["same"]:
        raise CheckFailed(f"{shown} returned {report['type']}; expected the "
                          "module it was given (changed in place)")
    if "raised" in report["results"]:
        raise CheckFailed(
            f"after {shown}, the module no longer works ({report['results']['raised']}): "
            "does an operand still refer to the result of an op you removed? Ops nested "
            "in regions read values of the outer block too")
    listing = report["listing"]
    expected = [np.asarray(v) for v in jax.tree_util.tree_leaves(fun(*args))]
    for out, want in zip(report["results"]["value"], expected):
        if not np.allclose(out, want, rtol=1e-5, atol=1e-6):
            raise CheckFailed(
                f"after {shown}, the program computes {brief(out)}; expected "
                f"{brief(want)}: two ops that differ were merged (compare names, operands, "
                "attributes and result types; constants differ by their values: compare "
                f"`value.tobytes()` rather than a repr){listing}")
    reference = passes.common_subexpression_elimination(
        stablehlo.parse_module(lowered_text))
    for (name, mine), ref in zip(report["plain_ops"], reference.funcs):
        # Ops with regions are the learner's to leave alone (as the exercise says) or to
        # merge when their regions are identical (as minijax's pass does): both are right,
        # so only the ops without regions are counted.
        theirs = _plain_ops(ref)
        if mine > theirs:
            raise CheckFailed(
                f"after {shown}, @{name} has {mine} top-level ops without regions; "
                f"common-subexpression elimination leaves {theirs}: some duplicates were "
                f"missed (every function of the module counts){listing}")
        if mine < theirs:
            raise CheckFailed(
                f"after {shown}, @{name} has {mine} top-level ops without regions; "
                f"expected {theirs}: leave `return`s and custom calls alone{listing}")


# ---------------------------------------------------------------------------------------
# Exercise 4: predicting retraces
# ---------------------------------------------------------------------------------------

# (first arguments, second arguments, static_argnums): the arguments as source, evaluated
# here and in the learner's process alike (a weakly typed scalar is not plain data)
_KEY_CASES = [
    ("(jnp.ones(3),)", "(jnp.zeros(3),)", ()),
    ("(jnp.ones(3),)", "(jnp.ones(4),)", ()),
    ("(jnp.ones(3),)", "(jnp.ones(3, jnp.int32),)", ()),
    ("(jnp.ones(3),)", "(jnp.ones((3, 1)),)", ()),
    ("(np.ones(3),)", "(jnp.ones(3),)", ()),
    ("(np.ones(3, np.int64),)", "(jnp.ones(3, jnp.int32),)", ()),
    ("(1.0,)", "(2.0,)", ()),
    ("(1.0,)", "(1,)", ()),
    ("(1,)", "(True,)", ()),
    ("(1.0,)", "(jnp.float32(1.0),)", ()),
    ("(1.0,)", "(np.float32(1.0),)", ()),
    ("(1.0,)", "(jnp.asarray(1.0),)", ()),
    ("(1,)", "(np.int64(1),)", ()),
    ("(1 + 2j,)", "(1j,)", ()),
    ("((1.0, 2.0),)", "([1.0, 2.0],)", ()),
    ("({'a': 1.0},)", "({'a': 2.0},)", ()),
    ("({'a': 1.0},)", "({'b': 1.0},)", ()),
    ("((jnp.ones(2), 1.0),)", "((jnp.ones(2), 1),)", ()),
    ("(jnp.ones(3), None)", "(jnp.zeros(3), None)", ()),
    ("(jnp.ones(3), 2)", "(jnp.ones(3), 2)", (1,)),
    ("(jnp.ones(3), 2)", "(jnp.ones(3), 3)", (1,)),
    ("(jnp.ones(3), 2)", "(jnp.ones(3), 2.0)", (1,)),
    ("(jnp.ones(3), 2)", "(jnp.ones(4), 2)", (1,)),
    ("('relu', jnp.ones(3))", "('relu', jnp.zeros(3))", (0,)),
    ("('relu', jnp.ones(3))", "('tanh', jnp.ones(3))", (0,)),
    ("(jnp.ones(3), (1, 2))", "(jnp.ones(3), (1, 2))", (1,)),
]


def _retraces(first: tuple, second: tuple, static_argnums: tuple) -> bool:
    traces = []

    def fun(*args: Any) -> int:
        traces.append(None)
        return 0

    jitted = jax.jit(fun, static_argnums=static_argnums)
    jitted(*first)
    jitted(*second)
    return len(traces) == 2


#: The parts of the cache-key exercise: how many of the cases above, in order, each holds.
_KEY_PARTS = {"arrays and Python scalars": 14, "pytrees and static arguments": 12}


@exercise("cache_key", points=2, remote=True, parts=dict.fromkeys(_KEY_PARTS, 1))
def check_cache_key(ns):
    reports = observed(ns, "cache_key", [list(case) for case in _KEY_CASES])
    if reports and reports[0] and "missing" in reports[0][0]:
        raise CheckFailed("cache_key is not defined as a function: did you run its cell?")
    for (part_name, case), steps in zip(grouped(_KEY_CASES, _KEY_PARTS), reports):
        with part(part_name):
            _check_key(*case, steps)


def _check_key(first_text: str, second_text: str, static: tuple, steps: list[Any]) -> None:
    """The learner's keys for one pair of calls (``steps``) are equal exactly when jit does
    not trace again."""
    keys = []
    for text, step in zip((first_text, second_text), steps):
        got = reported(f"cache_key({text}, static_argnums={static})", step)
        if "unhashable" in step:
            raise CheckFailed(f"{got.call} returned {step['repr']}, which is not hashable "
                              f"({step['unhashable']}): a cache key must be (use tuples, "
                              "not lists)")
        keys.append((got.call, step["repr"]))
    retraced = _retraces(eval(first_text, _HELPERS), eval(second_text, _HELPERS), static)
    if steps[2]["equal"] == retraced:
        verdict = "equal" if not retraced else "different"
        raise CheckFailed(
            f"{keys[0][0]} and {keys[1][0]} should be {verdict}: a function jitted "
            f"with static_argnums={static} and called with {first_text}, then with "
            f"{second_text}, {'traces' if retraced else 'does not trace'} again. Yours "
            f"were {keys[0][1]} and {keys[1][1]}")


# ---------------------------------------------------------------------------------------
# Exercise 5: lowering rules of base primitives, compiled by minijax's backend and real XLA
# ---------------------------------------------------------------------------------------

#: Runs in the learner's process: with the learner's rule for one primitive in minijax's table
#: (every other piece minijax's own), lowers each program, and reports its text, the text's
#: operations without value names (a multiset: any valid order is right), and what minijax's
#: NumPy backend and, where JAX is installed, real XLA compute from the text.
_OBSERVE_RULES = """def observe_rules(ns, primitive, programs):
    from minijax import pieces
    from minijax.compiler import numpy_backend, xla_backend
    describe = __import__("grader.checks", fromlist=["x"]).describe_exception
    table = ns.get("base_lowering_rules")
    if not isinstance(table, dict):
        return {"missing": type(table).__name__}
    rules = {p: rule for p, rule in table.items() if getattr(p, "name", None) == primitive}
    if not rules:
        return {"missing_rule": sorted(str(getattr(p, "name", p)) for p in table)}
    others = {name: pieces.reference(name) for name in pieces.installed()}
    reports = []
    with pieces.using({**others, "lowering_rules": rules}):
        for source, args in programs:
            fun = eval(source, {"jax": jax, "jnp": jnp, "lax": lax, "np": np})
            try:
                text = jax.jit(fun).lower(*args).as_text()
            except NotImplementedError:
                raise
            except Exception as exc:
                reports.append({"raised": describe(exc)})
                continue
            report = {"value": text}
            for backend in ("numpy", "xla"):
                if backend == "xla" and not xla_backend.available():
                    continue
                compile_ = numpy_backend.compile if backend == "numpy" else xla_backend.compile
                try:
                    report[backend] = {"value": [np.asarray(out)
                                                 for out in compile_(text)(*args)]}
                except Exception as exc:
                    report[backend] = {"raised": describe(exc)}
            reports.append(report)
    return reports
"""

_XB = np.array([[0.5, -1.0, 2.0], [1.5, 0.25, -3.0]], f32)
_VB = np.array([0.5, -1.0, 2.0, 4.0], f32)
#: (primitive, the programs that lower it: source and arguments) -- one part each.
_BASE_PROGRAMS = {
    "integer_pow": [("lambda x: x ** 2", (_XB,)), ("lambda x: x ** 3", (_XB,)),
                    ("lambda x: x ** 5", (_VB,)), ("lambda x: x ** 6", (f32(1.5),)),
                    ("lambda x: x ** -2", (_XB,)), ("lambda x: lax.integer_pow(x, 7)",
                                                    (np.array([2, -3], np.int32),))],
    "reduce_sum": [("lambda x: jnp.sum(x, axis=0)", (_XB,)), ("lambda x: jnp.sum(x)", (_XB,)),
                   ("lambda x: jnp.sum(x, axis=(0, 2))",
                    (np.arange(24, dtype=np.int32).reshape(2, 3, 4),)),
                   ("lambda x: jnp.sum(x.astype(jnp.float16), axis=1)", (_XB,))],
    "dot_general": [("lambda a, b: a @ b", (_XB, _XB.T.copy())),
                    ("lambda a, v: a @ v", (_XB, _VB[:3].copy())),
                    ("lambda a, b: jnp.einsum('bij,bjk->bik', a, b)",
                     (np.stack([_XB, -_XB]), np.stack([_XB.T, _XB.T]).copy())),
                    ("lambda a, b: lax.dot_general(a, b, (((0,), (0,)), ((), ())), "
                     "precision=lax.Precision.HIGHEST)", (_XB, _XB))],
    "logistic": [("lambda x: jax.nn.sigmoid(x)", (_XB,)), ("lambda x: lax.logistic(x)",
                                                           (f32(-0.75),)),
                 ("lambda x: jax.grad(lambda x: jnp.sum(jax.nn.sigmoid(x)))(x)", (_VB,))],
}


def _operations(text: str) -> list[str]:
    """The lines of a module's text with the values' names left out (``%0``, ``%cst_1``,
    ``%arg0`` all become ``%``): two modules that do the same operations, in any order and
    with any names, give the same lines, as a multiset."""
    import re

    return sorted(re.sub(r"%[\w#]+", "%", line.strip()) for line in text.splitlines()
                  if line.strip() and line.strip() != "}")


def _check_rule_program(primitive: str, source: str, args: tuple, report: dict) -> None:
    """The learner's lowering of one program: the same operations as minijax's (and JAX's),
    and the same results from minijax's NumPy backend and from XLA, where it runs."""
    shown = f"jax.jit({source}).lower(...).as_text() with your rule for {primitive}"
    text = reported(shown, report).value
    fun = _program(source)
    with pieces.using({name: pieces.reference(name) for name in pieces.installed()}):
        want_text = jax.jit(fun).lower(*args).as_text()
        want = [np.asarray(v) for v in jax.tree_util.tree_leaves(fun(*args))]
    mine, theirs = collections.Counter(_operations(text)), collections.Counter(
        _operations(want_text))
    if mine != theirs:
        extra = "\n  ".join((mine - theirs).elements()) or "nothing"
        missing = "\n  ".join((theirs - mine).elements()) or "nothing"
        raise CheckFailed(
            f"{shown} has other operations than JAX lowers (in whatever order, value names "
            f"aside): yours have too many of\n  {extra}\nand lack\n  {missing}\nYour module:\n"
            f"{text.rstrip()}")
    for backend, name in (("numpy", "minijax's NumPy backend"), ("xla", "real XLA")):
        if backend not in report:
            continue  # JAX is not installed where the program ran: XLA cannot be asked
        program = f"the program {source}, lowered with your rule and compiled by {name},"
        got = reported(program, report[backend]).value
        problem = difference(got, want)
        if problem is not None:
            raise CheckFailed(f"{program} gave {problem}")


@exercise("base_lowering_rules", points=4, remote=True,
          parts=dict.fromkeys(_BASE_PROGRAMS, 1))
def check_base_lowering_rules(ns):
    for primitive, programs in _BASE_PROGRAMS.items():
        with part(primitive):
            reports = probe(ns, "observe", FunctionSource(_OBSERVE_RULES), primitive,
                            [[source, list(args)] for source, args in programs])
            if "missing" in reports:
                raise CheckFailed(f"base_lowering_rules is {reports['missing']}, not a dict "
                                  "{primitive: rule}: did you run its cell?")
            if "missing_rule" in reports:
                raise CheckFailed(f"base_lowering_rules has no rule for {primitive}_p (its "
                                  f"keys are the primitives {reports['missing_rule']})")
            for (source, args), report in zip(programs, reports):
                _check_rule_program(primitive, source, args, report)


# ---------------------------------------------------------------------------------------
# Exercise 6: jit's cache key and cache, as pieces of minijax
# ---------------------------------------------------------------------------------------

_CACHE_PROGRAM = """def program():
    import contextlib
    traces = []

    def f({params}):
        traces.append(None)
        return {body}

    def result(call):
        try:
            y = call()
            return [np.asarray(y).tolist(), str(y.dtype)]
        except NotImplementedError:  # a stub: the part is not attempted
            raise
        except Exception as exc:
            return f"{{type(exc).__name__}}: {{exc}}"

    f = jax.jit(f{options})
    first = result(lambda: {first})
    with {context}:
        second = result(lambda: {second})
    return [first, second, len(traces)]
"""

# (what the two calls differ in, f's parameters and body, the calls, jit's options, and
# what the second call runs in): each program returns both results (as lists with their
# dtypes, since the grader's channel makes every array it carries one of the current x64
# mode; or the error a call raised) and how many times f was traced.
_NO_CONTEXT = "contextlib.nullcontext()"
_CACHE_CASES = [
    ("nothing but values", "x", "x * 2", "f(jnp.ones(3))", "f(jnp.zeros(3))", "", _NO_CONTEXT),
    ("nothing but an array's values, with a static argument equal", "x, n", "x * n",
     "f(jnp.ones(3), 2)", "f(jnp.zeros(3), 2)", ", static_argnums=1", _NO_CONTEXT),
    ("the dtype", "x", "x * 2", "f(jnp.ones(3))", "f(jnp.ones(3, jnp.int32))", "", _NO_CONTEXT),
    ("the weak type", "x", "x * 2", "f(1.0)", "f(jnp.float32(1.0))", "", _NO_CONTEXT),
    ("the shape", "x", "x * 2", "f(jnp.ones(3))", "f(jnp.ones(4))", "", _NO_CONTEXT),
    ("the tree structure", "t", "t[0] + t[-1]", "f((jnp.ones(2), jnp.ones(2)))",
     "f([jnp.ones(2), jnp.ones(2)])", "", _NO_CONTEXT),
    ("a static value", "x, n", "x * n", "f(jnp.ones(3), 2)", "f(jnp.ones(3), 3)",
     ", static_argnums=1", _NO_CONTEXT),
    ("a static value's type (2 == 2.0)", "x, n", "x * n", "f(jnp.ones(3), 2)",
     "f(jnp.ones(3), 2.0)", ", static_argnums=1", _NO_CONTEXT),
    ("the x64 flag", "x", "x.astype(float)", "f(np.ones(3, np.float32))",
     "f(np.ones(3, np.float32))", "", "jax.config.override('jax_enable_x64', True)"),
    ("the size vmap binds to an axis name", "x", "x * lax.psum(1, 'i')",
     "jax.vmap(f, axis_name='i')(jnp.ones((3, 2)))",
     "jax.vmap(f, axis_name='i')(jnp.ones((4, 2)))", "", _NO_CONTEXT),
]


def _cache_programs() -> list[Program]:
    """The cases above as programs, shown as the two calls of one jitted function."""
    programs = []
    for differ, params, body, first, second, options, context in _CACHE_CASES:
        source = _CACHE_PROGRAM.format(params=params, body=body, options=options,
                                       first=first, second=second, context=context)
        then = second if context == _NO_CONTEXT else f"{second} under {context}"
        programs.append(Program(
            f"f = jax.jit(lambda {params}: {body}{options}), called as {first}, then as "
            f"{then} (the calls differ in {differ}), returning both results "
            "(as lists, with their dtypes) and how many times f was traced,", source))
    return programs


_CACHE_PARTS = {"cached, with minijax's key": ("cached",),
                "jit_cache_key, with minijax's cache": ("cache_key",)}


@exercise("jit_cache", points=2, remote=True, parts=dict.fromkeys(_CACHE_PARTS, 1))
def check_jit_cache(ns):
    installs = {"cached": "cached", "cache_key": "jit_cache_key"}
    for part_name, names in _CACHE_PARTS.items():
        with part(part_name):
            expect_same_with_pieces(
                ns, {piece: installs[piece] for piece in names}, _cache_programs(),
                hint="two calls share a trace exactly when their keys are equal: the key holds "
                     "everything the trace depends on (all four arguments, as hashable values), "
                     "and cached traces only on a miss and remembers what it made")
