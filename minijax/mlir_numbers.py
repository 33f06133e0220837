"""Numbers printed as MLIR prints them, for StableHLO text equal to JAX's.

A float constant in MLIR's text is LLVM's ``APFloat::toString`` of it: six significant
digits (``1.000000e+00``) if those read back to the same bits, else the shortest
decimal that does (``0.693147182``), else the bits in hex (``0x7FC00000``, a NaN). A
dense constant prints one element if all are equal (a *splat*), nested lists otherwise,
and raw bytes beyond 100 elements. ``compiler/stablehlo_ir.py`` prints with these, and
the backends ask :func:`is_splat` of the constants they read back.

This module needs only NumPy and ``ml_dtypes``: it sits with the utilities, below
everything in minijax.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np


def _float_parts(x: np.ndarray) -> tuple[bool, int, int, int] | None:
    """(negative, significand, binary exponent, precision bits) of a finite float scalar,
    as LLVM's APFloat stores it; None for infinities and NaNs."""
    finfo = ml_dtypes.finfo(x.dtype)
    nmant, bits = finfo.nmant, 8 * x.dtype.itemsize
    raw = int(x.view(f"u{x.dtype.itemsize}"))
    negative = bool(raw >> (bits - 1))
    exp_bits = (raw >> nmant) & ((1 << (bits - 1 - nmant)) - 1)
    frac = raw & ((1 << nmant) - 1)
    if exp_bits == (1 << (bits - 1 - nmant)) - 1:
        return None
    bias = (1 << (bits - 2 - nmant)) - 1
    if exp_bits == 0:
        return negative, frac, 1 - bias - nmant, nmant + 1
    return negative, frac | (1 << nmant), exp_bits - bias - nmant, nmant + 1


def _round_digits(digits: str, exp: int, precision: int) -> tuple[str, int]:
    """Keep ``precision`` significant decimal digits, rounding half up on the first
    dropped digit (``digits`` most significant first, value = digits * 10**exp)."""
    if len(digits) <= precision:
        return digits, exp
    dropped = len(digits) - precision
    kept, exp = digits[:precision], exp + dropped
    if digits[precision] >= "5":
        rounded = str(int(kept) + 1)
        if len(rounded) > precision:  # carried all the way: 999 -> 1000
            return "1", exp + precision
        kept = rounded
    stripped = kept.rstrip("0")
    return stripped, exp + len(kept) - len(stripped)


def _apfloat_string(parts: tuple[bool, int, int, int], precision: int, max_padding: int,
                    truncate_zero: bool) -> str:
    """A port of ``APFloat::toString``: the digits of ``significand * 2**exp``, rounded
    to ``precision`` digits (0: enough to round-trip), in plain or scientific notation."""
    negative, significand, exp, bits = parts
    sign = "-" if negative else ""
    if precision == 0:
        precision = 2 + bits * 59 // 196
    if significand == 0:
        if max_padding:
            return sign + "0"
        return sign + ("0.0E+0" if truncate_zero else "0." + "0" * precision + "e+00")
    trailing = (significand & -significand).bit_length() - 1
    significand >>= trailing
    exp += trailing
    if exp >= 0:  # an integer: shift it out
        significand <<= exp
        exp = 0
    else:  # N * 2**-e == N * 5**e * 10**-e
        significand *= 5 ** -exp
    # Drop decimal digits far beyond the precision by truncation, as LLVM does.
    required = (precision * 196 + 58) // 59
    if significand.bit_length() > required:
        tens = (significand.bit_length() - required) * 59 // 196
        significand //= 10 ** tens
        exp += tens
    digits = str(significand)
    stripped = digits.rstrip("0")
    digits, exp = _round_digits(stripped, exp + len(digits) - len(stripped), precision)
    n = len(digits)
    if not max_padding:
        scientific = True
    elif exp >= 0:
        scientific = exp > max_padding or n + exp > precision
    else:
        msd = exp + n - 1
        scientific = msd < 0 and -msd > max_padding
    if scientific:
        exp10 = exp + n - 1
        mantissa = digits[0] + "." + ("0" if n == 1 and truncate_zero else digits[1:])
        if not truncate_zero:
            mantissa += "0" * (precision - n + 1)
        exponent = f"{abs(exp10):02d}" if not truncate_zero else str(abs(exp10))
        return f"{sign}{mantissa}{'E' if truncate_zero else 'e'}{'+' if exp10 >= 0 else '-'}" \
               f"{exponent}"
    if exp >= 0:
        return sign + digits + "0" * exp
    whole = exp + n
    if whole > 0:
        return sign + digits[:whole] + "." + digits[whole:]
    return sign + "0." + "0" * -whole + digits


def _hex_bits(x: np.ndarray) -> str:
    return f"0x{int(x.view(f'u{x.dtype.itemsize}')):0{2 * x.dtype.itemsize}X}"


def format_float(x: np.ndarray) -> str:
    """How MLIR prints one float element: ``1.000000e+00`` if six digits round-trip,
    else the shortest form that does (``0.693147182``), else the bits (``0x7FC00000``)."""
    parts = _float_parts(x)
    if parts is not None:
        text = _apfloat_string(parts, 6, 0, False)
        back = np.asarray(float(text)).astype(x.dtype)
        if back.view(f"u{x.dtype.itemsize}") == x.view(f"u{x.dtype.itemsize}"):
            return text
        text = _apfloat_string(parts, 0, 3, True)
        if "." in text:
            return text
    return _hex_bits(x)


def _format_element(x: np.ndarray) -> str:
    kind = x.dtype.kind
    if kind == "b":
        return "true" if x else "false"
    if kind in "iu":
        return str(int(x))
    if kind == "c":
        return f"({format_float(x.real)},{format_float(x.imag)})"
    return format_float(x)


def is_splat(value: np.ndarray) -> bool:
    """Whether all elements have the same bits (MLIR prints such a constant as one
    element; NumPy can use it as a scalar)."""
    if value.size == 0:
        return False
    flat = np.ascontiguousarray(value).reshape(-1)
    raw = flat.view(f"u{value.dtype.itemsize}") if value.dtype.kind != "c" \
        else flat.view(f"u{value.dtype.itemsize // 2}").reshape(-1, 2)
    return bool((raw == raw[0]).all())


def format_dense(value: np.ndarray) -> str:
    """``dense<...>``: one element if all are equal (a *splat*), nested lists otherwise,
    raw little-endian bytes in hex beyond 100 elements (as MLIR prints them)."""
    if value.size == 0:
        return "dense<>"
    flat = value.reshape(-1)
    if is_splat(value):
        return f"dense<{_format_element(flat[0])}>"
    if value.size > 100:
        return f'dense<"0x{np.ascontiguousarray(value).tobytes().hex().upper()}">'

    def nested(x: np.ndarray) -> str:
        if x.ndim == 0:
            return _format_element(x)
        return "[" + ", ".join(nested(row) for row in x) + "]"

    return f"dense<{nested(value)}>"
