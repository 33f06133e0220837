"""``jit`` composed with automatic differentiation (the rules are in
``minijax/compiler/jit_primitive.py``).

* Values: every way of composing jit with jvp, vjp, grad and higher derivatives, with
  control flow on either side of the jit and custom rules inside it, against JAX.
* Jaxprs: ``make_jaxpr(grad(jit(f)))`` and friends print exactly JAX's text: a known
  ``jit`` returning the residuals, then a ``jit`` of the transposed linear part.
* Execution: under eager reverse mode a jitted function runs as compiled jobs (the known
  half, then the transposed half), never operation by operation; calling it again neither
  retraces nor recompiles anything.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest

import minijax
import minijax.numpy as jnp
from minijax import runtime
from minijax.compiler import jit_primitive
from tests.oracle import check_program, namespaces

jax = pytest.importorskip("jax")

F32 = np.float32
V = np.array([0.5, -1.2, 2.0], F32)
W = np.arange(3, dtype=F32) / 4


def _f(n, x):
    return n.jnp.sin(x) * x


def _loss(n, x):
    return n.jnp.sum(n.jnp.tanh(x) * n.jnp.cos(x) + x ** 2)


def _cond(n, x):
    return n.lax.cond(x > 0, n.jnp.sin, lambda x: x ** 3, x)


def _scan(n, x):
    return n.lax.scan(lambda c, a: (n.jnp.sin(c) * a + c, c * a), x, V)


def _fori(n, x):
    return n.lax.fori_loop(0, 3, lambda i, c: c * n.jnp.cos(c) + 1.0, x)


def _while(n, x):
    return n.lax.while_loop(lambda c: c < 10.0, lambda c: c * 1.5 + 0.1, x)


def _custom_jvp(n):
    @n.jax.custom_jvp
    def softplus(x):
        return n.jnp.log1p(n.jnp.exp(x))

    softplus.defjvp(lambda p, t: (softplus(p[0]), t[0] / (1.0 + n.jnp.exp(-p[0]))))
    return softplus


def _custom_vjp(n):
    @n.jax.custom_vjp
    def clipped(x):
        return n.jnp.sin(x)

    clipped.defvjp(lambda x: (n.jnp.sin(x), n.jnp.cos(x)),
                   lambda r, g: (n.jnp.clip(g * r, -0.5, 0.5),))
    return clipped


def _printing(n, x):
    n.jax.debug.print("x is {}", x)
    return n.jnp.sin(x) * x


def _mlp_params():
    rng = np.random.default_rng(0)
    return {"w1": rng.standard_normal((6, 8)).astype(F32) / 3, "b1": np.zeros(8, F32),
            "w2": rng.standard_normal((8, 4)).astype(F32) / 3, "b2": np.full(4, 0.1, F32)}


_MLP_X = np.random.default_rng(1).standard_normal((5, 6)).astype(F32)
_MLP_Y = np.eye(4, dtype=F32)[[0, 3, 1, 2, 0]]


def _mlp_loss(n, p, x, y):
    h = n.jnp.tanh(x @ p["w1"] + p["b1"])
    logits = h @ p["w2"] + p["b2"]
    logp = logits - n.jnp.log(n.jnp.sum(n.jnp.exp(logits), axis=-1, keepdims=True))
    return -n.jnp.mean(n.jnp.sum(logp * y, axis=-1))


def _mlp_mse(n, p, x, y):
    """(For jaxprs: the transpose of a sum over some axes, which ``_mlp_loss`` has,
    prints its dimensions as ``np.int64(0)`` in JAX, as ``0`` in minijax.)"""
    h = n.jnp.tanh(x @ p["w1"] + p["b1"])
    return n.jnp.mean((h @ p["w2"] + p["b2"] - y) ** 2)


# ---------------------------------------------------------------------------------------
# Values against JAX
# ---------------------------------------------------------------------------------------

PROGRAMS = {
    # the basic compositions
    "grad_of_jit": lambda n: n.jax.grad(n.jax.jit(functools.partial(_f, n)))(0.7),
    "jit_of_grad": lambda n: n.jax.jit(n.jax.grad(functools.partial(_f, n)))(0.7),
    "jvp_of_jit": lambda n: n.jax.jvp(n.jax.jit(functools.partial(_loss, n)), (V,), (W,)),
    "jit_of_jvp": lambda n: n.jax.jit(
        lambda x, t: n.jax.jvp(functools.partial(_loss, n), (x,), (t,)))(V, W),
    "vjp_of_jit": lambda n: n.jax.vjp(n.jax.jit(lambda x: n.jnp.sin(x) * x), V)[1](W),
    "linearize_of_jit": lambda n: n.jax.linearize(n.jax.jit(functools.partial(_loss, n)),
                                                  V)[1](W),
    "value_and_grad_of_jit": lambda n: n.jax.value_and_grad(
        n.jax.jit(functools.partial(_loss, n)))(V),
    # higher order
    "grad_grad_of_jit": lambda n: n.jax.grad(n.jax.grad(n.jax.jit(functools.partial(_f, n))))(
        0.7),
    "grad3_of_jit": lambda n: n.jax.grad(n.jax.grad(n.jax.grad(
        n.jax.jit(functools.partial(_f, n)))))(0.7),
    "grad_of_jit_of_grad": lambda n: n.jax.grad(n.jax.jit(n.jax.grad(
        functools.partial(_f, n))))(0.7),
    "jit_of_grad_of_jit": lambda n: n.jax.jit(n.jax.grad(n.jax.jit(
        functools.partial(_f, n))))(0.7),
    "jvp_of_grad_of_jit": lambda n: n.jax.jvp(n.jax.grad(n.jax.jit(
        functools.partial(_f, n))), (0.7,), (1.0,)),
    "hessian_of_jit": lambda n: n.jax.hessian(n.jax.jit(functools.partial(_loss, n)))(V),
    "jacfwd_of_jit": lambda n: n.jax.jacfwd(n.jax.jit(lambda x: n.jnp.sin(x) * x))(V),
    "jacrev_of_jit": lambda n: n.jax.jacrev(n.jax.jit(lambda x: n.jnp.sin(x) * x))(V),
    # arguments and results
    "pytrees": lambda n: n.jax.grad(n.jax.jit(lambda d: d["a"] * n.jnp.sum(d["b"][0] ** 2)))(
        {"a": 2.0, "b": (V,)}),
    "argnums": lambda n: n.jax.grad(n.jax.jit(lambda x, y: n.jnp.sum(n.jnp.sin(x) * y)),
                                    argnums=(0, 1))(V, W),
    "has_aux": lambda n: n.jax.grad(n.jax.jit(lambda x: (x * x, x + 1)), has_aux=True)(2.0),
    "int_argument": lambda n: n.jax.grad(n.jax.jit(lambda x, k: x ** k * 2.0))(1.5, 3),
    "int_output": lambda n: n.jax.grad(lambda x: n.jax.jit(lambda x: (x * 2.0, 3))(x)[0])(1.0),
    "static_argnums": lambda n: n.jax.grad(n.jax.jit(lambda x, k: x ** k,
                                                     static_argnums=1))(1.5, 3),
    "captured_array": lambda n: n.jax.grad(n.jax.jit(lambda x: n.jnp.sum(x * W)))(V),
    "closure_over_tracer": lambda n: n.jax.grad(lambda x: n.jax.jit(lambda y: x * y)(2.0))(3.0),
    "same_argument_twice": lambda n: n.jax.grad(lambda x: n.jax.jit(lambda a, b: a * b)(x, x))(
        3.0),
    "identity": lambda n: n.jax.grad(n.jax.jit(lambda x: x))(1.0),
    "constant_output": lambda n: n.jax.grad(n.jax.jit(lambda x: 2.0))(1.0),
    "unused_output": lambda n: n.jax.grad(lambda x: n.jax.jit(
        lambda x: (n.jnp.sin(x) * x, x * 3.0))(x)[1])(1.0),
    "zero_cotangent": lambda n: n.jax.vjp(n.jax.jit(lambda x, y: (x * 2.0, n.jnp.sin(y))),
                                          1.0, 2.0)[1]((1.0, 0.0)),
    "nested_jit": lambda n: n.jax.grad(n.jax.jit(
        lambda x: n.jax.jit(functools.partial(_f, n))(x) + x))(1.0),
    "called_twice": lambda n: n.jax.grad(lambda x: n.jax.jit(functools.partial(_f, n))(x)
                                         * n.jax.jit(functools.partial(_f, n))(x + 1.0))(0.5),
    "keep_unused": lambda n: n.jax.grad(n.jax.jit(lambda x, y: n.jnp.sin(x), keep_unused=True),
                                        argnums=(0, 1))(2.0, 3.0),
    "donate_argnums": lambda n: n.jax.grad(n.jax.jit(lambda x, y: n.jnp.sin(x) * y,
                                                     donate_argnums=0))(2.0, 3.0),
    # jit inside control flow, under AD
    "jit_in_cond": lambda n: n.jax.grad(lambda x: n.lax.cond(
        x > 0, n.jax.jit(n.jnp.sin), n.jnp.cos, x))(1.0),
    "jit_in_scan": lambda n: n.jax.grad(lambda x: n.lax.scan(
        lambda c, a: (n.jax.jit(lambda c, a: n.jnp.sin(c) * a)(c, a), None), x, V)[0])(0.3),
    "jit_in_fori": lambda n: n.jax.grad(lambda x: n.lax.fori_loop(
        0, 3, lambda i, c: n.jax.jit(n.jnp.tanh)(c) * 1.5, x))(0.3),
    "jit_in_while_jvp": lambda n: n.jax.jvp(lambda x: n.lax.while_loop(
        lambda c: c < 10.0, n.jax.jit(lambda c: c * 1.5 + 0.1), x), (1.0,), (1.0,)),
    # control flow inside jit, under AD
    "cond_in_jit": lambda n: n.jax.grad(n.jax.jit(functools.partial(_cond, n)))(0.8),
    "cond_in_jit_negative": lambda n: n.jax.grad(n.jax.jit(functools.partial(_cond, n)))(-0.8),
    "scan_in_jit": lambda n: n.jax.grad(lambda x: n.jnp.sum(n.jax.jit(
        functools.partial(_scan, n))(x)[1]))(F32(0.3)),
    "fori_in_jit": lambda n: n.jax.grad(n.jax.jit(functools.partial(_fori, n)))(0.3),
    "while_in_jit_jvp": lambda n: n.jax.jvp(n.jax.jit(functools.partial(_while, n)), (1.0,),
                                            (1.0,)),
    "while_in_jit_grad": lambda n: n.jax.grad(n.jax.jit(functools.partial(_while, n)))(1.0),
    "jvp_of_scan_in_jit": lambda n: n.jax.jvp(n.jax.jit(functools.partial(_scan, n)), (0.3,),
                                              (1.0,)),
    # custom rules inside jit
    "custom_jvp_grad": lambda n: n.jax.grad(n.jax.jit(lambda x: _custom_jvp(n)(x) * 2.0))(30.0),
    "custom_jvp_jvp": lambda n: n.jax.jvp(n.jax.jit(_custom_jvp(n)), (30.0,), (1.0,)),
    "custom_jvp_jit_of_grad": lambda n: n.jax.jit(n.jax.grad(_custom_jvp(n)))(30.0),
    "custom_vjp_grad": lambda n: n.jax.grad(n.jax.jit(lambda x: _custom_vjp(n)(x) * 3.0))(0.2),
    "custom_vjp_jit_of_grad": lambda n: n.jax.jit(n.jax.grad(_custom_vjp(n)))(0.2),
    "custom_vjp_jvp_fails": lambda n: n.jax.jvp(n.jax.jit(_custom_vjp(n)), (0.2,), (1.0,)),
    "custom_jvp_rule_calls_jit": lambda n: n.jax.grad(_custom_jvp_calling_jit(n))(0.4),
    "debug_print_in_jit": lambda n: n.jax.grad(n.jax.jit(functools.partial(_printing, n)))(0.4),
    # the MLP step
    "jit_value_and_grad_mlp": lambda n: n.jax.jit(n.jax.value_and_grad(
        functools.partial(_mlp_loss, n)))(_mlp_params(), _MLP_X, _MLP_Y),
    "value_and_grad_jit_mlp": lambda n: n.jax.value_and_grad(n.jax.jit(
        functools.partial(_mlp_loss, n)))(_mlp_params(), _MLP_X, _MLP_Y),
}


def _custom_jvp_calling_jit(n):
    """A custom rule whose tangent goes through a jitted (linear) function: that ``jit``
    sees only unknown inputs."""
    linear = n.jax.jit(lambda t: t * 3.0)

    @n.jax.custom_jvp
    def f(x):
        return n.jnp.sin(x)

    f.defjvp(lambda p, t: (n.jnp.sin(p[0]), linear(t[0])))
    return n.jax.jit(f)


@pytest.mark.parametrize("name", PROGRAMS)
def test_program_matches_jax(name: str) -> None:
    check_program(PROGRAMS[name], rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------------------------------
# Jaxprs against JAX's text
# ---------------------------------------------------------------------------------------


def _two(n):
    return n.jax.jit(lambda x, y: (x * 2.0, n.jnp.sin(y)))


def _sum_of_two_calls(two):
    """Both calls of ``two`` split alike: one known jaxpr, printed once (``let``)."""
    return lambda x, y: two(x, y)[0] + two(x, y)[1]


JAXPRS = {
    "grad_of_jit": (lambda n: n.jax.grad(n.jax.jit(functools.partial(_f, n))), (1.0,)),
    "jit_of_grad": (lambda n: n.jax.jit(n.jax.grad(functools.partial(_f, n))), (1.0,)),
    "jvp_of_jit": (lambda n: lambda x, t: n.jax.jvp(n.jax.jit(functools.partial(_f, n)), (x,),
                                                    (t,)), (1.0, 1.0)),
    "vjp_of_jit": (lambda n: lambda x: n.jax.vjp(n.jax.jit(functools.partial(_f, n)), x)[1](1.0),
                   (1.0,)),
    "linearize_of_jit": (lambda n: lambda x: n.jax.linearize(n.jax.jit(
        functools.partial(_f, n)), x)[1](1.0), (1.0,)),
    "grad_argnums": (lambda n: n.jax.grad(n.jax.jit(lambda x, y: n.jnp.sum(n.jnp.tanh(x) * y)),
                                          argnums=(0, 1)), (V, W)),
    "grad_grad_of_jit": (lambda n: n.jax.grad(n.jax.grad(n.jax.jit(functools.partial(_f, n)))),
                         (1.0,)),
    "residual_is_an_output": (lambda n: n.jax.grad(n.jax.jit(n.jnp.exp)), (1.0,)),
    "known_jaxpr_shared": (lambda n: n.jax.grad(_sum_of_two_calls(_two(n))), (1.0, 2.0)),
    "zero_cotangent_given": (lambda n: lambda x, y: n.jax.vjp(_two(n), x, y)[1]((1.0, 0.0)),
                             (1.0, 2.0)),
    "symbolic_zero_cotangent": (lambda n: n.jax.grad(lambda x, y: _two(n)(x, y)[0],
                                                     argnums=(0, 1)), (1.0, 2.0)),
    "unused_output": (lambda n: n.jax.grad(lambda x: n.jax.jit(
        lambda x: (n.jnp.sin(x) * x, x * 3.0))(x)[1]), (1.0,)),
    "captured_array": (lambda n: n.jax.grad(n.jax.jit(lambda x: n.jnp.sum(x * W))), (V,)),
    "int_argument": (lambda n: n.jax.grad(n.jax.jit(lambda x, k: x * k)), (1.0, 3)),
    "identity": (lambda n: n.jax.grad(n.jax.jit(lambda x: x)), (1.0,)),
    "forwarded_output": (lambda n: n.jax.grad(n.jax.jit(lambda x, y: (x, y * 2.0)),
                                              argnums=(0, 1), has_aux=True), (1.0, 2.0)),
    "nested_jit": (lambda n: n.jax.grad(n.jax.jit(lambda x: n.jax.jit(
        lambda x: n.jnp.sin(x) * 3.0)(x) + x)), (1.0,)),
    "cond_in_jit": (lambda n: n.jax.grad(n.jax.jit(lambda x: n.lax.cond(
        x > 0, n.jnp.sin, n.jnp.cos, x))), (1.0,)),
    "scan_in_jit": (lambda n: n.jax.grad(n.jax.jit(lambda x: n.lax.scan(
        lambda c, _: (n.jnp.sin(c), None), x, None, length=3)[0])), (1.0,)),
    "custom_jvp_in_jit": (lambda n: n.jax.grad(n.jax.jit(lambda x: _custom_jvp(n)(x) * 2.0)),
                          (1.0,)),
    "custom_vjp_in_jit": (lambda n: n.jax.grad(n.jax.jit(lambda x: _custom_vjp(n)(x) * 2.0)),
                          (1.0,)),
    "custom_rule_calls_jit": (lambda n: n.jax.grad(_custom_jvp_calling_jit(n)), (1.0,)),
    "debug_print_in_jit": (lambda n: n.jax.grad(n.jax.jit(functools.partial(_printing, n))),
                           (1.0,)),
    "mlp_grad_of_jit": (lambda n: n.jax.grad(n.jax.jit(functools.partial(_mlp_mse, n))),
                        (_mlp_params(), _MLP_X, _MLP_Y)),
    "mlp_jit_of_value_and_grad": (lambda n: n.jax.jit(n.jax.value_and_grad(
        functools.partial(_mlp_mse, n))), (_mlp_params(), _MLP_X, _MLP_Y)),
}


@pytest.mark.parametrize("name", JAXPRS)
def test_jaxpr_text_matches_jax(name: str) -> None:
    make, args = JAXPRS[name]
    ours, theirs = namespaces()
    expected = str(theirs.jax.make_jaxpr(make(theirs))(*args))
    assert str(ours.jax.make_jaxpr(make(ours))(*args)) == expected


def test_grad_of_jit_is_a_known_jit_and_a_transposed_jit() -> None:
    """The shape of the result, spelled out: no operation of f outside a ``jit``."""
    closed = minijax.make_jaxpr(minijax.grad(minijax.jit(lambda x: jnp.sin(x) * x)))(1.0)
    assert [e.primitive.name for e in closed.eqns] == ["jit", "jit"]
    known, transposed = closed.eqns
    assert [e.primitive.name for e in known.params["jaxpr"].eqns] == ["sin", "cos", "mul"]
    assert transposed.params["name"] == known.params["name"] == "<lambda>"


# ---------------------------------------------------------------------------------------
# Execution: compiled jobs, no retracing, no recompiling
# ---------------------------------------------------------------------------------------


@pytest.fixture
def jobs(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the jobs put on any device's queue while the test runs."""
    names: list[str] = []
    enqueue = runtime.Device.enqueue

    def recording(self, job):
        if type(job) is tuple:
            names.append(job[0].name)
        return enqueue(self, job)

    monkeypatch.setattr(runtime.Device, "enqueue", recording)
    return names


@pytest.fixture
def compiles(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the jaxprs compiled while the test runs."""
    names: list[str] = []
    compile_jaxpr = jit_primitive.compile_jaxpr

    def recording(closed, name, keep_unused=False):
        names.append(name)
        return compile_jaxpr(closed, name, keep_unused)

    monkeypatch.setattr(jit_primitive, "compile_jaxpr", recording)
    return names


def _long(x):
    for _ in range(10):
        x = jnp.tanh(x) * jnp.sin(x) + x
    return jnp.sum(x)


def test_eager_grad_of_jit_runs_two_compiled_jobs(jobs: list[str]) -> None:
    x = jnp.asarray(V)
    jitted = minijax.jit(_long)
    expected = minijax.grad(_long)(x)
    jobs.clear()
    got = minijax.grad(jitted)(x)
    assert jobs.count("jit") == 2  # the known half (forward, residuals), the transposed half
    assert not {"tanh", "sin", "mul", "add", "add_any", "reduce_sum"} & set(jobs)
    np.testing.assert_allclose(np.asarray(got), np.asarray(expected), rtol=1e-6)


def test_eager_jvp_and_vjp_of_jit_run_compiled_jobs(jobs: list[str]) -> None:
    x = jnp.asarray(V)
    jitted = minijax.jit(_long)
    minijax.jvp(jitted, (x,), (x,))
    assert jobs == ["jit"]
    jobs.clear()
    _, f_vjp = minijax.vjp(jitted, x)
    assert jobs == ["jit"]
    jobs.clear()
    f_vjp(jnp.float32(1.0))
    assert jobs == ["jit"]


def test_grad_of_jit_again_neither_retraces_nor_recompiles(compiles: list[str]) -> None:
    traces = []

    def f(x):
        traces.append(1)
        return jnp.sum(jnp.sin(x) * x)

    g = minijax.grad(minijax.jit(f))
    x = jnp.asarray(V)
    first = g(x)
    assert (len(traces), compiles) == (1, ["f", "f"])
    for value in (x, x + 1.0, jnp.asarray(W)):
        g(value)
    assert (len(traces), compiles) == (1, ["f", "f"])
    np.testing.assert_allclose(np.asarray(first), np.asarray(minijax.grad(f)(x)), rtol=1e-6)


def _trace_counts(n) -> list[int]:
    """How many times ``f`` has been traced after each step of a sequence of calls."""
    traces = []

    def f(x):
        traces.append(1)
        return n.jnp.sin(x) * x

    jf = n.jax.jit(f)
    x = n.jnp.float32(1.0)
    steps = [lambda: jf(x), lambda: n.jax.grad(jf)(x), lambda: n.jax.grad(jf)(2.0),
             lambda: n.jax.grad(jf)(n.jnp.float32(3.0)), lambda: n.jax.jvp(jf, (x,), (x,)),
             lambda: n.jax.vjp(jf, x)[1](x), lambda: n.jax.grad(n.jax.grad(jf))(x),
             lambda: n.jax.jit(n.jax.grad(jf))(x),
             lambda: n.jax.make_jaxpr(n.jax.grad(jf))(x)]
    counts = []
    for step in steps:
        step()
        counts.append(len(traces))
    return counts


def test_retrace_counts_match_jax() -> None:
    """The same sequence of calls traces the function as often in minijax as in JAX."""
    ours, theirs = namespaces()
    assert _trace_counts(ours) == _trace_counts(theirs)


def test_forward_mode_of_custom_vjp_under_jit_fails_at_the_call() -> None:
    clipped = _custom_vjp(namespaces()[0])
    with pytest.raises(TypeError, match="can't apply forward-mode autodiff"):
        minijax.jvp(minijax.jit(clipped), (0.2,), (1.0,))


def test_a_rule_closing_over_an_outer_tracer_is_not_remembered() -> None:
    """A custom rule that closes over a value being differentiated puts a tracer into the
    derived body; that body must not be reused by a later call (the tracer is gone by
    then). JAX refuses this program (no constant handler for its tracer); minijax runs
    it, with or without ``jit``."""
    def outer(y, wrap):
        @minijax.custom_jvp
        def f(x):
            return x * y

        f.defjvp(lambda p, t: (p[0] * y, t[0] * y * 2.0))
        g = wrap(f)
        return minijax.grad(lambda x: g(x) * y)(1.5)  # 2 y**2

    for y in (2.0, 3.0):
        with_jit = minijax.grad(functools.partial(outer, wrap=minijax.jit))(y)
        without = minijax.grad(functools.partial(outer, wrap=lambda f: f))(y)
        assert float(with_jit) == float(without) == 4 * y
