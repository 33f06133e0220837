"""Paired, interleaved timing: run candidates A, B, C in turns in one process, print ratios.

On a shared, noisy machine the time of one call moves with everybody else's load; the
*ratio* of two calls made a few microseconds apart moves much less. So every round times
each candidate once (a batch of calls, in a rotating order so that none always runs first),
divides each by the baseline's time in the same round, and the printed figure is the median
of those per-round ratios. Used by ``suite.py``; nothing here asserts.
"""

from __future__ import annotations

import time
import tracemalloc
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass
class Paired:
    """Median seconds per call of each candidate, and the median of its per-round ratio
    to the baseline (the first candidate)."""

    seconds: dict[str, float]
    ratios: dict[str, float]


def calls_per_batch(fun: Callable[[], Any], budget: float = 2e-3) -> int:
    """How many calls of ``fun`` fill about ``budget`` seconds (at least one)."""
    start = time.perf_counter()
    fun()
    once = time.perf_counter() - start
    return max(1, min(10_000, int(budget / max(once, 1e-7))))


def interleaved(candidates: dict[str, Callable[[], Any]], rounds: int = 21,
                warmup: int = 3) -> Paired:
    """Time ``candidates`` (name -> zero-argument call) in interleaved rounds; the first
    one is the baseline of the ratios. Each call must wait for its own result."""
    names = list(candidates)
    for fun in candidates.values():
        for _ in range(warmup):
            fun()
    batch = {name: calls_per_batch(fun) for name, fun in candidates.items()}
    times: dict[str, list[float]] = {name: [] for name in names}
    for r in range(rounds):
        for name in names[r % len(names):] + names[:r % len(names)]:
            fun, n = candidates[name], batch[name]
            start = time.perf_counter()
            for _ in range(n):
                fun()
            times[name].append((time.perf_counter() - start) / n)
    base = np.array(times[names[0]])
    return Paired({n: float(np.median(t)) for n, t in times.items()},
                  {n: float(np.median(np.array(t) / base)) for n, t in times.items()})


def peak_bytes(fun: Callable[[], Any]) -> int:
    """The peak of memory allocated while ``fun()`` runs (NumPy reports its buffers to
    ``tracemalloc``), after a first call that warms every cache."""
    fun()
    tracemalloc.start()
    fun()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak


def format_time(seconds: float) -> str:
    return f"{seconds * 1e6:9.1f} us" if seconds < 1e-2 else f"{seconds * 1e3:9.2f} ms"


def print_row(label: str, result: Paired) -> None:
    """One workload: each candidate's median time and its ratio to the baseline."""
    cells = [f"{name} {format_time(result.seconds[name])}"
             + ("" if i == 0 else f" ({result.ratios[name]:.2f}x)")
             for i, name in enumerate(result.seconds)]
    print(f"{label:<34s} " + " | ".join(cells), flush=True)
