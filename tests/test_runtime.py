"""Asynchronous dispatch, devices and the Array's host-facing behaviour.

The asynchrony tests use primitives whose kernels wait for a signal from the test, so
they prove that an operation returns *before* it is computed without timing anything.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest

import minijax
import minijax.numpy as jnp
from minijax import errors, lax, runtime
from minijax.core import Primitive

GATE_TIMEOUT = 10.0


def gated_primitive(gate: threading.Event) -> Primitive:
    """A primitive that copies its input once ``gate`` is set."""
    prim = Primitive("gated_copy")

    def kernel(x):
        if not gate.wait(GATE_TIMEOUT):
            raise TimeoutError("the test never opened the gate")
        return x.copy()

    prim.def_impl(kernel)
    prim.def_abstract_eval(lambda aval: aval)
    return prim


def failing_primitive(message: str) -> Primitive:
    prim = Primitive("always_fails")

    def kernel(x):
        raise ValueError(message)

    prim.def_impl(kernel)
    prim.def_abstract_eval(lambda aval: aval)
    return prim


def test_an_operation_returns_before_it_is_computed():
    gate = threading.Event()
    x = jnp.ones(3)
    y = gated_primitive(gate).bind(x)
    z = y * 2  # queued behind y, also not computed yet
    assert not y.is_ready() and not z.is_ready()
    assert y.shape == (3,) and z.dtype == np.float32  # known at once
    gate.set()
    np.testing.assert_array_equal(np.asarray(z), [2.0, 2.0, 2.0])
    assert y.is_ready() and z.is_ready()


@pytest.mark.parametrize("wait", [
    lambda a: a.block_until_ready(),
    lambda a: np.asarray(a),
    lambda a: a.item(),
    lambda a: repr(a),
    lambda a: float(a),
    lambda a: minijax.block_until_ready({"a": [a]}),
])
def test_every_way_of_looking_waits_for_the_value(wait):
    gate = threading.Event()
    y = gated_primitive(gate).bind(jnp.asarray(5.0))
    assert not y.is_ready()
    threading.Timer(0.05, gate.set).start()
    wait(y)
    assert y.is_ready() and y.item() == 5.0


def test_shape_and_dtype_errors_are_raised_at_once():
    gate = threading.Event()
    pending = gated_primitive(gate).bind(jnp.ones(3))
    with pytest.raises(TypeError, match=r"add got incompatible shapes for broadcasting"):
        lax.add(pending, jnp.ones(2))
    with pytest.raises(TypeError, match="requires arguments to have the same dtypes"):
        lax.add(pending, jnp.ones(3, jnp.int32))
    gate.set()


def test_a_failure_inside_the_computation_surfaces_at_the_first_wait():
    y = failing_primitive("kernel exploded").bind(jnp.ones(2))
    z = y + 1  # depends on the failed value: fails too, and also only when waited for
    with pytest.raises(errors.JaxRuntimeError, match="kernel exploded") as info:
        y.block_until_ready()
    assert isinstance(info.value.__cause__, ValueError)
    assert "float32[2]" in str(info.value)
    with pytest.raises(errors.JaxRuntimeError, match="kernel exploded"):
        np.asarray(z)
    # Unrelated work on the same device is unaffected.
    assert (jnp.ones(2) + 1).tolist() == [2.0, 2.0]


def test_numpy_warnings_do_not_leak_from_the_device():
    with np.errstate(all="raise"):
        assert np.isinf(np.asarray(jnp.ones(2) / 0.0)).all()
        assert np.isnan(np.asarray(jnp.log(-jnp.ones(2)))).all()


def test_arrays_are_immutable():
    x = jnp.arange(3.0) if hasattr(jnp, "arange") else jnp.ones(3)
    with pytest.raises(TypeError, match=r"JAX arrays are immutable .* x.at\[idx\].set\(y\)"):
        x[0] = 1.0
    view = np.asarray(x)
    assert not view.flags.writeable
    with pytest.raises(ValueError):
        view[0] = 7.0


def test_host_numpy_arrays_are_copied_on_the_way_in():
    host = np.ones(3, np.float32)
    x = jnp.asarray(host)
    host[0] = 99.0
    assert np.asarray(x).tolist() == [1.0, 1.0, 1.0]


def test_scalar_conversions_and_iteration():
    x = jnp.asarray(3.5)
    assert float(x) == 3.5 and int(x) == 3 and bool(x) and complex(x) == 3.5
    assert f"{x:.2f}" == "3.50"
    with pytest.raises(TypeError, match="only integer scalar arrays"):
        [1, 2, 3][x]
    assert [1, 2, 3][jnp.asarray(1)] == 2
    assert len(jnp.ones((4, 2))) == 4
    rows = list(jnp.ones((2, 3)))
    assert len(rows) == 2 and rows[0].shape == (3,)
    with pytest.raises(TypeError, match="len\\(\\) of unsized object"):
        len(x)
    with pytest.raises(TypeError, match="unhashable"):
        hash(x)


def test_pickling_keeps_value_dtype_and_weak_type():
    import copy
    import pickle

    x = jnp.asarray(2.0)
    y = pickle.loads(pickle.dumps(x))
    assert repr(y) == repr(x) == "Array(2., dtype=float32, weak_type=True)"
    assert repr(copy.deepcopy(jnp.ones(2))) == repr(jnp.ones(2))


def test_default_device_is_one_cpu_device():
    assert minijax.device_count() == len(minijax.devices()) >= 1
    device = minijax.devices()[0]
    assert repr(device) == "CpuDevice(id=0)" and str(device) == "cpu:0"
    assert device.platform == "cpu" and minijax.default_backend() == "cpu"
    x = jnp.ones(2)
    assert x.device is device and x.devices() == {device} and not x.committed


def test_device_put_commits_and_waits_like_any_op():
    device = minijax.devices()[0]
    x = minijax.device_put(np.arange(3, dtype=np.float32), device)
    assert x.committed and x.device is device
    assert (x + 1).committed
    tree = minijax.device_put({"a": 1.0, "b": [np.ones(2)]})
    assert repr(tree["a"]) == "Array(1., dtype=float32, weak_type=True)"
    assert not tree["b"][0].committed


MULTI_DEVICE_SCRIPT = textwrap.dedent("""
    import minijax, minijax.numpy as jnp
    d0, d1 = minijax.devices()
    x = minijax.device_put(jnp.ones(3), d0)
    y = minijax.device_put(jnp.ones(3), d1)
    print(len(minijax.devices()), (jnp.ones(3) + y).device, (y * 2).device)
    try:
        x + y
    except ValueError as e:
        print("ValueError:", e)
""")


def test_device_count_comes_from_xla_flags_and_committed_devices_must_agree():
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=2")
    out = subprocess.run([sys.executable, "-c", MULTI_DEVICE_SCRIPT], env=env,
                         capture_output=True, text=True, check=True).stdout
    first, error = out.strip().split("\n")
    assert first == "2 cpu:1 cpu:1"
    assert error.startswith("ValueError: Received incompatible devices for jitted computation.")
    assert "device ids [0]" in error and "device ids [1]" in error


def test_repr_matches_jax():
    jax = pytest.importorskip("jax")
    jjnp = jax.numpy
    rng = np.random.default_rng(0)
    cases = [
        lambda m: m.asarray(1.0),
        lambda m: m.asarray(np.float32(1.5)),
        lambda m: m.ones((2, 3)),
        lambda m: m.asarray(rng_values.astype(np.float32)),
        lambda m: m.asarray(np.arange(2000, dtype=np.int32)),
        lambda m: m.asarray(np.arange(24, dtype=np.int8).reshape(2, 3, 4)),
        lambda m: m.asarray([True, False]),
        lambda m: m.asarray(np.array([1 + 2j, 3j], np.complex64)),
        lambda m: m.asarray(np.array([1.0, np.nan, np.inf], np.float16)),
    ]
    rng_values = rng.normal(size=(3, 4)) * 1e4
    for make in cases:
        assert repr(make(jnp)) == repr(make(jjnp))
        assert str(make(jnp)) == str(make(jjnp))


@pytest.fixture
def job_names(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The primitives of the jobs put on any device's queue while the test runs."""
    names: list[str] = []
    enqueue = runtime.Device.enqueue

    def recording(self, job):
        names.append(job[0].name)
        return enqueue(self, job)

    monkeypatch.setattr(runtime.Device, "enqueue", recording)
    return names


@pytest.mark.parametrize("index", [0, 2, -1, -3])
def test_eager_int_index_is_one_job_and_traced_it_is_slice_then_squeeze(job_names, index):
    host = np.arange(12.0, dtype=np.float32).reshape(3, 4)
    x = minijax.device_put(jnp.asarray(host), minijax.devices()[0]).block_until_ready()
    job_names.clear()
    row = x[index]
    assert job_names == ["row"]
    np.testing.assert_array_equal(np.asarray(row), host[index])
    assert (row.shape, row.dtype, row.weak_type, row.committed) == ((4,), np.float32, False, True)
    assert np.asarray(row[index + 1]) == host[index][index + 1]
    weak = jnp.broadcast_to(2.0, (3,))
    assert weak[index % 3].weak_type and weak[index % 3].item() == 2.0
    eqns = minijax.make_jaxpr(lambda a: a[index])(x).jaxpr.eqns
    assert [e.primitive.name for e in eqns] == ["slice", "squeeze"]


def test_a_waiting_thread_runs_the_queue_up_to_its_value_and_the_worker_the_rest():
    gate = threading.Event()
    x = jnp.arange(4.0)
    blocked = gated_primitive(gate).bind(x)
    later = [blocked + i for i in range(50)]  # queued behind the gate
    threading.Timer(0.05, gate.set).start()
    assert later[0].tolist() == [0.0, 1.0, 2.0, 3.0]
    assert minijax.block_until_ready(later)[-1].tolist() == [49.0, 50.0, 51.0, 52.0]
    # Nothing is left behind: a fresh operation is computed without any help.
    y = x * 3
    deadline = time.monotonic() + GATE_TIMEOUT
    while not y.is_ready() and time.monotonic() < deadline:
        time.sleep(0.001)
    assert y.is_ready()


@pytest.mark.parametrize("target", ["cpu", "cpu:0", 0])
def test_device_put_to_something_that_is_not_a_device_is_refused_as_jax_does(target):
    """JAX 0.10.2 looks no name up: it raises ValueError. We raise its message and add the
    list of devices (``device_put(x, "cpu")`` used to fail deep inside the queue)."""
    with pytest.raises(ValueError) as info:
        minijax.device_put({"a": np.ones(3)}, target)
    message = str(info.value)
    assert f"Received invalid value: {target}. " in message
    assert message.endswith(f"The devices are: {minijax.devices()}")
    jax = pytest.importorskip("jax")
    with pytest.raises(ValueError) as jax_info:
        jax.device_put({"a": np.ones(3)}, target)
    assert message.startswith(str(jax_info.value))
