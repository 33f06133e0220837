"""How ``jnp`` makes operands agree before calling strict ``lax``: dtypes, then ranks.

``jnp.add(x, y)`` is ``lax.add`` after two steps that NumPy users take for granted:

1. *dtype promotion*: both operands become ``result_type(x, y)`` (JAX's lattice, with
   weak types, see ``minijax.dtypes``), with ``lax.convert_element_type``;
2. *rank promotion*: a lower-rank operand gets leading dimensions of size 1, with
   ``lax.broadcast_in_dim``. Dimensions of size 1 are then stretched by ``lax`` itself.

Scalars (rank 0) skip step 2: every ``lax`` elementwise primitive accepts them as is.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from minijax import dtypes, lax, tracing
from minijax.array import Array
from minijax.core import Tracer
from minijax.flags import config, on_pieces_change

_INEXACT = frozenset(np.dtype(t) for t in (dtypes.float16, dtypes.bfloat16, dtypes.float32,
                                            dtypes.float64, dtypes.complex64, dtypes.complex128))
_PYTHON_SCALARS = (bool, int, float, complex)


def is_arraylike(x: Any) -> bool:
    return (type(x) is Array or type(x) in _PYTHON_SCALARS
            or isinstance(x, (Tracer, np.ndarray, np.generic)))


def check_arraylike(fun_name: str, *args: Any) -> None:
    """jnp functions take arrays and scalars, not lists: ``jnp.add([1, 2], x)`` is an error."""
    for i, arg in enumerate(args):
        if not is_arraylike(arg):
            raise TypeError(
                f"{fun_name} requires ndarray or scalar arguments, got {type(arg)} at "
                f"position {i}."
            )


_result_types: dict[tuple, tuple[np.dtype, bool]] = {}
on_pieces_change(_result_types.clear)  # the promotion join is a piece


def _promotion_key(x: Any) -> Any:
    """What promotion looks at: a Python scalar's type, or an array's dtype and weak flag."""
    if type(x) in _PYTHON_SCALARS:
        return type(x)
    if type(x) is Array or isinstance(x, Tracer):
        return x.aval.dtype, x.aval.weak_type
    raise KeyError  # NumPy values and others: not memoised


def result_type(*args: Any) -> tuple[np.dtype, bool]:
    """``dtypes.result_type(*args)`` with its weak flag, memoised on what it depends on.

    Every ``jnp`` call promotes its operands, so this sits on the hot path of eager code;
    the answer depends only on dtypes, weak flags and the two promotion flags.
    """
    try:
        key = (*map(_promotion_key, args), config.jax_enable_x64,
               config.jax_numpy_dtype_promotion)
        return _result_types[key]
    except KeyError:
        result = dtypes.result_type(*args, return_weak_type_flag=True)
        if "key" in locals():
            _result_types[key] = result
        return result


def promote_dtypes(*args: Any) -> list[Any]:
    """Convert every argument to their common dtype (weak only if all were weak)."""
    dtype, weak = result_type(*args)
    return [lax.convert_element_type(a, dtype, weak) for a in args]


def to_inexact_dtype(dtype: np.dtype) -> np.dtype:
    """The floating-point dtype a function like ``sin`` computes integer inputs in."""
    if dtypes.issubdtype(dtype, np.inexact):
        return dtype
    # As in JAX 0.10: 64-bit integers compute in float64 (if x64 is on), all others in float32.
    return dtypes.canonicalize_dtype(np.float64 if dtype.itemsize == 8 else np.float32)


def promote_dtypes_inexact(*args: Any) -> list[Any]:
    """Like :func:`promote_dtypes`, then integers and booleans go to the default float."""
    dtype, weak = result_type(*args)
    return [lax.convert_element_type(a, to_inexact_dtype(dtype), weak) for a in args]


def promote_shapes(fun_name: str, *args: Any) -> list[Any]:
    """Give lower-rank, non-scalar operands leading size-1 dimensions (rank promotion)."""
    ranks = [a.ndim if type(a) is Array or isinstance(a, Tracer) else np.ndim(a) for a in args]
    top = max(ranks, default=0)
    if any(rank not in (0, top) for rank in ranks):
        broadcast_shapes_checked([np.shape(a) for a in args])
    out = []
    for arg, rank in zip(args, ranks):
        if rank == top or rank == 0:
            out.append(arg)
        else:
            shape = np.shape(arg)
            out.append(lax.broadcast_in_dim(arg, (1,) * (top - rank) + shape,
                                            range(top - rank, top)))
    return out


def one_example_errors(fun: Callable[..., Any]) -> Callable[..., Any]:
    """``fun`` (an elementwise ``jnp`` function), failing as JAX's does under ``vmap``.

    JAX jits its ``jnp`` functions, so it traces them at their arguments' types, which
    under ``vmap`` are the types of one example: ``vmap(add)`` of ``(5, 3)`` and
    ``(5, 4)`` batches fails naming ``(3,), (4,)``. minijax runs them on the batch
    directly, where a batching rule's error would name the batch's shapes; so when
    ``fun`` fails on tracers, it is traced once more at their types (one example's), and
    the error of that trace is raised instead. A call that succeeds costs one more
    Python call, no tracing.
    """
    @functools.wraps(fun)
    def checked(*args: Any) -> Any:
        try:
            return fun(*args)
        except (TypeError, ValueError):
            positions = [i for i, a in enumerate(args) if isinstance(a, Tracer)]
            if not positions:
                raise

            def at_one_example(*tracers: Any) -> list[Any]:
                full = list(args)
                for i, tracer in zip(positions, tracers):
                    full[i] = tracer
                return [fun(*full)]

            try:
                tracing.trace_to_jaxpr(at_one_example, [args[i].aval for i in positions])
            except (TypeError, ValueError) as error:
                raise error from None
            raise

    return checked


def broadcast_shapes_checked(shapes: list[tuple[int, ...]]) -> tuple[int, ...]:
    """NumPy's broadcasting rule with JAX's error; checked before lax sees operands of
    one rank (whose own TypeError would show the shapes already padded with ones)."""
    try:
        return np.broadcast_shapes(*shapes)
    except ValueError:
        raise ValueError(f"Incompatible shapes for broadcasting: shapes={shapes}") from None


def broadcast_to(array: Any, shape: Any) -> Any:
    """NumPy-style broadcasting of ``array`` to ``shape``: new leading dimensions, and
    size-1 dimensions stretched (the stretching itself is ``lax.broadcast_in_dim``)."""
    x = lax.operand(array) if not isinstance(array, (Array, Tracer)) else array
    shape = lax.canonicalize_shape(shape)
    lead = len(shape) - x.ndim
    if lead < 0:
        raise ValueError(f"Cannot broadcast to shape with fewer dimensions: arr_shape={x.shape} "
                         f"shape={shape}")
    if any(d not in (1, s) for d, s in zip(x.shape, shape[lead:])):
        weak = "~" if x.aval.weak_type else ""
        raise ValueError(f"Incompatible types for broadcasting: input type={weak}"
                         f"{x.aval.str_long()} and requested type="
                         f"{x.aval.update(shape=shape).str_long()}")
    return lax.broadcast_in_dim(x, shape, range(lead, len(shape)))


# The dtype kinds a weak Python scalar of each type takes on without changing them.
_SCALAR_FITS = {bool: "b", int: "iufc", float: "fc", complex: "c"}


def _agreeing(args: tuple) -> list[Any] | None:
    """The common cases, made fast (one pass, no lattice): arrays of one dtype and weak
    type, and of one rank except that rank-0 arrays may join any rank (``x - x.mean()``:
    lax takes scalars as they are), which need nothing; and among them Python scalars
    that promotion would simply convert to the arrays' dtype and weak type (``x * 2.0``).
    Returns the promoted operands, or ``None`` if the general rules must decide."""
    aval = None  # the first array's, or the first array's of rank > 0 once one is seen
    scalars = False
    for arg in args:
        if type(arg) is Array or isinstance(arg, Tracer):
            other = arg.aval
            if aval is None:
                aval = other
            elif other.dtype != aval.dtype or other.weak_type != aval.weak_type:
                return None
            elif len(other.shape) != len(aval.shape):
                if other.shape and aval.shape:  # rank promotion is needed
                    return None
                if other.shape:
                    aval = other
        elif type(arg) in _SCALAR_FITS:
            scalars = True
        else:
            return None
    if not scalars:
        return list(args)
    if aval is None or config.jax_numpy_dtype_promotion != "standard":
        return None
    promoted = []
    for arg in args:
        kinds = _SCALAR_FITS.get(type(arg))
        if kinds is not None:
            if aval.dtype.kind not in kinds:
                return None
            arg = lax.convert_element_type(arg, aval.dtype, aval.weak_type)
        promoted.append(arg)
    return promoted


def promote_args(fun_name: str, *args: Any) -> list[Any]:
    """Everything ``jnp.add`` does before ``lax.add``: check, promote dtypes, then ranks."""
    promoted = _agreeing(args)
    if promoted is not None:
        return promoted
    check_arraylike(fun_name, *args)
    return promote_shapes(fun_name, *promote_dtypes(*args))


def promote_args_inexact(fun_name: str, *args: Any) -> list[Any]:
    """As :func:`promote_args`, computing in floating point (for ``sin``, ``divide``, ...)."""
    promoted = _agreeing(args)
    if promoted is not None and promoted[0].aval.dtype in _INEXACT:
        return promoted
    check_arraylike(fun_name, *args)
    return promote_shapes(fun_name, *promote_dtypes_inexact(*args))
