"""Dtypes: JAX's type-promotion lattice, weak types and 32-bit canonicalisation.

Three ideas decide the dtype of every JAX result, and this module holds all three:

1. **Canonicalisation.** With ``jax_enable_x64`` off (the default) JAX has no 64-bit
   types: ``int64`` becomes ``int32``, ``float64`` becomes ``float32``, and so on. Asking
   for a 64-bit dtype by name is allowed but warns, because the request is silently cut.
2. **The promotion lattice.** Mixing two dtypes gives their *least upper bound* in a small
   graph (:data:`LATTICE`). Unlike NumPy's table, the graph is chosen so that promotion
   never jumps to a wider type than needed (``uint8 + int8 -> int16``) and so that the
   answer does not depend on the order of the operands.
3. **Weak types.** A Python scalar (``1``, ``2.0``, ``1j``) has a *kind* but no width of
   its own; it adopts the width of whatever it meets (``int8 + 1 -> int8``). In the
   lattice it is one of the nodes ``i*``, ``f*``, ``c*`` sitting below all the typed
   integers, floats or complexes of its kind.

The module knows nothing of arrays. It works on NumPy dtypes plus a weak flag, and on
values by duck typing: anything with a ``.dtype`` (and, for our own arrays, a
``.weak_type``) can be promoted.
"""

from __future__ import annotations

import functools
import os
import sys
import types
import warnings
from collections.abc import Mapping
from typing import Any

import ml_dtypes
import numpy as np

from minijax.flags import config

__all__ = [
    "LATTICE",
    "STRICT_LATTICE",
    "SUPPORTED_DTYPES",
    "TypePromotionError",
    "WEAK_NODES",
    "X32_LATTICE_CHANGES",
    "bfloat16",
    "bool_",
    "canonicalize_dtype",
    "check_and_canonicalize_user_dtype",
    "check_user_dtype_supported",
    "complex64",
    "complex128",
    "dtype",
    "dtype_and_weak_type",
    "extended",
    "finfo",
    "float16",
    "float32",
    "float0",
    "float64",
    "iinfo",
    "int8",
    "int16",
    "int32",
    "int64",
    "is_weakly_typed",
    "issubdtype",
    "lattice_edges",
    "lattice_node",
    "least_upper_bound",
    "node_dtype",
    "promote_types",
    "prng_key",
    "promotion_lattice",
    "python_scalar_dtype",
    "result_type",
    "scalar_type_of",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "upper_bounds",
]

# --------------------------------------------------------------------------------------
# The fifteen dtypes. They are NumPy scalar types, so ``np.dtype(int8)`` just works;
# bfloat16 comes from ml_dtypes, the package JAX itself uses for it.
# --------------------------------------------------------------------------------------

bool_ = np.bool_
int8, int16, int32, int64 = np.int8, np.int16, np.int32, np.int64
uint8, uint16, uint32, uint64 = np.uint8, np.uint16, np.uint32, np.uint64
float16, float32, float64 = np.float16, np.float32, np.float64
bfloat16 = ml_dtypes.bfloat16
complex64, complex128 = np.complex64, np.complex128

SUPPORTED_DTYPES: tuple[type, ...] = (
    bool_,
    int8, int16, int32, int64,
    uint8, uint16, uint32, uint64,
    float16, bfloat16, float32, float64,
    complex64, complex128,
)  # fmt: skip
"""Every dtype a minijax array may have."""

# The dtype of tangents of integer and boolean values: they cannot change continuously, so
# their tangents carry no data at all (NumPy's zero-size void), as in ``jax.dtypes.float0``.
float0 = np.dtype([("float0", np.void, 0)])

_SUPPORTED = frozenset(np.dtype(t) for t in SUPPORTED_DTYPES)


# --------------------------------------------------------------------------------------
# Extended dtypes: element types that are not numbers. A typed PRNG key (``key<fry>``) is
# one: a key array of shape (3,) is *stored* as uint32[3, 2], but to every shape rule and
# every printed jaxpr it is three opaque elements. The scalar classes place them in
# NumPy's hierarchy, so ``issubdtype(k.dtype, prng_key)`` reads as in JAX.
# --------------------------------------------------------------------------------------


class extended(np.generic):  # noqa: N801  (JAX's name)
    """The abstract scalar class of every extended dtype."""


class prng_key(extended):  # noqa: N801  (JAX's name)
    """The abstract scalar class of typed PRNG keys."""


class ExtendedDType:
    """The base of extended dtypes. ``type`` is the scalar class; a value of shape ``s``
    is stored as an array of ``physical_dtype`` and shape ``(*s, *physical_shape)``."""

    type: type = extended
    name: str
    kind = "V"  # not a number: no dtype family of lax accepts it
    physical_shape: tuple[int, ...]
    physical_dtype: np.dtype

    @property
    def itemsize(self) -> int:
        return int(np.prod(self.physical_shape)) * self.physical_dtype.itemsize

    def __repr__(self) -> str:
        return self.name

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and other.name == self.name

    def __hash__(self) -> int:
        return hash((type(self), self.name))


def is_extended(dt: Any) -> bool:
    return isinstance(dt, ExtendedDType)


# finfo/iinfo from ml_dtypes extend NumPy's to bfloat16 (np.finfo(bfloat16) fails).
finfo = ml_dtypes.finfo
iinfo = ml_dtypes.iinfo


class TypePromotionError(ValueError):
    """Two dtypes have no implicit promotion path (only possible in ``strict`` mode)."""


# --------------------------------------------------------------------------------------
# 1. Canonicalisation: what a dtype becomes when 64-bit types are switched off.
# --------------------------------------------------------------------------------------

_TO_32_BIT = {
    np.dtype(np.int64): np.dtype(np.int32),
    np.dtype(np.uint64): np.dtype(np.uint32),
    np.dtype(np.float64): np.dtype(np.float32),
    np.dtype(np.complex128): np.dtype(np.complex64),
}

# The dtype each Python scalar type would have if 64-bit types were available.
_PYTHON_SCALAR_DTYPES = {
    bool: np.dtype(np.bool_),
    int: np.dtype(np.int64),
    float: np.dtype(np.float64),
    complex: np.dtype(np.complex128),
}

_X64_WARNING = (
    "Explicitly requested dtype {requested}{where} is not available, and will be "
    "truncated to dtype {canonical}. To enable more dtypes, set the jax_enable_x64 "
    "configuration option or the JAX_ENABLE_X64 shell environment variable. "
    "See https://github.com/jax-ml/jax#current-gotchas for more."
)

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


def canonicalize_dtype(dtype: Any) -> np.dtype:
    """The dtype JAX really uses for ``dtype``: 64-bit types shrink to 32 bits unless x64 is on.

    ``int`` and ``float`` are read as NumPy reads them (``int64``, ``float64``) and then
    shrunk. No warning here: this is the silent rule, applied to values and results.
    """
    dt = np.dtype(dtype)
    if config.jax_enable_x64:
        return dt
    return _TO_32_BIT.get(dt, dt)


def python_scalar_dtype(value: Any) -> np.dtype:
    """The default dtype of a Python scalar or scalar type: ``int -> int32`` (``int64`` with x64).

    This is the dtype ``jnp.asarray(value)`` gets, and the dtype of the weak nodes
    ``i*``, ``f*``, ``c*`` once they have to become concrete.
    """
    kind = value if isinstance(value, type) else type(value)
    if kind not in _PYTHON_SCALAR_DTYPES:
        raise TypeError(f"{value!r} is not a Python scalar (bool, int, float or complex)")
    return canonicalize_dtype(_PYTHON_SCALAR_DTYPES[kind])


def _user_stacklevel() -> int:
    """The ``stacklevel`` that makes a warning point at the first line outside minijax.

    A learner should see the line that asked for ``int64``, not our internals, however
    deep inside minijax the request was checked.
    """
    frame = sys._getframe(1)  # the function that is about to call warnings.warn
    level = 1
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE_DIR + os.sep):
        frame = frame.f_back
        level += 1
    return level


def _canonicalize_requested(dt: np.dtype, fun_name: str) -> np.dtype:
    """Canonicalise a dtype the user asked for by name, warning if that loses its 64 bits."""
    canonical = canonicalize_dtype(dt)
    if canonical != dt:
        where = f" requested in {fun_name}" if fun_name else ""
        message = _X64_WARNING.format(requested=dt, where=where, canonical=canonical.name)
        warnings.warn(message, UserWarning, stacklevel=_user_stacklevel())
    return canonical


def check_and_canonicalize_user_dtype(dtype: Any, fun_name: str | None = None) -> np.dtype:
    """Validate a ``dtype=`` argument and return the dtype the result will really have.

    The Python types ``int``/``float``/``complex`` mean "the default" and never warn; a
    named 64-bit dtype (``jnp.int64``, ``'float64'``, even the string ``'int'``) with x64
    off is truncated with a ``UserWarning`` that names ``fun_name`` (e.g. ``zeros``).
    """
    if dtype is None:
        raise ValueError("dtype must be specified.")
    if isinstance(dtype, type) and dtype in _PYTHON_SCALAR_DTYPES:
        return python_scalar_dtype(dtype)
    dt = np.dtype(dtype)
    if dt not in _SUPPORTED:
        where = f" in {fun_name}" if fun_name else ""
        raise TypeError(
            f"JAX only supports number, bool, and string dtypes, got dtype {dtype}{where}"
        )
    return _canonicalize_requested(dt, fun_name or "")


check_user_dtype_supported = check_and_canonicalize_user_dtype
"""Older JAX name of :func:`check_and_canonicalize_user_dtype`."""


# --------------------------------------------------------------------------------------
# 2. What dtype does a value have, and is it weak?
# --------------------------------------------------------------------------------------


def _is_dtype_specifier(x: Any) -> bool:
    """Strings, ``np.dtype`` objects and NumPy scalar types *name* a dtype."""
    if isinstance(x, (str, np.dtype)):
        return True
    return isinstance(x, type) and issubclass(x, np.generic)


def _check_supported(dt: np.dtype, x: Any) -> np.dtype:
    if dt not in _SUPPORTED:
        raise TypeError(
            f"Value '{x}' with dtype {dt} is not a valid JAX array type. "
            "Only arrays of numeric types are supported by JAX."
        )
    return dt


def _dtype_attribute(x: Any) -> np.dtype:
    """The dtype of a NumPy value or any object carrying a ``.dtype``."""
    found = getattr(x, "dtype", None)
    if isinstance(found, np.dtype):
        return found
    try:
        return np.result_type(x)
    except TypeError as err:
        raise TypeError(f"Cannot determine dtype of {x}") from err


def dtype(x: Any, canonicalize: bool = True) -> np.dtype:
    """The dtype of a value or dtype-like, canonicalised for the current x64 mode.

    * Python scalars and their types get the default dtype (``1.0 -> float32``).
    * Names of dtypes (``'float64'``, ``np.int64``) are explicit requests: with x64 off
      they are truncated *with the x64 warning*.
    * Objects that carry ``weak_type`` are minijax (or JAX) arrays: their dtype was fixed
      when they were made, so it is returned as is, even a 64-bit one.
    * Other values (NumPy arrays and scalars) are canonicalised silently.

    With ``canonicalize=False`` nothing is shrunk and nothing warns (``int -> int64``).
    """
    if x is None:
        raise ValueError(f"Invalid argument to dtype: {x}.")
    python_type = x if isinstance(x, type) else type(x)
    if python_type in _PYTHON_SCALAR_DTYPES:
        natural = _PYTHON_SCALAR_DTYPES[python_type]
        return canonicalize_dtype(natural) if canonicalize else natural
    if _is_dtype_specifier(x):
        dt = _check_supported(np.dtype(x), x)
        return _canonicalize_requested(dt, "dtype") if canonicalize else dt
    if hasattr(x, "weak_type"):
        return _check_supported(np.dtype(x.dtype), x)
    dt = _check_supported(_dtype_attribute(x), x)
    return canonicalize_dtype(dt) if canonicalize else dt


def is_weakly_typed(x: Any) -> bool:
    """Is ``x`` a weakly typed value: a Python int/float/complex or an array marked weak?

    ``True`` is *not* weak: bool has only one width, so there is nothing to adopt.
    """
    if type(x) in (int, float, complex):
        return True
    return bool(getattr(x, "weak_type", False))


def dtype_and_weak_type(x: Any) -> tuple[np.dtype, bool]:
    """``(dtype, weak)`` of one operand: the pair that type promotion works on.

    The bare types ``int``, ``float`` and ``complex`` used as dtypes are weak too, so
    ``result_type(int, np.int8)`` is ``int8``, just as ``result_type(1, np.int8)``.
    """
    weak = x is int or x is float or x is complex or is_weakly_typed(x)
    return dtype(x), weak


def scalar_type_of(x: Any) -> type:
    """The Python scalar type (bool, int, float or complex) matching the dtype of ``x``."""
    return _python_type_of_dtype(dtype(x))


def _python_type_of_dtype(dt: np.dtype) -> type:
    if dt == np.dtype(np.bool_):
        return bool
    if issubdtype(dt, np.integer):
        return int
    if issubdtype(dt, np.floating):
        return float
    if issubdtype(dt, np.complexfloating):
        return complex
    raise TypeError(f"Invalid scalar dtype {dt}")


# --------------------------------------------------------------------------------------
# issubdtype: NumPy's, plus one graft. ml_dtypes.bfloat16 derives from np.generic only,
# so NumPy does not know it is a floating type; JAX (and we) place it under np.floating.
# --------------------------------------------------------------------------------------

_GRAFTED_FLOATS = (ml_dtypes.bfloat16,)
_FLOATING_ANCESTORS = (np.floating, np.inexact, np.number, np.generic)


def _scalar_class(x: Any) -> type:
    """A NumPy scalar class for ``x``, keeping abstract classes like ``np.floating``."""
    if isinstance(x, type) and issubclass(x, np.generic):
        return x
    if isinstance(x, ExtendedDType):
        return x.type
    return np.dtype(x).type


def issubdtype(a: Any, b: Any) -> bool:
    """``np.issubdtype`` that also knows bfloat16 is a floating type."""
    a_class, b_class = _scalar_class(a), _scalar_class(b)
    if a_class in _GRAFTED_FLOATS:
        return b_class is a_class or b_class in _FLOATING_ANCESTORS
    if b_class in _GRAFTED_FLOATS:
        return False
    return bool(np.issubdtype(a_class, b_class))


# --------------------------------------------------------------------------------------
# 3. The promotion lattice. Nodes are short names; an edge a -> b means "b is the next
# type above a". The weak nodes i*, f*, c* stand for Python int, float and complex.
# --------------------------------------------------------------------------------------

LATTICE: dict[str, tuple[str, ...]] = {
    "b1": ("i*",),
    "i*": ("u8", "i8"),
    "u8": ("u16", "i16"),
    "u16": ("u32", "i32"),
    "u32": ("u64", "i64"),
    "u64": ("f*",),
    "i8": ("i16",),
    "i16": ("i32",),
    "i32": ("i64",),
    "i64": ("f*",),
    "f*": ("c*", "f16", "bf16"),
    "f16": ("f32",),
    "bf16": ("f32",),
    "f32": ("f64", "c64"),
    "f64": ("c128",),
    "c*": ("c64",),
    "c64": ("c128",),
    "c128": (),
}
"""JAX's standard promotion lattice (with x64 on): each node and the nodes just above it."""

X32_LATTICE_CHANGES: dict[str, tuple[str, ...]] = {"u32": ("u64", "i32")}
"""With x64 off, ``uint32 + int32`` must not create a 64-bit type, so ``u32`` goes up to
``i32`` instead of ``i64``: the only edge that differs between the two modes."""

_INT_NODES = ("u8", "u16", "u32", "u64", "i8", "i16", "i32", "i64")
_FLOAT_NODES = ("f16", "bf16", "f32", "f64")
_COMPLEX_NODES = ("c64", "c128")

STRICT_LATTICE: dict[str, tuple[str, ...]] = {
    **{node: () for node in LATTICE},
    "i*": ("f*", *_INT_NODES),
    "f*": ("c*", *_FLOAT_NODES),
    "c*": _COMPLEX_NODES,
}
"""The ``strict`` lattice: a weak scalar may adopt a type of its own kind (or a wider
kind), but two typed values only combine if their dtypes are equal."""

WEAK_NODES = ("i*", "f*", "c*")

_NODE_OF_DTYPE = {
    np.dtype(t): node
    for t, node in [
        (bool_, "b1"),
        (uint8, "u8"), (uint16, "u16"), (uint32, "u32"), (uint64, "u64"),
        (int8, "i8"), (int16, "i16"), (int32, "i32"), (int64, "i64"),
        (float16, "f16"), (bfloat16, "bf16"), (float32, "f32"), (float64, "f64"),
        (complex64, "c64"), (complex128, "c128"),
    ]
}  # fmt: skip
_WEAK_NODE_OF_PYTHON_TYPE = {int: "i*", float: "f*", complex: "c*"}

# A weak node becomes concrete as NumPy would read the Python type (64-bit).
_DTYPE_OF_NODE = {
    **{node: dt for dt, node in _NODE_OF_DTYPE.items()},
    **{node: _PYTHON_SCALAR_DTYPES[t] for t, node in _WEAK_NODE_OF_PYTHON_TYPE.items()},
}


def _strict_mode() -> bool:
    return config.jax_numpy_dtype_promotion == "strict"


def _flags(strict: bool | None, x64: bool | None) -> tuple[bool, bool]:
    """Fill in the flags a caller left as ``None`` from the current config."""
    strict = _strict_mode() if strict is None else strict
    x64 = bool(config.jax_enable_x64) if x64 is None else x64
    return strict, x64


def promotion_lattice(
    strict: bool | None = None, x64: bool | None = None
) -> dict[str, tuple[str, ...]]:
    """The lattice in force for the given flags (``None`` reads the current config)."""
    strict, x64 = _flags(strict, x64)
    if strict:
        return dict(STRICT_LATTICE)
    return dict(LATTICE) if x64 else {**LATTICE, **X32_LATTICE_CHANGES}


def lattice_edges(strict: bool | None = None, x64: bool | None = None) -> list[tuple[str, str]]:
    """The lattice as a list of ``(lower, upper)`` edges, ready to draw."""
    lattice = promotion_lattice(strict, x64)
    return [(lower, upper) for lower, uppers in lattice.items() for upper in uppers]


@functools.cache
def _upper_bounds(strict: bool, x64: bool) -> Mapping[str, frozenset[str]]:
    """Each node's upper bounds (itself and everything reachable above it), computed once.

    The cache is keyed by the flags it depends on, so flipping a flag can never serve a
    stale answer and nothing needs clearing.
    """
    lattice = promotion_lattice(strict, x64)
    bounds: dict[str, frozenset[str]] = {}

    def visit(node: str) -> frozenset[str]:
        if node not in bounds:
            above = {node}
            for upper in lattice[node]:
                above |= visit(upper)
            bounds[node] = frozenset(above)
        return bounds[node]

    for node in lattice:
        visit(node)
    return types.MappingProxyType(bounds)


def upper_bounds(node: str, strict: bool | None = None, x64: bool | None = None) -> frozenset[str]:
    """All nodes at or above ``node`` in the lattice: the types it may safely become."""
    strict, x64 = _flags(strict, x64)
    return _upper_bounds(strict, x64)[node]


def _node_label(node: str) -> str:
    """How an error message names a node: ``'int8'``, or ``"<class 'int'>"`` for ``i*``."""
    for python_type, weak_node in _WEAK_NODE_OF_PYTHON_TYPE.items():
        if node == weak_node:
            return str(python_type)
    return str(_DTYPE_OF_NODE[node])


def no_promotion_path(nodes: tuple[str, ...]) -> TypePromotionError:
    """JAX's error for ``nodes`` without a least upper bound (public: a learner's join, the
    piece ``least_upper_bound`` of chapter 02, raises it too)."""
    labels = tuple(_node_label(node) for node in nodes)
    if _strict_mode():
        return TypePromotionError(
            f"Input dtypes {labels} have no available implicit dtype promotion path when "
            "jax_numpy_dtype_promotion=strict. Try explicitly casting inputs to the desired "
            "output type, or set jax_numpy_dtype_promotion=standard."
        )
    return TypePromotionError(
        f"Input dtypes {labels} have no available implicit dtype promotion path. "
        "Try explicitly casting inputs to the desired output type."
    )


@functools.lru_cache(maxsize=4096)
def _least_upper_bound(nodes: tuple[str, ...], strict: bool, x64: bool) -> str:
    """The join of ``nodes``: the common upper bound that lies below every other one."""
    bounds = _upper_bounds(strict, x64)
    common = frozenset.intersection(*(bounds[node] for node in nodes))
    least = [candidate for candidate in common if common <= bounds[candidate]]
    if len(least) != 1:  # empty in strict mode; never more than one in a real lattice
        raise no_promotion_path(nodes)
    return least[0]


def least_upper_bound(*nodes: str, strict: bool | None = None, x64: bool | None = None) -> str:
    """The lattice join of node names, e.g. ``least_upper_bound("u8", "i8") == "i16"``."""
    strict, x64 = _flags(strict, x64)
    return _least_upper_bound(tuple(dict.fromkeys(nodes)), strict, x64)


def lattice_node(dt: Any, weak: bool = False) -> str:
    """The lattice node of a dtype: ``int8 -> 'i8'``; a weak int/float/complex -> ``'i*'`` etc.

    A weak value only records its kind, so a weak ``uint8`` is ``i*`` and a weak
    ``bfloat16`` is ``f*``. A weak bool is just ``b1``: bool has one width anyway.
    """
    dt = np.dtype(dt)
    if dt not in _NODE_OF_DTYPE:
        raise ValueError(f"dtype={dt!r} is not a valid dtype for JAX type promotion.")
    if weak and dt != np.dtype(np.bool_):
        return _WEAK_NODE_OF_PYTHON_TYPE[_python_type_of_dtype(dt)]
    return _NODE_OF_DTYPE[dt]


def node_dtype(node: str) -> np.dtype:
    """The dtype a node stands for; weak nodes give 64-bit dtypes (``i* -> int64``)."""
    return _DTYPE_OF_NODE[node]


# --------------------------------------------------------------------------------------
# promote_types and result_type: the two public faces of the lattice.
# --------------------------------------------------------------------------------------


def _specifier_node(x: Any) -> str:
    """The node of a ``promote_types`` argument: the types int/float/complex are weak."""
    if x is int or x is float or x is complex:
        return _WEAK_NODE_OF_PYTHON_TYPE[x]
    return lattice_node(np.dtype(x))


def promote_types(a: Any, b: Any) -> np.dtype:
    """The dtype that a binary operation on dtypes ``a`` and ``b`` computes in.

    Like ``jnp.promote_types`` this works on dtype specifiers only and does *not*
    canonicalise: ``promote_types(int64, int8)`` is ``int64`` even with x64 off, and a
    weak result is named by its 64-bit dtype (``promote_types(int, int) == int64``).
    """
    node = least_upper_bound(_specifier_node(a), _specifier_node(b))
    return node_dtype(node)


def _widen_weak(dt: np.dtype) -> np.dtype:
    """A weak result takes the default width of its kind, as a Python scalar would."""
    if dt.kind == "u":
        return canonicalize_dtype(np.uint64)
    return python_scalar_dtype(_python_type_of_dtype(dt))


def _join_operands(operands: list[tuple[np.dtype, bool]]) -> tuple[np.dtype, bool]:
    """Join ``(dtype, weak)`` pairs on the lattice and canonicalise the join."""
    dtypes = [dt for dt, _ in operands]
    weaks = [weak for _, weak in operands]
    if len(operands) == 1:
        return operands[0]
    if len(set(dtypes)) == 1 and not all(weaks):
        return dtypes[0], False  # nothing to promote; allowed even in strict mode
    if all(weaks) and not _strict_mode():
        # Weak with weak stays weak: join their typed versions, then mark the result weak.
        node = least_upper_bound(*(lattice_node(dt) for dt in dtypes))
        return canonicalize_dtype(node_dtype(node)), True
    node = least_upper_bound(*(lattice_node(dt, weak) for dt, weak in operands))
    return canonicalize_dtype(node_dtype(node)), node in WEAK_NODES


def result_type(
    *args: Any, return_weak_type_flag: bool = False
) -> np.dtype | tuple[np.dtype, bool]:
    """The canonical dtype of the result of an operation on ``args``, as ``jnp.result_type``.

    ``args`` may be values (Python scalars, NumPy or minijax arrays) or dtype-likes;
    ``None`` stands for the default float dtype. With ``return_weak_type_flag=True`` the
    answer is ``(dtype, weak)``: the result is weak when only weak operands decided it,
    e.g. ``int32 + 1.0 -> (float32, True)`` but ``int8 + 1 -> (int8, False)``.
    """
    if not args:
        raise ValueError("at least one array or dtype is required")
    operands = [dtype_and_weak_type(python_scalar_dtype(float) if a is None else a) for a in args]
    dt, weak = _join_operands(operands)
    weak = weak and dt != np.dtype(np.bool_)  # bool has only one width: never weak
    if weak:
        dt = _widen_weak(dt)
    return (dt, weak) if return_weak_type_flag else dt
