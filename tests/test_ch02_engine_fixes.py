"""Engine fixes found while writing chapter 02, against JAX.

* ``x // y`` (and ``divmod``, ``hypot``) of weakly typed operands stays weakly typed, as in
  JAX: the constant 1 these functions subtract must carry the operands' weak type.
* A Python int too large for its dtype raises JAX's ``OverflowError`` message
  ("Python int ... too large to convert to int32"), not NumPy's.
* A binary ``lax`` operation with several problems reports the one JAX reports: shapes are
  checked first, then each operand's dtype family, then that the dtypes are equal.
"""

from __future__ import annotations

import pytest

import minijax.numpy as jnp
from tests.oracle import assert_traced_matches_eager, check_program, run_both, x64_mode

jax = pytest.importorskip("jax")
jjnp = jax.numpy

WEAK_PROGRAMS = {
    "int // int": lambda n: n.jnp.asarray(27) // 2,
    "int // negative int": lambda n: n.jnp.asarray(27) // -4,
    "negative int // int": lambda n: n.jnp.asarray(-27) // 4,
    "float // int": lambda n: n.jnp.asarray(7.5) // 2,
    "int // array": lambda n: 7 // n.jnp.asarray(2),
    "divmod ints": lambda n: n.jnp.divmod(n.jnp.asarray(27), 4),
    "divmod floats": lambda n: n.jnp.divmod(n.jnp.asarray(-7.5), 2.0),
    "hypot": lambda n: n.jnp.hypot(3.0, 4.0),
    "hypot of zeros": lambda n: n.jnp.hypot(0.0, 0.0),
    "strong int32 stays strong": lambda n: n.jnp.int32(27) // 2,
    "strong array": lambda n: n.jnp.arange(-5, 5) // 3,
}


@pytest.mark.parametrize("program", WEAK_PROGRAMS.values(), ids=WEAK_PROGRAMS.keys())
def test_floor_division_keeps_weak_types_like_jax(program):
    check_program(program)


def test_weak_floor_division_traces_like_it_evaluates():
    assert_traced_matches_eager(lambda n: (n // 2, n // -4), jnp.asarray(27))
    assert_traced_matches_eager(lambda x: x // 2, jnp.asarray(7.5))


OVERFLOWS = {
    "asarray": lambda n: n.jnp.asarray(2**40),
    "asarray negative": lambda n: n.jnp.asarray(-(2**31) - 1),
    "lax.add": lambda n: n.lax.add(n.jnp.int32(1), 2**40),
}


@pytest.mark.parametrize("program", OVERFLOWS.values(), ids=OVERFLOWS.keys())
def test_python_int_overflow_has_jaxs_message(program):
    (ours_kind, ours), (theirs_kind, theirs) = run_both(program)
    assert ours_kind == theirs_kind == "error"
    assert type(ours) is type(theirs) is OverflowError
    assert str(ours) == str(theirs)


def test_python_int_overflow_has_jaxs_message_with_x64():
    with x64_mode():
        with pytest.raises(OverflowError) as ours:
            jnp.asarray(2**70)
        with pytest.raises(OverflowError) as theirs:
            jjnp.asarray(2**70)
    assert str(ours.value) == str(theirs.value)


BAD_BINARY_OPS = {
    "rank and dtype": lambda n: n.lax.add(n.jnp.ones((2, 3)), n.jnp.arange(3)),
    "shape and dtype": lambda n: n.lax.add(n.jnp.ones((2, 3)), n.jnp.ones((2, 4), n.jnp.int32)),
    "family and shape": lambda n: n.lax.rem(n.jnp.array([True, False]),
                                            n.jnp.array([True, False, True])),
    "family and rank": lambda n: n.lax.rem(n.jnp.array([True, False]), n.jnp.ones((2, 2), bool)),
    "family and dtype": lambda n: n.lax.rem(n.jnp.array([True, False]), n.jnp.arange(2)),
    "dtype only": lambda n: n.lax.add(n.jnp.ones(3), n.jnp.arange(3)),
    "scalar and dtype": lambda n: n.lax.mul(n.jnp.ones(3), n.jnp.int32(1)),
}


@pytest.mark.parametrize("program", BAD_BINARY_OPS.values(), ids=BAD_BINARY_OPS.keys())
def test_binary_lax_errors_are_checked_in_jaxs_order(program):
    (ours_kind, ours), (theirs_kind, theirs) = run_both(program)
    assert ours_kind == theirs_kind == "error"
    assert type(ours) is type(theirs) is TypeError
    assert str(ours) == str(theirs)
