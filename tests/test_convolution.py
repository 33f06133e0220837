"""lax.conv_general_dilated (written with pad, slice and dot_general) against JAX's
convolution primitive: values eagerly and under jit, gradients, dimension numbers, errors."""

from __future__ import annotations

import numpy as np
import pytest

import minijax
from minijax import lax
from tests.oracle import tolerances

jax = pytest.importorskip("jax")

CASES = [
    dict(x=(2, 3, 7, 6), w=(4, 3, 3, 2), strides=(1, 1), padding="SAME"),
    dict(x=(2, 3, 7, 6), w=(4, 3, 3, 2), strides=(2, 1), padding="VALID"),
    dict(x=(2, 3, 7, 6), w=(4, 3, 3, 3), strides=(2, 2), padding=((1, 2), (0, 1)),
         lhs_dilation=(2, 1), rhs_dilation=(1, 2)),
    dict(x=(1, 6, 5, 5), w=(4, 3, 3, 3), strides=(1, 1), padding="SAME_LOWER",
         feature_group_count=2),
    dict(x=(2, 7, 6, 3), w=(3, 2, 3, 5), strides=(1, 1), padding="SAME",
         dimension_numbers=("NHWC", "HWIO", "NHWC")),
    dict(x=(2, 3, 9), w=(4, 3, 3), strides=(2,), padding="SAME"),
    dict(x=(2, 5, 6, 3), w=(3, 3, 3, 4), strides=(1, 2), padding="VALID",
         dimension_numbers=("NWHC", "HWIO", "NCWH")),
]


def _operands(case):
    rng = np.random.default_rng(0)
    case = dict(case)
    x = rng.normal(size=case.pop("x")).astype(np.float32)
    w = rng.normal(size=case.pop("w")).astype(np.float32)
    return x, w, case.pop("strides"), case.pop("padding"), case


@pytest.mark.parametrize("case", CASES)
def test_values_jit_and_grad(case):
    x, w, strides, padding, kwargs = _operands(case)
    rtol, atol = tolerances("float32")
    expected = jax.lax.conv_general_dilated(x, w, strides, padding, **kwargs)

    def ours(x, w):
        return lax.conv_general_dilated(x, w, strides, padding, **kwargs)

    for result in (ours(x, w), minijax.jit(ours)(x, w)):
        assert result.shape == expected.shape and result.dtype == expected.dtype
        np.testing.assert_allclose(np.asarray(result), np.asarray(expected),
                                   rtol=10 * rtol, atol=10 * atol)
    grads = minijax.grad(lambda x, w: (ours(x, w) ** 2).sum(), argnums=(0, 1))(x, w)
    expected_grads = jax.grad(
        lambda x, w: (jax.lax.conv_general_dilated(x, w, strides, padding, **kwargs) ** 2
                      ).sum(), argnums=(0, 1))(x, w)
    for got, want in zip(grads, expected_grads):
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-4, atol=1e-3)


def test_conv_and_dimension_numbers():
    x, w, *_ = _operands(CASES[0])
    np.testing.assert_allclose(np.asarray(lax.conv(x, w, (1, 1), "VALID")),
                               np.asarray(jax.lax.conv(x, w, (1, 1), "VALID")), rtol=1e-5,
                               atol=1e-5)
    for shapes, spec in [(((1, 5, 5, 3), (3, 3, 3, 2)), ("NHWC", "HWIO", "NHWC")),
                         (((1, 3, 5, 5), (2, 3, 3, 3)), None),
                         (((1, 5, 3, 5), (3, 2, 3, 3)), ("NWCH", "WOIH", "CNHW"))]:
        assert lax.conv_dimension_numbers(*shapes, spec) == tuple(
            jax.lax.conv_dimension_numbers(*shapes, spec))
    assert lax.padtype_to_pads((7, 6), (3, 2), (2, 1), "SAME") == [
        tuple(p) for p in jax.lax.padtype_to_pads((7, 6), (3, 2), (2, 1), "SAME")]


@pytest.mark.parametrize("make, error", [
    (lambda lax_, x, w: lax_.conv_general_dilated(x, w.astype(np.int32), (1, 1), "SAME"),
     TypeError),
    (lambda lax_, x, w: lax_.conv_general_dilated(x, w, (1,), "SAME"), ValueError),
    (lambda lax_, x, w: lax_.conv_general_dilated(x, w[0], (1, 1), "SAME"), TypeError),
    (lambda lax_, x, w: lax_.conv_general_dilated(x, w[:, :2], (1, 1), "SAME"), ValueError),
    (lambda lax_, x, w: lax_.conv_general_dilated(x, w, (1, 1), "FOO"), RuntimeError),
])
def test_errors(make, error):
    x, w = np.ones((1, 3, 5, 5), np.float32), np.ones((2, 3, 3, 3), np.float32)
    with pytest.raises(error) as theirs:
        make(jax.lax, x, w)
    with pytest.raises(error) as ours:
        make(lax, x, w)
    assert str(ours.value) == str(theirs.value)
