"""Lowering to StableHLO: the text equals JAX's, and real XLA runs it.

* ``jax.jit(f).lower(*args).as_text()`` and minijax's ``lower_jaxpr`` of the same
  program agree character for character (SSA names, constants, regions, private
  functions, result names...) on every program of ``PROGRAMS`` marked ``same_text``;
* XLA compiles the text of every program and computes what eager minijax computes;
* ``cost_analysis`` counts what JAX's lowered cost analysis counts;
* the entry points: module names, dropped arguments, missing rules.

The programs live in ``test_numpy_backend.py`` (the NumPy backend runs them too).
"""

from __future__ import annotations

import types
from itertools import compress

import numpy as np
import pytest

import minijax
from minijax.compiler import lowering, numpy_backend, xla_backend
from minijax.compiler.stablehlo import parse_module
from minijax.compiler.stablehlo_ir import print_module
from minijax.core import Primitive, ShapedArray
from minijax.interpreters import partial_eval as pe
from minijax.jaxpr import ClosedJaxpr, JaxprEqn
from minijax.tracing import trace_to_jaxpr
from tests.test_numpy_backend import (
    EXACT,
    MINI,
    PROGRAMS,
    Program,
    V,
    assert_same_outputs,
    lower_program,
    run,
)

jax = pytest.importorskip("jax")
import jax.numpy as jjnp  # noqa: E402
from jax import lax as jlax  # noqa: E402

JAX = types.SimpleNamespace(jnp=jjnp, lax=jlax, np=np, jax=jax)


def jax_text(program: Program) -> str:
    fun = program.fun(JAX)
    fun.__name__ = program.name
    return jax.jit(fun).lower(*program.args).as_text()


def result_names(program: Program) -> list[str]:
    """JAX's ``jax.result_info``: ``result`` and the output's pytree path."""
    shapes = jax.eval_shape(program.fun(JAX), *program.args)
    paths = jax.tree_util.tree_flatten_with_path(shapes)[0]
    return ["result" + jax.tree_util.keystr(path) for path, _ in paths]


def minijax_text(program: Program) -> str:
    closed = minijax.make_jaxpr(program.fun(MINI))(*program.args)
    return lowering.lower_jaxpr(closed, module_name=lowering.module_name(program.name),
                                result_names=result_names(program))


def test_enough_programs() -> None:
    assert len(EXACT) >= 40 and len(PROGRAMS) >= 30


@pytest.mark.parametrize("program", EXACT, ids=lambda p: p.name)
def test_text_equals_jax(program: Program) -> None:
    expected = jax_text(program)
    closed = minijax.make_jaxpr(program.fun(MINI))(*program.args)
    theirs = jax.make_jaxpr(program.fun(JAX))(*program.args)
    assert str(closed) == str(theirs), "minijax's jaxpr differs from JAX's"
    assert minijax_text(program) == expected


@pytest.mark.parametrize("program", EXACT, ids=lambda p: p.name)
def test_jax_text_round_trips_through_the_parser(program: Program) -> None:
    text = jax_text(program)
    assert print_module(parse_module(text)) == text


# ---------------------------------------------------------------------------------------
# Real XLA accepts the text and agrees with eager minijax
# ---------------------------------------------------------------------------------------

needs_xla = pytest.mark.skipif(not xla_backend.available(), reason="no usable jax.extend")


@needs_xla
@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: p.name)
def test_xla_runs_the_text(program: Program) -> None:
    outs, expected = run(program, xla_backend.compile)
    assert_same_outputs(outs, expected, rtol=1e-4)


# ---------------------------------------------------------------------------------------
# Cost analysis
# ---------------------------------------------------------------------------------------

_COSTED = ["sin_mul_add", "matmul", "sum_all", "reductions", "shapes", "converts",
           "integer_pow", "clamp", "batched_dot", "logistic_exp2", "cumulative", "argmax",
           "cond", "sort"]
# XLA rewrites some ops as it reads the text (it splits one of this program's broadcasts):
# the arithmetic is counted alike, the bytes nearly.
_FLOPS_ONLY = ["mlp_loss"]


def _costs(name: str) -> tuple[dict, dict]:
    program = next(p for p in PROGRAMS if p.name == name)
    lowered = jax.jit(program.fun(JAX)).lower(*program.args)
    theirs = {k: v for k, v in lowered.cost_analysis().items()
              if k in ("flops", "bytes accessed", "transcendentals")}
    closed = minijax.make_jaxpr(program.fun(MINI))(*program.args)
    return lowering.cost_analysis(closed), theirs


@pytest.mark.parametrize("name", _COSTED)
def test_cost_analysis_matches_jax(name: str) -> None:
    ours, theirs = _costs(name)
    assert ours == theirs


@pytest.mark.parametrize("name", _FLOPS_ONLY)
def test_cost_analysis_counts_flops_as_jax(name: str) -> None:
    ours, theirs = _costs(name)
    assert ours["flops"] == theirs["flops"]
    assert ours.get("transcendentals") == theirs.get("transcendentals")
    assert abs(ours["bytes accessed"] - theirs["bytes accessed"]) < 0.2 * theirs[
        "bytes accessed"]


# ---------------------------------------------------------------------------------------
# Entry points
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("name, expected", [
    ("f", "jit_f"), ("<lambda>", "jit__lambda"), ("f__", "jit_f"), ("a.b", "jit_a.b"),
    ("x>y", "jit_x_y"), ("my-fn", "jit_my-fn")])
def test_module_name(name: str, expected: str) -> None:
    assert lowering.module_name(name) == expected

    def f(x):
        return x
    f.__name__ = name
    assert jax.jit(f).lower(1.0).as_text().split(" attributes")[0] == \
        "module " + ("@" + expected if expected.replace("_", "a").replace(".", "a").isalnum()
                     else f'@"{expected}"')


def test_unused_arguments_are_dropped_unless_kept() -> None:
    closed = minijax.make_jaxpr(lambda x, y, z: x * z)(1.0, V, 3.0)
    assert lowering.used_inputs(closed) == [True, False, True]
    text = lowering.lower_jaxpr(closed, module_name="jit_f")
    assert "@main(%arg0: tensor<f32>, %arg1: tensor<f32>)" in text
    kept = lowering.lower_jaxpr(closed, module_name="jit_f", keep_unused=True)
    assert "@main(%arg0: tensor<f32>, %arg1: tensor<5xf32>, %arg2: tensor<f32>)" in kept
    expected = jax.jit(lambda x, y, z: x * z, keep_unused=True).lower(1.0, V, 3.0).as_text()
    assert kept == expected.replace("jit__lambda", "jit_f")


def test_a_primitive_s_own_dce_rule_is_looked_up_when_dead_code_goes(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """``sines`` (declared here) returns the sine of each operand. Once its rule is in
    ``dce_rules``, dead-code elimination drops the operands whose sines nobody uses, inside
    a nested ``jit`` too, so ``main`` loses the argument; a primitive of the same name
    without a rule keeps every operand (rules are keyed by primitive, not by name)."""
    def declare() -> Primitive:
        prim = Primitive("sines", multiple_results=True)
        prim.def_abstract_eval(lambda *avals: list(avals))
        monkeypatch.setitem(lowering.lowering_rules, prim,
                            lambda ctx, *xs: [ctx.b.emit("stablehlo.sine", x) for x in xs])
        return prim

    def sines_dce(eqn: JaxprEqn, used_outputs: list[bool]) -> JaxprEqn:
        return JaxprEqn(eqn.primitive, list(compress(eqn.invars, used_outputs)),
                        list(compress(eqn.outvars, used_outputs)), eqn.params, eqn.source_info)

    def first_sine(prim: Primitive) -> ClosedJaxpr:  # a new function: traced afresh
        call = minijax.jit(lambda x, y: prim.bind(x, y))
        return minijax.make_jaxpr(lambda x, y: call(x, y)[0])(V, V[:3])

    sines_p, twin_p = declare(), declare()
    assert lowering.used_inputs(first_sine(sines_p)) == [True, True]
    monkeypatch.setitem(pe.dce_rules, sines_p, sines_dce)
    assert lowering.used_inputs(first_sine(twin_p)) == [True, True]
    closed = first_sine(sines_p)
    assert lowering.used_inputs(closed) == [True, False]
    text = lowering.lower_jaxpr(closed, module_name="jit_f")
    assert "@main(%arg0: tensor<5xf32>)" in text and text.count("stablehlo.sine") == 1
    np.testing.assert_allclose(numpy_backend.compile(text)(V)[0], np.sin(V), rtol=1e-6)


def test_default_result_names() -> None:
    closed = minijax.make_jaxpr(lambda x: (x, x * 2))(V)
    text = lowering.lower_jaxpr(closed, module_name="jit_f")
    assert 'jax.result_info = "result[0]"' in text and 'jax.result_info = "result[1]"' in text


def test_missing_rule_names_the_primitive() -> None:
    mystery_p = Primitive("mystery")
    mystery_p.def_abstract_eval(lambda x: x)
    closed = trace_to_jaxpr(lambda x: [mystery_p.bind(x)], [ShapedArray((3,), np.float32)])
    with pytest.raises(NotImplementedError, match="primitive 'mystery'"):
        lowering.lower_jaxpr(closed, module_name="jit_f")


def test_every_lax_primitive_has_a_rule() -> None:
    from minijax import lax

    prims = {v for v in vars(lax).values() if isinstance(v, Primitive)}
    prims |= {v for v in vars(lax.linalg).values() if isinstance(v, Primitive)}
    missing = sorted(p.name for p in prims if p not in lowering.lowering_rules)
    assert missing == []


def test_debug_print_lowers_to_a_host_callback(capsys: pytest.CaptureFixture) -> None:
    from minijax.compiler import numpy_backend

    def f(x):
        minijax.debug.print("x = {}", x)
        return x + 1.0

    closed = minijax.make_jaxpr(f)(V[:2])
    text = lowering.lower_jaxpr(closed, module_name="jit_f")
    assert "stablehlo.custom_call @minijax_python_callback(%arg0) {has_side_effect = true" in text
    out = numpy_backend.compile(text)(np.array([1.0, 2.0], np.float32))
    assert capsys.readouterr().out == "x = [1. 2.]\n"
    np.testing.assert_array_equal(out[0], [2.0, 3.0])


def test_lowered_programs_agree_with_their_own_text() -> None:
    """``lower_to_module`` and ``lower_jaxpr`` are the same lowering."""
    closed, text, _ = lower_program(PROGRAMS[0])
    module, used = lowering.lower_to_module(closed, module_name="jit_sin_mul_add")
    assert print_module(module) == text and used == [True, True]


@needs_xla
@pytest.mark.parametrize("name", ["scan", "scan_consts", "qr", "matmul", "fori_dynamic",
                                  "argmax", "gather_fill"])
def test_text_equals_jax_with_x64(name: str) -> None:
    """With 64-bit types on, loop counters and iotas are int64, as in JAX."""
    from tests.oracle import x64_mode

    program = next(p for p in PROGRAMS if p.name == name)
    with x64_mode():
        assert minijax_text(program) == jax_text(program)
        outs, expected = run(program, xla_backend.compile)
        assert_same_outputs(outs, expected, rtol=1e-4)
