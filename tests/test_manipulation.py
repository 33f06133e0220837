"""``jnp`` array manipulation (reshape, transpose, join, split, repeat, roll, ...) against JAX.

* values, shapes, dtypes and weak types of eager programs (``oracle.check_program``);
* the primitives of the jaxprs are JAX's (inside JAX's ``jit`` wrappers);
* tracing then evaluating the jaxpr gives the eager result;
* bad input: JAX's error class, and a message that names the problem;
* Hypothesis: reshape, transpose and concatenate agree with NumPy on random shapes.
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

V = np.arange(3, dtype=np.float32)
M = np.arange(12, dtype=np.float32).reshape(3, 4)
T = np.arange(24, dtype=np.int32).reshape(2, 3, 4)


_v, _m, _t = array_of(V), array_of(M), array_of(T)


PROGRAMS = {
    "reshape": lambda n: n.jnp.reshape(_m(n), (4, 3)),
    "reshape_minus_one": lambda n: n.jnp.reshape(_t(n), (-1, 4)),
    "reshape_int": lambda n: n.jnp.reshape(_m(n), 12),
    "reshape_method": lambda n: _m(n).reshape(2, -1),
    "reshape_method_tuple": lambda n: _m(n).reshape((6, 2)),
    "reshape_fortran": lambda n: n.jnp.reshape(_m(n), (4, 3), order="F"),
    "reshape_weak": lambda n: n.jnp.reshape(n.jnp.asarray(1.0), (1, 1)),
    "ravel": lambda n: n.jnp.ravel(_t(n)),
    "ravel_fortran": lambda n: n.jnp.ravel(_m(n), order="F"),
    "ravel_method": lambda n: _m(n).ravel(),
    "transpose": lambda n: n.jnp.transpose(_t(n)),
    "transpose_axes": lambda n: n.jnp.transpose(_t(n), (1, -1, 0)),
    "transpose_method": lambda n: _t(n).transpose(2, 0, 1),
    "T": lambda n: _m(n).T,
    "mT": lambda n: _t(n).mT,
    "permute_dims": lambda n: n.jnp.permute_dims(_t(n), (2, 1, 0)),
    "moveaxis": lambda n: n.jnp.moveaxis(_t(n), 0, -1),
    "moveaxis_many": lambda n: n.jnp.moveaxis(_t(n), (0, 1), (2, 0)),
    "swapaxes": lambda n: n.jnp.swapaxes(_t(n), 0, 2),
    "swapaxes_method": lambda n: _m(n).swapaxes(-1, 0),
    "expand_dims": lambda n: n.jnp.expand_dims(_v(n), 0),
    "expand_dims_many": lambda n: n.jnp.expand_dims(_m(n), (0, -1)),
    "squeeze_all": lambda n: n.jnp.squeeze(n.jnp.ones((1, 3, 1))),
    "squeeze_axis": lambda n: n.jnp.squeeze(n.jnp.ones((1, 3, 1)), -1),
    "squeeze_method": lambda n: n.jnp.ones((1, 3)).squeeze(0),
    "broadcast_to": lambda n: n.jnp.broadcast_to(_v(n), (2, 3)),
    "broadcast_to_weak": lambda n: n.jnp.broadcast_to(1.0, (2,)),
    "broadcast_arrays": lambda n: n.jnp.broadcast_arrays(_v(n), _m(n)[:, :1], 2.0),
    "broadcast_shapes": lambda n: n.jnp.broadcast_shapes((2, 1), (3,), ()),
    "concatenate": lambda n: n.jnp.concatenate([_v(n), _v(n) * 2]),
    "concatenate_axis": lambda n: n.jnp.concatenate([_m(n), _m(n)[:, :1]], axis=-1),
    "concatenate_none": lambda n: n.jnp.concatenate([_m(n), _v(n)], axis=None),
    "concatenate_promote": lambda n: n.jnp.concatenate([_v(n), n.jnp.arange(2)]),
    "concatenate_weak": lambda n: n.jnp.concatenate([n.jnp.asarray(1.0)[None]] * 2),
    "concatenate_dtype": lambda n: n.jnp.concatenate([_v(n), _v(n)], dtype=np.int32),
    "concatenate_one": lambda n: n.jnp.concatenate([_v(n)]),
    "concatenate_array": lambda n: n.jnp.concatenate(_m(n)),
    "concat": lambda n: n.jnp.concat([_m(n), _m(n)], axis=1),
    "stack": lambda n: n.jnp.stack([_v(n), _v(n) + 1]),
    "stack_axis": lambda n: n.jnp.stack([_m(n), _m(n)], axis=-1),
    "stack_scalars": lambda n: n.jnp.stack([1.0, 2.0]),
    "stack_promote": lambda n: n.jnp.stack([n.jnp.arange(3), _v(n)]),
    "hstack": lambda n: n.jnp.hstack([_v(n), _v(n)]),
    "hstack_2d": lambda n: n.jnp.hstack([_m(n), _m(n)]),
    "hstack_scalars": lambda n: n.jnp.hstack([1.0, 2.0]),
    "vstack": lambda n: n.jnp.vstack([_v(n), _v(n)]),
    "vstack_mixed": lambda n: n.jnp.vstack([_v(n), n.jnp.arange(3)]),
    "dstack": lambda n: n.jnp.dstack([_m(n), _m(n)]),
    "column_stack": lambda n: n.jnp.column_stack([_v(n), _v(n)]),
    "column_stack_2d": lambda n: n.jnp.column_stack([_m(n)[:, :2], _v(n)]),
    "atleast_1d": lambda n: n.jnp.atleast_1d(1.0),
    "atleast_2d": lambda n: n.jnp.atleast_2d(_v(n)),
    "atleast_3d": lambda n: n.jnp.atleast_3d(_m(n)),
    "atleast_3d_vector": lambda n: n.jnp.atleast_3d(_v(n)),
    "atleast_many": lambda n: n.jnp.atleast_2d(1.0, _v(n), _m(n)),
    "split": lambda n: n.jnp.split(n.jnp.arange(6.0), 3),
    "split_indices": lambda n: n.jnp.split(n.jnp.arange(6.0), [1, 4]),
    "split_axis": lambda n: n.jnp.split(_m(n), 2, axis=1),
    "array_split": lambda n: n.jnp.array_split(n.jnp.arange(7), 3),
    "tile": lambda n: n.jnp.tile(_v(n), 2),
    "tile_more_reps": lambda n: n.jnp.tile(_v(n), (2, 2)),
    "tile_fewer_reps": lambda n: n.jnp.tile(_m(n), 2),
    "tile_zero": lambda n: n.jnp.tile(_v(n), 0),
    "repeat": lambda n: n.jnp.repeat(_v(n), 2),
    "repeat_axis": lambda n: n.jnp.repeat(_m(n), 2, axis=1),
    "repeat_flat": lambda n: n.jnp.repeat(_m(n), 2),
    "repeat_array": lambda n: n.jnp.repeat(_v(n), np.array([1, 0, 3])),
    "repeat_jnp_array_axis": lambda n: n.jnp.repeat(_m(n), n.jnp.asarray([2, 0, 1]), axis=0),
    "repeat_total": lambda n: n.jnp.repeat(_v(n), n.jnp.asarray([1, 2, 0]),
                                          total_repeat_length=5),
    "repeat_total_short": lambda n: n.jnp.repeat(_v(n), np.array([1, 2, 1]),
                                                total_repeat_length=2),
    "repeat_scalar_total_long": lambda n: n.jnp.repeat(_v(n), 2, total_repeat_length=7),
    "repeat_scalar_total_short": lambda n: n.jnp.repeat(_v(n), 2, total_repeat_length=4),
    "repeat_weak": lambda n: n.jnp.repeat(1.0, 3),
    "repeat_method": lambda n: _v(n).repeat(2),
    "flip": lambda n: n.jnp.flip(_m(n)),
    "flip_axis": lambda n: n.jnp.flip(_t(n), (0, -1)),
    "fliplr": lambda n: n.jnp.fliplr(_m(n)),
    "flipud": lambda n: n.jnp.flipud(_m(n)),
    "roll": lambda n: n.jnp.roll(_v(n), 1),
    "roll_negative": lambda n: n.jnp.roll(_m(n), -5),
    "roll_axis": lambda n: n.jnp.roll(_m(n), 1, axis=1),
    "roll_many": lambda n: n.jnp.roll(_m(n), (1, -1), (0, 1)),
    "roll_same_axis_twice": lambda n: n.jnp.roll(_m(n), (1, 2), 0),
    "astype": lambda n: n.jnp.astype(_v(n), np.int32),
    "astype_bool": lambda n: n.jnp.astype(n.jnp.asarray(np.array([0.5, 0.0])), bool),
    "astype_drops_weak": lambda n: n.jnp.asarray(1.0).astype(np.float32),
    "astype_python_type": lambda n: _v(n).astype(int),
    "array_of_arrays": lambda n: n.jnp.array([_v(n), _v(n) * 2]),
    "array_of_scalars_and_arrays": lambda n: n.jnp.array([n.jnp.asarray(1), 2.5]),
    "array_of_weak_arrays": lambda n: n.jnp.array([n.jnp.asarray(1.0), n.jnp.asarray(2.0)]),
    "array_nested": lambda n: n.jnp.array([[n.jnp.float32(1), 2], [3, 4]]),
    "array_with_list": lambda n: n.jnp.array([_v(n), [1, 2, 3]]),
    "array_dtype": lambda n: n.jnp.array([n.jnp.asarray(1), 2], dtype=np.float32),
}


@pytest.mark.parametrize("name", PROGRAMS)
def test_matches_jax(name):
    check_program(PROGRAMS[name])


def test_astype_int64_warns_like_jax():
    with pytest.warns(UserWarning, match="int64 requested in astype is not available"):
        out = mjnp.astype(mjnp.asarray(V), mjnp.int64)
    assert out.dtype == np.int32


# ---------------------------------------------------------------------------------------
# jaxprs and tracing
# ---------------------------------------------------------------------------------------

JAXPRS = {
    "reshape": (lambda j, x: j.reshape(x, (4, -1)), M),
    "ravel": (lambda j, x: j.ravel(x), M),
    "transpose": (lambda j, x: j.transpose(x), M),
    "moveaxis": (lambda j, x: j.moveaxis(x, 0, -1), T),
    "expand_dims": (lambda j, x: j.expand_dims(x, (0, 2)), V),
    "squeeze": (lambda j, x: j.squeeze(x[None]), M),
    "concatenate": (lambda j, x: j.concatenate([x, x]), V),
    "concatenate_none": (lambda j, x: j.concatenate([x, x], axis=None), M),
    "stack": (lambda j, x: j.stack([x, x], axis=1), V),
    "vstack": (lambda j, x: j.vstack([x, x]), V),
    "split": (lambda j, x: j.split(x, [1]), V),
    "tile": (lambda j, x: j.tile(x, (2, 1)), V),
    "repeat": (lambda j, x: j.repeat(x, 2, axis=0), M),
    "flip": (lambda j, x: j.flip(x), M),
    "roll": (lambda j, x: j.roll(x, 1, axis=1), M),
    "astype": (lambda j, x: j.astype(x, j.int32), V),
    "array_of_tracers": (lambda j, x: j.array([x, x]), V),
    "broadcast_arrays": (lambda j, x: j.broadcast_arrays(x, x[:, None]), V),
}


@pytest.mark.parametrize("name", JAXPRS)
def test_jaxpr_primitives_match_jax(name):
    import jax.numpy as jjnp

    fun, x = JAXPRS[name]
    ours = primitive_names(minijax.make_jaxpr(lambda a: fun(mjnp, a))(x))
    theirs = primitive_names(jax.make_jaxpr(lambda a: fun(jjnp, a))(x))
    assert ours == theirs


TRACED = {
    "reshape_transpose": lambda x: mjnp.transpose(mjnp.reshape(x, (4, 3)))[::-1],
    "join_split": lambda x: mjnp.split(mjnp.concatenate([x, x * 2], axis=1), 4, axis=1),
    "repeat_tile": lambda x: mjnp.tile(mjnp.repeat(x, 2, axis=0), (1, 2)),
    "roll_flip": lambda x: mjnp.roll(mjnp.flip(x, 0), 2, axis=1),
    "array_of_rows": lambda x: mjnp.array([x[0], x[2] + 1]),
    "roll_traced_shift": lambda x: mjnp.roll(x, mjnp.asarray(5), axis=1),
}


@pytest.mark.parametrize("name", TRACED)
def test_traced_matches_eager(name):
    assert_traced_matches_eager(TRACED[name], mjnp.asarray(M))


def test_roll_with_traced_shift_matches_jax():
    import jax.numpy as jjnp

    for shift in (-7, -1, 0, 3, 9):
        ours = minijax.jaxpr.eval_closed_jaxpr(
            minijax.make_jaxpr(lambda x, s: mjnp.roll(x, s))(V, 0), mjnp.asarray(V), shift)[0]
        theirs = jax.jit(lambda x, s: jjnp.roll(x, s))(V, shift)
        np.testing.assert_array_equal(np.asarray(ours), np.asarray(theirs))


def test_repeat_with_traced_repeats_needs_total_repeat_length():
    with pytest.raises(minijax.errors.ConcretizationTypeError, match="total_repeat_length"):
        minijax.make_jaxpr(lambda r: mjnp.repeat(mjnp.asarray(V), r))(np.array([1, 2, 0]))
    jaxpr = minijax.make_jaxpr(lambda r: mjnp.repeat(mjnp.asarray(V), r,
                                                     total_repeat_length=5))(np.array([1, 2, 0]))
    out = minijax.jaxpr.eval_closed_jaxpr(jaxpr, mjnp.asarray(np.array([1, 2, 0])))[0]
    assert out.tolist() == [0.0, 1.0, 1.0, 2.0, 2.0]


# ---------------------------------------------------------------------------------------
# Bad input
# ---------------------------------------------------------------------------------------

BAD = {
    "reshape_size": (lambda n: n.jnp.reshape(_v(n), 4), TypeError,
                     ["cannot reshape array of shape (3,) (size 3) into shape 4 (size 4)"]),
    "reshape_size_tuple": (lambda n: n.jnp.reshape(_v(n), (2, 2)), TypeError,
                           ["shape (2, 2) (size 4)"]),
    "reshape_two_unknown": (lambda n: n.jnp.reshape(_m(n), (-1, -1)), TypeError,
                            ["one unknown axis"]),
    "reshape_not_divisible": (lambda n: n.jnp.reshape(_m(n), (5, -1)), TypeError,
                              ["does not evenly divide 12"]),
    "reshape_order": (lambda n: n.jnp.reshape(_m(n), 12, order="A"), NotImplementedError,
                      ["order=A"]),
    "transpose_not_permutation": (lambda n: n.jnp.transpose(_m(n), (0,)), TypeError,
                                  ["permutation", "(0,)", "(3, 4)"]),
    "transpose_axis_range": (lambda n: n.jnp.transpose(_m(n), (0, 2)), ValueError,
                             ["axis 2 is out of bounds for array of dimension 2"]),
    "swapaxes_range": (lambda n: n.jnp.swapaxes(_m(n), 0, 2), IndexError, ["index 2"]),
    "moveaxis_lengths": (lambda n: n.jnp.moveaxis(_m(n), (0, 1), (1,)), ValueError,
                         ["Inconsistent number of elements"]),
    "moveaxis_repeated": (lambda n: n.jnp.moveaxis(_m(n), (0, 0), (1, 0)), TypeError,
                          ["permutation"]),
    "expand_dims_range": (lambda n: n.jnp.expand_dims(_m(n), 3), ValueError,
                          ["axis 3 is out of bounds for array of dimension 3"]),
    "squeeze_not_one": (lambda n: n.jnp.squeeze(_m(n), 0), ValueError,
                        ["size not equal to one", "(3, 4)"]),
    "squeeze_range": (lambda n: n.jnp.squeeze(_m(n), 2), ValueError, ["axis 2"]),
    "concatenate_ranks": (lambda n: n.jnp.concatenate([_v(n), _m(n)]), TypeError,
                          ["different numbers of dimensions", "(3,), (3, 4)"]),
    "concatenate_shapes": (lambda n: n.jnp.concatenate([_m(n), _m(n)[:, :2]]), TypeError,
                           ["(3, 4), (3, 2)"]),
    "concatenate_axis": (lambda n: n.jnp.concatenate([_v(n), _v(n)], axis=1), ValueError,
                         ["axis 1 is out of bounds"]),
    "concatenate_scalars": (lambda n: n.jnp.concatenate([n.jnp.float32(1)] * 2), ValueError,
                            ["Zero-dimensional"]),
    "concatenate_nothing": (lambda n: n.jnp.concatenate([]), ValueError, ["at least one"]),
    "concatenate_list": (lambda n: n.jnp.concatenate([[1, 2], [3]]), TypeError,
                         ["ndarray or scalar", "list"]),
    "stack_shapes": (lambda n: n.jnp.stack([_v(n), _v(n)[:2]]), ValueError,
                     ["same shape", "(3,), (2,)"]),
    "stack_nothing": (lambda n: n.jnp.stack([]), ValueError, ["at least one"]),
    "stack_axis": (lambda n: n.jnp.stack([_v(n)] * 2, axis=2), ValueError, ["axis 2"]),
    "split_unequal": (lambda n: n.jnp.split(_v(n), 2), ValueError, ["equal division"]),
    "split_indices": (lambda n: n.jnp.split(_v(n), [2, 1]), ValueError,
                      ["nonnegative", "[np.int64(2), np.int64(-1), np.int64(2)]"]),
    "flip_axis": (lambda n: n.jnp.flip(_v(n), 1), ValueError, ["axis 1"]),
    "fliplr_vector": (lambda n: n.jnp.fliplr(_v(n)), ValueError, ["axis 1"]),
    "broadcast_shapes": (lambda n: n.jnp.broadcast_shapes((2,), (3,)), ValueError,
                         ["Incompatible shapes for broadcasting", "(2,)", "(3,)"]),
    "ragged_array": (lambda n: n.jnp.array([_v(n), _v(n)[:2]]), TypeError,
                     ["(1, 3), (1, 2)"]),
}


@pytest.mark.parametrize("name", BAD)
def test_bad_input_matches_jax(name):
    assert_same_error(*BAD[name])


# ---------------------------------------------------------------------------------------
# Properties against NumPy
# ---------------------------------------------------------------------------------------

_DTYPES = st.sampled_from([np.float32, np.int32, np.uint8, np.bool_, np.complex64])
_SHAPES = st.lists(st.integers(0, 4), min_size=0, max_size=4).map(tuple)


def _data(shape, dtype):
    return (np.arange(int(np.prod(shape))) % 5).astype(dtype).reshape(shape)


@settings(max_examples=50, deadline=None)
@given(_SHAPES, _DTYPES, st.randoms(use_true_random=False))
def test_reshape_and_transpose_match_numpy(shape, dtype, rnd):
    data = _data(shape, dtype)
    x = mjnp.asarray(data)
    perm = list(range(len(shape)))
    rnd.shuffle(perm)
    np.testing.assert_array_equal(np.asarray(mjnp.transpose(x, perm)), data.transpose(perm))
    new_shape = list(reversed(shape))
    if new_shape and data.size:
        new_shape[rnd.randrange(len(new_shape))] = -1
    np.testing.assert_array_equal(np.asarray(mjnp.reshape(x, new_shape)),
                                  data.reshape(new_shape))
    np.testing.assert_array_equal(np.asarray(mjnp.ravel(x, order="F")), data.ravel(order="F"))
    assert mjnp.transpose(x, perm).dtype == x.dtype
    np.testing.assert_array_equal(np.asarray(x), data)


@settings(max_examples=50, deadline=None)
@given(_SHAPES.filter(bool), st.data())
def test_concatenate_stack_split_match_numpy(shape, draw):
    axis = draw.draw(st.integers(-len(shape), len(shape) - 1))
    extra = draw.draw(st.integers(0, 3))
    other_shape = list(shape)
    other_shape[axis] = extra
    a, b = _data(shape, np.float32), _data(tuple(other_shape), np.int32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        joined = mjnp.concatenate([mjnp.asarray(a), mjnp.asarray(b)], axis=axis)
    np.testing.assert_array_equal(np.asarray(joined), np.concatenate([a, b], axis=axis))
    np.testing.assert_array_equal(np.asarray(mjnp.stack([a, a], axis=axis)),
                                  np.stack([a, a], axis=axis))
    cut = draw.draw(st.integers(0, shape[axis]))
    for ours, theirs in zip(mjnp.split(mjnp.asarray(a), [cut], axis=axis),
                            np.split(a, [cut], axis=axis)):
        np.testing.assert_array_equal(np.asarray(ours), theirs)
    np.testing.assert_array_equal(np.asarray(mjnp.roll(a, cut - 1, axis)),
                                  np.roll(a, cut - 1, axis))
