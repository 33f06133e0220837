"""Making arrays: from Python and NumPy data, from shapes (zeros, ones, full), ranges
(arange, linspace), and matrices with structure (eye, tri, tril, triu).

Values from the host get JAX's dtypes: canonicalised (float64 becomes float32 unless x64
is on), and *weak* if they were bare Python scalars -- ``jnp.asarray(1.0)`` is a weak
float32, ``jnp.asarray([1.0])`` is not. A ``dtype=`` argument naming a 64-bit type with
x64 off is truncated with JAX's warning, which names the function.

Arrays computed from shapes are made with ``lax`` even when nothing is traced: ``arange``
is an ``iota``, ``eye`` compares two ``iota``s. So their jaxprs show what JAX shows.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Sequence
from functools import partial
from typing import Any

import numpy as np

from minijax import dtypes, errors, lax
from minijax.array import Array
from minijax.compiler.jit import jit
from minijax.core import Tracer
from minijax.numpy.promotion import result_type
from minijax.runtime import host_to_array


def _contains_arrays(obj: Any) -> bool:
    if isinstance(obj, (list, tuple)):
        return any(_contains_arrays(o) for o in obj)
    return isinstance(obj, (Array, Tracer))


def asarray(a: Any, dtype: Any = None, order: str | None = None, *, copy: bool | None = None
            ) -> Any:
    """``a`` as an array, without copying if it already is one of the right dtype."""
    if dtype is None and not copy and isinstance(a, (Array, Tracer)):
        return a  # (the common case, in every ``jnp`` function: nothing to do)
    if dtype is not None:
        dtype = dtypes.check_and_canonicalize_user_dtype(dtype, "asarray")
    return array(a, dtype=dtype, copy=False if copy is None else copy)


def array(object: Any, dtype: Any = None, copy: bool = True, order: str | None = "K",
          ndmin: int = 0) -> Any:
    """An array from a scalar, nested lists/tuples (which may hold arrays) or an array.

    ``copy=True`` makes a new array even from an array: a ``copy`` operation, dispatched
    like any other (so it does not wait for a value still being computed).
    """
    if dtype is not None:
        dtype = dtypes.check_and_canonicalize_user_dtype(dtype, "array")
    if isinstance(object, range):  # read as the list of its numbers, as JAX does
        object = list(object)
    if isinstance(object, (Array, Tracer)):
        out = lax.copy_p.bind(object) if copy else object
    elif _contains_arrays(object):
        out = _stack_nested(object, dtype or _leaf_dtype(object))
    else:
        out = _from_host(object, dtype)
    if dtype is not None:
        out = lax.convert_element_type(out, dtype, False)
    for _ in range(ndmin - np.ndim(out)):
        out = lax.broadcast_in_dim(out, (1, *out.shape), range(1, out.ndim + 1))
    return out


def _from_host(obj: Any, dtype: np.dtype | None) -> Array:
    """Python scalars, NumPy values and nested lists of them, converted on the host.

    NumPy applies the dtype (given, or for lists promoted from the leaves), and it refuses
    a Python int that the dtype cannot hold: ``jnp.uint8(300)`` and ``jnp.array([2**40])``
    raise ``OverflowError``, as in JAX. A bare Python scalar without a dtype becomes a
    weakly typed array.
    """
    if obj is None:
        raise ValueError("None is not a valid value for jnp.array")
    _check_not_text(obj)
    if isinstance(obj, (list, tuple)):
        dtype = dtype or _leaf_dtype(obj)
    elif dtype is None:
        return host_to_array(obj)
    return host_to_array(np.asarray(obj, dtype=dtype))


def _check_not_text(leaf: Any) -> None:
    """Strings are not array elements: JAX names the dtype NumPy would give them (``<U1``)."""
    if isinstance(leaf, (str, bytes)):
        raise TypeError(f"Value '{leaf}' with dtype {np.asarray(leaf).dtype} is not a valid JAX "
                        "array type. Only arrays of numeric types are supported by JAX.")


def _leaves(obj: Any) -> list[Any]:
    if isinstance(obj, (list, tuple)):
        return [leaf for o in obj for leaf in _leaves(o)]
    return [obj]


_PYTHON_SCALARS = (bool, int, float, complex)


def _leaf_dtype(obj: Any) -> np.dtype:
    """The dtype of ``jnp.array`` of nested lists: all leaves promoted, never weak; float
    for no leaves. One leaf of each Python scalar type is enough to decide."""
    python_scalars, others = {}, []
    for leaf in _leaves(obj):
        if type(leaf) in _PYTHON_SCALARS:
            python_scalars[type(leaf)] = leaf
        elif leaf is None:
            raise ValueError("None is not a valid value for jnp.array")
        else:
            _check_not_text(leaf)
            keep = isinstance(leaf, (Array, Tracer)) or np.ndim(leaf) == 0
            others.append(leaf if keep else np.asarray(leaf))
    if not python_scalars and not others:
        return dtypes.canonicalize_dtype(np.float64)
    return result_type(*python_scalars.values(), *others)[0]


def _stack_nested(obj: Any, dtype: np.dtype) -> Any:
    """Nested lists that hold arrays (or tracers): each converted to ``dtype``, given a new
    leading axis, and concatenated -- which is how JAX records ``jnp.array([x, y])``."""
    if not isinstance(obj, (list, tuple)):
        leaf = obj if isinstance(obj, (Array, Tracer)) else np.asarray(obj)
        return lax.convert_element_type(leaf, dtype, False)
    parts = [lax.expand_dims(lax.operand(_stack_nested(o, dtype)), [0]) for o in obj]
    return lax.concatenate(parts, 0)


def _filled(fun_name: str, fill_value: int) -> Any:
    def filled(shape: Any, dtype: Any = None, *, device: Any = None) -> Any:
        dt = dtypes.check_and_canonicalize_user_dtype(float if dtype is None else dtype,
                                                      fun_name)
        return lax.full(shape, fill_value, dt)

    filled.__name__ = filled.__qualname__ = fun_name
    filled.__doc__ = f"An array of ``shape`` filled with {fill_value}s (float32 by default)."
    return filled


zeros = _filled("zeros", 0)
ones = _filled("ones", 1)
empty = _filled("empty", 0)  # JAX has no uninitialised memory: ``empty`` is ``zeros``


def full(shape: Any, fill_value: Any, dtype: Any = None, *, device: Any = None) -> Any:
    if dtype is not None:
        dtype = dtypes.check_and_canonicalize_user_dtype(dtype, "full")
    if np.ndim(fill_value) == 0:
        return lax.full(shape, fill_value, dtype)
    from minijax.numpy.promotion import broadcast_to

    return broadcast_to(asarray(fill_value, dtype=dtype), shape)


def _like(fun_name: str, fill: Any) -> Any:
    def like(a: Any, dtype: Any = None, shape: Any = None, *, device: Any = None) -> Any:
        a = asarray(a)
        if dtype is not None:
            dtype = dtypes.check_and_canonicalize_user_dtype(dtype, fun_name)
        return lax.full_like(a, fill, dtype, shape)

    like.__name__ = like.__qualname__ = fun_name
    like.__doc__ = f"Like ``{fun_name[:-5]}``, with the shape and dtype of ``a`` by default."
    return like


zeros_like = _like("zeros_like", 0)
ones_like = _like("ones_like", 1)
empty_like = _like("empty_like", 0)


def full_like(a: Any, fill_value: Any, dtype: Any = None, shape: Any = None, *,
              device: Any = None) -> Any:
    a = asarray(a)
    if dtype is not None:
        dtype = dtypes.check_and_canonicalize_user_dtype(dtype, "full_like")
    return lax.full_like(a, fill_value, dtype, shape)


def copy(a: Any, order: str | None = None) -> Any:
    """A copy of ``a`` (arrays are immutable, but ``copy`` is still a new buffer)."""
    from minijax.numpy.promotion import check_arraylike

    check_arraylike("copy", a)
    return lax.copy_p.bind(lax.operand(a))


# ---------------------------------------------------------------------------------------
# Ranges
# ---------------------------------------------------------------------------------------


def _concrete_scalar(value: Any, fun_name: str, arg_name: str) -> Any:
    """A Python number from an argument that must be known now (not traced)."""
    if isinstance(value, Tracer) and value.to_concrete_value() is None:
        raise errors.ConcretizationTypeError(
            value.aval.str_long(), f"It arose in the {fun_name} argument '{arg_name}'",
            value._context(),
        )
    if isinstance(value, complex) or np.iscomplexobj(value):
        raise ValueError("Passing complex start/stop/step to jnp.arange is no longer "
                         "supported starting in JAX v0.10.0.")
    return np.asarray(value).item() if isinstance(value, (Array, Tracer)) else value


def arange(start: Any, stop: Any = None, step: Any = None, dtype: Any = None, *,
           device: Any = None) -> Any:
    """``start, start + step, ...`` up to (not including) ``stop``: an ``iota``, scaled by
    ``step`` and shifted by ``start``. All arguments must be known when tracing."""
    if stop is None and step is None:
        args = {"stop": start}
    else:
        args = {"start": start, "stop": stop, "step": step}
    values = {k: _concrete_scalar(v, "jnp.arange", k) for k, v in args.items() if v is not None}
    if dtype is None:
        dt = result_type(*values.values())[0]
    else:
        dt = dtypes.check_and_canonicalize_user_dtype(dtype, "arange")
    first, last, delta = values.get("start", 0), values["stop"], values.get("step", 1)
    size = max(math.ceil((last - first) / delta), 0)
    out = lax.iota(dt, size)
    if delta != 1:  # the scalar first, as JAX records it
        out = lax.mul(lax.convert_element_type(delta, dt), out)
    if first != 0 or delta != 1:
        out = lax.add(lax.convert_element_type(first, dt), out)
    return out


def linspace(start: Any, stop: Any, num: int = 50, endpoint: bool = True,
             retstep: bool = False, dtype: Any = None, axis: int = 0, *,
             device: Any = None) -> Any:
    """``num`` evenly spaced values from ``start`` to ``stop`` (included if ``endpoint``).

    ``start`` and ``stop`` may be arrays: the values then run along a new ``axis``.
    Computed in floating point; an integer ``dtype`` rounds down, as JAX does.
    """
    from minijax.numpy.promotion import broadcast_to, to_inexact_dtype

    num = operator.index(num)
    if num < 0:
        raise ValueError(f"Number of samples, {num}, must be non-negative.")
    compute = to_inexact_dtype(result_type(start, stop)[0])
    dt = compute if dtype is None else dtypes.check_and_canonicalize_user_dtype(dtype,
                                                                                 "linspace")
    start, stop = (lax.convert_element_type(v, compute, False) for v in (start, stop))
    shape = tuple(np.broadcast_shapes(np.shape(start), np.shape(stop)))
    start, stop = broadcast_to(start, shape), broadcast_to(stop, shape)
    axis = lax.canonicalize_axes((axis,), len(shape) + 1)[0]
    div = num - 1 if endpoint else num
    step = lax.div(lax.sub(stop, start), lax.convert_element_type(div, compute)) \
        if div > 0 else lax.full_like(start, np.nan)
    if num == 1:
        out = lax.expand_dims(start, [axis])
    else:  # start * (1 - t) + stop * t for t = i / div, as JAX computes it
        count = max(div, 0)  # the values before ``stop``
        part_shape = shape[:axis] + (count,) + shape[axis:]
        others = [d for d in range(len(part_shape)) if d != axis]
        t = lax.div(lax.iota(compute, count), lax.convert_element_type(div, compute))
        t = lax.broadcast_in_dim(t, part_shape, (axis,))
        one = lax.convert_element_type(1, compute)
        out = lax.add(lax.mul(lax.broadcast_in_dim(start, part_shape, others), lax.sub(one, t)),
                      lax.mul(lax.broadcast_in_dim(stop, part_shape, others), t))
        if endpoint and num > 1:
            out = lax.concatenate([out, lax.expand_dims(stop, [axis])], axis)
    if not dtypes.issubdtype(dt, np.inexact):
        out = lax.floor(out)
    out = lax.convert_element_type(out, dt, False)
    return (out, lax.convert_element_type(step, dt, False)) if retstep else out


def logspace(start: Any, stop: Any, num: int = 50, endpoint: bool = True,
             base: Any = 10.0, dtype: Any = None, axis: int = 0) -> Any:
    """``base ** linspace(start, stop)``: values evenly spaced on a log scale."""
    from minijax.numpy.ufuncs import power

    user_dtype = None if dtype is None else dtypes.check_and_canonicalize_user_dtype(
        dtype, "logspace")
    exponents = linspace(start, stop, num, endpoint, axis=axis)
    out = power(lax.convert_element_type(base, exponents.dtype), exponents)
    return out if user_dtype is None else lax.convert_element_type(out, user_dtype, False)


def geomspace(start: Any, stop: Any, num: int = 50, endpoint: bool = True,
              dtype: Any = None, axis: int = 0) -> Any:
    """Values evenly spaced on a log scale from ``start`` to ``stop`` (same sign)."""
    from minijax.numpy.ufuncs import exp, log, sign

    user_dtype = None if dtype is None else dtypes.check_and_canonicalize_user_dtype(
        dtype, "geomspace")
    signs = sign(start)
    start, stop = start * signs, stop * signs
    out = exp(linspace(log(start), log(stop), num, endpoint, axis=axis)) * signs
    if num > 0:  # the ends exactly, not as exp(log(.))
        out = out.at[(slice(None),) * axis + (0,)].set(start * signs)
        if endpoint and num > 1:
            out = out.at[(slice(None),) * axis + (-1,)].set(stop * signs)
    return out if user_dtype is None else lax.convert_element_type(out, user_dtype, False)


# ---------------------------------------------------------------------------------------
# Structured matrices
# ---------------------------------------------------------------------------------------


def _matrix_shape(N: int, M: int | None) -> tuple[int, int]:
    n, m = operator.index(N), N if M is None else operator.index(M)
    if n < 0 or m < 0:
        raise ValueError(f"negative dimensions are not allowed, got {N} and {M}")
    return n, m


def diagonal_mask(shape: Sequence[int], axis1: int, axis2: int, offset: Any = 0) -> Any:
    """True where the index along ``axis2`` is the index along ``axis1`` plus ``offset``
    (which may be traced). The mask of ``eye``, ``diag`` and ``trace``."""
    rows = lax.broadcasted_iota(np.int32, shape, axis1)
    columns = lax.broadcasted_iota(np.int32, shape, axis2)
    return lax.eq(lax.add(rows, lax.convert_element_type(offset, np.int32)), columns)


def _triangle_mask(shape: tuple[int, int], k: int, compare: Any) -> Any:
    """``compare(row + k, column)`` for every element of a matrix of ``shape``: the mask of
    ``tri``, ``tril`` and ``triu`` (which, unlike :func:`diagonal_mask`, adds ``k`` before
    making the column indices, as JAX records it)."""
    shifted_rows = lax.add(lax.broadcasted_iota(np.int32, shape, 0), np.int32(k))
    return compare(shifted_rows, lax.broadcasted_iota(np.int32, shape, 1))


def eye(N: int, M: int | None = None, k: int = 0, dtype: Any = None, *,
        device: Any = None) -> Any:
    """Ones on the ``k``-th diagonal (``column - row == k``), zeros elsewhere."""
    dt = dtypes.check_and_canonicalize_user_dtype(float if dtype is None else dtype, "eye")
    shape = _matrix_shape(N, M)
    mask = diagonal_mask(shape, 0, 1, np.int32(operator.index(k)))
    return lax.convert_element_type(mask, dt, False)


def identity(n: int, dtype: Any = None) -> Any:
    """The ``n`` by ``n`` identity matrix."""
    if dtype is not None:
        dtype = dtypes.check_and_canonicalize_user_dtype(dtype, "identity")
    return eye(n, dtype=dtype)


def tri(N: int, M: int | None = None, k: int = 0, dtype: Any = None) -> Any:
    """Ones at and below the ``k``-th diagonal (``column <= row + k``), zeros above."""
    dt = dtypes.check_and_canonicalize_user_dtype(float if dtype is None else dtype, "tri")
    mask = _triangle_mask(_matrix_shape(N, M), operator.index(k), lax.ge)
    return lax.convert_element_type(mask, dt, False)


def _triangle(name: str, m: Any, k: int, below: bool) -> Any:
    m = asarray(m)
    if m.ndim < 2:
        raise ValueError(f"Argument to jax.numpy.{name} must be at least 2D")
    rows, columns = m.shape[-2:]
    mask = _triangle_mask((rows, columns), k if below else k - 1, lax.ge)
    mask = lax.broadcast_in_dim(mask, m.shape, (m.ndim - 2, m.ndim - 1))
    zeros = lax.full_like(m, 0)
    return lax.select(mask, m, zeros) if below else lax.select(mask, zeros, m)


@partial(jit, static_argnames=("k",))
def tril(m: Any, k: int = 0) -> Any:
    """``m`` with the elements above the ``k``-th diagonal set to zero."""
    return _triangle("tril", m, operator.index(k), below=True)


@partial(jit, static_argnames=("k",))
def triu(m: Any, k: int = 0) -> Any:
    """``m`` with the elements below the ``k``-th diagonal set to zero."""
    return _triangle("triu", m, operator.index(k), below=False)


# ---------------------------------------------------------------------------------------
# Grids
# ---------------------------------------------------------------------------------------


def meshgrid(*xi: Any, copy: bool = True, sparse: bool = False, indexing: str = "xy"
             ) -> list[Any]:
    """Coordinate arrays for a grid: one array per vector in ``xi``, each varying along
    its own dimension (``indexing='xy'`` swaps the first two, as for images)."""
    if indexing not in ("xy", "ij"):
        raise ValueError(f"Valid values for indexing are 'xy' and 'ij', got {indexing}")
    arrays = [asarray(x) for x in xi]
    if any(a.ndim != 1 for a in arrays):
        shapes = [a.shape for a in arrays]
        raise ValueError(f"Arguments to jax.numpy.meshgrid must be 1D, got shapes {shapes}")
    dims = list(range(len(arrays)))
    if indexing == "xy" and len(arrays) > 1:
        dims[0], dims[1] = 1, 0
    shape = [0] * len(arrays)
    for a, d in zip(arrays, dims):
        shape[d] = a.shape[0]
    if sparse:
        return [lax.broadcast_in_dim(a, [shape[d] if i == d else 1 for i in range(len(shape))],
                                     (d,)) for a, d in zip(arrays, dims)]
    return [lax.broadcast_in_dim(a, shape, (d,)) for a, d in zip(arrays, dims)]


def indices(dimensions: Any, dtype: Any = None, sparse: bool = False) -> Any:
    """Grid of indices: ``out[d][i0, i1, ...] = i_d`` (a tuple of vectors if ``sparse``)."""
    dt = dtypes.check_and_canonicalize_user_dtype(int if dtype is None else dtype, "indices")
    shape = lax.canonicalize_shape(dimensions)
    grids = []
    for d, n in enumerate(shape):
        full = shape if not sparse else tuple(n if i == d else 1 for i in range(len(shape)))
        grids.append(lax.broadcast_in_dim(lax.iota(dt, n), full, (d,)))
    return tuple(grids) if sparse else lax.stack(grids, 0) if grids else \
        lax.full((0,), 0, dt)
