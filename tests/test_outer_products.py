"""A ``dot_general`` without contracting dimensions (an outer product of each batch: the
weight gradient of a matrix product under ``vmap``) compiles to a broadcast multiply, which
gives the eager kernel's bits: one product per element, as a matmul with k = 1 does (real
floats; a complex product is left to BLAS)."""

from __future__ import annotations

import numpy as np
import pytest

import minijax as jax
from minijax import lax

NO_CONTRACTION = [
    ((3,), (4,), 0), ((2, 3), (4,), 0), ((3,), (), 0), ((), (), 0),
    ((5, 3), (5, 4), 1), ((5, 2, 3), (5, 4, 6), 1), ((2, 5, 3), (2, 5), 2),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
@pytest.mark.parametrize("lhs_shape, rhs_shape, batch", NO_CONTRACTION)
def test_outer_product_matches_the_eager_kernel_bit_for_bit(lhs_shape, rhs_shape, batch,
                                                           dtype):
    rng = np.random.default_rng(len(lhs_shape) + 3 * len(rhs_shape) + batch)
    a, b = (np.asarray(rng.standard_normal(s), dtype) for s in (lhs_shape, rhs_shape))
    dims = (((), ()), (tuple(range(batch)), tuple(range(batch))))

    def f(a, b):
        return lax.dot_general(a, b, dims)

    with jax.config.override("jax_enable_x64", dtype is np.float64):
        eager, compiled = np.asarray(f(a, b)), np.asarray(jax.jit(f)(a, b))
        source = jax.jit(f).lower(a, b).compile().as_text()
    assert compiled.dtype == eager.dtype and compiled.shape == eager.shape
    assert np.array_equal(compiled, eager)
    assert "matmul" not in source and "k_dot_general" not in source, source
