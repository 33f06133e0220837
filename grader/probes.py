"""Instruments a check uses on the learner's code where a plain call is not enough.

A check that must trace the learner's function, read its bytecode, or watch the state it
leaves behind asks for a *probe* (:func:`grader.checks.probe`). The probe runs where the
learner's objects are -- in the grader's untrusted worker, or in the learner's own kernel for
``check()`` -- and reports what it observed as plain data (:mod:`grader.plain`); the check,
in the grader's trusted process, compares that with what it expects. So a probe never holds an
expected value nor decides anything: it is part of the learner's side, and what it reports is
only ever the learner's answer. An exception it meets is the learner's and crosses as such.
"""

from __future__ import annotations

import dis
import functools
from collections.abc import Callable
from typing import Any

import numpy as np

Probe = Callable[..., Any]
#: The probes by name: the worker runs only these.
PROBES: dict[str, Probe] = {}


def _probe(fun: Probe) -> Probe:
    PROBES[fun.__name__] = fun
    return fun


@_probe
def trace(ns: Any, name: str, args: list[Any], static_argnums: tuple[int, ...] = (),
          evaluate: list[Any] | None = None) -> dict[str, Any]:
    """``minijax.make_jaxpr(ns[name], static_argnums)(*args)``: the jaxpr's text, the names of
    its top-level equations' primitives and of every nested one's, and, with ``evaluate``,
    the jaxpr's first output on those arguments. A failure of tracing is reported as
    ``{"raised": "TypeError: ..."}`` (the learner's error; a stub's ``NotImplementedError``
    passes through)."""
    import minijax
    from minijax.jaxpr import eval_closed_jaxpr

    try:
        jaxpr = minijax.make_jaxpr(ns[name], static_argnums=tuple(static_argnums))(*args)
    except NotImplementedError:
        raise
    except Exception as exc:
        return {"raised": _describe(exc)}
    report = {"text": str(jaxpr), "primitives": [eqn.primitive.name for eqn in jaxpr.eqns],
              "nested": sorted(_nested_primitives(jaxpr.jaxpr))}
    if evaluate is not None:
        report["value"] = eval_closed_jaxpr(jaxpr, *evaluate)[0]
    return report


@_probe
def jnp_functions_used(ns: Any, name: str) -> list[str]:
    """The ``jnp.name`` functions that the code of ``ns[name]`` (or a function nested in it)
    refers to; dtypes such as ``jnp.float32`` do not count."""
    import minijax.numpy as jnp

    code = getattr(ns[name], "__code__", None)
    stack, used = ([code] if code is not None else []), []
    while stack:
        code = stack.pop()
        stack += [c for c in code.co_consts if hasattr(c, "co_code")]
        instructions = list(dis.get_instructions(code))
        for load, attribute in zip(instructions, instructions[1:]):
            if (load.opname == "LOAD_GLOBAL" and load.argval == "jnp"
                    and attribute.opname in ("LOAD_ATTR", "LOAD_METHOD")
                    and not _is_dtype(getattr(jnp, attribute.argval, None))):
                used.append(f"jnp.{attribute.argval}")
    return sorted(set(used))


@_probe
def apply(ns: Any, transform: Callable[..., Any], name: str, *args: Any) -> Any:
    """``transform(ns[name])(*args)``: the learner's function under a transformation of the
    check's (``jax.grad``, say), called."""
    return transform.fun(ns[name])(*args)


@_probe
def observe(ns: Any, instrument: Callable[..., Any], *args: Any) -> Any:
    """``instrument(ns, *args)``: an instrument of the check's own, sent as source (a ``def``
    that observes the learner's objects and returns what it saw as plain data -- never an
    expected value), for what no other probe covers."""
    return instrument.fun(ns, *args)


@_probe
def is_instance(ns: Any, name: str, module: str, kind: str) -> bool:
    """Whether ``ns[name]`` is an instance of ``module.kind`` (``minijax``, ``custom_vjp``)."""
    import importlib

    return isinstance(ns[name], getattr(importlib.import_module(module), kind))


@_probe
def type_name(ns: Any, name: str) -> str:
    """The name of the type of ``ns[name]``."""
    from grader.plain import type_name as name_of

    return name_of(ns[name])


@_probe
def attributes_of_result(ns: Any, name: str, args: list[Any], fun: Callable[..., Any],
                         attributes: list[str]) -> dict[str, Any]:
    """``fun(ns[name](*args))`` -- the check's function applied to an object of the learner's
    class -- and the named attributes of what came out: ``{"value": ..., "missing": [...],
    "parts": [...]}``, or ``{"raised": ..., "stage": "construct" | "apply"}``."""
    stage = "construct"
    try:
        made = ns[name](*args)
        stage = "apply"
        value = fun.fun(made)
    except NotImplementedError:
        raise
    except Exception as exc:
        return {"raised": _describe(exc), "stage": stage}
    missing = [a for a in attributes if not hasattr(value, a)]
    parts = [] if missing else [getattr(value, a) for a in attributes]
    return {"value": value, "missing": missing, "parts": parts}


@_probe
def call_each(ns: Any, name: str, calls: list[list[Any]], keep_going: bool = False
              ) -> list[dict[str, Any]]:
    """``ns[name](*args)`` for each argument list of ``calls``, in one request (a check that
    makes hundreds of calls would otherwise pay a round trip each): ``{"value": ...}`` or
    ``{"raised": "TypeError: ...", "kinds": [the names of its classes]}`` per call, stopping
    after the first that raises unless ``keep_going``."""
    reports: list[dict[str, Any]] = []
    for args in calls:
        try:
            reports.append({"value": ns[name](*args)})
        except NotImplementedError:
            raise
        except Exception as exc:
            reports.append({"raised": _describe(exc),
                            "kinds": [kind.__name__ for kind in type(exc).__mro__]})
            if not keep_going:
                break
    return reports


@_probe
def value_of(ns: Any, name: str) -> Any:
    """The notebook's global ``name`` itself (None if there is none), to compare as data."""
    return ns.get(name)


@_probe
def counted_calls(ns: Any, name: str, transform: Callable[..., Any], calls: list[list[Any]],
                  thread: bool = False) -> list[dict[str, Any]]:
    """Call ``transform(f)`` (``jax.jit``, say) on each argument list of ``calls``, where ``f``
    is the learner's function ``name`` counting how often its Python code runs (under ``jit``:
    its traces). Each call reports ``{"value": ...}`` or ``{"raised": "TypeError: ..."}``, and
    ``"runs"``, the count so far; the calls stop at the first that raises. With ``thread``, each
    call after the first gets, as its first argument, the first element of what the one before
    returned (a state passed along, as a learner would)."""
    counted = _Counted(ns[name])
    fast = transform.fun(counted)
    return _calls(fast, counted, calls, thread)


@_probe
def call_made(ns: Any, factory: str, args: list[Any], calls: list[list[Any]],
              counted_name: str | None = None) -> dict[str, Any]:
    """Call the learner's ``factory(*args)``, then the function it made on each argument list
    of ``calls`` (reported as by :func:`counted_calls`, ``"runs"`` counting the runs of the
    global ``counted_name`` while the factory ran, if given: the function the learner jits,
    say); ``{"made": ...}`` is the factory's result when it is not callable."""
    original = ns[counted_name] if counted_name else None
    counted = _Counted(original or ns[factory])
    if counted_name:
        ns[counted_name] = counted
    try:
        made = ns[factory](*args)
    finally:
        if counted_name:
            ns[counted_name] = original
    if not callable(made):
        return {"made": made}
    return {"calls": _calls(made, counted, calls, False)}


class _Counted:
    """A function that counts how often its Python code runs; ``functools.update_wrapper``
    keeps its signature, so that ``static_argnames`` still resolve."""

    def __init__(self, fun: Callable[..., Any]) -> None:
        functools.update_wrapper(self, fun)
        self.fun, self.calls = fun, 0

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.calls += 1
        return self.fun(*args, **kwargs)


def _calls(fast: Callable[..., Any], counted: _Counted, calls: list[list[Any]],
           thread: bool) -> list[dict[str, Any]]:
    reports: list[dict[str, Any]] = []
    for args in calls:
        if thread and reports:
            args = [reports[-1]["value"][0], *args[1:]]
        try:
            reports.append({"value": fast(*args)})
        except NotImplementedError:
            raise
        except Exception as exc:
            reports.append({"raised": _describe(exc)})
        reports[-1]["runs"] = counted.calls
        if "raised" in reports[-1] or (thread and not _pair(reports[-1]["value"])):
            break
    return reports


def _pair(value: Any) -> bool:
    return isinstance(value, (tuple, list)) and len(value) == 2


def _nested_primitives(jaxpr: Any) -> set[str]:
    """The primitives of ``jaxpr`` and of every jaxpr nested in its equations' parameters."""
    names: set[str] = set()
    for eqn in jaxpr.eqns:
        names.add(str(eqn.primitive))
        for param in eqn.params.values():
            for inner in param if isinstance(param, (tuple, list)) else (param,):
                if hasattr(inner, "jaxpr") and hasattr(inner.jaxpr, "eqns"):
                    names |= _nested_primitives(inner.jaxpr)
                elif hasattr(inner, "eqns"):
                    names |= _nested_primitives(inner)
    return names


def _is_dtype(value: Any) -> bool:
    try:
        np.dtype(value)
    except TypeError:
        return False
    return True


def _describe(exc: BaseException) -> str:
    from grader.checks import describe_exception

    return describe_exception(exc)


@_probe
def with_pieces(ns: Any, installs: dict[str, str], program: Callable[..., Any], *args: Any
                ) -> dict[str, Any]:
    """``program(*args)`` run on the learner's engine: for the call, each piece of
    :data:`minijax.pieces.PIECES` named in ``installs`` is the notebook's object of the
    given name (``{"backward_pass": "my_backward_pass"}``), and every other piece is
    minijax's own, even one the notebook installed (so that each piece is graded alone, the
    same whatever the learner installed before); what was installed is back afterwards.
    Reports ``{"value": ...}`` or ``{"raised": "TypeError: ..."}``."""
    from minijax import pieces

    implementations = {piece: ns[name] for piece, name in installs.items()}
    others = {name: pieces.reference(name) for name in pieces.installed()
              if name not in implementations}
    try:
        with pieces.using({**others, **implementations}):
            return {"value": program.fun(*args)}
    except NotImplementedError:
        raise
    except Exception as exc:
        return {"raised": _describe(exc)}
