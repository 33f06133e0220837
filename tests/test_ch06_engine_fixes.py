"""Engine fixes found while writing chapter 06 (jaxprs), against JAX.

* A tracer of ``make_jaxpr``/``jit`` prints as JAX's does: ``JitTracer(~float32[])`` for a
  weakly typed value, ``JitTracer(int32[2,3])`` otherwise (the ``~`` marks weak types only).
* ``str()`` of an abstract value is JAX's: ``float32[3]``, or ``~float32[]`` when weak
  (``repr()`` stays ``ShapedArray(float32[3])``).
* A ``Literal`` of a jaxpr has JAX's attribute ``val`` (its constant), so interpreters
  written for JAX's jaxprs read minijax's too.
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.oracle import run_both

jax = pytest.importorskip("jax")


def _printed_inside_trace(n, *args):
    """What ``print`` shows for each argument, and for its aval, inside ``make_jaxpr``."""
    shown = []

    def f(*xs):
        shown.extend((repr(x), str(x.aval)) for x in xs)
        return xs

    n.jax.make_jaxpr(f)(*args)
    return shown


TRACER_ARGUMENTS = {
    "weak float": lambda n: _printed_inside_trace(n, 1.0),
    "weak int": lambda n: _printed_inside_trace(n, 3),
    "strong float32 vector": lambda n: _printed_inside_trace(n, n.jnp.ones(3)),
    "int32 matrix": lambda n: _printed_inside_trace(n, n.jnp.ones((2, 3), n.jnp.int32)),
    "bool and int8": lambda n: _printed_inside_trace(
        n, n.jnp.array([True]), n.np.ones(2, n.np.int8)),
}


@pytest.mark.parametrize("program", TRACER_ARGUMENTS.values(), ids=TRACER_ARGUMENTS.keys())
def test_tracers_and_their_avals_print_like_jax(program):
    (ours_kind, ours), (theirs_kind, theirs) = run_both(program)
    assert ours_kind == theirs_kind == "ok"
    assert ours == theirs


def test_repr_of_an_aval_is_unchanged():
    from minijax.core import ShapedArray

    assert repr(ShapedArray((3,), np.float32)) == "ShapedArray(float32[3])"
    assert repr(ShapedArray((), np.float32, weak_type=True)) == \
        "ShapedArray(float32[], weak_type=True)"
    assert str(ShapedArray((), np.float32, weak_type=True)) == "~float32[]"


def _literal_values(n):
    closed = n.jax.make_jaxpr(lambda x: x * 2.0 + 3)(n.jnp.ones(2, n.jnp.int32))
    return [float(np.asarray(atom.val)) for eqn in closed.jaxpr.eqns for atom in eqn.invars
            if type(atom).__name__ == "Literal"]


def test_literals_have_jax_attribute_val():
    (ours_kind, ours), (theirs_kind, theirs) = run_both(_literal_values)
    assert ours_kind == theirs_kind == "ok"
    assert ours == theirs == [2.0, 3.0]
