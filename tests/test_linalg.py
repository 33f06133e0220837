"""Products and linear algebra against JAX: ``lax.dot_general``/``lax.dot``, ``jnp``'s
``dot``, ``matmul``, ``einsum``, ``tensordot``..., the ``lax.linalg`` decompositions and
``jnp.linalg``.

Decompositions that are unique only up to signs (QR, eigenvectors, SVD) are compared
through what *is* unique: reconstructions, absolute values, eigenvalues and singular
values. Matrices are random but well conditioned (a seeded NumPy generator).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from oracle import (
    assert_same_error,
    assert_traced_matches_eager,
    check_program,
    primitive_names,
    x64_mode,
)

import minijax.numpy as jnp
from minijax import lax

jax = pytest.importorskip("jax")

rng = np.random.RandomState(2)


def well_conditioned(*shape, dtype=np.float32):
    n = shape[-1]
    return (rng.randn(*shape) + n * np.eye(n)).astype(dtype)


def positive_definite(*shape, dtype=np.float32):
    m = rng.randn(*shape)
    return (m @ np.swapaxes(m, -1, -2) + shape[-1] * np.eye(shape[-1])).astype(dtype)


A = well_conditioned(4, 4)
A3 = well_conditioned(2, 3, 3)
SPD = positive_definite(4, 4)
SPD3 = positive_definite(2, 3, 3)
R = rng.randn(5, 3).astype(np.float32)
W = rng.randn(3, 5).astype(np.float32)
V = rng.randn(4).astype(np.float32)
V3 = rng.randn(3).astype(np.float32)
BAT = rng.randn(2, 3, 4).astype(np.float32)
BAT2 = rng.randn(2, 4, 5).astype(np.float32)
I8 = rng.randint(-100, 100, (3, 4)).astype(np.int8)
I8B = rng.randint(-100, 100, (4, 2)).astype(np.int8)
U8 = rng.randint(0, 5, (4, 2)).astype(np.uint8)
I32 = rng.randint(-5, 5, (4, 4)).astype(np.int32)
BOOL = rng.rand(3, 4) > 0.5
H = rng.randn(3, 4).astype(np.float16)
CA = (well_conditioned(3, 3) + 1j * rng.randn(3, 3)).astype(np.complex64)
CV = (rng.randn(3) + 1j * rng.randn(3)).astype(np.complex64)
HERM = (CA @ CA.conj().T).astype(np.complex64)
LOWER = np.tril(well_conditioned(4, 4))
RHS = rng.randn(4, 2).astype(np.float32)
SINGULAR = np.ones((3, 3), np.float32)
F64 = well_conditioned(3, 3, dtype=np.float64)


def program(fn, *inputs):
    return lambda n: fn(n.jnp, n.lax, *[n.jnp.asarray(x) for x in inputs])


DN = (((1,), (0,)), ((), ()))

PRODUCTS = {
    # lax.dot_general and lax.dot
    "dot_general_matmul": (lambda jnp, lax, a, b: lax.dot_general(a, b, DN), R, W),
    "dot_general_batch": (lambda jnp, lax, a, b: lax.dot_general(
        a, b, (((2,), (1,)), ((0,), (0,)))), BAT, BAT2),
    "dot_general_batch_not_leading": (lambda jnp, lax, a, b: lax.dot_general(
        a, b, (((2,), (0,)), ((1,), (2,)))), rng.randn(3, 2, 4).astype(np.float32),
        rng.randn(4, 5, 2).astype(np.float32)),
    "dot_general_two_contractions": (lambda jnp, lax, a, b: lax.dot_general(
        a, b, (((1, 2), (0, 1)), ((), ()))), BAT, rng.randn(3, 4, 2).astype(np.float32)),
    "dot_general_outer": (lambda jnp, lax, a, b: lax.dot_general(a, b, (((), ()), ((), ()))),
                          V, V3),
    "dot_general_lists": (lambda jnp, lax, a, b: lax.dot_general(a, b, (([1], [0]), ([], []))),
                          R, W),
    "dot_general_int8_wraps": (lambda jnp, lax, a, b: lax.dot_general(a, b, DN), I8, I8B),
    "dot_general_int8_to_int32": (lambda jnp, lax, a, b: lax.dot_general(
        a, b, DN, preferred_element_type=jnp.int32), I8, I8B),
    "dot_general_mixed_dtypes": (lambda jnp, lax, a, b: lax.dot_general(a, b, DN), I8, U8),
    "dot_general_int_float": (lambda jnp, lax, a, b: lax.dot_general(a, b, DN), I8,
                              rng.randn(4, 2).astype(np.float32)),
    "dot_general_bool": (lambda jnp, lax, a: lax.dot_general(a, a.T, DN), BOOL),
    "dot_general_float16": (lambda jnp, lax, a: lax.dot_general(a, a.T, DN), H),
    "dot_general_float_to_int": (lambda jnp, lax, a, b: lax.dot_general(
        a, b, DN, preferred_element_type=jnp.int32), R, W),
    "dot_general_weak": (lambda jnp, lax: lax.dot_general(2.0, 3.0, (((), ()), ((), ()))),),
    "dot_general_precision": (lambda jnp, lax, a, b: lax.dot_general(
        a, b, DN, precision=lax.Precision.HIGHEST), R, W),
    "dot_general_complex": (lambda jnp, lax, a: lax.dot_general(a, a, DN), CA),
    "dot_general_complex_to_real": (lambda jnp, lax, a: lax.dot_general(
        a, a, DN, preferred_element_type=jnp.float32), CA),
    "dot_general_real_to_complex": (lambda jnp, lax, a, b: lax.dot_general(
        a, b, DN, preferred_element_type=jnp.complex64), R, W),
    "lax_dot": (lambda jnp, lax, a, b, v: (lax.dot(a, b), lax.dot(a, v), lax.dot(v, v)), A,
                RHS, V),
    "lax_dot_precision_string": (lambda jnp, lax, a: lax.dot(a, a, precision="highest"), A),
    # jnp products
    "matmul": (lambda jnp, lax, a, b: a @ b, R, W),
    "matmul_matvec": (lambda jnp, lax, a, v: (a @ v, v @ a.T), A, V),
    "matmul_vecvec": (lambda jnp, lax, v: v @ v, V),
    "matmul_batched": (lambda jnp, lax, a, b: jnp.matmul(a, b), BAT, BAT2),
    "matmul_broadcast_batch": (lambda jnp, lax, a, b: a @ b, BAT,
                               rng.randn(7, 1, 4, 5).astype(np.float32)),
    "matmul_broadcast_missing": (lambda jnp, lax, a, b: a @ b, BAT, BAT2[0]),
    "matmul_vector_batch": (lambda jnp, lax, v, b, w: (v @ b, b @ w), V, BAT2,
                            rng.randn(5).astype(np.float32)),
    "matmul_mixed_dtypes": (lambda jnp, lax, a, b: a @ b, I8, rng.randn(4, 2).astype(np.float32)),
    "matmul_int8_uint8": (lambda jnp, lax, a, b: a @ b, I8, U8),
    "matmul_bool": (lambda jnp, lax, a: a @ a.T, BOOL),
    "matmul_preferred": (lambda jnp, lax, a, b: jnp.matmul(
        a, b, preferred_element_type=jnp.float32), I8, I8B),
    "dot": (lambda jnp, lax, a, b: jnp.dot(a, b), R, W),
    "dot_nd": (lambda jnp, lax, a, b: jnp.dot(a, b), BAT, rng.randn(5, 4, 6).astype(np.float32)),
    "dot_vector_nd": (lambda jnp, lax, v, b: jnp.dot(v, b), V, BAT2),
    "dot_scalar": (lambda jnp, lax, a: (jnp.dot(a, 2.0), jnp.dot(3, a)), R),
    "dot_python_scalars": (lambda jnp, lax: jnp.dot(2.0, 3),),
    "vdot_complex": (lambda jnp, lax, a, b: jnp.vdot(a, b), CV, CV[::-1].copy()),
    "vdot_matrices": (lambda jnp, lax, a: jnp.vdot(a, a), R),
    "inner": (lambda jnp, lax, a, b: jnp.inner(a, b), R, rng.randn(2, 3).astype(np.float32)),
    "inner_scalar": (lambda jnp, lax, a: jnp.inner(a, 2.0), V),
    "outer": (lambda jnp, lax, a, b: jnp.outer(a, b), V, W),
    "outer_int_float": (lambda jnp, lax, a, b: jnp.outer(a, b), I8[0], V3),
    "tensordot_int": (lambda jnp, lax, a, b: jnp.tensordot(a, b, axes=1), BAT, BAT2[0]),
    "tensordot_default": (lambda jnp, lax, a, b: jnp.tensordot(a, b),
                          BAT, rng.randn(3, 4, 2).astype(np.float32)),
    "tensordot_pairs": (lambda jnp, lax, a, b: jnp.tensordot(a, b, axes=([0, 2], [2, 0])),
                        BAT, rng.randn(4, 6, 2).astype(np.float32)),
    "tensordot_single_pair": (lambda jnp, lax, a, b: jnp.tensordot(a, b, axes=(0, 1)), R,
                              rng.randn(2, 5).astype(np.float32)),
    "tensordot_zero": (lambda jnp, lax, a, b: jnp.tensordot(a, b, axes=0), V3, V),
    "einsum_matmul": (lambda jnp, lax, a, b: jnp.einsum("ij,jk->ik", a, b), R, W),
    "einsum_batched": (lambda jnp, lax, a, b: jnp.einsum("bij,bjk->bik", a, b), BAT, BAT2),
    "einsum_implicit": (lambda jnp, lax, a, b: jnp.einsum("ij,jk", a, b), R, W),
    "einsum_transposed_output": (lambda jnp, lax, a, b: jnp.einsum("ij,kj->ki", a, b), R,
                                 rng.randn(6, 3).astype(np.float32)),
    "einsum_trace_and_diagonal": (lambda jnp, lax, a: (jnp.einsum("ii", a),
                                                       jnp.einsum("ii->i", a)), A),
    "einsum_transpose": (lambda jnp, lax, a: jnp.einsum("ij->ji", a), R),
    "einsum_sum": (lambda jnp, lax, a: (jnp.einsum("ijk->i", a), jnp.einsum("ijk->", a)), BAT),
    "einsum_dot_and_outer": (lambda jnp, lax, v: (jnp.einsum("i,i->", v, v),
                                                  jnp.einsum("i,j->ij", v, v)), V),
    "einsum_scale_rows": (lambda jnp, lax, a, v: jnp.einsum("ij,j->ij", a, v), R.T, R[:, 0]),
    "einsum_ellipsis": (lambda jnp, lax, a, b: jnp.einsum("...ij,...jk->...ik", a, b), BAT,
                        BAT2),
    "einsum_three_operands": (lambda jnp, lax, a, b, c: jnp.einsum("ij,jk,kl->il", a, b, c),
                              R, W, rng.randn(5, 2).astype(np.float32)),
    "einsum_mixed_dtypes": (lambda jnp, lax, a, b: jnp.einsum("ij,jk->ik", a, b), I8,
                            rng.randn(4, 2).astype(np.float32)),
    "trace": (lambda jnp, lax, a: jnp.trace(a), R),
    "trace_offset_axes": (lambda jnp, lax, a: jnp.trace(a, offset=1, axis1=1, axis2=2), BAT),
    "trace_negative_offset": (lambda jnp, lax, a: jnp.trace(a, offset=-2), R),
    "trace_int8_widens": (lambda jnp, lax, a: jnp.trace(a), I8),
    "trace_bool": (lambda jnp, lax, a: jnp.trace(a), BOOL),
    "kron": (lambda jnp, lax, a, b: jnp.kron(a, b), R[:2, :2], W[:2]),
    "kron_vector_matrix": (lambda jnp, lax, a, b: jnp.kron(a, b), V3, I8[:2]),
    "dot_method": (lambda jnp, lax, a, b: a.dot(b), R, W),
}


@pytest.mark.parametrize("name", sorted(PRODUCTS))
def test_products_match_jax(name):
    fn, *inputs = PRODUCTS[name]
    tol = 2e-2 if name == "dot_general_float16" else 1e-5
    check_program(program(fn, *inputs), rtol=tol, atol=tol)


# ---------------------------------------------------------------------------------------
# Decompositions and jnp.linalg
# ---------------------------------------------------------------------------------------


def qr_invariants(jnp, q, r):
    """What QR determines uniquely: Q R, Q^H Q, and |R| (rows are unique up to sign)."""
    return q @ r, jnp.conj(q).swapaxes(-1, -2) @ q, jnp.abs(r)


def eigh_invariants(jnp, w, v):
    reconstructed = (v * w[..., None, :]) @ jnp.conj(v).swapaxes(-1, -2)
    return w, jnp.abs(v), reconstructed


def svd_invariants(jnp, u, s, vh):
    """S, |U| and |Vh| (for the k = min(m, n) singular vectors), the reconstruction, and
    U^H U and Vh Vh^H (identities of the full or reduced sizes)."""
    k = s.shape[-1]
    reconstructed = (u[..., :, :k] * s[..., None, :].astype(u.dtype)) @ vh[..., :k, :]
    gram = lambda x: jnp.conj(x).swapaxes(-1, -2) @ x  # noqa: E731
    return (s, jnp.abs(u[..., :, :k]), jnp.abs(vh[..., :k, :]), reconstructed, gram(u),
            gram(jnp.conj(vh).swapaxes(-1, -2)))


LINALG = {
    # lax.linalg
    "lax_cholesky": (lambda jnp, lax, a: lax.linalg.cholesky(a), SPD),
    "lax_cholesky_batched": (lambda jnp, lax, a: lax.linalg.cholesky(a), SPD3),
    "lax_cholesky_not_positive_definite": (lambda jnp, lax, a: lax.linalg.cholesky(-a), SPD),
    "lax_cholesky_complex": (lambda jnp, lax, a: lax.linalg.cholesky(a), HERM),
    "lax_eigh": (lambda jnp, lax, a: eigh_invariants(jnp, *lax.linalg.eigh(a)[::-1]), SPD),
    "lax_eigh_upper_unsymmetrized": (lambda jnp, lax, a: eigh_invariants(
        jnp, *lax.linalg.eigh(a, lower=False, symmetrize_input=False)[::-1]), SPD),
    "lax_qr": (lambda jnp, lax, a: qr_invariants(jnp, *lax.linalg.qr(a)), R),
    "lax_qr_reduced": (lambda jnp, lax, a: qr_invariants(
        jnp, *lax.linalg.qr(a, full_matrices=False)), R),
    "lax_svd": (lambda jnp, lax, a: svd_invariants(jnp, *lax.linalg.svd(a)), R),
    "lax_svd_values": (lambda jnp, lax, a: lax.linalg.svd(a, compute_uv=False), W),
    "lax_lu": (lambda jnp, lax, a: lax.linalg.lu(a), A),
    "lax_lu_batched": (lambda jnp, lax, a: lax.linalg.lu(a), A3),
    "lax_lu_wide": (lambda jnp, lax, a: lax.linalg.lu(a), W),
    "lax_lu_tall": (lambda jnp, lax, a: lax.linalg.lu(a), R),
    "lax_lu_complex": (lambda jnp, lax, a: lax.linalg.lu(a), CA),
    "lax_lu_singular": (lambda jnp, lax, a: lax.linalg.lu(a), SINGULAR),
    "lax_triangular_solve_left_lower": (lambda jnp, lax, a, b: lax.linalg.triangular_solve(
        a, b, left_side=True, lower=True), LOWER, RHS),
    "lax_triangular_solve_right_upper_transpose": (
        lambda jnp, lax, a, b: lax.linalg.triangular_solve(
            a, b, left_side=False, lower=False, transpose_a=True), LOWER.T.copy(), RHS.T.copy()),
    "lax_triangular_solve_unit_diagonal": (lambda jnp, lax, a, b: lax.linalg.triangular_solve(
        a, b, left_side=True, lower=True, unit_diagonal=True), LOWER, RHS),
    "lax_triangular_solve_reads_one_triangle": (
        lambda jnp, lax, a, b: lax.linalg.triangular_solve(a, b, left_side=True, lower=True),
        A, RHS),
    "lax_triangular_solve_conjugate": (lambda jnp, lax, a, b: lax.linalg.triangular_solve(
        a, b, left_side=True, lower=False, conjugate_a=True, transpose_a=True), CA,
        CV[:, None].copy()),
    # jnp.linalg
    "inv": (lambda jnp, lax, a: jnp.linalg.inv(a), A),
    "inv_batched": (lambda jnp, lax, a: jnp.linalg.inv(a), A3),
    "inv_int": (lambda jnp, lax, a: jnp.linalg.inv(a), I32 + 10 * np.eye(4, dtype=np.int32)),
    "inv_singular_is_not_an_error": (lambda jnp, lax, a: jnp.linalg.inv(a[:2, :2]), SINGULAR),
    "inv_complex": (lambda jnp, lax, a: jnp.linalg.inv(a), CA),
    "inv_float64_truncated": (lambda jnp, lax, a: jnp.linalg.inv(a), F64),
    "solve_vector": (lambda jnp, lax, a, b: jnp.linalg.solve(a, b), A, V),
    "solve_matrix": (lambda jnp, lax, a, b: jnp.linalg.solve(a, b), A, RHS),
    "solve_batched_vector": (lambda jnp, lax, a, b: jnp.linalg.solve(a, b), A3, V3),
    "solve_batched_matrix": (lambda jnp, lax, a, b: jnp.linalg.solve(a, b), A3,
                             rng.randn(2, 3, 2).astype(np.float32)),
    "solve_broadcast_batch": (lambda jnp, lax, a, b: jnp.linalg.solve(a, b), A3,
                              rng.randn(3, 2).astype(np.float32)),
    "solve_broadcast_square_matrix": (lambda jnp, lax, a, b: jnp.linalg.solve(a, b), A3,
                                      rng.randn(3, 3).astype(np.float32)),
    "det": (lambda jnp, lax, a: jnp.linalg.det(a), A),
    "det_batched": (lambda jnp, lax, a: jnp.linalg.det(a), A3),
    "det_singular": (lambda jnp, lax, a: jnp.linalg.det(a), SINGULAR),
    "det_int": (lambda jnp, lax, a: jnp.linalg.det(a), I32),
    "det_complex": (lambda jnp, lax, a: jnp.linalg.det(a), CA),
    "slogdet": (lambda jnp, lax, a: jnp.linalg.slogdet(a), -A),
    "slogdet_batched": (lambda jnp, lax, a: tuple(jnp.linalg.slogdet(a)), A3),
    "slogdet_singular": (lambda jnp, lax, a: jnp.linalg.slogdet(a), SINGULAR),
    "slogdet_complex": (lambda jnp, lax, a: jnp.linalg.slogdet(a), CA),
    "cholesky": (lambda jnp, lax, a: jnp.linalg.cholesky(a), SPD),
    "cholesky_upper": (lambda jnp, lax, a: jnp.linalg.cholesky(a, upper=True), SPD),
    "qr": (lambda jnp, lax, a: qr_invariants(jnp, *jnp.linalg.qr(a)), R),
    "qr_complete": (lambda jnp, lax, a: qr_invariants(jnp, *jnp.linalg.qr(a, mode="complete")),
                    R),
    "qr_r": (lambda jnp, lax, a: jnp.abs(jnp.linalg.qr(a, mode="r")), W),
    "qr_batched": (lambda jnp, lax, a: qr_invariants(jnp, *jnp.linalg.qr(a)), BAT),
    "eigh": (lambda jnp, lax, a: eigh_invariants(jnp, *jnp.linalg.eigh(a)), SPD),
    "eigh_upper": (lambda jnp, lax, a: eigh_invariants(jnp, *jnp.linalg.eigh(a, UPLO="U")),
                   SPD),
    "eigh_batched": (lambda jnp, lax, a: eigh_invariants(jnp, *jnp.linalg.eigh(a)), SPD3),
    "eigh_complex": (lambda jnp, lax, a: eigh_invariants(jnp, *jnp.linalg.eigh(a)), HERM),
    "eigvalsh": (lambda jnp, lax, a: jnp.linalg.eigvalsh(a), SPD),
    "svd": (lambda jnp, lax, a: svd_invariants(jnp, *jnp.linalg.svd(a)), R),
    "svd_reduced": (lambda jnp, lax, a: svd_invariants(
        jnp, *jnp.linalg.svd(a, full_matrices=False)), W),
    "svd_batched": (lambda jnp, lax, a: svd_invariants(jnp, *jnp.linalg.svd(a)), BAT),
    "svd_values": (lambda jnp, lax, a: jnp.linalg.svd(a, compute_uv=False), R),
    "svdvals_int": (lambda jnp, lax, a: jnp.linalg.svdvals(a), I32),
    "norm": (lambda jnp, lax, a: jnp.linalg.norm(a), BAT),
    "norm_vector_orders": (lambda jnp, lax, v: tuple(jnp.linalg.norm(v, ord=o) for o in (
        None, 1, 2, 3, 0.5, 0, np.inf, -np.inf, -1)), V),
    "norm_matrix_orders": (lambda jnp, lax, a: tuple(jnp.linalg.norm(a, ord=o) for o in (
        None, "fro", "nuc", 1, -1, 2, -2, np.inf, -np.inf)), R),
    "norm_axis": (lambda jnp, lax, a: (jnp.linalg.norm(a, axis=1),
                                       jnp.linalg.norm(a, ord=1, axis=(2, 0)),
                                       jnp.linalg.norm(a, ord=2, axis=(0, 1), keepdims=True)),
                  BAT),
    "norm_keepdims": (lambda jnp, lax, a: jnp.linalg.norm(a, keepdims=True), R),
    "norm_int_complex": (lambda jnp, lax, a, c: (jnp.linalg.norm(a), jnp.linalg.norm(c, 1)),
                         I32, CV),
    "matrix_power": (lambda jnp, lax, a: (jnp.linalg.matrix_power(a, 3),
                                          jnp.linalg.matrix_power(a, 0),
                                          jnp.linalg.matrix_power(a, -2)), A / 4),
    "matrix_power_int": (lambda jnp, lax, a: jnp.linalg.matrix_power(a, 5), I32),
    "pinv": (lambda jnp, lax, a: jnp.linalg.pinv(a), R),
    "matrix_rank": (lambda jnp, lax, a, b: (jnp.linalg.matrix_rank(a),
                                            jnp.linalg.matrix_rank(b)), R, SINGULAR),
    "linalg_trace": (lambda jnp, lax, a: jnp.linalg.trace(a, offset=1), BAT),
    "multi_dot": (lambda jnp, lax, a, b, c: jnp.linalg.multi_dot([a, b, c]), R, W, R),
}


@pytest.mark.parametrize("name", sorted(LINALG))
def test_linalg_matches_jax(name):
    fn, *inputs = LINALG[name]
    check_program(program(fn, *inputs), rtol=1e-4, atol=1e-4)


ALL = {**PRODUCTS, **LINALG}


@pytest.mark.parametrize("name", sorted(ALL))
def test_traced_matches_eager(name):
    fn, *inputs = ALL[name]
    assert_traced_matches_eager(lambda *xs: fn(jnp, lax, *xs), *map(jnp.asarray, inputs))


X64_CASES = {
    "matmul_float64": (lambda jnp, lax, a: a @ a, F64),
    "matmul_int": (lambda jnp, lax, a: a @ a, I32),
    "dot_float32_float64": (lambda jnp, lax, a, b: jnp.dot(a, b), A[:3, :3], F64),
    "inv_det_solve": (lambda jnp, lax, a: (jnp.linalg.inv(a), jnp.linalg.det(a),
                                           jnp.linalg.solve(a, a[0])), F64),
    "det_int": (lambda jnp, lax, a: jnp.linalg.det(a), I32),
    "lu": (lambda jnp, lax, a: lax.linalg.lu(a), F64),
    "eigh_svd": (lambda jnp, lax, a: (jnp.linalg.eigvalsh(a @ a.T), jnp.linalg.svdvals(a)), F64),
    "trace_norm_int": (lambda jnp, lax, a: (jnp.trace(a), jnp.linalg.norm(a)), I32),
    "argsort_lexsort": (lambda jnp, lax, a: (jnp.argsort(a), jnp.lexsort((a[0], a[1]))), I32),
    "searchsorted": (lambda jnp, lax, a: jnp.searchsorted(jnp.sort(a[0]), a[1]), F64),
}


@pytest.mark.parametrize("name", sorted(X64_CASES))
def test_x64_matches_jax(name):
    fn, *inputs = X64_CASES[name]
    with x64_mode():
        check_program(program(fn, *inputs))


@st.composite
def matmul_shapes(draw):
    """Broadcastable batch shapes (with size-1 and missing axes) and optional vectors."""
    n, k, m = (draw(st.integers(1, 3)) for _ in range(3))
    batch = draw(st.lists(st.integers(1, 3), max_size=3))
    a_batch = [draw(st.sampled_from([d, 1])) for d in batch][draw(st.integers(0, len(batch))):]
    b_batch = [draw(st.sampled_from([d, 1])) for d in batch][draw(st.integers(0, len(batch))):]
    a_shape = (k,) if draw(st.booleans()) else (*a_batch, n, k)
    b_shape = (k,) if draw(st.booleans()) else (*b_batch, k, m)
    return a_shape, b_shape


@settings(max_examples=60, deadline=None)
@given(matmul_shapes(), st.integers(0, 2**16))
def test_matmul_agrees_with_numpy(shapes, seed):
    a_shape, b_shape = shapes
    r = np.random.RandomState(seed)
    a = r.randint(-5, 5, a_shape).astype(np.float32)
    b = r.randint(-5, 5, b_shape).astype(np.float32)
    np.testing.assert_array_equal(np.asarray(jnp.asarray(a) @ jnp.asarray(b)), a @ b)


def test_float32_stays_float32():
    outs = [jnp.linalg.inv(A), jnp.linalg.det(A), *jnp.linalg.eigh(SPD), *jnp.linalg.svd(R),
            *lax.linalg.lu(A)[:1], lax.linalg.cholesky(SPD)]
    assert {o.dtype.name for o in outs} == {"float32"}


# ---------------------------------------------------------------------------------------
# Jaxprs
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("fn, inputs", [
    (lambda jnp, lax, a, b: a @ b, (R, W)),
    (lambda jnp, lax, a, b: a @ b, (I8, rng.randn(4, 2).astype(np.float32))),
    (lambda jnp, lax, a, v: a @ v, (A, V)),
    (lambda jnp, lax, a, b: jnp.matmul(a, b), (BAT, BAT2)),
    (lambda jnp, lax, a, b: jnp.dot(a, b), (R, W)),
    (lambda jnp, lax, a, b: jnp.einsum("ij,jk->ik", a, b), (R, W)),
    (lambda jnp, lax, a, b: lax.dot_general(a, b, (((2,), (1,)), ((0,), (0,)))), (BAT, BAT2)),
    (lambda jnp, lax, a, b: lax.dot(a, b, precision=lax.Precision.HIGHEST), (R, W)),
    (lambda jnp, lax, a, b: lax.dot_general(a, b, DN, preferred_element_type=jnp.int32),
     (I8, I8B)),
    (lambda jnp, lax, a: lax.linalg.eigh(a, symmetrize_input=False), (SPD,)),
    (lambda jnp, lax, a: lax.linalg.qr(a), (R,)),
    (lambda jnp, lax, a: lax.linalg.svd(a), (R,)),
    (lambda jnp, lax, a: lax.linalg.lu(a), (A,)),
    (lambda jnp, lax, a, b: lax.linalg.triangular_solve(a, b, left_side=True, lower=True),
     (LOWER, RHS)),
])
def test_printed_jaxpr_matches_jax(fn, inputs):
    check_program(lambda n: str(n.jax.make_jaxpr(lambda *xs: fn(n.jnp, n.lax, *xs))(*inputs)))


@pytest.mark.parametrize("fn, inputs", [
    (lambda jnp, a, b: jnp.matmul(a, b), (BAT, rng.randn(7, 1, 4, 5).astype(np.float32))),
    (lambda jnp, a, b: jnp.vdot(a, b), (R, R)),
    (lambda jnp, a, b: jnp.tensordot(a, b, axes=1), (R, W)),
    (lambda jnp, a: jnp.einsum("ij->ji", a), (R,)),
    (lambda jnp, a: jnp.einsum("ij->i", a), (R,)),
    (lambda jnp, a: jnp.linalg.qr(a), (R,)),
])
def test_jaxpr_primitives_match_jax(fn, inputs):
    check_program(lambda n: primitive_names(n.jax.make_jaxpr(lambda *xs: fn(n.jnp, *xs))(*inputs)))


# ---------------------------------------------------------------------------------------
# Bad input
# ---------------------------------------------------------------------------------------

ERRORS = {
    "matmul_vector_mismatch": (lambda jnp, lax: jnp.ones(3) @ jnp.ones(2),
                               "dot_general requires contracting dimensions to have the same "
                               "shape, got (3,) and (2,)."),
    "matmul_matrix_mismatch": (lambda jnp, lax: jnp.ones((3, 4)) @ jnp.ones((3, 4)),
                               "got (4,) and (3,)"),
    "matmul_scalar": (lambda jnp, lax: jnp.matmul(jnp.ones((3, 4)), 2.0),
                      "matmul input operand 1 must have ndim at least 1, but it has ndim 0"),
    "matmul_batch_mismatch": (lambda jnp, lax: jnp.ones((2, 3, 4)) @ jnp.ones((3, 4, 5)),
                              "Incompatible types for matmul arguments: float32[2,3,4] and "
                              "float32[3,4,5]"),
    "matmul_list": (lambda jnp, lax: jnp.matmul([1.0, 2.0], jnp.ones(2)),
                    "requires ndarray or scalar arguments"),
    "dot_mismatch": (lambda jnp, lax: jnp.dot(jnp.ones(4), jnp.ones((5, 3, 6))),
                     "got (4,) and (3,)"),
    "lax_dot_general_out_of_range": (lambda jnp, lax: lax.dot_general(
        jnp.ones((3, 4)), jnp.ones((4, 5)), (((2,), (0,)), ((), ()))),
        "lhs dimension numbers to be nonnegative and less than the number of axes"),
    "lax_dot_general_batch_shapes": (lambda jnp, lax: lax.dot_general(
        jnp.ones((2, 3, 4)), jnp.ones((3, 4, 5)), (((2,), (1,)), ((0,), (0,)))),
        "batch dimensions to have the same shape, got (2,) and (3,)"),
    "lax_dot_general_batch_counts": (lambda jnp, lax: lax.dot_general(
        jnp.ones((2, 3)), jnp.ones((2, 3)), (((1,), (1,)), ((0,), ()))),
        "equal numbers of lhs_batch and rhs_batch dimensions"),
    "lax_dot_general_repeated_contraction": (lambda jnp, lax: lax.dot_general(
        jnp.ones((2, 3)), jnp.ones((2, 3)), (((1, 1), (1, 1)), ((), ()))),
        "contracting dimensions to be distinct"),
    "lax_dot_general_batch_is_contracted": (lambda jnp, lax: lax.dot_general(
        jnp.ones((2, 3)), jnp.ones((2, 3)), (((1,), (1,)), ((1,), (1,)))),
        "batch dimensions to be disjoint from contracting dimensions"),
    "lax_dot_general_narrow_preferred_type": (lambda jnp, lax: lax.dot_general(
        jnp.ones((2, 2), jnp.int32), jnp.ones((2, 2), jnp.int32), DN,
        preferred_element_type=jnp.int8), "must not be narrower than the original type"),
    "lax_dot_bad_precision": (lambda jnp, lax: lax.dot(jnp.ones(2), jnp.ones(2),
                                                       precision="bogus"),
                              "Precision argument must be one of"),
    "lax_dot_needs_dimension_numbers": (lambda jnp, lax: lax.dot(jnp.ones((2, 3, 3)),
                                                                 jnp.ones(3)),
                                        "dimension_numbers must be specified"),
    "lax_dot_mismatch": (lambda jnp, lax: lax.dot(jnp.ones((2, 3)), jnp.ones(2)),
                         "lhs_shape=(2, 3) rhs_shape=(2,)"),
    "tensordot_too_many_axes": (lambda jnp, lax: jnp.tensordot(jnp.ones((3, 4)),
                                                               jnp.ones((3, 4)), axes=3),
                                "exceeds input ranks"),
    "tensordot_unequal_axes": (lambda jnp, lax: jnp.tensordot(
        jnp.ones((3, 4)), jnp.ones((4, 3)), axes=([0, 1], [1])), "equal length"),
    "einsum_operand_count": (lambda jnp, lax: jnp.einsum("ij,jk->ik", jnp.ones((3, 4))),
                             "must be equal to the number of operands"),
    "einsum_label_sizes": (lambda jnp, lax: jnp.einsum("ij,jk->ik", jnp.ones((3, 4)),
                                                       jnp.ones((3, 4))),
                           "Size of label 'j' for operand 1 (3) does not match previous "
                           "terms (4)."),
    "trace_of_vector": (lambda jnp, lax: jnp.trace(jnp.ones(3)), "axis 1 is out of bounds"),
    "inv_not_square": (lambda jnp, lax: jnp.linalg.inv(jnp.ones((3, 4))),
                       "Argument to inv must have shape [..., n, n], got (3, 4)."),
    "inv_vector": (lambda jnp, lax: jnp.linalg.inv(jnp.ones(3)), "got (3,)"),
    "inv_list": (lambda jnp, lax: jnp.linalg.inv([[1.0, 0.0], [0.0, 1.0]]),
                 "jnp.linalg.inv requires ndarray or scalar arguments"),
    "det_not_square": (lambda jnp, lax: jnp.linalg.det(jnp.ones((3, 4))), "[..., n, n]"),
    "solve_mismatch": (lambda jnp, lax: jnp.linalg.solve(jnp.eye(3), jnp.ones(4)),
                       "inconsistent size for core dimension 'm': 4 vs 3"),
    "solve_ambiguous_batch": (lambda jnp, lax: jnp.linalg.solve(jnp.ones((4, 3, 3)),
                                                                jnp.ones((4, 3))),
                              "Invalid shapes for solve"),
    "solve_ambiguous_broadcast_batch": (lambda jnp, lax: jnp.linalg.solve(
        jnp.ones((4, 3, 3)), jnp.ones((1, 3))), "Invalid shapes for solve"),
    "qr_mode": (lambda jnp, lax: jnp.linalg.qr(jnp.ones((3, 3)), mode="foo"),
                "Unsupported QR decomposition mode 'foo'"),
    "qr_vector": (lambda jnp, lax: jnp.linalg.qr(jnp.ones(3)),
                  "Input 0 to qr must have rank at least 2, but got shape=(3,)"),
    "svd_vector": (lambda jnp, lax: jnp.linalg.svd(jnp.ones(3)), "rank at least 2"),
    "eigh_uplo": (lambda jnp, lax: jnp.linalg.eigh(jnp.eye(3), UPLO="X"),
                  "UPLO must be one of None, 'L', or 'U', got X"),
    "eigh_not_square": (lambda jnp, lax: jnp.linalg.eigh(jnp.ones((3, 4))),
                        "incompatible shapes"),
    "norm_matrix_order": (lambda jnp, lax: jnp.linalg.norm(jnp.ones((3, 4)), ord=3),
                          "Invalid order '3' for matrix norm."),
    "norm_vector_order": (lambda jnp, lax: jnp.linalg.norm(jnp.ones(3), ord="fro"),
                          "Invalid order 'fro' for vector norm."),
    "norm_axes": (lambda jnp, lax: jnp.linalg.norm(jnp.ones((2, 3, 4)), ord=2),
                  "Improper number of axes for norm"),
    "lax_qr_int": (lambda jnp, lax: lax.linalg.qr(jnp.ones((3, 3), jnp.int32)),
                   "qr does not accept dtype int32"),
    "lax_lu_vector": (lambda jnp, lax: lax.linalg.lu(jnp.ones(3)), "rank at least 2"),
    "lax_triangular_solve_not_square": (lambda jnp, lax: lax.linalg.triangular_solve(
        jnp.ones((3, 4)), jnp.ones((3, 4)), left_side=True), "must be a square matrix"),
    "lax_triangular_solve_shapes": (lambda jnp, lax: lax.linalg.triangular_solve(
        jnp.eye(3), jnp.ones((4, 3)), left_side=True),
        "Incompatible shapes for arguments to triangular_solve: (3, 3) and (4, 3)."),
    "lax_triangular_solve_int": (lambda jnp, lax: lax.linalg.triangular_solve(
        jnp.eye(3), jnp.ones((3, 3), jnp.int32), left_side=True),
        "triangular_solve does not accept dtype int32 at position 1"),
}


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_bad_input_raises_like_jax(name):
    fn, message = ERRORS[name]
    assert_same_error(lambda n: fn(n.jnp, n.lax), words=[message])
