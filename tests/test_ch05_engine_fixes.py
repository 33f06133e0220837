"""Engine fixes found while writing chapter 05 (reverse mode), against JAX.

* ``grad`` (and ``value_and_grad``) of a function whose output is not a single array --
  a tuple, a list, a dict, ``None`` -- raises JAX's ``TypeError`` "Gradient only defined
  for scalar-output functions. Output was ...", naming the output, instead of failing
  while converting the container to an array.
"""

from __future__ import annotations

import pytest

from tests.oracle import run_both

jax = pytest.importorskip("jax")

NON_ARRAY_OUTPUTS = {
    "tuple of scalars": lambda n: n.jax.grad(lambda v: (v, v))(n.jnp.float32(3.0)),
    "tuple of vectors": lambda n: n.jax.grad(lambda v: (v, v))(n.jnp.ones(2)),
    "one-element tuple": lambda n: n.jax.grad(lambda v: (v.sum(),))(n.jnp.ones(2)),
    "list": lambda n: n.jax.grad(lambda v: [v.sum(), v.sum()])(n.jnp.ones(2)),
    "dict": lambda n: n.jax.grad(lambda v: {"a": v.sum()})(n.jnp.ones(2)),
    "None": lambda n: n.jax.grad(lambda v: None)(n.jnp.ones(2)),
    "value_and_grad": lambda n: n.jax.value_and_grad(lambda v: (v.sum(), v))(n.jnp.ones(2)),
    "has_aux, tuple output": lambda n: n.jax.grad(
        lambda v: ((v.sum(), v.sum()), v), has_aux=True)(n.jnp.ones(2)),
}


@pytest.mark.parametrize("program", NON_ARRAY_OUTPUTS.values(), ids=NON_ARRAY_OUTPUTS.keys())
def test_grad_of_a_non_array_output_names_the_output_like_jax(program):
    (ours_kind, ours), (theirs_kind, theirs) = run_both(program)
    assert ours_kind == theirs_kind == "error"
    assert type(ours) is type(theirs) is TypeError
    assert str(ours) == str(theirs)


def test_grad_of_a_scalar_output_still_works():
    (ours_kind, ours), (theirs_kind, theirs) = run_both(
        lambda n: n.jax.grad(lambda v: (v * v).sum())(n.jnp.arange(3.0)))
    assert ours_kind == theirs_kind == "ok"
    assert ours.tolist() == theirs.tolist() == [0.0, 2.0, 4.0]
