"""Misusing a tracer under ``jit`` raises JAX's error class with JAX's full message: what
went wrong, in which function (file and line), and which arguments (with key paths) the
value depends on -- or, for a value that depends on none, the lines that made it. Leaked
tracers raise ``UnexpectedTracerError`` naming the line that created them. And
``debug.print`` prints at run time, once per call, never at trace time."""

from __future__ import annotations

import numpy as np
import pytest

import minijax
from tests.oracle import namespaces

jax = pytest.importorskip("jax")


def _messages_match(call):
    """``call(namespace)`` raises on both sides: same class name, same text."""
    ours, theirs = namespaces()
    with pytest.raises(Exception) as expected:
        call(theirs)
    with pytest.raises(Exception) as got:
        call(ours)
    assert type(got.value).__name__ == type(expected.value).__name__
    assert str(got.value) == str(expected.value)
    return got.value


def f_if(x):
    if x > 0:
        return x
    return -x


def f_int_of_pytree(params, xs):
    return int(params["w"] + xs[1])


def f_float(x):
    return float(x)


def f_complex(x):
    return complex(x)


def f_numpy(x):
    return np.asarray(x)


def f_range(x):
    return list(range(x))


def f_item(x, y):
    return x.item()


def f_three_args(a, b, c):
    if a + b * c > 0:
        return a
    return b


def f_star_args(x, *args, **kwargs):
    if x + args[1] + kwargs["k"] > 0:
        return x
    return -x


def f_no_argument_dependence(n):
    def f(x):
        return bool(n.jnp.sum(n.jnp.ones(3)) > 0)
    return f


def f_boolean_mask(n):
    return lambda x: x[x > 0]


def f_traced_shape(n):
    return lambda x: n.jnp.ones(x)


CASES = {  # name: (the function, given the namespace; args; kwargs)
    "bool": (lambda n: f_if, (1.0,), {}),
    "int_with_key_paths": (lambda n: f_int_of_pytree, ({"w": 1.0}, [1.0, 2.0]), {}),
    "float": (lambda n: f_float, (1.0,), {}),
    "complex": (lambda n: f_complex, (1.0,), {}),
    "numpy_conversion": (lambda n: f_numpy, (1.0,), {}),
    "index": (lambda n: f_range, (3,), {}),
    "item": (lambda n: f_item, (1.0, 2.0), {}),
    "three_arguments": (lambda n: f_three_args, (1.0, 2.0, 3.0), {}),
    "star_args_and_kwargs": (lambda n: f_star_args, (1.0, 2.0, 3.0), {"k": 4.0}),
    "no_argument_dependence": (f_no_argument_dependence, (1.0,), {}),
}


@pytest.mark.parametrize("name", list(CASES))
def test_tracer_conversion_errors_match_jax(name):
    make, args, kwargs = CASES[name]
    _messages_match(lambda n: n.jax.jit(make(n))(*args, **kwargs))


def test_full_message_of_a_traced_if():
    error = _messages_match(lambda n: n.jax.jit(f_if)(1.0))
    assert isinstance(error, minijax.errors.TracerBoolConversionError)
    assert isinstance(error, minijax.errors.ConcretizationTypeError)
    line = f_if.__code__.co_firstlineno
    assert str(error) == (
        "Attempted boolean conversion of traced array with shape bool[].\n"
        f"The error occurred while tracing the function f_if at {__file__}:{line} for jit. "
        "This concrete value was not available in Python because it depends on the value "
        "of the argument x.\n"
        "See https://docs.jax.dev/en/latest/errors.html#jax.errors.TracerBoolConversionError")


def test_static_argument_is_not_named():
    def g(x, n):
        if x > n:
            return x
        return n
    _messages_match(lambda ns: ns.jax.jit(g, static_argnums=1)(1.0, 2))


def test_errors_inside_nested_jit_name_the_inner_function():
    _messages_match(lambda n: n.jax.jit(lambda x: n.jax.jit(f_if)(x * 2))(1.0))


def test_non_concrete_boolean_index():
    error = _messages_match(lambda n: n.jax.jit(f_boolean_mask(n))(n.jnp.ones(3)))
    assert isinstance(error, minijax.errors.NonConcreteBooleanIndexError)
    assert isinstance(error, IndexError)


def test_traced_shape():
    _messages_match(lambda n: n.jax.jit(f_traced_shape(n))(3))


def test_errors_module_exports_jaxs_classes():
    for name in ("ConcretizationTypeError", "TracerBoolConversionError",
                 "TracerIntegerConversionError", "TracerArrayConversionError",
                 "NonConcreteBooleanIndexError", "UnexpectedTracerError", "JaxprTypeError"):
        ours, theirs = getattr(minijax.errors, name), getattr(jax.errors, name)
        assert [c.__name__ for c in ours.__mro__ if c.__module__ != "builtins"][:1] == [name]
        assert issubclass(ours, TypeError) == issubclass(theirs, TypeError)
        assert issubclass(ours, IndexError) == issubclass(theirs, IndexError)


# ---------------------------------------------------------------------------------------
# Leaked tracers
# ---------------------------------------------------------------------------------------


def _leak(n, saved):
    @n.jax.jit
    def f(x):
        y = x * 2
        saved.append(y)
        return y

    f(1.0)


def _leak_from_helper(n, saved):
    def helper(y):
        z = n.jnp.sin(y)
        saved.append(z)
        return z

    @n.jax.jit
    def f(x):
        return helper(x * 2) + 1

    f(1.0)


def _leak_argument(n, saved):
    def g(x):
        saved.append(x)
        return x

    n.jax.make_jaxpr(g)(1.0)


def _leak_from_scan(n, saved):
    def body(c, x):
        saved.append(c)
        return c, x

    n.lax.scan(body, 0.0, n.jnp.ones(3))


@pytest.mark.parametrize("leak", [_leak, _leak_from_helper, _leak_argument, _leak_from_scan])
@pytest.mark.parametrize("use", [lambda n, t: t + 1, lambda n, t: n.jnp.sin(t),
                                 lambda n, t: n.jax.jit(lambda z: z + t)(1.0)],
                         ids=["operator", "jnp", "jit"])
def test_leaked_tracer_message_matches_jax(leak, use):
    def call(n):
        saved = []
        leak(n, saved)
        return use(n, saved[0])

    error = _messages_match(call)
    assert isinstance(error, minijax.errors.UnexpectedTracerError)


def test_leaked_tracer_message_in_full():
    saved = []
    _leak(namespaces()[0], saved)
    with pytest.raises(minijax.errors.UnexpectedTracerError) as got:
        saved[0] + 1
    line = _leak.__code__.co_firstlineno + 1
    assert str(got.value) == (
        "Encountered an unexpected tracer. A function transformed by JAX had a side effect, "
        "allowing for a reference to an intermediate value with type float32[] wrapped in a "
        "DynamicJaxprTracer to escape the scope of the transformation.\n"
        "JAX transformations require that functions explicitly return their outputs, and "
        "disallow saving intermediate values to global state.\n"
        f"The function being traced when the value leaked was f at {__file__}:{line} "
        "traced for jit.\n"
        "------------------------------\n"
        f"The leaked intermediate value was created on line {__file__}:{line + 2}:12 "
        "(_leak.<locals>.f). \n"
        "------------------------------\n"
        "When the value was created, the final 5 stack frames (most recent last) excluding "
        "JAX-internal frames were:\n"
        "------------------------------\n"
        f"{__file__}:{line + 2}:12 (_leak.<locals>.f)\n"
        "------------------------------\n\n"
        "To catch the leak earlier, try setting the environment variable "
        "JAX_CHECK_TRACER_LEAKS or using the `jax.checking_leaks` context manager.\n"
        "See https://docs.jax.dev/en/latest/errors.html#jax.errors.UnexpectedTracerError")


def test_numpy_conversion_of_a_leaked_tracer_matches_jax():
    def call(n):
        saved = []
        _leak(n, saved)
        return np.asarray(saved[0])

    _messages_match(call)


# ---------------------------------------------------------------------------------------
# debug.print
# ---------------------------------------------------------------------------------------


def _printing(n):
    def f(x):
        n.jax.debug.print("x = {x}, y={}", x * 2, x=x)
        return x + 1
    return f


def _outputs(n, capsys, run):
    capsys.readouterr()
    run(n)
    return capsys.readouterr().out


@pytest.mark.parametrize("run", [
    lambda n: n.jax.jit(_printing(n))(n.jnp.arange(3.0)),
    lambda n: [n.jax.jit(_printing(n))(n.jnp.arange(3.0)) for _ in range(3)],
    lambda n: _printing(n)(2.0),
    lambda n: n.jax.make_jaxpr(_printing(n))(1.0),
    lambda n: n.jax.debug.print("{} {x:.2f}", "hello", x=1.5),
    lambda n: n.jax.debug.print("{}", {"a": 1.0, "b": n.jnp.arange(2)}),
    lambda n: n.jax.debug.print("{}", n.jnp.float32(0.1)),
    lambda n: n.jax.debug.print("eager {} {}", 1.0, n.jnp.arange(3)),
    lambda n: n.lax.fori_loop(0, 3, lambda i, c: (n.jax.debug.print("i={}", i), c + i)[1], 0),
    lambda n: n.jax.jit(lambda x: n.lax.cond(
        x > 0, lambda v: (n.jax.debug.print("pos {}", v), v)[1],
        lambda v: (n.jax.debug.print("neg {}", v), v)[1], x))(-1.0),
], ids=["jit", "jit_three_calls", "eager", "make_jaxpr_prints_nothing", "static_string",
        "pytree", "float32_scalar", "eager_values", "fori_loop", "cond_in_jit"])
def test_debug_print_output_matches_jax(run, capsys):
    ours, theirs = namespaces()
    assert _outputs(ours, capsys, run) == _outputs(theirs, capsys, run)


def test_debug_print_prints_at_run_time_not_trace_time(capsys):
    traced = []

    @minijax.jit
    def f(x):
        traced.append(1)
        print("tracing")
        minijax.debug.print("running with {}", x)
        return x * 2

    for value in (1.0, 2.0, 3.0):
        f(value)
    assert len(traced) == 1
    assert capsys.readouterr().out == (
        "tracing\nrunning with 1.0\nrunning with 2.0\nrunning with 3.0\n")


def test_debug_print_in_a_jaxpr_matches_jax():
    ours, theirs = namespaces()
    assert str(minijax.make_jaxpr(_printing(ours))(1.0)) == \
        str(jax.make_jaxpr(_printing(theirs))(1.0))
    g = lambda n: lambda x: n.jax.debug.print("{} {}", "hello", x)  # noqa: E731
    assert str(minijax.make_jaxpr(g(ours))(1.0)) == str(jax.make_jaxpr(g(theirs))(1.0))


def test_debug_print_with_a_missing_argument_raises_like_jax():
    _messages_match(lambda n: n.jax.debug.print("{} {}", 1.0))
