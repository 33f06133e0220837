"""``jnp.linalg``: NumPy's linear algebra, built on the decompositions of ``lax.linalg``.

Every function works on the last two axes and is batched over the others. Integer input
is computed in floating point. As in JAX, nothing checks the *values*: the inverse of a
singular matrix is full of infinities and NaNs rather than an error, because under a
transformation the values are not known when the program is traced.

* ``solve`` factors ``P A = L U`` once (``lax.linalg.lu``), permutes the right-hand side
  and does two triangular solves; ``inv`` solves against the identity;
* ``det`` and ``slogdet`` read the diagonal of ``U`` and the parity of the permutation;
* ``norm`` computes vector norms over one axis and matrix norms over two (the spectral
  and nuclear norms from singular values).
"""

from __future__ import annotations

import functools
from typing import Any, NamedTuple

import numpy as np

from minijax import dtypes, lax
from minijax.lax import linalg as lax_linalg
from minijax.numpy.creation import asarray
from minijax.numpy.products import diagonal_mask, matmul, outer, tensordot  # noqa: F401
from minijax.numpy.products import trace as _trace
from minijax.numpy.promotion import broadcast_to, check_arraylike, promote_dtypes_inexact
from minijax.numpy.reductions import max as _max
from minijax.numpy.reductions import min as _min
from minijax.numpy.reductions import reduction_axes
from minijax.numpy.reductions import sum as _sum
from minijax.numpy.ufuncs import where as _where

__all__ = [
    "EighResult", "QRResult", "SVDResult", "SlogdetResult", "cholesky", "det", "eigh",
    "eigvalsh", "inv", "matmul", "matrix_power", "matrix_rank", "multi_dot", "norm",
    "outer", "pinv", "qr", "slogdet", "solve", "svd", "svdvals", "tensordot", "trace",
]


class EighResult(NamedTuple):
    eigenvalues: Any
    eigenvectors: Any


class QRResult(NamedTuple):
    Q: Any
    R: Any


class SVDResult(NamedTuple):
    U: Any
    S: Any
    Vh: Any


class SlogdetResult(NamedTuple):
    sign: Any
    logabsdet: Any


def _inexact_operand(name: str, a: Any) -> Any:
    check_arraylike(f"jnp.linalg.{name}", a)
    (a,) = promote_dtypes_inexact(asarray(a))
    return a


def _square_operand(name: str, a: Any, describe: str) -> Any:
    a = _inexact_operand(name, a)
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise ValueError(f"Argument to {describe} must have shape [..., n, n], got {a.shape}.")
    return a


def _conj_transpose(x: Any) -> Any:
    return lax_linalg.matrix_transpose(x, conjugate=True)


def _identity(shape: tuple[int, ...], dtype: np.dtype) -> Any:
    return lax.convert_element_type(diagonal_mask(shape, len(shape) - 2, len(shape) - 1),
                                     dtype)


def _diagonal(x: Any) -> Any:
    """The main diagonal of the last two axes, as the last axis."""
    mask = diagonal_mask(x.shape, x.ndim - 2, x.ndim - 1)
    return lax.reduce_sum(lax.select(mask, x, lax.full_like(x, 0)), (x.ndim - 1,))


# ---------------------------------------------------------------------------------------
# Solving and inverting through the LU decomposition
# ---------------------------------------------------------------------------------------


def _permute_rows(b: Any, permutation: Any) -> Any:
    """``b[..., permutation, :]``, as a product with a permutation matrix of zeros and ones."""
    m = b.shape[-2]
    shape = permutation.shape + (m,)
    rows = lax.broadcast_in_dim(permutation, shape, range(permutation.ndim))
    matrix = lax.eq(rows, lax.broadcasted_iota(permutation.dtype, shape, len(shape) - 1))
    return matmul(lax.convert_element_type(matrix, b.dtype), b)


def _lu_solve(a: Any, b: Any) -> Any:
    """Solve ``a x = b`` for square ``a`` and a matrix ``b`` of the same batch shape."""
    lu, _, permutation = lax_linalg.lu(a)
    y = lax_linalg.triangular_solve(lu, _permute_rows(b, permutation), left_side=True,
                                    lower=True, unit_diagonal=True)
    return lax_linalg.triangular_solve(lu, y, left_side=True, lower=False)


def _could_be_batched_vectors(a: Any, b: Any) -> bool:
    """JAX refuses a ``b`` that reads both as a batch of vectors and as matrices."""
    if b.ndim != a.ndim - 1 or b.shape[-1] != a.shape[-1]:
        return False
    try:
        np.broadcast_shapes(a.shape[:-2], b.shape[:-1])
    except ValueError:
        return False
    return True


def solve(a: Any, b: Any) -> Any:
    """The ``x`` with ``a @ x == b``; ``b`` is a vector if 1-D, else a (batch of) matrix."""
    check_arraylike("jnp.linalg.solve", a, b)
    a, b = promote_dtypes_inexact(asarray(a), asarray(b))
    vector = b.ndim == 1
    if not vector and _could_be_batched_vectors(a, b):
        raise ValueError(
            f"Invalid shapes for solve: {a.shape}, {b.shape}. Prior to JAX v0.5.0, this "
            "would have been treated as a batched 1-dimensional solve. To recover this "
            "behavior, use solve(a, b[..., None]).squeeze(-1)."
        )
    signature = "(m,m),(m)->(m)" if vector else "(m,m),(m,n)->(m,n)"
    m = a.shape[-1] if a.ndim >= 2 else None
    for size in (a.shape[-2:] if a.ndim >= 2 else ()) + (b.shape[0 if vector else -2],):
        if size != m:
            raise ValueError(f"inconsistent size for core dimension 'm': {size} vs {m} on "
                             f"vectorized function with signature='{signature}'")
    if vector:
        b = lax.expand_dims(b, (1,))
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    a = broadcast_to(a, batch + a.shape[-2:])
    b = broadcast_to(b, batch + b.shape[-2:])
    x = _lu_solve(a, b)
    return lax.squeeze(x, (x.ndim - 1,)) if vector else x


def inv(a: Any) -> Any:
    """The inverse matrix, by solving against the identity (infinities if singular)."""
    a = _square_operand("inv", a, "inv")
    return _lu_solve(a, _identity(a.shape, a.dtype))


def _lu_diagonal_and_parity(a: Any) -> tuple[Any, Any]:
    """The diagonal of ``U`` and whether the LU's row permutation is odd."""
    lu, pivots, _ = lax_linalg.lu(a)
    steps = lax.broadcasted_iota(pivots.dtype, pivots.shape, pivots.ndim - 1)
    swaps = lax.reduce_sum(lax.convert_element_type(lax.ne(pivots, steps), np.int32),
                           (pivots.ndim - 1,))
    odd = lax.eq(lax.rem(swaps, lax.convert_element_type(2, np.int32)),
                 lax.convert_element_type(1, np.int32))
    return _diagonal(lu), odd


def _flip_sign(x: Any, odd: Any) -> Any:
    return _where(odd, lax.neg(x), x)


def det(a: Any) -> Any:
    """The determinant: the product of ``U``'s diagonal, negated for an odd permutation."""
    a = _square_operand("det", a, "det()")
    diagonal, odd = _lu_diagonal_and_parity(a)
    return _flip_sign(lax.reduce_prod(diagonal, (diagonal.ndim - 1,)), odd)


def slogdet(a: Any, *, method: str | None = None) -> SlogdetResult:
    """``(sign, log|det|)``, which does not overflow where ``det`` would."""
    a = _square_operand("slogdet", a, "slogdet()")
    diagonal, odd = _lu_diagonal_and_parity(a)
    last = (diagonal.ndim - 1,)
    sign = _flip_sign(lax.reduce_prod(lax.sign(diagonal), last), odd)
    logabsdet = lax.reduce_sum(lax.log(lax.abs(diagonal)), last)
    return SlogdetResult(sign, logabsdet)


# ---------------------------------------------------------------------------------------
# Decompositions
# ---------------------------------------------------------------------------------------


def cholesky(a: Any, *, upper: bool = False, symmetrize_input: bool = True) -> Any:
    """The Cholesky factor: lower ``L`` with ``a = L @ L^H`` (or upper ``U = L^H``)."""
    lower = lax_linalg.cholesky(_inexact_operand("cholesky", a),
                                symmetrize_input=symmetrize_input)
    return _conj_transpose(lower) if upper else lower


def qr(a: Any, mode: str = "reduced") -> Any:
    """``QRResult(Q, R)``, or only ``R`` for ``mode='r'``; ``mode='complete'`` makes
    ``Q`` square."""
    if mode not in ("reduced", "complete", "r"):
        if mode == "raw":
            raise NotImplementedError("minijax's qr has no 'raw' mode")
        raise ValueError(f"Unsupported QR decomposition mode '{mode}'")
    q, r = lax_linalg.qr(_inexact_operand("qr", a), full_matrices=mode == "complete")
    return r if mode == "r" else QRResult(q, r)


def _uplo_lower(UPLO: str | None) -> bool:
    if UPLO not in (None, "L", "U"):
        raise ValueError(f"UPLO must be one of None, 'L', or 'U', got {UPLO}")
    return UPLO != "U"


def eigh(a: Any, UPLO: str | None = None, symmetrize_input: bool = True) -> EighResult:
    """Eigenvalues (ascending) and eigenvectors (columns) of a Hermitian matrix."""
    v, w = lax_linalg.eigh(_inexact_operand("eigh", a), lower=_uplo_lower(UPLO),
                           symmetrize_input=symmetrize_input)
    return EighResult(w, v)


def eigvalsh(a: Any, UPLO: str | None = "L", *, symmetrize_input: bool = True) -> Any:
    """The eigenvalues of a Hermitian matrix, ascending."""
    return eigh(a, UPLO, symmetrize_input).eigenvalues


def svd(a: Any, full_matrices: bool = True, compute_uv: bool = True, hermitian: bool = False,
        subset_by_index: Any = None) -> Any:
    """``SVDResult(U, S, Vh)`` with ``a = U @ diag(S) @ Vh``, or ``S`` alone."""
    result = lax_linalg.svd(_inexact_operand("svd", a), full_matrices=full_matrices,
                            compute_uv=compute_uv, subset_by_index=subset_by_index)
    return SVDResult(*result) if compute_uv else result


def svdvals(x: Any, /) -> Any:
    """The singular values, descending."""
    return svd(x, compute_uv=False)


# ---------------------------------------------------------------------------------------
# Norms
# ---------------------------------------------------------------------------------------


def _abs_squared(x: Any) -> Any:
    return lax.real(lax.mul(x, lax.conj(x))) if x.dtype.kind == "c" else lax.square(x)


def _vector_norm(x: Any, ord: Any, axes: tuple[int, ...]) -> Any:
    """A norm of the vectors along ``axes[0]``, with the reduced axis kept."""
    if ord is None or ord == 2:
        return lax.sqrt(_sum(_abs_squared(x), axes, keepdims=True))
    if isinstance(ord, str):
        raise ValueError(f"Invalid order '{ord}' for vector norm.")
    magnitude = lax.abs(x)
    if ord == np.inf:
        return _max(magnitude, axes, keepdims=True)
    if ord == -np.inf:
        return _min(magnitude, axes, keepdims=True)
    if ord == 0:
        nonzero = lax.convert_element_type(lax.ne(x, lax.full_like(x, 0)), magnitude.dtype)
        return _sum(nonzero, axes, keepdims=True)
    if ord == 1:
        return _sum(magnitude, axes, keepdims=True)
    p = lax.convert_element_type(ord, magnitude.dtype)
    total = _sum(lax.pow(magnitude, p), axes, keepdims=True)
    return lax.pow(total, lax.div(lax.full_like(p, 1), p))


def _singular_values(x: Any, axes: tuple[int, ...]) -> Any:
    """Singular values of the matrices in ``axes``, moved to be the last two axes."""
    rest = [d for d in range(x.ndim) if d not in axes]
    return svd(lax.transpose(x, (*rest, *axes)), compute_uv=False)


def _matrix_norm(x: Any, ord: Any, axes: tuple[int, ...]) -> Any:
    """A norm of the matrices with rows along ``axes[0]`` and columns along ``axes[1]``,
    with both axes kept."""
    rows, cols = axes
    if ord is None or ord == "fro":
        return lax.sqrt(_sum(_abs_squared(x), axes, keepdims=True))
    if ord in (1, -1, np.inf, -np.inf):
        # 1: the largest column sum of |x|; inf: the largest row sum.
        summed, picked = (rows, cols) if ord in (1, -1) else (cols, rows)
        sums = _sum(lax.abs(x), summed, keepdims=True)
        return (_max if ord > 0 else _min)(sums, picked, keepdims=True)
    if ord in (2, -2, "nuc"):
        s = _singular_values(x, axes)
        last = s.ndim - 1
        value = _sum(s, last) if ord == "nuc" else (_max if ord == 2 else _min)(s, last)
        return lax.expand_dims(value, sorted(axes))
    raise ValueError(f"Invalid order '{ord}' for matrix norm.")


def norm(x: Any, ord: Any = None, axis: Any = None, keepdims: bool = False) -> Any:
    """A vector norm over one axis or a matrix norm over two (by default: over all axes
    if ``ord`` is None, else the axes of a 1-D or 2-D ``x``)."""
    x = _inexact_operand("norm", x)
    if axis is None and ord is not None and x.ndim not in (1, 2):
        raise ValueError(
            f"Improper number of axes for norm: axis={tuple(range(x.ndim))}. Pass one axis to "
            "compute a vector-norm, or two axes to compute a matrix-norm."
        )
    axes = reduction_axes(axis, x.ndim)
    if axis is None and ord is None:
        result = lax.sqrt(_sum(_abs_squared(x), axes, keepdims=True))
    elif len(axes) == 1:
        result = _vector_norm(x, ord, axes)
    elif len(axes) == 2:
        result = _matrix_norm(x, ord, axes)
    else:
        raise ValueError(
            f"Improper number of axes for norm: axis={axis}. Pass one axis to compute a "
            "vector-norm, or two axes to compute a matrix-norm."
        )
    return result if keepdims else lax.squeeze(result, axes)


# ---------------------------------------------------------------------------------------
# Derived functions
# ---------------------------------------------------------------------------------------


def matrix_power(a: Any, n: int) -> Any:
    """``a`` multiplied by itself ``n`` times (by repeated squaring); ``n < 0`` inverts."""
    check_arraylike("jnp.linalg.matrix_power", a)
    a = asarray(a)
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise ValueError(f"Argument to matrix_power must have shape [..., n, n], got {a.shape}.")
    n = int(n)
    if n < 0:
        a, n = inv(a), -n
    result = _identity(a.shape, a.dtype)
    while n:
        if n & 1:
            result = matmul(result, a)
        n >>= 1
        if n:
            a = matmul(a, a)
    return result


def pinv(a: Any, rtol: Any = None, hermitian: bool = False, *, rcond: Any = None) -> Any:
    """The Moore-Penrose pseudo-inverse ``V diag(1/s) U^H``, dropping singular values
    below ``rtol`` times the largest."""
    a = _inexact_operand("pinv", a)
    u, s, vh = svd(a, full_matrices=False)
    if rtol is None:
        rtol = rcond
    if rtol is None:
        rtol = 10 * max(a.shape[-2:]) * dtypes.finfo(s.dtype).eps
    cutoff = lax.mul(lax.convert_element_type(rtol, s.dtype), _max(s, -1, keepdims=True))
    kept = lax.gt(s, cutoff)
    s_inv = _where(kept, lax.div(lax.full_like(s, 1), _where(kept, s, 1)), 0)
    scaled = lax.mul(_conj_transpose(vh), lax.convert_element_type(
        lax.expand_dims(s_inv, (s_inv.ndim - 1,)), vh.dtype))
    return matmul(scaled, _conj_transpose(u))


def matrix_rank(M: Any, rtol: Any = None, *, hermitian: bool = False, tol: Any = None) -> Any:
    """How many singular values exceed the tolerance (by default, the largest singular
    value times the larger dimension times the dtype's epsilon)."""
    M = _inexact_operand("matrix_rank", M)
    s = svdvals(M)
    if tol is None:
        factor = max(M.shape[-2:]) * dtypes.finfo(s.dtype).eps if rtol is None else rtol
        tol = lax.mul(_max(s, -1, keepdims=True), lax.convert_element_type(factor, s.dtype))
    else:
        tol = lax.convert_element_type(tol, s.dtype)
    return _sum(lax.gt(s, tol), -1)


def multi_dot(arrays: Any, *, precision: Any = None) -> Any:
    """The product of a chain of matrices, left to right."""
    return functools.reduce(functools.partial(matmul, precision=precision), arrays)


def trace(x: Any, /, *, offset: int = 0, dtype: Any = None) -> Any:
    """The sum of the diagonal of the last two axes."""
    return _trace(x, offset, -2, -1, dtype)

