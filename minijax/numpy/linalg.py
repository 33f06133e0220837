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
from functools import partial
from typing import Any, NamedTuple

import numpy as np

from minijax import dtypes, lax
from minijax.compiler.jit import jit
from minijax.custom_derivatives import custom_jvp
from minijax.lax import linalg as lax_linalg
from minijax.numpy.creation import array, asarray, diagonal_mask
from minijax.numpy.products import matmul, outer, tensordot  # noqa: F401
from minijax.numpy.products import trace as _trace
from minijax.numpy.promotion import broadcast_to, check_arraylike, promote_dtypes_inexact
from minijax.numpy.rearranging import diagonal
from minijax.numpy.reductions import any as _any
from minijax.numpy.reductions import count_nonzero, cumprod, reduction_axes
from minijax.numpy.reductions import max as _max
from minijax.numpy.reductions import min as _min
from minijax.numpy.reductions import sum as _sum
from minijax.numpy.ufuncs import add, multiply, not_equal, remainder
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


def _square_operand(name: str, a: Any, describe: str, period: str = ".") -> Any:
    """``a`` as an inexact array of square matrices (JAX's messages differ by a period)."""
    a = _inexact_operand(name, a)
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise ValueError(
            f"Argument to {describe} must have shape [..., n, n], got {a.shape}{period}")
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


# ---------------------------------------------------------------------------------------
# Determinants
# ---------------------------------------------------------------------------------------


def _product_of_entries(a: Any, entries: tuple[tuple[int, int], ...]) -> Any:
    """``a[..., i, j] * a[..., k, l] * ...``, left to right."""
    return functools.reduce(lax.mul, (a[..., i, j] for i, j in entries))


# The Leibniz formula's terms for 3 x 3 matrices: the even permutations, then the odd ones.
_PLUS_3X3 = (((0, 0), (1, 1), (2, 2)), ((0, 1), (1, 2), (2, 0)), ((0, 2), (1, 0), (2, 1)))
_MINUS_3X3 = (((0, 2), (1, 1), (2, 0)), ((0, 0), (1, 2), (2, 1)), ((0, 1), (1, 0), (2, 2)))


@jit
def det(a: Any) -> Any:
    """The determinant. 2 x 2 and 3 x 3 matrices use the explicit formula (``ad - bc``
    is exact where an LU decomposition rounds); larger ones ``sign * exp(logabsdet)``
    from :func:`slogdet`, with a derivative that stays finite at singular matrices."""
    a = _square_operand("det", a, "_det()", period="")
    n = a.shape[-1]
    if n == 2:
        return lax.sub(_product_of_entries(a, ((0, 0), (1, 1))),
                       _product_of_entries(a, ((0, 1), (1, 0))))
    if n == 3:
        out = _product_of_entries(a, _PLUS_3X3[0])
        for term in _PLUS_3X3[1:]:
            out = lax.add(out, _product_of_entries(a, term))
        for term in _MINUS_3X3:
            out = lax.sub(out, _product_of_entries(a, term))
        return out
    return _det(a)


def _det_value(a: Any) -> Any:
    sign, logabsdet = slogdet(a)
    return multiply(sign, lax.exp(logabsdet))


_det_value.__name__ = "_det"  # the names jaxprs show, as in JAX
_det = custom_jvp(_det_value)


@_det.defjvp
def _det_jvp(primals: tuple, tangents: tuple) -> tuple[Any, Any]:
    """d det(A) = trace(adj(A) dA), the cofactor rule: unlike det(A) trace(A^-1 dA), it
    holds (and is finite) at singular matrices too."""
    (a,), (da,) = primals, tangents
    return _det(a), _trace(matmul(_adjugate(a), da), 0, -2, -1)


def _adjugate(a: Any) -> Any:
    """adj(A) = det(A) A^-1, from the SVD A = U S V^H: adj(A) = det(U V^H) V adj(S) U^H,
    where adj(S) is diagonal with entries prod_{j != i} s_j -- finite for any A."""
    u, s, vh = lax_linalg.svd(a, full_matrices=False)
    ones = lax.full_like(s[..., :1], 1)
    before = lax.concatenate([ones, cumprod(s[..., :-1], axis=-1)], s.ndim - 1)
    after = lax.concatenate([lax.rev(cumprod(lax.rev(s[..., 1:], (s.ndim - 1,)), axis=-1),
                                     (s.ndim - 1,)), ones], s.ndim - 1)
    others = lax.convert_element_type(lax.mul(before, after), a.dtype)
    orientation = slogdet(matmul(u, vh)).sign  # det(U) det(V^H), which is +-1 (or unit)
    v_scaled = lax.mul(_conj_transpose(vh), lax.expand_dims(others, (others.ndim - 1,)))
    adj = matmul(v_scaled, _conj_transpose(u))
    return lax.mul(adj, lax.expand_dims(orientation, (orientation.ndim, orientation.ndim + 1)))


@partial(jit, static_argnames=("method",))
def slogdet(a: Any, *, method: str | None = None) -> SlogdetResult:
    """``(sign, log|det|)``, which does not overflow where ``det`` would: from the LU
    decomposition, log|det| sums the logs of ``U``'s diagonal, and the sign is that of
    the permutation and of the diagonal's entries (0 and -inf for a singular matrix)."""
    if method not in (None, "lu"):
        raise ValueError(f"Unknown slogdet method '{method}'. Supported methods are 'lu' "
                         "(`None`), and 'qr'." if method != "qr" else
                         "minijax's slogdet has no 'qr' method")
    a = _square_operand("slogdet", a, "slogdet()", period="")
    return SlogdetResult(*_slogdet_lu(a))


def _slogdet_lu_value(a: Any) -> tuple[Any, Any]:
    lu, pivots, _ = lax_linalg.lu(a)
    diag = diagonal(lu, axis1=-2, axis2=-1)
    singular = _any(lax.eq(diag, lax.convert_element_type(0, diag.dtype)), axis=-1)
    swapped = not_equal(pivots, lax.iota(pivots.dtype, pivots.shape[-1]))  # row i moved
    flips = count_nonzero(swapped, axis=-1)
    complex_input = dtypes.issubdtype(a.dtype, np.complexfloating)
    if not complex_input:
        negative = lax.lt(diag, lax.convert_element_type(0, diag.dtype))
        flips = lax.add(flips, count_nonzero(negative, axis=-1))
    parity_sign = add(multiply(-2, remainder(flips, 2)), 1)  # -1 or 1
    phase = (lax.reduce_prod(lax.div(diag, lax.convert_element_type(lax.abs(diag), a.dtype)),
                             (diag.ndim - 1,))
             if complex_input else lax.convert_element_type(1, a.dtype))
    sign = lax.mul(phase, array(parity_sign, dtype=a.dtype))
    sign = _where(singular, lax.convert_element_type(0, a.dtype), sign)
    logabsdet = _sum(lax.log(lax.abs(diag)), axis=-1)
    real_dtype = logabsdet.dtype
    return sign, _where(singular, lax.convert_element_type(-np.inf, real_dtype), logabsdet)


_slogdet_lu_value.__name__ = "_slogdet_lu"
_slogdet_lu = custom_jvp(_slogdet_lu_value)


@_slogdet_lu.defjvp
def _slogdet_jvp(primals: tuple, tangents: tuple) -> tuple[Any, Any]:
    """d log|det A| = Re trace(A^-1 dA); the sign of a real matrix does not move, that of
    a complex one turns by i Im trace(A^-1 dA)."""
    (a,), (da,) = primals, tangents
    sign, logabsdet = _slogdet_lu(a)
    change = _trace(solve(a, da), 0, -2, -1)
    if not dtypes.issubdtype(a.dtype, np.complexfloating):
        return (sign, logabsdet), (lax.full_like(sign, 0), change)
    turn = lax.complex(lax.full_like(logabsdet, 0), lax.imag(change))
    return (sign, logabsdet), (lax.mul(sign, turn), lax.real(change))


# ---------------------------------------------------------------------------------------
# Decompositions
# ---------------------------------------------------------------------------------------


@partial(jit, static_argnames=("upper", "symmetrize_input"))
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

