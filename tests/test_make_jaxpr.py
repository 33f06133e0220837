"""``make_jaxpr`` and ``ShapeDtypeStruct`` against JAX: printed jaxprs, argument types,
output shapes, and the error messages that name the traced function and its arguments."""

from __future__ import annotations

import numpy as np
import pytest

import minijax
from tests.oracle import namespaces

jax = pytest.importorskip("jax")

F32 = np.float32
W = np.arange(3, dtype=F32)


def _kwargs_program(n):
    def f(x, *, scale, shift=0.0):
        return n.jnp.sin(x) * scale + shift
    return f


# name: (function of the namespace, args (or a function of the namespace giving them),
#        kwargs, make_jaxpr options)
PROGRAMS = {
    "sin_times_two": (lambda n: lambda x: n.jnp.sin(x) * 2.0, (3.0,), {}, {}),
    "two_arrays": (lambda n: lambda x, y: n.jnp.sin(x) * y + 1.0,
                   (np.ones(3, F32), 2.0), {}, {}),
    "int_and_float": (lambda n: lambda i, x: i * x, (2, np.ones(2, F32)), {}, {}),
    "pytree_args": (lambda n: lambda p, xs: p["w"] * xs[0] + p["b"] - xs[1],
                    ({"w": 1.0, "b": F32(2)}, (np.ones(2, F32), 3)), {}, {}),
    "pytree_outputs": (lambda n: lambda x: {"y": (x, x * 2), "z": [x + 1]}, (F32(1),), {}, {}),
    "literal_outputs": (lambda n: lambda x: (x, 1, {"a": 2.0}), (F32(1),), {}, {}),
    "unused_result": (lambda n: lambda x: (x * 3, x)[1], (F32(1),), {}, {}),
    "captured_constant": (lambda n: lambda x: x * W + 1.0, (1.0,), {}, {}),
    "float64_canonicalised": (lambda n: lambda x: x + 1, (np.zeros(2, np.float64),), {}, {}),
    "many_dtypes": (lambda n: lambda *a: a[0],
                    (1, 2.0, np.int64(3), np.float64(2), np.bool_(True), True, 1j), {}, {}),
    "shape_dtype_struct": (lambda n: lambda x: x * 2,
                           lambda n: (n.jax.ShapeDtypeStruct((2, 3), np.float32),), {}, {}),
    "weak_shape_dtype_struct": (lambda n: lambda x: x + 1.0,
                                lambda n: (n.jax.ShapeDtypeStruct((2,), np.int32,
                                                                  weak_type=True),), {}, {}),
    "static_argnum": (lambda n: lambda x, y: x * y, (3, 2.0), {}, {"static_argnums": 0}),
    "negative_static_argnum": (lambda n: lambda x, y: x * y, (3, 2.0), {},
                               {"static_argnums": (-1,)}),
    "keyword_arguments": (_kwargs_program, (F32(1),), {"scale": 2.0, "shift": F32(3)}, {}),
}


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_printed_jaxpr_matches_jax(name):
    program, args, kwargs, options = PROGRAMS[name]
    ours, theirs = namespaces()
    expected = jax.make_jaxpr(program(theirs), **options)(*_args(args, theirs), **kwargs)
    got = minijax.make_jaxpr(program(ours), **options)(*_args(args, ours), **kwargs)
    assert type(got).__name__ == "ClosedJaxpr"
    assert str(got) == str(expected)


def _args(args, n):
    return args(n) if callable(args) else args


def test_x64_arguments_keep_64_bits():
    minijax.config.update("jax_enable_x64", True)
    jax.config.update("jax_enable_x64", True)
    try:
        args = (np.zeros(2, np.float64), 1, 2.0)
        f = lambda x, i, y: x * i + y  # noqa: E731
        assert str(minijax.make_jaxpr(f)(*args)) == str(jax.make_jaxpr(f)(*args))
    finally:
        minijax.config.update("jax_enable_x64", False)
        jax.config.update("jax_enable_x64", False)


def test_return_shape_gives_shape_dtype_structs():
    f = lambda x: (x, 1, {"a": 2.0 * x.sum()})  # noqa: E731
    x = np.ones((2, 3), F32)
    jaxpr, shapes = minijax.make_jaxpr(f, return_shape=True)(x)
    expected_jaxpr, expected_shapes = jax.make_jaxpr(f, return_shape=True)(x)
    assert str(jaxpr) == str(expected_jaxpr)
    assert repr(shapes) == repr(expected_shapes)
    assert isinstance(shapes[0], minijax.ShapeDtypeStruct)


def test_shape_dtype_struct_behaves_like_jaxs():
    for cls in (minijax.ShapeDtypeStruct, jax.ShapeDtypeStruct):
        s = cls((2, 3), np.float32)
        assert (s.shape, s.dtype, s.ndim, s.size, s.weak_type) == ((2, 3), np.float32, 2, 6, False)
        assert s == cls((2, 3), F32) and hash(s) == hash(cls((2, 3), F32))
        assert s != cls((2, 3), F32, weak_type=True)
    for args, weak in [(((2, 3), np.float32), False), (((), float), False),
                       (([2], "int64"), False), (((2,), F32), True)]:
        assert repr(minijax.ShapeDtypeStruct(*args, weak_type=weak)) == \
            repr(jax.ShapeDtypeStruct(*args, weak_type=weak))
    with pytest.raises(ValueError, match="ShapeDtypeStruct: dtype must be specified."):
        minijax.ShapeDtypeStruct((2,), None)


def test_evaluating_the_jaxpr_computes_the_function():
    f = lambda x, y: minijax.numpy.sin(x) * y + W  # noqa: E731
    closed = minijax.make_jaxpr(f)(F32(0.5), 2.0)
    (out,) = minijax.jaxpr.eval_jaxpr(closed.jaxpr, closed.consts, F32(0.5), 2.0)
    np.testing.assert_allclose(np.asarray(out), np.sin(F32(0.5)) * 2 + W, rtol=1e-6)


# ---------------------------------------------------------------------------------------
# Errors that name the traced function and its arguments
# ---------------------------------------------------------------------------------------


def f_if(x):
    if x > 0:
        return x
    return -x


def g_pytree(params, xs, *args, **kw):
    if params["w"] + xs[1] > 0:
        return 1


def g_varargs(x, *args):
    if args[0] + x > 0:
        return 1


def g_three(a, b, c, d):
    if a + b + c > 0:
        return 1


def g_var_keyword(x, **kw):
    if kw["b"] > 0:
        return 1


def g_keyword_only(x, *, b):
    if b > 0:
        return 1


def g_static(x, n):
    if x > n:
        return 1


TRACED_IFS = {
    "one_argument": (f_if, (1.0,), {}, {}),
    "pytree_arguments": (g_pytree, ({"w": 1.0, "b": 2.0}, (1.0, 2.0)), {}, {}),
    "star_args": (g_varargs, (1.0, 2.0, 3.0), {}, {}),
    "three_arguments": (g_three, (1.0, 2.0, 3.0, 4.0), {}, {}),
    "var_keyword": (g_var_keyword, (1.0,), {"b": 2.0}, {}),
    "keyword_only": (g_keyword_only, (1.0,), {"b": 2.0}, {}),
    "static_argument": (g_static, (1.0, 2), {}, {"static_argnums": 1}),
}


@pytest.mark.parametrize("name", list(TRACED_IFS))
def test_traced_if_raises_jaxs_message(name):
    fun, args, kwargs, options = TRACED_IFS[name]
    with pytest.raises(jax.errors.TracerBoolConversionError) as expected:
        jax.make_jaxpr(fun, **options)(*args, **kwargs)
    with pytest.raises(minijax.errors.TracerBoolConversionError) as got:
        minijax.make_jaxpr(fun, **options)(*args, **kwargs)
    assert str(got.value) == str(expected.value)


def test_traced_if_message_in_full():
    with pytest.raises(minijax.errors.TracerBoolConversionError) as got:
        minijax.make_jaxpr(f_if)(1.0)
    line = f_if.__code__.co_firstlineno
    assert str(got.value) == (
        "Attempted boolean conversion of traced array with shape bool[].\n"
        f"The error occurred while tracing the function f_if at {__file__}:{line} for jit. "
        "This concrete value was not available in Python because it depends on the value of "
        "the argument x.\n"
        "See https://docs.jax.dev/en/latest/errors.html#jax.errors.TracerBoolConversionError"
    )


def test_int_of_traced_value_raises_concretization_error():
    def to_int(x):
        return int(x)
    with pytest.raises(jax.errors.ConcretizationTypeError) as expected:
        jax.make_jaxpr(to_int)(1.0)
    with pytest.raises(minijax.errors.ConcretizationTypeError) as got:
        minijax.make_jaxpr(to_int)(1.0)
    assert str(got.value) == str(expected.value)


@pytest.mark.parametrize("args", [("abc",), (1.0, "abc"), (1.0, object())])
def test_non_array_argument_raises_type_error(args):
    def f(x, y=None):
        return x
    with pytest.raises(TypeError) as expected:
        jax.make_jaxpr(f)(*args)
    with pytest.raises(TypeError) as got:
        minijax.make_jaxpr(f)(*args)
    assert str(got.value) == str(expected.value)


@pytest.mark.parametrize("calls", [("make_jaxpr", "make_jaxpr"), ("make_jaxpr", "jit"),
                                   ("jit", "make_jaxpr"), ("make_jaxpr", "make_jaxpr_f64")])
def test_make_jaxpr_shares_the_jit_trace_cache(calls):
    """As in JAX, asking again (or calling ``jit``) at the same types does not trace again;
    other types do."""
    counts = []
    for library in (jax, minijax):
        traced = []

        def f(x, traced=traced):
            traced.append(x)
            return x * 2

        for call in calls:
            if call == "jit":
                library.jit(f)(1.0)
            elif call == "make_jaxpr":
                library.make_jaxpr(f)(1.0)
            else:
                library.make_jaxpr(f)(np.ones(2, np.float32))
        counts.append(len(traced))
    assert counts[1] == counts[0]
