"""Linear algebra primitives: the matrix decompositions of ``lax.linalg``.

The decompositions (``cholesky``, ``eigh``, ``qr``, ``svd``, ``lu``) and
``triangular_solve`` work on the last two dimensions and are batched over the leading
ones (``dot_general``, the product behind them all, is in :mod:`minijax.lax.base`);
their kernels call ``np.linalg`` (or short NumPy loops where NumPy has no routine) and
keep the input dtype, so float32 in gives float32 out. Where a matrix has no
decomposition they do what LAPACK does under XLA: NaNs or infinities, never an error,
because a traced program cannot raise on values. Each decomposition's rules follow it:
its JVP (products and triangular solves, with lax operations) and its lowering (the
LAPACK custom call JAX emits on the CPU).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from minijax import dtypes
from minijax.compiler import lowering
from minijax.compiler.stablehlo_ir import Dense, Opaque, TensorType, Typed, Value
from minijax.core import Primitive, ShapedArray
from minijax.interpreters import ad, batching
from minijax.interpreters.transpose import deftranspose
from minijax.lax import elementwise as ew
from minijax.lax.base import (
    INEXACT,
    add,
    check_dtype,
    dot_general,
    full,
    full_like,
    ge,
    le,
    operand,
    reduce_sum_p,
    reshape,
    select,
    transpose,
)
from minijax.lax.elementwise import conj
from minijax.lax.reductions import reduce_sum
from minijax.lax.shapes import broadcast_in_dim, broadcasted_iota
from minijax.lax.slicing import _slice_lowering, concatenate, pad, slice_in_dim

__all__ = [
    "cholesky",
    "cholesky_p",
    "eigh",
    "eigh_p",
    "lu",
    "lu_p",
    "qr",
    "qr_p",
    "svd",
    "svd_p",
    "triangular_solve",
    "triangular_solve_p",
]


# ---------------------------------------------------------------------------------------
# Shared checks and helpers of the decompositions
# ---------------------------------------------------------------------------------------


def _check_matrix(name: str, x: ShapedArray, square: bool = False) -> None:
    check_dtype(name, INEXACT, x.dtype, 0)
    if x.ndim < 2:
        raise TypeError(f"Input 0 to {name} must have rank at least 2, but got shape={x.shape}")
    if square and x.shape[-1] != x.shape[-2]:
        raise ValueError(
            f"Argument to {name} must be a batch of square matrices, got shape {x.shape}."
        )


def _real_dtype(dt: np.dtype) -> np.dtype:
    return np.dtype(np.float64 if dt == np.complex128 else np.float32) if dt.kind == "c" else dt


def matrix_transpose(x: Any, conjugate: bool = False) -> Any:
    """Swap the last two dimensions (and conjugate complex entries if asked)."""
    perm = (*range(x.ndim - 2), x.ndim - 1, x.ndim - 2)
    x = transpose(x, perm)
    return conj(x) if conjugate and x.dtype.kind == "c" else x


def _symmetrize(x: Any) -> Any:
    """``(x + x^H) / 2``: decompositions of Hermitian matrices read both triangles then.

    As in JAX this is NumPy arithmetic: the array operators, which ``minijax.numpy``
    attaches (``jnp.add`` and ``jnp.true_divide``), so an integer or boolean matrix comes
    out as floats: ``cholesky`` of an int32 matrix works.
    """
    return (x + matrix_transpose(x, conjugate=True)) / 2


def _hermitian_input(name: str, x: Any, symmetrize_input: bool) -> Any:
    x = operand(x)
    if x.ndim < 2:
        raise TypeError(f"Input 0 to {name} must have rank at least 2, but got shape={x.shape}")
    return _symmetrize(x) if symmetrize_input else x


def _lower_triangle(x: Any) -> Any:
    """Zero the strictly upper triangle (of the last two dimensions): keep ``row + 0 >=
    column``, the mask of ``jnp.tril(x, k=0)`` (JAX records the ``+ 0``)."""
    rows = add(broadcasted_iota(np.int32, x.shape, x.ndim - 2), np.int32(0))
    cols = broadcasted_iota(np.int32, x.shape, x.ndim - 1)
    return select(ge(rows, cols), x, full_like(x, 0))


def _primitive(name: str, kernel: Any, rule: Any, multiple_results: bool = True) -> Primitive:
    prim = Primitive(name, multiple_results=multiple_results)
    prim.def_impl(kernel)
    prim.def_abstract_eval(rule)
    return prim


# Helpers of the JVP rules: batched products, triangles, identities and diagonals, on the
# last two axes, written with lax operations (so the rules can be differentiated again).


def _matmul(a: Any, b: Any) -> Any:
    """Batched matrix product of ``(..., m, k)`` and ``(..., k, n)``."""
    batch = tuple(range(a.ndim - 2))
    return dot_general(a, b, (((a.ndim - 1,), (b.ndim - 2,)), (batch, batch)))


def _H(x: Any) -> Any:
    return matrix_transpose(x, conjugate=True)


def _is_complex(x: Any) -> bool:
    return dtypes.issubdtype(x.dtype, np.complexfloating)


def _triangle(x: Any, lower: bool, k: int = 0) -> Any:
    """The lower (``j <= i + k``) or upper (``j >= i + k``) triangle of the last two axes;
    zeros elsewhere."""
    rows = broadcasted_iota(np.int32, x.shape, x.ndim - 2)
    cols = broadcasted_iota(np.int32, x.shape, x.ndim - 1)
    shifted = ew.add(rows, ew.convert_element_type(k, np.int32))
    keep = le(cols, shifted) if lower else ge(cols, shifted)
    return ew.select(keep, x, full_like(x, 0))


def _eye_like(x: Any) -> Any:
    """Identity matrices of ``x``'s (square) shape and dtype."""
    rows = broadcasted_iota(np.int32, x.shape, x.ndim - 2)
    cols = broadcasted_iota(np.int32, x.shape, x.ndim - 1)
    return ew.convert_element_type(ew.eq(rows, cols), x.dtype)


def _diagonal(x: Any) -> Any:
    """The diagonal of square matrices, as the last axis."""
    return reduce_sum(ew.mul(x, _eye_like(x)), (x.ndim - 1,))


def _as_rows(v: Any, n: int) -> Any:
    """``v[..., None, :]`` stretched to ``n`` rows: matrices whose rows all equal ``v``."""
    batch = v.ndim - 1
    return broadcast_in_dim(v, (*v.shape[:-1], n, v.shape[-1]), (*range(batch), batch + 1))


def _as_columns(v: Any, n: int) -> Any:
    """``v[..., :, None]`` stretched to ``n`` columns."""
    batch = v.ndim - 1
    return broadcast_in_dim(v, (*v.shape[:-1], v.shape[-1], n), (*range(batch), batch))


def _real_part(x: Any) -> Any:
    return ew.real(x) if _is_complex(x) else x


def _permute_rows(x: Any, permutation: Any) -> Any:
    """``x[..., permutation, :]``, as a product with a permutation matrix (linear in x)."""
    m = x.shape[-2]
    shape = (*permutation.shape, m)
    rows = broadcast_in_dim(permutation, shape, tuple(range(permutation.ndim)))
    matrix = ew.eq(rows, broadcasted_iota(permutation.dtype, shape, len(shape) - 1))
    return _matmul(ew.convert_element_type(matrix, x.dtype), x)


# ---------------------------------------------------------------------------------------
# The LAPACK custom calls the decompositions lower to, as JAX emits them for the CPU
# ---------------------------------------------------------------------------------------

_LAPACK_PREFIX = {"float32": "s", "float64": "d", "complex64": "c", "complex128": "z"}


def _layouts(types: Sequence[TensorType], batch: int) -> list[Dense]:
    out = []
    for t in types:
        rank = len(t.shape)
        if rank - batch >= 2:
            order = [rank - 2, rank - 1, *range(rank - 3, -1, -1)]
        else:
            order = list(range(rank - 1, -1, -1))
        out.append(Dense(np.array(order, np.int64), f"tensor<{rank}xindex>"))
    return out


def _sharding_rule(ins: Sequence[TensorType], outs: Sequence[TensorType], batch: int) -> Opaque:
    """Shardy's rule: one factor letter per dimension, shared by the batch dimensions."""
    letters = iter("ijklmnopqrstuvwxyzabcdefgh")
    sizes: dict[str, int] = {}
    batch_letters = []

    def dims(t: TensorType) -> str:
        names = []
        for d, n in enumerate(t.shape):
            if d < batch and len(batch_letters) > d:
                names.append(batch_letters[d])
                continue
            letter = next(letters)
            if d < batch:
                batch_letters.append(letter)
            sizes[letter] = n
            names.append(letter)
        return "[" + ", ".join(names) + "]"

    lhs = ", ".join(dims(t) for t in ins)
    rhs = ", ".join(dims(t) for t in outs)
    factors = ", ".join(f"{k}={v}" for k, v in sizes.items())
    return Opaque(f"#sdy.op_sharding_rule<({lhs})->({rhs}) {{{factors}}}, custom>")


def _lapack_call(b: lowering.Builder, target: str, operands: Sequence[Value],
                 out_types: Sequence[TensorType], batch: int, config: dict[str, Any],
                 alias: tuple[list[int], int]) -> list[Value]:
    """``stablehlo.custom_call @lapack_<x>_ffi`` with the attributes JAX gives it."""
    output_index, operand_index = alias
    attributes = {
        "backend_config": "",
        "mhlo.backend_config": {k: Typed(v, "ui8") for k, v in config.items()},
        "mhlo.frontend_attributes": {"num_batch_dims": str(batch)},
        "operand_layouts": _layouts([v.type for v in operands], batch),
        "output_operand_aliases": [Opaque(
            f"#stablehlo.output_operand_alias<output_tuple_indices = {output_index}, "
            f"operand_index = {operand_index}, operand_tuple_indices = []>")],
        "result_layouts": _layouts(out_types, batch),
        "sdy.sharding_rule": _sharding_rule([v.type for v in operands], out_types, batch),
    }
    return b.op("stablehlo.custom_call", operands, out_types,
                {"call_target_name": target, "attributes": attributes}).results


def _status_ok(b: lowering.Builder, info: Value, direction: str = "EQ") -> Value:
    """Where LAPACK succeeded: ``info == 0`` (``>= 0`` for getrf)."""
    return b.compare(info, b.full(0, info.type), direction)


def _nan_where_failed(b: lowering.Builder, ok: Value, result: Value) -> Value:
    """Results of a failed factorisation are NaN (as in JAX)."""
    batch = len(ok.type.shape)
    extra = len(result.type.shape) - batch
    ok = b.broadcast(ok, ok.type.shape + (1,) * extra, range(batch))
    nan = complex(np.nan, np.nan) if result.type.dtype.kind == "c" else np.nan
    nan = b.full(nan, result.type)
    ok = b.broadcast(ok, result.type.shape, range(len(result.type.shape)))
    return b.select(ok, result, nan)


def _batch_and_info(x: TensorType) -> tuple[int, TensorType]:
    batch = len(x.shape) - 2
    return batch, TensorType(x.shape[:batch], np.dtype(np.int32))


# ---------------------------------------------------------------------------------------
# cholesky: A = L L^H for a Hermitian positive definite A
# ---------------------------------------------------------------------------------------


def _cholesky_one(m: np.ndarray) -> np.ndarray:
    try:
        return np.linalg.cholesky(m)
    except np.linalg.LinAlgError:
        return np.full_like(m, np.nan)


def _cholesky_kernel(x: np.ndarray) -> np.ndarray:
    """LAPACK fails on a matrix that is not positive definite; XLA then returns NaNs for
    that matrix. So: the whole batch at once, or if that fails, one matrix at a time."""
    try:
        return np.linalg.cholesky(x)
    except np.linalg.LinAlgError:
        flat = x.reshape(-1, *x.shape[-2:])
        return np.stack([_cholesky_one(m) for m in flat]).reshape(x.shape)


def _cholesky_rule(x: ShapedArray) -> ShapedArray:
    _check_matrix("cholesky", x, square=True)
    return x.strip_weak_type()


cholesky_p = _primitive("cholesky", _cholesky_kernel, _cholesky_rule, multiple_results=False)


def cholesky(x: Any, *, symmetrize_input: bool = True) -> Any:
    """The lower-triangular ``L`` with ``x = L @ L^H`` (NaNs if ``x`` is not positive
    definite). Only the lower triangle is read unless ``symmetrize_input``."""
    x = _hermitian_input("cholesky", x, symmetrize_input)
    return _lower_triangle(cholesky_p.bind(x))


def _cholesky_jvp(primals: list, tangents: list) -> tuple[Any, Any]:
    """A = L Lᴴ gives dA = dL Lᴴ + L dLᴴ, so L⁻¹ dA L⁻ᴴ = L⁻¹dL + (L⁻¹dL)ᴴ, whose lower
    triangle (with half the diagonal) is L⁻¹ dL, lower triangular."""
    (a,), (da,) = primals, tangents
    chol = cholesky_p.bind(a)
    solve = lambda b, **kw: triangular_solve(chol, b, lower=True, **kw)  # noqa: E731
    right = solve(ad.instantiate(da), left_side=False, transpose_a=True, conjugate_a=True)
    middle = solve(right, left_side=True)
    halved = ew.div(_triangle(middle, lower=True),
                    ew.add(full_like(a, 1, shape=()), _eye_like(a)))
    return chol, _matmul(chol, halved)


ad.jvp_rules[cholesky_p] = _cholesky_jvp


@lowering.register(cholesky_p)
def _cholesky_lowering(ctx: lowering.RuleContext, x: Value) -> Value:
    b = ctx.b
    batch, info = _batch_and_info(x.type)
    target = f"lapack_{_LAPACK_PREFIX[x.type.dtype.name]}potrf_ffi"
    factor, status = _lapack_call(b, target, [x], [x.type, info], batch, {"uplo": ord("L")},
                                  ([0], 0))
    return _nan_where_failed(b, _status_ok(b, status), factor)


# ---------------------------------------------------------------------------------------
# eigh: eigenvalues (ascending) and eigenvectors of a Hermitian matrix
# ---------------------------------------------------------------------------------------


def _eigh_kernel(x: np.ndarray, *, lower: bool, sort_eigenvalues: bool,
                 subset_by_index: Any, algorithm: Any) -> list[np.ndarray]:
    w, v = np.linalg.eigh(x, UPLO="L" if lower else "U")
    return [v, w.astype(_real_dtype(x.dtype), copy=False)]


def _eigh_rule(x: ShapedArray, *, lower: bool, sort_eigenvalues: bool, subset_by_index: Any,
               algorithm: Any) -> list[ShapedArray]:
    _check_matrix("eigh", x, square=True)
    if subset_by_index is not None:
        raise NotImplementedError("eigh: subset_by_index is not supported by minijax")
    return [ShapedArray(x.shape, x.dtype), ShapedArray(x.shape[:-1], _real_dtype(x.dtype))]


eigh_p = _primitive("eigh", _eigh_kernel, _eigh_rule)


def eigh(x: Any, *, lower: bool = True, symmetrize_input: bool = True,
         sort_eigenvalues: bool = True, subset_by_index: Any = None,
         implementation: Any = None) -> tuple[Any, Any]:
    """``(v, w)``: eigenvectors (columns of ``v``) and ascending eigenvalues ``w`` of the
    Hermitian ``x``, reading its ``lower`` (or upper) triangle."""
    x = _hermitian_input("eigh", x, symmetrize_input)
    v, w = eigh_p.bind(x, lower=bool(lower), sort_eigenvalues=bool(sort_eigenvalues),
                       subset_by_index=subset_by_index, algorithm=None)
    return v, w


def _eigh_jvp(primals: list, tangents: list, **params: Any) -> list[Any]:
    """For distinct eigenvalues: dw = diag(Vᴴ dA V), dV = V (F ∘ Vᴴ dA V) with
    F[i, j] = 1 / (w[j] - w[i]) off the diagonal and 0 on it."""
    (a,), (da,) = primals, tangents
    v, w = eigh_p.bind(a, **params)
    n = a.shape[-1]
    w_full = ew.convert_element_type(w, a.dtype)
    eye = _eye_like(a)
    differences = ew.sub(_as_rows(w_full, n), _as_columns(w_full, n))
    f = ew.sub(ew.integer_pow(ew.add(eye, differences), -1), eye)
    projected = _matmul(_matmul(_H(v), ad.instantiate(da)), v)
    dv = _matmul(v, ew.mul(f, projected))
    dw = _diagonal(_real_part(projected))
    return [v, w], [dv, dw]


ad.jvp_rules[eigh_p] = _eigh_jvp


@lowering.register(eigh_p)
def _eigh_lowering(ctx: lowering.RuleContext, x: Value, *, lower: bool,
                   sort_eigenvalues: bool, subset_by_index: Any, algorithm: Any
                   ) -> list[Value]:
    b = ctx.b
    batch, info = _batch_and_info(x.type)
    values = lowering.tensor_type(ctx.avals_out[1])
    kind = "heevd" if x.type.dtype.kind == "c" else "syevd"
    target = f"lapack_{_LAPACK_PREFIX[x.type.dtype.name]}{kind}_ffi"
    vectors, w, status = _lapack_call(
        b, target, [x], [x.type, values, info], batch,
        {"mode": ord("V"), "uplo": ord("L" if lower else "U")}, ([0], 0))
    ok = _status_ok(b, status)
    return [_nan_where_failed(b, ok, result) for result in (vectors, w)]


# ---------------------------------------------------------------------------------------
# qr: A = Q R with orthonormal columns in Q and upper-triangular R
# ---------------------------------------------------------------------------------------


def _qr_shapes(x: ShapedArray, full_matrices: bool) -> tuple[tuple[int, ...], tuple[int, ...]]:
    *batch, m, n = x.shape
    k = m if full_matrices else min(m, n)
    return (*batch, m, k), (*batch, k, n)


def _qr_kernel(x: np.ndarray, *, pivoting: bool, full_matrices: bool, use_magma: Any
               ) -> list[np.ndarray]:
    q, r = np.linalg.qr(x, mode="complete" if full_matrices else "reduced")
    return [q.astype(x.dtype, copy=False), r.astype(x.dtype, copy=False)]


def _qr_rule(x: ShapedArray, *, pivoting: bool, full_matrices: bool, use_magma: Any
             ) -> list[ShapedArray]:
    _check_matrix("qr", x)
    if pivoting:
        raise NotImplementedError("qr: pivoting is not supported by minijax")
    q_shape, r_shape = _qr_shapes(x, full_matrices)
    return [ShapedArray(q_shape, x.dtype), ShapedArray(r_shape, x.dtype)]


qr_p = _primitive("qr", _qr_kernel, _qr_rule)


def qr(x: Any, *, pivoting: bool = False, full_matrices: bool = True,
       use_magma: Any = None) -> tuple[Any, Any]:
    """``(q, r)`` with ``x = q @ r``; ``full_matrices=False`` gives the reduced form."""
    q, r = qr_p.bind(operand(x, qr_p), pivoting=bool(pivoting), full_matrices=bool(full_matrices),
                     use_magma=use_magma)
    return q, r


def _thin_qr_jvp(q: Any, r: Any, dx: Any) -> tuple[Any, Any]:
    """X = QR with Q m×n (m ≥ n): with C = Qᴴ dX R⁻¹, Qᴴ dQ is the skew-Hermitian matrix
    Ω built from the strictly lower triangle of C, and dR = (C - Ω) R."""
    dx_rinv = triangular_solve(r, dx)  # dX R⁻¹ (a right-side solve)
    c = _matmul(_H(q), dx_rinv)
    below = _triangle(c, lower=True, k=-1)
    omega = ew.sub(below, _H(below))
    if _is_complex(c):  # the imaginary part of the diagonal of C belongs to Ω
        omega = ew.add(omega, ew.mul(_eye_like(c), ew.sub(c, ew.complex(
            ew.real(c), full_like(ew.real(c), 0)))))
    dq = ew.add(_matmul(q, ew.sub(omega, c)), dx_rinv)
    dr = _matmul(ew.sub(c, omega), r)
    return dq, dr


def _solve(a: Any, b: Any) -> Any:
    """The ``x`` with ``a @ x == b`` for square ``a``, through its LU decomposition."""
    lu_, _, permutation = lu_p.bind(a)
    y = triangular_solve(lu_, _permute_rows(b, permutation), left_side=True, lower=True,
                         unit_diagonal=True)
    return triangular_solve(lu_, y, left_side=True, lower=False)


def _qr_jvp(primals: list, tangents: list, *, pivoting: bool, full_matrices: bool,
            use_magma: Any) -> tuple[list[Any], list[Any]]:
    (x,), (dx,) = primals, tangents
    q, r = qr_p.bind(x, pivoting=pivoting, full_matrices=full_matrices, use_magma=use_magma)
    dx = ad.instantiate(dx)
    m, n = x.shape[-2:]
    if m < n:  # X = Q [R1 R2]: R1 from the square QR of X1, and R2 = Qᴴ X2
        x2 = slice_in_dim(x, m, n, 1, x.ndim - 1)
        dx1 = slice_in_dim(dx, 0, m, 1, x.ndim - 1)
        dx2 = slice_in_dim(dx, m, n, 1, x.ndim - 1)
        dq, dr1 = _thin_qr_jvp(q, slice_in_dim(r, 0, m, 1, x.ndim - 1), dx1)
        dr2 = ew.add(_matmul(_H(dq), x2), _matmul(_H(q), dx2))
        return [q, r], [dq, concatenate([dr1, dr2], x.ndim - 1)]
    if not full_matrices or m == n:
        dq, dr = _thin_qr_jvp(q, r, dx)
        return [q, r], [dq, dr]
    # Tall with full_matrices: the first n columns of Q as in the thin case; the other
    # m - n columns are LAPACK's (Householder) completion, whose derivative is given by
    # Roberts & Roberts (arXiv:2409.13374, eqs. 32-33).
    rows, cols = x.ndim - 2, x.ndim - 1
    q_mn, q_mp = slice_in_dim(q, 0, n, 1, cols), slice_in_dim(q, n, m, 1, cols)
    dq_mn, dr_nn = _thin_qr_jvp(q_mn, slice_in_dim(r, 0, n, 1, rows), dx)
    q_nn, q_pn = slice_in_dim(q_mn, 0, n, 1, rows), slice_in_dim(q_mn, n, m, 1, rows)
    dq_nn, dq_pn = slice_in_dim(dq_mn, 0, n, 1, rows), slice_in_dim(dq_mn, n, m, 1, rows)
    z_pn_h = _solve(_H(ew.sub(q_nn, _eye_like(q_nn))), _H(q_pn))  # Z = Q_pn (Q_nn - I)⁻¹
    z_pn = _H(z_pn_h)
    dq_mp = ew.sub(_matmul(dq_mn, z_pn_h),
                   _matmul(ew.add(q_mn, _matmul(q_mp, z_pn)),
                           _H(ew.sub(dq_pn, _matmul(z_pn, dq_nn)))))
    zeros = full((*x.shape[:-2], m - n, n), 0, x.dtype)
    return [q, r], [concatenate([dq_mn, dq_mp], cols), concatenate([dr_nn, zeros], rows)]


ad.jvp_rules[qr_p] = _qr_jvp


@lowering.register(qr_p)
def _qr_lowering(ctx: lowering.RuleContext, x: Value, *, pivoting: bool,
                 full_matrices: bool, use_magma: Any) -> list[Value]:
    """geqrf (R above the diagonal, Householder vectors below), then orgqr builds Q."""
    b = ctx.b
    *batch_shape, m, n = x.type.shape
    batch, k = len(batch_shape), min(m, n)
    prefix = _LAPACK_PREFIX[x.type.dtype.name]
    taus = TensorType((*batch_shape, k), x.type.dtype)
    packed, tau = _lapack_call(b, f"lapack_{prefix}geqrf_ffi", [x], [x.type, taus], batch, {},
                               ([0], 0))
    q_in = packed
    if m < n:
        q_in = _slice_lowering(ctx, packed, (0,) * (batch + 2), (*batch_shape, m, m), None)
    elif full_matrices:
        q_in = b.emit("stablehlo.pad", packed, b.constant(0, x.type.dtype),
                      type=TensorType((*batch_shape, m, m), x.type.dtype),
                      low=(0,) * (batch + 2), high=(0,) * batch + (0, m - n),
                      interior=(0,) * (batch + 2))
    q = _lapack_call(b, f"lapack_{prefix}orgqr_ffi", [q_in, tau], [q_in.type], batch, {},
                     ([], 0))[0]
    r = packed
    if not full_matrices and m > n:
        r = _slice_lowering(ctx, packed, (0,) * (batch + 2), (*batch_shape, k, n), None)
    matrix = TensorType(r.type.shape[batch:], dtypes.canonicalize_dtype(np.int64))
    rows = b.op("stablehlo.iota", [], [matrix], {"dim": 0}).result
    rows = b.emit("stablehlo.add", rows, b.full(-1, rows.type))
    cols = b.op("stablehlo.iota", [], [matrix], {"dim": 1}).result
    below = b.compare(rows, cols, "GE")  # strictly below the diagonal: zero
    if batch:
        below = b.broadcast(below, r.type.shape, (batch, batch + 1))
    r = b.select(below, b.full(0, r.type), r)
    return [q, r]


# ---------------------------------------------------------------------------------------
# svd: A = U diag(S) Vh, singular values descending
# ---------------------------------------------------------------------------------------


def _svd_kernel(x: np.ndarray, *, full_matrices: bool, compute_uv: bool, subset_by_index: Any,
                algorithm: Any) -> list[np.ndarray]:
    real = _real_dtype(x.dtype)
    if not compute_uv:
        return [np.linalg.svd(x, compute_uv=False).astype(real, copy=False)]
    u, s, vh = np.linalg.svd(x, full_matrices=full_matrices)
    return [s.astype(real, copy=False), u.astype(x.dtype, copy=False),
            vh.astype(x.dtype, copy=False)]


def _svd_rule(x: ShapedArray, *, full_matrices: bool, compute_uv: bool, subset_by_index: Any,
              algorithm: Any) -> list[ShapedArray]:
    _check_matrix("svd", x)
    if subset_by_index is not None:
        raise NotImplementedError("svd: subset_by_index is not supported by minijax")
    *batch, m, n = x.shape
    k = min(m, n)
    s = ShapedArray((*batch, k), _real_dtype(x.dtype))
    if not compute_uv:
        return [s]
    u_cols, vh_rows = (m, n) if full_matrices else (k, k)
    return [s, ShapedArray((*batch, m, u_cols), x.dtype),
            ShapedArray((*batch, vh_rows, n), x.dtype)]


svd_p = _primitive("svd", _svd_kernel, _svd_rule)


def svd(x: Any, *, full_matrices: bool = True, compute_uv: bool = True,
        subset_by_index: Any = None, algorithm: Any = None) -> Any:
    """``(u, s, vh)`` with ``x = u @ diag(s) @ vh`` and ``s`` descending; only ``s`` if not
    ``compute_uv``."""
    outs = svd_p.bind(operand(x, svd_p), full_matrices=bool(full_matrices),
                      compute_uv=bool(compute_uv), subset_by_index=subset_by_index,
                      algorithm=algorithm)
    if not compute_uv:
        return outs[0]
    s, u, vh = outs
    return u, s, vh


def _svd_jvp(primals: list, tangents: list, *, full_matrices: bool, compute_uv: bool,
             subset_by_index: Any, algorithm: Any) -> tuple[list[Any], list[Any]]:
    """With dS = Uᴴ dA V: ds = Re diag(dS); dU and dV mix dS with 1/(sⱼ² - sᵢ²) off the
    diagonal, plus, for non-square A, the parts of dA outside the span of U or V."""
    (a,), (da,) = primals, tangents
    s, u, vh = svd_p.bind(a, full_matrices=False, compute_uv=True,
                          subset_by_index=subset_by_index, algorithm=algorithm)
    m, n = a.shape[-2:]
    if compute_uv and full_matrices and m != n:
        raise NotImplementedError(
            "Singular value decomposition JVP not implemented for full matrices")
    da = ad.instantiate(da)
    v = _H(vh)
    ds_matrix = _matmul(_matmul(_H(u), da), v)
    ds = _diagonal(_real_part(ds_matrix))
    if not compute_uv:
        return [s], [ds]
    k = s.shape[-1]
    rows, columns = _as_rows(s, k), _as_columns(s, k)
    eye = _eye_like(rows)
    f = ew.sub(ew.div(full_like(rows, 1),
                      ew.add(ew.mul(ew.add(rows, columns), ew.sub(rows, columns)), eye)),
               eye)
    f, s_rows, s_columns = (ew.convert_element_type(z, a.dtype) for z in (f, rows, columns))
    ds_s = ew.mul(s_rows, ds_matrix)  # dS diag(s)
    s_ds = ew.mul(s_columns, ds_matrix)  # diag(s) dS
    nonzero = ew.select(ew.eq(s, full_like(s, 0)), full_like(s, 1), s)
    s_inv = ew.select(ew.eq(s, full_like(s, 0)), full_like(s, 0),
                      ew.div(full_like(s, 1), nonzero))
    s_inv = ew.convert_element_type(ew.mul(_as_rows(s_inv, k), eye), a.dtype)
    du_diagonal = ew.mul(ew.mul(full_like(a, 0.5, shape=()), ew.sub(ds_matrix, _H(ds_matrix))),
                         s_inv)
    du = _matmul(u, ew.add(ew.mul(f, ew.add(ds_s, _H(ds_s))), du_diagonal))
    dv = _matmul(v, ew.mul(f, ew.add(s_ds, _H(s_ds))))
    s_by_row = _as_rows(ew.convert_element_type(s, a.dtype), m if m > n else n)
    if m > n:
        dav = _matmul(da, v)
        outside = ew.sub(dav, _matmul(u, _matmul(_H(u), dav)))
        du = ew.add(du, ew.div(outside, s_by_row))
    if n > m:
        dahu = _matmul(_H(da), u)
        outside = ew.sub(dahu, _matmul(v, _matmul(vh, dahu)))
        dv = ew.add(dv, ew.div(outside, s_by_row))
    return [s, u, vh], [ds, du, _H(dv)]


ad.jvp_rules[svd_p] = _svd_jvp


@lowering.register(svd_p)
def _svd_lowering(ctx: lowering.RuleContext, x: Value, *, full_matrices: bool,
                  compute_uv: bool, subset_by_index: Any, algorithm: Any) -> list[Value]:
    b = ctx.b
    *batch_shape, m, n = x.type.shape
    batch, k = len(batch_shape), min(m, n)
    info = TensorType(tuple(batch_shape), np.dtype(np.int32))
    s_type = TensorType((*batch_shape, k), np.dtype(x.type.dtype.type(0).real.dtype))
    if compute_uv:
        u_cols, vt_rows = (m, n) if full_matrices else (k, k)
        u_type = TensorType((*batch_shape, m, u_cols), x.type.dtype)
        vt_type = TensorType((*batch_shape, vt_rows, n), x.type.dtype)
        mode = ord("A" if full_matrices else "S")
    else:
        u_type = TensorType((*batch_shape, m, m), x.type.dtype)
        vt_type = TensorType((*batch_shape, n, n), x.type.dtype)
        mode = ord("N")
    target = f"lapack_{_LAPACK_PREFIX[x.type.dtype.name]}gesdd_ffi"
    _, s, u, vt, status = _lapack_call(b, target, [x], [x.type, s_type, u_type, vt_type, info],
                                       batch, {"mode": mode}, ([0], 0))
    ok = _status_ok(b, status)
    return [_nan_where_failed(b, ok, result) for result in ([s, u, vt] if compute_uv else [s])]


# ---------------------------------------------------------------------------------------
# lu: P A = L U with partial pivoting (LAPACK's getrf)
# ---------------------------------------------------------------------------------------


def _lu_one(a: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Gaussian elimination with partial pivoting on one matrix: at step ``j`` the row with
    the largest entry in column ``j`` is swapped up (LAPACK measures complex entries by
    ``|re| + |im|``). ``L`` (unit diagonal, not stored) and ``U`` share one array."""
    a = a.copy()
    m, n = a.shape
    pivots = np.zeros(min(m, n), np.int32)
    permutation = np.arange(m, dtype=np.int32)
    for j in range(min(m, n)):
        column = a[j:, j]
        size = np.abs(column.real) + np.abs(column.imag) if a.dtype.kind == "c" \
            else np.abs(column)
        p = j + int(np.argmax(size))
        pivots[j] = p
        a[[j, p]] = a[[p, j]]
        permutation[[j, p]] = permutation[[p, j]]
        if a[j, j] != 0:
            a[j + 1:, j] /= a[j, j]
        a[j + 1:, j + 1:] -= np.outer(a[j + 1:, j], a[j, j + 1:])
    return a, pivots, permutation


def _lu_rule(x: ShapedArray) -> list[ShapedArray]:
    _check_matrix("lu", x)
    *batch, m, n = x.shape
    return [ShapedArray(x.shape, x.dtype), ShapedArray((*batch, min(m, n)), np.int32),
            ShapedArray((*batch, m), np.int32)]


def _lu_kernel(x: np.ndarray) -> list[np.ndarray]:
    """``_lu_one`` on each matrix of the batch."""
    *batch, m, n = x.shape
    if x.size == 0:
        permutation = np.broadcast_to(np.arange(m, dtype=np.int32), (*batch, m))
        return [x.copy(), np.zeros((*batch, min(m, n)), np.int32), permutation.copy()]
    parts = zip(*(_lu_one(matrix) for matrix in x.reshape(-1, m, n)))
    return [np.stack(p).reshape(*batch, *p[0].shape) for p in parts]


lu_p = _primitive("lu", _lu_kernel, _lu_rule)


def lu(x: Any) -> tuple[Any, Any, Any]:
    """``(lu, pivots, permutation)``: ``x[permutation] = L @ U`` with ``L`` the unit lower
    triangle of ``lu`` and ``U`` its upper triangle; row ``i`` was swapped with
    ``pivots[i]`` at step ``i``."""
    lu_, pivots, permutation = lu_p.bind(operand(x, lu_p))
    return lu_, pivots, permutation


def _pad_last_two(x: Any, rows: tuple[int, int], columns: tuple[int, int]) -> Any:
    config = [(0, 0, 0)] * (x.ndim - 2) + [(*rows, 0), (*columns, 0)]
    return pad(x, full_like(x, 0, shape=()), config)


def _lu_jvp(primals: list, tangents: list) -> tuple[list[Any], list[Any]]:
    """P A = L U: with dA permuted, L⁻¹ P dA U⁻¹ = L⁻¹dL + dU U⁻¹ splits into a strictly
    lower part (giving dL) and an upper part (giving dU); ``lu`` stores both."""
    (a,), (da,) = primals, tangents
    lu_, pivots, permutation = lu_p.bind(a)
    m, n = a.shape[-2:]
    k = min(m, n)
    last = a.ndim - 1
    ell = _pad_last_two(_triangle(slice_in_dim(lu_, 0, k, 1, last), True, -1),
                        (0, 0), (0, m - k))
    ell = ew.add(ell, _eye_like(ell))
    u = _pad_last_two(_triangle(slice_in_dim(lu_, 0, k, 1, last - 1), False),
                      (0, n - k), (0, 0))
    u = ew.add(u, _pad_last_two(_eye_like(full((*a.shape[:-2], n - k, n - k), 0, a.dtype)),
                                (k, 0), (k, 0)))
    x = _permute_rows(ad.instantiate(da), permutation)
    lx = triangular_solve(ell, x, left_side=True, lower=True, unit_diagonal=True)
    lxu = triangular_solve(u, lx, left_side=False, lower=False)
    dlu = ew.add(_matmul(ell, _triangle(lxu, True, -1)), _matmul(_triangle(lxu, False), u))
    zeros = [ad.Zero(ad.tangent_aval(p.aval)) for p in (pivots, permutation)]
    return [lu_, pivots, permutation], [dlu, *zeros]


ad.jvp_rules[lu_p] = _lu_jvp


@lowering.register(lu_p)
def _lu_lowering(ctx: lowering.RuleContext, x: Value) -> list[Value]:
    """getrf gives the factors and 1-based pivots; the permutation applies the row swaps
    one by one in a ``while`` loop (a simpler loop than JAX's, with the same result; the
    row read in each step is a ``reduce_sum``, lowered by that primitive's rule)."""
    b = ctx.b
    *batch_shape, m, n = x.type.shape
    batch, k = len(batch_shape), min(m, n)
    i32 = np.dtype(np.int32)
    pivots_t = TensorType((*batch_shape, k), i32)
    info = TensorType(tuple(batch_shape), i32)
    target = f"lapack_{_LAPACK_PREFIX[x.type.dtype.name]}getrf_ffi"
    factors, pivots, status = _lapack_call(b, target, [x], [x.type, pivots_t, info], batch, {},
                                           ([0], 0))
    pivots = b.emit("stablehlo.subtract", pivots, b.full(1, pivots_t))
    lu_ = _nan_where_failed(b, _status_ok(b, status, "GE"), factors)
    perm_t = TensorType((*batch_shape, m), i32)
    perm = b.op("stablehlo.iota", [], [perm_t], {"dim": batch}).result
    types = [pivots_t, TensorType((), i32), perm_t]
    row_sum = lowering.lowering_rules[reduce_sum_p]

    def cond(r: lowering.Builder, state: list[Value]) -> list[Value]:
        return [r.compare(state[1], r.constant(k, i32), "LT")]

    def body(r: lowering.Builder, state: list[Value]) -> list[Value]:
        piv, i, p = state
        zeros = [r.constant(0, i32) for _ in batch_shape]
        col = TensorType((*batch_shape, 1), i32)
        j = r.emit("stablehlo.dynamic_slice", piv, *zeros, i, type=col,
                   sizes=(*batch_shape, 1))
        p_i = r.emit("stablehlo.dynamic_slice", p, *zeros, i, type=col, sizes=(*batch_shape, 1))
        iota = r.op("stablehlo.iota", [], [perm_t], {"dim": batch}).result
        j_b = r.broadcast(j, perm_t.shape, range(batch + 1))
        i_b = r.broadcast(i, perm_t.shape, ())
        p_j_mask = r.compare(iota, j_b, "EQ")
        p_j = row_sum(ctx._replace(b=r), r.select(p_j_mask, p, r.full(0, perm_t)),
                      axes=(batch,), out_sharding=None)
        p_j = r.emit("stablehlo.reshape", p_j, type=col)
        swapped = r.select(p_j_mask, r.broadcast(p_i, perm_t.shape, range(batch + 1)), p)
        swapped = r.select(r.compare(iota, i_b, "EQ"),
                           r.broadcast(p_j, perm_t.shape, range(batch + 1)), swapped)
        return [piv, r.emit("stablehlo.add", i, r.constant(1, i32)), swapped]

    if k == 0:
        return [lu_, pivots, perm]
    op = b.op("stablehlo.while", [pivots, b.constant(0, i32), perm], types, {},
              [lowering._region(b, types, cond), lowering._region(b, types, body)])
    return [lu_, pivots, op.results[2]]


# ---------------------------------------------------------------------------------------
# triangular_solve: solve op(A) X = B (left side) or X op(A) = B for triangular A
# ---------------------------------------------------------------------------------------


def _substitute(a: np.ndarray, b: np.ndarray, lower: bool, unit_diagonal: bool) -> np.ndarray:
    """Forward (lower) or back (upper) substitution, one row of the solution at a time,
    batched over leading dimensions. Only the named triangle of ``a`` is ever read; a zero
    on the diagonal gives infinities and NaNs, as LAPACK's trsm does."""
    m = a.shape[-1]
    x = np.zeros(np.broadcast_shapes(a.shape[:-2], b.shape[:-2]) + b.shape[-2:], b.dtype)
    for i in (range(m) if lower else reversed(range(m))):
        known = slice(0, i) if lower else slice(i + 1, m)
        rhs = b[..., i, :] - np.einsum("...j,...jn->...n", a[..., i, known], x[..., known, :])
        x[..., i, :] = rhs if unit_diagonal else rhs / a[..., i, i][..., None]
    return x


def _triangular_solve_kernel(a: np.ndarray, b: np.ndarray, *, left_side: bool, lower: bool,
                             transpose_a: bool, conjugate_a: bool, unit_diagonal: bool
                             ) -> np.ndarray:
    if conjugate_a:
        a = np.conj(a)
    if transpose_a:
        a, lower = np.swapaxes(a, -1, -2), not lower
    if left_side:
        return _substitute(a, b, lower, unit_diagonal)
    # X A = B  is  A^T X^T = B^T.
    x = _substitute(np.swapaxes(a, -1, -2), np.swapaxes(b, -1, -2), not lower, unit_diagonal)
    return np.swapaxes(x, -1, -2)


def _triangular_solve_rule(a: ShapedArray, b: ShapedArray, *, left_side: bool, lower: bool,
                           transpose_a: bool, conjugate_a: bool, unit_diagonal: bool
                           ) -> ShapedArray:
    check_dtype("triangular_solve", INEXACT, a.dtype, 0)
    check_dtype("triangular_solve", INEXACT, b.dtype, 1)
    if a.dtype != b.dtype:
        raise TypeError("triangular_solve requires both arguments to have the same dtype, "
                        f"got {a.dtype.name} and {b.dtype.name}.")
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise ValueError("The first input to triangular_solve must be a square matrix. "
                         f"Got shape {a.shape}.")
    if b.ndim != a.ndim or b.shape[:-2] != a.shape[:-2]:
        raise ValueError("triangular_solve requires both arguments to have the same batch "
                         f"dimensions, got shapes {a.shape} and {b.shape}.")
    common = b.shape[-2] if left_side else b.shape[-1]
    if common != a.shape[-1]:
        raise ValueError("Incompatible shapes for arguments to triangular_solve: "
                         f"{a.shape} and {b.shape}.")
    return ShapedArray(b.shape, b.dtype)


triangular_solve_p = _primitive("triangular_solve", _triangular_solve_kernel,
                                _triangular_solve_rule, multiple_results=False)


def triangular_solve(a: Any, b: Any, *, left_side: bool = False, lower: bool = False,
                     transpose_a: bool = False, conjugate_a: bool = False,
                     unit_diagonal: bool = False) -> Any:
    """Solve ``op(a) @ x = b`` (``left_side``) or ``x @ op(a) = b`` for ``x``, reading only
    the ``lower`` (or upper) triangle of ``a``; ``op`` transposes and/or conjugates."""
    return triangular_solve_p.bind(
        operand(a, triangular_solve_p), operand(b, triangular_solve_p, 1),
        left_side=bool(left_side), lower=bool(lower),
        transpose_a=bool(transpose_a), conjugate_a=bool(conjugate_a),
        unit_diagonal=bool(unit_diagonal),
    )


def _triangular_solve_a_term(t: Any, out: Any, a: Any, b: Any, *, left_side: bool,
                             lower: bool, transpose_a: bool, conjugate_a: bool,
                             unit_diagonal: bool) -> Any:
    """op(A) X = B gives op(A) dX = -op(dA) X: one more solve (in whichever order makes
    the product cheaper). Only the triangle of dA that the solve reads counts."""
    params = dict(left_side=left_side, lower=lower, transpose_a=transpose_a,
                  conjugate_a=conjugate_a, unit_diagonal=unit_diagonal)
    da = ew.neg(_triangle(t, lower, (-1 if lower else 1) if unit_diagonal else 0))
    if transpose_a:
        da = matrix_transpose(da)
    if conjugate_a and _is_complex(da):
        da = ew.conj(da)
    inverse = lambda rhs: triangular_solve_p.bind(a, rhs, **params)  # noqa: E731
    m, n = b.shape[-2:]
    if left_side:
        return inverse(_matmul(da, out)) if m > n else _matmul(inverse(da), out)
    return inverse(_matmul(out, da)) if m < n else _matmul(out, inverse(da))


def _triangular_solve_jvp(primals: list, tangents: list, **params: Any) -> tuple[Any, Any]:
    """Linear in ``b``; ``a`` contributes :func:`_triangular_solve_a_term`."""
    (a, b), (ta, tb) = primals, tangents
    out = triangular_solve_p.bind(a, b, **params)
    tangent: Any = ad.Zero(ad.tangent_aval(out.aval))
    if type(ta) is not ad.Zero:
        tangent = _triangular_solve_a_term(ta, out, a, b, **params)
    if type(tb) is not ad.Zero:
        tangent = ad.add_tangents(tangent, triangular_solve_p.bind(a, tb, **params))
    return out, tangent


ad.jvp_rules[triangular_solve_p] = _triangular_solve_jvp


def _triangular_solve_transpose(ct: Any, a: Any, b: Any, *, left_side: bool, lower: bool,
                                transpose_a: bool, conjugate_a: bool, unit_diagonal: bool
                                ) -> list[Any]:
    """Linear in ``b`` only: x = op(A)⁻¹ b transposes to ct_b = op(A)⁻ᵀ ct."""
    return [None, triangular_solve_p.bind(
        a, ct, left_side=left_side, lower=lower, transpose_a=not transpose_a,
        conjugate_a=conjugate_a, unit_diagonal=unit_diagonal)]


deftranspose(triangular_solve_p, _triangular_solve_transpose)


@lowering.register(triangular_solve_p)
def _triangular_solve_lowering(ctx: lowering.RuleContext, a: Value, rhs: Value, *,
                               left_side: bool, lower: bool, transpose_a: bool,
                               conjugate_a: bool, unit_diagonal: bool) -> Value:
    """trsm conjugates only along with a transpose: a conjugated, untransposed complex
    ``a`` is conjugated first (by ``conj``'s lowering rule)."""
    b = ctx.b
    batch = len(a.type.shape) - 2
    trans = "C" if transpose_a and conjugate_a else "T" if transpose_a else "N"
    config = {"diag": ord("U" if unit_diagonal else "N"), "side": ord("L" if left_side else "R"),
              "trans_x": ord(trans), "uplo": ord("L" if lower else "U")}
    target = f"lapack_{_LAPACK_PREFIX[a.type.dtype.name]}trsm_ffi"
    if conjugate_a and not transpose_a and a.type.dtype.kind == "c":  # real: nothing to do
        a = lowering.lowering_rules[ew.conj_p](ctx, a, input_dtype=a.type.dtype)
    return _lapack_call(b, target, [a, rhs], [rhs.type], batch, config, ([], 1))[0]


# ---------------------------------------------------------------------------------------
# vmap: batching rules of the decompositions (they take stacks of matrices already)
# ---------------------------------------------------------------------------------------


def _decomposition_batching(prim: Primitive) -> Any:
    """Move the batch axis in front of the matrix dimensions, decompose the stack."""
    def rule(axis_data: Any, vals: list, dims: list, **params: Any) -> tuple[Any, Any]:
        (x,), (bdim,) = vals, dims
        out = prim.bind(batching.moveaxis(x, bdim, 0), **params)
        return out, [0] * len(out) if prim.multiple_results else 0
    return rule


def _triangular_solve_batching(axis_data: Any, vals: list, dims: list, *, left_side: bool,
                               **params: Any) -> tuple[Any, int]:
    """JAX's rule: a batch of right-hand sides for one matrix is one solve with more
    columns (or rows); otherwise both operands are stacked along a leading axis."""
    (a, b), (a_dim, b_dim) = vals, dims
    if a_dim is None:
        if left_side:
            b = batching.moveaxis(b, b_dim, -1)
            flat = reshape(b, (*b.shape[:-2], b.shape[-2] * b.shape[-1]))
        else:
            b = batching.moveaxis(b, b_dim, -2)
            flat = reshape(b, (*b.shape[:-3], b.shape[-3] * b.shape[-2], b.shape[-1]))
        out = triangular_solve_p.bind(a, flat, left_side=left_side, **params)
        return reshape(out, b.shape), b.ndim - (1 if left_side else 2)
    a = batching.bdim_at_front(a, a_dim, axis_data.size)
    b = batching.bdim_at_front(b, b_dim, axis_data.size)
    return triangular_solve_p.bind(a, b, left_side=left_side, **params), 0


for _prim in (cholesky_p, eigh_p, qr_p, svd_p, lu_p):
    batching.batching_rules[_prim] = _decomposition_batching(_prim)
batching.batching_rules[triangular_solve_p] = _triangular_solve_batching
