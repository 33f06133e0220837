"""Transpose rules: how each *linear* primitive sends cotangents backwards. One table.

A rule receives the output cotangent and the equation's inputs, the linear ones as
``UndefinedPrimal``, and returns one cotangent per input (``None`` where the input is not
linear). Think of each rule as "the same operation, with the arrows reversed":

* ``y = x₁ + x₂``: both inputs get ``ct``;      ``y = x * c``: ``x`` gets ``ct * c``;
* ``y = broadcast(x)``: ``x`` gets ``sum(ct)`` over the new axes -- and the other way
  round, ``y = sum(x)``: ``x`` gets ``broadcast(ct)``;
* ``y = reshape(x)``: ``x`` gets ``ct`` reshaped back.

Only primitives that can appear in a linearization need a rule: the ones whose output
depends linearly on some input.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from minijax import lax
from minijax.interpreters.ad import Zero, add_any_p, instantiate
from minijax.interpreters.transpose import is_undefined, transpose_rules
from minijax.lax import elementwise as ew
from minijax.lax import reductions, shapes


def _unbroadcast(ct: Any, aval: Any) -> Any:
    """Undo the trivial broadcasting of elementwise ops: sum ``ct`` down to ``aval``'s shape.

    ``lax`` lets a scalar or a size-1 dimension meet a full one; its cotangent is the sum
    over the dimensions it was stretched along.
    """
    if type(ct) is Zero or ct.shape == aval.shape:
        return ct
    if not aval.shape:
        return lax.reduce_sum(ct, tuple(range(ct.ndim)))
    axes = tuple(i for i, (a, c) in enumerate(zip(aval.shape, ct.shape)) if a == 1 and c != 1)
    return lax.reshape(lax.reduce_sum(ct, axes), aval.shape)


def _linear_unary(fn: Any) -> Any:
    """The rule of a one-input linear primitive whose transpose is ``fn`` of the cotangent."""
    return lambda ct, x, **params: [Zero(x.aval) if type(ct) is Zero else fn(ct, x, **params)]


transpose_rules[ew.neg_p] = _linear_unary(lambda ct, x: lax.neg(ct))
transpose_rules[ew.real_p] = _linear_unary(
    lambda ct, x: lax.complex(ct, lax.full_like(ct, 0)))
transpose_rules[ew.imag_p] = _linear_unary(
    lambda ct, x: lax.complex(lax.full_like(ct, 0), lax.neg(ct)))
transpose_rules[ew.conj_p] = _linear_unary(lambda ct, x: lax.conj(ct))
transpose_rules[ew.stop_gradient_p] = lambda ct, x: [Zero(x.aval)]
transpose_rules[shapes.copy_p] = _linear_unary(lambda ct, x: ct)


def _add_transpose(ct: Any, x: Any, y: Any) -> list[Any]:
    return [_unbroadcast(ct, x.aval) if is_undefined(x) else None,
            _unbroadcast(ct, y.aval) if is_undefined(y) else None]


def _sub_transpose(ct: Any, x: Any, y: Any) -> list[Any]:
    neg = Zero(y.aval) if type(ct) is Zero else lax.neg(ct)
    return [_unbroadcast(ct, x.aval) if is_undefined(x) else None,
            _unbroadcast(neg, y.aval) if is_undefined(y) else None]


def _mul_transpose(ct: Any, x: Any, y: Any) -> list[Any]:
    """Exactly one factor is linear; its cotangent is ``ct`` times the other factor."""
    if type(ct) is Zero:
        return [Zero(x.aval) if is_undefined(x) else None,
                Zero(y.aval) if is_undefined(y) else None]
    if is_undefined(x):
        return [_unbroadcast(lax.mul(ct, y), x.aval), None]
    return [None, _unbroadcast(lax.mul(x, ct), y.aval)]


def _div_transpose(ct: Any, x: Any, y: Any) -> list[Any]:
    """Only the numerator can be linear: ``ct_x = ct / y``."""
    if type(ct) is Zero:
        return [Zero(x.aval), None]
    return [_unbroadcast(lax.div(ct, y), x.aval), None]


transpose_rules[ew.add_p] = _add_transpose
transpose_rules[add_any_p] = _add_transpose
transpose_rules[ew.sub_p] = _sub_transpose
transpose_rules[ew.mul_p] = _mul_transpose
transpose_rules[ew.div_p] = _div_transpose


def _complex_transpose(ct: Any, x: Any, y: Any) -> list[Any]:
    return [lax.real(ct) if is_undefined(x) else None,
            lax.neg(lax.imag(ct)) if is_undefined(y) else None]


transpose_rules[ew.complex_p] = _complex_transpose


def _convert_transpose(ct: Any, x: Any, *, new_dtype: np.dtype, weak_type: bool) -> list[Any]:
    """Convert the cotangent back to the input's dtype (and weak type)."""
    if type(ct) is Zero:
        return [Zero(x.aval)]
    return [ew.convert_element_type_p.bind(ct, new_dtype=x.aval.dtype,
                                           weak_type=x.aval.weak_type)]


transpose_rules[ew.convert_element_type_p] = _convert_transpose


def _select_n_transpose(ct: Any, which: Any, *cases: Any) -> list[Any]:
    """Each linear case gets the cotangent where it was selected, zero elsewhere."""
    zeros = lax.full_like(instantiate(ct), 0) if type(ct) is not Zero else None
    out: list[Any] = [None]
    for i, case in enumerate(cases):
        if not is_undefined(case):
            out.append(None)
        elif type(ct) is Zero:
            out.append(Zero(case.aval))
        else:
            picks = [zeros] * len(cases)
            picks[i] = ct
            out.append(ew.select_n_p.bind(which, *picks))
    return out


transpose_rules[ew.select_n_p] = _select_n_transpose


def _broadcast_in_dim_transpose(ct: Any, x: Any, *, shape: tuple, broadcast_dimensions: tuple,
                                sharding: Any) -> list[Any]:
    """Sum over the axes the broadcast created or stretched."""
    if type(ct) is Zero:
        return [Zero(x.aval)]
    new_axes = tuple(i for i in range(len(shape)) if i not in broadcast_dimensions)
    stretched = tuple(d for i, d in enumerate(broadcast_dimensions)
                      if x.aval.shape[i] == 1 and shape[d] != 1)
    summed = lax.reduce_sum(ct, tuple(sorted(new_axes + stretched)))
    return [lax.reshape(summed, x.aval.shape)]


transpose_rules[shapes.broadcast_in_dim_p] = _broadcast_in_dim_transpose


def _reshape_transpose(ct: Any, x: Any, *, new_sizes: tuple, dimensions: Any,
                       sharding: Any) -> list[Any]:
    if type(ct) is Zero:
        return [Zero(x.aval)]
    if dimensions is None:
        return [lax.reshape(ct, x.aval.shape)]
    permuted = tuple(x.aval.shape[d] for d in dimensions)
    return [lax.transpose(lax.reshape(ct, permuted), tuple(np.argsort(dimensions)))]


transpose_rules[shapes.reshape_p] = _reshape_transpose


def _reduce_sum_transpose(ct: Any, x: Any, *, axes: tuple, out_sharding: Any) -> list[Any]:
    """Every summed element receives the cotangent of the sum: broadcast it back."""
    if type(ct) is Zero:
        return [Zero(x.aval)]
    kept = tuple(i for i in range(x.aval.ndim) if i not in axes)
    return [lax.broadcast_in_dim(ct, x.aval.shape, kept)]


transpose_rules[reductions.reduce_sum_p] = _reduce_sum_transpose
