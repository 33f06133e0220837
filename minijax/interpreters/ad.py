"""Forward-mode automatic differentiation: the JVP interpreter.

A :class:`JVPTracer` carries two things through a function: the ordinary value (the
*primal*) and a *tangent*, the directional derivative of that value along the input
tangents. The :class:`JVPTrace` interprets every primitive by its JVP rule (in
``minijax.interpreters.jvp_rules``): given primals and tangents of the inputs, compute the
primal and tangent of the output. That is forward accumulation of the chain rule, one
primitive at a time, with no tape and no graph.

Rules run under another trace, the JVP trace's ``rule_trace``:

* for ``jvp`` it is the trace that was current when ``jvp`` was called (usually eager
  evaluation), so primals and tangents are computed there;
* for ``linearize`` (and so ``vjp`` and ``grad``) it is a
  :class:`~minijax.interpreters.partial_eval.PartialEvalTrace`: operations on primals
  alone are computed right away, while operations that touch a tangent are *recorded*
  into a linear jaxpr. Reverse mode then transposes that jaxpr.

Tangents that are known to be zero are :class:`Zero` objects, never arrays of zeros, so
that differentiating with respect to one input does not compute with all the others.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from minijax import core, dtypes
from minijax.array import Array
from minijax.core import Primitive, ShapedArray, Trace, Tracer
from minijax.jaxpr import ClosedJaxpr, consts_as_inputs, eval_closed_jaxpr
from minijax.tracing import trace_to_jaxpr

# ---------------------------------------------------------------------------------------
# Tangent types and symbolic zeros
# ---------------------------------------------------------------------------------------


def tangent_aval(aval: ShapedArray) -> ShapedArray:
    """The type of a tangent: the same for floats; ``float0`` (no values) for ints and bools."""
    if dtypes.issubdtype(aval.dtype, np.inexact):
        return aval
    return ShapedArray(aval.shape, dtypes.float0, False)


def is_differentiable(aval: ShapedArray) -> bool:
    return dtypes.issubdtype(aval.dtype, np.inexact)


class Zero:
    """A tangent (or cotangent) known to be zero, of type ``aval``: free to carry around."""

    __slots__ = ("aval",)

    def __init__(self, aval: ShapedArray) -> None:
        self.aval = aval

    @classmethod
    def like(cls, x: Any) -> Zero:
        """The zero tangent of the value ``x``."""
        return cls(tangent_aval(core.get_aval(x)))

    def __repr__(self) -> str:
        return f"Zero({self.aval.str_short()})"


def instantiate(tangent: Any) -> Any:
    """An array for a tangent: symbolic zeros become real zeros (with the current trace).

    The zeros are made by :func:`zeros_like_aval`, which is written with base primitives
    (``minijax.lax`` installs it, see :func:`install_zeros`: the primitives sit above the
    transformations, so this module does not import them).
    """
    if type(tangent) is not Zero:
        return tangent
    return zeros_like_aval(tangent.aval)


def zeros_like_aval(aval: ShapedArray) -> Any:
    raise NotImplementedError("minijax.lax installs this (ad.install_zeros)")


def install_zeros(make_zeros: Callable[[ShapedArray], Any]) -> None:
    """Set how :func:`instantiate` makes an array of zeros of a given abstract value."""
    global zeros_like_aval
    zeros_like_aval = make_zeros


def add_tangents(x: Any, y: Any) -> Any:
    """The sum of two tangents, skipping symbolic zeros."""
    if type(x) is Zero:
        return y
    if type(y) is Zero:
        return x
    return add_any_p.bind(x, y)


# ``add_any`` adds two tangents or cotangents. It is ``add`` with a name of its own, as in
# JAX, so that jaxprs show where derivative contributions were summed.
add_any_p = Primitive("add_any")
add_any_p.def_impl(np.add)
add_any_p.def_abstract_eval(lambda x, y: x)


# ---------------------------------------------------------------------------------------
# The JVP interpreter
# ---------------------------------------------------------------------------------------

# primitive -> rule(primals, tangents, **params) -> (primal_out, tangent_out). Inputs whose
# tangent is known to be zero get a ``Zero``; a rule may return ``Zero`` tangents too.
jvp_rules: dict[Primitive, Callable[..., tuple[Any, Any]]] = {}


class JVPTracer(Tracer):
    """A value being differentiated in forward mode: a primal and its tangent."""

    __slots__ = ("primal", "tangent")
    kind_name = "JVPTracer"

    def __init__(self, trace: JVPTrace, primal: Any, tangent: Any) -> None:
        super().__init__(trace)
        self.primal = primal
        self.tangent = tangent

    @property
    def aval(self) -> ShapedArray:
        return core.get_aval(self.primal)

    def to_concrete_value(self) -> Any:
        """The primal's value, if known: so ``if x > 0:`` works while differentiating."""
        primal = self.primal
        if isinstance(primal, Tracer):
            return primal.to_concrete_value()
        return primal._wait()

    # ``if x > 0``, ``int(x)`` and ``x.item()`` may read the primal, but a float, a complex
    # or a NumPy array made from it would carry on without its derivative (a silent zero):
    # JAX refuses those conversions, and so does minijax (``core.concrete_or_error``).
    refused_conversions = frozenset({"float", "complex", "array"})

    def __repr__(self) -> str:
        if isinstance(self.tangent, Tracer) and self.tangent.to_concrete_value() is None:
            return f"GradTracer(primal={self.primal}, typeof(tangent)={self.aval.str_short()})"
        tangent = "0.0" if type(self.tangent) is Zero else self.tangent
        return f"JVPTracer(primal={self.primal}, tangent={tangent})"


class JVPTrace(Trace):
    """Interprets primitives by their JVP rules; rules run under ``rule_trace``."""

    def __init__(self, parent: Trace, rule_trace: Trace) -> None:
        super().__init__()
        self.parent = parent
        self.rule_trace = rule_trace
        self.tracing_context = parent.tracing_context
        # constants made while this trace is current are seen by the trace that records
        # (a linearization), which must know what came from the host (see ``core.Trace``)
        self.host_constants = rule_trace.host_constants
        self.host_scalars = rule_trace.host_scalars

    def to_primal_tangent(self, x: Any) -> tuple[Any, Any]:
        if isinstance(x, JVPTracer) and x._trace is self:
            return x.primal, x.tangent
        if isinstance(x, Tracer):
            core.check_valid_tracer(x)
        else:  # an Array, or a NumPy constant that a lax function binds directly
            x = _as_value(x)
        return x, Zero.like(x)

    def process_primitive(self, primitive: Primitive, args: tuple, params: dict) -> Any:
        primals, tangents = zip(*map(self.to_primal_tangent, args)) if args else ((), ())
        if all(type(t) is Zero for t in tangents):
            with core.set_current_trace(self.parent):
                return primitive.bind(*primals, **params)
        rule = jvp_rules.get(primitive)
        if rule is None:
            raise NotImplementedError(
                f"Differentiation rule for '{primitive.name}' not implemented"
            )
        with core.set_current_trace(self.rule_trace):
            primal_out, tangent_out = rule(list(primals), list(tangents), **params)
        if primitive.multiple_results:
            return [JVPTracer(self, p, t) for p, t in zip(primal_out, tangent_out)]
        return JVPTracer(self, primal_out, tangent_out)

    def lift(self, primal: Any, tangent: Any) -> JVPTracer:
        return JVPTracer(self, primal, tangent)


def _as_value(x: Any) -> Any:
    """Inputs may be Python or NumPy scalars: make them arrays, keeping tracers as they are
    (and float0 zeros, which no array holds)."""
    if isinstance(x, (Array, Tracer)) or getattr(x, "dtype", None) == dtypes.float0:
        return x
    from minijax.runtime import host_to_array

    return host_to_array(x)


def jvp_flat(fun: Callable[..., Sequence[Any]], primals: Sequence[Any],
             tangents: Sequence[Any], rule_trace: Trace | None = None
             ) -> tuple[list[Any], list[Any]]:
    """Run ``fun`` (flat inputs -> flat outputs) on JVP tracers; return output primals and
    tangents. ``tangents`` may hold ``Zero`` objects; output tangents may too."""
    parent = core.current_trace()
    trace = JVPTrace(parent, rule_trace or parent)
    inputs = [trace.lift(_as_value(p), t) for p, t in zip(primals, tangents)]
    try:
        with core.set_current_trace(trace):
            outputs = fun(*inputs)
        pairs = [trace.to_primal_tangent(_as_value(out)) for out in outputs]
    finally:
        trace.invalidate()
    return [p for p, _ in pairs], [t for _, t in pairs]


def jvp_jaxpr(closed: ClosedJaxpr, nonzeros: Sequence[bool], instantiate_out: Sequence[bool]
              ) -> tuple[ClosedJaxpr, list[Any], list[bool]]:
    """The JVP of a jaxpr, as a jaxpr: how the rules of primitives that carry jaxprs
    (``jit``, ``cond``, the loops) differentiate their bodies.

    It takes the primal inputs and then the tangents of the inputs marked in
    ``nonzeros``, and returns the primal outputs and then the tangents of the outputs that
    are not symbolically zero (or are forced by ``instantiate_out``). Returns the jaxpr
    (without constants), its constants (to pass as leading operands) and which output
    tangents it returns.
    """
    n = len(nonzeros)
    out_nonzeros: list[bool] = []

    def fun(*args: Any) -> list[Any]:
        primals, given = args[:n], iter(args[n:])
        tangents = [next(given) if nz else Zero(tangent_aval(a))
                    for nz, a in zip(nonzeros, closed.in_avals)]
        outs, touts = jvp_flat(lambda *xs: eval_closed_jaxpr(closed, *xs), primals, tangents)
        out_nonzeros[:] = [force or type(t) is not Zero
                           for t, force in zip(touts, instantiate_out)]
        return [*outs, *[instantiate(t) for t, nz in zip(touts, out_nonzeros) if nz]]

    tangent_avals = [tangent_aval(a) for a, nz in zip(closed.in_avals, nonzeros) if nz]
    jaxpr, consts = consts_as_inputs(trace_to_jaxpr(fun, [*closed.in_avals, *tangent_avals]))
    return jaxpr, consts, out_nonzeros


# ---------------------------------------------------------------------------------------
# Rules that follow a pattern (a primitive's module registers its rule with one call)
# ---------------------------------------------------------------------------------------


def deflinear(primitive: Primitive, linear: Sequence[int] | None = None) -> None:
    """A primitive linear in its inputs (or jointly in the inputs at positions ``linear``;
    the others, such as indices, are passed as they are): the tangent is the primitive
    applied to the tangents."""

    def rule(primals: list, tangents: list, **params: Any) -> tuple[Any, Any]:
        out = primitive.bind(*primals, **params)
        args = [instantiate(t) if linear is None or i in linear else p
                for i, (p, t) in enumerate(zip(primals, tangents))]
        return out, primitive.bind(*args, **params)

    jvp_rules[primitive] = rule

def defzero(primitive: Primitive) -> None:
    """A primitive whose output does not change when its inputs change a little."""

    def rule(primals: list, tangents: list, **params: Any) -> tuple[Any, Any]:
        out = primitive.bind(*primals, **params)
        if primitive.multiple_results:
            return out, [Zero(tangent_aval(o.aval)) for o in out]
        return out, Zero(tangent_aval(out.aval))

    jvp_rules[primitive] = rule

def jvp_of(fun: Callable[[Any], Any], x: Any, t: Any) -> Any:
    """The tangent of ``fun(x)`` along ``t``, by running ``fun`` -- written with lax
    primitives that have rules -- through the JVP interpreter. For primitives defined by
    an algorithm (a tree of products, a scan) this is their derivative."""
    _, (tangent,) = jvp_flat(lambda x: [fun(x)], [x], [t])
    return tangent
