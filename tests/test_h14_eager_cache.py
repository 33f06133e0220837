"""Eager control flow reuses the traced body, as JAX does; jit reads NumPy arguments in place.

* ``fori_loop``, ``while_loop``, ``scan`` and ``cond`` trace a body once per function,
  types and flags (``control_flow.common.trace_once``): the second eager call does not
  call the Python body again. The same cache gives JAX's stale-closure behaviour, which
  the tests check against JAX itself: a body that reads a global that has changed since
  keeps the old value until the types change.
* ``jit(f)(numpy_array)`` reads the host array in place and waits for its program
  (``dispatch._borrow``): changing the array afterwards changes nothing, and an output
  that is the input is a copy.
"""

import numpy as np
import pytest

import minijax
import minijax.numpy as mjnp
from minijax import lax as mlax

jax = pytest.importorskip("jax")
jjnp, jlax = jax.numpy, jax.lax


class Counted:
    """A body that counts its Python calls (its traces)."""

    def __init__(self, fun):
        self.fun, self.calls = fun, 0

    def __call__(self, *args):
        self.calls += 1
        return self.fun(*args)


def _while(lax, body):
    cond, step = (lambda c: c[0] < 3), (lambda c: (c[0] + 1, body(c[0], c[1])))
    return lambda x: lax.while_loop(cond, step, (0, x))[1]


def _scan(lax, body):
    step = lambda c, i: (body(i, c), c)
    return lambda x: lax.scan(step, x, np.arange(3, dtype=np.int32))[0]


def _cond(lax, body):
    yes, no = (lambda y: body(0, y)), (lambda y: y)
    return lambda x: lax.cond(True, yes, no, x)


# name -> (lax, body) -> a loop of x whose functions are made once (so, cacheable)
LOOPS = {
    "fori_loop": lambda lax, body: lambda x: lax.fori_loop(0, 3, body, x),
    "fori_loop, array bounds": lambda lax, body: lambda x: lax.fori_loop(
        np.int32(0), np.int32(3), body, x),
    "while_loop": _while,
    "scan": _scan,
    "cond": _cond,
}


@pytest.mark.parametrize("name", LOOPS)
def test_a_second_eager_call_does_not_trace_the_body_again(name):
    body = Counted(lambda i, x: x * 2.0 + 1.0)
    loop = LOOPS[name](mlax, body)
    first = loop(mjnp.ones(4))
    traces = body.calls
    second = loop(mjnp.ones(4))
    assert traces >= 1 and body.calls == traces
    np.testing.assert_array_equal(np.asarray(first), np.asarray(second))


def test_new_types_or_flags_trace_again():
    body = Counted(lambda i, x: x + 1)
    mlax.fori_loop(0, 3, body, mjnp.ones(4))
    traced = body.calls
    mlax.fori_loop(0, 3, body, mjnp.ones(5))  # another shape
    assert body.calls == traced + 1
    with minijax.config.override("jax_numpy_dtype_promotion", "strict"):
        mlax.fori_loop(0, 3, body, mjnp.ones(5))
    assert body.calls == traced + 2


def _stale_closure_results(lax, jnp):
    """A body reading a global that changes between calls: what each call returns."""
    state = {"scale": 2.0}

    def body(i, x):
        return x * state["scale"]

    results = {}
    for name, make in LOOPS.items():
        loop = make(lax, body)
        state["scale"] = 2.0
        first = loop(jnp.ones(2))
        state["scale"] = 3.0
        again = loop(jnp.ones(2))  # same types: the old trace
        new_types = loop(jnp.ones(3))  # new types: traced with scale 3
        results[name] = [np.asarray(r).tolist() for r in (first, again, new_types)]
    return results


def test_stale_closures_behave_as_in_jax():
    assert _stale_closure_results(mlax, mjnp) == _stale_closure_results(jlax, jjnp)


def test_a_body_that_captures_an_outer_tracer_is_traced_for_each_trace():
    def loop(y, x):
        return mlax.fori_loop(0, 2, lambda i, c: c + y, x)

    body_of = minijax.jit(loop)
    assert float(body_of(1.0, 0.0)) == 2.0
    assert float(minijax.jit(lambda y, x: loop(2 * y, x))(1.0, 0.0)) == 4.0
    assert float(minijax.grad(loop)(1.0, 0.0)) == 2.0


def test_jit_reads_numpy_arguments_in_place_but_keeps_them_apart():
    host = np.ones(3, np.float32)
    same = minijax.jit(lambda x: x)(host)
    doubled = minijax.jit(lambda x: x * 2)(host)
    view = minijax.jit(lambda x: x.reshape(3, 1))(host)
    host[0] = 99.0
    assert np.asarray(same).tolist() == [1.0, 1.0, 1.0]
    assert np.asarray(doubled).tolist() == [2.0, 2.0, 2.0]
    assert np.asarray(view).ravel().tolist() == [1.0, 1.0, 1.0]
    assert host.flags.writeable  # handing out the results left the host array alone


def test_jit_on_numpy_arguments_of_other_dtypes_and_pytrees():
    f = minijax.jit(lambda p, x: {"y": p["w"] @ x, "n": x.sum()})
    w = np.arange(6.0).reshape(2, 3)  # float64: converted (copied) as before
    x = np.arange(3, dtype=np.float32)
    out = f({"w": w}, x)
    assert out["y"].dtype == np.float32
    np.testing.assert_allclose(np.asarray(out["y"]), w.astype(np.float32) @ x)
    assert float(out["n"]) == 3.0


@pytest.mark.parametrize("name", ["fori_loop", "while_loop", "scan"])
def test_a_second_eager_loop_finds_its_program_without_walking_the_body(name, monkeypatch):
    from minijax.compiler import eager_loops

    loop = LOOPS[name](mlax, lambda i, x: x * 0.5 + 1.0)
    first = loop(mjnp.ones(4))
    walks = []
    original = eager_loops.jaxpr_structure
    monkeypatch.setattr(eager_loops, "jaxpr_structure", lambda j: walks.append(j) or original(j))
    second = loop(mjnp.ones(4))
    assert walks == []
    np.testing.assert_array_equal(np.asarray(first), np.asarray(second))


MEAN_CASES = [((5, 7), np.float32, {"axis": 0}), ((5, 7), np.float32, {"axis": (0, 1),
              "keepdims": True}), ((3, 4), np.int32, {"axis": 1}), ((3,), np.bool_, {}),
              ((), np.float32, {}), ((4,), np.float16, {"dtype": np.float32}),
              ((4,), np.float16, {}), ((3, 4), np.float32, {"axis": -1})]


@pytest.mark.parametrize("shape, dtype, options", MEAN_CASES)
def test_eager_mean_is_one_job_with_the_primitives_bits(shape, dtype, options, monkeypatch):
    from minijax import runtime
    from minijax.numpy import reductions

    x = mjnp.asarray(np.random.default_rng(0).standard_normal(shape).astype(dtype))
    by_primitives = reductions.mean.__wrapped__(x, **options)
    mjnp.mean(x, **options)  # compiled on the first call
    jobs = []
    original = runtime.Device.enqueue
    monkeypatch.setattr(runtime.Device, "enqueue", lambda d, job, **kw: jobs.append(job) or
                        original(d, job, **kw))
    ours = mjnp.mean(x, **options)
    assert len(jobs) == 1
    assert ours.aval == by_primitives.aval
    assert np.asarray(ours).tobytes() == np.asarray(by_primitives).tobytes()


@pytest.mark.parametrize("options", [{"axis": 5}, {"axis": (0, 0)}, {"dtype": "foo"},
                                     {"axis": [0]}, {"where": np.array([True, False, True])}])
def test_eager_mean_fails_and_falls_back_as_the_primitives_do(options):
    from minijax.numpy import reductions

    outcomes = []
    for mean in (mjnp.mean, reductions.mean.__wrapped__):
        try:
            outcomes.append(np.asarray(mean(mjnp.ones((2, 3)), **options)).tolist())
        except Exception as e:  # noqa: BLE001 (the two must fail alike)
            outcomes.append((type(e), str(e)))
    assert outcomes[0] == outcomes[1]


def test_traced_bodies_are_kept_in_a_bounded_cache(monkeypatch):
    from minijax.lax.control_flow import common

    monkeypatch.setattr(common, "MAX_TRACES", 4)
    for k in range(10):  # a new function every time: nothing to reuse, and nothing kept
        mlax.fori_loop(0, 2, lambda i, c, k=k: c + k, mjnp.ones(2))
    assert len(common._traced) <= 4


def test_a_body_is_traced_again_under_another_named_axis_size():
    def sizes(jax, lax, jnp):
        body = lambda i, x: x + lax.psum(1, "i")
        return [np.asarray(jax.vmap(lambda x: lax.fori_loop(0, 2, body, x), axis_name="i")(
            jnp.zeros(n))).tolist() for n in (2, 3)]

    assert sizes(minijax, mlax, mjnp) == sizes(jax, jlax, jjnp)


def test_a_change_of_piece_forgets_the_traced_bodies():
    from minijax import flags

    body = Counted(lambda i, x: x + 1.0)
    loop = LOOPS["fori_loop"](mlax, body)
    loop(mjnp.ones(2))
    traced = body.calls
    flags.pieces_changed()  # what installing or resetting a piece announces
    loop(mjnp.ones(2))
    assert body.calls == traced + 1
