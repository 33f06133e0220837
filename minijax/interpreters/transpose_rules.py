"""Transpose rules: how each *linear* primitive sends cotangents backwards. One table.

A rule receives the output cotangent and the equation's inputs, the linear ones as
``UndefinedPrimal``, and returns one cotangent per input (``None`` where the input is not
linear). Think of each rule as "the same operation, with the arrows reversed":

* ``y = x₁ + x₂``: both inputs get ``ct``;      ``y = x * c``: ``x`` gets ``ct * c``;
* ``y = broadcast(x)``: ``x`` gets ``sum(ct)`` over the new axes -- and the other way
  round, ``y = sum(x)``: ``x`` gets ``broadcast(ct)``;
* ``y = slice(x)``: ``x`` gets ``ct`` padded with zeros -- and ``y = pad(x)``: ``x`` gets
  the slice of ``ct`` that it became;
* ``y = gather(x)`` (reading): ``x`` gets a scatter-*add* of ``ct`` (writing, and adding
  where two reads hit the same element);
* ``y = a @ x``: ``x`` gets ``aᵀ @ ct`` -- ``dot_general`` with the roles swapped.

Only primitives that can appear in a linearization need a rule: the ones whose output
depends linearly on some input.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from minijax import lax
from minijax.core import Primitive
from minijax.interpreters.ad import Zero, add_any_p, instantiate
from minijax.interpreters.jvp_rules import gather_of_scatter
from minijax.interpreters.transpose import is_undefined, transpose_rules
from minijax.lax import elementwise as ew
from minijax.lax import linalg, parallel, reductions, shapes, slicing
from minijax.runtime import _copy_p as device_put_p


def deftranspose(primitive: Primitive, rule: Callable[..., list[Any]]) -> None:
    """Register ``rule`` for a single-result primitive; a ``Zero`` cotangent gives ``Zero``
    cotangents without calling it."""

    def transpose(ct: Any, *inputs: Any, **params: Any) -> list[Any]:
        if type(ct) is Zero:
            return [Zero(x.aval) if is_undefined(x) else None for x in inputs]
        return rule(ct, *inputs, **params)

    transpose_rules[primitive] = transpose


def _unbroadcast(ct: Any, aval: Any) -> Any:
    """Undo the trivial broadcasting of elementwise ops: sum ``ct`` down to ``aval``'s shape.

    ``lax`` lets a scalar or a size-1 dimension meet a full one; its cotangent is the sum
    over the dimensions it was stretched along.
    """
    if ct.shape == aval.shape:
        return ct
    if not aval.shape:
        return lax.reduce_sum(ct, tuple(range(ct.ndim)))
    axes = tuple(i for i, (a, c) in enumerate(zip(aval.shape, ct.shape)) if a == 1 and c != 1)
    return lax.reshape(lax.reduce_sum(ct, axes), aval.shape)


def _linear_unary(primitive: Primitive, fn: Callable[..., Any]) -> None:
    """The rule of a one-input linear primitive whose transpose is ``fn(ct, x, **params)``."""
    deftranspose(primitive, lambda ct, x, **params: [fn(ct, x, **params)])


# ---------------------------------------------------------------------------------------
# Elementwise
# ---------------------------------------------------------------------------------------

_linear_unary(ew.neg_p, lambda ct, x: lax.neg(ct))
_linear_unary(ew.real_p, lambda ct, x: lax.complex(ct, lax.full_like(ct, 0)))
_linear_unary(ew.imag_p, lambda ct, x: lax.complex(lax.full_like(ct, 0), lax.neg(ct)))
_linear_unary(ew.conj_p, lambda ct, x, input_dtype: (
    lax.conj(ct) if input_dtype.kind == "c" else lax.real(ct)))  # a real x became complex
_linear_unary(ew.reduce_precision_p, lambda ct, x, **params: ew.reduce_precision_p.bind(
    ct, **params))
_linear_unary(shapes.copy_p, lambda ct, x: shapes.copy_p.bind(ct))
_linear_unary(device_put_p, lambda ct, x: ct)
transpose_rules[ew.stop_gradient_p] = lambda ct, x: [Zero(x.aval)]


def _add_transpose(ct: Any, x: Any, y: Any) -> list[Any]:
    return [_unbroadcast(ct, x.aval) if is_undefined(x) else None,
            _unbroadcast(ct, y.aval) if is_undefined(y) else None]


def _sub_transpose(ct: Any, x: Any, y: Any) -> list[Any]:
    return [_unbroadcast(ct, x.aval) if is_undefined(x) else None,
            _unbroadcast(lax.neg(ct), y.aval) if is_undefined(y) else None]


def _mul_transpose(ct: Any, x: Any, y: Any) -> list[Any]:
    """Exactly one factor is linear; its cotangent is ``ct`` times the other factor."""
    if is_undefined(x):
        return [_unbroadcast(lax.mul(ct, y), x.aval), None]
    return [None, _unbroadcast(lax.mul(x, ct), y.aval)]


def _div_transpose(ct: Any, x: Any, y: Any) -> list[Any]:
    """Only the numerator can be linear: ``ct_x = ct / y``."""
    return [_unbroadcast(lax.div(ct, y), x.aval), None]


def _complex_transpose(ct: Any, x: Any, y: Any) -> list[Any]:
    return [_unbroadcast(lax.real(ct), x.aval) if is_undefined(x) else None,
            _unbroadcast(lax.neg(lax.imag(ct)), y.aval) if is_undefined(y) else None]


deftranspose(ew.add_p, _add_transpose)
deftranspose(add_any_p, _add_transpose)
deftranspose(ew.sub_p, _sub_transpose)
deftranspose(ew.mul_p, _mul_transpose)
deftranspose(ew.div_p, _div_transpose)
deftranspose(ew.complex_p, _complex_transpose)


def _convert_transpose(ct: Any, x: Any, *, new_dtype: np.dtype, weak_type: bool) -> list[Any]:
    """Convert the cotangent back to the input's dtype (and weak type): nothing is
    recorded when it has that type already, and a constant is converted now, as in JAX."""
    return [ew.convert_element_type(ct, x.aval.dtype, x.aval.weak_type)]


deftranspose(ew.convert_element_type_p, _convert_transpose)


def _select_n_transpose(ct: Any, which: Any, *cases: Any) -> list[Any]:
    """Each linear case gets the cotangent where it was selected, zero elsewhere."""
    zeros = lax.full_like(ct, 0)
    out: list[Any] = [None]
    for i, case in enumerate(cases):
        if not is_undefined(case):
            out.append(None)
            continue
        picks = [zeros] * len(cases)
        picks[i] = ct
        out.append(ew.select_n_p.bind(which, *picks))
    return out


deftranspose(ew.select_n_p, _select_n_transpose)


# ---------------------------------------------------------------------------------------
# Shapes
# ---------------------------------------------------------------------------------------


def _broadcast_in_dim_transpose(ct: Any, x: Any, *, shape: tuple, broadcast_dimensions: tuple,
                                sharding: Any) -> Any:
    """Sum over the axes the broadcast created or stretched."""
    new_axes = tuple(i for i in range(len(shape)) if i not in broadcast_dimensions)
    stretched = tuple(d for i, d in enumerate(broadcast_dimensions)
                      if x.aval.shape[i] == 1 and shape[d] != 1)
    summed = lax.reduce_sum(ct, tuple(sorted(new_axes + stretched)))
    return lax.reshape(summed, x.aval.shape)


def _reshape_transpose(ct: Any, x: Any, *, new_sizes: tuple, dimensions: Any,
                       sharding: Any) -> Any:
    if dimensions is None:
        return lax.reshape(ct, x.aval.shape)
    permuted = tuple(x.aval.shape[d] for d in dimensions)
    return lax.transpose(lax.reshape(ct, permuted), tuple(np.argsort(dimensions)))


_linear_unary(shapes.broadcast_in_dim_p, _broadcast_in_dim_transpose)
_linear_unary(shapes.reshape_p, _reshape_transpose)
_linear_unary(shapes.transpose_p,
              lambda ct, x, *, permutation: lax.transpose(ct, tuple(np.argsort(permutation))))
_linear_unary(shapes.squeeze_p, lambda ct, x, *, dimensions: lax.reshape(ct, x.aval.shape))
_linear_unary(shapes.rev_p, lambda ct, x, *, dimensions: lax.rev(ct, dimensions))


def _pad_transpose(ct: Any, x: Any, padding_value: Any, *,
                   padding_config: tuple[tuple[int, int, int], ...]) -> list[Any]:
    """The operand gets the elements of ``ct`` it became: undo the edges (a pad by the
    negated amounts), then take every ``interior + 1``-th element. The padding value was
    copied into every other element, so it gets the sum of the rest of ``ct``."""
    unpad = tuple((-lo, -hi, 0) for lo, hi, _ in padding_config)
    edges_removed = lax.pad(ct, lax.convert_element_type(0, ct.dtype), unpad)
    strides = tuple(interior + 1 for _, _, interior in padding_config)
    ct_x = lax.slice(edges_removed, (0,) * ct.ndim, edges_removed.shape, strides)
    ct_value = None
    if is_undefined(padding_value):
        everything = tuple(range(ct.ndim))
        ct_value = lax.sub(lax.reduce_sum(ct, everything), lax.reduce_sum(ct_x, everything))
    return [ct_x if is_undefined(x) else None, ct_value]


deftranspose(shapes.pad_p, _pad_transpose)


def _concatenate_transpose(ct: Any, *operands: Any, dimension: int) -> list[Any]:
    """Each operand gets its own stretch of ``ct``."""
    out, start = [], 0
    for x in operands:
        size = (x.aval if is_undefined(x) else x).shape[dimension]
        piece = lax.slice_in_dim(ct, start, start + size, 1, dimension)
        out.append(piece if is_undefined(x) else None)
        start += size
    return out


deftranspose(shapes.concatenate_p, _concatenate_transpose)
deftranspose(shapes.stack_p, lambda ct, *operands, axis: [
    piece if is_undefined(x) else None
    for piece, x in zip(lax.unstack(ct, axis), operands)])
transpose_rules[shapes.unstack_p] = lambda cts, x, *, axis: [
    lax.stack([instantiate(c) for c in cts], axis)]
transpose_rules[shapes.split_p] = lambda cts, x, *, sizes, axis: [
    lax.concatenate([instantiate(c) for c in cts], axis)]


def _tile_transpose(ct: Any, x: Any, *, reps: tuple[int, ...]) -> Any:
    """Tile copies ``x`` ``reps[d]`` times along each axis ``d``: split each axis of ``ct``
    into (copy, position) and sum over the copies."""
    split_shape = tuple(size for r, n in zip(reps, x.aval.shape) for size in (r, n))
    copies = tuple(range(0, 2 * x.aval.ndim, 2))
    return lax.reduce_sum(lax.reshape(ct, split_shape), copies)


_linear_unary(shapes.tile_p, _tile_transpose)


# ---------------------------------------------------------------------------------------
# Reductions
# ---------------------------------------------------------------------------------------


def _reduce_sum_transpose(ct: Any, x: Any, *, axes: tuple, out_sharding: Any) -> Any:
    """Every summed element receives the cotangent of the sum: broadcast it back. (The
    kept axes are NumPy integers, as in JAX, whose jaxprs print them as np.int64(0).)"""
    kept = tuple(np.delete(np.arange(x.aval.ndim), axes))
    return lax.broadcast_in_dim(ct, x.aval.shape, kept)


_linear_unary(reductions.reduce_sum_p, _reduce_sum_transpose)


def _psum_transpose(ct: Any, x: Any, *, axes: tuple, axis_index_groups: Any) -> Any:
    """As JAX: the positional axes are a ``reduce_sum`` (broadcast the cotangent back);
    over the named ones every example's input reaches every example's sum, so its
    cotangent is the sum of theirs (a ``psum`` over those names, even if there are none)."""
    positional = tuple(a for a in axes if isinstance(a, int))
    named = tuple(a for a in axes if not isinstance(a, int))
    kept = tuple(np.delete(np.arange(x.aval.ndim), positional))
    ct = lax.broadcast_in_dim(ct, x.aval.shape, kept)
    return parallel.psum_p.bind(ct, axes=named, axis_index_groups=axis_index_groups)


_linear_unary(parallel.psum_p, _psum_transpose)
# x[j] reaches every running sum out[i] with i >= j: the cotangent runs the other way.
_linear_unary(reductions.cumsum_p, lambda ct, x, *, axis, reverse: lax.cumsum(
    ct, axis, reverse=not reverse))


# ---------------------------------------------------------------------------------------
# Slicing, gather and scatter
# ---------------------------------------------------------------------------------------


def _slice_transpose(ct: Any, x: Any, *, start_indices: tuple[int, ...],
                     limit_indices: tuple[int, ...], strides: tuple[int, ...] | None) -> Any:
    """Put ``ct`` back where the slice came from: pad with zeros before, after and (for
    strides) between the elements."""
    steps = strides or (1,) * ct.ndim
    config = []
    for start, n, step, size in zip(start_indices, x.aval.shape, steps, ct.shape):
        end = start + (size - 1) * step + 1 if size else start  # one past the last element
        config.append((start, n - end, step - 1))
    return lax.pad(ct, lax.convert_element_type(0, ct.dtype), config)


_linear_unary(slicing.slice_p, _slice_transpose)


def _dynamic_slice_transpose(ct: Any, x: Any, *starts: Any, slice_sizes: tuple) -> list[Any]:
    zeros = lax.full(x.aval.shape, 0, x.aval.dtype)
    return [slicing.dynamic_update_slice_p.bind(zeros, ct, *starts), *[None] * len(starts)]


def _dynamic_update_slice_transpose(ct: Any, x: Any, update: Any, *starts: Any) -> list[Any]:
    """The operand gets ``ct`` except in the box (zeroed); the update gets the box."""
    shape = (update.aval if is_undefined(update) else update).shape
    ct_x = ct_update = None
    if is_undefined(x):
        zeros = lax.full(shape, 0, ct.dtype)
        ct_x = slicing.dynamic_update_slice_p.bind(ct, zeros, *starts)
    if is_undefined(update):
        ct_update = slicing.dynamic_slice_p.bind(ct, *starts, slice_sizes=shape)
    return [ct_x, ct_update, *[None] * len(starts)]


deftranspose(slicing.dynamic_slice_p, _dynamic_slice_transpose)
deftranspose(slicing.dynamic_update_slice_p, _dynamic_update_slice_transpose)


def _gather_transpose(ct: Any, x: Any, indices: Any, *,
                      dimension_numbers: slicing.GatherDimensionNumbers,
                      slice_sizes: tuple, unique_indices: bool, indices_are_sorted: bool,
                      mode: slicing.GatherScatterMode, fill_value: Any) -> list[Any]:
    """Add every gathered window's cotangent back into the place it was read from."""
    dn = dimension_numbers
    scatter_dn = slicing.ScatterDimensionNumbers(
        update_window_dims=dn.offset_dims, inserted_window_dims=dn.collapsed_slice_dims,
        scatter_dims_to_operand_dims=dn.start_index_map,
        operand_batching_dims=dn.operand_batching_dims,
        scatter_indices_batching_dims=dn.start_indices_batching_dims)
    zeros = lax.full(x.aval.shape, 0, x.aval.dtype)
    return [lax.scatter_add(zeros, indices, ct, scatter_dn, indices_are_sorted=indices_are_sorted,
                            unique_indices=unique_indices, mode=mode), None]


deftranspose(slicing.gather_p, _gather_transpose)


def _read_updates(ct: Any, indices: Any, updates: Any, params: dict) -> Any:
    shape = (updates.aval if is_undefined(updates) else updates).shape
    return gather_of_scatter(ct, indices, shape, params["dimension_numbers"], params["mode"])


def _scatter_add_transpose(sign: Callable[[Any], Any]
                           ) -> Callable[..., list[Any]]:
    """scatter-add (``sign`` = identity) and scatter-sub (``sign`` = neg): the operand
    passes straight through; each update gets (±) the cotangent where it was added."""

    def rule(ct: Any, x: Any, indices: Any, updates: Any, **params: Any) -> list[Any]:
        ct_updates = sign(_read_updates(ct, indices, updates, params)) \
            if is_undefined(updates) else None
        return [ct if is_undefined(x) else None, None, ct_updates]

    return rule


deftranspose(slicing.scatter_add_p, _scatter_add_transpose(lambda ct: ct))
deftranspose(slicing.scatter_sub_p, _scatter_add_transpose(lax.neg))


def _scatter_transpose(ct: Any, x: Any, indices: Any, updates: Any, **params: Any
                       ) -> list[Any]:
    """With unique indices, scatter is ``x`` with some elements replaced by updates: the
    operand gets ``ct`` with those elements zeroed, the updates get what they became."""
    if not params["unique_indices"]:
        raise NotImplementedError(
            "scatter transpose is only implemented where unique_indices=True")
    ct_x = ct_updates = None
    if is_undefined(x):
        shape = (updates.aval if is_undefined(updates) else updates).shape
        ct_x = slicing.scatter_p.bind(ct, indices, lax.full(shape, 0, ct.dtype), **params)
    if is_undefined(updates):
        ct_updates = _read_updates(ct, indices, updates, params)
    return [ct_x, None, ct_updates]


deftranspose(slicing.scatter_p, _scatter_transpose)


def _scatter_mul_transpose(ct: Any, x: Any, indices: Any, updates: Any, **params: Any
                           ) -> list[Any]:
    """Linear in the operand only: each element was multiplied by the product of the
    updates that hit it, so its cotangent is ``ct`` times that product."""
    if is_undefined(updates):
        raise NotImplementedError(
            "scatter_mul gradients are only implemented if `unique_indices=True`")
    factors = slicing.scatter_mul_p.bind(lax.full_like(ct, 1), indices, updates, **params)
    return [lax.mul(ct, factors), None, None]


deftranspose(slicing.scatter_mul_p, _scatter_mul_transpose)


# ---------------------------------------------------------------------------------------
# Linear algebra
# ---------------------------------------------------------------------------------------


def _dot_transpose_operand(ct: Any, x_aval: Any, y: Any, x_is_lhs: bool,
                           dimension_numbers: Any, precision: Any) -> Any:
    """The cotangent of the linear operand ``x`` of ``dot_general(x, y)`` (or of
    ``dot_general(y, x)``): contract ``ct`` with ``y`` over ``y``'s free dimensions (and
    batch over the batch dimensions); that leaves ``x``'s dimensions, in the order
    (batch, x free, x contracted), which one transpose puts in place."""
    (lhs_c, rhs_c), (lhs_b, rhs_b) = dimension_numbers
    x_c, y_c, x_b, y_b = (lhs_c, rhs_c, lhs_b, rhs_b) if x_is_lhs else (rhs_c, lhs_c, rhs_b, lhs_b)
    nb = len(x_b)
    x_free = [d for d in range(x_aval.ndim) if d not in x_b and d not in x_c]
    y_free = [d for d in range(y.ndim) if d not in y_b and d not in y_c]
    ct_y_free = [nb + (len(x_free) if x_is_lhs else 0) + i for i in range(len(y_free))]
    out = lax.dot_general(ct, y, ((ct_y_free, y_free), (range(nb), y_b)), precision,
                          preferred_element_type=x_aval.dtype)
    y_c_sorted = sorted(y_c)
    source = {}
    for i, d in enumerate(x_b):
        source[d] = i
    for j, d in enumerate(x_free):
        source[d] = nb + j
    for d, e in zip(x_c, y_c):
        source[d] = nb + len(x_free) + y_c_sorted.index(e)
    return lax.transpose(out, [source[d] for d in range(x_aval.ndim)])


def _dot_general_transpose(ct: Any, lhs: Any, rhs: Any, *, dimension_numbers: Any,
                           precision: Any, preferred_element_type: Any,
                           out_sharding: Any) -> list[Any]:
    if is_undefined(lhs):
        return [_dot_transpose_operand(ct, lhs.aval, rhs, True, dimension_numbers, precision),
                None]
    return [None, _dot_transpose_operand(ct, rhs.aval, lhs, False, dimension_numbers,
                                         precision)]


deftranspose(linalg.dot_general_p, _dot_general_transpose)


def _triangular_solve_transpose(ct: Any, a: Any, b: Any, *, left_side: bool, lower: bool,
                                transpose_a: bool, conjugate_a: bool, unit_diagonal: bool
                                ) -> list[Any]:
    """Linear in ``b`` only: x = op(A)⁻¹ b transposes to ct_b = op(A)⁻ᵀ ct."""
    return [None, linalg.triangular_solve_p.bind(
        a, ct, left_side=left_side, lower=lower, transpose_a=not transpose_a,
        conjugate_a=conjugate_a, unit_diagonal=unit_diagonal)]


deftranspose(linalg.triangular_solve_p, _triangular_solve_transpose)

