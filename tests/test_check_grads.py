"""``check_grads`` to second order, forward and reverse, on every differentiable primitive.

Each case is a small function of ``lax`` calls (one primitive, or a ``jnp.linalg`` function
built on the decompositions), inputs drawn from the function's smooth domain (away from
kinks, ties and singularities, where a central difference means nothing), and the shapes
it is checked on. Every case runs in float32 and, with ``jax_enable_x64``, in float64,
with ``check_grads``'s per-dtype tolerances. Order 2 in both modes checks the JVP, the
VJP, and JVPs and VJPs of both: so every JVP rule, its linearization, the transpose rules
of what it records, and the JVP rules of those transposes.

Primitives with integer or boolean results (comparisons, ``argmax``, bit operations,
``iota``) have no derivative to check; ``test_ad_matrix.py`` covers their zero rules.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest

import minijax
import minijax.numpy as jnp
from minijax import lax
from minijax.test_util import check_grads

Maker = Callable[[tuple, np.dtype, np.random.RandomState], np.ndarray]

SCALAR, VECTOR, MATRIX, BATCH = (), (3,), (2, 3), (2, 2, 3)
ALL_SHAPES = (SCALAR, VECTOR, MATRIX, BATCH)
ARRAYS = (VECTOR, MATRIX, BATCH)


def uniform(lo: float, hi: float) -> Maker:
    return lambda shape, dtype, rng: rng.uniform(lo, hi, shape).astype(dtype)


def fixed(shape: tuple, lo: float = -1.0, hi: float = 1.0) -> Maker:
    """Inputs of one given shape (for cases whose shapes are not elementwise)."""
    return lambda _, dtype, rng: rng.uniform(lo, hi, shape).astype(dtype)


def distinct(lo: float = -2.0, hi: float = 2.0) -> Maker:
    """Values at least 0.05 apart (no ties for max, sort, ...), in random order."""
    def make(shape: tuple, dtype: np.dtype, rng: np.random.RandomState) -> np.ndarray:
        n = int(np.prod(shape, dtype=np.int64))
        values = lo + (hi - lo) * (np.arange(n) + 0.5) / max(n, 1)
        return rng.permutation(values).reshape(shape).astype(dtype)
    return make


def spd(n: int, batch: tuple = ()) -> Maker:
    """A symmetric positive definite matrix with well-separated eigenvalues."""
    def make(_: tuple, dtype: np.dtype, rng: np.random.RandomState) -> np.ndarray:
        q, _ = np.linalg.qr(rng.randn(*batch, n, n))
        w = np.arange(1, n + 1, dtype=np.float64) * 1.5
        return (q * w[..., None, :] @ np.swapaxes(q, -1, -2)).astype(dtype)
    return make


def well_conditioned(shape: tuple) -> Maker:
    """A random matrix plus a multiple of the identity (far from singular)."""
    def make(_: tuple, dtype: np.dtype, rng: np.random.RandomState) -> np.ndarray:
        m, n = shape[-2:]
        x = rng.uniform(-0.5, 0.5, shape) + 2 * np.eye(m, n)
        return x.astype(dtype)
    return make


@dataclass
class Case:
    name: str
    fun: Callable[..., Any]
    inputs: Sequence[Maker]
    shapes: Sequence[tuple | None] = ALL_SHAPES
    options: dict = field(default_factory=dict)  # extra check_grads arguments
    # Looser tolerance for float32: second differences of sums of many float32 products
    # (or of decompositions) lose more digits than check_grads's default 2e-3 allows.
    tol32: float | None = None


def unary(name: str, fun: Callable, lo: float = -1.0, hi: float = 1.0,
          shapes: Sequence[tuple] = ALL_SHAPES) -> Case:
    return Case(name, fun, [uniform(lo, hi)], shapes)


def binary(name: str, fun: Callable, x: Maker, y: Maker,
           shapes: Sequence[tuple] = ALL_SHAPES) -> Case:
    return Case(name, fun, [x, y], shapes)


IDX = np.array([[2], [0], [2]], np.int32)  # a repeated index: duplicates accumulate
UNIQUE_IDX = np.array([[2], [0]], np.int32)
ROWS = lax.ScatterDimensionNumbers(update_window_dims=(1,), inserted_window_dims=(0,),
                                   scatter_dims_to_operand_dims=(0,))
GATHER_ROWS = lax.GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,),
                                         start_index_map=(0,))


def scatter_case(name: str, scatter: Callable, indices: np.ndarray, **kwargs: Any) -> Case:
    """``scatter(x, indices, updates)`` of rows of a 4x3 operand."""
    updates = (len(indices), 3)
    return Case(name, lambda x, u: scatter(x, indices, u, ROWS, **kwargs),
                [distinct(-2, 2), fixed(updates, 0.5, 1.5)], [(4, 3)])


def svd_parts(a: Any) -> Any:
    """The singular values, and ``U diag(c) Vᴴ`` for fixed weights ``c``: invariant under
    the sign (phase) choices of singular vectors, which a central difference would see."""
    u, s, vh = lax.linalg.svd(a, full_matrices=False)
    weights = lax.convert_element_type(jnp.arange(1, s.shape[-1] + 1), a.dtype)
    return s, jnp.matmul(u * weights, vh)


def eigh_parts(a: Any) -> Any:
    """Eigenvalues, and squared eigenvector entries (invariant under sign choices)."""
    v, w = lax.linalg.eigh(a)
    return w, v * v


def qr_parts(mode: str) -> Callable[[Any], Any]:
    return lambda a: tuple(jnp.linalg.qr(a, mode=mode))


def triangular(n: int, batch: tuple = (), lower: bool = True) -> Maker:
    def make(_: tuple, dtype: np.dtype, rng: np.random.RandomState) -> np.ndarray:
        a = rng.uniform(-0.5, 0.5, (*batch, n, n)) + 2 * np.eye(n)
        return (np.tril(a) if lower else np.triu(a)).astype(dtype)
    return make


CASES = [
    # --- elementwise, one input ---
    unary("neg", lax.neg), unary("sin", lax.sin), unary("cos", lax.cos),
    unary("tan", lax.tan), unary("asin", lax.asin, -0.8, 0.8),
    unary("acos", lax.acos, -0.8, 0.8), unary("atan", lax.atan),
    unary("sinh", lax.sinh), unary("cosh", lax.cosh), unary("tanh", lax.tanh),
    unary("asinh", lax.asinh), unary("acosh", lax.acosh, 1.5, 3.0),
    unary("atanh", lax.atanh, -0.8, 0.8), unary("exp", lax.exp), unary("exp2", lax.exp2),
    unary("log", lax.log, 0.5, 2.0), unary("log1p", lax.log1p, -0.5, 1.0),
    unary("expm1", lax.expm1), unary("sqrt", lax.sqrt, 0.5, 2.0),
    unary("rsqrt", lax.rsqrt, 0.5, 2.0), unary("cbrt", lax.cbrt, 0.5, 2.0),
    unary("logistic", lax.logistic, -2, 2), unary("square", lax.square),
    unary("abs", lax.abs, 0.2, 1.0), unary("abs_negative", lax.abs, -1.0, -0.2),
    unary("reciprocal", lax.reciprocal, 0.5, 2.0),
    unary("integer_pow_3", lambda x: lax.integer_pow(x, 3)),
    unary("integer_pow_-2", lambda x: lax.integer_pow(x, -2), 0.5, 2.0),
    unary("sign_floor_ceil_round", lambda x: lax.sign(x) + lax.floor(x) + lax.ceil(x)
          + lax.round(x), 0.2, 0.4),
    Case("stop_gradient", lambda x: lax.sin(x) + lax.stop_gradient(x) - lax.stop_gradient(x),
         [uniform(-1, 1)], tol32=1e-2),
    # float64 -> float32 -> float64 (under x64) keeps only float32's precision.
    Case("convert", lambda x: lax.convert_element_type(
        x, np.float32 if x.dtype == np.float64 else np.float64) * 1, [uniform(-1, 1)],
         options=dict(atol=2e-3, rtol=2e-3)),
    Case("real_imag_conj", lambda x: lax.real(lax.conj(lax.complex(x, 2 * x) * (1 + 2j)))
         + lax.imag(lax.complex(x, x * x)), [uniform(-1, 1)], tol32=1e-2),
    unary("abs_complex", lambda x: lax.abs(lax.complex(x, 1 - x))),
    unary("copy", lambda x: jnp.copy(x) * x),
    # --- elementwise, two inputs ---
    binary("add", lax.add, uniform(-1, 1), uniform(-1, 1)),
    binary("sub", lax.sub, uniform(-1, 1), uniform(-1, 1)),
    binary("mul", lax.mul, uniform(-1, 1), uniform(-1, 1)),
    binary("div", lax.div, uniform(-1, 1), uniform(0.5, 2)),
    binary("pow", lax.pow, uniform(0.5, 2), uniform(-1.5, 1.5)),
    binary("max", lax.max, distinct(-2, 0), distinct(-1.01, 1)),
    binary("min", lax.min, distinct(-2, 0), distinct(-1.01, 1)),
    binary("atan2", lax.atan2, uniform(-1, 1), uniform(0.5, 2)),
    binary("rem", lax.rem, uniform(2.2, 2.8), uniform(1, 1.5)),
    binary("complex", lambda x, y: lax.complex(x, y) * (1 - 1j), uniform(-1, 1),
           uniform(-1, 1)),
    binary("scalar_broadcast", lambda x, y: lax.mul(x, y[:1]) - x[0],
           uniform(-1, 1), uniform(-1, 1), [(3,)]),
    Case("select_n", lambda x, y: lax.select(x > 0, x, y * y),
         [uniform(-1, 1), uniform(-1, 1)]),
    Case("clamp", lambda lo, x, hi: lax.clamp(lo, x, hi),
         [uniform(-1.5, -1.2), distinct(-2, 2), uniform(1.2, 1.4)], [(7,)]),
    Case("clamp_scalar_bounds", lambda lo, x: lax.clamp(lo[0], x, 1.0),
         [fixed((1,), -1.4, -1.2), distinct(-2, 2)], [(7,)]),
    # --- shapes ---
    Case("broadcast_in_dim", lambda x: lax.broadcast_in_dim(x, (2, 3, 4), (1,)),
         [fixed((3,))], [None]),
    Case("broadcast_stretch", lambda x: lax.broadcast_in_dim(x, (2, 3), (0, 1)),
         [fixed((1, 3))], [None]),
    Case("reshape_expand_collapse", lambda x: lax.collapse(lax.expand_dims(
        lax.reshape(x, (3, 2), (1, 0)), (0,)), 1), [fixed((2, 3))], [None]),
    Case("transpose", lambda x: lax.transpose(x, (2, 0, 1)), [fixed((2, 3, 4))], [None]),
    Case("squeeze", lambda x: lax.squeeze(x, (0, 2)), [fixed((1, 3, 1))], [None]),
    Case("rev", lambda x: lax.rev(x, (0, 1)), [fixed((2, 3))], [None]),
    Case("pad", lambda x, v: lax.pad(x, v[0], [(1, -1, 1), (-1, 2, 0)]),
         [fixed((3, 4)), fixed((1,))], [None]),
    Case("concatenate", lambda x, y: lax.concatenate([x, y, x], 1),
         [fixed((2, 3)), fixed((2, 1))], [None]),
    Case("split", lambda x: lax.split(x, (1, 2), 1), [fixed((2, 3))], [None]),
    Case("stack_unstack", lambda x, y: lax.stack([*lax.unstack(x, 1), y], 0),
         [fixed((2, 3)), fixed((2,))], [None]),
    Case("tile", lambda x: lax.tile(x, (2, 3)), [fixed((2, 2))], [None]),
    # --- slicing, gather, scatter ---
    Case("slice", lambda x: lax.slice(x, (0, 1), (2, 7), (2, 3)), [fixed((3, 7))], [None]),
    Case("dynamic_slice", lambda x: lax.dynamic_slice(x, (1, jnp.int32(5)), (2, 2)),
         [fixed((3, 4))], [None]),
    Case("dynamic_update_slice",
         lambda x, u: lax.dynamic_update_slice(x, u, (jnp.int32(2), 1)),
         [fixed((3, 4)), fixed((2, 2))], [None]),
    Case("gather_indexing", lambda x: x[jnp.array([2, 0, 2]), 1:] * x[-1, ::2].sum(),
         [fixed((3, 4))], [None]),
    Case("gather_fill", lambda x: lax.gather(x, IDX + 1, GATHER_ROWS, (1, 4), mode="fill",
                                             fill_value=0.5), [fixed((3, 4))], [None]),
    Case("take_along_axis", lambda x: jnp.take_along_axis(
        x, jnp.array([[0, 2, 2], [1, 1, 0]]), axis=1), [fixed((2, 3))], [None]),
    scatter_case("scatter", lax.scatter, IDX),
    scatter_case("scatter_unique", lax.scatter, UNIQUE_IDX, unique_indices=True),
    scatter_case("scatter_add", lax.scatter_add, IDX),
    scatter_case("scatter_sub", lax.scatter_sub, IDX),
    scatter_case("scatter_mul_unique", lax.scatter_mul, UNIQUE_IDX, unique_indices=True),
    Case("scatter_mul_operand", lambda x: lax.scatter_mul(x, IDX, jnp.full((3, 3), 1.5,
                                                                           x.dtype), ROWS),
         [fixed((4, 3))], [None]),
    scatter_case("scatter_max", lax.scatter_max, IDX),
    scatter_case("scatter_min", lax.scatter_min, IDX),
    Case("at_set_add", lambda x, u: x.at[1:, 0].set(u).at[0].add(u[0] * u[1]),
         [fixed((3, 2)), fixed((2,))], [None]),
    # --- reductions and cumulative reductions ---
    Case("reduce_sum", lambda x: lax.reduce_sum(x, (0, 2)), [uniform(-1, 1)], [BATCH]),
    Case("reduce_prod", lambda x: lax.reduce_prod(x, (1,)), [uniform(0.5, 1.5)],
         [MATRIX, BATCH]),
    Case("reduce_prod_with_zero", lambda x: lax.reduce_prod(x * jnp.array([1., 0, 1]), (0,)),
         [uniform(0.5, 1.5)], [VECTOR]),
    Case("reduce_max", lambda x: lax.reduce_max(x, (0, 2)), [distinct()], [BATCH]),
    Case("reduce_min", lambda x: lax.reduce_min(x, (1,)), [distinct()], [MATRIX, BATCH]),
    Case("cumsum", lambda x: lax.cumsum(x, 1) + lax.cumsum(x, 0, reverse=True),
         [uniform(-1, 1)], [MATRIX, BATCH]),
    Case("cumprod", lambda x: lax.cumprod(x, 1, reverse=True), [uniform(0.5, 1.5)],
         [(2, 5), BATCH]),
    Case("cummax", lambda x: lax.cummax(x, 1), [distinct()], [(2, 5), BATCH]),
    Case("cummin", lambda x: lax.cummin(x, 0, reverse=True), [distinct()], [(5, 2), BATCH]),
    # --- products ---
    Case("dot", lambda x, y: lax.dot(x, y), [fixed((2, 3)), fixed((3, 4))], [None]),
    Case("dot_general_batch", lambda x, y: lax.dot_general(
        x, y, (((3, 1), (0, 2)), ((0,), (1,)))), [fixed((2, 3, 2, 4)), fixed((4, 2, 3, 5))],
         [None], tol32=1e-2),
    Case("matmul_vector", lambda x, y: jnp.matmul(x, y) + jnp.dot(y, y),
         [fixed((2, 3)), fixed((3,))], [None]),
    # --- linear algebra ---
    Case("cholesky", lax.linalg.cholesky, [spd(3)], [None]),
    Case("cholesky_batch", jnp.linalg.cholesky, [spd(2, (2,))], [None]),
    Case("eigh", eigh_parts, [spd(3)], [None]),
    Case("eigh_batch", eigh_parts, [spd(2, (2,))], [None]),
    Case("qr_square", qr_parts("reduced"), [well_conditioned((3, 3))], [None]),
    Case("qr_tall", qr_parts("reduced"), [well_conditioned((4, 2))], [None]),
    Case("qr_wide", qr_parts("reduced"), [well_conditioned((2, 4))], [None], tol32=1e-2),
    Case("qr_complete_square", qr_parts("complete"), [well_conditioned((2, 3, 3))], [None]),
    Case("qr_complete_tall", qr_parts("complete"), [well_conditioned((4, 2))], [None],
         tol32=1e-2),
    Case("svd_tall", svd_parts, [well_conditioned((4, 3))], [None], tol32=2e-2),
    Case("svd_wide", svd_parts, [well_conditioned((2, 2, 3))], [None], tol32=2e-2),
    Case("svdvals", lambda a: jnp.linalg.svd(a, compute_uv=False),
         [well_conditioned((3, 2))], [None]),
    Case("lu", lambda a: lax.linalg.lu(a)[0], [well_conditioned((3, 3))], [None]),
    Case("lu_wide", lambda a: lax.linalg.lu(a)[0], [well_conditioned((2, 2, 3))], [None]),
    Case("triangular_solve_left", lambda a, b: lax.linalg.triangular_solve(
        a, b, left_side=True, lower=True), [triangular(3), fixed((3, 2))], [None]),
    Case("triangular_solve_right", lambda a, b: lax.linalg.triangular_solve(
        a, b, lower=False, transpose_a=True, unit_diagonal=True),
         [triangular(3, (2,), lower=False), fixed((2, 4, 3))], [None]),
    Case("solve", jnp.linalg.solve, [well_conditioned((3, 3)), fixed((3,))], [None]),
    Case("inv", jnp.linalg.inv, [well_conditioned((2, 3, 3))], [None]),
    Case("det", jnp.linalg.det, [well_conditioned((3, 3))], [None]),
    Case("slogdet", lambda a: jnp.linalg.slogdet(a)[1], [well_conditioned((2, 3, 3))],
         [None]),
    Case("norm", lambda x: (jnp.linalg.norm(x), jnp.linalg.norm(x, 1, axis=0),
                            jnp.linalg.norm(x, "nuc")), [well_conditioned((3, 2))], [None],
         tol32=2e-2),
    # --- sorting ---
    Case("sort", lambda x: lax.sort(x, 0), [distinct()], [VECTOR, MATRIX]),
    Case("sort_multi_operand", lambda x, y: lax.sort((x, y), 1, num_keys=1),
         [distinct(), uniform(-1, 1)], [MATRIX, BATCH]),
    Case("top_k", lambda x: lax.top_k(x, 2)[0], [distinct()], [VECTOR, MATRIX]),
]


def _params() -> list[Any]:
    params = []
    for case in CASES:
        for shape in case.shapes:
            label = case.name if shape is None else f"{case.name}-{'x'.join(map(str, shape))}"
            params.append(pytest.param(case, shape, id=label or "scalar"))
    return params


@pytest.fixture(params=["float32", "float64"])
def dtype(request: pytest.FixtureRequest) -> Any:
    """float32, or float64 with ``jax_enable_x64`` on for the test."""
    if request.param == "float64":
        minijax.config.update("jax_enable_x64", True)
        yield np.dtype(np.float64)
        minijax.config.update("jax_enable_x64", False)
    else:
        yield np.dtype(np.float32)


@pytest.mark.parametrize("case,shape", _params())
def test_check_grads_order_2(case: Case, shape: tuple | None, dtype: np.dtype) -> None:
    rng = np.random.RandomState(zlib.crc32(case.name.encode()))
    args = [jnp.asarray(make(shape, dtype, rng)) for make in case.inputs]
    options = dict(case.options)
    if dtype == np.float32 and case.tol32 is not None:
        options.update(atol=case.tol32, rtol=case.tol32)
    check_grads(case.fun, args, order=2, modes=("fwd", "rev"), **options)


# --- check_grads itself ---------------------------------------------------------------


def test_check_grads_catches_a_wrong_jvp_rule(monkeypatch: pytest.MonkeyPatch) -> None:
    """Break sin's rule (cos -> 2 cos): forward mode must notice, naming the mode."""
    from minijax.interpreters import ad
    from minijax.lax import base as ew

    rule = ad.jvp_rules[ew.sin_p]

    def broken(primals: list, tangents: list) -> Any:
        out, t = rule(primals, tangents)
        return out, lax.mul(t, lax.full_like(t, 2))

    monkeypatch.setitem(ad.jvp_rules, ew.sin_p, broken)
    with pytest.raises(AssertionError, match="JVP .*order 1.* tangent"):
        check_grads(lax.sin, (np.float32(0.5),), order=1, modes=("fwd",))
    with pytest.raises(AssertionError, match="VJP .*order 1.* cotangent projection"):
        check_grads(lax.sin, (np.float32(0.5),), order=1, modes=("rev",))


def test_check_grads_catches_a_wrong_transpose_rule(monkeypatch: pytest.MonkeyPatch) -> None:
    """A transpose of ``neg`` that forgets the minus sign: only reverse mode can see it."""
    from minijax.interpreters import transpose
    from minijax.lax import base as ew

    monkeypatch.setitem(transpose.transpose_rules, ew.neg_p, lambda ct, x: [ct])
    f = lambda x, y: x + -y  # noqa: E731  (x - y would differentiate to sub, not neg)
    check_grads(f, (np.float32(0.5), np.float32(2.0)), order=1, modes=("fwd",))
    with pytest.raises(AssertionError, match="cotangent projection"):
        check_grads(f, (np.float32(0.5), np.float32(2.0)), order=1, modes=("rev",))


def test_check_grads_second_order_names_the_chain() -> None:
    """A function whose first derivative is right but second is not (a JVP rule that
    is not differentiable correctly itself) fails at order 2 only."""
    from minijax.interpreters import ad
    from minijax.lax import base as ew

    rule = ad.jvp_rules[ew.exp_p]

    def frozen(primals: list, tangents: list) -> Any:
        out, _ = rule(primals, tangents)
        return out, lax.mul(tangents[0], lax.stop_gradient(out))

    ad.jvp_rules[ew.exp_p] = frozen
    try:
        check_grads(lax.exp, (np.float32(0.5),), order=1)
        with pytest.raises(AssertionError, match=r"of JVP \(derivative order 2\)"):
            check_grads(lax.exp, (np.float32(0.5),), order=2, modes=("fwd",))
    finally:
        ad.jvp_rules[ew.exp_p] = rule


def test_check_grads_tolerances_and_pytrees() -> None:
    f = lambda d: {"y": d["a"] * jnp.sin(d["b"])}  # noqa: E731
    args = ({"a": np.float32(1.5), "b": np.arange(3, dtype=np.float32)},)
    check_grads(f, args, order=2)
    check_grads(f, args, order=1, atol=1e-2, rtol=1e-2, eps=1e-3)
