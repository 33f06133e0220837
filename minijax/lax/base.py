"""The base set: the primitives the teaching core is made of, each with all its rules.

Arithmetic (``add``, ``sub``, ``mul``, ``div``, ``neg``, ``integer_pow``, ``max``,
``min``), a few transcendental functions (``exp``, ``log``, ``sin``, ``cos``, ``tanh``),
the comparisons, ``select_n``, ``convert_element_type``, the shape primitives
``broadcast_in_dim``, ``reshape`` and ``transpose``, ``reduce_sum`` and ``dot_general``:
enough to write an MLP, its loss and its gradient. The set is closed under every
transformation: the JVP of a base primitive is written with base primitives, and so is
the transpose of every linear one, so ``grad(grad(f))`` of a program of base primitives
never leaves the set. Every other family (``elementwise``, ``shapes``, ``reductions``,
...) is built on this module, and so is a primitive of your own
(``tests/test_new_primitive.py`` declares one).

Each primitive comes with, in this order: its NumPy kernel and shape rule, its public
``lax`` function, its JVP rule, its transpose rule (if it is linear in some input) and
its lowering to StableHLO. ``lax`` is strict, as JAX's: binary operations do not promote
dtypes and broadcast only trivially (equal ranks with size-1 dimensions, or scalars).
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

from minijax import core, dtypes, errors, tracing
from minijax.array import Array, is_jax_value
from minijax.compiler.lowering import RuleContext, _region, lowering_rules, register
from minijax.compiler.stablehlo_ir import TensorType, Value
from minijax.core import Primitive, ShapedArray, Tracer, is_concrete
from minijax.interpreters import ad, batching
from minijax.interpreters.ad import (
    Zero,
    add_any_p,
    add_tangents,
    deflinear,
    defzero,
    is_differentiable,
    jvp_rules,
    tangent_aval,
)
from minijax.interpreters.partial_eval import PartialEvalTrace
from minijax.interpreters.transpose import deftranspose, is_undefined
from minijax.jaxpr import pp_param_rules
from minijax.runtime import host_to_array, put_numpy

__all__ = [
    "Precision",
    "add",
    "add_p",
    "broadcast",
    "broadcast_in_dim",
    "broadcast_in_dim_p",
    "convert_element_type",
    "convert_element_type_p",
    "cos",
    "cos_p",
    "div",
    "div_p",
    "dot",
    "dot_general",
    "dot_general_p",
    "eq",
    "eq_p",
    "exp",
    "exp_p",
    "full",
    "full_like",
    "ge",
    "ge_p",
    "gt",
    "gt_p",
    "integer_pow",
    "integer_pow_p",
    "le",
    "le_p",
    "log",
    "log_p",
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
    "reduce_sum",
    "reduce_sum_p",
    "reshape",
    "reshape_p",
    "select",
    "select_n",
    "select_n_p",
    "sin",
    "sin_p",
    "sub",
    "sub_p",
    "tanh",
    "tanh_p",
    "transpose",
    "transpose_p",
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
# Rule helpers, shared by every family
# ---------------------------------------------------------------------------------------

Term = Callable[..., Any]  # (tangent, output, *primals, **params) -> tangent contribution


def _broadcast_like(t: Any, out: Any) -> Any:
    """``lax`` lets a scalar or a size-1 dimension meet a full one; the tangent of such an
    input must be stretched to the output's shape like the input itself was."""
    if t.shape == out.shape:
        return t
    dims = () if t.ndim == 0 else tuple(range(t.ndim))
    return broadcast_in_dim(t, out.shape, dims)


def defjvp(primitive: Primitive, *terms: Term | None) -> None:
    """Register the JVP rule "tangent = Σᵢ terms[i](tᵢ, out, *primals)" (``None``: no term).

    Most primitives follow this pattern: the output is the primitive applied to the
    primals, and its tangent is a sum of one term per input, ``∂out/∂xᵢ · tᵢ``; inputs
    whose tangent is a symbolic ``Zero`` are skipped. Every term is written with ``lax``
    functions, so the rules themselves can be traced, transposed and differentiated
    again: that is what makes ``grad(grad(f))`` work. Under ``linearize`` (and so
    ``grad``) a term runs with unknown tangents, so it must be *linear* in the tangent --
    multiplying it by something computed from primals is fine -- and each operation it
    uses on the tangent needs a transpose rule.
    """

    def rule(primals: list, tangents: list, **params: Any) -> tuple[Any, Any]:
        out = primitive.bind(*primals, **params)
        tangent: Any = Zero(tangent_aval(out.aval))
        if not is_differentiable(out.aval):
            return out, tangent
        for term, t in zip(terms, tangents):
            if term is not None and type(t) is not Zero:
                contribution = _broadcast_like(term(t, out, *primals, **params), out)
                tangent = add_tangents(tangent, contribution)
        return out, tangent

    jvp_rules[primitive] = rule


def _const(x: Any, value: float) -> Any:
    """``value`` as a scalar of ``x``'s dtype and weak type: a constant in a formula
    adopts the type of the value it meets, like a Python scalar (so rules never promote,
    and the tangent of a weakly typed value stays weak, as in JAX)."""
    return full_like(x, value, shape=())


def _zeros(x: Any) -> Any:
    return full_like(x, 0)


def _unbroadcast(ct: Any, aval: Any) -> Any:
    """Undo the trivial broadcasting of elementwise ops: sum ``ct`` down to ``aval``'s shape.

    ``lax`` lets a scalar or a size-1 dimension meet a full one; its cotangent is the sum
    over the dimensions it was stretched along.
    """
    if ct.shape == aval.shape:
        return ct
    if not aval.shape:
        return reduce_sum(ct, tuple(range(ct.ndim)))
    axes = tuple(i for i, (a, c) in enumerate(zip(aval.shape, ct.shape)) if a == 1 and c != 1)
    return reshape(reduce_sum(ct, axes), aval.shape)


def _linear_unary(primitive: Primitive, fn: Callable[..., Any]) -> None:
    """The transpose rule of a one-input linear primitive: ``fn(ct, x, **params)``."""
    deftranspose(primitive, lambda ct, x, **params: [fn(ct, x, **params)])


def _nary(op_name: str) -> Callable[..., Value]:
    """The lowering of an elementwise op: operands of a smaller shape are broadcast first."""

    def rule(ctx: RuleContext, *args: Value, **params: Any) -> Value:
        shape = tuple(ctx.avals_out[0].shape)
        args = [ctx.b.broadcast_to(a, shape) for a in args]
        return ctx.b.emit(op_name, *args, type=ctx.type_out)

    return rule


# ---------------------------------------------------------------------------------------
# add, sub, mul, div, neg
# ---------------------------------------------------------------------------------------

def _as_arrays(x: Any, y: Any) -> tuple[np.ndarray, np.ndarray]:
    """Both operands as arrays of the operation's dtype: generated NumPy code may pass a
    splat constant as a Python scalar (``rem(65536, span)``, ``shift_left(x, 13)``)."""
    dtype = np.result_type(x, y)
    return np.asarray(x, dtype), np.asarray(y, dtype)


def _complex_of(dt: np.dtype) -> np.dtype:
    """The complex dtype with parts of dtype ``dt`` (complex dtypes are their own)."""
    return np.dtype(np.complex128 if dt in (np.float64, np.complex128) else np.complex64)


def _complex(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``x + iy`` with the parts as given: computing ``x + 1j * y`` would make ``0 * inf``
    and ``0 * nan`` NaN parts, and turn -0.0 parts into +0.0."""
    x, y = np.broadcast_arrays(*_as_arrays(x, y))
    out = np.empty(x.shape, _complex_of(x.dtype))
    out.real, out.imag = x, y
    return out


def _complex_div(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """XLA divides by a complex zero part by part, by the zero's real part (its sign
    counts): ``1j / (-0+0j)`` is nan-infj, where NumPy's C division gives nan+infj."""
    quotient = np.true_divide(x, y).astype(x.dtype, copy=False)
    zero = y == 0
    if not zero.any():
        return quotient
    by_real = _complex(np.true_divide(x.real, y.real), np.true_divide(x.imag, y.real))
    return np.where(zero, by_real, quotient).astype(x.dtype, copy=False)


def _div(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Integer division rounds toward zero (C); ``x / 0`` is -1, or all ones if unsigned,
    and ``INT_MIN / -1`` wraps back to ``INT_MIN``, as in two's complement.

    No absolute values (``abs(INT_MIN)`` overflows): the exact quotient is
    ``(x - fmod(x, y)) / y``, which NumPy's floor division computes without rounding."""
    x, y = _as_arrays(x, y)
    if x.dtype.kind == "c":
        return _complex_div(x, y)
    if x.dtype.kind not in "iu":
        return np.true_divide(x, y).astype(x.dtype, copy=False)
    special = (y == 0) | (y == -1) if x.dtype.kind == "i" else y == 0
    divisor = np.where(special, np.ones((), x.dtype), y)
    q = (x - np.fmod(x, divisor)) // divisor
    if x.dtype.kind == "i":
        q = np.where(y == -1, np.negative(x), q)
    return np.where(y == 0, np.array(-1).astype(x.dtype), q).astype(x.dtype, copy=False)


neg_p = unary_primitive("neg", np.negative, NUMBER)
add_p = nary_primitive("add", np.add)
sub_p = nary_primitive("sub", np.subtract)
mul_p = nary_primitive("mul", np.multiply)
div_p = nary_primitive("div", _div)

neg = _api(neg_p, "Elementwise negation: -x.")
add = _api(add_p, "Elementwise addition x + y (same dtypes; no promotion).")
sub = _api(sub_p, "Elementwise subtraction x - y.")
mul = _api(mul_p, "Elementwise multiplication x * y.")
div = _api(div_p, "Elementwise division; integer division rounds toward zero.")


def _defjvp_add_or_sub(primitive: Primitive) -> None:
    """``add`` and ``sub`` are linear: when both tangents are nonzero, the output's tangent
    is the same operation on the tangents (``add``/``sub``, as JAX writes it, not a sum of
    terms with ``add_any``), so a jvp's jaxpr reads like the function it differentiates."""
    negate_y = primitive is sub_p

    def rule(primals: list, tangents: list, **params: Any) -> tuple[Any, Any]:
        out = primitive.bind(*primals, **params)
        tx, ty = tangents
        if type(tx) is Zero and type(ty) is Zero:
            return out, Zero(tangent_aval(out.aval))
        if type(ty) is Zero:
            return out, _broadcast_like(tx, out)
        if type(tx) is Zero:
            return out, _broadcast_like(neg(ty) if negate_y else ty, out)
        return out, primitive.bind(tx, ty, **params)

    jvp_rules[primitive] = rule


_defjvp_add_or_sub(add_p)
_defjvp_add_or_sub(sub_p)
defjvp(mul_p, lambda t, out, x, y: mul(t, y), lambda t, out, x, y: mul(x, t))
defjvp(div_p, lambda t, out, x, y: div(t, y),
       lambda t, out, x, y: mul(mul(neg(t), x), integer_pow(y, -2)))
defjvp(neg_p, lambda t, out, x: neg(t))
# add_any (ad.py's sum of two tangents or cotangents) is add without broadcasting.
defjvp(add_any_p, lambda t, out, x, y: t, lambda t, out, x, y: t)


def _add_transpose(ct: Any, x: Any, y: Any) -> list[Any]:
    return [_unbroadcast(ct, x.aval) if is_undefined(x) else None,
            _unbroadcast(ct, y.aval) if is_undefined(y) else None]


def _sub_transpose(ct: Any, x: Any, y: Any) -> list[Any]:
    return [_unbroadcast(ct, x.aval) if is_undefined(x) else None,
            _unbroadcast(neg(ct), y.aval) if is_undefined(y) else None]


def _mul_transpose(ct: Any, x: Any, y: Any) -> list[Any]:
    """Exactly one factor is linear; its cotangent is ``ct`` times the other factor."""
    if is_undefined(x):
        return [_unbroadcast(mul(ct, y), x.aval), None]
    return [None, _unbroadcast(mul(x, ct), y.aval)]


def _div_transpose(ct: Any, x: Any, y: Any) -> list[Any]:
    """Only the numerator can be linear: ``ct_x = ct / y``."""
    return [_unbroadcast(div(ct, y), x.aval), None]


deftranspose(add_p, _add_transpose)
deftranspose(add_any_p, _add_transpose)
deftranspose(sub_p, _sub_transpose)
deftranspose(mul_p, _mul_transpose)
deftranspose(div_p, _div_transpose)
_linear_unary(neg_p, lambda ct, x: neg(ct))

for _prim, _name in ((neg_p, "stablehlo.negate"), (add_p, "stablehlo.add"),
                     (add_any_p, "stablehlo.add"), (sub_p, "stablehlo.subtract"),
                     (mul_p, "stablehlo.multiply"), (div_p, "stablehlo.divide")):
    lowering_rules[_prim] = _nary(_name)


# ---------------------------------------------------------------------------------------
# integer_pow: a power whose exponent is a Python int, part of the primitive's params
# ---------------------------------------------------------------------------------------


def _integer_pow_kernel(x: np.ndarray, y: int) -> np.ndarray:
    """Repeated squaring, as XLA does; a negative exponent takes the reciprocal of the
    power (``x ** -2`` is ``1 / (x * x)``)."""
    if y == 0:
        return np.ones_like(x)
    # x ** 1 is x itself, as XLA computes it (NumPy's x * 1 would turn complex -0j into 0j,
    # and 1 / x would divide by the other zero)
    magnitude = -y if y < 0 else y  # (``abs`` is lax.abs here)
    power = x if magnitude == 1 else np.power(x, magnitude).astype(x.dtype, copy=False)
    return power if y > 0 else _div(np.ones_like(power), power)



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


def _integer_pow_term(t: Any, out: Any, x: Any, *, y: int) -> Any:
    if y == 0:
        return _zeros(t)
    power = x if y == 2 else integer_pow(x, y - 1)
    return mul(t, mul(_const(x, y), power))


defjvp(integer_pow_p, _integer_pow_term)


@register(integer_pow_p)
def _integer_pow(ctx: RuleContext, x: Value, y: int) -> Value:
    """Repeated squaring (x**5 = x * (x*x)*(x*x)); 1, 2, 3 and -1 directly."""
    b = ctx.b
    mul = lambda u, v: b.emit("stablehlo.multiply", u, v)
    if y == 1:
        return x
    if y == 2:
        return mul(x, x)
    if y == 3:
        return mul(mul(x, x), x)
    if y == -1:
        return b.emit("stablehlo.divide", b.full(1, x.type), x)
    if y == 0:
        return b.full_if_needed(1, x.type)
    n, acc = abs(y), None
    while n > 0:
        if n & 1:
            acc = x if acc is None else mul(acc, x)
        n >>= 1
        if n > 0:
            x = mul(x, x)
    if y < 0:
        return b.emit("stablehlo.divide", b.full_if_needed(1, acc.type), acc)
    return acc


# ---------------------------------------------------------------------------------------
# max and min
# ---------------------------------------------------------------------------------------


def _is_float(x: np.ndarray) -> bool:
    return x.dtype.kind == "f" or x.dtype == dtypes.bfloat16


def _max(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """NaN wins, and +0.0 is larger than -0.0 (NumPy returns either zero). Complex
    numbers: see ``_lexicographic_greater``."""
    x, y = _as_arrays(x, y)
    if x.dtype.kind == "c":
        return np.where(_lexicographic_greater(x, y), x, y)
    out = np.maximum(x, y)
    if not _is_float(out):
        return out
    # Of two zeros, the sum is -0.0 only if both are -0.0: the maximum.
    return np.where((x == 0) & (y == 0), x + y, out).astype(out.dtype, copy=False)


def _min(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """NaN wins, and -0.0 is smaller than +0.0 (NumPy returns either zero). Complex
    numbers: see ``_lexicographic_greater``."""
    x, y = _as_arrays(x, y)
    if x.dtype.kind == "c":
        return np.where(_lexicographic_greater(y, x), x, y)
    out = np.minimum(x, y)
    if not _is_float(out):
        return out
    # Of two zeros, -(-x + -y) is +0.0 only if both are +0.0: the minimum.
    return np.where((x == 0) & (y == 0), -(-x - y), out).astype(out.dtype, copy=False)


max_p = nary_primitive("max", _max, ANY)
min_p = nary_primitive("min", _min, ANY)

max = _api(max_p, "Elementwise maximum (NaN wins).")
min = _api(min_p, "Elementwise minimum (NaN wins).")


def _chosen_weight(x: Any, out: Any, other: Any) -> Any:
    """1 where ``x`` is the result of max/min, ½ where both inputs are (a tie), else 0:
    (x == out) / (1 + (other == out)). JAX's choice at a tie, so gradients agree."""
    chosen = select(eq(x, out), full_like(out, 1), _zeros(out))
    return div(chosen, select(eq(other, out), full_like(out, 2), full_like(out, 1)))


for _p in (max_p, min_p):
    defjvp(_p, lambda t, out, x, y: mul(t, _chosen_weight(x, out, y)),
           lambda t, out, x, y: mul(t, _chosen_weight(y, out, x)))


def _lexicographic_greater(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``x > y`` for complex numbers as JAX's max and min compare them: the real parts,
    then the imaginary parts. They select ``x`` where it holds and ``y`` elsewhere, so of
    equal numbers (0j and -0j) and where a NaN makes both false, ``y`` wins (NumPy's
    maximum returns the NaN)."""
    return (x.real > y.real) | ((x.real == y.real) & (x.imag > y.imag))


def _minmax(op_name: str, direction: str) -> Callable[..., Value]:
    """max/min; complex numbers compare by real part, then imaginary part."""
    elementwise = _nary(op_name)

    def rule(ctx: RuleContext, x: Value, y: Value) -> Value:
        if x.type.dtype.kind != "c":
            return elementwise(ctx, x, y)
        b = ctx.b
        x, y = (b.broadcast_to(v, ctx.type_out.shape) for v in (x, y))
        part = TensorType(x.type.shape, x.type.dtype.type(0).real.dtype)
        rx, ry = b.emit("stablehlo.real", x, type=part), b.emit("stablehlo.real", y, type=part)
        real_eq, real_cmp = b.compare(rx, ry, "EQ"), b.compare(rx, ry, direction)
        ix, iy = b.emit("stablehlo.imag", x, type=part), b.emit("stablehlo.imag", y, type=part)
        pick_x = b.select(real_eq, b.compare(ix, iy, direction), real_cmp)
        return b.select(pick_x, x, y)

    return rule


lowering_rules[max_p] = _minmax("stablehlo.maximum", "GT")
lowering_rules[min_p] = _minmax("stablehlo.minimum", "LT")


# ---------------------------------------------------------------------------------------
# exp, log, sin, cos, tanh
# ---------------------------------------------------------------------------------------


def _same_dtype(ufunc: Callable) -> Callable:
    """Some NumPy ufuncs widen small float types; XLA keeps the input dtype."""
    return lambda *xs: np.asarray(ufunc(*xs)).astype(xs[0].dtype, copy=False)


def _unsigned_zero(ufunc: Callable, part: str) -> Callable:
    """``ufunc`` as XLA computes it of complex numbers: its formulas ignore the sign of a
    zero ``part`` ("imag" at the branch cuts of sqrt, asin, acos and acosh, "real" for
    asinh), so sqrt(-1-0j) is 1j where NumPy's C99 sqrt gives -1j."""
    same = _same_dtype(ufunc)

    def kernel(x: np.ndarray) -> np.ndarray:
        if np.asarray(x).dtype.kind == "c":
            x = np.array(x)
            getattr(x, part)[...] += 0  # -0.0 + 0.0 is +0.0
        return same(x)

    return kernel


def _by_parts(ufunc: Callable, parts: Callable) -> Callable:
    """``ufunc``, but of complex numbers ``parts(a, b)``: the real and imaginary parts of
    ``ufunc(a + bi)`` by XLA's formula, in the parts' precision."""
    same = _same_dtype(ufunc)

    def kernel(x: np.ndarray) -> np.ndarray:
        x = np.asarray(x)
        if x.dtype.kind != "c":
            return same(x)
        with np.errstate(all="ignore"):
            return _complex(*parts(x.real, x.imag))

    return kernel


def _times(f: np.ndarray, h: np.ndarray) -> np.ndarray:
    """f * h, where a zero f gives itself: XLA's complex formulas make no NaN of 0 * inf
    (its sin(100j) in complex64 is infj, NumPy's nan+infj)."""
    return np.where(f == 0, f, f * h)


def _sin_parts(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return _times(np.sin(a), np.cosh(b)), _times(np.cos(a), np.sinh(b))


def _cos_parts(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return _times(np.cos(a), np.cosh(b)), _times(-np.sin(a), np.sinh(b))


exp_p = unary_primitive("exp", _same_dtype(np.exp))
log_p = unary_primitive("log", _same_dtype(np.log))
sin_p = unary_primitive("sin", _by_parts(np.sin, _sin_parts))
cos_p = unary_primitive("cos", _by_parts(np.cos, _cos_parts))
tanh_p = unary_primitive("tanh", _same_dtype(np.tanh))

exp = _api(exp_p, "Elementwise exponential e**x.")
log = _api(log_p, "Elementwise natural logarithm.")
sin = _api(sin_p, "Elementwise sine.")
cos = _api(cos_p, "Elementwise cosine.")
tanh = _api(tanh_p, "Elementwise hyperbolic tangent.")

defjvp(exp_p, lambda t, out, x: mul(t, out))
defjvp(log_p, lambda t, out, x: div(t, x))
defjvp(sin_p, lambda t, out, x: mul(t, cos(x)))
defjvp(cos_p, lambda t, out, x: neg(mul(t, sin(x))))
# (1 + tanh)(1 - tanh) rather than 1 - tanh², as JAX writes it (same rounding).
defjvp(tanh_p, lambda t, out, x: mul(add(t, mul(t, out)), sub(_const(x, 1), out)))

for _prim, _name in ((exp_p, "stablehlo.exponential"), (log_p, "stablehlo.log"),
                     (sin_p, "stablehlo.sine"), (cos_p, "stablehlo.cosine"),
                     (tanh_p, "stablehlo.tanh")):
    lowering_rules[_prim] = _nary(_name)


# ---------------------------------------------------------------------------------------
# Comparisons: boolean results, so zero tangents
# ---------------------------------------------------------------------------------------

eq_p = nary_primitive("eq", np.equal, ANY, out_dtype=_to_bool)
ne_p = nary_primitive("ne", np.not_equal, ANY, out_dtype=_to_bool)
lt_p = nary_primitive("lt", np.less, ORDERED, out_dtype=_to_bool)
le_p = nary_primitive("le", np.less_equal, ORDERED, out_dtype=_to_bool)
gt_p = nary_primitive("gt", np.greater, ORDERED, out_dtype=_to_bool)
ge_p = nary_primitive("ge", np.greater_equal, ORDERED, out_dtype=_to_bool)

eq = _api(eq_p, "Elementwise x == y.")
ne = _api(ne_p, "Elementwise x != y.")
lt = _api(lt_p, "Elementwise x < y.")
le = _api(le_p, "Elementwise x <= y.")
gt = _api(gt_p, "Elementwise x > y.")
ge = _api(ge_p, "Elementwise x >= y.")


def _comparison(direction: str) -> Callable[..., Value]:
    def rule(ctx: RuleContext, x: Value, y: Value) -> Value:
        shape = tuple(ctx.avals_out[0].shape)
        x, y = ctx.b.broadcast_to(x, shape), ctx.b.broadcast_to(y, shape)
        return ctx.b.compare(x, y, direction)
    return rule


for _prim, _direction in ((eq_p, "EQ"), (ne_p, "NE"), (lt_p, "LT"),
                          (le_p, "LE"), (gt_p, "GT"), (ge_p, "GE")):
    defzero(_prim)
    lowering_rules[_prim] = _comparison(_direction)


# ---------------------------------------------------------------------------------------
# select_n (and select, its two-case form)
# ---------------------------------------------------------------------------------------


def _select_n_kernel(which: np.ndarray, *cases: np.ndarray) -> np.ndarray:
    if which.dtype == np.bool_:
        return np.where(which, cases[1], cases[0]) if len(cases) == 2 else cases[0].copy()
    return np.choose(which, cases) if which.ndim else cases[int(which)].copy()


def _select_n_rule(which: ShapedArray, *cases: ShapedArray) -> ShapedArray:
    if not cases:
        raise ValueError("select_n() must have at least one case")
    # JAX's messages (and order of checks), which call the primitive "select".
    if any(c.shape != cases[0].shape for c in cases):
        raise TypeError("select cases must have the same shapes, got "
                        f"[{', '.join(str(c.shape) for c in cases)}].")
    if which.shape and which.shape != cases[0].shape:
        raise TypeError("select `which` must be scalar or have the same shape as cases, got "
                        f"`which` shape {which.shape} but case shape {cases[0].shape}.")
    if which.dtype != np.bool_ and which.dtype != np.int32:
        raise TypeError(f"select `which` must be boolean or integer type, got "
                        f"{which.dtype.name}.")
    if which.dtype == np.bool_ and len(cases) > 2:
        raise TypeError("select with boolean `which` cannot have > 2 cases.")
    if any(c.dtype != cases[0].dtype for c in cases):
        raise TypeError("lax.select requires arguments to have the same dtypes, got "
                        f"{', '.join(c.dtype.name for c in cases)}. (Tip: jnp.where is a "
                        "similar function that does automatic type promotion on inputs).")
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


def _select_n_jvp(primals: list, tangents: list) -> tuple[Any, Any]:
    """Tangents selected as the primals are; zeros made once (even if unused, as in JAX)."""
    which, *cases = primals
    out = select_n_p.bind(which, *cases)
    nonzero = [t for t in tangents[1:] if type(t) is not Zero]
    if not nonzero:
        return out, Zero(tangent_aval(out.aval))
    zeros = full_like(nonzero[0], 0)
    return out, select_n_p.bind(which, *[zeros if type(t) is Zero else t for t in tangents[1:]])


jvp_rules[select_n_p] = _select_n_jvp


def _select_n_transpose(ct: Any, which: Any, *cases: Any) -> list[Any]:
    """Each linear case gets the cotangent where it was selected, zero elsewhere. An
    integer ``which`` is compared with each case's index first (a two-way select each)."""
    zeros = full_like(ct, 0)

    def pick(i: int) -> Any:
        if which.dtype == np.bool_:
            return select_n_p.bind(which, *((ct, zeros) if i == 0 else (zeros, ct)))
        return select_n_p.bind(eq(which, np.array(i, which.dtype)), zeros, ct)

    return [None] + [pick(i) if is_undefined(case) else None for i, case in enumerate(cases)]


deftranspose(select_n_p, _select_n_transpose)


@register(select_n_p)
def _select_n_lowering(ctx: RuleContext, which: Value, *cases: Value) -> Value:
    """Two cases: one ``select``; more: a binary tree of selects on ``which < mid``."""
    b = ctx.b
    if which.type.dtype == np.bool_:
        return cases[0] if len(cases) == 1 else b.select(which, cases[1], cases[0])

    def pick(offset: int, cases: Sequence[Value]) -> Value:
        if len(cases) == 1:
            return cases[0]
        mid = len(cases) // 2
        pred = b.compare(which, b.full(offset + mid, which.type), "LT")
        return b.select(pred, pick(offset, cases[:mid]), pick(offset + mid, cases[mid:]))

    return pick(0, cases)


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
            if x.size == 0 or (info.min <= x.min() and x.max() < info.max):
                return x.astype(new_dtype)  # every value in range (no NaN): a plain cast
            x = np.clip(np.trunc(np.nan_to_num(x.astype(np.float64), nan=0.0)), info.min, info.max)
            # a 64-bit maximum is no float64: it rounds up to 2**63 (or 2**64), out of range
            high = x >= float(info.max)
            return np.where(high, new_dtype.type(info.max), np.where(high, 0, x).astype(new_dtype))
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


def _convert_jvp(primals: list, tangents: list, *, new_dtype: np.dtype, weak_type: bool
                 ) -> tuple[Any, Any]:
    (x,), (t,) = primals, tangents
    out = convert_element_type_p.bind(x, new_dtype=new_dtype, weak_type=weak_type)
    if type(t) is Zero or not is_differentiable(out.aval):
        return out, Zero(tangent_aval(out.aval))
    return out, convert_element_type_p.bind(t, new_dtype=new_dtype, weak_type=weak_type)


jvp_rules[convert_element_type_p] = _convert_jvp


def _convert_transpose(ct: Any, x: Any, *, new_dtype: np.dtype, weak_type: bool) -> list[Any]:
    """Convert the cotangent back to the input's dtype (and weak type): nothing is
    recorded when it has that type already, and a constant is converted now, as in JAX."""
    return [convert_element_type(ct, x.aval.dtype, x.aval.weak_type)]


deftranspose(convert_element_type_p, _convert_transpose)


@register(convert_element_type_p)
def _convert_element_type_lowering(ctx: RuleContext, x: Value, new_dtype: np.dtype,
                                   weak_type: bool, **params: Any) -> Value:
    """A convert even when only the weak type changes; complex -> real keeps the real part."""
    if x.type.dtype.kind == "c" and np.dtype(new_dtype).kind != "c":
        part = TensorType(x.type.shape, x.type.dtype.type(0).real.dtype)
        x = ctx.b.emit("stablehlo.real", x, type=part)
    return ctx.b.convert(x, new_dtype)


# ---------------------------------------------------------------------------------------
# broadcast_in_dim
# ---------------------------------------------------------------------------------------


def _broadcast_in_dim_rule(x: ShapedArray, shape: tuple[int, ...],
                           broadcast_dimensions: tuple[int, ...], sharding: Any) -> ShapedArray:
    dims = broadcast_dimensions
    if any(d < 0 for d in shape):
        raise TypeError(
            f"broadcast_in_dim shape must have every element be nonnegative, got {shape}.")
    if len(dims) != x.ndim:
        raise TypeError(
            "broadcast_in_dim broadcast_dimensions must have length equal to operand ndim; "
            f"got broadcast_dimensions {dims} for operand ndim {x.ndim}."
        )
    if any(not 0 <= d < len(shape) for d in dims) or list(dims) != sorted(set(dims)):
        raise TypeError(
            "broadcast_in_dim broadcast_dimensions must be strictly increasing and in range; "
            f"got broadcast_dimensions {dims} for target shape {shape}."
        )
    if any(x.shape[i] not in (1, shape[d]) for i, d in enumerate(dims)):
        raise TypeError(
            "broadcast_in_dim operand dimension sizes must either be 1, or be equal to their "
            "corresponding dimensions in the target broadcast shape; got operand of shape "
            f"{x.shape}, target broadcast shape {shape}, broadcast_dimensions {dims} "
        )
    return ShapedArray(shape, x.dtype, x.weak_type)


def _broadcast_in_dim_kernel(x: np.ndarray, shape: tuple[int, ...],
                             broadcast_dimensions: tuple[int, ...], sharding: Any) -> np.ndarray:
    expanded = [1] * len(shape)
    for i, d in enumerate(broadcast_dimensions):
        expanded[d] = x.shape[i]
    return np.broadcast_to(x.reshape(expanded), shape)


broadcast_in_dim_p = Primitive("broadcast_in_dim")
broadcast_in_dim_p.def_impl(_broadcast_in_dim_kernel)
broadcast_in_dim_p.def_abstract_eval(_broadcast_in_dim_rule)
# JAX prints only the dimensions (and nothing when there are none): the shape is in the type.
pp_param_rules[broadcast_in_dim_p] = lambda params: (
    [("broadcast_dimensions", params["broadcast_dimensions"])]
    if params["broadcast_dimensions"] else []
)


def zeros_like_aval(aval: ShapedArray) -> Any:
    """An array of zeros of type ``aval``, as JAX writes it: a scalar zero (weak if
    ``aval`` is), broadcast. Under ``linearize`` (a partial-evaluation trace) the
    broadcast is recorded in the linear part with the other tangent computations, as
    JAX's linearize does, although nothing unknown goes into it. float0 zeros (of an
    integer) broadcast NumPy's float0 scalar, which no array holds: eagerly they stay
    NumPy's, traced the scalar is a literal (see ``RecordingTrace.float0_constant``)."""
    if aval.dtype == dtypes.float0:
        zero = np.zeros((), dtypes.float0)
        return broadcast_in_dim_p.bind(zero, shape=aval.shape, broadcast_dimensions=(),
                                       sharding=None) if aval.shape else zero
    zero = convert_element_type(0, aval.dtype, aval.weak_type)
    trace = core.current_trace()
    if aval.shape and isinstance(trace, PartialEvalTrace):
        return trace.record(broadcast_in_dim_p, [zero],
                            dict(shape=aval.shape, broadcast_dimensions=(), sharding=None))
    return broadcast_in_dim(zero, aval.shape, ())


ad.install_zeros(zeros_like_aval)
tracing.RecordingTrace.broadcast_in_dim_p = broadcast_in_dim_p


def _jax_typed(x: Any) -> Any:
    """:func:`operand`, with the words JAX uses for a bad operand of these functions."""
    if not is_jax_value(x):
        raise TypeError(f"Argument '{x}' of type '{type(x)}' is not a valid JAX type")
    return operand(x)


def broadcast_in_dim(operand_: Any, shape: Sequence[int],
                     broadcast_dimensions: Sequence[int], *, out_sharding: Any = None) -> Any:
    """Broadcast to ``shape``, operand dimension ``i`` becoming result dimension
    ``broadcast_dimensions[i]``. A no-op when nothing would change."""
    x = _jax_typed(operand_)
    shape = tuple(int(d) for d in shape)
    # NumPy integers stay NumPy integers: JAX's jaxprs print them so (np.int64(0))
    dims = tuple(d if isinstance(d, np.integer) else int(d) for d in broadcast_dimensions)
    if x.shape == shape and dims == tuple(range(x.ndim)):
        return x
    return broadcast_in_dim_p.bind(x, shape=shape, broadcast_dimensions=dims, sharding=None)


def broadcast(operand_: Any, sizes: Sequence[int]) -> Any:
    """Add leading dimensions of the given ``sizes``."""
    x = operand(operand_)
    sizes = tuple(sizes)
    return broadcast_in_dim(x, sizes + x.shape, range(len(sizes), len(sizes) + x.ndim))


def canonicalize_shape(shape: Any) -> tuple[int, ...]:
    """``3`` or ``[2, 3]`` or ``(2, 3)`` -> a tuple of Python ints."""
    if isinstance(shape, (tuple, list)):  # not np.ndim: it would convert a traced size
        dims = tuple(shape)
    else:
        dims = (shape,) if np.ndim(shape) == 0 else tuple(shape)
    if any(dtypes.issubdtype(getattr(d, "dtype", type(d)), np.inexact) for d in dims
           if type(d) is not int):
        # int() would truncate a size of 2.5 to 2: JAX refuses non-integer sizes
        raise TypeError(
            f"Shapes must be 1D sequences of concrete values of integer type, got {dims}.")
    try:
        return tuple(int(d) for d in dims)
    except errors.ConcretizationTypeError:  # a traced size: say so as JAX does (the
        # shape as it was written, then where each traced size came from)
        shown = shape if isinstance(shape, (tuple, list)) else dims
        where = "\n".join(d._context() for d in dims
                          if isinstance(d, Tracer) and not is_concrete(d))
        raise TypeError(
            f"Shapes must be 1D sequences of concrete values of integer type, got {shown}.\n"
            "If using `jit`, try using `static_argnums` or applying `jit` to smaller "
            f"subfunctions.\n{where}") from None


def full(shape: Sequence[int], fill_value: Any, dtype: Any = None) -> Any:
    """An array of ``shape`` filled with ``fill_value``: a scalar broadcast to the shape."""
    shape = canonicalize_shape(shape)
    if np.ndim(fill_value) != 0:
        raise TypeError(f"full must be called with scalar fill_value, got fill_value.shape "
                        f"{np.shape(fill_value)}.")
    weak = dtype is None and dtypes.is_weakly_typed(fill_value)
    dt = dtypes.dtype(fill_value) if dtype is None else dtypes.canonicalize_dtype(dtype)
    return broadcast_in_dim(convert_element_type(fill_value, dt, weak), shape, ())


def full_like(x: Any, fill_value: Any, dtype: Any = None, shape: Any = None) -> Any:
    """Like ``full``, taking the shape and dtype (and weak type) from ``x`` by default."""
    x = operand(x)
    weak = dtype is None and x.weak_type
    dt = x.dtype if dtype is None else dtypes.canonicalize_dtype(dtype)
    shape = x.shape if shape is None else canonicalize_shape(shape)
    return broadcast_in_dim(convert_element_type(fill_value, dt, weak), shape, ())


deflinear(broadcast_in_dim_p)


def _broadcast_in_dim_transpose(ct: Any, x: Any, *, shape: tuple, broadcast_dimensions: tuple,
                                sharding: Any) -> Any:
    """Sum over the axes the broadcast created or stretched."""
    new_axes = tuple(i for i in range(len(shape)) if i not in broadcast_dimensions)
    stretched = tuple(d for i, d in enumerate(broadcast_dimensions)
                      if x.aval.shape[i] == 1 and shape[d] != 1)
    summed = reduce_sum(ct, tuple(sorted(new_axes + stretched)))
    return reshape(summed, x.aval.shape)


_linear_unary(broadcast_in_dim_p, _broadcast_in_dim_transpose)


@register(broadcast_in_dim_p)
def _broadcast_in_dim_lowering(ctx: RuleContext, x: Value, shape: tuple[int, ...],
                               broadcast_dimensions: tuple[int, ...], sharding: Any) -> Value:
    return ctx.b.broadcast(x, shape, broadcast_dimensions)


# ---------------------------------------------------------------------------------------
# reshape
# ---------------------------------------------------------------------------------------


def _reshape_rule(x: ShapedArray, new_sizes: tuple[int, ...], dimensions: Any,
                  sharding: Any) -> ShapedArray:
    if int(np.prod(new_sizes, dtype=np.int64)) != x.size:
        # JAX's class (its compiler rejects the program; minijax rejects it when traced).
        raise ValueError(
            f"reshape total size must be unchanged, got new_sizes {new_sizes} "
            f"(of total size {int(np.prod(new_sizes, dtype=np.int64))}) for shape {x.shape} "
            f"(of total size {x.size})."
        )
    if dimensions is not None and sorted(dimensions) != list(range(x.ndim)):
        raise TypeError(
            "reshape dimensions must be a permutation of operand dimensions, got dimensions "
            f"{dimensions} for shape {x.shape}."
        )
    return ShapedArray(new_sizes, x.dtype, x.weak_type)


def _reshape_kernel(x: np.ndarray, new_sizes: tuple[int, ...], dimensions: Any,
                    sharding: Any) -> np.ndarray:
    if dimensions is not None:
        x = np.transpose(x, dimensions)
    return np.reshape(x, new_sizes)


reshape_p = Primitive("reshape")
reshape_p.def_impl(_reshape_kernel)
reshape_p.def_abstract_eval(_reshape_rule)


def reshape(operand_: Any, new_sizes: Sequence[int], dimensions: Sequence[int] | None = None,
            *, out_sharding: Any = None) -> Any:
    """Reshape (after transposing by ``dimensions``, if given). A no-op if nothing changes."""
    x = operand(operand_, reshape_p)
    new_sizes = tuple(int(d) for d in new_sizes)
    dims = None if dimensions is None else tuple(int(d) for d in dimensions)
    if x.shape == new_sizes and (dims is None or dims == tuple(range(x.ndim))):
        return x
    return reshape_p.bind(x, new_sizes=new_sizes, dimensions=dims, sharding=None)


deflinear(reshape_p)


def _reshape_transpose(ct: Any, x: Any, *, new_sizes: tuple, dimensions: Any,
                       sharding: Any) -> Any:
    if dimensions is None:
        return reshape(ct, x.aval.shape)
    permuted = tuple(x.aval.shape[d] for d in dimensions)
    return transpose(reshape(ct, permuted), tuple(np.argsort(dimensions)))


_linear_unary(reshape_p, _reshape_transpose)


@register(reshape_p)
def _reshape_lowering(ctx: RuleContext, x: Value, new_sizes: tuple[int, ...], dimensions: Any,
                      sharding: Any) -> Value:
    if dimensions is not None:
        x = transpose_op(ctx, x, permutation=dimensions)
    return ctx.b.emit("stablehlo.reshape", x, type=ctx.type_out)


# ---------------------------------------------------------------------------------------
# transpose
# ---------------------------------------------------------------------------------------


def _transpose_rule(x: ShapedArray, permutation: tuple[int, ...]) -> ShapedArray:
    if sorted(permutation) != list(range(x.ndim)):
        raise TypeError(
            "transpose permutation isn't a permutation of operand dimensions, got "
            f"permutation {permutation} for operand shape {x.shape}."
        )
    return ShapedArray(tuple(x.shape[p] for p in permutation), x.dtype, x.weak_type)


transpose_p = Primitive("transpose")
transpose_p.def_impl(lambda x, permutation: np.transpose(x, permutation))
transpose_p.def_abstract_eval(_transpose_rule)


def transpose(operand_: Any, permutation: Sequence[int]) -> Any:
    """Permute dimensions: result dimension ``i`` is operand dimension ``permutation[i]``."""
    x = operand(operand_, transpose_p)
    permutation = tuple(int(p) for p in permutation)
    if permutation == tuple(range(x.ndim)):
        return x
    return transpose_p.bind(x, permutation=permutation)


deflinear(transpose_p)
_linear_unary(transpose_p,
              lambda ct, x, *, permutation: transpose(ct, tuple(np.argsort(permutation))))


@register(transpose_p)
def transpose_op(ctx: RuleContext, x: Value, permutation: tuple[int, ...]) -> Value:
    """``stablehlo.transpose`` (the lowering of ``transpose``; other rules emit it too)."""
    shape = tuple(x.type.shape[p] for p in permutation)
    return ctx.b.emit("stablehlo.transpose", x, type=TensorType(shape, x.type.dtype),
                      dims=tuple(permutation))


# ---------------------------------------------------------------------------------------
# reduce_sum
# ---------------------------------------------------------------------------------------


def check_number(name: str, dt: np.dtype) -> None:
    """Arithmetic reductions take numbers; booleans must be converted first."""
    if dt == np.bool_:
        raise TypeError(
            f"{name} does not accept dtype bool. Accepted dtypes are subtypes of number."
        )


def accumulator(dt: np.dtype) -> np.dtype:
    """The dtype a kernel adds in: half-precision floats lose too much if summed as is."""
    return _FLOAT32 if dt in _HALVES else dt


_FLOAT32 = np.dtype(np.float32)
_HALVES = frozenset([np.dtype(np.float16), np.dtype(dtypes.bfloat16)])


def reduced_shape(x: ShapedArray, axes: tuple[int, ...]) -> tuple[int, ...]:
    """``x``'s shape without ``axes`` (which must be in range and distinct)."""
    if any(not 0 <= a < x.ndim for a in axes):
        raise ValueError(
            f"reduction axes {axes} contains out-of-bounds indices for {x.str_long()}."
        )
    if len(set(axes)) != len(axes):
        raise ValueError(f"duplicate value in 'axes' of reduction: {axes}")
    return tuple(d for i, d in enumerate(x.shape) if i not in axes)


def _reduce_sum_kernel(x: np.ndarray, *, axes: tuple[int, ...], **_: Any) -> Any:
    """A sum that starts from 0, unless each output sums a single element: XLA's
    simplifier makes that reduction a reshape (JAX keeps a ``-0.0``, which ``0 + -0.0``
    would turn into ``0.0``)."""
    if math.prod(x.shape[a] for a in axes) == 1:
        return x.reshape([d for i, d in enumerate(x.shape) if i not in axes])
    acc = accumulator(x.dtype)
    out = np.add.reduce(x, axis=axes, dtype=acc, initial=0)
    return out if acc is x.dtype else np.asarray(out, dtype=x.dtype)


def _reduce_sum_rule(x: ShapedArray, *, axes: tuple[int, ...], **_: Any) -> ShapedArray:
    shape = reduced_shape(x, axes)
    check_number("reduce_sum", x.dtype)
    return ShapedArray(shape, x.dtype, x.weak_type)


reduce_sum_p = Primitive("reduce_sum")
reduce_sum_p.def_impl(_reduce_sum_kernel)
reduce_sum_p.def_abstract_eval(_reduce_sum_rule)


def reduce_sum(operand_: Any, axes: Sequence[int], *, out_sharding: Any = None) -> Any:
    """Sum over ``axes`` (in the operand's own dtype: int8 sums wrap around)."""
    return bind_reduce_sum(operand(operand_, reduce_sum_p), tuple(map(int, axes)))


def bind_reduce_sum(x: Any, axes: tuple[int, ...]) -> Any:
    """``reduce_sum`` of an array or tracer over axes that are already a tuple of Python
    ints, without converting them again: ``jnp.sum`` has made them so, and this keeps it
    cheap."""
    return reduce_sum_p.bind(x, axes=axes, out_sharding=None)


deflinear(reduce_sum_p)


def _reduce_sum_transpose(ct: Any, x: Any, *, axes: tuple, out_sharding: Any) -> Any:
    """Every summed element receives the cotangent of the sum: broadcast it back. (The
    kept axes are NumPy integers, as in JAX, whose jaxprs print them as np.int64(0).)"""
    kept = tuple(np.delete(np.arange(x.aval.ndim), axes))
    return broadcast_in_dim(ct, x.aval.shape, kept)


_linear_unary(reduce_sum_p, _reduce_sum_transpose)


def reduce_op(b: Any, inputs: Sequence[Value], inits: Sequence[Value], op_name: str | None,
              dims: Sequence[int], body: Callable | None = None) -> list[Value]:
    """``stablehlo.reduce`` over ``dims``; the body is one binary op or ``body``."""
    scalars = [TensorType((), x.type.dtype) for x in inputs]
    if body is None:
        body = lambda inner, args: [inner.emit(op_name, *args)]
    region = _region(b, scalars + scalars, body)
    out_types = [TensorType(tuple(n for d, n in enumerate(x.type.shape) if d not in dims),
                            x.type.dtype) for x in inputs]
    return b.op("stablehlo.reduce", [*inputs, *inits], out_types,
                {"dimensions": tuple(dims)}, [region]).results


def reduction_lowering(op_name: str, identity: Callable[[np.dtype], Any]
                       ) -> Callable[..., Value]:
    """The lowering of a reduction: one ``stablehlo.reduce`` starting from ``identity``."""
    def rule(ctx: RuleContext, x: Value, *, axes: tuple[int, ...], **params: Any) -> Value:
        init = ctx.b.constant(np.array(identity(x.type.dtype)).astype(x.type.dtype))
        return reduce_op(ctx.b, [x], [init], op_name, axes)[0]
    return rule


lowering_rules[reduce_sum_p] = reduction_lowering("stablehlo.add", lambda dt: 0)


# ---------------------------------------------------------------------------------------
# Precision: how hard an accelerator should try (on a CPU, float32 is always exact enough)
# ---------------------------------------------------------------------------------------


class Precision(enum.Enum):
    """Precision of a matrix product on accelerators; minijax's CPU kernels ignore it."""

    DEFAULT = 0
    HIGH = 1
    HIGHEST = 2

    def __repr__(self) -> str:
        return f"Precision.{self.name}"

    def __str__(self) -> str:
        return self.name


_PRECISION_NAMES = {
    "highest": Precision.HIGHEST, "float32": Precision.HIGHEST,
    "high": Precision.HIGH, "bfloat16_3x": Precision.HIGH, "tensorfloat32": Precision.HIGH,
    "default": Precision.DEFAULT, "bfloat16": Precision.DEFAULT, "fastest": Precision.DEFAULT,
}


def canonicalize_precision(precision: Any) -> tuple[Precision, Precision] | None:
    """``None``, one precision (a name or a ``Precision``) or a pair -> ``None`` or a pair."""
    if precision is None:
        return None
    if isinstance(precision, str) and precision in _PRECISION_NAMES:
        precision = _PRECISION_NAMES[precision]
    if isinstance(precision, Precision):
        return precision, precision
    if (isinstance(precision, (tuple, list)) and len(precision) == 2
            and all(isinstance(p, (Precision, str)) for p in precision)):
        pair = [_PRECISION_NAMES.get(p, p) if isinstance(p, str) else p for p in precision]
        if all(isinstance(p, Precision) for p in pair):
            return pair[0], pair[1]
    raise ValueError(
        "Precision argument must be one of:\n- None,\n"
        f"- a string in {list(_PRECISION_NAMES)},\n- a lax.Precision value,\n"
        f"- a tuple of two lax.Precision values or strings;\nbut got {precision}."
    )


# ---------------------------------------------------------------------------------------
# dot_general: contract, batch, and keep the rest
# ---------------------------------------------------------------------------------------

DimensionNumbers = tuple[tuple[tuple[int, ...], tuple[int, ...]],
                         tuple[tuple[int, ...], tuple[int, ...]]]


def _check_dimension_numbers(lhs: ShapedArray, rhs: ShapedArray,
                             dimension_numbers: DimensionNumbers) -> None:
    (lhs_contract, rhs_contract), (lhs_batch, rhs_batch) = dimension_numbers
    for side, aval, batch, contract in (("lhs", lhs, lhs_batch, lhs_contract),
                                        ("rhs", rhs, rhs_batch, rhs_contract)):
        if any(not 0 <= d < aval.ndim for d in batch + contract):
            raise TypeError(
                f"dot_general requires {side} dimension numbers to be nonnegative and less "
                f"than the number of axes of the {side} value, got {side}_batch of {batch} "
                f"and {side}_contracting of {contract} for {side} of rank {aval.ndim}"
            )
        if len(set(contract)) != len(contract):
            raise TypeError(f"dot_general requires {side} contracting dimensions to be "
                            f"distinct, got {side}_contracting {contract}.")
        if set(batch) & set(contract):
            raise TypeError(
                f"dot_general requires {side} batch dimensions to be disjoint from contracting "
                f"dimensions, got {side}_batch {batch} and {side}_contracting {contract}."
            )
    if len(lhs_batch) != len(rhs_batch):
        raise TypeError(
            "dot_general requires equal numbers of lhs_batch and rhs_batch dimensions, got "
            f"lhs_batch {lhs_batch} and rhs_batch {rhs_batch}."
        )
    lhs_batch_shape = tuple(lhs.shape[d] for d in lhs_batch)
    rhs_batch_shape = tuple(rhs.shape[d] for d in rhs_batch)
    if lhs_batch_shape != rhs_batch_shape:
        raise TypeError(
            "dot_general requires lhs batch dimensions and rhs batch dimensions to have the "
            f"same shape, got {lhs_batch_shape} and {rhs_batch_shape}."
        )
    lhs_contract_shape = tuple(lhs.shape[d] for d in lhs_contract)
    rhs_contract_shape = tuple(rhs.shape[d] for d in rhs_contract)
    if lhs_contract_shape != rhs_contract_shape:
        raise TypeError(
            "dot_general requires contracting dimensions to have the same shape, got "
            f"{lhs_contract_shape} and {rhs_contract_shape}."
        )


def _free_dims(ndim: int, batch: tuple[int, ...], contract: tuple[int, ...]) -> list[int]:
    return [d for d in range(ndim) if d not in batch and d not in contract]


def _dot_output_shape(lhs: ShapedArray, rhs: ShapedArray,
                      dimension_numbers: DimensionNumbers) -> tuple[int, ...]:
    (lhs_contract, rhs_contract), (lhs_batch, rhs_batch) = dimension_numbers
    return (tuple(lhs.shape[d] for d in lhs_batch)
            + tuple(lhs.shape[d] for d in _free_dims(lhs.ndim, lhs_batch, lhs_contract))
            + tuple(rhs.shape[d] for d in _free_dims(rhs.ndim, rhs_batch, rhs_contract)))


_KIND_RANK = {"b": 0, "i": 1, "u": 1, "f": 2, "V": 2, "c": 3}  # bfloat16's kind is "V"


def _wider_input_dtype(a: np.dtype, b: np.dtype) -> np.dtype:
    """The result dtype of a product of two *different* input dtypes, as XLA's CPU picks
    it: the higher kind (bool < integer < float < complex), then the larger item size,
    ties going to signed integers and to bfloat16."""
    def rank(dt: np.dtype) -> tuple[int, int, int]:
        tie = dt.kind == "i" or dt == dtypes.bfloat16
        return _KIND_RANK[dt.kind], dt.itemsize, int(tie)

    if a == b:
        return a
    return builtins.max(a, b, key=rank)  # (``max`` is lax.max here)


def _bits(dt: np.dtype) -> int:
    """Bits of one component (complex64 counts 32); bool counts 0."""
    if dt == np.bool_:
        return 0
    return (dtypes.finfo(dt) if dt.kind in "fcV" else dtypes.iinfo(dt)).bits


def _dot_general_rule(lhs: ShapedArray, rhs: ShapedArray, *,
                      dimension_numbers: DimensionNumbers, precision: Any,
                      preferred_element_type: np.dtype | None, out_sharding: Any
                      ) -> ShapedArray:
    _check_dimension_numbers(lhs, rhs, dimension_numbers)
    dt = _wider_input_dtype(lhs.dtype, rhs.dtype)
    if preferred_element_type is not None:
        # Accumulating integers or complex numbers in a narrower type would lose them.
        if dt.kind in "iuc" and _bits(preferred_element_type) < _bits(dt):
            raise TypeError(
                "`preferred_element_type` must not be narrower than the original type, got "
                f"preferred_element_type of {preferred_element_type.name} for result type "
                f"of {dt.name}."
            )
        dt = preferred_element_type
    weak = lhs.weak_type and rhs.weak_type
    return ShapedArray(_dot_output_shape(lhs, rhs, dimension_numbers), dt, weak)


def _compute_dtype(lhs: np.dtype, rhs: np.dtype, out: np.dtype) -> np.dtype:
    """What the kernel multiplies in: integers in the result's dtype (so int8 products
    wrap around as int8 sums do); inexact inputs in their own dtype, or in the result's if
    that is wider (a float result of complex inputs is then their real part, an integer
    result of floats is truncated); half-precision floats in float32."""
    dt = _wider_input_dtype(lhs, rhs)
    wider_result = out.kind == "c" or (out.kind in "fV" and dt.kind != "c"
                                       and out.itemsize > dt.itemsize)
    if dt.kind in "biu" or wider_result:
        dt = out
    if dt == np.float16 or dt == dtypes.bfloat16:
        return np.dtype(np.float32)
    return dt


def _dot_general_kernel(lhs: np.ndarray, rhs: np.ndarray, *,
                        dimension_numbers: DimensionNumbers, precision: Any,
                        preferred_element_type: np.dtype | None, out_sharding: Any
                        ) -> np.ndarray:
    """Move batch, free and contracting dimensions into place, then one ``np.matmul``."""
    (lhs_contract, rhs_contract), (lhs_batch, rhs_batch) = dimension_numbers
    lhs_free = _free_dims(lhs.ndim, lhs_batch, lhs_contract)
    rhs_free = _free_dims(rhs.ndim, rhs_batch, rhs_contract)
    out_shape = [lhs.shape[d] for d in (*lhs_batch, *lhs_free)] + [rhs.shape[d] for d in rhs_free]
    out_dtype = preferred_element_type or _wider_input_dtype(lhs.dtype, rhs.dtype)
    acc = _compute_dtype(lhs.dtype, rhs.dtype, out_dtype)

    def as_matrices(x: np.ndarray, batch: Sequence[int], rows: Sequence[int],
                    cols: Sequence[int]) -> np.ndarray:
        x = x.transpose(*batch, *rows, *cols).astype(acc, copy=False)
        b, r = len(batch), len(rows)
        return x.reshape(*x.shape[:b], math.prod(x.shape[b:b + r]), math.prod(x.shape[b + r:]))

    product = np.matmul(as_matrices(lhs, lhs_batch, lhs_free, lhs_contract),
                        as_matrices(rhs, rhs_batch, rhs_contract, rhs_free))
    if product.dtype.kind == "c" and out_dtype.kind != "c":
        product = product.real  # a complex product asked for a real result keeps its real part
    return product.reshape(out_shape).astype(out_dtype, copy=False)


dot_general_p = Primitive("dot_general")
dot_general_p.def_impl(_dot_general_kernel)
dot_general_p.def_abstract_eval(_dot_general_rule)


def _pp_dot_general(params: dict) -> list[tuple[str, Any]]:
    """JAX prints dimension numbers with lists, and leaves out parameters that are None."""
    (lc, rc), (lb, rb) = params["dimension_numbers"]
    items: list[tuple[str, Any]] = [
        ("dimension_numbers", f"(({list(lc)}, {list(rc)}), ({list(lb)}, {list(rb)}))")
    ]
    for name in ("precision", "preferred_element_type"):
        if params[name] is not None:
            items.append((name, params[name]))
    return items


pp_param_rules[dot_general_p] = _pp_dot_general


def _dims(dims: Any) -> tuple[int, ...]:
    return (int(dims),) if isinstance(dims, (int, np.integer)) else tuple(map(int, dims))


def _canonicalize_dimension_numbers(dimension_numbers: Any) -> DimensionNumbers:
    """Lists, arrays or single ints -> the hashable tuples the equation stores."""
    (lhs_contract, rhs_contract), (lhs_batch, rhs_batch) = dimension_numbers
    return (_dims(lhs_contract), _dims(rhs_contract)), (_dims(lhs_batch), _dims(rhs_batch))


def dot_general(lhs: Any, rhs: Any, dimension_numbers: Any, precision: Any = None,
                preferred_element_type: Any = None, *, out_sharding: Any = None) -> Any:
    """The general product: ``dimension_numbers = ((lhs_contracting, rhs_contracting),
    (lhs_batch, rhs_batch))``. The result has the batch dimensions, then the lhs's free
    dimensions, then the rhs's."""
    pet = None if preferred_element_type is None \
        else dtypes.canonicalize_dtype(preferred_element_type)
    return dot_general_p.bind(
        operand(lhs, dot_general_p), operand(rhs, dot_general_p, 1),
        dimension_numbers=_canonicalize_dimension_numbers(dimension_numbers),
        precision=canonicalize_precision(precision), preferred_element_type=pet,
        out_sharding=None,
    )


def dot(lhs: Any, rhs: Any, *, dimension_numbers: Any = None, precision: Any = None,
        preferred_element_type: Any = None, out_sharding: Any = None) -> Any:
    """Vector-vector, matrix-vector or matrix-matrix product (contracting ``lhs``'s last
    dimension with ``rhs``'s first); other ranks need explicit ``dimension_numbers``."""
    lhs, rhs = operand(lhs, dot_general_p), operand(rhs, dot_general_p, 1)
    if dimension_numbers is None:
        if not (1 <= lhs.ndim <= 2 and 1 <= rhs.ndim <= 2 and lhs.shape[-1] == rhs.shape[0]):
            raise ValueError(
                "jax.lax.dot: dimension_numbers must be specified when not performing simple "
                "un-batched matrix-matrix, matrix-vector, or vector-vector products; got "
                f"lhs_shape={lhs.shape} rhs_shape={rhs.shape}"
            )
        dimension_numbers = (((lhs.ndim - 1,), (0,)), ((), ()))
    return dot_general(lhs, rhs, dimension_numbers, precision, preferred_element_type)


defjvp(dot_general_p,
       lambda t, out, x, y, **params: dot_general_p.bind(t, y, **params),
       lambda t, out, x, y, **params: dot_general_p.bind(x, t, **params))


def _dot_transpose_operand(ct: Any, x_aval: Any, y: Any, x_is_lhs: bool,
                           dimension_numbers: Any, precision: Any) -> Any:
    """The cotangent of the linear operand ``x`` of ``dot_general(x, y)`` (or of
    ``dot_general(y, x)``): contract ``ct`` with ``y`` over ``y``'s free dimensions (and
    batch over the batch dimensions); that leaves ``x``'s dimensions, in the order
    (batch, x free, x contracted), which one transpose puts in place."""
    (lhs_c, rhs_c), (lhs_b, rhs_b) = dimension_numbers
    x_c, y_c, x_b, y_b = (lhs_c, rhs_c, lhs_b, rhs_b) if x_is_lhs else (rhs_c, lhs_c, rhs_b, lhs_b)
    nb = len(x_b)
    x_free = [d for d in range(x_aval.ndim) if d not in x_b and d not in x_c]
    y_free = [d for d in range(y.ndim) if d not in y_b and d not in y_c]
    ct_y_free = [nb + (len(x_free) if x_is_lhs else 0) + i for i in range(len(y_free))]
    out = dot_general(ct, y, ((ct_y_free, y_free), (range(nb), y_b)), precision,
                      preferred_element_type=x_aval.dtype)
    y_c_sorted = sorted(y_c)
    source = {}
    for i, d in enumerate(x_b):
        source[d] = i
    for j, d in enumerate(x_free):
        source[d] = nb + j
    for d, e in zip(x_c, y_c):
        source[d] = nb + len(x_free) + y_c_sorted.index(e)
    return transpose(out, [source[d] for d in range(x_aval.ndim)])


def _dot_general_transpose(ct: Any, lhs: Any, rhs: Any, *, dimension_numbers: Any,
                           precision: Any, preferred_element_type: Any,
                           out_sharding: Any) -> list[Any]:
    if is_undefined(lhs):
        return [_dot_transpose_operand(ct, lhs.aval, rhs, True, dimension_numbers, precision),
                None]
    return [None, _dot_transpose_operand(ct, rhs.aval, lhs, False, dimension_numbers,
                                         precision)]


deftranspose(dot_general_p, _dot_general_transpose)


@register(dot_general_p)
def _dot_general_lowering(ctx: RuleContext, lhs: Value, rhs: Value, *, dimension_numbers: Any,
                          precision: Any, preferred_element_type: Any, out_sharding: Any
                          ) -> Value:
    """Operands of different dtypes are first converted to the result's dtype."""
    b, out = ctx.b, ctx.type_out
    if lhs.type.dtype != rhs.type.dtype:
        lhs, rhs = b.convert(lhs, out.dtype), b.convert(rhs, out.dtype)
    (lhs_contract, rhs_contract), (lhs_batch, rhs_batch) = dimension_numbers
    names = ("DEFAULT", "DEFAULT") if precision is None else tuple(str(p) for p in precision)
    attrs = {"contracting_dims": (tuple(lhs_contract), tuple(rhs_contract)),
             "precision": names}
    if lhs_batch:
        attrs = {"batching_dims": (tuple(lhs_batch), tuple(rhs_batch)), **attrs}
    return b.emit("stablehlo.dot_general", lhs, rhs, type=out, **attrs)


# ---------------------------------------------------------------------------------------
# vmap: batching rules
# ---------------------------------------------------------------------------------------

for _prim in (neg_p, exp_p, log_p, sin_p, cos_p, tanh_p, integer_pow_p,
              convert_element_type_p):
    batching.defvectorized(_prim)

for _prim in (add_p, sub_p, mul_p, div_p, max_p, min_p, eq_p, ne_p, lt_p, le_p, gt_p, ge_p):
    batching.defbroadcasting(_prim)


def _add_any_batching(axis_data: batching.AxisData, vals: list, dims: list
                      ) -> tuple[Any, int | None]:
    """JAX's rule: the result is batched where a batched operand is; an unbatched one is
    broadcast there."""
    (x, y), (x_dim, y_dim) = vals, dims
    if x_dim is None:
        x, x_dim = batching.broadcast(x, y.shape[y_dim], y_dim), y_dim
    elif y_dim is None:
        y = batching.broadcast(y, x.shape[x_dim], x_dim)
    elif x_dim != y_dim:
        x, x_dim = batching.moveaxis(x, x_dim, y_dim), y_dim
    return add_any_p.bind(x, y), x_dim


batching.batching_rules[add_any_p] = _add_any_batching


def _select_n_batching(axis_data: Any, vals: list, dims: list) -> tuple[Any, Any]:
    """JAX's rule: where ``which`` and the cases agree, select as is; otherwise batch axes
    go to the front, and a batched scalar ``which`` is broadcast to the cases' shape."""
    (which, *cases), (which_dim, *case_dims) = vals, dims
    size = next(x.shape[d] for x, d in zip(vals, dims) if d is not None)
    if all(d == which_dim for d in case_dims):
        if which.shape != cases[0].shape:  # a scalar predicate of each example
            which = broadcast_in_dim(which, cases[0].shape, [which_dim])
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
        which = broadcast_in_dim(which, cases[0].shape, [0])
    if which.ndim > cases[0].ndim:
        cases = [broadcast_in_dim(c, which.shape, ()) for c in cases]
    return select_n(which, *cases), 0


batching.batching_rules[select_n_p] = _select_n_batching


def _broadcast_in_dim_batching(axis_data: Any, vals: list, dims: list, *,
                               shape: tuple[int, ...], broadcast_dimensions: tuple[int, ...],
                               sharding: Any) -> tuple[Any, int]:
    (x,), (bdim,) = vals, dims
    new_dims = (0, *np.add(1, broadcast_dimensions))  # NumPy ints, printed as in JAX
    return broadcast_in_dim(batching.moveaxis(x, bdim, 0), (x.shape[bdim], *shape),
                            new_dims), 0


def _reshape_batching(axis_data: Any, vals: list, dims: list, *, new_sizes: tuple[int, ...],
                      dimensions: Any, sharding: Any) -> tuple[Any, int]:
    (x,), (bdim,) = vals, dims
    x = batching.moveaxis(x, bdim, 0)
    if dimensions is not None:
        dimensions = (0, *(d + 1 for d in dimensions))
    return reshape(x, (x.shape[0], *new_sizes), dimensions), 0


def _transpose_batching(axis_data: Any, vals: list, dims: list, *,
                        permutation: tuple[int, ...]) -> tuple[Any, int]:
    (x,), (bdim,) = vals, dims
    perm = (bdim, *(p if p < bdim else p + 1 for p in permutation))
    return transpose(x, perm), 0


batching.batching_rules[broadcast_in_dim_p] = _broadcast_in_dim_batching
batching.batching_rules[reshape_p] = _reshape_batching
batching.batching_rules[transpose_p] = _transpose_batching
batching.defreducer(reduce_sum_p)


def _dot_general_batching(axis_data: Any, vals: list, dims: list, *,
                          dimension_numbers: DimensionNumbers, precision: Any,
                          preferred_element_type: np.dtype | None, out_sharding: Any
                          ) -> tuple[Any, int]:
    """JAX's rule: two batched operands get the batch axis as a new (first) batch
    dimension; one batched operand keeps it as a free dimension, which lands in the
    result where the free dimensions of that side go."""
    (lhs, rhs), (lbd, rbd) = vals, dims
    numbers, out_dim = _batched_dimension_numbers((lhs.ndim, rhs.ndim), (lbd, rbd),
                                                  dimension_numbers)
    return dot_general(lhs, rhs, numbers, precision, preferred_element_type), out_dim


def _bump(dims: Sequence[int], bdim: int) -> tuple[int, ...]:
    """Dimension numbers of an example, as dimensions of the batch stacked at ``bdim``."""
    return tuple(d + (d >= bdim) for d in dims)


def _batched_dimension_numbers(ndims: tuple[int, int], bdims: tuple[int | None, int | None],
                               dimension_numbers: DimensionNumbers
                               ) -> tuple[DimensionNumbers, int]:
    (lhs_contract, rhs_contract), (lhs_batch, rhs_batch) = dimension_numbers
    (lbd, rbd), (lhs_ndim, rhs_ndim) = bdims, ndims
    if lbd is not None and rbd is not None:
        return ((_bump(lhs_contract, lbd), _bump(rhs_contract, rbd)),
                ((lbd, *_bump(lhs_batch, lbd)), (rbd, *_bump(rhs_batch, rbd)))), 0
    if lbd is not None:
        free = _free_dims(lhs_ndim, lhs_batch, lhs_contract)
        out_dim = len(lhs_batch) + sum(d < lbd for d in free)
        return ((_bump(lhs_contract, lbd), rhs_contract),
                (_bump(lhs_batch, lbd), rhs_batch)), out_dim
    free = _free_dims(rhs_ndim, rhs_batch, rhs_contract)
    out_dim = lhs_ndim - len(lhs_contract) + sum(d < rbd for d in free)
    return ((lhs_contract, _bump(rhs_contract, rbd)),
            (lhs_batch, _bump(rhs_batch, rbd))), out_dim


batching.batching_rules[dot_general_p] = _dot_general_batching
