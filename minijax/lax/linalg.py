"""Linear algebra primitives: the matrix decompositions of ``lax.linalg``.

The decompositions (``cholesky``, ``eigh``, ``qr``, ``svd``, ``lu``) and
``triangular_solve`` work on the last two dimensions and are batched over the leading
ones (``dot_general``, the product behind them all, is in :mod:`minijax.lax.base`);
their kernels call ``np.linalg`` (or short NumPy loops where NumPy has no routine) and
keep the input dtype, so float32 in gives float32 out. Where a matrix has no
decomposition they do what LAPACK does under XLA: NaNs or infinities, never an error,
because a traced program cannot raise on values.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from minijax.core import Primitive, ShapedArray
from minijax.lax.base import INEXACT, add, check_dtype, full_like, ge, operand, select, transpose
from minijax.lax.elementwise import conj
from minijax.lax.shapes import broadcasted_iota

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
