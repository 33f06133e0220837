"""``vmap`` against JAX: values, dtypes, weak types, printed jaxprs, error messages, and
its compositions with ``grad``, ``jit`` and itself."""

from __future__ import annotations

import re

import numpy as np
import pytest

from tests.oracle import check_jaxpr, check_program, run_both

jax = pytest.importorskip("jax")

F32 = np.float32
X = np.arange(6, dtype=F32).reshape(2, 3) / 4 - 0.5
Y = np.linspace(-1, 1, 6, dtype=F32).reshape(3, 2)
V = np.array([0.5, -1.5, 2.0], F32)
M = np.arange(12, dtype=F32).reshape(3, 4) / 8
IDX = np.array([2, 0], np.int32)


def assert_same_message(program) -> None:
    """Both raise, the same class, with the same message (but for the ids of objects)."""
    (ours_kind, ours), (theirs_kind, theirs) = run_both(program)
    assert theirs_kind == "error", theirs
    assert ours_kind == "error", ours
    assert type(ours).__name__ == type(theirs).__name__, (ours, theirs)
    ours, theirs = (re.sub(r"object id \d+", "object id N", str(e)) for e in (ours, theirs))
    assert ours == theirs, f"minijax:\n{ours}\nJAX:\n{theirs}"


# ---------------------------------------------------------------------------------------
# in_axes, out_axes, axis_size
# ---------------------------------------------------------------------------------------

# name: program of the namespace
API_PROGRAMS = {
    "default": lambda n: n.jax.vmap(n.jnp.sin)(X),
    "in_axes_1": lambda n: n.jax.vmap(lambda a: a * 2.0, in_axes=1)(X),
    "in_axes_negative": lambda n: n.jax.vmap(lambda a: a.sum(), in_axes=-1)(X),
    "in_axes_none": lambda n: n.jax.vmap(lambda a, b: a + b, in_axes=(0, None))(X, V),
    "in_axes_list": lambda n: n.jax.vmap(lambda a, b: a * b, in_axes=[1, 0])(X, Y),
    "in_axes_dict_prefix": lambda n: n.jax.vmap(
        lambda p, x: p["w"] @ x + p["b"], in_axes=({"w": None, "b": 0}, 1))(
            {"w": M.T, "b": np.ones((2, 4), F32)}, Y.T),
    "in_axes_nested_tuple": lambda n: n.jax.vmap(
        lambda t: t[0] - t[1][0] * t[1][1], in_axes=((0, (1, None)),))(
            (X, (Y, F32(3)))),
    "kwargs_mapped_on_0": lambda n: n.jax.vmap(lambda a, *, b: a * b)(X, b=X),
    "python_scalar_unmapped": lambda n: n.jax.vmap(lambda a, s: a * s, in_axes=(0, None))(
        X, 2),
    "numpy_input": lambda n: n.jax.vmap(lambda a: a + 1)(np.arange(3)),
    "out_axes_1": lambda n: n.jax.vmap(lambda a: a * 2.0, out_axes=1)(X),
    # (JAX hands a mapped NumPy input back as NumPy if no operation touched it)
    "out_axes_negative": lambda n: n.jax.vmap(lambda a: (a, a.sum()), out_axes=-1)(
        n.jnp.asarray(X)),
    "out_axes_none": lambda n: n.jax.vmap(lambda a, b: (a + b, b * 2.0), in_axes=(0, None),
                                          out_axes=(0, None))(X, n.jnp.asarray(V)),
    "out_axes_prefix": lambda n: n.jax.vmap(lambda a: {"s": a.sum(), "p": (a, a * a)},
                                            out_axes={"s": 0, "p": 1})(n.jnp.asarray(X)),
    "unmapped_output_broadcast": lambda n: n.jax.vmap(lambda a, b: b, in_axes=(0, None))(
        X, V),
    "constant_output": lambda n: n.jax.vmap(lambda a: 1.0)(X),
    "axis_size": lambda n: n.jax.vmap(lambda a: a * 2, in_axes=None, axis_size=3)(V),
    "axis_size_out_none": lambda n: n.jax.vmap(lambda a: a, in_axes=None, out_axes=None,
                                               axis_size=2)(n.jnp.asarray(X)),
    "int_dtype_kept": lambda n: n.jax.vmap(lambda a: a * 2)(np.arange(6, dtype=np.int32)),
    "weak_type_kept": lambda n: n.jax.vmap(lambda a, s: a + s, in_axes=(None, 0))(
        2.0, n.jnp.asarray(V)),
    "nested": lambda n: n.jax.vmap(n.jax.vmap(lambda a, b: a * b, in_axes=(0, None)),
                                   in_axes=(None, 0))(V, X),
    "nested_in_axes_1": lambda n: n.jax.vmap(n.jax.vmap(n.jnp.dot, in_axes=(None, 1)),
                                             in_axes=(0, None))(X, M),
    # spmd_axis_name shards over mesh axes: on one device it changes nothing
    "spmd_axis_name": lambda n: n.jax.vmap(n.jnp.sin, spmd_axis_name="x")(X),
    "spmd_axis_name_tuple": lambda n: n.jax.vmap(lambda a: a @ a.T, in_axes=1,
                                                 spmd_axis_name=("x", "y"))(X),
    "spmd_axis_name_and_axis_name": lambda n: n.jax.vmap(
        lambda a: n.lax.psum(a, "i"), axis_name="i", spmd_axis_name="i")(X),
    "spmd_axis_name_nested": lambda n: n.jax.vmap(n.jax.vmap(n.jnp.cos, spmd_axis_name="x"),
                                                  spmd_axis_name="x")(X),
}


SPMD_JAXPRS = {
    "sum": lambda n: n.jax.vmap(lambda a: a.sum(), spmd_axis_name="x"),
    "out_axes_1": lambda n: n.jax.vmap(lambda a: a * 2, in_axes=1, spmd_axis_name=("x",)),
    "jit_inside": lambda n: n.jax.vmap(n.jax.jit(n.jnp.sin), spmd_axis_name="x"),
    "grad": lambda n: n.jax.grad(lambda a: n.jax.vmap(n.jnp.sin, spmd_axis_name="x")(a).sum()),
}


@pytest.mark.parametrize("name", SPMD_JAXPRS)
def test_spmd_axis_name_jaxprs_match_jax(name):
    check_jaxpr(SPMD_JAXPRS[name], X)


@pytest.mark.parametrize("name", API_PROGRAMS)
def test_vmap_api_matches_jax(name):
    check_program(API_PROGRAMS[name])


ERROR_PROGRAMS = {
    "inconsistent_sizes": lambda n: n.jax.vmap(lambda a, b: a + b)(X, V),
    "inconsistent_axes": lambda n: n.jax.vmap(lambda a, b: a + b, in_axes=(0, 1))(X, X),
    "inconsistent_three": lambda n: n.jax.vmap(lambda a, b, c: a, in_axes=(0, 0, 1))(
        X, np.ones(5, F32), X),
    "inconsistent_most": lambda n: n.jax.vmap(lambda a, b, c: a)(X, X, V),
    "inconsistent_axis_size": lambda n: n.jax.vmap(lambda a: a, axis_size=3)(X),
    "inconsistent_pytree": lambda n: n.jax.vmap(lambda a: a)({"a": X, "b": V}),
    "rank_too_small": lambda n: n.jax.vmap(lambda a: a, in_axes=2)(X),
    "rank_too_small_negative": lambda n: n.jax.vmap(lambda a: a, in_axes=-3)(X),
    "scalar_mapped": lambda n: n.jax.vmap(lambda a: a)(1.0),
    "in_axes_length": lambda n: n.jax.vmap(lambda a: a, in_axes=(0, 0))(X),
    "in_axes_string": lambda n: n.jax.vmap(lambda a: a, in_axes="a"),
    "in_axes_dict": lambda n: n.jax.vmap(lambda a: a, in_axes={"a": 0}),
    "in_axes_float": lambda n: n.jax.vmap(lambda a: a, in_axes=(0.5,)),
    "out_axes_float": lambda n: n.jax.vmap(lambda a: a, out_axes=(0.5,)),
    "all_none": lambda n: n.jax.vmap(lambda a: a, in_axes=None)(X),
    "no_arguments": lambda n: n.jax.vmap(lambda: 1.0)(),
    "out_axes_none_batched": lambda n: n.jax.vmap(lambda a: a, out_axes=None)(X),
    "out_axes_none_named": lambda n: n.jax.vmap(lambda a: a, out_axes=None,
                                                axis_name="i")(X),
    "out_axes_none_in_pytree": lambda n: n.jax.vmap(lambda a: (a, {"k": a}),
                                                    out_axes=(0, {"k": None}))(X),
    "out_axes_out_of_range": lambda n: n.jax.vmap(lambda a: a, out_axes=2)(X),
    "out_axes_not_prefix": lambda n: n.jax.vmap(lambda a: (a, a), out_axes=(0,))(X),
    "in_axes_dict_keys": lambda n: n.jax.vmap(lambda a, b: a, in_axes=({"a": 0, "c": 1}, 0))(
        {"a": X, "b": V}, X),
    "in_axes_wrong_type": lambda n: n.jax.vmap(lambda a: a, in_axes=([0],))((X,)),
    "not_callable": lambda n: n.jax.vmap(5),
    "string_argument": lambda n: n.jax.vmap(lambda a: a)("s"),
    "string_output": lambda n: n.jax.vmap(lambda a: "s")(X),
    "bool_conversion": lambda n: n.jax.vmap(lambda a: a if a.sum() > 0 else -a)(X),
    "spmd_axis_name_list": lambda n: n.jax.vmap(n.jnp.sin, spmd_axis_name=["x"])(X),
    "spmd_axis_name_dict": lambda n: n.jax.vmap(n.jnp.sin, spmd_axis_name={"x": 1})(X),
    "spmd_axis_name_sizes_first": lambda n: n.jax.vmap(lambda a, b: a, spmd_axis_name=["x"])(
        X, V),
    "spmd_axis_name_is_no_axis_name": lambda n: n.jax.vmap(lambda a: n.lax.psum(a, "x"),
                                                           spmd_axis_name="x")(X),
}


@pytest.mark.parametrize("name", ERROR_PROGRAMS)
def test_vmap_errors_match_jax(name):
    assert_same_message(ERROR_PROGRAMS[name])


# ---------------------------------------------------------------------------------------
# Batching rules: values and jaxprs
# ---------------------------------------------------------------------------------------

# name: (function of the namespace, args, in_axes)
RULE_PROGRAMS = {
    "sin": (lambda n: n.jnp.sin, (X,), 0),
    "add_unbatched_vector": (lambda n: lambda a, b: a + b, (X, V), (0, None)),
    "add_both_other_axes": (lambda n: lambda a, b: a + b, (X, Y), (1, 0)),
    "add_scalar_batch": (lambda n: lambda a, s: a * s, (X, V), (1, 0)),
    "compare_select": (lambda n: lambda a: n.jnp.where(a > 0, a, 0.0), (X,), 0),
    "where_batched_scalar_predicate": (
        lambda n: lambda p, a, b: n.lax.select(p, a, b), (np.array([True, False]), X, -X), 0),
    "select_n_unbatched_cases": (lambda n: lambda p: n.lax.select_n(p, V, 2 * V),
                                 (np.array([[True, False, True], [False, False, True]]),), 0),
    "clamp_batched_bounds": (lambda n: lambda lo, a: n.lax.clamp(lo, a, 1.0),
                             (np.array([-0.2, 0.1], F32), X), 0),
    "clip": (lambda n: lambda a: n.jnp.clip(a, -0.1, 0.3), (X,), 1),
    "integer_pow_convert": (lambda n: lambda a: (a ** 3).astype(n.jnp.int32), (X,), 0),
    "reduce_sum_axis_1": (lambda n: lambda a: n.jnp.sin(a).sum(), (X,), 1),
    "reductions": (lambda n: lambda a: (a.max(), a.min(), a.prod(), (a > 0).all(),
                                        (a > 0).any()), (X,), 0),
    "argmax": (lambda n: lambda a: (n.jnp.argmax(a), n.jnp.argmin(a)), (X,), 1),
    "reduce_keeps_batch_in_middle": (lambda n: lambda a: (a.sum(0), a.max(1), a.cumsum(1)),
                                     (np.arange(24, dtype=F32).reshape(2, 3, 4),), 1),
    "cumsum": (lambda n: lambda a: (n.jnp.cumsum(a), n.jnp.cumprod(a)), (X,), 0),
    "matvec_unbatched_matrix": (lambda n: lambda a, b: a @ b, (X, M), (0, None)),
    "matmul_batched_rhs": (lambda n: lambda a, b: a @ b, (X, M), (None, 1)),
    "dot_both_batched": (lambda n: n.jnp.dot, (X, X), 0),
    "matmul_both_batched": (lambda n: lambda a, b: a[:, None] * b @ b.T, (Y, Y.T), (0, 1)),
    "einsum": (lambda n: lambda a, b: n.jnp.einsum("i,ij->j", a, b), (X, M), (0, None)),
    "outer": (lambda n: lambda a: n.jnp.outer(a, a), (X,), 0),
    "broadcast_to": (lambda n: lambda a: n.jnp.broadcast_to(a, (4, 3)), (X,), 0),
    "reshape_transpose": (lambda n: lambda a: a.reshape(3, 1).T, (X,), 0),
    "squeeze_expand": (lambda n: lambda a: a[None].squeeze(0), (X,), 0),
    "concatenate": (lambda n: lambda a, b: n.jnp.concatenate([a, b]), (X, V), (0, None)),
    "stack": (lambda n: lambda a: n.jnp.stack([a, a * 2]), (X,), 0),
    "stack_mixed": (lambda n: lambda a, b: n.jnp.stack([a, b]), (X, V), (0, None)),
    "pad": (lambda n: lambda a: n.jnp.pad(a, 1), (X,), 0),
    "pad_batched_value": (lambda n: lambda a, v: n.lax.pad(a, v, [(1, 2, 1)]),
                          (X, np.array([7.0, 8.0], F32)), 0),
    "flip": (lambda n: lambda a: n.jnp.flip(a), (X,), 1),
    "iota": (lambda n: lambda a: a + n.jnp.arange(3.0), (X,), 0),
    "copy": (lambda n: n.jnp.copy, (X,), 0),
    "slice": (lambda n: lambda a: a[1:], (X,), 0),
    "strided_slice": (lambda n: lambda a: a[::2], (X,), 1),
    "dynamic_index": (lambda n: lambda a, i: a[i], (X, IDX), 0),
    "dynamic_index_unbatched_array": (lambda n: lambda a, i: a[i], (V, IDX), (None, 0)),
    "dynamic_slice_unbatched_start": (
        lambda n: lambda a, i: n.lax.dynamic_slice(a, (i,), (2,)), (X, np.int32(1)), (0, None)),
    "dynamic_update_slice": (
        lambda n: lambda a, u: n.lax.dynamic_update_slice(a, u, (1,)),
        (X, np.ones((2, 2), F32)), 0),
    "dynamic_update_slice_batched_start": (
        lambda n: lambda a, i: n.lax.dynamic_update_slice(a, n.jnp.ones(2), (i,)),
        (X, np.array([0, 1], np.int32)), 0),
    "take": (lambda n: lambda a: a[n.jnp.array([0, 2])], (X,), 0),
    "take_batched_indices": (lambda n: lambda a, i: a[i], (V, np.array([[0, 2], [1, 1]])),
                             (None, 0)),
    "at_set": (lambda n: lambda a, i: a.at[i].set(7.0), (X, IDX), 0),
    "at_add_unbatched_index": (lambda n: lambda a: a.at[1].add(7.0), (X,), 0),
    "at_add_unbatched_operand": (lambda n: lambda i, u: n.jnp.zeros(3).at[i].add(u),
                                 (IDX, np.array([1.0, 2.0], F32)), 0),
    "at_mul_max": (lambda n: lambda a: a.at[0].mul(3.0).at[1].max(0.1), (X,), 1),
    "take_along_axis": (lambda n: lambda a, i: n.jnp.take_along_axis(a, i, 0),
                        (X, np.array([[2, 0], [1, 1]], np.int32)), 0),
    "softmax_like": (lambda n: lambda a: n.jnp.exp(a - a.max()) / n.jnp.exp(a - a.max()).sum(),
                     (X,), 0),
    "erf": (lambda n: n.lax.erf, (X,), 0),
    "sort": (lambda n: n.jnp.sort, (X,), 1),
    "linalg": (lambda n: lambda a: n.jnp.linalg.cholesky(a @ a.T + n.jnp.eye(2)),
               (np.stack([X, 2 * X]),), 0),
}


@pytest.mark.parametrize("name", RULE_PROGRAMS)
def test_batching_rule_values(name):
    fun, args, in_axes = RULE_PROGRAMS[name]
    check_program(lambda n: n.jax.vmap(fun(n), in_axes=in_axes)(*args))


@pytest.mark.parametrize("name", RULE_PROGRAMS)
def test_batching_rule_jaxprs(name):
    fun, args, in_axes = RULE_PROGRAMS[name]
    check_jaxpr(lambda n: n.jax.vmap(fun(n), in_axes=in_axes), *args)


def test_vmap_of_eager_function_matches_a_loop():
    import minijax
    import minijax.numpy as jnp

    def f(a, b):
        return jnp.tanh(a @ b).sum() + a[0]

    batched = minijax.vmap(f, in_axes=(0, None))(X, M.T[:3])
    looped = np.stack([np.asarray(f(x, M.T[:3])) for x in X])
    np.testing.assert_allclose(np.asarray(batched), looped, rtol=2e-6)


# ---------------------------------------------------------------------------------------
# Collectives: psum, pmean, axis_index
# ---------------------------------------------------------------------------------------

COLLECTIVES = {
    "psum": lambda n, x: n.jax.vmap(lambda a: n.lax.psum(a, "i"), axis_name="i")(x),
    "pmean": lambda n, x: n.jax.vmap(lambda a: n.lax.pmean(a, "i"), axis_name="i")(x),
    "normalize": lambda n, x: n.jax.vmap(lambda a: a / n.lax.psum(a, "i"), axis_name="i")(x),
    "axis_size_idiom": lambda n, x: n.jax.vmap(lambda a: a * n.lax.psum(1, "i"),
                                               axis_name="i")(x),
    "psum_bool": lambda n, x: n.jax.vmap(lambda a: n.lax.psum(a > 0, "i"), axis_name="i")(x),
    "psum_pytree": lambda n, x: n.jax.vmap(lambda a: n.lax.psum({"u": a, "v": (2 * a,)}, "i"),
                                           axis_name="i")(x),
    "psum_in_axes_1": lambda n, x: n.jax.vmap(lambda a: n.lax.psum(a, "i"), axis_name="i",
                                              in_axes=1)(x),
    "axis_index": lambda n, x: n.jax.vmap(lambda a: a + n.lax.axis_index("i"), axis_name="i")(x),
    "nested_outer_name": lambda n, x: n.jax.vmap(n.jax.vmap(
        lambda a: n.lax.psum(a, "i") + n.lax.axis_index(("i", "j")), axis_name="j"),
        axis_name="i")(x),
    "nested_both_names": lambda n, x: n.jax.vmap(n.jax.vmap(
        lambda a: n.lax.pmean(a, ("i", "j")) * n.lax.axis_index("i"), axis_name="j"),
        axis_name="i")(x),
    "jit_of_vmap": lambda n, x: n.jax.jit(n.jax.vmap(lambda a: a / n.lax.psum(a, "i"),
                                                     axis_name="i"))(x),
    "vmap_of_jit": lambda n, x: n.jax.vmap(n.jax.jit(lambda a: a - n.lax.pmean(a, "i")),
                                           axis_name="i")(x),
    "grad_of_vmap_psum": lambda n, x: n.jax.grad(lambda y: n.jax.vmap(
        lambda a: a * n.lax.psum(a, "i"), axis_name="i")(y).sum())(x),
    "vmap_of_grad_psum": lambda n, x: n.jax.vmap(n.jax.grad(
        lambda a: (a * n.lax.psum(a, "i")).sum()), axis_name="i")(x),
    "vmap_of_grad_pmean": lambda n, x: n.jax.vmap(n.jax.grad(
        lambda a: (n.jnp.sin(a) * n.lax.pmean(a, "i")).sum()), axis_name="i")(x),
    "grad_of_vmap_axis_index": lambda n, x: n.jax.grad(lambda y: n.jax.vmap(
        lambda a: a * n.lax.axis_index("i"), axis_name="i")(y).sum())(x),
}


@pytest.mark.parametrize("name", COLLECTIVES)
def test_collectives_match_jax(name):
    check_program(lambda n: COLLECTIVES[name](n, X))


@pytest.mark.parametrize("name", ["psum", "pmean", "axis_index", "axis_size_idiom",
                                  "nested_outer_name", "nested_both_names", "vmap_of_jit",
                                  "grad_of_vmap_psum", "vmap_of_grad_psum",
                                  "vmap_of_grad_pmean", "grad_of_vmap_axis_index"])
def test_collective_jaxprs(name):
    check_jaxpr(lambda n: lambda x: COLLECTIVES[name](n, x), X)


COLLECTIVE_ERRORS = {
    "psum_constant_unbound": lambda n: n.lax.psum(1.0, "i"),
    "pmean_constant_unbound": lambda n: n.lax.pmean(1.0, "i"),
    "axis_index_unbound": lambda n: n.lax.axis_index("i"),
    "psum_under_jit_unbound": lambda n: n.jax.jit(lambda a: n.lax.psum(a, "i"))(X),
    "psum_other_name": lambda n: n.jax.vmap(lambda a: n.lax.psum(a, "j"), axis_name="i")(X),
    "psum_two_names_one_unbound": lambda n: n.jax.vmap(lambda a: n.lax.psum(a, ("i", "j")),
                                                       axis_name="i")(X),
    "axis_index_other_name": lambda n: n.jax.vmap(lambda a: n.lax.axis_index("j"),
                                                  axis_name="i")(X),
}


@pytest.mark.parametrize("name", COLLECTIVE_ERRORS)
def test_collective_errors_match_jax(name):
    assert_same_message(COLLECTIVE_ERRORS[name])


# ---------------------------------------------------------------------------------------
# Compositions: grad, jvp, jit, nested vmap, custom rules, control flow
# ---------------------------------------------------------------------------------------


def _f(n):
    return lambda a: n.jnp.sum(n.jnp.tanh(a) ** 2)


def _mlp_loss(n):
    def loss(p, x, y):
        h = n.jax.nn.relu(x @ p["W1"] + p["b1"])
        return (h @ p["W2"] - y) ** 2
    return loss


PARAMS = {"W1": np.arange(12, dtype=F32).reshape(3, 4) / 10 - 0.4,
          "b1": np.linspace(-0.1, 0.1, 4, dtype=F32), "W2": np.arange(4, dtype=F32) / 5}
TARGETS = np.array([1.0, -1.0], F32)


def _custom_vjp_sin(n):
    @n.jax.custom_vjp
    def g(a):
        return n.jnp.sin(a)
    g.defvjp(lambda a: (n.jnp.sin(a), n.jnp.cos(a)), lambda r, ct: (r * ct * 2,))
    return g


def _custom_jvp_square(n):
    @n.jax.custom_jvp
    def h(a, b):
        return a * a * b
    h.defjvp(lambda p, t: (h(*p), 3.0 * p[0] * t[0] * p[1] + p[0] * p[0] * t[1]))
    return h


# name: (function of the namespace, args)
COMPOSITIONS = {
    "vmap_grad": (lambda n: n.jax.vmap(n.jax.grad(_f(n))), (X,)),
    "grad_vmap_sum": (lambda n: n.jax.grad(lambda a: n.jax.vmap(_f(n))(a).sum()), (X,)),
    "jit_vmap": (lambda n: n.jax.jit(n.jax.vmap(_f(n))), (X,)),
    "vmap_jit": (lambda n: n.jax.vmap(n.jax.jit(_f(n))), (X,)),
    "vmap_jvp": (lambda n: n.jax.vmap(lambda a: n.jax.jvp(_f(n), (a,), (n.jnp.ones_like(a),))),
                 (X,)),
    "jvp_vmap": (lambda n: lambda a: n.jax.jvp(n.jax.vmap(_f(n)), (a,), (n.jnp.ones_like(a),)),
                 (X,)),
    "vmap_vmap_grad": (lambda n: n.jax.vmap(n.jax.vmap(n.jax.grad(lambda s: n.jnp.sin(s) * s))),
                       (X,)),
    "vmap_jit_vmap": (lambda n: n.jax.vmap(n.jax.jit(n.jax.vmap(n.jnp.cos, in_axes=0)),
                                           in_axes=1), (X,)),
    "per_example_gradients": (lambda n: n.jax.vmap(n.jax.grad(_mlp_loss(n)),
                                                   in_axes=(None, 0, 0)),
                              (PARAMS, X, TARGETS)),
    "per_example_value_and_grad": (
        lambda n: n.jax.jit(n.jax.vmap(n.jax.value_and_grad(_mlp_loss(n)),
                                       in_axes=(None, 0, 0))), (PARAMS, X, TARGETS)),
    "grad_of_mean_batched_loss": (
        lambda n: n.jax.grad(lambda p: n.jax.vmap(_mlp_loss(n), in_axes=(None, 0, 0))(
            p, X, TARGETS).mean()), (PARAMS,)),
    "custom_jvp_relu": (lambda n: n.jax.vmap(n.jax.nn.relu), (X,)),
    "custom_jvp_unbatched_arg": (lambda n: n.jax.vmap(_custom_jvp_square(n), in_axes=(0, None)),
                                 (X, F32(2))),
    "grad_custom_jvp": (lambda n: n.jax.vmap(n.jax.grad(lambda a, b: _custom_jvp_square(n)(a, b)
                                                        .sum(), argnums=(0, 1)),
                                             in_axes=(0, None)), (X, F32(2))),
    "custom_vjp": (lambda n: n.jax.vmap(_custom_vjp_sin(n)), (X,)),
    "vmap_grad_custom_vjp": (lambda n: n.jax.vmap(n.jax.grad(
        lambda a: _custom_vjp_sin(n)(a).sum())), (X,)),
    "grad_vmap_custom_vjp": (lambda n: n.jax.grad(
        lambda a: n.jax.vmap(_custom_vjp_sin(n))(a).sum()), (X,)),
    "cond_batched_predicate": (lambda n: n.jax.vmap(
        lambda a: n.lax.cond(a.sum() > 0, n.jnp.sin, n.jnp.cos, a)), (X,)),
    "cond_unbatched_predicate": (lambda n: n.jax.vmap(
        lambda a, p: n.lax.cond(p, n.jnp.sin, n.jnp.cos, a), in_axes=(0, None)), (X, True)),
    "switch_batched_index": (lambda n: n.jax.vmap(lambda i, a: n.lax.switch(
        i, [n.jnp.sin, n.jnp.cos, n.jnp.tanh], a)), (np.array([2, 0], np.int32), X)),
    "grad_vmap_cond": (lambda n: n.jax.grad(lambda a: n.jax.vmap(
        lambda r: n.lax.cond(r.sum() > 0, n.jnp.sin, n.jnp.cos, r))(a).sum()), (X,)),
    "grad_vmap_cond_elementwise": (lambda n: n.jax.grad(lambda a: n.jax.vmap(
        lambda v: n.lax.cond(v > 0, n.jnp.sin, n.jnp.cos, v))(a).sum()), (V,)),
    "while_batched_predicate": (lambda n: n.jax.vmap(lambda a: n.lax.while_loop(
        lambda c: c.sum() < 10, lambda c: c * 2 + 0.1, a)), (X,)),
    "while_unbatched_predicate": (lambda n: n.jax.vmap(lambda a: n.lax.while_loop(
        lambda c: c[1] < 4, lambda c: (c[0] * 2, c[1] + 1), (a, 0))), (X,)),
    "while_nested_vmap": (lambda n: n.jax.vmap(n.jax.vmap(lambda a: n.lax.while_loop(
        lambda c: c < 3, lambda c: c + a, 0.0))), (X + 1,)),
    "jit_vmap_while": (lambda n: n.jax.jit(n.jax.vmap(lambda a: n.lax.while_loop(
        lambda c: c < 3, lambda c: c + a, 0.0))), (V * V + 0.5,)),
    "fori_loop": (lambda n: n.jax.vmap(lambda a: n.lax.fori_loop(
        0, 3, lambda i, c: c * 2 + i, a)), (X,)),
    "scan": (lambda n: n.jax.vmap(lambda a: n.lax.scan(lambda c, e: (c + e, c * e), 0.0, a)),
             (X,)),
    "scan_unbatched_xs": (lambda n: n.jax.vmap(lambda c0: n.lax.scan(
        lambda c, e: (c + e, c * e), c0, n.jnp.arange(3.0))), (V,)),
    "scan_carry_becomes_batched": (lambda n: n.jax.vmap(lambda a: n.lax.scan(
        lambda c, e: (c * a, c + e), 1.0, n.jnp.ones(3))), (V,)),
    "vmap_grad_fori": (lambda n: n.jax.vmap(n.jax.grad(lambda a: n.lax.fori_loop(
        0, 3, lambda i, c: c * a, 1.0))), (V,)),
}


@pytest.mark.parametrize("name", COMPOSITIONS)
def test_compositions_match_jax(name):
    fun, args = COMPOSITIONS[name]
    check_program(lambda n: fun(n)(*args))


@pytest.mark.parametrize("name", COMPOSITIONS)
def test_composition_jaxprs(name):
    fun, args = COMPOSITIONS[name]
    check_jaxpr(fun, *args)


# select_n's JVP and transpose (a batched cond becomes a select_n on an int32 index)
SELECT_GRADS = {
    "bool_which": lambda n: lambda a: n.lax.select(a > 0, a * 2, a * 3).sum(),
    "int_which_three_cases": lambda n: lambda a: n.lax.select_n(
        n.jnp.int32(1), a * 2, a, a * 4).sum(),
    "one_case_constant": lambda n: lambda a: n.lax.select_n(a > 0, 2.0 * n.jnp.ones(3), a).sum(),
    "constant_which": lambda n: lambda a: n.lax.select(True, a, a * 3).sum(),
}


@pytest.mark.parametrize("name", SELECT_GRADS)
def test_select_n_gradient_jaxprs(name):
    check_program(lambda n: n.jax.grad(SELECT_GRADS[name](n))(V))
    check_jaxpr(lambda n: n.jax.grad(SELECT_GRADS[name](n)), V)


def test_select_n_gradient_of_two_linear_cases():
    check_jaxpr(lambda n: n.jax.grad(lambda a, b: n.lax.select(a > 0, a, b).sum(),
                                     argnums=(0, 1)), V, -V)


def test_vmap_of_jit_batches_the_body_once():
    import minijax

    calls = []

    @minijax.jit
    def f(a):
        calls.append(1)
        return a * 2.0

    batched = minijax.vmap(f)
    for _ in range(3):
        np.testing.assert_array_equal(np.asarray(batched(X)), X * 2)
    assert len(calls) == 1


def _print_each(n):
    return n.jax.vmap(lambda a, b: n.jax.debug.print("a={} b={}", a, b), in_axes=(0, None))


def test_debug_print_prints_each_example_as_jax_does(capsys):
    from tests.oracle import namespaces

    printed = []
    for ns in namespaces():
        _print_each(ns)(V, F32(5))
        ns.jax.effects_barrier()
        printed.append(capsys.readouterr().out)
    assert printed[0] == printed[1] == "a=0.5 b=5.0\na=-1.5 b=5.0\na=2.0 b=5.0\n"
    check_jaxpr(_print_each, V, F32(5))


def test_jit_traces_again_for_another_axis_size_or_name():
    """psum(1, "i") is the size of axis "i", fixed when jit traces: a jitted function
    vmapped at another size, or called where "i" is not bound, is traced again."""
    import minijax
    import minijax.numpy as jnp
    from minijax import lax

    f = minijax.jit(lambda a: a / lax.psum(1, "i"))
    np.testing.assert_array_equal(np.asarray(minijax.vmap(f, axis_name="i")(jnp.ones(2))),
                                  [0.5, 0.5])
    np.testing.assert_array_equal(np.asarray(minijax.vmap(f, axis_name="i")(jnp.ones(4))),
                                  [0.25] * 4)
    with pytest.raises(NameError, match="unbound axis name: i"):
        f(jnp.ones(2))


RANDOM = {
    "split": lambda n, keys: n.jax.vmap(n.jax.random.split)(keys),
    "fold_in": lambda n, keys: n.jax.vmap(lambda k: n.jax.random.fold_in(k, 3))(keys),
    "bits": lambda n, keys: n.jax.vmap(lambda k: n.jax.random.bits(k, (2,)))(keys),
    "uniform": lambda n, keys: n.jax.vmap(lambda k: n.jax.random.uniform(k, (2,)))(keys),
    "randint": lambda n, keys: n.jax.vmap(lambda k: n.jax.random.randint(k, (2,), 0, 10))(keys),
}


@pytest.mark.parametrize("name", RANDOM)
def test_random_under_vmap_is_bit_exact(name):
    check_program(lambda n: RANDOM[name](n, n.jax.random.split(n.jax.random.PRNGKey(0), 3)),
                  exact=True)
