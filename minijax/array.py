"""``minijax.Array``: an immutable array that lives on a device and may still be computing.

An ``Array`` is a promise. An operation returns one at once, knowing only its abstract
value (shape, dtype, weak type), and a device's worker thread fills in the NumPy value
later (see ``minijax.runtime``). Anything that needs the numbers -- printing,
``np.asarray``, ``.item()``, ``.block_until_ready()`` -- waits for them. That is JAX's
asynchronous dispatch (非同步派遣), for real.

Arrays are immutable: the stored NumPy value is read-only, ``x[0] = 1`` raises JAX's
``TypeError``, and updates go through ``x.at[idx].set(y)``, which returns a new array.

Operators and methods (``+``, ``@``, ``x.sum()``, ``x[0]``, ``x.at``) are attached by
``minijax.numpy``, because they are written with ``jnp`` and this module sits below it.
"""

from __future__ import annotations

import abc
from typing import Any

import numpy as np

from minijax import dtypes, errors
from minijax.core import ShapedArray, Tracer


class Array(metaclass=abc.ABCMeta):  # noqa: B024 - ABCMeta only to register Tracer
    """A concrete array on a device. ``isinstance(tracer, Array)`` is also true, as in JAX.

    ``_value`` is ``None`` until the worker has computed it; ``_error`` holds the exception
    if the computation failed, raised at the first wait.
    """

    __slots__ = ("aval", "_value", "_error", "_device", "_committed", "__weakref__")
    __array_priority__ = 100

    def __init__(self, aval: ShapedArray, value: np.ndarray | None, device: Any,
                 committed: bool = False) -> None:
        self.aval = aval
        self._value = value
        self._error: BaseException | None = None
        self._device = device
        self._committed = committed

    # --- what is known at once -----------------------------------------------------------
    shape = property(lambda self: self.aval.shape)
    dtype = property(lambda self: self.aval.dtype)
    ndim = property(lambda self: len(self.aval.shape))
    size = property(lambda self: self.aval.size)
    weak_type = property(lambda self: self.aval.weak_type)
    itemsize = property(lambda self: self.aval.dtype.itemsize)
    nbytes = property(lambda self: self.aval.size * self.aval.dtype.itemsize)

    @property
    def device(self) -> Any:
        """The device this array lives on."""
        return self._device

    def devices(self) -> set[Any]:
        return {self._device}

    @property
    def committed(self) -> bool:
        """Placed on its device explicitly (``device_put(x, d)``), so it must stay there."""
        return self._committed

    def is_ready(self) -> bool:
        return self._value is not None or self._error is not None

    # --- waiting for the value -----------------------------------------------------------
    def _wait(self) -> np.ndarray:
        """The NumPy value, once the device has computed it (raises if it failed)."""
        if self._value is None:
            if self._error is None:
                self._device.run_jobs(until=self)
            if self._error is not None:
                raise errors.JaxRuntimeError(
                    f"the computation of this {self.aval.str_long()} array failed: "
                    f"{type(self._error).__name__}: {self._error}"
                ) from self._error
        return self._value

    def block_until_ready(self) -> Array:
        self._wait()
        return self

    # --- conversions to Python and NumPy -------------------------------------------------
    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        if dtypes.is_extended(self.aval.dtype):
            raise TypeError("JAX array with PRNGKey dtype cannot be converted to a NumPy "
                            "array. Use jax.random.key_data(arr) if you wish to extract the "
                            "underlying integer array.")
        value = self._wait()
        if value.flags.writeable:  # hand out read-only views only: arrays are immutable
            value.flags.writeable = False
        if copy:
            return np.array(value, dtype=dtype)
        return value if dtype is None else value.astype(dtype)

    def item(self, *args: Any) -> Any:
        return self._wait().item(*args)

    def tolist(self) -> Any:
        return self._wait().tolist()

    def __bool__(self) -> bool:
        return bool(self._wait())

    def __int__(self) -> int:
        return int(self._wait())

    def __float__(self) -> float:
        return float(self._wait())

    def __complex__(self) -> complex:
        return complex(self._wait())

    def __index__(self) -> int:
        if self.dtype.kind not in "biu":
            raise TypeError("only integer scalar arrays can be converted to a scalar index")
        return int(self._wait())

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    def __iter__(self):
        if not self.shape:
            raise TypeError("iteration over a 0-d array")
        return (self[i] for i in range(self.shape[0]))

    def __format__(self, spec: str) -> str:
        value = self._wait()
        return format(value.item() if value.ndim == 0 else value, spec)

    def __setitem__(self, index: Any, value: Any) -> None:
        raise errors.item_assignment_error()

    __hash__ = None  # type: ignore[assignment]  # like NumPy and JAX arrays

    # --- printing --------------------------------------------------------------------------
    def __repr__(self) -> str:
        """NumPy's repr layout with JAX's name. Where NumPy would move the dtype to a new
        line (the last line growing past 75 characters), JAX keeps it on the same line,
        indented by six spaces instead of one; we print what JAX prints."""
        value = self._wait()
        if dtypes.is_extended(self.aval.dtype):  # keys: the shape, then the stored words
            return f"Array({self.shape}, dtype={self.dtype.name}) overlaying:\n{value}"
        extras = f"dtype={self.dtype.name}" + (", weak_type=True" if self.weak_type else "")
        if value.size == 0:  # NumPy would hide the shape of an empty array; JAX shows it
            extras = f"shape={self.shape}, {extras}"
        body = "Array(" + np.array2string(value, prefix="Array(", suffix=",",
                                          separator=", ") + ","
        last_line = len(body) - (body.rfind("\n") + 1)
        spacer = " " * len("Array(") if last_line + len(extras) + 2 > 75 else " "
        return f"{body}{spacer}{extras})"

    def __str__(self) -> str:
        return repr(self) if dtypes.is_extended(self.aval.dtype) else str(self._wait())


Array.register(Tracer)


_PYTHON_SCALARS = (bool, int, float, complex)


def is_jax_value(x: Any) -> bool:
    """Arrays, Python numbers and NumPy values: what ``lax`` accepts as an operand."""
    return (type(x) in _PYTHON_SCALARS or isinstance(x, (np.ndarray, np.generic))
            or type(x) is Array or isinstance(x, Tracer))

