"""The cheap-gradient principle, measured: value_and_grad time over forward time for an MLP.

    python benchmarks/mlp_grad.py

Reverse-mode AD promises that a gradient (value included) costs a small constant times the
function, however many parameters there are (chapter 05). This script measures that constant
for a 784-256-10 perceptron (tanh hidden layer, softmax cross-entropy loss) on a batch of 128
float32 examples, side by side in one run:

* minijax, eager (every primitive dispatched from Python), and jitted if ``minijax.jit``
  exists;
* NumPy, forward pass and hand-written backward pass, as a careful programmer writes them;
* JAX, op by op and jitted.

Each row prints the median time of the loss, of ``value_and_grad``, and their ratio; the
target for minijax is a ratio <= 3.0. The two calls are timed alternately, so that a change
in the machine's load affects both. Nothing here asserts: the numbers are for reading.
BLAS runs on one thread, so that matrix products do not compete with minijax's worker
thread for cores.
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

ROUNDS = 60
TARGET = 3.0


def median_pair(forward: Callable[[], Any], gradient: Callable[[], Any]) -> tuple[float, float]:
    """Median microseconds of ``forward()`` and ``gradient()``, timed alternately."""
    for _ in range(5):
        forward(), gradient()
    times: tuple[list[float], list[float]] = ([], [])
    for _ in range(ROUNDS):
        for fun, record in ((forward, times[0]), (gradient, times[1])):
            start = time.perf_counter()
            fun()
            record.append(time.perf_counter() - start)
    return float(np.median(times[0])) * 1e6, float(np.median(times[1])) * 1e6


def minijax_rows(params: tuple, images: np.ndarray, labels: np.ndarray) -> dict:
    import minijax
    import minijax.numpy as mjnp

    loss = loss_for(mjnp)
    args = minijax.device_put((params, images, labels))
    wait = minijax.block_until_ready
    reference = numpy_value_and_grad(params, images, labels)
    value, grads = minijax.value_and_grad(loss)(*args)
    worst = max(float(np.max(np.abs(np.asarray(g) - r))) for g, r in zip(grads, reference[1]))
    print(f"minijax's gradient differs from the hand-written one by at most {worst:.1e}; "
          f"loss {float(value):.6f} vs {reference[0]:.6f}")
    rows = {"minijax eager": median_pair(lambda: wait(loss(*args)),
                                         lambda: wait(minijax.value_and_grad(loss)(*args)))}
    if hasattr(minijax, "jit"):
        jit_loss, jit_grad = minijax.jit(loss), minijax.jit(minijax.value_and_grad(loss))
        rows["minijax jit"] = median_pair(lambda: wait(jit_loss(*args)),
                                          lambda: wait(jit_grad(*args)))
    return rows


def jax_rows(params: tuple, images: np.ndarray, labels: np.ndarray) -> dict:
    try:
        import jax
        import jax.numpy as jjnp
    except ImportError:
        return {}
    loss = loss_for(jjnp)
    args = jax.device_put((params, images, labels))
    wait = jax.block_until_ready
    jit_loss, jit_grad = jax.jit(loss), jax.jit(jax.value_and_grad(loss))
    return {
        "jax op by op": median_pair(lambda: wait(loss(*args)),
                                    lambda: wait(jax.value_and_grad(loss)(*args))),
        "jax jit": median_pair(lambda: wait(jit_loss(*args)), lambda: wait(jit_grad(*args))),
    }


def main() -> None:
    params, images, labels = example()
    numpy_loss = loss_for(np)
    rows = minijax_rows(params, images, labels)
    rows["numpy by hand"] = median_pair(lambda: numpy_loss(params, images, labels),
                                        lambda: numpy_value_and_grad(params, images, labels))
    rows.update(jax_rows(params, images, labels))
    print(f"\nMLP {INPUTS}-{HIDDEN}-{CLASSES}, batch {BATCH}, float32, softmax cross-entropy; "
          f"median of {ROUNDS} alternating calls")
    print(f"{'':15s} {'loss (us)':>10s} {'value_and_grad (us)':>20s} {'ratio':>7s}")
    for name, (forward, gradient) in rows.items():
        print(f"{name:15s} {forward:10.0f} {gradient:20.0f} {gradient / forward:7.2f}")
    print(f"target for minijax: ratio <= {TARGET}")


if __name__ == "__main__":
    main()
