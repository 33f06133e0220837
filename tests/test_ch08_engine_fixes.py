"""Engine fixes found while writing chapter 08 (JIT's sharp edges), against JAX.

* A traced size inside a shape *tuple* (``jnp.zeros((n,))``, ``x.reshape(n, -1)`` with a
  traced ``n``) raises JAX's ``TypeError`` ("Shapes must be 1D sequences of concrete values
  of integer type ...") as a bare traced size already did: the shape as written (a list
  stays a list), then one line per traced size naming the argument it came from. It used
  to raise ``TracerArrayConversionError``, because the shape was handed to ``np.ndim``,
  which converts a tuple to a NumPy array first.
"""

from __future__ import annotations

import pytest

from tests.oracle import run_both

jax = pytest.importorskip("jax")


def _zeros_of_traced_length(n):
    def zeros(length):
        return n.jnp.zeros((length,))

    return n.jax.jit(zeros)(3)


def _reshape_to_traced_rows(n):
    def rows(x, count):
        return x.reshape(count, -1)

    return n.jax.jit(rows)(n.jnp.arange(6.0), 2)


def _zeros_of_two_traced_sizes(n):
    def zeros(a, b):
        return n.jnp.zeros([a, b])

    return n.jax.jit(zeros)(2, 3)


def _zeros_of_a_traced_and_a_fixed_size(n):
    def zeros(a):
        return n.jnp.zeros((a, 2))

    return n.jax.jit(zeros)(2)


PROGRAMS = {
    "zeros((n,))": _zeros_of_traced_length,
    "reshape(n, -1)": _reshape_to_traced_rows,
    "zeros([a, b])": _zeros_of_two_traced_sizes,
    "zeros((a, 2))": _zeros_of_a_traced_and_a_fixed_size,
}


@pytest.mark.parametrize("program", PROGRAMS.values(), ids=PROGRAMS.keys())
def test_a_traced_size_in_a_shape_tuple_raises_jax_type_error(program):
    (ours_kind, ours), (theirs_kind, theirs) = run_both(program)
    assert ours_kind == theirs_kind == "error"
    assert type(ours) is type(theirs) is TypeError
    assert str(ours) == str(theirs)


def test_concrete_shapes_in_tuples_and_lists_still_work():
    import minijax.numpy as jnp

    assert jnp.zeros((2, 3)).shape == (2, 3)
    assert jnp.zeros([4]).shape == (4,)
    assert jnp.arange(6.0).reshape(jnp.int32(2), -1).shape == (2, 3)
