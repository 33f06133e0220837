"""Chapter 06's Build-it pieces: each solved piece, installed alone, passes its check's programs;
a deliberately broken piece fails with a message that names the program, the reference's result
and the broken piece's result. (Solutions scoring full marks and the pristine notebook scoring
zero are covered for every chapter by test_course_exercises.py.)"""

from __future__ import annotations

from pathlib import Path

import pytest

from grader.chapters import load_checks
from grader.outcome import Status, run_check
from minijax import pieces
from tests import build_it

ROOT = Path(__file__).resolve().parents[1]
CHECKS = load_checks("06_jaxprs", ROOT / "exercises" / "checks")
BUILD_IT = ["JaxprTrace", "print_jaxpr", "eval_jaxpr", "dce_jaxpr"]
SETUP, SOLVED = build_it.notebook_cells("solutions", "06_jaxprs")


def solved(name: str) -> str:
    """The source of the solutions notebook's cell for the exercise ``name``."""
    return SOLVED[name]


def namespace(*sources: str) -> dict:
    """The solutions notebook's setup cell run, then ``sources``: a learner's globals."""
    ns: dict = {}
    for source in (SETUP, *sources):
        build_it.run_cell(source, ns)
    return ns


def result(name: str, ns: dict):
    try:
        return run_check(CHECKS[name], ns)
    finally:
        pieces.reset()


def failures(got) -> dict[str, str]:
    """The failed parts of a result, by name, with their messages."""
    assert got.status is Status.FAILED, got
    return build_it.failed_parts(got)


@pytest.mark.parametrize("name", BUILD_IT)
def test_solved_piece_installed_alone_passes_its_programs(name):
    got = result(name, namespace(solved(name)))
    assert got.status is Status.PASSED, got.message
    assert pieces.installed() == []


def broken(name: str, old: str, new: str) -> str:
    source = solved(name)
    assert old in source
    return source.replace(old, new)


def test_dce_that_drops_an_effectful_equation_fails_naming_the_printed_text():
    source = broken("dce_jaxpr", "if not any(used) and not has_effects(Jaxpr([], [], [], [eqn])):",
                    "if not any(used):")
    failed = failures(result("dce_jaxpr", namespace(source)))
    assert list(failed) == ["effects and nested jaxprs"]
    message = failed["effects and nested jaxprs"]
    assert "with your dce_jaxpr installed, the text printed by jax.jit(lambda v: " \
           "(jax.debug.print('v = {}', v)" in message
    assert "where minijax's own pieces give\nv = 1.5" in message


def test_dce_that_drops_a_used_equation_fails_naming_the_program():
    source = broken("dce_jaxpr", "used = [v in live for v in eqn.outvars]",
                    "used = [v in live for v in eqn.outvars[:1]]")  # forgets later results
    failed = failures(result("dce_jaxpr", namespace(source)))
    assert "with your dce_jaxpr installed, jax.jit(lambda k, v: lax.sort_key_val(k, v)[1])" \
           in failed["removing dead equations"]


def test_printer_that_drops_the_types_fails_showing_both_texts():
    source = broken("print_jaxpr", "else '_'}:{v.aval.str_short()}", "else '_'}")
    failed = failures(result("print_jaxpr", namespace(source)))
    assert set(failed) == {"one line", "several lines", "literals, constants and unused results"}
    message = failed["one line"]
    assert message.startswith("with your print_jaxpr installed, str(jax.make_jaxpr(f)(1.0)) for "
                              "f = lambda x: jnp.sin(x) * 2.0 gave the text\n"
                              "{ lambda ; a. let b = sin a; c = mul b 2.0:f32[] in (c,) }\n"
                              "where minijax's own pieces give\n"
                              "{ lambda ; a:f32[]. let b:f32[] = sin a; c:f32[] = mul b 2.0:f32[] "
                              "in (c,) }")


def test_printer_that_names_unused_results_fails_on_them_only():
    source = broken("print_jaxpr", "if v in read or not results else '_'", "")
    failed = failures(result("print_jaxpr", namespace(source)))
    assert "an unused result" in failed["literals, constants and unused results"]
    assert "_:f32[] = cos a" in failed["literals, constants and unused results"]


def test_trace_with_a_constvar_per_use_fails_on_a_constant_used_twice():
    source = broken("JaxprTrace", "if id(x) not in self.constvars:", "if True:")
    failed = failures(result("JaxprTrace", namespace(source)))
    assert list(failed) == ["constants and literals"]
    assert "table = np.arange(3.0, dtype=np.float32): one constvar" in \
        failed["constants and literals"]
    assert "c:f32[3] = mul b d" in failed["constants and literals"]  # a constvar lost


def test_eval_jaxpr_that_reads_one_result_per_equation_fails_on_sort():
    source = broken("eval_jaxpr", "outs if eqn.primitive.multiple_results else [outs]", "[outs]")
    failed = failures(result("eval_jaxpr", namespace(source)))
    assert "jax.make_jaxpr(lax.sort_key_val)(k, v)  (a primitive with two results)" in \
        failed["straight-line jaxprs"]


def test_interpreter_exercises_grade_the_interpreter_on_minijax_own_pieces():
    """A broken trace installed earlier in the notebook does not fail the later exercises that
    only read jaxprs: their checks build the jaxprs with minijax's own pieces."""
    drops_an_equation = broken("JaxprTrace", "self.invars, outvars, self.eqns)",
                               "self.invars, outvars, self.eqns[1:])")
    ns = namespace(drops_an_equation, solved("count_primitives"), solved("hoist_constants"))
    pieces.install("JaxprTrace", ns["JaxprTrace"])
    try:
        for name in ("count_primitives", "hoist_constants"):
            got = run_check(CHECKS[name], ns)
            assert got.status is Status.PASSED, got.message
    finally:
        pieces.reset()


def test_a_broken_piece_fails_its_check_in_the_notebook_after_its_install_cell():
    """check() runs in the learner's process: the reference side must not run on the
    installed (broken) piece, or it would agree with it."""
    ns = namespace(broken("print_jaxpr", "else '_'}:{v.aval.str_short()}", "else '_'}"))
    pieces.install("print_jaxpr", ns["print_jaxpr"])
    try:
        assert run_check(CHECKS["print_jaxpr"], ns).status is Status.FAILED
        assert pieces.installed() == ["print_jaxpr"]
    finally:
        pieces.reset()
