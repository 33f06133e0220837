"""Random shapes and dtypes for the binary and reduction operations of ``jnp`` and ``lax``:
minijax raises exactly when JAX does, with the same exception class, and otherwise gives
a result of the same shape, dtype and weak type.

Values are not compared here (the conformance tests of each operation do that); what is
tested is the boundary between answers and errors: broadcasting, rank and dtype rules,
axes out of range or repeated, reductions of empty arrays. Deterministic (``derandomize``)
and bounded, so that it is fast.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.oracle import run_both

jax = pytest.importorskip("jax")

DTYPES = ["bool", "int8", "uint8", "int32", "float16", "float32", "complex64"]

JNP_BINARY = ["add", "subtract", "multiply", "divide", "true_divide", "floor_divide",
              "remainder", "power", "maximum", "minimum", "arctan2", "equal", "less",
              "greater_equal", "logical_and", "logical_xor", "bitwise_and", "bitwise_or",
              "left_shift", "hypot", "copysign", "nextafter", "matmul", "dot", "inner",
              "outer", "where_true"]
LAX_BINARY = ["add", "sub", "mul", "div", "rem", "pow", "max", "min", "atan2", "eq", "ne",
              "lt", "ge", "bitwise_and", "bitwise_xor", "shift_left", "nextafter",
              "complex", "dot"]
JNP_REDUCTIONS = ["sum", "prod", "max", "min", "mean", "var", "std", "any", "all",
                  "argmax", "argmin", "cumsum", "cumprod", "ptp", "count_nonzero", "median"]
LAX_REDUCTIONS = ["reduce_sum", "reduce_prod", "reduce_max", "reduce_min", "reduce_and",
                  "reduce_or", "argmax", "argmin", "cumsum", "cummax"]

dims = st.integers(0, 3)
shapes = st.lists(dims, min_size=0, max_size=3).map(tuple)


@st.composite
def operand_pairs(draw):
    """Two shapes that often broadcast (one derived from the other) and sometimes not."""
    a = draw(shapes)
    b = draw(st.one_of(
        st.just(a),
        shapes,
        st.lists(st.sampled_from([1, *a] if a else [1]), max_size=len(a)).map(tuple),
    ))
    return a, b


axes = st.one_of(
    st.none(),
    st.integers(-4, 3),
    st.lists(st.integers(-4, 3), min_size=0, max_size=3).map(tuple),
)


def _operand(shape, dtype):
    """Ones (True for bools): valid for every operation, so only the rules decide."""
    return np.ones(shape, dtype)


def _jnp_binary(name, x, y):
    if name == "where_true":
        return lambda n: n.jnp.where(True, x, y)
    return lambda n: getattr(n.jnp, name)(x, y)


def _lax_binary(name, x, y):
    return lambda n: getattr(n.lax, name)(x, y)


def _jnp_reduction(name, x, axis):
    if name in ("argmax", "argmin", "cumsum", "cumprod"):  # one axis (or None) only
        axis = axis[0] if isinstance(axis, tuple) and len(axis) == 1 else axis
    return lambda n: getattr(n.jnp, name)(x, axis=axis)


def _lax_reduction(name, x, axis):
    if name in ("argmax", "argmin"):
        return lambda n: getattr(n.lax, name)(x, 0 if axis is None else axis, n.jnp.int32)
    if name in ("cumsum", "cummax"):
        return lambda n: getattr(n.lax, name)(x, 0 if axis is None else axis)
    axes = () if axis is None else (axis,) if isinstance(axis, int) else axis
    return lambda n: getattr(n.lax, name)(x, axes)


def _same_outcome(program, description):
    """Both raise (the same class), or both answer with the same types."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        (ours_kind, ours), (theirs_kind, theirs) = run_both(program)
    assert ours_kind == theirs_kind, (
        f"{description}: minijax {ours_kind} {ours!r}; JAX {theirs_kind} {theirs!r}")
    if ours_kind == "error":
        assert type(ours).__name__ == type(theirs).__name__, (
            f"{description}: minijax raised {type(ours).__name__}: {ours}\n"
            f"JAX raised {type(theirs).__name__}: {theirs}")
        return
    ours_leaves = jax.tree_util.tree_leaves(ours)
    theirs_leaves = jax.tree_util.tree_leaves(theirs)
    assert len(ours_leaves) == len(theirs_leaves), description
    for a, b in zip(ours_leaves, theirs_leaves):
        assert (a.shape, a.dtype, a.weak_type) == (b.shape, b.dtype, b.weak_type), (
            f"{description}: minijax {a.aval}, weak={a.weak_type}; "
            f"JAX {b.aval}, weak={b.weak_type}")


@settings(max_examples=120, deadline=None, derandomize=True)
@given(library=st.sampled_from(["jnp", "lax"]), data=st.data(), pair=operand_pairs(),
       dtypes=st.tuples(st.sampled_from(DTYPES), st.sampled_from(DTYPES)))
def test_binary_operations_raise_when_jax_does(library, data, pair, dtypes):
    names = JNP_BINARY if library == "jnp" else LAX_BINARY
    name = data.draw(st.sampled_from(names), label="operation")
    x, y = _operand(pair[0], dtypes[0]), _operand(pair[1], dtypes[1])
    make = _jnp_binary if library == "jnp" else _lax_binary
    _same_outcome(make(name, x, y), f"{library}.{name}({x.dtype}{list(x.shape)}, "
                                    f"{y.dtype}{list(y.shape)})")


@settings(max_examples=120, deadline=None, derandomize=True)
@given(library=st.sampled_from(["jnp", "lax"]), data=st.data(), shape=shapes,
       dtype=st.sampled_from(DTYPES), axis=axes)
def test_reductions_raise_when_jax_does(library, data, shape, dtype, axis):
    names = JNP_REDUCTIONS if library == "jnp" else LAX_REDUCTIONS
    name = data.draw(st.sampled_from(names), label="operation")
    x = _operand(shape, dtype)
    make = _jnp_reduction if library == "jnp" else _lax_reduction
    _same_outcome(make(name, x, axis), f"{library}.{name}({x.dtype}{list(x.shape)}, "
                                       f"axis={axis})")
