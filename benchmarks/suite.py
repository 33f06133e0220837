"""The broad benchmark: programs the mini-XLA was not tuned for, side by side in one process.

    OPENBLAS_NUM_THREADS=1 python benchmarks/suite.py [--rounds N] [name ...]

Every row times its candidates in interleaved rounds (``paired.py``) and prints each one's
median time and the median of its per-round ratio to the row's baseline:

* jitted workloads (``workloads.py``): hand-written NumPy (baseline), minijax jit, jax.jit;
  ``[numpy in]`` rows pass NumPy arrays instead of arrays already on the device;
* the MLP step's peak memory, minijax vs NumPy (``tracemalloc``);
* eager small ops: JAX's eager dispatch (baseline), minijax, NumPy;
* eager control flow: the same loop under minijax's jit (baseline), minijax eager, and
  JAX eager and jitted for comparison.

The issue's targets: jitted workloads <= 1.10x NumPy, peak memory <= 1.2x NumPy, eager
small ops <= 1.0x JAX, eager control flow <= 2x jit. Names on the command line keep only
the rows whose label contains one of them. Nothing here asserts: the numbers are for reading.
"""

from __future__ import annotations

import argparse
import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # before NumPy loads BLAS

from collections.abc import Callable  # noqa: E402
from functools import partial  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402
import workloads as w  # noqa: E402  (benchmarks/workloads.py, beside this script)
from paired import interleaved, peak_bytes, print_row  # noqa: E402

import minijax  # noqa: E402
import minijax.numpy as mjnp  # noqa: E402
from minijax import lax as mlax  # noqa: E402

try:
    import jax
    import jax.numpy as jjnp
    from jax import lax as jlax
except ImportError:
    jax = None


class Suite:
    """Runs the rows whose label matches the command line."""

    def __init__(self, names: list[str], rounds: int) -> None:
        self.names = names
        self.rounds = rounds

    def wanted(self, label: str) -> bool:
        return not self.names or any(n in label for n in self.names)

    def row(self, label: str, candidates: dict[str, Callable[[], Any]]) -> None:
        if self.wanted(label):
            print_row(label, interleaved(candidates, self.rounds))


def check_close(ours: Any, reference: Any, rtol: float = 2e-4, atol: float = 1e-5) -> None:
    """The candidates compute the same thing (before anything is timed)."""
    a, b = minijax.tree_util.tree_leaves(ours), minijax.tree_util.tree_leaves(reference)
    assert len(a) == len(b)
    for x, y in zip(a, b):
        np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=rtol, atol=atol)


def waiting(wait: Callable, fun: Callable, args: tuple) -> Callable[[], Any]:
    """A call of ``fun(*args)`` that waits for its results."""
    return lambda: wait(fun(*args))


def jitted(suite: Suite, label: str, make: Callable[[Any, Any], Callable], numpy_fn: Callable,
           args: tuple, numpy_inputs: bool = False) -> None:
    """A row: ``numpy_fn(*args)`` against ``make(jnp, lax)`` under minijax's and JAX's jit."""
    if not suite.wanted(label):
        return
    mini = minijax.jit(make(mjnp, mlax))
    margs = args if numpy_inputs else minijax.device_put(args)
    candidates = {"numpy": partial(numpy_fn, *args),
                  "minijax": waiting(minijax.block_until_ready, mini, margs)}
    check_close(candidates["minijax"](), candidates["numpy"]())
    if jax is not None:
        fast = jax.jit(make(jjnp, jlax))
        jargs = args if numpy_inputs else jax.device_put(args)
        candidates["jax"] = waiting(jax.block_until_ready, fast, jargs)
    suite.row(label, candidates)


def mlp_rows(suite: Suite) -> None:
    for act in ("relu", "tanh", "gelu"):
        for batch in (8, 128, 1024):
            args = w.mlp_example(batch)
            make = lambda jnp, lax, act=act: w.mlp_step_for(
                jnp, (minijax if jnp is mjnp else jax).value_and_grad, act)
            numpy_fn = partial(w.numpy_mlp_step, act)
            jitted(suite, f"mlp {act} batch {batch}", make, numpy_fn, args)
            if batch == 8:
                jitted(suite, f"mlp {act} batch {batch} [numpy in]", make, numpy_fn, args,
                       numpy_inputs=True)


def per_example_rows(suite: Suite) -> None:
    make = lambda jnp, lax: w.per_example_grads_for(
        jnp, *((minijax.grad, minijax.vmap) if jnp is mjnp else (jax.grad, jax.vmap)))
    for batch in (16, 128):
        jitted(suite, f"per-example grads, mlp batch {batch}", make,
               w.numpy_per_example_grads, w.per_example_example(batch))


def loop_rows(suite: Suite) -> None:
    params, xs = w.rnn_example()
    jitted(suite, "scan rnn forward",
           lambda jnp, lax: w.rnn_loss_for(jnp, lax.scan), w.numpy_rnn_loss, (params, xs))
    jitted(suite, "scan rnn value_and_grad",
           lambda jnp, lax: (minijax if jnp is mjnp else jax).value_and_grad(
               w.rnn_loss_for(jnp, lax.scan)),
           w.numpy_rnn_value_and_grad, (params, xs))
    x = w.loop_example()
    jitted(suite, "fori_loop euler x1000", lambda jnp, lax: w.euler_for(lax.fori_loop, jnp),
           w.numpy_euler, (x,))
    jitted(suite, "while_loop newton x1000", lambda jnp, lax: w.newton_for(lax.while_loop),
           w.numpy_newton, (x,))
    jitted(suite, "attention", lambda jnp, lax: w.attention_for(jnp), w.numpy_attention,
           w.attention_example())


def memory_rows(suite: Suite) -> None:
    for act in ("relu", "tanh", "gelu"):
        label = f"peak memory, mlp {act} batch 1024"
        if not suite.wanted(label):
            continue
        args = w.mlp_example(1024)
        step = minijax.jit(w.mlp_step_for(mjnp, minijax.value_and_grad, act))
        ours = peak_bytes(waiting(minijax.block_until_ready, step, minijax.device_put(args)))
        numpy_peak = peak_bytes(partial(w.numpy_mlp_step, act, *args))
        print(f"{label:<34s} numpy {numpy_peak / 1e6:.2f} MB | minijax {ours / 1e6:.2f} MB "
              f"({ours / numpy_peak:.2f}x)")


# name -> op(jnp, x, y, i) on a 16x16 float32 ``x``, its reverse ``y`` and an index ``i``
SMALL_OPS: dict[str, Callable] = {
    "x[i]": lambda jnp, x, y, i: x[i],
    "x[2:10]": lambda jnp, x, y, i: x[2:10],
    "x.at[i].set(1.0)": lambda jnp, x, y, i: x.at[i].set(1.0),
    "dot 16x16": lambda jnp, x, y, i: jnp.dot(x, y),
    "mean(x, axis=0)": lambda jnp, x, y, i: jnp.mean(x, axis=0),
    "x.astype(int32)": lambda jnp, x, y, i: x.astype(jnp.int32),
    "where(x > 0, x, y)": lambda jnp, x, y, i: jnp.where(x > 0, x, y),
    "x.reshape(8, 32)": lambda jnp, x, y, i: x.reshape(8, 32),
    "x < y": lambda jnp, x, y, i: x < y,
}


def numpy_at_set(x: np.ndarray, i: int) -> np.ndarray:
    out = x.copy()
    out[i] = 1.0
    return out


def eager_op_rows(suite: Suite) -> None:
    data = np.linspace(-1.0, 1.0, 256, dtype=np.float32).reshape(16, 16)
    libraries = {"minijax": (mjnp, mjnp.asarray, minijax.block_until_ready)}
    if jax is not None:
        libraries = {"jax": (jjnp, jjnp.asarray, jax.block_until_ready), **libraries}
    for label, op in SMALL_OPS.items():
        candidates = {}
        for name, (jnp, make, wait) in libraries.items():
            candidates[name] = waiting(wait, op, (jnp, make(data), make(data[::-1].copy()), 3))
        candidates["numpy"] = partial(numpy_at_set, data, 3) if "at[" in label else \
            partial(op, np, data, data[::-1].copy(), 3)
        suite.row(f"eager {label}", candidates)


def eager_loops(jnp: Any, lax: Any) -> dict[str, tuple[Callable, tuple]]:
    """name -> (loop, arguments) of 100 iterations on small arrays."""
    x = w.loop_example()
    xs = np.linspace(0.0, 1.0, 100 * w.LOOP_SIZE, dtype=np.float32).reshape(100, -1)

    body = lambda c, x: (0.9 * c + jnp.sin(x), c)  # made once: eager JAX caches the loop
    return {"scan x100": (lambda c, xs: lax.scan(body, c, xs), (x, xs)),
            "while_loop newton x100": (w.newton_for(lax.while_loop, 100), (x,)),
            "fori_loop euler x100": (w.euler_for(lax.fori_loop, jnp, 100), (x,))}


def eager_loop_rows(suite: Suite) -> None:
    ours = eager_loops(mjnp, mlax)
    theirs = eager_loops(jjnp, jlax) if jax is not None else {}
    for name, (loop, args) in ours.items():
        margs = minijax.device_put(args)
        candidates = {"minijax jit": waiting(minijax.block_until_ready, minijax.jit(loop), margs),
                      "minijax eager": waiting(minijax.block_until_ready, loop, margs)}
        check_close(candidates["minijax eager"](), candidates["minijax jit"]())
        if name in theirs:
            jloop, jargs = theirs[name][0], jax.device_put(args)
            candidates["jax jit"] = waiting(jax.block_until_ready, jax.jit(jloop), jargs)
            candidates["jax eager"] = waiting(jax.block_until_ready, jloop, jargs)
        suite.row(f"eager {name}", candidates)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("names", nargs="*", help="keep the rows whose label contains these")
    parser.add_argument("--rounds", type=int, default=21)
    options = parser.parse_args()
    suite = Suite(options.names, options.rounds)
    print(f"median of {options.rounds} interleaved rounds; (x) = ratio to the first column, "
          f"paired per round; OPENBLAS_NUM_THREADS={os.environ['OPENBLAS_NUM_THREADS']}")
    mlp_rows(suite)
    per_example_rows(suite)
    loop_rows(suite)
    memory_rows(suite)
    eager_op_rows(suite)
    eager_loop_rows(suite)


if __name__ == "__main__":
    main()
