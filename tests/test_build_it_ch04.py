"""Chapter 04's "Build it" pieces: the JVP trace, JVP rules, ``jvp`` and ``jacfwd``.

Each solved piece, taken from ``solutions/04_forward_mode.ipynb`` and installed alone, passes
its check's programs; a deliberately broken piece fails with a message that names the program
and gives both results. (That the solutions notebook scores full marks, and the pristine
exercises zero, is tests/test_course_exercises.py's, for every chapter.)
"""

from __future__ import annotations

from pathlib import Path

import pytest

from grader.chapters import load_checks
from grader.outcome import Status, run_check
from minijax import lax, pieces
from tests import build_it

ROOT = Path(__file__).resolve().parents[1]
CHECKS = load_checks("04_forward_mode", ROOT / "exercises" / "checks")
PIECES = ["JVPTrace", "jvp_rules", "jvp", "jacfwd"]


SETUP, SOLVED = build_it.notebook_cells("solutions", "04_forward_mode")


def solved_source(piece: str) -> str:
    """The source of the solutions notebook's exercise cell for ``piece``."""
    return SOLVED[piece]


def solved_namespace() -> dict:
    """The solutions notebook's setup cell and its four solved pieces, run in a namespace."""
    return build_it.solved_namespace("04_forward_mode", tuple(PIECES))


@pytest.fixture
def ns() -> dict:
    return solved_namespace()


@pytest.mark.parametrize("name", PIECES)
def test_each_solved_piece_alone_passes_its_programs(ns, name):
    result = run_check(CHECKS[name], ns)
    assert result.status is Status.PASSED, result
    assert result.points == CHECKS[name].points
    assert pieces.installed() == []  # the check installs the piece for its programs only


def failed_parts(result) -> dict[str, str]:
    """The failed parts of ``result``, with their messages."""
    assert result.status is Status.FAILED, result
    return build_it.failed_parts(result)


def test_a_sin_rule_with_the_wrong_sign_fails_naming_the_program_and_both_results(ns):
    def wrong_sin(primals, tangents):
        (x,), (t,) = primals, tangents
        return lax.sin(x), lax.mul(t, lax.neg(lax.cos(x)))

    ns["jvp_rules"] = {**ns["jvp_rules"], lax.sin_p: wrong_sin}
    failed = failed_parts(run_check(CHECKS["jvp_rules"], ns))
    assert list(failed) == ["sin_cos_exp"]  # log, tanh, mul and div are still right
    message = failed["sin_cos_exp"]
    assert message.startswith("with your jvp_rules installed, jax.jvp(jnp.sin, (x,), (t,)) "
                              "with x = np.array([1.0, 2.0, 3.0], dtype=np.float32)")
    # the learner's tangent, -t cos x, then the reference's, t cos x
    assert "gave [-0.2702 -0.4161 1.98 ] at [1]; minijax's own pieces give " \
           "[ 0.2702 0.4161 -1.98 ]" in message


def test_a_trace_without_symbolic_zeros_fails_on_the_jaxpr_it_records(ns):
    class ZerosAsArrays(ns["JVPTrace"]):
        """Gives constants a tangent of real zeros: right values, wasted work."""

        def to_primal_tangent(self, x):
            primal, tangent = super().to_primal_tangent(x)
            return primal, ns["instantiate"](tangent)

    ns["JVPTrace"] = ZerosAsArrays
    # (grad fails too: zeros made under the trace that records tangents are not linear)
    message = failed_parts(run_check(CHECKS["JVPTrace"], ns))["symbolic_zeros"]
    assert message.startswith("with your JVPTrace installed, str(jax.make_jaxpr(")
    assert "where minijax's own pieces give" in message
    yours, reference = message.split("where minijax's own pieces give")
    # the derivative of sin x2, x2 a constant, is computed (a cos) on zeros, not skipped
    assert "cos 5.0:f32[]" in yours and "cos" not in reference


def test_a_jvp_that_keeps_symbolic_zeros_fails_on_a_constant_output(ns):
    source = solved_source("jvp")
    line = "    tangents_out = [instantiate(t) for t in tangents_out]\n"
    assert line in source
    exec(source.replace(line, ""), ns)  # Zero tangents reach the user
    failed = failed_parts(run_check(CHECKS["jvp"], ns))
    assert list(failed) == ["arrays"]
    message = failed["arrays"]
    assert message.startswith("with your jvp installed, jax.jvp(lambda x: jnp.ones(3), (x,), "
                              "(t,))  # a constant output")
    assert "minijax's own pieces give [0. 0. 0.]" in message


def test_grad_and_hessian_run_on_the_installed_pieces(ns):
    """The programs reach the pieces: grad differentiates with the learner's trace (under
    linearize), and hessian and jacfwd call the learner's jacfwd and jvp."""
    import minijax as jax
    import minijax.numpy as jnp

    seen = []

    class Watched(ns["JVPTrace"]):
        def process_primitive(self, primitive, args, params):
            seen.append(primitive.name)
            return super().process_primitive(primitive, args, params)

    def watched(name):
        def call(*args, **kwargs):
            seen.append(name)
            return ns[name](*args, **kwargs)
        return call

    with pieces.using({"JVPTrace": Watched}):
        jax.grad(lambda x: jnp.sin(x) * x)(2.0)
    assert seen == ["sin", "mul"]
    seen.clear()
    with pieces.using({"jacfwd": watched("jacfwd"), "jvp": watched("jvp")}):
        jax.hessian(lambda x: jnp.sum(x ** 3))(jnp.ones(2))
    assert seen == ["jacfwd", "jvp"]


def test_check_in_the_notebook_compares_with_minijax_pieces_even_when_the_learners_are_installed(
        ns):
    """``check()`` runs in the notebook's process, where the try-it cells have installed the
    learner's pieces: the reference results must still be minijax's own, and a piece is
    graded on minijax's other pieces."""
    def wrong_sin(primals, tangents):
        (x,), (t,) = primals, tangents
        return lax.sin(x), lax.mul(t, lax.neg(lax.cos(x)))

    ns["jvp_rules"] = {**ns["jvp_rules"], lax.sin_p: wrong_sin}
    pieces.install("jvp_rules", ns["jvp_rules"])
    failed = failed_parts(run_check(CHECKS["jvp_rules"], ns))
    assert list(failed) == ["sin_cos_exp"]
    # each piece is graded alone: the right JVPTrace passes, whatever rules are installed
    assert run_check(CHECKS["JVPTrace"], ns).status is Status.PASSED
    assert pieces.installed() == ["jvp_rules"]  # and the learner's table is still installed
