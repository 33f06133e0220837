"""The XLA backend: real XLA (through jaxlib) compiles the same StableHLO text.

It must offer the NumPy backend's interface (call on NumPy arrays, ``in_avals``,
``out_avals``, ``as_text()``), check its arguments (XLA itself would not), refuse a
JAX version it was not written for, and agree with the NumPy backend.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import minijax
import minijax.numpy as jnp
from minijax import lax
from minijax.compiler import lowering, numpy_backend, xla_backend

pytestmark = pytest.mark.skipif(not xla_backend.available(), reason="no usable JAX")


def _text(fun, *args) -> str:
    closed = minijax.make_jaxpr(fun)(*args)
    return lowering.lower_jaxpr(closed, module_name="jit_f", keep_unused=True)


def test_interface() -> None:
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    executable = xla_backend.compile(_text(lambda x: (jnp.sin(x).sum(0), x.T @ x), x))
    assert [a.str_short() for a in executable.in_avals] == ["f32[2,3]"]
    assert [a.str_short() for a in executable.out_avals] == ["f32[3]", "f32[3,3]"]
    total, gram = executable(x)
    assert type(total) is np.ndarray and type(gram) is np.ndarray
    # XLA's sin and NumPy's differ by an ulp or two (by CPU), and sin(1) + sin(4) cancels
    # to 0.085: compare at float32's precision of the summands, not of the small sum.
    np.testing.assert_allclose(total, np.sin(x).sum(0), rtol=2e-6, atol=2e-6)
    np.testing.assert_array_equal(gram, x.T @ x)  # exact: sums of products of small integers
    assert executable.as_text().startswith("HloModule jit_f")
    assert executable.cost_analysis()["flops"] > 0


def test_arguments_are_checked() -> None:
    executable = xla_backend.compile(_text(lambda x: x + 1.0, np.zeros(3, np.float32)))
    with pytest.raises(TypeError, match=r"expected an argument of type f32\[3\], got "
                                        r"float64\[3\]"):
        executable(np.zeros(3))
    with pytest.raises(TypeError, match="expected 1 arguments, got 2"):
        executable(np.zeros(3, np.float32), np.zeros(3, np.float32))


def test_lapack_custom_calls_run() -> None:
    a = np.array([[4.0, 2.0], [2.0, 3.0]], np.float32)
    executable = xla_backend.compile(_text(lambda a: lax.linalg.cholesky(a), a))
    np.testing.assert_allclose(executable(a)[0], np.linalg.cholesky(a), rtol=1e-6)


def test_nan_propagation_as_in_jax() -> None:
    """XLA's default options would let ``max`` drop NaNs; JAX's (and ours) do not."""
    x = np.array([np.nan, 1.0, -1.0], np.float32)
    executable = xla_backend.compile(_text(lambda x: lax.reduce_max(x, (0,)), x))
    assert np.isnan(executable(x)[0])


def test_refuses_other_jax_versions(monkeypatch: pytest.MonkeyPatch) -> None:
    import jax

    monkeypatch.setattr(jax, "__version__", "0.99.0")
    assert not xla_backend.available()
    with pytest.raises(RuntimeError, match="written for jax 0.10.x, found jax 0.99.0"):
        xla_backend.compile(_text(lambda x: x, np.zeros(1, np.float32)))


@settings(max_examples=25, deadline=None)
@given(hnp.arrays(np.float32, hnp.array_shapes(min_dims=1, max_dims=2, max_side=6),
                  elements=st.floats(-10, 10, width=32)))
def test_both_backends_agree(x: np.ndarray) -> None:
    def fun(x):
        y = jnp.tanh(x * 2.0 + 1.0) - jnp.exp(-x * x)
        return y.max(axis=-1), jnp.cumsum(y, axis=0), jnp.sort(x, axis=-1)

    text = _text(fun, x)
    ours = numpy_backend.compile(text)(x)
    theirs = xla_backend.compile(text)(x)
    for a, b in zip(ours, theirs):
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)
