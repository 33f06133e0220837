"""Real XLA as a second backend: the same StableHLO text, compiled by jaxlib.

When JAX is installed, its CPU client compiles StableHLO *text* directly. That is the
proof that minijax's lowering is real: the text that the NumPy backend runs is also a
program XLA accepts. ``jax.extend`` promises no compatibility across releases, so the
whole dependency is this one small module, checked against the JAX version it was
written for.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from minijax.compiler.stablehlo import parse_module
from minijax.core import ShapedArray

SUPPORTED_JAX = "0.10"  # the API below is that of jax 0.10.x


def available() -> bool:
    """Whether JAX (with a usable ``jax.extend.backend``) is installed."""
    try:
        _client()
    except (ImportError, RuntimeError):
        return False
    return True


def _client() -> tuple[Any, Any]:
    """JAX's CPU client and its first device."""
    import jax
    from jax.extend import backend

    if not jax.__version__.startswith(SUPPORTED_JAX):
        raise RuntimeError(f"minijax's XLA backend was written for jax {SUPPORTED_JAX}.x, "
                           f"found jax {jax.__version__}")
    client = backend.get_backend("cpu")
    return client, client.local_devices()[0]


@functools.cache
def _initialize_lapack() -> None:
    """XLA's LAPACK kernels are set up the first time JAX lowers a decomposition; a
    custom call to them before that would crash. Lowering a 1x1 Cholesky does it."""
    import jax

    jax.jit(jax.lax.linalg.cholesky).lower(np.eye(1, dtype=np.float32))


class Executable:
    """A program compiled by XLA; called on NumPy arrays, it returns NumPy arrays."""

    def __init__(self, text: str) -> None:
        self.client, self.device = _client()
        if "@lapack_" in text:
            _initialize_lapack()
        # Fresh options: the binding's default object misses XLA's flags (with it, a
        # max no longer propagates NaNs).
        from jaxlib import xla_client

        self.loaded = self.client.compile_and_load(text, [self.device],
                                                   xla_client.CompileOptions())
        main = next(f for f in parse_module(text).funcs if f.visibility == "public")
        self.in_avals = [ShapedArray(t.shape, t.dtype) for t in main.arg_types]
        self.out_avals = [ShapedArray(t.shape, t.dtype) for t in main.result_types]

    def __call__(self, *args: np.ndarray) -> list[np.ndarray]:
        import jax

        if len(args) != len(self.in_avals):
            raise TypeError(f"expected {len(self.in_avals)} arguments, got {len(args)}")
        buffers = []
        for a, aval in zip(args, self.in_avals):
            a = np.asarray(a)
            if a.shape != aval.shape or a.dtype != aval.dtype:  # XLA would not check
                raise TypeError(f"expected an argument of type {aval.str_short()}, got "
                                f"{a.dtype.name}{list(a.shape)}")
            buffers.append(jax.device_put(a, self.device))
        return [np.asarray(out) for out in self.loaded.execute(buffers)]

    def as_text(self) -> str:
        """The optimised HLO that XLA compiled (its fusions are worth a look)."""
        return self.loaded.hlo_modules()[0].to_string()

    def cost_analysis(self) -> dict[str, float]:
        return dict(self.loaded.cost_analysis())


def compile(text: str) -> Executable:
    """Compile StableHLO text with XLA (raises ``RuntimeError`` without a usable JAX)."""
    return Executable(text)
