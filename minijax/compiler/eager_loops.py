"""Eager ``while_loop``, ``fori_loop`` and ``scan`` run as one compiled program, as in JAX.

The loop primitives' own eager rules (``loops._while_eager``, ``loops._scan_eager``)
interpret the body jaxpr: every iteration dispatches every operation of the body from
Python, and a ``while`` waits for its predicate each time round. JAX instead compiles an
eager loop like a tiny ``jit`` of the one primitive. This module does the same: the eager
rule of each loop primitive becomes "compile ``prim.bind(*args, **params)`` with ``jit``
and run that", with the interpreter kept for loops whose body has side effects (a
``debug.print`` must print as the body runs).

A body is traced once per function and types (``control_flow.common.trace_once``), and
its loop binds jaxprs that share that trace's equations: a program is found by their
identity first. A body traced again (a ``lambda`` made at every call) brings new jaxprs,
so programs are also remembered by the jaxpr's *structure* (primitives, parameters,
literals by their bits, how variables connect), with any array a nested jaxpr closes
over compared by identity.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import numpy as np

from minijax import flags
from minijax.core import Primitive
from minijax.jaxpr import ClosedJaxpr, Jaxpr, Literal, has_effects, jaxprs_in_params
from minijax.lax.control_flow import loops

# Compiled loops kept, most recently used last (a long session makes many bodies).
MAX_PROGRAMS = 256
_programs: OrderedDict[Any, Callable[..., Any]] = OrderedDict()
_by_identity: OrderedDict[Any, Callable[..., Any]] = OrderedDict()
# False: interpret eager loops as loops.py does (the reference tests compare with).
enabled = True
# A compiled loop holds what the pieces in force made of it: a change of piece drops them.
flags.on_pieces_change(_programs.clear)
flags.on_pieces_change(_by_identity.clear)


class _Same:
    """A key part that matches only the very same object (and keeps it alive, so its id
    cannot be reused by another)."""

    __slots__ = ("obj",)

    def __init__(self, obj: Any) -> None:
        self.obj = obj

    def __hash__(self) -> int:
        return id(self.obj)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Same) and other.obj is self.obj


def structure(value: Any) -> Any:
    """A hashable key equal for two parameter values that compute the same thing."""
    if isinstance(value, ClosedJaxpr):
        return ("closed", jaxpr_structure(value.jaxpr), tuple(_Same(c) for c in value.consts))
    if isinstance(value, Jaxpr):
        return jaxpr_structure(value)
    if isinstance(value, (tuple, list)):
        return (type(value).__name__, tuple(structure(v) for v in value))
    if isinstance(value, dict):
        return ("dict", tuple((k, structure(v)) for k, v in value.items()))
    if isinstance(value, (float, complex, np.generic, np.ndarray)):  # 0.0 == -0.0: bits
        array = np.asarray(value)
        return (type(value).__name__, array.dtype.str, array.shape, array.tobytes())
    try:
        hash(value)
    except TypeError:
        return _Same(value)
    return value


def jaxpr_structure(jaxpr: Jaxpr) -> tuple:
    """Equations as (primitive, operands, parameters, result types); variables become
    their position of definition, literals their type and bits."""
    numbers: dict[Any, int] = {}

    def define(var: Any) -> Any:
        numbers[var] = len(numbers)
        return var.aval

    def atom(a: Any) -> Any:
        if isinstance(a, Literal):
            return ("literal", a.aval, np.asarray(a._value).tobytes())
        return numbers.get(a, ("free", _Same(a)))

    head = (tuple(define(v) for v in jaxpr.constvars), tuple(define(v) for v in jaxpr.invars))
    eqns = tuple((_Same(e.primitive), tuple(atom(a) for a in e.invars),
                  structure(e.params), tuple(define(v) for v in e.outvars))
                 for e in jaxpr.eqns)
    return head, eqns, tuple(atom(a) for a in jaxpr.outvars)


def identity(params: dict[str, Any]) -> Any:
    """A cheap key, equal only for the very same jaxprs: a body traced once (see
    ``control_flow.common.trace_once``) keeps its equations however its loop is bound,
    so the key need not walk them."""

    def part(value: Any) -> Any:
        if isinstance(value, ClosedJaxpr):
            j = value.jaxpr
            return (_Same(j.eqns), tuple(j.constvars), tuple(j.invars), tuple(j.outvars),
                    tuple(_Same(c) for c in value.consts))
        return structure(value)

    return tuple((k, part(v)) for k, v in params.items())


def _remember(programs: OrderedDict, key: Any, make: Callable[[], Any]) -> Any:
    """``programs[key]``, made on a miss; the least recently used go first."""
    program = programs.get(key)
    if program is None:
        program = programs[key] = make()
        if len(programs) > MAX_PROGRAMS:
            programs.popitem(last=False)
    else:
        programs.move_to_end(key)
    return program


def compiled_eager_rule(primitive: Primitive, interpret: Callable[..., Any]
                        ) -> Callable[..., Any]:
    """The eager rule that runs ``primitive`` through ``jit``, or ``interpret`` for a
    body with side effects. A program is found by the jaxprs' identity first, then by
    their structure (a body traced again)."""
    from minijax.compiler.jit import jit

    def eager(*args: Any, **params: Any) -> Any:
        if not enabled:
            return interpret(*args, **params)
        fast = (primitive.name, identity(params))
        program = _by_identity.get(fast)  # found: the very jaxprs, known to be pure
        if program is None:
            if any(has_effects(j) for j in jaxprs_in_params(params)):
                return interpret(*args, **params)
            program = _remember(_programs, (primitive.name, structure(params)),
                                lambda: jit(lambda *xs: primitive.bind(*xs, **params)))
            _remember(_by_identity, fast, lambda: program)
        return program(*args)

    return eager


for _primitive, _interpret in ((loops.while_p, loops._while_eager),
                               (loops.scan_p, loops._scan_eager)):
    _primitive.def_eager_rule(compiled_eager_rule(_primitive, _interpret))
