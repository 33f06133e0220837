"""Small pieces of JAX 0.10.2's API that real code uses, against JAX: ``jax.jacobian``,
``device_get``, ``effects_barrier``, ``jit(..., backend=)``, ``jnp.array(range(n))``,
``__version__``, ``config`` as an object (not a module) and XLA's ``log(exp(x)) = x``."""

from __future__ import annotations

import importlib
import warnings

import numpy as np
import pytest

import minijax
import minijax.numpy as mjnp

jax = pytest.importorskip("jax")
jnp = jax.numpy


def test_jacobian_is_jacrev():
    f = lambda x: mjnp.sin(x) * x  # noqa: E731
    x = np.array([0.5, 1.5], np.float32)
    np.testing.assert_allclose(np.asarray(minijax.jacobian(f)(x)),
                               np.asarray(jax.jacobian(lambda x: jnp.sin(x) * x)(x)),
                               rtol=1e-6)
    assert str(minijax.make_jaxpr(minijax.jacobian(f))(x)) == str(
        minijax.make_jaxpr(minijax.jacrev(f))(x))


@pytest.mark.parametrize("value", [lambda np_: np_.float32(1), lambda np_: np_.ones(2),
                                   lambda np_: {"a": np_.ones(1), "b": 3, "c": [np_.int32(2)]}])
def test_device_get(value):
    ours, theirs = minijax.device_get(value(mjnp)), jax.device_get(value(jnp))
    ours_leaves, theirs_leaves = minijax.tree.leaves(ours), jax.tree.leaves(theirs)
    assert [type(o) for o in ours_leaves] == [type(t) for t in theirs_leaves]
    for o, t in zip(ours_leaves, theirs_leaves):
        np.testing.assert_array_equal(o, t)
        assert np.asarray(o).dtype == np.asarray(t).dtype


def test_effects_barrier():
    y = minijax.jit(lambda x: x * 2)(np.arange(3.0))
    assert minijax.effects_barrier() is None and jax.effects_barrier() is None
    np.testing.assert_array_equal(np.asarray(y), [0.0, 2.0, 4.0])


def _warnings_of(fun):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fun()
    return [(w.category, str(w.message)) for w in caught]


def test_jit_backend_argument():
    ours = _warnings_of(lambda: minijax.jit(lambda x: x + 1, backend="cpu")(1.0))
    theirs = _warnings_of(lambda: jax.jit(lambda x: x + 1, backend="cpu")(1.0))
    assert ours == theirs and ours[0][0] is DeprecationWarning
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        assert float(minijax.jit(lambda x: x + 1, backend="cpu")(1.0)) == 2.0
        with pytest.raises(RuntimeError, match="Unknown backend tpuz. Available backends are"):
            jax.jit(lambda x: x, backend="tpuz")(1.0)
        with pytest.raises(RuntimeError, match="Unknown backend tpuz. Available backends are"):
            minijax.jit(lambda x: x, backend="tpuz")(1.0)


@pytest.mark.parametrize("make", [lambda np_: np_.array(range(5)),
                                  lambda np_: np_.array(range(2, 10, 3)),
                                  lambda np_: np_.array(range(0)),
                                  lambda np_: np_.asarray(range(3), dtype=np_.float32),
                                  lambda np_: np_.array([range(2), range(2)])])
def test_array_from_range(make):
    ours, theirs = make(mjnp), make(jnp)
    assert ours.dtype == theirs.dtype and ours.weak_type == theirs.weak_type
    np.testing.assert_array_equal(np.asarray(ours), np.asarray(theirs))


def test_version_mirrors_jax():
    assert minijax.__version__ == jax.__version__ == "0.10.2"


def test_config_is_an_object_not_a_module():
    with pytest.raises(ModuleNotFoundError, match="No module named 'jax.config'"):
        importlib.import_module("jax.config")
    with pytest.raises(ModuleNotFoundError, match="No module named 'minijax.config'"):
        importlib.import_module("minijax.config")
    assert minijax.config.jax_enable_x64 is jax.config.jax_enable_x64 is False
    minijax.config.update("jax_enable_x64", True)
    try:
        assert minijax.config.jax_enable_x64 and mjnp.ones(1).dtype == np.float64
    finally:
        minijax.config.update("jax_enable_x64", False)
    assert mjnp.ones(1).dtype == np.float32


@pytest.mark.parametrize("value", [np.float32(100.0), np.array([100.0, -200.0, np.inf,
                                                                 -np.inf, np.nan], np.float32),
                                   np.float16(100.0), np.complex64(1 + 10j),
                                   np.array([100.0], jnp.bfloat16)])
def test_jit_simplifies_log_of_exp_as_xla_does(value):
    """XLA rewrites log(exp(x)) to x for real floats (not complex, and not bfloat16 on the
    CPU): under jit, exp(100.) no longer overflows. Eagerly, both give inf."""
    ours = minijax.jit(lambda x: mjnp.log(mjnp.exp(x)))(value)
    theirs = jax.jit(lambda x: jnp.log(jnp.exp(x)))(value)
    assert ours.dtype == theirs.dtype
    np.testing.assert_array_equal(np.asarray(ours).astype(np.complex128),
                                  np.asarray(theirs).astype(np.complex128))
    eager_ours, eager_theirs = mjnp.log(mjnp.exp(100.0)), jnp.log(jnp.exp(100.0))
    assert float(eager_ours) == float(eager_theirs) == np.inf
