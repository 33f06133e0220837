"""Checks for chapter 07, jit and XLA.

Expected values come from minijax itself, never from the solution notebook: programs are run
eagerly (minijax's eager results are checked against JAX by the test suite), lowering rules are
compared with the text minijax lowers for an equivalent ``lax`` program (equal to JAX's text,
also tested), a CSE pass with the number of operations minijax's own pass keeps, and predicted
cache keys with what ``jit`` really does.
"""

from __future__ import annotations

import ast
import contextlib
import difflib
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

import minijax as jax
import minijax.numpy as jnp
from grader.checks import (
    CheckFailed,
    brief,
    call,
    call_described,
    describe_exception,
    exercise,
    show,
)
from minijax import core, lax
from minijax.compiler import lowering, numpy_backend, passes, stablehlo
from minijax.lax.base import FLOAT, operand, unary_rule

f32 = np.float32


# ---------------------------------------------------------------------------------------
# Exercise 1: compile a jaxpr into Python source (the seed's exercise 5.1)
# ---------------------------------------------------------------------------------------

_C = jnp.array([1.0, 2.0, 3.0])
_double = jax.jit(lambda y: y * 2.0)

# (program text, function, arguments, Python statements its source must contain)
_IF = ("an `if` (or a conditional expression)", (ast.If, ast.IfExp))
_WHILE = ("a `while` loop", (ast.While,))
_LOOP = ("a `for` or `while` loop", (ast.For, ast.While))
_PROGRAMS = [
    ("lambda x: jnp.sin(x) * 2.0 + x * c   # c = jnp.array([1.0, 2.0, 3.0])",
     lambda x: jnp.sin(x) * 2.0 + x * _C, (np.array([0.0, 1.0, 2.0], f32),), None),
    ("lambda x: (jnp.sum(x), jnp.max(x, axis=0), x.T @ x)",
     lambda x: (jnp.sum(x), jnp.max(x, axis=0), x.T @ x),
     (np.arange(6, dtype=f32).reshape(2, 3),), None),
    ("lambda x: lax.cond(jnp.sum(x) > 0, lambda x: x * 2.0, lambda x: -x, x)",
     lambda x: lax.cond(jnp.sum(x) > 0, lambda x: x * 2.0, lambda x: -x, x),
     (np.array([1.0, -0.5], f32),), _IF),
    ("lambda x: lax.cond(jnp.sum(x) > 0, lambda x: x * 2.0, lambda x: -x, x)",
     lambda x: lax.cond(jnp.sum(x) > 0, lambda x: x * 2.0, lambda x: -x, x),
     (np.array([-1.0, 0.5], f32),), _IF),
    *[("lambda i, x: lax.switch(i, [jnp.sin, jnp.cos, jnp.tanh], x)",
       lambda i, x: lax.switch(i, [jnp.sin, jnp.cos, jnp.tanh], x),
       (np.int32(i), np.array([0.5, 1.0], f32)), _IF) for i in (0, 1, 2, 7)],
    ("lambda x: lax.while_loop(lambda c: c[0] > 1.0, lambda c: (c[0] / 2, c[1] + 1), (x, 0))",
     lambda x: lax.while_loop(lambda c: c[0] > 1.0, lambda c: (c[0] / 2, c[1] + 1), (x, 0)),
     (f32(10.0),), _WHILE),
    ("lambda x, limit: lax.while_loop(lambda c: jnp.sum(c) < limit, lambda c: c * 2.0 + x, x)",
     lambda x, limit: lax.while_loop(lambda c: jnp.sum(c) < limit, lambda c: c * 2.0 + x, x),
     (np.array([0.5, 0.25], f32), f32(40.0)), _WHILE),
    ("lambda n, x: lax.fori_loop(0, n, lambda i, c: c * 2.0 + i, x)",
     lambda n, x: lax.fori_loop(0, n, lambda i, c: c * 2.0 + i, x),
     (np.int32(4), np.array([1.0, -1.0], f32)), _WHILE),
    ("lambda xs: lax.scan(lambda c, x: (c + x, c * x), 0.0, xs)",
     lambda xs: lax.scan(lambda c, x: (c + x, c * x), 0.0, xs),
     (np.array([1.0, 2.0, 3.0, 4.0], f32),), _LOOP),
    ("lambda xs: lax.scan(lambda c, x: (c * 0.5 + x, jnp.sin(c)), jnp.zeros(2), xs, "
     "reverse=True)",
     lambda xs: lax.scan(lambda c, x: (c * 0.5 + x, jnp.sin(c)), jnp.zeros(2), xs,
                         reverse=True),
     (np.arange(8, dtype=f32).reshape(4, 2),), _LOOP),
    ("lambda w, xs: lax.scan(lambda c, x: (jnp.tanh(w @ c + x), jnp.sum(c)), jnp.ones(2), xs)",
     lambda w, xs: lax.scan(lambda c, x: (jnp.tanh(w @ c + x), jnp.sum(c)), jnp.ones(2), xs),
     (np.array([[0.5, -1.0], [2.0, 0.25]], f32), np.arange(6, dtype=f32).reshape(3, 2)), _LOOP),
    ("lambda x: lax.fori_loop(0, 3, lambda i, c: c * 2.0 + i, x)",
     lambda x: lax.fori_loop(0, 3, lambda i, c: c * 2.0 + i, x),
     (np.array([1.0, 2.0], f32),), _LOOP),
    ("lambda xs: lax.scan(lambda c, x: (c + lax.cond(x > 1.0, jnp.sin, jnp.cos, x), c), 0.0, xs)",
     lambda xs: lax.scan(lambda c, x: (c + lax.cond(x > 1.0, jnp.sin, jnp.cos, x), c), 0.0, xs),
     (np.array([0.5, 1.5, 2.5], f32),), _LOOP),
    ("lambda p, x: lax.cond(p, lambda x: lax.while_loop(lambda c: c < 100.0, lambda c: c * 3.0, "
     "x), jnp.negative, x)",
     lambda p, x: lax.cond(p, lambda x: lax.while_loop(lambda c: c < 100.0, lambda c: c * 3.0,
                                                       x), jnp.negative, x),
     (np.bool_(True), f32(2.0)), _IF),
    ("lambda x: double(x) + 1.0   # double = jax.jit(lambda y: y * 2.0)",
     lambda x: _double(x) + 1.0, (np.array([1.0, 2.0], f32),), None),
]

_COMPILE_HINT = (
    "compile each nested jaxpr (the `branches` of a cond, the `cond_jaxpr` and `body_jaxpr` of "
    "a while, the `jaxpr` of a scan) with compile_jaxpr itself, put the compiled functions in "
    "the namespace of the generated code, and call them from an if/elif/else, a while loop or "
    "a for loop that you generate")


class _Bound(Exception):
    """The compiled code bound a primitive instead of running NumPy kernels."""


@contextlib.contextmanager
def _no_binding() -> Iterator[None]:
    """While compiled code runs, binding a primitive (what eval_jaxpr and every minijax
    operation do) is an error: compiled code calls kernels."""
    original = core.Primitive.bind

    def refuse(self: core.Primitive, *args: Any, **params: Any) -> Any:
        raise _Bound(self.name)

    core.Primitive.bind = refuse  # type: ignore[method-assign]
    try:
        yield
    finally:
        core.Primitive.bind = original  # type: ignore[method-assign]


def _statements(source: str) -> set[type]:
    return {type(node) for node in ast.walk(ast.parse(source))}


def _run_compiled(run: Any, shown: str, args: Sequence[np.ndarray]) -> Any:
    try:
        with _no_binding():
            return run(*args)
    except _Bound as bound:
        raise CheckFailed(
            f"{shown} bound the primitive `{bound}` while running (that is what eval_jaxpr and "
            "minijax operations do): compiled code must call NumPy kernels such as "
            "`eqn.primitive.impl`, not interpret the jaxpr") from None
    except NotImplementedError as exc:
        raise CheckFailed(f"{shown} raised NotImplementedError: {exc} -- hint: "
                          f"{_COMPILE_HINT}") from exc
    except Exception as exc:
        raise CheckFailed(f"{shown} raised {describe_exception(exc)}") from exc


@exercise("compile_jaxpr", points=4)
def check_compile_jaxpr(ns):
    for text, fun, args, statement in _PROGRAMS:
        closed = jax.make_jaxpr(fun)(*args)
        expected = [np.asarray(v) for v in jax.tree_util.tree_leaves(fun(*args))]
        program, _, note = text.partition("   # ")
        arguments = ", ".join(show(a) for a in args)
        where = f"with closed = jax.make_jaxpr({program})({arguments})"
        if note:
            where += f" (where {note})"
        got = call(ns, "compile_jaxpr", closed)
        run = got.value
        if not callable(run):
            raise CheckFailed(f"{where}, compile_jaxpr(closed) returned "
                              f"{type(run).__name__}, not a function")
        source = getattr(run, "source", None)
        if not isinstance(source, str):
            raise CheckFailed(f"{where}, the function compile_jaxpr(closed) returned has no "
                              "attribute `source` holding the generated Python code (a str)")
        try:
            found = _statements(source)
        except SyntaxError as exc:
            raise CheckFailed(f"{where}, compile_jaxpr(closed).source is not valid Python: "
                              f"{exc}\n{source}") from exc
        shown = f"{where}, compile_jaxpr(closed)({arguments})"
        outs = _run_compiled(run, shown, args)
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

_leaky_relu_p = core.Primitive("leaky_relu")


@_leaky_relu_p.def_impl
def _leaky_relu_impl(x: np.ndarray, *, negative_slope: float) -> np.ndarray:
    return np.where(x > 0, x, x * np.asarray(negative_slope, x.dtype))


_leaky_relu_p.def_abstract_eval(
    lambda x, negative_slope: unary_rule("leaky_relu", FLOAT, None, x))


def _leaky_relu(x: Any, negative_slope: float) -> Any:
    return _leaky_relu_p.bind(operand(x), negative_slope=float(negative_slope))


@contextlib.contextmanager
def _registered(rule: Callable[..., Any]) -> Iterator[None]:
    lowering.lowering_rules[_leaky_relu_p] = rule
    try:
        yield
    finally:
        del lowering.lowering_rules[_leaky_relu_p]


def _lower_leaky_relu(spec: jax.ShapeDtypeStruct, slope: float) -> str:
    return jax.jit(lambda x: _leaky_relu(x, slope)).lower(spec).as_text()


_LEAKY_CASES = [((3,), np.float32, 0.1), ((), np.float32, 0.2), ((2, 2), np.float16, 0.01),
                ((4,), jnp.bfloat16, 0.3)]


def _diff(want: str, got: str) -> str:
    return "\n".join(difflib.unified_diff(want.splitlines(), got.splitlines(), "expected",
                                          "yours", lineterm=""))


@exercise("leaky_relu_lowering", points=2)
def check_leaky_relu_lowering(ns):
    if "leaky_relu_lowering" not in ns:
        raise CheckFailed("leaky_relu_lowering is not defined: did you run its cell?")
    rule = ns["leaky_relu_lowering"]
    for shape, dtype, slope in _LEAKY_CASES:
        spec = jax.ShapeDtypeStruct(shape, dtype)
        type_name = f"{np.dtype(dtype).name}{list(shape)}"
        want = jax.jit(lambda x, s=slope: lax.select(x > 0, x, x * s)).lower(spec).as_text()
        shown = f"lowering leaky_relu(x, negative_slope={slope}) for x of type {type_name}"
        with _registered(rule):
            got = call_described(_lower_leaky_relu, shown, spec, slope)
        if got.value != want:
            raise CheckFailed(
                f"{shown} gave other StableHLO than `lax.select(x > 0, x, x * {slope})` "
                f"lowers to:\n{_diff(want, got.value)}\n-- hint: emit, in this order, the "
                "constant 0 (broadcast to x's shape unless x is a scalar), the comparison "
                "`x > 0`, the constant slope (broadcast likewise), the product, the select; "
                "constants take x's dtype (`x.type.dtype`)")
        values = np.array([-2.0, -0.5, 0.0, 1.5, 3.0, -7.0, 0.25, 1.0][:max(1, int(np.prod(
            shape)))], dtype=dtype).reshape(shape)
        outs = numpy_backend.compile(got.value)(values)
        expected = np.where(values > 0, values, values * np.asarray(slope, dtype))
        if not np.array_equal(outs[0], expected):
            raise CheckFailed(f"the program {shown} computes {brief(outs[0])} for x = "
                              f"{brief(values)}; expected {brief(expected)}")


# ---------------------------------------------------------------------------------------
# Exercise 3: common-subexpression elimination
# ---------------------------------------------------------------------------------------

_BIG = np.zeros(2000, f32)
_BIG_OTHER = _BIG.copy()
_BIG_OTHER[1000] = 1.0  # differs from _BIG in the middle only: their reprs are equal
@jax.jit
def _tanh_twice(x: Any) -> Any:
    return jnp.tanh(x) * 2.0 + jnp.tanh(x) * 2.0


_X3 = np.array([0.5, -1.0, 2.0], f32)
_CSE_PROGRAMS = [
    ("lambda x: jnp.sin(x) * 2.0 + jnp.sin(x) * 2.0", lambda x: jnp.sin(x) * 2.0 + jnp.sin(x) * 2.0,
     (_X3,)),
    ("lambda x: x * 2.0 + x * 3.0", lambda x: x * 2.0 + x * 3.0, (_X3,)),
    ("lambda x: ((x > 1.0) & (x < 1.0)) | (x > 1.0)",
     lambda x: ((x > 1.0) & (x < 1.0)) | (x > 1.0), (_X3,)),
    ("lambda a: a @ a + a @ a.T + a @ a", lambda a: a @ a + a @ a.T + a @ a,
     (np.array([[1.0, 2.0], [3.0, 4.0]], f32),)),
    ("lambda x: _tanh_twice(x) + _tanh_twice(x)   # _tanh_twice = jax.jit(lambda x: "
     "jnp.tanh(x) * 2.0 + jnp.tanh(x) * 2.0)",
     lambda x: _tanh_twice(x) + _tanh_twice(x), (_X3,)),
    ("lambda x: (lambda s1, s2: lax.cond(jnp.sum(x) > 0, lambda: s2 * 2.0, lambda: s1))"
     "(jnp.sin(x), jnp.sin(x))",
     lambda x: (lambda s1, s2: lax.cond(jnp.sum(x) > 0, lambda: s2 * 2.0, lambda: s1))(
         jnp.sin(x), jnp.sin(x)), (_X3,)),
    ("lambda p, x: lax.cond(p, jnp.sin, jnp.cos, x) + lax.cond(p, jnp.sin, jnp.cos, x)",
     lambda p, x: lax.cond(p, jnp.sin, jnp.cos, x) + lax.cond(p, jnp.sin, jnp.cos, x),
     (np.bool_(True), _X3)),
    ("lambda x: jnp.sum(x + big) + jnp.sum(x + big_other) + jnp.sum(x + big)   # big and "
     "big_other are constant arrays of 2000 elements that differ in one element",
     lambda x: jnp.sum(x + _BIG) + jnp.sum(x + _BIG_OTHER) + jnp.sum(x + _BIG),
     (np.linspace(0, 1, 2000, dtype=f32),)),
]


def _run_module(module: stablehlo.Module, args: Sequence[np.ndarray]) -> list[np.ndarray]:
    source, namespace = numpy_backend.generate(module)
    exec(compile(source, "<cse check>", "exec"), namespace)
    main = next(f for f in module.funcs if f.visibility == "public")
    with np.errstate(all="ignore"):
        return namespace[main.name](*args)


def _listing(module: stablehlo.Module) -> str:
    """The module as text, for a message (unless it is too long to read)."""
    text = str(module)
    return f"\nThe module after your pass:\n{text}" if len(text) < 4000 else ""


def _plain_ops(func: stablehlo.Func) -> int:
    """How many top-level ops of ``func`` hold no region."""
    return sum(not op.regions for op in func.body.ops)


@exercise("cse", points=3)
def check_cse(ns):
    for text, fun, args in _CSE_PROGRAMS:
        lowered_text = jax.jit(fun).lower(*args).as_text()
        module = stablehlo.parse_module(lowered_text)
        program, _, note = text.partition("   # ")
        shown = f"cse(stablehlo.parse_module(jax.jit({program}).lower(...).as_text()))"
        if note:
            shown += f" (where {note})"
        got = call(ns, "cse", module)
        if got.value is not module:
            raise CheckFailed(f"{shown} returned {type(got.value).__name__}; expected the "
                              "module it was given (changed in place)")
        try:
            results = _run_module(module, args)
        except Exception as exc:
            raise CheckFailed(
                f"after {shown}, the module no longer works ({describe_exception(exc)}): does "
                "an operand still refer to the result of an op you removed? Ops nested in "
                "regions read values of the outer block too") from exc
        expected = [np.asarray(v) for v in jax.tree_util.tree_leaves(fun(*args))]
        for out, want in zip(results, expected):
            if not np.allclose(out, want, rtol=1e-5, atol=1e-6):
                raise CheckFailed(
                    f"after {shown}, the program computes {brief(out)}; expected "
                    f"{brief(want)}: two ops that differ were merged (compare names, operands, "
                    "attributes and result types; constants differ by their values: compare "
                    f"`value.tobytes()` rather than a repr){_listing(module)}")
        reference = passes.common_subexpression_elimination(
            stablehlo.parse_module(lowered_text))
        for func, ref in zip(module.funcs, reference.funcs):
            # Ops with regions are the learner's to leave alone (as the exercise says) or to
            # merge when their regions are identical (as minijax's pass does): both are right,
            # so only the ops without regions are counted.
            mine, theirs = _plain_ops(func), _plain_ops(ref)
            if mine > theirs:
                raise CheckFailed(
                    f"after {shown}, @{func.name} has {mine} top-level ops without regions; "
                    f"common-subexpression elimination leaves {theirs}: some duplicates were "
                    f"missed (every function of the module counts){_listing(module)}")
            if mine < theirs:
                raise CheckFailed(
                    f"after {shown}, @{func.name} has {mine} top-level ops without regions; "
                    f"expected {theirs}: leave `return`s and custom calls alone"
                    f"{_listing(module)}")


# ---------------------------------------------------------------------------------------
# Exercise 4: predicting retraces
# ---------------------------------------------------------------------------------------

_A = jnp.ones(3)
# (first arguments as text, as values, second arguments as text, as values, static_argnums)
_KEY_CASES = [
    ("(jnp.ones(3),)", (_A,), "(jnp.zeros(3),)", (jnp.zeros(3),), ()),
    ("(jnp.ones(3),)", (_A,), "(jnp.ones(4),)", (jnp.ones(4),), ()),
    ("(jnp.ones(3),)", (_A,), "(jnp.ones(3, jnp.int32),)", (jnp.ones(3, jnp.int32),), ()),
    ("(jnp.ones(3),)", (_A,), "(jnp.ones((3, 1)),)", (jnp.ones((3, 1)),), ()),
    ("(np.ones(3),)", (np.ones(3),), "(jnp.ones(3),)", (_A,), ()),
    ("(np.ones(3, np.int64),)", (np.ones(3, np.int64),), "(jnp.ones(3, jnp.int32),)",
     (jnp.ones(3, jnp.int32),), ()),
    ("(1.0,)", (1.0,), "(2.0,)", (2.0,), ()),
    ("(1.0,)", (1.0,), "(1,)", (1,), ()),
    ("(1,)", (1,), "(True,)", (True,), ()),
    ("(1.0,)", (1.0,), "(jnp.float32(1.0),)", (jnp.float32(1.0),), ()),
    ("(1.0,)", (1.0,), "(np.float32(1.0),)", (np.float32(1.0),), ()),
    ("(1.0,)", (1.0,), "(jnp.asarray(1.0),)", (jnp.asarray(1.0),), ()),
    ("(1,)", (1,), "(np.int64(1),)", (np.int64(1),), ()),
    ("(1 + 2j,)", (1 + 2j,), "(1j,)", (1j,), ()),
    ("((1.0, 2.0),)", ((1.0, 2.0),), "([1.0, 2.0],)", ([1.0, 2.0],), ()),
    ("({'a': 1.0},)", ({"a": 1.0},), "({'a': 2.0},)", ({"a": 2.0},), ()),
    ("({'a': 1.0},)", ({"a": 1.0},), "({'b': 1.0},)", ({"b": 1.0},), ()),
    ("((jnp.ones(2), 1.0),)", ((jnp.ones(2), 1.0),), "((jnp.ones(2), 1),)",
     ((jnp.ones(2), 1),), ()),
    ("(jnp.ones(3), None)", (_A, None), "(jnp.zeros(3), None)", (jnp.zeros(3), None), ()),
    ("(jnp.ones(3), 2)", (_A, 2), "(jnp.ones(3), 2)", (_A, 2), (1,)),
    ("(jnp.ones(3), 2)", (_A, 2), "(jnp.ones(3), 3)", (_A, 3), (1,)),
    ("(jnp.ones(3), 2)", (_A, 2), "(jnp.ones(3), 2.0)", (_A, 2.0), (1,)),
    ("(jnp.ones(3), 2)", (_A, 2), "(jnp.ones(4), 2)", (jnp.ones(4), 2), (1,)),
    ("('relu', jnp.ones(3))", ("relu", _A), "('relu', jnp.zeros(3))", ("relu", jnp.zeros(3)),
     (0,)),
    ("('relu', jnp.ones(3))", ("relu", _A), "('tanh', jnp.ones(3))", ("tanh", _A), (0,)),
    ("(jnp.ones(3), (1, 2))", (_A, (1, 2)), "(jnp.ones(3), (1, 2))", (_A, (1, 2)), (1,)),
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


@exercise("cache_key", points=2)
def check_cache_key(ns):
    function = ns.get("cache_key")
    if not callable(function):
        raise CheckFailed("cache_key is not defined as a function: did you run its cell?")
    for first_text, first, second_text, second, static in _KEY_CASES:
        keys = []
        for text, args in ((first_text, first), (second_text, second)):
            got = call_described(function, f"cache_key({text}, static_argnums={static})",
                                 args, static)
            try:
                hash(got.value)
            except TypeError as exc:
                raise CheckFailed(f"{got.call} returned {got.value!r}, which is not hashable "
                                  f"({exc}): a cache key must be (use tuples, not lists)") from exc
            keys.append(got)
        retraced = _retraces(first, second, static)
        if (keys[0].value == keys[1].value) == retraced:
            verdict = "equal" if not retraced else "different"
            raise CheckFailed(
                f"{keys[0].call} and {keys[1].call} should be {verdict}: a function jitted "
                f"with static_argnums={static} and called with {first_text}, then with "
                f"{second_text}, {'traces' if retraced else 'does not trace'} again. Yours "
                f"were {keys[0].value!r} and {keys[1].value!r}")
