"""Eager overhead: microseconds per small operation, minijax vs NumPy vs JAX, in one run.

    python benchmarks/eager_ops.py

Each operation runs on 16-element float32 arrays, many times in a loop; minijax and JAX
wait for the last result, so the time includes the computation, not only the dispatch.
Then "import + first op" is measured in fresh processes. Nothing here asserts: the
numbers are printed side by side so that a reader can see the ratios on this machine.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable

import numpy as np

REPEATS = 5
LOOP = 5_000

OPERATIONS: dict[str, Callable] = {
    "add": lambda np_, x, y: x + y,
    "sin": lambda np_, x, y: np_.sin(x),
    "sum": lambda np_, x, y: np_.sum(x),
    "index": lambda np_, x, y: x[3],
    "x * 2.0": lambda np_, x, y: x * 2.0,
}


def per_op_microseconds(op: Callable, np_: object, x: object, y: object, wait: Callable) -> float:
    """Best of REPEATS loops of LOOP calls, waiting for the last result."""
    best = float("inf")
    wait(op(np_, x, y))
    for _ in range(REPEATS):
        start = time.perf_counter()
        for _ in range(LOOP):
            result = op(np_, x, y)
        wait(result)
        best = min(best, (time.perf_counter() - start) / LOOP)
    return best * 1e6


def libraries() -> dict[str, tuple[object, Callable, Callable]]:
    """name -> (numpy-like module, array maker, wait function)."""
    import minijax.numpy as mjnp

    found = {
        "numpy": (np, lambda a: a, lambda r: r),
        "minijax": (mjnp, mjnp.asarray, lambda r: r.block_until_ready()),
    }
    try:
        import jax.numpy as jjnp
    except ImportError:
        return found
    found["jax"] = (jjnp, jjnp.asarray, lambda r: r.block_until_ready())
    return found


IMPORT_SNIPPET = """
import time
start = time.perf_counter()
import {module} as jnp
jnp.ones(16).__add__(1.0).block_until_ready()
print(time.perf_counter() - start)
"""


def import_seconds(module: str) -> float:
    runs = [
        float(subprocess.run([sys.executable, "-c", IMPORT_SNIPPET.format(module=module)],
                             capture_output=True, text=True, check=True).stdout)
        for _ in range(3)
    ]
    return min(runs)


def main() -> None:
    data = np.linspace(-1.0, 1.0, 16, dtype=np.float32)
    libs = libraries()
    print(f"{'operation':<10}" + "".join(f"{name:>12}" for name in libs) + "   minijax/jax")
    for label, op in OPERATIONS.items():
        times = {
            name: per_op_microseconds(op, module, make(data), make(data[::-1].copy()), wait)
            for name, (module, make, wait) in libs.items()
        }
        ratio = f"{times['minijax'] / times['jax']:>12.2f}" if "jax" in times else ""
        print(f"{label:<10}" + "".join(f"{t:>10.2f}us" for t in times.values()) + ratio)
    print()
    for module in ("minijax.numpy", "jax.numpy"):
        if module.split(".")[0] in libs or module.startswith("minijax"):
            print(f"import {module} + first op: {import_seconds(module):.3f} s")


if __name__ == "__main__":
    main()
