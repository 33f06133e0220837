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

    ``arg_names`` lists the flattened arguments' names (``x``, ``params['w']``); each
    tracer adds the names of the arguments its value depends on (see :meth:`describe`).
    """

    fun_name: str
    source: str
    purpose: str
    arg_names: tuple[str, ...] = ()

    def describe(self, depends_on: tuple[str, ...] = (), operations: tuple[str, ...] = ()
                 ) -> str:
        """Where a traced value came from: the arguments it depends on or, failing that,
        the ``operations`` (equations with their source lines) that made it."""
        text = (
            f"The error occurred while tracing the function {self.fun_name} at "
            f"{self.source} for {self.purpose}. "
        )
        if depends_on:  # "x", "x and y", "a, b, and c"
            *first, last = depends_on
            names = f"{', '.join(first)}{',' if len(first) > 1 else ''} and {last}"
            text += (
                "This concrete value was not available in Python because it depends on "
                + (f"the value of the argument {last}." if not first
                   else f"the values of the arguments {names}.")
            )
        elif operations:
            text += ("This value became a tracer due to JAX operations on these lines:\n\n"
                     + "\n\n".join(operations[:5]))
            if len(operations) > 5:
                text += "\n\n(Additional originating lines are not shown.)"
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
    """A tracer escaped the transformation that created it (e.g. saved to a global list).

    ``where`` names the function that was being traced; ``created`` is the source line
    where the leaked value was made and ``frames`` the user's stack frames at that moment
    (empty for a leaked *argument* of the traced function, which no line of code made).
    """

    def __init__(self, aval_str: str, tracer_kind: str, where: str = "", created: str = "",
                 frames: tuple[str, ...] = ()) -> None:
        message = (
            "Encountered an unexpected tracer. A function transformed by JAX had a side "
            "effect, allowing for a reference to an intermediate value with type "
            f"{aval_str} wrapped in a {tracer_kind} to escape the scope of the "
            "transformation.\nJAX transformations require that functions explicitly return "
            "their outputs, and disallow saving intermediate values to global state."
        )
        if where:
            rule = "-" * 30
            message += (
                f"\n{where}\n{rule}\n"
                f"The leaked intermediate value was created on line {created}. \n{rule}\n"
                "When the value was created, the final 5 stack frames (most recent last) "
                f"excluding JAX-internal frames were:\n{rule}\n"
                + "\n".join(frames) + f"\n{rule}\n\n"
                "To catch the leak earlier, try setting the environment variable "
                "JAX_CHECK_TRACER_LEAKS or using the `jax.checking_leaks` context manager."
            )
        super().__init__(message)


class JaxprTypeError(TypeError):
    """A jaxpr is not well formed (see ``minijax.jaxpr.check_jaxpr``)."""


def item_assignment_error() -> TypeError:
    """``x[idx] = y`` on an immutable array: say what to write instead."""
    return TypeError(
        "JAX arrays are immutable and do not support in-place item assignment. Instead of "
        "x[idx] = y, use x = x.at[idx].set(y) or another .at[] method: "
        "https://docs.jax.dev/en/latest/_autosummary/jax.numpy.ndarray.at.html"
    )


def check_callable(fun: object) -> None:
    """Transformations check their function at once, not when it is first called."""
    if not callable(fun):
        raise TypeError(f"Expected a callable value, got {fun}")


class JaxRuntimeError(RuntimeError):
    """A computation failed while it ran (asynchronously), not while it was set up.

    JAX reports such failures when the result is first waited for; so does minijax.
    """


__all__ = [
    "ConcretizationTypeError",
    "JAXIndexError",
    "JAXTypeError",
    "JaxRuntimeError",
    "JaxprTypeError",
    "NonConcreteBooleanIndexError",
    "TracerArrayConversionError",
    "TracerBoolConversionError",
    "TracerIntegerConversionError",
    "TracingContext",
    "UnexpectedTracerError",
    "check_callable",
    "item_assignment_error",
]
