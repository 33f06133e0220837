"""Elementwise primitives: math, comparisons, logic, bit twiddling, conversion, selection.

``lax`` is strict. Its binary operations do not promote dtypes (``lax.add`` of float32 and
int32 is a ``TypeError``) and broadcast only trivially: operands have the same rank and
each dimension agrees or is 1, or an operand is a scalar. Everything friendlier lives in
``minijax.numpy``, which is written on top of these functions.

Each primitive is defined by a row: its name, its NumPy kernel, and the dtype families it
accepts. The two shape rules below (:func:`unary_rule`, :func:`nary_rule`) serve them all.
Where NumPy and XLA disagree (integer division by zero, float-to-int overflow, rounding
half away from zero) the kernel says how XLA does it.
"""

from __future__ import annotations

import builtins
import enum
import functools
import math
import operator
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from minijax import core, dtypes
from minijax.array import Array
from minijax.core import Primitive, ShapedArray, Tracer
from minijax.interpreters import batching
from minijax.runtime import host_to_array, put_numpy

__all__ = [
    "RoundingMethod",
    "abs",
    "abs_p",
    "acos",
    "acos_p",
    "acosh",
    "acosh_p",
    "add",
    "add_p",
    "and_p",
    "asin",
    "asin_p",
    "asinh",
    "asinh_p",
    "atan",
    "atan2",
    "atan2_p",
    "atan_p",
    "atanh",
    "atanh_p",
    "bitcast_convert_type",
    "bitcast_convert_type_p",
    "bitwise_and",
    "bitwise_not",
    "bitwise_or",
    "bitwise_xor",
    "cbrt",
    "cbrt_p",
    "ceil",
    "ceil_p",
    "clamp",
    "clamp_p",
    "clz",
    "clz_p",
    "complex",
    "complex_p",
    "conj",
    "conj_p",
    "convert_element_type",
    "convert_element_type_p",
    "cos",
    "cos_p",
    "cosh",
    "cosh_p",
    "div",
    "div_p",
    "eq",
    "eq_p",
    "exp",
    "exp2",
    "exp2_p",
    "exp_p",
    "expm1",
    "expm1_p",
    "floor",
    "floor_p",
    "ge",
    "ge_p",
    "gt",
    "gt_p",
    "imag",
    "imag_p",
    "integer_pow",
    "integer_pow_p",
    "is_finite",
    "is_finite_p",
    "le",
    "le_p",
    "log",
    "log1p",
    "log1p_p",
    "log_p",
    "logistic",
    "logistic_p",
    "lt",
    "lt_p",
    "max",
    "max_p",
    "min",
    "min_p",
    "mul",
    "mul_p",
    "ne",
    "ne_p",
    "neg",
    "neg_p",
    "nextafter",
    "nextafter_p",
    "not_p",
    "or_p",
    "population_count",
    "population_count_p",
    "pow",
    "pow_p",
    "real",
    "real_p",
    "reciprocal",
    "reduce_precision",
    "reduce_precision_p",
    "rem",
    "rem_p",
    "round",
    "round_p",
    "rsqrt",
    "rsqrt_p",
    "select",
    "select_n",
    "select_n_p",
    "shift_left",
    "shift_left_p",
    "shift_right_arithmetic",
    "shift_right_arithmetic_p",
    "shift_right_logical",
    "shift_right_logical_p",
    "sign",
    "sign_p",
    "sin",
    "sin_p",
    "sinh",
    "sinh_p",
    "sqrt",
    "sqrt_p",
    "square",
    "square_p",
    "sub",
    "stop_gradient",
    "stop_gradient_p",
    "sub_p",
    "tan",
    "tan_p",
    "tanh",
    "tanh_p",
    "xor_p",
]

# ---------------------------------------------------------------------------------------
# Operands and the dtype families a primitive accepts
# ---------------------------------------------------------------------------------------


def operand(x: Any, primitive: Primitive | None = None, position: int = 0) -> Any:
    """Arrays and tracers pass through; Python and NumPy values become (weak) Arrays.

    Given the ``primitive`` that ``x`` is for (and its ``position`` among the operands),
    anything else -- a list, ``None`` -- is JAX's TypeError naming both.
    """
    if type(x) is Array or isinstance(x, Tracer):
        return x
    if primitive is not None and not is_jax_value(x):
        raise TypeError(
            f"Error interpreting argument to {primitive.name} as a JAX value. The "
            f"problematic value is of type {type(x)} and was passed to {primitive.name} at "
            f"position {position}.\n"
        )
    return host_to_array(x)


_PYTHON_SCALARS = (bool, int, float, builtins.complex)  # this module's complex is lax's


def is_jax_value(x: Any) -> bool:
    """Arrays, Python numbers and NumPy values: what ``lax`` accepts as an operand."""
    return (type(x) in _PYTHON_SCALARS or isinstance(x, (np.ndarray, np.generic))
            or type(x) is Array or isinstance(x, Tracer))


def operands(primitive: Primitive, args: Sequence[Any]) -> Sequence[Any]:
    """:func:`operand` of each argument of ``primitive`` (``args`` itself if all are
    arrays already: the common case, kept cheap)."""
    for x in args:
        if type(x) is not Array and not isinstance(x, Tracer):
            return [operand(x, primitive, i) for i, x in enumerate(args)]
    return args


# The family names are NumPy's abstract scalar types, as in JAX's error messages.
_FAMILIES = {
    "bool": lambda dt: dt == np.bool_,
    "integer": lambda dt: dt.kind in "iu",
    "signedinteger": lambda dt: dt.kind == "i",
    "floating": lambda dt: dt.kind == "f" or dt == dtypes.bfloat16,
    "complexfloating": lambda dt: dt.kind == "c",
    "float32": lambda dt: dt == np.float32,  # a few primitives name single dtypes
    "float64": lambda dt: dt == np.float64,
}
FLOAT = ("floating",)
INEXACT = ("floating", "complexfloating")
INT_BOOL = ("integer", "bool")
INT = ("integer",)
NUMBER = ("integer", "floating", "complexfloating")
ORDERED = ("integer", "floating", "bool")
ANY = ("integer", "floating", "complexfloating", "bool")
SIGNED = ("floating", "complexfloating", "signedinteger")  # numbers that have a sign


def _accepts(families: tuple[str, ...], dt: np.dtype) -> bool:
    return any(_FAMILIES[f](dt) for f in families)


def check_dtype(name: str, families: tuple[str, ...], dt: np.dtype, position: int | None = None
                ) -> None:
    """Raise JAX's TypeError if ``dt`` is not in one of the accepted ``families``."""
    if _accepts(families, dt):
        return
    at = "" if position is None else f" at position {position}"
    raise TypeError(
        f"{name} does not accept dtype {dt.name}{at}. Accepted dtypes{at} are subtypes of "
        f"{', '.join(families)}."
    )


# ---------------------------------------------------------------------------------------
# Shape rules
# ---------------------------------------------------------------------------------------


def broadcast_shapes_trivially(name: str, shapes: list[tuple[int, ...]]) -> tuple[int, ...]:
    """The result shape of an elementwise op: scalars fit anything; other operands must
    have one rank, and each dimension must agree or be 1."""
    arrays = [s for s in shapes if s]
    if not arrays:
        return ()
    ranks = {len(s) for s in arrays}
    if len(ranks) > 1:
        raise TypeError(f"{name}: arrays must have the same number of dimensions, got {ranks}")
    result = []
    for dims in zip(*arrays):
        sizes = {d for d in dims if d != 1}
        if len(sizes) > 1:
            listed = ", ".join(str(s) for s in shapes)
            raise TypeError(f"{name} got incompatible shapes for broadcasting: {listed}.")
        result.append(sizes.pop() if sizes else 1)
    return tuple(result)


def unary_rule(name: str, families: tuple[str, ...], out_dtype: Callable | None,
               x: ShapedArray) -> ShapedArray:
    check_dtype(name, families, x.dtype)
    dt = out_dtype(x.dtype) if out_dtype else x.dtype
    return ShapedArray(x.shape, dt, x.weak_type)


def nary_rule(name: str, families: tuple[str, ...], out_dtype: Callable | None,
              *avals: ShapedArray) -> ShapedArray:
    # JAX's order of checks: shapes first, then each dtype's family, then equal dtypes.
    shape = broadcast_shapes_trivially(name, [a.shape for a in avals])
    for i, aval in enumerate(avals):
        check_dtype(name, families, aval.dtype, i)
    if any(a.dtype != avals[0].dtype for a in avals[1:]):
        names = ", ".join(a.dtype.name for a in avals)
        raise TypeError(
            f"lax.{_API_NAMES.get(name, name)} requires arguments to have the same dtypes, "
            f"got {names}. (Tip: jnp.{_JNP_NAMES.get(name, name)} is a similar function that "
            "does automatic type promotion on inputs)."
        )
    dt = out_dtype(avals[0].dtype) if out_dtype else avals[0].dtype
    # weak if every operand is: comparisons of Python scalars too (but bools are never weak)
    weak = all(a.weak_type for a in avals) and avals[0].dtype != np.bool_
    return ShapedArray(shape, dt, weak)


_API_NAMES = {"and": "bitwise_and", "or": "bitwise_or", "xor": "bitwise_xor"}
_JNP_NAMES = {"sub": "subtract", "mul": "multiply", "div": "divide", "pow": "power",
              "max": "maximum", "min": "minimum", "rem": "remainder", "eq": "equal",
              "ne": "not_equal", "lt": "less", "le": "less_equal", "gt": "greater",
              "ge": "greater_equal", "and": "bitwise_and", "or": "bitwise_or",
              "xor": "bitwise_xor"}


def _to_bool(dt: np.dtype) -> np.dtype:
    return np.dtype(np.bool_)


def _real_part(dt: np.dtype) -> np.dtype:
    return np.dtype({"complex64": np.float32, "complex128": np.float64}.get(dt.name, dt))


def unary_primitive(name: str, kernel: Callable, families: tuple[str, ...] = INEXACT,
                    out_dtype: Callable | None = None) -> Primitive:
    prim = Primitive(name)
    prim.def_impl(kernel)
    prim.def_abstract_eval(functools.partial(unary_rule, name, families, out_dtype))
    return prim


def nary_primitive(name: str, kernel: Callable, families: tuple[str, ...] = NUMBER,
                   out_dtype: Callable | None = None) -> Primitive:
    prim = Primitive(name)
    prim.def_impl(kernel)
    prim.def_abstract_eval(functools.partial(nary_rule, name, families, out_dtype))
    return prim


def _api(prim: Primitive, doc: str) -> Callable[..., Any]:
    """The public ``lax`` function for an elementwise primitive: convert, then bind."""

    def apply(*args: Any) -> Any:
        return prim.bind(*operands(prim, args))

    apply.__name__ = apply.__qualname__ = prim.name
    apply.__doc__ = doc
    return apply


# ---------------------------------------------------------------------------------------
# Kernels where XLA's semantics differ from NumPy's
# ---------------------------------------------------------------------------------------


def _as_arrays(x: Any, y: Any) -> tuple[np.ndarray, np.ndarray]:
    """Both operands as arrays of the operation's dtype: generated NumPy code may pass a
    splat constant as a Python scalar (``rem(65536, span)``, ``shift_left(x, 13)``)."""
    dtype = np.result_type(x, y)
    return np.asarray(x, dtype), np.asarray(y, dtype)


def _div(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Integer division rounds toward zero (C); ``x / 0`` is -1, or all ones if unsigned,
    and ``INT_MIN / -1`` wraps back to ``INT_MIN``, as in two's complement.

    No absolute values (``abs(INT_MIN)`` overflows): the exact quotient is
    ``(x - fmod(x, y)) / y``, which NumPy's floor division computes without rounding."""
    x, y = _as_arrays(x, y)
    if x.dtype.kind not in "iu":
        return np.true_divide(x, y).astype(x.dtype, copy=False)
    special = (y == 0) | (y == -1) if x.dtype.kind == "i" else y == 0
    divisor = np.where(special, np.ones((), x.dtype), y)
    q = (x - np.fmod(x, divisor)) // divisor
    if x.dtype.kind == "i":
        q = np.where(y == -1, np.negative(x), q)
    return np.where(y == 0, np.array(-1).astype(x.dtype), q).astype(x.dtype, copy=False)


def _rem(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """The remainder takes the sign of the dividend (C's fmod); ``x % 0`` is ``x``."""
    x, y = _as_arrays(x, y)
    if x.dtype.kind not in "iu":
        return np.fmod(x, y).astype(x.dtype, copy=False)
    safe = np.where(y == 0, 1, y)
    return np.where(y == 0, x, np.fmod(x, safe)).astype(x.dtype, copy=False)


def _round(x: np.ndarray, rounding_method: int = 0) -> np.ndarray:
    """Round half away from zero (method 0, the default) or half to even (method 1)."""
    if rounding_method == RoundingMethod.TO_NEAREST_EVEN:
        return np.round(x)
    whole = np.trunc(x)
    half_or_more = np.abs(x - whole) >= 0.5
    # where, not whole + 0: -0.4 rounds to -0.0, and -0.0 + 0 would be +0.0
    return np.where(half_or_more, whole + np.sign(x), whole).astype(x.dtype, copy=False)


def _exp2(x: np.ndarray) -> np.ndarray:
    """2**x as XLA computes it, exp(x log 2) in x's dtype (so ``exp2(15.)`` is 32767.984,
    not 32768, as in JAX, and as the lowering to ``stablehlo.exponential`` gives)."""
    return np.exp(x * np.asarray(np.log(2)).astype(x.dtype)).astype(x.dtype, copy=False)


def _logistic(x: np.ndarray) -> np.ndarray:
    return (1 / (1 + np.exp(-x))).astype(x.dtype, copy=False)


def _rsqrt(x: np.ndarray) -> np.ndarray:
    return (1 / np.sqrt(x)).astype(x.dtype, copy=False)


def _out_of_range(y: np.ndarray, bits: int) -> np.ndarray:
    """Shift counts XLA reads as at least the width: negative ones count as huge unsigned."""
    return (y < 0) | (y >= bits) if y.dtype.kind == "i" else y >= bits


def _shift_right_logical(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    x, y = _as_arrays(x, y)
    unsigned = x.dtype.str.replace("i", "u")
    bits = x.dtype.itemsize * 8
    out = np.right_shift(x.view(unsigned), np.clip(y, 0, bits - 1).astype(unsigned))
    return np.where(_out_of_range(y, bits), 0, out.view(x.dtype)).astype(x.dtype)


def _shift_left(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    x, y = _as_arrays(x, y)
    bits = x.dtype.itemsize * 8
    out = np.left_shift(x, np.clip(y, 0, bits - 1).astype(x.dtype))
    return np.where(_out_of_range(y, bits), 0, out).astype(x.dtype)


def _shift_right_arithmetic(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Shift in copies of the top bit, also for unsigned integers (``uint8`` 128 >> 1 is
    192); shifting by the width or more leaves only copies of it (0 or all ones)."""
    x, y = _as_arrays(x, y)
    signed = x.dtype.str.replace("u", "i")
    bits = x.dtype.itemsize * 8
    count = np.where(_out_of_range(y, bits), bits - 1, y).astype(signed)
    return np.right_shift(x.view(signed), count).view(x.dtype)


def _is_float(x: np.ndarray) -> bool:
    return x.dtype.kind == "f" or x.dtype == dtypes.bfloat16


def _sign(x: np.ndarray) -> np.ndarray:
    """-1, 0 or 1; a zero keeps its sign (``sign(-0.0)`` is -0.0) and NaN stays NaN."""
    out = np.sign(x)
    return np.where(x == 0, x, out) if _is_float(x) else out


def _max(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """NaN wins, and +0.0 is larger than -0.0 (NumPy returns either zero)."""
    x, y = _as_arrays(x, y)
    out = np.maximum(x, y)
    if not _is_float(out):
        return out
    # Of two zeros, the sum is -0.0 only if both are -0.0: the maximum.
    return np.where((x == 0) & (y == 0), x + y, out).astype(out.dtype, copy=False)


def _min(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """NaN wins, and -0.0 is smaller than +0.0 (NumPy returns either zero)."""
    x, y = _as_arrays(x, y)
    out = np.minimum(x, y)
    if not _is_float(out):
        return out
    # Of two zeros, -(-x + -y) is +0.0 only if both are +0.0: the minimum.
    return np.where((x == 0) & (y == 0), -(-x - y), out).astype(out.dtype, copy=False)


def _nextafter(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """The float next to x toward y; y itself where they are equal (so the sign of a
    zero y is kept, as in C)."""
    x, y = _as_arrays(x, y)
    return np.where(x == y, y, np.nextafter(x, y)).astype(x.dtype, copy=False)


def _population_count(x: np.ndarray) -> np.ndarray:
    """Bits set in the two's complement bits (NumPy counts those of ``abs(x)``)."""
    return np.bitwise_count(x.view(x.dtype.str.replace("i", "u"))).astype(x.dtype)


def _clz(x: np.ndarray) -> np.ndarray:
    """Leading zero bits of each two's complement integer, by binary search: while the
    upper half of what is left is nonzero, drop the lower half (and that many zeros)."""
    bits = x.dtype.itemsize * 8
    rest = x.view(x.dtype.str.replace("i", "u"))
    zeros = np.full(x.shape, bits, dtype=x.dtype)
    shift = bits // 2
    while shift:
        upper = rest >> np.asarray(shift, rest.dtype)
        nonzero = upper != 0
        zeros = np.where(nonzero, zeros - shift, zeros).astype(x.dtype)
        rest = np.where(nonzero, upper, rest)
        shift //= 2
    return (zeros - (rest != 0)).astype(x.dtype)


def _atan2(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """The angle of the point (y, x); for complex numbers, -i log((y + ix) / sqrt(x² + y²))."""
    if x.dtype.kind != "c":
        return np.arctan2(x, y).astype(x.dtype, copy=False)
    return (-1j * np.log((y + 1j * x) / np.sqrt(x * x + y * y))).astype(x.dtype, copy=False)


def _pow(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """x ** y; an integer exponent is first converted to x's dtype, as XLA does."""
    return np.power(x, y.astype(x.dtype, copy=False)).astype(x.dtype, copy=False)


def _pow_rule(x: ShapedArray, y: ShapedArray) -> ShapedArray:
    """The base is inexact; the exponent is an integer, or of the base's dtype."""
    shape = broadcast_shapes_trivially("pow", [x.shape, y.shape])
    check_dtype("pow", INEXACT, x.dtype, 0)
    check_dtype("pow", NUMBER, y.dtype, 1)
    if y.dtype.kind not in "iu" and y.dtype != x.dtype:
        raise TypeError(
            "the first argument to pow must have an inexact dtype (float or complex), and the "
            "second argument must have an inexact or integer dtype, and two inexact dtypes "
            f"must match, but got {x.dtype.name} and {y.dtype.name} respectively.")
    return ShapedArray(shape, x.dtype, x.weak_type and y.weak_type)


def _complex_of(dt: np.dtype) -> np.dtype:
    """The complex dtype with parts of dtype ``dt`` (complex dtypes are their own)."""
    return np.dtype(np.complex128 if dt in (np.float64, np.complex128) else np.complex64)


def _same_dtype(ufunc: Callable) -> Callable:
    """Some NumPy ufuncs widen small float types; XLA keeps the input dtype."""
    return lambda *xs: np.asarray(ufunc(*xs)).astype(xs[0].dtype, copy=False)


class RoundingMethod(enum.IntEnum):
    AWAY_FROM_ZERO = 0
    TO_NEAREST_EVEN = 1


# ---------------------------------------------------------------------------------------
# The primitives
# ---------------------------------------------------------------------------------------

neg_p = unary_primitive("neg", np.negative, NUMBER)
sign_p = unary_primitive("sign", _sign, NUMBER)
abs_p = unary_primitive("abs", np.abs, SIGNED, out_dtype=_real_part)
floor_p = unary_primitive("floor", np.floor, FLOAT)
ceil_p = unary_primitive("ceil", np.ceil, FLOAT)
is_finite_p = unary_primitive("is_finite", np.isfinite, FLOAT, out_dtype=_to_bool)
exp_p = unary_primitive("exp", _same_dtype(np.exp))
exp2_p = unary_primitive("exp2", _exp2)
log_p = unary_primitive("log", _same_dtype(np.log))
log1p_p = unary_primitive("log1p", _same_dtype(np.log1p))
expm1_p = unary_primitive("expm1", _same_dtype(np.expm1))
sqrt_p = unary_primitive("sqrt", _same_dtype(np.sqrt))
rsqrt_p = unary_primitive("rsqrt", _rsqrt)
cbrt_p = unary_primitive("cbrt", _same_dtype(np.cbrt), FLOAT)
square_p = unary_primitive("square", np.square, NUMBER)
sin_p = unary_primitive("sin", _same_dtype(np.sin))
cos_p = unary_primitive("cos", _same_dtype(np.cos))
tan_p = unary_primitive("tan", _same_dtype(np.tan))
asin_p = unary_primitive("asin", _same_dtype(np.arcsin))
acos_p = unary_primitive("acos", _same_dtype(np.arccos))
atan_p = unary_primitive("atan", _same_dtype(np.arctan))
sinh_p = unary_primitive("sinh", _same_dtype(np.sinh))
cosh_p = unary_primitive("cosh", _same_dtype(np.cosh))
tanh_p = unary_primitive("tanh", _same_dtype(np.tanh))
asinh_p = unary_primitive("asinh", _same_dtype(np.arcsinh))
acosh_p = unary_primitive("acosh", _same_dtype(np.arccosh))
atanh_p = unary_primitive("atanh", _same_dtype(np.arctanh))
logistic_p = unary_primitive("logistic", _logistic)
real_p = unary_primitive("real", np.real, ("complexfloating",), out_dtype=_real_part)
imag_p = unary_primitive("imag", np.imag, ("complexfloating",), out_dtype=_real_part)
not_p = unary_primitive("not", np.invert, INT_BOOL)
population_count_p = unary_primitive("population_count", _population_count, INT)
clz_p = unary_primitive("clz", _clz, INT)

round_p = Primitive("round")
round_p.def_impl(_round)
round_p.def_abstract_eval(
    lambda x, rounding_method=0: unary_rule("round", FLOAT, None, x)
)

add_p = nary_primitive("add", np.add)
sub_p = nary_primitive("sub", np.subtract)
mul_p = nary_primitive("mul", np.multiply)
div_p = nary_primitive("div", _div)
rem_p = nary_primitive("rem", _rem, ORDERED[:2])
pow_p = Primitive("pow")
pow_p.def_impl(_pow)
pow_p.def_abstract_eval(_pow_rule)
max_p = nary_primitive("max", _max, ANY)
min_p = nary_primitive("min", _min, ANY)
atan2_p = nary_primitive("atan2", _atan2, INEXACT)
nextafter_p = nary_primitive("nextafter", _nextafter, FLOAT)
complex_p = nary_primitive(
    "complex", lambda x, y: (x + 1j * y).astype(_complex_of(x.dtype)), ("float32", "float64"),
    out_dtype=_complex_of,
)
and_p = nary_primitive("and", np.bitwise_and, INT_BOOL)
or_p = nary_primitive("or", np.bitwise_or, INT_BOOL)
xor_p = nary_primitive("xor", np.bitwise_xor, INT_BOOL)
shift_left_p = nary_primitive("shift_left", _shift_left, INT)
shift_right_logical_p = nary_primitive("shift_right_logical", _shift_right_logical, INT)
shift_right_arithmetic_p = nary_primitive(
    "shift_right_arithmetic", _shift_right_arithmetic, INT
)
eq_p = nary_primitive("eq", np.equal, ANY, out_dtype=_to_bool)
ne_p = nary_primitive("ne", np.not_equal, ANY, out_dtype=_to_bool)
lt_p = nary_primitive("lt", np.less, ORDERED, out_dtype=_to_bool)
le_p = nary_primitive("le", np.less_equal, ORDERED, out_dtype=_to_bool)
gt_p = nary_primitive("gt", np.greater, ORDERED, out_dtype=_to_bool)
ge_p = nary_primitive("ge", np.greater_equal, ORDERED, out_dtype=_to_bool)

neg = _api(neg_p, "Elementwise negation: -x.")
sign = _api(sign_p, "Elementwise sign: -1, 0 or 1 (x / |x| for complex numbers).")
abs = _api(abs_p, "Elementwise absolute value |x|.")
floor = _api(floor_p, "Elementwise floor.")
ceil = _api(ceil_p, "Elementwise ceiling.")
is_finite = _api(is_finite_p, "Elementwise test: neither infinite nor NaN.")
exp = _api(exp_p, "Elementwise exponential e**x.")
exp2 = _api(exp2_p, "Elementwise base-2 exponential 2**x.")
log = _api(log_p, "Elementwise natural logarithm.")
log1p = _api(log1p_p, "Elementwise log(1 + x), accurate for small x.")
expm1 = _api(expm1_p, "Elementwise e**x - 1, accurate for small x.")
sqrt = _api(sqrt_p, "Elementwise square root.")
rsqrt = _api(rsqrt_p, "Elementwise reciprocal square root 1/sqrt(x).")
cbrt = _api(cbrt_p, "Elementwise cube root.")
square = _api(square_p, "Elementwise square x * x.")
sin = _api(sin_p, "Elementwise sine.")
cos = _api(cos_p, "Elementwise cosine.")
tan = _api(tan_p, "Elementwise tangent.")
asin = _api(asin_p, "Elementwise arc sine.")
acos = _api(acos_p, "Elementwise arc cosine.")
atan = _api(atan_p, "Elementwise arc tangent.")
sinh = _api(sinh_p, "Elementwise hyperbolic sine.")
cosh = _api(cosh_p, "Elementwise hyperbolic cosine.")
tanh = _api(tanh_p, "Elementwise hyperbolic tangent.")
asinh = _api(asinh_p, "Elementwise inverse hyperbolic sine.")
acosh = _api(acosh_p, "Elementwise inverse hyperbolic cosine.")
atanh = _api(atanh_p, "Elementwise inverse hyperbolic tangent.")
logistic = _api(logistic_p, "Elementwise logistic sigmoid 1 / (1 + e**-x).")
real = _api(real_p, "Elementwise real part of a complex number.")
imag = _api(imag_p, "Elementwise imaginary part of a complex number.")
bitwise_not = _api(not_p, "Elementwise NOT: logical for booleans, bitwise for integers.")
population_count = _api(population_count_p, "Elementwise count of set bits.")
clz = _api(clz_p, "Elementwise count of leading zero bits.")
add = _api(add_p, "Elementwise addition x + y (same dtypes; no promotion).")
sub = _api(sub_p, "Elementwise subtraction x - y.")
mul = _api(mul_p, "Elementwise multiplication x * y.")
div = _api(div_p, "Elementwise division; integer division rounds toward zero.")
rem = _api(rem_p, "Elementwise remainder with the sign of the dividend (C's fmod).")
pow = _api(pow_p, "Elementwise power x ** y for floating-point and complex x (y may be an "
                 "integer).")
max = _api(max_p, "Elementwise maximum (NaN wins).")
min = _api(min_p, "Elementwise minimum (NaN wins).")
atan2 = _api(atan2_p, "Elementwise arc tangent of x / y, in the right quadrant.")
nextafter = _api(nextafter_p, "Elementwise next representable number after x toward y.")
complex = _api(complex_p, "Elementwise x + i*y.")
bitwise_and = _api(and_p, "Elementwise AND: logical for booleans, bitwise for integers.")
bitwise_or = _api(or_p, "Elementwise OR: logical for booleans, bitwise for integers.")
bitwise_xor = _api(xor_p, "Elementwise XOR: logical for booleans, bitwise for integers.")
shift_left = _api(shift_left_p, "Elementwise x << y (0 when y is out of range).")
shift_right_logical = _api(shift_right_logical_p, "Elementwise logical right shift.")
shift_right_arithmetic = _api(shift_right_arithmetic_p, "Elementwise arithmetic right shift.")
eq = _api(eq_p, "Elementwise x == y.")
ne = _api(ne_p, "Elementwise x != y.")
lt = _api(lt_p, "Elementwise x < y.")
le = _api(le_p, "Elementwise x <= y.")
gt = _api(gt_p, "Elementwise x > y.")
ge = _api(ge_p, "Elementwise x >= y.")


stop_gradient_p = Primitive("stop_gradient")
stop_gradient_p.def_impl(lambda x: x)
stop_gradient_p.def_abstract_eval(lambda x: x)


def stop_gradient(x: Any) -> Any:
    """``x`` itself, but a constant to differentiation (its derivative is zero).

    Works on pytrees. Integer and boolean values are returned as they are: they have no
    derivative to stop.
    """
    from minijax.tree_util import tree_map

    def stop(leaf: Any) -> Any:
        leaf = operand(leaf)
        return stop_gradient_p.bind(leaf) if dtypes.issubdtype(leaf.dtype, np.inexact) else leaf

    return tree_map(stop, x)


def round(x: Any, rounding_method: int = RoundingMethod.AWAY_FROM_ZERO) -> Any:
    """Elementwise rounding; halves go away from zero unless told ``TO_NEAREST_EVEN``."""
    return round_p.bind(operand(x, round_p), rounding_method=RoundingMethod(rounding_method))


def reciprocal(x: Any) -> Any:
    """1 / x, written with ``integer_pow`` as JAX does."""
    return integer_pow(x, -1)


# ---------------------------------------------------------------------------------------
# conj: complex conjugate; of a real number, that number as a complex one
# ---------------------------------------------------------------------------------------


def _conj_rule(x: ShapedArray, input_dtype: np.dtype) -> ShapedArray:
    check_dtype("conj", ("float32", "complexfloating", "float64"), x.dtype)
    return ShapedArray(x.shape, _complex_of(x.dtype), x.weak_type)


conj_p = Primitive("conj")
conj_p.def_impl(lambda x, input_dtype: np.conj(x).astype(_complex_of(x.dtype), copy=False))
conj_p.def_abstract_eval(_conj_rule)


def conj(x: Any) -> Any:
    """Elementwise complex conjugate (the input dtype is a parameter, as in JAX)."""
    x = operand(x)
    return conj_p.bind(x, input_dtype=x.aval.dtype)


# ---------------------------------------------------------------------------------------
# integer_pow: a power whose exponent is a Python int, part of the primitive's params
# ---------------------------------------------------------------------------------------


def _integer_pow_kernel(x: np.ndarray, y: int) -> np.ndarray:
    """Repeated squaring, as XLA does; a negative exponent takes the reciprocal of the
    power (``x ** -2`` is ``1 / (x * x)``)."""
    if y == 0:
        return np.ones_like(x)
    power = np.power(x, y if y > 0 else -y).astype(x.dtype, copy=False)
    return power if y > 0 else (1 / power).astype(x.dtype, copy=False)


def _integer_pow_rule(x: ShapedArray, y: int) -> ShapedArray:
    out = unary_rule("integer_pow", NUMBER, None, x)
    if y < 0 and x.dtype.kind in "iu":
        raise TypeError(f"Integers cannot be raised to negative powers, got "
                        f"integer_pow({x.str_long()}, {y})")
    return out


integer_pow_p = Primitive("integer_pow")
integer_pow_p.def_impl(_integer_pow_kernel)
integer_pow_p.def_abstract_eval(_integer_pow_rule)


def integer_pow(x: Any, y: int) -> Any:
    """x ** y for a Python integer ``y``, which becomes a parameter of the equation."""
    # operator.index, not int: an exponent of 1.5 is an error, not 1 (JAX raises TypeError)
    return integer_pow_p.bind(operand(x, integer_pow_p), y=operator.index(y))


# ---------------------------------------------------------------------------------------
# convert_element_type: the only way to change a dtype (and to drop a weak type)
# ---------------------------------------------------------------------------------------


def _convert_kernel(x: np.ndarray, new_dtype: np.dtype, weak_type: bool) -> np.ndarray:
    """Like ``astype``, but float-to-integer saturates and maps NaN to 0, as XLA does."""
    if x.dtype.kind == "c" and new_dtype.kind != "c":
        x = x.real
    if x.dtype.kind == "f" or x.dtype == dtypes.bfloat16:
        if new_dtype.kind in "iu":
            info = np.iinfo(new_dtype)
            x = np.nan_to_num(x.astype(np.float64), nan=0.0)
            return np.clip(np.trunc(x), info.min, info.max).astype(new_dtype)
    if new_dtype == np.bool_:
        return x != 0
    return x.astype(new_dtype)


def _convert_rule(x: ShapedArray, new_dtype: np.dtype, weak_type: bool) -> ShapedArray:
    return ShapedArray(x.shape, new_dtype, weak_type)


convert_element_type_p = Primitive("convert_element_type")
convert_element_type_p.def_impl(_convert_kernel)
convert_element_type_p.def_abstract_eval(_convert_rule)


def _foldable(x: Any) -> bool:
    """Host scalars (NumPy scalars, and arrays a trace made of them) are converted on the
    host, so jaxprs show the result as a literal; a jax Array's conversion is recorded."""
    if type(x) is Array:
        return core.is_host_scalar(x)
    return not isinstance(x, Tracer) and np.ndim(x) == 0


_scalar_constants: dict[tuple, Array] = {}


def _python_scalar_constant(x: Any, new_dtype: np.dtype, weak_type: bool) -> Array:
    """``x + 1.0`` converts the same Python scalars over and over: reuse the (immutable)
    arrays. The key tells 1 from 1.0 from True, and 0.0 from -0.0."""
    key = (type(x), x, math.copysign(1.0, x) if type(x) is float else 0, new_dtype, weak_type)
    constant = _scalar_constants.get(key)
    if constant is None:
        value = np.asarray(operand(x)._value)
        constant = put_numpy(_convert_kernel(value, new_dtype, weak_type), weak_type)
        if len(_scalar_constants) > 1000:
            _scalar_constants.clear()
        _scalar_constants[key] = constant
    if core.current_trace().host_scalars is not None:  # a trace that records a jaxpr:
        unchanged = weak_type and new_dtype == dtypes.dtype(x)  # it prints x as written
        core.note_host_scalar(constant, x if unchanged else None)
    return constant


def convert_element_type(x: Any, new_dtype: Any, weak_type: bool = False) -> Any:
    """Cast ``x`` to ``new_dtype`` (canonicalised). A no-op if nothing would change."""
    if type(x) is Array or isinstance(x, Tracer):
        if x.aval.dtype == new_dtype and x.aval.weak_type == weak_type:
            return x
    elif type(x) in (bool, int, float) and x == x:
        return _python_scalar_constant(x, dtypes.canonicalize_dtype(new_dtype), weak_type)
    new_dtype = dtypes.canonicalize_dtype(new_dtype)
    if _foldable(x):
        value = np.asarray(operand(x)._wait())
        constant = put_numpy(_convert_kernel(value, new_dtype, weak_type), weak_type)
        core.note_host_scalar(constant)
        return constant
    x = operand(x)
    if x.dtype == new_dtype and x.weak_type == weak_type:
        return x
    return convert_element_type_p.bind(x, new_dtype=new_dtype, weak_type=weak_type)


def _bitcast_rule(x: ShapedArray, new_dtype: np.dtype) -> ShapedArray:
    if x.dtype.itemsize != new_dtype.itemsize:
        raise TypeError(
            f"bitcast_convert_type between {x.dtype.name} and {new_dtype.name} needs equal "
            "widths here"
        )
    return ShapedArray(x.shape, new_dtype, False)


bitcast_convert_type_p = Primitive("bitcast_convert_type")
bitcast_convert_type_p.def_impl(lambda x, new_dtype: x.view(new_dtype))
bitcast_convert_type_p.def_abstract_eval(_bitcast_rule)


def bitcast_convert_type(x: Any, new_dtype: Any) -> Any:
    """Reinterpret the bits of each element as ``new_dtype`` (same width)."""
    x = operand(x, bitcast_convert_type_p)
    # canonical, as JAX: without x64, float64 is float32 (then the widths agree)
    return bitcast_convert_type_p.bind(x, new_dtype=dtypes.canonicalize_dtype(new_dtype))


# ---------------------------------------------------------------------------------------
# reduce_precision: round to a narrower floating-point format, keeping the dtype
# ---------------------------------------------------------------------------------------


def _reduce_precision_kernel(x: np.ndarray, *, exponent_bits: int, mantissa_bits: int
                             ) -> np.ndarray:
    """Work on the bits: round the mantissa to ``mantissa_bits`` (to nearest, ties to
    even), then send exponents the narrow format cannot hold to ±inf (too large) or ±0
    (too small, subnormals included). NaNs stay NaNs."""
    info = dtypes.finfo(x.dtype)
    src_exponent, src_mantissa = info.nexp, info.nmant
    bits = x.view(np.dtype(f"uint{x.dtype.itemsize * 8}"))
    u = bits.dtype.type
    if mantissa_bits < src_mantissa:
        dropped = src_mantissa - mantissa_bits
        last_kept = (bits >> u(dropped)) & u(1)  # ties round to an even last bit
        bias = last_kept + u((1 << (dropped - 1)) - 1)
        bits = (bits + bias) & ~u((1 << dropped) - 1)
    if exponent_bits < src_exponent:
        exponent_mask = u(((1 << src_exponent) - 1) << src_mantissa)
        sign = bits & u(1 << (src_exponent + src_mantissa))
        src_bias, narrow_bias = (1 << (src_exponent - 1)) - 1, (1 << (exponent_bits - 1)) - 1
        exponent = bits & exponent_mask
        overflow = exponent > u((src_bias + narrow_bias) << src_mantissa)
        underflow = exponent <= u((src_bias - narrow_bias) << src_mantissa)
        bits = np.where(overflow, sign | exponent_mask, np.where(underflow, sign, bits))
    out = np.asarray(bits).view(x.dtype)
    return np.where(np.isnan(x), x, out) if mantissa_bits > 0 else out


def _reduce_precision_rule(x: ShapedArray, *, exponent_bits: int, mantissa_bits: int
                           ) -> ShapedArray:
    if exponent_bits < 1 or mantissa_bits < 0:
        raise ValueError(f"reduce_precision: exponent_bits must be at least 1 and "
                         f"mantissa_bits at least 0, got {exponent_bits} and {mantissa_bits}")
    return unary_rule("reduce_precision", FLOAT, None, x)


reduce_precision_p = Primitive("reduce_precision")
reduce_precision_p.def_impl(_reduce_precision_kernel)
reduce_precision_p.def_abstract_eval(_reduce_precision_rule)


def reduce_precision(operand_: Any, exponent_bits: int, mantissa_bits: int) -> Any:
    """Round each element as if stored in a float format with these many exponent and
    mantissa bits (``5, 10`` is float16), and give it back in the original dtype."""
    return reduce_precision_p.bind(operand(operand_, reduce_precision_p),
                                   exponent_bits=int(exponent_bits),
                                   mantissa_bits=int(mantissa_bits))


# ---------------------------------------------------------------------------------------
# Selection: select_n and clamp
# ---------------------------------------------------------------------------------------


def _select_n_kernel(which: np.ndarray, *cases: np.ndarray) -> np.ndarray:
    if which.dtype == np.bool_:
        return np.where(which, cases[1], cases[0]) if len(cases) == 2 else cases[0].copy()
    return np.choose(which, cases) if which.ndim else cases[int(which)].copy()


def _select_n_rule(which: ShapedArray, *cases: ShapedArray) -> ShapedArray:
    if not cases:
        raise ValueError("select_n() must have at least one case")
    if which.dtype != np.bool_ and which.dtype != np.int32:
        raise TypeError(
            "select_n requires the predicate to be a boolean or int32 array, got "
            f"{which.dtype.name}"
        )
    if which.dtype == np.bool_ and len(cases) > 2:
        raise TypeError("select_n with a boolean predicate takes at most two cases")
    if any(c.shape != cases[0].shape or c.dtype != cases[0].dtype for c in cases):
        raise TypeError(
            "select_n cases must have the same shapes and dtypes, got "
            f"{', '.join(c.str_long() for c in cases)}."
        )
    if which.shape and which.shape != cases[0].shape:
        raise TypeError(
            "select_n which must be scalar or have the same shape as cases, got "
            f"which shape {which.shape} but case shape {cases[0].shape}."
        )
    return ShapedArray(cases[0].shape, cases[0].dtype, all(c.weak_type for c in cases))


select_n_p = Primitive("select_n")
select_n_p.def_impl(_select_n_kernel)
select_n_p.def_abstract_eval(_select_n_rule)


def select_n(which: Any, *cases: Any) -> Any:
    """Pick ``cases[which]`` elementwise (``which`` boolean: False -> cases[0])."""
    return select_n_p.bind(*operands(select_n_p, (which, *cases)))


def select(pred: Any, on_true: Any, on_false: Any) -> Any:
    """``on_true`` where ``pred`` holds, else ``on_false`` (note the order of select_n)."""
    return select_n(pred, on_false, on_true)


def _clamp_rule(lo: ShapedArray, x: ShapedArray, hi: ShapedArray) -> ShapedArray:
    for name, bound in (("min", lo), ("max", hi)):
        if bound.dtype != x.dtype:
            raise TypeError(
                "lax.clamp requires arguments to have the same dtypes, got "
                f"{lo.dtype.name}, {x.dtype.name}, {hi.dtype.name}."
            )
        if bound.shape and bound.shape != x.shape:
            raise TypeError(
                f"clamp requires {name}.shape == operand.shape or {name}.shape == (), got "
                f"{name}.shape={bound.shape}, operand.shape={x.shape}."
            )
    return ShapedArray(x.shape, x.dtype, x.weak_type)


clamp_p = Primitive("clamp")
clamp_p.def_impl(lambda lo, x, hi: _min(_max(x, lo), hi))
clamp_p.def_abstract_eval(_clamp_rule)


def clamp(min: Any, x: Any, max: Any) -> Any:
    """Elementwise ``min(max(x, min), max)``."""
    return clamp_p.bind(*operands(clamp_p, (min, x, max)))


# ---------------------------------------------------------------------------------------
# vmap: batching rules
# ---------------------------------------------------------------------------------------

for _prim in (neg_p, sign_p, abs_p, floor_p, ceil_p, is_finite_p, exp_p, exp2_p, log_p,
              log1p_p, expm1_p, sqrt_p, rsqrt_p, cbrt_p, square_p, sin_p, cos_p, tan_p,
              asin_p, acos_p, atan_p, sinh_p, cosh_p, tanh_p, asinh_p, acosh_p, atanh_p,
              logistic_p, real_p, imag_p, not_p, population_count_p, clz_p, round_p,
              stop_gradient_p, conj_p, integer_pow_p, convert_element_type_p,
              bitcast_convert_type_p, reduce_precision_p):
    batching.defvectorized(_prim)

for _prim in (add_p, sub_p, mul_p, div_p, rem_p, pow_p, max_p, min_p, atan2_p, nextafter_p,
              complex_p, and_p, or_p, xor_p, shift_left_p, shift_right_logical_p,
              shift_right_arithmetic_p, eq_p, ne_p, lt_p, le_p, gt_p, ge_p):
    batching.defbroadcasting(_prim)


def _broadcast_in_dim(x: Any, shape: Sequence[int], dims: Sequence[int]) -> Any:
    from minijax.lax.shapes import broadcast_in_dim  # shapes is built on this module

    return broadcast_in_dim(x, shape, dims)


def _select_n_batching(axis_data: Any, vals: list, dims: list) -> tuple[Any, Any]:
    """JAX's rule: where ``which`` and the cases agree, select as is; otherwise batch axes
    go to the front, and a batched scalar ``which`` is broadcast to the cases' shape."""
    (which, *cases), (which_dim, *case_dims) = vals, dims
    size = next(x.shape[d] for x, d in zip(vals, dims) if d is not None)
    if all(d == which_dim for d in case_dims):
        if which.shape != cases[0].shape:  # a scalar predicate of each example
            which = _broadcast_in_dim(which, cases[0].shape, [which_dim])
        return select_n(which, *cases), which_dim
    if which.ndim == 0 and all(d is not None for d in case_dims):
        if all(d == case_dims[0] for d in case_dims[1:]):
            return select_n(which, *cases), case_dims[0]
        if all(c.shape == cases[0].shape for c in cases):
            others = [batching.moveaxis(c, d, case_dims[0])
                      for c, d in zip(cases[1:], case_dims[1:])]
            return select_n(which, cases[0], *others), case_dims[0]
    if which.shape:
        which = batching.bdim_at_front(which, which_dim, size)
    if any(c.shape for c in cases):
        cases = [batching.bdim_at_front(c, d, size) for c, d in zip(cases, case_dims)]
    if 0 < which.ndim < cases[0].ndim:
        which = _broadcast_in_dim(which, cases[0].shape, [0])
    if which.ndim > cases[0].ndim:
        cases = [_broadcast_in_dim(c, which.shape, ()) for c in cases]
    return select_n(which, *cases), 0


def _clamp_batching(axis_data: Any, vals: list, dims: list) -> tuple[Any, Any]:
    """JAX's rule: bounds that agree with the operand's batching are used as they are;
    otherwise batch axes go to the front and scalar bounds are broadcast."""
    (lo, x, hi), (lo_dim, x_dim, hi_dim) = vals, dims
    size = next(v.shape[d] for v, d in zip(vals, dims) if d is not None)
    if lo_dim == x_dim == hi_dim:
        if lo.ndim == hi.ndim == 1 and x.ndim > 1:  # scalar bounds of each example
            lo = _broadcast_in_dim(lo, x.shape, [lo_dim])
            hi = _broadcast_in_dim(hi, x.shape, [hi_dim])
        return clamp_p.bind(lo, x, hi), x_dim
    if lo.ndim == 0 and hi.ndim == 0 and x_dim is not None:
        return clamp_p.bind(lo, x, hi), x_dim
    lo, x, hi = [batching.bdim_at_front(v, d, size) if v.shape else v
                 for v, d in zip(vals, dims)]
    lo, hi = [_broadcast_in_dim(b, x.shape, ()) if b.ndim == 0 and x.ndim else b
              for b in (lo, hi)]
    lo, hi = [_broadcast_in_dim(b, x.shape, [0]) if 0 < b.ndim < x.ndim else b
              for b in (lo, hi)]
    if lo.ndim > x.ndim:
        x = _broadcast_in_dim(x, lo.shape, ())
    return clamp_p.bind(lo, x, hi), 0


batching.batching_rules[select_n_p] = _select_n_batching
batching.batching_rules[clamp_p] = _clamp_batching
