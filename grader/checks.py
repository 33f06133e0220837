"""The API that chapter check modules use.

A check module (``exercises/checks/chNN_topic.py``) declares one check per exercise::

    from grader.checks import call, exercise, expect_close

    @exercise("softmax", points=2)
    def check_softmax(ns):
        got = call(ns, "softmax", np.array([1000.0, 1001.0]))
        expect_close(got, [0.26894142, 0.73105858])

A check receives the learner's namespace: the notebook's globals for ``check()`` in a notebook,
or, in the grader, a stand-in that reaches them in the untrusted worker (see :class:`Check`).
It passes by returning, and fails by raising :class:`CheckFailed` with a message that says
which input was used, what was expected and what came back: the learner should be able to reproduce
the failure from the message alone. The helpers below write those messages, so check modules stay
short and the wording stays the same across chapters.

Expected values must be computed independently of the solution notebook (a known value, or a simple
reference formula on inputs where it is safe).

An exercise that tests several programs can split its points across named *parts*, each
checked in a ``with part(...)`` block; a part's failure costs only that part's points::

    @exercise("compile_jaxpr", points=4, parts={"straight-line code": 1, "loops": 3})
    def check_compile_jaxpr(ns):
        for program, kind in PROGRAMS:
            with part(kind):
                ...  # fails with CheckFailed, as any check does

A check without parts is all or nothing.
"""

from __future__ import annotations

import contextlib
import types
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from grader.plain import FunctionSource, Opaque, decode, encode, realize, safe_str

Namespace = Mapping[str, Any]

#: How a failure message introduces its hint (the rest of its line, or a line of its own that
#: starts with it, stripped): shown only when asked for (see :mod:`grader.outcome`).
HINT_MARKER = " -- hint: "

#: Arrays up to this size are shown in full in messages; larger ones are abbreviated by numpy.
_SHOW_ALL = 20


class CheckFailed(Exception):
    """The learner's code gave a wrong result; ``str()`` is the message the learner sees."""


@dataclass(frozen=True)
class Check:
    """One exercise's check. The check module is the authority for ``points``.

    The notebook's metadata repeats name and points only so that tests can verify that notebook
    and check module agree; a learner could edit the metadata, but not the check module.

    A ``remote`` check reaches the learner's code only with plain data: :func:`call` with
    plain-data arguments (numbers, strings, numpy arrays, :class:`Shown` functions, and lists,
    tuples, dicts of them) and :func:`probe`. The grader then runs it in its own trusted
    process: its expected values and comparisons never enter the process that runs the
    learner's notebook, so no submission can forge its verdict. Other checks (those that hand
    the learner's code objects that cannot cross, or inspect its objects in ways no probe
    covers) run beside the notebook, and their verdict is only as trustworthy as that process.
    """

    name: str
    points: float
    run: Callable[[Namespace], None]
    remote: bool = False
    replaces: tuple[str, ...] = ()
    parts: tuple[tuple[str, float], ...] = ()  # (name, points), in the order reported


def exercise(
    name: str, points: float, *, remote: bool = False, replaces: tuple[str, ...] = (),
    parts: Mapping[str, float] | None = None,
) -> Callable[[Callable[[Namespace], None]], Check]:
    """Declare the decorated function as the check of exercise ``name``, worth ``points``
    (``remote``: see :class:`Check`). ``replaces`` names, dotted (``"minijax.jacrev"``), the
    reference functions the exercise asks the learner to write: while the grader checks it,
    calling one of them fails the exercise and says so (:mod:`grader.reference`). ``parts``
    splits the points across the named parts the check's :func:`part` blocks check; they must
    add up to ``points``, which the notebook's metadata repeats.

    The function is replaced by a :class:`Check`; the grader collects the module's ``Check``
    objects in the order they are defined, which is the order exercises are reported in.
    """
    shares = tuple((parts or {}).items())
    if shares and not np.isclose(sum(share for _, share in shares), points):
        raise ValueError(f"the parts of exercise {name!r} add up to "
                         f"{sum(share for _, share in shares):g} points, not {points:g}")

    def declare(run: Callable[[Namespace], None]) -> Check:
        return Check(name=name, points=points, run=run, remote=remote, replaces=tuple(replaces),
                     parts=shares)

    return declare


@dataclass
class PartsSeen:
    """What the :func:`part` blocks of one run of a check found: the first failure of each
    part, by name, the parts whose stub is not replaced yet, and the parts checked at all."""

    declared: tuple[str, ...]
    failed: dict[str, str]
    stubs: set[str]
    entered: set[str]


#: The runs of checks in progress (a check's run is the last); :func:`part` records there.
_RUNS: list[PartsSeen] = []


@contextlib.contextmanager
def checking_parts(check: Check) -> Iterator[PartsSeen]:
    """While the block runs ``check``, its :func:`part` blocks record into what it yields."""
    seen = PartsSeen(tuple(name for name, _ in check.parts), {}, set(), set())
    _RUNS.append(seen)
    try:
        yield seen
    finally:
        _RUNS.remove(seen)


@contextlib.contextmanager
def part(name: str) -> Iterator[None]:
    """Check part ``name`` of the exercise: a :class:`CheckFailed` raised in the block fails
    that part only (its first failure is the one reported), and the check goes on with the next
    block; so does a stub's ``NotImplementedError`` (the part is not attempted). Anything else
    -- a time limit, an error of the check's -- ends the check."""
    seen = _RUNS[-1] if _RUNS else None
    if seen is None:  # the check's function called directly: all or nothing
        yield
        return
    if name not in seen.declared:
        raise ValueError(f"part {name!r} is not declared by the exercise being checked")
    seen.entered.add(name)
    try:
        yield
    except CheckFailed as failure:
        seen.failed.setdefault(name, str(failure) or "this part failed")
    except NotImplementedError:
        seen.stubs.add(name)


def grouped(items: list[Any], parts: Mapping[str, int]) -> list[tuple[str, Any]]:
    """Each of ``items`` with the name of the part it belongs to: ``parts`` says how many of
    the items, in order, each part holds (for a check's list of programs)."""
    names = [name for name, count in parts.items() for _ in range(count)]
    if len(names) != len(items):
        raise ValueError(f"the parts hold {len(names)} items, not {len(items)}")
    return list(zip(names, items, strict=True))


@dataclass(frozen=True)
class Returned:
    """What a learner's function returned, and how the call is shown in messages."""

    call: str
    value: Any


def call(ns: Namespace, name: str, *args: Any, hint: str | None = None) -> Returned:
    """Call the learner's function ``name`` from the notebook namespace with ``args``.

    Errors become specific messages: an undefined name, an exception raised by the learner's code
    (shown with the call that raised it), and an array argument modified in place -- a classic bug
    that a caller cannot see until their own data is corrupted. ``NotImplementedError`` passes
    through untouched: it means the exercise's stub was not replaced yet ("not attempted").
    ``hint`` is added to the message when the learner's code raises.
    """
    function = learner_function(ns, name)
    shown = f"{name}({', '.join(show(arg) for arg in args)})"
    originals = [arg.copy() if isinstance(arg, np.ndarray) else None for arg in args]
    try:
        value = function(*args)
    except NotImplementedError:
        raise
    except Exception as exc:
        raise _failure(f"{shown} raised {describe_exception(exc)}", hint) from exc
    for arg, original in zip(args, originals, strict=True):
        if original is not None and not np.array_equal(arg, original, equal_nan=True):
            raise _failure(
                f"{shown} modified its argument in place (it became {brief(arg)}); "
                "leave the input alone and build a new array", hint
            )
    return Returned(call=shown, value=value)


def call_described(function: Callable[..., Any], text: str, *args: Any,
                   hint: str | None = None) -> Returned:
    """Call ``function`` -- one the learner's code returned, or the learner's function
    wrapped by the check (``jax.jit(f)``) -- with ``args``; messages name the call
    ``text``. Errors become messages (with ``hint``); ``NotImplementedError`` (a stub not
    replaced yet) passes through, as in :func:`call`, and so does a ``CheckFailed`` raised by
    an instrument the check handed to the learner's code."""
    if not callable(function):
        raise CheckFailed(f"{text}: {brief(function)} is not a function")
    try:
        return Returned(call=text, value=function(*args))
    except (NotImplementedError, CheckFailed):  # a stub, or the check's own instrument
        raise
    except Exception as exc:
        raise _failure(f"{text} raised {describe_exception(exc)}", hint) from exc


def call_returned(function: Callable[..., Any], shown: str, *args: Any,
                  hint: str | None = None) -> Returned:
    """:func:`call_described`, the call written as ``shown(arguments)``."""
    text = f"{shown}({', '.join(show(arg) for arg in args)})"
    return call_described(function, text, *args, hint=hint)


def probe(ns: Namespace, name: str, *args: Any) -> Any:
    """What the worker-side instrument ``name`` of :mod:`grader.probes` reports on the
    learner's namespace, called with ``args``: plain data only, whichever side of the pipe the
    namespace is on. A probe only observes (it traces, counts, or calls with functions of the
    check's); the check compares what it reports with what it expects."""
    remote = getattr(ns, "probe", None)
    if remote is not None:
        return remote(name, args)
    from grader.probes import PROBES

    return decode(encode(PROBES[name](ns, *realize(args, ns))))


def call_transformed(ns: Namespace, transform: str, name: str, *args: Any,
                     shown: str | None = None, hint: str | None = None) -> Returned:
    """:func:`call_returned` of ``transform(f)``, where ``f`` is the learner's function ``name``
    and ``transform`` the source of a function of a function (``"jax.grad"``, ``"lambda f:
    jax.jit(f)"``) evaluated where ``f`` lives; messages show the call as
    ``shown(arguments)``, by default ``transform(name)(arguments)``."""
    learner_function(ns, name)
    return call_returned(lambda *a: probe(ns, "apply", FunctionSource(transform), name, *a),
                         shown or f"{transform}({name})", *args, hint=hint)


def call_each(ns: Namespace, name: str, calls: list[tuple[Any, ...]]
              ) -> list[tuple[str, dict[str, Any]]]:
    """The learner's ``name`` called on each argument tuple of ``calls``, in one request to the
    learner's process (by the ``call_each`` probe, which goes on after a call that raised):
    each call as messages show it, with its outcome for :func:`reported`. (Unlike
    :func:`call`, it does not look for arguments modified in place.)"""
    learner_function(ns, name)
    outcomes = probe(ns, "call_each", name, [list(a) for a in calls], True)
    return [(f"{name}({', '.join(show(arg) for arg in args)})", outcome)
            for args, outcome in zip(calls, outcomes)]


def reported(text: str, outcome: dict[str, Any], hint: str | None = None) -> Returned:
    """A call a probe made and reported (``{"value": ...}`` or ``{"raised": "..."}``) as the
    :class:`Returned` of ``text``, or the failure :func:`call` would give had it raised."""
    if "raised" in outcome:
        raise _failure(f"{text} raised {outcome['raised']}", hint)
    return Returned(call=text, value=outcome.get("value"))


class Shown(FunctionSource):
    """A function the check hands to the learner's code: messages show it as ``text``,
    and it counts its calls (to check, say, that a gradient costs one evaluation).

    To the grader's worker it crosses as its ``source`` (``text`` unless given): the worker
    evaluates that, and the calls counted there are added here (see :mod:`grader.plain`)."""

    def __init__(self, text: str, fun: Callable[..., Any], source: str | None = None) -> None:
        super().__init__(text if source is None else source)
        self.text, self.fun, self.calls = text, fun, 0

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.calls += 1
        return self.fun(*args, **kwargs)

    def __repr__(self) -> str:
        return self.text


class ForbiddenTransformation(Exception):
    """Raised, inside the learner's code, by a function an exercise asks not to use."""


#: While :func:`forbidding` is in force: the message of each forbidden function, by its name,
#: and whether a call is recorded for the grader (see :mod:`grader.reference`).
_REFUSALS: dict[str, tuple[str, bool]] = {}
#: The :func:`forbidding` blocks in force, as plain data (module name, names, ``instead``): a
#: remote namespace sends them with each request, and the worker forbids the same there.
FORBIDDEN: list[list[Any]] = []


def refusal(name: str) -> ForbiddenTransformation:
    """The exception a forbidden function raises (its code, swapped in, calls this)."""
    message, record = _REFUSALS.get(name, (f"jax.{name} is not to be used here", False))
    if record:
        from grader.reference import REFUSED

        REFUSED.append(message)
    return ForbiddenTransformation(message)


def _refusing_code(name: str) -> types.CodeType:
    """Code that raises :func:`refusal`, to run in a function of any module: it reaches this
    module through ``__import__`` (always a builtin), not through its globals."""
    source = (f"def {name}(*args, **kwargs):\n"
              f"    raise __import__('grader.checks', fromlist=['refusal']).refusal({name!r})\n")
    namespace: dict[str, Any] = {}
    exec(source, namespace)
    return namespace[name].__code__


@contextlib.contextmanager
def forbidding(module: Any, *names: str, instead: str, label: str | None = None
               ) -> Iterator[None]:
    """While the block runs, ``module.<name>`` (``jax.grad``, say) raises
    :class:`ForbiddenTransformation`, with a message that says what to use ``instead``
    and names the function ``jax.<name>`` (or ``label``, which also records each call in
    :data:`grader.reference.REFUSED`, for the grader).

    A plain function's own code is swapped, not just the module's attribute, so that a
    reference the learner took before (``from minijax import grad``), or an import from the
    module that defines it, is refused too. Anything else (a closure, a callable object) is
    replaced in ``module`` only."""
    saved = {name: getattr(module, name) for name in names}
    codes = {name: function.__code__ for name, function in saved.items()
             if isinstance(function, types.FunctionType) and not function.__code__.co_freevars}
    entry = [module.__name__, list(names), instead]
    FORBIDDEN.append(entry)
    try:
        for name, function in saved.items():
            shown = label or f"jax.{name}"
            _REFUSALS[name] = (f"this exercise is to be solved without {shown}: {instead}",
                               label is not None)
            if name in codes:
                function.__code__ = _refusing_code(name)
            else:
                setattr(module, name, types.FunctionType(_refusing_code(name), {}))
        yield
    finally:
        FORBIDDEN.remove(entry)
        for name, function in saved.items():
            if name in codes:
                function.__code__ = codes[name]
            setattr(module, name, function)
            _REFUSALS.pop(name, None)


def expect_calls(got: Returned, fun: Shown, expected: int, hint: str | None = None, *,
                 at_most: bool = False) -> None:
    """Expect the learner's call ``got`` to have called ``fun`` ``expected`` times (or, with
    ``at_most``, no more often): the cost of a method, counted."""
    if fun.calls == expected or (at_most and fun.calls < expected):
        return
    wanted = ("once" if expected == 1 else f"at most {expected} times") if at_most else expected
    raise _failure(f"{got.call} called {fun!r} {fun.calls} times; expected {wanted}", hint)


def expect_close(
    got: Returned,
    expected: Any,
    *,
    rtol: float = 1e-6,
    atol: float = 0.0,
    hint: str | None = None,
) -> None:
    """Expect a float array (or number) of ``expected``'s shape, equal to it within tolerances."""
    want = np.asarray(expected, dtype=float)
    actual = _as_array(got, want, float, hint)
    if not np.allclose(actual, want, rtol=rtol, atol=atol):
        tolerance = f"rtol={rtol:g}" + (f", atol={atol:g}" if atol else "")
        message = (
            f"{got.call} returned {brief(actual)}; expected {brief(want)} (within {tolerance})"
        )
        raise _failure(message, hint)


def expect_equal(got: Returned, expected: Any, *, hint: str | None = None) -> None:
    """Expect exactly ``expected``: the same shape and the same values (types may differ)."""
    want = np.asarray(expected)
    actual = _as_array(got, want, None, hint)
    if not np.array_equal(actual, want):
        raise _failure(f"{got.call} returned {brief(got.value)}; expected {brief(expected)}", hint)


def expect_dtype(got: Returned, dtype: Any, *, hint: str | None = None) -> None:
    """Expect a numpy array of the given dtype."""
    actual = getattr(got.value, "dtype", None)
    if actual != np.dtype(dtype):
        kind = f"dtype {actual}" if actual is not None else f"type {type(got.value).__name__}"
        raise _failure(f"{got.call} returned {kind}; expected dtype {np.dtype(dtype)}", hint)


def show(value: Any) -> str:
    """Python source that re-creates ``value``, so a learner can paste the failing call.
    A minijax (or JAX) array is written with ``jnp``, the names the course's notebooks use,
    and a committed one inside ``jax.device_put``."""
    if _is_jax_array(value):
        text = (f"jnp.{value.dtype.name}({np.asarray(value).item()!r})" if value.ndim == 0
                else show(np.asarray(value)).replace("np.", "jnp."))
        if getattr(value, "committed", False):
            text = f"jax.device_put({text}, jax.devices()[{value.device.id}])"
        return text
    if _is_jax_device(value):
        return f"jax.devices()[{value.id}]"
    if isinstance(value, list):
        return f"[{', '.join(show(item) for item in value)}]"
    if isinstance(value, np.ndarray):
        if value.size <= _SHOW_ALL:
            body = repr(value.tolist())
        else:
            body = np.array2string(value, separator=", ", threshold=_SHOW_ALL)
        dtype = (
            "" if value.dtype in (np.float64, np.int64, np.bool_) else f", dtype=np.{value.dtype}"
        )
        return f"np.array({_one_line(body)}{dtype})"
    return repr(value)


def brief(value: Any) -> str:
    """A short, deterministic rendering of a result (4 decimals, on one line)."""
    if value is not None and not isinstance(value, (bool, str)):
        try:
            array = np.asarray(value)
        except (TypeError, ValueError):  # e.g. a ragged list: fall back to repr
            array = None
        if array is not None and array.dtype.kind in "biufc":
            text = np.array2string(array, precision=4, threshold=_SHOW_ALL, max_line_width=10**6)
            return _one_line(text)
    return repr(value)


def describe_exception(exc: BaseException) -> str:
    """``TypeError: message`` (or just the type when the message is empty)."""
    message = safe_str(exc)
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__


def _is_jax_array(value: Any) -> bool:
    """A concrete minijax or JAX array (not a tracer), recognised without importing either."""
    kind = type(value)
    return kind.__module__.partition(".")[0] in ("minijax", "jax", "jaxlib") \
        and kind.__name__ in ("Array", "ArrayImpl")


def _is_jax_device(value: Any) -> bool:
    return type(value).__module__.partition(".")[0] in ("minijax", "jaxlib") \
        and hasattr(value, "platform") and hasattr(value, "id")


def learner_function(ns: Namespace, name: str) -> Callable[..., Any]:
    """The learner's function ``name``, or a message saying why there is none."""
    if name not in ns:
        raise CheckFailed(f"{name} is not defined: did you run the cell that defines it?")
    function = ns[name]
    if not callable(function):
        kind = function.type_name if isinstance(function, Opaque) else type(function).__name__
        raise CheckFailed(f"{name} should be a function, but it is of type {kind}")
    return function


def _as_array(got: Returned, want: np.ndarray, dtype: Any, hint: str | None) -> np.ndarray:
    """The returned value as an array shaped like ``want``, or a message saying why it is not."""
    if got.value is None:
        message = f"{got.call} returned None; expected {brief(want)} (did you forget `return`?)"
        raise _failure(message, hint)
    try:
        actual = np.asarray(got.value, dtype=dtype)
    except (TypeError, ValueError):
        raise _failure(
            f"{got.call} returned {brief(got.value)}; expected {brief(want)}", hint
        ) from None
    if actual.shape != want.shape:
        message = (
            f"{got.call} returned {_shape(actual)}; expected {_shape(want)}, like {brief(want)}"
        )
        raise _failure(message, hint)
    return actual


def _shape(array: np.ndarray) -> str:
    return "a single number" if array.ndim == 0 else f"an array of shape {array.shape}"


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _failure(message: str, hint: str | None) -> CheckFailed:
    return CheckFailed(f"{message}{HINT_MARKER}{hint}" if hint else message)
