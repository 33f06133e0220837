"""``jit`` keys a call whose leaves are NumPy arrays by their shapes and dtypes on its fast
path, as it keys minijax arrays by their types: a training step fed NumPy batches finds its
program with one dictionary lookup, and a new dtype or shape still traces again."""

from __future__ import annotations

import numpy as np

import minijax as jax
import minijax.numpy as jnp
from minijax.compiler.jit import Jitted


def _counting_general_path(monkeypatch) -> list[int]:
    calls: list[int] = []
    general = Jitted._call

    def counted(self, args, kwargs):
        calls.append(1)
        return general(self, args, kwargs)

    monkeypatch.setattr(Jitted, "_call", counted)
    return calls


def test_numpy_leaves_take_the_fast_path_after_the_first_call(monkeypatch):
    traces: list[int] = []

    @jax.jit
    def step(params, x):
        traces.append(1)
        return jnp.tanh(x @ params["w"] + params["b"])

    params = {"w": np.ones((3, 2), np.float32), "b": np.zeros(2, np.float32)}
    x = np.arange(12, dtype=np.float32).reshape(4, 3) / 10
    general = _counting_general_path(monkeypatch)
    first = step(params, x)
    second = step(params, x + 1)
    assert len(traces) == 1 and len(general) == 1  # the second call: one lookup
    np.testing.assert_array_equal(np.asarray(second), np.tanh((x + 1) @ params["w"]))
    np.testing.assert_array_equal(np.asarray(first), np.asarray(jnp.tanh(x @ params["w"])))


def test_a_new_dtype_or_shape_of_a_numpy_leaf_traces_again():
    traces: list[int] = []

    @jax.jit
    def double(x):
        traces.append(1)
        return x * 2

    assert double(np.ones(3, np.float32)).dtype == jnp.float32
    assert double(np.ones(3, np.int32)).dtype == jnp.int32
    assert double(np.ones(4, np.int32)).shape == (4,)
    assert double(np.ones(4, np.int32)).shape == (4,)
    assert len(traces) == 3


def test_numpy_and_minijax_arrays_of_one_type_share_a_trace():
    traces: list[int] = []

    @jax.jit
    def add(a, b):
        traces.append(1)
        return a + b

    a = np.ones(2, np.float32)
    add(a, a)
    add(jnp.asarray(a), a)
    add(a, a)
    assert len(traces) == 1
