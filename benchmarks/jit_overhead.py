"""The cost of calling a small jitted function: minijax vs JAX, side by side.

    OPENBLAS_NUM_THREADS=1 python benchmarks/jit_overhead.py

With the cache warm, ``jit(f)(x)`` should cost little more than a dictionary lookup and
putting one job on the device's queue. Each function runs on a 16-element float32 array
many times in a loop, and the time includes waiting for the last result, so it counts
the work of the device's worker too. A second table shows the first call of a new
signature (trace, lower, compile). Nothing here asserts: the numbers are for reading.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

REPEATS = 5
LOOP = 5_000

FUNCTIONS: dict[str, Callable] = {
    "x + 1": lambda jnp: lambda x: x + 1,
    "sin(x) * 2 + x": lambda jnp: lambda x: jnp.sin(x) * 2 + x,
    "two args": lambda jnp: lambda x, y: x * y - 1,
    "pytree in/out": lambda jnp: lambda d: {"s": d["a"] + d["b"]},
}

ARGUMENTS: dict[str, Callable] = {
    "x + 1": lambda x: (x,),
    "sin(x) * 2 + x": lambda x: (x,),
    "two args": lambda x: (x, x),
    "pytree in/out": lambda x: ({"a": x, "b": x},),
}


def libraries() -> dict[str, object]:
    """name -> the module that has ``jit`` and ``numpy``."""
    import minijax

    found: dict[str, object] = {"minijax": minijax}
    try:
        import jax
    except ImportError:
        return found
    found["jax"] = jax
    return found


def warm_call_microseconds(lib: object, label: str) -> float:
    """Best of REPEATS loops of LOOP calls of a jitted function, cache warm."""
    x = lib.numpy.linspace(-1.0, 1.0, 16, dtype=np.float32)
    f = lib.jit(FUNCTIONS[label](lib.numpy))
    args = ARGUMENTS[label](x)
    lib.block_until_ready(f(*args))
    best = float("inf")
    for _ in range(REPEATS):
        start = time.perf_counter()
        for _ in range(LOOP):
            result = f(*args)
        lib.block_until_ready(result)
        best = min(best, (time.perf_counter() - start) / LOOP)
    return best * 1e6


def first_call_milliseconds(lib: object, label: str) -> float:
    """A fresh jitted function on a fresh shape: trace, lower, compile and run."""
    times = []
    for size in range(3, 3 + REPEATS):
        x = lib.numpy.ones(size, dtype=np.float32)
        f = lib.jit(FUNCTIONS[label](lib.numpy))
        start = time.perf_counter()
        lib.block_until_ready(f(*ARGUMENTS[label](x)))
        times.append(time.perf_counter() - start)
    return min(times) * 1e3


def table(title: str, unit: str, measure: Callable[[object, str], float]) -> None:
    libs = libraries()
    print(f"{title:<16}" + "".join(f"{name:>12}" for name in libs) + "   minijax/jax")
    for label in FUNCTIONS:
        times = {name: measure(lib, label) for name, lib in libs.items()}
        ratio = f"{times['minijax'] / times['jax']:>12.2f}" if "jax" in times else ""
        print(f"{label:<16}" + "".join(f"{t:>10.2f}{unit}" for t in times.values()) + ratio)
    print()


def main() -> None:
    table("warm call", "us", warm_call_microseconds)
    table("first call", "ms", first_call_milliseconds)


if __name__ == "__main__":
    main()
