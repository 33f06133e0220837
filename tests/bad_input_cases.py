"""The table of bad and edge-case inputs that ``test_bad_input.py`` runs under minijax and JAX.

Every case is a *program*: a function of a namespace ``n`` holding ``n.jnp``, ``n.lax``,
``n.jax`` and ``n.np`` (see ``oracle.namespaces``), so one lambda runs against both.

* :data:`ERRORS`: JAX raises. minijax must raise the same class, with a message that holds
  each of the listed words (the shapes, dtypes or values the program got wrong).
* :data:`VALUES`: edge cases where JAX returns (NaN, infinities, empty arrays, wrapping
  integers, signed zeros, clamped indices): minijax must return the same values, dtypes
  and weak types.
* :data:`DIFFERENCES`: where minijax deliberately differs, with the reason. The test
  checks that each still differs, so that the list stays true.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

Program = Callable[[Any], Any]

F3 = np.arange(3, dtype=np.float32)
F4 = np.arange(4, dtype=np.float32)
I3 = np.array([1, 2, 3], np.int32)
U3 = np.array([1, 2, 3], np.uint8)
B3 = np.array([True, False, True])
C3 = np.array([1 + 1j, 2, 3j], np.complex64)
M23 = np.arange(6, dtype=np.float32).reshape(2, 3)
M34 = np.arange(12, dtype=np.float32).reshape(3, 4)
SQ = np.eye(3, dtype=np.float32) * 2
E0 = np.zeros((0,), np.float32)
E03 = np.zeros((0, 3), np.float32)
E30 = np.zeros((3, 0), np.float32)


def raises(program: Program, *words: str) -> tuple[Program, tuple[str, ...]]:
    """An :data:`ERRORS` entry: the program and the words minijax's message must hold."""
    return program, words


def _a(n: Any, x: np.ndarray) -> Any:
    """``x`` as an array of the library that runs (JAX's ``jnp.reshape`` of a NumPy array
    is NumPy's own reshape: see :data:`DIFFERENCES`)."""
    return n.jnp.asarray(x)


def _sum(x: Any) -> Any:
    return x.sum()


def _shape_dtype(x: Any) -> tuple[tuple[int, ...], str]:
    """What a float0 result is: its shape and dtype (JAX wraps such arrays in a type of
    its own, minijax returns a NumPy array)."""
    return np.shape(x), str(x.dtype)


# ---------------------------------------------------------------------------------------
# jnp: shapes and broadcasting
# ---------------------------------------------------------------------------------------

JNP_SHAPES = {
    "jnp.add/shapes": raises(lambda n: n.jnp.add(F3, F4), "(3,)", "(4,)"),
    "jnp.subtract/shapes": raises(lambda n: n.jnp.subtract(M23, M34), "(2, 3)", "(3, 4)"),
    "jnp.multiply/shapes": raises(lambda n: n.jnp.multiply(F3, M34), "(3,)", "(3, 4)"),
    "jnp.divide/shapes": raises(lambda n: n.jnp.divide(F4, M23), "(4,)", "(2, 3)"),
    "jnp.maximum/shapes": raises(lambda n: n.jnp.maximum(F3, F4), "(3,)", "(4,)"),
    "jnp.power/shapes": raises(lambda n: n.jnp.power(F3, F4), "(3,)", "(4,)"),
    "jnp.arctan2/shapes": raises(lambda n: n.jnp.arctan2(F3, F4), "(3,)", "(4,)"),
    "jnp.where/shapes": raises(lambda n: n.jnp.where(B3, F4, 0.0), "(3,)", "(4,)"),
    "jnp.equal/shapes": raises(lambda n: n.jnp.equal(F3, F4), "(3,)", "(4,)"),
    "jnp.logical_and/shapes": raises(lambda n: n.jnp.logical_and(B3, F4), "(3,)", "(4,)"),
    "operator+/shapes": raises(lambda n: n.jnp.asarray(F3) + n.jnp.asarray(F4), "(3,)", "(4,)"),
    "operator@/shapes": raises(lambda n: n.jnp.asarray(M23) @ n.jnp.asarray(M23), "3", "2"),
    "jnp.matmul/shapes": raises(lambda n: n.jnp.matmul(M23, M23), "(3,)", "(2,)"),
    "jnp.matmul/scalar": raises(lambda n: n.jnp.matmul(1.0, F3), "matmul"),
    "jnp.dot/shapes": raises(lambda n: n.jnp.dot(F3, F4), "(3,)", "(4,)"),
    "jnp.vdot/shapes": raises(lambda n: n.jnp.vdot(F3, F4), "(3,)", "(4,)"),
    "jnp.inner/shapes": raises(lambda n: n.jnp.inner(F3, F4), "(3,)", "(4,)"),
    "jnp.tensordot/shapes": raises(lambda n: n.jnp.tensordot(M23, M23, axes=1), "(3,)",
                                   "(2,)"),
    "jnp.einsum/shapes": raises(lambda n: n.jnp.einsum("ij,jk->ik", M23, M23), "3", "2"),
    "jnp.einsum/operands": raises(lambda n: n.jnp.einsum("ij,jk->ik", M23), "operand"),
    "jnp.cross/shapes": raises(lambda n: n.jnp.cross(F4, F4), "3"),
    "jnp.concatenate/shapes": raises(lambda n: n.jnp.concatenate([M23, M34]), "(2, 3)"),
    "jnp.concatenate/ndim": raises(lambda n: n.jnp.concatenate([F3, M23]), "dimensions"),
    "jnp.concatenate/empty": raises(lambda n: n.jnp.concatenate([]), "at least one"),
    "jnp.concatenate/axis": raises(lambda n: n.jnp.concatenate([F3, F3], axis=1), "axis 1"),
    "jnp.stack/shapes": raises(lambda n: n.jnp.stack([F3, F4]), "same shape"),
    "jnp.stack/empty": raises(lambda n: n.jnp.stack([]), "at least one"),
    "jnp.vstack/shapes": raises(lambda n: n.jnp.vstack([F3, F4]), "(1, 3)", "(1, 4)"),
    "jnp.hstack/shapes": raises(lambda n: n.jnp.hstack([M23, M34]), "(2, 3)", "(3, 4)"),
    "jnp.broadcast_to/shape": raises(lambda n: n.jnp.broadcast_to(F3, (4,)),
                                     "input type=float32[3]", "requested type=float32[4]"),
    "jnp.broadcast_to/fewer": raises(lambda n: n.jnp.broadcast_to(M23, (3,)), "(2, 3)", "(3,)"),
    "jnp.broadcast_arrays/shapes": raises(lambda n: n.jnp.broadcast_arrays(F3, F4), "(3,)"),
    "jnp.broadcast_shapes/shapes": raises(lambda n: n.jnp.broadcast_shapes((3,), (4,)), "(3,)"),
    "jnp.reshape/size": raises(lambda n: n.jnp.reshape(_a(n, F3), (2, 2)), "(3,)", "(2, 2)"),
    "jnp.reshape/two_unknown": raises(lambda n: n.jnp.reshape(_a(n, M23), (-1, -1)), "-1"),
    "jnp.reshape/uneven": raises(lambda n: n.jnp.reshape(_a(n, M23), (-1, 4)), "(2, 3)", "4"),
    "jnp.reshape/negative": raises(lambda n: n.jnp.reshape(_a(n, M23), (-2, -3)), "(-2, -3)"),
    # JAX divides by the zero product of the other sizes, which is arguably its bug (NumPy
    # raises ValueError "cannot reshape"); minijax keeps JAX's class, ZeroDivisionError.
    "jnp.reshape/minus_one_and_zero": raises(lambda n: n.jnp.zeros((0,)).reshape(-1, 0),
                                             "(0,)", "(-1, 0)"),
    "jnp.reshape/minus_one_and_zero_2d": raises(lambda n: n.jnp.reshape(_a(n, E03), (0, -1)),
                                                "(0, 3)", "(0, -1)"),
    "jnp.reshape/order": raises(lambda n: n.jnp.reshape(_a(n, F3), 3, order="K"), "K"),
    "jnp.reshape/order_a": raises(lambda n: n.jnp.reshape(_a(n, F3), 3, order="A"), "order=A"),
    "jnp.ravel/order": raises(lambda n: n.jnp.ravel(F3, order="Q"), "Q"),
    "jnp.ravel/order_k": raises(lambda n: n.jnp.ravel(F3, order="K"), "K"),
    "jnp.transpose/axes": raises(lambda n: n.jnp.transpose(M23, (0, 0)), "(0, 0)"),
    "jnp.transpose/length": raises(lambda n: n.jnp.transpose(M23, (1, 0, 2)), "axis 2"),
    "jnp.moveaxis/axis": raises(lambda n: n.jnp.moveaxis(M23, 2, 0), "2"),
    "jnp.moveaxis/lengths": raises(lambda n: n.jnp.moveaxis(M23, (0, 1), (0,)), "2 vs 1"),
    "jnp.swapaxes/axis": raises(lambda n: n.jnp.swapaxes(M23, 0, 5), "5"),
    "jnp.squeeze/not_one": raises(lambda n: n.jnp.squeeze(M23, 0), "(2, 3)"),
    "jnp.squeeze/axis": raises(lambda n: n.jnp.squeeze(M23, 3), "3"),
    "jnp.expand_dims/axis": raises(lambda n: n.jnp.expand_dims(F3, 3), "3"),
    "jnp.expand_dims/repeated": raises(lambda n: n.jnp.expand_dims(F3, (0, 0)), "repeated"),
    "jnp.split/uneven": raises(lambda n: n.jnp.split(F3, 2), "equal division"),
    "jnp.repeat/negative": raises(lambda n: n.jnp.repeat(F3, -1), "-1"),
    "jnp.repeat/lengths": raises(lambda n: n.jnp.repeat(F3, I3[:2], axis=0), "(2,)"),
    "jnp.pad/negative": raises(lambda n: n.jnp.pad(F3, -1), "negative"),
    "jnp.pad/mode": raises(lambda n: n.jnp.pad(F3, 1, mode="nonsense"), "nonsense"),
    "jnp.flip/axis": raises(lambda n: n.jnp.flip(F3, 1), "1"),
    "jnp.roll/axis": raises(lambda n: n.jnp.roll(F3, 1, axis=2), "2"),
    "jnp.diagonal/ndim": raises(lambda n: n.jnp.diagonal(F3), "two dimensions"),
    "jnp.trace/ndim": raises(lambda n: n.jnp.trace(F3), "axis 1", "dimension 1"),
}

# ---------------------------------------------------------------------------------------
# jnp: axes of reductions, cumulative and sorting functions
# ---------------------------------------------------------------------------------------

JNP_AXES = {
    "jnp.sum/axis": raises(lambda n: n.jnp.sum(M23, axis=2), "2"),
    "jnp.sum/negative_axis": raises(lambda n: n.jnp.sum(M23, axis=-3), "-3"),
    "jnp.sum/repeated": raises(lambda n: n.jnp.sum(M23, axis=(0, 0)), "duplicate"),
    "jnp.sum/float_axis": raises(lambda n: n.jnp.sum(M23, axis=1.0), "float"),
    "jnp.mean/axis": raises(lambda n: n.jnp.mean(F3, axis=1), "1"),
    "jnp.prod/axis": raises(lambda n: n.jnp.prod(F3, axis=1), "1"),
    "jnp.max/axis": raises(lambda n: n.jnp.max(M23, axis=5), "5"),
    "jnp.min/axis": raises(lambda n: n.jnp.min(M23, axis=-5), "-5"),
    "jnp.any/axis": raises(lambda n: n.jnp.any(B3, axis=1), "1"),
    "jnp.all/axis": raises(lambda n: n.jnp.all(B3, axis=1), "1"),
    "jnp.var/axis": raises(lambda n: n.jnp.var(F3, axis=1), "1"),
    "jnp.std/axis": raises(lambda n: n.jnp.std(F3, axis=1), "1"),
    "jnp.argmax/axis": raises(lambda n: n.jnp.argmax(F3, axis=1), "1"),
    "jnp.argmin/axis": raises(lambda n: n.jnp.argmin(F3, axis=1), "1"),
    "jnp.argmax/tuple_axis": raises(lambda n: n.jnp.argmax(M23, axis=(0, 1)), "tuple"),
    "jnp.cumsum/axis": raises(lambda n: n.jnp.cumsum(F3, axis=1), "1"),
    "jnp.cumprod/axis": raises(lambda n: n.jnp.cumprod(F3, axis=1), "1"),
    "jnp.sort/axis": raises(lambda n: n.jnp.sort(F3, axis=1), "1"),
    "jnp.argsort/axis": raises(lambda n: n.jnp.argsort(F3, axis=1), "1"),
    "jnp.max/empty": raises(lambda n: n.jnp.max(E0), "zero-size"),
    "jnp.min/empty": raises(lambda n: n.jnp.min(E03, axis=0), "zero-size"),
    "jnp.argmax/empty": raises(lambda n: n.jnp.argmax(E0), "empty"),
    "jnp.argmin/empty": raises(lambda n: n.jnp.argmin(E03, axis=0), "empty"),
    "jnp.amax/empty_axis": raises(lambda n: n.jnp.amax(E30, axis=1), "zero-size"),
    "jnp.argmax/empty_complex": raises(lambda n: n.jnp.argmax(np.ones((2, 0), np.complex64),
                                                              axis=1), "empty"),
    "jnp.median/complex": raises(lambda n: n.jnp.median(C3), "complex"),
    "jnp.median/scalar_axes": raises(lambda n: n.jnp.median(np.float32(1), axis=(0,)),
                                     "axis 0", "dimension 0"),
    "jnp.median/repeated_axes": raises(lambda n: n.jnp.median(M23, axis=(0, 0)), "repeated"),
    "jnp.quantile/tuple_axes_out_of_range": raises(
        lambda n: n.jnp.quantile(M23, 0.5, axis=(0, 5)), "axis 5"),
    "jnp.cumsum/tuple_axis": raises(lambda n: n.jnp.cumsum(M23, axis=(0,)), "tuple"),
    "lax.reduce_sum/bool_bad_axes": raises(lambda n: n.lax.reduce_sum(np.bool_(True), (0,)),
                                           "(0,)", "bool[]"),
    "lax.reduce_and/axes": raises(lambda n: n.lax.reduce_and(B3, (1,)), "index 1", "(1,)"),
    "lax.reduce_or/negative_axis_of_scalar": raises(
        lambda n: n.lax.reduce_or(np.bool_(True), (-1,)), "index -1"),
    "lax.reduce_and/float": raises(lambda n: n.lax.reduce_and(F3, (5,)), "float32"),
    "lax.argmax/complex_scalar": raises(lambda n: n.lax.argmax(np.complex64(1), 0, np.int32),
                                        "axis 0", "()"),
    "lax.argmax/empty_complex": raises(
        lambda n: n.lax.argmax(np.ones(0, np.complex64), 0, np.int32), "non-empty"),
    "lax.cumsum/bool_scalar": raises(lambda n: n.lax.cumsum(np.bool_(True), 0), "axis 0",
                                     "()"),
    "method.sum/axis": raises(lambda n: n.jnp.asarray(M23).sum(axis=3), "3"),
    "method.mean/axis": raises(lambda n: n.jnp.asarray(M23).mean(axis=(0, 3)), "3"),
}

# ---------------------------------------------------------------------------------------
# jnp: dtypes, creation, conversion
# ---------------------------------------------------------------------------------------

JNP_DTYPES = {
    "jnp.power/int_negative": raises(lambda n: n.jnp.power(I3, -1), "integer_pow",
                                     "int32[3]", "-1"),
    "operator**/int_negative": raises(lambda n: n.jnp.asarray(I3) ** -2, "int32[3]", "-2"),
    "jnp.power/int_negative_jit": raises(lambda n: n.jax.jit(lambda x: x ** -1)(I3),
                                         "int32[3]", "-1"),
    "jnp.bitwise_and/float": raises(lambda n: n.jnp.bitwise_and(F3, F3), "float32"),
    "jnp.bitwise_not/float": raises(lambda n: n.jnp.bitwise_not(F3), "float32"),
    "jnp.left_shift/float": raises(lambda n: n.jnp.left_shift(F3, 1), "float32"),
    "operator&/float": raises(lambda n: n.jnp.asarray(F3) & 1, "float32"),
    "operator~/float": raises(lambda n: ~n.jnp.asarray(F3), "float32"),
    "jnp.gcd/float": raises(lambda n: n.jnp.gcd(F3, F3), "integer"),
    "jnp.floor/complex": raises(lambda n: n.jnp.floor(C3), "complex"),
    "jnp.maximum/complex_ok_but_remainder": raises(lambda n: n.jnp.remainder(C3, C3),
                                                   "complex"),
    "jnp.floor_divide/complex": raises(lambda n: n.jnp.floor_divide(C3, C3), "complex"),
    "jnp.isposinf/complex": raises(lambda n: n.jnp.isposinf(C3), "complex"),
    "jnp.heaviside/complex": raises(lambda n: n.jnp.heaviside(C3, C3), "complex"),
    "jnp.zeros/negative": raises(lambda n: n.jnp.zeros((-1, 2)), "-1"),
    "jnp.ones/float_shape": raises(lambda n: n.jnp.ones((2.5,)), "2.5"),
    "jnp.full/shape": raises(lambda n: n.jnp.full((2,), F3), "input type=float32[3]",
                             "requested type=float32[2]"),
    "jnp.zeros/dtype": raises(lambda n: n.jnp.zeros(3, dtype="nonsense"), "nonsense"),
    "jnp.zeros/object_dtype": raises(lambda n: n.jnp.zeros(3, dtype=object), "object"),
    "jnp.eye/negative": raises(lambda n: n.jnp.eye(-1), "-1"),
    "jnp.arange/zero_step": raises(lambda n: n.jnp.arange(0, 10, 0), "division by zero"),
    "jnp.arange/complex": raises(lambda n: n.jnp.arange(1j), "complex"),
    "jnp.linspace/negative": raises(lambda n: n.jnp.linspace(0, 1, -1), "-1"),
    "jnp.asarray/ragged": raises(lambda n: n.jnp.asarray([[1, 2], [3]]), "inhomogeneous"),
    "jnp.asarray/string": raises(lambda n: n.jnp.asarray("abc"), "'abc'"),
    "jnp.asarray/object": raises(lambda n: n.jnp.asarray(object()), "object"),
    "jnp.asarray/none": raises(lambda n: n.jnp.asarray(None), "None"),
    "jnp.asarray/overflow": raises(lambda n: n.jnp.asarray(2**40, n.jnp.int32),
                                   "1099511627776", "int32"),
    "jnp.uint8/negative": raises(lambda n: n.jnp.uint8(-1), "-1", "uint8"),
    "astype/nonsense": raises(lambda n: n.jnp.asarray(F3).astype("nonsense"), "nonsense"),
    "jnp.astype/object": raises(lambda n: n.jnp.astype(F3, object), "object"),
    "jnp.dtype/nonsense": raises(lambda n: n.jnp.dtype("nonsense"), "nonsense"),
    "jnp.issubdtype/nonsense": raises(lambda n: n.jnp.issubdtype("nonsense", n.jnp.integer),
                                      "nonsense"),
    "jnp.result_type/none": raises(lambda n: n.jnp.result_type(), "at least one"),
    "jnp.iinfo/float": raises(lambda n: n.jnp.iinfo(n.jnp.float32), "'f'"),
    "jnp.finfo/int": raises(lambda n: n.jnp.finfo(n.jnp.int32), "int32"),
    "float()/array": raises(lambda n: float(n.jnp.asarray(F3)), "Python scalars"),
    "int()/array": raises(lambda n: int(n.jnp.asarray(I3)), "Python scalars"),
    "bool()/array": raises(lambda n: bool(n.jnp.asarray(B3)), "ambiguous"),
    "len()/scalar": raises(lambda n: len(n.jnp.asarray(1.0)), "unsized"),
    "iter()/scalar": raises(lambda n: iter(n.jnp.asarray(1.0)), "0-d"),
    "operator+/string": raises(lambda n: n.jnp.asarray(F3) + "a", "str"),
    "jnp.add/list": raises(lambda n: n.jnp.add(F3, ["a"]), "list", "position 1"),
    "jnp.sin/string": raises(lambda n: n.jnp.sin("a"), "str"),
    "jnp.sum/string": raises(lambda n: n.jnp.sum("a"), "str"),
    "jnp.clip/shapes": raises(lambda n: n.jnp.clip(F3, F4), "(3,)",
                                                  "(4,)"),
    "jnp.isclose/shapes": raises(lambda n: n.jnp.isclose(F3, F4), "(3,)", "(4,)"),
    "jnp.allclose/shapes": raises(lambda n: n.jnp.allclose(F3, F4), "(3,)", "(4,)"),
    "jnp.take/float_indices": raises(lambda n: n.jnp.take(F3, F3), "integer"),
    "jnp.take_along_axis/ndim": raises(lambda n: n.jnp.take_along_axis(M23, I3, 0), "1",
                                       "2"),
    "jnp.take_along_axis/float": raises(lambda n: n.jnp.take_along_axis(F3, F3, 0), "float32"),
    "jnp.take/empty_axis": raises(lambda n: n.jnp.take(E0, I3), "empty axis"),
    "jnp.take/raise_mode": raises(lambda n: n.jnp.take(F3, I3, mode="raise"), "raise"),
    "jnp.linalg.inv/not_square": raises(lambda n: n.jnp.linalg.inv(M23), "(2, 3)"),
    "jnp.linalg.inv/vector": raises(lambda n: n.jnp.linalg.inv(F3), "(3,)"),
    "jnp.linalg.det/not_square": raises(lambda n: n.jnp.linalg.det(M23), "(2, 3)"),
    "jnp.linalg.solve/shapes": raises(lambda n: n.jnp.linalg.solve(SQ, F4), "4 vs 3"),
    "jnp.linalg.cholesky/not_square": raises(lambda n: n.jnp.linalg.cholesky(M23), "(2, 3)"),
    "jnp.linalg.norm/ord": raises(lambda n: n.jnp.linalg.norm(M23, ord="fro", axis=0), "fro"),
}

# ---------------------------------------------------------------------------------------
# jnp: indexing and .at updates
# ---------------------------------------------------------------------------------------

JNP_INDEXING = {
    "getitem/too_many": raises(lambda n: n.jnp.asarray(F3)[0, 0], "1-dimensional", "2"),
    "getitem/two_ellipses": raises(lambda n: n.jnp.asarray(M23)[..., ...], "ellipsis"),
    "getitem/float": raises(lambda n: n.jnp.asarray(F3)[1.0], "float"),
    "getitem/float_array": raises(lambda n: n.jnp.asarray(F3)[F3], "float32"),
    "getitem/string": raises(lambda n: n.jnp.asarray(F3)["a"], "'a'"),
    "getitem/list": raises(lambda n: n.jnp.asarray(F3)[[0, 1]], "non-tuple sequence"),
    "getitem/mask_shape": raises(lambda n: n.jnp.asarray(F3)[np.array([True, False])],
                                 "(2,)", "[3]"),
    "getitem/traced_mask": raises(lambda n: n.jax.jit(lambda x: x[x > 0])(F3), "bool[3]"),
    "getitem/traced_slice": raises(lambda n: n.jax.jit(lambda x, i: x[i:])(F3, 1), "slice"),
    "getitem/broadcast": raises(lambda n: n.jnp.asarray(M23)[I3[:2], I3], "(2,)", "(3,)"),
    "getitem/empty_axis": raises(lambda n: n.jnp.zeros((0,))[0], "axis 0", "size 0"),
    "getitem/empty_axis_negative": raises(lambda n: n.jnp.zeros((0,))[-1], "axis 0",
                                          "size 0"),
    "getitem/empty_second_axis": raises(lambda n: n.jnp.asarray(E30)[:, 0], "axis 1",
                                        "size 0"),
    "getitem/empty_axis_ellipsis": raises(lambda n: n.jnp.asarray(E30)[..., 2], "axis 1"),
    "getitem/empty_axis_newaxis": raises(lambda n: n.jnp.asarray(E0)[None, 0], "axis 0"),
    "getitem/empty_axis_scalar_array": raises(lambda n: n.jnp.asarray(E0)[n.jnp.array(0)],
                                              "axis 0", "size 0"),
    "getitem/empty_axis_numpy_int": raises(lambda n: n.jnp.asarray(E0)[np.int32(0)],
                                           "axis 0", "size 0"),
    "getitem/empty_axis_traced": raises(lambda n: n.jax.jit(lambda x, i: x[i])(E0, 0),
                                        "axis 0", "size 0"),
    "getitem/empty_axis_array": raises(lambda n: n.jnp.asarray(E0)[n.jnp.array([0, 1])],
                                       "(1,)", "(0,)"),
    "getitem/empty_axis_among_arrays": raises(lambda n: n.jnp.asarray(E30)[I3[:1], 0],
                                              "(3, 0)"),
    "at.set/empty_axis": raises(lambda n: n.jnp.zeros((0,)).at[0].set(1.0), "axis 0",
                                "size 0"),
    "at.add/empty_axis": raises(lambda n: n.jnp.asarray(E03).at[0].add(1.0), "axis 0"),
    "at.mul/empty_second_axis": raises(lambda n: n.jnp.zeros((2, 0)).at[:, 0].mul(2.0),
                                       "axis 1", "size 0"),
    "at.min/empty_axis": raises(lambda n: n.jnp.zeros((2, 0)).at[1, 0].min(1.0), "axis 1"),
    "at.set/empty_axis_drop": raises(lambda n: n.jnp.asarray(E0).at[0].set(1.0, mode="drop"),
                                     "axis 0"),
    "at.set/empty_axis_clip": raises(lambda n: n.jnp.asarray(E0).at[0].set(1.0, mode="clip"),
                                     "axis 0"),
    "at.get/empty_axis": raises(lambda n: n.jnp.asarray(E0).at[0].get(), "axis 0", "size 0"),
    "at.get/empty_axis_fill": raises(
        lambda n: n.jnp.asarray(E0).at[0].get(mode="fill", fill_value=3.0), "axis 0"),
    "at.set/empty_axis_traced": raises(
        lambda n: n.jax.jit(lambda x, i: x.at[i].set(1.0))(E0, 0), "axis 0", "size 0"),
    "at.get/empty_axis_array_fill": raises(
        lambda n: n.jnp.asarray(E0).at[n.jnp.array([0, 1])].get(mode="fill"), "(0,)"),
    "at.set/too_many": raises(lambda n: n.jnp.asarray(F3).at[0, 0].set(1.0), "1-dimensional"),
    "at.set/shape": raises(lambda n: n.jnp.asarray(M23).at[0].set(F4), "float32[4]",
                          "float32[3]"),
    "at.set/more_dims": raises(lambda n: n.jnp.asarray(F3).at[0].set(F3), "(3,)"),
    "at.add/float_index": raises(lambda n: n.jnp.asarray(F3).at[1.5].add(1.0), "float"),
    "at.set/mask": raises(lambda n: n.jax.jit(lambda x: x.at[x > 0].set(0.0))(F3), "bool[3]"),
    "at.set/mode": raises(lambda n: n.jnp.asarray(F3).at[0].set(1.0, mode="nonsense"),
                          "nonsense"),
    "item/size": raises(lambda n: n.jnp.asarray(F3).item(), "size"),
}

# ---------------------------------------------------------------------------------------
# lax: shapes, dtypes and parameters of the primitives
# ---------------------------------------------------------------------------------------

LAX = {
    "lax.add/shapes": raises(lambda n: n.lax.add(F3, F4), "(3,)", "(4,)"),
    "lax.add/dtypes": raises(lambda n: n.lax.add(F3, I3), "float32", "int32"),
    "lax.mul/dtypes": raises(lambda n: n.lax.mul(I3, U3), "int32", "uint8"),
    "lax.sub/ranks": raises(lambda n: n.lax.sub(M23, F3), "{1, 2}"),
    "lax.max/bool_float": raises(lambda n: n.lax.max(B3, F3), "bool", "float32"),
    "lax.div/dtypes": raises(lambda n: n.lax.div(F3, C3), "float32", "complex64"),
    "lax.pow/int_int": raises(lambda n: n.lax.pow(I3, I3), "int32"),
    "lax.atan2/int": raises(lambda n: n.lax.atan2(I3, I3), "int32"),
    "lax.sqrt/int": raises(lambda n: n.lax.sqrt(I3), "int32"),
    "lax.sin/bool": raises(lambda n: n.lax.sin(B3), "bool"),
    "lax.exp/int": raises(lambda n: n.lax.exp(I3), "int32"),
    "lax.log/uint": raises(lambda n: n.lax.log(U3), "uint8"),
    "lax.floor/int": raises(lambda n: n.lax.floor(I3), "int32"),
    "lax.neg/bool": raises(lambda n: n.lax.neg(B3), "bool"),
    "lax.abs/bool": raises(lambda n: n.lax.abs(B3), "bool"),
    "lax.sign/bool": raises(lambda n: n.lax.sign(B3), "bool"),
    "lax.not_/float": raises(lambda n: n.lax.bitwise_not(F3), "float32"),
    "lax.and_/float": raises(lambda n: n.lax.bitwise_and(F3, F3), "float32"),
    "lax.shift_left/float": raises(lambda n: n.lax.shift_left(F3, F3), "float32"),
    "lax.population_count/float": raises(lambda n: n.lax.population_count(F3), "float32"),
    "lax.rem/complex": raises(lambda n: n.lax.rem(C3, C3), "complex64"),
    "lax.lt/complex": raises(lambda n: n.lax.lt(C3, C3), "complex64"),
    "lax.integer_pow/int_negative": raises(lambda n: n.lax.integer_pow(I3, -1),
                                           "integer_pow", "int32[3]", "-1"),
    "lax.integer_pow/float_exponent": raises(lambda n: n.lax.integer_pow(F3, 1.5), "float"),
    "lax.convert_element_type/nonsense": raises(
        lambda n: n.lax.convert_element_type(F3, "nonsense"), "nonsense"),
    "lax.reshape/size": raises(lambda n: n.lax.reshape(n.jnp.zeros(6), (4,)), "(4,)", "6"),
    "lax.reshape/dimensions": raises(lambda n: n.lax.reshape(M23, (6,), (0, 0)), "(0, 0)"),
    "lax.broadcast_in_dim/dims": raises(lambda n: n.lax.broadcast_in_dim(F3, (3, 4), (1,)),
                                        "(3,)", "(3, 4)"),
    "lax.broadcast_in_dim/rank": raises(lambda n: n.lax.broadcast_in_dim(M23, (6,), (0,)),
                                        "(0,)", "ndim 2"),
    "lax.broadcast_in_dim/order": raises(
        lambda n: n.lax.broadcast_in_dim(M23, (2, 3, 4), (1, 0)), "(1, 0)"),
    "lax.broadcast/negative": raises(lambda n: n.lax.broadcast(F3, (-1,)), "-1"),
    "lax.slice/limit": raises(lambda n: n.lax.slice(F3, (0,), (5,)), "(5,)", "(3,)"),
    "lax.slice/start_after_limit": raises(lambda n: n.lax.slice(F3, (2,), (1,)), "(2,)"),
    "lax.slice/rank": raises(lambda n: n.lax.slice(M23, (0,), (1,)), "(0,)"),
    "lax.slice_in_dim/axis": raises(lambda n: n.lax.slice_in_dim(F3, 0, 1, axis=1),
                                    "out of range"),
    "lax.dynamic_slice/size": raises(lambda n: n.lax.dynamic_slice(F3, (0,), (5,)), "(5,)"),
    "lax.dynamic_slice/rank": raises(lambda n: n.lax.dynamic_slice(M23, (0,), (1,)), "2"),
    "lax.dynamic_slice/empty": raises(lambda n: n.lax.dynamic_slice(E0, (0,), (1,)), "(1,)",
                                      "(0,)"),
    "lax.dynamic_slice/float_start": raises(lambda n: n.lax.dynamic_slice(F3, (0.5,), (1,)),
                                            "float"),
    "lax.dynamic_update_slice/big": raises(
        lambda n: n.lax.dynamic_update_slice(F3, F4, (0,)), "(4,)", "(3,)"),
    "lax.dynamic_update_slice/dtype": raises(
        lambda n: n.lax.dynamic_update_slice(F3, I3, (0,)), "float32", "int32"),
    "lax.dynamic_index_in_dim/empty": raises(lambda n: n.lax.dynamic_index_in_dim(E0, 0),
                                             "(0,)"),
    "lax.concatenate/shapes": raises(lambda n: n.lax.concatenate([M23, M34], 0), "(2, 3)",
                                     "(3, 4)"),
    "lax.concatenate/dimension": raises(lambda n: n.lax.concatenate([F3, F3], 1), "1"),
    "lax.concatenate/dtypes": raises(lambda n: n.lax.concatenate([F3, I3], 0), "float32",
                                     "int32"),
    "lax.concatenate/empty": raises(lambda n: n.lax.concatenate([], 0), "non-empty"),
    "lax.transpose/perm": raises(lambda n: n.lax.transpose(M23, (0, 0)), "(0, 0)"),
    "lax.transpose/length": raises(lambda n: n.lax.transpose(M23, (0,)), "(0,)"),
    "lax.squeeze/not_one": raises(lambda n: n.lax.squeeze(M23, (0,)), "(2, 3)"),
    "lax.squeeze/axis": raises(lambda n: n.lax.squeeze(M23, (4,)), "4"),
    "lax.expand_dims/axis": raises(lambda n: n.lax.expand_dims(F3, (4,)), "4"),
    "lax.rev/dimension": raises(lambda n: n.lax.rev(F3, (1,)), "(1,)"),
    "lax.pad/config_length": raises(lambda n: n.lax.pad(F3, 0.0, [(1, 1, 0), (1, 1, 0)]),
                                    "padding_config", "(3,)"),
    "lax.pad/negative_interior": raises(lambda n: n.lax.pad(F3, 0.0, [(1, 1, -1)]), "-1"),
    "lax.pad/dtype": raises(lambda n: n.lax.pad(F3, np.int32(0), [(1, 1, 0)]), "int32",
                            "float32"),
    "lax.pad/too_negative": raises(lambda n: n.lax.pad(F3, 0.0, [(-4, 0, 0)]), "-4"),
    "lax.select/shapes": raises(lambda n: n.lax.select(B3, F4, F4), "(3,)", "(4,)"),
    "lax.select/predicate": raises(lambda n: n.lax.select(F3, F3, F3), "float32"),
    "lax.select/dtypes": raises(lambda n: n.lax.select(B3, F3, I3), "float32", "int32"),
    "lax.select_n/no_cases": raises(lambda n: n.lax.select_n(B3), "at least one case"),
    "lax.clamp/shapes": raises(lambda n: n.lax.clamp(F4, F3, F3), "(4,)", "(3,)"),
    "lax.clamp/dtypes": raises(lambda n: n.lax.clamp(I3, F3, F3), "int32", "float32"),
    "lax.dot/shapes": raises(lambda n: n.lax.dot(F3, F4), "(3,)", "(4,)"),
    "lax.dot_general/contracting": raises(
        lambda n: n.lax.dot_general(M23, M34, (((1,), (1,)), ((), ()))), "(3,)", "(4,)"),
    "lax.dot_general/batch": raises(
        lambda n: n.lax.dot_general(M23, M34, (((1,), (0,)), ((0,), (1,)))), "batch"),
    "lax.dot_general/repeated": raises(
        lambda n: n.lax.dot_general(M23, M23, (((1, 1), (1, 1)), ((), ()))), "(1, 1)"),
    "lax.reduce_sum/axes": raises(lambda n: n.lax.reduce_sum(F3, (1,)), "(1,)"),
    "lax.reduce_max/repeated": raises(lambda n: n.lax.reduce_max(M23, (0, 0)), "(0, 0)"),
    "lax.argmax/axis": raises(lambda n: n.lax.argmax(F3, 1, n.jnp.int32), "1"),
    "lax.argmax/index_dtype": raises(lambda n: n.lax.argmax(F3, 0, n.jnp.float32),
                                     "float32"),
    "lax.cumsum/axis": raises(lambda n: n.lax.cumsum(F3, 1), "1"),
    "lax.sort/dimension": raises(lambda n: n.lax.sort(F3, dimension=1), "1"),
    "lax.sort/shapes": raises(lambda n: n.lax.sort((F3, F4)), "(3,)", "(4,)"),
    "lax.top_k/k": raises(lambda n: n.lax.top_k(F3, 5), "5"),
    "lax.top_k/negative": raises(lambda n: n.lax.top_k(F3, -1), "-1"),
    "lax.iota/negative": raises(lambda n: n.lax.iota(n.jnp.int32, -1), "-1"),
    "lax.iota/bool": raises(lambda n: n.lax.iota(n.jnp.bool_, 3), "bool"),
    "lax.full/shape": raises(lambda n: n.lax.full((2,), F3), "(3,)"),
    "lax.full/negative": raises(lambda n: n.lax.full((-2,), 0.0), "-2"),
    "lax.gather/slice_sizes": raises(
        lambda n: n.lax.gather(F3, np.zeros((1, 1), np.int32), n.lax.GatherDimensionNumbers(
            offset_dims=(), collapsed_slice_dims=(0,), start_index_map=(0,)), (4,)), "(4,)"),
    "lax.cond/pred_shape": raises(lambda n: n.lax.cond(B3, lambda: 1.0, lambda: 2.0),
                                  "(3,)"),
    "lax.cond/branch_types": raises(
        lambda n: n.lax.cond(True, lambda: n.jnp.zeros(3), lambda: n.jnp.zeros(4)),
        "float32[3]", "float32[4]"),
    "lax.cond/branch_dtypes": raises(
        lambda n: n.lax.cond(True, lambda: n.jnp.float32(1), lambda: n.jnp.int32(1)),
        "float32", "int32"),
    "lax.cond/branch_trees": raises(
        lambda n: n.lax.cond(True, lambda: (1.0, 2.0), lambda: 1.0), "tuple"),
    "lax.cond/operand_count": raises(lambda n: n.lax.cond(True, lambda x: x, lambda: 1.0, 2.0),
                                     "positional"),
    "lax.switch/index_dtype": raises(lambda n: n.lax.switch(1.0, [lambda: 1.0]), "float32"),
    "lax.switch/no_branches": raises(lambda n: n.lax.switch(0, []), "Empty branch"),
    "lax.switch/branch_types": raises(
        lambda n: n.lax.switch(0, [lambda: n.jnp.zeros(2), lambda: n.jnp.zeros(3)]),
        "float32[2]", "float32[3]"),
    "lax.scan/carry_type": raises(
        lambda n: n.lax.scan(lambda c, x: (c + x, x), n.jnp.int32(0), F3), "int32", "float32"),
    "lax.scan/carry_shape": raises(
        lambda n: n.lax.scan(lambda c, x: (n.jnp.stack([c, c]), x), 0.0, F3), "float32[2]"),
    "lax.scan/carry_tree": raises(
        lambda n: n.lax.scan(lambda c, x: ((c, c), x), 0.0, F3), "tuple"),
    "lax.scan/xs_lengths": raises(lambda n: n.lax.scan(lambda c, x: (c, x), 0.0, (F3, F4)),
                                  "3", "4"),
    "lax.scan/length": raises(lambda n: n.lax.scan(lambda c, x: (c, x), 0.0, F3, length=4),
                              "3", "4"),
    "lax.scan/no_length": raises(lambda n: n.lax.scan(lambda c, x: (c, x), 0.0, None),
                                 "length"),
    "lax.scan/scalar_xs": raises(lambda n: n.lax.scan(lambda c, x: (c, x), 0.0, 1.0),
                                 "no leading axis"),
    "lax.scan/body_output": raises(lambda n: n.lax.scan(lambda c, x: c, 0.0, F3), "pair"),
    "lax.while_loop/carry_type": raises(
        lambda n: n.lax.while_loop(lambda c: c < 3, lambda c: c + 1.5, n.jnp.int32(0)), "int32",
        "float32"),
    "lax.while_loop/cond_shape": raises(
        lambda n: n.lax.while_loop(lambda c: c < 3, lambda c: c + 1, n.jnp.zeros(2)),
        "bool[2]"),
    "lax.while_loop/cond_dtype": raises(
        lambda n: n.lax.while_loop(lambda c: c, lambda c: c - 1, 3.0), "float32"),
    "lax.while_loop/carry_tree": raises(
        lambda n: n.lax.while_loop(lambda c: c[0] < 3, lambda c: c[0], (0, 0)), "tuple"),
    "lax.fori_loop/carry_type": raises(
        lambda n: n.lax.fori_loop(0, 3, lambda i, c: c + 0.5, n.jnp.int32(0)), "int32",
        "float32"),
    "lax.map/length": raises(lambda n: n.lax.map(lambda x: x, (F3, F4)), "3", "4"),
}

# ---------------------------------------------------------------------------------------
# Transformations: what they are given, and what the function returns
# ---------------------------------------------------------------------------------------

_TRANSFORMATIONS_OF_ONE = ["jit", "grad", "value_and_grad", "jacfwd", "jacrev", "hessian"]

TRANSFORMATIONS = {
    **{f"{name}/not_callable": raises(lambda n, name=name: getattr(n.jax, name)(1),
                                      "Expected a callable value, got 1")
       for name in _TRANSFORMATIONS_OF_ONE},
    "jit/none": raises(lambda n: n.jax.jit(None), "got None"),
    "jit/not_callable_with_options": raises(lambda n: n.jax.jit(1, static_argnums=0), "got 1"),
    "jvp/not_callable": raises(lambda n: n.jax.jvp(1, (1.0,), (1.0,)), "got 1"),
    "vjp/not_callable": raises(lambda n: n.jax.vjp(1, 1.0), "got 1"),
    "linearize/not_callable": raises(lambda n: n.jax.linearize(1, 1.0), "got 1"),
    "make_jaxpr/not_callable": raises(lambda n: n.jax.make_jaxpr(1), "callable"),
    "grad/not_callable_string": raises(lambda n: n.jax.grad("f"), "got f"),
    "grad/non_scalar": raises(lambda n: n.jax.grad(lambda x: x)(F3), "scalar", "(3,)"),
    "grad/int_input": raises(lambda n: n.jax.grad(lambda x: x * 1.0)(1), "int32"),
    "grad/int_array_input": raises(lambda n: n.jax.grad(_sum)(I3), "int32"),
    "grad/bool_input": raises(lambda n: n.jax.grad(_sum)(B3), "bool"),
    "grad/int_output": raises(lambda n: n.jax.grad(lambda x: n.jnp.int32(1))(1.0), "int32"),
    "grad/complex_output": raises(lambda n: n.jax.grad(lambda x: x * 1j)(1.0), "complex"),
    "grad/tuple_output": raises(lambda n: n.jax.grad(lambda x: (x, x))(1.0), "scalar-output"),
    "grad/argnums_range": raises(lambda n: n.jax.grad(lambda x: x, argnums=1)(1.0), "1"),
    "grad/argnums_negative": raises(lambda n: n.jax.grad(lambda x: x, argnums=-2)(1.0), "-2"),
    "grad/argnums_float": raises(lambda n: n.jax.grad(lambda x: x, argnums=0.5)(1.0), "float"),
    "grad/has_aux_not_pair": raises(lambda n: n.jax.grad(lambda x: x, has_aux=True)(1.0),
                                    "two-element tuple"),
    "grad/string_input": raises(lambda n: n.jax.grad(lambda x: 1.0)("a"), "'a'"),
    "grad/no_args": raises(lambda n: n.jax.grad(lambda: 1.0)(), "0"),
    "value_and_grad/non_scalar": raises(lambda n: n.jax.value_and_grad(lambda x: x)(F3),
                                        "(3,)"),
    "jacfwd/int_input": raises(lambda n: n.jax.jacfwd(lambda x: x)(I3), "int32"),
    "jacrev/int_input": raises(lambda n: n.jax.jacrev(lambda x: x)(I3), "int32"),
    "jacrev/int_output": raises(lambda n: n.jax.jacrev(lambda x: n.jnp.int32(1))(1.0),
                                "int32"),
    "hessian/int_input": raises(lambda n: n.jax.hessian(_sum)(I3), "int32"),
    "jacfwd/argnums": raises(lambda n: n.jax.jacfwd(lambda x: x, argnums=3)(1.0), "3"),
    "jvp/not_tuples": raises(lambda n: n.jax.jvp(lambda x: x, 1.0, 1.0), "tuples or lists"),
    "jvp/trees": raises(lambda n: n.jax.jvp(lambda x, y: x, (1.0, 2.0), (1.0,)),
                        "tree structure"),
    "jvp/dtypes": raises(lambda n: n.jax.jvp(lambda x: x, (1.0,), (1,)), "float32", "int32"),
    "jvp/shapes": raises(lambda n: n.jax.jvp(lambda x: x, (F3,), (F4,)), "(3,)", "(4,)"),
    "jvp/wrong_arity": raises(lambda n: n.jax.jvp(lambda x: x, (1.0, 2.0), (1.0, 2.0)),
                              "positional"),
    "vjp/cotangent_shape": raises(lambda n: n.jax.vjp(n.jnp.sin, F3)[1](F4), "float32[4]",
                                  "float32[3]"),
    "vjp/cotangent_dtype": raises(lambda n: n.jax.vjp(n.jnp.sin, F3)[1](I3), "int32"),
    "vjp/cotangent_tree": raises(lambda n: n.jax.vjp(n.jnp.sin, F3)[1]((F3, F3)),
                                 "tree structure"),
    "linearize/tangent_shape": raises(lambda n: n.jax.linearize(n.jnp.sin, F3)[1](F4),
                                      "float32[4]", "float32[3]"),
    "linearize/tangent_tree": raises(lambda n: n.jax.linearize(n.jnp.sin, F3)[1](F3, F3),
                                     "inconsistent"),
    "jit/static_unhashable": raises(
        lambda n: n.jax.jit(lambda x, s: x, static_argnums=1)(1.0, [1]), "unhashable",
        "list"),
    "jit/static_argnames_unhashable": raises(
        lambda n: n.jax.jit(lambda x, s: x, static_argnames="s")(1.0, s={}), "dict"),
    "jit/string_argument": raises(lambda n: n.jax.jit(lambda x: x)("a"), "str"),
    "jit/object_argument": raises(lambda n: n.jax.jit(lambda x: x)(object()), "object"),
    "jit/string_output": raises(lambda n: n.jax.jit(lambda x: "a")(1.0), "str"),
    "jit/bool_of_tracer": raises(lambda n: n.jax.jit(lambda x: 1.0 if x > 0 else 2.0)(1.0),
                                 "bool"),
    "jit/int_of_tracer": raises(lambda n: n.jax.jit(lambda x: int(x))(1.0), "float32[]"),
    "jit/float_of_tracer": raises(lambda n: n.jax.jit(lambda x: float(x))(1.0), "float32[]"),
    "jit/numpy_of_tracer": raises(lambda n: n.jax.jit(lambda x: np.asarray(x))(F3),
                                  "float32[3]"),
    "jit/range_of_tracer": raises(lambda n: n.jax.jit(lambda k: list(range(k)))(3), "int32[]"),
    "jit/too_many_arguments": raises(lambda n: n.jax.jit(lambda x: x)(1.0, 2.0), "positional"),
    "jit/missing_argument": raises(lambda n: n.jax.jit(lambda x, y: x)(1.0), "y"),
    "jit/static_argnums_range": raises(
        lambda n: n.jax.jit(lambda x: x, static_argnums=3)(1.0), "3"),
    "grad/float_of_tracer": raises(lambda n: n.jax.grad(lambda x: float(x) * x)(1.0),
                                   "float32[]", "float"),
    "grad/complex_of_tracer": raises(lambda n: n.jax.grad(lambda x: complex(x).real)(1.0),
                                     "float32[]", "complex"),
    "jvp/numpy_of_tracer": raises(lambda n: n.jax.jvp(np.sin, (1.0,), (1.0,)), "float32[]"),
    "grad/sum_where_numpy": raises(
        lambda n: n.jax.grad(lambda x: n.jnp.sum(x, where=np.asarray(x) > 0))(F3), "float32[3]"),
    "grad/numpy_of_tracer": raises(lambda n: n.jax.grad(lambda x: np.sin(x))(1.0),
                                   "float32[]"),
    "custom_jvp/no_rule": raises(lambda n: n.jax.custom_jvp(lambda x: x)(1.0), "defjvp"),
    "custom_vjp/no_rule": raises(lambda n: n.jax.custom_vjp(lambda x: x)(1.0), "defvjp"),
    "custom_jvp/rule_shape": raises(lambda n: _custom_jvp_wrong_tangent(n), "float32[3]"),
    "custom_vjp/bwd_count": raises(lambda n: _custom_vjp_wrong_bwd(n), "bwd"),
    "checks/tracer_leak_into_jnp": raises(lambda n: n.jax.jit(lambda x: n.jnp.zeros(x))(3),
                                          "int32[]"),
}


def _custom_jvp_wrong_tangent(n: Any) -> Any:
    f = n.jax.custom_jvp(lambda x: x)
    f.defjvp(lambda primals, tangents: (primals[0], n.jnp.zeros(3)))
    return n.jax.jvp(f, (1.0,), (1.0,))


def _custom_vjp_wrong_bwd(n: Any) -> Any:
    f = n.jax.custom_vjp(lambda x: x)
    f.defvjp(lambda x: (x, None), lambda res, g: (g, g))
    return n.jax.grad(f)(1.0)


# ---------------------------------------------------------------------------------------
# tree_util and devices
# ---------------------------------------------------------------------------------------

TREES_AND_DEVICES = {
    "tree_map/structures": raises(
        lambda n: n.jax.tree_util.tree_map(lambda a, b: a, [1, 2], [1]), "list"),
    "tree_map/dict_keys": raises(
        lambda n: n.jax.tree_util.tree_map(lambda a, b: a, {"a": 1}, {"b": 1}), "keys"),
    "tree_map/types": raises(
        lambda n: n.jax.tree_util.tree_map(lambda a, b: a, (1, 2), [1, 2]), "tuple"),
    "tree_map/none_vs_leaf": raises(
        lambda n: n.jax.tree_util.tree_map(lambda a, b: a, [None], [1]), "None"),
    "tree_unflatten/too_few": raises(
        lambda n: n.jax.tree_util.tree_unflatten(n.jax.tree_util.tree_structure((1, 2)), [1]),
        "2", "1"),
    "tree_unflatten/too_many": raises(
        lambda n: n.jax.tree_util.tree_unflatten(n.jax.tree_util.tree_structure([1]), [1, 2]),
        "1", "2"),
    "tree_transpose/structure": raises(
        lambda n: n.jax.tree_util.tree_transpose(
            n.jax.tree_util.tree_structure([0, 0]), n.jax.tree_util.tree_structure((0, 0)),
            [(1, 2), (3,)]), "Mismatch"),
    "tree_reduce/empty": raises(
        lambda n: n.jax.tree_util.tree_reduce(lambda a, b: a + b, []), "initial"),
    "tree_map/not_callable": raises(lambda n: n.jax.tree_util.tree_map(1, [1]), "int"),
    "tree_map/three_structures": raises(
        lambda n: n.jax.tree_util.tree_map(lambda a, b, c: a, [1], [1], [1, 2]), "[1, 2]"),
    "tree_map/dict_vs_list": raises(
        lambda n: n.jax.tree_util.tree_map(lambda a, b: a, {"a": 1}, [1]), "dict", "[1]"),
    "tree_unflatten/not_a_treedef": raises(
        lambda n: n.jax.tree_util.tree_unflatten(1, [1]), "unflatten"),
    "register_pytree_node/duplicate": raises(
        lambda n: n.jax.tree_util.register_pytree_node(tuple, lambda t: (t, None),
                                                       lambda a, c: c), "tuple"),
    "make_jaxpr/string_argument": raises(lambda n: n.jax.make_jaxpr(lambda x: x)("a"),
                                         "abstract array"),
    "make_jaxpr/static_unhashable": raises(
        lambda n: n.jax.make_jaxpr(lambda x, s: x, static_argnums=1)(1.0, []), "list"),
    "jit.lower/string_argument": raises(lambda n: n.jax.jit(lambda x: x).lower("a"),
                                        "abstract array"),
    "jvp/float0_tangent_of_float": raises(
        lambda n: n.jax.jvp(lambda x: x, (1.0,), (np.zeros((), n.jax.dtypes.float0),)),
        "float0"),
    "device_put/not_a_device": raises(lambda n: n.jax.device_put(F3, "cpu"), "cpu"),
    "device_put/int_device": raises(lambda n: n.jax.device_put(F3, 0), "0"),
    "devices/unknown_backend": raises(lambda n: n.jax.devices("nonsense"), "nonsense"),
    "devices/gpu": raises(lambda n: n.jax.devices("gpu"), "gpu"),
    "local_devices/unknown_backend": raises(lambda n: n.jax.local_devices(backend="tpu"),
                                            "tpu"),
    "local_device_count/unknown_backend": raises(
        lambda n: n.jax.local_device_count("nonsense"), "Unknown backend nonsense",
        "Available backends are ['cpu']"),
    "device_count/gpu": raises(lambda n: n.jax.device_count(backend="gpu"),
                               "no platforms that are instances of gpu"),
    "device_put/string": raises(lambda n: n.jax.device_put("a"), "'a'"),
}

ERRORS = {**JNP_SHAPES, **JNP_AXES, **JNP_DTYPES, **JNP_INDEXING, **LAX, **TRANSFORMATIONS,
          **TREES_AND_DEVICES}

# ---------------------------------------------------------------------------------------
# Edge cases where JAX gives an answer: minijax must give the same one
# ---------------------------------------------------------------------------------------

VALUES: dict[str, Program] = {
    "sign/negative_zero": lambda n: n.jnp.sign(-0.0),
    "sign/negative_zero_array": lambda n: n.jnp.sign(np.array([-0.0, 0.0], np.float32)),
    "sqrt/negative": lambda n: n.jnp.sqrt(-1.0),
    "log/zero": lambda n: n.jnp.log(np.array([0.0, -1.0], np.float32)),
    "divide/by_zero": lambda n: n.jnp.divide(F3, 0.0),
    "arcsin/out_of_domain": lambda n: n.jnp.arcsin(2.0),
    "exp/overflow": lambda n: n.jnp.exp(np.float32(100)),
    "float16/overflow": lambda n: n.jnp.asarray(60000, n.jnp.float16) * 2,
    "int32/wrap": lambda n: n.jnp.asarray(2**31 - 1, n.jnp.int32) + 1,
    "uint8/wrap": lambda n: n.jnp.asarray(U3) - 5,
    "int8/negate_min": lambda n: -n.jnp.asarray(-128, n.jnp.int8),
    "maximum/nan": lambda n: n.jnp.maximum(np.array([np.nan, 1], np.float32), 0.0),
    "max/nan": lambda n: n.jnp.max(np.array([1, np.nan], np.float32)),
    "argmax/nan": lambda n: n.jnp.argmax(np.array([1, np.nan, 3], np.float32)),
    "sort/nan": lambda n: n.jnp.sort(np.array([np.nan, 1, -np.inf], np.float32)),
    "equal/nan": lambda n: n.jnp.equal(np.float32(np.nan), np.nan),
    "equal/weak_scalars": lambda n: n.jnp.equal(np.nan, np.nan),
    "less/weak_scalars": lambda n: n.jnp.less(1.0, 2),
    "lax.eq/weak_scalars": lambda n: n.lax.eq(1.0, 1.0),
    "isnan/weak_scalar": lambda n: n.jnp.isnan(1.0),
    "and/weak_bool_and_bool": lambda n: n.jnp.equal(1.0, 1.0) & True,
    "equal/weak_bools": lambda n: n.jnp.equal(n.jnp.equal(1.0, 1.0), n.jnp.equal(1.0, 1.0)),
    "where/weak_bool": lambda n: n.jnp.where(n.jnp.equal(1.0, 1.0), 1, 2),
    "inf_minus_inf": lambda n: n.jnp.asarray(np.inf) - np.inf,
    "median/tuple_axes": lambda n: n.jnp.median(M34.reshape(2, 3, 2), axis=(0, 2)),
    "quantile/tuple_axes_keepdims": lambda n: n.jnp.quantile(
        M34.reshape(2, 3, 2), np.array([0.25, 0.5], np.float32), axis=(2, 0), keepdims=True),
    "median/no_axes": lambda n: n.jnp.median(M23, axis=()),
    "sum/empty": lambda n: n.jnp.sum(E0),
    "prod/empty": lambda n: n.jnp.prod(E0),
    "mean/empty": lambda n: n.jnp.mean(E0),
    "var/empty": lambda n: n.jnp.var(E03, axis=0),
    "sum/empty_axis": lambda n: n.jnp.sum(E03, axis=0),
    "max/empty_initial": lambda n: n.jnp.max(E0, initial=-1.0),
    "any/empty": lambda n: n.jnp.any(E0),
    "all/empty": lambda n: n.jnp.all(E0),
    "cumsum/empty": lambda n: n.jnp.cumsum(E0),
    "sort/empty": lambda n: n.jnp.sort(E03, axis=0),
    "matmul/empty": lambda n: n.jnp.matmul(E30, E03),
    "outer/shapes_that_do_not_broadcast": lambda n: n.jnp.outer(F4, M23),
    "multiply/ranks_that_broadcast": lambda n: n.jnp.multiply(F4, M34),
    "concatenate/empty": lambda n: n.jnp.concatenate([E03, M23[:, :3]]),
    "reshape/empty": lambda n: n.jnp.reshape(_a(n, E03), (-1,)),
    "reshape/empty_minus_one": lambda n: n.jnp.reshape(_a(n, E03), (-1, 3)),
    "getitem/out_of_range_clamps": lambda n: n.jnp.asarray(F3)[5],
    "getitem/negative_out_of_range": lambda n: n.jnp.asarray(F3)[-5],
    "getitem/empty_slice": lambda n: n.jnp.asarray(E0)[1:3],
    "getitem/empty_mask": lambda n: n.jnp.asarray(E0)[np.array([], bool)],
    "getitem/empty_index_array": lambda n: n.jnp.asarray(E0)[n.jnp.array([], n.jnp.int32)],
    "getitem/empty_rows": lambda n: n.jnp.asarray(E03)[n.jnp.array([], n.jnp.int32)],
    "getitem/no_rows_of_matrix": lambda n: n.jnp.asarray(M23)[n.jnp.array([], n.jnp.int32)],
    "getitem/array_into_empty_columns": lambda n: n.jnp.asarray(E30)[n.jnp.array([0, 1])],
    "getitem/false": lambda n: n.jnp.asarray(F3)[False],
    "at.set/out_of_range_dropped": lambda n: n.jnp.asarray(F3).at[5].set(9.0),
    "at.set/array_into_empty": lambda n: n.jnp.asarray(E0).at[n.jnp.array([0, 1])].set(2.0),
    "at.set/array_into_empty_clip": lambda n: n.jnp.asarray(E0).at[n.jnp.array([0])].set(
        2.0, mode="clip"),
    "at.add/empty_rows": lambda n: n.jnp.asarray(E03).at[:, 0].add(1.0),
    "at.get/out_of_range_fill": lambda n: n.jnp.asarray(F3).at[5].get(mode="fill",
                                                                       fill_value=-1.0),
    "take/empty_indices": lambda n: n.jnp.take(E0, n.jnp.array([], n.jnp.int32)),
    "take/empty_indices_axis": lambda n: n.jnp.take(n.jnp.zeros((2, 0)),
                                                    n.jnp.array([], n.jnp.int32), axis=1),
    "take/no_indices_of_vector": lambda n: n.jnp.take(F3, n.jnp.array([], n.jnp.int32)),
    "take/empty_other_axis": lambda n: n.jnp.take(n.jnp.zeros((2, 0)), n.jnp.array([0]),
                                                  axis=0),
    "take/out_of_range_fills": lambda n: n.jnp.take(F3, n.jnp.array([7])),
    "take_along_axis/empty_axis": lambda n: n.jnp.take_along_axis(
        E0, n.jnp.array([0]), axis=0),
    "take_along_axis/empty_axis_2d": lambda n: n.jnp.take_along_axis(
        E03, n.jnp.zeros((1, 3), n.jnp.int32), axis=0),
    "dynamic_slice/clamps": lambda n: n.lax.dynamic_slice(F3, (5,), (2,)),
    "dynamic_update_slice/clamps": lambda n: n.lax.dynamic_update_slice(F3, F3[:2], (5,)),
    "integer_pow/float_negative": lambda n: n.lax.integer_pow(np.array([2.0], np.float32), -1),
    "power/int_array_exponents": lambda n: n.jnp.power(I3, n.jnp.array([0, 1, 2])),
    "power/int_zero_exponent": lambda n: n.jnp.power(I3, 0),
    "zeros/empty_shape": lambda n: n.jnp.zeros((0, 5)),
    "arange/empty": lambda n: n.jnp.arange(5, 0),
    "linspace/zero": lambda n: n.jnp.linspace(0.0, 1.0, 0),
    "eye/zero": lambda n: n.jnp.eye(0),
    "grad/allow_int_float0": lambda n: _shape_dtype(n.jax.grad(lambda x: 1.0, allow_int=True)(1)),
    "grad/zero_output": lambda n: n.jax.grad(lambda x: 0.0)(1.0),
    "grad/bool_of_tracer": lambda n: n.jax.grad(lambda x: x if x > 0 else -x)(1.0),
    "grad/int_of_tracer": lambda n: n.jax.grad(lambda x: int(x) * x)(2.0),
    "grad/item_of_tracer": lambda n: n.jax.grad(lambda x: x.item() * x)(2.0),
    "grad/concrete_mask": lambda n: n.jax.grad(lambda x: x[x > 1].sum())(F3),
    "grad/concrete_mask_update": lambda n: n.jax.grad(lambda x: x.at[x > 1].set(0.0).sum())(F3),
    "grad/complex_input": lambda n: n.jax.grad(lambda x: x.real)(n.jnp.complex64(1)),
    "grad/empty_array": lambda n: n.jax.grad(lambda x: x.sum())(E0),
    "jvp/int_primal_float0": lambda n: n.jax.jvp(lambda x: x * 2, (n.jnp.int32(1),),
                                                 (np.zeros((), n.jax.dtypes.float0),))[0],
    "vjp/int_primal": lambda n: _shape_dtype(n.jax.vjp(lambda x: x * 2, n.jnp.int32(1))[1](
        np.zeros((), n.jax.dtypes.float0))[0]),
    "jit/empty_array": lambda n: n.jax.jit(lambda x: x * 2)(E03),
    "jit/none_output": lambda n: n.jax.jit(lambda x: None)(1.0),
    "jit/empty_tuple": lambda n: n.jax.jit(lambda: ())(),
    "scan/weak_carry_promotes": lambda n: n.lax.scan(lambda c, x: (c + x, x), 0, F3),
    "while_loop/weak_carry": lambda n: n.lax.while_loop(lambda c: c < 3, lambda c: c + 1.5, 0),
    "fori_loop/weak_carry": lambda n: n.lax.fori_loop(0, 3, lambda i, c: c + 0.5, 0),
    "fori_loop/float_bounds": lambda n: n.lax.fori_loop(0.0, 3.0, lambda i, c: c + 1, 0),
    "cond/float_predicate": lambda n: n.lax.cond(1.0, lambda: 1.0, lambda: 2.0),
    "dot/mixed_dtypes": lambda n: n.lax.dot(F3, I3),
    "bitcast/float64_is_float32": lambda n: n.lax.bitcast_convert_type(F3, n.jnp.float64),
    "array/negative_ndmin": lambda n: n.jnp.array(F3, ndmin=-1),
    "scan/length_zero": lambda n: n.lax.scan(lambda c, x: (c + x, x), 0.0, E0),
    "fori_loop/empty_range": lambda n: n.lax.fori_loop(3, 0, lambda i, c: c + 1.0, 0.0),
    "cond/numpy_bool": lambda n: n.lax.cond(np.bool_(True), lambda: 1.0, lambda: 2.0),
    "tree_map/none_leaves": lambda n: n.jax.tree_util.tree_map(lambda x: x, [None, 1.0]),
    "tree_leaves/empty": lambda n: n.jax.tree_util.tree_leaves({}),
    "device_put/none_device": lambda n: n.jax.device_put(F3, None),
    "device_put/tree": lambda n: n.jax.device_put([F3, 1.0]),
    "devices/cpu": lambda n: len(n.jax.devices("cpu")),
    "devices/default": lambda n: len(n.jax.devices(None)),
    "local_device_count/cpu": lambda n: n.jax.local_device_count("cpu"),
    "device_count/default": lambda n: n.jax.device_count(backend=None),
    "default_backend": lambda n: n.jax.default_backend(),
    "block_until_ready/not_an_array": lambda n: n.jax.block_until_ready("a"),
    "block_until_ready/tree": lambda n: n.jax.block_until_ready([n.jnp.zeros(2), 1]),
    "tree_all/falsy_leaf": lambda n: n.jax.tree_util.tree_all([1, 0]),
    "tree_map/tuple_prefix": lambda n: n.jax.tree_util.tree_map(lambda a, b: a, (1,), ((1,),)),
    "tree_structure/none_is_no_leaf": lambda n: n.jax.tree_util.tree_structure(
        {"a": [1, 2], "b": None}).num_leaves,
    "tree_reduce/empty_with_initial": lambda n: n.jax.tree_util.tree_reduce(
        lambda a, b: a + b, [], 0),
    "custom_jvp/defjvp_returns_rule": lambda n: n.jax.custom_jvp(lambda x: x).defjvp(1),
}

# ---------------------------------------------------------------------------------------
# Deliberate differences. Each entry: the program, and why minijax must differ. The test
# checks that minijax and JAX still disagree on each one, so that the list stays true.
# ---------------------------------------------------------------------------------------

DIFFERENCES: dict[str, tuple[Program, str]] = {
    "lax.reshape/size_traced": (
        lambda n: n.jax.make_jaxpr(lambda x: n.lax.reshape(x, (4,)))(n.jnp.zeros(6)),
        "JAX records a reshape that changes the size and only its compiler rejects it "
        "(ValueError, from MLIR's verifier); minijax checks when it traces, so make_jaxpr "
        "raises the same ValueError instead of printing a program that cannot run.",
    ),
    "jnp.reshape/numpy_input": (
        lambda n: n.jnp.reshape(M23, (3, 2)),
        "JAX's jnp.reshape hands a NumPy array to NumPy's own reshape method: the result is "
        "a NumPy array and bad shapes raise NumPy's ValueError. minijax's jnp functions "
        "always return minijax Arrays.",
    ),
    "jnp.split/axis": (
        lambda n: n.jnp.split(F3, 3, axis=1),
        "JAX fails inside with IndexError('tuple index out of range'); minijax raises "
        "NumPy's ValueError, which names the axis and the number of dimensions.",
    ),
    "jnp.tile/negative": (
        lambda n: n.jnp.tile(F3, -1),
        "JAX builds a negative shape and only its compiler fails (MLIRError, 'invalid "
        "tensor dimension size'); minijax raises ValueError naming the repetitions.",
    ),
    "lax.slice/zero_stride": (
        lambda n: n.lax.slice(F3, (0,), (3,), (0,)),
        "JAX divides by the stride (ZeroDivisionError); minijax raises ValueError that "
        "names the strides.",
    ),
    "lax.bitcast_convert_type/width": (
        lambda n: n.lax.bitcast_convert_type(F3, n.jnp.int8),
        "JAX bitcasts between widths by adding or removing a last dimension; minijax "
        "bitcasts between equal widths only, and says so (TypeError).",
    ),
    "lax.fori_loop/unchanged_carry": (
        lambda n: n.lax.fori_loop(0, 3, lambda i, c: c, 0),
        "JAX notices that the body hands its carry back unchanged and returns the initial "
        "value itself (here the Python int 0); minijax returns an Array.",
    ),
    "zeros/float0": (
        lambda n: n.jnp.zeros(3, n.jax.dtypes.float0),
        "JAX makes float0 arrays (its own NumPy-array type); minijax keeps float0 for "
        "the tangents of integers only and refuses it as an array dtype (TypeError).",
    ),
    "take/empty_from_empty_shape": (
        lambda n: n.jnp.take(E03, n.jnp.zeros((2, 0), n.jnp.int32), axis=0),
        "JAX returns the operand itself, of shape (0, 3), where the result of taking a (2, 0) "
        "block of indices is of shape (2, 0, 3): a JAX bug; minijax returns zeros of the "
        "right shape.",
    ),
}
