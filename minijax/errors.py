"""JAX's error classes, with JAX's messages.

A learner who meets one of these in minijax should meet the same class, with the same
words, in JAX. Each message names what went wrong (the traced value's type), where (the
function being traced and why), and links to JAX's page about the error.

The "where" part comes from the tracer: a tracer knows its trace, and a trace knows the
function it is tracing (:class:`TracingContext`). That is why the constructors here take
the tracer (or its context) rather than a finished string.
"""

from __future__ import annotations

from dataclasses import dataclass

DOCS = "https://docs.jax.dev/en/latest/errors.html"


@dataclass(frozen=True)
class TracingContext:
    """What a trace is doing, for error messages: tracing ``fun_name`` (``source``) for ``purpose``.

    ``arg_names`` lists the flattened arguments' names (``x``, ``params['w']``), and
    ``depends_on`` is filled per tracer: the names of the arguments a value depends on.
    """

    fun_name: str
    source: str
    purpose: str
    arg_names: tuple[str, ...] = ()

    def describe(self, depends_on: tuple[str, ...] = ()) -> str:
        text = (
            f"The error occurred while tracing the function {self.fun_name} at "
            f"{self.source} for {self.purpose}."
        )
        if len(depends_on) == 1:
            text += (
                " This concrete value was not available in Python because it depends on "
                f"the value of the argument {depends_on[0]}."
            )
        elif depends_on:  # "x and y", "a, b, and c"
            *first, last = depends_on
            names = f"{', '.join(first)}{',' if len(first) > 1 else ''} and {last}"
            text += (
                " This concrete value was not available in Python because it depends on "
                f"the values of the arguments {names}."
            )
        return text


class _JAXErrorMixin:
    """Adds JAX's link to the documentation of the error class to the message."""

    def __init__(self, message: str) -> None:
        link = f"See {DOCS}#jax.errors.{type(self).__name__}"
        super().__init__(f"{message}\n{link}")


class JAXTypeError(_JAXErrorMixin, TypeError):
    pass


class JAXIndexError(_JAXErrorMixin, IndexError):
    pass


def _where(context: str) -> str:
    return f"\n{context}" if context else ""


class ConcretizationTypeError(JAXTypeError):
    """A traced (abstract) value was used where Python needs a concrete one."""

    def __init__(self, aval_str: str, problem: str = "", context: str = "") -> None:
        message = (
            "Abstract tracer value encountered where concrete value is expected: "
            f"traced array with shape {aval_str}"
        )
        if problem:
            message += f"\n{problem}"
        super().__init__(message + _where(context) + "\n")


class TracerBoolConversionError(ConcretizationTypeError):
    """``if x:`` or ``bool(x)`` on a traced value."""

    def __init__(self, aval_str: str, context: str = "") -> None:
        message = f"Attempted boolean conversion of traced array with shape {aval_str}."
        JAXTypeError.__init__(self, message + _where(context))


class TracerIntegerConversionError(JAXTypeError):
    """``range(x)``, ``lst[x]``: Python asked a traced value for ``__index__``."""

    def __init__(self, aval_str: str, context: str = "") -> None:
        message = f"The __index__() method was called on traced array with shape {aval_str}"
        super().__init__(message + _where(context))


class TracerArrayConversionError(JAXTypeError):
    """``np.asarray(x)`` on a traced value: NumPy cannot hold an abstract value."""

    def __init__(self, aval_str: str, context: str = "") -> None:
        message = (
            "The numpy.ndarray conversion method __array__() was called on traced array "
            f"with shape {aval_str}"
        )
        super().__init__(message + _where(context))


class NonConcreteBooleanIndexError(JAXIndexError):
    """``x[mask]`` with a traced mask: the result's shape would depend on the mask's values."""

    def __init__(self, aval_str: str) -> None:
        super().__init__(f"Array boolean indices must be concrete; got {aval_str}\n")


class UnexpectedTracerError(JAXTypeError):
    """A tracer escaped the transformation that created it (e.g. saved to a global list)."""

    def __init__(self, aval_str: str, tracer_kind: str, context: str = "") -> None:
        message = (
            "Encountered an unexpected tracer. A function transformed by JAX had a side "
            "effect, allowing for a reference to an intermediate value with type "
            f"{aval_str} wrapped in a {tracer_kind} to escape the scope of the "
            "transformation.\nJAX transformations require that functions explicitly return "
            "their outputs, and disallow saving intermediate values to global state."
        )
        if context:
            message += f"\n{context}"
        super().__init__(message)


def item_assignment_error() -> TypeError:
    """``x[idx] = y`` on an immutable array: say what to write instead."""
    return TypeError(
        "JAX arrays are immutable and do not support in-place item assignment. Instead of "
        "x[idx] = y, use x = x.at[idx].set(y) or another .at[] method: "
        "https://docs.jax.dev/en/latest/_autosummary/jax.numpy.ndarray.at.html"
    )


class JaxRuntimeError(RuntimeError):
    """A computation failed while it ran (asynchronously), not while it was set up.

    JAX reports such failures when the result is first waited for; so does minijax.
    """


__all__ = [
    "ConcretizationTypeError",
    "JAXIndexError",
    "JAXTypeError",
    "JaxRuntimeError",
    "NonConcreteBooleanIndexError",
    "TracerArrayConversionError",
    "TracerBoolConversionError",
    "TracerIntegerConversionError",
    "TracingContext",
    "UnexpectedTracerError",
    "item_assignment_error",
]
