"""``lax`` data-movement primitives (shapes.py) and slicing primitives (slicing.py) against JAX.

* values, shapes, dtypes and weak types (``oracle.check_program``);
* printed jaxprs, character for character, for the primitives with params;
* bad input: JAX's error class, and a message naming the shapes or parameters;
* Hypothesis: ``pad``, ``slice`` and ``dynamic_slice`` agree with NumPy models.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minijax
from minijax import lax
from tests.oracle import assert_same_error, assert_traced_matches_eager, check_program, run_both

jax = pytest.importorskip("jax")

F32 = np.float32
V = np.arange(1, 6, dtype=F32)
M = np.arange(12, dtype=np.int32).reshape(3, 4)
GDN = ((), (0,), (0,))  # gather one element of a vector
SDN = ((), (0,), (0,))  # scatter one element of a vector


def _g(n, *dims):
    return n.lax.GatherDimensionNumbers(*dims)


def _s(n, *dims):
    return n.lax.ScatterDimensionNumbers(*dims)


def _idx(n, values):
    return n.jnp.asarray(np.array(values, np.int32))


PROGRAMS = {
    "transpose": lambda n: n.lax.transpose(M, (1, 0)),
    "transpose_identity": lambda n: n.lax.transpose(V, (0,)),
    "squeeze": lambda n: n.lax.squeeze(np.ones((1, 3, 1), F32), (-1, 0)),
    "expand_dims": lambda n: n.lax.expand_dims(V, (0, -1)),
    "expand_dims_weak": lambda n: n.lax.expand_dims(2.0, (0,)),
    "rev": lambda n: n.lax.rev(M, (0, 1)),
    "rev_none": lambda n: n.lax.rev(V, ()),
    "pad": lambda n: n.lax.pad(V, F32(0), [(1, -1, 2)]),
    "pad_negative": lambda n: n.lax.pad(V, F32(-1), [(-2, 1, 1)]),
    "pad_2d": lambda n: n.lax.pad(M, np.int32(7), [(1, 0, 1), (-1, 2, 0)]),
    "pad_weak": lambda n: n.lax.pad(n.jnp.asarray(1.0)[None], 0.0, [(1, 1, 0)]),
    "pad_weak_strong_value": lambda n: n.lax.pad(n.jnp.asarray(1.0)[None], F32(0), [(1, 1, 0)]),
    "concatenate": lambda n: n.lax.concatenate([M, M[:1]], 0),
    "concatenate_weak": lambda n: n.lax.concatenate([n.jnp.asarray(1.0)[None]] * 2, 0),
    "iota": lambda n: n.lax.iota(np.int32, 4),
    "iota_python_type": lambda n: n.lax.iota(int, 3),
    "iota_float": lambda n: n.lax.iota(F32, 3),
    "broadcasted_iota": lambda n: n.lax.broadcasted_iota(F32, (2, 3), 1),
    "collapse": lambda n: n.lax.collapse(np.ones((2, 3, 4), F32), 0, 2),
    "split": lambda n: n.lax.split(np.arange(6), (1, 2, 3)),
    "split_axis": lambda n: n.lax.split(M, (3, 1), axis=1),
    "stack": lambda n: n.lax.stack([V, V], axis=1),
    "unstack": lambda n: n.lax.unstack(M, axis=1),
    "tile": lambda n: n.lax.tile(M, (2, 1)),
    "slice": lambda n: n.lax.slice(np.arange(10), (1,), (8,), (3,)),
    "slice_2d": lambda n: n.lax.slice(M, (1, 0), (3, 4), (1, 2)),
    "slice_in_dim": lambda n: n.lax.slice_in_dim(M, -3, None, 2, 1),
    "index_in_dim": lambda n: n.lax.index_in_dim(M, -1, 1, False),
    "index_in_dim_keep": lambda n: n.lax.index_in_dim(M, 0),
    "dynamic_slice": lambda n: n.lax.dynamic_slice(V, (np.int32(4),), (2,)),
    "dynamic_slice_negative": lambda n: n.lax.dynamic_slice(V, (-2,), (2,)),
    "dynamic_slice_clamped": lambda n: n.lax.dynamic_slice(V, (n.jnp.asarray(-7),), (2,)),
    "dynamic_slice_array_starts": lambda n: n.lax.dynamic_slice(M, _idx(n, [1, 2]), (2, 2)),
    "dynamic_update_slice": lambda n: n.lax.dynamic_update_slice(V, np.ones(2, F32), (7,)),
    "dynamic_update_slice_2d": lambda n: n.lax.dynamic_update_slice(
        M, np.full((2, 2), -1, np.int32), (n.jnp.asarray(-1), 1)),
    "dynamic_slice_in_dim": lambda n: n.lax.dynamic_slice_in_dim(M, 1, 2, 1),
    "dynamic_index_in_dim": lambda n: n.lax.dynamic_index_in_dim(M, -1, 0, False),
    "dynamic_update_slice_in_dim": lambda n: n.lax.dynamic_update_slice_in_dim(
        M, np.zeros((3, 2), np.int32), 3, 1),
    "dynamic_update_index_in_dim": lambda n: n.lax.dynamic_update_index_in_dim(
        M, np.zeros(4, np.int32), 1, 0),
    "gather": lambda n: n.lax.gather(V, _idx(n, [[0], [3], [6]]), _g(n, *GDN), (1,)),
    "gather_fill": lambda n: n.lax.gather(V, _idx(n, [[0], [3], [6]]), _g(n, *GDN), (1,),
                                          mode="fill"),
    "gather_fill_int": lambda n: n.lax.gather(M[0], _idx(n, [[9]]), _g(n, *GDN), (1,),
                                              mode="fill"),
    "gather_clip": lambda n: n.lax.gather(V, _idx(n, [[-3], [9]]), _g(n, *GDN), (1,),
                                          mode="clip"),
    "gather_windows": lambda n: n.lax.gather(M, _idx(n, [[0], [2]]), _g(n, (0,), (1,), (1,)),
                                             (3, 1)),
    "gather_2d_windows": lambda n: n.lax.gather(
        M, _idx(n, [[0, 1], [2, 3]]), _g(n, (1,), (0,), (0, 1)), (1, 2), mode="fill",
        fill_value=-1),
    "gather_batching": lambda n: n.lax.gather(
        M, _idx(n, [[[0]], [[1]], [[3]]]), _g(n, (), (1,), (1,), (0,), (0,)), (1, 1)),
    "gather_weak": lambda n: n.lax.gather(n.jnp.asarray(1.0)[None], _idx(n, [[0]]),
                                          _g(n, *GDN), (1,)),
    "scatter": lambda n: n.lax.scatter(V, _idx(n, [[0], [2], [9]]), np.full(3, 9, F32),
                                       _s(n, *SDN)),
    "scatter_duplicates": lambda n: n.lax.scatter(V, _idx(n, [[1], [1]]),
                                                  np.array([7, 8], F32), _s(n, *SDN)),
    "scatter_add": lambda n: n.lax.scatter_add(V, _idx(n, [[1], [1], [1]]), np.full(3, 2, F32),
                                               _s(n, *SDN)),
    "scatter_sub": lambda n: n.lax.scatter_sub(V, _idx(n, [[4], [4]]), np.ones(2, F32),
                                               _s(n, *SDN)),
    "scatter_mul_clip": lambda n: n.lax.scatter_mul(V, _idx(n, [[0], [7]]), np.full(2, 3, F32),
                                                    _s(n, *SDN), mode="clip"),
    "scatter_promise": lambda n: n.lax.scatter_add(V, _idx(n, [[0], [7]]), np.ones(2, F32),
                                                   _s(n, *SDN), mode="promise_in_bounds"),
    "scatter_min_windows": lambda n: n.lax.scatter_min(
        M, _idx(n, [[1], [3]]), np.full((3, 2), 5, np.int32), _s(n, (0,), (1,), (1,))),
    "scatter_max_windows": lambda n: n.lax.scatter_max(
        M, _idx(n, [[1], [3]]), np.full((3, 2), 5, np.int32), _s(n, (0,), (1,), (1,))),
    "scatter_apply": lambda n: n.lax.scatter_apply(V, _idx(n, [[0], [0], [2]]),
                                                   lambda x: x * 2 + 1, _s(n, *SDN),
                                                   update_shape=(3,)),
    "scatter_scalar_operand": lambda n: n.lax.scatter(
        F32(1), np.zeros((0,), np.int32), F32(5), _s(n, (), (), ())),
}


@pytest.mark.parametrize("name", PROGRAMS)
def test_matches_jax(name):
    check_program(PROGRAMS[name])


def test_gather_scatter_mode_from_any():
    Mode = lax.GatherScatterMode
    assert Mode.from_any("clip") is Mode.CLIP
    assert Mode.from_any(None) is Mode.FILL_OR_DROP
    assert Mode.from_any("promise_in_bounds") is Mode.PROMISE_IN_BOUNDS
    assert str(Mode.FILL_OR_DROP) == str(jax.lax.GatherScatterMode.FILL_OR_DROP)
    assert repr(lax.GatherDimensionNumbers((0,), (1,), (1,))) == repr(
        jax.lax.GatherDimensionNumbers((0,), (1,), (1,)))


# ---------------------------------------------------------------------------------------
# Printed jaxprs
# ---------------------------------------------------------------------------------------

JAXPRS = {
    "transpose": (lambda n, x: n.lax.transpose(x, (1, 0)), M),
    "squeeze": (lambda n, x: n.lax.squeeze(x[None], (0,)), M),
    "expand_dims": (lambda n, x: n.lax.expand_dims(x, (0, 2)), V),
    "rev": (lambda n, x: n.lax.rev(x, (0, 1)), M),
    "pad": (lambda n, x: n.lax.pad(x, 0.0, [(1, -1, 2)]), V),
    "concatenate": (lambda n, x: n.lax.concatenate([x, x], 0), V),
    "iota": (lambda n, x: n.lax.broadcasted_iota(np.int32, (2, 3), 1) + x, M[:2, :3]),
    "split": (lambda n, x: n.lax.split(x, (1, 4)), V),
    "stack_tile": (lambda n, x: n.lax.tile(n.lax.stack([x, x], axis=-1), (1, 2)), V),
    "slice": (lambda n, x: n.lax.slice(x, (1,), (4,), (2,)), V),
    "slice_in_dim": (lambda n, x: n.lax.slice_in_dim(x, 1, 3, 1, 1), M),
    "dynamic_slice": (lambda n, x, i: n.lax.dynamic_slice(x, (i, 1), (2, 2)), M, 1),
    "dynamic_update_slice": (lambda n, x, i: n.lax.dynamic_update_slice(
        x, np.ones((2, 2), np.int32), (i, 1)), M, 1),
    "dynamic_slice_in_dim": (lambda n, x, i: n.lax.dynamic_slice_in_dim(x, i, 2, 1), M, 1),
    "gather": (lambda n, x, i: n.lax.gather(x, i, _g(n, *GDN), (1,), mode="fill"), V,
               np.array([[1], [2]], np.int32)),
    "scatter_add": (lambda n, x, i: n.lax.scatter_add(x, i, np.ones(2, F32), _s(n, *SDN)), V,
                    np.array([[1], [2]], np.int32)),
    "scatter_apply": (lambda n, x, i: n.lax.scatter_apply(x, i, n.jnp.sin, _s(n, *SDN),
                                                          update_shape=(2,)), V,
                      np.array([[1], [2]], np.int32)),
}


@pytest.mark.parametrize("name", JAXPRS)
def test_jaxpr_text_matches_jax(name):
    import types

    import jax.numpy as jjnp

    fun, *args = JAXPRS[name]
    ours_ns = types.SimpleNamespace(lax=lax, jnp=minijax.numpy)
    theirs_ns = types.SimpleNamespace(lax=jax.lax, jnp=jjnp)
    ours = str(minijax.make_jaxpr(lambda *a: fun(ours_ns, *a))(*args))
    theirs = str(jax.make_jaxpr(lambda *a: fun(theirs_ns, *a))(*args))
    assert ours == theirs


TRACED = {
    "pad_rev": (lambda x: lax.rev(lax.pad(x, 0.0, [(2, -1, 1)]), (0,)), V),
    "gather": (lambda x, i: lax.gather(x, i, lax.GatherDimensionNumbers(*GDN), (1,),
                                       mode="fill"), V, np.array([[1], [9]], np.int32)),
    "scatter": (lambda x, i: lax.scatter_add(x, i, x[:2], lax.ScatterDimensionNumbers(*SDN)),
                V, np.array([[1], [1]], np.int32)),
    "dynamic": (lambda x, i: lax.dynamic_update_slice(x, lax.dynamic_slice(x, (i,), (2,)),
                                                      (i + 1,)), V, np.int32(3)),
}


@pytest.mark.parametrize("name", TRACED)
def test_traced_matches_eager(name):
    fun, *args = TRACED[name]
    assert_traced_matches_eager(fun, *map(minijax.numpy.asarray, args))


# ---------------------------------------------------------------------------------------
# Bad input
# ---------------------------------------------------------------------------------------

BAD = {
    "concatenate_ranks": (lambda n: n.lax.concatenate([V, M], 0), TypeError,
                          ["Cannot concatenate arrays with different numbers of dimensions: "
                           "got (5,), (3, 4)."]),
    "concatenate_shapes": (lambda n: n.lax.concatenate([M, M[:, :2]], 0), TypeError,
                           ["(3, 4), (3, 2)"]),
    "concatenate_dtypes": (lambda n: n.lax.concatenate([V, np.ones(2, np.int32)], 0),
                           TypeError, ["same dtypes", "float32, int32"]),
    "concatenate_dimension": (lambda n: n.lax.concatenate([V, V], 1), TypeError,
                              ["dimension 1"]),
    "concatenate_nothing": (lambda n: n.lax.concatenate([], 0), ValueError, ["non-empty"]),
    "transpose": (lambda n: n.lax.transpose(M, (0, 0)), TypeError,
                  ["permutation (0, 0)", "(3, 4)"]),
    "squeeze_size": (lambda n: n.lax.squeeze(M, (0,)), ValueError,
                     ["size not equal to one", "shape=(3, 4)"]),
    "squeeze_axis": (lambda n: n.lax.squeeze(M, (3,)), ValueError, ["axis 3"]),
    "rev_repeated": (lambda n: n.lax.rev(M, (0, 0)), TypeError, ["unique", "(0, 0)"]),
    "rev_range": (lambda n: n.lax.rev(M, (3,)), TypeError, ["(3,)", "ndim 2"]),
    "pad_config": (lambda n: n.lax.pad(V, F32(0), [(1, 1, 0)] * 2), ValueError,
                   ["padding_config", "(5,)"]),
    "pad_interior": (lambda n: n.lax.pad(V, F32(0), [(1, 1, -1)]), ValueError,
                     ["interior", "nonnegative"]),
    "pad_dtype": (lambda n: n.lax.pad(V, np.int32(0), [(1, 1, 0)]), TypeError,
                  ["same dtype", "float32 and int32"]),
    "pad_too_much": (lambda n: n.lax.pad(V, F32(0), [(-6, 0, 0)]), ValueError,
                     ["(-1,)"]),
    "pad_value_shape": (lambda n: n.lax.pad(V, np.zeros(2, F32), [(1, 1, 0)]), ValueError,
                        ["scalar"]),
    "iota_dimension": (lambda n: n.lax.broadcasted_iota(np.int32, (2, 3), 2), ValueError,
                       ["dimension=2", "(2, 3)"]),
    "iota_shape": (lambda n: n.lax.iota(np.int32, -1), TypeError, ["nonnegative", "(-1,)"]),
    "iota_bool": (lambda n: n.lax.iota(bool, 2), TypeError, ["iota", "bool"]),
    "split_sizes": (lambda n: n.lax.split(V, (1, 1)), ValueError, ["Sum of sizes 2", "[5]"]),
    "stack_ranks": (lambda n: n.lax.stack([V, M]), ValueError, ["(5,), (3, 4)"]),
    "tile_reps": (lambda n: n.lax.tile(M, (2,)), TypeError, ["len(reps)=1", "x.ndim=2"]),
    "expand_dims_repeated": (lambda n: n.lax.expand_dims(V, (0, 0)), ValueError,
                             ["repeated axis"]),
    "slice_too_far": (lambda n: n.lax.slice(V, (0,), (6,)), TypeError, ["(5,)"]),
    "dynamic_slice_size": (lambda n: n.lax.dynamic_slice(V, (0,), (6,)), TypeError,
                           ["slice_sizes (6,)", "(5,)"]),
    "dynamic_slice_count": (lambda n: n.lax.dynamic_slice(V, (0, 0), (1,)), ValueError,
                            ["(2 vs (5,))"]),
    "dynamic_slice_float": (lambda n: n.lax.dynamic_slice(V, (0.0,), (1,)), TypeError,
                            ["integers", "float32"]),
    "dynamic_update_rank": (lambda n: n.lax.dynamic_update_slice(V, np.ones((1, 1), F32), (0,)),
                            TypeError, ["same rank", "(1, 1)"]),
    "dynamic_update_shape": (lambda n: n.lax.dynamic_update_slice(V, np.ones(6, F32), (0,)),
                             TypeError, ["(6,)", "(5,)"]),
    "dynamic_update_dtype": (lambda n: n.lax.dynamic_update_slice(V, np.ones(2, np.int32),
                                                                  (0,)),
                             TypeError, ["float32, int32"]),
    "gather_collapse": (lambda n: n.lax.gather(V, _idx(n, [[0]]), _g(n, *GDN), (2,)),
                        TypeError, ["collapse", "bound is 2"]),
    "scatter_rank": (lambda n: n.lax.scatter_add(V, _idx(n, [[0]]), F32(1), _s(n, *SDN)),
                     TypeError, ["rank 1"]),
    "mode": (lambda n: n.lax.GatherScatterMode.from_any("foo"), ValueError, ['"foo"']),
}


@pytest.mark.parametrize("name", BAD)
def test_bad_input_matches_jax(name):
    assert_same_error(*BAD[name])


# ---------------------------------------------------------------------------------------
# Properties against NumPy models
# ---------------------------------------------------------------------------------------


def _pad_model(x: np.ndarray, value, config) -> np.ndarray:
    """Interior padding by building the spread array; edges by np.pad or cropping."""
    for axis, (lo, hi, interior) in enumerate(config):
        n = x.shape[axis]
        spread_shape = list(x.shape)
        spread_shape[axis] = n + max(n - 1, 0) * interior
        spread = np.full(spread_shape, value, x.dtype)
        index = [slice(None)] * x.ndim
        index[axis] = slice(None, None, interior + 1)
        spread[tuple(index)] = x
        widths = [(0, 0)] * x.ndim
        widths[axis] = (max(lo, 0), max(hi, 0))
        x = np.pad(spread, widths, constant_values=value)
        index[axis] = slice(max(-lo, 0), x.shape[axis] - max(-hi, 0))
        x = x[tuple(index)]
    return x


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 4), min_size=1, max_size=3), st.data())
def test_pad_matches_numpy(shape, data):
    x = np.arange(int(np.prod(shape)), dtype=F32).reshape(shape)
    config = []
    for n in shape:
        interior = data.draw(st.integers(0, 2))
        size = n + max(n - 1, 0) * interior
        lo = data.draw(st.integers(-size, 3))
        hi = data.draw(st.integers(-(size + lo) if size + lo > 0 else 0, 3))
        config.append((lo, hi, interior))
    out = lax.pad(x, F32(-1), config)
    np.testing.assert_array_equal(np.asarray(out), _pad_model(x, F32(-1), config))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(1, 5), min_size=1, max_size=3), st.data())
def test_slices_match_numpy(shape, data):
    x = np.arange(int(np.prod(shape)), dtype=np.int32).reshape(shape)
    starts = [data.draw(st.integers(-7, 7)) for _ in shape]
    sizes = [data.draw(st.integers(0, n)) for n in shape]
    clamped = [min(max(s + n if s < 0 else s, 0), n - size)
               for s, n, size in zip(starts, shape, sizes)]
    box = tuple(slice(c, c + size) for c, size in zip(clamped, sizes))
    np.testing.assert_array_equal(np.asarray(lax.dynamic_slice(x, starts, sizes)), x[box])
    update = -np.ones(sizes, np.int32)
    expected = x.copy()
    expected[box] = update
    np.testing.assert_array_equal(np.asarray(lax.dynamic_update_slice(x, update, starts)),
                                  expected)
    strides = [data.draw(st.integers(1, 3)) for _ in shape]
    limits = [c + size for c, size in zip(clamped, sizes)]
    np.testing.assert_array_equal(
        np.asarray(lax.slice(x, clamped, limits, strides)),
        x[tuple(slice(c, lim, s) for c, lim, s in zip(clamped, limits, strides))])


def test_primitives_named_like_jax():
    for ours, theirs in [(lax.scatter_add_p, jax.lax.scatter_add_p),
                         (lax.gather_p, jax.lax.gather_p), (lax.iota_p, jax.lax.iota_p),
                         (lax.dynamic_slice_p, jax.lax.dynamic_slice_p),
                         (lax.scatter_sub_p, jax.lax.scatter_sub_p), (lax.pad_p, jax.lax.pad_p)]:
        assert ours.name == theirs.name
    assert run_both(lambda n: n.lax.split_p.multiple_results)[0] == ("ok", True)
