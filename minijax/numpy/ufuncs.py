"""Elementwise ``jnp`` functions: ``lax`` after promotion, plus NumPy's friendlier semantics.

Most functions here are one line: promote the operands (``promotion.py``), then call the
strict ``lax`` primitive. A few are real translations, where NumPy's semantics differ from
the primitive's: ``floor_divide`` and ``mod`` round toward minus infinity (``lax.div`` and
``lax.rem`` round toward zero), ``round`` rounds half to even, ``power`` picks
``integer_pow`` for a Python-int exponent.

The functions JAX wraps in ``jit`` (``where``'s ``_where``, ``clip``, ``floor_divide``...)
are wrapped here too, so that they show in jaxprs as the same ``jit[name=...]`` equations.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np

from minijax import dtypes, lax
from minijax.compiler.jit import jit
from minijax.custom_derivatives import custom_jvp
from minijax.interpreters import ad
from minijax.lax import reductions
from minijax.numpy.promotion import (
    broadcast_shapes_checked,
    broadcast_to,
    check_arraylike,
    one_example_errors,
    promote_args,
    promote_args_inexact,
    promote_dtypes,
    promote_shapes,
)


def _unary(lax_fn: Callable, name: str, inexact: bool = False) -> Callable[[Any], Any]:
    promote = promote_args_inexact if inexact else promote_args

    def ufunc(x: Any, /) -> Any:
        return lax_fn(*promote(name, x))

    ufunc.__name__ = ufunc.__qualname__ = name
    ufunc.__doc__ = f"Elementwise ``{name}``, like ``numpy.{name}``, via ``lax.{lax_fn.__name__}``."
    return ufunc


def _binary(lax_fn: Callable, name: str, inexact: bool = False) -> Callable[[Any, Any], Any]:
    promote = promote_args_inexact if inexact else promote_args

    def ufunc(x: Any, y: Any, /) -> Any:
        return lax_fn(*promote(name, x, y))

    ufunc.__name__ = ufunc.__qualname__ = name
    ufunc.__doc__ = f"Elementwise ``{name}``, like ``numpy.{name}``, via ``lax.{lax_fn.__name__}``."
    return one_example_errors(ufunc)


def _is_int_or_bool(x: Any) -> bool:
    return not dtypes.issubdtype(dtypes.dtype(x), np.inexact)


# --- arithmetic ----------------------------------------------------------------------------
subtract = _binary(lax.sub, "subtract")


@one_example_errors
def add(x: Any, y: Any, /) -> Any:
    """x + y; for booleans, logical or (as in NumPy)."""
    x, y = promote_args("add", x, y)
    return lax.bitwise_or(x, y) if x.dtype == np.bool_ else lax.add(x, y)


@one_example_errors
def multiply(x: Any, y: Any, /) -> Any:
    """x * y; for booleans, logical and (as in NumPy)."""
    x, y = promote_args("multiply", x, y)
    return lax.bitwise_and(x, y) if x.dtype == np.bool_ else lax.mul(x, y)


true_divide = _binary(lax.div, "true_divide", inexact=True)
divide = true_divide
maximum = _binary(lax.max, "maximum")
minimum = _binary(lax.min, "minimum")
nextafter = _binary(lax.nextafter, "nextafter", inexact=True)
arctan2 = _binary(lax.atan2, "arctan2", inexact=True)
atan2 = arctan2
bitwise_and = _binary(lax.bitwise_and, "bitwise_and")
bitwise_or = _binary(lax.bitwise_or, "bitwise_or")
bitwise_xor = _binary(lax.bitwise_xor, "bitwise_xor")


@one_example_errors
def left_shift(x: Any, y: Any, /) -> Any:
    """x << y (booleans are shifted as int32)."""
    x, y = _promote_for_division("left_shift", x, y)
    return lax.shift_left(x, y)


bitwise_left_shift = left_shift
equal = _binary(lax.eq, "equal")
not_equal = _binary(lax.ne, "not_equal")


def _ordering(lax_fn: Callable, name: str) -> Callable[[Any, Any], Any]:
    """An order comparison; complex numbers compare lexicographically, real parts first
    (lax's comparisons refuse them, JAX's jnp ones do this)."""

    def ufunc(x: Any, y: Any, /) -> Any:
        x, y = promote_args(name, x, y)
        if not dtypes.issubdtype(x.dtype, np.complexfloating):
            return lax_fn(x, y)
        (xr, xi), (yr, yi) = _complex_parts(x), _complex_parts(y)
        return lax.select(lax.eq(xr, yr), lax_fn(xi, yi), lax_fn(xr, yr))

    ufunc.__name__ = ufunc.__qualname__ = name
    ufunc.__doc__ = f"Elementwise ``{name}``, like ``numpy.{name}``, via ``lax.{lax_fn.__name__}``."
    return one_example_errors(ufunc)


less = _ordering(lax.lt, "less")
less_equal = _ordering(lax.le, "less_equal")
greater = _ordering(lax.gt, "greater")
greater_equal = _ordering(lax.ge, "greater_equal")


def negative(x: Any, /) -> Any:
    """-x (booleans have no negation, as in JAX)."""
    return lax.neg(*promote_args("negative", x))


def positive(x: Any, /) -> Any:
    return promote_args("positive", x)[0]


@one_example_errors
def right_shift(x: Any, y: Any, /) -> Any:
    """x >> y: arithmetic for signed integers, logical for unsigned ones (booleans are
    shifted as int32)."""
    x, y = _promote_for_division("right_shift", x, y)
    if dtypes.issubdtype(x.dtype, np.unsignedinteger):
        return lax.shift_right_logical(x, y)
    return lax.shift_right_arithmetic(x, y)


bitwise_right_shift = right_shift


def _promote_for_division(name: str, x: Any, y: Any) -> list[Any]:
    """Promote as usual; booleans divide (and shift) as int32 (``True // True`` is 1, as in
    JAX)."""
    x, y = promote_args(name, x, y)
    return _bools_as_ints(x, y) if x.dtype == np.bool_ else [x, y]


def _bools_as_ints(*args: Any) -> list[Any]:
    return [lax.convert_element_type(a, np.int32) for a in args]


@jit
def floor_divide(x: Any, y: Any, /) -> Any:
    """x // y, rounding toward minus infinity (``lax.div`` rounds toward zero)."""
    x, y = _promote_for_division("floor_divide", x, y)
    if dtypes.issubdtype(x.dtype, np.unsignedinteger):
        return lax.div(x, y)  # no negative quotients to round
    if dtypes.issubdtype(x.dtype, np.integer):
        quotient = lax.div(x, y)
        signs_differ = lax.ne(lax.sign(x), lax.sign(y))
        inexact = lax.ne(lax.rem(x, y), _zero(x))
        return where(lax.bitwise_and(signs_differ, inexact), lax.sub(quotient, _one(x)),
                     quotient)
    return _float_divmod(x, y)[0]


def _one(x: Any) -> Any:
    """1 with ``x``'s dtype *and weak type*, so that ``x - 1`` keeps a weak ``x`` weak."""
    return lax.convert_element_type(1, x.dtype, x.weak_type)


def _float_divmod(x: Any, y: Any) -> tuple[Any, Any]:
    """NumPy's float floor-division and modulo, from the C-style remainder: where the
    remainder and the divisor have different signs, the quotient is one too big."""
    mod = lax.rem(x, y)
    dividend = where(lax.eq(y, _zero(y)), x, lax.sub(x, mod))  # x / 0 stays inf or nan
    div = lax.div(dividend, y)
    fix = lax.bitwise_and(lax.ne(mod, _zero(mod)), lax.ne(lax.sign(y), lax.sign(mod)))
    mod = lax.select(fix, lax.add(mod, y), mod)
    div = lax.select(fix, lax.sub(div, _one(div)), div)
    return lax.round(div), mod


def _zero(x: Any) -> Any:
    return lax.convert_element_type(0, x.dtype)


def _nonzero_divisor(y: Any) -> Any:
    """An integer divisor with 0 replaced by 1: XLA's integer ``rem`` by 0 is not defined."""
    return where(lax.eq(y, _zero(y)), lax.full_like(y, 1), y)


@jit
def remainder(x: Any, y: Any, /) -> Any:
    """x % y with the sign of the divisor, as in Python and NumPy."""
    x, y = _promote_for_division("remainder", x, y)
    if dtypes.issubdtype(x.dtype, np.integer):
        y = _nonzero_divisor(y)
    rem = lax.rem(x, y)
    nonzero = lax.ne(rem, _zero(rem))
    fix = lax.bitwise_and(lax.ne(lax.lt(rem, _zero(rem)), lax.lt(y, _zero(y))), nonzero)
    return lax.select(fix, lax.add(rem, y), rem)


mod = remainder


@jit
def fmod(x: Any, y: Any, /) -> Any:
    """The C remainder: the sign of the dividend."""
    x, y = promote_args("fmod", x, y)
    if dtypes.issubdtype(x.dtype, np.integer):
        y = _nonzero_divisor(y)
    elif x.dtype == np.bool_:
        x, y = _bools_as_ints(x, y)
    return lax.rem(x, y)


@jit
def divmod(x: Any, y: Any, /) -> tuple[Any, Any]:
    """``(x // y, x % y)``; for floats both come from one remainder."""
    x, y = _promote_for_division("divmod", x, y)
    if dtypes.issubdtype(x.dtype, np.integer):
        return floor_divide(x, y), remainder(x, y)
    return _float_divmod(x, y)


@one_example_errors
def power(x: Any, y: Any, /) -> Any:
    """x ** y. A Python int exponent becomes ``integer_pow`` (a parameter, not an input)."""
    check_arraylike("power", x, y)
    if isinstance(y, int) and not isinstance(y, bool):
        (x,) = promote_dtypes(x)
        return lax.integer_pow(x, y)
    exponent = y
    x, y = promote_args("power", x, y)
    if x.dtype == np.bool_:
        return _integer_power(*_bools_as_ints(x, y))
    if _is_int_or_bool(x):
        return _integer_power(x, y)
    if dtypes.issubdtype(dtypes.dtype(exponent), np.integer):
        # lax.pow takes an integer exponent as it is (JAX still records, and drops, the
        # promoted copy).
        return lax.pow(x, promote_shapes("power", x, lax.operand(exponent))[1])
    return lax.pow(x, y)


def _integer_power(x: Any, y: Any) -> Any:
    """Integer ** integer array: square-and-multiply over the exponent's lowest six bits,
    as JAX does (it ignores higher bits: ``uint8`` 2 ** 64 is 1 there, and here)."""
    shape = np.broadcast_shapes(x.shape, y.shape)
    x, y = broadcast_to(x, shape), broadcast_to(y, shape)
    zero_base = lax.bitwise_and(lax.eq(x, _zero(x)), lax.ne(y, _zero(y)))
    result, base, exp = where(zero_base, _zero(x), _one(x)), x, y  # 0 ** 64 is still 0
    for _ in range(6):
        odd = lax.ne(lax.bitwise_and(exp, _one(exp)), _zero(exp))
        result = lax.select(odd, lax.mul(result, base), result)
        base = lax.mul(base, base)
        exp = lax.shift_right_logical(exp, _one(exp))
    return result


pow = power


@one_example_errors
def float_power(x: Any, y: Any, /) -> Any:
    x, y = promote_args_inexact("float_power", x, y)
    return lax.pow(x, y)


# --- signs, rounding -------------------------------------------------------------------------


def absolute(x: Any, /) -> Any:
    (x,) = promote_args("absolute", x)
    if x.dtype == np.bool_ or dtypes.issubdtype(x.dtype, np.unsignedinteger):
        return x
    return lax.abs(x)


abs = absolute


def sign(x: Any, /) -> Any:
    return lax.sign(*promote_args("sign", x))


def _keep_ints(lax_fn: Callable, name: str) -> Callable[[Any], Any]:
    """floor/ceil/trunc return integer inputs unchanged."""

    def ufunc(x: Any, /) -> Any:
        (x,) = promote_args(name, x)
        return x if _is_int_or_bool(x) else lax_fn(x)

    ufunc.__name__ = ufunc.__qualname__ = name
    ufunc.__doc__ = f"Elementwise ``{name}``; integers are returned unchanged."
    return ufunc


floor = _keep_ints(lax.floor, "floor")
ceil = _keep_ints(lax.ceil, "ceil")
trunc = jit(_keep_ints(lambda x: where(lax.lt(x, _zero(x)), lax.ceil(x), lax.floor(x)),
                       "trunc"))


@jit
def rint(x: Any, /) -> Any:
    """Round half to even; integers come back as floats (unlike floor and ceil)."""
    (inexact,) = promote_args_inexact("rint", x)
    if _is_int_or_bool(x):
        return inexact
    return _each_part(lambda part: lax.round(part, lax.RoundingMethod.TO_NEAREST_EVEN),
                      inexact)


def _each_part(fun: Callable[[Any], Any], x: Any) -> Any:
    """``fun`` of a real ``x``, or of each part of a complex one (as JAX rounds them)."""
    if not dtypes.issubdtype(x.dtype, np.complexfloating):
        return fun(x)
    return lax.complex(*(fun(part) for part in _complex_parts(x)))


@partial(jit, static_argnames=("decimals",))
def round(a: Any, decimals: int = 0, out: None = None) -> Any:
    """Round half to even (NumPy's rule), to ``decimals`` places."""
    (a,) = promote_args("round", a)
    if a.dtype == np.bool_:
        raise ValueError(f"data type {np.bool_!r} not inexact")
    if _is_int_or_bool(a):
        return a
    return _each_part(partial(_round_real, decimals=decimals), a)


def _round_real(a: Any, decimals: int) -> Any:
    if decimals == 0:
        return lax.round(a, lax.RoundingMethod.TO_NEAREST_EVEN)
    factor = lax.convert_element_type(10.0 ** decimals, a.dtype)
    scaled = lax.round(lax.mul(a, factor), lax.RoundingMethod.TO_NEAREST_EVEN)
    return lax.div(scaled, factor)


@partial(jit, static_argnames=("decimals",))
def around(a: Any, decimals: int = 0, out: None = None) -> Any:
    return round(a, decimals, out)


@jit
def signbit(x: Any, /) -> Any:
    """Is the sign bit set? (True for -0.0, unlike ``x < 0``.)"""
    (x,) = promote_args("signbit", x)
    if _is_int_or_bool(x):
        return lax.lt(x, _zero(x))
    if dtypes.issubdtype(x.dtype, np.complexfloating):
        raise ValueError(f"jax.numpy.signbit is not well defined for {x.dtype}")
    bits = x.dtype.itemsize * 8
    as_int = lax.bitcast_convert_type(x, np.dtype(f"int{bits}"))
    # Shifting the sign bit arithmetically all the way right gives -1 or 0.
    top = lax.shift_right_arithmetic(as_int, lax.convert_element_type(bits - 1, as_int.dtype))
    return lax.convert_element_type(top, np.bool_)


@jit
def copysign(x: Any, y: Any, /) -> Any:
    x, y = promote_args_inexact("copysign", x, y)
    if dtypes.issubdtype(x.dtype, np.complexfloating):
        raise TypeError("copysign does not support complex-valued inputs")
    return where(signbit(y), lax.neg(lax.abs(x)), lax.abs(x))


# --- exponents, logarithms, roots, trigonometry -------------------------------------------------
exp = _unary(lax.exp, "exp", inexact=True)
exp2 = _unary(lax.exp2, "exp2", inexact=True)
expm1 = _unary(lax.expm1, "expm1", inexact=True)
log = _unary(lax.log, "log", inexact=True)
log1p = _unary(lax.log1p, "log1p", inexact=True)
sqrt = _unary(lax.sqrt, "sqrt", inexact=True)
cbrt = _unary(lax.cbrt, "cbrt", inexact=True)
sin = _unary(lax.sin, "sin", inexact=True)
cos = _unary(lax.cos, "cos", inexact=True)
tan = _unary(lax.tan, "tan", inexact=True)
arcsin = _unary(lax.asin, "arcsin", inexact=True)
arccos = _unary(lax.acos, "arccos", inexact=True)
arctan = _unary(lax.atan, "arctan", inexact=True)
sinh = _unary(lax.sinh, "sinh", inexact=True)
cosh = _unary(lax.cosh, "cosh", inexact=True)
tanh = _unary(lax.tanh, "tanh", inexact=True)
arcsinh = _unary(lax.asinh, "arcsinh", inexact=True)
arccosh = jit(_unary(lax.acosh, "arccosh", inexact=True))
arctanh = _unary(lax.atanh, "arctanh", inexact=True)
asin, acos, atan, asinh, acosh, atanh = arcsin, arccos, arctan, arcsinh, arccosh, arctanh


def _complex_parts(z: Any) -> tuple[Any, Any]:
    return lax.real(z), lax.imag(z)


def log2(x: Any, /) -> Any:
    """Elementwise base-2 logarithm: log(x) / log(2) (each part of a complex log)."""
    (x,) = promote_args_inexact("log2", x)
    log = lax.log(x)
    if not dtypes.issubdtype(x.dtype, np.complexfloating):
        return lax.div(log, lax.log(lax.convert_element_type(2.0, x.dtype)))
    parts = _complex_parts(log)
    log_two = lax.log(lax.convert_element_type(2.0, parts[0].dtype))
    return lax.complex(*(lax.div(part, log_two) for part in parts))


def log10(x: Any, /) -> Any:
    """Elementwise base-10 logarithm: log(x) times the constant 1 / log(10)."""
    (x,) = promote_args_inexact("log10", x)
    log = lax.log(x)
    if not dtypes.issubdtype(x.dtype, np.complexfloating):
        return lax.mul(log, lax.convert_element_type(1 / np.log(10), x.dtype))
    parts = _complex_parts(log)
    factor = lax.convert_element_type(1 / np.log(10), parts[0].dtype)
    return lax.complex(*(lax.mul(part, factor) for part in parts))


def square(x: Any, /) -> Any:
    """x * x; booleans are squared as int32, as in JAX."""
    (x,) = promote_args("square", x)
    return lax.square(*_bools_as_ints(x) if x.dtype == np.bool_ else (x,))


def reciprocal(x: Any, /) -> Any:
    return lax.integer_pow(*promote_args_inexact("reciprocal", x), -1)


@jit
def hypot(x: Any, y: Any, /) -> Any:
    """sqrt(x**2 + y**2) without overflow for large x or y."""
    x, y = promote_args_inexact("hypot", x, y)
    if dtypes.issubdtype(x.dtype, np.complexfloating):
        raise ValueError("jnp.hypot is not well defined for complex-valued inputs. "
                         "Please convert to real values first, such as by using abs(x)")
    x, y = lax.abs(x), lax.abs(y)
    inf = lax.convert_element_type(np.inf, x.dtype, x.weak_type)
    either_inf = lax.bitwise_or(lax.eq(x, inf), lax.eq(y, inf))  # even if the other is nan
    big, small = lax.max(x, y), lax.min(x, y)
    big_is_zero = lax.eq(big, _zero(big))
    safe_big = where(lax.eq(big, _zero(big)), lax.full_like(big, 1), big)
    out = where(big_is_zero, big,
                lax.mul(big, lax.sqrt(lax.add(_one(big), lax.square(lax.div(small, safe_big))))))
    return where(either_inf, inf, out)


@one_example_errors
def logaddexp(x1: Any, x2: Any, /) -> Any:
    """log(exp(x1) + exp(x2)), computed without overflow."""
    return _logaddexp(*promote_args_inexact("logaddexp", x1, x2))


def _logaddexp_value(x1: Any, x2: Any) -> Any:
    amax = lax.max(x1, x2)
    if dtypes.issubdtype(x1.dtype, np.complexfloating):
        return _complex_logaddexp(x1, x2, amax)
    delta = lax.sub(x1, x2)
    return lax.select(lax.ne(delta, delta), lax.add(x1, x2),  # nan, or inf - inf
                      lax.add(amax, lax.log1p(lax.exp(lax.neg(lax.abs(delta))))))


def _complex_logaddexp(x1: Any, x2: Any, amax: Any, base_two: bool = False) -> Any:
    """JAX's formula: amax + log1p(exp(x1 + x2 - 2 amax)), the imaginary part wrapped
    into [-pi, pi] (complex numbers have no |x1 - x2| to pick the smaller one by); in base
    two, amax + log1p(exp2(...)) / log(2), wrapped into [-pi / log(2), pi / log(2)]."""
    delta = lax.sub(lax.add(x1, x2), lax.mul(amax, lax.convert_element_type(2, amax.dtype)))
    if not base_two:
        out, bound = lax.add(amax, lax.log1p(lax.exp(delta))), np.pi
    else:
        inv_ln2 = lax.convert_element_type(1 / np.log(2), amax.dtype)
        out, bound = lax.add(amax, lax.mul(inv_ln2, lax.log1p(lax.exp2(delta)))), np.pi / np.log(2)
    real, imag = _complex_parts(out)
    return lax.complex(real, _wrap_between(imag, bound))


def _wrap_between(x: Any, bound: float) -> Any:
    """``x`` moved by a multiple of 2 ``bound`` into [-bound, bound]."""
    a, two_a = (lax.convert_element_type(v, x.dtype) for v in (bound, 2 * bound))
    rem = lax.rem(lax.add(x, a), two_a)
    return lax.sub(lax.select(lax.lt(rem, _zero(rem)), lax.add(rem, two_a), rem), a)


_logaddexp_value.__name__ = "logaddexp"  # the name jaxprs show, as in JAX
_logaddexp = custom_jvp(_logaddexp_value)


@_logaddexp.defjvp
def _logaddexp_jvp(primals: tuple, tangents: tuple) -> tuple[Any, Any]:
    """Each input's weight is exp(x_i - out), its share of the sum. Infinities are taken
    as 0 first, so that logaddexp(inf, x) does not give the nan of inf - inf."""
    (x1, x2), (t1, t2) = primals, tangents
    out = _logaddexp(x1, x2)
    shares = [lax.exp(lax.sub(_finite_or_zero(x), _finite_or_zero(out))) for x in (x1, x2)]
    return out, lax.add(lax.mul(t1, shares[0]), lax.mul(t2, shares[1]))


def _finite_or_zero(x: Any) -> Any:
    """``x``, with +inf replaced by 0."""
    return lax.select(lax.eq(x, lax.convert_element_type(np.inf, x.dtype)), lax.full_like(x, 0), x)


def deg2rad(x: Any, /) -> Any:
    (x,) = promote_args_inexact("deg2rad", x)
    return lax.mul(x, lax.convert_element_type(np.pi / 180, x.dtype))


def rad2deg(x: Any, /) -> Any:
    (x,) = promote_args_inexact("rad2deg", x)
    return lax.mul(x, lax.convert_element_type(180 / np.pi, x.dtype))


radians, degrees = deg2rad, rad2deg


# cumlogsumexp's JVP scans with logaddexp, jnp's, with its custom JVP, as JAX's rule does.
# It is registered here, beside logaddexp, because lax (cumlogsumexp's family) sits
# below jnp and cannot import it.
ad.jvp_rules[reductions.cumlogsumexp_p] = reductions._cumulative_jvp(
    reductions.cumlogsumexp_p, lambda x, y: logaddexp(x, y))


def logaddexp2(x1: Any, x2: Any, /) -> Any:
    """log2(2**x1 + 2**x2): logaddexp in base 2."""
    x1, x2 = promote_args_inexact("logaddexp2", x1, x2)
    if dtypes.issubdtype(x1.dtype, np.complexfloating):
        return _complex_logaddexp(x1, x2, lax.max(x1, x2), base_two=True)
    ln2 = lax.convert_element_type(np.log(2), x1.dtype)
    return lax.div(logaddexp(lax.mul(x1, ln2), lax.mul(x2, ln2)), ln2)


@jit
def sinc(x: Any, /) -> Any:
    """sin(πx) / (πx), and 1 at x = 0."""
    (x,) = promote_args_inexact("sinc", x)
    is_zero = lax.eq(x, _zero(x))
    pi_x = lax.mul(lax.convert_element_type(np.pi, x.dtype), where(is_zero, _one(x), x))
    return where(is_zero, _one(x), lax.div(lax.sin(pi_x), pi_x))


def fabs(x: Any, /) -> Any:
    """|x| as a float (integers are converted first); complex numbers are refused, as in
    NumPy (``absolute`` takes them)."""
    check_arraylike("fabs", x)
    if dtypes.issubdtype(dtypes.dtype(x), np.complexfloating):
        raise TypeError("ufunc 'fabs' does not support complex dtypes")
    return lax.abs(*promote_args_inexact("fabs", x))


@jit
def heaviside(x1: Any, x2: Any, /) -> Any:
    """0 where x1 < 0, x2 where x1 == 0, 1 where x1 > 0, and NaN where x1 is NaN."""
    x1, x2 = promote_args_inexact("heaviside", x1, x2)
    negative, positive, nan = lax.lt(x1, _zero(x1)), lax.gt(x1, _zero(x1)), lax.ne(x1, x1)
    return where(negative, _zero(x1), where(positive, _one(x1), where(nan, x1, x2)))


def _nan_avoiding(beats: Callable, name: str) -> Callable[[Any, Any], Any]:
    """fmax/fmin: x1 where it ``beats`` x2 or x2 is NaN, else x2 -- so a NaN loses to a
    number, and of two equal numbers (0.0 and -0.0 too) x2 wins, as in JAX."""

    def ufunc(x1: Any, x2: Any, /) -> Any:
        x1, x2 = promote_args(name, x1, x2)
        return where(lax.bitwise_or(beats(x1, x2), lax.ne(x2, x2)), x1, x2)

    ufunc.__name__ = ufunc.__qualname__ = name
    ufunc.__doc__ = f"Elementwise ``{name}``, ignoring NaNs (NaN only where both are NaN)."
    return jit(ufunc)


fmax = _nan_avoiding(greater, "fmax")
fmin = _nan_avoiding(less, "fmin")


@jit
def gcd(x1: Any, x2: Any, /) -> Any:
    """The greatest common divisor of integers, by Euclid's algorithm (run for as many
    steps as the worst case needs, so it is one traceable loop)."""
    from minijax.lax import while_loop

    x1, x2 = (absolute(x) for x in promote_args("gcd", x1, x2))
    if not dtypes.issubdtype(x1.dtype, np.integer):
        raise ValueError("Arguments to jax.numpy.gcd must be integers.")
    shape = np.broadcast_shapes(x1.shape, x2.shape)
    x1, x2 = broadcast_to(x1, shape), broadcast_to(x2, shape)

    def step(pair: tuple) -> tuple:
        a, b = pair
        nonzero = lax.ne(b, _zero(b))
        return where(nonzero, b, a), where(nonzero, remainder(a, where(nonzero, b, _one(b))),
                                           _zero(b))

    a, _ = while_loop(lambda pair: lax.reduce_or(lax.ne(pair[1], _zero(pair[1])),
                                                 tuple(range(len(shape)))), step, (x1, x2))
    return a


@jit
def lcm(x1: Any, x2: Any, /) -> Any:
    """The least common multiple of integers: |x1| (|x2| // gcd), 0 if either is 0 (the
    product wraps around as JAX's does: it is not made positive again)."""
    x1, x2 = promote_args("lcm", x1, x2)
    if not dtypes.issubdtype(x1.dtype, np.integer):
        raise ValueError("Arguments to jax.numpy.lcm must be integers.")
    x1, x2 = absolute(x1), absolute(x2)
    divisor = gcd(x1, x2)
    return where(lax.eq(divisor, _zero(divisor)), _zero(divisor),
                 lax.mul(x1, floor_divide(x2, divisor)))


@one_example_errors
def ldexp(x1: Any, x2: Any, /) -> Any:
    """x1 · 2**x2 for an integer x2."""
    check_arraylike("ldexp", x1, x2)
    if not dtypes.issubdtype(dtypes.dtype(x2), np.integer):
        types = (dtypes.dtype(x1), dtypes.dtype(x2))
        raise ValueError(f"ldexp not supported for input types {types}")
    (x1,) = promote_args_inexact("ldexp", x1)
    x1, exponent = promote_shapes("ldexp", x1, lax.convert_element_type(x2, np.int32))
    # 2**x2 itself may overflow (ldexp(0., 255) is 0, not 0 * inf): scale in three steps,
    # each by a normal power of two, built from its bits (exactly). Three cover every
    # exponent that can matter (smallest denormal to largest number), once x2 is clipped.
    info = dtypes.finfo(x1.dtype)
    largest = info.maxexp - 2  # 2**largest and 2**-largest are normal numbers
    bits = np.dtype(f"int{8 * x1.dtype.itemsize}")
    exponent = lax.clamp(np.int32(-3 * largest), exponent, np.int32(3 * largest))
    for parts_left in (3, 2, 1):
        part = lax.div(exponent, np.int32(parts_left))
        biased = lax.convert_element_type(lax.add(part, np.int32(info.maxexp - 1)), bits)
        scale = lax.shift_left(biased, lax.convert_element_type(info.nmant, bits))
        x1 = lax.mul(x1, lax.bitcast_convert_type(scale, x1.dtype))
        exponent = lax.sub(exponent, part)
    return x1


def modf(x: Any, /, out: None = None) -> tuple[Any, Any]:
    """(fractional part, integral part), both with x's sign."""
    (x,) = promote_args_inexact("modf", x)
    whole = trunc(x)
    return lax.sub(x, whole), whole


def _check_not_complex(x: Any) -> None:
    """Which infinity is positive has no meaning for complex numbers (JAX refuses too)."""
    if dtypes.issubdtype(x.dtype, np.complexfloating):
        raise ValueError("isposinf/isneginf are not well defined for complex types")


def isposinf(x: Any, /, out: None = None) -> Any:
    (x,) = promote_args("isposinf", x)
    _check_not_complex(x)
    if _is_int_or_bool(x):
        return lax.full_like(x, False, dtype=np.bool_)
    return lax.eq(x, lax.convert_element_type(np.inf, x.dtype))


def isneginf(x: Any, /, out: None = None) -> Any:
    (x,) = promote_args("isneginf", x)
    _check_not_complex(x)
    if _is_int_or_bool(x):
        return lax.full_like(x, False, dtype=np.bool_)
    return lax.eq(x, lax.convert_element_type(-np.inf, x.dtype))


@jit
def nan_to_num(x: Any, copy: bool = True, nan: Any = 0.0, posinf: Any = None,
               neginf: Any = None) -> Any:
    """NaN -> ``nan``, +inf -> ``posinf`` (the largest float by default), -inf ->
    ``neginf`` (the most negative float); complex numbers part by part."""
    (x,) = promote_args("nan_to_num", x)
    if dtypes.issubdtype(x.dtype, np.complexfloating):
        parts = (nan_to_num(part, nan=nan, posinf=posinf, neginf=neginf)
                 for part in _complex_parts(x))
        return lax.complex(*parts)
    if _is_int_or_bool(x):
        return x
    info = dtypes.finfo(x.dtype)
    posinf = info.max if posinf is None else posinf
    neginf = info.min if neginf is None else neginf
    out = where(isnan(x), lax.convert_element_type(nan, x.dtype), x)
    out = where(isposinf(out), lax.convert_element_type(posinf, x.dtype), out)
    return where(isneginf(out), lax.convert_element_type(neginf, x.dtype), out)


def bitwise_count(x: Any, /) -> Any:
    """The number of 1 bits in |x| (uint8 result, as NumPy gives)."""
    (x,) = promote_args("bitwise_count", x)
    if x.dtype == np.bool_:
        x = lax.convert_element_type(x, np.uint8)
    elif dtypes.issubdtype(x.dtype, np.signedinteger):
        x = absolute(x)
    return lax.convert_element_type(lax.population_count(x), np.uint8)


# --- complex numbers ---------------------------------------------------------------------------


def real(val: Any, /) -> Any:
    (val,) = promote_args("real", val)
    return lax.real(val) if dtypes.issubdtype(val.dtype, np.complexfloating) else val


def imag(val: Any, /) -> Any:
    (val,) = promote_args("imag", val)
    if dtypes.issubdtype(val.dtype, np.complexfloating):
        return lax.imag(val)
    return lax.full_like(val, 0)


def conjugate(x: Any, /) -> Any:
    (x,) = promote_args("conjugate", x)
    return lax.conj(x) if dtypes.issubdtype(x.dtype, np.complexfloating) else x


conj = conjugate


def angle(z: Any, deg: bool = False) -> Any:
    """The argument of complex ``z`` (radians, or degrees with ``deg``)."""
    (z,) = promote_args_inexact("angle", z)
    re, im = _complex_parts(z) if dtypes.issubdtype(z.dtype, np.complexfloating) \
        else (z, lax.full_like(z, 0))
    out = lax.atan2(im, re)
    return rad2deg(out) if deg else out


def iscomplex(x: Any) -> Any:
    """Elementwise: a nonzero imaginary part?"""
    return lax.ne(imag(x), lax.full_like(imag(x), 0))


def isreal(x: Any) -> Any:
    """Elementwise: a zero imaginary part?"""
    return lax.eq(imag(x), lax.full_like(imag(x), 0))


# --- tests and logic ---------------------------------------------------------------------------


def isfinite(x: Any, /) -> Any:
    (x,) = promote_args("isfinite", x)
    if _is_int_or_bool(x):
        return lax.full_like(x, True, dtype=np.bool_)
    if dtypes.issubdtype(x.dtype, np.complexfloating):
        return lax.bitwise_and(lax.is_finite(lax.real(x)), lax.is_finite(lax.imag(x)))
    return lax.is_finite(x)


def isnan(x: Any, /) -> Any:
    (x,) = promote_args("isnan", x)
    if _is_int_or_bool(x):
        return lax.full_like(x, False, dtype=np.bool_)
    return lax.ne(x, x)


@jit
def isinf(x: Any, /) -> Any:
    (x,) = promote_args("isinf", x)
    if _is_int_or_bool(x):
        return lax.full_like(x, False, dtype=np.bool_)
    if dtypes.issubdtype(x.dtype, np.complexfloating):
        return lax.bitwise_or(isinf(lax.real(x)), isinf(lax.imag(x)))
    return lax.eq(lax.abs(x), lax.convert_element_type(np.inf, x.dtype))


def _truth(x: Any) -> Any:
    """``x != 0``; booleans are their own truth values (no comparison is recorded)."""
    return x if x.dtype == np.bool_ else lax.ne(x, _zero(x))


def _logical(lax_fn: Callable, name: str) -> Callable[[Any, Any], Any]:
    def ufunc(x: Any, y: Any, /) -> Any:
        check_arraylike(name, x, y)
        x, y = (_truth(a) for a in promote_dtypes(x, y))
        return lax_fn(*promote_shapes(name, x, y))

    ufunc.__name__ = ufunc.__qualname__ = name
    ufunc.__doc__ = f"Elementwise ``{name}`` of the operands' truth values."
    return ufunc


logical_and = _logical(lax.bitwise_and, "logical_and")
logical_or = _logical(lax.bitwise_or, "logical_or")
logical_xor = _logical(lax.bitwise_xor, "logical_xor")


def logical_not(x: Any, /) -> Any:
    (x,) = promote_args("logical_not", x)
    return lax.bitwise_not(_truth(x))


def invert(x: Any, /) -> Any:
    return lax.bitwise_not(*promote_args("invert", x))


bitwise_not = bitwise_invert = invert


# --- selection -----------------------------------------------------------------------------------


def where(condition: Any, x: Any, y: Any, /) -> Any:
    """``x`` where ``condition`` holds, else ``y`` (broadcast together, dtypes promoted).

    ``jnp.where`` itself also takes ``condition`` alone, which makes it ``jnp.nonzero``:
    that one is in ``searching.py``, above both this selection and ``nonzero``.
    """
    check_arraylike("where", condition, x, y)
    return _where(condition, x, y)


@jit
def _where(condition: Any, x: Any, y: Any) -> Any:
    condition = lax.ne(condition, _zero(condition)) if dtypes.dtype(condition) != np.bool_ \
        else condition
    x, y = promote_dtypes(x, y)
    shape = broadcast_shapes_checked([np.shape(condition), np.shape(x), np.shape(y)])
    if np.ndim(condition):  # select_n takes a scalar condition as it is
        condition = _broadcast_if_needed(condition, shape)
    x, y = (_broadcast_if_needed(a, shape) for a in (x, y))
    return lax.select_n(condition, y, x)


def _broadcast_if_needed(x: Any, shape: tuple[int, ...]) -> Any:
    return x if np.shape(x) == shape else broadcast_to(x, shape)


@jit
def clip(arr: Any, /, min: Any = None, max: Any = None) -> Any:
    """Limit ``arr`` to [min, max]; either bound may be ``None``. Complex numbers are
    refused, as in JAX (they have no order to clip by)."""
    check_arraylike("clip", arr)
    if any(dtypes.issubdtype(dtypes.dtype(t), np.complexfloating)
           for t in (arr, min, max) if t is not None):
        raise ValueError(
            "Clip received a complex value either through the input or the min/max "
            "keywords. Complex values have no ordering and cannot be clipped. "
            "Please convert to a real value or array by taking the real or "
            "imaginary components via jax.numpy.real/imag respectively.")
    if min is not None:
        arr = maximum(min, arr)
    if max is not None:
        arr = minimum(max, arr)
    return arr


__all__ = [
    "abs",
    "absolute",
    "acos",
    "acosh",
    "add",
    "angle",
    "arccos",
    "arccosh",
    "arcsin",
    "arcsinh",
    "arctan",
    "arctan2",
    "arctanh",
    "around",
    "asin",
    "asinh",
    "atan",
    "atan2",
    "atanh",
    "bitwise_and",
    "bitwise_count",
    "bitwise_invert",
    "bitwise_left_shift",
    "bitwise_not",
    "bitwise_or",
    "bitwise_right_shift",
    "bitwise_xor",
    "cbrt",
    "ceil",
    "clip",
    "conj",
    "conjugate",
    "copysign",
    "cos",
    "cosh",
    "deg2rad",
    "degrees",
    "divide",
    "divmod",
    "equal",
    "exp",
    "exp2",
    "expm1",
    "fabs",
    "float_power",
    "floor",
    "floor_divide",
    "fmax",
    "fmin",
    "fmod",
    "gcd",
    "greater",
    "greater_equal",
    "heaviside",
    "hypot",
    "imag",
    "invert",
    "iscomplex",
    "isfinite",
    "isinf",
    "isnan",
    "isneginf",
    "isposinf",
    "isreal",
    "lcm",
    "ldexp",
    "left_shift",
    "less",
    "less_equal",
    "log",
    "log10",
    "log1p",
    "log2",
    "logaddexp",
    "logaddexp2",
    "logical_and",
    "logical_not",
    "logical_or",
    "logical_xor",
    "maximum",
    "minimum",
    "mod",
    "modf",
    "multiply",
    "nan_to_num",
    "negative",
    "nextafter",
    "not_equal",
    "positive",
    "pow",
    "power",
    "rad2deg",
    "radians",
    "real",
    "reciprocal",
    "remainder",
    "right_shift",
    "rint",
    "round",
    "sign",
    "signbit",
    "sin",
    "sinc",
    "sinh",
    "sqrt",
    "square",
    "subtract",
    "tan",
    "tanh",
    "true_divide",
    "trunc",
]
