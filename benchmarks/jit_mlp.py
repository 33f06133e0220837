"""jit, side by side: an MLP training step as minijax jit, hand-written NumPy and jax.jit.

    OPENBLAS_NUM_THREADS=1 python benchmarks/jit_mlp.py

The step is ``value_and_grad`` of a 784-256-10 MLP's cross-entropy loss, on a batch of
128 float32 examples. Printed, one line each:

* the step time (median) for minijax jit, hand-written NumPy (the same arithmetic,
  written by hand) and jax.jit;
* the first call of a new jitted function (trace, lower, compile, run), minijax vs JAX;
* the call overhead of a small jitted function (16-element add);
* the step's peak memory (Python's ``tracemalloc``), minijax vs NumPy.

The issue's targets: step <= 1.10x NumPy; first call <= 0.1x JAX's; call overhead <=
JAX's; peak memory <= 1.2x NumPy's. Nothing here asserts: the numbers are for reading.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # before NumPy loads BLAS

import time  # noqa: E402
from collections.abc import Callable  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402
from mlp import (  # noqa: E402  (benchmarks/mlp.py, beside this script)
    BATCH,
    CLASSES,
    HIDDEN,
    INPUTS,
    example,
    loss_for,
    numpy_value_and_grad,
)
from paired import peak_bytes  # noqa: E402  (benchmarks/paired.py)


def median_microseconds(step: Callable[[], Any], repeats: int = 200) -> float:
    for _ in range(10):
        step()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    return float(np.median(times)) * 1e6


def main() -> None:
    import minijax
    import minijax.numpy as mjnp
    from minijax.compiler import lowering, numpy_backend  # noqa: F401  (imported, not timed)

    params, x, y = example()
    results: dict[str, float] = {}

    # -- the step ------------------------------------------------------------------
    mini_step = minijax.jit(minijax.value_and_grad(loss_for(mjnp)))
    mparams, mx, my = minijax.device_put((params, x, y))
    run_mini = lambda: minijax.block_until_ready(mini_step(mparams, mx, my))
    ours, theirs = run_mini(), numpy_value_and_grad(params, x, y)
    np.testing.assert_allclose(np.asarray(ours[0]), theirs[0], rtol=1e-5)
    for a, b in zip(ours[1], theirs[1]):
        np.testing.assert_allclose(np.asarray(a), b, rtol=1e-4, atol=1e-6)
    results["minijax"] = median_microseconds(run_mini)
    results["numpy"] = median_microseconds(lambda: numpy_value_and_grad(params, x, y))
    try:
        import jax
        import jax.numpy as jjnp
    except ImportError:
        jax = None
    if jax is not None:
        jax_step = jax.jit(jax.value_and_grad(loss_for(jjnp)))
        jparams, jx, jy = jax.device_put((params, x, y))
        results["jax"] = median_microseconds(
            lambda: jax.block_until_ready(jax_step(jparams, jx, jy)))
    print(f"MLP value_and_grad step ({INPUTS}-{HIDDEN}-{CLASSES}, batch {BATCH}, float32), "
          "median:")
    for name, micros in results.items():
        print(f"  {name:8s} {micros:8.0f} us   ({micros / results['numpy']:.2f}x numpy)")

    # -- the first call ------------------------------------------------------------
    def first_call(jit: Callable, grad: Callable, jnp: Any, args: tuple,
                   wait: Callable) -> float:
        fresh = jit(grad(loss_for(jnp)))  # a new function: nothing cached
        start = time.perf_counter()
        wait(fresh(*args))
        return (time.perf_counter() - start) * 1e3

    mini_first = min(first_call(minijax.jit, minijax.value_and_grad, mjnp, (mparams, mx, my),
                                minijax.block_until_ready) for _ in range(3))
    print(f"first call (trace, lower, compile, run): minijax {mini_first:.0f} ms", end="")
    if jax is not None:
        jax_first = min(first_call(jax.jit, jax.value_and_grad, jjnp, (jparams, jx, jy),
                                   jax.block_until_ready) for _ in range(3))
        print(f", jax {jax_first:.0f} ms ({mini_first / jax_first:.2f}x)")
    else:
        print()

    # -- call overhead -------------------------------------------------------------
    mini_add = minijax.jit(lambda a, b: a + b)
    ma = mjnp.ones(16)
    overhead = median_microseconds(lambda: mini_add(ma, ma).block_until_ready(), 2000)
    line = f"call overhead (16-element add): minijax {overhead:.1f} us"
    if jax is not None:
        jax_add = jax.jit(lambda a, b: a + b)
        ja = jjnp.ones(16)
        overhead = median_microseconds(lambda: jax_add(ja, ja).block_until_ready(), 2000)
        line += f", jax {overhead:.1f} us"
    print(line)

    # -- peak memory ---------------------------------------------------------------
    ours_peak = peak_bytes(run_mini)
    numpy_peak = peak_bytes(lambda: numpy_value_and_grad(params, x, y))
    print(f"peak memory of a step: minijax {ours_peak / 1e6:.2f} MB, numpy "
          f"{numpy_peak / 1e6:.2f} MB ({ours_peak / numpy_peak:.2f}x)")


if __name__ == "__main__":
    main()
