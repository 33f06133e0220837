"""minijax.nn against JAX 0.10.2: the same values, dtypes and printed jaxprs.

The activations are compared on a grid that includes the kinks (0, 6) and large
magnitudes (where a naive softplus or softmax would overflow); the initializers that draw
uniform numbers are compared bit for bit, the normal ones to the dtype's tolerance (see
tests/test_random.py for why erf_inv's last bits may differ).
"""

from __future__ import annotations

import numpy as np
import pytest

import minijax
from minijax import nn
from tests.oracle import tolerances

jax = pytest.importorskip("jax")

X = np.array([[-100.0, -6.0, -1.5, 0.0], [0.5, 3.0, 6.0, 100.0]], np.float32)

ACTIVATIONS = {
    "relu": lambda m: m.relu,
    "relu6": lambda m: m.relu6,
    "sigmoid": lambda m: m.sigmoid,
    "softplus": lambda m: m.softplus,
    "log_sigmoid": lambda m: m.log_sigmoid,
    "gelu": lambda m: m.gelu,
    "gelu_exact": lambda m: (lambda x: m.gelu(x, approximate=False)),
    "silu": lambda m: m.silu,
    "swish": lambda m: m.swish,
    "leaky_relu": lambda m: m.leaky_relu,
    "elu": lambda m: m.elu,
    "tanh": lambda m: m.tanh,
    "softmax": lambda m: m.softmax,
    "softmax_axis0": lambda m: (lambda x: m.softmax(x, axis=0)),
    "softmax_where": lambda m: (lambda x: m.softmax(x, where=x > -2)),
    "log_softmax": lambda m: m.log_softmax,
    "log_softmax_axis0": lambda m: (lambda x: m.log_softmax(x, axis=0)),
    "log_softmax_where": lambda m: (lambda x: m.log_softmax(x, where=x > -2)),
    "logsumexp": lambda m: m.logsumexp,
    "logsumexp_axis": lambda m: (lambda x: m.logsumexp(x, axis=1, keepdims=True)),
}


def _namespaces(module):
    return (minijax, nn) if module == "minijax" else (jax, jax.nn)


def _assert_close(ours, theirs, dtype="float32"):
    ours, theirs = np.asarray(ours), np.asarray(theirs)
    assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
    rtol, atol = tolerances(dtype)
    np.testing.assert_allclose(ours, theirs, rtol=rtol, atol=atol)


@pytest.mark.parametrize("name", ACTIVATIONS)
def test_activation_values_and_jaxprs(name):
    ours_fun, theirs_fun = ACTIVATIONS[name](nn), ACTIVATIONS[name](jax.nn)
    _assert_close(ours_fun(X), theirs_fun(X))
    _assert_close(minijax.jit(ours_fun)(X), theirs_fun(X))
    assert str(minijax.make_jaxpr(ours_fun)(X)) == str(jax.make_jaxpr(theirs_fun)(X))


# Gradient jaxprs of these print differently: where JAX's partial evaluation of a nested
# jit keeps a residual that is all zeros, minijax's drops it (an engine difference, not
# one of minijax.nn); their gradient values are still compared.
GRAD_JAXPR_DIFFERS = {"softplus", "elu", "log_softmax"}


@pytest.mark.parametrize("name", ["relu", "relu6", "softplus", "gelu", "silu", "elu",
                                  "log_softmax", "logsumexp", "sigmoid"])
def test_gradients(name):
    """Derivatives (relu's at its kink is 0, a custom_jvp rule) and their jaxprs."""
    def loss(m, lib):
        return lambda x: lib.numpy.sum(ACTIVATIONS[name](m)(x) * X)
    ours, theirs = minijax.grad(loss(nn, minijax)), jax.grad(loss(jax.nn, jax))
    _assert_close(ours(X), theirs(X))
    if name not in GRAD_JAXPR_DIFFERS:
        assert str(minijax.make_jaxpr(ours)(X)) == str(jax.make_jaxpr(theirs)(X))


def test_weak_types_and_dtypes():
    for dtype in ("float16", "bfloat16", "float32"):
        x = X.astype(dtype)
        for name in ("relu", "gelu", "softplus", "softmax"):
            ours, theirs = ACTIVATIONS[name](nn)(x), ACTIVATIONS[name](jax.nn)(x)
            assert ours.dtype == theirs.dtype and ours.weak_type == theirs.weak_type
    assert nn.relu(3.0).weak_type == jax.nn.relu(3.0).weak_type
    assert nn.relu(3).dtype == jax.nn.relu(3).dtype


@pytest.mark.parametrize("labels, num_classes, kwargs", [
    (np.array([0, 2, 1]), 3, {}),
    (np.array([[0, 2], [1, 3]]), 4, {"axis": 0}),
    (np.array([0, 5, -1]), 4, {"dtype": np.int32}),
    (np.array([1, 0]), 2, {"dtype": np.bool_}),
])
def test_one_hot(labels, num_classes, kwargs):
    ours = nn.one_hot(labels, num_classes, **kwargs)
    theirs = jax.nn.one_hot(labels, num_classes, **kwargs)
    assert ours.dtype == theirs.dtype
    np.testing.assert_array_equal(np.asarray(ours), np.asarray(theirs))
    ours_jaxpr = minijax.make_jaxpr(lambda i: nn.one_hot(i, num_classes, **kwargs))(labels)
    theirs_jaxpr = jax.make_jaxpr(lambda i: jax.nn.one_hot(i, num_classes, **kwargs))(labels)
    assert str(ours_jaxpr) == str(theirs_jaxpr)


UNIFORM_INITS = ["glorot_uniform", "he_uniform", "lecun_uniform", "xavier_uniform",
                 "kaiming_uniform"]
NORMAL_INITS = ["glorot_normal", "he_normal", "lecun_normal", "xavier_normal",
                "kaiming_normal"]


@pytest.mark.parametrize("shape", [(3, 4), (2, 3, 5), (3, 3, 2, 8)])
def test_variance_scaling_initializers(shape):
    ours_init, theirs_init = nn.initializers, jax.nn.initializers
    for name in UNIFORM_INITS + NORMAL_INITS:
        ours = getattr(ours_init, name)()(minijax.random.PRNGKey(0), shape)
        theirs = getattr(theirs_init, name)()(jax.random.PRNGKey(0), shape)
        if name in UNIFORM_INITS:
            np.testing.assert_array_equal(np.asarray(ours).view(np.uint32),
                                          np.asarray(theirs).view(np.uint32))
        else:
            _assert_close(ours, theirs)
    ours = ours_init.variance_scaling(0.5, "fan_out", "normal", in_axis=0, out_axis=1)
    theirs = theirs_init.variance_scaling(0.5, "fan_out", "normal", in_axis=0, out_axis=1)
    _assert_close(ours(minijax.random.PRNGKey(1), shape), theirs(jax.random.PRNGKey(1), shape))


def test_simple_initializers():
    ours_init, theirs_init = nn.initializers, jax.nn.initializers
    key_ours, key_theirs = minijax.random.PRNGKey(4), jax.random.PRNGKey(4)
    for make in [lambda m: m.zeros, lambda m: m.ones, lambda m: m.constant(-2.5),
                 lambda m: m.uniform(), lambda m: m.uniform(3.0)]:
        ours, theirs = make(ours_init)(key_ours, (2, 3)), make(theirs_init)(key_theirs, (2, 3))
        assert ours.dtype == theirs.dtype
        np.testing.assert_array_equal(np.asarray(ours), np.asarray(theirs))
    for make in [lambda m: m.normal(), lambda m: m.truncated_normal(0.5)]:
        _assert_close(make(ours_init)(key_ours, (2, 3)), make(theirs_init)(key_theirs, (2, 3)))
    assert ours_init.zeros(key_ours, (2,), np.int32).dtype == np.int32


def test_initializer_errors():
    """Bad modes and shapes are reported when the initializer is called, as in JAX."""
    for module, key in ((nn.initializers, minijax.random.PRNGKey(0)),
                        (jax.nn.initializers, jax.random.PRNGKey(0))):
        with pytest.raises(ValueError, match="invalid mode for variance scaling"):
            module.variance_scaling(1.0, "fan_sideways", "normal")(key, (2, 3))
        with pytest.raises(ValueError, match="invalid distribution for variance scaling"):
            module.variance_scaling(1.0, "fan_in", "cauchy")(key, (2, 3))
        with pytest.raises(ValueError, match="1-dimensional weights tensor with default"):
            module.glorot_uniform()(key, (3,))
