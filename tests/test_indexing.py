"""NumPy indexing, ``.at[]`` updates, ``take`` and ``take_along_axis`` against JAX.

* values, shapes, dtypes and weak types of eager programs (``oracle.check_program``);
* the primitives of the jaxprs of common indexing cases are JAX's, in JAX's order;
* tracing then evaluating the jaxpr gives the eager result;
* bad input: JAX's error class, and a message that names the problem;
* Hypothesis: random basic and advanced indexing agrees with NumPy, and no operation
  changes its input.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minijax
import minijax.numpy as mjnp
from tests.oracle import (
    array_of,
    assert_same_error,
    assert_traced_matches_eager,
    check_program,
    primitive_names,
)

jax = pytest.importorskip("jax")

V = np.arange(5, dtype=np.float32)
M = np.arange(12, dtype=np.float32).reshape(3, 4)
T = np.arange(24, dtype=np.int32).reshape(2, 3, 4)
IDX = np.array([2, 0, -1], dtype=np.int32)
MASK = np.array([True, False, True, False, True])


_v, _m, _t = array_of(V), array_of(M), array_of(T)


GETITEM = {
    # static ints and slices
    "int": lambda n: _v(n)[1],
    "negative_int": lambda n: _v(n)[-2],
    "numpy_int": lambda n: _m(n)[np.int64(2)],
    "row": lambda n: _m(n)[1],
    "column": lambda n: _m(n)[:, -1],
    "element": lambda n: _m(n)[2, 3],
    "slice": lambda n: _v(n)[1:4],
    "slice_step": lambda n: _v(n)[::2],
    "slice_negative_step": lambda n: _v(n)[::-2],
    "slice_negative_step_bounds": lambda n: _v(n)[3:0:-1],
    "slice_empty": lambda n: _v(n)[4:1],
    "slice_beyond": lambda n: _v(n)[3:10],
    "slice_2d": lambda n: _m(n)[1:, ::-1],
    "int_and_strided": lambda n: _m(n)[1, ::2],
    "none": lambda n: _v(n)[None],
    "none_middle": lambda n: _m(n)[:, None, 1:3],
    "ellipsis": lambda n: _t(n)[..., 1],
    "ellipsis_front": lambda n: _t(n)[1, ...],
    "ellipsis_none": lambda n: _t(n)[..., None],
    "empty_tuple": lambda n: _m(n)[()],
    "true": lambda n: _v(n)[True],
    "false": lambda n: _v(n)[False],
    "weak_scalar_kept": lambda n: n.jnp.asarray(2.0)[None],
    # out of range ints are clamped by JAX, not an IndexError
    "int_out_of_range": lambda n: _v(n)[7],
    "int_out_of_range_negative": lambda n: _m(n)[-9],
    # traced-style (array) scalars
    "array_scalar": lambda n: _v(n)[n.jnp.asarray(3)],
    "array_scalar_negative": lambda n: _m(n)[n.jnp.asarray(-1), 1:3],
    "numpy_0d": lambda n: _v(n)[np.array(2)],
    # integer arrays
    "int_array": lambda n: _v(n)[n.jnp.asarray(IDX)],
    "numpy_int_array": lambda n: _v(n)[IDX],
    "int_array_2d_index": lambda n: _v(n)[n.jnp.asarray(np.array([[0, 1], [4, -2]]))],
    "int_array_rows": lambda n: _m(n)[n.jnp.asarray(np.array([2, 0]))],
    "int_array_columns": lambda n: _m(n)[:, n.jnp.asarray(np.array([3, 0, 3]))],
    "two_arrays": lambda n: _m(n)[n.jnp.asarray(np.array([0, 2])), n.jnp.asarray(np.array([1, 3]))],
    "arrays_broadcast": lambda n: _m(n)[np.array([[0], [2]]), np.array([1, 2, 3])],
    "array_and_int": lambda n: _m(n)[n.jnp.asarray(np.array([0, 2])), 1],
    "int_and_array": lambda n: _m(n)[-1, n.jnp.asarray(np.array([0, 2]))],
    "arrays_separated": lambda n: _t(n)[np.array([0, 1]), :, np.array([3, 2])],
    "arrays_adjacent_after_slice": lambda n: _t(n)[:, np.array([0, 2]), np.array([[1], [3]])],
    "int_separated_from_array": lambda n: _t(n)[1, :, np.array([0, 1])],
    "array_slice_none": lambda n: _m(n)[np.array([0, 2]), 1:, None],
    "array_with_ellipsis": lambda n: _t(n)[..., np.array([0, 3])],
    "array_out_of_bounds_clamps": lambda n: _v(n)[np.array([9, -9])],
    "array_int8": lambda n: _v(n)[np.array([1, -1], dtype=np.int8)],
    "array_uint": lambda n: _v(n)[n.jnp.asarray(np.array([4, 0], dtype=np.uint32))],
    "array_empty": lambda n: _v(n)[np.array([], dtype=np.int32)],
    "list_in_tuple": lambda n: _m(n)[[0, 2], 0],
    "strided_with_array": lambda n: _m(n)[np.array([0, 2]), ::-2],
    # boolean masks
    "mask": lambda n: _v(n)[MASK],
    "mask_jnp": lambda n: _v(n)[n.jnp.asarray(MASK)],
    "mask_2d": lambda n: _m(n)[M > 4],
    "mask_rows": lambda n: _m(n)[np.array([True, False, True])],
    "mask_then_int": lambda n: _m(n)[np.array([True, False, True]), 2],
    "mask_from_comparison": lambda n: _v(n)[_v(n) > 1.5],
    # other dtypes
    "int_dtype": lambda n: _t(n)[1, 2],
    "bool_dtype": lambda n: n.jnp.asarray(MASK)[1:],
    "complex_dtype": lambda n: n.jnp.asarray(V * 1j)[IDX],
}


@pytest.mark.parametrize("name", GETITEM)
def test_getitem_matches_jax(name):
    check_program(GETITEM[name])


AT = {
    "set": lambda n: _v(n).at[1].set(9.0),
    "set_negative": lambda n: _v(n).at[-1].set(9.0),
    "set_slice": lambda n: _v(n).at[1:3].set(9.0),
    "set_strided": lambda n: _v(n).at[::2].set(n.jnp.asarray(np.array([7.0, 8.0, 9.0]))),
    "set_reversed": lambda n: _v(n).at[::-1].set(n.jnp.asarray(V * 10)),
    "set_row": lambda n: _m(n).at[1].set(n.jnp.asarray(np.array([1.0, 2.0, 3.0, 4.0]))),
    "set_column_broadcast": lambda n: _m(n).at[:, 2].set(-1.0),
    "set_none": lambda n: _v(n).at[None].set(3.0),
    "set_ellipsis": lambda n: _m(n).at[...].set(0.0),
    "set_mask": lambda n: _v(n).at[MASK].set(0.0),
    "set_array": lambda n: _v(n).at[IDX].set(n.jnp.asarray(np.array([10.0, 20.0, 30.0]))),
    "set_duplicates_last_wins": lambda n: _v(n).at[np.array([0, 0])].set(
        n.jnp.asarray(np.array([7.0, 8.0]))),
    "set_out_of_bounds_dropped": lambda n: _v(n).at[np.array([7, 1])].set(5.0),
    "set_out_of_bounds_int_dropped": lambda n: _v(n).at[9].set(5.0),
    "set_out_of_bounds_clip": lambda n: _v(n).at[np.array([7, -9])].set(5.0, mode="clip"),
    "set_mixed": lambda n: _t(n).at[1, :, np.array([0, 3])].set(-5),
    "set_two_arrays": lambda n: _m(n).at[np.array([0, 2]), np.array([1, 1])].set(0.5),
    "set_false": lambda n: _v(n).at[False].set(1.0),
    "set_weak_operand": lambda n: n.jnp.asarray(1.0).at[()].set(2),
    "set_int_operand_python_int": lambda n: n.jnp.asarray(T).at[0, 0, 0].set(300),
    "add": lambda n: _v(n).at[2].add(1.5),
    "add_duplicates_accumulate": lambda n: _v(n).at[np.array([0, 0])].add(1.0),
    "add_duplicates_jnp": lambda n: _m(n).at[n.jnp.asarray(np.array([1, 1, 0]))].add(
        n.jnp.ones((3, 4))),
    "add_slice_2d": lambda n: _m(n).at[1:, 1:3].add(100.0),
    "add_row_vector_broadcast": lambda n: _m(n).at[:, 1:].add(n.jnp.arange(3.0)),
    "subtract": lambda n: _v(n).at[np.array([1, 1])].subtract(2.0),
    "multiply": lambda n: _v(n).at[1:].multiply(3.0),
    "mul": lambda n: _v(n).at[::2].mul(2.0),
    "divide": lambda n: _v(n).at[np.array([1, 1])].divide(2.0),
    "divide_int": lambda n: n.jnp.asarray(T[0, 0]).at[1].divide(2),
    "power": lambda n: _v(n).at[3].power(2.0),
    "power_int": lambda n: n.jnp.asarray(T[0, 0]).at[2].power(3),
    "min": lambda n: _v(n).at[np.array([3, 3, 4])].min(n.jnp.asarray(np.array([1.0, 2.0, 9.0]))),
    "max": lambda n: n.jnp.arange(3).at[np.array([0, 0])].max(n.jnp.asarray(np.array([5, 7]))),
    "apply": lambda n: _v(n).at[1].apply(lambda x: x * 2 + 1),
    "apply_duplicates": lambda n: _v(n).at[np.array([0, 0, 1])].apply(lambda x: x * 2 + 1),
    "apply_jnp_function": lambda n: _m(n).at[:, 0].apply(n.jnp.sin),
    "get": lambda n: _v(n).at[2].get(),
    "get_array": lambda n: _v(n).at[IDX].get(),
    "get_fill": lambda n: _v(n).at[np.array([9, 1])].get(mode="fill"),
    "get_fill_int": lambda n: n.jnp.arange(3).at[np.array([5, -5])].get(mode="fill"),
    "get_fill_value": lambda n: _m(n).at[np.array([0, 5])].get(mode="fill", fill_value=-1.0),
    "get_clip": lambda n: _v(n).at[np.array([9, -9])].get(mode="clip"),
    "get_static_fill": lambda n: _v(n).at[7].get(mode="fill"),
    "get_flags": lambda n: _v(n).at[np.array([0, 1])].get(indices_are_sorted=True,
                                                         unique_indices=True),
    "add_flags": lambda n: _v(n).at[np.array([0, 1])].add(1.0, indices_are_sorted=True,
                                                          unique_indices=True),
    "bool_operand": lambda n: n.jnp.asarray(MASK).at[1].set(True),
}


@pytest.mark.parametrize("name", AT)
def test_at_matches_jax(name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        check_program(AT[name])


def test_lossy_update_warns_like_jax():
    with pytest.warns(FutureWarning, match="cannot safely cast value from dtype=float32 to "
                                           "dtype=int32"):
        out = mjnp.arange(3).at[0].add(1.5)
    assert out.dtype == np.int32 and out.tolist() == [1, 1, 2]


TAKE = {
    "take_flat": lambda n: n.jnp.take(_m(n), np.array([1, 11])),
    "take_axis": lambda n: n.jnp.take(_m(n), np.array([3, -1]), axis=1),
    "take_scalar": lambda n: n.jnp.take(_v(n), 2),
    "take_fill": lambda n: n.jnp.take(_v(n), np.array([9, 1])),
    "take_fill_value": lambda n: n.jnp.take(_m(n), np.array([5, 0]), axis=1, fill_value=-3.0),
    "take_clip": lambda n: n.jnp.take(_v(n), np.array([9, -9]), mode="clip"),
    "take_wrap": lambda n: n.jnp.take(_v(n), np.array([6, -1]), mode="wrap"),
    "take_method": lambda n: _m(n).take(np.array([0, 2]), axis=0),
    "take_along_axis": lambda n: n.jnp.take_along_axis(_m(n), np.array([[0, 3]] * 3), axis=1),
    "take_along_axis_0": lambda n: n.jnp.take_along_axis(_m(n), np.array([[2, 1, 0, 2]]), 0),
    "take_along_axis_fill": lambda n: n.jnp.take_along_axis(_m(n), np.array([[0, 9]] * 3), 1),
    "take_along_axis_none": lambda n: n.jnp.take_along_axis(_m(n), np.array([0, 11]), None),
    "take_along_axis_argsort": lambda n: n.jnp.take_along_axis(
        n.jnp.asarray(M[::-1]), n.jnp.asarray(np.argsort(M[::-1], axis=0)), axis=0),
}


@pytest.mark.parametrize("name", TAKE)
def test_take_matches_jax(name):
    check_program(TAKE[name])


# ---------------------------------------------------------------------------------------
# The primitives in the jaxprs are JAX's
# ---------------------------------------------------------------------------------------

JAXPRS = {
    "slice": (lambda x: x[1:], M),
    "int": (lambda x: x[1], V),
    "int_2d": (lambda x: x[:, 1], M),
    "reversed": (lambda x: x[::-1], V),
    "strided": (lambda x: x[1, ::2], M),
    "none": (lambda x: x[..., None], M),
    "traced_int": (lambda x, i: x[i], V, 1),
    "traced_int_2d": (lambda x, i: x[i], M, 1),
    "traced_int_and_slice": (lambda x, i: x[i, 1:3], M, 1),
    "out_of_range_int": (lambda x: x[7], V),
    "int_array": (lambda x: x[mjnp_or_jnp_array()], V),
    "numpy_array": (lambda x: x[IDX], V),
    "array_and_int": (lambda x, i: x[i, 1], M, np.array([0, 2], np.int32)),
    "array_columns": (lambda x, i: x[:, i], M, np.array([0, 2], np.int32)),
    "array_newaxis": (lambda x, i: x[i, :, None], M, np.array([0, 2], np.int32)),
    "mask": (lambda x: x[MASK], V),
    "at_add": (lambda x: x.at[0].add(1.0), V),
    "at_set_slice": (lambda x: x.at[1:].set(0.0), V),
    "at_mul_strided": (lambda x: x.at[::2].mul(2.0), V),
    "at_set_array": (lambda x, i: x.at[i].set(5.0), V, np.array([0, 0], np.int32)),
    "at_set_2d": (lambda x: x.at[0, 1].set(5.0), M),
    "at_traced_int": (lambda x, i: x.at[i].set(5.0), V, 1),
    "at_apply": (lambda x: x.at[0].apply(lambda v: v * 2.0), V),
    "at_min": (lambda x: x.at[0].min(1.0), V),
    "at_divide": (lambda x: x.at[1].divide(2.0), V),
    "at_get_fill": (lambda x: x.at[1].get(mode="fill"), V),
    "take": (lambda x, i: mjnp_or_jnp().take(x, i), V, np.array([0, 2], np.int32)),
    "take_along_axis": (lambda x, i: mjnp_or_jnp().take_along_axis(x, i, axis=1), M,
                        np.array([[0], [1], [2]], np.int32)),
}

_CURRENT = {}


def mjnp_or_jnp():
    """The jnp module of the library being traced (set while tracing)."""
    return _CURRENT["jnp"]


def mjnp_or_jnp_array():
    return _CURRENT["jnp"].asarray(np.array([0, 2], np.int32))


@pytest.mark.parametrize("name", JAXPRS)
def test_jaxpr_primitives_match_jax(name):
    fun, *args = JAXPRS[name]
    import jax.numpy as jjnp

    _CURRENT["jnp"] = mjnp
    ours = primitive_names(minijax.make_jaxpr(fun)(*args))
    _CURRENT["jnp"] = jjnp
    theirs = primitive_names(jax.make_jaxpr(fun)(*args))
    assert ours == theirs


def test_jaxpr_text_of_at_add_matches_jax():
    fun = lambda x: x.at[0].add(1.0)
    assert str(minijax.make_jaxpr(fun)(V[:3])) == str(jax.make_jaxpr(fun)(V[:3]))


def test_jaxpr_text_of_gather_matches_jax():
    fun = lambda x: x[np.array([0, 2], np.int32), 1]
    assert str(minijax.make_jaxpr(fun)(M)) == str(jax.make_jaxpr(fun)(M))


TRACED = {
    "static": (lambda x: x[1:, ::-1][None, 0], M),
    "dynamic": (lambda x, i: x[i, 1:3], M, np.int32(2)),
    "dynamic_negative": (lambda x, i: x[i], V, np.int32(-2)),
    "gather": (lambda x, i: x[i, ::2], M, np.array([2, 0], np.int32)),
    "scatter": (lambda x, i, y: x.at[i].add(y), V, np.array([1, 1, 4], np.int32),
                np.ones(3, np.float32)),
    "apply": (lambda x: x.at[::2].apply(lambda v: v * v), V),
    "take_along_axis": (lambda x, i: mjnp.take_along_axis(x, i, axis=0), M,
                        np.array([[2, 0, 1, 2]], np.int32)),
}


@pytest.mark.parametrize("name", TRACED)
def test_traced_matches_eager(name):
    fun, *args = TRACED[name]
    assert_traced_matches_eager(fun, *map(mjnp.asarray, args))


# ---------------------------------------------------------------------------------------
# Bad input
# ---------------------------------------------------------------------------------------

BAD = {
    "float_index": (lambda n: _v(n)[1.0], TypeError, ["integer or boolean", "float"]),
    "float_array_index": (lambda n: _v(n)[n.jnp.asarray(np.array([1.0]))], TypeError,
                          ["integer or boolean", "float32"]),
    "string_index": (lambda n: _v(n)["a"], TypeError, ["string indexing"]),
    "list_index": (lambda n: _v(n)[[0, 1]], TypeError, ["non-tuple sequence"]),
    "at_list_index": (lambda n: _v(n).at[[0, 1]].add(1.0), TypeError, ["non-tuple sequence"]),
    "too_many_indices": (lambda n: _v(n)[0, 0], IndexError, ["Too many indices",
                                                              "1-dimensional", "2"]),
    "two_ellipses": (lambda n: _m(n)[..., ...], IndexError, ["single ellipsis"]),
    "mask_shape": (lambda n: _v(n)[np.array([True, False])], IndexError,
                   ["boolean index", "(2,)", "[5]"]),
    "broadcast_indices": (lambda n: _m(n)[np.array([0, 1]), np.array([0, 1, 2])], ValueError,
                          ["Incompatible shapes", "(2,)", "(3,)"]),
    "float_slice_bound": (lambda n: _v(n)[1.5:], TypeError, ["float"]),
    "zero_step": (lambda n: _v(n)[::0], ValueError, ["slice step cannot be zero"]),
    "item_assignment": (lambda n: _v(n).__setitem__(0, 1.0), TypeError,
                        ["immutable", "x.at[idx].set(y)"]),
    "update_shape": (lambda n: _v(n).at[:2].set(n.jnp.ones(3)), ValueError,
                     ["broadcasting", "float32[3]", "float32[2]"]),
    "bad_mode": (lambda n: _v(n).at[0].get(mode="foo"), ValueError, ["gather mode", "foo"]),
    "take_raise": (lambda n: n.jnp.take(_v(n), np.array([1]), mode="raise"),
                   NotImplementedError, ["raise"]),
    "take_float": (lambda n: n.jnp.take(_v(n), np.array([1.0])), ValueError, ["integer"]),
    "take_along_axis_rank": (lambda n: n.jnp.take_along_axis(_m(n), np.array([0]), 1),
                             ValueError, ["same number of dimensions", "1 vs. 2"]),
    "take_along_axis_float": (lambda n: n.jnp.take_along_axis(_m(n), np.array([[0.0]]), 0),
                              TypeError, ["integer", "float32"]),
}


@pytest.mark.parametrize("name", BAD)
def test_bad_input_matches_jax(name):
    assert_same_error(*BAD[name])


def test_traced_boolean_mask_raises_non_concrete_boolean_index_error():
    def fun(x):
        return x[x > 1]

    with pytest.raises(minijax.errors.NonConcreteBooleanIndexError, match="bool\\[5\\]"):
        minijax.make_jaxpr(fun)(V)
    with pytest.raises(jax.errors.NonConcreteBooleanIndexError):
        jax.make_jaxpr(fun)(V)
    with pytest.raises(minijax.errors.NonConcreteBooleanIndexError):
        minijax.make_jaxpr(lambda x: x.at[x > 1].set(0.0))(V)


def test_traced_slice_bound_is_an_index_error():
    with pytest.raises(IndexError, match="Slice entries must be static integers"):
        minijax.make_jaxpr(lambda x, i: x[i:])(V, 1)


# ---------------------------------------------------------------------------------------
# Properties against NumPy
# ---------------------------------------------------------------------------------------


@st.composite
def _basic_indices(draw):
    """An array shape and a tuple of ints, slices, None and maybe an Ellipsis for it."""
    shape = tuple(draw(st.lists(st.integers(1, 4), min_size=1, max_size=3)))
    items = []
    for n in shape:
        kind = draw(st.sampled_from(["int", "slice", "none", "skip"]))
        if kind == "int":
            items.append(draw(st.integers(-n, n - 1)))
        elif kind == "slice":
            bound = st.one_of(st.none(), st.integers(-n - 2, n + 2))
            step = draw(st.one_of(st.none(), st.integers(-3, 3).filter(bool)))
            items.append(slice(draw(bound), draw(bound), step))
        elif kind == "none":
            items += [None, slice(None)]
        else:
            items.append(slice(None))
    if draw(st.booleans()) and items:
        cut = draw(st.integers(0, len(items) - 1))
        items = items[:cut] + [Ellipsis]
    return shape, tuple(items)


@settings(max_examples=60, deadline=None)
@given(_basic_indices(), st.sampled_from([np.float32, np.int32, np.bool_]))
def test_basic_indexing_matches_numpy(case, dtype):
    shape, index = case
    data = (np.arange(np.prod(shape)) % 7).astype(dtype).reshape(shape)
    x = mjnp.asarray(data)
    np.testing.assert_array_equal(np.asarray(x[index]), data[index])
    np.testing.assert_array_equal(np.asarray(x), data)


@st.composite
def _advanced_indices(draw):
    shape = tuple(draw(st.lists(st.integers(1, 4), min_size=1, max_size=3)))
    items = []
    for n in shape:
        kind = draw(st.sampled_from(["array", "int", "slice"]))
        if kind == "array":
            size = draw(st.integers(0, 3))
            items.append(np.array(draw(st.lists(st.integers(-n, n - 1), min_size=size,
                                                max_size=size)), dtype=np.int32))
        elif kind == "int":
            items.append(draw(st.integers(-n, n - 1)))
        else:
            items.append(slice(draw(st.integers(0, n)), None, draw(st.sampled_from([1, 2, -1]))))
    arrays = [i for i in items if isinstance(i, np.ndarray)]
    if len({a.shape for a in arrays}) > 1:  # make the index arrays broadcastable
        items = [i[:1] if isinstance(i, np.ndarray) and i.size else i for i in items]
        arrays = [i for i in items if isinstance(i, np.ndarray)]
        if len({a.shape for a in arrays}) > 1:
            items = [slice(None) if isinstance(i, np.ndarray) else i for i in items]
    return shape, tuple(items)


@settings(max_examples=60, deadline=None)
@given(_advanced_indices())
def test_advanced_indexing_and_updates_match_numpy(case):
    shape, index = case
    data = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    x = mjnp.asarray(data)
    expected = data[index]
    np.testing.assert_array_equal(np.asarray(x[index]), expected)
    updated = data.copy()
    np.add.at(updated, index, 1.0)
    np.testing.assert_array_equal(np.asarray(x.at[index].add(1.0)), updated)
    replaced = data.copy()
    replaced[index] = -1.0
    np.testing.assert_array_equal(np.asarray(x.at[index].set(-1.0)), replaced)
    np.testing.assert_array_equal(np.asarray(x), data)  # never mutated
