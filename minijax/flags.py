"""Global flags, read and set the way JAX does: ``minijax.config.update(name, value)``.

``minijax.config`` is the :class:`Config` object below, not a module, as ``jax.config`` is
in JAX 0.10.2: old code's ``from jax.config import config`` fails there with
``ModuleNotFoundError``, and so it does here (this module is ``minijax.flags``).

Only a handful of flags exist, each one because a chapter needs it:

* ``jax_enable_x64`` -- off by default, as in JAX: 64-bit requests are canonicalised to
  32-bit. The environment variable ``JAX_ENABLE_X64`` sets the initial value.
* ``jax_numpy_dtype_promotion`` -- ``"standard"`` or ``"strict"`` (only weak-to-strong
  implicit promotion is allowed).

Other modules read a flag as an attribute (``config.jax_enable_x64``) at the moment they
need it, so that flipping a flag takes effect at once. Modules that cache results which
depend on a flag register a callback with :func:`on_change` to clear their cache.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator


def _truthy(text: str) -> bool:
    return text.strip().lower() in ("1", "true", "yes", "on")


class Config:
    """A small registry of named flags with validation, mirroring ``jax.config``."""

    jax_enable_x64: bool
    jax_numpy_dtype_promotion: str

    def __init__(self) -> None:
        self._validators: dict[str, Callable[[object], object]] = {
            "jax_enable_x64": self._as_bool,
            "jax_numpy_dtype_promotion": self._as_promotion_mode,
        }
        self._callbacks: list[Callable[[], None]] = []
        # Flags are plain attributes, so reading one on a hot path costs nothing extra.
        self.jax_enable_x64 = _truthy(os.environ.get("JAX_ENABLE_X64", "0"))
        self.jax_numpy_dtype_promotion = self._as_promotion_mode(
            os.environ.get("JAX_NUMPY_DTYPE_PROMOTION", "standard"))

    @staticmethod
    def _as_bool(value: object) -> bool:
        if isinstance(value, str):
            return _truthy(value)
        return bool(value)

    @staticmethod
    def _as_promotion_mode(value: object) -> str:
        if value not in ("standard", "strict"):
            raise ValueError(
                "jax_numpy_dtype_promotion must be 'standard' or 'strict', "
                f"got {value!r}"
            )
        return str(value)

    def update(self, name: str, value: object) -> None:
        """Set flag ``name`` to ``value``, e.g. ``config.update("jax_enable_x64", True)``."""
        if name not in self._validators:
            raise AttributeError(f"Unrecognized config option: {name}")
        setattr(self, name, self._validators[name](value))
        for callback in self._callbacks:
            callback()

    def read(self, name: str) -> object:
        if name not in self._validators:
            raise AttributeError(f"Unrecognized config option: {name}")
        return getattr(self, name)

    def on_change(self, callback: Callable[[], None]) -> None:
        """Call ``callback()`` after every update (used to clear caches)."""
        self._callbacks.append(callback)

    @contextlib.contextmanager
    def override(self, name: str, value: object) -> Iterator[None]:
        """Temporarily set a flag: ``with config.override("jax_enable_x64", True): ...``."""
        old = self.read(name)
        self.update(name, value)
        try:
            yield
        finally:
            self.update(name, old)


config = Config()


def numpy_dtype_promotion(mode: str) -> contextlib.AbstractContextManager[None]:
    """Context manager like ``jax.numpy_dtype_promotion('strict')``."""
    return config.override("jax_numpy_dtype_promotion", mode)


# Caches that remember what a learner's piece produced (traced jaxprs, compiled code)
# register here, and minijax.pieces calls them whenever a piece is installed or reset:
# a jaxpr traced with the reference JVP trace must not be served after the learner's
# is plugged in. (The pieces live in a higher layer; this list is the seam.)
_pieces_listeners: list[Callable[[], None]] = []


def on_pieces_change(callback: Callable[[], None]) -> None:
    """Call ``callback`` (to clear a cache) whenever a piece is installed or reset."""
    _pieces_listeners.append(callback)


def pieces_changed() -> None:
    for callback in _pieces_listeners:
        callback()
