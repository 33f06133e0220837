"""Tracing a Python function into a jaxpr.

:class:`JaxprTrace` is an interpreter that, instead of computing ``sin(x)``, writes down
the equation ``b:f32[] = sin a`` and hands back a tracer standing for ``b``. Run a
function on such tracers and what is left at the end is a jaxpr of everything it did
with its inputs, whatever Python control flow it took to get there.

Values that enter the trace from outside (arrays captured from Python, or tracers of an
*enclosing* transformation) become constants: scalars are written inline as literals,
everything else becomes a *constvar*, an extra input whose value travels beside the
jaxpr (:class:`~minijax.jaxpr.ClosedJaxpr`). That is how a ``cond`` branch that closes
over an outer tracer still works: the tracer is passed to ``cond`` as an operand.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Sequence
from typing import Any

from minijax import core, errors, runtime
from minijax.array import Array
from minijax.core import Primitive, ShapedArray, Trace, Tracer
from minijax.jaxpr import Atom, ClosedJaxpr, Jaxpr, JaxprEqn, Literal, Var


class JaxprTracer(Tracer):
    """Stands for one variable of the jaxpr being built."""

    __slots__ = ("_aval", "var")
    kind_name = "DynamicJaxprTracer"

    def __init__(self, trace: JaxprTrace, aval: ShapedArray, var: Var) -> None:
        super().__init__(trace)
        self._aval = aval
        self.var = var

    @property
    def aval(self) -> ShapedArray:
        return self._aval

    def _depends_on(self) -> tuple[str, ...]:
        return self._trace.argument_names_feeding(self.var)

    def __repr__(self) -> str:
        return f"JitTracer(~{self._aval.str_long()})"


class JaxprTrace(Trace):
    """Records every primitive applied to its tracers as an equation."""

    def __init__(self, tracing_context: errors.TracingContext | None = None) -> None:
        super().__init__()
        self.tracing_context = tracing_context
        self.invars: list[Var] = []
        self.eqns: list[JaxprEqn] = []
        self.constvars: dict[int, Var] = {}  # id(captured value) -> its constvar
        self.consts: list[Any] = []  # the captured values, in constvar order
        self.host_constants = {}

    def new_arg(self, aval: ShapedArray) -> JaxprTracer:
        var = Var(aval)
        self.invars.append(var)
        return JaxprTracer(self, aval, var)

    def atom(self, x: Any) -> Atom:
        """The jaxpr atom for ``x``: its variable, a literal, or a (new) constvar."""
        if isinstance(x, JaxprTracer) and x._trace is self:
            return x.var
        if isinstance(x, Tracer):
            core.check_valid_tracer(x)
            return self._constvar(x)
        x = runtime.host_to_array(x) if not isinstance(x, Array) else x
        if x.ndim == 0:
            return Literal(x, x.aval)
        return self._constvar(x)

    def _constvar(self, x: Any) -> Var:
        var = self.constvars.get(id(x))
        if var is None:
            var = self.constvars[id(x)] = Var(x.aval)
            self.consts.append(x)
        return var

    def process_primitive(self, primitive: Primitive, args: tuple, params: dict) -> Any:
        invars = [self.atom(x) for x in args]
        out_avals = core.abstract_eval(primitive, tuple([v.aval for v in invars]), params)
        if not primitive.multiple_results:
            out_avals = [out_avals]
        outvars = [Var(aval) for aval in out_avals]
        self.eqns.append(JaxprEqn(primitive, invars, outvars, params))
        tracers = [JaxprTracer(self, v.aval, v) for v in outvars]
        return tracers if primitive.multiple_results else tracers[0]

    def to_jaxpr(self, outs: Sequence[Any]) -> ClosedJaxpr:
        outvars = [self.atom(x) for x in outs]
        jaxpr = Jaxpr(list(self.constvars.values()), self.invars, outvars, self.eqns)
        return ClosedJaxpr(jaxpr, self.consts)

    def argument_names_feeding(self, var: Var) -> tuple[str, ...]:
        """Which of the traced function's arguments ``var`` depends on (for error messages)."""
        needed = {var}
        for eqn in reversed(self.eqns):
            if any(v in needed for v in eqn.outvars):
                needed.update(a for a in eqn.invars if type(a) is Var)
        names = self.tracing_context.arg_names if self.tracing_context else ()
        return tuple(n for v, n in zip(self.invars, names) if v in needed)


def trace_to_jaxpr(fun: Callable[..., Sequence[Any]], in_avals: Sequence[ShapedArray],
                   context: errors.TracingContext | None = None) -> ClosedJaxpr:
    """Trace ``fun`` (flat list of inputs -> flat list of outputs) into a closed jaxpr."""
    trace = JaxprTrace(context)
    args = [trace.new_arg(aval) for aval in in_avals]
    try:
        with core.set_current_trace(trace):
            outs = fun(*args)
        return trace.to_jaxpr(outs)
    finally:
        trace.invalidate()


def tracing_context(fun: Callable, purpose: str, arg_names: Sequence[str] = ()
                    ) -> errors.TracingContext:
    """Describe ``fun`` for error messages: its name and the line where it was defined."""
    while isinstance(fun, functools.partial):
        fun = fun.func
    fun = inspect.unwrap(fun)
    name = getattr(fun, "__name__", type(fun).__name__)
    code = getattr(fun, "__code__", None)
    source = f"{code.co_filename}:{code.co_firstlineno}" if code else "<unknown>"
    return errors.TracingContext(name, source, purpose, tuple(arg_names))
