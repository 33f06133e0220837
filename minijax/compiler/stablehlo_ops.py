"""Every StableHLO op minijax knows, and its properties: one row per op, one table.

The parser and printer (``stablehlo.py``), the passes, the NumPy backend and the cost
analysis all read :data:`OPS` when they meet an op, so adding an elementwise op is one
row here (and, for the NumPy backend, a NumPy ufunc or a kernel that computes it).
The table imports nothing from minijax: every module of the compiler may read it.

The columns (:class:`OpInfo`):

* ``syntax``: how the text spells the op. ``same``, ``functional``, ``result`` and
  ``chlo`` are the pretty form ``name %a, %b, key = value : <signature>`` with its
  signature: ``same`` is one type if every operand and result has it (else functional),
  ``functional`` always ``(A, B) -> R``, ``result`` just the result type, ``chlo``
  ``A, B -> R`` without parentheses. ``generic`` is MLIR's generic form
  ``"name"(operands) <{attributes}> ({regions}) : type``; ``custom`` ops have a parser
  and a printer of their own in ``stablehlo.py``.
* ``keywords``: the attributes the pretty form prints after the operands, in order.
* ``elementwise``: each output element depends only on the operands' elements at the
  same position (the passes fold such ops on splat constants and fuse them).
* ``numpy``: the NumPy ufunc that computes the op with XLA's semantics, except for the
  dtype kinds of ``kernel_kinds``; ``kernel``: the NumPy backend's kernel (a key of
  ``numpy_backend.KERNELS``) for those kinds, or for every dtype when there is no ufunc.
  Elementwise ops with neither (``convert``, ``select``...) are written by hand.
* ``cost``: what XLA's cost analysis counts per op: ``flop`` (one per output element),
  ``transcendental`` (one transcendental per element), ``data`` (only the bytes moved)
  or ``none`` (nothing at all).
* ``commutative``: the operands may be swapped without changing a bit of the result.
* ``identity``: for a reduction, the value it starts from (``-1`` is all bits set,
  ``True`` for booleans); ``lowest``/``highest`` are the dtype's extremes (-inf/inf).
* ``pure``: the results depend on the operands only (no callback, not a terminator).
"""

from __future__ import annotations

from typing import Any, NamedTuple

FLOP, TRANSCENDENTAL, DATA, NONE = "flop", "transcendental", "data", "none"


class OpInfo(NamedTuple):
    """One row of :data:`OPS` (the columns are described in the module docstring)."""

    syntax: str = "same"
    keywords: tuple[str, ...] = ()
    elementwise: bool = False
    numpy: str = ""
    kernel: str = ""
    kernel_kinds: str = ""
    cost: str = FLOP
    commutative: bool = False
    identity: Any = None
    pure: bool = True


def _elementwise(numpy: str = "", kernel: str = "", kernel_kinds: str = "",
                 **columns: Any) -> OpInfo:
    return OpInfo(elementwise=True, numpy=numpy, kernel=kernel, kernel_kinds=kernel_kinds,
                  **columns)


def _math(numpy: str = "", kernel: str = "", syntax: str = "same") -> OpInfo:
    """A transcendental function (exp, sin, ...)."""
    return _elementwise(numpy, kernel, syntax=syntax, cost=TRANSCENDENTAL)


def _data(syntax: str = "functional", keywords: tuple[str, ...] = (), cost: str = DATA
          ) -> OpInfo:
    """An op that moves data and computes nothing."""
    return OpInfo(syntax, keywords, cost=cost)


OPS: dict[str, OpInfo] = {
    # -- elementwise arithmetic and logic -----------------------------------------------
    "stablehlo.add": _elementwise("add", commutative=True, identity=0),
    "stablehlo.subtract": _elementwise("subtract"),
    "stablehlo.multiply": _elementwise("multiply", commutative=True, identity=1),
    "stablehlo.divide": _elementwise("divide", "k_div", "iuc"),
    "stablehlo.remainder": _elementwise("fmod", "k_rem", "iu"),
    "stablehlo.maximum": _elementwise("maximum", "k_max", "fV", commutative=True,
                                      identity="lowest"),
    "stablehlo.minimum": _elementwise("minimum", "k_min", "fV", commutative=True,
                                      identity="highest"),
    "stablehlo.and": _elementwise("bitwise_and", commutative=True, identity=-1),
    "stablehlo.or": _elementwise("bitwise_or", commutative=True, identity=0),
    "stablehlo.xor": _elementwise("bitwise_xor", commutative=True, identity=0),
    "stablehlo.not": _elementwise("invert"),
    "stablehlo.negate": _elementwise("negative"),
    "stablehlo.abs": _elementwise("absolute"),
    "stablehlo.sign": _elementwise("sign", "k_sign", "fV"),
    "stablehlo.floor": _elementwise("floor"),
    "stablehlo.ceil": _elementwise("ceil"),
    "stablehlo.round_nearest_even": _elementwise("rint"),
    "stablehlo.round_nearest_afz": _elementwise(kernel="k_round"),
    "stablehlo.is_finite": _elementwise("isfinite"),
    "stablehlo.popcnt": _elementwise(kernel="k_popcnt"),
    "stablehlo.count_leading_zeros": _elementwise(kernel="k_clz"),
    "stablehlo.shift_left": _elementwise(kernel="k_shift_left"),
    "stablehlo.shift_right_logical": _elementwise(kernel="k_shift_right_logical"),
    "stablehlo.shift_right_arithmetic": _elementwise(kernel="k_shift_right_arithmetic"),
    "stablehlo.compare": _elementwise(syntax="custom"),
    "stablehlo.select": _elementwise(syntax="custom"),
    "stablehlo.clamp": _elementwise(),
    "stablehlo.convert": _elementwise(),
    "stablehlo.bitcast_convert": _elementwise(cost=DATA),
    "stablehlo.reduce_precision": _elementwise(keywords=("format",)),
    "stablehlo.complex": _elementwise(kernel="k_complex", syntax="result"),
    "stablehlo.real": _elementwise(cost=DATA),
    "stablehlo.imag": _elementwise(cost=DATA),
    "chlo.square": _elementwise("square", syntax="chlo"),
    "chlo.next_after": _elementwise("nextafter", "k_nextafter", "fV", syntax="chlo"),
    "chlo.erf": _elementwise(kernel="k_erf", syntax="chlo"),
    "chlo.erfc": _elementwise(kernel="k_erfc", syntax="chlo"),
    "chlo.erf_inv": _elementwise(kernel="k_erf_inv", syntax="chlo"),
    "chlo.lgamma": _elementwise(kernel="k_lgamma", syntax="chlo"),
    "chlo.digamma": _elementwise(kernel="k_digamma", syntax="chlo"),
    # -- transcendental functions -------------------------------------------------------
    "stablehlo.exponential": _math("exp"),
    "stablehlo.exponential_minus_one": _elementwise("expm1", "k_expm1", "c", cost=TRANSCENDENTAL),
    "stablehlo.log": _math("log"),
    "stablehlo.log_plus_one": _math("log1p"),
    "stablehlo.logistic": _math(kernel="k_logistic"),
    "stablehlo.sqrt": _elementwise("sqrt", "k_sqrt", "c", cost=TRANSCENDENTAL),
    "stablehlo.rsqrt": _math(kernel="k_rsqrt"),
    "stablehlo.cbrt": _math("cbrt"),
    "stablehlo.power": _elementwise("power", "k_pow", "c", cost=TRANSCENDENTAL),
    "stablehlo.sine": _elementwise("sin", "k_sin", "c", cost=TRANSCENDENTAL),
    "stablehlo.cosine": _elementwise("cos", "k_cos", "c", cost=TRANSCENDENTAL),
    "stablehlo.tan": _math("tan"),
    "stablehlo.tanh": _math("tanh"),
    "stablehlo.atan2": _elementwise("arctan2", "k_atan2", "c", cost=TRANSCENDENTAL),
    "chlo.asin": _elementwise("arcsin", "k_asin", "c", syntax="chlo", cost=TRANSCENDENTAL),
    "chlo.acos": _elementwise("arccos", "k_acos", "c", syntax="chlo", cost=TRANSCENDENTAL),
    "chlo.atan": _math("arctan", syntax="chlo"),
    "chlo.sinh": _elementwise("sinh", "k_sinh", "c", syntax="chlo", cost=TRANSCENDENTAL),
    "chlo.cosh": _elementwise("cosh", "k_cosh", "c", syntax="chlo", cost=TRANSCENDENTAL),
    "chlo.asinh": _elementwise("arcsinh", "k_asinh", "c", syntax="chlo", cost=TRANSCENDENTAL),
    "chlo.acosh": _elementwise("arccosh", "k_acosh", "c", syntax="chlo", cost=TRANSCENDENTAL),
    "chlo.atanh": _math("arctanh", syntax="chlo"),
    # -- data movement ------------------------------------------------------------------
    "stablehlo.constant": _data("custom", cost=NONE),
    "stablehlo.iota": _data("result", ("dim",)),
    "stablehlo.broadcast_in_dim": _data(keywords=("dims",)),
    "stablehlo.reshape": _data(),
    "stablehlo.transpose": _data(keywords=("dims",), cost=NONE),
    "stablehlo.reverse": _data("same", ("dims",)),
    "stablehlo.slice": _data("custom"),
    "stablehlo.dynamic_slice": _data(keywords=("sizes",)),
    "stablehlo.dynamic_update_slice": _data(),
    "stablehlo.concatenate": _data(keywords=("dim",)),
    "stablehlo.pad": _data(keywords=("low", "high", "interior")),
    "stablehlo.gather": _data("generic"),
    "stablehlo.scatter": _data("generic"),
    # -- products, reductions, sorting (their cost is counted by code of their own) ----
    "stablehlo.dot_general": OpInfo(
        "functional", ("batching_dims", "contracting_dims", "precision")),
    "stablehlo.reduce": _data("custom"),
    "stablehlo.reduce_window": _data("generic"),
    "stablehlo.sort": _data("generic"),
    "chlo.top_k": _data("custom"),
    # -- control flow, calls, effects ---------------------------------------------------
    "func.call": _data("custom", cost=NONE),
    "func.return": OpInfo("custom", cost=NONE, pure=False),
    "stablehlo.return": OpInfo("custom", cost=NONE, pure=False),
    "stablehlo.while": _data("custom", cost=NONE),
    "stablehlo.case": _data("generic", cost=NONE),
    "stablehlo.custom_call": OpInfo("custom", cost=DATA, pure=False),
    "minijax.fusion": OpInfo("generic"),  # made by passes.fuse_elementwise
}

PRETTY_SYNTAXES = ("same", "functional", "result", "chlo")
