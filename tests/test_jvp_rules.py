"""JVP and transpose rules against real JAX: values, dtypes and weak types of tangents and
cotangents, JAX's choices at kinks and ties, and JAX's errors where it has no rule.

Each program is written once against a namespace ``n`` (``n.jax``, ``n.jnp``, ``n.lax``)
and run on minijax and on JAX (``tests/oracle.py``). JAX runs each program as one
``jax.jit`` computation (one compilation instead of one per operation, which keeps this
file fast); minijax runs it eagerly.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from tests.oracle import check_program, x64_mode

jax = pytest.importorskip("jax")


def jitted(n: Any, f: Any) -> Any:
    """``f`` compiled as a whole on JAX's side; as it is on minijax's."""
    return n.jax.jit(f) if n.jax.__name__ == "jax" else f


def check(program: Any, rtol: float | None = None, atol: float | None = None,
          jit: bool = True) -> None:
    """``check_program``, with JAX running the whole program under ``jax.jit`` (unless the
    program returns non-arrays or converts values to NumPy)."""
    if jit:
        check_program(lambda n: jitted(n, lambda: program(n))(), rtol=rtol, atol=atol)
    else:
        check_program(program, rtol=rtol, atol=atol)


def show_float0(n: Any, tree: Any) -> Any:
    """float0 leaves (tangents of integers) as (dtype name, shape): NumPy arrays of a
    structured dtype, which the oracle does not compare as arrays."""
    def show(leaf: Any) -> Any:
        return ("float0", leaf.shape) if leaf.dtype == n.jax.dtypes.float0 else leaf
    return n.jax.tree_util.tree_map(show, tree)

RNG = np.random.RandomState(0)
V = RNG.uniform(-1, 1, 4).astype(np.float32)  # a vector
M = RNG.uniform(-1, 1, (3, 4)).astype(np.float32)  # a matrix
B = RNG.uniform(-1, 1, (2, 3, 4)).astype(np.float32)  # a batch of matrices
POS = RNG.uniform(0.5, 2, 4).astype(np.float32)
T = RNG.uniform(-1, 1, 4).astype(np.float32)  # a tangent for V or POS
SPD = (lambda q: (q * np.array([1., 2., 4.]) @ q.T).astype(np.float32))(
    np.linalg.qr(RNG.randn(3, 3))[0])
A = (RNG.uniform(-0.5, 0.5, (3, 3)) + 2 * np.eye(3)).astype(np.float32)
W = RNG.uniform(-1, 1, (3, 3)).astype(np.float32)  # weights, to make outputs scalar

UNARY = {  # name: input
    "sin": V, "cos": V, "tan": V, "asin": V * 0.9, "acos": V * 0.9, "atan": V, "sinh": V,
    "cosh": V, "tanh": V, "asinh": V, "acosh": POS + 1, "atanh": V * 0.9, "exp": V,
    "exp2": V, "log": POS, "log1p": POS, "expm1": V, "sqrt": POS, "rsqrt": POS, "cbrt": POS,
    "logistic": V, "square": V, "abs": V, "neg": V, "sign": V, "floor": V, "ceil": V,
    "round": V, "reciprocal": POS,
}


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_jvp_and_grad(name: str) -> None:
    x = UNARY[name]
    check(lambda n: n.jax.jvp(getattr(n.lax, name), (x,), (T,)), rtol=1e-5, atol=1e-6)
    check(lambda n: n.jax.grad(lambda x: getattr(n.lax, name)(x).sum())(x),
                  rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", ["sin", "exp", "log", "sqrt", "tanh", "abs"])
def test_unary_weak_types(name: str) -> None:
    """Python scalars in: weak tangents and gradients out, as in JAX."""
    check(lambda n: n.jax.jvp(getattr(n.lax, name), (0.7,), (1.0,)))
    check(lambda n: n.jax.grad(getattr(n.lax, name))(0.7))
    check(lambda n: n.jax.value_and_grad(lambda x: getattr(n.jnp, name)(x) * 2.0)(0.7))


BINARY = {
    "add": (V, M[0]), "sub": (V, M[0]), "mul": (V, M[0]), "div": (V, POS),
    "pow": (POS, V), "max": (V, M[0]), "min": (V, M[0]), "atan2": (V, POS),
    "rem": (V * 3, POS),
}


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_grads(name: str) -> None:
    x, y = BINARY[name]
    check(lambda n: n.jax.grad(lambda x, y: getattr(n.lax, name)(x, y).sum(),
                                       (0, 1))(x, y), rtol=1e-5, atol=1e-6)
    check(lambda n: n.jax.jvp(getattr(n.lax, name), (x, y), (T, T[::-1])),
                  rtol=1e-5, atol=1e-6)


def test_scalar_meets_array() -> None:
    """``lax`` broadcasts a scalar against an array: its tangent is stretched, and its
    cotangent summed."""
    check(lambda n: n.jax.jvp(n.lax.sub, (np.float32(2), V), (np.float32(1), T)))
    check(lambda n: n.jax.grad(lambda s, v: (n.lax.max(s, v) * v).sum(), (0, 1))(
        np.float32(0.1), V))


EDGES = {  # JAX's choices where the derivative is not defined, or is a limit
    "abs at 0": lambda n: n.jax.grad(n.jnp.abs)(0.0),
    "sqrt at 0": lambda n: n.jax.grad(n.jnp.sqrt)(0.0),
    "cbrt at 0": lambda n: n.jax.grad(n.lax.cbrt)(0.0),
    "max tie": lambda n: n.jax.grad(n.lax.max, (0, 1))(1.0, 1.0),
    "min tie": lambda n: n.jax.grad(n.lax.min, (0, 1))(1.0, 1.0),
    "maximum tie jnp": lambda n: n.jax.grad(lambda x: n.jnp.maximum(x, 0.0))(0.0),
    "relu-like at 0": lambda n: n.jax.grad(lambda x: n.jnp.where(x > 0, x, 0.0))(0.0),
    "pow x=0 y=0": lambda n: n.jax.grad(lambda x: n.lax.pow(x, 0.0))(0.0),
    "pow x=0 y=1": lambda n: n.jax.grad(lambda x: n.lax.pow(x, 1.0))(0.0),
    "pow x=0 y=2": lambda n: n.jax.grad(lambda x: n.lax.pow(x, 2.0))(0.0),
    "pow dy at x=0": lambda n: n.jax.grad(lambda y: n.lax.pow(0.0, y))(2.0),
    "pow dy at x=0 y<0": lambda n: n.jax.grad(lambda y: n.lax.pow(0.0, y))(-1.0),
    "integer_pow 0": lambda n: n.jax.grad(lambda x: n.lax.integer_pow(x, 0))(0.0),
    "integer_pow -1 at 0": lambda n: n.jax.grad(lambda x: n.lax.integer_pow(x, -1))(0.0),
    "clamp at lower": lambda n: n.jax.grad(n.lax.clamp, (0, 1, 2))(1.0, 1.0, 2.0),
    "clamp at upper": lambda n: n.jax.grad(n.lax.clamp, (0, 1, 2))(0.0, 2.0, 2.0),
    "clamp inside": lambda n: n.jax.grad(n.lax.clamp, (0, 1, 2))(0.0, 1.0, 2.0),
    "clamp below": lambda n: n.jax.grad(n.lax.clamp, (0, 1, 2))(1.0, 0.0, 2.0),
    "clamp crossed": lambda n: n.jax.grad(n.lax.clamp, (0, 1, 2))(3.0, 1.0, 2.0),
    "jnp.clip": lambda n: n.jax.grad(lambda x: n.jnp.clip(x, -1.0, 1.0).sum())(V * 2),
    "reduce_max ties": lambda n: n.jax.grad(lambda x: n.lax.reduce_max(x, (0,)))(
        np.array([1.0, 3.0, 3.0], np.float32)),
    "jnp.max ties 2d": lambda n: n.jax.grad(lambda x: n.jnp.max(x, axis=1).sum())(
        np.array([[1.0, 3.0, 3.0], [2.0, 2.0, 2.0]], np.float32)),
    "cummax ties": lambda n: n.jax.grad(lambda x: n.lax.cummax(x).sum())(
        np.ones(5, np.float32)),
    "cummin ties reverse": lambda n: n.jax.grad(lambda x: (n.lax.cummin(
        x, reverse=True) * n.jnp.arange(4.0)).sum())(np.array([2., 1., 1., 3.], np.float32)),
    "cumprod zeros": lambda n: n.jax.grad(lambda x: n.lax.cumprod(x).sum())(
        np.array([1.0, 0.0, 2.0, 0.0, 3.0], np.float32)),
    "reduce_prod zeros": lambda n: n.jax.grad(lambda x: n.lax.reduce_prod(x, (0,)))(
        np.array([1.0, 0.0, 2.0, 3.0], np.float32)),
    "prod two zeros": lambda n: n.jax.grad(lambda x: n.jnp.prod(x))(
        np.array([1.0, 0.0, 2.0, 0.0], np.float32)),
    "sort ties": lambda n: n.jax.grad(lambda x: (n.jnp.sort(x) * n.jnp.arange(4.0)).sum())(
        np.array([2.0, 1.0, 2.0, 1.0], np.float32)),
    "scatter_max ties": lambda n: n.jax.jvp(
        lambda x, u: n.lax.scatter_max(x, np.array([[1], [1], [2]]), u, _dn(n)),
        (np.array([1., 5., 3., 4.], np.float32), np.array([5., 5., 3.], np.float32)),
        (np.ones(4, np.float32), np.arange(2, 5, dtype=np.float32))),
    "scatter_min ties": lambda n: n.jax.grad(lambda x, u: (n.lax.scatter_min(
        x, np.array([[1], [1], [2]]), u, _dn(n)) * n.jnp.arange(1.0, 5.0)).sum(), (0, 1))(
        np.array([1., 5., 3., 4.], np.float32), np.array([5., 6., 3.], np.float32)),
}


def _dn(n: Any) -> Any:
    return n.lax.ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,),
                                         scatter_dims_to_operand_dims=(0,))


@pytest.mark.parametrize("name", sorted(EDGES))
def test_jax_choices_at_edges(name: str) -> None:
    check(EDGES[name])


IDX = np.array([[1], [1], [2]], np.int32)
U = np.array([7.0, 9.0, 3.0], np.float32)
X4 = np.array([1.0, 5.0, 3.0, 4.0], np.float32)
SCATTERS = ["scatter", "scatter_add", "scatter_sub", "scatter_max", "scatter_min"]


@pytest.mark.parametrize("name", SCATTERS + ["scatter_mul"])
@pytest.mark.parametrize("unique", [False, True])
def test_scatter_grads(name: str, unique: bool) -> None:
    """JAX's rules, including its errors (scatter_mul needs unique indices) and its
    answers when ``unique_indices=True`` is a lie."""
    weights = np.arange(1.0, 5.0, dtype=np.float32)

    def f(n: Any, x: Any, u: Any) -> Any:
        return getattr(n.lax, name)(x, IDX, u, _dn(n), unique_indices=unique) * weights

    check(lambda n: n.jax.grad(lambda x, u: f(n, x, u).sum(), (0, 1))(X4, U))
    check(lambda n: n.jax.jvp(lambda x, u: f(n, x, u), (X4, U),
                                      (np.ones(4, np.float32), np.full(3, 2, np.float32))))


SLICING = {
    "slice stride": lambda n, x: n.lax.slice(x, (0, 1), (3, 4), (2, 2)),
    "dynamic_slice clamped": lambda n, x: n.lax.dynamic_slice(x, (2, np.int32(3)), (2, 2)),
    "dynamic_update_slice": lambda n, x: n.lax.dynamic_update_slice(
        x, x[:2, :2] * 3, (np.int32(2), 1)),
    "indexing": lambda n, x: x[n.jnp.array([2, 0, 2]), 1:] * x[-1, ::2].sum(),
    "at set": lambda n, x: x.at[1:, 0].set(x[0, :2]),
    "at add repeated": lambda n, x: x.at[n.jnp.array([0, 0, 2])].add(x[1] * 2),
    "at mul": lambda n, x: x.at[0].multiply(x[1]),
    "at min max": lambda n, x: x.at[1].max(x[0]).at[2].min(x[0]),
    "gather fill": lambda n, x: x.at[n.jnp.array([1, 5])].get(mode="fill", fill_value=2.0),
    "take_along_axis": lambda n, x: n.jnp.take_along_axis(
        x, n.jnp.array([[0, 2], [1, 1], [3, 0]]), axis=1),
    "pad negative interior": lambda n, x: n.lax.pad(x, x[0, 0], [(1, -1, 1), (-1, 2, 0)]),
    "concatenate split": lambda n, x: n.lax.concatenate(n.lax.split(x, (1, 3), 1)[::-1], 1),
    "stack": lambda n, x: n.jnp.stack([x[2], x[0], x[1]], 1),
    "tile rev transpose": lambda n, x: n.lax.transpose(n.lax.rev(n.jnp.tile(x, (2, 1)), (1,)),
                                                       (1, 0)),
    "squeeze expand": lambda n, x: n.lax.squeeze(n.lax.expand_dims(x, (0, 2)), (0,)),
    "reshape dimensions": lambda n, x: n.lax.reshape(x, (2, 6), (1, 0)),
    "cumsum reverse": lambda n, x: n.lax.cumsum(x, 1, reverse=True) * n.lax.cumsum(x, 0),
    "broadcast": lambda n, x: n.jnp.broadcast_to(x[:, :1], (2, 3, 4)),
    "sum max argmax": lambda n, x: (n.jnp.sum(x, 0), n.jnp.max(x, 1),
                                    n.jnp.argmax(x, 1).astype(n.jnp.float32) * x[:, 0]),
    "select where": lambda n, x: n.jnp.where(x > 0, x * 2, n.jnp.sin(x)),
    "convert": lambda n, x: x.astype(n.jnp.float16).astype(n.jnp.float32) * x,
    "copy": lambda n, x: n.jnp.copy(x) * x,
}


@pytest.mark.parametrize("name", sorted(SLICING))
def test_linear_primitive_grads(name: str) -> None:
    f = SLICING[name]
    weights = RNG.uniform(-1, 1, 48).astype(np.float32)

    def scalar(n: Any, x: Any) -> Any:
        leaves = n.jax.tree_util.tree_leaves(f(n, x))
        return sum((leaf.ravel() * weights[:leaf.size]).sum() for leaf in leaves)

    check(lambda n: n.jax.grad(lambda x: scalar(n, x))(M), rtol=1e-5,
                  atol=1e-6)
    check(lambda n: n.jax.jvp(lambda x: f(n, x), (M,), (M[::-1],)), rtol=1e-5, atol=1e-6)
    check(lambda n: (lambda x: n.jax.vjp(lambda x: f(n, x), x)[1](f(n, x)))(
        n.jnp.asarray(M)), rtol=1e-5, atol=1e-6)


DOTS = {
    "dot": (lambda n, x, y: n.lax.dot(x, y), M, M.T),
    "matvec": (lambda n, x, y: n.jnp.matmul(x, y), M, V),
    "batch": (lambda n, x, y: n.lax.dot_general(x, y, (((2,), (1,)), ((0,), (0,)))), B,
              np.swapaxes(B, 1, 2)),
    "contract two": (lambda n, x, y: n.lax.dot_general(x, y, (((0, 2), (2, 0)), ((), ()))),
                     B, np.transpose(B, (2, 1, 0))),
    "batch not leading": (lambda n, x, y: n.lax.dot_general(
        x, y, (((0,), (2,)), ((2,), (0,)))), B, np.transpose(B, (2, 1, 0))),
    "einsum": (lambda n, x, y: n.jnp.einsum("bij,bkj->bik", x, y), B, B),
    "mixed precision": (lambda n, x, y: n.lax.dot(x, y, preferred_element_type=n.jnp.float32),
                        M.astype(np.float16), M.T.astype(np.float16)),
}


@pytest.mark.parametrize("name", sorted(DOTS))
def test_dot_general_both_operands(name: str) -> None:
    f, x, y = DOTS[name]
    check(lambda n: n.jax.vjp(lambda x, y: f(n, x, y), x, y)[1](f(n, x, y)),
                  rtol=1e-3 if x.dtype == np.float16 else 1e-5, atol=1e-5)
    check(lambda n: n.jax.jvp(lambda x, y: f(n, x, y), (x, y), (x * 2, y)),
                  rtol=1e-3 if x.dtype == np.float16 else 1e-5, atol=1e-5)


LINALG = {
    "inv": lambda n, a: n.jnp.linalg.inv(a),
    "solve": lambda n, a: n.jnp.linalg.solve(a, a[0]),
    "det": lambda n, a: n.jnp.linalg.det(a),
    "slogdet": lambda n, a: n.jnp.linalg.slogdet(a)[1],
    "norm fro": lambda n, a: n.jnp.linalg.norm(a),
    "norm 2": lambda n, a: n.jnp.linalg.norm(a, 2),
    "norm nuc": lambda n, a: n.jnp.linalg.norm(a, "nuc"),
    "norm vector 3": lambda n, a: n.jnp.linalg.norm(a, 3, axis=1),
    "cholesky": lambda n, a: n.jnp.linalg.cholesky(a @ a.T),
    "eigh": lambda n, a: n.jnp.linalg.eigh(a + a.T),
    "eigvalsh": lambda n, a: n.jnp.linalg.eigvalsh(a + a.T),
    "qr": lambda n, a: n.jnp.linalg.qr(a),
    "qr complete": lambda n, a: n.jnp.linalg.qr(a, mode="complete"),
    "qr wide": lambda n, a: n.jnp.linalg.qr(a[:2]),
    "qr tall": lambda n, a: n.jnp.linalg.qr(a[:, :2]),
    "qr complete tall": lambda n, a: n.jnp.linalg.qr(a[:, :2], mode="complete"),
    "svd": lambda n, a: n.jnp.linalg.svd(a),
    "svd reduced tall": lambda n, a: n.jnp.linalg.svd(a[:, :2], full_matrices=False),
    "svd reduced wide": lambda n, a: n.jnp.linalg.svd(a[:2], full_matrices=False),
    "svdvals": lambda n, a: n.jnp.linalg.svd(a[:2], compute_uv=False),
    "lu": lambda n, a: n.lax.linalg.lu(a)[0],
    "lu wide": lambda n, a: n.lax.linalg.lu(a[:2])[0],
    "triangular_solve": lambda n, a: n.lax.linalg.triangular_solve(
        a, a.T, left_side=True, lower=True, transpose_a=True),
    "triangular_solve unit right": lambda n, a: n.lax.linalg.triangular_solve(
        a, a[:2], lower=False, unit_diagonal=True),
    "pinv": lambda n, a: n.jnp.linalg.pinv(a),
    "matrix_power": lambda n, a: n.jnp.linalg.matrix_power(a, -2),
}


@pytest.mark.parametrize("name", sorted(LINALG))
def test_linalg_grads(name: str) -> None:
    f = LINALG[name]

    def scalar(n: Any, a: Any) -> Any:
        leaves = n.jax.tree_util.tree_leaves(f(n, a))
        return sum((leaf * W[:leaf.shape[-2], :leaf.shape[-1]] if leaf.ndim == 2
                    else leaf * W[0, :leaf.shape[-1]]).sum() for leaf in leaves)

    check(lambda n: n.jax.grad(lambda a: scalar(n, a))(A), rtol=2e-4, atol=2e-5,
          jit=not name.startswith("lu"))  # JAX's LU rule cannot run under jit here
    if not name.startswith("lu"):  # (eager JAX is slow at it; the grad covers it)
        check(lambda n: n.jax.jvp(lambda a: f(n, a), (A,), (W,)), rtol=2e-4, atol=2e-5)


def test_linalg_batched_and_float64() -> None:
    batch = np.stack([A, A.T + np.eye(3, dtype=np.float32)])
    program = lambda n: n.jax.grad(lambda a: (  # noqa: E731
        n.jnp.linalg.inv(a) * n.jnp.linalg.det(a)[:, None, None]).sum()
        + n.jnp.linalg.eigvalsh(a @ a.mT).sum())(batch)
    check(program, rtol=2e-4, atol=2e-5)
    with x64_mode():
        check(lambda n: n.jax.hessian(lambda a: n.jnp.linalg.slogdet(a)[1])(
            A.astype(np.float64)), rtol=1e-9, atol=1e-10)


SORTS = {
    "sort": lambda n, x: n.lax.sort(x, 1),
    "sort descending jnp": lambda n, x: n.jnp.sort(x, axis=0, descending=True),
    "sort_key_val": lambda n, x: n.lax.sort_key_val(x[0], x[1] * 2, 0),
    "sort multi": lambda n, x: n.lax.sort((x[0], x[1], x[2]), 0, num_keys=2),
    "argsort": lambda n, x: x[0][n.jnp.argsort(x[1])],
    "top_k": lambda n, x: n.lax.top_k(x, 2),
}


@pytest.mark.parametrize("name", sorted(SORTS))
def test_sort_grads(name: str) -> None:
    f = SORTS[name]
    check(lambda n: show_float0(n, n.jax.jvp(lambda x: f(n, x), (M,), (M * 3,))), jit=False)
    check(lambda n: n.jax.vjp(lambda x: f(n, x), M)[1](
        n.jax.tree_util.tree_map(lambda y: y if y.dtype == n.jnp.float32 else
                                 n.np.zeros(y.shape, n.jax.dtypes.float0), f(n, M))),
          jit=False)


def test_tangent_dtypes() -> None:
    """Tangents of integer results are float0; float tangents keep their dtype."""
    def dtypes_of(n: Any, out: Any) -> Any:
        return n.jax.tree_util.tree_map(lambda t: str(t.dtype), out)

    check(lambda n: dtypes_of(n, n.jax.jvp(
        lambda x: (x.astype(n.jnp.int32), n.jnp.argmax(x), x > 0, x.astype(n.jnp.float16)),
        (V,), (T,))[1]), jit=False)
    check(lambda n: dtypes_of(n, n.jax.vjp(lambda x, i: x * i, V, 3)[1](V)), jit=False)
    with x64_mode():
        check(lambda n: n.jax.jvp(lambda x: x.astype(n.jnp.float32) * 2,
                                          (V.astype(np.float64),), (T.astype(np.float64),)))
        check(lambda n: n.jax.grad(lambda x: (x.astype(n.jnp.float32) ** 2).sum())(
            V.astype(np.float64)))


def test_complex_rules() -> None:
    z = (V + 1j * POS).astype(np.complex64)
    check(lambda n: n.jax.jvp(lambda z: (n.jnp.abs(z), n.jnp.real(z * z), n.jnp.conj(z),
                                                 n.jnp.imag(z)), (z,), (z[::-1],)), rtol=1e-5)
    check(lambda n: n.jax.grad(lambda x, y: n.jnp.abs(n.lax.complex(x, y) ** 2).sum(),
                                       (0, 1))(V, POS), rtol=1e-5)
    check(lambda n: n.jax.vjp(lambda z: n.jnp.sin(z) * z, z)[1](z), rtol=1e-5)


ERRORS = {
    "nextafter": lambda n: n.jax.grad(lambda x: n.lax.nextafter(x, np.float32(2)))(1.0),
    "scatter_apply": lambda n: n.jax.grad(lambda x: n.lax.scatter_apply(
        x, np.array([[1]]), n.jnp.sin, _dn(n)).sum())(X4),
    "scatter_mul updates": lambda n: n.jax.grad(lambda u: n.lax.scatter_mul(
        X4, IDX, u, _dn(n)).sum())(U),
    "svd full matrices": lambda n: n.jax.grad(lambda a: n.jnp.linalg.svd(a[:2])[0].sum())(A),
    "while reverse": lambda n: n.jax.grad(lambda x: n.lax.while_loop(
        lambda c: c < 10.0, lambda c: c * 2.0, x))(1.0),
}


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_no_rule_errors(name: str) -> None:
    check(ERRORS[name])


JAXPRS = {
    "sin x": lambda n: lambda x: n.jnp.sin(x) * x,
    "cos": lambda n: n.jnp.cos,
    "exp log": lambda n: lambda x: n.jnp.log(n.jnp.exp(x) + 1.0),
    "tanh": lambda n: n.jnp.tanh,
    "sqrt": lambda n: n.jnp.sqrt,
    "square": lambda n: lambda x: x ** 2,
    "cube": lambda n: lambda x: x ** 3,
    "reciprocal": lambda n: lambda x: 1 / x,
    "maximum": lambda n: lambda x: n.jnp.maximum(x, 0.0),
    "sigmoid": lambda n: lambda x: n.jnp.exp(x) / (1 + n.jnp.exp(x)),
}


@pytest.mark.parametrize("name", sorted(JAXPRS))
def test_grad_jaxprs_print_like_jax(name: str) -> None:
    """The linearized-and-transposed program is the one JAX builds, equation for equation
    (what chapter 05 shows)."""
    check(lambda n: str(n.jax.make_jaxpr(n.jax.grad(JAXPRS[name](n)))(1.0)), jit=False)
