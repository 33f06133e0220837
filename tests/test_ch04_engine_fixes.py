"""Engine fixes found while writing chapter 04 (forward mode), against JAX.

* The JVP of ``add`` and ``sub`` is ``add``/``sub`` of the tangents, as in JAX (not a sum
  of terms joined by ``add_any``, with ``neg`` for ``sub``): the jaxpr of a ``jvp`` prints
  what JAX prints. When one tangent is a symbolic zero, the other is broadcast to the
  output's shape (and negated for ``sub``'s second operand).
"""

from __future__ import annotations

import numpy as np
import pytest

import minijax
from tests.oracle import check_program, namespaces

jax = pytest.importorskip("jax")


def _jvp_jaxpr(ns, fun, *primals):
    """The jaxpr text of ``jvp(fun)`` with every tangent an input of its own."""
    n = len(primals)
    program = lambda *args: ns.jax.jvp(fun, args[:n], args[n:])  # noqa: E731
    return str(ns.jax.make_jaxpr(program)(*primals, *primals))


def _closure_jvp_jaxpr(ns, fun, x, constant):
    """The jaxpr text of a jvp in ``x`` only: ``constant`` has a symbolic-zero tangent."""
    program = lambda x, t: ns.jax.jvp(lambda v: fun(v, constant), (x,), (t,))  # noqa: E731
    return str(ns.jax.make_jaxpr(program)(x, x))


JVP_JAXPRS = {  # name -> (function of a namespace returning the function, primals)
    "add": (lambda n: lambda x, y: x + y, (1.0, 2.0)),
    "sub": (lambda n: lambda x, y: x - y, (1.0, 2.0)),
    "add of a scalar to a vector": (lambda n: lambda x, y: x + y,
                                    (np.ones(3, np.float32), 2.0)),
    "sub of a vector from a scalar": (lambda n: lambda x, y: x - y,
                                      (2.0, np.ones(3, np.float32))),
    "g of chapter 03": (lambda n: lambda x1, x2: n.jnp.log(x1) + x1 * x2 - n.jnp.sin(x2),
                        (2.0, 5.0)),
    "chain of adds and subs": (lambda n: lambda x, y: (x + y) - (x - y) + x * y, (1.5, -0.5)),
}


@pytest.mark.parametrize("case", JVP_JAXPRS.values(), ids=JVP_JAXPRS.keys())
def test_jvp_jaxpr_of_add_and_sub_prints_like_jax(case):
    make_fun, primals = case
    ours, theirs = namespaces()
    assert _jvp_jaxpr(ours, make_fun(ours), *primals) == \
        _jvp_jaxpr(theirs, make_fun(theirs), *primals)


CLOSURES = {
    "add, constant second": (lambda x, c: x + c, 1.0, np.ones(3, np.float32)),
    "add, constant first": (lambda x, c: c + x, 1.0, np.ones(3, np.float32)),
    "sub, constant second": (lambda x, c: x - c, 1.0, np.ones(3, np.float32)),
    "sub, constant first": (lambda x, c: c - x, 1.0, np.ones(3, np.float32)),
    "sub, same shapes": (lambda x, c: c - x, np.ones(2, np.float32), np.ones(2, np.float32)),
}


@pytest.mark.parametrize("case", CLOSURES.values(), ids=CLOSURES.keys())
def test_one_symbolic_zero_tangent_broadcasts_like_jax(case):
    fun, x, constant = case
    ours, theirs = namespaces()
    assert _closure_jvp_jaxpr(ours, fun, x, constant) == \
        _closure_jvp_jaxpr(theirs, fun, x, constant)


VALUES = {
    "jvp of sub": lambda n: n.jax.jvp(lambda x, y: x - y, (1.0, 2.0), (0.5, 2.0)),
    "jvp of add, broadcast": lambda n: n.jax.jvp(
        lambda x, y: x + y, (n.jnp.ones(3), 2.0), (n.jnp.arange(3.0), 1.0)),
    "jvp of sub, constant first": lambda n: n.jax.jvp(
        lambda x: n.jnp.arange(3.0) - x, (2.0,), (1.0,)),
    "grad of sub": lambda n: n.jax.grad(lambda x, y: x - y * x, argnums=(0, 1))(1.0, 2.0),
    "grad of broadcast add": lambda n: n.jax.grad(
        lambda x, y: n.jnp.sum(n.jnp.sin(x + y)), argnums=(0, 1))(n.jnp.ones(3), 0.5),
    "jacfwd of sub": lambda n: n.jax.jacfwd(lambda x: x[0] - x)(n.jnp.arange(3.0)),
    "second derivative": lambda n: n.jax.grad(n.jax.grad(lambda x: x * x - (x + 1.0)))(3.0),
    "jvp of add, integer": lambda n: n.jax.jvp(
        lambda x, k: x + k.astype(n.jnp.float32), (1.0, n.jnp.int32(2)),
        (1.0, np.zeros((), n.jax.dtypes.float0))),
}


@pytest.mark.parametrize("program", VALUES.values(), ids=VALUES.keys())
def test_add_and_sub_derivatives_agree_with_jax(program):
    check_program(program)


def test_grad_jaxpr_of_add_and_sub_prints_like_jax():
    ours, theirs = namespaces()

    def jaxpr(ns):
        f = lambda x, y: ns.jnp.sum((x - y) * (x + y))  # noqa: E731
        return str(ns.jax.make_jaxpr(ns.jax.grad(f, argnums=(0, 1)))(np.ones(2, np.float32),
                                                                        np.ones(2, np.float32)))

    assert jaxpr(ours) == jaxpr(theirs)


def test_zero_tangents_of_add_stay_symbolic():
    """Differentiating in x only: the constant's addition produces no tangent equations."""
    jaxpr = minijax.make_jaxpr(lambda x, t: minijax.jvp(
        lambda v: v * 2.0 + 1.0, (x,), (t,)))(1.0, 1.0)
    assert [eqn.primitive.name for eqn in jaxpr.eqns] == ["mul", "mul", "add"]
