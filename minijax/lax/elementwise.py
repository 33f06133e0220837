"""Elementwise primitives beyond the base set: more math, logic, bit twiddling, rounding,
complex numbers, ``pow``, ``clamp``, ``stop_gradient``.

``lax`` is strict. Its binary operations do not promote dtypes (``lax.add`` of float32 and
int32 is a ``TypeError``) and broadcast only trivially: operands have the same rank and
each dimension agrees or is 1, or an operand is a scalar. Everything friendlier lives in
``minijax.numpy``, which is written on top of these functions.

Each primitive is defined by a row: its name, its NumPy kernel, and the dtype families it
accepts; the shape rules of :mod:`minijax.lax.base` (``unary_rule``, ``nary_rule``) serve
them all, as they serve ``add`` and ``exp`` there. Where NumPy and XLA disagree (integer
division by zero, rounding half away from zero) the kernel says how XLA does it.
"""

from __future__ import annotations

import enum
from typing import Any

import numpy as np

from minijax import dtypes
from minijax.compiler.lowering import RuleContext, lowering_rules, register
from minijax.compiler.stablehlo_ir import TensorType, Value
from minijax.core import Primitive, ShapedArray
from minijax.interpreters import batching
from minijax.interpreters.ad import (
    Zero,
    add_tangents,
    deflinear,
    defzero,
    jvp_rules,
    tangent_aval,
)
from minijax.interpreters.transpose import deftranspose, is_undefined, transpose_rules
from minijax.lax import cpu_math
from minijax.lax.base import (
    FLOAT,
    INEXACT,
    INT,
    INT_BOOL,
    NUMBER,
    ORDERED,
    SIGNED,
    _api,
    _as_arrays,
    _broadcast_like,
    _by_parts,
    _complex,
    _complex_of,
    _const,
    _is_float,
    _linear_unary,
    _max,
    _min,
    _nary,
    _same_dtype,
    _times,
    _to_bool,
    _unbroadcast,
    _unsigned_zero,
    _zeros,
    add,
    broadcast_in_dim,
    broadcast_shapes_trivially,
    check_dtype,
    convert_element_type,
    defjvp,
    div,
    eq,
    full_like,
    ge,
    gt,
    integer_pow,
    log,
    lt,
    mul,
    nary_primitive,
    neg,
    operand,
    operands,
    select,
    sub,
    unary_primitive,
    unary_rule,
)

__all__ = [
    "RoundingMethod",
    "abs",
    "abs_p",
    "acos",
    "acos_p",
    "acosh",
    "acosh_p",
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
    "cosh",
    "cosh_p",
    "exp2",
    "exp2_p",
    "expm1",
    "expm1_p",
    "floor",
    "floor_p",
    "imag",
    "imag_p",
    "is_finite",
    "is_finite_p",
    "log1p",
    "log1p_p",
    "logistic",
    "logistic_p",
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
    "shift_left",
    "shift_left_p",
    "shift_right_arithmetic",
    "shift_right_arithmetic_p",
    "shift_right_logical",
    "shift_right_logical_p",
    "sign",
    "sign_p",
    "sinh",
    "sinh_p",
    "sqrt",
    "sqrt_p",
    "square",
    "square_p",
    "stop_gradient",
    "stop_gradient_p",
    "tan",
    "tan_p",
    "xor_p",
]


def _real_part(dt: np.dtype) -> np.dtype:
    return np.dtype({"complex64": np.float32, "complex128": np.float64}.get(dt.name, dt))


# ---------------------------------------------------------------------------------------
# Kernels where XLA's semantics differ from NumPy's
# ---------------------------------------------------------------------------------------


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


def _sign(x: np.ndarray) -> np.ndarray:
    """-1, 0 or 1; a zero keeps its sign (``sign(-0.0)`` is -0.0) and NaN stays NaN."""
    out = np.sign(x)
    return np.where(x == 0, x, out) if _is_float(x) else out


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
    """The angle of the point (y, x), float32 as the C library computes it (XLA calls it);
    complex numbers by XLA's formula (:func:`_complex_atan2`)."""
    if x.dtype.kind == "c":
        return _complex_atan2(x, y)
    return cpu_math.atan2(x, y).astype(x.dtype, copy=False)


def _complex_atan2(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """-i log((y + ix) / sqrt(x² + y²)), each complex step as XLA computes it in the
    parts' precision (see :mod:`~minijax.lax.cpu_math`): on the branch cut (x = 0, y
    left of the imaginary axis) the result is +-pi by the sign of a rounding error."""
    (a, b), (c, d) = (x.real, x.imag), (y.real, y.imag)
    with np.errstate(all="ignore"):
        root = cpu_math.complex_sqrt(_square_real(c, d) + _square_real(a, b),
                                     2 * (d * c) + 2 * (b * a))
        ratio = cpu_math.complex_divide(c + (a * 0 - b), d + (a + b * 0), *root)
        log_abs, angle = cpu_math.log(cpu_math.hypot(*ratio)), cpu_math.atan2(*ratio[::-1])
        return _complex(log_abs * 0 + angle, -log_abs + angle * 0).astype(x.dtype, copy=False)


def _square_real(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The real part of (a + bi)², a² - b², with a² fused into the subtraction."""
    return cpu_math.fma(a, a, -(b * b))


def _pow(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """x ** y; an integer exponent is first converted to x's dtype, as XLA does. (Generated
    code may pass a splat constant as a Python scalar: it takes the other's dtype.)"""
    dtype = x.dtype if hasattr(x, "dtype") else np.result_type(x, y)
    x, y = np.asarray(x, dtype), np.asarray(y).astype(dtype, copy=False)
    if x.dtype.kind == "c":
        return _complex_pow(x, y)
    return np.power(x, y).astype(x.dtype, copy=False)


def _complex_pow(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """XLA's formula, step by step in the parts' precision (see
    :mod:`~minijax.lax.cpu_math`): with x = a + bi, y = c + di, r = |x| and
    θ = atan2(b, a), x ** y = r^c e^(-dθ) (cos q + i sin q), q = cθ + d log r. Exact
    first: x ** 0 and 1 ** y are 1; of a real y, 0 ** y is 0 (1 if y is 0) if y > 0 (NaN
    if y < 0), and inf ** y is inf if y > 0, 0 if y < 0."""
    (a, b), (c, d) = (x.real, x.imag), (y.real, y.imag)
    with np.errstate(all="ignore"):
        r, theta = cpu_math.hypot(a, b), cpu_math.atan2(b, a)
        scale = (cpu_math.in_float64(np.exp, theta * -d)
                 * cpu_math.in_float64(np.power, r, c))
        q = cpu_math.fma(c, theta, d * cpu_math.log(r))
        out = _complex(scale * cpu_math.in_float64(np.cos, q),
                       scale * cpu_math.in_float64(np.sin, q))
    real_y, real_inf = d == 0, (a == np.inf) & (b == 0) & (d == 0)
    exact = (((r == 0) & real_y & (c >= 0), np.where(c == 0, 1, 0)), (real_y & (c == 0), 1),
             ((a == 1) & (b == 0), 1), (real_inf & (c > 0), np.inf), (real_inf & (c < 0), 0))
    for where, value in exact:
        out = np.where(where, np.asarray(value).astype(x.dtype), out)
    return out.astype(x.dtype, copy=False)


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










def _times_cosh(f: np.ndarray, a: np.ndarray, odd: bool) -> np.ndarray:
    """f cosh(a), or f sinh(a) if ``odd``; where cosh(a) overflows, XLA multiplies f twice
    by exp((|a| - log 2) / 2), so that a small f keeps the product finite (its complex64
    sinh(100+pi j) has the imaginary part -1.2e36; naively it would be -inf)."""
    direct = _times(f, np.sinh(a) if odd else np.cosh(a))
    half = np.exp((np.abs(a) - a.dtype.type(np.log(2))) * 0.5)
    scaled = _times(f, np.sign(a) if odd else np.ones_like(a)) * half * half
    return np.where(np.isfinite(np.cosh(a)), direct, scaled)


def _sinh_parts(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return _times_cosh(np.cos(b), a, odd=True), _times_cosh(np.sin(b), a, odd=False)


def _cosh_parts(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return _times_cosh(np.cos(b), a, odd=False), _times_cosh(np.sin(b), a, odd=True)


def _expm1_parts(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """exp(a)(cos b + i sin b) - 1, with cos b - 1 as -2 sin²(b/2) to keep small results."""
    half_sine = np.sin(b / 2)
    return np.expm1(a) * np.cos(b) - 2 * half_sine * half_sine, _times(np.sin(b), np.exp(a))


class RoundingMethod(enum.IntEnum):
    AWAY_FROM_ZERO = 0
    TO_NEAREST_EVEN = 1


# ---------------------------------------------------------------------------------------
# The primitives
# ---------------------------------------------------------------------------------------

sign_p = unary_primitive("sign", _sign, NUMBER)
abs_p = unary_primitive("abs", np.abs, SIGNED, out_dtype=_real_part)
floor_p = unary_primitive("floor", np.floor, FLOAT)
ceil_p = unary_primitive("ceil", np.ceil, FLOAT)
is_finite_p = unary_primitive("is_finite", np.isfinite, FLOAT, out_dtype=_to_bool)
exp2_p = unary_primitive("exp2", _exp2)
log1p_p = unary_primitive("log1p", _same_dtype(np.log1p))
expm1_p = unary_primitive("expm1", _by_parts(np.expm1, _expm1_parts))
sqrt_p = unary_primitive("sqrt", _unsigned_zero(np.sqrt, "imag"))
rsqrt_p = unary_primitive("rsqrt", _rsqrt)
cbrt_p = unary_primitive("cbrt", _same_dtype(np.cbrt), FLOAT)
square_p = unary_primitive("square", np.square, NUMBER)
tan_p = unary_primitive("tan", _same_dtype(np.tan))
asin_p = unary_primitive("asin", _unsigned_zero(np.arcsin, "imag"))
acos_p = unary_primitive("acos", _unsigned_zero(np.arccos, "imag"))
atan_p = unary_primitive("atan", _same_dtype(np.arctan))
sinh_p = unary_primitive("sinh", _by_parts(np.sinh, _sinh_parts))
cosh_p = unary_primitive("cosh", _by_parts(np.cosh, _cosh_parts))
asinh_p = unary_primitive("asinh", _unsigned_zero(np.arcsinh, "real"))
acosh_p = unary_primitive("acosh", _unsigned_zero(np.arccosh, "imag"))
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

rem_p = nary_primitive("rem", _rem, ORDERED[:2])
pow_p = Primitive("pow")
pow_p.def_impl(_pow)
pow_p.def_abstract_eval(_pow_rule)
atan2_p = nary_primitive("atan2", _atan2, INEXACT)
nextafter_p = nary_primitive("nextafter", _nextafter, FLOAT)


complex_p = nary_primitive("complex", _complex, ("float32", "float64"), out_dtype=_complex_of)
and_p = nary_primitive("and", np.bitwise_and, INT_BOOL)
or_p = nary_primitive("or", np.bitwise_or, INT_BOOL)
xor_p = nary_primitive("xor", np.bitwise_xor, INT_BOOL)
shift_left_p = nary_primitive("shift_left", _shift_left, INT)
shift_right_logical_p = nary_primitive("shift_right_logical", _shift_right_logical, INT)
shift_right_arithmetic_p = nary_primitive(
    "shift_right_arithmetic", _shift_right_arithmetic, INT
)

sign = _api(sign_p, "Elementwise sign: -1, 0 or 1 (x / |x| for complex numbers).")
abs = _api(abs_p, "Elementwise absolute value |x|.")
floor = _api(floor_p, "Elementwise floor.")
ceil = _api(ceil_p, "Elementwise ceiling.")
is_finite = _api(is_finite_p, "Elementwise test: neither infinite nor NaN.")
exp2 = _api(exp2_p, "Elementwise base-2 exponential 2**x.")
log1p = _api(log1p_p, "Elementwise log(1 + x), accurate for small x.")
expm1 = _api(expm1_p, "Elementwise e**x - 1, accurate for small x.")
sqrt = _api(sqrt_p, "Elementwise square root.")
rsqrt = _api(rsqrt_p, "Elementwise reciprocal square root 1/sqrt(x).")
cbrt = _api(cbrt_p, "Elementwise cube root.")
square = _api(square_p, "Elementwise square x * x.")
tan = _api(tan_p, "Elementwise tangent.")
asin = _api(asin_p, "Elementwise arc sine.")
acos = _api(acos_p, "Elementwise arc cosine.")
atan = _api(atan_p, "Elementwise arc tangent.")
sinh = _api(sinh_p, "Elementwise hyperbolic sine.")
cosh = _api(cosh_p, "Elementwise hyperbolic cosine.")
asinh = _api(asinh_p, "Elementwise inverse hyperbolic sine.")
acosh = _api(acosh_p, "Elementwise inverse hyperbolic cosine.")
atanh = _api(atanh_p, "Elementwise inverse hyperbolic tangent.")
logistic = _api(logistic_p, "Elementwise logistic sigmoid 1 / (1 + e**-x).")
real = _api(real_p, "Elementwise real part of a complex number.")
imag = _api(imag_p, "Elementwise imaginary part of a complex number.")
bitwise_not = _api(not_p, "Elementwise NOT: logical for booleans, bitwise for integers.")
population_count = _api(population_count_p, "Elementwise count of set bits.")
clz = _api(clz_p, "Elementwise count of leading zero bits.")
rem = _api(rem_p, "Elementwise remainder with the sign of the dividend (C's fmod).")
pow = _api(pow_p, "Elementwise power x ** y for floating-point and complex x (y may be an "
                 "integer).")
atan2 = _api(atan2_p, "Elementwise arc tangent of x / y, in the right quadrant.")
nextafter = _api(nextafter_p, "Elementwise next representable number after x toward y.")
complex = _api(complex_p, "Elementwise x + i*y.")
bitwise_and = _api(and_p, "Elementwise AND: logical for booleans, bitwise for integers.")
bitwise_or = _api(or_p, "Elementwise OR: logical for booleans, bitwise for integers.")
bitwise_xor = _api(xor_p, "Elementwise XOR: logical for booleans, bitwise for integers.")
shift_left = _api(shift_left_p, "Elementwise x << y (0 when y is out of range).")
shift_right_logical = _api(shift_right_logical_p, "Elementwise logical right shift.")
shift_right_arithmetic = _api(shift_right_arithmetic_p, "Elementwise arithmetic right shift.")

# ---------------------------------------------------------------------------------------
# The rules of the primitives above: JVP, transpose, lowering
# ---------------------------------------------------------------------------------------


def _replace_zero(x: Any) -> Any:
    """``x`` with zeros replaced by ones: for formulas whose value at 0 is a limit."""
    return select(eq(x, _const(x, 0)), full_like(x, 1), x)


def is_complex(x: Any) -> bool:
    return dtypes.issubdtype(x.dtype, np.complexfloating)


# Where a derivative has a choice to make (``abs`` at 0, ``x ** y`` at ``x = 0``) the rules
# make JAX's choice, so that gradients agree with JAX's.
defjvp(tan_p, lambda t, out, x: mul(t, add(_const(x, 1), square(out))))
defjvp(asin_p, lambda t, out, x: mul(t, rsqrt(sub(_const(x, 1), square(x)))))
defjvp(acos_p, lambda t, out, x: mul(t, neg(rsqrt(sub(_const(x, 1), square(x))))))
defjvp(atan_p, lambda t, out, x: div(t, add(_const(x, 1), square(x))))
defjvp(sinh_p, lambda t, out, x: mul(t, cosh(x)))
defjvp(cosh_p, lambda t, out, x: mul(t, sinh(x)))
defjvp(asinh_p, lambda t, out, x: mul(t, rsqrt(add(square(x), _const(x, 1)))))
defjvp(acosh_p, lambda t, out, x: mul(
    t, rsqrt(mul(sub(x, _const(x, 1)), add(x, _const(x, 1))))))
defjvp(atanh_p, lambda t, out, x: mul(integer_pow(add(_const(x, 1), x), -1),
                                      div(t, sub(_const(x, 1), x))))
defjvp(exp2_p, lambda t, out, x: mul(_const(x, np.log(2)), mul(t, out)))
defjvp(log1p_p, lambda t, out, x: div(t, add(x, _const(x, 1))))
defjvp(expm1_p, lambda t, out, x: mul(t, add(out, _const(x, 1))))
defjvp(sqrt_p, lambda t, out, x: mul(t, div(_const(x, 0.5), out)))
defjvp(rsqrt_p, lambda t, out, x: mul(t, mul(_const(x, -0.5), div(out, x))))
defjvp(cbrt_p, lambda t, out, x: mul(t, mul(_const(x, 1 / 3), integer_pow(out, -2))))
defjvp(logistic_p, lambda t, out, x: mul(t, mul(out, sub(_const(x, 1), out))))
defjvp(square_p, lambda t, out, x: mul(t, mul(_const(x, 2), x)))
for _p in (real_p, imag_p, complex_p):
    deflinear(_p)


def _abs_term(t: Any, out: Any, x: Any) -> Any:
    """d|x| = sign(x) dx, with JAX's choice of +dx at 0; for complex x, Re(conj(x) dx)/|x|."""
    if is_complex(x):
        scale = div(conj(x), _replace_zero(convert_element_type(out, x.dtype)))
        return real(mul(t, scale))
    return select(ge(x, _const(x, 0)), t, neg(t))


defjvp(abs_p, _abs_term)


def _strong(x: Any) -> Any:
    """``x`` without its weak type (JAX's pow rule converts its operands so)."""
    return convert_element_type(x, x.dtype)


def _pow_base_term(t: Any, out: Any, x: Any, y: Any) -> Any:
    """y x**(y-1) dx. For a float y at x = 0 this is whatever the formula gives (NaN for
    y = 0), as in JAX; an integer y is converted to x's dtype, and where it is 0 the
    derivative is 0 (x**0 is 1 everywhere, even at x = 0)."""
    if y.dtype.kind not in "iu":
        return mul(t, _strong(mul(y, pow(x, sub(y, _const(y, 1))))))
    x, y = _strong(x), convert_element_type(y, x.dtype)
    if x.shape != y.shape:
        shape = np.broadcast_shapes(x.shape, y.shape)
        x, y = (v if v.shape == shape else broadcast_in_dim(v, shape, range(v.ndim))
                for v in (x, y))
    y_is_zero = eq(y, _const(y, 0))
    zeros = full_like(y, 0)
    safe_y = select(eq(y, _const(y, 0)), full_like(y, 1), y)
    slope = mul(safe_y, pow(x, sub(y, full_like(y, 1))))
    return mul(t, select(y_is_zero, zeros, slope))


# d(x**y) = y x**(y-1) dx + log(x) x**y dy. At x = 0 the second term is taken as 0 (log is
# replaced by log 1). An integer y has no tangent, so only the first term is ever used then.
defjvp(pow_p, _pow_base_term,
       lambda t, out, x, y: _strong(mul(t, mul(log(_replace_zero(x)), out))))
defjvp(atan2_p,
       lambda t, out, x, y: mul(t, div(y, add(square(x), square(y)))),
       lambda t, out, x, y: mul(t, div(neg(x), add(square(x), square(y)))))
# rem(x, y) = x - y * trunc(x / y): the quotient is piecewise constant.
defjvp(rem_p, lambda t, out, x, y: t,
       lambda t, out, x, y: mul(neg(t), mul(sign(div(x, y)), floor(abs(div(x, y))))))

# Piecewise constant, or with integer or boolean results: zero tangents. (``nextafter``
# has no rule, as in JAX: differentiating it raises NotImplementedError.)
for _p in (sign_p, floor_p, ceil_p, is_finite_p, and_p, or_p, xor_p, not_p, shift_left_p,
           shift_right_logical_p, shift_right_arithmetic_p, population_count_p, clz_p):
    defzero(_p)

_linear_unary(real_p, lambda ct, x: complex(ct, full_like(ct, 0)))
_linear_unary(imag_p, lambda ct, x: complex(full_like(ct, 0), neg(ct)))


def _complex_transpose(ct: Any, x: Any, y: Any) -> list[Any]:
    return [_unbroadcast(real(ct), x.aval) if is_undefined(x) else None,
            _unbroadcast(neg(imag(ct)), y.aval) if is_undefined(y) else None]


deftranspose(complex_p, _complex_transpose)

_LOWERINGS = {
    floor_p: "stablehlo.floor", ceil_p: "stablehlo.ceil",
    is_finite_p: "stablehlo.is_finite", log1p_p: "stablehlo.log_plus_one",
    expm1_p: "stablehlo.exponential_minus_one", sqrt_p: "stablehlo.sqrt",
    rsqrt_p: "stablehlo.rsqrt", cbrt_p: "stablehlo.cbrt", tan_p: "stablehlo.tan",
    asin_p: "chlo.asin", acos_p: "chlo.acos", atan_p: "chlo.atan",
    sinh_p: "chlo.sinh", cosh_p: "chlo.cosh", asinh_p: "chlo.asinh",
    acosh_p: "chlo.acosh", atanh_p: "chlo.atanh", real_p: "stablehlo.real",
    imag_p: "stablehlo.imag", not_p: "stablehlo.not",
    population_count_p: "stablehlo.popcnt", abs_p: "stablehlo.abs",
    rem_p: "stablehlo.remainder",
    atan2_p: "stablehlo.atan2", nextafter_p: "chlo.next_after",
    complex_p: "stablehlo.complex", and_p: "stablehlo.and", or_p: "stablehlo.or",
    xor_p: "stablehlo.xor", shift_left_p: "stablehlo.shift_left",
    shift_right_logical_p: "stablehlo.shift_right_logical",
    shift_right_arithmetic_p: "stablehlo.shift_right_arithmetic",
    clz_p: "stablehlo.count_leading_zeros",
}
for _prim, _name in _LOWERINGS.items():
    lowering_rules[_prim] = _nary(_name)


@register(pow_p)
def _pow_lowering(ctx: RuleContext, x: Value, y: Value) -> Value:
    """An integer exponent is converted to the base's dtype first."""
    if y.type.dtype != x.type.dtype:
        y = ctx.b.convert(y, x.type.dtype)
    return _nary("stablehlo.power")(ctx, x, y)


@register(sign_p)
def _sign_lowering(ctx: RuleContext, x: Value) -> Value:
    """Unsigned integers have no ``sign`` op: 0 where x == 0, else 1."""
    b = ctx.b
    if x.type.dtype.kind != "u":
        return b.emit("stablehlo.sign", x)
    is_zero = b.compare(x, b.full(0, x.type), "EQ")
    return b.select(is_zero, b.full(0, x.type), b.full(1, x.type))


@register(square_p)
def _square_lowering(ctx: RuleContext, x: Value) -> Value:
    if x.type.dtype.kind in "iu":
        return ctx.b.emit("stablehlo.multiply", x, x)
    return ctx.b.emit("chlo.square", x)


@register(exp2_p)
def _exp2_lowering(ctx: RuleContext, x: Value) -> Value:
    """2**x = exp(log(2) * x)."""
    b = ctx.b
    log2 = b.full(np.log(2), x.type)
    return b.emit("stablehlo.exponential", b.emit("stablehlo.multiply", log2, x))


@register(logistic_p)
def _logistic_lowering(ctx: RuleContext, x: Value) -> Value:
    """1 / (1 + exp(-x))."""
    b = ctx.b
    e = b.emit("stablehlo.exponential", b.emit("stablehlo.negate", x))
    one_plus = b.emit("stablehlo.add", b.full_if_needed(1, x.type), e)
    return b.emit("stablehlo.divide", b.full_if_needed(1, x.type), one_plus)


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


defzero(stop_gradient_p)
transpose_rules[stop_gradient_p] = lambda ct, x: [Zero(x.aval)]


@register(stop_gradient_p)
def _stop_gradient_lowering(ctx: RuleContext, x: Value) -> Value:
    """The value itself: gradients are not a concern of the compiled program."""
    return x


def round(x: Any, rounding_method: int = RoundingMethod.AWAY_FROM_ZERO) -> Any:
    """Elementwise rounding; halves go away from zero unless told ``TO_NEAREST_EVEN``."""
    return round_p.bind(operand(x, round_p), rounding_method=RoundingMethod(rounding_method))


defzero(round_p)


@register(round_p)
def _round_lowering(ctx: RuleContext, x: Value, rounding_method: int = 0) -> Value:
    even = rounding_method == RoundingMethod.TO_NEAREST_EVEN
    return ctx.b.emit("stablehlo.round_nearest_even" if even else "stablehlo.round_nearest_afz",
                      x)


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


deflinear(conj_p)
_linear_unary(conj_p, lambda ct, x, input_dtype: (
    conj(ct) if input_dtype.kind == "c" else real(ct)))  # a real x became complex


@register(conj_p)
def conj_op(ctx: RuleContext, x: Value, **params: Any) -> Value:
    """The lowering of ``conj`` (other rules emit it too)."""
    b = ctx.b
    if x.type.dtype.kind != "c":  # conj of a real array: the same numbers, as complex
        out = TensorType(x.type.shape, ctx.avals_out[0].dtype)
        return b.emit("stablehlo.complex", x, b.full_if_needed(0, x.type), type=out)
    part = TensorType(x.type.shape, ctx.avals_out[0].dtype.type(0).real.dtype)
    real = b.emit("stablehlo.real", x, type=part)
    imag = b.emit("stablehlo.negate", b.emit("stablehlo.imag", x, type=part))
    return b.emit("stablehlo.complex", real, imag, type=x.type)


def _bitcast_rule(x: ShapedArray, new_dtype: np.dtype) -> ShapedArray:
    if x.dtype != new_dtype and {x.dtype.kind, new_dtype.kind} & {"b", "c"}:
        raise TypeError(
            "lax.bitcast_convert_type does not support bool or complex values unless the "
            f"operand and destination types match. Got operand dtype={x.dtype}, "
            f"new_dtype={new_dtype!r}. Consider using the arr.view() method instead.")
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


defzero(bitcast_convert_type_p)
lowering_rules[bitcast_convert_type_p] = _nary("stablehlo.bitcast_convert")


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


deflinear(reduce_precision_p)
_linear_unary(reduce_precision_p, lambda ct, x, **params: reduce_precision_p.bind(
    ct, **params))


@register(reduce_precision_p)
def _reduce_precision_lowering(ctx: RuleContext, x: Value, *, exponent_bits: int,
                               mantissa_bits: int) -> Value:
    return ctx.b.emit("stablehlo.reduce_precision", x,
                      format=f"e{exponent_bits}m{mantissa_bits}")


# ---------------------------------------------------------------------------------------
# clamp
# ---------------------------------------------------------------------------------------


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


def _clamp(lo: np.ndarray, x: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """x raised to lo, then lowered to hi; complex numbers as XLA clamps them, by their
    real parts alone: lo where its real part is at least x's, then hi where its real part
    is below (``clamp(-1, 1+5j, 1)`` is 1+5j, not the lexicographic 1)."""
    x = np.asarray(x)
    if x.dtype.kind != "c":
        return _min(_max(x, lo), hi)
    raised = np.where(np.real(lo) >= np.real(x), lo, x)
    return np.where(np.real(hi) < np.real(raised), hi, raised).astype(x.dtype, copy=False)


clamp_p = Primitive("clamp")
clamp_p.def_impl(_clamp)
clamp_p.def_abstract_eval(_clamp_rule)


def clamp(min: Any, x: Any, max: Any) -> Any:
    """Elementwise ``min(max(x, min), max)``."""
    return clamp_p.bind(*operands(clamp_p, (min, x, max)))


def _clamp_jvp(primals: list, tangents: list) -> tuple[Any, Any]:
    """clamp(lo, x, hi): the tangent of whichever input is the result; at a tie, none
    (as in JAX: ``x`` must be strictly inside, a bound strictly outside)."""
    lo, x, hi = primals
    out = clamp_p.bind(lo, x, hi)
    chosen = (bitwise_and(gt(lo, x), lt(lo, hi)), bitwise_and(gt(x, lo), lt(x, hi)),
              lt(hi, x))
    tangent = Zero(tangent_aval(out.aval))
    for t, where in zip(tangents, chosen):
        if type(t) is not Zero:
            t = _broadcast_like(t, out)
            tangent = add_tangents(tangent, select(where, t, _zeros(t)))
    return out, tangent


jvp_rules[clamp_p] = _clamp_jvp
lowering_rules[clamp_p] = _nary("stablehlo.clamp")


# ---------------------------------------------------------------------------------------
# vmap: batching rules
# ---------------------------------------------------------------------------------------

for _prim in (sign_p, abs_p, floor_p, ceil_p, is_finite_p, exp2_p, log1p_p, expm1_p, sqrt_p,
              rsqrt_p, cbrt_p, square_p, tan_p, asin_p, acos_p, atan_p, sinh_p, cosh_p,
              asinh_p, acosh_p, atanh_p, logistic_p, real_p, imag_p, not_p,
              population_count_p, clz_p, round_p, stop_gradient_p, conj_p,
              bitcast_convert_type_p, reduce_precision_p):
    batching.defvectorized(_prim)

for _prim in (rem_p, pow_p, atan2_p, nextafter_p, complex_p, and_p, or_p, xor_p,
              shift_left_p, shift_right_logical_p, shift_right_arithmetic_p):
    batching.defbroadcasting(_prim)


def _clamp_batching(axis_data: Any, vals: list, dims: list) -> tuple[Any, Any]:
    """JAX's rule: bounds that agree with the operand's batching are used as they are;
    otherwise batch axes go to the front and scalar bounds are broadcast."""
    (lo, x, hi), (lo_dim, x_dim, hi_dim) = vals, dims
    size = next(v.shape[d] for v, d in zip(vals, dims) if d is not None)
    if lo_dim == x_dim == hi_dim:
        if lo.ndim == hi.ndim == 1 and x.ndim > 1:  # scalar bounds of each example
            lo = broadcast_in_dim(lo, x.shape, [lo_dim])
            hi = broadcast_in_dim(hi, x.shape, [hi_dim])
        return clamp_p.bind(lo, x, hi), x_dim
    if lo.ndim == 0 and hi.ndim == 0 and x_dim is not None:
        return clamp_p.bind(lo, x, hi), x_dim
    lo, x, hi = [batching.bdim_at_front(v, d, size) if v.shape else v
                 for v, d in zip(vals, dims)]
    lo, hi = [broadcast_in_dim(b, x.shape, ()) if b.ndim == 0 and x.ndim else b
              for b in (lo, hi)]
    lo, hi = [broadcast_in_dim(b, x.shape, [0]) if 0 < b.ndim < x.ndim else b
              for b in (lo, hi)]
    if lo.ndim > x.ndim:
        x = broadcast_in_dim(x, lo.shape, ())
    return clamp_p.bind(lo, x, hi), 0


batching.batching_rules[clamp_p] = _clamp_batching
