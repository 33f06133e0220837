"""Collectives over a named mapped axis: ``psum``, ``pmean`` and ``axis_index``.

Inside ``vmap(f, axis_name="i")`` each example can ask about the others: ``psum(x, "i")``
is the sum of ``x`` over all examples (the same for each), ``axis_index("i")`` is the
example's position. Under ``vmap`` they are just operations on the whole batch: their
batching rules turn a sum over the named axis into a sum over the batch dimension, which
is the *positional* form of ``psum`` (``psum[axes=(0,)]``, a ``reduce_sum`` in effect),
and the index into an ``iota`` batched along it.

A name that no enclosing ``vmap`` binds is JAX's ``NameError``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from minijax import dtypes
from minijax.compiler.lowering import RuleContext, lowering_rules, register
from minijax.compiler.stablehlo_ir import Value
from minijax.core import Primitive, ShapedArray, Tracer
from minijax.interpreters import batching
from minijax.interpreters.ad import deflinear, defzero
from minijax.lax.base import (
    _linear_unary,
    broadcast_in_dim,
    convert_element_type,
    mul,
    operand,
    reduce_sum,
    reduction_lowering,
)
from minijax.lax.shapes import iota
from minijax.tree_util import tree_flatten, tree_map, tree_unflatten

__all__ = ["axis_index", "axis_index_p", "pmean", "psum", "psum_p"]


def _as_axes(axis_name: Any) -> tuple[Any, ...]:
    return tuple(axis_name) if isinstance(axis_name, (tuple, list)) else (axis_name,)


def _split_axes(axes: Sequence[Any]) -> tuple[tuple[Any, ...], tuple[int, ...]]:
    """(named axes, positional axes): integers are dimensions of the operand."""
    return (tuple(a for a in axes if not isinstance(a, int)),
            tuple(a for a in axes if isinstance(a, int)))


# ---------------------------------------------------------------------------------------
# psum
# ---------------------------------------------------------------------------------------


def _psum_rule(x: ShapedArray, *, axes: tuple[Any, ...], axis_index_groups: Any
               ) -> ShapedArray:
    _, positional = _split_axes(axes)
    shape = tuple(n for d, n in enumerate(x.shape) if d not in positional)
    return ShapedArray(shape, x.dtype)


psum_p = Primitive("psum")
psum_p.def_impl(lambda x, *, axes, axis_index_groups: np.sum(x, axis=axes, dtype=x.dtype))
psum_p.def_abstract_eval(_psum_rule)


def _size_times(x: Any, size: int) -> Any:
    """``size * x`` in ``x``'s type: a Python number stays one, as JAX's ``_const``."""
    if type(x) in (bool, int, float, complex):
        return type(x)(size) * x
    x = operand(x)
    return mul(convert_element_type(size, x.dtype, x.weak_type), x)


def psum(x: Any, axis_name: Any, *, axis_index_groups: Any = None) -> Any:
    """The sum of ``x`` (a pytree) over the mapped axis or axes ``axis_name``; booleans
    are summed as int32. A value no vmap maps is the same for every example: its sum is
    the axis size times itself, computed at once."""
    axes = _as_axes(axis_name)
    if not axes:
        return x
    leaves, tree = tree_flatten(x)
    leaves = [convert_element_type(leaf, np.int32) if dtypes.dtype(leaf) == np.bool_
              else leaf for leaf in leaves]
    named, positional = _split_axes(axes)
    if not any(isinstance(leaf, Tracer) for leaf in leaves):
        size = math.prod(batching.axis_size(name) for name in named)
        if positional:
            leaves = [reduce_sum(leaf, positional) for leaf in leaves]
        return tree_unflatten(tree, [_size_times(leaf, size) for leaf in leaves])
    batching.check_axis_names(named, "psum")
    return tree_unflatten(tree, [psum_p.bind(operand(leaf), axes=axes,
                                             axis_index_groups=axis_index_groups)
                                 for leaf in leaves])


deflinear(psum_p)


def _psum_transpose(ct: Any, x: Any, *, axes: tuple, axis_index_groups: Any) -> Any:
    """As JAX: the positional axes are a ``reduce_sum`` (broadcast the cotangent back);
    over the named ones every example's input reaches every example's sum, so its
    cotangent is the sum of theirs (a ``psum`` over those names, even if there are none)."""
    positional = tuple(a for a in axes if isinstance(a, int))
    named = tuple(a for a in axes if not isinstance(a, int))
    kept = tuple(np.delete(np.arange(x.aval.ndim), positional))
    ct = broadcast_in_dim(ct, x.aval.shape, kept)
    return psum_p.bind(ct, axes=named, axis_index_groups=axis_index_groups)


_linear_unary(psum_p, _psum_transpose)
# vmap leaves only positional axes to a psum it compiles: a reduce_sum over them.
lowering_rules[psum_p] = reduction_lowering("stablehlo.add", lambda dt: 0)


def pmean(x: Any, axis_name: Any, *, axis_index_groups: Any = None) -> Any:
    """The mean of ``x`` (a pytree) over the mapped axis or axes ``axis_name``."""
    total = psum(x, axis_name, axis_index_groups=axis_index_groups)
    count = psum(1, axis_name, axis_index_groups=axis_index_groups)
    return tree_map(lambda v: v / count, total)


# ---------------------------------------------------------------------------------------
# axis_index
# ---------------------------------------------------------------------------------------

axis_index_p = Primitive("axis_index")
axis_index_p.def_abstract_eval(lambda *, axis_name: ShapedArray((), np.int32))


def axis_index(axis_name: Any) -> Any:
    """The position of this example along the mapped axis ``axis_name`` (int32); for a
    tuple of names, the position in their flattened product."""
    if not isinstance(axis_name, (tuple, list)):
        batching.check_axis_names((axis_name,), "axis_index")
        return axis_index_p.bind(axis_name=axis_name)
    index, inner_size = operand(np.int32(0)), 1
    for name in reversed(axis_name):
        index = index + axis_index(name) * inner_size
        inner_size *= batching.axis_size(name)
    return index


defzero(axis_index_p)  # an integer: no tangent


@register(axis_index_p)
def _axis_index_lowering(ctx: RuleContext, *, axis_name: Any) -> Value:
    """vmap batches ``axis_index`` away before anything is compiled: a program that still
    has one names an axis no device mesh provides (JAX's NameError)."""
    raise NameError(f"unbound axis name: {axis_name}")


# ---------------------------------------------------------------------------------------
# vmap: batching rules
# ---------------------------------------------------------------------------------------


def _psum_batching(axis_data: batching.AxisData, vals: list, dims: list, *,
                   axes: tuple[Any, ...], axis_index_groups: Any) -> tuple[Any, Any]:
    """JAX's rule. Over this vmap's axis, a batch is summed over its batch dimension (the
    name becomes a position) and the result is unbatched; an unbatched value is the axis
    size times itself. Other names are left to the enclosing vmaps."""
    (x,), (bdim,) = vals, dims
    mine = axis_data.name in axes
    if bdim is None:
        if not mine:
            return psum_p.bind(x, axes=axes, axis_index_groups=axis_index_groups), None
        rest = tuple(a for a in axes if a != axis_data.name)
        if rest:
            x = psum_p.bind(x, axes=rest, axis_index_groups=axis_index_groups)
        return _size_times(x, axis_data.size), None
    if not mine and not any(isinstance(a, int) for a in axes):
        return psum_p.bind(x, axes=axes, axis_index_groups=axis_index_groups), bdim
    x = batching.moveaxis(x, bdim, 0)
    axes = tuple(a + 1 if isinstance(a, int) else 0 if a == axis_data.name else a
                 for a in axes)
    return psum_p.bind(x, axes=axes, axis_index_groups=None), None if mine else 0


def _axis_index_batching(axis_data: batching.AxisData, vals: list, dims: list, *,
                         axis_name: Any) -> tuple[Any, Any]:
    if axis_data.name not in _as_axes(axis_name):
        return axis_index_p.bind(axis_name=axis_name), None
    return iota(np.int32, axis_data.size), 0


batching.defcollective(psum_p, _psum_batching)
batching.defcollective(axis_index_p, _axis_index_batching)
