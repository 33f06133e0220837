"""Chapter 07's Build-it pieces -- ``compile_jaxpr`` as jit's compiler, ``cse`` as the
mini-XLA's pass, ``leaky_relu_lowering`` and ``base_lowering_rules`` in the lowering table,
``jit_cache_key`` and ``cached`` as jit's cache: each solved piece passes its check alone, and
a broken one fails naming the program and both results."""

from __future__ import annotations

import nbformat
import numpy as np
import pytest

from grader.outcome import Status
from minijax import pieces
from tests.build_it import ROOT, failed_parts, solved_namespace, verdict

CHAPTER = "07_jit_and_xla"
PIECES = ("compile_jaxpr", "leaky_relu_lowering", "cse", "base_lowering_rules", "jit_cache")


@pytest.mark.parametrize("name", PIECES)
def test_each_solved_piece_alone_passes_its_check(name):
    result = verdict(CHAPTER, name, solved_namespace(CHAPTER, (name,)))
    assert result.status is Status.PASSED, result.message
    assert result.points == result.max_points
    assert pieces.installed() == []


def test_installed_compiler_is_what_jit_runs():
    ns = solved_namespace(CHAPTER, ("compile_jaxpr",), """
        compiled = []
        _solved = compile_jaxpr
        def compile_jaxpr(closed_jaxpr, name="jit", keep_unused=False):
            compiled.append(name)
            return _solved(closed_jaxpr)
        """)
    with pieces.using({"compile_jaxpr": ns["compile_jaxpr"]}):
        assert float(ns["jax"].jit(lambda x: x * 3.0)(2.0)) == 6.0
    assert ns["compiled"] == ["<lambda>"]


def _solved_source(name: str) -> str:
    cells = nbformat.read(ROOT / "solutions" / f"{CHAPTER}.ipynb", as_version=4).cells
    return next(c.source for c in cells if c.metadata.get("exercise", {}).get("name") == name)


BROKEN = {
    # outputs in float64, whatever the jaxpr says
    "compile_jaxpr": ("""
        _solved = compile_jaxpr
        def compile_jaxpr(closed_jaxpr, name="jit", keep_unused=False):
            run = _solved(closed_jaxpr)
            return lambda *args: [np.asarray(out, np.float64) for out in run(*args)]
        """, "installed as jit's compiler",
        ["with your compile_jaxpr installed, jax.jit(lambda x: jnp.sin(x) * 2.0 + 1.0)(x) gave",
         "minijax's own pieces give [ 1.9589 -0.6829 2.8186]"]),
    # operations merged whatever their attributes: x * 2.0 and x * 3.0 become one product
    "cse": (_solved_source("cse").replace("frozen(op.attrs))", ")"),
            "installed as the mini-XLA's pass",
            ["with your cse installed, jax.jit(lambda x: x * 2.0 + x * 3.0)(...) gave",
             "minijax's own pieces give"]),
}


@pytest.mark.parametrize("name", list(BROKEN))
def test_a_broken_piece_fails_with_the_program_and_both_results(name):
    source, failing_part, fragments = BROKEN[name]
    result = verdict(CHAPTER, name, solved_namespace(CHAPTER, (name,), source))
    failed = failed_parts(result)
    assert failing_part in failed, result.parts
    for fragment in fragments:
        assert fragment in failed[failing_part], failed[failing_part]
    assert pieces.installed() == []


_RULES = ("base_lowering_rules = {integer_pow_p: integer_pow_lowering, reduce_sum_p: "
          "reduce_sum_lowering, dot_general_p: dot_general_lowering, logistic_p: "
          "logistic_lowering}")

#: Broken pieces of the exercises with one piece per part: (the exercise, the broken source,
#: the part that fails, fragments of its message), and the parts that must still pass.
BROKEN_PARTS = {
    # a cache key that ignores dtypes: a float32 then an int32 call share one trace
    "key without dtypes": ("jit_cache", """
        def jit_cache_key(in_tree, avals, statics, context):
            return in_tree, tuple(a.shape for a in avals), statics, context
        """, "jit_cache_key, with minijax's cache",
        ["with your jit_cache_key installed, f = jax.jit(lambda x: x * 2), called as "
         "f(jnp.ones(3)), then as f(jnp.ones(3, jnp.int32)) (the calls differ in the dtype)",
         "minijax's own pieces give [[2, 2, 2], 'int32']"], ["cached, with minijax's key"]),
    # a key without the context: the x64 flag and vmap's axis sizes are ignored
    "key without context": ("jit_cache", """
        def jit_cache_key(in_tree, avals, statics, context):
            return in_tree, tuple(avals), statics
        """, "jit_cache_key, with minijax's cache",
        ["(the calls differ in the x64 flag)", "gave the text at [1][1]\nfloat32\nwhere "
         "minijax's own pieces give\nfloat64"], []),
    # a cache that never remembers: every call traces again
    "cache that forgets": ("jit_cache", """
        def cached(cache, key, make_entry):
            return make_entry()
        """, "cached, with minijax's key",
        ["f(jnp.ones(3)), then as f(jnp.zeros(3)) (the calls differ in nothing but values)",
         "2 at [2]; minijax's own pieces give 1"], ["jit_cache_key, with minijax's cache"]),
    # dot_general without its precision attribute
    "dot_general attribute": ("base_lowering_rules", """
        def dot_general_lowering(ctx, lhs, rhs, *, dimension_numbers, precision, **params):
            (lhs_contract, rhs_contract), _ = dimension_numbers
            return ctx.b.emit("stablehlo.dot_general", lhs, rhs, type=ctx.type_out,
                              contracting_dims=(tuple(lhs_contract), tuple(rhs_contract)))
        """ + _RULES, "dot_general",
        ["jax.jit(lambda a, b: a @ b).lower(...).as_text() with your rule for dot_general",
         "yours have too many of\n  % = stablehlo.dot_general %, %, contracting_dims = [1] x "
         "[0] : (tensor<2x3xf32>", "and lack\n  % = stablehlo.dot_general %, %, "
         "contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT]"],
        ["integer_pow", "reduce_sum", "logistic"]),
    # logistic without the 1 + : an operation missing (and another result)
    "logistic operation": ("base_lowering_rules", """
        def logistic_lowering(ctx, x):
            e = ctx.b.emit("stablehlo.exponential", ctx.b.emit("stablehlo.negate", x))
            return ctx.b.emit("stablehlo.divide", ctx.b.full_if_needed(1, x.type), e)
        """ + _RULES, "logistic",
        ["jax.jit(lambda x: jax.nn.sigmoid(x)).lower(...).as_text() with your rule for "
         "logistic", "and lack\n  % = stablehlo.add %, % : tensor<2x3xf32>"],
        ["integer_pow", "reduce_sum", "dot_general"]),
    # x ** n as n - 1 products in a row: right values, not JAX's repeated squaring
    "integer_pow chain": ("base_lowering_rules", """
        def integer_pow_lowering(ctx, x, *, y):
            acc = x
            for _ in range(abs(y) - 1):
                acc = ctx.b.emit("stablehlo.multiply", acc, x)
            if y < 0:
                return ctx.b.emit("stablehlo.divide", ctx.b.full_if_needed(1, x.type), acc)
            return acc
        """ + _RULES, "integer_pow",
        ["jax.jit(lambda x: x ** 5).lower(...).as_text() with your rule for integer_pow",
         "yours have too many of\n  % = stablehlo.multiply %, % : tensor<4xf32>\nand lack\n"
         "  nothing"], ["reduce_sum", "dot_general", "logistic"]),
}


@pytest.mark.parametrize("case", list(BROKEN_PARTS))
def test_a_broken_part_fails_with_a_specific_message_and_the_others_pass(case):
    name, source, failing_part, fragments, passing = BROKEN_PARTS[case]
    result = verdict(CHAPTER, name, solved_namespace(CHAPTER, (name,), source))
    failed = failed_parts(result)
    assert failing_part in failed, result.parts
    for fragment in fragments:
        assert fragment in failed[failing_part], failed[failing_part]
    assert not set(passing) & set(failed), failed
    assert pieces.installed() == []


def test_the_lowering_check_runs_the_text_on_real_xla_where_jax_is_installed():
    """What the check's instrument reports for a program: minijax's NumPy backend's results,
    and real XLA's when JAX is installed (without JAX that step is left out, not faked)."""
    from grader.chapters import load_checks
    from grader.checks import probe
    from grader.plain import FunctionSource
    from minijax.compiler import xla_backend

    check = load_checks(CHAPTER, ROOT / "exercises" / "checks")["base_lowering_rules"]
    scope = check.run.__globals__
    ns = solved_namespace(CHAPTER, ("base_lowering_rules",))
    x = scope["_XB"]
    reports = probe(ns, "observe", FunctionSource(scope["_OBSERVE_RULES"]), "logistic",
                    [["lambda x: jax.nn.sigmoid(x)", [x]]])
    expected = 1 / (1 + np.exp(-x))
    np.testing.assert_allclose(reports[0]["numpy"]["value"][0], expected, rtol=1e-6)
    if xla_backend.available():
        np.testing.assert_allclose(reports[0]["xla"]["value"][0], expected, rtol=1e-6)
    else:
        assert "xla" not in reports[0]
