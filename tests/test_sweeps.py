"""Every elementwise lax and jnp operation, swept over exhaustive and special inputs.

See ``tests/sweeps.py`` for the operations, the inputs and how results are compared. Each
dtype is two tests, every operation checked eagerly and under ``jit`` (minijax's NumPy
backend), the failures listed together:

* the exact cases (integers, comparisons, signs, rounding, bit operations...) against the
  digests of JAX's results recorded in ``tests/data/sweeps.json`` (written by
  ``tests/data/make_sweeps.py`` with the JAX version the project pins): this runs without
  JAX, and with JAX a failure shows the elements that differ from JAX's result;
* the rounded (inexact) cases against JAX's results, computed there and then.
"""

from __future__ import annotations

import importlib.util
import json
import pathlib
import sys
import warnings

import numpy as np
import pytest

import minijax
import minijax.numpy as jnp
from tests import sweeps

RECORDED = json.loads((pathlib.Path(__file__).parent / "data" / "sweeps.json").read_text())
HAVE_JAX = importlib.util.find_spec("jax") is not None and sys.modules.get("jax", True) is not None


def _ours(op: sweeps.Op, dtype: str, jitted: bool) -> list[np.ndarray] | str:
    fun = op.function(sweeps.minijax_namespace())
    with warnings.catch_warnings(), sweeps.x64_for(dtype, minijax.config):
        warnings.simplefilter("ignore")  # overflow and invalid-value warnings are expected
        return sweeps.run(minijax.jit(fun) if jitted else fun, sweeps.inputs(op, dtype))


def _cases(dtype: str, recorded: bool) -> list[sweeps.Op]:
    return [op for op, dt in sweeps.cases()
            if dt == dtype and sweeps.is_recorded(op.name, dtype) == recorded]


def _theirs(ops: list[sweeps.Op], dtype: str) -> dict[str, list[np.ndarray] | str]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return sweeps.jax_results(dtype, {op.name for op in ops})


def _gap_closed(op: sweeps.Op) -> str:
    return f"{op.name}: no longer differs from JAX, take it out of KNOWN_GAPS"


@pytest.mark.parametrize("dtype", sweeps.DTYPES)
def test_sweep_matches_recorded_jax_results(dtype: str) -> None:
    """Runs without JAX: the integer, boolean and sign-of-zero cases, bit for bit."""
    failures = []
    for op in _cases(dtype, recorded=True):
        expected = RECORDED["digests"][sweeps.case_id(op, dtype)]
        ours = {jitted: _ours(op, dtype, jitted) for jitted in (False, True)}
        wrong = [jitted for jitted, out in ours.items() if sweeps.digest(out) != expected]
        if sweeps.known_gap(op, dtype):
            failures += [] if wrong else [_gap_closed(op)]
        elif wrong:
            failures += _explain(op, dtype, expected, {j: ours[j] for j in wrong})
    assert not failures, f"{len(failures)} differences from JAX:\n" + "\n".join(failures)


def _explain(op: sweeps.Op, dtype: str, expected: str,
             wrong: dict[bool, list[np.ndarray] | str]) -> list[str]:
    """What differs from JAX's recorded result: with JAX here, the elements (or that the
    recording is stale); without, the digests."""
    if not HAVE_JAX:
        return [f"{op.name} ({'jit' if jitted else 'eager'}): digest {sweeps.digest(out)}, "
                f"JAX's {expected}" for jitted, out in wrong.items()]
    theirs = _theirs([op], dtype)[op.name]
    if sweeps.digest(theirs) != expected:
        return [f"{op.name}: tests/data/sweeps.json is stale (rerun tests/data/make_sweeps.py)"]
    return [f"{op.name} ({'jit' if jitted else 'eager'}): "
            + sweeps.mismatches(op, dtype, sweeps.inputs(op, dtype), out, theirs)
            for jitted, out in wrong.items()]


@pytest.mark.parametrize("dtype", sweeps.DTYPES)
def test_sweep_matches_jax(dtype: str) -> None:
    """The rounded results, within their ulp bounds of JAX's."""
    pytest.importorskip("jax")
    ops = _cases(dtype, recorded=False)
    theirs = _theirs(ops, dtype)
    failures = []
    for op in ops:
        problems = {jitted: sweeps.mismatches(op, dtype, sweeps.inputs(op, dtype),
                                              _ours(op, dtype, jitted), theirs[op.name])
                    for jitted in (False, True)}
        if sweeps.known_gap(op, dtype):
            failures += [] if any(problems.values()) else [_gap_closed(op)]
            continue
        failures += [f"{op.name} ({'jit' if jitted else 'eager'}): {problem}"
                     for jitted, problem in problems.items() if problem]
    assert not failures, f"{len(failures)} differences from JAX:\n" + "\n".join(failures)


def test_the_recording_is_of_the_jax_installed() -> None:
    jax = pytest.importorskip("jax")
    assert RECORDED["jax_version"] == jax.__version__


def test_the_recording_covers_every_exact_case() -> None:
    expected = {sweeps.case_id(op, dt) for op, dt in sweeps.cases()
                if sweeps.is_recorded(op.name, dt)}
    assert set(RECORDED["digests"]) == expected


# --- the defects the sweeps found, one by one (each failed before its fix) ---------------------


def test_integer_division_at_the_minimum() -> None:
    assert int(jnp.int8(-128) // 2) == -64
    assert int(jnp.int32(-2**31) // 3) == -715827883
    assert int(minijax.lax.div(jnp.int32(1), jnp.int32(-2**31))) == 0
    assert int(minijax.lax.div(jnp.int8(-128), jnp.int8(-1))) == -128  # wraps, as in XLA
    assert int(minijax.lax.rem(jnp.int8(-128), jnp.int8(-1))) == 0
    q, r = jnp.divmod(jnp.int8(-128), jnp.int8(3))
    assert (int(q), int(r)) == (-43, 1)


@pytest.mark.parametrize("jitted", [False, True])
def test_shifts_out_of_range_and_arithmetic_shifts_of_unsigned(jitted: bool) -> None:
    lax = minijax.lax

    def shifts(x: minijax.Array, y: minijax.Array) -> tuple:
        return (lax.shift_right_arithmetic(x, y), lax.shift_right_logical(x, y),
                lax.shift_left(x, y))

    fun = minijax.jit(shifts) if jitted else shifts
    u = np.array([128, 128, 128], np.uint8), np.array([1, 8, 200], np.uint8)
    assert [np.asarray(v).tolist() for v in fun(*u)] == [[192, 255, 255], [64, 0, 0],
                                                         [0, 0, 0]]
    i = np.array([-128, -128, 64], np.int8), np.array([-1, 9, -3], np.int8)
    assert [np.asarray(v).tolist() for v in fun(*i)] == [[-1, -1, 0], [0, 0, 0], [0, 0, 0]]


@pytest.mark.parametrize("jitted", [False, True])
def test_signs_of_zero(jitted: bool) -> None:
    def zeros(x: minijax.Array) -> tuple:
        pz, nz = x[0], x[1]
        return (jnp.sign(nz), jnp.maximum(pz, nz), jnp.maximum(nz, pz), jnp.minimum(pz, nz),
                jnp.max(x), jnp.min(x[::-1]), jnp.floor_divide(pz, -1.0),
                minijax.lax.round(-0.4 + pz), jnp.clip(nz, 0.0, 1.0))

    fun = minijax.jit(zeros) if jitted else zeros
    signs = [bool(np.signbit(np.asarray(v))) for v in fun(jnp.array([0.0, -0.0]))]
    assert signs == [True, False, False, True, False, True, True, True, False]


@pytest.mark.parametrize("jitted", [False, True])
def test_heaviside_of_nan_and_ldexp_of_zero(jitted: bool) -> None:
    def fun(x: minijax.Array) -> tuple:
        return jnp.heaviside(x * jnp.nan, 0.5), jnp.ldexp(x * 0, 255), jnp.ldexp(x, 128)

    h, zero, big = (minijax.jit(fun) if jitted else fun)(jnp.float32(1.0))
    assert np.isnan(np.asarray(h)) and float(zero) == 0.0 and float(big) == np.inf


@pytest.mark.parametrize("jitted", [False, True])
def test_denormals_are_kept_deliberately(jitted: bool) -> None:
    """JAX on the CPU flushes float32 denormals to zero; minijax keeps IEEE's gradual
    underflow, as NumPy does (chapter 08, "exact numerics", says why)."""

    def fun(x: minijax.Array) -> tuple:
        return x > 0, jnp.log(x), x * 0.5

    positive, log, half = (minijax.jit(fun) if jitted else fun)(jnp.float32(1e-40))
    assert bool(positive) and bool(jnp.float32(1e-45) > 0)
    assert float(log) == pytest.approx(np.log(np.float32(1e-40)), rel=1e-3)  # -92.1
    assert float(half) == pytest.approx(5e-41, rel=1e-2)


def test_jax_flushes_denormals() -> None:
    """The difference pinned above: if this fails, JAX changed, and chapter 08's note too."""
    pytest.importorskip("jax")
    import jax.numpy as jjnp

    assert not bool(jjnp.float32(1e-45) > 0)
    assert float(jjnp.log(jjnp.float32(1e-40))) == -np.inf


def test_compiled_kernels_take_a_constant_operand() -> None:
    """Generated code passes a splat constant as a Python scalar: the max/min/nextafter
    kernels must take it (the sweeps only pass arrays)."""
    fun = minijax.jit(lambda x: (jnp.nextafter(1.0, x), jnp.maximum(0.0, x),
                                 jnp.minimum(x, -0.0)))
    after, high, low = fun(jnp.array([1.0, -0.0]))
    assert np.asarray(after).tolist() == [1.0, float(np.nextafter(np.float32(1), 0))]
    assert np.signbit(np.asarray(high)).tolist() == [False, False]
    assert np.signbit(np.asarray(low)).tolist() == [True, True]


@pytest.mark.parametrize("jitted", [False, True])
def test_cumulative_extrema_order_zeros(jitted: bool) -> None:
    """cummax/cummin keep XLA's order of zeros too (JAX: [-0, 0, 0] and [-0, -0, 0])."""
    lax = minijax.lax

    def fun(x: minijax.Array) -> tuple:
        return lax.cummax(x), lax.cummin(-x, reverse=True)

    high, low = (minijax.jit(fun) if jitted else fun)(jnp.array([-0.0, 0.0, -0.0]))
    assert np.signbit(np.asarray(high)).tolist() == [True, False, False]
    assert np.signbit(np.asarray(low)).tolist() == [True, True, False]


@pytest.mark.parametrize("jitted", [False, True])
def test_scatter_extrema_with_repeated_indices(jitted: bool) -> None:
    """x.at[i].max/min with two updates to one element (the sweeps update each element
    once): +0.0 above -0.0 and NaN wins, in any order; complex numbers as lax.max compares
    them, of equal ones the later update winning (JAX: 0j, 0j, 3, 0j, 0j, 3, then NaN)."""
    def fun(x: minijax.Array, updates: minijax.Array) -> tuple:
        at = x.at[jnp.array([0, 0])]
        return at.max(updates), at.min(updates)

    fun = minijax.jit(fun) if jitted else fun
    high, low = [], []
    for updates in ([0.0, -0.0], [-0.0, 0.0], [np.nan, 1.0], [1.0, np.nan]):
        for first in (0.0, -0.0, 3.0):
            h, lo = fun(jnp.array([first, 5.0]), jnp.array(updates))
            high.append(float(h[0]))
            low.append(float(lo[0]))
    assert [str(v) for v in high] == ["0.0", "0.0", "3.0"] * 2 + ["nan"] * 6
    assert [str(v) for v in low] == ["-0.0"] * 6 + ["nan"] * 6
    h, lo = fun(jnp.array([0j, 5.0]), jnp.array([complex(-0.0, 0.0), complex(0.0, -0.0)]))
    assert np.signbit([h[0].real, h[0].imag, lo[0].real, lo[0].imag]).tolist() == \
        [False, True, False, True]


@pytest.mark.parametrize("jitted", [False, True])
def test_complex_keeps_its_parts(jitted: bool) -> None:
    """lax.complex(x, y) is x + iy with the parts as given (it computed x + 1j * y, whose
    0 * inf and 0 * nan are NaN and whose -0.0 parts became +0.0); conj, built on it under
    jit, keeps the sign of zero parts too. The parts are JAX's."""
    lax = minijax.lax

    def fun(x: minijax.Array, y: minijax.Array) -> tuple:
        z = lax.complex(x, y)
        return z, lax.conj(x), lax.conj(z)

    fun = minijax.jit(fun) if jitted else fun
    z, real_conj, complex_conj = fun(jnp.array([0.0, -0.0, 0.0]),
                                     jnp.array([np.inf, -0.0, np.nan]))
    parts = lambda a: [(repr(float(v.real)), repr(float(v.imag))) for v in np.asarray(a)]
    assert parts(z) == [("0.0", "inf"), ("-0.0", "-0.0"), ("0.0", "nan")]
    assert parts(real_conj) == [("0.0", "0.0"), ("-0.0", "0.0"), ("0.0", "0.0")]
    assert parts(complex_conj) == [("0.0", "-inf"), ("-0.0", "0.0"), ("0.0", "nan")]


@pytest.mark.parametrize("jitted", [False, True])
def test_float_to_64_bit_integers_saturates(jitted: bool) -> None:
    """As to narrower integers (JAX: int64 max, uint64 max, int64 min, 0): the largest
    int64 is no float64, it rounded up to 2**63, out of range (int64 min and 0 came out)."""
    lax = minijax.lax
    with sweeps.x64_for("float64", minijax.config):
        def fun(x: minijax.Array) -> tuple:
            return lax.convert_element_type(x, jnp.int64), lax.convert_element_type(x, jnp.uint64)

        fun = minijax.jit(fun) if jitted else fun
        signed, unsigned = fun(jnp.array([np.inf, 1.8e308, -np.inf, 2.0**63, -1.0]))
        assert np.asarray(signed).tolist() == [2**63 - 1] * 2 + [-2**63, 2**63 - 1, -1]
        assert np.asarray(unsigned).tolist() == [2**64 - 1] * 2 + [0, 2**63, 0]


def _parts(a: minijax.Array) -> list[tuple[str, str]]:
    """The parts of complex numbers as reprs (so that the sign of zero and NaN show)."""
    return [(repr(float(v.real)), repr(float(v.imag))) for v in np.ravel(np.asarray(a))]


@pytest.mark.parametrize("jitted", [False, True])
def test_jnp_takes_complex_numbers_as_jax(jitted: bool) -> None:
    """Comparisons are lexicographic, rounding rounds each part, fmax/fmin pick by the
    comparison and logaddexp wraps its imaginary part (each raised TypeError); the
    values are JAX's."""
    def fun(a: minijax.Array, b: minijax.Array) -> tuple:
        return (a < b, a >= b, jnp.fmax(a, b), jnp.rint(a * 2.5), jnp.round(a * 1.234, 1),
                jnp.logaddexp(a, b))

    less, greater_equal, fmax, rint, rounded, logaddexp = (minijax.jit(fun) if jitted else fun)(
        jnp.array([1 + 2j, 1 - 1j]), jnp.array([1 + 1j, 1 + 1j]))
    assert np.asarray(less).tolist() == [False, True]
    assert np.asarray(greater_equal).tolist() == [True, False]
    assert np.asarray(fmax).tolist() == [1 + 2j, 1 + 1j]
    assert np.asarray(rint).tolist() == [2 + 5j, 2 - 2j]
    assert np.allclose(np.asarray(rounded), [1.2 + 2.5j, 1.2 - 1.2j])
    assert np.allclose(np.asarray(logaddexp), [1.562563 + 1.5000002j, 1.0775207 + 0j])


@pytest.mark.parametrize(("fun", "error", "message"), [
    (lambda z: jnp.fabs(z), TypeError, "ufunc 'fabs' does not support complex dtypes"),
    (lambda z: jnp.hypot(z, z), ValueError, "jnp.hypot is not well defined for complex-valued"),
    (lambda z: jnp.signbit(z), ValueError, "jax.numpy.signbit is not well defined for complex64"),
    (lambda z: jnp.copysign(z, z), TypeError, "copysign does not support complex-valued inputs"),
], ids=["fabs", "hypot", "signbit", "copysign"])
def test_jnp_refuses_complex_numbers_as_jax(fun, error, message) -> None:
    """fabs and hypot took the magnitude of complex numbers; signbit and copysign failed
    in a bitcast with a message of minijax's own."""
    with pytest.raises(error, match=message):
        fun(jnp.array([1 + 2j]))


def test_erf_inv_and_digamma_in_float64() -> None:
    """Next to 1, erf_inv solves erfc(x) = 1 - y (erf(x) - y kept no digit: 5.8729);
    next to a pole, digamma's reflection takes tan(π(x - n)) (5.8636 and 4.5e15 are
    JAX's and the true values)."""
    with sweeps.x64_for("float64", minijax.config):
        assert float(minijax.lax.erf_inv(1 - 2**-53)) == pytest.approx(5.863584748755168,
                                                                        rel=1e-15)
        assert float(minijax.lax.digamma(-1 - 2**-52)) == pytest.approx(4503599627370496.4,
                                                                         rel=1e-15)


@pytest.mark.parametrize("jitted", [False, True])
def test_complex_formulas_of_xla(jitted: bool) -> None:
    """XLA's complex sqrt and arccos ignore the sign of a zero imaginary part (NumPy's
    sqrt(-1-0j) is -1j), arcsinh that of a zero real part; a complex zero divides part by
    part by its real part (NumPy: nan+infj); 0 ** (1+1j) is NaN (NumPy: 0); clamp compares
    real parts only (lexicographically: 1). The values are JAX's."""
    lax = minijax.lax

    def fun(z: minijax.Array, zero: minijax.Array) -> tuple:
        return (jnp.sqrt(z), jnp.arccos(z), jnp.arcsinh(z), lax.div(z[1], zero),
                lax.integer_pow(zero, -1), lax.pow(zero * 0, z[1] + 1),
                lax.clamp(z[0] * 0 - 1, z[1] * 5 + 1, z[0] * 0 + 1))

    sqrt, acos, asinh, div, reciprocal, power, clamped = (minijax.jit(fun) if jitted else fun)(
        jnp.array([complex(-1, -0.0), 1j], jnp.complex64), jnp.complex64(complex(-0.0, 0.0)))
    assert _parts(sqrt) == [("0.0", "1.0"), ("0.7071067690849304", "0.7071067690849304")]
    assert _parts(acos)[0] == ("3.1415927410125732", "-0.0")
    assert _parts(asinh)[0] == ("-0.8813736438751221", "-0.0")
    assert _parts(div) == [("nan", "-inf")]
    assert _parts(reciprocal) == [("-inf", "nan")]
    assert _parts(power) == [("nan", "nan")]
    assert complex(clamped) == 1 + 5j


def test_bitcast_of_booleans_is_refused_as_in_jax() -> None:
    """bool to uint8 gave the bits; JAX refuses bool and complex unless nothing changes."""
    lax = minijax.lax
    with pytest.raises(TypeError, match=r"does not support bool or complex values unless the "
                       r"operand and destination types match. Got operand dtype=bool, "
                       r"new_dtype=dtype\('uint8'\)"):
        lax.bitcast_convert_type(jnp.array([True]), np.uint8)
    assert np.asarray(lax.bitcast_convert_type(jnp.array([True]), np.bool_)).tolist() == [True]


@pytest.mark.parametrize("jitted", [False, True])
def test_complex_trigonometry_overflow_as_xla(jitted: bool) -> None:
    """Of complex64 numbers, XLA's sin, cos, expm1, sinh and cosh multiply the parts'
    functions, a zero factor giving a zero part (NumPy's C functions: nan+infj for
    sin(100j), inf+nanj for expm1(100+0j) and sinh(100+0j), a finite real part of
    sin(pi+100j)); sinh and cosh scale an overflowing cosh (imaginary part of
    sinh(100+pi j): -1.2e36, not -inf). The values are JAX's; the signs of zero parts are
    not compared (the sweeps compare rounded results modulo them)."""
    def fun(z: minijax.Array) -> tuple:
        return jnp.sin(z[:2]), jnp.cos(z[:2]), jnp.expm1(z[2]), jnp.sinh(z[2:]), jnp.cosh(z[2])

    sin, cos, expm1, sinh, cosh = (minijax.jit(fun) if jitted else fun)(
        jnp.array([100j, np.pi + 100j, 100 + 0j, 100 + np.pi * 1j], jnp.complex64))
    inf = np.inf
    assert np.asarray(sin).tolist() == [complex(0, inf), complex(-inf, -inf)]
    assert np.asarray(cos).tolist() == [complex(inf, 0), complex(-inf, inf)]
    assert complex(expm1) == complex(cosh) == complex(inf, 0)
    assert complex(sinh[0]) == complex(inf, 0)
    assert complex(sinh[1]).real == -inf
    assert complex(sinh[1]).imag == pytest.approx(-1.17501505e36, rel=1e-6)


@pytest.mark.parametrize("jitted", [False, True])
def test_complex_pow_and_atan2_as_xla(jitted: bool) -> None:
    """Where complex64 pow is ill-conditioned ((1+1j) ** 100 has the imaginary part 0 in
    exact arithmetic; q = 100 θ is large) and on atan2's branch cut (its real part is
    +-pi by the sign of a rounding error), only XLA's steps with XLA's roundings give
    JAX's answer: minijax gave 6.9e9 (NumPy's float32 atan2(1, 1) is an ulp below pi/4),
    and +pi or 3.1415927 with the wrong sign. The values are JAX's."""
    lax = minijax.lax
    c64 = jnp.complex64

    def fun(z: minijax.Array, y: minijax.Array, p: minijax.Array, q: minijax.Array) -> tuple:
        return lax.pow(z, y), lax.atan2(p, q)

    power, angle = (minijax.jit(fun) if jitted else fun)(
        jnp.array([1 + 1j, np.pi, -1.5j], c64), jnp.array([100, 100j, 100 + 1j], c64),
        jnp.array([0j, 0j, 1 + 1j], c64), jnp.array([-1 - 1.5j, -1.5 + np.pi * 1j, -1 + 1j], c64))
    assert _parts(power) == [("-1125897960685568.0", "-1655423360.0"),
                             ("0.19391128420829773", "0.9810190796852112"),
                             ("1.7971880394835886e+18", "7.714188698761298e+17")]
    assert _parts(angle) == [("-3.141592502593994", "-1.1920928244535389e-07"),
                             ("3.141592502593994", "0.0"), ("nan", "-inf")]
    with sweeps.x64_for("complex128", minijax.config):
        angle = (minijax.jit(lax.atan2) if jitted else lax.atan2)(
            jnp.zeros(2, jnp.complex128), jnp.array([-1 - 1.5j, -1 + np.pi * 1j]))
        assert _parts(angle) == [("-3.141592653589793", "-2.2204460492503128e-16"),
                                 ("-3.141592653589793", "-0.0")]
