"""Sweeps of the elementwise operations over exhaustive and special inputs (see test_sweeps.py).

Every elementwise ``lax`` and ``jnp`` operation runs once per dtype on whole arrays: for
int8 and uint8, every value (unary) or every pair of values (binary, 65,536 pairs); for the
other dtypes, a table of special values (zeros of both signs, ±1, the extremes, ±inf, NaN,
denormals, the neighbours of small integers, shift counts around the width...) and every
pair of them; for complex dtypes, finite real and imaginary parts (see ``KNOWN_GAPS`` for
where minijax still differs). The 64-bit dtypes run with ``jax_enable_x64`` on.
The same inputs feed minijax (eagerly and under ``jit``) and JAX, and the results are
compared:

* **exactly**, bit for bit, where JAX's result is exact (integers, booleans, comparisons,
  signs, rounding, bit operations, min/max, and IEEE's correctly rounded ``+ - * / sqrt``
  and ``fmod`` of real numbers). Every NaN counts as the same NaN; the sign of zero counts.
* **within an ulp bound** (``Op.ulps``, stated per operation) where the result is a
  rounded transcendental function, whose last bits differ between libraries -- or within
  the dtype's tolerance of ``tests/oracle.py`` (near zero an ulp is tiny, and JAX's
  float32 ``sinh``/``exp2`` of large arguments are a few ulps off). Zeros of either sign
  are one value here, and NaN must meet NaN.

Denormals: JAX on the CPU flushes denormal results to zero (all float types but float16,
whose denormals are normal in the float32 it computes in; each part of a complex), and
treats denormal operands as zero in most operations; minijax deliberately keeps them
(IEEE gradual underflow, as NumPy does). The sweeps compare *modulo* that one difference:
results at or below the smallest normal number count as zeros (of their sign), and
elements with a denormal operand are not compared (``test_sweeps.py`` pins the difference
itself).

``tests/data/make_sweeps.py`` records a digest of JAX's result for every exact case in
``tests/data/sweeps.json``, so that those cases run without JAX too.
"""

from __future__ import annotations

import contextlib
import hashlib
import types
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import ml_dtypes
import numpy as np

EXHAUSTIVE = ("int8", "uint8")
DTYPES = ("bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
          "float16", "bfloat16", "float32", "float64", "complex64", "complex128")
X64 = ("int64", "uint64", "float64", "complex128")  # swept with jax_enable_x64 on
COMPLEX = ("complex64", "complex128")
FLOATS = ("float16", "bfloat16", "float32", "float64")
# float16's denormals are normal numbers in float32, where XLA computes float16
FLUSHED = ("bfloat16", "float32", "float64", "complex64", "complex128")


@dataclass(frozen=True)
class Op:
    """One operation: ``name`` as in ``jnp.name`` or ``lax.name``, its arity, and the ulp
    bound of a rounded (inexact) result; ``ulps=0`` means exact. ``call`` builds the
    function from a namespace (default: the attribute ``name``); ``second`` is the dtype of
    the second operand if it is not the first's; ``int_min=False`` leaves the minimum of
    signed integer types out of the inputs (JAX's gcd loops for ever on it)."""

    name: str
    arity: int
    ulps: int = 0
    call: Callable[[Any], Callable[..., Any]] | None = None
    second: str | None = None
    int_min: bool = True

    def function(self, ns: Any) -> Callable[..., Any]:
        if self.call is not None:
            return self.call(ns)
        module, attr = self.name.split(".")
        return getattr(getattr(ns, module), attr)


def _ops(names: str, arity: int, ulps: int = 0) -> list[Op]:
    return [Op(name, arity, ulps) for name in names.split()]


def _with(name: str, arity: int, call: Callable, ulps: int = 0) -> Op:
    return Op(name, arity, ulps, call)


_LAX_EXACT_UNARY = ("lax.neg lax.sign lax.abs lax.floor lax.ceil lax.is_finite lax.sqrt "
                    "lax.square lax.bitwise_not lax.population_count lax.clz")
_LAX_INEXACT_UNARY = ("lax.exp lax.exp2 lax.log lax.log1p lax.expm1 lax.rsqrt lax.cbrt lax.sin "
                      "lax.cos lax.tan lax.asin lax.acos lax.atan lax.sinh lax.cosh lax.tanh "
                      "lax.asinh lax.acosh lax.atanh lax.logistic")
_LAX_EXACT_BINARY = ("lax.add lax.sub lax.mul lax.div lax.rem lax.max lax.min lax.nextafter "
                     "lax.bitwise_and lax.bitwise_or lax.bitwise_xor lax.shift_left "
                     "lax.shift_right_logical lax.shift_right_arithmetic lax.eq lax.ne lax.lt "
                     "lax.le lax.gt lax.ge")
_JNP_EXACT_UNARY = ("jnp.negative jnp.positive jnp.absolute jnp.fabs jnp.sign jnp.floor "
                    "jnp.ceil jnp.trunc jnp.rint jnp.round jnp.signbit jnp.isnan jnp.isinf "
                    "jnp.isfinite jnp.isposinf jnp.isneginf jnp.sqrt jnp.square jnp.reciprocal "
                    "jnp.invert jnp.bitwise_count jnp.logical_not jnp.modf jnp.nan_to_num")
_JNP_INEXACT_UNARY = ("jnp.exp jnp.exp2 jnp.expm1 jnp.log jnp.log2 jnp.log10 jnp.log1p jnp.cbrt "
                      "jnp.sin jnp.cos jnp.tan jnp.arcsin jnp.arccos jnp.arctan jnp.sinh "
                      "jnp.cosh jnp.tanh jnp.arcsinh jnp.arccosh jnp.arctanh jnp.deg2rad "
                      "jnp.rad2deg jnp.sinc")
_JNP_EXACT_BINARY = ("jnp.add jnp.subtract jnp.multiply jnp.divide jnp.floor_divide "
                     "jnp.remainder jnp.fmod jnp.divmod jnp.maximum jnp.minimum jnp.fmax "
                     "jnp.fmin jnp.nextafter jnp.copysign jnp.heaviside jnp.bitwise_and "
                     "jnp.bitwise_or jnp.bitwise_xor jnp.left_shift jnp.right_shift "
                     "jnp.equal jnp.not_equal jnp.less jnp.less_equal jnp.greater "
                     "jnp.greater_equal jnp.logical_and jnp.logical_or jnp.logical_xor")
_JNP_INEXACT_BINARY = "jnp.power jnp.float_power jnp.arctan2 jnp.hypot"

OPS: list[Op] = [
    *_ops(_LAX_EXACT_UNARY, 1), *_ops(_LAX_INEXACT_UNARY, 1, ulps=4),
    _with("lax.round_afz", 1, lambda ns: ns.lax.round),
    _with("lax.round_even", 1, lambda ns: lambda x: ns.lax.round(x, 1)),
    *(_with(f"lax.integer_pow_{n}", 1, lambda ns, n=n: lambda x: ns.lax.integer_pow(x, n))
      for n in (0, 1, 2, 3, -1, -2)),
    *_ops(_LAX_EXACT_BINARY, 2), Op("lax.pow", 2, ulps=4), Op("lax.atan2", 2, ulps=4),
    *_ops(_JNP_EXACT_UNARY, 1), *_ops(_JNP_INEXACT_UNARY, 1, ulps=4),
    *_ops(_JNP_EXACT_BINARY, 2), *_ops(_JNP_INEXACT_BINARY, 2, ulps=4),
    # amax + log1p(exp(-|x1 - x2|)) cancels: the last bits of exp and log1p show
    *_ops("jnp.logaddexp jnp.logaddexp2", 2, ulps=64),
    Op("jnp.ldexp", 2, second="int32"),
    Op("jnp.gcd", 2, int_min=False), Op("jnp.lcm", 2, int_min=False),
    _with("jnp.round_2", 1, lambda ns: lambda x: ns.jnp.round(x, 2), ulps=1),
    *(_with(f"x.at[i].{how}", 2, lambda ns, how=how: lambda x, y: getattr(
        ns.jnp.asarray(x).at[ns.jnp.arange(x.size)], how)(y)) for how in ("max", "min")),
    *_ops("lax.conj lax.real lax.imag lax.reciprocal jnp.conj jnp.real jnp.imag jnp.isreal "
          "jnp.iscomplex", 1),
    *_ops("lax.complex jnp.true_divide", 2),
    *_ops("lax.erf lax.erfc lax.erf_inv lax.lgamma lax.digamma jnp.angle", 1, ulps=4),
    _with("lax.clamp", 2, lambda ns: lambda x, y: ns.lax.clamp(-x, y, x)),  # y into [-x, x]
    _with("jnp.clip", 2, lambda ns: lambda x, y: ns.jnp.clip(y, -x, x)),
    _with("jnp.clip_lower", 2, lambda ns: lambda x, y: ns.jnp.clip(y, min=x)),
    Op("jnp.isclose", 2),
    *(_with(f"lax.reduce_precision_e{e}m{m}", 1, lambda ns, e=e, m=m: lambda x: (
        ns.lax.reduce_precision(x, exponent_bits=e, mantissa_bits=m)))
      for e, m in ((5, 10), (8, 7), (4, 3), (11, 52))),
    # to the unsigned integers of the same width (complex numbers are refused)
    _with("lax.bitcast_convert_type", 1, lambda ns: lambda x: ns.lax.bitcast_convert_type(
        x, np.dtype(f"uint{8 * x.dtype.itemsize}"))),
    # every conversion between two of the dtypes (saturating, NaN to 0...)
    *(_with(f"lax.convert_element_type-{dt}", 1, lambda ns, dt=dt: lambda x: (
        ns.lax.convert_element_type(x, ml_dtypes.bfloat16 if dt == "bfloat16" else dt)))
      for dt in DTYPES),
]


# ---------------------------------------------------------------------------------------
# Inputs
# ---------------------------------------------------------------------------------------


def _special_integers(dt: np.dtype) -> np.ndarray:
    info = np.iinfo(dt)
    bits = info.bits
    candidates = [0, 1, -1, 2, -2, 3, -3, 7, 8, -8, 100, -100, bits - 1, bits, bits + 1,
                  -bits, 2 * bits, info.min, info.min + 1, info.max, info.max - 1,
                  info.min // 2, info.max // 2 + 1]
    return np.unique(np.array([c for c in candidates if info.min <= c <= info.max], dt))


def _special_floats(dt: np.dtype) -> np.ndarray:
    info = ml_dtypes.finfo(dt)
    one, two = dt.type(1), dt.type(2)
    smallest = info.smallest_subnormal
    positive = [1, 2, 3, 0.5, 1.5, 2.5, 0.1, 100, np.pi, info.max, info.tiny, smallest,
                info.tiny - smallest, np.nextafter(one, two), np.nextafter(one, dt.type(0)),
                np.nextafter(two, dt.type(3)), np.nextafter(two, one), np.inf]
    values = [0.0, -0.0, np.nan] + positive + [-v for v in positive]
    return np.array(values, np.float64 if dt.itemsize == 8 else np.float32).astype(dt)


def _special_complex(dt: np.dtype) -> np.ndarray:
    """Every combination of a few finite real and imaginary parts, zeros of both signs
    among them (64 values). Infinite and NaN parts are left out: there XLA computes with
    formulas of its own (``exp(inf+infj)`` is ``nan+nanj``, NumPy's ``inf+nanj``), which
    minijax's NumPy kernels do not copy."""
    parts = np.array([0.0, -0.0, 1, -1, 0.5, -1.5, np.pi, 100], np.dtype(f"float{4 * dt.itemsize}"))
    real, imag = np.meshgrid(parts, parts, indexing="ij")
    out = np.empty(real.size, dt)
    out.real, out.imag = real.reshape(-1), imag.reshape(-1)
    return out


def special_values(name: str) -> np.ndarray:
    """The table of special values of a dtype (every value for int8, uint8 and bool)."""
    dt = np.dtype(ml_dtypes.bfloat16 if name == "bfloat16" else name)
    if name == "bool":
        return np.array([False, True])
    if name in EXHAUSTIVE:
        return np.arange(np.iinfo(dt).min, np.iinfo(dt).max + 1).astype(dt)
    if dt.kind in "iu":
        return _special_integers(dt)
    if dt.kind == "c":
        return _special_complex(dt)
    return _special_floats(dt)


def inputs(op: Op, dtype: str) -> list[np.ndarray]:
    """The operands of ``op`` at ``dtype``: the table, or every pair from the tables."""
    first = special_values(dtype)
    if not op.int_min and first.dtype.kind == "i":
        first = first[first != np.iinfo(first.dtype).min]
    if op.arity == 1:
        return [first]
    second = first if op.second is None else special_values(op.second)
    x, y = np.meshgrid(first, second, indexing="ij")
    return [x.reshape(-1), y.reshape(-1)]


def parts(x: np.ndarray) -> np.ndarray:
    """A view of ``x`` with a last axis more: the real and imaginary parts of complex
    numbers (as floats), the number itself otherwise."""
    x = np.ascontiguousarray(x)[..., None]
    if x.dtype.kind != "c":
        return x
    return x.view(np.dtype(f"float{4 * x.dtype.itemsize}"))


def _magnitudes(x: np.ndarray) -> tuple[np.ndarray, float]:
    """The magnitude of every float of ``x`` (both parts of a complex) and the smallest
    normal number of their type."""
    floats = parts(x)
    return np.abs(floats.astype(np.float64)), float(ml_dtypes.finfo(floats.dtype).tiny)


def flush(x: np.ndarray) -> np.ndarray:
    """Results at or below the smallest normal number to zero of the same sign, as JAX's
    CPU computations flush them (the smallest normal itself too: the hardware flushes a
    result that is tiny before rounding); each part of a complex number apart."""
    x = np.asarray(x)
    if x.dtype.name not in FLUSHED:
        return x
    floats = parts(x)
    magnitude, tiny = _magnitudes(x)
    flushed = floats * (magnitude > tiny)  # x * 0 is the zero of x's sign
    return flushed.astype(floats.dtype).view(x.dtype)[..., 0]


def compared(args: list[np.ndarray]) -> np.ndarray:
    """Which elements to compare: those without a denormal operand (in the dtypes JAX
    flushes, JAX treats a denormal operand as zero in some operations and not in others)."""
    keep = np.ones(args[0].shape, bool)
    for x in args:
        if x.dtype.name in FLUSHED:
            magnitude, tiny = _magnitudes(x)
            keep &= ~((magnitude > 0) & (magnitude < tiny)).any(-1)
    return keep


def cases() -> Iterator[tuple[Op, str]]:
    for op in OPS:
        for dtype in DTYPES:
            if op.second and dtype not in FLOATS:
                continue
            yield op, dtype


def case_id(op: Op, dtype: str) -> str:
    return f"{op.name}-{dtype}"


# Exact on real numbers, rounded more than once on complex ones (a product is a sum of
# two products, a magnitude a hypot...): compared within an ulp bound there.
_ROUNDED_IN_COMPLEX = set("""lax.mul lax.div lax.sqrt lax.square lax.sign lax.abs
    lax.integer_pow_2 lax.integer_pow_3 lax.integer_pow_-1 lax.integer_pow_-2 jnp.multiply
    jnp.divide jnp.sqrt jnp.square jnp.reciprocal jnp.sign jnp.absolute lax.reciprocal
    jnp.true_divide""".split())
COMPLEX_ULPS = 4


# Where minijax still differs from JAX, and why (the sweeps check that each case still
# differs, so that this list stays true): none today. An entry maps an operation's name
# to its dtypes, ``"lax.pow": ("complex64",)``, under a comment saying why.
KNOWN_GAPS: dict[str, tuple[str, ...]] = {}


def known_gap(op: Op, dtype: str) -> bool:
    return dtype in KNOWN_GAPS.get(op.name, ())


def ulps(op: Op, dtype: str) -> int:
    """The ulp bound of ``op``'s results at ``dtype`` (0: exact)."""
    if dtype in COMPLEX and op.name in _ROUNDED_IN_COMPLEX:
        return COMPLEX_ULPS
    return op.ulps


def is_recorded(name: str, dtype: str) -> bool:
    """Exact cases have their JAX results recorded in ``tests/data/sweeps.json``."""
    return ulps(next(op for op in OPS if op.name == name), dtype) == 0


# ---------------------------------------------------------------------------------------
# Running and comparing
# ---------------------------------------------------------------------------------------


@contextlib.contextmanager
def x64_for(dtype: str, config: Any) -> Iterator[None]:
    """``jax_enable_x64`` on in ``config`` (minijax's or JAX's) while ``dtype`` is swept,
    if it is one of the 64-bit dtypes (without it they would be 32-bit)."""
    if dtype not in X64:
        yield
        return
    config.update("jax_enable_x64", True)
    try:
        yield
    finally:
        config.update("jax_enable_x64", False)


def minijax_namespace() -> types.SimpleNamespace:
    import minijax.numpy as jnp
    from minijax import lax

    return types.SimpleNamespace(jnp=jnp, lax=lax)


def jax_namespace() -> types.SimpleNamespace:
    import jax.numpy as jnp
    from jax import lax

    return types.SimpleNamespace(jnp=jnp, lax=lax)


def _kept(args: list[np.ndarray], out: Any) -> list[np.ndarray]:
    """The outputs as NumPy arrays, flushed, with the elements not compared set to 0."""
    keep = compared(args)
    outs = out if isinstance(out, (tuple, list)) else (out,)
    return [np.where(keep, flush(np.asarray(o)), np.zeros((), np.asarray(o).dtype)) for o in outs]


def run(fun: Callable[..., Any], args: list[np.ndarray]) -> list[np.ndarray] | str:
    """What ``fun`` gives on ``args`` (see :func:`_kept`), or the error's class name."""
    try:
        out = fun(*args)
    except (TypeError, ValueError) as e:
        return type(e).__name__
    return _kept(args, out)


def jax_results(dtype: str, names: set[str] | None = None) -> dict[str, list[np.ndarray] | str]:
    """JAX's result of every operation at ``dtype`` (or of those ``names``), by name (see
    :func:`run`)."""
    import jax

    ns = jax_namespace()
    with x64_for(dtype, jax.config):
        return {op.name: run(op.function(ns), inputs(op, dtype)) for op, dt in cases()
                if dt == dtype and (names is None or op.name in names)}


def canonical(x: np.ndarray) -> np.ndarray:
    """The bits of ``x``, with every NaN the same NaN (for exact comparison); floats get
    a last axis (see :func:`parts`)."""
    if x.dtype.kind not in "fcV" and x.dtype != ml_dtypes.bfloat16:
        return x
    x = parts(x)
    x = np.where(np.isnan(x.astype(np.float64)), x.dtype.type(np.nan), x).astype(x.dtype)
    return x.view(np.dtype(f"uint{8 * x.dtype.itemsize}"))


def digest(result: list[np.ndarray] | str) -> str:
    """A short fingerprint of a result (its dtypes and exact bits), or of an error."""
    if isinstance(result, str):
        return f"error:{result}"
    h = hashlib.sha256()
    for x in result:
        h.update(f"{x.dtype.name}{x.shape}".encode())
        h.update(np.ascontiguousarray(canonical(x)).tobytes())
    return h.hexdigest()[:16]


def _ordered(x: np.ndarray) -> np.ndarray:
    """Floats as integers in the order of the floats (adjacent floats differ by 1)."""
    bits = x.view(np.dtype(f"int{8 * x.dtype.itemsize}")).astype(np.int64)
    magnitude = bits & ((1 << (8 * x.dtype.itemsize - 1)) - 1)
    return np.where(bits < 0, -magnitude, magnitude)


def ulp_distance(ours: np.ndarray, theirs: np.ndarray) -> np.ndarray:
    """How many floats of the result's dtype lie between the results (inf if one is NaN);
    of complex results, the larger distance of the two parts."""
    ours, theirs = parts(ours), parts(theirs)
    distance = np.abs(_ordered(ours) - _ordered(theirs)).astype(float)
    nan_ours, nan_theirs = np.isnan(ours.astype(np.float64)), np.isnan(theirs.astype(np.float64))
    distance = np.where(nan_ours | nan_theirs, np.inf, distance)
    return np.where(nan_ours & nan_theirs, 0, distance).max(-1)


def _far(ours: np.ndarray, theirs: np.ndarray, ulps: int) -> np.ndarray:
    """More than ``ulps`` ulps apart, and not within the dtype's tolerance either."""
    from tests.oracle import TOLERANCES

    rtol, atol = TOLERANCES[ours.dtype.name]
    wide = np.complex128 if ours.dtype.kind == "c" else np.float64
    a, b = ours.astype(wide), theirs.astype(wide)
    with np.errstate(invalid="ignore"):
        close = np.isclose(a, b, rtol=rtol, atol=atol) & (np.isinf(a) == np.isinf(b))
    return (ulp_distance(ours, theirs) > ulps) & ~close


def mismatches(op: Op, dtype: str, args: list[np.ndarray], ours: Any, theirs: Any) -> str:
    """'' if ``ours`` agrees with ``theirs``, else a description of the first few
    differences (inputs, both results)."""
    if isinstance(ours, str) or isinstance(theirs, str):
        return "" if ours == theirs else f"minijax: {_show(ours)}, JAX: {_show(theirs)}"
    problems = []
    for k, (a, b) in enumerate(zip(ours, theirs)):
        if a.dtype != b.dtype or a.shape != b.shape:
            problems.append(f"output {k}: {a.dtype}{a.shape} vs JAX {b.dtype}{b.shape}")
            continue
        bound = ulps(op, dtype)
        inexact = bound > 0 and (a.dtype.kind in "fc" or a.dtype == ml_dtypes.bfloat16)
        bad = _far(a, b, bound) if inexact else _differ(a, b)
        for i in np.flatnonzero(bad)[:8]:
            operands = ", ".join(repr(x[i]) for x in args)
            problems.append(f"({operands}) -> {a[i]!r}, JAX {b[i]!r}")
        if bad.any():
            problems.append(f"{int(bad.sum())} of {bad.size} differ")
    return "; ".join(problems)


def _differ(ours: np.ndarray, theirs: np.ndarray) -> np.ndarray:
    """Which elements differ in their bits (any part of a complex number)."""
    different = canonical(ours) != canonical(theirs)
    return different.reshape(len(different), -1).any(-1)


def _show(result: Any) -> str:
    return result if isinstance(result, str) else "a result"
