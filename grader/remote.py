"""The learner's namespace as a remote check sees it, from the grader's trusted process.

A :class:`~grader.checks.Check` declared ``remote`` runs in the grader, not beside the notebook;
the ``ns`` it receives is a :class:`RemoteNamespace`. ``name in ns`` asks the worker whether the
notebook defines ``name``, and ``ns[name]`` is a :class:`RemoteFunction` whose call sends the
arguments to the worker, runs the learner's function there and decodes what came back -- plain
data only. Exceptions come back as their type's name and message and are raised here again, so
:func:`~grader.checks.call` words its messages exactly as when it runs beside the notebook.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

import numpy as np

from grader.limits import GradingLimit, OutputLimitExceeded, TimeLimitExceeded
from grader.plain import Opaque, ProtocolError, decode, encode, functions_in

#: Sends one request to the worker within the exercise's budget and returns the reply.
Ask = Callable[[dict[str, Any]], dict[str, Any]]


class RemoteNamespace(Mapping[str, Any]):
    """What a remote check may ask of the notebook's globals: whether a name is defined, and to
    call it. Iterating (listing every global) is not offered."""

    def __init__(self, ask: Ask, limits_seconds: float, output_chars: int) -> None:
        self._ask = ask
        self._seconds, self._output = limits_seconds, output_chars

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self._lookup(name)["defined"] is True

    def __getitem__(self, name: str) -> Any:
        found = self._lookup(name)
        if found["defined"] is not True:
            raise KeyError(name)
        if found.get("callable") is True:
            return RemoteFunction(self, name)
        kind = found.get("type")
        return Opaque(kind if type(kind) is str else "?", f"<{kind} object>")

    def __iter__(self) -> Iterator[str]:
        raise TypeError("a remote check cannot list the notebook's names")

    def __len__(self) -> int:
        raise TypeError("a remote check cannot count the notebook's names")

    def _lookup(self, name: str) -> dict[str, Any]:
        return self._ask({"op": "lookup", "name": name})

    def call(self, name: str, args: tuple[Any, ...]) -> Any:
        reply = self._ask({"op": "call", "name": name, "args": encode(list(args)),
                           "forbidding": _forbidden()})
        if reply.get("outcome") == "returned":
            value, after = decode(reply.get("value")), decode(reply.get("args"))
            _copy_back(args, after)
            _count_calls(args, reply.get("calls"))
            return value
        raise rebuild_exception(reply, self._seconds, self._output)

    def probe(self, name: str, args: tuple[Any, ...]) -> Any:
        """What the worker's probe ``name`` (see :func:`grader.checks.probe`) reports."""
        reply = self._ask({"op": "probe", "name": name, "args": encode(list(args)),
                           "forbidding": _forbidden()})
        if reply.get("outcome") == "returned":
            _count_calls(args, reply.get("calls"))
            return decode(reply.get("value"))
        raise rebuild_exception(reply, self._seconds, self._output)


class RemoteFunction:
    """The learner's function ``name``, called in the worker."""

    def __init__(self, ns: RemoteNamespace, name: str) -> None:
        self._ns, self.name = ns, name

    def __call__(self, *args: Any) -> Any:
        return self._ns.call(self.name, args)


def rebuild_exception(reply: dict[str, Any], seconds: float, output: int) -> BaseException:
    """The exception a worker's reply describes, as an exception of the grader's own making
    (a :class:`ProtocolError` if the reply is malformed)."""
    outcome = reply.get("outcome")
    if outcome == "limit":
        return TimeLimitExceeded(seconds) if reply.get("limit") == "time" else \
            OutputLimitExceeded(output)
    if outcome != "raised":
        return ProtocolError(f"the notebook process sent an unexpected reply: {outcome!r:.40}")
    kind, name, message = reply.get("kind"), reply.get("type"), reply.get("message")
    if type(name) is not str or type(message) is not str or not name.isidentifier():
        return ProtocolError("the notebook process described an exception without its type")
    if kind == "not_implemented":
        return NotImplementedError(message)
    if kind == "system_exit":
        code = reply.get("code")
        return SystemExit(code if code is None or type(code) in (int, str) else None)
    if name in _BUILTIN_EXCEPTIONS:  # so that a check can catch, say, the ValueError it expects
        return _BUILTIN_EXCEPTIONS[name](message)
    return type(name, (LearnerException,), {})(message)


#: Exceptions that come back as themselves (made here, with the learner's message only).
_BUILTIN_EXCEPTIONS: dict[str, type[Exception]] = {
    cls.__name__: cls for cls in (ValueError, TypeError, KeyError, IndexError, AttributeError,
                                  ZeroDivisionError, OverflowError, RuntimeError,
                                  AssertionError, ArithmeticError, LookupError)
}


class LearnerException(Exception):
    """Base of the stand-ins for exceptions raised by learner code in the worker: same name,
    same message, raised in the grader. ``KeyboardInterrupt`` arrives as one too, and so fails
    its exercise instead of stopping the grading."""


class ReferenceUsed(GradingLimit):
    """The learner's code reached for the answer while its exercise was graded: it called the
    reference function the exercise replaces, or tried to read the course's solutions or
    checks (see :mod:`grader.reference`)."""

    def __init__(self, refused: list[str]) -> None:
        super().__init__(f"the notebook reached for the answer, which scores zero: {refused[0]}")


class WorkerLost(GradingLimit):
    """The worker had to be killed (it broke a limit from outside the reach of its own guard, or
    sent something that is not plain data) or it died; ``str()`` is the learner's message."""


def _copy_back(args: tuple[Any, ...], after: Any) -> None:
    """Write into the check's array arguments what the learner's function left in them, so that
    :func:`~grader.checks.call` sees an argument modified in place."""
    if type(after) is not list or len(after) != len(args):
        raise ProtocolError("the arguments must come back as a list of the same length")
    for arg, new in zip(args, after, strict=True):
        if isinstance(arg, np.ndarray) and isinstance(new, np.ndarray) and \
                new.shape == arg.shape and new.dtype == arg.dtype:
            arg[...] = new
        elif isinstance(arg, dict) and type(new) is dict and not _same_data(arg, new):
            arg.clear()
            arg.update(new)


def _same_data(a: Any, b: Any) -> bool:
    """Whether two values hold the same data: arrays of one type, shape and dtype with equal
    elements (NaN equal to NaN), containers of one type with the same keys or length and the
    same data in each place. Never ``a == b`` on arrays, whose truth value is ambiguous."""
    if type(a) is not type(b):
        return False
    if hasattr(a, "shape") and hasattr(a, "dtype"):  # ndarray, NumPy scalar, minijax array
        x, y = np.asarray(a), np.asarray(b)
        return x.shape == y.shape and x.dtype == y.dtype and \
            bool(np.array_equal(x, y, equal_nan=x.dtype.kind in "fc"))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same_data(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(map(_same_data, a, b))
    return a == b


def _forbidden() -> list[list[Any]]:
    """The :func:`~grader.checks.forbidding` blocks the check is in, for the worker to apply."""
    from grader.checks import FORBIDDEN

    return [list(entry) for entry in FORBIDDEN]


def _count_calls(args: tuple[Any, ...], calls: Any) -> None:
    """Add to the check's :class:`~grader.checks.Shown` functions among ``args`` the calls the
    worker counted on its copies of them."""
    shown = functions_in(list(args))
    if type(calls) is not list or len(calls) != len(shown) or \
            not all(type(n) is int and n >= 0 for n in calls):
        raise ProtocolError("the calls of the check's functions must come back as counts")
    for function, count in zip(shown, calls, strict=True):
        if hasattr(function, "calls"):
            function.calls += count
