"""Products of arrays: ``dot``, ``matmul`` (``@``), ``vdot``, ``inner``, ``outer``,
``tensordot``, ``einsum``, ``trace`` and ``kron``.

All the contractions are one ``lax.dot_general`` each (plus a ``transpose`` when NumPy
wants the result's dimensions in another order than dot_general's "batch, lhs free, rhs
free"). They differ only in which dimensions they pair up:

* ``dot`` contracts the last axis of ``a`` with the second-to-last of ``b`` (the last if
  ``b`` is a vector), with no batch dimensions: every free axis of both is kept;
* ``matmul`` treats leading axes as a *batch* of matrices, broadcast against each other;
* ``tensordot`` and ``einsum`` name the axes explicitly.

The operands are not converted to a common dtype first: ``dot_general`` is told the
result dtype (``preferred_element_type``) and multiplies the original values, as in JAX.
"""

from __future__ import annotations

import string
from collections.abc import Sequence
from functools import partial
from typing import Any

import numpy as np

from minijax import dtypes, lax
from minijax.compiler.jit import jit
from minijax.numpy.creation import asarray, diagonal_mask
from minijax.numpy.manipulation import moveaxis
from minijax.numpy.promotion import check_arraylike, promote_dtypes, result_type
from minijax.numpy.reductions import reduction_axes
from minijax.numpy.reductions import sum as _sum
from minijax.numpy.ufuncs import where

__all__ = ["cross", "dot", "einsum", "inner", "kron", "matmul", "matrix_transpose", "matvec",
           "outer", "tensordot", "trace", "vdot", "vecdot", "vecmat"]


def _operands(name: str, *args: Any, preferred_element_type: Any = None
              ) -> tuple[list[Any], np.dtype]:
    """The operands as arrays, and the dtype of their product (promotion's result type,
    unless the caller prefers another)."""
    check_arraylike(name, *args)
    arrays = [asarray(a) for a in args]
    if preferred_element_type is not None:
        return arrays, dtypes.check_and_canonicalize_user_dtype(preferred_element_type, name)
    return arrays, result_type(*arrays)[0]


def _contract(a: Any, b: Any, contract: tuple[Sequence[int], Sequence[int]],
              batch: tuple[Sequence[int], Sequence[int]] = ((), ()), *, dtype: np.dtype,
              precision: Any = None) -> Any:
    return lax.dot_general(a, b, (tuple(contract), tuple(batch)), precision=precision,
                           preferred_element_type=dtype)


# ---------------------------------------------------------------------------------------
# dot, vdot, inner, outer
# ---------------------------------------------------------------------------------------


def dot(a: Any, b: Any, *, precision: Any = None, preferred_element_type: Any = None,
        out_sharding: Any = None) -> Any:
    """NumPy's ``dot``: a sum over the last axis of ``a`` and the second-to-last of ``b``
    (the only one, if ``b`` is a vector). A scalar operand just scales the other."""
    (a, b), dtype = _operands("dot", a, b, preferred_element_type=preferred_element_type)
    if a.ndim == 0 or b.ndim == 0:
        contract: tuple[Sequence[int], Sequence[int]] = ((), ())
    else:
        contract = ((a.ndim - 1,), (max(b.ndim - 2, 0),))
    return _contract(a, b, contract, dtype=dtype, precision=precision)


def vdot(a: Any, b: Any, *, precision: Any = None, preferred_element_type: Any = None) -> Any:
    """The dot product of the flattened arrays, conjugating ``a`` first."""
    (a, b), dtype = _operands("vdot", a, b, preferred_element_type=preferred_element_type)
    if a.dtype.kind == "c":
        a = lax.conj(a)
    a, b = lax.reshape(a, (a.size,)), lax.reshape(b, (b.size,))
    return _contract(a, b, ((0,), (0,)), dtype=dtype, precision=precision)


def inner(a: Any, b: Any, *, precision: Any = None, preferred_element_type: Any = None) -> Any:
    """A sum over the last axes of both operands."""
    (a, b), dtype = _operands("inner", a, b, preferred_element_type=preferred_element_type)
    contract = ((), ()) if a.ndim == 0 or b.ndim == 0 else ((a.ndim - 1,), (b.ndim - 1,))
    return _contract(a, b, contract, dtype=dtype, precision=precision)


def outer(a: Any, b: Any, out: Any = None) -> Any:
    """``a[i] * b[j]`` for the flattened operands: a column times a row."""
    check_arraylike("outer", a, b)
    a, b = promote_dtypes(asarray(a), asarray(b))  # dtypes only: both are flattened
    column = lax.expand_dims(lax.reshape(a, (a.size,)), (1,))
    row = lax.expand_dims(lax.reshape(b, (b.size,)), (0,))
    return lax.mul(column, row)


# ---------------------------------------------------------------------------------------
# matmul: batched matrix products with broadcasting batch dimensions
# ---------------------------------------------------------------------------------------


def _match_batch_axes(a: Any, b: Any) -> tuple[list[int], list[int], list[int]]:
    """Line up the batch axes of ``a`` and ``b`` from the right, as broadcasting does.

    Position ``i`` of the broadcast batch shape is a ``dot_general`` batch dimension if
    both sizes agree. A size 1 facing a larger size is squeezed out; the larger side's
    axis (like an axis the other side lacks) is then a free dimension of that side.
    Returns the batch positions and the axes of ``a`` and of ``b`` to squeeze.
    """
    a_batch, b_batch = a.shape[:-2], b.shape[:-2]
    n_batch = max(len(a_batch), len(b_batch))
    batch, a_squeeze, b_squeeze = [], [], []
    for i in range(n_batch):
        ia, ib = i - (n_batch - len(a_batch)), i - (n_batch - len(b_batch))
        sa = a_batch[ia] if ia >= 0 else None
        sb = b_batch[ib] if ib >= 0 else None
        if sa is not None and sa == sb:
            batch.append(i)
        elif sa == 1 and sb is not None:
            a_squeeze.append(ia)
        elif sb == 1 and sa is not None:
            b_squeeze.append(ib)
        elif sa is not None and sb is not None:
            raise ValueError(f"Incompatible types for matmul arguments: {a.aval.str_long()} "
                             f"and {b.aval.str_long()}")
    return batch, a_squeeze, b_squeeze


def _labels(x: Any, n_batch: int, squeezed: list[int], matrix_axis: str) -> list[Any]:
    """Name each axis of ``x`` after squeezing: batch axes by their broadcast position,
    then ``matrix_axis`` ("row" or "col") unless ``x`` is a vector, and "k", the
    contracted axis, in its place."""
    if x.ndim == 1:
        return ["k"]
    offset = n_batch - (x.ndim - 2)
    labels: list[Any] = [i + offset for i in range(x.ndim - 2) if i not in squeezed]
    return labels + ([matrix_axis, "k"] if matrix_axis == "row" else ["k", matrix_axis])


def matmul(a: Any, b: Any, *, precision: Any = None, preferred_element_type: Any = None,
           out_sharding: Any = None) -> Any:
    """``a @ b``: matrix products over the last two axes, leading axes broadcast as a batch.

    A 1-D operand is a vector (no row or column axis in the result). Batch axes are
    matched by :func:`_match_batch_axes`; after one ``dot_general``, a transpose puts
    the axes in NumPy's order: batch, then row, then column.
    """
    (a, b), dtype = _operands("matmul", a, b, preferred_element_type=preferred_element_type)
    for i, x in enumerate((a, b)):
        if x.ndim == 0:
            raise ValueError(
                f"matmul input operand {i} must have ndim at least 1, but it has ndim 0"
            )
    if a.ndim == b.ndim >= 2 and a.shape[:-2] == b.shape[:-2]:  # the common case, made fast
        batch_axes = tuple(range(a.ndim - 2))
        return _contract(a, b, ((a.ndim - 1,), (a.ndim - 2,)), (batch_axes, batch_axes),
                         dtype=dtype, precision=precision)
    batch, a_squeeze, b_squeeze = _match_batch_axes(a, b)
    n_batch = max(a.ndim, b.ndim, 2) - 2
    a_labels = _labels(a, n_batch, a_squeeze, "row")
    b_labels = _labels(b, n_batch, b_squeeze, "col")
    a, b = lax.squeeze(a, a_squeeze), lax.squeeze(b, b_squeeze)
    out = _contract(a, b, ((a_labels.index("k"),), (b_labels.index("k"),)),
                    ([a_labels.index(i) for i in batch], [b_labels.index(i) for i in batch]),
                    dtype=dtype, precision=precision)
    free = [x for x in a_labels + b_labels if x not in batch and x != "k"]
    out_labels = batch + free
    wanted = sorted(x for x in out_labels if isinstance(x, int)) \
        + [x for x in ("row", "col") if x in out_labels]
    return lax.transpose(out, [out_labels.index(x) for x in wanted])


# ---------------------------------------------------------------------------------------
# tensordot
# ---------------------------------------------------------------------------------------


def tensordot(a: Any, b: Any, axes: Any = 2, *, precision: Any = None,
              preferred_element_type: Any = None, out_sharding: Any = None) -> Any:
    """Contract ``axes`` axes: an int ``n`` pairs the last ``n`` of ``a`` with the first
    ``n`` of ``b``; a pair of sequences names the axes of each."""
    (a, b), dtype = _operands("tensordot", a, b,
                              preferred_element_type=preferred_element_type)
    if isinstance(axes, (int, np.integer)):
        n = int(axes)
        if n > min(a.ndim, b.ndim):
            raise TypeError(f"Number of tensordot axes (axes {n}) exceeds input ranks "
                            f"({a.shape} and {b.shape})")
        n = max(n, 0)
        contract = (tuple(range(a.ndim - n, a.ndim)), tuple(range(n)))
    elif isinstance(axes, (list, tuple)) and len(axes) == 2:
        a_axes, b_axes = (list(ax) if isinstance(ax, (list, tuple)) else [ax] for ax in axes)
        if len(a_axes) != len(b_axes):
            raise TypeError("tensordot requires axes lists to have equal length, got "
                            f"{a_axes} and {b_axes}.")
        contract = (reduction_axes(a_axes, a.ndim), reduction_axes(b_axes, b.ndim))
    else:
        raise TypeError("tensordot axes argument must be an int, a pair of ints, or a pair "
                        f"of lists/tuples of ints, got {axes}.")
    return _contract(a, b, contract, dtype=dtype, precision=precision)


# ---------------------------------------------------------------------------------------
# Diagonals: trace, and repeated einsum labels
# ---------------------------------------------------------------------------------------


def _keep_diagonal(x: Any, axis1: int, axis2: int, offset: int = 0) -> Any:
    """Zero every element off the (offset) diagonal of ``axis1`` and ``axis2``."""
    return lax.select(diagonal_mask(x.shape, axis1, axis2, offset), x, lax.full_like(x, 0))


@partial(jit, static_argnames=("axis1", "axis2", "dtype"))
def trace(a: Any, offset: Any = 0, axis1: int = 0, axis2: int = 1, dtype: Any = None,
          out: Any = None) -> Any:
    """The sum along a diagonal of ``axis1`` and ``axis2`` (integers widen as in ``sum``).
    The ``offset`` of the diagonal is an array argument: it may be traced."""
    check_arraylike("trace", a)
    a = moveaxis(a, (axis1, axis2), (-2, -1))
    mask = diagonal_mask(a.shape[-2:], 0, 1, offset)
    diagonal_only = where(mask, a, lax.full_like(a, 0))
    return _sum(diagonal_only, (a.ndim - 2, a.ndim - 1), dtype, out)


# ---------------------------------------------------------------------------------------
# einsum
# ---------------------------------------------------------------------------------------


def _parse_einsum(subscripts: str, operands: Sequence[Any]) -> tuple[list[str], str]:
    """Input terms and output term, with every ``...`` replaced by fresh letters (aligned
    from the right across operands) and an implicit output spelled out."""
    lhs, arrow, output = subscripts.replace(" ", "").partition("->")
    inputs = lhs.split(",")
    if len(inputs) != len(operands):
        raise ValueError(f"Number of einsum subscripts, {len(inputs)}, must be equal to the "
                         f"number of operands, {len(operands)}.")
    fresh = [c for c in string.ascii_letters if c not in subscripts]
    spans = [x.ndim - (len(t) - 3) if "..." in t else 0 for t, x in zip(inputs, operands)]
    ellipsis = "".join(fresh[:max(spans, default=0)])
    inputs = [t.replace("...", ellipsis[len(ellipsis) - n:]) for t, n in zip(inputs, spans)]
    for i, (term, x) in enumerate(zip(inputs, operands)):
        if len(term) != x.ndim:
            raise ValueError(f"einstein sum subscripts string {term!r} does not match the "
                             f"number of dimensions of operand {i} (shape {x.shape}).")
    if arrow:
        return inputs, output.replace("...", ellipsis)
    labels = "".join(inputs)  # implicit output: labels seen once, in alphabetical order
    once = sorted(c for c in set(labels) if labels.count(c) == 1 and c not in ellipsis)
    return inputs, ellipsis + "".join(once)


def _check_label_sizes(inputs: list[str], operands: Sequence[Any]) -> None:
    sizes: dict[str, int] = {}
    for i, (term, x) in enumerate(zip(inputs, operands)):
        for label, size in zip(term, x.shape):
            if sizes.setdefault(label, size) != size:
                raise ValueError(f"Size of label '{label}' for operand {i} ({size}) does not "
                                 f"match previous terms ({sizes[label]}).")


def _reduce_alone(x: Any, labels: str, needed: str) -> tuple[Any, str]:
    """Take diagonals of repeated labels, then sum out labels no one else needs."""
    while len(set(labels)) != len(labels):
        label = next(c for c in labels if labels.count(c) > 1)
        first, second = labels.index(label), labels.index(label, labels.index(label) + 1)
        x = lax.reduce_sum(_keep_diagonal(x, first, second), (second,))
        labels = labels[:second] + labels[second + 1:]
    unneeded = tuple(i for i, c in enumerate(labels) if c not in needed)
    if unneeded:
        x = lax.reduce_sum(x, unneeded)
        labels = "".join(c for c in labels if c in needed)
    return x, labels


def einsum(subscripts: str, /, *operands: Any, out: Any = None, optimize: Any = "auto",
           precision: Any = None, preferred_element_type: Any = None,
           out_sharding: Any = None) -> Any:
    """Einstein summation: ``einsum('ij,jk->ik', a, b)`` is ``a @ b``.

    Operands are reduced on their own first (diagonals for repeated labels, sums over
    labels used nowhere else), then contracted left to right, each pair with one
    ``dot_general``: shared labels still needed later are batch dimensions, the other
    shared labels are contracted. A final transpose orders the output labels.
    """
    if not isinstance(subscripts, str):
        raise TypeError("minijax's einsum takes a subscripts string as first argument")
    arrays, dtype = _operands("einsum", *operands,
                              preferred_element_type=preferred_element_type)
    inputs, output = _parse_einsum(subscripts, arrays)
    _check_label_sizes(inputs, arrays)
    terms = []
    for i, (x, labels) in enumerate(zip(arrays, inputs)):
        others = "".join(inputs[:i] + inputs[i + 1:])
        terms.append(_reduce_alone(x, labels, output + others))
    x, labels = terms[0]
    for i, (y, y_labels) in enumerate(terms[1:], start=1):
        later = output + "".join(t[1] for t in terms[i + 1:])
        shared = [c for c in labels if c in y_labels]
        batch = [c for c in shared if c in later]
        contracted = [c for c in shared if c not in later]
        x = _contract(x, y, ([labels.index(c) for c in contracted],
                             [y_labels.index(c) for c in contracted]),
                      ([labels.index(c) for c in batch], [y_labels.index(c) for c in batch]),
                      dtype=dtype, precision=precision)
        labels = "".join(batch) + "".join(c for c in labels if c not in shared) \
            + "".join(c for c in y_labels if c not in shared)
    x = lax.transpose(x, [labels.index(c) for c in output])
    return x if x.dtype == dtype else lax.convert_element_type(x, dtype)


# ---------------------------------------------------------------------------------------
# kron
# ---------------------------------------------------------------------------------------


def _with_leading_ones(x: Any, ndim: int) -> Any:
    lead = ndim - x.ndim
    if not lead:
        return x
    return lax.broadcast_in_dim(x, (1,) * lead + x.shape, range(lead, ndim))


@jit
def kron(a: Any, b: Any) -> Any:
    """The Kronecker product: every element of ``a`` times the whole of ``b``, in blocks."""
    check_arraylike("kron", a, b)
    a, b = promote_dtypes(asarray(a), asarray(b))
    ndim = max(a.ndim, b.ndim)
    a, b = (_with_leading_ones(x, ndim) for x in (a, b))
    # a gets a size-1 axis after each of its axes, b before each: their product tiles.
    a_blocks = lax.broadcast_in_dim(a, [d for s in a.shape for d in (s, 1)], range(0, 2 * ndim, 2))
    b_blocks = lax.broadcast_in_dim(b, [d for s in b.shape for d in (1, s)], range(1, 2 * ndim, 2))
    shape = [x * y for x, y in zip(a.shape, b.shape)]
    return lax.reshape(lax.mul(a_blocks, b_blocks), shape)


def matrix_transpose(x: Any, /) -> Any:
    """Swap the last two axes (of an array with at least two)."""
    x = asarray(x)
    if x.ndim < 2:
        raise ValueError(f"x must be at least two-dimensional for matrix_transpose; got "
                         f"ndim={x.ndim}")
    return lax.linalg.matrix_transpose(x)


def vecdot(x1: Any, x2: Any, /, *, axis: int = -1, precision: Any = None,
           preferred_element_type: Any = None) -> Any:
    """Σ conj(x1) x2 along ``axis``, the other axes broadcast: batched dot products."""
    from minijax.numpy.ufuncs import conj, multiply

    check_arraylike("vecdot", x1, x2)
    x1, x2 = asarray(x1), asarray(x2)
    if x1.shape[axis] != x2.shape[axis]:
        raise ValueError(f"x1 and x2 must have matching sizes along axis={axis}; got "
                         f"{x1.shape} and {x2.shape}")
    return _sum(multiply(conj(x1), x2), axis=axis)


def matvec(x1: Any, x2: Any, /) -> Any:
    """Matrix-vector products over broadcast batch axes: (..., m, n) @ (..., n)."""
    check_arraylike("matvec", x1, x2)
    x2 = asarray(x2)
    return matmul(x1, lax.expand_dims(x2, [x2.ndim]))[..., 0]


def vecmat(x1: Any, x2: Any, /) -> Any:
    """Vector-matrix products conj(x1) @ x2 over broadcast batch axes: (..., m) @ (..., m, n)."""
    from minijax.numpy.ufuncs import conj

    check_arraylike("vecmat", x1, x2)
    x1 = conj(asarray(x1))
    return matmul(lax.expand_dims(x1, [x1.ndim - 1]), x2)[..., 0, :]


def cross(a: Any, b: Any, axisa: int = -1, axisb: int = -1, axisc: int = -1,
          axis: int | None = None) -> Any:
    """The cross product of 3-vectors (or of 2-vectors, padded with a zero z component;
    two 2-vectors give the scalar z component), vectors along ``axisa``/``axisb``."""
    from minijax.numpy.manipulation import broadcast_arrays, stack

    check_arraylike("cross", a, b)
    if axis is not None:
        axisa = axisb = axisc = axis
    a, b = (moveaxis(asarray(x), ax, -1) for x, ax in ((a, axisa), (b, axisb)))
    if a.shape[-1] not in (2, 3) or b.shape[-1] not in (2, 3):
        raise ValueError("Dimension must be either 2 or 3 for cross product")
    a, b = promote_dtypes(a, b)
    if a.shape[-1] == 2 and b.shape[-1] == 2:
        a, b = broadcast_arrays(a, b)
        return a[..., 0] * b[..., 1] - a[..., 1] * b[..., 0]
    a0, a1, a2 = a[..., 0], a[..., 1], a[..., 2] if a.shape[-1] == 3 else 0 * a[..., 0]
    b0, b1, b2 = b[..., 0], b[..., 1], b[..., 2] if b.shape[-1] == 3 else 0 * b[..., 0]
    c = stack(broadcast_arrays(a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0),
              axis=-1)
    return moveaxis(c, -1, axisc)
