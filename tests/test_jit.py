"""``jit`` against JAX: results, the cache (when it retraces), static arguments and their
errors, methods, nested jit, jit with control flow and with grad, asynchronous dispatch,
and the ahead-of-time stages (trace, lower, compile)."""

from __future__ import annotations

import functools
import re
import threading

import numpy as np
import pytest

import minijax
from minijax.core import Primitive, ShapedArray
from tests.oracle import check_program, namespaces

jax = pytest.importorskip("jax")

F32 = np.float32
X = np.linspace(-2, 2, 12, dtype=F32).reshape(3, 4)
V = np.arange(1, 5, dtype=F32)


def _raises_like_jax(call):
    """Run ``call(namespace)`` on both sides; both must raise the same class and text."""
    ours, theirs = namespaces()
    with pytest.raises(Exception) as expected:
        call(theirs)
    with pytest.raises(type(expected.value)) as got:
        call(ours)
    assert str(got.value) == str(expected.value)


# ---------------------------------------------------------------------------------------
# Results: jit(f)(args) agrees with JAX's jit and with minijax's eager f
# ---------------------------------------------------------------------------------------

PROGRAMS = {
    "elementwise": lambda n, x: n.jnp.sin(x) * 2.0 + 1.0,
    "python_scalar_arg": lambda n, x: x * 3,
    "int_math": lambda n, x: (x.astype(n.jnp.int32) // 3) % 4,
    "reduction": lambda n, x: n.jnp.sum(x ** 2, axis=1),
    "mean_var": lambda n, x: (n.jnp.mean(x), n.jnp.var(x, axis=0)),
    "matmul": lambda n, x: x @ x.T,
    "dot_general": lambda n, x: n.lax.dot_general(x, x, (((1,), (1,)), ((), ()))),
    "broadcast": lambda n, x: x + n.jnp.arange(4.0),
    "reshape_transpose": lambda n, x: x.reshape(4, 3).T,
    "slicing": lambda n, x: x[1:, ::2],
    "gather": lambda n, x: x[n.np.array([2, 0]), 1],
    "scatter": lambda n, x: x.at[0, 1].add(10.0).at[2].set(0.0),
    "where": lambda n, x: n.jnp.where(x > 0, x, -x),
    "clip": lambda n, x: n.jnp.clip(x, -1.0, 1.0),
    "concatenate": lambda n, x: n.jnp.concatenate([x, x * 2], axis=0),
    "sort": lambda n, x: n.jnp.sort(x, axis=1),
    "argmax": lambda n, x: n.jnp.argmax(x, axis=1),
    "cumsum": lambda n, x: n.jnp.cumsum(x, axis=0),
    "softmax": lambda n, x: n.jnp.exp(x) / n.jnp.sum(n.jnp.exp(x), axis=1, keepdims=True),
    "constant_capture": lambda n, x: x * n.np.arange(4, dtype=F32),
    "literal_outputs": lambda n, x: (x, 1, 2.0, {"a": x.sum()}),
    "bool_ops": lambda n, x: n.jnp.logical_and(x > -1, x < 1),
    "cond": lambda n, x: n.lax.cond(x.sum() > 0, lambda v: v * 2, lambda v: -v, x),
    "switch": lambda n, x: n.lax.switch(2, [lambda v: v, lambda v: v + 1, lambda v: v * 3], x),
    "while": lambda n, x: n.lax.while_loop(lambda c: c[0] < 5, lambda c: (c[0] + 1, c[1] * 1.5),
                                           (0, x)),
    "fori": lambda n, x: n.lax.fori_loop(0, 3, lambda i, c: c + i, x),
    "scan": lambda n, x: n.lax.scan(lambda c, r: (c + r, c * r), n.jnp.zeros(4), x),
    "map": lambda n, x: n.lax.map(lambda r: r.sum(), x),
    "nested_jit": lambda n, x: n.jax.jit(lambda v: n.jnp.cos(v) * 2)(x) + 1,
    "jit_in_cond": lambda n, x: n.lax.cond(True, n.jax.jit(lambda v: v + 1), lambda v: v, x),
    "jit_in_scan": lambda n, x: n.lax.scan(
        lambda c, r: (n.jax.jit(lambda a, b: a + b)(c, r), c), n.jnp.zeros(4), x)[0],
    "linalg": lambda n, x: n.jnp.linalg.norm(x, axis=1),
    "weak_output": lambda n, x: (x.sum() * 0 + 1.0, 7),
    "dtype_promotion": lambda n, x: x.astype(n.jnp.int8) + n.np.int16(3),
}


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_jit_result_matches_jax(name):
    program = PROGRAMS[name]
    check_program(lambda n: n.jax.jit(functools.partial(program, n))(X))


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_jit_result_matches_eager(name):
    ours, _ = namespaces()
    program = functools.partial(PROGRAMS[name], ours)
    x = minijax.numpy.asarray(X)
    eager = minijax.tree_util.tree_leaves(program(x))
    jitted = minijax.tree_util.tree_leaves(minijax.jit(program)(x))
    assert len(eager) == len(jitted)
    for a, b in zip(eager, jitted):
        a, b = minijax.numpy.asarray(a), minijax.numpy.asarray(b)
        assert a.aval == b.aval
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-6, atol=1e-6)


def test_jit_of_grad_and_grad_of_jit_match_jax():
    def loss(n, w):
        return n.jnp.sum(n.jnp.tanh(X @ w) ** 2)

    w = np.linspace(-1, 1, 4, dtype=F32)
    check_program(lambda n: n.jax.jit(n.jax.grad(functools.partial(loss, n)))(w))
    check_program(lambda n: n.jax.grad(n.jax.jit(functools.partial(loss, n)))(w))
    check_program(lambda n: n.jax.value_and_grad(n.jax.jit(functools.partial(loss, n)))(w))


# ---------------------------------------------------------------------------------------
# The cache: retracing only when the signature changes
# ---------------------------------------------------------------------------------------


def _counting(jit, fun):
    """``jit(fun)``, and a one-element list counting how often ``fun`` was traced."""
    count = [0]

    def counted(*args, **kwargs):
        count[0] += 1
        return fun(*args, **kwargs)

    return jit(counted), count


def _trace_counts(n, calls):
    """How many traces each call in ``calls`` (functions of the jitted f) causes."""
    count = [0]

    @n.jax.jit
    def f(x, y=None):
        count[0] += 1
        return x

    result = []
    for call in calls:
        before = count[0]
        call(n, f)
        result.append(count[0] - before)
    return result


RETRACE_CALLS = [
    lambda n, f: f(1.0), lambda n, f: f(2.0), lambda n, f: f(n.jnp.asarray(3.0)),
    lambda n, f: f(np.float32(1)), lambda n, f: f(n.jnp.float32(2)), lambda n, f: f(1),
    lambda n, f: f(True), lambda n, f: f(np.ones(3, F32)), lambda n, f: f(n.jnp.ones(3)),
    lambda n, f: f(n.jax.device_put(n.jnp.ones(3))), lambda n, f: f([1.0]),
    lambda n, f: f((1.0,)), lambda n, f: f({"a": 1.0}), lambda n, f: f([2.0]),
    lambda n, f: f(1.0, 2.0), lambda n, f: f(1.0, y=2.0), lambda n, f: f(x=1.0, y=2.0),
    lambda n, f: f(1.0, y=None), lambda n, f: f(np.float64(1.0)), lambda n, f: f(np.ones(3)),
    lambda n, f: f(np.int64(1)), lambda n, f: f(n.jnp.ones((3, 1))),
]


def test_retrace_counts_match_jax():
    ours, theirs = namespaces()
    assert _trace_counts(ours, RETRACE_CALLS) == _trace_counts(theirs, RETRACE_CALLS)


def test_jitting_a_function_again_reuses_its_traces_like_jax():
    ours, theirs = namespaces()
    counts = []
    for n in (ours, theirs):
        f, count = _counting(lambda fun: fun, lambda x, k=1: x * k)
        n.jax.jit(f)(1.0)
        n.jax.jit(f)(2.0)  # another jit of f, the same signature: no new trace
        n.jax.jit(f, static_argnums=1)(1.0, 2)  # other options: a cache of its own
        counts.append(count[0])
    assert counts[0] == counts[1] == 2


def test_x64_mode_is_part_of_the_signature():
    calls = [lambda n, f: f(1.0), lambda n, f: f(n.jnp.ones(3))]
    ours, theirs = namespaces()
    expected, got = [], []
    for n, out in ((theirs, expected), (ours, got)):
        f, count = _counting(n.jax.jit, lambda x: x)
        try:  # x64 left on would change the tests that run after this one in the process
            for x64 in (False, True, False):
                n.jax.config.update("jax_enable_x64", x64)
                for call in calls:
                    before = count[0]
                    call(n, f)
                    out.append(count[0] - before)
        finally:
            n.jax.config.update("jax_enable_x64", False)
    assert got == expected


def test_cache_size_and_clear_cache():
    f = minijax.jit(lambda x: x + 1)
    f(1.0)
    f(np.ones(2, F32))
    f(np.ones(2, F32))
    assert f._cache_size() == 2
    f.clear_cache()
    assert f._cache_size() == 0


# ---------------------------------------------------------------------------------------
# Static arguments
# ---------------------------------------------------------------------------------------


def _power(x, n, *, mode="pow"):
    return x ** n if mode == "pow" else x * n


def test_static_arguments_match_jax():
    check_program(lambda n: n.jax.jit(_power, static_argnums=1)(V, 3))
    check_program(lambda n: n.jax.jit(_power, static_argnames="n")(V, n=2))
    check_program(lambda n: n.jax.jit(_power, static_argnums=1)(V, n=2))  # by keyword too
    check_program(lambda n: n.jax.jit(_power, static_argnames=("n", "mode"))(V, 2, mode="x"))
    check_program(lambda n: n.jax.jit(_power, static_argnums=(-1,))(V, 2))


def test_static_arguments_retrace_per_value():
    ours, theirs = namespaces()
    counts = []
    for n in (ours, theirs):
        g, count = _counting(functools.partial(n.jax.jit, static_argnums=1),
                             lambda x, k: x * k)
        for k in (1, 2, 1, 2.0, 3, True, 1.0, np.int32(3)):
            g(V, k)
        counts.append(count[0])
    assert counts[0] == counts[1]


def test_static_argument_can_steer_python_control_flow():
    def f(x, negate):
        return -x if negate else x

    g = minijax.jit(f, static_argnames="negate")
    np.testing.assert_array_equal(g(V, negate=True), -V)
    np.testing.assert_array_equal(g(V, negate=False), V)


@pytest.mark.parametrize("call", [
    lambda n: n.jax.jit(_power, static_argnums=1)(1.0, [1, 2]),
    lambda n: n.jax.jit(_power, static_argnames="n")(1.0, n=[1, 2]),
    lambda n: n.jax.jit(_power, static_argnums=1)(1.0, np.ones(2)),
    lambda n: n.jax.jit(_power, static_argnums=1)(1.0, n.jnp.ones(2)),
    lambda n: n.jax.jit(_power, static_argnums=2),
    lambda n: n.jax.jit(_power, static_argnames="m"),
    lambda n: n.jax.jit(_power)(1.0, "a"),
    lambda n: n.jax.jit(_power)(1.0),
    lambda n: n.jax.jit(_power)(1.0, 2.0, 3.0),
], ids=["unhashable_list", "unhashable_by_name", "unhashable_numpy",
        "unhashable_array", "argnum_out_of_range", "unknown_argname", "string_argument",
        "missing_argument", "too_many_arguments"])
def test_argument_errors_match_jax(call):
    ours, theirs = namespaces()
    with pytest.raises(Exception) as expected:
        call(theirs)
    with pytest.raises(type(expected.value)) as got:
        call(ours)
    # The text names the array's class (jaxlib's ArrayImpl, minijax's Array) and the
    # function's address: compare with those normalised.
    assert _normal(str(got.value)) == _normal(str(expected.value))


def _normal(text):
    text = text.replace("jaxlib._jax.ArrayImpl", "Array").replace("minijax.array.Array", "Array")
    return re.sub(r" at 0x[0-9a-f]+", " at 0x", text)


# ---------------------------------------------------------------------------------------
# Methods: self static, or self a pytree
# ---------------------------------------------------------------------------------------


def _scaler_classes(n):
    class StaticScaler:
        """``self`` is static: hashable, and its fields are constants of the trace."""

        def __init__(self, scale):
            self.scale = scale

        def __hash__(self):
            return hash(self.scale)

        def __eq__(self, other):
            return isinstance(other, StaticScaler) and self.scale == other.scale

        @functools.partial(n.jax.jit, static_argnums=0)
        def apply(self, x):
            return x * self.scale

    @n.jax.tree_util.register_pytree_node_class
    class PytreeScaler:
        """``self`` is a pytree: its array field is traced like any argument."""

        def __init__(self, scale):
            self.scale = scale

        def tree_flatten(self):
            return (self.scale,), None

        @classmethod
        def tree_unflatten(cls, aux, children):
            return cls(*children)

        @n.jax.jit
        def apply(self, x):
            return x * self.scale

    class PlainScaler:
        def __init__(self, scale):
            self.scale = scale

        @n.jax.jit
        def apply(self, x):
            return x * self.scale

    return StaticScaler, PytreeScaler, PlainScaler


def test_methods_with_static_self_and_pytree_self_match_jax():
    check_program(lambda n: _scaler_classes(n)[0](3.0).apply(V))
    check_program(lambda n: _scaler_classes(n)[1](n.jnp.asarray(3.0)).apply(V))


def test_pytree_self_does_not_retrace_when_a_field_changes():
    _, PytreeScaler, _ = _scaler_classes(namespaces()[0])
    first = PytreeScaler(minijax.numpy.asarray(2.0)).apply(V)
    second = PytreeScaler(minijax.numpy.asarray(5.0)).apply(V)
    np.testing.assert_allclose(first, V * 2)
    np.testing.assert_allclose(second, V * 5)
    assert PytreeScaler.apply._cache_size() == 1


def test_method_with_plain_self_raises_like_jax():
    def call(n):
        return _scaler_classes(n)[2](2.0).apply(V)

    ours, theirs = namespaces()
    with pytest.raises(TypeError, match="Error interpreting argument") as expected:
        call(theirs)
    with pytest.raises(TypeError, match="Error interpreting argument") as got:
        call(ours)
    assert str(got.value).split(" as an abstract array")[1] == \
        str(expected.value).split(" as an abstract array")[1]


# ---------------------------------------------------------------------------------------
# Options: donate_argnums (accepted, ignored), keep_unused, inline, decorators
# ---------------------------------------------------------------------------------------


def test_donated_arguments_are_still_usable():
    f = minijax.jit(lambda x: x * 2, donate_argnums=0)
    x = minijax.numpy.ones(3)
    np.testing.assert_array_equal(f(x), 2 * np.ones(3))
    np.testing.assert_array_equal(x, np.ones(3))  # minijax never reuses the memory


def test_decorator_forms():
    @minijax.jit
    def a(x):
        return x + 1

    @functools.partial(minijax.jit, static_argnums=1)
    def b(x, k):
        return x * k

    @minijax.jit(static_argnames="k")
    def c(x, k):
        return x - k

    assert float(a(1.0)) == 2.0 and float(b(2.0, 3)) == 6.0 and float(c(2.0, k=1)) == 1.0
    assert a.__name__ == "a" and a.__wrapped__ is not None
    assert repr(a).startswith("<PjitFunction of <function test_decorator_forms.<locals>.a")


# ---------------------------------------------------------------------------------------
# Asynchronous dispatch: a jitted call returns before its result is computed
# ---------------------------------------------------------------------------------------


def test_jitted_call_returns_before_the_result_is_computed():
    release = threading.Event()
    hold_p = Primitive("hold")  # a job that keeps the device busy until released
    hold_p.def_impl(lambda x: (release.wait(10), x)[1])
    hold_p.def_abstract_eval(lambda aval: aval)
    f = minijax.jit(lambda x: x * 2 + 1)
    x = minijax.numpy.ones(4)
    f(x).block_until_ready()  # compiled and cached
    hold_p.bind(x)
    y = f(x)
    assert not y.is_ready()
    assert y.aval == ShapedArray((4,), F32)
    release.set()
    np.testing.assert_array_equal(y, np.full(4, 3.0))


# ---------------------------------------------------------------------------------------
# Ahead of time: trace, lower, compile
# ---------------------------------------------------------------------------------------


def _aot(n):
    def f(x, y):
        return {"a": n.jnp.sin(x) * y + 1.0, "b": (x, 2)}
    return f


def test_traced_stage_matches_jax():
    ours, theirs = namespaces()
    got = ours.jax.jit(_aot(ours)).trace(np.ones(3, F32), 2.0)
    expected = theirs.jax.jit(_aot(theirs)).trace(np.ones(3, F32), 2.0)
    assert str(got.jaxpr) == str(expected.jaxpr)
    assert repr(got.out_info) == repr(expected.out_info)
    assert repr(got.in_tree) == repr(expected.in_tree)
    assert got.fun_name == expected.fun_name == "f"


def test_lowered_and_compiled_stages():
    ours, theirs = namespaces()
    lowered = ours.jax.jit(_aot(ours)).lower(ours.jax.ShapeDtypeStruct((3,), F32), 2.0)
    expected = theirs.jax.jit(_aot(theirs)).lower(theirs.jax.ShapeDtypeStruct((3,), F32), 2.0)
    assert lowered.as_text() == expected.as_text()
    assert repr(lowered.out_info) == repr(expected.out_info)
    costs = lowered.cost_analysis()
    assert costs["flops"] == expected.cost_analysis()["flops"]
    assert "bytes accessed" in costs
    compiled = lowered.compile()
    assert "def main" in compiled.as_text()
    out = compiled(minijax.numpy.ones(3), 3.0)
    np.testing.assert_allclose(out["a"], np.sin(1.0) * 3 + 1, rtol=1e-6)
    assert out["b"][1].weak_type


@pytest.mark.parametrize("args", [
    lambda n: (n.jnp.ones(4), 3.0), lambda n: (n.jnp.ones(3), 3),
    lambda n: (n.jnp.ones(3, n.jnp.int32), n.jnp.ones(2)), lambda n: (n.jnp.ones(3),),
    lambda n: ([n.jnp.ones(3)], 2.0),
], ids=["shape", "dtype", "two_mismatches", "too_few", "structure"])
def test_compiled_argument_checks_match_jax(args):
    def call(n):
        compiled = n.jax.jit(_aot(n)).lower(n.jnp.ones(3), 2.0).compile()
        return compiled(*args(n))

    _raises_like_jax(call)


def test_compiled_accepts_strong_types_for_weak_ones_like_jax():
    check_program(lambda n: n.jax.jit(_aot(n)).lower(n.jnp.ones(3), 2.0).compile()(
        np.ones(3, F32), n.jnp.float32(2.0)))


def test_eval_shape_matches_jax():
    ours, theirs = namespaces()
    assert repr(ours.jax.jit(_aot(ours)).eval_shape(np.ones(3, F32), 2.0)) == \
        repr(theirs.jax.jit(_aot(theirs)).eval_shape(np.ones(3, F32), 2.0))


@pytest.mark.parametrize("fun", [lambda x: 1 / x, lambda x: minijax.numpy.log(x - 1)])
def test_jitted_code_computes_like_xla_without_numpy_warnings(fun):
    """The device runs compiled programs with NumPy's floating-point warnings off: XLA
    computes 1/0 or log(-1) without a word, and so does minijax."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = minijax.jit(fun)(minijax.numpy.zeros(3))
        assert np.asarray(out).dtype == np.float32
