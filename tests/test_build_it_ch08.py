"""Chapter 08's Build-it pieces, ``concrete_or_error`` and ``check_valid_tracer``: each solved
piece, installed alone, passes its check; a deliberately broken one fails with a message that
names the program, what the broken piece gave and what minijax's own gives.

The solved pieces are the exercise cells of ``solutions/08_jit_sharp_edges.ipynb``, run after
the notebook's setup cell. Whole notebooks are graded in ``tests/test_course_exercises.py``.
"""

from __future__ import annotations

import pytest

from grader.outcome import Status
from minijax import pieces
from tests.build_it import failed_parts, solved_namespace
from tests.build_it import verdict as chapter_verdict

CHAPTER = "08_jit_sharp_edges"
SOLVED = ("concrete_or_error", "check_valid_tracer")


def verdict(name: str, ns: dict):
    return chapter_verdict(CHAPTER, name, ns)


@pytest.mark.parametrize("name", ["concrete_or_error", "check_valid_tracer"])
def test_each_solved_piece_alone_passes_its_check(name):
    result = verdict(name, solved_namespace(CHAPTER, SOLVED))
    assert result.status is Status.PASSED, result.message
    assert result.points == result.max_points == {"concrete_or_error": 7,
                                                  "check_valid_tracer": 4}[name]
    assert pieces.installed() == []


BROKEN = {
    # every failed conversion raises the generic ConcretizationTypeError
    "concrete_or_error": ("""
        def concrete_or_error(tracer, conversion):
            value = tracer.to_concrete_value()
            if value is not None:
                return value
            raise errors.ConcretizationTypeError(tracer.aval.str_long(), "", tracer._context())
        """, "if on a traced value",
        ["jax.jit(lambda x: x if x > 0 else -x)(np.float32(1.5)) gave the text",
         "ConcretizationTypeError: Abstract tracer value", "where minijax's own pieces give",
         "TracerBoolConversionError: Attempted boolean conversion"]),
    # a JVP tracer's float() goes through: the derivative is silently dropped
    "concrete_or_error ": ("""
        _solved = concrete_or_error
        def concrete_or_error(tracer, conversion):
            value = tracer.to_concrete_value()
            return value if value is not None else _solved(tracer, conversion)
        """, "a JVP tracer's refusals",
        ["jax.grad(lambda x: float(x) * x)(np.float32(1.5)) gave the text",
         "where minijax's own pieces give", "ConcretizationTypeError: Abstract tracer value"]),
    # a leak without the function that leaked it
    "check_valid_tracer": ("""
        def check_valid_tracer(tracer):
            if not tracer._trace.is_valid:
                raise errors.UnexpectedTracerError(tracer.aval.str_long(), tracer.kind_name)
        """, "a leaked tracer, with the function that leaked it",
        ["then jnp.sin of it gave [] at [2]",
         "The function being traced when the value leaked was f"]),
    # every tracer refused, live or not
    "check_valid_tracer ": ("""
        def check_valid_tracer(tracer):
            raise errors.UnexpectedTracerError(tracer.aval.str_long(), tracer.kind_name)
        """, "live tracers pass",
        ["jax.jit(lambda x: jax.grad(lambda y: y * x)(x))(np.float32(1.5)) gave "
         "'UnexpectedTracerError", "minijax's own pieces give 1.5"]),
}


@pytest.mark.parametrize("case", list(BROKEN))
def test_a_broken_piece_fails_with_the_program_and_both_results(case):
    source, failing_part, fragments = BROKEN[case]
    result = verdict(case.strip(), solved_namespace(CHAPTER, SOLVED, source))
    failed = failed_parts(result)
    assert failing_part in failed, result.parts
    for fragment in fragments:
        assert fragment in failed[failing_part], failed[failing_part]
    assert pieces.installed() == []
