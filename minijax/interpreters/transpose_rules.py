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

from minijax import lax
from minijax.interpreters.jvp_rules import gather_of_scatter
from minijax.interpreters.transpose import deftranspose, is_undefined
from minijax.lax import linalg, slicing
from minijax.lax.base import _linear_unary
from minijax.runtime import _copy_p as device_put_p

# ---------------------------------------------------------------------------------------
# device_put
# ---------------------------------------------------------------------------------------

_linear_unary(device_put_p, lambda ct, x: ct)
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


def _triangular_solve_transpose(ct: Any, a: Any, b: Any, *, left_side: bool, lower: bool,
                                transpose_a: bool, conjugate_a: bool, unit_diagonal: bool
                                ) -> list[Any]:
    """Linear in ``b`` only: x = op(A)⁻¹ b transposes to ct_b = op(A)⁻ᵀ ct."""
    return [None, linalg.triangular_solve_p.bind(
        a, ct, left_side=left_side, lower=lower, transpose_a=not transpose_a,
        conjugate_a=conjugate_a, unit_diagonal=unit_diagonal)]


deftranspose(linalg.triangular_solve_p, _triangular_solve_transpose)
