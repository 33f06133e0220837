"""The mini-XLA: StableHLO text in, a Python function calling NumPy out.

``compile(text)`` is what a real compiler does, in miniature:

1. **parse** the text into the graph IR (``stablehlo.parse_module``);
2. **optimise** it with the passes of ``passes.py`` (inlining, CSE, constant folding,
   dead-code elimination, elementwise fusion);
3. **generate code**: one Python function per StableHLO function, one statement per
   op (a fusion is one NumPy expression; a ``while`` is a Python ``while``, a ``case``
   an ``if``/``elif``), then ``exec`` the source once.

The result is an :class:`Executable`: call it on NumPy arrays; ``as_text()`` shows the
generated source. The generated code keeps XLA's semantics where NumPy's differ
(integer division, float-to-int conversion, rounding, out-of-bounds gathers...) by
calling the NumPy kernels of minijax's primitives (``k_div`` is ``lax.div_p.impl``).
"""

from __future__ import annotations

import builtins
import math
from collections.abc import Callable, Sequence
from typing import Any

import ml_dtypes
import numpy as np

from minijax import lax
from minijax.compiler import jit_primitive, lowering, passes
from minijax.compiler.stablehlo import parse_module, walk_ops
from minijax.compiler.stablehlo_ir import (
    Block,
    Func,
    Module,
    Op,
    TensorType,
    Value,
    compact_reduce_body,
    print_module,
    value_names,
)
from minijax.compiler.stablehlo_ops import OPS, OpInfo
from minijax.core import ShapedArray
from minijax.lax import linalg as lax_linalg
from minijax.lax import reductions as lax_reductions
from minijax.lax import slicing as lax_slicing
from minijax.lax import sorting as lax_sorting
from minijax.lax.slicing import GatherDimensionNumbers, GatherScatterMode, ScatterDimensionNumbers
from minijax.mlir_numbers import is_splat

# ---------------------------------------------------------------------------------------
# Run-time helpers the generated code calls (XLA semantics on NumPy arrays)
# ---------------------------------------------------------------------------------------

# Kernels of minijax primitives, by the names generated code uses for them.
KERNELS: dict[str, Callable[..., Any]] = {
    "k_div": lax.div_p.impl, "k_rem": lax.rem_p.impl, "k_round": lax.round_p.impl,
    "k_rsqrt": lax.rsqrt_p.impl, "k_logistic": lax.logistic_p.impl,
    "k_popcnt": lax.population_count_p.impl, "k_shift_left": lax.shift_left_p.impl,
    "k_shift_right_logical": lax.shift_right_logical_p.impl,
    "k_shift_right_arithmetic": lax.shift_right_arithmetic_p.impl,
    "k_complex": lax.complex_p.impl, "k_convert": lax.convert_element_type_p.impl,
    "k_pad": lax.pad_p.impl, "k_dynamic_slice": lax.dynamic_slice_p.impl,
    "k_dynamic_update_slice": lax.dynamic_update_slice_p.impl,
    "k_gather": lax.gather_p.impl, "k_sort": lax.sort_p.impl, "k_top_k": lax.top_k_p.impl,
    "k_dot_general": lax.dot_general_p.impl, "k_scatter": lax_slicing._scatter_kernel,
    "k_triangular_solve": lax_linalg.triangular_solve_p.impl, "k_lu": lax_linalg.lu_p.impl,
    "k_cholesky": lax_linalg.cholesky_p.impl, "k_atan2": lax.atan2_p.impl,
    "k_clz": lax.clz_p.impl, "k_erf": lax.erf_p.impl, "k_erfc": lax.erfc_p.impl,
    "k_erf_inv": lax.erf_inv_p.impl, "k_lgamma": lax.lgamma_p.impl,
    "k_digamma": lax.digamma_p.impl, "k_reduce_precision": lax.reduce_precision_p.impl,
    "k_sign": lax.sign_p.impl, "k_max": lax.max_p.impl, "k_min": lax.min_p.impl,
    "k_nextafter": lax.nextafter_p.impl, "k_extreme": lax_reductions.reduce_extreme,
    "k_accumulate_extreme": lax_reductions.accumulate_extreme,
    "k_sqrt": lax.sqrt_p.impl, "k_asin": lax.asin_p.impl, "k_acos": lax.acos_p.impl,
    "k_asinh": lax.asinh_p.impl, "k_acosh": lax.acosh_p.impl, "k_pow": lax.pow_p.impl,
    "k_clamp": lax.clamp_p.impl, "k_expm1": lax.expm1_p.impl, "k_sin": lax.sin_p.impl,
    "k_cos": lax.cos_p.impl, "k_sinh": lax.sinh_p.impl, "k_cosh": lax.cosh_p.impl,
}


def iota(dtype: np.dtype, shape: tuple[int, ...], dim: int) -> np.ndarray:
    """``stablehlo.iota``: 0, 1, 2, ... along ``dim``."""
    return lax.iota_p.impl(dtype=dtype, shape=shape, dimension=dim, sharding=None)


def total_order(x: np.ndarray) -> np.ndarray:
    """Floats as integers ordered like IEEE's total order (for ``TOTALORDER`` compares)."""
    return lax_sorting._total_order(np.asarray(x))


def _index_vectors_last(indices: np.ndarray, index_vector_dim: int) -> np.ndarray:
    """minijax's kernels read index vectors along the last dimension."""
    if index_vector_dim == indices.ndim:
        return indices[..., None]
    return np.moveaxis(indices, index_vector_dim, -1)


def gather(x: np.ndarray, indices: np.ndarray, dims: GatherDimensionNumbers,
           slice_sizes: tuple[int, ...], index_vector_dim: int) -> np.ndarray:
    """``stablehlo.gather``: windows that do not fit are moved inside (XLA clamps)."""
    indices = _index_vectors_last(indices, index_vector_dim)
    return KERNELS["k_gather"](x, indices, dimension_numbers=dims, slice_sizes=slice_sizes,
                               unique_indices=False, indices_are_sorted=False,
                               mode=GatherScatterMode.CLIP, fill_value=None)


def scatter(x: np.ndarray, indices: np.ndarray, updates: np.ndarray,
            dims: ScatterDimensionNumbers, index_vector_dim: int,
            combine: Callable[..., Any] | None, region: Callable[..., Any] | None
            ) -> np.ndarray:
    """``stablehlo.scatter``: updates whose window does not fit are dropped (as XLA
    does); ``combine`` is a NumPy ``ufunc.at`` (None: the update replaces the old
    value), or ``region`` combines old and new values one update at a time."""
    indices = _index_vectors_last(indices, index_vector_dim)
    if region is not None:
        combine = lambda target, index, values: _combine_one_by_one(region, target, index,
                                                                    values)
    return KERNELS["k_scatter"](combine, x, indices, updates, dimension_numbers=dims,
                                indices_are_sorted=False, unique_indices=False,
                                mode=GatherScatterMode.FILL_OR_DROP, update_jaxpr=None,
                                update_consts=())


def _combine_one_by_one(region: Callable, target: np.ndarray, index: tuple,
                        values: np.ndarray) -> None:
    """``target[i] = region(target[i], u)`` for every update in order (slow, general)."""
    flat = np.ravel_multi_index(np.broadcast_arrays(*index), target.shape).reshape(-1)
    values = values.reshape(-1)
    out = target.reshape(-1)
    for k in range(len(flat)):
        (out[flat[k]],) = region(out[flat[k]], values[k])


def reduce_generic(inputs: Sequence[np.ndarray], inits: Sequence[np.ndarray],
                   dims: tuple[int, ...], body: Callable[..., Any]) -> list[np.ndarray]:
    """``stablehlo.reduce`` with any body: fold the reduced elements in one at a time,
    vectorised over the output elements (the body is elementwise)."""
    rank = inputs[0].ndim
    kept = [d for d in range(rank) if d not in dims]
    out_shape = tuple(inputs[0].shape[d] for d in kept)
    flat = [np.transpose(x, (*dims, *kept)).reshape(-1, *out_shape) for x in inputs]
    accs = [np.broadcast_to(init, out_shape) for init in inits]
    for k in range(flat[0].shape[0]):
        accs = list(body(*accs, *(x[k] for x in flat)))
    return [np.asarray(a, dtype=x.dtype).copy() for a, x in zip(accs, inputs)]


def reduce_window_generic(x: np.ndarray, init: Any, window: tuple[int, ...],
                          strides: tuple[int, ...], padding: np.ndarray,
                          body: Callable[..., Any]) -> np.ndarray:
    """``stablehlo.reduce_window`` (no dilation): pad with ``init``, then combine the
    strided slices at each offset within the window."""
    padded = np.pad(x, [tuple(p) for p in padding], constant_values=init)
    out_shape = tuple((n - w) // s + 1 for n, w, s in zip(padded.shape, window, strides))
    acc = np.full(out_shape, init, dtype=x.dtype)
    for offset in np.ndindex(*window):
        box = tuple(slice(o, o + s * (n - 1) + 1, s)
                    for o, s, n in zip(offset, strides, out_shape))
        acc = np.asarray(body(acc, padded[box])[0], dtype=x.dtype)
    return acc


def sort_generic(operands: Sequence[np.ndarray], dimension: int,
                 less: Callable[..., Any]) -> list[np.ndarray]:
    """``stablehlo.sort`` with any comparator: a stable merge sort of each row."""
    moved = [np.moveaxis(x, dimension, -1) for x in operands]
    order = np.empty(moved[0].shape, np.int64)
    for row in np.ndindex(*moved[0].shape[:-1]):
        keys = [x[row] for x in moved]

        def before(i: int, j: int, keys: list = keys) -> bool:
            return bool(less(*(v for k in keys for v in (k[i], k[j])))[0])

        order[row] = _merge_sort(list(range(moved[0].shape[-1])), before)
    return [np.moveaxis(np.take_along_axis(x, order, axis=-1), -1, dimension) for x in moved]


def _merge_sort(items: list[int], before: Callable[[int, int], bool]) -> list[int]:
    if len(items) <= 1:
        return items
    mid = len(items) // 2
    left, right = _merge_sort(items[:mid], before), _merge_sort(items[mid:], before)
    out = []
    while left and right:
        out.append(right.pop(0) if before(right[0], left[0]) else left.pop(0))
    return out + left + right


# --- LAPACK custom calls (what XLA's CPU runtime would call), with np.linalg ----------


def _matrices(x: np.ndarray) -> np.ndarray:
    return x.reshape(-1, *x.shape[-2:])


def lapack_potrf(x: np.ndarray) -> list[np.ndarray]:
    """Cholesky factor (lower) and info (nonzero where the matrix is not positive)."""
    factor = KERNELS["k_cholesky"](x)
    info = np.isnan(_matrices(factor)).any(axis=(1, 2)).astype(np.int32)
    return [factor, info.reshape(x.shape[:-2])]


def lapack_syevd(x: np.ndarray, lower: bool) -> list[np.ndarray]:
    w, v = np.linalg.eigh(x, UPLO="L" if lower else "U")
    info = np.zeros(x.shape[:-2], np.int32)
    return [v.astype(x.dtype), w.astype(np.real(x[..., :1, :1]).dtype), info]


def lapack_geqrf(x: np.ndarray) -> list[np.ndarray]:
    """Householder QR in LAPACK's packed form: R on and above the diagonal, the
    reflectors below it, and their scale factors ``tau``."""
    packed, taus = [], []
    for m in _matrices(x):
        h, tau = np.linalg.qr(m.astype(np.result_type(m, np.float64)), mode="raw")
        packed.append(h.T.astype(x.dtype))
        taus.append(tau.astype(x.dtype))
    k = min(x.shape[-2:])
    return [np.stack(packed).reshape(x.shape) if packed else x.copy(),
            np.stack(taus).reshape(*x.shape[:-2], k) if taus else
            np.zeros((*x.shape[:-2], k), x.dtype)]


def lapack_orgqr(packed: np.ndarray, taus: np.ndarray) -> np.ndarray:
    """Q = H_1 H_2 ... H_k from the reflectors v_i (unit diagonal) and ``tau``."""
    out = []
    m, n = packed.shape[-2:]
    for a, tau in zip(_matrices(packed), taus.reshape(-1, taus.shape[-1])):
        q = np.eye(m, n, dtype=np.result_type(a, np.float64))
        for i in reversed(range(len(tau))):
            v = np.concatenate([np.zeros(i), [1.0], a[i + 1:, i]]).astype(q.dtype)
            q -= tau[i] * np.outer(v, v.conj() @ q)
        out.append(q.astype(packed.dtype))
    return np.stack(out).reshape(packed.shape) if out else packed.copy()


def lapack_gesdd(x: np.ndarray, mode: str) -> list[np.ndarray]:
    real = np.real(x[..., :1, :1]).dtype
    if mode == "N":
        s = np.linalg.svd(x, compute_uv=False)
        m, n = x.shape[-2:]
        u = np.zeros((*x.shape[:-2], m, m), x.dtype)
        vt = np.zeros((*x.shape[:-2], n, n), x.dtype)
    else:
        u, s, vt = np.linalg.svd(x, full_matrices=mode == "A")
    info = np.zeros(x.shape[:-2], np.int32)
    return [x, s.astype(real), u.astype(x.dtype), vt.astype(x.dtype), info]


def lapack_getrf(x: np.ndarray) -> list[np.ndarray]:
    """LU with partial pivoting; pivots are 1-based, as LAPACK returns them."""
    lu, pivots, _ = KERNELS["k_lu"](x)
    return [lu, pivots + 1, np.zeros(x.shape[:-2], np.int32)]


def lapack_trsm(a: np.ndarray, b: np.ndarray, side: str, uplo: str, trans: str, diag: str
                ) -> np.ndarray:
    return KERNELS["k_triangular_solve"](
        a, b, left_side=side == "L", lower=uplo == "L", transpose_a=trans != "N",
        conjugate_a=trans == "C", unit_diagonal=diag == "U")


_LAPACK = {"potrf": lapack_potrf, "syevd": lapack_syevd, "heevd": lapack_syevd,
           "geqrf": lapack_geqrf, "orgqr": lapack_orgqr, "ungqr": lapack_orgqr,
           "gesdd": lapack_gesdd, "getrf": lapack_getrf, "trsm": lapack_trsm}


# ---------------------------------------------------------------------------------------
# Expressions: one NumPy expression per op
# ---------------------------------------------------------------------------------------

# Integer ops that generated code may compute with Python ints (see ``int_arithmetic``).
_INT_OPS = {"stablehlo.add": "+", "stablehlo.subtract": "-", "stablehlo.multiply": "*"}
_COMPARE = {"EQ": "equal", "NE": "not_equal", "LT": "less", "LE": "less_equal",
            "GT": "greater", "GE": "greater_equal"}
# Dtypes for which a Python scalar operand keeps an array's dtype in NumPy (NEP 50).
_LITERAL_DTYPES = {"bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                   "uint64", "float16", "float32", "float64", "complex64", "complex128"}


def dtype_name(dtype: np.dtype) -> str:
    """How generated code names a dtype: ``np.float32``, ``bfloat16``."""
    return "bfloat16" if dtype == ml_dtypes.bfloat16 else f"np.{dtype.name}"


# Where generated code knows the splat constants: value -> its one element, or None.
Splats = Callable[[Value], "np.ndarray | None"]


def _no_splats(v: Value) -> None:
    return None


def ufunc_call(op: Op, args: Sequence[str], splat: Splats = _no_splats) -> tuple[str, bool]:
    """The NumPy call for an elementwise op (the ufunc or kernel its row of ``OPS``
    names), and whether it is a ufunc (takes ``out=``)."""
    name = op.name
    dtype = op.operands[0].type.dtype
    if name == "stablehlo.compare":
        direction, kind = op.attrs["direction"], op.attrs["compare_type"]
        if kind == "TOTALORDER" and dtype.kind in "fV":
            args = [f"total_order({a})" for a in args]
        return f"np.{_COMPARE[direction]}({', '.join(args)})", True
    info = OPS[name]
    if info.numpy and (dtype.kind not in info.kernel_kinds or _extreme_by_ufunc(op, splat)):
        return f"np.{info.numpy}({', '.join(args)})", True
    return f"{info.kernel}({', '.join(args)})", False


def _extreme_by_ufunc(op: Op, splat: Splats) -> bool:
    """Code-generation rule: a float ``maximum``/``minimum`` with a constant operand is
    NumPy's own ufunc, not the ``k_max``/``k_min`` kernel, where that is exact.

    Why: the kernels cost four more passes over memory (``x == 0``, ``y == 0``, ``&``,
    ``where``) to order -0.0 below +0.0, which NumPy leaves to chance; but the choice
    only arises where both operands are zeros. A constant that is not a zero (NaN
    included) never ties, and neither does +0.0 with an operand that cannot be -0.0:
    :func:`~minijax.compiler.passes.unsign_relu_zeros` makes ReLU's ``max(x, +0.0)``
    into ``max(x + 0.0, +0.0)``, which this rule then recognises."""
    if op.name not in ("stablehlo.maximum", "stablehlo.minimum") or \
            op.result.type.dtype.kind != "f":
        return False
    for v, other in ((op.operands[0], op.operands[1]), (op.operands[1], op.operands[0])):
        c = splat(v)
        if c is not None and (c != 0 or np.isnan(c)):
            return True
        if c is not None and not np.signbit(c) and _adds_positive_zero(other, splat):
            return True
    return False


def _adds_positive_zero(v: Value, splat: Splats) -> bool:
    """Whether ``v`` is ``x + 0.0`` (never -0.0), computed in the same expression."""
    op = v.op
    return op is not None and op.name == "stablehlo.add" and any(
        (c := splat(u)) is not None and c == 0 and not np.signbit(c) for u in op.operands)


def elementwise_expr(op: Op, args: Sequence[str], splat: Splats = _no_splats) -> str:
    """Non-ufunc elementwise ops (those ``ufunc_call`` does not cover)."""
    name, out = op.name, op.results[0].type
    if name == "stablehlo.select":
        return f"np.where({args[0]}, {args[1]}, {args[2]})"
    if name == "stablehlo.clamp" and out.dtype.kind == "c":
        return f"k_clamp({', '.join(args)})"
    if name == "stablehlo.clamp":
        lo, hi = ("k_max", "k_min") if out.dtype.kind in "fV" else ("np.maximum", "np.minimum")
        return f"{hi}({lo}({args[1]}, {args[0]}), {args[2]})"
    if name == "stablehlo.convert":
        src = op.operands[0].type.dtype
        if src == out.dtype:
            return args[0]
        if src.kind in "fcV" and out.dtype.kind in "iub" or src.kind == "c":
            return f"k_convert({args[0]}, np.dtype({dtype_name(out.dtype)}), False)"
        return f"{args[0]}.astype({dtype_name(out.dtype)})"
    if name == "stablehlo.bitcast_convert":
        return f"{args[0]}.view({dtype_name(out.dtype)})"
    if name in ("stablehlo.real", "stablehlo.imag"):
        return f"np.{name.split('.')[1]}({args[0]})"
    if name == "stablehlo.reduce_precision":
        exponent_bits, mantissa_bits = op.attrs["format"][1:].split("m")
        return (f"k_reduce_precision({args[0]}, exponent_bits={exponent_bits}, "
                f"mantissa_bits={mantissa_bits})")
    return ufunc_call(op, args, splat)[0]


def broadcast_shape(op: Op) -> tuple[int, ...]:
    """``broadcast_in_dim``'s operand reshaped so that NumPy broadcasting does the rest."""
    x, out = op.operands[0].type, op.results[0].type
    expanded = [1] * len(out.shape)
    for i, d in enumerate(op.attrs["dims"]):
        expanded[d] = x.shape[i]
    return tuple(expanded)


# ---------------------------------------------------------------------------------------
# Code generation
# ---------------------------------------------------------------------------------------


def python_name(mlir_name: str) -> str:
    """``%0`` -> ``v0``, ``%1#2`` -> ``v1_2``, ``%cst_0`` -> ``cst_0``."""
    name = mlir_name.replace("#", "_")
    return "v" + name if name[0].isdigit() else name


class _Program:
    """The generated module: constants, helper functions, and one Python function per
    StableHLO function."""

    def __init__(self, module: Module) -> None:
        self.module = module
        self.namespace: dict[str, Any] = {"np": np, "bfloat16": ml_dtypes.bfloat16,
                                          **KERNELS, **_HELPERS}
        self.header: list[str] = []
        self.functions: list[str] = []
        self.func_names: dict[str, str] = {}
        for func in module.funcs:
            name = func.name if func.visibility == "public" else \
                "f_" + "".join(c if c.isalnum() else "_" for c in func.name)
            while name in self.func_names.values():
                name += "_"
            self.func_names[func.name] = name
        self.counter = 0

    def global_name(self, prefix: str, value: Any, text: str | None = None) -> str:
        """Put ``value`` in the namespace; ``text`` (if given) shows how in the source."""
        name = f"{prefix}{self.counter}"
        self.counter += 1
        if isinstance(value, np.ndarray):
            value.flags.writeable = False  # returned to callers: must never change
        self.namespace[name] = value
        self.header.append(f"{name} = {text}" if text else
                           f"# {name}: {value.dtype.name}{list(value.shape)}, passed in")
        return name

    def constant(self, value: np.ndarray) -> str:
        """A typed constant, as a global array."""
        flat = value.reshape(-1)
        if value.size == 0:
            text = f"np.zeros({value.shape}, {dtype_name(value.dtype)})"
            return self.global_name("C", np.zeros(value.shape, value.dtype), text)
        if value.ndim and is_splat(value):
            text = f"np.full({value.shape}, {_scalar(flat[0])}, {dtype_name(value.dtype)})"
            return self.global_name("C", np.full(value.shape, flat[0], value.dtype), text)
        if value.size <= 16 and value.dtype.name in _LITERAL_DTYPES:
            text = f"np.array({_literal_list(value)}, {dtype_name(value.dtype)})"
            return self.global_name("C", np.array(value), text)
        return self.global_name("C", np.array(value))

    def source(self) -> str:
        parts = ["import numpy as np", ""] + self.header + [""] + self.functions
        return "\n".join(parts).rstrip() + "\n"




def _literal(x: Any) -> str:
    """A Python literal for one NumPy scalar (``2.0``, ``-3``, ``True``, ``np.nan``)."""
    x = np.asarray(x)
    if x.dtype == np.bool_:
        return str(bool(x))
    if x.dtype.kind in "iu":
        return str(int(x))
    if x.dtype.kind == "c":
        return f"complex({_literal(x.real)}, {_literal(x.imag)})"
    value = float(x)
    if math.isnan(value):
        return "np.nan"
    if math.isinf(value):
        return "np.inf" if value > 0 else "-np.inf"
    short = str(x)
    return short if np.asarray(float(short)).astype(x.dtype) == x else repr(value)


def _scalar(x: Any) -> str:
    """A NumPy scalar of ``x``'s own dtype: ``np.float32(2.0)``."""
    x = np.asarray(x)
    return f"{dtype_name(x.dtype)}({_literal(x)})"


def _literal_list(x: np.ndarray) -> str:
    if x.ndim == 0:
        return _literal(x)
    return "[" + ", ".join(_literal_list(row) for row in x) + "]"


def _is_one(value: np.ndarray | None) -> bool:
    return value is not None and value == 1


def _fresh_splat(type: TensorType, element: np.ndarray) -> str:
    """A new array of ``type`` filled with ``element`` (``np.zeros`` for zeros, which the
    allocator hands out already zeroed)."""
    if not element.tobytes().strip(b"\0"):
        return f"np.zeros({type.shape}, {dtype_name(type.dtype)})"
    return f"np.full({type.shape}, {_scalar(element)}, {dtype_name(type.dtype)})"


def last_uses(block: Block) -> dict[int, list[Value]]:
    """Op index -> the results of this block's ops that are read for the last time there
    (a use inside a nested region counts as a use by the op holding the region). Values
    the block returns, or never reads, are not listed."""
    last: dict[Value, int] = {}
    for i, op in enumerate(block.ops[:-1]):
        for inner in [op, *(o for region in op.regions for o in walk_ops(region))]:
            for v in inner.operands:
                last[v] = i
    produced = {r for op in block.ops for r in op.results}
    returned = set(block.ops[-1].operands)
    dead: dict[int, list[Value]] = {}
    for v, i in last.items():
        if v in produced and v not in returned:
            dead.setdefault(i, []).append(v)
    return dead


def _makes_array(op: Op, splat: Splats) -> bool:
    """Whether an elementwise op's code returns a new array: a ufunc, or a conversion
    to another dtype."""
    return _allocates(op, splat) or (op.name == "stablehlo.convert"
                                     and op.operands[0].type.dtype != op.result.type.dtype)


def _allocates(op: Op, splat: Splats) -> bool:
    """Whether the NumPy code of an elementwise op returns a new array (not a view)."""
    if op.name == "stablehlo.compare":
        return True
    info = OPS[op.name]
    return bool(info.numpy) and (op.operands[0].type.dtype.kind not in info.kernel_kinds
                                 or _extreme_by_ufunc(op, splat))


class _FunctionWriter:
    """Writes one Python function: a statement per op, variables named after the text."""

    def __init__(self, program: _Program, func: Func) -> None:
        self.program = program
        self.func = func
        self.names = {v: python_name(n) for v, n in value_names(func).items()}
        self.constants: dict[Value, np.ndarray] = {}  # constants not yet given a global
        self.splats: dict[Value, np.ndarray] = {}  # constants with all elements equal
        self.uses = passes.use_counts(func.body)
        self.fresh: list[set[Value]] = []  # per open block: results in buffers of their own
        self.clamps: list[dict[tuple[Value, int], str]] = []  # per open block: clamped starts
        self.in_place: set[Op] = set()  # dynamic_update_slices that may write their operand
        self.python_ints: set[Value] = set()  # loop counters held as Python ints
        self.counting: dict[Op, str] = {}  # the counters' step and test: op -> expression
        self.ranges: dict[Value, tuple[int, int]] = {}  # Python ints' least and greatest
        self.regions = 0  # region functions written so far
        self.lines: list[str] = []

    # -- values -------------------------------------------------------------------------

    def ref(self, v: Value) -> str:
        if v in self.constants:  # a global, made when first needed
            self.names[v] = self.program.constant(self.constants.pop(v))
        if v in self.python_ints:  # a loop counter, typed again where others read it
            return f"{dtype_name(v.type.dtype)}({self.names[v]})"
        return self.names[v]

    def index(self, v: Value) -> str:
        """An integer value as a Python ``int`` (a literal if it is a constant)."""
        constant = passes.splat_value(v)
        if constant is not None:
            return _literal(constant)
        return self.names[v] if v in self.python_ints else f"int({self.ref(v)})"

    def scalar(self, v: Value, partners: Sequence[Value]) -> str | None:
        """A splat constant as a scalar in an elementwise op: a Python literal if an
        array operand of the same dtype fixes the result's dtype (NumPy's rule for
        Python scalars), else a NumPy scalar (``np.float32(2.0)``)."""
        if v not in self.splats:
            return None
        value = self.splats[v].reshape(-1)[0]
        if v.type.dtype.name in _LITERAL_DTYPES and any(
                p not in self.splats and p.type.dtype == v.type.dtype for p in partners):
            return _literal(value)
        return _scalar(value)

    def emit(self, indent: int, line: str) -> None:
        self.lines.append("    " * indent + line)

    def bind(self, indent: int, results: Sequence[Value], expr: str) -> None:
        names = [self.names[r] for r in results]
        self.emit(indent, f"{', '.join(names)} = {expr}")

    # -- functions and blocks -----------------------------------------------------------

    def write(self) -> str:
        name = self.program.func_names[self.func.name]
        args = ", ".join(self.names[a] for a in self.func.body.args)
        self.emit(0, f"def {name}({args}):")
        self.block(self.func.body, 1, returns=self._return)
        return "\n".join(self.lines) + "\n"

    def _return(self, indent: int, values: Sequence[Value]) -> None:
        refs = [self.ref(v) for v in values]
        if self.func.visibility == "public":
            refs = [f"np.asarray({r})" if not v.type.shape else r for r, v in zip(refs, values)]
            self.emit(indent, f"return [{', '.join(refs)}]")
        else:
            self.emit(indent, f"return {', '.join(refs)}" if refs else "return")

    def block(self, block: Block, indent: int, returns: Callable[[int, list[Value]], None]
              ) -> None:
        self.fresh.append(set())
        self.clamps.append({})
        start = len(self.lines)
        dead_after = last_uses(block)
        if block is self.func.body:  # returning frees them anyway
            dead_after.pop(len(block.ops) - 2, None)
        for i, op in enumerate(block.ops[:-1]):
            self.op(op, indent)
            self.free(indent, dead_after.get(i, ()))
        returns(indent, block.ops[-1].operands)
        if len(self.lines) == start:
            self.emit(indent, "pass")
        self.fresh.pop()
        self.clamps.pop()

    def free(self, indent: int, values: Sequence[Value]) -> None:
        """``del`` the arrays nothing reads any more, so that NumPy can give their memory
        to the next result (a function otherwise holds every intermediate until it
        returns). Constants are globals, and 0-d values not worth a statement."""
        names = [self.names[v] for v in values
                 if v.type.shape and v.op.name != "stablehlo.constant"]
        if names:
            self.emit(indent, f"del {', '.join(names)}")

    def op(self, op: Op, indent: int) -> None:
        name = op.name
        if op in self.counting:
            self.bind(indent, op.results, self.counting[op])
        elif (found := self.int_arithmetic(op)) is not None:
            self.python_ints.add(op.result)
            self.bind(indent, op.results, found[0])
        elif name == "stablehlo.constant":
            self.constant(op)
        elif OPS[name].elementwise:
            self.op_fusion(op, indent)
        else:
            method = getattr(self, "op_" + name.split(".")[-1], None)
            if method is None:
                raise NotImplementedError(f"the NumPy backend cannot run {name}")
            method(op, indent)

    def constant(self, op: Op) -> None:
        value = op.attrs["value"]
        if is_splat(value):
            self.splats[op.result] = value
        self.constants[op.result] = value

    # -- data movement ------------------------------------------------------------------

    def op_broadcast_in_dim(self, op: Op, indent: int) -> None:
        (x,), out = op.operands, op.result.type
        dims = list(op.attrs["dims"])
        src = self.ref(x)
        if dims != sorted(dims):
            order = sorted(range(len(dims)), key=dims.__getitem__)
            src = f"{src}.transpose({tuple(order)})"
        if x.type.shape == out.shape:
            self.bind(indent, op.results, src)
            return
        if x.type.size == out.size:  # only size-1 dimensions are added: a reshape
            self.bind(indent, op.results, f"{src}.reshape({out.shape})")
            return
        shape = broadcast_shape(op)
        if shape != x.type.shape:
            src = f"{src}.reshape({shape})"
        self.bind(indent, op.results, f"np.broadcast_to({src}, {out.shape})")

    # Reshapes and transposes are the arrays' methods, not ``np.reshape``/``np.transpose``:
    # the functions check their arguments in Python first (about 0.7 us a call against
    # 0.15 us), which a loop body pays at every iteration. (Every value generated code
    # holds is a NumPy array or scalar, and both have the methods.)

    def op_reshape(self, op: Op, indent: int) -> None:
        self.bind(indent, op.results,
                  f"{self.ref(op.operands[0])}.reshape({op.result.type.shape})")

    def op_transpose(self, op: Op, indent: int) -> None:
        self.bind(indent, op.results,
                  f"{self.ref(op.operands[0])}.transpose({tuple(op.attrs['dims'])})")

    def op_reverse(self, op: Op, indent: int) -> None:
        self.bind(indent, op.results,
                  f"np.flip({self.ref(op.operands[0])}, {tuple(op.attrs['dims'])})")

    def op_slice(self, op: Op, indent: int) -> None:
        boxes = [f"{a}:{b}" + (f":{s}" if s != 1 else "")
                 for a, b, s in zip(op.attrs["start"], op.attrs["limit"], op.attrs["strides"])]
        x = self.ref(op.operands[0])
        self.bind(indent, op.results, f"{x}[{', '.join(boxes)}]" if boxes else x)

    def op_iota(self, op: Op, indent: int) -> None:
        t = op.result.type
        self.bind(indent, op.results, f"iota({dtype_name(t.dtype)}, {t.shape}, "
                                      f"{op.attrs['dim']})")

    def op_concatenate(self, op: Op, indent: int) -> None:
        parts = ", ".join(self.ref(v) for v in op.operands)
        self.bind(indent, op.results, f"np.concatenate([{parts}], axis={op.attrs['dim']})")

    def op_pad(self, op: Op, indent: int) -> None:
        config = tuple(zip(op.attrs["low"], op.attrs["high"], op.attrs["interior"]))
        x, value = (self.ref(v) for v in op.operands)
        self.bind(indent, op.results, f"k_pad({x}, {value}, padding_config={config})")

    def box(self, indent: int, op: Op, x: Value, starts: Sequence[Value],
            sizes: Sequence[int]) -> str:
        """The index of a ``sizes`` box at ``starts`` in ``x``, each start clamped into
        ``[0, dim - size]`` as XLA does: ``x[s:s + 1, :]``. A start that is not a
        constant is clamped by a statement of its own (Python ints, no kernel call)."""
        parts = []
        for d, (start, size, dim) in enumerate(zip(starts, sizes, x.type.shape)):
            if size == dim:
                parts.append(":")
                continue
            constant = passes.splat_value(start)
            if constant is not None:
                first = min(max(int(constant), 0), dim - size)
                parts.append(f"{first}:{first + size}")
                continue
            low, high = self.ranges.get(start, (-1, dim))
            if 0 <= low and high <= dim - size:  # a Python int known to be in bounds
                parts.append(f"{self.names[start]}:{self.names[start]} + {size}")
                continue
            name = self.clamps[-1].get((start, dim - size))
            if name is None:  # once per start and bound in a block
                name = self.clamps[-1][start, dim - size] = f"{self.names[op.results[0]]}_start{d}"
                self.emit(indent, f"{name} = min(max({self.index(start)}, 0), {dim - size})")
            parts.append(f"{name}:{name} + {size}")
        return f"[{', '.join(parts)}]"

    def op_dynamic_slice(self, op: Op, indent: int) -> None:
        x, *starts = op.operands
        box = self.box(indent, op, x, starts, op.attrs["sizes"])
        self.bind(indent, op.results, f"{self.ref(x)}{box}")

    def op_dynamic_update_slice(self, op: Op, indent: int) -> None:
        """A copy with the box replaced; or, if nothing else will read the operand
        (a dead buffer of our own, or a loop's buffer), the box written in place."""
        x = op.operands[0]
        if not op.result.type.shape:  # a 0-d update replaces the whole operand
            self.bind(indent, op.results, self.ref(op.operands[1]))
            return
        if op in self.in_place or (x in self.fresh[-1] and self.uses.get(x) == 1):
            update, *starts = op.operands[1:]
            box = self.box(indent, op, x, starts, update.type.shape)
            self.emit(indent, f"{self.ref(x)}{box} = {self.ref(update)}")
            self.bind(indent, op.results, self.ref(x))
        else:
            args = ", ".join(self.ref(v) for v in op.operands)
            self.bind(indent, op.results, f"k_dynamic_update_slice({args})")
        self.fresh[-1].add(op.result)

    # -- products, reductions, sorting --------------------------------------------------

    def op_dot_general(self, op: Op, indent: int) -> None:
        lhs, rhs = op.operands
        batch = op.attrs.get("batching_dims", ((), ()))
        contract = op.attrs["contracting_dims"]
        dims = ((tuple(contract[0]), tuple(contract[1])), (tuple(batch[0]), tuple(batch[1])))
        expr = _matmul_expr(self.ref(lhs), self.ref(rhs), lhs.type, rhs.type, op.result.type,
                            dims)
        self.bind(indent, op.results, expr)
        if expr.startswith("np.matmul") and op.result.type.shape:
            self.fresh[-1].add(op.result)

    def op_reduce(self, op: Op, indent: int) -> None:
        half = len(op.operands) // 2
        dims = tuple(op.attrs["dimensions"])
        applies = _reduction_ufunc(op)
        x, init = op.operands[0], op.operands[-1]
        if applies is not None and init in self.splats:
            initial = _literal(self.splats[init].reshape(-1)[0])
            if _is_extreme(applies, x.type.dtype):
                self.bind(indent, op.results,
                          f"k_extreme(np.{applies.numpy}, {self.ref(x)}, {dims}, {initial})")
                return
            expr = _accumulating(f"np.{applies.numpy}.reduce", self.ref(x),
                                 x.type.dtype, f"axis={dims}, initial={initial}")
            self.bind(indent, op.results, expr)
            return
        body = self.region_function(op.regions[0], indent)
        inputs = ", ".join(self.ref(v) for v in op.operands[:half])
        inits = ", ".join(self.ref(v) for v in op.operands[half:])
        self.bind(indent, op.results,
                  f"reduce_generic([{inputs}], [{inits}], {dims}, {body})")

    def op_reduce_window(self, op: Op, indent: int) -> None:
        x, init = op.operands
        window = op.attrs["window_dimensions"].values
        strides = op.attrs["window_strides"].values
        padding = op.attrs["padding"].values
        if any(d != 1 for key in ("base_dilations", "window_dilations")
               for d in op.attrs[key].values):
            raise NotImplementedError("the NumPy backend has no dilated reduce_window")
        scan_axis = _prefix_scan_axis(x.type.shape, window, strides, padding)
        applies = _reduction_ufunc(Op("stablehlo.reduce", [x, init], [], regions=op.regions))
        if (scan_axis is not None and applies is not None and init in self.splats
                and _is_identity(applies, self.splats[init].reshape(-1)[0])):
            axis, reverse = scan_axis
            src, ufunc = self.ref(x), f"np.{applies.numpy}.accumulate"
            if reverse:
                src = f"np.flip({src}, {axis})"
            expr = _accumulating(ufunc, src, x.type.dtype, f"axis={axis}")
            if _is_extreme(applies, x.type.dtype):
                expr = f"k_accumulate_extreme(np.{applies.numpy}, {src}, {axis})"
            self.bind(indent, op.results, f"np.flip({expr}, {axis})" if reverse else expr)
            return
        body = self.region_function(op.regions[0], indent)
        self.bind(indent, op.results,
                  f"reduce_window_generic({self.ref(x)}, {self.ref(init)}, {tuple(window)}, "
                  f"{tuple(strides)}, np.array({padding.tolist()}), {body})")

    def op_sort(self, op: Op, indent: int) -> None:
        dimension = int(op.attrs["dimension"].value)
        args = ", ".join(self.ref(v) for v in op.operands)
        num_keys = lexicographic_keys(op.regions[0])
        if num_keys is not None:
            expr = (f"k_sort({args}, dimension={dimension}, is_stable=True, "
                    f"num_keys={num_keys})")
        else:
            body = self.region_function(op.regions[0], indent)
            expr = f"sort_generic([{args}], {dimension}, {body})"
        self.bind(indent, op.results, expr if len(op.results) > 1 else f"{expr}[0]")

    def op_top_k(self, op: Op, indent: int) -> None:
        self.bind(indent, op.results,
                  f"k_top_k({self.ref(op.operands[0])}, k={op.attrs['k']}, axis=-1)")

    # -- gather, scatter, custom calls --------------------------------------------------

    def op_gather(self, op: Op, indent: int) -> None:
        dn = op.attrs["dimension_numbers"]
        dims = GatherDimensionNumbers(
            tuple(dn.get("offset_dims")), tuple(dn.get("collapsed_slice_dims")),
            tuple(dn.get("start_index_map")), tuple(dn.get("operand_batching_dims")),
            tuple(dn.get("start_indices_batching_dims")))
        name = self.program.global_name("G", dims, repr(dims))
        x, indices = (self.ref(v) for v in op.operands)
        self.bind(indent, op.results,
                  f"gather({x}, {indices}, {name}, {tuple(op.attrs['slice_sizes'].values)}, "
                  f"{dn.get('index_vector_dim', 0)})")

    def op_scatter(self, op: Op, indent: int) -> None:
        dn = op.attrs["scatter_dimension_numbers"]
        dims = ScatterDimensionNumbers(
            tuple(dn.get("update_window_dims")), tuple(dn.get("inserted_window_dims")),
            tuple(dn.get("scatter_dims_to_operand_dims")), tuple(dn.get("input_batching_dims")),
            tuple(dn.get("scatter_indices_batching_dims")))
        name = self.program.global_name("S", dims, repr(dims))
        combine, region = _scatter_combiner(op.regions[0]), "None"
        if combine == "generic":
            combine, region = "None", self.region_function(op.regions[0], indent)
        x, indices, updates = (self.ref(v) for v in op.operands)
        self.bind(indent, op.results,
                  f"scatter({x}, {indices}, {updates}, {name}, {dn.get('index_vector_dim', 0)}"
                  f", {combine}, {region})")

    def op_custom_call(self, op: Op, indent: int) -> None:
        target = op.attrs["call_target_name"]
        if target == "minijax_python_callback":
            index = op.attrs["attributes"]["mhlo.backend_config"]["index"].value
            args = ", ".join(self.ref(v) for v in op.operands)
            self.emit(indent, f"host_callbacks[{index}]({args})")
            return
        kind = target.removeprefix("lapack_")[1:].removesuffix("_ffi")
        if not target.startswith("lapack_") or kind not in _LAPACK:
            raise NotImplementedError(f"the NumPy backend has no custom call {target!r}")
        config = {k: chr(v.value) for k, v in op.attrs["attributes"].get(
            "mhlo.backend_config", {}).items()}
        args = [self.ref(v) for v in op.operands]
        if kind in ("syevd", "heevd"):
            args.append(repr(config["uplo"] == "L"))
        elif kind == "gesdd":
            args.append(repr(config["mode"]))
        elif kind == "trsm":
            args += [repr(config[k]) for k in ("side", "uplo", "trans_x", "diag")]
        self.bind(indent, op.results, f"lapack_{kind}({', '.join(args)})")

    # -- calls and control flow ---------------------------------------------------------

    def op_call(self, op: Op, indent: int) -> None:
        callee = self.program.func_names[op.attrs["callee"]]
        args = ", ".join(self.ref(v) for v in op.operands)
        if op.results:
            self.bind(indent, op.results, f"{callee}({args})")
        else:
            self.emit(indent, f"{callee}({args})")

    def op_case(self, op: Op, indent: int) -> None:
        """``if``/``elif`` on the index; an index out of range runs the last branch."""
        assign = lambda ind, vals: self._assign(ind, op.results, vals)
        if len(op.regions) == 1:
            self.block(op.regions[0], indent, assign)
            return
        index = f"index_{self.names[op.results[0]]}" if op.results else "index"
        self.emit(indent, f"{index} = int({self.ref(op.operands[0])})")
        last = len(op.regions) - 1
        for i, region in enumerate(op.regions):
            head = "else:" if i == last else f"if {index} == 0:" if i == 0 \
                else f"elif {index} == {i}:"
            self.emit(indent, head)
            self.block(region, indent + 1, assign)

    def op_while(self, op: Op, indent: int) -> None:
        """A Python ``while``; the loop variables are the regions' arguments (the cond
        and the body name them alike). A buffer the body only updates (the ``ys`` of a
        ``scan``) is copied once before the loop (made afresh if it starts as a constant)
        and then updated in place; a counter is a Python ``int``."""
        cond, body = op.regions
        inits: list[str | None] = [None] * len(op.operands)
        for k in self._counters(op):
            inits[k] = self.index(op.operands[k])
        for k, update in self._updated_in_place(op).items():
            self.in_place.add(update)
            init = op.operands[k]
            if passes.splat_value(init) is not None:
                inits[k] = _fresh_splat(init.type, passes.splat_value(init))
            elif not (init in self.fresh[-1] and self.uses.get(init) == 1):
                inits[k] = f"np.array({self.ref(init)})"
        inits = [self.ref(v) if i is None else i for v, i in zip(op.operands, inits)]
        self.emit(indent, f"{', '.join(self.names[a] for a in cond.args)} = {', '.join(inits)}")
        self.emit(indent, "while True:")

        def check(ind: int, values: list[Value]) -> None:
            self.emit(ind, f"if not {self.ref(values[0])}:")
            self.emit(ind + 1, "break")

        self.block(cond, indent + 1, check)
        self.block(body, indent + 1, lambda ind, vals: self._assign(ind, body.args, vals))
        self._assign(indent, op.results, cond.args)

    def _counters(self, op: Op) -> list[int]:
        """Loop counters: integer scalar carries that the body steps by one and the
        condition compares (``<``) with a bound. They stay Python ints in the loop (a
        NumPy scalar op costs about a microsecond, an int's a few nanoseconds), and
        cannot overflow: they grow only while below a bound of their own type. The step
        and the test are written for ints; other readers get ``np.int32(i)``."""
        cond, body = op.regions
        test = cond.terminator.operands[0].op
        if (test is None or test.name != "stablehlo.compare" or test.attrs["direction"] != "LT"
                or test.attrs["compare_type"] != "SIGNED"):
            return []
        found = []
        for k, (c, b) in enumerate(zip(cond.args, body.args)):
            step = body.terminator.operands[k].op
            if (c is test.operands[0] and not c.type.shape and step is not None
                    and step.name == "stablehlo.add" and step.operands[0] is b
                    and _is_one(passes.splat_value(step.operands[1]))):
                found.append(k)
                self.python_ints.update((c, b, step.result))
                self.counting[step] = f"{self.names[b]} + 1"
                self.counting[test] = f"{self.names[c]} < {self.index(test.operands[1])}"
                start, bound = (passes.splat_value(v) for v in (op.operands[k], test.operands[1]))
                if start is not None and bound is not None:
                    start, last = int(start), max(int(start), int(bound) - 1)
                    self.ranges.update({c: (start, last + 1), b: (start, last),
                                        step.result: (start + 1, last + 1)})
        return found

    def int_arithmetic(self, op: Op) -> tuple[str, int, int] | None:
        """Code-generation rule: integer scalar arithmetic (``+``, ``-``, ``*``, or a fusion
        of them) on loop counters and constants is Python arithmetic on ints, when the
        counters' ranges prove that it cannot overflow its type; returns the expression
        and its least and greatest values, and records them.

        Why: a reverse ``scan`` reads its slices at ``n - 1 - i``, which as NumPy scalars
        costs a microsecond or two an iteration, as ints a few nanoseconds; and once the
        index is known to lie in the array, :meth:`box` needs no clamp."""
        if len(op.results) != 1 or op.result.type.shape or op.result.type.dtype.kind not in \
                "iu" or op.name not in (*_INT_OPS, "minijax.fusion"):
            return None
        if op.name == "minijax.fusion":
            (body,) = op.regions
            found = self._int_value(body.terminator.operands[0], dict(zip(body.args, op.operands)))
        else:
            found = self._int_value(op.result, {})
        if found is not None:
            self.ranges[op.result] = found[1:]
        return found

    def _int_value(self, v: Value, inputs: dict[Value, Value]) -> tuple[str, int, int] | None:
        outer = inputs.get(v, v)
        constant = passes.splat_value(outer)
        if outer in self.ranges:
            return self.names[outer], *self.ranges[outer]
        if constant is not None and constant.dtype.kind in "iu":
            return _literal(constant), int(constant), int(constant)
        if v in inputs or v.op is None or v.op.name not in _INT_OPS or v.type.shape:
            return None
        args = [self._int_value(u, inputs) for u in v.op.operands]
        if None in args:
            return None
        (a, alo, ahi), (b, blo, bhi) = args
        symbol = _INT_OPS[v.op.name]
        corners = [eval(f"{x} {symbol} {y}") for x in (alo, ahi) for y in (blo, bhi)]
        limits = np.iinfo(v.type.dtype)
        if min(corners) < limits.min or max(corners) > limits.max:
            return None
        return f"({a} {symbol} {b})", min(corners), max(corners)

    def _updated_in_place(self, op: Op) -> dict[int, Op]:
        """Loop buffers that can be updated in place: carry k whose only use, in the
        body, is as the operand of a ``dynamic_update_slice`` whose result becomes
        carry k again (and which the condition does not read)."""
        cond, body = op.regions
        cond_uses, body_uses = passes.use_counts(cond), passes.use_counts(body)
        found = {}
        for k, (c, b) in enumerate(zip(cond.args, body.args)):
            update = next((u for u in body.ops if u.name == "stablehlo.dynamic_update_slice"
                           and u.operands[0] is b), None)
            if (update is not None and not cond_uses.get(c) and body_uses.get(b) == 1
                    and body.terminator.operands[k] is update.result):
                found[k] = update
        return found

    def _assign(self, indent: int, targets: Sequence[Value], values: Sequence[Value]) -> None:
        lhs = ", ".join(self.names[t] for t in targets)
        rhs = ", ".join(self.names[v] if t in self.python_ints and v in self.python_ints
                        else self.ref(v) for t, v in zip(targets, values))
        if targets and lhs != rhs:
            self.emit(indent, f"{lhs} = {rhs}")

    def region_function(self, block: Block, indent: int) -> str:
        """A nested function computing a region (the body of a generic reduce, sort or
        scatter), defined just before the statement that uses it."""
        name = f"region_{self.regions}"
        self.regions += 1
        args = ", ".join(self.names[a] for a in block.args)
        self.emit(indent, f"def {name}({args}):")

        def ret(ind: int, values: list[Value]) -> None:  # always a tuple
            refs = [self.ref(v) for v in values]
            self.emit(ind, f"return {', '.join(refs)}{',' if len(refs) == 1 else ''}")

        self.block(block, indent + 1, ret)
        return name

    # -- fusions ------------------------------------------------------------------------

    def op_fusion(self, op: Op, indent: int) -> None:
        """One NumPy expression for a fusion (or a lone elementwise op)."""
        if op.name == "minijax.fusion":
            (body,) = op.regions
            inputs = dict(zip(body.args, op.operands))
            root = body.ops[-1].operands[0]
            inner_uses = passes.use_counts(body)
        else:
            inputs = {v: v for v in op.operands}
            root = op.result
            inner_uses = {v: op.operands.count(v) for v in op.operands}
        writer = _ExpressionWriter(self, inputs, inner_uses, self.names[op.result],
                                   op.result.type)
        self.bind(indent, op.results, writer.expr(root))
        if writer.fresh_result:
            self.fresh[-1].add(op.result)


def _accumulating(method: str, x: str, dtype: np.dtype, args: str) -> str:
    """``np.add.reduce(x, ..., dtype=...)``: NumPy would widen small integers (and XLA
    keeps them), and half-precision floats are summed in float32."""
    if dtype in (np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16)):
        return f"{method}({x}, {args}, dtype=np.float32).astype({dtype_name(dtype)})"
    return f"{method}({x}, {args}, dtype={dtype_name(dtype)})"


def _reduction_ufunc(op: Op) -> OpInfo | None:
    """The row of the commutative op a ``reduce`` body applies, if it has a NumPy ufunc:
    that ufunc's ``reduce`` and ``accumulate`` then do the whole reduction."""
    applies = compact_reduce_body(op)
    info = OPS[applies] if applies else None
    return info if info is not None and info.numpy else None


def _is_extreme(info: OpInfo, dtype: np.dtype) -> bool:
    """A max or min of floats: NumPy's ufuncs do not order -0.0 and 0.0 as XLA does, the
    ``k_extreme`` kernels do."""
    return info.identity in ("lowest", "highest") and dtype.kind in "fV"


def _is_identity(info: OpInfo, value: np.ndarray) -> bool:
    """Whether ``value`` is the identity of the reduction ``info`` describes."""
    value = np.asarray(value)
    if info.identity in ("lowest", "highest"):
        lowest = info.identity == "lowest"
        if value.dtype == np.bool_:
            return bool(value == (not lowest))
        if value.dtype.kind in "iu":
            limits = np.iinfo(value.dtype)
            return bool(value == (limits.min if lowest else limits.max))
        return bool(value == (-np.inf if lowest else np.inf))
    if info.identity is None:
        return False
    return bool(value == (bool(info.identity) if value.dtype == np.bool_ else info.identity))


def _prefix_scan_axis(shape: Sequence[int], window: Sequence[int], strides: Sequence[int],
                      padding: np.ndarray) -> tuple[int, bool] | None:
    """The axis (and direction) if a reduce_window is a cumulative reduction along it."""
    axes = [d for d, w in enumerate(window) if w != 1]
    if len(axes) != 1 or any(s != 1 for s in strides):
        return None
    (axis,) = axes
    n = shape[axis]
    others_unpadded = all(tuple(padding[d]) == (0, 0) for d in range(len(shape)) if d != axis)
    if window[axis] != n or not others_unpadded:
        return None
    if tuple(padding[axis]) == (n - 1, 0):
        return axis, False
    if tuple(padding[axis]) == (0, n - 1):
        return axis, True
    return None


def _matmul_expr(lhs: str, rhs: str, lt: TensorType, rt: TensorType, out: TensorType,
                 dims: Any) -> str:
    """``np.matmul`` on transposed views where the dimension numbers allow it (BLAS,
    no copies: batch dims first, one contracting dim), else the ``dot_general`` kernel."""
    (cl, cr), (bl, br) = dims
    nb = len(bl)
    fast = (lt.dtype == rt.dtype == out.dtype and out.dtype.kind in "fc"
            and out.dtype.itemsize >= 4 and len(cl) == 1 and bl == br == tuple(range(nb))
            and len(lt.shape) - nb == 2 and len(rt.shape) - nb == 2)
    if fast:
        lhs_free = next(d for d in range(nb, len(lt.shape)) if d != cl[0])
        rhs_free = next(d for d in range(nb, len(rt.shape)) if d != cr[0])
        lhs_v = lhs if lhs_free < cl[0] else _swap_last(lhs, len(lt.shape))
        rhs_v = rhs if cr[0] < rhs_free else _swap_last(rhs, len(rt.shape))
        return f"np.matmul({lhs_v}, {rhs_v})"
    if (lt.dtype == rt.dtype == out.dtype and out.dtype.kind == "f" and not cl
            and bl == br == tuple(range(nb))):
        # no contraction: an outer product of each batch (the weight gradient of a matrix
        # product under vmap), one multiply per element as BLAS's k = 1 product, broadcast
        # by NumPy several times faster than a matmul with a length-1 inner dimension (a
        # complex product is left to BLAS, which rounds it its own way)
        free_l, free_r = len(lt.shape) - nb, len(rt.shape) - nb
        lhs_v = f"{lhs}[...{', None' * free_r}]" if free_r else lhs
        rhs_v = f"{rhs}[{':, ' * nb}{'None, ' * free_l}...]" if free_l else rhs
        return f"({lhs_v} * {rhs_v})"
    if (lt.dtype == rt.dtype == out.dtype and out.dtype.kind in "fc" and out.dtype.itemsize >= 4
            and not bl and len(cl) == 1 and len(rt.shape) <= 2 and cl[0] == len(lt.shape) - 1
            and (len(lt.shape) <= 2 or len(rt.shape) == 2) and cr[0] in (0, len(rt.shape) - 1)):
        # vector products, and a stack of rows times one matrix (x @ w on a batch)
        return f"np.matmul({lhs}, {rhs if cr[0] == 0 else rhs + '.T'})"
    return (f"k_dot_general({lhs}, {rhs}, dimension_numbers={dims}, precision=None, "
            f"preferred_element_type=np.dtype({dtype_name(out.dtype)}), out_sharding=None)")


def _swap_last(x: str, rank: int) -> str:
    return f"{x}.T" if rank == 2 else f"np.swapaxes({x}, -1, -2)"


def _scatter_combiner(block: Block) -> str:
    """``np.add.at`` and friends for a one-op update region whose op has a ufunc exact for
    every dtype (maximum and minimum only keep another zero than XLA's); ``None`` for
    "replace"."""
    old, new = block.args
    ops = block.ops
    if len(ops) == 1 and ops[0].operands == [new]:
        return "None"
    if len(ops) == 2 and ops[0].operands == [old, new] and ops[1].operands == ops[0].results:
        info = OPS[ops[0].name]
        if info.numpy and (not info.kernel_kinds or info.commutative):
            return f"np.{info.numpy}.at"
    return "generic"


def lexicographic_keys(block: Block) -> int | None:
    """If a sort comparator is JAX's lexicographic ``<`` on the first k operands (floats
    canonicalised: -0.0 as 0.0, NaNs last), return k; else None.

    The comparator is evaluated symbolically: each value becomes a small tuple
    (``("arg", i)``, ``("lt", k, part)``, ``("or", a, b)``...), and the result must read
    ``lt(0) or (eq(0) and (lt(1) or ...))``.
    """
    sym: dict[Value, Any] = {a: ("arg", i, None) for i, a in enumerate(block.args)}
    for op in block.ops[:-1]:
        args = [sym.get(v) for v in op.operands]
        if op.name == "stablehlo.constant":
            sym[op.result] = ("const",)
        elif op.name in ("stablehlo.real", "stablehlo.imag") and args[0][0] == "arg":
            sym[op.result] = ("arg", args[0][1], op.name)
        elif op.name == "stablehlo.select" and args[2] and args[2][0] == "arg" \
                and args[1] == ("const",):
            sym[op.result] = args[2]  # canonicalising -0.0 or NaN keeps the key's identity
        elif op.name == "stablehlo.compare":
            sym[op.result] = _key_compare(op.attrs["direction"], args)
        elif op.name in ("stablehlo.and", "stablehlo.or"):
            sym[op.result] = (op.name.split(".")[1], *args)
        else:
            return None
    keys = _match_lexicographic(sym.get(block.ops[-1].operands[0]), 0)
    return keys if keys is not None and 2 * keys <= len(block.args) else None


def _key_compare(direction: str, args: list[Any]) -> Any:
    """``LT``/``EQ`` of argument 2k against argument 2k+1 is a comparison of key k."""
    a, b = args
    if a is None or b is None or a[0] != "arg" or b[0] != "arg":
        return ("other",)
    if a[1] % 2 or b[1] != a[1] + 1 or a[2] != b[2]:
        return ("other",)
    return (direction.lower(), a[1] // 2, a[2])


def _match_lexicographic(node: Any, key: int, part: str | None = None) -> int | None:
    """Match ``lt(k) or (eq(k) and rest)``, ..., ending in ``lt(last)``; count the keys.
    A complex key compares its real part, then (same k) its imaginary part."""
    real, imag = "stablehlo.real", "stablehlo.imag"
    if node in (("lt", key, None), ("lt", key, imag)):
        return key + 1
    if node and node[0] == "or" and len(node) == 3:
        lt, rest = node[1], node[2]
        if lt in (("lt", key, None), ("lt", key, real), ("lt", key, imag)) and rest \
                and rest[0] == "and" and rest[1] == ("eq", *lt[1:]):
            return _match_lexicographic(rest[2], key if lt[2] == real else key + 1)
    return None


class _ExpressionWriter:
    """The NumPy expression of a fusion region (or of one elementwise op).

    Broadcasts stay lazy (a reshape, then NumPy broadcasting); splat constants become
    scalars. Ufuncs along one chain of the tree write into a single buffer with
    ``out=``: the chain starts at the root and follows operands that are ufunc results
    of the result's shape and dtype. The chain's first ufunc allocates the buffer
    (``(v3 := np.multiply(a, b))``), unless an operand is a *dead* array of the right
    type that nothing else will read: then the chain reuses that array.
    """

    def __init__(self, writer: _FunctionWriter, inputs: dict[Value, Value],
                 inner_uses: dict[Value, int], target: str, out: TensorType) -> None:
        self.w = writer
        self.inputs = inputs
        self.inner_uses = inner_uses
        self.target = target
        self.out = out
        self.buffer: str | None = None
        self.fresh_result = False
        self.temporaries = 0  # temporaries named so far (``v3_0``, ``v3_1``...)

    def splat(self, v: Value) -> np.ndarray | None:
        """The one element of an operand that is a splat constant."""
        value = self.w.splats.get(self.inputs.get(v))
        return None if value is None else value.reshape(-1)[0]

    def shape(self, v: Value) -> tuple[int, ...]:
        """The shape NumPy gives ``v``'s expression (splats are scalars)."""
        if v in self.inputs:
            return () if self.inputs[v] in self.w.splats else self.inputs[v].type.shape
        op = v.op
        if op.name == "stablehlo.broadcast_in_dim":
            return broadcast_shape(op) if self.shape(op.operands[0]) else ()
        return np.broadcast_shapes(*(self.shape(u) for u in op.operands))

    def expr(self, root: Value) -> str:
        chain = self.chain(root)
        text = self.node(root, chain)
        if self.shape(root) != self.out.shape:
            return f"np.broadcast_to({text}, {self.out.shape})"
        return text

    def chain(self, root: Value) -> list[Value]:
        if not self.out.shape:
            return []
        chain, v = [], root
        while v not in self.inputs and self.writes_buffer(v):
            chain.append(v)
            operands = v.op.operands
            donor = next((u for u in operands if self.donatable(u)), None)
            if donor is not None:
                self.buffer = self.w.ref(self.inputs[donor])
                return chain
            nxt = next((u for u in operands if u not in self.inputs and self.writes_buffer(u)),
                       None)
            if nxt is None:
                break
            v = nxt
        self.buffer = self.target if chain else None
        return chain

    def writes_buffer(self, v: Value) -> bool:
        op = v.op
        return (_allocates(op, self.splat) and v.type == self.out
                and self.shape(v) == self.out.shape)

    def promoted_mask(self, op: Op, u: Value) -> Value | None:
        """Code-generation rule: a boolean converted to float, as an operand of a float
        ufunc whose other operand is an array of that float type, is left to NumPy's
        type promotion (which makes True 1.0 and False 0.0, as the conversion does);
        returns the boolean, or None.

        Why: ``g * (z >= 0)`` then makes no float temporary for the mask: in a
        gradient like ReLU's, a pass over memory and an array less."""
        c = u.op
        if (u in self.inputs or c.name != "stablehlo.convert" or len(op.operands) != 2
                or c.operands[0].type.dtype != np.bool_ or op.name == "stablehlo.compare"
                or u.type.dtype.name not in ("float16", "float32", "float64")
                or op.result.type.dtype != u.type.dtype or not _allocates(op, self.splat)):
            return None
        other = op.operands[1] if op.operands[0] is u else op.operands[0]
        other_op = other.op if other not in self.inputs else None
        if (other is u or other.type.dtype != u.type.dtype or self.splat(other) is not None
                or (other_op is not None and other_op.name == "stablehlo.convert")):
            return None
        return c.operands[0]

    def reusing(self, v: Value, args: list[str], masks: list[Value | None]) -> str | None:
        """Off the chain, a ufunc writes into the temporary array one of its operands
        just made (``np.add((t := x.astype(f32)), 1.0, out=t)``) instead of allocating
        another: a large temporary costs a fresh page of memory per page it covers."""
        op = v.op
        if not _allocates(op, self.splat) or not self.shape(v):
            return None
        for i, u in enumerate(op.operands):
            if (u not in self.inputs and masks[i] is None and _makes_array(u.op, self.splat)
                    and u.type.dtype == v.type.dtype
                    and self.shape(u) == self.shape(v)):
                name = f"{self.target}_{self.temporaries}"
                self.temporaries += 1
                args = [f"({name} := {a})" if j == i else a for j, a in enumerate(args)]
                return f"{ufunc_call(op, args, self.splat)[0][:-1]}, out={name})"
        return None

    def donatable(self, v: Value) -> bool:
        """An operand array nothing else will read (fresh, used once, in this block)."""
        outer = self.inputs.get(v)
        return (outer is not None and outer in self.w.fresh[-1] and outer.type == self.out
                and self.w.uses.get(outer, 0) == 1 and self.inner_uses.get(v, 0) == 1)

    def leaf(self, v: Value, partners: Sequence[Value]) -> str:
        outer = self.inputs[v]
        outers = [self.inputs.get(p, p) for p in partners]
        return self.w.scalar(outer, outers) or self.w.ref(outer)

    def node(self, v: Value, chain: list[Value]) -> str:
        if v in self.inputs:
            return self.leaf(v, [v])
        op = v.op
        if op.name == "stablehlo.broadcast_in_dim":
            (u,) = op.operands
            inner = self.leaf(u, [u]) if u in self.inputs else self.node(u, chain)
            if not self.shape(u) or broadcast_shape(op) == u.type.shape:
                return inner
            return f"{inner}.reshape({broadcast_shape(op)})"
        masks = [self.promoted_mask(op, u) for u in op.operands]
        args = [self.node(m, chain) if m is not None else self.leaf(u, op.operands)
                if u in self.inputs else self.node(u, chain)
                for u, m in zip(op.operands, masks)]
        if v not in chain:
            return self.reusing(v, args, masks) or elementwise_expr(op, args, self.splat)
        call = ufunc_call(op, args, self.splat)[0]
        self.fresh_result = True
        starts_chain = v is chain[-1] and self.buffer == self.target
        if starts_chain:
            return call if len(chain) == 1 else f"({self.target} := {call})"
        return f"{call[:-1]}, out={self.buffer})"


_HELPERS: dict[str, Any] = {
    "iota": iota, "total_order": total_order, "gather": gather, "scatter": scatter,
    "reduce_generic": reduce_generic, "reduce_window_generic": reduce_window_generic,
    "sort_generic": sort_generic, "GatherDimensionNumbers": GatherDimensionNumbers,
    "ScatterDimensionNumbers": ScatterDimensionNumbers,
    **{f"lapack_{k}": v for k, v in _LAPACK.items()},
    "host_callbacks": lowering.host_callbacks,
}


# ---------------------------------------------------------------------------------------
# Evaluating one op (for constant folding) and compiling a module
# ---------------------------------------------------------------------------------------


def evaluate(op: Op, values: Sequence[np.ndarray]) -> np.ndarray:
    """Run one op on NumPy arrays, with the code the backend would generate for it."""
    func = Func("fold", [v.type for v in op.operands], [r.type for r in op.results],
                visibility="public")
    copy = Op(op.name, func.body.args, [r.type for r in op.results], op.attrs, op.regions)
    func.body.ops = [copy, Op("func.return", copy.results, [])]
    program = _Program(Module("fold", [func]))
    program.functions.append(_FunctionWriter(program, func).write())
    with np.errstate(all="ignore"):
        exec(program.source(), program.namespace)
        return program.namespace["fold"](*values)[0]


class Executable:
    """Compiled StableHLO: call it on NumPy arrays, get a list of NumPy arrays back.

    ``fn`` is the generated ``main`` itself. Calling the executable runs it with NumPy's
    floating-point warnings off (XLA computes ``log(0)`` without a word); a caller that
    has them off already (minijax's device worker) can call ``fn`` and save the ~2 us.
    """

    def __init__(self, module: Module, source: str, fn: Callable[..., list[np.ndarray]],
                 in_avals: list[ShapedArray], out_avals: list[ShapedArray]) -> None:
        self.module = module
        self.source = source
        self.fn = fn
        self.in_avals = in_avals
        self.out_avals = out_avals

    def __call__(self, *args: np.ndarray) -> list[np.ndarray]:
        with np.errstate(all="ignore"):
            return self.fn(*args)

    def as_text(self) -> str:
        """The generated Python source."""
        return self.source

    def optimized_ir(self) -> str:
        """The module after the passes, in StableHLO's syntax (fusions included)."""
        return print_module(self.module)


def run_passes(module: Module, pipeline: Sequence[str] = passes.DEFAULT_PIPELINE) -> Module:
    """Apply the named passes of ``passes.py`` in order. Each is looked up by its name
    now, so a pass a learner installs (``minijax.pieces``) is the one that runs."""
    for name in pipeline:
        if name == "constant_folding":
            passes.constant_folding(module, evaluate)
        else:
            getattr(passes, name)(module)
    return module


def generate(module: Module) -> tuple[str, dict[str, Any]]:
    """Python source for ``module`` and the namespace it runs in."""
    program = _Program(module)
    for func in module.funcs:
        program.functions.append(_FunctionWriter(program, func).write())
    return program.source(), program.namespace


def compile(text: str, pipeline: Sequence[str] = passes.DEFAULT_PIPELINE) -> Executable:
    """Parse StableHLO text, optimise it, generate NumPy code, and load it."""
    return compile_module(parse_module(text), pipeline)


def compile_module(module: Module, pipeline: Sequence[str] = passes.DEFAULT_PIPELINE
                   ) -> Executable:
    """Optimise a module (in place), generate NumPy code, and load it. ``jit`` hands its
    lowered module over this way: printing it only for this backend to parse it again
    would cost time and give the same module (the text is what real XLA receives)."""
    module = run_passes(module, pipeline)
    source, namespace = generate(module)
    exec(builtins.compile(source, f"<minijax:{module.name}>", "exec"), namespace)
    main = next(f for f in module.funcs if f.visibility == "public")
    in_avals = [ShapedArray(t.shape, t.dtype) for t in main.arg_types]
    out_avals = [ShapedArray(t.shape, t.dtype) for t in main.result_types]
    return Executable(module, source, namespace[main.name], in_avals, out_avals)


jit_primitive.install_backend(
    jit_primitive.Backend(compile_module=compile_module, compile_text=compile))
