"""The rest of issue 13, against JAX: shape errors under ``vmap`` name one example's
shapes; ``custom_jvp``/``custom_vjp`` outputs are batched only where they depend on
batched inputs; ``allow_int`` differentiation gives ``float0`` cotangents."""

from __future__ import annotations

import numpy as np
import pytest

from tests.oracle import assert_same, check_jaxpr, run_both
from tests.test_vmap import assert_same_message

jax = pytest.importorskip("jax")

F32 = np.float32
A = np.ones((5, 3), F32)
B = np.ones((5, 4), F32)


# --- 1. shape errors under vmap -------------------------------------------------------------
# JAX traces its jnp functions at one example's types (they are jitted), so their errors
# name one example's shapes; a lax function called directly under vmap names the batch's.
@pytest.mark.parametrize("name, fun", [
    ("add", lambda ns: lambda x, y: x + y),
    ("subtract", lambda ns: ns.jnp.subtract),
    ("reflected", lambda ns: lambda x, y: y - x),
    ("maximum", lambda ns: ns.jnp.maximum),
    ("divide", lambda ns: ns.jnp.divide),
    ("power", lambda ns: ns.jnp.power),
    ("arctan2", lambda ns: ns.jnp.arctan2),
    ("bool_add", lambda ns: lambda x, y: ns.jnp.add(x > 0, y > 0)),
    ("logaddexp", lambda ns: ns.jnp.logaddexp),
    ("less", lambda ns: ns.jnp.less),
    ("greater", lambda ns: lambda x, y: x > y),
    ("equal", lambda ns: ns.jnp.equal),
    ("int_and", lambda ns: lambda x, y: x.astype(int) & y.astype(int)),
    ("mod", lambda ns: ns.jnp.mod),
    ("fmax", lambda ns: ns.jnp.fmax),
    ("where", lambda ns: lambda x, y: ns.jnp.where(x > 0, x, y)),
    ("copysign", lambda ns: ns.jnp.copysign),
    ("dot", lambda ns: ns.jnp.dot),
    ("lax_add", lambda ns: ns.lax.add),
    ("lax_max", lambda ns: ns.lax.max),
])
@pytest.mark.parametrize("in_axes", [0, (0, None), (1, 0)])
def test_shape_error_under_vmap_names_what_jax_names(name, fun, in_axes):
    x = A.T if in_axes == (1, 0) else A
    y = B[0] if in_axes == (0, None) else B
    if name == "dot":
        x = np.ones(x.shape + (2,), F32)
        x = np.moveaxis(x, 0, 1) if in_axes == (1, 0) else x
    assert_same_message(lambda ns: ns.jax.vmap(fun(ns), in_axes=in_axes)(x, y))


@pytest.mark.parametrize("name, program", [
    ("nested", lambda ns: ns.jax.vmap(ns.jax.vmap(lambda x, y: x + y))(
        np.ones((2, 5, 3), F32), np.ones((2, 5, 4), F32))),
    ("jit_inside", lambda ns: ns.jax.vmap(ns.jax.jit(lambda x, y: x + y))(A, B)),
    ("grad_inside", lambda ns: ns.jax.vmap(
        lambda x, y: ns.jax.grad(lambda u: (u + y).sum())(x))(A, B)),
    ("jvp_inside", lambda ns: ns.jax.vmap(
        lambda x, y: ns.jax.jvp(lambda u: u * y, (x,), (x,))[1])(A, B)),
    ("padded_ranks", lambda ns: ns.jax.vmap(lambda x, y: x[:, None] + y[None, :2].T)(A, B)),
    ("rank_promotion", lambda ns: ns.jax.vmap(lambda x, y: x + y[None, :2])(A, B)),
])
def test_shape_error_in_compositions(name, program):
    assert_same_message(program)


def test_successful_calls_are_unchanged():
    ours, theirs = run_both(lambda ns: ns.jax.vmap(lambda x, y: x * y + 1)(A, A))
    np.testing.assert_array_equal(np.asarray(ours[1]), np.asarray(theirs[1]))


# --- 2. custom_jvp / custom_vjp under vmap: outputs batched only where they depend ----------
def _custom_pair(ns, kind):
    """f(x, y) = (2 sin y, x y) with a custom rule; its first output ignores x."""
    jnp = ns.jnp

    def value(x, y):
        return jnp.sin(y) * 2.0, x * y

    if kind == "jvp":
        f = ns.jax.custom_jvp(value)

        @f.defjvp
        def f_jvp(primals, tangents):
            (x, y), (xd, yd) = primals, tangents
            return f(x, y), (jnp.cos(y) * 2.0 * yd, x * yd + xd * y)

        return f
    f = ns.jax.custom_vjp(value)

    def bwd(residuals, cts):
        (x, y), (a, b) = residuals, cts
        return b * y, a * jnp.cos(y) * 2.0 + b * x

    f.defvjp(lambda x, y: (f(x, y), (x, y)), bwd)
    return f


XS = np.arange(3, dtype=F32)
YS = XS + 1
Y0 = F32(0.5)


def _total(outs):
    return sum(o.sum() for o in outs)


CUSTOM_PROGRAMS = {
    "out_axes_none": lambda ns, f: ns.jax.vmap(f, in_axes=(0, None), out_axes=(None, 0))(XS, Y0),
    "batched_everywhere": lambda ns, f: ns.jax.vmap(f, in_axes=(0, None))(XS, Y0),
    "jit_of_vmap": lambda ns, f: ns.jax.jit(
        ns.jax.vmap(f, in_axes=(0, None), out_axes=(None, 0)))(XS, Y0),
    "grad_of_vmap": lambda ns, f: ns.jax.grad(lambda x, y: _total(
        ns.jax.vmap(f, in_axes=(0, None), out_axes=(None, 0))(x, y)), argnums=(0, 1))(XS, Y0),
    "vmap_of_grad": lambda ns, f: ns.jax.vmap(
        ns.jax.grad(lambda x, y: _total(f(x, y)), argnums=(0, 1)), in_axes=(0, None))(XS, Y0),
    "vjp_of_vmap": lambda ns, f: ns.jax.vjp(
        lambda x, y: ns.jax.vmap(f, in_axes=(None, 0))(x, y), Y0, YS)[1]((YS, YS)),
    "jvp_of_vmap": lambda ns, f: ns.jax.jvp(
        lambda x, y: ns.jax.vmap(f, in_axes=(0, None), out_axes=(None, 0))(x, y),
        (XS, Y0), (XS, Y0)),
    "nested": lambda ns, f: ns.jax.vmap(
        ns.jax.vmap(f, in_axes=(0, None), out_axes=(None, 0)), in_axes=(0, None),
        out_axes=(None, 0))(XS.reshape(1, 3) + XS[:, None], Y0),
    "in_axes_1": lambda ns, f: ns.jax.vmap(f, in_axes=(1, None))(
        XS.reshape(1, 3) + XS[:, None], Y0),
    "grad_of_vmap_of_jit": lambda ns, f: ns.jax.grad(lambda x, y: _total(ns.jax.vmap(
        ns.jax.jit(f), in_axes=(0, None), out_axes=(None, 0))(x, y)), argnums=(0, 1))(XS, Y0),
    "hessian_of_vmap": lambda ns, f: ns.jax.hessian(
        lambda x: _total(ns.jax.vmap(f, in_axes=(0, None))(x, Y0)))(XS),
}


@pytest.mark.parametrize("kind", ["jvp", "vjp"])
@pytest.mark.parametrize("program", list(CUSTOM_PROGRAMS))
def test_custom_rule_outputs_batched_only_where_they_depend(kind, program):
    ours, theirs = run_both(lambda ns: CUSTOM_PROGRAMS[program](ns, _custom_pair(ns, kind)))
    assert_same(ours, theirs)


def _ignores_x(ns):
    """g(x, y) = 2 y, whose (made-up) JVP rule still uses x's tangent."""
    g = ns.jax.custom_jvp(lambda x, y: y * 2.0)
    g.defjvp(lambda primals, tangents: (g(*primals), tangents[0] + tangents[1]))
    return g


@pytest.mark.parametrize("program", [
    lambda ns: ns.jax.jvp(lambda x: ns.jax.vmap(_ignores_x(ns), in_axes=(0, None))(x, Y0),
                          (XS,), (XS,)),
    lambda ns: ns.jax.grad(
        lambda x: ns.jax.vmap(_ignores_x(ns), in_axes=(0, None))(x, Y0).sum())(XS),
])
def test_custom_jvp_output_batched_where_its_rule_batches_it(program):
    """The primal ignores the mapped input but its tangent does not: JAX batches both."""
    assert_same(*run_both(program))


@pytest.mark.parametrize("kind", ["jvp", "vjp"])
def test_custom_rule_under_vmap_prints_as_jax(kind):
    check_jaxpr(lambda ns: ns.jax.vmap(_custom_pair(ns, kind), in_axes=(0, None),
                                       out_axes=(None, 0)), XS, Y0)


# --- 3. allow_int: float0 cotangents for integer inputs -------------------------------------
XI = np.arange(3, dtype=np.int32)
XF = np.arange(3, dtype=F32)


def _product(x, y):
    return (x * y).sum() * 1.0


ALLOW_INT_PROGRAMS = {
    "grad": lambda ns: ns.jax.grad(_product, argnums=(0, 1), allow_int=True)(XI, XF),
    "grad_python_int": lambda ns: ns.jax.grad(
        lambda n, y: n * y, argnums=(0, 1), allow_int=True)(3, 2.0),
    "grad_bool": lambda ns: ns.jax.grad(lambda b, y: ns.jnp.where(b, y, 0.0), argnums=(0, 1),
                                        allow_int=True)(True, 2.0),
    "value_and_grad": lambda ns: ns.jax.value_and_grad(
        _product, argnums=(0, 1), allow_int=True)(XI, XF),
    "grad_pytree": lambda ns: ns.jax.grad(
        lambda d: _product(d["a"], d["b"]), allow_int=True)({"a": XI, "b": XF}),
    "vjp": lambda ns: ns.jax.vjp(lambda x, y: x * y * 1.0, XI, XF)[1](XF),
    "vmap_of_grad": lambda ns: ns.jax.vmap(ns.jax.grad(
        lambda x, y: x * y * 1.0, argnums=(0, 1), allow_int=True))(XI, XF),
    "vmap_of_pullback": lambda ns: ns.jax.vmap(
        ns.jax.vjp(lambda x, y: x * y * 1.0, XI, XF)[1])(np.eye(3, dtype=F32)),
    "jacrev": lambda ns: ns.jax.jacrev(
        lambda x, y: x * y * 1.0, argnums=(0, 1), allow_int=True)(XI, XF),
    "jacrev_python_int": lambda ns: ns.jax.jacrev(
        lambda x, y: x * y * 1.0, argnums=(0, 1), allow_int=True)(3, 2.0),
    "jacrev_uint8": lambda ns: ns.jax.jacrev(lambda b, y: b * y, argnums=(0, 1), allow_int=True)(
        np.array([1, 2], np.uint8), np.ones(2, F32)),
    "jacrev_pytree_out": lambda ns: ns.jax.jacrev(
        lambda x, y: {"o": x * y * 1.0}, allow_int=True)(XI, XF),
}


def _describe(tree):
    """Each leaf as (kind, shape, dtype, weak type, values); a float0 leaf has no values
    and is a NumPy array (JAX's is a NumPy subclass) in both libraries."""
    import minijax

    def leaf(x):
        if getattr(x, "dtype", None) == minijax.dtypes.float0:
            assert isinstance(x, np.ndarray), type(x)
            return ("float0", tuple(x.shape))
        assert all(type(d) is int for d in x.shape), x.shape
        return ("array", x.shape, x.dtype.name, x.weak_type, np.asarray(x).tolist())

    return minijax.tree_util.tree_map(leaf, tree)


@pytest.mark.parametrize("program", list(ALLOW_INT_PROGRAMS))
def test_allow_int_gives_float0_cotangents_as_jax(program):
    (ours_kind, ours), (theirs_kind, theirs) = run_both(ALLOW_INT_PROGRAMS[program])
    assert (ours_kind, theirs_kind) == ("ok", "ok"), (ours, theirs)
    assert _describe(ours) == _describe(theirs)


@pytest.mark.parametrize("program", [
    lambda ns: ns.jax.jacrev(lambda x: x * 1.0)(XI),
    lambda ns: ns.jax.grad(lambda x: x.sum())(XI),
    lambda ns: ns.jax.grad(lambda x: x.sum(), allow_int=True)(XI),
    lambda ns: ns.jax.jacfwd(lambda x: x * 1.0)(XI),
    lambda ns: ns.jax.hessian(lambda x: (x * 1.0).sum())(XI),
])
def test_integer_inputs_without_allow_int_fail_as_in_jax(program):
    assert_same_message(program)


# --- 4. the grader copies back dicts of arrays a learner's function was given ---------------
def test_copy_back_compares_dicts_of_arrays_as_data():
    from grader.remote import _copy_back

    weights = np.ones(3)
    unchanged = {"w": weights, "b": np.float32(0.5), "n": [1, (2.0, np.zeros(2))]}
    _copy_back((unchanged,), [{"w": np.ones(3), "b": np.float32(0.5),
                               "n": [1, (2.0, np.zeros(2))]}])
    assert unchanged["w"] is weights  # equal data: the check's own objects stay

    changed = {"w": np.ones(3), "b": np.zeros(2)}
    _copy_back((changed,), [{"w": np.full(3, 2.0), "b": np.zeros(2)}])
    np.testing.assert_array_equal(changed["w"], np.full(3, 2.0))

    reshaped = {"w": np.ones(3)}
    _copy_back((reshaped,), [{"w": np.ones((3, 1))}])
    assert reshaped["w"].shape == (3, 1)

    retyped = {"w": np.ones(3)}
    _copy_back((retyped,), [{"w": np.ones(3, np.float32)}])
    assert retyped["w"].dtype == np.float32

    with_nan = {"w": np.array([np.nan, 1.0])}
    kept = with_nan["w"]
    _copy_back((with_nan,), [{"w": np.array([np.nan, 1.0])}])
    assert with_nan["w"] is kept


def test_copy_back_of_minijax_arrays_in_a_dict():
    import minijax.numpy as jnp
    from grader.remote import _copy_back

    params = {"w": jnp.ones(3)}
    _copy_back((params,), [{"w": jnp.zeros(3)}])
    np.testing.assert_array_equal(np.asarray(params["w"]), np.zeros(3))


# --- 6. keys that are no arrays are refused with JAX's errors ---------------------------------
@pytest.mark.parametrize("program", [
    lambda ns: ns.jax.random.split([0, 1]),
    lambda ns: ns.jax.random.split(3),
    lambda ns: ns.jax.random.uniform((0, 1)),
    lambda ns: ns.jax.random.split(ns.jnp.ones(2)),
])
def test_bad_keys_fail_as_in_jax(program):
    assert_same_message(program)


def test_key_impl_of_typed_and_raw_keys():
    (_, ours), (_, theirs) = run_both(lambda ns: [str(ns.jax.random.key_impl(k)) for k in (
        ns.jax.random.key(0), ns.jax.random.PRNGKey(0))])
    assert ours == theirs


# --- 1 (unbatched too): select_n, broadcast_to and reshape errors in JAX's words ---------------
B3, F3 = np.array([True, False, True]), np.ones(3, F32)


@pytest.mark.parametrize("program", [
    lambda ns: ns.lax.select_n(B3, F3, np.ones(4, F32)),
    lambda ns: ns.lax.select_n(B3, F3, np.ones(3, np.int32)),
    lambda ns: ns.lax.select_n(np.array([True, False]), F3, F3),
    lambda ns: ns.lax.select_n(F3, F3, F3),
    lambda ns: ns.lax.select_n(np.ones(3, np.int32), F3, F3, np.ones(4, F32)),
    lambda ns: ns.lax.select_n(np.array([True]), np.ones(1), np.ones(1), np.ones(1)),
    lambda ns: ns.jax.vmap(ns.lax.select_n)(np.ones((5, 3), bool), A, B),
    lambda ns: ns.jnp.broadcast_to(ns.jnp.ones(3), (4,)),
    lambda ns: ns.jnp.broadcast_to(ns.jnp.ones((2, 3)), (3,)),
    lambda ns: ns.jnp.broadcast_to(ns.lax.broadcast(2.0, (3,)), (2, 4)),
    lambda ns: ns.jax.vmap(lambda x: ns.jnp.broadcast_to(x, (4,)))(A),
    lambda ns: ns.jnp.ones(3).reshape(4),
    lambda ns: ns.jnp.ones(3).reshape((4,)),
    lambda ns: ns.jnp.ones(3).reshape(4, 1),
    lambda ns: ns.jax.vmap(lambda x: x.reshape(4))(A),
])
def test_shape_errors_in_jax_words(program):
    assert_same_message(program)
