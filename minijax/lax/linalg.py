"""Linear algebra primitives: ``dot_general``, and the matrix decompositions of ``lax.linalg``.

``dot_general`` is the one primitive behind every product in ``jnp`` (``dot``, ``@``,
``einsum``, ``tensordot``...). Its ``dimension_numbers`` say which dimensions of the two
operands are *contracted* (multiplied and summed away) and which are *batch* dimensions
(paired up, kept, and put first). Everything else is *free*. The result's dimensions are
always ordered: batch dimensions, then the lhs's free ones, then the rhs's free ones.

The decompositions (``cholesky``, ``eigh``, ``qr``, ``svd``, ``lu``) and
``triangular_solve`` work on the last two dimensions and are batched over the leading
ones; their kernels call ``np.linalg`` (or short NumPy loops where NumPy has no routine)
and keep the input dtype, so float32 in gives float32 out. Where a matrix has no
decomposition they do what LAPACK does under XLA: NaNs or infinities, never an error,
because a traced program cannot raise on values.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from typing import Any

import numpy as np

from minijax import dtypes
from minijax.core import Primitive, ShapedArray
from minijax.interpreters import batching
from minijax.jaxpr import pp_param_rules
from minijax.lax import elementwise as ew
from minijax.lax.elementwise import INEXACT, check_dtype, operand
from minijax.lax.shapes import broadcasted_iota, full_like, reshape, transpose

__all__ = [
    "Precision",
    "cholesky",
    "cholesky_p",
    "dot",
    "dot_general",
    "dot_general_p",
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

    return max(a, b, key=rank)


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
    out_shape = _dot_output_shape(lhs, rhs, dimension_numbers)
    out_dtype = preferred_element_type or _wider_input_dtype(lhs.dtype, rhs.dtype)
    acc = _compute_dtype(lhs.dtype, rhs.dtype, out_dtype)

    def as_matrices(x: np.ndarray, batch: Sequence[int], rows: Sequence[int],
                    cols: Sequence[int]) -> np.ndarray:
        x = np.transpose(x, (*batch, *rows, *cols)).astype(acc, copy=False)
        sizes = [int(np.prod([x.shape[i] for i in range(a, b)], dtype=np.int64))
                 for a, b in ((len(batch), len(batch) + len(rows)),
                              (len(batch) + len(rows), x.ndim))]
        return x.reshape(x.shape[:len(batch)] + tuple(sizes))

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


# vmap: batching rules (dot_general; the decompositions' rules follow their definitions)


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
    return ew.conj(x) if conjugate and x.dtype.kind == "c" else x


def _symmetrize(x: Any) -> Any:
    """``(x + x^H) / 2``: decompositions of Hermitian matrices read both triangles then.

    As in JAX this is NumPy arithmetic (``jnp``'s add and true division), so an integer
    or boolean matrix comes out as floats: ``cholesky`` of an int32 matrix works.
    """
    from minijax.numpy.ufuncs import add, true_divide  # jnp is built on lax: import late

    return true_divide(add(x, matrix_transpose(x, conjugate=True)), 2)


def _hermitian_input(name: str, x: Any, symmetrize_input: bool) -> Any:
    x = operand(x)
    if x.ndim < 2:
        raise TypeError(f"Input 0 to {name} must have rank at least 2, but got shape={x.shape}")
    return _symmetrize(x) if symmetrize_input else x


def _lower_triangle(x: Any) -> Any:
    """Zero the strictly upper triangle (of the last two dimensions): keep ``row + 0 >=
    column``, the mask of ``jnp.tril(x, k=0)`` (JAX records the ``+ 0``)."""
    rows = ew.add(broadcasted_iota(np.int32, x.shape, x.ndim - 2), np.int32(0))
    cols = broadcasted_iota(np.int32, x.shape, x.ndim - 1)
    return ew.select(ew.ge(rows, cols), x, full_like(x, 0))


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
