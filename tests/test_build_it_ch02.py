"""Chapter 02's Build-it pieces: each solved piece, installed alone, passes its check; a
deliberately broken piece fails with a message naming the program, what minijax's own pieces
give and what the broken piece gave; the notebook's stubs are refused by ``pieces.install``.

The solved pieces are taken from ``solutions/02_numpy_and_lax.ipynb`` (the exercise cell of each
piece, run after the notebook's setup cell), so the test grades what the course ships. Whole
notebooks (solutions full marks, pristine zero) are graded in ``tests/test_course_exercises.py``.
"""

from __future__ import annotations

import functools
import textwrap

import pytest

import minijax.numpy as jnp
from grader.outcome import Status
from minijax import lax, pieces
from tests import build_it
from tests.build_it import run_cell

CHAPTER = "02_numpy_and_lax"
PIECES = ["broadcast_shapes_trivially", "bind", "EvalTrace", "least_upper_bound", "fori_loop"]
verdict = functools.partial(build_it.verdict, CHAPTER)


def notebook_cells(folder: str) -> tuple[str, dict[str, str]]:
    return build_it.notebook_cells(folder, CHAPTER)


def namespace(*sources: str) -> dict:
    ns: dict = {}
    for source in sources:
        run_cell(source, ns)
    return ns


@pytest.mark.parametrize("name", PIECES)
def test_each_solved_piece_alone_passes_its_check(name):
    setup, solved = notebook_cells("solutions")
    result = verdict(name, namespace(setup, solved[name]))
    assert result.status is Status.PASSED, result.message
    assert result.points == result.max_points
    assert pieces.installed() == []  # graded inside pieces.using: minijax's own afterwards


BROKEN = {
    # the join returns the left operand's type
    "least_upper_bound": ("""
        def least_upper_bound(nodes, strict, x64):
            return nodes[0]
        """, "jnp's promotion",
        ["jnp.uint8(1) + jnp.int8(1)", "Array(2, dtype=uint8)", "Array(2, dtype=int16)"]),
    # broadcasting that never checks: the longest shape
    "broadcast_shapes_trivially": ("""
        def broadcast_shapes_trivially(name, shapes):
            return max(shapes, key=len)
        """, "shapes that broadcast",
        ["lax.mul(jnp.ones((2, 1)), jnp.ones((1, 3))).shape", "gave 1 at [1]", "give 3"]),
    # bind that always evaluates: nothing is recorded under make_jaxpr
    "bind": ("""
        def bind(self, *args, **params):
            with core.set_current_trace(None):
                return core.current_trace().process_primitive(self, args, params)
        """, None, ["str(jax.make_jaxpr(lambda x: jnp.sin(x) * x + 2)(1.0))",
                    "UnexpectedTracerError"]),
    # an evaluation trace that forgets the weak types
    "EvalTrace": ("""
        class EvalTrace(core.Trace):
            def process_primitive(self, primitive, args, params):
                if primitive.eager_rule is not None:
                    return primitive.eager_rule(*args, **params)
                arrays = [runtime.host_to_array(a) for a in args]
                primitive.abstract_eval(*[a.aval for a in arrays], **params)
                values = primitive.impl(*[np.asarray(a) for a in arrays], **params)
                if primitive.multiple_results:
                    return [runtime.put_numpy(value) for value in values]
                return runtime.put_numpy(values)
        """, "values, dtypes and weak types",
        ["jnp.arange(3) + 1.5", "Array([1.5, 2.5, 3.5], dtype=float32)\n",
         "Array([1.5, 2.5, 3.5], dtype=float32, weak_type=True)"]),
    # always a while loop: grad cannot go through it, and the jaxpr has the wrong loop
    "fori_loop": ("""
        def fori_loop(lower, upper, body_fun, init_val):
            def body(carry):
                i, stop, val = carry
                return i + 1, stop, body_fun(i, val)
            return lax.while_loop(lambda c: c[0] < c[1], body, (lower, upper, init_val))[2]
        """, "a scan for bounds known while tracing, a while otherwise",
        ["jax.make_jaxpr(lambda x: lax.fori_loop(0, 5,", "while", "scan"]),
}


@pytest.mark.parametrize("name", sorted(BROKEN))
def test_a_broken_piece_fails_naming_the_program_and_both_results(name):
    source, failing_part, words = BROKEN[name]
    setup, _ = notebook_cells("solutions")
    result = verdict(name, namespace(setup, textwrap.dedent(source)))
    assert result.status is Status.FAILED
    message = result.message if failing_part is None else \
        next(part.message for part in result.parts if part.name == failing_part)
    assert f"with your {name} installed" in message
    for word in words:
        assert word in message, message
    assert pieces.installed() == []


@pytest.mark.parametrize("name", PIECES)
def test_the_install_cell_leaves_the_stub_out_and_puts_the_solved_piece_in(name, capsys):
    setup, stubs = notebook_cells("exercises")
    ns = namespace(setup, stubs[name])
    pieces.install(name, ns[name])
    assert "still the exercise's stub" in capsys.readouterr().out
    assert pieces.installed() == []
    _, solved = notebook_cells("solutions")
    run_cell(solved[name], ns)
    pieces.install(name, ns[name])
    assert pieces.installed() == [name]
    assert pieces.current(name) is ns[name]


def test_an_installed_join_is_asked_even_for_promotions_seen_before():
    assert (jnp.uint8(1) + jnp.int8(1)).dtype == jnp.int16  # the reference, memoised
    with pieces.using({"least_upper_bound": lambda nodes, strict, x64: nodes[0]}):
        assert (jnp.uint8(1) + jnp.int8(1)).dtype == jnp.uint8
    assert (jnp.uint8(1) + jnp.int8(1)).dtype == jnp.int16


def test_an_installed_shape_rule_is_asked_even_for_shapes_seen_before():
    def refuse(name, shapes):
        raise TypeError(f"my rule refuses {name}")

    lax.add(jnp.ones((2, 3)), jnp.ones((2, 3)))  # the reference's answer, memoised
    with pieces.using({"broadcast_shapes_trivially": refuse}):
        with pytest.raises(TypeError, match="my rule refuses add"):
            lax.add(jnp.ones((2, 3)), jnp.ones((2, 3)))
    assert lax.add(jnp.ones((2, 3)), jnp.ones((2, 3))).shape == (2, 3)


def test_an_eval_trace_without_eager_rules_fails_not_as_a_stub():
    setup, _ = notebook_cells("solutions")
    ns = namespace(setup, textwrap.dedent("""
        class EvalTrace(core.Trace):
            def process_primitive(self, primitive, args, params):
                arrays = [runtime.host_to_array(a) for a in args]
                out = primitive.abstract_eval(*[a.aval for a in arrays], **params)
                values = primitive.impl(*[np.asarray(a) for a in arrays], **params)
                if primitive.multiple_results:
                    return [runtime.put_numpy(v, o.weak_type) for v, o in zip(values, out)]
                return runtime.put_numpy(values, out.weak_type)
        """))
    result = verdict("EvalTrace", ns)
    assert result.status is Status.FAILED
    message = next(part.message for part in result.parts
                   if part.name == "control flow, grad and jit on top")
    assert "lax.cond(jnp.float32(2.0) > 0" in message
    assert "NotImplementedError: primitive cond has no eager implementation" in message, message
