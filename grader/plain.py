"""Plain data: the only values that cross between the learner's worker and the grader.

The worker (untrusted: it runs the learner's code) :func:`encode`\\ s what the learner's functions
return into JSON-ready data; the grader :func:`decode`\\ s it and trusts nothing else. Decoding
builds fresh objects of exact built-in types -- ``numpy.ndarray`` (numeric or boolean dtypes
only), numpy scalars, minijax arrays (built by the grader's own minijax from such an ndarray),
``None``, ``bool``, ``int``, ``float``, ``complex``, ``str``, tuples, lists and dicts of
those -- so no value that reaches a check can carry a custom ``__eq__``,
``__array__`` or ``__repr__``. Anything else the learner returned arrives as an :class:`Opaque`:
its type name and a bounded text, which compares equal to nothing.

Both directions use the same format (the grader encodes the inputs it sends, too)::

    None, true, 1, 2.5, "text", [items...]                 as JSON itself
    {"$": "tuple", "items": [...]}                          and "dict" (items: [[key, value]...])
    {"$": "complex", "re": 1.0, "im": 2.0}
    {"$": "ndarray", "dtype": "<f8", "shape": [2], "data": "<base64>"}   and "scalar" (no shape)
    {"$": "jax", ...}                                       a minijax array, fields as "ndarray"
    {"$": "function", "source": "lambda x: 2 * x"}          a :class:`FunctionSource`
    {"$": "opaque", "type": "Foo", "text": "Foo(...)"}

A dict of another type (a subclass) is sent as a plain dict. A function crosses only one way,
from the grader to the worker, and only as its source text: the worker evaluates it
(:func:`realize`) with ``np``, ``jnp``, ``lax`` and ``jax`` (minijax) in scope, so that a check
can hand a function of its own to the learner's code; what crosses back is a text again.
"""

from __future__ import annotations

import base64
import math
from typing import Any

import numpy as np

#: Limits on what the grader accepts: nesting depth, string length, array size.
MAX_DEPTH = 32
MAX_TEXT = 10_000
MAX_BYTES = 64 * 2**20

_OPAQUE_TEXT = 300
#: The dtypes of ``ml_dtypes`` (bfloat16 and friends) that cross by name: NumPy sees them as
#: opaque bytes (kind ``V``), which are refused otherwise.
_NAMED_DTYPES = ("bfloat16", "float8_e4m3fn", "float8_e5m2", "int4", "uint4")


class ProtocolError(Exception):
    """The worker sent something that is not plain data (a bug, or a forgery attempt)."""


class FunctionSource:
    """A function known by its Python source (a ``lambda`` expression or a ``def``), which is
    all of it that crosses to the worker; :class:`grader.checks.Shown` is one. The source may
    build another value the worker must make itself (a SymPy expression, say)."""

    def __init__(self, source: str) -> None:
        self.source = source

    def __repr__(self) -> str:
        return self.source


class Opaque:
    """A value of some other type the learner's code returned: its type name and a text."""

    def __init__(self, type_name: str, text: str) -> None:
        self.type_name, self.text = type_name, text

    def __repr__(self) -> str:
        return self.text


def encode(value: Any, depth: int = 0) -> Any:
    """``value`` as plain data. Runs in the worker; never raises (odd values become opaque)."""
    kind = type(value)
    if value is None or kind in (bool, int, str):
        return value
    if kind is float:
        return value if math.isfinite(value) else {"$": "float", "text": repr(value)}
    if kind is complex:
        return {"$": "complex", "re": encode(value.real), "im": encode(value.imag)}
    if depth < MAX_DEPTH and kind in (list, tuple):
        items = [encode(item, depth + 1) for item in value]
        return items if kind is list else {"$": "tuple", "items": items}
    if isinstance(value, FunctionSource):
        return {"$": "function", "source": value.source}
    if depth < MAX_DEPTH and isinstance(value, dict):
        pairs = [[encode(k, depth + 1), encode(v, depth + 1)] for k, v in value.items()]
        return {"$": "dict", "items": pairs}
    array = _as_numeric_array(value)
    if array is not None:
        data = base64.b64encode(np.ascontiguousarray(array).tobytes()).decode("ascii")
        if isinstance(value, np.generic):
            return {"$": "scalar", "dtype": _dtype_text(array.dtype), "data": data}
        encoded = {"$": "ndarray", "dtype": _dtype_text(array.dtype),
                   "shape": list(array.shape), "data": data}
        if _is_minijax_array(value):
            encoded["$"] = "jax"
        return encoded
    return {"$": "opaque", "type": type_name(value), "text": _safe_repr(value)}


def decode(data: Any, depth: int = 0) -> Any:
    """Plain data back into values; raises :class:`ProtocolError` on anything unexpected."""
    if depth > MAX_DEPTH + 1:
        raise ProtocolError("values nested too deeply")
    kind = type(data)
    if data is None or kind in (bool, int, float):
        return data
    if kind is str:
        return _text(data)
    if kind is list:
        return [decode(item, depth + 1) for item in data]
    if kind is not dict or type(data.get("$")) is not str:
        raise ProtocolError(f"not plain data: {type(data).__name__}")
    tag = data["$"]
    if tag == "tuple":
        return tuple(decode(item, depth + 1) for item in _field(data, "items", list))
    if tag == "dict":
        pairs = _field(data, "items", list)
        if not all(type(pair) is list and len(pair) == 2 for pair in pairs):
            raise ProtocolError("dict items must be [key, value] pairs")
        return {_key(decode(k, depth + 1)): decode(v, depth + 1) for k, v in pairs}
    if tag == "float":
        text = _field(data, "text", str)
        if text not in ("nan", "inf", "-inf"):
            raise ProtocolError(f"not a float: {text[:20]!r}")
        return float(text)
    if tag == "complex":
        return complex(_number(decode(data.get("re"))), _number(decode(data.get("im"))))
    if tag in ("ndarray", "scalar"):
        return _decode_array(data, tag)
    if tag == "jax":
        import minijax.numpy as jnp  # only chapters that use minijax send its arrays

        return jnp.asarray(_decode_array(data, tag))
    if tag == "function":
        return FunctionSource(_text(_field(data, "source", str)))
    if tag == "opaque":
        return Opaque(_text(_field(data, "type", str))[:100], _text(_field(data, "text", str)))
    raise ProtocolError(f"unknown tag {tag[:20]!r}")


def _as_numeric_array(value: Any) -> np.ndarray | None:
    """A numeric numpy array holding ``value``'s numbers (numpy values, and minijax or JAX
    arrays, which convert through ``__array__``), or None for anything else."""
    if not isinstance(value, (np.ndarray, np.generic)) and not hasattr(type(value), "__array__"):
        return None
    try:
        array = np.asarray(value)
    except Exception:  # the learner's __array__ may raise anything
        return None
    if type(array) is not np.ndarray or not _is_numeric(array.dtype):
        return None
    return array


def _is_numeric(dtype: np.dtype) -> bool:
    return (dtype.kind in "biufc" and not dtype.hasobject and dtype.fields is None) \
        or (dtype.kind == "V" and dtype.name in _NAMED_DTYPES and dtype.fields is None)


def _dtype_text(dtype: np.dtype) -> str:
    return dtype.name if dtype.kind == "V" else dtype.str


def _parse_dtype(text: str) -> np.dtype:
    if text in _NAMED_DTYPES:
        import ml_dtypes

        return np.dtype(getattr(ml_dtypes, text))
    try:
        return np.dtype(text)
    except TypeError as exc:
        raise ProtocolError(f"bad dtype: {exc}") from None


def _is_minijax_array(value: Any) -> bool:
    """A concrete minijax array (sent as one, so a check can tell it from a numpy array)."""
    kind = type(value)
    return kind.__module__ == "minijax.array" and kind.__name__ == "Array"


def realize(value: Any, names: dict[str, Any], made: list[Any] | None = None) -> Any:
    """``value`` with every :class:`FunctionSource` in it (in lists, tuples and dicts) made a
    :class:`grader.checks.Shown` that runs its source, evaluated here (in the worker) with
    ``np``, ``jnp``, ``lax`` and ``jax`` in scope and, for any other name, ``names`` (the
    notebook's: a check may hand over ``lambda x: sin(x) * y`` built on the learner's ``sin``).
    What each source became is appended to ``made``, in the order of :func:`functions_in`."""
    made = [] if made is None else made
    if type(value) in (list, tuple):
        return type(value)(realize(item, names, made) for item in value)
    if type(value) is dict:
        return {key: realize(item, names, made) for key, item in value.items()}
    if type(value) is FunctionSource:
        from grader.checks import Shown

        built = _evaluate(value.source, names)
        made.append(Shown(value.source, built) if callable(built) else built)
        return made[-1]
    return value


def functions_in(value: Any) -> list[Any]:
    """The :class:`FunctionSource` objects in ``value``, depth first (the order in which the
    grader and the worker both find them)."""
    if type(value) in (list, tuple):
        return [found for item in value for found in functions_in(item)]
    if isinstance(value, dict):
        return [found for item in value.values() for found in functions_in(item)]
    return [value] if isinstance(value, FunctionSource) else []


def _evaluate(source: str, names: dict[str, Any]) -> Any:
    """The function ``source`` defines: a ``def`` statement, or an expression."""
    import minijax
    import minijax.numpy as jnp
    from minijax import lax

    scope: dict[str, Any] = {**names, "np": np, "jnp": jnp, "lax": lax, "jax": minijax,
                             "minijax": minijax}
    if source.startswith("def "):
        exec(source, scope)
        return scope[source[4:].partition("(")[0].strip()]
    return eval(source, scope)


def _decode_array(data: dict[str, Any], tag: str) -> np.ndarray | np.generic:
    dtype = _parse_dtype(_field(data, "dtype", str))
    if not _is_numeric(dtype):
        raise ProtocolError(f"dtype {dtype} is not numeric")
    shape = [] if tag == "scalar" else _field(data, "shape", list)
    if not all(type(n) is int and n >= 0 for n in shape) or len(shape) > 32:
        raise ProtocolError("bad shape")
    raw = base64.b64decode(_field(data, "data", str), validate=True)
    if len(raw) > MAX_BYTES or len(raw) != math.prod(shape) * dtype.itemsize:
        raise ProtocolError("array data does not match its shape")
    array = np.frombuffer(raw, dtype=dtype).reshape(shape).copy()
    return array[()] if tag == "scalar" else array


def _field(data: dict[str, Any], name: str, kind: type) -> Any:
    value = data.get(name)
    if type(value) is not kind:
        raise ProtocolError(f"field {name!r} must be a {kind.__name__}")
    return value


def _text(text: str) -> str:
    if len(text) > MAX_TEXT:
        raise ProtocolError("text too long")
    return text


def _number(value: Any) -> float:
    if type(value) not in (int, float):
        raise ProtocolError("complex parts must be numbers")
    return value


def _key(key: Any) -> Any:
    try:
        hash(key)  # decoded values are built-in types: hashing them runs no learner code
    except TypeError:
        raise ProtocolError("dict keys must be hashable") from None
    return key


def type_name(value: Any) -> str:
    """The name of ``value``'s type; a learner's metaclass could make it anything but a str."""
    try:
        name = type(value).__name__
    except Exception:
        name = "?"
    return name if type(name) is str else "?"


def safe_str(value: Any) -> str:
    """``str(value)``, or a stand-in if the learner's ``__str__`` raises or returns a non-str."""
    try:
        text = str(value)
    except BaseException:  # noqa: BLE001 -- learner code may raise anything
        text = None
    return text if type(text) is str else f"<{type_name(value)}: str() failed>"


def _safe_repr(value: Any) -> str:
    """``repr(value)``, cut short; a learner's ``__repr__`` may raise or return anything."""
    try:
        text = repr(value)
    except BaseException:  # noqa: BLE001 -- learner code may raise anything
        text = None
    if type(text) is not str:
        return f"<{type_name(value)} object>"
    return text if len(text) <= _OPAQUE_TEXT else text[: _OPAQUE_TEXT - 3] + "..."
