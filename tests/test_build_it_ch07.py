"""Chapter 07's Build-it pieces -- ``compile_jaxpr`` as jit's compiler, ``cse`` as the
mini-XLA's pass, ``leaky_relu_lowering`` in the lowering table: each solved piece passes its
check alone, and a broken one fails naming the program and both results."""

from __future__ import annotations

import nbformat
import pytest

from grader.outcome import Status
from minijax import pieces
from tests.build_it import ROOT, failed_parts, solved_namespace, verdict

CHAPTER = "07_jit_and_xla"
PIECES = ("compile_jaxpr", "leaky_relu_lowering", "cse")


@pytest.fixture(autouse=True)
def minijax_own_pieces():
    yield
    pieces.reset()


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
